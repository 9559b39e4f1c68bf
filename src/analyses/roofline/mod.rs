//! `torchtrace roofline` (issue 58): for every op with recorded shapes,
//! FLOPs and bytes moved by its performance model ([`models`]), the GPU
//! time of the kernels it launched (exact ns), achieved TFLOP/s and TB/s,
//! the share of the device's roof ([`devices`]) and the bound (memory or
//! compute, by the ridge point). Ops without a model keep their GPU time in
//! `unmodelled`: nothing is dropped.
//!
//! ```text
//! thread T  [aten::linear ====================)                 not the launcher: addmm is inner
//!             [aten::addmm  [[768],[788,768],[768,768]] ==)     modelled: GEMM, M=788 N=768 K=768
//!                 cudaLaunchKernel c=9                          C4: innermost modelled encloser
//! GPU s 7              [sm90_xmma_gemm… c=9 ]                   its ns go to addmm's row
//! row (name, Input Dims, Input type, Concrete Inputs): calls, flops and bytes a call (exact),
//!     gpu_ns = Σ its kernels' dur → TFLOP/s = calls·flops / gpu_ns / 10³, TB/s likewise
//! ```
//!
//! The launch links are `ops`' (the neutral `crate::hostops`): each
//! activity's runtime call by correlation (C3), each call's innermost
//! enclosing op on its thread (C4, `hostops::contain`). Here the encloser
//! is, in this order: the innermost enclosing *composite* (attention,
//! convolution: its model covers its helpers, the `fill_` of flash
//! attention's buffer, cuDNN's bias `add_`, as TraceLens counts an op's
//! subtree), else the innermost *modelled* op (`aten::linear`'s kernel is
//! `aten::addmm`'s), else the innermost op (its name in `unmodelled`),
//! else "(no enclosing op)". Each call is given once: nothing counted
//! twice, nothing dropped.

pub mod args;
pub(crate) mod batch;
pub mod devices;
mod figure;
mod measure;
pub mod models;
mod resize;
pub mod view;

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(test)]
mod tests;

use crate::analysis::Use;
use crate::analysis::{Analysis, Configures, Finished};
use crate::hostops::store::{HostStore, HostUse};
use crate::model::Sym;
use crate::trace::{Event, EventPos, Prefilter};
use serde::{Deserialize, Serialize};

pub use devices::Device;
pub use models::Category;

/// The name of the pseudo-row of calls no op encloses.
pub const NO_OP: &str = "(no enclosing op)";

/// The tables' rows by default (`--top`, Python's `top`): defined once.
pub const DEFAULT_TOP: usize = 20;

/// Options of the roofline analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct RooflineSpec {
    /// Rows shown in the tables, by GPU time (JSON has every row).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N", default_value_t = DEFAULT_TOP))]
    pub top: usize,
    /// Peak TFLOP/s for every precision, replacing the device table's
    /// (0.001 to 1000000).
    #[cfg_attr(feature = "cli", arg(long, value_name = "TFLOPS"))]
    pub peak_tflops: Option<f64>,
    /// Peak memory bandwidth in TB/s (10¹² B/s), replacing the table's
    /// (0.001 to 10000).
    #[cfg_attr(feature = "cli", arg(long, value_name = "TBPS"))]
    pub peak_tbps: Option<f64>,
}

impl Default for RooflineSpec {
    fn default() -> Self {
        RooflineSpec {
            top: DEFAULT_TOP,
            peak_tflops: None,
            peak_tbps: None,
        }
    }
}

impl Configures for RooflineSpec {
    type Analysis = Roofline;
}

/// "No text" in a row key.
/// A shape text not recorded (the host store's [`crate::hostops::store::NO_TEXT`]).
const NONE: u32 = crate::hostops::store::NO_TEXT;

/// A row's key: the op's name and, for a modelled op, its `Input Dims`,
/// `Input type` and `Concrete Inputs` texts (else [`NONE`]).
type Key = (Sym, u32, u32, u32);

/// The state of one trace: nothing of its own while reading. The host
/// side — runtime calls, activities, host ops with the shapes of the
/// modelled ones, the step spans — is the per-trace host store's
/// ([`crate::hostops::store`]), which `roofline` reads at its finish.
#[derive(Debug, Default)]
pub struct Roofline {
    spec: RooflineSpec,
}

/// Whether the host store records an op's shapes: its name has a model.
fn modelled(name: &str) -> bool {
    models::category_of(name).is_some()
}

/// What it asks of the host store.
static ROOFLINE_HOST: HostUse = HostUse {
    host_ops: true,
    shapes: Some(modelled),
};

impl Analysis for Roofline {
    const NAME: &'static str = "roofline";
    const KEY: &'static str = "roofline";
    type Config = RooflineSpec;
    type Output = TraceRoofline;

    fn start(spec: &RooflineSpec) -> Self {
        Roofline { spec: spec.clone() }
    }

    /// Reads the host store, with the shapes of the modelled ops.
    fn collects(_spec: &RooflineSpec) -> Option<Use> {
        Some(Use::of::<HostStore>(&ROOFLINE_HOST, false))
    }

    /// The host store's events (C2): the store keeps them.
    fn prefilter(&self) -> Prefilter {
        crate::hostops::store::prefilter()
    }

    /// Nothing: the host store keeps what `roofline` reads (C1–C2).
    fn push(&mut self, _ev: &Event<'_>, _at: EventPos) {}

    /// Per-token sums once the run's completion tokens are known.
    fn set_tokens(out: &mut TraceRoofline, tokens: Option<u64>, source: Option<&str>) {
        out.completion_tokens = tokens;
        out.tokens_source = source.map(str::to_string);
        out.per_token = out.totals.per(tokens);
    }

    fn finish(self, trace: &Finished<'_>) -> TraceRoofline {
        // The graphs' capture traces (issue 57), as `ops` finds them:
        // `--capture`, else `capture_traces/` beside the trace file.
        let caps = crate::graphs::captures_of(trace);
        let store = trace.collected::<HostStore>().unwrap_or_default();
        let mut out = measure::measure(&self.spec, &store, &trace.meta.devices, &caps);
        out.path = trace.path.to_string();
        out.totals = RoofTotals::of(&out.rows);
        let steps = trace
            .steps
            .cpu
            .iter()
            .filter(|a| crate::steps::parse(trace.steps.names.resolve(a.name)).is_some())
            .count() as u64;
        out.steps = (steps > 0).then_some(steps);
        out.per_step = out.totals.per(out.steps);
        if let Some(e) = trace.error_text() {
            out.complete = false;
            out.error = Some(e);
        }
        out
    }
}

/// Memory or compute bound, by the ridge point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    Memory,
    Compute,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
        }
    }
}

/// One op and shape: a name with its recorded arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoofRow {
    pub name: String,
    /// The trace's `Input Dims`, `Input type` and `Concrete Inputs` as
    /// written (JSON arrays; `null` when absent).
    pub input_dims: serde_json::Value,
    pub input_types: serde_json::Value,
    pub concrete_inputs: serde_json::Value,
    pub category: Category,
    /// Its instances that launched GPU work.
    pub calls: u64,
    /// GPU activities they launched.
    pub kernels: u64,
    /// FLOPs and bytes of one call (TraceLens's `GFLOPS` × 10⁹ and `Data
    /// Moved (MB)` × 2²⁰), exact.
    pub flops: u128,
    pub bytes: u128,
    /// flops / bytes.
    pub intensity: Option<f64>,
    /// Σ duration of the activities its calls launched, exact ns.
    pub gpu_ns: i64,
    /// … of which replayed by CUDA/HIP graphs (its calls' launches
    /// captured, issue 57): its shapes are the capture trace's.
    #[serde(default)]
    pub gpu_graph_ns: i64,
    /// calls × flops / gpu_ns / 10³ (TFLOP/s); `null` when gpu_ns is 0.
    pub tflops_per_s: Option<f64>,
    /// calls × bytes / gpu_ns / 10³ (TB/s); `null` when gpu_ns is 0.
    pub tb_per_s: Option<f64>,
    /// The peak column it is held against (`fp32` for vector ops).
    pub precision: Option<String>,
    /// Peak TFLOP/s of that column, and the ridge point (peak FLOP/s ÷
    /// peak B/s, FLOP/B).
    pub peak_tflops: Option<f64>,
    pub ridge: Option<f64>,
    /// `memory` when intensity < ridge, else `compute`.
    pub bound: Option<Bound>,
    /// Achieved ÷ attainable (min(peak TFLOP/s, intensity × peak TB/s)),
    /// in %: the TB/s share of a memory-bound op, the TFLOP/s share of a
    /// compute-bound one.
    pub pct_of_peak: Option<f64>,
}

/// GPU time no model covers, per op name and reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnmodelledRow {
    pub name: String,
    /// `no model`, or why the model could not be applied.
    pub reason: String,
    pub calls: u64,
    pub kernels: u64,
    pub gpu_ns: i64,
}

/// The whole trace's GPU time, split.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoofSummary {
    /// Σ dur of every GPU activity (kernel, memcpy, memset).
    pub gpu_ns: i64,
    /// … of those linked to a runtime call (C3).
    pub gpu_linked_ns: i64,
    /// … of the rows with a model.
    pub modelled_gpu_ns: i64,
    /// … of `unmodelled`.
    pub unmodelled_gpu_ns: i64,
    /// Activities without a runtime call (C3): GPU time attributed to no op.
    pub unlinked_activities: u64,
    pub unlinked_gpu_ns: i64,
    pub rows: u64,
    /// GPU time of graph replays attributed to the ops that captured them
    /// (in the rows and `unmodelled`, not in their graph launch's op).
    #[serde(default)]
    pub gpu_graph_ns: i64,
}

/// Bad-input counts (each a note, never a panic or a division by zero).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoofCounts {
    /// Modelled ops that launched work without `Input Dims` (shapes not
    /// recorded): their time is in `unmodelled`.
    pub no_shapes: u64,
    /// … with `Input Dims` / `Input type` not the arrays Kineto writes.
    pub malformed_shapes: u64,
    /// … whose shapes do not fit the model (rank, missing argument).
    pub shape_mismatch: u64,
    /// … with a dtype of unknown size.
    pub unknown_dtype: u64,
    /// GPU activities of zero duration.
    pub zero_duration_activities: u64,
    /// Rows whose kernels took 0 ns in all: no rate.
    pub zero_duration_rows: u64,
    /// Device names in `deviceProperties` beyond the first, different
    /// from it (the first is used).
    pub other_devices: u64,
    /// Host-side bad input shared with `ops` (C1, C3, O10).
    pub input: crate::hostops::InputCounts,
}

/// The figures of one trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceRoofline {
    pub path: String,
    pub complete: bool,
    pub error: Option<String>,
    pub device: Device,
    pub summary: RoofSummary,
    /// Every op and shape with a model, by GPU time (desc).
    pub rows: Vec<RoofRow>,
    /// GPU time without a model, by GPU time (desc).
    pub unmodelled: Vec<UnmodelledRow>,
    pub counts: RoofCounts,
    /// The graph replays matched to their captures (issue 57; as `ops`').
    #[serde(default)]
    pub graphs: crate::graphs::GraphsSummary,
    /// Σ over the modelled rows of calls × FLOPs and bytes, and their GPU
    /// ns (exact).
    #[serde(default)]
    pub totals: RoofTotals,
    /// The trace's vLLM step annotations (`execute_…`), when it has any.
    #[serde(default)]
    pub steps: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub tokens_source: Option<String>,
    /// `totals` per completion token, when the tokens are known.
    #[serde(default)]
    pub per_token: Option<PerUnit>,
    /// `totals` per step annotation, when the trace has steps.
    #[serde(default)]
    pub per_step: Option<PerUnit>,
}

/// Σ over the modelled rows: calls × FLOPs, calls × bytes, GPU ns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoofTotals {
    pub flops: u128,
    pub bytes: u128,
    pub gpu_ns: i64,
}

impl RoofTotals {
    /// The rows' sums (saturating: shapes come from input).
    pub fn of(rows: &[RoofRow]) -> RoofTotals {
        let mut t = RoofTotals::default();
        for r in rows {
            let n = u128::from(r.calls);
            t.flops = t.flops.saturating_add(r.flops.saturating_mul(n));
            t.bytes = t.bytes.saturating_add(r.bytes.saturating_mul(n));
            t.gpu_ns = t.gpu_ns.saturating_add(r.gpu_ns);
        }
        t
    }

    /// Per `n` units (tokens, steps); `None` for 0.
    pub fn per(&self, n: Option<u64>) -> Option<PerUnit> {
        let n = n.filter(|&n| n > 0)? as f64;
        Some(PerUnit {
            flops: self.flops as f64 / n,
            bytes: self.bytes as f64 / n,
            gpu_ns: self.gpu_ns as f64 / n,
        })
    }
}

/// [`RoofTotals`] per unit, for display (f64).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerUnit {
    pub flops: f64,
    pub bytes: f64,
    pub gpu_ns: f64,
}

impl TraceRoofline {
    /// The notes its counts make.
    pub fn notes(&self) -> Vec<String> {
        let c = &self.counts;
        let mut v = c.input.notes(0);
        v.extend(self.graphs.said());
        let mut say = |n: u64, what: &str| {
            if n > 0 {
                v.push(format!("{n} {what}"));
            }
        };
        say(
            c.no_shapes,
            "op shapes with GPU work have no Input Dims (record_shapes off): their time is in unmodelled",
        );
        say(
            c.malformed_shapes,
            "op shapes have malformed Input Dims / Input type: their time is in unmodelled",
        );
        say(
            c.shape_mismatch,
            "op shapes do not fit their model (rank or missing argument): their time is in unmodelled",
        );
        say(
            c.unknown_dtype,
            "op shapes have a dtype of unknown size: their time is in unmodelled",
        );
        say(
            c.zero_duration_activities,
            "GPU activities last 0 ns (kept, they add nothing)",
        );
        say(
            c.zero_duration_rows,
            "rows ran 0 ns of GPU time in all: no rate (null)",
        );
        say(
            c.other_devices,
            "further devices in deviceProperties differ from the first: the first's peaks are used",
        );
        if self.device.name.is_none() {
            v.push("no device name in deviceProperties: give --peak-tflops and --peak-tbps for % of peak".into());
        } else if self.device.peak_tbps.is_none() || self.device.peak_tflops.is_empty() {
            v.push(format!(
                "device {:?} is not in the peaks table: figures without % of peak (give --peak-tflops and --peak-tbps)",
                self.device.name.as_deref().unwrap_or("")
            ));
        }
        v
    }
}

/// A row's GPU ns ÷ its trace's (every activity), for display.
pub(crate) fn share(r: &RoofRow, t: &TraceRoofline) -> Option<f64> {
    (t.summary.gpu_ns > 0).then(|| r.gpu_ns as f64 / t.summary.gpu_ns as f64)
}

/// `aten::mm [[1, 4096], [4096, 1024]]`: a row's name and shapes.
pub(crate) fn op_shape(r: &RoofRow) -> String {
    match &r.input_dims {
        serde_json::Value::Null => r.name.clone(),
        d => format!("{} {}", r.name, compact_dims(d)),
    }
}

/// Input Dims as written, without the empty entries' noise kept.
fn compact_dims(d: &serde_json::Value) -> String {
    d.to_string().replace(',', ", ")
}
