//! `torchtrace hierarchy`: containment chains and inclusive-duration tables.

use super::{ChainsSpec, Hierarchy};
use crate::cli_kit::{PerTraceArgs, RunFlags, TracesArg};
use clap::Args;

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # Median inclusive durations along the MTP chain (Table 9)\n  torchtrace hierarchy sample_traces/text_mtp/dp0*.gz\n\n  # A shorter chain, as CSV\n  torchtrace hierarchy --chain 'sample_tokens>propose_draft_token_ids' -f csv TRACE";

/// Verify that events nest along chains `a>b>c` (every b inside some a,
/// every c inside some b) and report call counts and inclusive durations;
/// with two traces, median ratios (second / first, e.g. MTP / AR).
///
/// Matching (a chain element E; default categories cpu_op, user_annotation,
/// python_function, Operator):
///   the event name equals E; or a python_function's function part (after
///   the last "): ", e.g. "gpu_model_runner.py(4270): sample_tokens") equals
///   E; or E is "re:RE" and RE matches somewhere in the name.
///
/// Figures (exact integer-ns arithmetic; ms in output):
///   children               events matching the child element
///   contained              children lying in some parent event: same pid/tid
///                          (unless --any-thread), P.start ≤ C.start and
///                          C.end ≤ P.end, P not C itself
///   uncontained            children − contained (examples listed)
///   parents_without_child  parent events holding no child event
///   calls                  events matching the element
///   outermost_calls        calls not lying in another call of the same element
///                          (identical intervals: the earlier in the file is outer)
///   median/mean/p90/min/max/total
///                          inclusive durations (dur) of the outermost calls
///   calls/context          outermost_calls / step contexts (as `pair` selects them)
///   kernels/call           GPU kernels launched by the outermost calls (launch
///                          calls starting inside a call on its thread, joined to
///                          GPU activities by correlation) / outermost calls
///   GPU busy median        median over outermost calls of the union of the GPU
///                          activities each launched
///   GPU busy/token         Σ GPU busy of the outermost calls / completion tokens
///                          (--tokens, else the run summary beside the trace)
///
/// Exit status: 0 every link holds; 1 some link has uncontained children;
/// 2 on unreadable input or bad arguments.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, after_help = EXAMPLES)]
pub struct HierarchyArgs {
    #[command(flatten)]
    pub options: ChainsSpec,
}

impl PerTraceArgs for HierarchyArgs {
    type Command = Hierarchy;
    const TRACES: TracesArg = TracesArg {
        help: "Trace files (`-` reads stdin). With two: baseline (AR) then candidate (MTP)",
        value_names: &["TRACE"],
        exactly: None,
    };
    const RUN: RunFlags = RunFlags::Tokens;

    fn options(&self) -> &ChainsSpec {
        &self.options
    }
}
