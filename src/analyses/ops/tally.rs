//! The launches' figures (O6, O9): per launch ([`PerLaunch`]), folded per
//! kind as they come ([`Tally`]), and each runtime call's share of its
//! launcher's and top-level op's row once the sweep found them
//! ([`attribute_call`]).

use super::exact::{sat, time_stats};
use super::measure::Call;
use super::rowset::RowSet;
use super::{
    LaunchStats, OpRow, QueueStats, LONG_LAUNCH_DELAY_NS, LONG_RUNTIME_NS, SHORT_GPU_CPU_MAX_NS,
};
use crate::hostops::launch::{end_of, Launch, LaunchKind};

/// Per-launch figures (O6).
#[derive(Debug, Clone, Copy)]
pub(super) struct PerLaunch {
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
pub(super) struct Tally {
    pub(super) launches: u64,
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
    pub(super) fn absorb(&mut self, o: &Tally) {
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
    pub(super) fn stats(mut self) -> LaunchStats {
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

/// The kinds of O9's `launch_stats_by_kind`, in [`Attributed::by_kind`]'s order.
const KINDS: [LaunchKind; 4] = [
    LaunchKind::Kernel,
    LaunchKind::Graph,
    LaunchKind::Memcpy,
    LaunchKind::Memset,
];

/// What the runtime calls add up to (O6, O9).
pub(super) struct Attributed {
    /// The launches by kind ([`KINDS`]' order).
    pub(super) by_kind: [Tally; 4],
    pub(super) without_op: u64,
    pub(super) graph_kernels: u64,
}

/// One runtime call, once its sweep found its launcher's row (O2; `None`:
/// no op encloses it) and its top-level op's (O4): the launcher's self
/// figures (O6–O7), the top-level op's GPU work.
pub(super) fn attribute_call(
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
