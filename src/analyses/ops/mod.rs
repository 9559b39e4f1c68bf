//! Which CPU operator launched which GPU work, and is the run launch-bound
//! (`torchtrace ops`, issue 34), with the definitions of
//! `docs/VIEWS.md` rules C1–C7 and O1–O10 (cited as `C4`, `O6`, …).
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
//! What is kept while reading is the per-trace host store's
//! ([`crate::hostops::store`], held once for `ops`, `roofline` and `idle`;
//! C1–C2 through [`crate::hostops::HostLinks`], shared with `export`):
//! every runtime call with its correlation and every device activity with
//! its (device, stream) and correlation, ≈ 10 B an event; and every host
//! op (`cpu_op`, `user_annotation`, `python_function`, `Operator`) as its
//! thread's sorted runs under its form (≈ 7 B an op), each form mapped to
//! its row (O1) at the finish. `ops` finishes last among the store's users
//! and consumes it when no other holds it. The ledger is not
//! used: it keeps neither an activity's stream (I2–I3 need it) nor the
//! runtime calls that launch nothing (O5's runtime and sync times need
//! them). Kineto writes an activity's `pid`/`tid` as its `args.device` /
//! `args.stream` (equal on every fixture: the reader keeps no other args),
//! so (pid, tid) is the stream (C2).
//!
//! At the end (`measure`): the launch links by correlation (C3,
//! `hostops::launch`), the containment queries per thread in O(n log n)
//! (C4–C5, `hostops::contain`), the rows (O1–O8), the GPU gaps (I2–I3,
//! [`gaps`]) and the summary (O9).

mod acts;
pub(crate) mod batch;
mod exact;
pub mod gaps;
mod graphs;
mod graphs_batch;
mod inclusive;
pub(crate) mod measure;
pub mod modules;
mod rowset;
mod summary;
mod sweep;
mod tally;
pub mod view;

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(test)]
mod tests;

use crate::analysis::Use;
use crate::analysis::{Analysis, Configures, Finished, InResults};
use crate::hostops::store::{HostStore, HostUse};
pub use crate::hostops::{InputCounts, HOST_CATEGORIES, RUNTIME_CATEGORIES};
use crate::trace::{Event, EventPos, Prefilter};
pub use modules::GroupBy;
use serde::{Deserialize, Serialize};

/// HTA's thresholds (O6), exact ns.
pub const SHORT_GPU_CPU_MAX_NS: i64 = 50_000;
pub const LONG_RUNTIME_NS: i64 = 50_000;
pub const LONG_LAUNCH_DELAY_NS: i64 = 100_000;

/// The name of O1's pseudo-row.
pub const NO_OP: &str = "(no enclosing op)";

/// The tables' rows by default (`--top`, Python's `top`).
pub const DEFAULT_TOP: usize = 20;

/// Options of the ops analysis (the table's, none change a figure).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct OpsSpec {
    /// Rows shown in the tables (the rest summed in one row; JSON has
    /// every row).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N", default_value_t = DEFAULT_TOP))]
    pub top: usize,
    /// The tables' row order: gpu_self (O1's order), gpu_top, host, calls,
    /// cpu_self (the host ops' own CPU time).
    #[cfg_attr(feature = "cli", arg(long, value_enum, default_value_t = SortBy::default()))]
    pub sort: SortBy,
    /// The op table's rows: `op` (one per host op), or `module`: the graph
    /// replays' GPU time by the nn.Module path that captured it (from the
    /// capture traces' stacks).
    #[cfg_attr(feature = "cli", arg(long, value_enum, default_value_t = GroupBy::default()))]
    pub by: GroupBy,
}

impl Default for OpsSpec {
    fn default() -> Self {
        OpsSpec {
            top: DEFAULT_TOP,
            sort: SortBy::default(),
            by: GroupBy::default(),
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
    /// CPU self time (O5's `cpu_self_ns`): where the host's own time goes.
    #[cfg_attr(feature = "cli", value(name = "cpu_self"))]
    CpuSelf,
}

impl SortBy {
    /// The flag's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SortBy::GpuSelf => "gpu_self",
            SortBy::GpuTop => "gpu_top",
            SortBy::Host => "host",
            SortBy::Calls => "calls",
            SortBy::CpuSelf => "cpu_self",
        }
    }
}

impl Configures for OpsSpec {
    type Analysis = Ops;
}

/// The state of one trace: nothing of its own while reading. The host
/// side — runtime calls, activities, host ops as each thread's sorted
/// runs, the step spans — is the per-trace host store's
/// ([`crate::hostops::store`]), held once for every analysis of the plan;
/// `ops` finishes last among its users and consumes it when no other
/// holds it.
#[derive(Debug, Default)]
pub struct Ops;

/// What it asks of the host store.
static OPS_HOST: HostUse = HostUse {
    host_ops: true,
    shapes: None,
};

impl Analysis for Ops {
    const NAME: &'static str = "ops";
    const KEY: &'static str = "ops";
    type Config = OpsSpec;
    type Output = TraceOps;

    fn start(_spec: &OpsSpec) -> Self {
        Ops
    }

    /// The host store's, consumed when no other finish holds it.
    fn collects(_spec: &OpsSpec) -> Option<Use> {
        Some(Use::of::<HostStore>(&OPS_HOST, true))
    }

    /// The host store's events (C2): the store keeps them.
    fn prefilter(&self) -> Prefilter {
        crate::hostops::store::prefilter()
    }

    /// Nothing: the host store keeps what `ops` reads (C1–C2).
    fn push(&mut self, _ev: &Event<'_>, _at: EventPos) {}

    fn set_tokens(out: &mut TraceOps, tokens: Option<u64>, source: Option<&str>) {
        out.completion_tokens = tokens;
        out.tokens_source = source.map(str::to_string);
    }

    /// In `results.json`: the summary, thresholds, input counts and the
    /// graphs (issue 57: replays, by subsystem and by module); the rows
    /// (hundreds per trace) stay in the records and `ops -f json`.
    fn in_results(out: &TraceOps) -> InResults {
        let v = serde_json::json!({
            "units": out.units,
            "completion_tokens": out.completion_tokens,
            "thresholds": out.thresholds,
            "input": out.input,
            "summary": out.summary,
            "graphs": out.graphs,
        });
        InResults::Nested(v)
    }

    fn finish(self, trace: &Finished<'_>) -> TraceOps {
        // The graphs' capture traces (issue 57): `--capture`, else
        // `capture_traces/` beside the trace file (none for stdin or an
        // archive member: `batch`'s label is not a path on disk).
        let caps = crate::graphs::captures_of(trace);
        let mut out = match trace.collected::<HostStore>() {
            Some(store) => measure::measure(store, &caps),
            None => measure::measure(Default::default(), &caps),
        };
        out.path = trace.path.to_string();
        out.reader_notes = trace.meta.notes.clone();
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
    /// Replayed graph activities this op launched at capture time (its
    /// launcher in the capture trace, issue 57), and their GPU ns.
    #[serde(default)]
    pub graph_activities: u64,
    #[serde(default)]
    pub gpu_graph_ns: i64,
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
    /// Exact in i128, as the host and idle sums below.
    pub gpu_ns: i128,
    pub gpu_linked_ns: i128,
    pub gpu_unlinked_ns: i128,
    pub launch_stats: LaunchStats,
    pub launch_stats_by_kind: ByKind,
    pub launch_bound_gpu_share: Option<f64>,
    pub launch_bound_top_ops: Vec<String>,
    /// Exact in i128 (sums over threads and streams can pass i64).
    pub host_window_ns: i128,
    pub host_blocked_ns: i128,
    pub host_busy_ns: i128,
    pub host_busy_per_gpu: Option<f64>,
    pub gpu_idle_ns: i128,
    pub gpu_host_wait_ns: i128,
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
    /// The graph replays matched to their captures (issue 57).
    #[serde(default)]
    pub graphs: crate::graphs::GraphsSummary,
    /// Names stored cut (over 4 KiB), for a note.
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub names_cut: u64,
    /// The reader's notes on the trace (`Meta::notes`: a second
    /// `traceEvents` key, correlation ids past i128), said with its own.
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub reader_notes: Vec<String>,
}

impl TraceOps {
    /// The notes its bad-input counts make (each counted, never a panic).
    pub fn notes(&self) -> Vec<String> {
        let mut v = self.reader_notes.clone();
        v.extend(self.input.notes(self.names_cut));
        v.extend(self.graphs.said());
        v.extend(at_the_limit(self));
        v
    }
}

/// `ops` adds some sums of ns (rows' CPU, GPU, runtime and launch-delay
/// sums; the summary's launch statistics) in i64 with saturation (the
/// summary's GPU, host-window and idle sums are exact i128). A figure at i64's limit is a sum
/// that passed it (or landed exactly on it): one note names each (its
/// path in the JSON, a row by its name), never a silent clamp.
fn at_the_limit(t: &TraceOps) -> Option<String> {
    fn walk(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Number(n)
                if n.as_i64().is_some_and(|x| x == i64::MAX || x == i64::MIN) =>
            {
                out.push(path.to_string());
            }
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    walk(x, &format!("{path}.{k}"), out);
                }
            }
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    let at = match x.get("name").and_then(|n| n.as_str()) {
                        Some(name) => format!("{path}[{name:?}]"),
                        None => format!("{path}[{i}]"),
                    };
                    walk(x, &at, out);
                }
            }
            _ => {}
        }
    }
    // The summary's GPU, host and idle sums are exact in i128; its launch
    // statistics and the rows still saturate. Each part on its own, so a
    // summary past u64 (no JSON value holds it) keeps the rows' note.
    let mut hits = Vec::new();
    if let Ok(v) = serde_json::to_value(&t.summary) {
        walk(&v, "summary", &mut hits);
    }
    if let Ok(v) = serde_json::to_value(&t.ops) {
        walk(&v, "ops", &mut hits);
    }
    let first = hits.first()?;
    let more = match hits.len() {
        1 => String::new(),
        n => format!(
            " and {} more ({})",
            n - 1,
            hits[1..hits.len().min(6)].join(", ")
        ),
    };
    Some(format!(
        "{first}{more}: a sum of ns at the i64 limit ({} ns): it passed i64 and is shown saturated (its true value is beyond)",
        i64::MAX
    ))
}
