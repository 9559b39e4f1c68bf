//! `torchtrace kernels`: the GPU work of each step context by launch →
//! activity correlation, the top kernels and the whole-trace GPU timeline.

use super::{note, Exit, FormatArg, GlobalArgs};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use torchtrace::api;
use torchtrace::kernels;

/// Follow each step context's launch calls (cudaLaunchKernel, cuLaunchKernel,
/// cudaGraphLaunch, cudaMemcpyAsync, … and their hip counterparts) to the
/// kernels, memcpys and memsets they caused, by `args.correlation`: the GPU
/// work of a step even when torch.compile or CUDA graphs leave it without a
/// GPU annotation. With two traces, compare them (first = baseline/AR).
///
/// Per context (a launch call lies in a context when it starts inside it on
/// the same pid/tid, start ≤ ts < end; exact integer ns):
///   launches         launch calls that caused ≥1 GPU activity
///   graph launches   of those, cudaGraphLaunch/cuGraphLaunch/hipGraphLaunch
///   GPU span         last activity end − first activity start
///   GPU busy         length of the union of the activity intervals (all streams)
///   GPU idle         span − busy
///   launch latency   activity start − its launch call's start (median per context)
/// Statistics are over the contexts with GPU work; per token = Σ over those
/// contexts / completion tokens. Top kernels: each kernel of the contexts
/// once, by name: calls, total, share of Σ GPU busy, median duration.
/// Timeline (whole trace, AMD TraceLens's definitions): total = last end −
/// first start of all GPU activities; busy = |∪ all|; idle = total − busy;
/// compute = |∪ kernels and memsets without "nccl" in the name|; exposed
/// communication = |∪ nccl ones − ∪ compute|; exposed memcpy = |∪ memcpys −
/// ∪ compute − ∪ communication|.
/// Comparison: S_context = GPU span per token (baseline / candidate); the
/// same by GPU busy; kernels per token ratio = candidate / baseline.
///
/// Exit status: 0 ok; 1 when a trace lacks the selected context or no
/// context launched GPU work; 2 on unreadable input.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct KernelsArgs {
    /// One trace, or two: baseline (AR) then candidate (MTP). `-` reads stdin.
    #[arg(required = true, num_args = 1..=2, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    #[command(flatten)]
    pub contexts: super::ContextArgs,
    /// Completion tokens, once per trace in order.
    #[arg(long, value_name = "N")]
    pub tokens: Vec<u64>,
    /// Run summary JSON ({"completion_tokens": N, ...}), once per trace in order.
    #[arg(long, value_name = "FILE")]
    pub summary: Vec<PathBuf>,
    /// How many kernels to list per trace.
    #[arg(long, default_value_t = kernels::DEFAULT_TOP, value_name = "N")]
    pub top: usize,
    /// Also list every selected context's GPU work.
    #[arg(long)]
    pub per_context: bool,
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = FormatArg::Table)]
    pub format: FormatArg,
}

pub fn run(args: KernelsArgs, global: &GlobalArgs) -> anyhow::Result<Exit> {
    let opts = api::KernelsOptions {
        selector: args.contexts.selector()?,
        given: super::given(args.traces.len(), &args.tokens, &args.summary)?,
        top: args.top,
        quiet: global.quiet,
    };
    let out = api::kernels(&args.traces, &opts)?;
    // Each trace's problem, then its notes (problems are never silenced).
    for i in 0..args.traces.len() {
        for p in out.problems.iter().filter(|p| p.trace == i) {
            eprintln!("torchtrace: {}", p.text);
        }
        for n in out.notes.iter().filter(|n| n.trace == i) {
            note(global, &n.text);
        }
    }
    let mut stdout = super::stdout();
    out.report
        .write(&mut stdout, args.format.into(), args.per_context)?;
    stdout.flush()?;
    super::incomplete(
        out.report
            .traces
            .iter()
            .map(|t| (t.path.as_str(), t.complete, t.error.as_deref())),
        "figures above",
    )?;
    Ok(Exit::of(&out))
}
