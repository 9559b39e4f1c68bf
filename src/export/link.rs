//! The end of an export's read: every kept event linked, as the columns
//! of the four tables (row ids are positions in file order).
//!
//! The links are the `ops` analysis's own, from its code
//! (`hostops::launch`, as `ops` makes them): owners by correlation (C3), the launch
//! figures of each runtime call (O6), the innermost and outermost
//! enclosers on a thread (C4–C5: parent, launcher O2, top-level op O4);
//! steps are the windows of `crate::windows` (C8, I6's window).
//!
//! ```text
//! ops      [op 0: step annotation ============================)  depth 0
//!            [op 1: aten::mm ==)      [op 2: aten::topk ==)       depth 1, parent 0
//! launches     L0 c=5                   L1 c=6                   launcher 1 / 2, top 0, step 0
//! acts            [k0 c=5)                  [k1 c=6)             launch 0 / 1, step of its launch
//! ```

use super::Export;
use crate::analysis::Finished;
use crate::hostops::contain::{sweep_thread, Sweep, Tag, Visit, Visitor};
use crate::hostops::launch::{self, end_of, Launch};
use crate::hostops::{HostLinks, HostOp, InputCounts, Linked};
use crate::model::{Interner, LaneTable, ThreadPart};
use crate::windows::{self, StepWindow};

/// Every table's rows of one trace.
pub(crate) struct Linkedup {
    pub names: Interner,
    /// (pid, tid) of each lane as integers (`None`: not an integer).
    pub lanes: Vec<(Option<i64>, Option<i64>)>,
    pub ops: Vec<HostOp>,
    /// External ids, decoded a batch at a time when written.
    pub op_ext: crate::store::pack::Records<super::Ext>,
    pub texts: super::Texts,
    pub op_parent: Vec<Option<u32>>,
    pub op_depth: Vec<u32>,
    pub calls: Vec<Linked>,
    pub launched: Vec<Launch>,
    pub call_launcher: Vec<Option<u32>>,
    pub call_top: Vec<Option<u32>>,
    pub call_step: Vec<Option<u32>>,
    pub acts: Vec<Linked>,
    /// Launch configurations, decoded a batch at a time when written.
    pub act_config: crate::store::pack::Records<super::Config3>,
    pub act_owner: Vec<Option<u32>>,
    /// The graph replay of an activity's launch: the launch's ordinal among
    /// the graph launches that launched work.
    pub call_replay: Vec<Option<u32>>,
    pub steps: Vec<StepWindow>,
    pub step_ends: Vec<Option<i64>>,
    pub grammar: Option<String>,
    /// Bad input, for the notes (ops' counts: C1, C3, O10).
    pub counts: InputCounts,
    /// pid/tid values that are not integers (null in the tables).
    pub text_lanes: u64,
}

fn int_of(p: &ThreadPart) -> Option<i64> {
    match p {
        ThreadPart::Num(n) => Some(*n),
        ThreadPart::Str(s) => s.parse().ok(),
    }
}

/// What containment gives: per op its parent and depth, per runtime call
/// its launcher and top-level op (positions in `ops`).
struct Contained {
    parent: Vec<Option<u32>>,
    depth: Vec<u32>,
    launcher: Vec<Option<u32>>,
    top: Vec<Option<u32>>,
}

/// Where a thread's sweep writes what it finds.
struct Found<'a> {
    calls: &'a [Linked],
    parent: &'a mut [Option<u32>],
    depth: &'a mut [u32],
    launcher: &'a mut [Option<u32>],
    top: &'a mut [Option<u32>],
}

impl Visitor for Found<'_> {
    /// A parent precedes its child in key order: its depth is known.
    fn op(&mut self, at: &Visit, parent: Option<(u32, Tag)>, _: &mut Sweep) {
        let pos = at.pos;
        if let Some((p, _)) = parent {
            self.parent[pos as usize] = Some(p);
            self.depth[pos as usize] = self.depth[p as usize] + 1;
        }
    }

    fn call(&mut self, ci: u32, sweep: &mut Sweep) {
        let c = &self.calls[ci as usize];
        let end = end_of(c.ts, c.dur);
        let inner = sweep.innermost(end);
        self.launcher[ci as usize] = inner;
        self.top[ci as usize] = sweep.outermost_scope(end).or(inner);
    }
}

/// Parents and depths of the ops (C5), launchers and top-level ops of the
/// runtime calls (O2, O4), thread by thread as `ops` computes them.
fn contain(lanes: usize, ops: &[HostOp], calls: &[Linked]) -> Contained {
    let mut by_lane: Vec<Vec<u32>> = vec![Vec::new(); lanes];
    for (i, o) in ops.iter().enumerate() {
        by_lane[o.lane as usize].push(i as u32);
    }
    let mut calls_by_lane: Vec<Vec<u32>> = vec![Vec::new(); lanes];
    for (i, c) in calls.iter().enumerate() {
        calls_by_lane[c.lane as usize].push(i as u32);
    }
    let mut parent = vec![None; ops.len()];
    let mut depth = vec![0u32; ops.len()];
    let mut launcher = vec![None; calls.len()];
    let mut top = vec![None; calls.len()];
    // One sweep per thread, as `ops` runs it (contain.rs).
    for (lane, mut v) in by_lane.into_iter().enumerate() {
        v.sort_unstable_by_key(|&i| {
            let o = &ops[i as usize];
            (o.ts, std::cmp::Reverse(end_of(o.ts, o.dur)), o.index)
        });
        let cs = &mut calls_by_lane[lane];
        cs.sort_by_key(|&ci| calls[ci as usize].ts);
        let visits = v.iter().map(|&i| {
            let o = &ops[i as usize];
            Visit {
                pos: i,
                ts: o.ts,
                end: end_of(o.ts, o.dur),
                scope: o.cat != 2,
                tag: Tag::default(),
            }
        });
        let by_start = cs.iter().map(|&ci| (ci, calls[ci as usize].ts));
        let mut out = Found {
            calls,
            parent: &mut parent,
            depth: &mut depth,
            launcher: &mut launcher,
            top: &mut top,
        };
        sweep_thread(visits, by_start, &mut out);
    }
    Contained {
        parent,
        depth,
        launcher,
        top,
    }
}

/// Links what the read kept.
pub(crate) fn link(st: Export, trace: &Finished<'_>) -> Linkedup {
    let Export {
        ops: kept,
        ext,
        texts,
        launch,
        ..
    } = st;
    let HostLinks {
        names,
        lanes,
        host,
        calls,
        acts,
        mut counts,
    } = kept;
    let ops = host.into_vec();
    let calls = calls.into_vec();
    let acts = acts.into_vec();
    let (own, dup) = launch::owners(calls.iter().map(|c| c.corr), acts.iter().copied());
    counts.duplicate_runtime_correlation = dup;
    counts.unlinked_activities = own.iter().filter(|o| o.is_none()).count() as u64;
    let launched = launch::launches(
        calls.iter().map(|c| c.name),
        acts.iter().copied(),
        &own,
        &names,
    );
    let Contained {
        parent: op_parent,
        depth: op_depth,
        launcher: call_launcher,
        top: call_top,
    } = contain(lanes.len(), &ops, &calls);

    let mut replays = 0u32;
    let call_replay = launched
        .iter()
        .map(|l| {
            (l.graph && l.first.is_some()).then(|| {
                replays += 1;
                replays - 1
            })
        })
        .collect();

    let (grammar, steps) = windows::step_windows(trace.steps, || op_steps(&ops, &names, &lanes));
    let step_ends = windows::window_ends(&steps);
    let by = windows::by_lane(&steps);
    let keys: Vec<(String, String)> = (0..lanes.len() as u32)
        .map(|l| {
            let l = lanes.resolve(l);
            (l.pid.to_string(), l.tid.to_string())
        })
        .collect();
    let call_step = calls
        .iter()
        .map(|c| {
            windows::window_at(&by, &steps, &keys[c.lane as usize], c.ts)
                .flatten()
                .map(|k| k as u32)
        })
        .collect();
    let mut text_lanes = 0;
    let lane_ints = (0..lanes.len() as u32)
        .map(|l| {
            let l = lanes.resolve(l);
            let (p, t) = (int_of(&l.pid), int_of(&l.tid));
            text_lanes += u64::from(p.is_none()) + u64::from(t.is_none());
            (p, t)
        })
        .collect();
    Linkedup {
        names,
        lanes: lane_ints,
        ops,
        op_ext: ext,
        texts,
        op_parent,
        op_depth,
        calls,
        launched,
        call_launcher,
        call_top,
        call_step,
        acts,
        act_config: launch,
        act_owner: own,
        call_replay,
        steps,
        step_ends,
        grammar,
        counts,
        text_lanes,
    }
}

/// C8's `ProfilerStep#<n>` CPU ops (`cpu_op`, `Operator`).
fn op_steps(ops: &[HostOp], names: &Interner, lanes: &LaneTable) -> Vec<StepWindow> {
    ops.iter()
        .filter(|o| matches!(o.cat, 0 | 3) && windows::is_profiler_step(names.resolve(o.name)))
        .map(|o| {
            let l = lanes.resolve(o.lane);
            StepWindow {
                name: names.resolve(o.name).to_string(),
                lane: (l.pid.to_string(), l.tid.to_string()),
                start: o.ts,
                ann_end: end_of(o.ts, o.dur),
                index: o.index,
            }
        })
        .collect()
}
