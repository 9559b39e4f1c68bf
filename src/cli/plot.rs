//! `torchtrace plot`: the RQ4 figures (PNG and/or SVG) for one trace, an
//! AR/MTP pair, or several pairs.

use super::{analyze_all, note, Exit, GlobalArgs, ImageFormatArg};
use anyhow::bail;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use torchtrace::figures::{self, Measured, Pairing, PlotInput};
use torchtrace::registry;
use torchtrace::runinfo::Given;

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # The RQ4 figures of the samples\n  torchtrace plot sample_traces/*/dp0_*.pt.trace.json.gz -o my_figures\n\n  # One trace, SVG\n  torchtrace plot TRACE -o figs --image-format svg";

/// Draw the RQ4 figures for the traces given and write them to DIR.
///
/// Figures (same colours everywhere: AR blue, MTP orange, other grey):
///   fig1_span_distributions         CPU- and GPU-context spans per trace (box + every context)
///   fig2_gpu_span_timeline          GPU span against context index, per workload (warm-up, outliers)
///   fig3_tokens_and_span_per_token  tokens per context P and GPU span per token, S_context per pair
///   fig4_hierarchy_medians          median inclusive duration of the chain functions (Table 9)
///   fig5_cpu_vs_gpu_span            CPU span against GPU span per context (GPU- vs launch-bound)
///   fig6_gpu_busy_per_token         GPU busy and idle per token, stacked; kernels per token
///
/// Pairing: when every trace has a mode and a workload (--mode, the run
/// summary beside it: X.summary.json with "mode" and "workload", the step
/// name), traces are grouped by workload and the "ar" trace of each is the
/// baseline; otherwise consecutive traces pair up as baseline, candidate
/// (first = AR, second = MTP, as in `pair`).
/// The figures use the same numbers as `pair`, `hierarchy` and `kernels`.
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
    #[command(flatten)]
    pub tokens: super::TokensArgs,
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
    if args.tokens.tokens.len() > n {
        bail!(
            "--tokens given {} times for {n} trace(s)",
            args.tokens.tokens.len()
        );
    }
    if args.mode.len() > n {
        bail!("--mode given {} times for {n} trace(s)", args.mode.len());
    }
    let given: Vec<Given> = (0..n)
        .map(|i| Given {
            tokens: args.tokens.tokens.get(i).copied(),
            mode: args.mode.get(i).cloned(),
            summary: None,
        })
        .collect();
    if let Some(why) = torchtrace::runinfo::partial_tokens(&given, n) {
        bail!(why);
    }
    torchtrace::api::refuse_directories(&args.traces, "plot")?;
    let plan = registry::plot_plan(selector, global.read_options(), &args.chain)?;
    let mut results = analyze_all(&args.traces, &plan, global)?;
    let mut runs = Vec::new();
    let mut exit = Exit::Ok;
    for (i, (res, path)) in results.iter_mut().zip(&args.traces).enumerate() {
        runs.push(figures::resolve(res, path, &given[i])?);
        if let Some(p) = &res.contexts.problem {
            eprintln!("torchtrace: {p}");
            exit = Exit::Problems;
        }
        for t in registry::plot_notes(&res.results) {
            note(global, &format!("{}: {t}", res.path));
        }
    }
    // A trace without the selected contexts (a CPU-only frontend trace, say)
    // is left out, unless no trace has any.
    let any_contexts = results.iter().any(|r| r.contexts.problem.is_none());
    let mut measured = Vec::new();
    let mut kept = Vec::new();
    for (res, run) in results.iter().zip(runs) {
        if any_contexts && res.contexts.problem.is_some() {
            note(global, &format!("{}: left out of the figures", res.path));
            continue;
        }
        kept.push(res);
        measured.push(Measured {
            path: res.path.clone(),
            results: &res.results,
            run,
        });
    }
    let input = PlotInput::build(measured, Pairing::Infer);
    for n in registry::input_notes(&input) {
        note(global, &n);
    }
    let size = (args.width, args.height);
    let fmt = args.image_format.into();
    let files = figures::render_all(&input, &registry::paper_figures(), &args.out, fmt, size)?;
    let mut stdout = super::stdout();
    for f in &files {
        writeln!(stdout, "{}", f.display())?;
    }
    if let Some((res, e)) = kept.iter().find_map(|r| Some((r, r.error.as_ref()?))) {
        bail!(
            "{}: {} (figures cover the events before it)",
            res.path,
            e.kind
        );
    }
    Ok(exit)
}
