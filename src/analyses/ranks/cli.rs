//! `torchtrace ranks`: the traces of a multi-rank run side by side — per
//! vLLM step, which rank made the others wait, and how long.

use super::{Ranks, RanksSpec};
use crate::cli_kit::{note, GlobalArgs, ImageFormatArg, PerTraceArgs, RunFlags, TracesArg};
use clap::Args;
use std::path::PathBuf;

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # The ranks of the TP=2 run: collectives aligned, stragglers\n  torchtrace ranks tests/data/tp2/ar_plain/\n\n  # Per step, with figures\n  torchtrace ranks --per-step --plot figs RANK0.json.gz RANK1.json.gz";

/// Group rank traces into runs, align their decode steps, match their
/// collectives and find the stragglers: per step, the rank the others
/// waited for, and how long.
///
/// Definitions (integer ns, every rank's times minus its applied offset):
///   run             traces in one directory with one name prefix; the rank from
///                   --rank-regex, vLLM's name ([prefix_]dp…_tp…_rank<r>.<ns> or
///                   <id>-rank-<r>) or distributedInfo.rank. The k-th file of each
///                   rank (by the name's time stamp) is profiler cycle k.
///   steps           the selected step contexts (decode steps by default, as
///                   `pair`), aligned by ordinal across the ranks while their
///                   names agree (the name encodes the scheduler output). Other
///                   vLLM step annotations (prefill, mixed) are aligned apart.
///   collectives     GPU activities whose name matches nccl|rccl|
///                   cross_device_reduce|all_?reduce|all_?gather|reduce_?scatter|
///                   all_?to_?all|custom_?ar (case-insensitive; --collective adds
///                   patterns), attributed to a step by launch correlation (graph
///                   replays included, innermost range first, as `kernels`),
///                   sorted by start. The k-th of step i is matched across ranks
///                   (the fewest any rank has).
///   clock offset    of rank r: lower median over matched collectives of
///                   end_r − end_ref (ref = lowest rank); spread = lower median
///                   |difference − offset|. Credible: ≥ 8 matches, spread ≤ 20 µs.
///                   --align auto subtracts credible offsets; none keeps clocks.
///   wait            of rank r at a collective: latest start − start_r; of a
///                   step: Σ over its collectives. Arrival = start_r − earliest.
///   straggler       of a step: the rank whose last arrivals imposed the most
///                   (Σ latest − earliest start where it came last; ties: lowest
///                   rank). Delay = the largest wait of the other ranks.
///   flagged         delay > threshold = --threshold-us, or max(--floor-us,
///                   --floor-step-pct % of the run's median decode-step GPU span,
///                   median + --mad-k·MAD of the step delays).
///   per rank        wait = Σ over aligned decode steps; per token = wait / the
///                   run's completion tokens; share = wait / Σ GPU span of its
///                   aligned decode steps.
///
/// Exit status: 0 ok; 1 when a trace lacks the selected context; 2 on bad
/// arguments or when a trace could not be read to its end (the other ranks
/// are still reported).
// Its doc comments are its --help text, verbatim: not rustdoc markup.
#[allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, after_help = EXAMPLES)]
pub struct RanksArgs {
    /// Also list every aligned decode step.
    #[arg(long)]
    pub per_step: bool,
    #[command(flatten)]
    pub options: RanksSpec,
    /// Also draw each run's figure (rank × step heatmap of arrival delay,
    /// stragglers marked; wait per token per rank) into DIR as
    /// ranks_<run>.png|svg.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Image format of --plot's figures (the same flag on `plot`, `batch`
    /// and `merge`; `--plot-format`, its older spelling, still works).
    #[arg(long, value_enum, default_value_t = ImageFormatArg::Png, alias = "plot-format")]
    pub image_format: ImageFormatArg,
}

impl PerTraceArgs for RanksArgs {
    type Command = Ranks;
    const TRACES: TracesArg = TracesArg {
        help: "Rank traces, or directories holding them (any number, any runs)",
        value_names: &["TRACE|DIR"],
        exactly: None,
    };
    const RUN: RunFlags = RunFlags::None;

    fn options(&self) -> &RanksSpec {
        &self.options
    }

    fn detail(&self) -> bool {
        self.per_step
    }

    /// `--plot DIR`: the runs' figures, once the report is printed.
    fn after(&self, report: &super::view::RanksReport, global: &GlobalArgs) -> anyhow::Result<()> {
        let Some(dir) = &self.plot else {
            return Ok(());
        };
        let fmt = self.image_format.into();
        let files = super::figure::render_runs(&report.runs, dir, fmt, (1400, 800))?;
        for f in files {
            note(global, &format!("wrote {}", f.display()));
        }
        Ok(())
    }
}
