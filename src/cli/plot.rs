//! `torchtrace plot`: the RQ4 figures (PNG and/or SVG) for one trace, an
//! AR/MTP pair, or several pairs.

use super::pair::{resolve_tokens, TokenSource};
use super::{note, Exit, GlobalArgs};
use crate::analysis::{analyze_path, Plan};
use crate::hierarchy::{self, HierarchyOptions, DEFAULT_CHAIN};
use crate::pair::{self, Selector, TracePairs};
use crate::plot::{self, FunctionMedian, ImageFormat, PlotInput, PlotTrace};
use crate::summary;
use anyhow::{bail, Context};
use clap::Args;
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// The chain functions whose medians figure 4 shows by default: the
/// hierarchy default chain plus the model step.
pub const DEFAULT_PLOT_CHAINS: [&str; 2] = [DEFAULT_CHAIN, "execute_model"];

/// Draw the RQ4 figures for the traces given and write them to DIR.
///
/// Figures (same colours everywhere: AR blue, MTP orange, other grey):
///   fig1_span_distributions         CPU- and GPU-context spans per trace (box + every context)
///   fig2_gpu_span_timeline          GPU span against context index, per workload (warm-up, outliers)
///   fig3_tokens_and_span_per_token  tokens per context P and GPU span per token, S_context per pair
///   fig4_hierarchy_medians          median inclusive duration of the chain functions (Table 9)
///   fig5_cpu_vs_gpu_span            CPU span against GPU span per context (GPU- vs launch-bound)
///
/// Pairing: when every trace has a run summary beside it (X.summary.json
/// with "mode" and "workload"), traces are grouped by workload and the
/// "ar" trace of each is the baseline; otherwise consecutive traces pair
/// up as baseline, candidate (first = AR, second = MTP, as in `pair`).
/// The figures use the same numbers as `pair` and `hierarchy`.
///
/// Exit status: 0 ok; 1 when a trace lacks the selected context (figures
/// are still written); 2 on unreadable input or unwritable output.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct PlotArgs {
    /// Trace files: one, a baseline/candidate pair, or several pairs.
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Output directory (created if needed).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: PathBuf,
    /// Image format.
    #[arg(long, short = 'f', value_enum, default_value_t = ImageFormat::Png)]
    pub format: ImageFormat,
    #[command(flatten)]
    pub contexts: super::ContextArgs,
    /// Completion tokens, once per trace in order (else the run summary
    /// beside the trace).
    #[arg(long, value_name = "N")]
    pub tokens: Vec<u64>,
    /// Mode of each trace, once per trace in order (ar, mtp, ...; else the
    /// run summary's "mode", else baseline/candidate by position).
    #[arg(long, value_name = "MODE")]
    pub mode: Vec<String>,
    /// Call chain for figure 4, "a>b>c"; repeat for several
    /// [default: sample_tokens>propose_draft_token_ids>proposer.propose and execute_model]
    #[arg(long, value_name = "A>B>C")]
    pub chain: Vec<String>,
    /// Image width in pixels.
    #[arg(long, value_name = "W", default_value_t = 1280)]
    pub width: u32,
    /// Image height in pixels.
    #[arg(long, value_name = "H", default_value_t = 800)]
    pub height: u32,
}

/// One trace, measured.
struct Measured {
    pairs: TracePairs,
    problem: Option<pair::PairProblem>,
    run: Option<summary::RunSummary>,
    functions: Vec<FunctionMedian>,
}

/// The figures' medians from a hierarchy result (each function once, in
/// chain order).
pub fn function_medians(h: &hierarchy::TraceHierarchy) -> Vec<FunctionMedian> {
    let mut out: Vec<FunctionMedian> = Vec::new();
    for f in h.chains.iter().flat_map(|c| &c.functions) {
        if out.iter().any(|o| o.name == f.name) {
            continue;
        }
        out.push(FunctionMedian {
            name: f.name.clone(),
            median_ms: f.median_ms,
            calls: f.outermost_calls,
        });
    }
    out
}

/// The label of a trace: "workload MODE" from its summary, else its file
/// name without the trace suffix.
fn label_for(path: &Path, mode: Option<&str>, workload: Option<&str>) -> String {
    match (workload, mode) {
        (Some(w), Some(m)) => format!("{w} {}", display_mode(m)),
        _ => {
            let name = path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.display().to_string());
            [".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(&name)
                .to_string()
        }
    }
}

fn display_mode(m: &str) -> String {
    if m.eq_ignore_ascii_case("ar") || m.eq_ignore_ascii_case("mtp") {
        m.to_ascii_uppercase()
    } else {
        m.to_string()
    }
}

/// Builds the figures' input: labels, modes, groups and comparisons.
fn build_input(paths: &[PathBuf], measured: Vec<Measured>, modes: &[String]) -> PlotInput {
    let n = measured.len();
    let summarized = measured.iter().all(|m| {
        m.run
            .as_ref()
            .is_some_and(|r| r.mode.is_some() && r.workload.is_some())
    });
    let mut traces: Vec<PlotTrace> = measured
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let run = m.run.unwrap_or_default();
            let mode = modes.get(i).cloned().or(run.mode).or_else(|| {
                // Consecutive pairs: baseline, candidate (an odd last trace has no role).
                (!summarized && (i % 2 == 1 || i + 1 < n))
                    .then(|| if i % 2 == 0 { "baseline" } else { "candidate" }.to_string())
            });
            let workload = if summarized { run.workload } else { None };
            PlotTrace {
                label: label_for(&paths[i], mode.as_deref(), workload.as_deref()),
                mode,
                workload,
                pairs: m.pairs,
                functions: m.functions,
            }
        })
        .collect();
    // Distinct labels (two traces of one name).
    for i in 1..traces.len() {
        if traces[..i].iter().any(|t| t.label == traces[i].label) {
            traces[i].label = format!("{} #{}", traces[i].label, i + 1);
        }
    }
    let mut comparisons = Vec::new();
    if summarized {
        let mut workloads: Vec<String> = Vec::new();
        for t in &traces {
            let w = t.workload.clone().unwrap_or_default();
            if !workloads.contains(&w) {
                workloads.push(w);
            }
        }
        for w in workloads {
            let of = |ar: bool| {
                traces.iter().find(|t| {
                    t.workload.as_deref() == Some(w.as_str())
                        && (plot::mode_class(t.mode.as_deref()) == plot::ModeClass::Ar) == ar
                })
            };
            if let (Some(b), Some(c)) = (of(true), of(false)) {
                comparisons.push((w.clone(), pair::compare(&b.pairs, &c.pairs)));
            }
        }
    } else {
        for (k, ch) in traces.chunks(2).enumerate() {
            if let [b, c] = ch {
                let name = if traces.len() > 2 {
                    format!("pair {}", k + 1)
                } else {
                    format!("{} vs {}", b.label, c.label)
                };
                comparisons.push((name, pair::compare(&b.pairs, &c.pairs)));
            }
        }
        // Pairs without summaries: group each pair under its comparison name.
    }
    PlotInput {
        traces,
        comparisons,
    }
}

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
    let chains: Vec<String> = if args.chain.is_empty() {
        DEFAULT_PLOT_CHAINS.iter().map(|s| s.to_string()).collect()
    } else {
        args.chain.clone()
    };
    let hopts =
        HierarchyOptions::new(&chains, &[], false, 0, selector.clone()).context("bad --chain")?;
    let results: Vec<anyhow::Result<Measured>> = args
        .traces
        .par_iter()
        .enumerate()
        .map(|(i, path)| measure(path, i, &args.tokens, &selector, &hopts, global))
        .collect();
    let mut measured = Vec::new();
    let mut exit = Exit::Ok;
    for r in results {
        let m = r?;
        if let Some(p) = &m.problem {
            eprintln!("torchtrace: {p}");
            exit = Exit::Problems;
        }
        for t in &m.pairs.notes {
            note(global, &format!("{}: {t}", m.pairs.path));
        }
        measured.push(m);
    }
    // A trace without the selected contexts (a CPU-only frontend trace, say)
    // is left out, unless no trace has any.
    let mut paths = args.traces.clone();
    let mut modes = args.mode.clone();
    if measured.iter().any(|m| m.problem.is_none()) {
        let keep: Vec<bool> = measured.iter().map(|m| m.problem.is_none()).collect();
        for (m, _) in measured.iter().zip(&keep).filter(|(_, k)| !**k) {
            note(
                global,
                &format!("{}: left out of the figures", m.pairs.path),
            );
        }
        let mut k = keep.iter();
        measured.retain(|_| *k.next().unwrap());
        let mut k = keep.iter();
        paths.retain(|_| *k.next().unwrap());
        if !modes.is_empty() {
            let mut k = keep.iter();
            modes.retain(|_| *k.next().unwrap_or(&true));
        }
    }
    let input = build_input(&paths, measured, &modes);
    if input.traces.iter().all(|t| t.functions.is_empty()) {
        note(global, "no hierarchy data: figure 4 shows an empty state");
    }
    let files = plot::render_all(&input, &args.out, args.format, (args.width, args.height))?;
    for f in &files {
        println!("{}", f.display());
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

fn measure(
    path: &Path,
    i: usize,
    tokens: &[u64],
    selector: &Selector,
    hopts: &HierarchyOptions,
    global: &GlobalArgs,
) -> anyhow::Result<Measured> {
    // One pass feeds both analyses: pairing and the hierarchy's chains.
    let plan = Plan::new(selector.clone())
        .with(pair::PairSpec::default())
        .with(hopts.clone());
    let progress = crate::progress::FileProgress::new(path, global.quiet);
    let res = analyze_path(path, progress.counter(), &plan);
    progress.finish();
    if res.unreadable() {
        if let Some(e) = res.error {
            return Err(e.into());
        }
    }
    let problem = res.contexts.problem;
    let mut pairs = res.pairs.context("pairing ran")?;
    let h = res.hierarchy.context("hierarchy ran")?;
    let src = match tokens.get(i) {
        Some(&t) => TokenSource::Given(t),
        None => TokenSource::Beside,
    };
    let (t, tsrc) = resolve_tokens(&src, path)?;
    pairs.set_tokens(t, tsrc);
    let run = summary::beside(path)?.map(|(_, s)| s);
    Ok(Measured {
        pairs,
        problem,
        run,
        functions: function_medians(&h),
    })
}
