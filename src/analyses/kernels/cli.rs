//! `torchtrace kernels`: the GPU work of each step context by launch →
//! activity correlation, the top kernels and the whole-trace GPU timeline.

use crate::analyses::kernels;
use crate::cli_kit::{PerTraceArgs, TracesArg};
use clap::Args;

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # GPU work per token by launch correlation, AR vs MTP\n  torchtrace kernels sample_traces/text_ar/dp0*.gz sample_traces/text_mtp/dp0*.gz\n\n  # One row per step context\n  torchtrace kernels --per-context -f csv TRACE > contexts.csv";

/// Follow each step context's launch calls (cudaLaunchKernel, cuLaunchKernel,
/// cudaGraphLaunch, cudaMemcpyAsync, … and their hip counterparts) to the
/// kernels, memcpys and memsets they caused, by `args.correlation`: the GPU
/// work of a step even when torch.compile or CUDA graphs leave it without a
/// GPU annotation. With two traces, compare them (first = baseline/AR).
///
/// Per context (a launch call lies in a context when it starts inside it,
/// start ≤ ts < end, exact integer ns, on the same pid/tid, or with process
/// launch scope on any thread of the same pid; see --launch-scope). A launch
/// call lying in several selected contexts (ranges inside ranges, e.g.
/// --context-regex . or `## Call CompiledFxGraph ##` inside a step) counts
/// once, in the innermost: the one starting last (then ending first), as
/// Kineto gives a launch to the innermost user range; so rows add up to the
/// totals:
///   launches         launch calls that caused ≥1 GPU activity
///   graph launches   of those, cudaGraphLaunch/cuGraphLaunch/hipGraphLaunch
///   GPU span         last activity end − first activity start
///   GPU busy         length of the union of the activity intervals (all streams)
///   GPU idle         span − busy
///   launch latency   queue delay: first activity start − launch call end,
///                    clipped at 0 (median over the context's launch calls)
///   launch→start     activity start − launch call start over every activity,
///                    graph members included (median per context; JSON
///                    launch_to_activity_start_ms)
/// Statistics are over the contexts with GPU work; per token = Σ over those
/// contexts / completion tokens. Top kernels: each kernel of the contexts
/// once, by name: calls, total, share of Σ GPU busy, median duration.
/// Timeline (whole trace, AMD TraceLens's definitions): total = last end −
/// first start of all GPU activities; busy = |∪ all|; idle = total − busy;
/// compute = |∪ kernels and memsets without "nccl" in the name|; exposed
/// communication = |∪ nccl ones − ∪ compute|; exposed memcpy = |∪ memcpys −
/// ∪ compute − ∪ communication|.
/// Comparison: s_context_correlation = Σ GPU span by correlation per token,
/// baseline / candidate (Eq. 17 with correlation spans: `pair --gpu-span
/// correlation`'s S_context; `pair`'s S_context takes a context's GPU
/// annotations when it has them); s_context_busy = the same by Σ GPU busy;
/// kernels per token ratio = candidate / baseline.
///
/// Exit status: 0 ok; 1 when a trace lacks the selected context or no
/// context launched GPU work; 2 on unreadable input.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, after_help = EXAMPLES)]
pub struct KernelsArgs {
    #[command(flatten)]
    pub options: kernels::KernelsSpec,
    /// Also list every selected context's GPU work.
    #[arg(long)]
    pub per_context: bool,
}

impl PerTraceArgs for KernelsArgs {
    type Command = kernels::Kernels;
    const CAPTURES: bool = true;
    const TRACES: TracesArg = TracesArg {
        help: "Traces: one, or two (baseline AR, then candidate MTP: compared), or more (side by side, e.g. the ranks of a run). `-` reads stdin",
        value_names: &["TRACE"],
        exactly: None,
    };

    fn options(&self) -> &kernels::KernelsSpec {
        &self.options
    }

    fn detail(&self) -> bool {
        self.per_context
    }
}
