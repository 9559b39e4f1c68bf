//! Which CPU operator launched which GPU work, and is the run launch-bound
//! (`torchtrace ops`, issue 34), with the definitions of
//! `shared/docs/VIEWS.md` rules C1–C7 and O1–O10 (cited as `C4`, `O6`, …).
//!
//! ```text
//! thread T   [== step annotation (user_annotation) ===========================)  top-level (O4)
//!              [py: <built-in method replay>)   [aten::topk [aten::sort)  )
//!                 L1 cudaGraphLaunch c=5            L2 cudaLaunchKernel c=6
//! GPU s 7           [k c=5][k c=5]…[k c=5]                 [k c=6)
//!            launcher (O2) of L1 = the python frame (innermost op holding it),
//!            of L2 = aten::sort; top-level of both = the step annotation;
//!            inclusive (O3): the step, the frame, aten::topk and aten::sort
//!            each get L2's kernel once (aten::topk through aten::sort)
//! ```
//!
//! What is kept while reading (all in [`Records`] varint streams, ≈ 10 B an
//! event): every host op (`cpu_op`, `user_annotation`, `python_function`,
//! `Operator`), every runtime call with its correlation, every device
//! activity with its (device, stream) and correlation. The ledger is not
//! used: it keeps neither an activity's stream (I2–I3 need it) nor the
//! runtime calls that launch nothing (O5's runtime and sync times need
//! them). Kineto writes an activity's `pid`/`tid` as its `args.device` /
//! `args.stream` (equal on every fixture: the reader keeps no other args),
//! so (pid, tid) is the stream (C2).
//!
//! At the end ([`measure`]): the launch links by correlation (C3), the
//! containment queries per thread in O(n log n) (C4–C5, [`contain`]), the
//! rows (O1–O8), the GPU gaps (I2–I3, [`gaps`]) and the summary (O9).

pub(crate) mod batch;
pub(crate) mod contain;
pub mod gaps;
mod inclusive;
pub(crate) mod measure;
pub mod view;

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(test)]
mod tests;

use crate::analysis::{Analysis, Configures, Finished, InResults};
use crate::ledger::pack::{Fields, Packed, Record, Records};
use crate::model::{Interner, LaneTable, Sym};
use crate::trace::{Event, EventPos, Prefilter};
use serde::{Deserialize, Serialize};

/// HTA's thresholds (O6), exact ns.
pub const SHORT_GPU_CPU_MAX_NS: i64 = 50_000;
pub const LONG_RUNTIME_NS: i64 = 50_000;
pub const LONG_LAUNCH_DELAY_NS: i64 = 100_000;

/// The name of O1's pseudo-row.
pub const NO_OP: &str = "(no enclosing op)";

/// Host op categories (C2), in code order.
pub const HOST_CATEGORIES: [&str; 4] = ["cpu_op", "user_annotation", "python_function", "Operator"];

/// Runtime call categories (C2).
pub const RUNTIME_CATEGORIES: [&str; 3] = ["cuda_runtime", "cuda_driver", "Runtime"];

/// Options of the ops analysis (the table's, none change a figure).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct OpsSpec {
    /// Rows shown in the tables (the rest summed in one row; JSON has
    /// every row).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N", default_value_t = 20))]
    pub top: usize,
    /// The tables' row order: gpu_self (O1's order), gpu_top, host, calls.
    #[cfg_attr(feature = "cli", arg(long, value_enum, default_value_t = SortBy::GpuSelf))]
    pub sort: SortBy,
}

impl Default for OpsSpec {
    fn default() -> Self {
        OpsSpec {
            top: 20,
            sort: SortBy::GpuSelf,
        }
    }
}

/// The tables' row order (`--sort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum SortBy {
    #[default]
    #[cfg_attr(feature = "cli", value(name = "gpu_self"))]
    GpuSelf,
    #[cfg_attr(feature = "cli", value(name = "gpu_top"))]
    GpuTop,
    Host,
    Calls,
}

impl SortBy {
    /// The flag's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SortBy::GpuSelf => "gpu_self",
            SortBy::GpuTop => "gpu_top",
            SortBy::Host => "host",
            SortBy::Calls => "calls",
        }
    }
}

impl Configures for OpsSpec {
    type Analysis = Ops;
}

/// A host op as kept: lane, Δts, dur, Δindex, name, category.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostOp {
    pub lane: u32,
    pub ts: i64,
    pub dur: i64,
    pub index: u64,
    pub name: Sym,
    /// Position in [`HOST_CATEGORIES`].
    pub cat: u8,
}

impl Record for HostOp {
    type Prev = (i64, i64);

    fn write(&self, prev: &mut (i64, i64), p: &mut Packed) {
        p.delta(self.ts, prev.0);
        p.delta(self.dur, 0);
        p.delta(self.index as i64, prev.1);
        p.u(u64::from(self.lane));
        p.u(u64::from(self.name.0) * 4 + u64::from(self.cat & 3));
        *prev = (self.ts, self.index as i64);
    }

    fn read(prev: &mut (i64, i64), f: &mut impl Fields) -> HostOp {
        let ts = f.delta(prev.0);
        let dur = f.delta(0);
        let index = f.delta(prev.1);
        let lane = f.u() as u32;
        let nc = f.u();
        *prev = (ts, index);
        HostOp {
            lane,
            ts,
            dur,
            index: index as u64,
            name: Sym((nc / 4) as u32),
            cat: (nc % 4) as u8,
        }
    }
}

/// A runtime call or a device activity as kept: lane (for an activity its
/// stream), Δts, dur, Δindex, name, a code (an activity's kind), and its
/// correlation when it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Linked {
    pub lane: u32,
    pub ts: i64,
    pub dur: i64,
    pub index: u64,
    pub name: Sym,
    /// An activity's kind: 0 kernel, 1 memcpy, 2 memset.
    pub code: u8,
    pub corr: Option<i64>,
}

impl Record for Linked {
    type Prev = (i64, i64, i64);

    fn write(&self, prev: &mut (i64, i64, i64), p: &mut Packed) {
        p.delta(self.ts, prev.0);
        p.delta(self.dur, 0);
        p.delta(self.index as i64, prev.1);
        p.u(u64::from(self.lane));
        let has = u64::from(self.corr.is_some());
        p.u(u64::from(self.name.0) * 8 + u64::from(self.code & 3) * 2 + has);
        if let Some(c) = self.corr {
            p.delta(c, prev.2);
            prev.2 = c;
        }
        (prev.0, prev.1) = (self.ts, self.index as i64);
    }

    fn read(prev: &mut (i64, i64, i64), f: &mut impl Fields) -> Linked {
        let ts = f.delta(prev.0);
        let dur = f.delta(0);
        let index = f.delta(prev.1);
        let lane = f.u() as u32;
        let m = f.u();
        let corr = (m & 1 == 1).then(|| {
            let c = f.delta(prev.2);
            prev.2 = c;
            c
        });
        (prev.0, prev.1) = (ts, index);
        Linked {
            lane,
            ts,
            dur,
            index: index as u64,
            name: Sym((m / 8) as u32),
            code: ((m / 2) % 4) as u8,
            corr,
        }
    }
}

/// Bad-input counts (each a note, O10 / C1 / C3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputCounts {
    /// Complete events of the three classes without `ts`: skipped (C1).
    pub no_ts: u64,
    /// `dur < 0`, clamped to 0 (C1).
    pub negative_dur_clamped: u64,
    /// Runtime calls whose correlation an earlier call owns (C3).
    pub duplicate_runtime_correlation: u64,
    /// Activities with no owning runtime call (C3).
    pub unlinked_activities: u64,
    /// Host ops that never end inside the trace (`"finished": false`, or
    /// no `dur`): kept with the duration written (0 without one).
    pub unfinished_host_ops: u64,
}

/// The streaming state of one trace.
#[derive(Debug, Default)]
pub struct Ops {
    pub(crate) names: Interner,
    pub(crate) lanes: LaneTable,
    pub(crate) host: Records<HostOp>,
    pub(crate) calls: Records<Linked>,
    pub(crate) acts: Records<Linked>,
    pub(crate) counts: InputCounts,
}

/// The category class of an event (C2).
enum Class {
    Host(u8),
    Runtime,
    Activity(u8),
}

fn class_of(cat: &str) -> Option<Class> {
    if let Some(k) = HOST_CATEGORIES.iter().position(|c| *c == cat) {
        return Some(Class::Host(k as u8));
    }
    if RUNTIME_CATEGORIES.contains(&cat) {
        return Some(Class::Runtime);
    }
    crate::ledger::Kind::of_category(cat).map(|k| {
        Class::Activity(match k {
            crate::ledger::Kind::Kernel => 0,
            crate::ledger::Kind::Memcpy => 1,
            crate::ledger::Kind::Memset => 2,
        })
    })
}

impl Analysis for Ops {
    const NAME: &'static str = "ops";
    const KEY: &'static str = "ops";
    type Config = OpsSpec;
    type Output = TraceOps;

    fn start(_: &OpsSpec) -> Self {
        Ops::default()
    }

    /// The categories of C2 (`"gpu_mem` stands for `gpu_memcpy` and
    /// `gpu_memset`).
    fn prefilter(&self) -> Prefilter {
        Prefilter::any_of(&[
            "\"cpu_op\"",
            "\"user_annotation\"",
            "\"python_function\"",
            "\"Operator\"",
            "\"cuda_runtime\"",
            "\"cuda_driver\"",
            "\"Runtime\"",
            "\"kernel\"",
            "\"Kernel\"",
            "\"gpu_mem",
            "\"Memcpy\"",
            "\"Memset\"",
        ])
    }

    fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        if ev.ph != "X" {
            return;
        }
        let Some(class) = class_of(&ev.cat) else {
            return;
        };
        // C1: an event without ts is skipped; dur < 0 is clamped to 0.
        let Some(ts) = ev.ts else {
            self.counts.no_ts += 1;
            return;
        };
        if ev.dur.is_some_and(|d| d.0 < 0) {
            self.counts.negative_dur_clamped += 1;
        }
        let dur = ev.dur_or_zero().0;
        let lane = self.lanes.intern(ev.lane());
        let name = self.names.intern(&ev.name);
        match class {
            Class::Host(cat) => {
                if ev.args.finished == Some(false) || ev.dur.is_none() {
                    self.counts.unfinished_host_ops += 1;
                }
                self.host.push(&HostOp {
                    lane,
                    ts: ts.0,
                    dur,
                    index: at.index,
                    name,
                    cat,
                });
            }
            Class::Runtime | Class::Activity(_) => {
                let (code, to) = match class {
                    Class::Activity(k) => (k, &mut self.acts),
                    _ => (0, &mut self.calls),
                };
                to.push(&Linked {
                    lane,
                    ts: ts.0,
                    dur,
                    index: at.index,
                    name,
                    code,
                    corr: ev.args.correlation,
                });
            }
        }
    }

    fn set_tokens(out: &mut TraceOps, tokens: Option<u64>, source: Option<&str>) {
        out.completion_tokens = tokens;
        out.tokens_source = source.map(str::to_string);
    }

    /// In `results.json`: the summary, thresholds and input counts; the
    /// rows (hundreds per trace) stay in the records and `ops -f json`.
    fn in_results(out: &TraceOps) -> InResults {
        let v = serde_json::json!({
            "units": out.units,
            "completion_tokens": out.completion_tokens,
            "thresholds": out.thresholds,
            "input": out.input,
            "summary": out.summary,
        });
        InResults::Nested(v)
    }

    fn finish(self, trace: &Finished<'_>) -> TraceOps {
        let mut out = measure::measure(self);
        out.path = trace.path.to_string();
        if let Some(e) = trace.error_text() {
            out.complete = false;
            out.error = Some(e);
        }
        out
    }
}

/// One row (O1, O7): a host op name, or the pseudo-row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpRow {
    /// `null` for the pseudo-row.
    pub cat: Option<String>,
    pub name: String,
    pub calls: u64,
    pub cpu_total_ns: i64,
    pub cpu_self_ns: i64,
    pub sync_ns: i64,
    pub host_ns: i64,
    pub runtime_self_ns: i64,
    pub launches_self: u64,
    pub graph_launches_self: u64,
    pub kernels_self: u64,
    pub memcpys_self: u64,
    pub memsets_self: u64,
    pub gpu_self_ns: i64,
    pub launches_total: u64,
    pub activities_total: u64,
    pub gpu_total_ns: i64,
    pub activities_top: u64,
    pub gpu_top_ns: i64,
    pub short_gpu_self: u64,
    pub long_runtime_self: u64,
    pub long_launch_delay_self: u64,
    pub launch_latency_ns_sum: i64,
    pub launch_latency_ns_median: Option<i64>,
    pub queue_delay_ns_sum: i64,
    pub first_launch_delay_ns_sum: i64,
    pub first_launch_delay_n: u64,
    pub launch_bound: Option<bool>,
}

/// `{sum, mean, median, min, max}` of a per-launch time (O9).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeStats {
    pub sum: i64,
    pub mean: Option<i64>,
    pub median: Option<i64>,
    pub min: Option<i64>,
    pub max: Option<i64>,
}

/// The queue delay's statistics, with the early starts (O6, D3).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueStats {
    pub sum: i64,
    pub mean: Option<i64>,
    pub median: Option<i64>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    /// Launches whose work started before the call returned.
    pub negative: u64,
    /// Σ max(0, queue delay) (HTA's clipped figure).
    pub sum_clipped: i64,
}

/// Launch statistics of a set of launches (O9).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchStats {
    pub launches: u64,
    pub activities: u64,
    pub cpu_ns: i64,
    pub gpu_ns: i64,
    pub launch_latency_ns: TimeStats,
    pub queue_delay_ns: QueueStats,
    pub short_gpu: u64,
    pub gpu_shorter_than_cpu: u64,
    pub long_runtime: u64,
    pub long_launch_delay: u64,
}

/// O9's launch statistics by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByKind {
    pub kernel: LaunchStats,
    pub graph: LaunchStats,
    pub memcpy: LaunchStats,
    pub memset: LaunchStats,
}

/// The summary (O9).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpsSummary {
    pub host_ops: u64,
    pub runtime_calls: u64,
    pub launches: u64,
    pub graph_launches: u64,
    pub activities: u64,
    pub activities_linked: u64,
    pub activities_unlinked: u64,
    pub kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    pub graph_kernels: u64,
    pub launches_without_op: u64,
    pub gpu_ns: i64,
    pub gpu_linked_ns: i64,
    pub gpu_unlinked_ns: i64,
    pub launch_stats: LaunchStats,
    pub launch_stats_by_kind: ByKind,
    pub launch_bound_gpu_share: Option<f64>,
    pub launch_bound_top_ops: Vec<String>,
    pub host_window_ns: i64,
    pub host_blocked_ns: i64,
    pub host_busy_ns: i64,
    pub host_busy_per_gpu: Option<f64>,
    pub gpu_idle_ns: i64,
    pub gpu_host_wait_ns: i64,
    pub host_wait_share_of_idle: Option<f64>,
    /// `"launch-bound"`, `"not launch-bound"`, or null without GPU work.
    pub verdict: Option<String>,
}

/// HTA's thresholds as used (O6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thresholds {
    pub short_gpu_cpu_max_ns: i64,
    pub long_runtime_ns: i64,
    pub long_launch_delay_ns: i64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            short_gpu_cpu_max_ns: SHORT_GPU_CPU_MAX_NS,
            long_runtime_ns: LONG_RUNTIME_NS,
            long_launch_delay_ns: LONG_LAUNCH_DELAY_NS,
        }
    }
}

/// The figures of one trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceOps {
    pub path: String,
    pub complete: bool,
    pub error: Option<String>,
    pub units: String,
    pub completion_tokens: Option<u64>,
    pub tokens_source: Option<String>,
    pub thresholds: Thresholds,
    pub input: InputCounts,
    pub summary: OpsSummary,
    /// Every row, in O1's order.
    pub ops: Vec<OpRow>,
    /// Names stored cut (over 4 KiB), for a note.
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub names_cut: u64,
}

impl TraceOps {
    /// The notes its bad-input counts make (each counted, never a panic).
    pub fn notes(&self) -> Vec<String> {
        let c = &self.input;
        let mut v = Vec::new();
        let mut say = |n: u64, what: &str| {
            if n > 0 {
                v.push(format!("{n} {what}"));
            }
        };
        say(c.no_ts, "events without ts skipped (no_ts, C1)");
        say(
            c.negative_dur_clamped,
            "events with dur < 0 clamped to 0 (negative_dur_clamped, C1)",
        );
        say(
            c.duplicate_runtime_correlation,
            "runtime calls carry a correlation an earlier call owns: the first owns it (duplicate_runtime_correlation, C3)",
        );
        say(
            c.unlinked_activities,
            "device activities have no runtime call with their correlation: GPU timeline only, never attributed (unlinked, C3)",
        );
        say(
            c.unfinished_host_ops,
            "host ops never end inside the trace (finished: false or no dur): kept with the duration written (O10)",
        );
        say(
            self.names_cut,
            "names longer than 4096 bytes are shown cut with a marker",
        );
        v
    }
}
