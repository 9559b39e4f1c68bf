//! The end of the read: launch links (C3), containment (C4–C5), the rows
//! (O1–O8), the GPU gaps (I2–I3) and the summary (O9). Integer ns
//! throughout; ratios are exact fractions rounded half to even to 6
//! decimals, means and medians to a whole ns (C1).

use super::gaps::{self, StreamAct};
use super::inclusive::{Online, Point, WEIGHTS};
use super::{
    LaunchStats, OpRow, Ops, OpsSummary, QueueStats, Thresholds, TimeStats, TraceOps,
    HOST_CATEGORIES, LONG_LAUNCH_DELAY_NS, LONG_RUNTIME_NS, NO_OP, SHORT_GPU_CPU_MAX_NS,
};
use crate::hostops::contain::Sweep;
use crate::hostops::launch::{end_of, launches, owners, Launch, LaunchKind};
use crate::hostops::{HostLinks, HostOp, Linked};
use crate::model::Sym;
use std::collections::HashMap;

/// `num / den` rounded half to even (`den > 0`).
pub(crate) fn div_half_even(num: i128, den: i128) -> i128 {
    let (q, r) = (num.div_euclid(den), num.rem_euclid(den));
    match (2 * r).cmp(&den) {
        std::cmp::Ordering::Less => q,
        std::cmp::Ordering::Greater => q + 1,
        std::cmp::Ordering::Equal => q + (q & 1),
    }
}

/// An exact ratio printed with 6 decimals (C1); `None` when `den` is 0.
pub(crate) fn ratio6(num: i128, den: i128) -> Option<f64> {
    (den > 0).then(|| div_half_even(num * 1_000_000, den) as f64 / 1e6)
}

fn sat(v: i128) -> i64 {
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// The median of sorted values, an even count's two middles averaged and
/// rounded half to even (C1).
fn median(sorted: &[i64]) -> Option<i64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some(sat(div_half_even(
            i128::from(sorted[n / 2 - 1]) + i128::from(sorted[n / 2]),
            2,
        ))),
    }
}

/// Per-launch figures (O6).
#[derive(Debug, Clone, Copy)]
struct PerLaunch {
    cpu: i64,
    gpu: i64,
    acts: u64,
    latency: i64,
    queue: i64,
}

impl PerLaunch {
    fn short_gpu(&self) -> bool {
        self.cpu <= SHORT_GPU_CPU_MAX_NS && self.gpu < self.cpu
    }
    fn long_runtime(&self) -> bool {
        self.cpu > LONG_RUNTIME_NS
    }
    fn long_delay(&self) -> bool {
        self.queue > LONG_LAUNCH_DELAY_NS
    }
}

/// O9's statistics of a set of launches.
fn launch_stats(v: &[PerLaunch]) -> LaunchStats {
    let sum = |f: fn(&PerLaunch) -> i64| sat(v.iter().map(|p| i128::from(f(p))).sum());
    let count = |f: fn(&PerLaunch) -> bool| v.iter().filter(|p| f(p)).count() as u64;
    let stats = |f: fn(&PerLaunch) -> i64| {
        let mut xs: Vec<i64> = v.iter().map(f).collect();
        xs.sort_unstable();
        let total: i128 = xs.iter().map(|&x| i128::from(x)).sum();
        TimeStats {
            sum: sat(total),
            mean: (!xs.is_empty()).then(|| sat(div_half_even(total, xs.len() as i128))),
            median: median(&xs),
            min: xs.first().copied(),
            max: xs.last().copied(),
        }
    };
    let q = stats(|p| p.queue);
    LaunchStats {
        launches: v.len() as u64,
        activities: v.iter().map(|p| p.acts).sum(),
        cpu_ns: sum(|p| p.cpu),
        gpu_ns: sum(|p| p.gpu),
        launch_latency_ns: stats(|p| p.latency),
        queue_delay_ns: QueueStats {
            sum: q.sum,
            mean: q.mean,
            median: q.median,
            min: q.min,
            max: q.max,
            negative: count(|p| p.queue < 0),
            sum_clipped: sum(|p| p.queue.max(0)),
        },
        short_gpu: count(PerLaunch::short_gpu),
        gpu_shorter_than_cpu: count(|p| p.gpu < p.cpu),
        long_runtime: count(PerLaunch::long_runtime),
        long_launch_delay: count(PerLaunch::long_delay),
    }
}

/// Row accumulators beside the public row.
#[derive(Default)]
struct Acc {
    row: OpRow,
    latencies: Vec<i64>,
}

/// The rows by (cat, name), the pseudo-row last created.
struct RowSet {
    ids: HashMap<(u8, Sym), u32>,
    rows: Vec<Acc>,
    /// Per row: a RecordFunction scope (not a python frame, O4).
    scope: Vec<bool>,
    pseudo: Option<u32>,
}

impl RowSet {
    fn of_op(&mut self, o: &HostOp, names: &crate::model::Interner) -> u32 {
        let next = self.rows.len() as u32;
        let id = *self.ids.entry((o.cat, o.name)).or_insert(next);
        if id == next {
            self.rows.push(Acc {
                row: OpRow {
                    cat: Some(HOST_CATEGORIES[o.cat as usize % 4].to_string()),
                    name: names.resolve(o.name).to_string(),
                    ..OpRow::default()
                },
                latencies: Vec::new(),
            });
            self.scope.push(o.cat != 2);
        }
        id
    }

    fn pseudo(&mut self) -> u32 {
        if let Some(p) = self.pseudo {
            return p;
        }
        let id = self.rows.len() as u32;
        self.rows.push(Acc {
            row: OpRow {
                cat: None,
                name: NO_OP.to_string(),
                ..OpRow::default()
            },
            latencies: Vec::new(),
        });
        self.scope.push(false);
        self.pseudo = Some(id);
        id
    }
}

/// A host op as the sweep needs it: C4's key and its row, 24 B (the kept
/// record decodes to 40 B, and a row id beside it was 4 more). No lane:
/// the ops are grouped by thread ([`Grouped::starts`]); no category: the
/// row has it ([`RowSet::scope`]).
#[derive(Debug, Clone, Copy, Default)]
struct Op {
    ts: i64,
    dur: i64,
    /// Its position among its thread's ops in file order: C4's last key
    /// (the file index), as the records are in file order. A thread of
    /// more than 2³² ops (100 GB of them here) is beyond any machine.
    pos: u32,
    row: u32,
}

/// Every host op, thread by thread, each thread's in C4's key order.
struct Grouped {
    ops: Vec<Op>,
    /// Thread `l`'s ops are `ops[starts[l]..starts[l + 1]]`.
    starts: Vec<usize>,
}

/// Groups the kept host ops by thread (counted first, so each lands in
/// place as the records are decoded and freed), rows made as they come
/// (O1: a row's id does not reach the output, which [`sort_rows`] orders),
/// then sorts each thread by C4's key `(ts, −end, file index)`.
fn group_ops(
    host: crate::store::pack::Records<HostOp>,
    lanes: usize,
    rows: &mut RowSet,
    names: &crate::model::Interner,
) -> Grouped {
    let mut starts = vec![0usize; lanes + 1];
    for o in host.iter() {
        starts[o.lane as usize + 1] += 1;
    }
    for l in 0..lanes {
        starts[l + 1] += starts[l];
    }
    let mut next = starts.clone();
    let mut ops = vec![Op::default(); host.len()];
    for o in host.drain() {
        let l = o.lane as usize;
        let at = next[l];
        next[l] += 1;
        ops[at] = Op {
            ts: o.ts,
            dur: o.dur,
            pos: u32::try_from(at - starts[l]).unwrap_or(u32::MAX),
            row: rows.of_op(&o, names),
        };
    }
    for l in 0..lanes {
        ops[starts[l]..starts[l + 1]]
            .sort_unstable_by_key(|o| (o.ts, std::cmp::Reverse(end_of(o.ts, o.dur)), o.pos));
    }
    Grouped { ops, starts }
}

/// The figures of one trace from what was kept.
pub(super) fn measure(st: Ops) -> TraceOps {
    let HostLinks {
        names,
        lanes,
        host,
        calls,
        acts,
        mut counts,
    } = st.0;
    let calls = calls.into_vec();
    // The activities stay packed (≈ 10 B each), decoded as each pass needs them.
    let (own, dup) = owners(&calls, acts.iter());
    counts.duplicate_runtime_correlation = dup;
    counts.unlinked_activities = own.iter().filter(|o| o.is_none()).count() as u64;
    let launched = launches(&calls, acts.iter(), &own, &names);

    // Rows of every op (O1), threads in key order (C4).
    let mut rows = RowSet {
        ids: HashMap::new(),
        rows: Vec::new(),
        scope: Vec::new(),
        pseudo: None,
    };
    let ops = group_ops(host, lanes.len(), &mut rows, &names);
    let mut calls_by_lane: Vec<Vec<u32>> = vec![Vec::new(); lanes.len()];
    for (i, c) in calls.iter().enumerate() {
        calls_by_lane[c.lane as usize].push(i as u32);
    }
    let swept = sweep_threads(&ops, &calls, &launched, &mut calls_by_lane, &mut rows);
    let attributed = attribute_calls(&calls, &launched, &swept, &ops.ops, &mut rows);
    let host_ops = ops.ops.len() as u64;
    drop(ops);

    let Swept { sums, op_spans, .. } = swept;
    inclusive_totals(&sums, &mut rows);
    let mut out_rows: Vec<OpRow> = rows.rows.into_iter().map(|a| a.row).collect();
    sort_rows(&mut out_rows);

    let summary = summarize(Facts {
        host_ops,
        op_spans: &op_spans,
        calls: &calls,
        acts: &acts,
        own: &own,
        launched: &launched,
        all: &attributed.all,
        rows: &out_rows,
        lanes: lanes.len(),
        without_op: attributed.without_op,
        graph_kernels: attributed.graph_kernels,
    });
    TraceOps {
        path: String::new(),
        complete: true,
        error: None,
        units: "ns".into(),
        completion_tokens: None,
        tokens_source: None,
        thresholds: Thresholds::default(),
        input: counts,
        summary,
        ops: out_rows,
        names_cut: names.cut() as u64,
    }
}

/// What the threads' sweeps give: per row its inclusive sums (O3, O5's
/// sync: launches, activities, GPU ns, sync ns), per thread its ops'
/// [first start, last end) (O9's host window); per runtime call its
/// launcher (O2) and top-level op (O4), op positions.
struct Swept {
    sums: Vec<[i128; WEIGHTS]>,
    op_spans: Vec<Option<(i64, i64)>>,
    launcher: Vec<Option<u32>>,
    top: Vec<Option<u32>>,
}

/// One thread's sweep state for [`sweep_threads`].
struct ThreadRows<'a> {
    ops: &'a [Op],
    calls: &'a [Linked],
    rows: &'a mut RowSet,
    /// Per row: the latest end of its instances so far (O5's maximal).
    reach: HashMap<u32, i64>,
    /// The inclusive sums of O3, asked as the maximal instances are found.
    online: Online<'a>,
    sums: &'a mut Vec<[i128; WEIGHTS]>,
    launcher: &'a mut [Option<u32>],
    top: &'a mut [Option<u32>],
}

impl ThreadRows<'_> {
    /// O5's self CPU time: `parent` loses what its child adds to the union
    /// of its children (improperly nested siblings may overlap; the sweep
    /// keeps each open op's union, [`Sweep::cover_parent`]).
    fn cut(&mut self, parent: u32, cut: i64) {
        let r = &mut self.rows.rows[self.ops[parent as usize].row as usize].row;
        r.cpu_self_ns = r.cpu_self_ns.saturating_sub(cut);
    }
}

impl crate::hostops::contain::Visitor for ThreadRows<'_> {
    fn op(&mut self, pos: u32, parent: Option<u32>, sweep: &mut Sweep) {
        let o = self.ops[pos as usize];
        let end = end_of(o.ts, o.dur);
        let row = o.row;
        let r = &mut self.rows.rows[row as usize].row;
        r.calls += 1;
        r.cpu_self_ns = r.cpu_self_ns.saturating_add(o.dur);
        let far = self.reach.entry(row).or_insert(i64::MIN);
        if *far < end {
            // Not enclosed by an earlier instance of its name.
            let prev = (*far != i64::MIN).then_some(*far);
            *far = end;
            r.cpu_total_ns = r.cpu_total_ns.saturating_add(o.dur);
            if self.sums.len() <= row as usize {
                self.sums.resize(row as usize + 1, [0; WEIGHTS]);
            }
            self.online
                .instance(&mut self.sums[row as usize], prev, o.ts, end);
        }
        if let Some(p) = parent {
            let cut = sweep.cover_parent(o.ts, end);
            self.cut(p, cut);
        }
    }

    fn call(&mut self, ci: u32, sweep: &mut Sweep) {
        let c = &self.calls[ci as usize];
        let end = end_of(c.ts, c.dur);
        let inner = sweep.innermost(end);
        self.launcher[ci as usize] = inner;
        self.top[ci as usize] = sweep.outermost_scope(end).or(inner);
        if let Some(l) = inner {
            let cut = sweep.cover_innermost(c.ts, end);
            self.cut(l, cut);
        }
    }
}

/// Per thread, one sweep (contain.rs) over its ops (sorted by thread, then
/// C4's key) and its runtime calls (sorted here by start): parents (C5),
/// maximal-of-name instances (O5), launchers (O2), top-level ops (O4),
/// calls and CPU total/self time (O5) into the rows.
fn sweep_threads(
    grouped: &Grouped,
    calls: &[Linked],
    launched: &[Launch],
    calls_by_lane: &mut [Vec<u32>],
    rows: &mut RowSet,
) -> Swept {
    let ops = &grouped.ops[..];
    // One flag per row (hundreds), copied out of the rows the sweep writes.
    let scope = rows.scope.clone();
    let lanes = calls_by_lane.len();
    let mut out = Swept {
        sums: Vec::new(),
        op_spans: vec![None; lanes],
        launcher: vec![None; calls.len()],
        top: vec![None; calls.len()],
    };
    for (lane, cs) in calls_by_lane.iter_mut().enumerate() {
        let (lo, hi) = (grouped.starts[lane], grouped.starts[lane + 1]);
        let mine = &ops[lo..hi];
        if let (Some(first), Some(last)) =
            (mine.first(), mine.iter().map(|o| end_of(o.ts, o.dur)).max())
        {
            out.op_spans[lane] = Some((first.ts, last));
        }
        cs.sort_by_key(|&ci| calls[ci as usize].ts);
        let points = points_of(cs, calls, launched);
        let mut t = ThreadRows {
            ops,
            calls,
            rows: &mut *rows,
            reach: HashMap::new(),
            online: Online::new(&points),
            sums: &mut out.sums,
            launcher: &mut out.launcher,
            top: &mut out.top,
        };
        let visits = (lo..hi).map(|q| {
            let o = &ops[q];
            (q as u32, o.ts, end_of(o.ts, o.dur), scope[o.row as usize])
        });
        let by_start = cs.iter().map(|&ci| (ci, calls[ci as usize].ts));
        crate::hostops::contain::sweep_thread(visits, by_start, &mut t);
        let ThreadRows {
            reach,
            mut online,
            sums,
            ..
        } = t;
        for (row, b) in reach {
            online.last(&mut sums[row as usize], b);
        }
    }
    out
}

/// What the runtime calls add up to (O6, O9).
struct Attributed {
    all: Vec<(LaunchKind, PerLaunch)>,
    without_op: u64,
    graph_kernels: u64,
}

/// Per runtime call: the launcher's self figures (O6–O7), the top-level
/// op's (O4); then each launching op's first-launch delay.
fn attribute_calls(
    calls: &[Linked],
    launched: &[Launch],
    swept: &Swept,
    ops: &[Op],
    rows: &mut RowSet,
) -> Attributed {
    let mut first_self: HashMap<u32, i64> = HashMap::new();
    let mut out = Attributed {
        all: Vec::new(),
        without_op: 0,
        graph_kernels: 0,
    };
    for (ci, c) in calls.iter().enumerate() {
        let row = match swept.launcher[ci] {
            Some(o) => ops[o as usize].row,
            None => rows.pseudo(),
        };
        let r = &mut rows.rows[row as usize];
        r.row.runtime_self_ns = r.row.runtime_self_ns.saturating_add(c.dur);
        let l = &launched[ci];
        let Some(first) = l.first else { continue };
        let p = PerLaunch {
            cpu: c.dur,
            gpu: l.gpu,
            acts: l.acts,
            latency: first.saturating_sub(c.ts),
            queue: first.saturating_sub(end_of(c.ts, c.dur)),
        };
        out.all.push((l.kind(), p));
        if l.graph {
            out.graph_kernels += l.acts;
        }
        add_launch(&mut r.row, l, &p);
        r.latencies.push(p.latency);
        match swept.launcher[ci] {
            Some(o) => {
                let f = first_self.entry(o).or_insert(c.ts);
                *f = (*f).min(c.ts);
            }
            None => out.without_op += 1,
        }
        let trow = match swept.top[ci] {
            Some(o) => ops[o as usize].row,
            None => row,
        };
        let t = &mut rows.rows[trow as usize].row;
        t.activities_top += l.acts;
        t.gpu_top_ns = t.gpu_top_ns.saturating_add(l.gpu);
    }
    for (&i, t) in &first_self {
        let i = i as usize;
        let r = &mut rows.rows[ops[i].row as usize].row;
        r.first_launch_delay_ns_sum = r.first_launch_delay_ns_sum.saturating_add(t - ops[i].ts);
        r.first_launch_delay_n += 1;
    }
    out
}

/// A launch's self figures into its launcher's row (O6–O7).
fn add_launch(s: &mut OpRow, l: &Launch, p: &PerLaunch) {
    s.launches_self += 1;
    s.graph_launches_self += u64::from(l.graph);
    s.kernels_self += l.kernels;
    s.memcpys_self += l.memcpys;
    s.memsets_self += l.memsets;
    s.gpu_self_ns = s.gpu_self_ns.saturating_add(l.gpu);
    s.short_gpu_self += u64::from(p.short_gpu());
    s.long_runtime_self += u64::from(p.long_runtime());
    s.long_launch_delay_self += u64::from(p.long_delay());
    s.launch_latency_ns_sum = s.launch_latency_ns_sum.saturating_add(p.latency);
    s.queue_delay_ns_sum = s.queue_delay_ns_sum.saturating_add(p.queue);
}

/// A thread's runtime calls (sorted by start) as the weights they add to
/// each name holding them (O3, O5's sync).
fn points_of(cs: &[u32], calls: &[Linked], launched: &[Launch]) -> Vec<Point> {
    cs.iter()
        .map(|&ci| {
            let (c, l) = (&calls[ci as usize], &launched[ci as usize]);
            Point {
                ts: c.ts,
                end: end_of(c.ts, c.dur),
                w: [
                    i64::from(l.first.is_some()),
                    l.acts as i64,
                    l.gpu,
                    if l.sync { c.dur } else { 0 },
                ],
            }
        })
        .collect()
}

/// Inclusive (O3) and sync time (O5), once per name (`sums`, from the
/// sweeps); the rows' totals, host time, `launch_bound` (O8) and latency
/// medians.
fn inclusive_totals(sums: &[[i128; WEIGHTS]], rows: &mut RowSet) {
    let zero = [0i128; WEIGHTS];
    let sums = (0..rows.rows.len()).map(|i| sums.get(i).unwrap_or(&zero));
    for (acc, s) in rows.rows.iter_mut().zip(sums) {
        let r = &mut acc.row;
        if r.cat.is_none() {
            // The pseudo-row holds what no op encloses: its self figures.
            r.launches_total = r.launches_self;
            r.activities_total = r.kernels_self + r.memcpys_self + r.memsets_self;
            r.gpu_total_ns = r.gpu_self_ns;
        } else {
            r.launches_total = s[0] as u64;
            r.activities_total = s[1] as u64;
            r.gpu_total_ns = sat(s[2]);
            r.sync_ns = sat(s[3]);
        }
        r.host_ns = r.cpu_total_ns.saturating_sub(r.sync_ns);
        // O8.
        r.launch_bound = (r.activities_total > 0).then_some(r.gpu_total_ns < r.host_ns);
        acc.latencies.sort_unstable();
        r.launch_latency_ns_median = median(&acc.latencies);
    }
}

/// O1's order: gpu_self desc, gpu_total desc, cpu_total desc, cat, name.
pub(crate) fn sort_rows(rows: &mut [OpRow]) {
    rows.sort_by(|a, b| {
        b.gpu_self_ns
            .cmp(&a.gpu_self_ns)
            .then(b.gpu_total_ns.cmp(&a.gpu_total_ns))
            .then(b.cpu_total_ns.cmp(&a.cpu_total_ns))
            .then(
                a.cat
                    .as_deref()
                    .unwrap_or("")
                    .cmp(b.cat.as_deref().unwrap_or("")),
            )
            .then(a.name.cmp(&b.name))
    });
}

/// What the summary is computed from.
struct Facts<'a> {
    host_ops: u64,
    /// Per thread: its ops' first start and last end.
    op_spans: &'a [Option<(i64, i64)>],
    calls: &'a [Linked],
    acts: &'a crate::store::pack::Records<Linked>,
    own: &'a [Option<u32>],
    launched: &'a [Launch],
    all: &'a [(LaunchKind, PerLaunch)],
    rows: &'a [OpRow],
    lanes: usize,
    without_op: u64,
    graph_kernels: u64,
}

/// O9.
fn summarize(f: Facts<'_>) -> OpsSummary {
    let mut s = OpsSummary {
        host_ops: f.host_ops,
        runtime_calls: f.calls.len() as u64,
        launches: f.all.len() as u64,
        graph_launches: f
            .all
            .iter()
            .filter(|(k, _)| *k == LaunchKind::Graph)
            .count() as u64,
        activities: f.acts.len() as u64,
        graph_kernels: f.graph_kernels,
        launches_without_op: f.without_op,
        ..OpsSummary::default()
    };
    let (mut gpu, mut linked) = (0i128, 0i128);
    for (a, o) in f.acts.iter().zip(f.own) {
        match a.code {
            1 => s.memcpys += 1,
            2 => s.memsets += 1,
            _ => s.kernels += 1,
        }
        gpu += i128::from(a.dur);
        if o.is_some() {
            s.activities_linked += 1;
            linked += i128::from(a.dur);
        }
    }
    s.activities_unlinked = s.activities - s.activities_linked;
    s.gpu_ns = sat(gpu);
    s.gpu_linked_ns = sat(linked);
    s.gpu_unlinked_ns = sat(gpu - linked);
    let per: Vec<PerLaunch> = f.all.iter().map(|(_, p)| *p).collect();
    s.launch_stats = launch_stats(&per);
    let of = |k: LaunchKind| {
        let v: Vec<PerLaunch> = f
            .all
            .iter()
            .filter(|(x, _)| *x == k)
            .map(|(_, p)| *p)
            .collect();
        launch_stats(&v)
    };
    s.launch_stats_by_kind.kernel = of(LaunchKind::Kernel);
    s.launch_stats_by_kind.graph = of(LaunchKind::Graph);
    s.launch_stats_by_kind.memcpy = of(LaunchKind::Memcpy);
    s.launch_stats_by_kind.memset = of(LaunchKind::Memset);

    // Launch-bound share of the top-level GPU time (O8, O9).
    let top_total: i128 = f.rows.iter().map(|r| i128::from(r.gpu_top_ns)).sum();
    let mut bound: Vec<&OpRow> = f
        .rows
        .iter()
        .filter(|r| r.launch_bound == Some(true) && r.gpu_top_ns > 0)
        .collect();
    let bound_gpu: i128 = bound.iter().map(|r| i128::from(r.gpu_top_ns)).sum();
    s.launch_bound_gpu_share = ratio6(bound_gpu, top_total);
    bound.sort_by_key(|r| std::cmp::Reverse(r.gpu_top_ns));
    s.launch_bound_top_ops = bound.iter().take(10).map(|r| r.name.clone()).collect();

    host_side(&f, &mut s);
    let mut stream_acts: Vec<StreamAct> = f
        .acts
        .iter()
        .zip(f.own)
        .map(|(a, o)| StreamAct {
            stream: a.lane,
            start: a.ts,
            end: end_of(a.ts, a.dur),
            index: a.index,
            call_ts: o.map(|o| f.calls[o as usize].ts),
        })
        .collect();
    let idle = gaps::idle(&mut stream_acts);
    s.gpu_idle_ns = idle.idle_ns;
    s.gpu_host_wait_ns = idle.host_wait_ns;
    s.host_wait_share_of_idle = ratio6(i128::from(idle.host_wait_ns), i128::from(idle.idle_ns));
    s.verdict = (s.activities > 0).then(|| {
        let busy = s.host_busy_ns > s.gpu_linked_ns;
        let waits = 2 * i128::from(idle.host_wait_ns) > i128::from(idle.idle_ns);
        if busy && waits {
            "launch-bound"
        } else {
            "not launch-bound"
        }
        .to_string()
    });
    s
}

/// O9's host side over the launching threads: window, blocked, busy.
fn host_side(f: &Facts<'_>, s: &mut OpsSummary) {
    let mut launching = vec![false; f.lanes];
    for (c, l) in f.calls.iter().zip(f.launched) {
        if l.first.is_some() {
            launching[c.lane as usize] = true;
        }
    }
    let mut span: Vec<Option<(i64, i64)>> = f.op_spans.to_vec();
    let mut widen = |lane: u32, ts: i64, end: i64| {
        let w = &mut span[lane as usize];
        *w = Some(w.map_or((ts, end), |(a, b)| (a.min(ts), b.max(end))));
    };
    for c in f.calls {
        widen(c.lane, c.ts, end_of(c.ts, c.dur));
    }
    let window: i128 = span
        .iter()
        .zip(&launching)
        .filter(|(_, l)| **l)
        .filter_map(|(w, _)| *w)
        .map(|(a, b)| i128::from(b) - i128::from(a))
        .sum();
    let mut blocked_ivs: Vec<Vec<(crate::model::Ns, crate::model::Ns)>> = vec![Vec::new(); f.lanes];
    for (c, l) in f.calls.iter().zip(f.launched) {
        if l.sync && launching[c.lane as usize] {
            blocked_ivs[c.lane as usize].push((
                crate::model::Ns(c.ts),
                crate::model::Ns(end_of(c.ts, c.dur)),
            ));
        }
    }
    let blocked: i128 = blocked_ivs
        .into_iter()
        .map(|v| crate::ledger::intervals::length(&crate::ledger::intervals::union(v)))
        .sum();
    s.host_window_ns = sat(window);
    s.host_blocked_ns = sat(blocked);
    s.host_busy_ns = sat(window - blocked);
    s.host_busy_per_gpu = ratio6(window - blocked, i128::from(s.gpu_linked_ns));
}
