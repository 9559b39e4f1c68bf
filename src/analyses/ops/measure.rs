//! The end of the read: launch links (C3), containment (C4–C5), the rows
//! (O1–O8), the GPU gaps (I2–I3) and the summary (O9). Integer ns
//! throughout; ratios are exact fractions rounded half to even to 6
//! decimals, means and medians to a whole ns (C1).

use super::acts::{act_facts, ActFacts};
use super::inclusive::{Instance, Instances, Online, Point, Sums, WEIGHTS};
use super::threads::Thread;
use super::{
    LaunchStats, OpRow, Ops, OpsSummary, QueueStats, Thresholds, TimeStats, TraceOps,
    HOST_CATEGORIES, LONG_LAUNCH_DELAY_NS, LONG_RUNTIME_NS, NO_OP, SHORT_GPU_CPU_MAX_NS,
};
use crate::hostops::contain::{Sweep, Tag, Visit};
use crate::hostops::launch::{end_of, launches, owners, Launch, LaunchKind};
use crate::hostops::{HostLinks, HostOp, Linked};
use crate::model::Sym;
use std::sync::mpsc::{Receiver, SyncSender};

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

/// A set of launches folded as they come (O9): sums and counts, and the
/// two times whose medians need every value (16 B a launch, where the
/// launches' whole figures are 32 B).
#[derive(Debug, Default)]
struct Tally {
    launches: u64,
    activities: u64,
    cpu: i128,
    gpu: i128,
    clipped: i128,
    negative: u64,
    short_gpu: u64,
    gpu_shorter_than_cpu: u64,
    long_runtime: u64,
    long_launch_delay: u64,
    latencies: Vec<i64>,
    queues: Vec<i64>,
}

impl Tally {
    fn add(&mut self, p: &PerLaunch) {
        self.launches += 1;
        self.activities += p.acts;
        self.cpu += i128::from(p.cpu);
        self.gpu += i128::from(p.gpu);
        self.clipped += i128::from(p.queue.max(0));
        self.negative += u64::from(p.queue < 0);
        self.short_gpu += u64::from(p.short_gpu());
        self.gpu_shorter_than_cpu += u64::from(p.gpu < p.cpu);
        self.long_runtime += u64::from(p.long_runtime());
        self.long_launch_delay += u64::from(p.long_delay());
        self.latencies.push(p.latency);
        self.queues.push(p.queue);
    }

    /// Another set's figures added (its times appended).
    fn absorb(&mut self, o: &Tally) {
        self.launches += o.launches;
        self.activities += o.activities;
        self.cpu += o.cpu;
        self.gpu += o.gpu;
        self.clipped += o.clipped;
        self.negative += o.negative;
        self.short_gpu += o.short_gpu;
        self.gpu_shorter_than_cpu += o.gpu_shorter_than_cpu;
        self.long_runtime += o.long_runtime;
        self.long_launch_delay += o.long_launch_delay;
        self.latencies.extend_from_slice(&o.latencies);
        self.queues.extend_from_slice(&o.queues);
    }

    /// O9's statistics of the set.
    fn stats(mut self) -> LaunchStats {
        let q = time_stats(&mut self.queues);
        LaunchStats {
            launches: self.launches,
            activities: self.activities,
            cpu_ns: sat(self.cpu),
            gpu_ns: sat(self.gpu),
            launch_latency_ns: time_stats(&mut self.latencies),
            queue_delay_ns: QueueStats {
                sum: q.sum,
                mean: q.mean,
                median: q.median,
                min: q.min,
                max: q.max,
                negative: self.negative,
                sum_clipped: sat(self.clipped),
            },
            short_gpu: self.short_gpu,
            gpu_shorter_than_cpu: self.gpu_shorter_than_cpu,
            long_runtime: self.long_runtime,
            long_launch_delay: self.long_launch_delay,
        }
    }
}

/// `{sum, mean, median, min, max}` of a per-launch time (sorts `xs`).
fn time_stats(xs: &mut [i64]) -> TimeStats {
    xs.sort_unstable();
    let total: i128 = xs.iter().map(|&x| i128::from(x)).sum();
    TimeStats {
        sum: sat(total),
        mean: (!xs.is_empty()).then(|| sat(div_half_even(total, xs.len() as i128))),
        median: median(xs),
        min: xs.first().copied(),
        max: xs.last().copied(),
    }
}

/// The kinds of O9's `launch_stats_by_kind`, in [`Attributed::by_kind`]'s order.
const KINDS: [LaunchKind; 4] = [
    LaunchKind::Kernel,
    LaunchKind::Graph,
    LaunchKind::Memcpy,
    LaunchKind::Memset,
];

/// Row accumulators beside the public row.
#[derive(Debug, Default)]
struct Acc {
    row: OpRow,
    latencies: Vec<i64>,
}

/// The rows by (cat, name), the pseudo-row last created.
#[derive(Debug, Default)]
pub(super) struct RowSet {
    /// Row of (name, cat) at `name * 4 + cat` (`u32::MAX`: none yet): a
    /// direct index, the names being interned.
    ids: Vec<u32>,
    rows: Vec<Acc>,
    /// Per row: a RecordFunction scope (not a python frame, O4).
    scope: Vec<bool>,
    pseudo: Option<u32>,
}

impl RowSet {
    /// The row of `o`'s (name, cat), made when new (O1).
    pub(super) fn of_op(&mut self, o: &HostOp, names: &crate::model::Interner) -> u32 {
        let next = self.rows.len() as u32;
        let k = o.name.0 as usize * 4 + usize::from(o.cat & 3);
        if self.ids.len() <= k {
            self.ids.resize(k + 1, u32::MAX);
        }
        if self.ids[k] == u32::MAX {
            self.ids[k] = next;
        }
        let id = self.ids[k];
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

    /// The row of a (cat, name) from elsewhere (a capture trace's op,
    /// issue 57), made when new.
    pub(super) fn of_name(
        &mut self,
        cat: u8,
        name: &str,
        names: &mut crate::model::Interner,
    ) -> u32 {
        let sym = names.intern(name);
        let o = HostOp {
            lane: 0,
            ts: 0,
            dur: 0,
            index: 0,
            name: sym,
            cat,
        };
        self.of_op(&o, names)
    }

    /// A row's GPU time replayed from a graph (issue 57).
    pub(super) fn add_graph(&mut self, row: u32, dur: i64) {
        let r = &mut self.rows[row as usize].row;
        r.graph_activities += 1;
        r.gpu_graph_ns = r.gpu_graph_ns.saturating_add(dur);
    }

    pub(super) fn pseudo(&mut self) -> u32 {
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

/// A runtime call as the finish keeps it (24 B; the kept record decodes to
/// 56 B with its correlation and file index, which the links need once).
#[derive(Debug, Clone, Copy)]
pub(super) struct Call {
    pub ts: i64,
    dur: i64,
    pub lane: u32,
    name: Sym,
}

/// The kept runtime calls, in file order, and their correlations (C3),
/// the records freed as they are decoded.
fn decode_calls(kept: crate::store::pack::Records<Linked>) -> (Vec<Call>, Vec<Option<i64>>) {
    let mut corrs = Vec::with_capacity(kept.len());
    let mut calls = Vec::with_capacity(kept.len());
    for c in kept.drain() {
        corrs.push(c.corr);
        calls.push(Call {
            ts: c.ts,
            dur: c.dur,
            lane: c.lane,
            name: c.name,
        });
    }
    (calls, corrs)
}

/// The figures of one trace from what was kept.
pub(super) fn measure(st: Ops, caps: &crate::graphs::Captures) -> TraceOps {
    // Rows of every op (O1) and threads as sorted runs (C4), made while
    // reading.
    let Ops {
        links,
        mut threads,
        mut rows,
        mut contexts,
        ..
    } = st;
    let HostLinks {
        mut names,
        lanes,
        calls,
        acts,
        mut counts,
    } = links;
    threads.resize_with(lanes.len(), Thread::default);
    let (calls, corrs) = decode_calls(calls);
    // The activities stay packed (≈ 10 B each), decoded as each pass needs them.
    let (own, dup) = owners(|| corrs.iter().copied(), acts.iter());
    drop(corrs);
    counts.duplicate_runtime_correlation = dup;
    counts.unlinked_activities = own.unowned();
    // The activities' own figures (`acts.rs`) need no sweep: a thread of
    // their own computes them beside the launches' figures (inline when it
    // cannot start or there are few activities). Both read the packed
    // activities and their owners, which are then dropped before the
    // sweeps: at 1.28 GB they were 10 MB of the finish's peak.
    let (launched, act_facts) = std::thread::scope(|s| {
        let side = (acts.len() >= limits().side_min)
            .then(|| {
                std::thread::Builder::new()
                    .name("torchtrace-acts".into())
                    .spawn_scoped(s, || act_facts(&acts, &own, &calls))
                    .ok()
            })
            .flatten();
        let launched = launches(calls.iter().map(|c| c.name), acts.iter(), &own, &names);
        let facts = match side {
            Some(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            None => act_facts(&acts, &own, &calls),
        };
        (launched, facts)
    });
    // The graph replays to their captures (issue 57), while the packed
    // activities and their owners are here.
    let replayed = crate::graphs::replay::replays(
        caps,
        (&acts, &own, &launched),
        &names,
        |k| calls.get(k as usize).map(|c| (c.lane, c.ts)),
        &mut contexts,
    );
    drop(acts);
    drop(own);
    let host_ops = threads.iter().map(|t| t.len() as u64).sum();
    // Each thread's call indices, allocated to size (no growth slack).
    let mut per_lane = vec![0usize; lanes.len()];
    for c in &calls {
        per_lane[c.lane as usize] += 1;
    }
    let mut calls_by_lane: Vec<Vec<u32>> = per_lane.into_iter().map(Vec::with_capacity).collect();
    for (i, c) in calls.iter().enumerate() {
        calls_by_lane[c.lane as usize].push(i as u32);
    }
    let (swept, attributed) =
        sweep_threads(threads, &calls, &launched, &mut calls_by_lane, &mut rows);

    let Swept { sums, op_spans, .. } = swept;
    inclusive_totals(&sums, &mut rows);
    let graphs = super::graphs::into_rows(replayed, caps, &mut rows, &mut names);
    let mut out_rows: Vec<OpRow> = rows.rows.into_iter().map(|a| a.row).collect();
    sort_rows(&mut out_rows);

    let summary = summarize(Facts {
        host_ops,
        op_spans: &op_spans,
        calls: &calls,
        acts: act_facts,
        launched: &launched,
        by_kind: attributed.by_kind,
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
        graphs,
        names_cut: names.cut() as u64,
    }
}

/// What the threads' sweeps give: per row its inclusive sums (O3, O5's
/// sync: launches, activities, GPU ns, sync ns), per thread its ops'
/// [first start, last end) (O9's host window).
struct Swept {
    sums: Vec<[i128; WEIGHTS]>,
    op_spans: Vec<Option<(i64, i64)>>,
}

/// One thread's sweep state for [`sweep_threads`].
struct ThreadRows<'a> {
    calls: &'a [Call],
    launched: &'a [Launch],
    rows: &'a mut RowSet,
    /// Per row: the latest end of its instances on this thread so far
    /// (`i64::MIN`: none), and the rows met on this thread.
    far: &'a mut Vec<i64>,
    touched: Vec<u32>,
    /// Where the maximal instances go for O3's sums.
    incl: Incl<'a>,
    /// What the calls add up to, as their launchers are found.
    attributed: &'a mut Attributed,
}

/// Where a thread's maximal instances go for O3's sums (the same calls of
/// [`Instances`] in the same order either way).
enum Incl<'a> {
    /// Answered as they are found.
    Here {
        instances: Instances<'a>,
        sums: &'a mut Vec<Sums>,
    },
    /// Sent in blocks to a thread of its own ([`answering`]): for a big
    /// thread, the answers were a third of the sweep's time (`perf`).
    There {
        block: Vec<Instance>,
        tx: SyncSender<Vec<Instance>>,
        back: Receiver<Vec<Instance>>,
    },
}

/// Maximal instances sent at once to the answering thread.
const INSTANCE_BLOCK: usize = 8192;

impl Incl<'_> {
    fn add(&mut self, m: Instance) {
        match self {
            Incl::Here { instances, sums } => instances.add(sums, m),
            Incl::There { block, tx, back } => {
                block.push(m);
                if block.len() >= INSTANCE_BLOCK {
                    Incl::send(block, tx, back);
                }
            }
        }
    }

    fn send(
        block: &mut Vec<Instance>,
        tx: &SyncSender<Vec<Instance>>,
        back: &Receiver<Vec<Instance>>,
    ) {
        let next = back
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(INSTANCE_BLOCK));
        // A send fails only once the answering thread has panicked, which
        // its join reports.
        let _ = tx.send(std::mem::replace(block, next));
    }

    /// The thread's end: the last terms where they are answered here; the
    /// last block sent and the channel closed where they are not.
    fn finish(self) {
        match self {
            Incl::Here { instances, sums } => instances.finish(sums),
            Incl::There {
                mut block,
                tx,
                back,
            } => {
                if !block.is_empty() {
                    Incl::send(&mut block, &tx, &back);
                }
            }
        }
    }
}

/// The thread's calls that weigh in O3's sums, in start order (`cs`).
fn weighed_of(cs: &[u32], point: &dyn Fn(u32) -> Point) -> Vec<u32> {
    cs.iter()
        .copied()
        .filter(|&ci| point(ci).w != [0; WEIGHTS])
        .collect()
}

/// A thread answering one big thread's maximal instances ([`Incl::There`]):
/// it builds the thread's [`Online`] from its calls (`cs`, in start order),
/// answers the blocks as they come, and gives back its sums; `None` when
/// it cannot start.
#[allow(clippy::type_complexity)]
fn answering<'scope, 'env>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    cs: &'env [u32],
    calls: &'env [Call],
    launched: &'env [Launch],
) -> Option<(Incl<'env>, std::thread::ScopedJoinHandle<'scope, Vec<Sums>>)> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Instance>>(2);
    let (back_tx, back) = std::sync::mpsc::sync_channel::<Vec<Instance>>(2);
    let handle = std::thread::Builder::new()
        .name("torchtrace-incl".into())
        .spawn_scoped(s, move || {
            let point = |ci: u32| point_of(ci, calls, launched);
            let weighed = weighed_of(cs, &point);
            let (mut reach, mut sums) = (Vec::new(), Vec::new());
            let mut instances = Instances::new(Online::new(&weighed, &point), &mut reach);
            for mut block in rx {
                for &m in &block {
                    instances.add(&mut sums, m);
                }
                block.clear();
                let _ = back_tx.try_send(block);
            }
            instances.finish(&mut sums);
            sums
        })
        .ok()?;
    let incl = Incl::There {
        block: Vec::with_capacity(INSTANCE_BLOCK),
        tx,
        back,
    };
    Some((incl, handle))
}

impl ThreadRows<'_> {
    /// O5's self CPU time: the row of `parent` loses what its child adds to
    /// the union of its children (improperly nested siblings may overlap;
    /// the sweep keeps each open op's union, [`Sweep::cover_parent`]).
    fn cut(&mut self, parent_row: u32, cut: i64) {
        let r = &mut self.rows.rows[parent_row as usize].row;
        r.cpu_self_ns = r.cpu_self_ns.saturating_sub(cut);
    }
}

impl crate::hostops::contain::Visitor for ThreadRows<'_> {
    fn op(&mut self, at: &Visit, parent: Option<(u32, Tag)>, sweep: &mut Sweep) {
        let (end, row) = (at.end, at.tag.row);
        let dur = end - at.ts;
        let r = &mut self.rows.rows[row as usize].row;
        r.calls += 1;
        r.cpu_self_ns = r.cpu_self_ns.saturating_add(dur);
        if self.far.len() <= row as usize {
            self.far.resize(row as usize + 1, i64::MIN);
        }
        let far = &mut self.far[row as usize];
        if *far == i64::MIN {
            self.touched.push(row);
        }
        if *far < end {
            // Not enclosed by an earlier instance of its name.
            *far = end;
            r.cpu_total_ns = r.cpu_total_ns.saturating_add(dur);
            self.incl.add(Instance {
                row,
                ts: at.ts,
                end,
            });
        }
        if let Some((_, p)) = parent {
            let cut = sweep.cover_parent(at.ts, end);
            self.cut(p.row, cut);
        }
    }

    fn call(&mut self, ci: u32, sweep: &mut Sweep) {
        let c = &self.calls[ci as usize];
        let end = end_of(c.ts, c.dur);
        let inner = sweep.innermost_tagged(end).map(|(_, t)| t.row);
        let top = sweep.outermost_at(end).map(|(_, r)| r).or(inner);
        let launch = &self.launched[ci as usize];
        attribute_call(c, launch, inner, top, self.rows, self.attributed);
        if let Some(l) = inner {
            let cut = sweep.cover_innermost(c.ts, end);
            self.cut(l, cut);
        }
        // O7's first-launch delay: an instance's earliest self launch (the
        // calls come in start order) less the instance's start.
        if self.launched[ci as usize].first().is_some() {
            if let Some(t) = sweep.first_launch(end) {
                let r = &mut self.rows.rows[t.row as usize].row;
                r.first_launch_delay_ns_sum =
                    r.first_launch_delay_ns_sum.saturating_add(c.ts - t.ts);
                r.first_launch_delay_n += 1;
            }
        }
    }
}

/// Per thread, one sweep (contain.rs) over its ops (merged from its runs
/// in C4's key order, each thread freed after its sweep) and its runtime
/// calls (sorted here by start): parents (C5), maximal-of-name instances
/// (O5), launchers (O2), top-level ops (O4), calls, CPU total/self time
/// (O5) and first-launch delays (O7) into the rows.
fn sweep_threads(
    threads: Vec<Thread>,
    calls: &[Call],
    launched: &[Launch],
    calls_by_lane: &mut [Vec<u32>],
    rows: &mut RowSet,
) -> (Swept, Attributed) {
    // One flag per row (hundreds), copied out of the rows the sweep writes.
    let scope = rows.scope.clone();
    let lanes = calls_by_lane.len();
    let mut out = Swept {
        sums: Vec::new(),
        op_spans: vec![None; lanes],
    };
    let (mut far, mut reach): (Vec<i64>, Vec<u32>) = (Vec::new(), Vec::new());
    let mut attributed = Attributed {
        by_kind: Default::default(),
        without_op: 0,
        graph_kernels: 0,
    };
    for (lane, (cs, thread)) in calls_by_lane.iter_mut().zip(threads).enumerate() {
        cs.sort_by_key(|&ci| calls[ci as usize].ts);
        let cs: &[u32] = cs;
        let mut span: Option<(i64, i64)> = None;
        let big = thread.len() >= limits().big_min;
        let slot = std::sync::Mutex::new(Some(thread.into_merged()));
        let point = |ci: u32| point_of(ci, calls, launched);
        let remote = std::thread::scope(|s| {
            // A big thread's O3 answers on a thread of their own; inline
            // otherwise, or when that thread cannot start.
            let remote = big.then(|| answering(s, cs, calls, launched)).flatten();
            let weighed = match remote {
                Some(_) => Vec::new(),
                None => weighed_of(cs, &point),
            };
            let (incl, answers) = match remote {
                Some((i, h)) => (i, Some(h)),
                None => {
                    let online = Online::new(&weighed, &point);
                    let instances = Instances::new(online, &mut reach);
                    let sums = &mut out.sums;
                    (Incl::Here { instances, sums }, None)
                }
            };
            let mut t = ThreadRows {
                calls,
                launched,
                rows: &mut *rows,
                far: &mut far,
                touched: Vec::new(),
                incl,
                attributed: &mut attributed,
            };
            let visits = super::threads::prefetched(s, &slot, big)
                .enumerate()
                .map(|(q, o)| {
                    let end = end_of(o.ts, o.dur);
                    // Key order: the first op starts first; the last end is a max.
                    span = Some(span.map_or((o.ts, end), |(a, b)| (a, b.max(end))));
                    Visit {
                        pos: q as u32,
                        ts: o.ts,
                        end,
                        scope: scope[o.row as usize],
                        tag: Tag {
                            row: o.row,
                            ts: o.ts,
                        },
                    }
                });
            let by_start = cs.iter().map(|&ci| (ci, calls[ci as usize].ts));
            crate::hostops::contain::sweep_thread(visits, by_start, &mut t);
            let ThreadRows {
                far, touched, incl, ..
            } = t;
            for row in touched {
                far[row as usize] = i64::MIN;
            }
            incl.finish();
            answers.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        });
        out.op_spans[lane] = span;
        // A big thread's sums, answered on their own thread: exact sums, so
        // added in any order.
        for (row, got) in remote.unwrap_or_default().into_iter().enumerate() {
            if out.sums.len() <= row {
                out.sums.resize(row + 1, [0; WEIGHTS]);
            }
            for (x, y) in out.sums[row].iter_mut().zip(got) {
                *x += y;
            }
        }
    }
    (out, attributed)
}

/// What the runtime calls add up to (O6, O9).
struct Attributed {
    /// The launches by kind ([`KINDS`]' order).
    by_kind: [Tally; 4],
    without_op: u64,
    graph_kernels: u64,
}

/// One runtime call, once its sweep found its launcher's row (O2; `None`:
/// no op encloses it) and its top-level op's (O4): the launcher's self
/// figures (O6–O7), the top-level op's GPU work.
fn attribute_call(
    c: &Call,
    l: &Launch,
    launcher: Option<u32>,
    top: Option<u32>,
    rows: &mut RowSet,
    out: &mut Attributed,
) {
    let row = match launcher {
        Some(r) => r,
        None => rows.pseudo(),
    };
    let r = &mut rows.rows[row as usize];
    r.row.runtime_self_ns = r.row.runtime_self_ns.saturating_add(c.dur);
    let Some(first) = l.first() else { return };
    let p = PerLaunch {
        cpu: c.dur,
        gpu: l.gpu,
        acts: u64::from(l.acts),
        latency: first.saturating_sub(c.ts),
        queue: first.saturating_sub(end_of(c.ts, c.dur)),
    };
    let k = KINDS.iter().position(|&k| k == l.kind()).unwrap_or(0);
    out.by_kind[k].add(&p);
    if l.graph {
        out.graph_kernels += u64::from(l.acts);
    }
    add_launch(&mut r.row, l, &p);
    r.latencies.push(p.latency);
    if launcher.is_none() {
        out.without_op += 1;
    }
    let t = &mut rows.rows[top.unwrap_or(row) as usize].row;
    t.activities_top += u64::from(l.acts);
    t.gpu_top_ns = t.gpu_top_ns.saturating_add(l.gpu);
}

/// A launch's self figures into its launcher's row (O6–O7).
fn add_launch(s: &mut OpRow, l: &Launch, p: &PerLaunch) {
    s.launches_self += 1;
    s.graph_launches_self += u64::from(l.graph);
    s.kernels_self += u64::from(l.kernels());
    s.memcpys_self += u64::from(l.memcpys);
    s.memsets_self += u64::from(l.memsets);
    s.gpu_self_ns = s.gpu_self_ns.saturating_add(l.gpu);
    s.short_gpu_self += u64::from(p.short_gpu());
    s.long_runtime_self += u64::from(p.long_runtime());
    s.long_launch_delay_self += u64::from(p.long_delay());
    s.launch_latency_ns_sum = s.launch_latency_ns_sum.saturating_add(p.latency);
    s.queue_delay_ns_sum = s.queue_delay_ns_sum.saturating_add(p.queue);
}

/// A runtime call as the weights it adds to each name holding it (O3,
/// O5's sync); a call that launches nothing and does not block adds
/// nothing, and the sweep leaves it out.
fn point_of(ci: u32, calls: &[Call], launched: &[Launch]) -> Point {
    let (c, l) = (&calls[ci as usize], &launched[ci as usize]);
    Point {
        ts: c.ts,
        end: end_of(c.ts, c.dur),
        w: [
            i64::from(l.first().is_some()),
            i64::from(l.acts),
            l.gpu,
            if l.sync { c.dur } else { 0 },
        ],
    }
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
    calls: &'a [Call],
    acts: ActFacts,
    launched: &'a [Launch],
    by_kind: [Tally; 4],
    rows: &'a [OpRow],
    lanes: usize,
    without_op: u64,
    graph_kernels: u64,
}

/// O9.
fn summarize(mut f: Facts<'_>) -> OpsSummary {
    let mut s = OpsSummary {
        host_ops: f.host_ops,
        runtime_calls: f.calls.len() as u64,
        launches: f.by_kind.iter().map(|t| t.launches).sum(),
        graph_launches: f.by_kind[1].launches,
        activities: f.acts.kernels + f.acts.memcpys + f.acts.memsets,
        kernels: f.acts.kernels,
        memcpys: f.acts.memcpys,
        memsets: f.acts.memsets,
        activities_linked: f.acts.linked,
        graph_kernels: f.graph_kernels,
        launches_without_op: f.without_op,
        ..OpsSummary::default()
    };
    let (gpu, linked) = (f.acts.gpu, f.acts.gpu_linked);
    s.activities_unlinked = s.activities - s.activities_linked;
    s.gpu_ns = sat(gpu);
    s.gpu_linked_ns = sat(linked);
    s.gpu_unlinked_ns = sat(gpu - linked);
    let mut all = Tally::default();
    for t in &f.by_kind {
        all.absorb(t);
    }
    s.launch_stats = all.stats();
    let [kernel, graph, memcpy, memset] = std::mem::take(&mut f.by_kind).map(Tally::stats);
    s.launch_stats_by_kind.kernel = kernel;
    s.launch_stats_by_kind.graph = graph;
    s.launch_stats_by_kind.memcpy = memcpy;
    s.launch_stats_by_kind.memset = memset;

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
    let idle = f.acts.idle;
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

/// The fewest activities, and the fewest ops on one thread, for which the
/// finish gives that work threads of its own ([`ActFacts`] beside the
/// launches' figures; a big thread's merge and its O3 answers beside its
/// sweep).
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub side_min: usize,
    pub big_min: usize,
}

impl Limits {
    const DEFAULT: Limits = Limits {
        side_min: 1 << 16,
        big_min: super::threads::PREFETCH_MIN,
    };
    /// One core to use (`-j 1`): everything on the finishing thread.
    const NONE: Limits = Limits {
        side_min: usize::MAX,
        big_min: usize::MAX,
    };
}

#[cfg(test)]
thread_local! {
    /// Tests: the limits [`measure`] uses on this thread, when set.
    pub(super) static LIMITS: std::cell::Cell<Option<Limits>> = const { std::cell::Cell::new(None) };
}

/// The limits of this run: none with one core to use (`-j 1`).
fn limits() -> Limits {
    let run = if rayon::current_num_threads() > 1 {
        Limits::DEFAULT
    } else {
        Limits::NONE
    };
    #[cfg(test)]
    return LIMITS.with(|l| l.get()).unwrap_or(run);
    #[cfg(not(test))]
    run
}

/// O9's host side over the launching threads: window, blocked, busy.
fn host_side(f: &Facts<'_>, s: &mut OpsSummary) {
    let mut launching = vec![false; f.lanes];
    for (c, l) in f.calls.iter().zip(f.launched) {
        if l.first().is_some() {
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
