//! `ops`' share of issue 57: each graph replay's activities, in the order
//! the GPU ran them, matched to a capture region (`crate::graphs`), and
//! each activity of an attributed replay given to the row of the op that
//! launched it at capture time (`graph_activities`, `gpu_graph_ns`; a row
//! is made for an op the replay trace does not have). Invariant: Σ the
//! rows' `gpu_graph_ns` = `graphs.gpu_graph_ns` = Σ dur of the attributed
//! replays' activities. The O-rules' figures (self, total, top) are
//! unchanged: a replay's GPU time stays its graph launch's (O2–O4).

use super::measure::RowSet;
use crate::graphs::matching::{match_replay, Act, Index, Outcome};
use crate::graphs::{Captures, GraphsSummary, Unmatched, UNMATCHED_LISTED};
use crate::hostops::launch::{Launch, Owners};
use crate::hostops::Linked;
use crate::model::{Interner, Sym};
use crate::store::pack::Records;

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

/// The replays' outcomes and, per attributed activity, its launcher op
/// in the capture (`None`: no op enclosed the captured launch) and dur.
#[derive(Debug, Default)]
pub(super) struct Replayed {
    summary: GraphsSummary,
    attributed: Vec<(Option<u32>, i64)>,
}

/// Matches every graph launch's activities (C3's owners) to the captures.
pub(super) fn replays(
    caps: &Captures,
    acts: &Records<Linked>,
    own: &Owners,
    launched: &[Launch],
    names: &Interner,
) -> Replayed {
    let mut out = Replayed::default();
    let s = &mut out.summary;
    s.captures = caps.files.clone();
    s.regions = caps.regions.len() as u64;
    s.notes = caps.notes.clone();
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
    if reps.is_empty() {
        return out;
    }
    // The GPU's order within a replay: start, end, file order (every
    // stream of the graph in one sequence).
    reps.sort_unstable_by_key(|r| (r.call, r.ts, r.end, r.index));
    let ix = Index::new(caps);
    let mut seq: Vec<Act<'_>> = Vec::new();
    for group in reps.chunk_by(|a, b| a.call == b.call) {
        s.replays += 1;
        seq.clear();
        seq.extend(group.iter().map(|r| Act {
            kind: r.kind,
            name: names.resolve(r.name),
        }));
        let outcome = match_replay(caps, &ix, &seq, None);
        match &outcome {
            Outcome::Matched(_) => s.replays_matched += 1,
            Outcome::Ambiguous { attributed, .. } => {
                s.replays_ambiguous += 1;
                s.replays_ambiguous_attributed += u64::from(*attributed);
            }
            Outcome::Unmatched(_) => s.replays_unmatched += 1,
        }
        if let Some(r) = outcome.region() {
            let region = &caps.regions[r as usize];
            for (rep, c) in group.iter().zip(&region.launches) {
                out.attributed.push((c.launcher, rep.dur));
                s.graph_activities += 1;
                s.gpu_graph_ns = s.gpu_graph_ns.saturating_add(rep.dur);
            }
        }
        let listed = match &outcome {
            Outcome::Matched(_) => None,
            Outcome::Ambiguous {
                candidates,
                attributed,
            } => Some((
                "ambiguous",
                format!(
                    "{} regions equal ({}{}): {}",
                    candidates.len(),
                    candidates
                        .iter()
                        .take(8)
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    if candidates.len() > 8 { ", …" } else { "" },
                    if *attributed {
                        "the same launcher ops: attributed, shapes unknown"
                    } else {
                        "different launcher ops: not attributed"
                    }
                ),
            )),
            Outcome::Unmatched(why) => Some(("unmatched", why.clone())),
        };
        if let Some((status, reason)) = listed {
            if s.unmatched.len() < UNMATCHED_LISTED {
                s.unmatched.push(Unmatched {
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

impl Replayed {
    /// The attributed activities into the rows (made for ops the replay
    /// trace lacks; a captured launch outside every op goes to O1's
    /// pseudo-row); the summary.
    pub(super) fn into_rows(
        self,
        caps: &Captures,
        rows: &mut RowSet,
        names: &mut Interner,
    ) -> GraphsSummary {
        // Row of each capture op, found once.
        let mut row_of: Vec<u32> = vec![u32::MAX; caps.ops.len()];
        for (op, dur) in self.attributed {
            let row = match op {
                Some(o) => {
                    let slot = &mut row_of[o as usize];
                    if *slot == u32::MAX {
                        let c = caps.ops[o as usize];
                        *slot = rows.of_name(c.cat, caps.resolve(c.name), names);
                    }
                    *slot
                }
                None => rows.pseudo(),
            };
            rows.add_graph(row, dur);
        }
        self.summary
    }
}
