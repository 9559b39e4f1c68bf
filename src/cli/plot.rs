//! `torchtrace plot`: the RQ4 figures (PNG and/or SVG) for one trace, an
//! AR/MTP pair, or several pairs.

use super::{analyze_all, note, Exit, GlobalArgs, ImageFormatArg};
use anyhow::{bail, Context};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use torchtrace::figures::{self, Measured, Pairing, PlotInput, DEFAULT_PLOT_CHAINS};
use torchtrace::hierarchy::Hierarchy;
use torchtrace::kernels::{Kernels, KernelsSpec};
use torchtrace::pair::Pair;
use torchtrace::runinfo::{Given, RunInfo};
use torchtrace::{HierarchyOptions, PairSpec, Plan};

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # The RQ4 figures of the samples\n  torchtrace plot sample_traces/*/dp0_*.pt.trace.json.gz -o figures\n\n  # One trace, SVG\n  torchtrace plot TRACE -o figs --image-format svg";

/// Draw the RQ4 figures for the traces given and write them to DIR.
///
/// Figures (same colours everywhere: AR blue, MTP orange, other grey):
///   fig1_span_distributions         CPU- and GPU-context spans per trace (box + every context)
///   fig2_gpu_span_timeline          GPU span against context index, per workload (warm-up, outliers)
///   fig3_tokens_and_span_per_token  tokens per context P and GPU span per token, S_context per pair
///   fig4_hierarchy_medians          median inclusive duration of the chain functions (Table 9)
///   fig5_cpu_vs_gpu_span            CPU span against GPU span per context (GPU- vs launch-bound)
///
/// Pairing: when every trace has a mode and a workload (--mode, the run
/// summary beside it: X.summary.json with "mode" and "workload", the step
/// name), traces are grouped by workload and the "ar" trace of each is the
/// baseline; otherwise consecutive traces pair up as baseline, candidate
/// (first = AR, second = MTP, as in `pair`).
/// The figures use the same numbers as `pair` and `hierarchy`.
///
/// Exit status: 0 ok; 1 when a trace lacks the selected context (figures
/// are still written); 2 on unreadable input or unwritable output.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, after_help = EXAMPLES)]
pub struct PlotArgs {
    /// Trace files: one, a baseline/candidate pair, or several pairs.
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Output directory (created if needed).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: PathBuf,
    /// Image format of the figures (the same flag on `batch`, `merge` and
    /// `ranks`; `-f`/`--format`, its older spellings, still work).
    #[arg(long, value_enum, default_value_t = ImageFormatArg::Png,
          alias = "format", short_alias = 'f')]
    pub image_format: ImageFormatArg,
    #[command(flatten)]
    pub contexts: super::ContextArgs,
    /// Completion tokens, once per trace in order (else the run summary
    /// beside the trace).
    #[arg(long, value_name = "N")]
    pub tokens: Vec<u64>,
    /// Mode of each trace, once per trace in order (ar, mtp, ...; else the
    /// run summary's "mode", else the step name, else baseline/candidate by
    /// position).
    #[arg(long, value_name = "MODE")]
    pub mode: Vec<String>,
    /// Call chain for figure 4, "a>b>c"; repeat for several
    /// [default: sample_tokens>propose_draft_token_ids>proposer.propose and execute_model]
    #[arg(long, value_name = "A>B>C")]
    pub chain: Vec<String>,
    /// Image width in pixels (200 to 8192).
    #[arg(long, value_name = "W", default_value_t = 1280, value_parser = clap::value_parser!(u32).range(1..=MAX_SIDE))]
    pub width: u32,
    /// Image height in pixels (150 to 8192).
    #[arg(long, value_name = "H", default_value_t = 800, value_parser = clap::value_parser!(u32).range(1..=MAX_SIDE))]
    pub height: u32,
}

/// The largest image side `--width`/`--height` accept, in pixels (the
/// smallest, 200×150, is the figures' own check): an 8192² RGB bitmap is 192 MiB (issue 17: 65536² panicked
/// inside plotters, 2³²−1 hung).
pub const MAX_SIDE: i64 = 8_192;

pub fn run(args: PlotArgs, global: &GlobalArgs) -> anyhow::Result<Exit> {
    let selector = args.contexts.selector()?;
    let n = args.traces.len();
    if args.tokens.len() > n {
        bail!(
            "--tokens given {} times for {n} trace(s)",
            args.tokens.len()
        );
    }
    if args.mode.len() > n {
        bail!("--mode given {} times for {n} trace(s)", args.mode.len());
    }
    let given: Vec<Given> = (0..n)
        .map(|i| Given {
            tokens: args.tokens.get(i).copied(),
            mode: args.mode.get(i).cloned(),
            summary: None,
        })
        .collect();
    if let Some(why) = torchtrace::runinfo::partial_tokens(&given, n) {
        bail!(why);
    }
    torchtrace::api::refuse_directories(&args.traces, "plot")?;
    let chains: Vec<String> = if args.chain.is_empty() {
        DEFAULT_PLOT_CHAINS.iter().map(|s| s.to_string()).collect()
    } else {
        args.chain.clone()
    };
    let hopts =
        HierarchyOptions::new(&chains, &[], false, 0, selector.clone()).context("bad --chain")?;
    // One pass feeds every analysis: the correlation ledger, pairing (spans
    // by correlation where a step has no GPU annotation) and the chains.
    let plan = Plan::new(selector)
        .reading(global.read_options())
        .with(KernelsSpec::default())
        .with(PairSpec::default())
        .with(hopts);
    let results = analyze_all(&args.traces, &plan, global)?;
    let mut measured = Vec::new();
    let mut problems = Vec::new();
    let mut exit = Exit::Ok;
    for (i, (res, path)) in results.iter().zip(&args.traces).enumerate() {
        let mut pairs = res.get::<Pair>().cloned().context("pairing ran")?;
        let run = RunInfo::for_trace(path, &given[i], &pairs.step_names)?;
        let t = run.tokens.as_ref();
        pairs.set_tokens(t.map(|t| t.value), t.map(|t| t.source.describe()));
        let mut kernels = res.get::<Kernels>().cloned();
        if let Some(k) = kernels.as_mut() {
            k.set_tokens(t.map(|t| t.value), t.map(|t| t.source.describe()));
        }
        if let Some(p) = &res.contexts.problem {
            eprintln!("torchtrace: {p}");
            exit = Exit::Problems;
        }
        for t in &pairs.notes {
            note(global, &format!("{}: {t}", pairs.path));
        }
        problems.push(res.contexts.problem.is_some());
        let hierarchy = Some(res.get::<Hierarchy>().context("hierarchy ran")?);
        measured.push(Measured {
            pairs,
            hierarchy,
            kernels,
            run,
        });
    }
    // A trace without the selected contexts (a CPU-only frontend trace, say)
    // is left out, unless no trace has any.
    if problems.contains(&false) {
        let mut left_out = problems.iter();
        measured.retain(|m| {
            let out = *left_out.next().unwrap_or(&false);
            if out {
                note(
                    global,
                    &format!("{}: left out of the figures", m.pairs.path),
                );
            }
            !out
        });
    }
    let input = PlotInput::build(measured, Pairing::Infer);
    if input.traces.iter().all(|t| t.functions.is_empty()) {
        note(global, "no hierarchy data: figure 4 shows an empty state");
    }
    let size = (args.width, args.height);
    let files = figures::render_all(&input, &args.out, args.image_format.into(), size)?;
    let mut stdout = super::stdout();
    for f in &files {
        writeln!(stdout, "{}", f.display())?;
    }
    if let Some(t) = input.traces.iter().find(|t| !t.pairs.complete) {
        bail!(
            "{}: {} (figures cover the events before it)",
            t.pairs.path,
            t.pairs.error.as_deref().unwrap_or("incomplete")
        );
    }
    Ok(exit)
}
