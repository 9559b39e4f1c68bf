//! `ops`' share of issue 57: the graph replays matched to their capture
//! regions by `crate::graphs::replay` (shared with `roofline`), and each
//! activity of an attributed replay given to the row of the op that
//! launched it at capture time (`graph_activities`, `gpu_graph_ns`; a row
//! is made for an op the replay trace does not have). Invariant: Σ the
//! rows' `gpu_graph_ns` = `graphs.gpu_graph_ns` = Σ dur of the attributed
//! replays' activities. The O-rules' figures (self, total, top) are
//! unchanged: a replay's GPU time stays its graph launch's (O2–O4).

use super::measure::RowSet;
use crate::graphs::replay::Replayed;
use crate::graphs::{Captures, GraphsSummary};
use crate::model::Interner;

/// The attributed activities into the rows (made for ops the replay
/// trace lacks; a captured launch outside every op goes to O1's
/// pseudo-row); the summary.
pub(super) fn into_rows(
    replayed: Replayed,
    caps: &Captures,
    rows: &mut RowSet,
    names: &mut Interner,
) -> GraphsSummary {
    // Row of each capture op, found once.
    let mut row_of: Vec<u32> = vec![u32::MAX; caps.ops.len()];
    for g in replayed.attributed {
        let launcher = caps
            .regions
            .get(g.region as usize)
            .and_then(|r| r.launches.get(g.pos as usize))
            .and_then(|c| c.launcher);
        let row = match launcher {
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
        rows.add_graph(row, g.dur);
    }
    replayed.summary
}
