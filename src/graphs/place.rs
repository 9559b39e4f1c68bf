//! Where a graph launch was made, and what that says of its replay
//! (issue 57): a vLLM step annotation around it gives the scheduled
//! tokens (the decoder's graph is the smallest captured batch ≥ them);
//! `proposer.propose` around it makes it the speculator's. Shared by every
//! analysis that matches replays (`ops` from its host ops, the others
//! from the driver's annotations, [`crate::contexts::Steps`]), with the
//! tally of outcomes into a [`GraphsSummary`].

use super::matching::Outcome;
use super::{GraphsSummary, Region, Unmatched, UNMATCHED_LISTED};

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
struct Span {
    lane: u32,
    ts: i64,
    end: i64,
    tokens: Option<u64>,
    propose: bool,
}

/// The spans that tell a graph launch's batch and subsystem: vLLM step
/// annotations and `proposer.propose`, as they are read (a few per step).
#[derive(Debug, Default)]
pub struct Spans {
    spans: Vec<Span>,
    sorted: bool,
}

/// Where a graph launch was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Inside a step annotation, with its scheduled tokens if said.
    Step(Option<u64>),
    /// Inside `proposer.propose` (the speculator's).
    Propose,
    Outside,
}

impl Place {
    /// The subsystem and batch it implies for [`super::matching::match_replay`].
    pub fn hints(self) -> (Option<&'static str>, Option<u64>) {
        match self {
            Place::Step(t) => (Some("decoder"), t),
            Place::Propose => (Some("speculator"), None),
            Place::Outside => (None, None),
        }
    }
}

impl Spans {
    /// Keeps the range `[ts, end)` named `name` on `lane` when it is a
    /// step or `proposer.propose` annotation.
    pub fn observe(&mut self, lane: u32, ts: i64, end: i64, name: &str) {
        let propose = name == PROPOSE;
        if !propose && (!name.starts_with("execute_") || crate::steps::parse(name).is_none()) {
            return;
        }
        let tokens = if propose { None } else { step_tokens(name) };
        self.spans.push(Span {
            lane,
            ts,
            end,
            tokens,
            propose,
        });
        self.sorted = false;
    }

    /// The spans of the driver's annotations ([`crate::contexts::Steps`]),
    /// on the lanes `lane_of` gives (pid, tid as written) — the ledger's.
    pub fn of_steps(
        steps: &crate::contexts::Steps,
        lane_of: impl Fn(&str, &str) -> Option<u32>,
    ) -> Spans {
        let mut s = Spans::default();
        for a in &steps.cpu {
            let name = steps.names.resolve(a.name);
            if name != PROPOSE && !name.starts_with("execute_") {
                continue;
            }
            let (pid, tid) = (steps.names.resolve(a.lane.0), steps.names.resolve(a.lane.1));
            if let Some(lane) = lane_of(pid, tid) {
                let end = a.start.0.saturating_add(a.dur.0);
                s.observe(lane, a.start.0, end, name);
            }
        }
        s
    }

    /// The innermost kept span enclosing `ts` on `lane` (a propose inside a
    /// step is the propose: the later start wins).
    pub fn place(&mut self, lane: u32, ts: i64) -> Place {
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

/// How a replay that is not a unique match is listed: its status and the
/// reason (with where the launch was, for an ambiguous one).
pub fn listed(outcome: &Outcome, place: Place) -> Option<(&'static str, String)> {
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

impl GraphsSummary {
    /// An empty summary of `caps` (files, regions, notes).
    pub fn of_captures(caps: &super::Captures) -> GraphsSummary {
        GraphsSummary {
            captures: caps.files.clone(),
            regions: caps.regions.len() as u64,
            notes: caps.notes.clone(),
            ..GraphsSummary::default()
        }
    }

    /// One replay more (of `activities` activities, launched at `ts`),
    /// counted by its outcome; listed when not a unique match.
    pub fn count(&mut self, outcome: &Outcome, place: Place, ts: i64, activities: usize) {
        self.replays += 1;
        match outcome {
            Outcome::Matched(_) => self.replays_matched += 1,
            Outcome::Ambiguous { attributed, .. } => {
                self.replays_ambiguous += 1;
                self.replays_ambiguous_attributed += u64::from(*attributed);
            }
            Outcome::Unmatched(_) => self.replays_unmatched += 1,
        }
        if let Some((status, reason)) = listed(outcome, place) {
            if self.unmatched.len() < UNMATCHED_LISTED {
                self.unmatched.push(Unmatched {
                    ts,
                    activities: activities as u64,
                    status: status.into(),
                    reason,
                });
            }
        }
    }

    /// An attributed replay of `region` whose activities last `durs`:
    /// counted in the totals and in its subsystem's share.
    pub fn attribute(&mut self, region: &Region, durs: impl Iterator<Item = i64>) {
        let share = self
            .by_subsystem
            .entry(region.subsystem.clone())
            .or_default();
        share.replays += 1;
        let bs = region
            .batch
            .map_or_else(|| "none".to_string(), |b| b.to_string());
        *share.replays_by_batch.entry(bs).or_default() += 1;
        for dur in durs {
            self.graph_activities += 1;
            self.gpu_graph_ns = self.gpu_graph_ns.saturating_add(dur);
            share.activities += 1;
            share.gpu_graph_ns = share.gpu_graph_ns.saturating_add(dur);
        }
    }
}

#[cfg(test)]
mod tests {
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
