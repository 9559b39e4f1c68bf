//! `torchtrace iterations`: where each generated token's time goes over the
//! whole decode loop, by phase (forward, sample, draft, other), AR vs MTP.

use super::{Iterations, IterationsSpec};
use crate::cli_kit::{PerTraceArgs, TracesArg};
use clap::Args;

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # The whole decode loop, AR vs MTP (P, S_wall, S_busy)\n  torchtrace iterations sample_traces/text_ar/dp0*.gz sample_traces/text_mtp/dp0*.gz\n\n  # Every iteration as JSON\n  torchtrace iterations --per-iteration -f json TRACE";

/// Measure each decode iteration (a step context up to the next step
/// annotation), split its GPU work into phases, and give per-token figures
/// and CUDA-graph facts; with two traces, compare them (first = AR).
///
/// Definitions (integer ns; sums exact):
///   iteration i     for the selected step contexts s_0..s_{n-1} (same selector
///                   as `pair`) on thread T: [start(s_i), b_i), b_i = start of
///                   the next step annotation of any kind (decode, prefill,
///                   mixed: any vLLM step name, or a selected name) on T.
///                   Without one the iteration is open: reported, not in means.
///   attribution     a launch call (runtime/driver call with GPU activity by
///                   correlation, graph launches included) on T starting in
///                   [start(s_i), b_i) belongs to iteration i, with all its
///                   kernels, memcpys and memsets.
///   phase           the innermost CPU range on T holding the launch (start ≤
///                   ts < end; innermost = latest start, then earliest end)
///                   among: s_i itself → forward; a user_annotation or
///                   python_function named in --sample-name → sample; in
///                   --draft-name → draft (a python_function's name also
///                   matches by its part after the last "): "); else other.
///   wall            b_i − start(s_i)
///   GPU busy        length of the union of the iteration's activities (all
///                   streams), in total and per phase
///   GPU idle        (last activity end − first activity start) − busy
///   per token       mean over closed iterations × n / T (T = completion
///                   tokens); with every iteration closed, Σ / T
///   graphs          a replay's signature = its activities' names ordered by
///                   start; equal signatures = one graph, numbered by first
///                   appearance from 0. Repeating graph = replayed in the most
///                   closed iterations (ties: larger Σ activity durations, then
///                   smaller number; --graph picks another). Cadence = median
///                   start-to-start interval of its consecutive replays (first
///                   activity start). Null without graph replays.
///   comparison      P = (T/n)_MTP / (T/n)_AR; S_wall, S_busy = per token
///                   AR / MTP; s_context_correlation = Σ GPU span of the
///                   launches inside the step contexts per token, AR / MTP
///                   (kernels' s_context_correlation; `pair`'s S_context takes
///                   GPU annotations when a context has them); C = mean busy per iteration MTP / AR;
///                   Δ_p = (B_MTP,p − B_AR,p) / B_AR (so C = 1 + Σ Δ_p);
///                   S_busy = P / C, and phase p gives back g_p = P·Δ_p / C of
///                   the token progress: Σ g_p = P − S_busy.
///
/// Exit status: 0 ok; 1 when a trace lacks the selected context, has no closed
/// iteration, or its iterations launched no GPU work; 2 on unreadable input.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, after_help = EXAMPLES)]
pub struct IterationsArgs {
    /// Also list every iteration.
    #[arg(long)]
    pub per_iteration: bool,
    #[command(flatten)]
    pub options: IterationsSpec,
}

impl PerTraceArgs for IterationsArgs {
    type Command = Iterations;
    const CAPTURES: bool = true;
    const TRACES: TracesArg = TracesArg {
        help: "Traces: one, or two (baseline AR, then candidate MTP: compared), or more (side by side, e.g. the ranks of a run). `-` reads stdin",
        value_names: &["TRACE"],
        exactly: None,
    };

    fn options(&self) -> &IterationsSpec {
        &self.options
    }

    fn detail(&self) -> bool {
        self.per_iteration
    }
}
