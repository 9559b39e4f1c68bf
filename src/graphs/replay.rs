//! A trace's graph replays matched to their capture regions (issue 57),
//! for any analysis that attributes GPU work (`ops`, `roofline`): each
//! graph launch's activities (C3's owners), in the order the GPU ran them,
//! matched by [`super::matching`] with the batch and subsystem its step or
//! `proposer.propose` annotation says, and each activity of an attributed
//! replay given as (region, position in it, dur). The caller maps a
//! position to what it needs: `ops` the launcher op's row, `roofline` the
//! op and shapes its model reads.

use super::matching::{match_replay, Act, Index, Outcome};
use super::{Captures, GraphsSummary, Region, Unmatched, UNMATCHED_LISTED};
use crate::hostops::launch::{Launch, Owners};
use crate::hostops::HostOp;
use crate::hostops::Linked;
use crate::model::{Interner, Sym};
use crate::store::pack::Records;

/// The annotation around the drafter's work in vLLM (`proposer.propose`):
/// a graph launched inside it is the speculator's.
pub const PROPOSE: &str = "proposer.propose";

/// The tokens a vLLM step schedules: the sum of the numbers in its
/// parentheses (`execute_context_1(96)_generation_2(3)` → 99), for the
/// context/generation form only (the others do not say).
pub fn step_tokens(name: &str) -> Option<u64> {
    let step = crate::steps::parse(name)?;
    if step.form != crate::steps::Form::ContextGeneration {
        return None;
    }
    let mut sum = 0u64;
    for part in name.split('(').skip(1) {
        let inner = part.split(')').next()?;
        if inner.is_empty() {
            continue;
        }
        sum = sum.checked_add(inner.parse::<u64>().ok()?)?;
    }
    Some(sum)
}

/// A step annotation (its scheduled tokens, when the name says) or a
/// `proposer.propose` span (`propose`) on a thread.
#[derive(Debug, Clone, Copy)]
struct Ctx {
    lane: u32,
    ts: i64,
    end: i64,
    tokens: Option<u64>,
    propose: bool,
}

/// The spans that tell a graph launch's batch and subsystem: vLLM step
/// annotations and `proposer.propose`, as they are read (a few per step).
#[derive(Debug, Default)]
pub struct Contexts {
    spans: Vec<Ctx>,
    sorted: bool,
}

/// Where a graph launch was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Inside a step annotation, with its scheduled tokens if said.
    Step(Option<u64>),
    /// Inside `proposer.propose` (the speculator's).
    Propose,
    Outside,
}

impl Contexts {
    /// Keeps `o` when it is a step or `proposer.propose` annotation.
    pub fn observe(&mut self, o: &HostOp, names: &Interner) {
        let name = names.resolve(o.name);
        let propose = name == PROPOSE;
        if !propose && !name.starts_with("execute_") {
            return;
        }
        let tokens = if propose { None } else { step_tokens(name) };
        if !propose && crate::steps::parse(name).is_none() {
            return;
        }
        self.spans.push(Ctx {
            lane: o.lane,
            ts: o.ts,
            end: crate::hostops::launch::end_of(o.ts, o.dur),
            tokens,
            propose,
        });
        self.sorted = false;
    }

    /// The innermost kept span enclosing `ts` on `lane` (a propose inside a
    /// step is the propose: the later start wins).
    fn place(&mut self, lane: u32, ts: i64) -> Place {
        if !self.sorted {
            self.spans.sort_unstable_by_key(|c| (c.lane, c.ts));
            self.sorted = true;
        }
        let upto = self.spans.partition_point(|c| (c.lane, c.ts) <= (lane, ts));
        // Steps do not nest and a propose holds no step: the last few
        // starts before `ts` are enough.
        for c in self.spans[..upto].iter().rev().take(4) {
            if c.lane != lane {
                break;
            }
            if c.end >= ts {
                return if c.propose {
                    Place::Propose
                } else {
                    Place::Step(c.tokens)
                };
            }
        }
        Place::Outside
    }
}

/// A replayed activity as kept for the match: 16 B + its key.
#[derive(Debug, Clone, Copy)]
struct Rep {
    call: u32,
    ts: i64,
    end: i64,
    index: u64,
    dur: i64,
    name: Sym,
    kind: u8,
}

/// One activity of an attributed replay: its graph launch, its region, its position among
/// the region's captured launches, its dur, and whether the replay matched
/// that region alone (`false`: an ambiguous replay attributed because its
/// candidates name the same launchers: their shapes may differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Given {
    /// The graph launch (its runtime call's position).
    pub call: u32,
    pub region: u32,
    pub pos: u32,
    pub dur: i64,
    pub exact: bool,
}

/// The replays' outcomes and the attributed activities, in replay order.
#[derive(Debug, Default)]
pub struct Replayed {
    pub summary: GraphsSummary,
    pub attributed: Vec<Given>,
}

/// Matches every graph launch's activities (C3's owners) to the captures;
/// `call_at(k)`: runtime call `k`'s (lane, ts), where its annotation is
/// looked up.
pub fn replays(
    caps: &Captures,
    (acts, own, launched): (&Records<Linked>, &Owners, &[Launch]),
    names: &Interner,
    call_at: impl Fn(u32) -> Option<(u32, i64)>,
    contexts: &mut Contexts,
) -> Replayed {
    let mut out = Replayed::default();
    out.summary.captures = caps.files.clone();
    out.summary.regions = caps.regions.len() as u64;
    out.summary.notes = caps.notes.clone();
    let reps = replayed_activities(acts, own, launched);
    if reps.is_empty() {
        return out;
    }
    let ix = Index::new(caps);
    let mut seq: Vec<Act<'_>> = Vec::new();
    for group in reps.chunk_by(|a, b| a.call == b.call) {
        seq.clear();
        seq.extend(group.iter().map(|r| Act {
            kind: r.kind,
            name: names.resolve(r.name),
        }));
        // The batch and subsystem from the annotation around the launch:
        // a step's scheduled tokens pick the decoder's graph; inside
        // `proposer.propose` the drafter's batch is not said (the step
        // annotation does not enclose it), so none is used.
        let place =
            call_at(group[0].call).map_or(Place::Outside, |(lane, ts)| contexts.place(lane, ts));
        let (sub, batch) = match place {
            Place::Step(t) => (Some("decoder"), t),
            Place::Propose => (Some("speculator"), None),
            Place::Outside => (None, None),
        };
        let outcome = match_replay(caps, &ix, &seq, batch, sub);
        out.count(&outcome);
        if let Some(r) = outcome.region() {
            let exact = matches!(outcome, Outcome::Matched(_));
            out.attribute(r, &caps.regions[r as usize], group, exact);
        }
        if let Some((status, reason)) = listed(&outcome, place) {
            if out.summary.unmatched.len() < UNMATCHED_LISTED {
                out.summary.unmatched.push(Unmatched {
                    ts: group[0].ts,
                    activities: group.len() as u64,
                    status: status.into(),
                    reason,
                });
            }
        }
    }
    out
}

/// The activities of graph replays (owned by a graph launch), in each
/// replay's GPU order: start, end, file order (every stream of the graph
/// in one sequence), replays in launch order.
fn replayed_activities(acts: &Records<Linked>, own: &Owners, launched: &[Launch]) -> Vec<Rep> {
    let mut reps: Vec<Rep> = acts
        .iter()
        .zip(own.iter())
        .filter_map(|(a, o)| {
            let o = o?;
            launched.get(o as usize).filter(|l| l.graph)?;
            Some(Rep {
                call: o,
                ts: a.ts,
                end: crate::hostops::launch::end_of(a.ts, a.dur),
                index: a.index,
                dur: a.dur,
                name: a.name,
                kind: a.code,
            })
        })
        .collect();
    reps.sort_unstable_by_key(|r| (r.call, r.ts, r.end, r.index));
    reps
}

/// How a replay that is not a unique match is listed: its status and the
/// reason (with where the launch was, for an ambiguous one).
fn listed(outcome: &Outcome, place: Place) -> Option<(&'static str, String)> {
    match outcome {
        Outcome::Matched(_) => None,
        Outcome::Ambiguous {
            candidates,
            attributed,
        } => Some((
            "ambiguous",
            format!(
                "{} regions equal ({}{}){}: {}",
                candidates.len(),
                candidates
                    .iter()
                    .take(8)
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                if candidates.len() > 8 { ", …" } else { "" },
                match place {
                    Place::Step(Some(t)) =>
                        format!(", {t} scheduled tokens: no single smallest captured batch ≥ {t}"),
                    Place::Step(None) => ", step names no token count".to_string(),
                    Place::Propose => {
                        ", in proposer.propose: the drafter's batch is not in the trace".to_string()
                    }
                    Place::Outside => ", no step annotation encloses the launch".to_string(),
                },
                if *attributed {
                    "the same launcher ops: attributed, shapes unknown"
                } else {
                    "different launcher ops: not attributed"
                }
            ),
        )),
        Outcome::Unmatched(why) => Some(("unmatched", why.clone())),
    }
}

impl Replayed {
    /// One replay more, counted by its outcome.
    fn count(&mut self, outcome: &Outcome) {
        let s = &mut self.summary;
        s.replays += 1;
        match outcome {
            Outcome::Matched(_) => s.replays_matched += 1,
            Outcome::Ambiguous { attributed, .. } => {
                s.replays_ambiguous += 1;
                s.replays_ambiguous_attributed += u64::from(*attributed);
            }
            Outcome::Unmatched(_) => s.replays_unmatched += 1,
        }
    }

    /// A replay's activities given to the launchers of `region`'s
    /// captured launches, position by position, and counted in the
    /// totals and in its subsystem's share.
    fn attribute(&mut self, r: u32, region: &Region, group: &[Rep], exact: bool) {
        let s = &mut self.summary;
        let share = s.by_subsystem.entry(region.subsystem.clone()).or_default();
        share.replays += 1;
        let bs = region
            .batch
            .map_or_else(|| "none".to_string(), |b| b.to_string());
        *share.replays_by_batch.entry(bs).or_default() += 1;
        for (pos, (rep, _)) in group.iter().zip(&region.launches).enumerate() {
            self.attributed.push(Given {
                call: rep.call,
                region: r,
                pos: pos as u32,
                dur: rep.dur,
                exact,
            });
            s.graph_activities += 1;
            s.gpu_graph_ns = s.gpu_graph_ns.saturating_add(rep.dur);
            share.activities += 1;
            share.gpu_graph_ns = share.gpu_graph_ns.saturating_add(rep.dur);
        }
    }
}

#[cfg(test)]
mod step_tests {
    use super::step_tokens;

    /// The step names of `sample_traces/text_graphs_{ar,mtp}/` (AR decode, MTP
    /// decode, prefill) and forms that do not say a total.
    #[test]
    fn scheduled_tokens_of_real_step_names() {
        assert_eq!(step_tokens("execute_context_0(0)_generation_1(1)"), Some(1));
        assert_eq!(step_tokens("execute_context_0(0)_generation_1(3)"), Some(3));
        assert_eq!(
            step_tokens("execute_context_1(96)_generation_0(0)"),
            Some(96)
        );
        assert_eq!(
            step_tokens("execute_context_1(96)_generation_2(6)"),
            Some(102)
        );
        assert_eq!(step_tokens("execute_new_1_cached_2"), None);
        assert_eq!(step_tokens("proposer.propose"), None);
    }
}
