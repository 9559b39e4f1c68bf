//! `torchtrace roofline`: FLOPs, bytes, achieved TFLOP/s and TB/s per op
//! and shape, against the device's roof (issue 58).

use super::{Roofline, RooflineSpec};
use crate::cli_kit::{PerTraceArgs, TracesArg};
use clap::Args;

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # Every op with shapes on the H100's roof\n  torchtrace roofline tests/data/tracelens_h100_bert_small.json.gz\n\n  # An unknown device: give its peaks\n  torchtrace roofline --peak-tflops 989.5 --peak-tbps 3.35 TRACE\n\n  # Every row as JSON\n  torchtrace roofline -f json TRACE > roofline.json";

/// FLOPs, bytes, achieved TFLOP/s and TB/s per op and shape, against the
/// device's roof.
///
/// For every CPU op with a model and recorded shapes (record_shapes=True:
/// args "Input Dims", "Input type", "Concrete Inputs"), one row per name and
/// shape: FLOPs and bytes of one call (exact integers; TraceLens's formulas
/// where they are right), the GPU time of the kernels its calls launched
/// (exact ns), achieved TFLOP/s and TB/s, the device's peak, % of the roof
/// and the bound. GPU time without a model is listed, never dropped.
///
/// Definitions (integer ns from the decimal text; VIEWS.md rule ids):
///   launched by     a runtime call's activities (C3) go to the innermost
///                   enclosing op with a model on its thread (C4); else to
///                   the innermost op (unmodelled), else "(no enclosing op)"
///   calls           instances of the row that launched GPU work
///   intensity       flops / bytes of one call (FLOP/B)
///   TFLOP/s, TB/s   calls × flops (bytes) / gpu_ns / 10³
///   ridge           peak TFLOP/s of the row's precision / peak TB/s
///   bound           memory if intensity < ridge, else compute
///   % of peak       TB/s ÷ peak TB/s (memory-bound), TFLOP/s ÷ peak
///                   TFLOP/s (compute-bound): achieved ÷ the roof above it
///   precision       matrix ops (GEMM, SDPA, conv): their dtype's tensor-core
///                   peak (float: fp32); other ops: the fp32 vector peak
///
/// Exit status: 0 ok; 1 when a trace has no modelled op with GPU work (no
/// shapes recorded); 2 on unreadable input.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, after_help = EXAMPLES)]
pub struct RooflineArgs {
    #[command(flatten)]
    pub options: RooflineSpec,
}

impl PerTraceArgs for RooflineArgs {
    type Command = Roofline;
    const CAPTURES: bool = true;
    const TRACES: TracesArg = TracesArg {
        help: "Traces, each reported on its own. `-` reads stdin",
        value_names: &["TRACE"],
        exactly: None,
    };
    const CONTEXTS: bool = false;

    fn options(&self) -> &RooflineSpec {
        &self.options
    }
}
