//! The phase sweep of `iterations`: each lane's launch calls, in ts order,
//! against the iteration windows (a selected step context up to the next
//! step annotation on its thread) and the open phase ranges (a max-heap by
//! start: the innermost holds the call), folding each iteration's row and
//! the graph replays as the sweep leaves them (the drawing is in the
//! module docs of `iterations`).

use super::figures::{figures, graph_figures, notes};
use super::{IterationRow, Phase, PhaseRange, PhaseWork, TraceIterations};
use crate::analysis::Finished;
use crate::ledger::intervals::{self, Iv};
use crate::ledger::pack::Records;
use crate::ledger::{is_graph_launch, Kind, LaunchCall, Ledger};
use crate::model::{LaneTable, Ns, Sym};
use crate::rows::Rows;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

/// One iteration's window and context, on its lane.
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    pub(super) lane: (Sym, Sym),
    pub(super) start: Ns,
    /// `None`: open.
    pub(super) end: Option<Ns>,
    pub(super) ctx_end: Ns,
    pub(super) index: u64,
}

/// One graph signature's replays, folded as the sweep meets them: what
/// [`graph_figures`] needs, instead of a 64 B record per replay (72,000 of
/// them at 800 sample copies). What grows is 8 B per replay in a closed
/// iteration: its first activity's start, for the cadence.
pub(super) struct GraphAcc {
    /// Its earliest replay (ts, file index): graphs are numbered by it.
    pub(super) first: (Ns, u64),
    /// Its earliest replay in a closed iteration, and that replay's kernels.
    pub(super) first_closed: Option<((Ns, u64), u64)>,
    /// Closed iterations replaying it. A lane's sweep meets an
    /// iteration's launch calls together (its calls in ts order, an
    /// iteration on one lane), so a change of `last_iteration` is a new
    /// iteration.
    pub(super) iterations: u64,
    pub(super) last_iteration: Option<usize>,
    /// Σ activity durations of its replays in closed iterations.
    pub(super) total_ns: i128,
    /// Its replays in closed iterations.
    pub(super) replays: u64,
    /// Their first activities' starts (the replay's ts when it has none).
    pub(super) starts: Vec<i64>,
}

impl GraphAcc {
    pub(super) fn new(first: (Ns, u64)) -> GraphAcc {
        GraphAcc {
            first,
            first_closed: None,
            iterations: 0,
            last_iteration: None,
            total_ns: 0,
            replays: 0,
            starts: Vec::new(),
        }
    }
}

/// The activity intervals of a lane's open iteration, all together and by
/// phase: once the sweep leaves it they become its row's busy and idle
/// figures, so that memory holds one iteration's intervals at a time
/// rather than every activity of the trace (twice).
#[derive(Default)]
pub(super) struct OpenIvs {
    pub(super) all: Vec<Iv>,
    pub(super) phase: [Vec<Iv>; 4],
}

/// The iteration windows: each selected context up to the next step
/// annotation (vLLM step name, or a selected name) on its lane.
pub(super) fn windows(trace: &Finished<'_>) -> Vec<Window> {
    let steps = trace.steps;
    let mut bounds: HashMap<(Sym, Sym), Vec<(Ns, u64)>> = HashMap::new();
    let mut is_step: HashMap<Sym, bool> = HashMap::new();
    for a in &steps.cpu {
        let step = *is_step.entry(a.name).or_insert_with(|| {
            trace.contexts.selected.contains(&a.name)
                || crate::steps::parse(steps.names.resolve(a.name)).is_some()
        });
        if step {
            bounds.entry(a.lane).or_default().push((a.start, a.index));
        }
    }
    for v in bounds.values_mut() {
        v.sort_unstable();
    }
    trace
        .contexts
        .iter(steps)
        .map(|c| {
            let end = bounds.get(&c.lane).and_then(|v| {
                let k = v.partition_point(|&b| b <= (c.start, c.index));
                v.get(k).map(|b| b.0)
            });
            Window {
                lane: c.lane,
                start: c.start,
                end,
                ctx_end: c.end(),
                index: c.index,
            }
        })
        .collect()
}

/// An open range in the sweep: max-heap order = innermost first; its end
/// and phase.
pub(super) type Open = ((Ns, Reverse<Ns>, u64), Ns, Phase);

/// The heap size below which ended ranges are left to the top's pops.
pub(super) const PRUNE_FLOOR: usize = 64;

/// The phase sweep of one lane: its candidate ranges, taken in start order
/// from their sources (the lane's step contexts, `forward`, and its
/// sampling and drafting ranges, each sorted by start), and the ranges
/// open at the last launch call.
///
/// The heap drops ended ranges lazily, from the top only. Under a range
/// that started later and is still open they would stay: when every
/// launch call lies in some range (a vLLM trace: the step context, then
/// `sample_tokens`), nothing is popped and the heap held every range of
/// the lane (1.3 MB at 200 sample copies). So once it doubles past its
/// size after the last clean-up, every ended range goes: it stays
/// O(ranges open at once), at O(1) amortized per range.
///
/// ```text
/// ranges   [== s_0 ==)[sample)  [== s_1 ==)[sample)  [== s_2 ==) …
/// calls       ^   ^       ^        ^   ^       ^         ^
/// heap top: the latest-started open range; s_0 and its sample end
/// under s_1, s_1's under s_2, …: only a clean-up removes them.
/// ```
pub(super) struct Sweep<'a> {
    pub(super) wins: &'a [Window],
    /// The lane's iterations not yet pushed, in start order.
    pub(super) its: &'a [usize],
    /// The lane's phase ranges not yet pushed: one slice per interned
    /// lane that shows as this lane, each in start order.
    pub(super) ranges: Vec<&'a [PhaseRange]>,
    pub(super) heap: BinaryHeap<Open>,
    /// The heap size at which ended ranges are dropped.
    pub(super) prune_at: usize,
}

impl<'a> Sweep<'a> {
    pub(super) fn new(
        wins: &'a [Window],
        its: &'a [usize],
        ranges: Vec<&'a [PhaseRange]>,
    ) -> Sweep<'a> {
        Sweep {
            wins,
            its,
            ranges,
            heap: BinaryHeap::new(),
            prune_at: PRUNE_FLOOR,
        }
    }

    /// The phase of a launch call at `ts` (calls come in ts order): the
    /// innermost open range holding it, `other` when none does.
    pub(super) fn phase_at(&mut self, ts: Ns) -> Phase {
        while let Some((&i, rest)) = self.its.split_first() {
            let w = &self.wins[i];
            if w.start > ts {
                break;
            }
            self.heap.push((
                (w.start, Reverse(w.ctx_end), w.index),
                w.ctx_end,
                Phase::Forward,
            ));
            self.its = rest;
        }
        for slice in &mut self.ranges {
            while let Some((r, rest)) = slice.split_first() {
                if r.start > ts {
                    break;
                }
                self.heap
                    .push(((r.start, Reverse(r.end), r.index), r.end, r.phase));
                *slice = rest;
            }
        }
        // Calls come in ts order: a range that has ended holds none of
        // the calls still to come.
        if self.heap.len() > self.prune_at {
            self.heap.retain(|o| o.1 > ts);
            self.prune_at = (2 * self.heap.len()).max(PRUNE_FLOOR);
        }
        while self.heap.peek().is_some_and(|top| top.1 <= ts) {
            self.heap.pop();
        }
        self.heap.peek().map_or(Phase::Other, |top| top.2)
    }
}

/// The graph signatures met so far, each kept once: a replay holds the
/// id of its signature (ids in order of first insertion; numbers by
/// first appearance in time are given later, by [`graph_figures`]).
#[derive(Default)]
pub(super) struct Signatures(HashMap<Vec<Sym>, u32>);

impl Signatures {
    pub(super) fn id(&mut self, sig: Vec<Sym>) -> u32 {
        let next = self.0.len() as u32;
        *self.0.entry(sig).or_insert(next)
    }
}

/// The graph replays by signature, as the sweep over every lane meets them.
#[derive(Default)]
pub(super) struct Measured {
    pub(super) sigs: Signatures,
    /// By signature id.
    pub(super) graphs: Vec<GraphAcc>,
}

impl Measured {
    /// Folds a graph replay (a graph launch call of iteration `i`, whose
    /// activities' Σ durations and kernels are `total_ns` and `kernels`)
    /// into its signature's [`GraphAcc`]. Its signature is the ordered
    /// (start, end, name) list of its activities' names.
    pub(super) fn replay(
        &mut self,
        ledger: &Ledger,
        call: &LaunchCall<'_>,
        (i, closed): (usize, bool),
        total_ns: i128,
        kernels: u64,
    ) {
        let mut sig: Vec<(Ns, Ns, &str, Sym)> = call
            .activities
            .iter()
            .map(|a| (a.start, a.end, ledger.names.resolve(a.name), a.name))
            .collect();
        sig.sort_unstable();
        let first_start = sig.first().map_or(call.ts, |s| s.0);
        let at = (call.ts, call.index);
        let id = self.sigs.id(sig.into_iter().map(|s| s.3).collect()) as usize;
        if id >= self.graphs.len() {
            self.graphs.push(GraphAcc::new(at));
        }
        let g = &mut self.graphs[id];
        g.first = g.first.min(at);
        if !closed {
            return;
        }
        if g.first_closed.is_none_or(|(f, _)| at < f) {
            g.first_closed = Some((at, kernels));
        }
        if g.last_iteration != Some(i) {
            g.iterations += 1;
            g.last_iteration = Some(i);
        }
        g.total_ns += total_ns;
        g.replays += 1;
        g.starts.push(first_start.0);
    }
}

/// One lane's iterations, filled in their start order: only the current
/// one is a struct (its row, its activity intervals, its context's extent);
/// the ones the sweep has left are sealed into a varint stream.
///
/// ```text
/// lane's iterations   it0        it1        it2        it3
/// launch calls         c c c      c c                   c c
/// sweep               [it0 open] ─seal─► out: [row0]
///                                [it1 open] ─seal─► out: [row0 row1]
///                     (it2 has no call: sealed empty when the sweep reaches it3)
/// end of lane                                          ─seal─► [row0 row1 row2 row3]
/// ```
///
/// Calls come in ts order per lane and an iteration is the last one of its
/// lane starting at or before a call, so the sweep never goes back: a row
/// is final once sealed. A `Vec` of every row as accumulators held 304 B
/// per iteration through the sweep (7.3 MB at 800 sample copies).
pub(super) struct LaneRows<'a> {
    pub(super) wins: &'a [Window],
    pub(super) its: &'a [usize],
    /// The position in `its` of the current iteration.
    pub(super) at: usize,
    pub(super) row: IterationRow,
    pub(super) open: OpenIvs,
    /// The extent of the activities launched inside the current
    /// iteration's step context (its row's context span).
    pub(super) ctx: Option<(Ns, Ns)>,
    pub(super) out: Records<IterationRow>,
}

impl<'a> LaneRows<'a> {
    pub(super) fn new(wins: &'a [Window], its: &'a [usize]) -> LaneRows<'a> {
        let row = its
            .first()
            .map_or_else(IterationRow::default, |&i| empty_row(&wins[i]));
        LaneRows {
            wins,
            its,
            at: 0,
            row,
            open: OpenIvs::default(),
            ctx: None,
            out: Records::default(),
        }
    }

    /// Seals iterations up to the one at position `k` (not included),
    /// which becomes the current one.
    pub(super) fn move_to(&mut self, k: usize) {
        while self.at < k {
            self.seal();
            self.at += 1;
            if let Some(&i) = self.its.get(self.at) {
                self.row = empty_row(&self.wins[i]);
            }
        }
    }

    /// Every iteration of the lane, sealed.
    pub(super) fn finish(mut self) -> Records<IterationRow> {
        self.move_to(self.its.len());
        self.out
    }

    /// Adds a launch call of phase `phase` (inside the step context itself
    /// when `in_ctx`) and its activities to the current iteration; returns
    /// their Σ durations and kernels (a graph replay's figures).
    pub(super) fn add(&mut self, call: &LaunchCall<'_>, phase: Phase, in_ctx: bool) -> (i128, u64) {
        let w = self.row.phases.get_mut(phase);
        w.launches += 1;
        w.graph_launches += u64::from(is_graph_launch(call.name));
        let mut total: i128 = 0;
        let mut kernels = 0u64;
        for a in call.activities {
            match a.kind {
                Kind::Kernel => w.kernels += 1,
                Kind::Memcpy => w.memcpys += 1,
                Kind::Memset => w.memsets += 1,
            }
            kernels += u64::from(a.kind == Kind::Kernel);
            total += i128::from(a.end.0) - i128::from(a.start.0);
            self.open.all.push((a.start, a.end));
            self.open.phase[phase as usize].push((a.start, a.end));
            if in_ctx {
                self.ctx = Some(match self.ctx {
                    Some((s, e)) => (s.min(a.start), e.max(a.end)),
                    None => (a.start, a.end),
                });
            }
        }
        (total, kernels)
    }

    /// Turns the current iteration's intervals into its row's figures,
    /// fills its totals over the phases, and writes it out.
    pub(super) fn seal(&mut self) {
        if self.at >= self.its.len() {
            return;
        }
        // Exact: a union's length can pass i64 ns (issue 59; it was 0).
        let len = |ivs: Vec<Iv>| intervals::length(&intervals::union(ivs));
        let all = std::mem::take(&mut self.open.all);
        let extent = all
            .iter()
            .map(|iv| iv.0)
            .min()
            .zip(all.iter().map(|iv| iv.1).max());
        let busy = len(all);
        let r = &mut self.row;
        r.gpu_busy_ns = busy;
        r.gpu_idle_ns = extent.map(|(s, e)| i128::from(e.0) - i128::from(s.0) - busy);
        for (p, ivs) in Phase::ALL
            .into_iter()
            .zip(std::mem::take(&mut self.open.phase))
        {
            r.phases.get_mut(p).gpu_busy_ns = len(ivs);
        }
        let ph = [
            &r.phases.forward,
            &r.phases.sample,
            &r.phases.draft,
            &r.phases.other,
        ];
        let sum = |f: fn(&PhaseWork) -> u64| ph.iter().map(|p| f(p)).sum::<u64>();
        (r.kernels, r.memcpys, r.memsets) =
            (sum(|p| p.kernels), sum(|p| p.memcpys), sum(|p| p.memsets));
        (r.launches, r.graph_launches) = (sum(|p| p.launches), sum(|p| p.graph_launches));
        r.context_span_ns = self
            .ctx
            .take()
            .map(|(s, e)| i128::from(e.0) - i128::from(s.0));
        self.out.push(&self.row);
    }
}

/// An iteration's row before the sweep: its window's figures, no work.
pub(super) fn empty_row(w: &Window) -> IterationRow {
    IterationRow {
        start_ns: w.start.0,
        wall_ns: w.end.map(|e| i128::from(e.0) - i128::from(w.start.0)),
        closed: w.end.is_some(),
        ..IterationRow::default()
    }
}

/// Measures every iteration: the windows, the launch calls of their lanes
/// and the phase ranges (sorted by lane, then start).
pub(super) fn measure(
    trace: &Finished<'_>,
    ledger: &Ledger,
    lanes: &LaneTable,
    ranges: &[PhaseRange],
    pick: Option<u64>,
) -> TraceIterations {
    let wins = windows(trace);
    let mut m = Measured::default();
    // Iterations by lane, in start order.
    let mut by_lane: BTreeMap<(Sym, Sym), Vec<usize>> = BTreeMap::new();
    for (i, w) in wins.iter().enumerate() {
        by_lane.entry(w.lane).or_default().push(i);
    }
    // The phase ranges' lanes as the step index writes them.
    let shown: Vec<(String, String)> = (0..lanes.len() as u32)
        .map(|id| {
            let l = lanes.resolve(id);
            (l.pid.to_string(), l.tid.to_string())
        })
        .collect();
    let names = &trace.steps.names;
    // Each lane's rows, in its iterations' order.
    let mut sealed = Vec::with_capacity(by_lane.len());
    for its in by_lane.values() {
        let lane = wins[its[0]].lane;
        let (pid, tid) = (names.resolve(lane.0), names.resolve(lane.1));
        let mut rows = LaneRows::new(&wins, its);
        if let Some(lane_id) = ledger.lane_of(pid, tid) {
            let on_lane = shown
                .iter()
                .enumerate()
                .filter(|(_, (p, t))| p == pid && t == tid)
                .map(|(id, _)| lane_slice(ranges, id as u32))
                .collect();
            let sweep = Sweep::new(&wins, its, on_lane);
            measure_lane(&mut m, &mut rows, ledger, lane_id, sweep);
        }
        sealed.push(rows.finish());
    }
    let rows = in_iteration_order(&wins, &by_lane, &sealed);
    drop(sealed);
    let mut out = figures(trace, rows);
    graph_figures(&mut out, m.graphs, pick);
    out.notes = notes(trace, ledger, &out);
    out
}

/// The lanes' rows merged back into iteration order (the order of the
/// selected contexts).
pub(super) fn in_iteration_order(
    wins: &[Window],
    by_lane: &BTreeMap<(Sym, Sym), Vec<usize>>,
    sealed: &[Records<IterationRow>],
) -> Rows<IterationRow> {
    let lane_of: HashMap<(Sym, Sym), usize> =
        by_lane.keys().enumerate().map(|(k, &l)| (l, k)).collect();
    let mut readers: Vec<_> = sealed.iter().map(Records::iter).collect();
    wins.iter()
        .map(|w| {
            lane_of
                .get(&w.lane)
                .and_then(|&k| readers.get_mut(k))
                .and_then(Iterator::next)
                .unwrap_or_else(|| empty_row(w))
        })
        .collect()
}

/// The ranges of interned lane `lane` among `ranges` (sorted by lane).
pub(super) fn lane_slice(ranges: &[PhaseRange], lane: u32) -> &[PhaseRange] {
    let lo = ranges.partition_point(|r| r.lane < lane);
    let hi = ranges.partition_point(|r| r.lane <= lane);
    &ranges[lo..hi]
}

/// The position in `its` (one lane's iterations, in start order) of the
/// iteration a launch call at `ts` belongs to: the last one starting at or
/// before it, unless it has ended by then.
pub(super) fn iteration_of(wins: &[Window], its: &[usize], ts: Ns) -> Option<usize> {
    let k = its
        .partition_point(|&i| wins[i].start <= ts)
        .checked_sub(1)?;
    match wins[*its.get(k)?].end {
        Some(e) if ts >= e => None,
        _ => Some(k),
    }
}

/// Sweeps one lane's launch calls (in ts order) into its iterations.
pub(super) fn measure_lane(
    m: &mut Measured,
    rows: &mut LaneRows<'_>,
    ledger: &Ledger,
    lane_id: u32,
    mut sweep: Sweep<'_>,
) {
    let (wins, its) = (rows.wins, rows.its);
    for call in ledger.lane_launches(lane_id) {
        let Some(k) = iteration_of(wins, its, call.ts) else {
            continue;
        };
        // The sweep has left the iterations before it for good.
        rows.move_to(k);
        let i = its[k];
        let phase = sweep.phase_at(call.ts);
        let in_ctx = call.ts < wins[i].ctx_end;
        let (total, kernels) = rows.add(&call, phase, in_ctx);
        if is_graph_launch(call.name) {
            let closed = wins[i].end.is_some();
            m.replay(ledger, &call, (i, closed), total, kernels);
        }
    }
}

/// The closed iterations' [start, end) per ledger lane, sorted: which
/// graph replays `inside_graphs` splits (issue 57).
#[derive(Debug, Default)]
pub(super) struct Closed {
    by_lane: HashMap<u32, Vec<(i64, i64)>>,
}

impl Closed {
    /// Whether a launch call at `ts` on ledger lane `lane` lies in a
    /// closed iteration (iterations on a lane do not overlap).
    pub(super) fn holds(&self, lane: u32, ts: i64) -> bool {
        let Some(v) = self.by_lane.get(&lane) else {
            return false;
        };
        let k = v.partition_point(|w| w.0 <= ts);
        k.checked_sub(1).is_some_and(|k| ts < v[k].1)
    }
}

/// The closed iterations of `trace` by the ledger's lanes.
pub(super) fn closed_windows(trace: &Finished<'_>, ledger: &Ledger) -> Closed {
    let names = &trace.steps.names;
    let mut c = Closed::default();
    for w in windows(trace) {
        let Some(end) = w.end else { continue };
        let lane = ledger.lane_of(names.resolve(w.lane.0), names.resolve(w.lane.1));
        if let Some(l) = lane {
            c.by_lane.entry(l).or_default().push((w.start.0, end.0));
        }
    }
    for v in c.by_lane.values_mut() {
        v.sort_unstable();
    }
    c
}
