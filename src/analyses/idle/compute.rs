//! The finish of `idle`: launch links (C3), steps (C8), stream gaps
//! (I2–I3), queues (I5), device timelines (I4) and per-step parts (I6),
//! each a sort and a linear sweep.

use super::queue::StepFn;
use super::{
    classify, lane_labels, mean6, ns64, pct, Act, Call, Class, Counts, DeviceTimeline, Idle, Part,
    Queue, QueueBrief, StepIdle, StepRow, StreamIdle, Thresholds, TraceIdle, QUEUE_LIMIT,
};
use crate::analysis::Finished;
use crate::ledger::Kind;
use crate::model::{Lane, ThreadPart};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A half-open interval in ns.
type Iv = (i64, i64);

/// Sorted, merged (touching intervals merge).
fn union(mut ivs: Vec<Iv>) -> Vec<Iv> {
    ivs.sort_unstable();
    let mut out: Vec<Iv> = Vec::with_capacity(ivs.len());
    for (s, e) in ivs {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn length(merged: &[Iv]) -> i128 {
    merged
        .iter()
        .map(|&(s, e)| i128::from(e) - i128::from(s))
        .sum()
}

/// |a ∩ b| of two merged lists (two pointers).
fn overlap(a: &[Iv], b: &[Iv]) -> i128 {
    let (mut i, mut j, mut total) = (0, 0, 0i128);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            total += i128::from(hi) - i128::from(lo);
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

/// C3: the owning runtime call of each correlation: the first in file
/// order. Returns the map and counts the later duplicates.
fn owners(calls: &mut [Call], counts: &mut Counts) -> HashMap<i64, usize> {
    calls.sort_by_key(|c| c.index);
    let mut own: HashMap<i64, usize> = HashMap::with_capacity(calls.len());
    for (i, c) in calls.iter().enumerate() {
        match own.entry(c.corr) {
            std::collections::hash_map::Entry::Occupied(_) => {
                counts.duplicate_runtime_correlation += 1;
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(i);
            }
        }
    }
    own
}

/// One step annotation (C8), from the neutral step windows.
type Win = crate::windows::StepWindow;

/// C8: vLLM step annotations; if none, `ProfilerStep#<n>` (user
/// annotation or CPU op); if none, no steps. Sorted by (start, index).
fn step_annotations(trace: &Finished<'_>, idle: &Idle) -> (Option<String>, Vec<Win>) {
    crate::windows::step_windows(trace.steps, || {
        idle.op_steps
            .iter()
            .map(|o| {
                let l = idle.lanes.resolve(o.lane);
                Win {
                    name: idle.names.resolve(o.name).to_string(),
                    lane: (l.pid.to_string(), l.tid.to_string()),
                    start: o.start,
                    ann_end: o.end,
                    index: o.index,
                }
            })
            .collect()
    })
}

/// Where an activity's figures go (I6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Row(usize),
    Pre,
    Unattributed,
}

/// C8: the part of a launch on `lane` at `ts`: the step whose window
/// `[S_i.ts, S_{i+1}.ts)` on that thread holds it; before the first → pre;
/// a thread without steps → unattributed.
fn part_of(
    by_lane: &HashMap<&(String, String), Vec<usize>>,
    wins: &[Win],
    key: &(String, String),
    ts: i64,
) -> Owner {
    match crate::windows::window_at(by_lane, wins, key, ts) {
        None => Owner::Unattributed,
        Some(None) => Owner::Pre,
        Some(Some(k)) => Owner::Row(k),
    }
}

/// A part's figures while its activities are met.
#[derive(Default)]
struct PartAcc {
    work: Part,
    /// (device, class, interval) of its activities: busy is their union,
    /// the per-class figures the unions per (device, class).
    classed: Vec<(u32, Class, Iv)>,
    streams: BTreeSet<usize>,
}

impl PartAcc {
    fn add(&mut self, a: &Act, class: Class, device: usize, stream: usize) {
        let w = &mut self.work;
        w.activities += 1;
        w.kernels += u64::from(a.kind == Kind::Kernel);
        w.gpu_first_start_ns = Some(w.gpu_first_start_ns.map_or(a.start, |f| f.min(a.start)));
        w.gpu_last_end_ns = Some(w.gpu_last_end_ns.map_or(a.end, |l| l.max(a.end)));
        w.gpu_ns = w.gpu_ns.saturating_add(a.end - a.start);
        self.classed.push((device as u32, class, (a.start, a.end)));
        self.streams.insert(stream);
    }

    /// Busy, the per-class unions and the overlap from the kept intervals
    /// (`compute`: each device's union of all its compute kernels, I4).
    fn seal(&mut self, compute: &[Vec<Iv>]) {
        let w = &mut self.work;
        let classed = std::mem::take(&mut self.classed);
        w.busy_ns = ns64(length(&union(classed.iter().map(|x| x.2).collect())));
        let mut by_dev: BTreeMap<(usize, Class), Vec<Iv>> = BTreeMap::new();
        for (d, c, iv) in classed {
            by_dev.entry((d as usize, c)).or_default().push(iv);
        }
        let (mut comm, mut ov, mut comp, mut mem) = (0i128, 0i128, 0i128, 0i128);
        for ((d, c), ivs) in by_dev {
            let u = union(ivs);
            match c {
                Class::Comm => {
                    comm += length(&u);
                    ov += overlap(&u, compute.get(d).map_or(&[][..], Vec::as_slice));
                }
                Class::Compute => comp += length(&u),
                Class::Memory => mem += length(&u),
            }
        }
        w.compute_ns = ns64(comp);
        w.memory_ns = ns64(mem);
        w.comm_ns = ns64(comm);
        w.comm_comp_overlap_ns = ns64(ov);
        w.comm_comp_overlap_pct = pct(ov, comm);
    }
}

/// The I3 category of a gap.
#[derive(Clone, Copy)]
enum Cat {
    Host,
    Kernel,
    Other,
}

/// Everything measured, before assembly.
struct Ctx<'a> {
    acts: &'a [Act],
    calls: &'a [Call],
    link: Vec<Option<usize>>,
    class: Vec<Class>,
    owner: Vec<Owner>,
    device_of_lane: Vec<usize>,
    kernel_wait_ns: i64,
}

pub(super) fn measure(mut idle: Idle, trace: &Finished<'_>) -> TraceIdle {
    let mut counts = std::mem::take(&mut idle.counts);
    let mut calls = std::mem::take(&mut idle.calls).into_vec();
    let own = owners(&mut calls, &mut counts);
    let kept = std::mem::take(&mut idle.acts);
    let mut acts: Vec<Act> = Vec::with_capacity(kept.len());
    acts.extend(kept.drain().map(Act::of));
    let link: Vec<Option<usize>> = acts
        .iter()
        .map(|a| a.corr.and_then(|c| own.get(&c).copied()))
        .collect();
    drop(own);
    counts.unlinked = link.iter().filter(|l| l.is_none()).count() as u64;
    counts.zero_duration = acts.iter().filter(|a| a.end == a.start).count() as u64;
    let mut name_class: HashMap<(u32, Kind), Class> = HashMap::new();
    let class: Vec<Class> = acts
        .iter()
        .map(|a| {
            *name_class
                .entry((a.name.0, a.kind))
                .or_insert_with(|| classify(a.kind, idle.names.resolve(a.name)))
        })
        .collect();
    let (grammar, wins) = step_annotations(trace, &idle);
    let keys: Vec<(String, String)> = (0..idle.lanes.len() as u32)
        .map(|l| {
            let l = idle.lanes.resolve(l);
            (l.pid.to_string(), l.tid.to_string())
        })
        .collect();
    let mut by_lane: HashMap<&(String, String), Vec<usize>> = HashMap::new();
    for (i, w) in wins.iter().enumerate() {
        by_lane.entry(&w.lane).or_default().push(i);
    }
    let owner: Vec<Owner> = link
        .iter()
        .map(|l| match l {
            None => Owner::Unattributed,
            Some(c) => part_of(
                &by_lane,
                &wins,
                &keys[calls[*c].lane as usize],
                calls[*c].ts,
            ),
        })
        .collect();
    let (devices_sorted, device_of_lane) = devices_of(&idle.lanes, &acts);
    let ctx = Ctx {
        acts: &acts,
        calls: &calls,
        link,
        class,
        owner,
        device_of_lane,
        kernel_wait_ns: idle.spec.kernel_wait_ns,
    };
    let mut parts: Vec<PartAcc> = (0..wins.len() + 2).map(|_| PartAcc::default()).collect();
    let (streams, fns) = streams(&ctx, &idle.lanes, &mut parts, &mut counts);
    let (devices, compute) = devices(&ctx, &devices_sorted);
    for p in &mut parts {
        p.seal(&compute);
    }
    let steps = step_rows(wins, grammar, parts, &streams, &fns, &mut counts);
    let (ov, comm) = devices.iter().fold((0i128, 0i128), |(o, c), d| {
        (
            o + i128::from(d.comm_comp_overlap_ns),
            c + i128::from(d.comm_ns),
        )
    });
    let mut out = TraceIdle {
        path: trace.path.to_string(),
        units: "ns".into(),
        thresholds: Thresholds {
            kernel_wait_ns: idle.spec.kernel_wait_ns,
            queue_limit: QUEUE_LIMIT,
        },
        devices,
        comm_comp_overlap_pct: pct(ov, comm),
        streams,
        steps,
        counts,
        completion_tokens: None,
        tokens_source: None,
        per_token: Default::default(),
        notes: Vec::new(),
        complete: true,
        error: None,
    };
    out.notes = notes(trace, &out);
    out
}

/// The devices (pids of the activities' lanes) in order, and each lane's
/// device position.
fn devices_of(lanes: &crate::model::LaneTable, acts: &[Act]) -> (Vec<ThreadPart>, Vec<usize>) {
    let mut devs: BTreeSet<ThreadPart> = BTreeSet::new();
    for a in acts {
        devs.insert(lanes.resolve(a.lane).pid.clone());
    }
    let sorted: Vec<ThreadPart> = devs.into_iter().collect();
    let of_lane = (0..lanes.len() as u32)
        .map(|l| {
            let p = &lanes.resolve(l).pid;
            sorted.binary_search(p).unwrap_or(0)
        })
        .collect();
    (sorted, of_lane)
}

/// I1–I3 and I5 per (device, stream), streams sorted by (device, stream);
/// each gap also goes to its activity's part (I6). Returns the streams and
/// their in-flight step functions.
fn streams(
    ctx: &Ctx<'_>,
    lanes: &crate::model::LaneTable,
    parts: &mut [PartAcc],
    counts: &mut Counts,
) -> (Vec<StreamIdle>, Vec<StepFn>) {
    let acts = ctx.acts;
    // I1: by (device, stream), then (ts, end, file index).
    let mut order: Vec<usize> = (0..acts.len()).collect();
    order.sort_unstable_by(|&x, &y| {
        let (a, b) = (&acts[x], &acts[y]);
        lanes
            .resolve(a.lane)
            .cmp(lanes.resolve(b.lane))
            .then((a.start, a.end, a.index).cmp(&(b.start, b.end, b.index)))
    });
    let mut out = Vec::new();
    let mut fns = Vec::new();
    let n_rows = parts.len() - 2;
    for run in order.chunk_by(|&x, &y| acts[x].lane == acts[y].lane) {
        let sid = out.len();
        let (s, f) = one_stream(
            ctx,
            lanes.resolve(acts[run[0]].lane),
            run,
            sid,
            parts,
            n_rows,
            counts,
        );
        out.push(s);
        fns.push(f);
    }
    (out, fns)
}

fn part_index(o: Owner, n_rows: usize) -> usize {
    match o {
        Owner::Row(i) => i,
        Owner::Pre => n_rows,
        Owner::Unattributed => n_rows + 1,
    }
}

/// One stream: its gaps against the running maximum end (I2), their
/// categories (I3), its queue (I5).
fn one_stream(
    ctx: &Ctx<'_>,
    lane: &Lane,
    run: &[usize],
    sid: usize,
    parts: &mut [PartAcc],
    n_rows: usize,
    counts: &mut Counts,
) -> (StreamIdle, StepFn) {
    let (device, stream) = lane_labels(lane);
    let mut s = StreamIdle {
        device,
        stream,
        ..Default::default()
    };
    let mut busy = 0i128;
    let mut prev_end: Option<i64> = None;
    let mut first = i64::MAX;
    let mut inflight: Vec<(i64, i64)> = Vec::new();
    let mut pending: Vec<(i64, i64)> = Vec::new();
    for &i in run {
        let a = &ctx.acts[i];
        let dev = ctx.device_of_lane[a.lane as usize];
        let p = &mut parts[part_index(ctx.owner[i], n_rows)];
        p.add(a, ctx.class[i], dev, sid);
        s.activities += 1;
        first = first.min(a.start);
        let call = ctx.link[i].map(|c| &ctx.calls[c]);
        match call {
            None => s.unlinked += 1,
            Some(c) => {
                // I5: +1 at the call's start, −1 at the end (in flight) or
                // the start (pending) of the activity.
                inflight.extend([(c.ts, 1), (a.end, -1)]);
                pending.extend([(c.ts, 1), (a.start, -1)]);
                if a.start < c.ts {
                    s.queue.activities_starting_before_launch += 1;
                }
            }
        }
        let Some(pe) = prev_end else {
            busy += i128::from(a.end - a.start);
            prev_end = Some(a.end);
            continue;
        };
        if a.start < pe {
            counts.overlapping += 1;
        }
        // I2: the union grows by what lies beyond the running max end.
        busy += i128::from((a.end - a.start.max(pe)).max(0));
        let gap = (a.start - pe).max(0);
        prev_end = Some(pe.max(a.end));
        if gap == 0 {
            continue;
        }
        // I3: host wait iff the call started after the stream went idle.
        let cat = match call {
            Some(c) if c.ts > pe => Cat::Host,
            _ if gap < ctx.kernel_wait_ns => Cat::Kernel,
            _ => Cat::Other,
        };
        add_gap(&mut s, &mut p.work, cat, gap);
    }
    if s.activities == 1 {
        counts.single_activity_streams += 1;
    }
    counts.activities_starting_before_launch += s.queue.activities_starting_before_launch;
    s.first_start_ns = first;
    s.last_end_ns = prev_end.unwrap_or(first);
    let fi = seal(&mut s, busy, inflight, pending);
    (s, fi)
}

/// A gap into its stream's and its part's figures (I2–I3).
fn add_gap(s: &mut StreamIdle, w: &mut Part, cat: Cat, gap: i64) {
    w.idle_ns += gap;
    s.idle_ns += gap;
    match cat {
        Cat::Host => {
            s.host_wait_ns += gap;
            s.host_wait_gaps += 1;
            w.host_wait_ns += gap;
        }
        Cat::Kernel => {
            s.kernel_wait_ns += gap;
            s.kernel_wait_gaps += 1;
            w.kernel_wait_ns += gap;
        }
        Cat::Other => {
            s.other_ns += gap;
            s.other_gaps += 1;
            w.other_ns += gap;
        }
    }
}

/// A stream's span, busy time, shares of idle and queue (I5) once its
/// activities are in; returns its in-flight step function.
fn seal(
    s: &mut StreamIdle,
    busy: i128,
    inflight: Vec<(i64, i64)>,
    pending: Vec<(i64, i64)>,
) -> StepFn {
    s.span_ns = s.last_end_ns - s.first_start_ns;
    s.busy_ns = ns64(busy);
    let idle = i128::from(s.idle_ns);
    s.host_wait_pct_of_idle = pct(i128::from(s.host_wait_ns), idle);
    s.kernel_wait_pct_of_idle = pct(i128::from(s.kernel_wait_ns), idle);
    s.other_pct_of_idle = pct(i128::from(s.other_ns), idle);
    let fi = StepFn::of(inflight);
    s.queue = Queue {
        in_flight: fi.stats(QUEUE_LIMIT),
        pending: StepFn::of(pending).stats(QUEUE_LIMIT),
        activities_starting_before_launch: s.queue.activities_starting_before_launch,
    };
    fi
}

/// I4 per device; also each device's merged compute intervals (for the
/// parts' overlap).
fn devices(ctx: &Ctx<'_>, sorted: &[ThreadPart]) -> (Vec<DeviceTimeline>, Vec<Vec<Iv>>) {
    let n = sorted.len();
    let mut all: Vec<Vec<Iv>> = vec![Vec::new(); n];
    let mut by: [Vec<Vec<Iv>>; 3] = [
        vec![Vec::new(); n],
        vec![Vec::new(); n],
        vec![Vec::new(); n],
    ];
    let mut count = vec![0u64; n];
    let mut comm_kernels = vec![0u64; n];
    for (i, a) in ctx.acts.iter().enumerate() {
        let d = ctx.device_of_lane[a.lane as usize];
        all[d].push((a.start, a.end));
        count[d] += 1;
        let k = match ctx.class[i] {
            Class::Compute => 0,
            Class::Comm => {
                comm_kernels[d] += 1;
                1
            }
            Class::Memory => 2,
        };
        by[k][d].push((a.start, a.end));
    }
    let [compute, comm, memory] = by;
    let mut out = Vec::with_capacity(n);
    let mut compute_u = Vec::with_capacity(n);
    for (d, ivs) in all.into_iter().enumerate() {
        let u = union(ivs);
        let span = match (u.first(), u.last()) {
            (Some(f), Some(l)) => i128::from(l.1) - i128::from(f.0),
            _ => 0,
        };
        let busy = length(&u);
        let cu = union(compute[d].clone());
        let mu = union(comm[d].clone());
        let c = length(&cu);
        let m = length(&mu);
        let ov = overlap(&mu, &cu);
        let idle = span - busy;
        out.push(DeviceTimeline {
            device: super::label(&sorted[d]),
            activities: count[d],
            span_ns: ns64(span),
            busy_ns: ns64(busy),
            idle_ns: ns64(idle),
            compute_ns: ns64(c),
            comm_ns: ns64(m),
            memory_ns: ns64(length(&union(memory[d].clone()))),
            non_compute_ns: ns64(span - c - idle),
            comm_kernels: comm_kernels[d],
            comm_comp_overlap_ns: ns64(ov),
            comm_comp_overlap_pct: pct(ov, m),
            idle_pct: pct(idle, span),
            compute_pct: pct(c, span),
        });
        compute_u.push(cu);
    }
    (out, compute_u)
}

/// I6: the rows (with their queues), pre, unattributed and totals.
fn step_rows(
    wins: Vec<Win>,
    grammar: Option<String>,
    parts: Vec<PartAcc>,
    streams: &[StreamIdle],
    fns: &[StepFn],
    counts: &mut Counts,
) -> StepIdle {
    let n = wins.len();
    // The next step's start on the same thread closes a window (C8).
    let mut next: Vec<Option<i64>> = vec![None; n];
    let mut last_on: HashMap<&(String, String), usize> = HashMap::new();
    for (i, w) in wins.iter().enumerate() {
        if let Some(&p) = last_on.get(&w.lane) {
            next[p] = Some(w.start);
        }
        last_on.insert(&w.lane, i);
    }
    let mut parts = parts.into_iter();
    let mut rows = Vec::with_capacity(n);
    for (i, w) in wins.into_iter().enumerate() {
        let p = parts.next().unwrap_or_default();
        let mut queue_in_flight = BTreeMap::new();
        for &s in &p.streams {
            let f = &fns[s];
            let to = next[i].or_else(|| f.last_change()).unwrap_or(w.start);
            let (max, integral, len) = f.over(w.start, to);
            let key = format!("{}:{}", streams[s].device, streams[s].stream);
            queue_in_flight.insert(
                key,
                QueueBrief {
                    max,
                    mean: mean6(integral, i128::from(len)),
                },
            );
        }
        if p.work.activities == 0 {
            counts.steps_without_gpu_work += 1;
        }
        rows.push(StepRow {
            index: i as u64,
            name: w.name,
            host_start_ns: w.start,
            host_end_ns: next[i],
            annotation_end_ns: w.ann_end,
            work: p.work,
            queue_in_flight,
        });
    }
    let pre = parts.next().unwrap_or_default().work;
    let unattributed = parts.next().unwrap_or_default().work;
    let totals = sum_parts(rows.iter().map(|r| &r.work).chain([&pre, &unattributed]));
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
pub(super) fn sum_rows(rows: &[StepRow]) -> Part {
    sum_parts(rows.iter().map(|r| &r.work))
}

/// The sum of parts (first start = min, last end = max; pct of the sums).
fn sum_parts<'a>(parts: impl Iterator<Item = &'a Part>) -> Part {
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
        t.busy_ns = t.busy_ns.saturating_add(p.busy_ns);
        t.gpu_ns = t.gpu_ns.saturating_add(p.gpu_ns);
        t.host_wait_ns += p.host_wait_ns;
        t.kernel_wait_ns += p.kernel_wait_ns;
        t.other_ns += p.other_ns;
        t.idle_ns += p.idle_ns;
        t.compute_ns = t.compute_ns.saturating_add(p.compute_ns);
        t.comm_ns = t.comm_ns.saturating_add(p.comm_ns);
        t.memory_ns = t.memory_ns.saturating_add(p.memory_ns);
        t.comm_comp_overlap_ns = t
            .comm_comp_overlap_ns
            .saturating_add(p.comm_comp_overlap_ns);
    }
    t.comm_comp_overlap_pct = pct(i128::from(t.comm_comp_overlap_ns), i128::from(t.comm_ns));
    t
}

/// The trace's notes, and one per non-zero count.
fn notes(trace: &Finished<'_>, out: &TraceIdle) -> Vec<String> {
    let mut n = trace.meta.notes.clone();
    let c = &out.counts;
    let said: [(u64, &str); 9] = [
        (c.negative_dur_clamped, "device activities with a negative dur, taken as 0 (C1 negative_dur_clamped)"),
        (c.no_ts, "device activities without ts, skipped (C1 no_ts)"),
        (c.duplicate_runtime_correlation, "runtime calls repeating an earlier call's correlation: the first owns it (C3 duplicate_runtime_correlation)"),
        (c.unlinked, "device activities without an owning runtime call (unlinked, C3): in the timeline, never host waits, not in the queue, unattributed"),
        (c.activities_starting_before_launch, "activities starting before their runtime call (clock skew; I5 activities_starting_before_launch)"),
        (c.overlapping, "activities starting before their stream's running maximum end (overlap: gap 0, I2)"),
        (c.zero_duration, "zero-duration activities (counted, add 0 ns)"),
        (c.single_activity_streams, "streams with a single activity (no gap)"),
        (c.steps_without_gpu_work, "steps without GPU work (rows with 0 activities, I6)"),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_of_merged_lists() {
        // a [0,10) [20,30); b [5,25) → 5 + 5.
        assert_eq!(overlap(&[(0, 10), (20, 30)], &[(5, 25)]), 10);
        assert_eq!(overlap(&[(0, 1)], &[]), 0);
        assert_eq!(overlap(&[(0, 5)], &[(5, 9)]), 0);
    }

    #[test]
    fn unions_merge_touching_and_keep_zero_length() {
        assert_eq!(union(vec![(5, 5), (0, 2), (2, 4)]), vec![(0, 4), (5, 5)]);
        assert_eq!(length(&union(vec![(5, 5), (0, 2), (2, 4)])), 4);
    }
}
