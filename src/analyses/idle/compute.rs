//! The finish of `idle`: launch links (C3), steps (C8), then one walk in
//! start order over every activity (`sweep.rs`: stream gaps I2–I3, device
//! timelines I4, per-step parts I6) and one queue walk per stream (I5,
//! `queue.rs`). What is kept per activity is a 24 B [`Rec`] (its times,
//! its call, its class and its place in its stream); per runtime call its
//! start and its part. Each stream's in-flight and pending functions are
//! walked from two sorted lists of its changes, one stream at a time, and
//! never stored. Every step is a sort or a linear walk: O(events log events).

use super::queue::{self, Instants};
use super::sweep::{self, overlap, DevAcc, Iv, PartAcc, StreamAcc, Walked};
use super::{
    classify, lane_labels, mean6, pct, Class, Counts, DeviceTimeline, Idle, Part, Queue,
    QueueBrief, StepIdle, StepRow, StreamIdle, Thresholds, TraceIdle, QUEUE_LIMIT,
};
use crate::analysis::Finished;
use crate::hostops::launch::{end_of, FirstCall};
use crate::hostops::Linked;
use crate::ledger::Kind;
use crate::model::{LaneTable, ThreadPart};
use crate::store::pack::Records;
use rayon::iter::Either;
use std::collections::{BTreeMap, BTreeSet};

/// An unlinked activity's call (C3).
pub(super) const NO_CALL: u32 = u32::MAX;

/// A device activity as the finish keeps it (24 B): its interval, its
/// owning runtime call ([`NO_CALL`] when unlinked), and in `meta` its
/// position among its stream's activities in file order (I1's last key;
/// 29 bits: a stream of more than 5·10⁸ activities, 12 GB of these
/// records, is beyond any machine), its class (C6) and whether it is a
/// kernel.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Rec {
    pub start: i64,
    pub end: i64,
    pub call: u32,
    meta: u32,
}

impl Rec {
    const POS_MAX: u32 = (1 << 29) - 1;

    fn new(start: i64, end: i64, call: u32, pos: usize, class: Class, kernel: bool) -> Rec {
        let pos = u32::try_from(pos).unwrap_or(Rec::POS_MAX).min(Rec::POS_MAX);
        Rec {
            start,
            end,
            call,
            meta: pos << 3 | (class as u32) << 1 | u32::from(kernel),
        }
    }

    fn pos(&self) -> u32 {
        self.meta >> 3
    }

    pub(super) fn class(&self) -> Class {
        match (self.meta >> 1) & 3 {
            0 => Class::Compute,
            1 => Class::Comm,
            _ => Class::Memory,
        }
    }

    pub(super) fn is_kernel(&self) -> bool {
        self.meta & 1 == 1
    }
}

/// The runtime calls that own a correlation, as the walk needs them.
pub(super) struct Calls {
    /// Each call's start.
    pub ts: Vec<i64>,
    /// Each call's part (I6): a step row, `rows` (pre) or `rows + 1`
    /// (unattributed).
    pub part: Vec<u32>,
}

impl Calls {
    /// The part of an activity launched by `call` (unlinked: unattributed).
    pub(super) fn part_of(&self, call: u32, n_parts: usize) -> usize {
        match self.part.get(call as usize) {
            Some(&p) => p as usize,
            None => n_parts - 1,
        }
    }
}

/// One step annotation (C8), from the neutral step windows.
type Win = crate::windows::StepWindow;

/// C8: vLLM step annotations; if none, `ProfilerStep#<n>` (user
/// annotation or CPU op); if none, no steps. Sorted by (start, index).
fn step_annotations(trace: &Finished<'_>, idle: &Idle) -> (Option<String>, Vec<Win>) {
    crate::windows::step_windows(trace.steps, || idle.op_steps.windows())
}

/// C3: the runtime calls in file order, each call's start and thread, and
/// the owners of the correlations: the first call in file order owning
/// each (the later ones counted).
fn link_calls(kept: &Records<Linked>, counts: &mut Counts) -> (Vec<i64>, Vec<u32>, FirstCall) {
    let (by_corr, dup) = FirstCall::build(|| kept.iter().map(|c| c.corr));
    counts.duplicate_runtime_correlation += dup;
    let ts = kept.iter().map(|c| c.ts).collect();
    let lanes = kept.iter().map(|c| c.lane).collect();
    (ts, lanes, by_corr)
}

/// C8 / I6: each call's part — the step whose window `[S_i.ts,
/// S_{i+1}.ts)` on the call's thread holds its start; before the first,
/// pre (`n`); a thread without steps, unattributed (`n + 1`).
fn call_parts(call_lanes: &[u32], ts: &[i64], lanes: &LaneTable, wins: &[Win]) -> Vec<u32> {
    let n = wins.len();
    let by_lane = crate::windows::by_lane(wins);
    let of_lane: Vec<Option<&Vec<usize>>> = (0..lanes.len() as u32)
        .map(|l| {
            let l = lanes.resolve(l);
            by_lane.get(&(l.pid.to_string(), l.tid.to_string()))
        })
        .collect();
    call_lanes
        .iter()
        .zip(ts)
        .map(|(&l, &t)| {
            let part = match of_lane.get(l as usize).copied().flatten() {
                None => n + 1,
                Some(ids) => match ids.partition_point(|&i| wins[i].start <= t) {
                    0 => n,
                    k => ids[k - 1],
                },
            };
            part as u32
        })
        .collect()
}

/// The activities, stream after stream (streams in (device, stream)
/// order, each in I1's order), and each stream's lane.
struct Grouped {
    recs: Vec<Rec>,
    seg: Vec<usize>,
    lane_of_stream: Vec<u32>,
}

/// The kept activities grouped by stream (counted first, so each lands in
/// place as the records are decoded and freed), linked to their calls
/// (C3) and classed (C6), then each stream sorted by (ts, end, file
/// order) (I1).
fn group_acts(
    kept: Result<Records<Linked>, &Records<Linked>>,
    lanes: &LaneTable,
    names: &crate::model::Interner,
    by_corr: &FirstCall,
    counts: &mut Counts,
) -> Grouped {
    let mut per_lane = vec![0usize; lanes.len()];
    let seen = match &kept {
        Ok(k) => k,
        Err(k) => *k,
    };
    let n = seen.len();
    for a in seen.iter() {
        per_lane[a.lane as usize] += 1;
    }
    let mut lane_of_stream: Vec<u32> = (0..lanes.len() as u32)
        .filter(|&l| per_lane[l as usize] > 0)
        .collect();
    lane_of_stream.sort_by(|&a, &b| lanes.resolve(a).cmp(lanes.resolve(b)));
    let mut stream_of_lane = vec![0usize; lanes.len()];
    let mut seg = vec![0usize];
    for (s, &l) in lane_of_stream.iter().enumerate() {
        stream_of_lane[l as usize] = s;
        seg.push(seg[s] + per_lane[l as usize]);
    }
    drop(per_lane);
    let mut next = seg[..lane_of_stream.len()].to_vec();
    let mut recs = vec![Rec::default(); n];
    // C6 once per (name, kind): a slot per interned name, no hashing.
    let mut class_of: Vec<[Option<Class>; 3]> = vec![[None; 3]; names.len()];
    // Decoded and freed as they land when the store is this finish's.
    let decoded: Box<dyn Iterator<Item = Linked> + '_> = match kept {
        Ok(k) => Box::new(k.drain()),
        Err(k) => Box::new(k.iter()),
    };
    for a in decoded {
        let s = stream_of_lane[a.lane as usize];
        let at = next[s];
        next[s] += 1;
        let kind = match a.code {
            1 => Kind::Memcpy,
            2 => Kind::Memset,
            _ => Kind::Kernel,
        };
        let slot = &mut class_of[a.name.0 as usize][kind as usize];
        let class = *slot.get_or_insert_with(|| classify(kind, names.resolve(a.name)));
        let call = a.corr.and_then(|c| by_corr.get(c)).unwrap_or(NO_CALL);
        let end = end_of(a.ts, a.dur);
        counts.unlinked += u64::from(call == NO_CALL);
        counts.zero_duration += u64::from(end == a.ts);
        recs[at] = Rec::new(a.ts, end, call, at - seg[s], class, kind == Kind::Kernel);
    }
    for w in seg.windows(2) {
        recs[w[0]..w[1]].sort_unstable_by_key(|r| (r.start, r.end, r.pos()));
    }
    Grouped {
        recs,
        seg,
        lane_of_stream,
    }
}

/// The devices (pids of the streams) in order, and each stream's device.
fn devices_of(lanes: &LaneTable, lane_of_stream: &[u32]) -> (Vec<ThreadPart>, Vec<u32>) {
    let devs: BTreeSet<ThreadPart> = lane_of_stream
        .iter()
        .map(|&l| lanes.resolve(l).pid.clone())
        .collect();
    let sorted: Vec<ThreadPart> = devs.into_iter().collect();
    let of_stream = lane_of_stream
        .iter()
        .map(|&l| {
            let p = &lanes.resolve(l).pid;
            sorted.binary_search(p).unwrap_or(0) as u32
        })
        .collect();
    (sorted, of_stream)
}

pub(super) fn measure(idle: Idle, trace: &Finished<'_>) -> TraceIdle {
    // The store is this finish's alone when no other analysis reads it
    // (`idle` by itself): its activities are then freed as they are
    // grouped, as when `idle` kept its own.
    let mut store = std::sync::Arc::try_unwrap(
        trace
            .collected::<crate::hostops::store::HostStore>()
            .unwrap_or_default(),
    );
    let owned_acts = match &mut store {
        Ok(s) => Some(std::mem::take(&mut s.links.acts)),
        Err(_) => None,
    };
    let links = match &store {
        Ok(s) => &s.links,
        Err(shared) => &shared.links,
    };
    // C1's counts are the activities' alone; C2's lane_from_args counts
    // only activities.
    let mut counts = Counts {
        no_ts: links.act_counts.no_ts,
        negative_dur_clamped: links.act_counts.negative_dur_clamped,
        lane_from_args: links.counts.lane_from_args,
        ..Counts::default()
    };
    let (grammar, wins) = step_annotations(trace, &idle);
    let n_rows = wins.len();
    let (ts, call_lanes, by_corr) = link_calls(&links.calls, &mut counts);
    let part = call_parts(&call_lanes, &ts, &links.lanes, &wins);
    drop(call_lanes);
    let calls = Calls { ts, part };
    let acts = owned_acts.ok_or(&links.acts);
    let g = group_acts(acts, &links.lanes, &links.names, &by_corr, &mut counts);
    drop(by_corr);
    let (devices_sorted, dev_of_stream) = devices_of(&links.lanes, &g.lane_of_stream);
    // What the walk and the queues take from here (measured on 400 k
    // steps: ~150 B per step row, ~32 B per activity), asked for first:
    // under an address-space limit a finish that cannot have it gives up
    // now, not halfway with the reserve spent (an abort).
    let working = 160 * n_rows as u64 + 32 * g.recs.len() as u64;
    if !trace.probe_memory(working) {
        return unmeasured(trace);
    }
    let input = sweep::Input {
        recs: &g.recs,
        seg: &g.seg,
        dev_of_stream: &dev_of_stream,
        calls: &calls,
        kernel_wait_ns: idle.spec.kernel_wait_ns,
    };
    let Some(Walked {
        streams: accs,
        devices: devs,
        parts,
        used,
    }) = sweep::walk(&input, n_rows + 2, devices_sorted.len(), &mut counts)
    else {
        trace.short_of_memory();
        return unmeasured(trace);
    };
    let ends = crate::windows::window_ends(&wins);
    let (streams, briefs) = streams(
        &g,
        &links.lanes,
        accs,
        &used,
        &calls,
        &wins,
        &ends,
        &mut counts,
    );
    let (devices, compute) = devices(devs, &devices_sorted);
    drop(used);
    let parts: Vec<Part> = parts.into_iter().map(|p| seal(p, &compute)).collect();
    let steps = step_rows(wins, &ends, grammar, parts, briefs, &streams, &mut counts);
    let mut out = TraceIdle {
        steps,
        counts,
        ..figures(trace, &idle, devices, streams)
    };
    out.notes = notes(trace, &out);
    out
}

/// A trace whose figures could not be measured (the memory they need is
/// not there): its path alone; the finish says why.
fn unmeasured(trace: &Finished<'_>) -> TraceIdle {
    TraceIdle {
        path: trace.path.to_string(),
        ..TraceIdle::default()
    }
}

/// The trace's figures from its devices and streams (I4's overlap share
/// from the devices' sums); steps, counts and notes left to the caller.
fn figures(
    trace: &Finished<'_>,
    idle: &Idle,
    devices: Vec<DeviceTimeline>,
    streams: Vec<StreamIdle>,
) -> TraceIdle {
    let (ov, comm) = devices.iter().fold((0i128, 0i128), |(o, c), d| {
        (o + d.comm_comp_overlap_ns, c + d.comm_ns)
    });
    TraceIdle {
        path: trace.path.to_string(),
        units: "ns".into(),
        thresholds: Thresholds {
            kernel_wait_ns: idle.spec.kernel_wait_ns,
            queue_limit: QUEUE_LIMIT,
        },
        devices,
        comm_comp_overlap_pct: pct(ov, comm),
        streams,
        complete: true,
        ..TraceIdle::default()
    }
}

/// Each step row's in-flight window on each stream it used (I6): (row,
/// stream, window), sorted by row then stream (flat: no list per row).
type Briefs = Vec<(u32, u32, QueueBrief)>;

/// I1–I3 and I5 per (device, stream), streams sorted by (device, stream);
/// each row's queue windows on the streams it used (I6).
#[allow(clippy::too_many_arguments)]
fn streams(
    g: &Grouped,
    lanes: &LaneTable,
    accs: Vec<StreamAcc>,
    used: &[(u32, u32)],
    calls: &Calls,
    wins: &[Win],
    ends: &[Option<i64>],
    counts: &mut Counts,
) -> (Vec<StreamIdle>, Briefs) {
    // Each stream's rows, as runs of one list (by stream, then row).
    let mut by_stream: Vec<(u32, u32)> = used
        .iter()
        .filter(|&&(r, _)| (r as usize) < wins.len())
        .map(|&(r, s)| (s, r))
        .collect();
    by_stream.sort_unstable();
    let mut briefs: Briefs = Vec::with_capacity(by_stream.len());
    let mut out = Vec::with_capacity(accs.len());
    for (sid, acc) in accs.into_iter().enumerate() {
        let run = &g.recs[g.seg[sid]..g.seg[sid + 1]];
        let (device, stream) = lane_labels(lanes.resolve(g.lane_of_stream[sid]));
        let mut s = acc.s;
        s.device = device;
        s.stream = stream;
        if s.activities == 1 {
            counts.single_activity_streams += 1;
        }
        counts.activities_starting_before_launch += s.queue.activities_starting_before_launch;
        let first = acc.first.unwrap_or(i64::MAX);
        s.first_start_ns = first;
        s.last_end_ns = acc.prev_end.unwrap_or(first);
        s.span_ns = i128::from(s.last_end_ns) - i128::from(s.first_start_ns);
        s.busy_ns = acc.busy;
        let idle = s.idle_ns;
        s.host_wait_pct_of_idle = pct(s.host_wait_ns, idle);
        s.kernel_wait_pct_of_idle = pct(s.kernel_wait_ns, idle);
        s.other_pct_of_idle = pct(s.other_ns, idle);
        let from = by_stream.partition_point(|&(s, _)| (s as usize) < sid);
        let to = by_stream.partition_point(|&(s, _)| (s as usize) <= sid);
        let asked_rows: Vec<usize> = by_stream[from..to]
            .iter()
            .map(|&(_, r)| r as usize)
            .collect();
        let (queue, windows) = stream_queue(run, calls, |last| {
            asked_rows
                .iter()
                .map(|&r| (wins[r].start, ends[r].or(last).unwrap_or(wins[r].start)))
                .collect()
        });
        s.queue = Queue {
            activities_starting_before_launch: s.queue.activities_starting_before_launch,
            ..queue
        };
        for (&r, w) in asked_rows.iter().zip(windows) {
            let brief = QueueBrief {
                max: w.max,
                mean: mean6(w.integral, i128::from(w.len)),
            };
            briefs.push((r as u32, sid as u32, brief));
        }
        out.push(s);
    }
    briefs.sort_unstable_by_key(|b| (b.0, b.1));
    (out, briefs)
}

/// I5 for one stream: in flight (+1 at each linked activity's call start,
/// −1 at its end) and pending (−1 at its start), and the windows `asked`
/// gives from the in-flight function's last change.
fn stream_queue(
    run: &[Rec],
    calls: &Calls,
    asked: impl FnOnce(Option<i64>) -> Vec<(i64, i64)>,
) -> (Queue, Vec<queue::Window>) {
    let linked = || run.iter().filter(|r| r.call != NO_CALL);
    let plus_in_run = || linked().map(|r| calls.ts[r.call as usize]);
    let ends_in_run = || linked().map(|r| r.end);
    let (plus, ends) = (sorted_copy(plus_in_run()), sorted_copy(ends_in_run()));
    let plus_sorted = || match &plus {
        Some(v) => Either::Left(v.iter().copied()),
        None => Either::Right(plus_in_run()),
    };
    let ends_sorted = || match &ends {
        Some(v) => Either::Left(v.iter().copied()),
        None => Either::Right(ends_in_run()),
    };
    let last = plus_sorted().last().max(ends_sorted().last());
    let in_flight = || Instants::new(plus_sorted(), ends_sorted());
    // The run is in start order: the pending function's −1s are sorted.
    let pending = Instants::new(plus_sorted(), linked().map(|r| r.start));
    let q = Queue {
        in_flight: queue::stats(in_flight(), QUEUE_LIMIT),
        pending: queue::stats(pending, QUEUE_LIMIT),
        activities_starting_before_launch: 0,
    };
    let windows = queue::windows(in_flight(), &asked(last));
    (q, windows)
}

/// `vals` sorted, or `None` when they already are. A stream's launches
/// come in order and its activities one after another, so its calls'
/// starts and its activities' ends are usually sorted in the run's start
/// order already: they are walked in place then, with no copy and no sort
/// (16 B and a sort per linked activity of the stream).
fn sorted_copy(vals: impl Iterator<Item = i64> + Clone) -> Option<Vec<i64>> {
    if vals.clone().is_sorted() {
        return None;
    }
    let mut v: Vec<i64> = vals.collect();
    v.sort_unstable();
    Some(v)
}

/// I4 per device; also each device's merged compute intervals (kept on
/// devices with communication, for the parts' overlap).
fn devices(devs: Vec<DevAcc>, sorted: &[ThreadPart]) -> (Vec<DeviceTimeline>, Vec<Vec<Iv>>) {
    let mut out = Vec::with_capacity(devs.len());
    let mut compute_u = Vec::with_capacity(devs.len());
    for (d, acc) in devs.into_iter().enumerate() {
        let span = match (acc.first, acc.all.reach) {
            (Some(f), Some(l)) => i128::from(l) - i128::from(f),
            _ => 0,
        };
        let busy = acc.all.len;
        let [c, m, mem] = acc.class.map(|u| u.len);
        let ov = overlap(&acc.comm_list, &acc.compute_list);
        let idle = span - busy;
        out.push(DeviceTimeline {
            device: super::label(&sorted[d]),
            activities: acc.activities,
            span_ns: span,
            busy_ns: busy,
            idle_ns: idle,
            compute_ns: c,
            comm_ns: m,
            memory_ns: mem,
            non_compute_ns: span - c - idle,
            comm_kernels: acc.comm_kernels,
            comm_comp_overlap_ns: ov,
            comm_comp_overlap_pct: pct(ov, m),
            idle_pct: pct(idle, span),
            compute_pct: pct(c, span),
        });
        compute_u.push(acc.compute_list);
    }
    (out, compute_u)
}

/// A part's busy time and its communication's overlap with each device's
/// compute (`compute`: each device's union of all its compute kernels).
fn seal(p: PartAcc, compute: &[Vec<Iv>]) -> Part {
    let PartAcc {
        mut work,
        all,
        mut comm,
    } = p;
    work.busy_ns = all.len;
    comm.sort_by_key(|c| c.0);
    let mut ov = 0i128;
    for run in comm.chunk_by(|a, b| a.0 == b.0) {
        let mut u: Vec<Iv> = Vec::new();
        for &(_, (s, e)) in run {
            sweep::merge_into(&mut u, s, e);
        }
        let d = run[0].0 as usize;
        ov += overlap(&u, compute.get(d).map_or(&[][..], Vec::as_slice));
    }
    work.comm_comp_overlap_ns = ov;
    work.comm_comp_overlap_pct = pct(ov, work.comm_ns);
    work
}

/// I6: the rows (with their queues), pre, unattributed and totals.
fn step_rows(
    wins: Vec<Win>,
    ends: &[Option<i64>],
    grammar: Option<String>,
    parts: Vec<Part>,
    briefs: Briefs,
    streams: &[StreamIdle],
    counts: &mut Counts,
) -> StepIdle {
    let n = wins.len();
    let mut parts = parts.into_iter();
    let mut briefs = briefs.into_iter().peekable();
    let mut rows = crate::rows::Rows::default();
    let mut sum = Part::default();
    for (i, w) in wins.into_iter().enumerate() {
        let work = parts.next().unwrap_or_default();
        let mut queue_in_flight = BTreeMap::new();
        while let Some((_, s, brief)) = briefs.next_if(|b| b.0 as usize == i) {
            let s = &streams[s as usize];
            queue_in_flight.insert(format!("{}:{}", s.device, s.stream), brief);
        }
        if work.activities == 0 {
            counts.steps_without_gpu_work += 1;
        }
        let row = StepRow {
            index: i as u64,
            name: w.name,
            host_start_ns: w.start,
            host_end_ns: ends[i],
            annotation_end_ns: w.ann_end,
            work,
            queue_in_flight,
        };
        rows.push(&row);
        sum = sum_parts([&sum, &row.work]);
    }
    rows.shrink();
    let pre = parts.next().unwrap_or_default();
    let unattributed = parts.next().unwrap_or_default();
    let totals = sum_parts([&sum, &pre, &unattributed]);
    StepIdle {
        grammar,
        window: "iteration".into(),
        count: n as u64,
        rows,
        pre,
        unattributed,
        totals,
    }
}
/// Σ of the step rows' figures.
pub(super) fn sum_rows<R: std::borrow::Borrow<StepRow>>(rows: impl IntoIterator<Item = R>) -> Part {
    let mut t = Part::default();
    for r in rows {
        t = sum_parts([&t, &r.borrow().work]);
    }
    t
}

/// The sum of parts (first start = min, last end = max; pct of the sums).
fn sum_parts<'a>(parts: impl IntoIterator<Item = &'a Part>) -> Part {
    let mut t = Part::default();
    let min = |a: Option<i64>, b: Option<i64>| match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    let max = |a: Option<i64>, b: Option<i64>| match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    };
    for p in parts {
        t.activities += p.activities;
        t.kernels += p.kernels;
        t.gpu_first_start_ns = min(t.gpu_first_start_ns, p.gpu_first_start_ns);
        t.gpu_last_end_ns = max(t.gpu_last_end_ns, p.gpu_last_end_ns);
        t.busy_ns += p.busy_ns;
        t.gpu_ns += p.gpu_ns;
        t.host_wait_ns += p.host_wait_ns;
        t.kernel_wait_ns += p.kernel_wait_ns;
        t.other_ns += p.other_ns;
        t.idle_ns += p.idle_ns;
        t.compute_ns += p.compute_ns;
        t.comm_ns += p.comm_ns;
        t.memory_ns += p.memory_ns;
        t.comm_comp_overlap_ns += p.comm_comp_overlap_ns;
    }
    t.comm_comp_overlap_pct = pct(t.comm_comp_overlap_ns, t.comm_ns);
    t
}

/// The trace's notes, and one per non-zero count.
fn notes(trace: &Finished<'_>, out: &TraceIdle) -> Vec<String> {
    let mut n = trace.meta.notes.clone();
    let c = &out.counts;
    let said: [(u64, &str); 10] = [
        (c.negative_dur_clamped, "device activities with a negative dur, taken as 0 (C1 negative_dur_clamped)"),
        (c.no_ts, "device activities without ts, skipped (C1 no_ts)"),
        (c.duplicate_runtime_correlation, "runtime calls repeating an earlier call's correlation: the first owns it (C3 duplicate_runtime_correlation)"),
        (c.unlinked, "device activities without an owning runtime call (unlinked, C3): in the timeline, never host waits, not in the queue, unattributed"),
        (c.activities_starting_before_launch, "activities starting before their runtime call (clock skew; I5 activities_starting_before_launch)"),
        (c.overlapping, "activities starting before their stream's running maximum end (overlap: gap 0, I2)"),
        (c.zero_duration, "zero-duration activities (counted, add 0 ns)"),
        (c.single_activity_streams, "streams with a single activity (no gap)"),
        (c.steps_without_gpu_work, "steps without GPU work (rows with 0 activities, I6)"),
        (c.lane_from_args, "device activities whose args.device/args.stream differ from their pid/tid: placed on the args' device and stream (C2)"),
    ];
    for (k, what) in said {
        if k > 0 {
            n.push(format!("{k} {what}"));
        }
    }
    if out.steps.grammar.is_none() {
        n.push("no vLLM step or ProfilerStep annotation: no per-step rows; every activity is unattributed".into());
    }
    if out.streams.is_empty() {
        n.push("no GPU activity: nothing to measure".into());
    }
    n
}
