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
use crate::graphs::{Captures, GraphsSummary, ModuleOp};
use crate::hostops::launch::{Launch, Owners};
use crate::hostops::Linked;
use crate::model::Interner;
use crate::store::pack::Records;
use std::collections::BTreeMap;

/// Step and `proposer.propose` spans (`crate::graphs::place`): a graph
/// launch's batch and subsystem.
pub(super) type Contexts = crate::graphs::place::Spans;

/// The replays' outcomes and, per attributed activity, its launcher op
/// in the capture (`None`: no op enclosed the captured launch) and dur.
#[derive(Debug, Default)]
pub(super) struct Replayed {
    summary: GraphsSummary,
    attributed: Vec<(Option<u32>, i64)>,
    /// (subsystem, module path, launcher) → (activities, GPU ns): a few
    /// hundred keys at most (the distinct captured launches).
    by_module: BTreeMap<ModuleKey, (u64, i64)>,
}

/// A region's subsystem, a captured launch's module path and launcher
/// (text and op ids of the captures).
type ModuleKey = (String, Option<u32>, Option<u32>);

/// (subsystem, module path, launcher name, launcher category) →
/// (activities, GPU ns).
type Named = BTreeMap<(String, String, Option<String>, Option<String>), (u64, i64)>;

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
    let mut attributed = Vec::with_capacity(m.given.len());
    let mut by_module: BTreeMap<ModuleKey, (u64, i64)> = BTreeMap::new();
    for g in &m.given {
        let region = &caps.regions[g.region as usize];
        let c = &region.launches[g.k as usize];
        attributed.push((c.launcher, g.dur));
        let e = by_module
            .entry((region.subsystem.clone(), c.module, c.launcher))
            .or_default();
        e.0 += 1;
        e.1 = e.1.saturating_add(g.dur);
    }
    Replayed {
        summary: m.summary,
        attributed,
        by_module,
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
        let mut summary = self.summary;
        // By names: one op captured with several shapes is one entry.
        let mut named: Named = BTreeMap::new();
        for ((subsystem, module, op), (n, ns)) in self.by_module {
            let op = op.map(|o| caps.ops[o as usize]);
            let key = (
                subsystem,
                module.map_or_else(String::new, |m| caps.resolve(m).to_string()),
                op.map(|o| caps.resolve(o.name).to_string()),
                op.map(|o| crate::hostops::HOST_CATEGORIES[o.cat as usize % 4].to_string()),
            );
            let e = named.entry(key).or_default();
            e.0 += n;
            e.1 = e.1.saturating_add(ns);
        }
        summary.by_module = named
            .into_iter()
            .map(
                |((subsystem, module, op, cat), (activities, gpu_graph_ns))| ModuleOp {
                    subsystem,
                    module,
                    cat,
                    op,
                    activities,
                    gpu_graph_ns,
                },
            )
            .collect();
        // By GPU ns (desc), then the keys: the same order on every run.
        summary.by_module.sort_by(|a, b| {
            b.gpu_graph_ns
                .cmp(&a.gpu_graph_ns)
                .then_with(|| a.subsystem.cmp(&b.subsystem))
                .then_with(|| a.module.cmp(&b.module))
                .then_with(|| a.op.cmp(&b.op))
                .then_with(|| a.cat.cmp(&b.cat))
        });
        summary
    }
}
