//! `torchtrace kernels`: the GPU work of each step context by launch →
//! activity correlation, the top kernels and the whole-trace GPU timeline.

use super::pair::{resolve_tokens, short, TokenSource};
use super::{note, Exit, GlobalArgs};
use crate::analysis::{analyze_path, Plan};
use crate::kernels::view::{self, KernelsReport};
use crate::kernels::{self, KernelsSpec, TraceKernels};
use crate::report::{self, Format};
use anyhow::{bail, Context};
use clap::Args;
use rayon::prelude::*;
use std::io::Write;
use std::path::PathBuf;

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
    #[arg(long, short = 'f', value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// Where each trace's completion tokens come from.
fn token_sources(args: &KernelsArgs) -> anyhow::Result<Vec<TokenSource>> {
    let n = args.traces.len();
    for (flag, given) in [
        ("--tokens", args.tokens.len()),
        ("--summary", args.summary.len()),
    ] {
        if given > n {
            bail!("{flag} given {given} times for {n} trace(s)");
        }
    }
    Ok((0..n)
        .map(|i| match (args.tokens.get(i), args.summary.get(i)) {
            (Some(&t), _) => TokenSource::Given(t),
            (None, Some(p)) => TokenSource::SummaryFile(p.clone()),
            (None, None) => TokenSource::Beside,
        })
        .collect())
}

pub fn run(args: KernelsArgs, global: &GlobalArgs) -> anyhow::Result<Exit> {
    let selector = args.contexts.selector()?;
    let tokens = token_sources(&args)?;
    let plan = Plan::new(selector).with(KernelsSpec { top: args.top });
    let results: Vec<anyhow::Result<(TraceKernels, Option<String>)>> = args
        .traces
        .par_iter()
        .zip(tokens.par_iter())
        .map(|(path, tok)| {
            let progress = crate::progress::FileProgress::new(path, global.quiet);
            let res = analyze_path(path, progress.counter(), &plan);
            progress.finish();
            if res.unreadable() {
                if let Some(e) = res.error {
                    return Err(e.into());
                }
            }
            let problem = res.contexts.problem.map(|p| p.to_string());
            let mut k = res.kernels.context("the kernels analysis ran")?;
            let (t, src) = resolve_tokens(tok, path)?;
            k.set_tokens(t, src);
            Ok((k, problem))
        })
        .collect();
    let mut traces = Vec::new();
    let mut exit = Exit::Ok;
    for res in results {
        let (k, problem) = res?;
        if let Some(p) = problem {
            eprintln!("torchtrace: {p}");
            exit = Exit::Problems;
        } else if k.contexts_with_gpu_work == 0 && k.complete {
            eprintln!(
                "torchtrace: {}: none of the {} contexts launched GPU work that the trace recorded",
                k.path, k.contexts
            );
            exit = Exit::Problems;
        }
        for n in &k.notes {
            note(global, &format!("{}: {n}", k.path));
        }
        traces.push(k);
    }
    let comparison = (traces.len() == 2).then(|| kernels::compare(&traces[0], &traces[1]));
    let out = KernelsReport { traces, comparison };
    let labels: Vec<String> = out.traces.iter().map(|t| short(&t.path)).collect();
    let tables = view::human_tables(&out, &labels, args.per_context);
    let csv = view::csv_tables(&out);
    let mut stdout = std::io::stdout().lock();
    if args.format == Format::Json && args.per_context {
        report::render(
            &mut stdout,
            args.format,
            &view::json_with_rows(&out),
            &tables,
            &csv,
        )?;
    } else {
        report::render(&mut stdout, args.format, &out, &tables, &csv)?;
    }
    stdout.flush()?;
    if let Some(t) = out.traces.iter().find(|t| !t.complete) {
        bail!(
            "{}: {} (figures above cover the events before it)",
            t.path,
            t.error.as_deref().unwrap_or("incomplete")
        );
    }
    Ok(exit)
}
