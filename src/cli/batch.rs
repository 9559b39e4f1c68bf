//! `torchtrace batch`: a whole campaign (directories, archives) in one go.

use super::{note, Exit, FormatArg, GlobalArgs, ImageFormatArg};
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use torchtrace::batch::{self, output, BatchOptions, Manifest};
use torchtrace::plot::DEFAULT_PLOT_CHAINS;
use torchtrace::HierarchyOptions;

/// Analyse every trace of a benchmark campaign — directories (recursive),
/// .tar, .tar.gz/.tgz and .zip archives (read as streams, never
/// extracted), or trace files — in parallel, compare AR with MTP within
/// each workload, and write the paper's tables and figures to OUTDIR.
///
/// vLLM's layout is understood: worker traces *.pt.trace.json[.gz] are
/// analysed; frontend traces *.async_llm.*, capture_traces/ and
/// profiler_out*.txt are listed but not analysed; *.summary.json run
/// summaries give completion tokens, mode and workload. Anything else is
/// listed as skipped: every input file appears in traces.csv.
///
/// Tokens, mode and workload of a trace: its run summary
/// ("completion_tokens", "mode", "workload"), else --manifest, else (mode)
/// the step name (generation_1(1) → ar, generation_1(k+1) → mtp) and
/// (workload) the directory's name.
///
/// OUTDIR gets results.json, traces.csv, workloads.csv/.md (Table 8),
/// hierarchy.csv/.md (Table 9), figures/ and report.md. Stdout gets a
/// Markdown summary (or --format).
///
/// Exit status: 0 ok; 1 when some input failed (each is reported with
/// its reason; the rest complete); 2 on bad arguments or an unwritable
/// OUTDIR.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct BatchArgs {
    /// Directories, archives (.tar, .tar.gz, .tgz, .zip) or trace files.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Output directory (created if needed).
    #[arg(long, short = 'o', value_name = "OUTDIR")]
    pub out: PathBuf,
    /// CSV with columns path,mode,workload,completion_tokens, used where a
    /// trace has no run summary (path: the trace's path as listed, or a
    /// trailing part of it).
    #[arg(long, value_name = "CSV")]
    pub manifest: Option<PathBuf>,
    #[command(flatten)]
    pub contexts: super::ContextArgs,
    /// Call chain for the hierarchy tables (Table 9), "a>b>c" outermost
    /// first; repeat for several [default:
    /// sample_tokens>propose_draft_token_ids>proposer.propose and execute_model]
    #[arg(long, value_name = "A>B>…")]
    pub chain: Vec<String>,
    /// What to print on stdout.
    #[arg(long, short = 'f', value_enum, default_value_t = FormatArg::Markdown)]
    pub format: FormatArg,
    /// Image format of the figures.
    #[arg(long, value_enum, default_value_t = ImageFormatArg::Png)]
    pub image_format: ImageFormatArg,
    /// Do not draw figures.
    #[arg(long)]
    pub no_figures: bool,
}

pub fn run(args: BatchArgs, global: &GlobalArgs) -> anyhow::Result<Exit> {
    let selector = args.contexts.selector()?;
    let manifest = args.manifest.as_deref().map(Manifest::read).transpose()?;
    // The same default chains as `plot` (Table 9 and figure 4 agree).
    let chains: Vec<String> = if args.chain.is_empty() {
        DEFAULT_PLOT_CHAINS.iter().map(|s| s.to_string()).collect()
    } else {
        args.chain.clone()
    };
    let hierarchy =
        HierarchyOptions::new(&chains, &[], false, 5, selector.clone()).context("bad --chain")?;
    let opts = BatchOptions {
        selector,
        hierarchy,
        manifest,
        quiet: global.quiet,
        buffer_limit: batch::run::BUFFER_LIMIT,
        exclude: args.out.canonicalize().ok(),
    };
    let context = opts.selector.describe();
    let res = batch::run_batch(&args.paths, &opts)?;
    let figures = (!args.no_figures).then_some(args.image_format.into());
    let written = output::write_all(&res, &args.out, &context, figures)?;
    for w in &written.warnings {
        eprintln!("torchtrace: warning: {w}");
    }
    for n in &res.notes {
        note(global, n);
    }

    let mut stdout = std::io::stdout().lock();
    output::write_stdout(&mut stdout, &res, &context, args.format.into())?;
    stdout.flush()?;

    let failed: Vec<_> = res.failed().collect();
    if failed.is_empty() {
        return Ok(Exit::Ok);
    }
    for r in &failed {
        eprintln!(
            "torchtrace: {}: {}",
            r.file.path,
            r.file.error.as_deref().unwrap_or("failed")
        );
    }
    eprintln!(
        "torchtrace: {} of {} failed (see {})",
        failed.len(),
        res.attempted(),
        args.out.join("traces.csv").display()
    );
    Ok(Exit::Problems)
}
