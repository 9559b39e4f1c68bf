//! `ops`' share of issue 57: each graph replay's activities, in the order
//! the GPU ran them, matched to a capture region (`crate::graphs`), and
//! each activity of an attributed replay given to the row of the op that
//! launched it at capture time (`graph_activities`, `gpu_graph_ns`; a row
//! is made for an op the replay trace does not have). Invariant: Σ the
//! rows' `gpu_graph_ns` = `graphs.gpu_graph_ns` = Σ dur of the attributed
//! replays' activities. The O-rules' figures (self, total, top) are
//! unchanged: a replay's GPU time stays its graph launch's (O2–O4).

use super::measure::Call;
use super::rowset::RowSet;
use crate::graphs::linked::match_replays;
use crate::graphs::place::Place;
use crate::graphs::{Captures, GraphsSummary};
use crate::hostops::launch::{Launch, Owners};
use crate::hostops::HostOp;
use crate::hostops::Linked;
use crate::model::Interner;
use crate::store::pack::Records;

/// Step and `proposer.propose` spans (`crate::graphs::place`): a graph
/// launch's batch and subsystem.
pub(super) type Contexts = crate::graphs::place::Spans;

/// Keeps `o` in `contexts` when it is a step or `proposer.propose`
/// annotation.
pub(super) fn observe(contexts: &mut Contexts, o: &HostOp, names: &Interner) {
    let end = crate::hostops::launch::end_of(o.ts, o.dur);
    contexts.observe(o.lane, o.ts, end, names.resolve(o.name));
}

/// The replays' outcomes and, per attributed activity, its launcher op
/// in the capture (`None`: no op enclosed the captured launch) and dur.
#[derive(Debug, Default)]
pub(super) struct Replayed {
    summary: GraphsSummary,
    attributed: Vec<(Option<u32>, i64)>,
}

/// Matches every graph launch's activities (C3's owners) to the
/// captures (`crate::graphs::linked`, shared with `export`).
pub(super) fn replays(
    caps: &Captures,
    acts: &Records<Linked>,
    own: &Owners,
    launched: &[Launch],
    names: &Interner,
    calls: &[Call],
    contexts: &mut Contexts,
) -> Replayed {
    let m = match_replays(caps, acts, own, launched, names, |call| {
        calls
            .get(call as usize)
            .map_or(Place::Outside, |c| contexts.place(c.lane, c.ts))
    });
    let attributed = m
        .given
        .iter()
        .map(|g| {
            let c = &caps.regions[g.region as usize].launches[g.k as usize];
            (c.launcher, g.dur)
        })
        .collect();
    Replayed {
        summary: m.summary,
        attributed,
    }
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
