//! `torchtrace pair`: CPU/GPU step-context pairing and the RQ4 figures.

use super::{Pair, PairSpec};
use crate::cli_kit::{PerTraceArgs, TracesArg};
use clap::Args;

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # The AR/MTP pair of the samples: Table 8's figures and S_context\n  torchtrace pair sample_traces/text_ar/dp0*.gz sample_traces/text_mtp/dp0*.gz\n\n  # Every context as CSV, tokens given per trace\n  torchtrace pair --per-context -f csv --tokens 68 --tokens 68 AR.json.gz MTP.json.gz\n\n  # A trace from stdin\n  zcat trace.json.gz | torchtrace pair -";

/// Pair each step's CPU user_annotation with its gpu_user_annotation(s) by
/// External id and report the paper's figures; with two traces, compare
/// them (first = baseline/AR, second = candidate/MTP).
///
/// Figures (exact integer-ns arithmetic; ms in output):
///   contexts            selected CPU step annotations
///   pairs               contexts with ≥1 GPU annotation (same name and External id)
///   cpu_unpaired        contexts without any GPU annotation
///   gpu_unpaired        GPU annotations of the selected name(s) with no CPU twin
///   multi_stream_pairs  contexts with >1 GPU annotation (one per device/stream)
///   measured            contexts that got a GPU span (--gpu-span decides from where)
///   CPU span            the annotation's dur
///   GPU span            max(ts+dur) − min(ts) over its GPU annotations, as recorded;
///                       without any (auto), last − first GPU activity its launch
///                       calls caused, by correlation (see `torchtrace kernels`)
///   statistics          over measured contexts: median (even count: mean of the two
///                       middle values), mean, p10/p90 (linear interpolation), min, max, sum
///   tokens/context      P = completion tokens / measured contexts        (Eq. 15)
///   GPU span/token      Σ GPU spans / completion tokens                  (Eq. 16)
///   S_context           GPU span/token(baseline) / GPU span/token(candidate) (Eq. 17)
///   context reduction   (1 − P_baseline / P_candidate) × 100 %
///   median ratios       median span(candidate) / median span(baseline)
///
/// Completion tokens come from --tokens, else --summary, else the run
/// summary beside the trace (X.pt.trace.json.gz → X.summary.json, key
/// "completion_tokens"); without any, token figures are null.
///
/// Exit status: 0 ok; 1 when a trace lacks the selected context (the step
/// names it has are listed) or no context got a GPU span; 2 on unreadable input.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, after_help = EXAMPLES)]
pub struct PairArgs {
    /// Also list every selected context (start, CPU span, GPU span).
    #[arg(long)]
    pub per_context: bool,
    #[command(flatten)]
    pub options: PairSpec,
}

impl PerTraceArgs for PairArgs {
    type Command = Pair;
    const TRACES: TracesArg = TracesArg {
        help: "Traces: one, or two (baseline AR, then candidate MTP: compared), or more (side by side, e.g. the ranks of a run). `-` reads stdin",
        value_names: &["TRACE"],
        exactly: None,
    };

    fn options(&self) -> &PairSpec {
        &self.options
    }

    fn detail(&self) -> bool {
        self.per_context
    }
}
