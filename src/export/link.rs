//! The end of an export's read: every kept event linked, and each table
//! written as soon as what it needs is known (row ids are positions in
//! file order).
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
//!
//! Memory is bounded by phases: (1) the step windows and one containment
//! sweep per thread give every call its launcher, top-level op and step and
//! every op its parent and depth; the `ops` table is written and the host
//! ops are dropped; (2) the owners (C3) and launch figures (O6) are made
//! and the `activities`, `launches` and `steps` tables written. Nothing is
//! decoded whole: each table decodes its records a batch at a time.

use super::lanes::{LaneOps, Op};
use super::report::{PartFile, TracePart, WriteFailure};
use super::write::{CallLinks, Tables, NONE};
use super::{Export, ExportConfig, Table};
use crate::analysis::Finished;
use crate::hostops::contain::{sweep_thread, Sweep, Tag, Visit, Visitor};
use crate::hostops::launch::{self, end_of};
use crate::hostops::{HostLinks, InputCounts, Linked};
use crate::model::{Interner, LaneTable, ThreadPart};
use crate::store::pack::Records;
use crate::windows::{self, StepWindow};
use std::collections::HashMap;

fn int_of(p: &ThreadPart) -> Option<i64> {
    match p {
        ThreadPart::Num(n) => Some(*n),
        ThreadPart::Str(s) => s.parse().ok(),
    }
}

/// Each op's depth (C5): a byte, and the rare depths past 254 beside.
#[derive(Debug, Default)]
pub(crate) struct Depths {
    small: Vec<u8>,
    big: HashMap<u32, u32>,
}

impl Depths {
    fn with_len(n: usize) -> Depths {
        Depths {
            small: vec![0; n],
            big: HashMap::new(),
        }
    }

    pub fn get(&self, pos: u32) -> u32 {
        match self.small.get(pos as usize) {
            Some(&d) if d < u8::MAX => u32::from(d),
            Some(_) => self.big.get(&pos).copied().unwrap_or(u32::MAX),
            None => 0,
        }
    }

    fn set(&mut self, pos: u32, d: u32) {
        let Some(s) = self.small.get_mut(pos as usize) else {
            return;
        };
        match u8::try_from(d) {
            Ok(b) if b < u8::MAX => *s = b,
            _ => {
                *s = u8::MAX;
                self.big.insert(pos, d);
            }
        }
    }
}

/// What containment gives: per call its launcher and top-level op (O2,
/// O4), per op its parent and depth (C5) when the `ops` table is written.
struct Contained {
    launcher: Vec<u32>,
    top: Vec<u32>,
    parent: Vec<u32>,
    depth: Depths,
}

/// One thread's runtime call, as its sweep needs it.
#[derive(Clone, Copy)]
struct Call {
    ts: i64,
    end: i64,
    id: u32,
}

/// Where a thread's sweep writes what it finds.
struct Found<'a> {
    calls: &'a [Call],
    out: &'a mut Contained,
    with_ops: bool,
}

impl Visitor for Found<'_> {
    /// A parent precedes its child in key order: its depth is known.
    fn op(&mut self, at: &Visit, parent: Option<(u32, Tag)>, _: &mut Sweep) {
        if let (true, Some((p, _))) = (self.with_ops, parent) {
            let o = &mut *self.out;
            if let Some(slot) = o.parent.get_mut(at.pos as usize) {
                *slot = p;
            }
            let d = o.depth.get(p).saturating_add(1);
            o.depth.set(at.pos, d);
        }
    }

    fn call(&mut self, k: u32, sweep: &mut Sweep) {
        let c = self.calls[k as usize];
        let inner = sweep.innermost(c.end);
        self.out.launcher[c.id as usize] = inner.unwrap_or(NONE);
        self.out.top[c.id as usize] = sweep.outermost_scope(c.end).or(inner).unwrap_or(NONE);
    }
}

/// Launchers and top-level ops of the runtime calls (O2, O4) and, with
/// `with_ops`, parents and depths of the ops (C5), thread by thread as
/// `ops` computes them.
fn contain(ops: &LaneOps, calls: &Records<Linked>, lanes: usize, with_ops: bool) -> Contained {
    // The calls grouped by thread, file order kept within each: a counting
    // pass, then one exact array (no per-thread vectors' slack).
    let lanes = lanes.max(ops.lanes());
    let mut start = vec![0usize; lanes + 1];
    for c in calls.iter() {
        start[c.lane as usize + 1] += 1;
    }
    for l in 0..lanes {
        start[l + 1] += start[l];
    }
    let mut fill = start.clone();
    let mut grouped = vec![
        Call {
            ts: 0,
            end: 0,
            id: 0
        };
        calls.len()
    ];
    for (i, c) in calls.iter().enumerate() {
        let at = &mut fill[c.lane as usize];
        grouped[*at] = Call {
            ts: c.ts,
            end: end_of(c.ts, c.dur),
            id: i as u32,
        };
        *at += 1;
    }
    let n = if with_ops { ops.len() } else { 0 };
    let mut out = Contained {
        launcher: vec![NONE; calls.len()],
        top: vec![NONE; calls.len()],
        parent: vec![NONE; n],
        depth: Depths::with_len(n),
    };
    // One sweep per thread, as `ops` runs it (contain.rs).
    for lane in 0..lanes {
        let cs = &mut grouped[start[lane]..start[lane + 1]];
        // Stable: equal starts keep file order.
        cs.sort_by_key(|c| c.ts);
        let visits = ops.in_key_order(lane as u32).map(|o| Visit {
            pos: o.pos,
            ts: o.ts,
            end: end_of(o.ts, o.dur),
            scope: o.cat != 2,
            tag: Tag::default(),
        });
        let by_start = cs.iter().enumerate().map(|(k, c)| (k as u32, c.ts));
        let mut found = Found {
            calls: cs,
            out: &mut out,
            with_ops,
        };
        sweep_thread(visits, by_start, &mut found);
    }
    out
}

/// C8's `ProfilerStep#<n>` CPU ops (`cpu_op`, `Operator`), in file order.
fn op_steps(ops: &LaneOps, names: &Interner, lanes: &LaneTable) -> Vec<StepWindow> {
    ops.in_file_order()
        .filter(|o| matches!(o.cat, 0 | 3) && windows::is_profiler_step(names.resolve(o.name)))
        .map(|o: Op| {
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

/// Each call's step (I6's window of its lane), [`NONE`] before the first.
fn call_steps(calls: &Records<Linked>, steps: &[StepWindow], lanes: &LaneTable) -> Vec<u32> {
    let by = windows::by_lane(steps);
    let keys: Vec<(String, String)> = (0..lanes.len() as u32)
        .map(|l| {
            let l = lanes.resolve(l);
            (l.pid.to_string(), l.tid.to_string())
        })
        .collect();
    calls
        .iter()
        .map(|c| {
            windows::window_at(&by, steps, &keys[c.lane as usize], c.ts)
                .flatten()
                .map_or(NONE, |k| k as u32)
        })
        .collect()
}

/// A lane's (pid, tid) as integers (`None`: not an integer).
type LaneInts = (Option<i64>, Option<i64>);

/// (pid, tid) of each lane as integers (`None`: not an integer), and how
/// many values are not.
fn lane_ints(lanes: &LaneTable) -> (Vec<LaneInts>, u64) {
    let mut text = 0;
    let v = (0..lanes.len() as u32)
        .map(|l| {
            let l = lanes.resolve(l);
            let (p, t) = (int_of(&l.pid), int_of(&l.tid));
            text += u64::from(p.is_none()) + u64::from(t.is_none());
            (p, t)
        })
        .collect();
    (v, text)
}

/// A trace's counts before any table is written.
fn counted(
    path: &str,
    acts: &Records<Linked>,
    calls: &Records<Linked>,
    host_ops: usize,
) -> TracePart {
    TracePart {
        path: path.to_string(),
        complete: true,
        activities: acts.len() as u64,
        activities_dur_ns: acts.iter().map(|a| a.dur).fold(0i64, i64::saturating_add),
        runtime_calls: calls.len() as u64,
        host_ops: host_ops as u64,
        ..TracePart::default()
    }
}

/// Phase 2's links: each activity's owning call (C3), what each call
/// launched, the graph replays' numbers, and the replays' captured
/// launches (issue 57).
struct Launches {
    own: launch::Owners,
    launched: Vec<launch::Launch>,
    replay: Vec<u32>,
    replays: u32,
    caps: std::sync::Arc<crate::graphs::Captures>,
    captured: crate::graphs::linked::Matched,
}

impl Launches {
    /// The part's launch counts: calls that launched activities, and graph
    /// launches.
    fn count_into(&self, part: &mut TracePart) {
        part.launches_with_activities =
            self.launched.iter().filter(|x| x.first().is_some()).count() as u64;
        part.graph_launches = u64::from(self.replays);
    }
}

/// [`Launches`] of one trace; the owners' counts go into `counts`. The
/// captures come from beside the trace (or `--capture`).
fn launches(
    (calls, acts): (&Records<Linked>, &Records<Linked>),
    (names, lanes): (&Interner, &LaneTable),
    trace: &Finished<'_>,
    counts: &mut InputCounts,
) -> Launches {
    let (own, dup) = launch::owners(|| calls.iter().map(|c| c.corr), acts.iter());
    counts.duplicate_runtime_correlation = dup;
    counts.unlinked_activities = own.unowned();
    let launched = launch::launches(calls.iter().map(|c| c.name), acts.iter(), &own, names);
    let (replay, replays) = replay_numbers(&launched);
    let caps = crate::graphs::captures_of(trace);
    let captured = captured_launches(&caps, (acts, &own, &launched), calls, names, lanes, trace);
    Launches {
        own,
        launched,
        replay,
        replays,
        caps,
        captured,
    }
}

/// Links one trace's kept events and writes its asked tables into the
/// temporary folder (part `n`), phase by phase (see the module docs).
pub(crate) fn export_trace(
    st: Export,
    trace: &Finished<'_>,
    n: u64,
    config: &ExportConfig,
) -> TracePart {
    let Export {
        links,
        ops,
        texts,
        launch: configs,
        mut memory,
        memory_lanes,
        ..
    } = st;
    let HostLinks {
        names,
        lanes,
        calls,
        acts,
        mut counts,
        ..
    } = links;
    let wants = |t: Table| config.tables.contains(&t);
    let (lane_ints, text_lanes) = lane_ints(&lanes);
    let tables = Tables {
        trace: trace.path,
        names: &names,
        lanes: &lane_ints,
        compression: config.compression,
    };
    let file = |t: Table| config.parts.join(format!("{n}.{}", t.file_name()));
    let mut part = counted(trace.path, &acts, &calls, ops.len());
    let done = |part: &mut TracePart, table: Table, r| record(part, table, &file(table), r);

    // Phase 1: steps and containment; the ops table; the host ops dropped.
    let (grammar, steps) = windows::step_windows(trace.steps, || op_steps(&ops, &names, &lanes));
    let step_ends = windows::window_ends(&steps);
    let step = call_steps(&calls, &steps, &lanes);
    let Contained {
        launcher,
        top,
        parent,
        depth,
    } = contain(&ops, &calls, lanes.len(), wants(Table::Ops));
    let mut ok = true;
    if wants(Table::Ops) {
        let r = tables.ops(&file(Table::Ops), &ops, &parent, &depth, &texts);
        ok = done(&mut part, Table::Ops, r);
    }
    drop((ops, parent, depth, texts));

    // Phase 2: owners and launch figures; the other tables.
    let lk = launches((&calls, &acts), (&names, &lanes), trace, &mut counts);
    let graph_notes = lk.captured.summary.said();
    lk.count_into(&mut part);
    part.steps = steps.len() as u64;
    part.step_grammar = grammar.clone();
    let links = CallLinks {
        names: calls.iter().map(|c| c.name).collect(),
        replay: lk.replay,
        launcher,
        top,
        step,
    };
    for table in [Table::Activities, Table::Launches, Table::Steps] {
        if !ok || !wants(table) {
            continue;
        }
        let path = file(table);
        let r = match table {
            Table::Activities => {
                let inside = super::write::Inside {
                    caps: &lk.caps,
                    given: &lk.captured.given,
                };
                tables.activities(&path, &acts, &configs, &lk.own, &links, &inside)
            }
            Table::Launches => tables.launches(&path, &calls, &lk.launched, &links),
            _ => tables.steps(&path, &steps, &step_ends, grammar.as_deref()),
        };
        ok = done(&mut part, table, r);
    }
    part.memory_events = memory.events.len() as u64;
    if ok && wants(Table::Memory) {
        memory.sort();
        let r = tables.memory(
            &file(Table::Memory),
            &memory,
            &memory_lanes,
            &steps,
            &step_ends,
        );
        done(&mut part, Table::Memory, r);
    }
    part.parts.sort_by_key(|p| p.table);
    part.notes = notes(&counts, names.cut() as u64, steps.is_empty(), text_lanes);
    part.notes.extend(graph_notes);
    part.notes
        .extend(wide_ids(calls.iter().chain(acts.iter()).map(|x| x.corr)));
    part
}

/// The note of correlation ids past the tables' Int64 column (issue 59):
/// the link is made on the exact id, the column holds null, and the note
/// counts them and names the first.
fn wide_ids(corrs: impl Iterator<Item = Option<i128>>) -> Option<String> {
    let mut wide = corrs
        .flatten()
        .filter(|c| super::write::narrow(Some(*c)).is_none());
    let first = wide.next()?;
    let n = 1 + wide.count();
    Some(format!(
        "{n} correlation ids do not fit the tables' Int64 column (the first: {first}): \
         linked by their exact value, written null in `correlation`"
    ))
}

/// A table's file written (its part noted; `true`) or its failure kept.
fn record(
    part: &mut TracePart,
    table: Table,
    file: &std::path::Path,
    r: Result<u64, WriteFailure>,
) -> bool {
    match r {
        Ok(rows) => {
            part.parts.push(PartFile {
                table,
                file: file.display().to_string(),
                rows,
            });
            true
        }
        Err(e) => {
            part.write_error = Some(e);
            false
        }
    }
}

/// Each graph launch that ran activities numbered 0, 1, … in file order
/// (its replay), [`NONE`] for the other calls; and how many replays.
fn replay_numbers(launched: &[launch::Launch]) -> (Vec<u32>, u32) {
    let mut replays = 0u32;
    let replay = launched
        .iter()
        .map(|l| {
            if l.graph && l.first().is_some() {
                replays += 1;
                replays - 1
            } else {
                NONE
            }
        })
        .collect();
    (replay, replays)
}

/// The notes of a trace's bad input (ops' wording) and of its steps.
fn notes(counts: &InputCounts, cut: u64, no_steps: bool, text_lanes: u64) -> Vec<String> {
    let mut v = counts.notes(cut);
    if no_steps {
        v.push("no step annotations (C8): the step columns are null".into());
    }
    if text_lanes > 0 {
        v.push(format!(
            "{text_lanes} pid/tid values are not integers: null in the tables"
        ));
    }
    v
}

/// The graph replays matched to `caps` (`crate::graphs::linked`, as
/// `ops`), placed by the trace's step and `proposer.propose` annotations;
/// the attributed activities sorted by record position.
fn captured_launches(
    caps: &crate::graphs::Captures,
    (acts, own, launched): (&Records<Linked>, &launch::Owners, &[launch::Launch]),
    calls: &Records<Linked>,
    names: &Interner,
    lanes: &LaneTable,
    trace: &Finished<'_>,
) -> crate::graphs::linked::Matched {
    if !launched.iter().any(|l| l.graph) {
        return crate::graphs::linked::Matched {
            summary: crate::graphs::GraphsSummary::of_captures(caps),
            given: Vec::new(),
        };
    }
    let ids: HashMap<(String, String), u32> = (0..lanes.len() as u32)
        .map(|id| {
            let l = lanes.resolve(id);
            ((l.pid.to_string(), l.tid.to_string()), id)
        })
        .collect();
    let mut spans = crate::graphs::place::Spans::of_steps(trace.steps, |p, t| {
        ids.get(&(p.to_string(), t.to_string())).copied()
    });
    // The graph launches' (lane, ts), by call position.
    let at: HashMap<u32, (u32, i64)> = calls
        .iter()
        .enumerate()
        .filter(|(i, _)| launched.get(*i).is_some_and(|l| l.graph))
        .map(|(i, c)| (i as u32, (c.lane, c.ts)))
        .collect();
    let mut m = crate::graphs::linked::match_replays(caps, acts, own, launched, names, |call| {
        at.get(&call)
            .map_or(crate::graphs::place::Place::Outside, |&(l, ts)| {
                spans.place(l, ts)
            })
    });
    m.given.sort_unstable_by_key(|g| g.pos);
    m
}

#[cfg(test)]
mod tests {
    use super::Depths;

    /// Depths below 255 are a byte; deeper ones are kept beside, exactly.
    #[test]
    fn depths_past_a_byte() {
        let mut d = Depths::with_len(4);
        for (pos, depth) in [(0, 0), (1, 254), (2, 255), (3, 1_000_000)] {
            d.set(pos, depth);
        }
        let got: Vec<u32> = (0..4).map(|p| d.get(p)).collect();
        assert_eq!(got, vec![0, 254, 255, 1_000_000]);
        d.set(2, 3);
        assert_eq!(d.get(2), 3);
        assert_eq!(d.get(9), 0);
    }
}
