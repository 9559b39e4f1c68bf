//! Why the GPU waits (`torchtrace idle`, issue 35): the idle breakdown,
//! the launch queue and comm/compute overlap, per device, per stream and
//! per step, with the definitions of `docs/VIEWS.md` (rules C1–C8,
//! I1–I6; each rule id is cited where it is applied).
//!
//! ```text
//! host  tid 7  [== step 0 ==)          [== step 1 ==)                 C8: a step's window is
//!                L1@1   L2@4             L3@20                        [S_i.ts, S_{i+1}.ts)
//! GPU  stream 7        [k1 5..9)  [k2 11..13)       [k3 22..25)
//!                                ^ gap 2: L2 (4) ≤ prev end 9 and 2 < 30 µs → kernel wait (I3)
//!                                                  ^ gap 9: L3 (20) > prev end 13 → host wait
//! I2   gap_k = max(0, ts_k − max_{j<k} end_j)      Σ gaps = span − busy = (25 − 5) − 9 = 11
//! I6   k1, k2 → step 0 (their launches start in [0, 20)); k3 → step 1, so the idle before
//!      a step's first kernel is that step's: step 0 idle 2, step 1 idle 9
//! I5   in flight on stream 7: +1 at L1 (1), L2 (4), L3 (20); −1 at each kernel's end
//!        t   1  4  9  13 20 25
//!        v   1  2  1  0  1  0     max 2, ∫ = 3+10+4+0+5 = 22 ns·1, window 24, mean 22/24
//! ```
//!
//! The analysis keeps what it needs while reading (each GPU activity with
//! its device and stream, each runtime call with its correlation, and
//! `ProfilerStep#` CPU ops; the step index gives the user annotations).
//! The ledger is not used: it does not keep an activity's device and
//! stream, which every figure here is grouped by. Everything at the
//! finish is sorts and linear sweeps: O(events log events).

pub(crate) mod batch;
mod compute;
mod queue;
mod sweep;
pub mod view;

pub use crate::stats::ratios::{mean6, pct, round_ratio};

use crate::analysis::Use;
use crate::analysis::{Analysis, Configures, Finished};
use crate::hostops::store::{HostStore, HostUse};
use crate::ledger::Kind;
use crate::model::{Lane, ThreadPart};
use crate::store::pack::{Fields, Packed, Record};
use crate::trace::{Event, EventPos, Prefilter};
use crate::windows::OpSteps;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// HTA's `consecutive_kernel_delay` (I3): 30 µs, in exact ns.
pub const KERNEL_WAIT_NS: i64 = 30_000;

/// HTA's `CUDA_MAX_LAUNCH_QUEUE_PER_STREAM` (I5).
pub const QUEUE_LIMIT: i64 = 1024;

/// Options of the idle analysis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct IdleSpec {
    /// A gap that is not a host wait and is shorter than N ns is a kernel
    /// wait (I3; HTA's 30 µs).
    #[cfg_attr(
        feature = "cli",
        arg(long = "kernel-wait-ns", value_name = "N", default_value_t = KERNEL_WAIT_NS)
    )]
    pub kernel_wait_ns: i64,
}

impl Default for IdleSpec {
    fn default() -> Self {
        IdleSpec {
            kernel_wait_ns: KERNEL_WAIT_NS,
        }
    }
}

impl Configures for IdleSpec {
    type Analysis = Idle;
}

/// C6: what a device activity does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    Compute,
    Comm,
    Memory,
}

/// C6's communication names (case-insensitive).
const COMM_PATTERN: &str =
    r"(?i)^(nccl|rccl)|cross_device_reduce|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all";

/// C6: memcpy/memset activities and kernels named `Memcpy…`/`Memset…` are
/// memory; kernels matching `COMM_PATTERN` are communication; every
/// other kernel is compute.
pub fn classify(kind: Kind, name: &str) -> Class {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| regex::Regex::new(COMM_PATTERN).expect("valid regex"));
    if kind != Kind::Kernel || name.starts_with("Memcpy") || name.starts_with("Memset") {
        Class::Memory
    } else if re.is_match(name) {
        Class::Comm
    } else {
        Class::Compute
    }
}

/// The streaming state: the `ProfilerStep#` ops (C8's fallback) with
/// their names and lanes. The runtime calls and device activities are the
/// per-trace host store's ([`crate::hostops::store`]), read at the finish.
pub struct Idle {
    spec: IdleSpec,
    op_steps: OpSteps,
}

/// Input the rules had to correct or leave out, counted (C1, C3, I2, I5,
/// I6): each non-zero count is also a note.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// C1: device activities with `dur < 0`, taken as 0.
    pub negative_dur_clamped: u64,
    /// C1: device activities without `ts`, skipped.
    pub no_ts: u64,
    /// C3: runtime calls whose correlation an earlier call already owns.
    pub duplicate_runtime_correlation: u64,
    /// C3: activities with no owning runtime call.
    pub unlinked: u64,
    /// I5: linked activities starting before their runtime call.
    pub activities_starting_before_launch: u64,
    /// I2: activities starting before the running maximum end of their
    /// stream (their gap is 0, never negative).
    pub overlapping: u64,
    /// O10: activities of zero duration (counted, add 0 ns).
    pub zero_duration: u64,
    /// Streams with one activity (no gap).
    pub single_activity_streams: u64,
    /// I6: step rows without any GPU activity.
    pub steps_without_gpu_work: u64,
    /// C2: activities whose `args.device`/`args.stream` differ from their
    /// pid/tid, placed on the args' stream (issue 59).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lane_from_args: u64,
}

/// What it asks of the host store.
static IDLE_HOST: HostUse = HostUse {
    host_ops: false,
    shapes: None,
};

impl Analysis for Idle {
    const NAME: &'static str = "idle";
    const KEY: &'static str = "idle";
    type Config = IdleSpec;
    type Output = TraceIdle;

    fn start(config: &IdleSpec) -> Self {
        Idle {
            spec: config.clone(),
            op_steps: OpSteps::default(),
        }
    }

    /// Reads the host store's runtime calls and activities.
    fn collects(_spec: &IdleSpec) -> Option<Use> {
        Some(Use::of::<HostStore>(&IDLE_HOST, false))
    }

    /// `ProfilerStep#` ops (the host store admits the rest).
    fn prefilter(&self) -> Prefilter {
        Prefilter::any_of(&["ProfilerStep#"])
    }

    fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        self.op_steps.push(ev, at);
    }

    fn set_tokens(out: &mut TraceIdle, tokens: Option<u64>, source: Option<&str>) {
        out.set_tokens(tokens, source.map(str::to_string));
    }

    fn finish(self, trace: &Finished<'_>) -> TraceIdle {
        let mut out = compute::measure(self, trace);
        if let Some(e) = trace.error_text() {
            out.complete = false;
            out.error = Some(e);
        }
        out
    }
}

/// A count left out of the JSON when 0 (added after the goldens).
fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// C8's fallback grammar (in the neutral step windows).
pub use crate::windows::is_profiler_step;

/// A pid or tid as a label: numbers as written, strings without quotes.
fn label(p: &ThreadPart) -> String {
    match p {
        ThreadPart::Num(n) => n.to_string(),
        ThreadPart::Str(s) => s.clone(),
    }
}

fn lane_labels(l: &Lane) -> (String, String) {
    (label(&l.pid), label(&l.tid))
}

/// The thresholds the figures were computed with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thresholds {
    pub kernel_wait_ns: i64,
    pub queue_limit: i64,
}

/// I4: one device's timeline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceTimeline {
    pub device: String,
    pub activities: u64,
    pub span_ns: i128,
    pub busy_ns: i128,
    pub idle_ns: i128,
    pub compute_ns: i128,
    pub comm_ns: i128,
    pub memory_ns: i128,
    pub non_compute_ns: i128,
    pub comm_kernels: u64,
    pub comm_comp_overlap_ns: i128,
    pub comm_comp_overlap_pct: Option<f64>,
    pub idle_pct: Option<f64>,
    pub compute_pct: Option<f64>,
}

/// I5: one step function's statistics over its window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueStats {
    pub max: i64,
    pub min: i64,
    pub integral_ns: i128,
    pub window_ns: i64,
    /// integral / window (time-weighted); null for an empty window.
    pub mean: Option<f64>,
    pub time_at_zero_ns: i64,
    pub time_at_or_above_1024_ns: i64,
}

/// I5: a stream's launch queue.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Queue {
    pub in_flight: QueueStats,
    pub pending: QueueStats,
    pub activities_starting_before_launch: u64,
}

/// I2–I3: one (device, stream).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamIdle {
    pub device: String,
    pub stream: String,
    pub activities: u64,
    pub unlinked: u64,
    pub first_start_ns: i64,
    pub last_end_ns: i64,
    pub span_ns: i128,
    pub busy_ns: i128,
    pub idle_ns: i128,
    pub host_wait_ns: i128,
    pub host_wait_gaps: u64,
    pub host_wait_pct_of_idle: Option<f64>,
    pub kernel_wait_ns: i128,
    pub kernel_wait_gaps: u64,
    pub kernel_wait_pct_of_idle: Option<f64>,
    pub other_ns: i128,
    pub other_gaps: u64,
    pub other_pct_of_idle: Option<f64>,
    pub queue: Queue,
}

/// I6: the GPU work and idle of a step, of `pre`, of `unattributed`, or
/// (summed) of all of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub activities: u64,
    pub kernels: u64,
    pub gpu_first_start_ns: Option<i64>,
    pub gpu_last_end_ns: Option<i64>,
    /// The union of its activities (all devices and streams together);
    /// in `totals`, the sum of the parts' unions.
    pub busy_ns: i128,
    /// Σ dur.
    pub gpu_ns: i128,
    pub host_wait_ns: i128,
    pub kernel_wait_ns: i128,
    pub other_ns: i128,
    /// Σ of the gaps before its activities (I2–I3).
    pub idle_ns: i128,
    /// Σ over devices of the union of its compute kernels there (C6).
    pub compute_ns: i128,
    /// Σ over devices of the union of its comm kernels there.
    pub comm_ns: i128,
    /// Σ over devices of the union of its memory activities there (C6).
    pub memory_ns: i128,
    /// Σ over devices of |its comm ∩ all compute of the device|.
    pub comm_comp_overlap_ns: i128,
    pub comm_comp_overlap_pct: Option<f64>,
}

/// I6: a stream's in-flight queue over a step's window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueBrief {
    pub max: i64,
    pub mean: Option<f64>,
}

/// I6: one step (an iteration: its annotation to the next on its thread).
/// Its `work` is written inline (`#[serde(flatten)]`) and read back
/// through [`StepRowWire`]: serde's flatten buffers the fields, and its
/// buffer cannot hold the i128 sums (issue 59), so the wire form names
/// every field and the sums come back exactly.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "StepRowWire")]
pub struct StepRow {
    pub index: u64,
    pub name: String,
    pub host_start_ns: i64,
    /// The next step annotation's start on its thread; null for the last.
    pub host_end_ns: Option<i64>,
    pub annotation_end_ns: i64,
    #[serde(flatten)]
    pub work: Part,
    /// `"<device>:<stream>"` → in-flight max and time-weighted mean over
    /// `[host_start, host_end)` (the last step: to the stream's last change).
    pub queue_in_flight: BTreeMap<String, QueueBrief>,
}

/// [`StepRow`] as JSON holds it: its own fields and its `work`'s, side by
/// side (what the flattened serialization writes).
#[derive(Deserialize)]
struct StepRowWire {
    index: u64,
    name: String,
    host_start_ns: i64,
    host_end_ns: Option<i64>,
    annotation_end_ns: i64,
    activities: u64,
    kernels: u64,
    gpu_first_start_ns: Option<i64>,
    gpu_last_end_ns: Option<i64>,
    busy_ns: i128,
    gpu_ns: i128,
    host_wait_ns: i128,
    kernel_wait_ns: i128,
    other_ns: i128,
    idle_ns: i128,
    compute_ns: i128,
    comm_ns: i128,
    memory_ns: i128,
    comm_comp_overlap_ns: i128,
    comm_comp_overlap_pct: Option<f64>,
    queue_in_flight: BTreeMap<String, QueueBrief>,
}

impl From<StepRowWire> for StepRow {
    fn from(w: StepRowWire) -> StepRow {
        StepRow {
            index: w.index,
            name: w.name,
            host_start_ns: w.host_start_ns,
            host_end_ns: w.host_end_ns,
            annotation_end_ns: w.annotation_end_ns,
            work: Part {
                activities: w.activities,
                kernels: w.kernels,
                gpu_first_start_ns: w.gpu_first_start_ns,
                gpu_last_end_ns: w.gpu_last_end_ns,
                busy_ns: w.busy_ns,
                gpu_ns: w.gpu_ns,
                host_wait_ns: w.host_wait_ns,
                kernel_wait_ns: w.kernel_wait_ns,
                other_ns: w.other_ns,
                idle_ns: w.idle_ns,
                compute_ns: w.compute_ns,
                comm_ns: w.comm_ns,
                memory_ns: w.memory_ns,
                comm_comp_overlap_ns: w.comm_comp_overlap_ns,
                comm_comp_overlap_pct: w.comm_comp_overlap_pct,
            },
            queue_in_flight: w.queue_in_flight,
        }
    }
}

/// A step row as a varint record (issue 59: a row struct with its queue
/// map took about 1 KB, the record 50–80 B on vLLM's steps): its index and
/// start as deltas from the previous row's, its name only where it differs
/// from the previous row's, its other times from its start, counts and
/// sums as varints (i128 exactly), each queue entry's key, max and mean.
impl Record for StepRow {
    /// The previous row's index, start and name.
    type Prev = (u64, i64, String);
    const MAX_BYTES: usize = 256;

    fn write(&self, prev: &mut (u64, i64, String), p: &mut Packed) {
        use crate::rows::{write_counts, write_f64, write_i128, write_opts, write_str};
        let start = self.host_start_ns;
        p.delta(self.index as i64, prev.0 as i64);
        p.delta(start, prev.1);
        if self.name == prev.2 {
            p.u(0);
        } else {
            p.u(1);
            write_str(p, &self.name);
            prev.2.clone_from(&self.name);
        }
        (prev.0, prev.1) = (self.index, start);
        let w = &self.work;
        let from_start = |v: Option<i64>| v.map(|x| x.wrapping_sub(start));
        write_opts(
            p,
            &[
                from_start(self.host_end_ns),
                from_start(w.gpu_first_start_ns),
                from_start(w.gpu_last_end_ns),
            ],
        );
        p.delta(self.annotation_end_ns, start);
        write_counts(p, &[w.activities, w.kernels]);
        for v in part_sums(w) {
            write_i128(p, v);
        }
        write_f64(p, w.comm_comp_overlap_pct);
        p.u(self.queue_in_flight.len() as u64);
        for (k, q) in &self.queue_in_flight {
            write_str(p, k);
            p.delta(q.max, 0);
            write_f64(p, q.mean);
        }
    }

    fn read(prev: &mut (u64, i64, String), f: &mut impl Fields) -> StepRow {
        use crate::rows::{read_counts, read_f64, read_i128, read_opts, read_str};
        let index = f.delta(prev.0 as i64) as u64;
        let start = f.delta(prev.1);
        if f.u() != 0 {
            prev.2 = read_str(f);
        }
        (prev.0, prev.1) = (index, start);
        let [end, first, last] = read_opts::<3>(f).map(|v| v.map(|x| x.wrapping_add(start)));
        let annotation_end_ns = f.delta(start);
        let [activities, kernels] = read_counts(f);
        let [busy_ns, gpu_ns, host_wait_ns, kernel_wait_ns, other_ns, idle_ns, compute_ns, comm_ns, memory_ns, comm_comp_overlap_ns] =
            [(); 10].map(|_| read_i128(f));
        let comm_comp_overlap_pct = read_f64(f);
        let n = f.u();
        let queue_in_flight = (0..n)
            .map(|_| {
                let k = read_str(f);
                let max = f.delta(0);
                (
                    k,
                    QueueBrief {
                        max,
                        mean: read_f64(f),
                    },
                )
            })
            .collect();
        StepRow {
            index,
            name: prev.2.clone(),
            host_start_ns: start,
            host_end_ns: end,
            annotation_end_ns,
            work: Part {
                activities,
                kernels,
                gpu_first_start_ns: first,
                gpu_last_end_ns: last,
                busy_ns,
                gpu_ns,
                host_wait_ns,
                kernel_wait_ns,
                other_ns,
                idle_ns,
                compute_ns,
                comm_ns,
                memory_ns,
                comm_comp_overlap_ns,
                comm_comp_overlap_pct,
            },
            queue_in_flight,
        }
    }
}

/// A part's ten additive sums, in the record's order.
fn part_sums(w: &Part) -> [i128; 10] {
    [
        w.busy_ns,
        w.gpu_ns,
        w.host_wait_ns,
        w.kernel_wait_ns,
        w.other_ns,
        w.idle_ns,
        w.compute_ns,
        w.comm_ns,
        w.memory_ns,
        w.comm_comp_overlap_ns,
    ]
}

/// I6: the per-step breakdown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepIdle {
    /// `vllm`, `ProfilerStep` or null (no per-step rows).
    pub grammar: Option<String>,
    pub window: String,
    pub count: u64,
    /// Varint records ([`crate::rows::Rows`]): the JSON array of the rows.
    pub rows: crate::rows::Rows<StepRow>,
    pub pre: Part,
    pub unattributed: Part,
    /// Σ rows + pre + unattributed (additive fields; pcts from the sums).
    pub totals: Part,
}

/// Per-token figures over the whole trace (null without tokens).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PerToken {
    pub busy_ns: Option<f64>,
    pub idle_ns: Option<f64>,
    pub host_wait_ns: Option<f64>,
    pub kernel_wait_ns: Option<f64>,
    pub other_ns: Option<f64>,
}

/// The idle figures of one trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceIdle {
    pub path: String,
    pub units: String,
    pub thresholds: Thresholds,
    pub devices: Vec<DeviceTimeline>,
    /// Σ overlap / Σ comm over the devices (I4).
    pub comm_comp_overlap_pct: Option<f64>,
    pub streams: Vec<StreamIdle>,
    pub steps: StepIdle,
    pub counts: Counts,
    pub completion_tokens: Option<u64>,
    pub tokens_source: Option<String>,
    pub per_token: PerToken,
    pub notes: Vec<String>,
    pub complete: bool,
    pub error: Option<String>,
}

impl TraceIdle {
    /// Σ busy over the devices.
    pub fn busy_ns(&self) -> i128 {
        self.devices.iter().map(|d| d.busy_ns).sum()
    }

    /// Σ over the streams of (host wait, kernel wait, other, idle).
    pub fn idle_sums(&self) -> [i128; 4] {
        let mut s = [0i128; 4];
        for x in &self.streams {
            s[0] += x.host_wait_ns;
            s[1] += x.kernel_wait_ns;
            s[2] += x.other_ns;
            s[3] += x.idle_ns;
        }
        s
    }

    /// Host wait's share of the streams' idle time (%).
    pub fn host_wait_share_pct(&self) -> Option<f64> {
        let [h, _, _, i] = self.idle_sums();
        pct(h, i)
    }

    /// Σ idle / Σ span over the devices (%).
    pub fn idle_pct(&self) -> Option<f64> {
        let idle: i128 = self.devices.iter().map(|d| d.idle_ns).sum();
        let span: i128 = self.devices.iter().map(|d| d.span_ns).sum();
        pct(idle, span)
    }

    /// The largest in-flight queue of any stream.
    pub fn queue_max(&self) -> Option<i64> {
        self.streams.iter().map(|s| s.queue.in_flight.max).max()
    }

    /// Per-token figures: whole-trace sums / completion tokens.
    pub fn set_tokens(&mut self, tokens: Option<u64>, source: Option<String>) {
        self.completion_tokens = tokens;
        self.tokens_source = source;
        let t = tokens.filter(|&t| t > 0).map(i128::from);
        let per = |x: i128| t.map(|t| round_ratio(x, t, 6));
        let [h, k, o, i] = self.idle_sums();
        self.per_token = PerToken {
            busy_ns: per(self.busy_ns()),
            idle_ns: per(i),
            host_wait_ns: per(h),
            kernel_wait_ns: per(k),
            other_ns: per(o),
        };
    }
}

/// AR (baseline) against MTP (candidate), per token.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Comparison {
    pub baseline: String,
    pub candidate: String,
    pub rows: Vec<Compared>,
}

/// One per-token figure of both traces.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Compared {
    pub figure: String,
    pub baseline_per_token_ns: Option<f64>,
    pub candidate_per_token_ns: Option<f64>,
    /// baseline / candidate (> 1: the candidate spends less per token).
    pub ratio: Option<f64>,
}

/// A whole-trace sum of a trace.
type SumOf = fn(&TraceIdle) -> i128;
/// Its per-token figure.
type PerOf = fn(&PerToken) -> Option<f64>;

/// Compares two traces per token (busy, host wait, kernel wait, other).
pub fn compare(a: &TraceIdle, m: &TraceIdle) -> Comparison {
    let exact = |t: &TraceIdle, x: i128| -> Option<(i128, i128)> {
        let tok = i128::from(t.completion_tokens.filter(|&t| t > 0)?);
        Some((x, tok))
    };
    let figs: [(&str, SumOf, PerOf); 5] = [
        ("busy", TraceIdle::busy_ns, |p| p.busy_ns),
        ("idle", |t| t.idle_sums()[3], |p| p.idle_ns),
        ("host_wait", |t| t.idle_sums()[0], |p| p.host_wait_ns),
        ("kernel_wait", |t| t.idle_sums()[1], |p| p.kernel_wait_ns),
        ("other", |t| t.idle_sums()[2], |p| p.other_ns),
    ];
    let rows = figs
        .iter()
        .map(|&(name, sum, per)| {
            let ratio = match (exact(a, sum(a)), exact(m, sum(m))) {
                (Some((xa, ta)), Some((xm, tm))) => {
                    let num = xa.checked_mul(tm);
                    let den = xm.checked_mul(ta);
                    match (num, den) {
                        (Some(n), Some(d)) if d != 0 => Some(round_ratio(n, d, 6)),
                        _ => None,
                    }
                }
                _ => None,
            };
            Compared {
                figure: name.to_string(),
                baseline_per_token_ns: per(&a.per_token),
                candidate_per_token_ns: per(&m.per_token),
                ratio,
            }
        })
        .collect();
    Comparison {
        baseline: a.path.clone(),
        candidate: m.path.clone(),
        rows,
    }
}

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(test)]
mod tests;
