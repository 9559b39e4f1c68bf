//! `torchtrace critical`: what set each iteration's length — host, launch,
//! GPU or sync — by a backward walk through the iteration.

use super::{Critical, CriticalSpec};
use crate::cli_kit::{PerTraceArgs, TracesArg};
use clap::Args;

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # What set the length of each iteration, AR vs MTP\n  torchtrace critical sample_traces/text_ar/dp0*.gz sample_traces/text_mtp/dp0*.gz\n\n  # Every iteration's parts as CSV\n  torchtrace critical --per-iteration -f csv sample_traces/text_graphs_mtp/dp0*.gz";

/// Walk each iteration back from its end and split its wall time into the
/// parts that set it: host work, launch latency, GPU work, and the time a
/// blocking sync took to return. The parts add up to the iteration exactly.
///
/// Definitions (docs/VIEWS.md P1–P6; integer ns, no rounding):
///   window (P1)     C8's iteration: a step annotation up to the next one
///                   on its thread (vLLM steps, else ProfilerStep#N); the
///                   last is open (null). --window NAME: each CPU user
///                   annotation named NAME over its own interval
///   host (P3)       from the cursor on the host thread back to the end of
///                   the latest blocking sync-like call (C7) ending there;
///                   without one, to the window's start. A sync whose
///                   activity had ended before the call started did not
///                   block: its time is host
///   sync (P3)       the sync's end back to the end of the activity it
///                   waited for: the last activity (any stream) ending at
///                   or before the sync's end
///   gpu (P4)        each activity on the path, its own time; and when it
///                   was queued (its launch submitted — an async call's
///                   end, a sync call's start — at or before its stream
///                   predecessor's end) the gap down to that predecessor,
///                   where the walk goes on; graph replays alike
///   launch (P4)     an activity not queued: its launch call's start to
///                   its start; the walk goes back to the host at the call
///   cut (P5)        a segment crossing the window's start is cut there
///   per token (P6)  over decode iterations (vLLM: no context request;
///                   ProfilerStep: all): Σ over closed ones ÷ their count
///                   × all decode iterations ÷ completion tokens
///
/// Exit status: 0 ok; 1 when a trace has no closed iteration; 2 on
/// unreadable input.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, after_help = EXAMPLES)]
pub struct CriticalArgs {
    /// Also list every iteration in the table.
    #[arg(long)]
    pub per_iteration: bool,
    #[command(flatten)]
    pub options: CriticalSpec,
}

impl PerTraceArgs for CriticalArgs {
    type Command = Critical;
    const TRACES: TracesArg = TracesArg {
        help: "Traces: one, or two (baseline AR, then candidate MTP: compared), or more (side by side). `-` reads stdin",
        value_names: &["TRACE"],
        exactly: None,
    };
    const CONTEXTS: bool = false;

    fn options(&self) -> &CriticalSpec {
        &self.options
    }

    fn detail(&self) -> bool {
        self.per_iteration
    }
}
