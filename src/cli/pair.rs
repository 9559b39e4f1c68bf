//! `torchtrace pair`: CPU/GPU step-context pairing and the RQ4 figures.

use super::{note, Exit, GlobalArgs};
use crate::pair::{self, Comparison, Selector, TracePairs};
use crate::report::{self, Cell, Format, Table};
use crate::summary;
use anyhow::{bail, Context};
use clap::Args;
use rayon::prelude::*;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

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
///   CPU span            the annotation's dur
///   GPU span            max(ts+dur) − min(ts) over its GPU annotations, as recorded
///   statistics          over paired contexts: median (even count: mean of the two
///                       middle values), mean, p10/p90 (linear interpolation), min, max, sum
///   tokens/context      P = completion tokens / pairs                    (Eq. 15)
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
/// names it has are listed); 2 on unreadable input.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct PairArgs {
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
    /// Also list every selected context (start, CPU span, GPU span).
    #[arg(long)]
    pub per_context: bool,
    /// Where a context's GPU span comes from: its GPU annotations when it
    /// has any, else its launches' GPU work by correlation (auto); GPU
    /// annotations only; or launch correlation only.
    #[arg(long, value_enum, default_value_t = GpuSpanArg::Auto, value_name = "SOURCE")]
    pub gpu_span: GpuSpanArg,
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `--gpu-span` values (mapped onto [`pair::GpuSpanSource`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GpuSpanArg {
    Auto,
    Annotation,
    Correlation,
}

impl From<GpuSpanArg> for pair::GpuSpanSource {
    fn from(a: GpuSpanArg) -> Self {
        match a {
            GpuSpanArg::Auto => pair::GpuSpanSource::Auto,
            GpuSpanArg::Annotation => pair::GpuSpanSource::Annotation,
            GpuSpanArg::Correlation => pair::GpuSpanSource::Correlation,
        }
    }
}

/// Library options built from the arguments.
#[derive(Debug)]
pub struct PairOptions {
    pub traces: Vec<PathBuf>,
    pub selector: Selector,
    pub tokens: Vec<TokenSource>,
    pub per_context: bool,
    pub gpu_span: pair::GpuSpanSource,
    pub format: Format,
}

/// Where a trace's completion-token count comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenSource {
    Given(u64),
    SummaryFile(PathBuf),
    Beside,
}

impl PairArgs {
    pub fn to_options(&self) -> anyhow::Result<PairOptions> {
        let selector = self.contexts.selector()?;
        let n = self.traces.len();
        if self.tokens.len() > n {
            bail!(
                "--tokens given {} times for {n} trace(s)",
                self.tokens.len()
            );
        }
        if self.summary.len() > n {
            bail!(
                "--summary given {} times for {n} trace(s)",
                self.summary.len()
            );
        }
        let tokens = (0..n)
            .map(|i| match (self.tokens.get(i), self.summary.get(i)) {
                (Some(&t), _) => TokenSource::Given(t),
                (None, Some(p)) => TokenSource::SummaryFile(p.clone()),
                (None, None) => TokenSource::Beside,
            })
            .collect();
        Ok(PairOptions {
            traces: self.traces.clone(),
            selector,
            tokens,
            per_context: self.per_context,
            gpu_span: self.gpu_span.into(),
            format: self.format,
        })
    }
}

/// Builds a [`Selector`] from `--context` / `--context-regex`.
pub fn selector_from(exact: Option<&str>, regex: Option<&str>) -> anyhow::Result<Selector> {
    Ok(match (exact, regex) {
        (Some(n), _) => Selector::Exact(n.to_string()),
        (None, Some(r)) => Selector::Regex(
            regex::Regex::new(r).with_context(|| format!("invalid --context-regex {r:?}"))?,
        ),
        (None, None) => Selector::Auto,
    })
}

/// Resolves a completion-token count and says where it came from.
pub fn resolve_tokens(
    src: &TokenSource,
    trace: &Path,
) -> anyhow::Result<(Option<u64>, Option<String>)> {
    Ok(match src {
        TokenSource::Given(t) => (Some(*t), Some("--tokens".into())),
        TokenSource::SummaryFile(p) => {
            let s = summary::read(p)?;
            (s.completion_tokens, Some(p.display().to_string()))
        }
        TokenSource::Beside => match summary::beside(trace)? {
            Some((p, s)) => (s.completion_tokens, Some(p.display().to_string())),
            None => (None, None),
        },
    })
}

/// The JSON document `pair` prints.
#[derive(Debug, Serialize)]
pub struct PairOutput {
    pub traces: Vec<TracePairs>,
    pub comparison: Option<Comparison>,
}

pub fn run(args: PairArgs, global: &GlobalArgs) -> anyhow::Result<Exit> {
    let opts = args.to_options()?;
    let results: Vec<anyhow::Result<(TracePairs, Option<pair::PairProblem>)>> = opts
        .traces
        .par_iter()
        .zip(opts.tokens.par_iter())
        .map(|(path, tok)| {
            let progress = crate::progress::FileProgress::new(path, global.quiet);
            let res = pair::analyze_path(path, progress.counter(), &opts.selector, opts.gpu_span);
            progress.finish();
            if res.unreadable() {
                if let Some(e) = res.error {
                    return Err(e.into());
                }
            }
            let problem = res.contexts.problem;
            let mut r = res.pairs.context("pairing ran")?;
            let (t, src) = resolve_tokens(tok, path)?;
            r.set_tokens(t, src);
            Ok((r, problem))
        })
        .collect();
    let mut traces = Vec::new();
    let mut exit = Exit::Ok;
    for res in results {
        let (r, problem) = res?;
        if let Some(p) = problem {
            eprintln!("torchtrace: {p}");
            exit = Exit::Problems;
        } else if r.measured == 0 && r.complete {
            eprintln!(
                "torchtrace: {}: none of the {} contexts got a GPU span (--gpu-span {})",
                r.path,
                r.contexts,
                r.gpu_span_mode.as_str()
            );
            exit = Exit::Problems;
        }
        traces.push(r);
    }
    for t in &traces {
        for n in &t.notes {
            note(global, &format!("{}: {n}", t.path));
        }
    }
    let comparison = (traces.len() == 2).then(|| pair::compare(&traces[0], &traces[1]));
    let out = PairOutput { traces, comparison };
    let tables = human_tables(&out, opts.per_context);
    let csv = csv_tables(&out, opts.per_context);
    let mut stdout = std::io::stdout().lock();
    if opts.format == Format::Json && opts.per_context {
        report::render(&mut stdout, opts.format, &with_rows(&out), &tables, &csv)?;
    } else {
        report::render(&mut stdout, opts.format, &out, &tables, &csv)?;
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

/// JSON with the per-context rows included.
fn with_rows(out: &PairOutput) -> serde_json::Value {
    let mut v = serde_json::to_value(out).unwrap_or_default();
    if let Some(arr) = v.get_mut("traces").and_then(|t| t.as_array_mut()) {
        for (j, t) in arr.iter_mut().zip(&out.traces) {
            j["per_context"] = serde_json::to_value(&t.rows).unwrap_or_default();
        }
    }
    v
}

/// A short column label: the parent directory and the file name without
/// its trace suffix, shortened in the middle when long.
pub fn short(path: &str) -> String {
    let p = Path::new(path);
    let name = p
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string());
    let stem = [".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(&name)
        .to_string();
    let stem = ellipsize(&stem, 24);
    match p.parent().and_then(|d| d.file_name()) {
        Some(dir) => format!("{}/{stem}", dir.to_string_lossy()),
        None => stem,
    }
}

fn ellipsize(s: &str, max: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= max {
        return s.to_string();
    }
    let keep = (max - 1) / 2;
    let head: String = chars[..keep].iter().collect();
    let tail: String = chars[chars.len() - keep..].iter().collect();
    format!("{head}…{tail}")
}

/// Figures as rows, traces as columns: easy to read side by side.
pub fn human_tables(out: &PairOutput, per_context: bool) -> Vec<Table> {
    let mut heads = vec!["figure".to_string()];
    heads.extend(out.traces.iter().map(|t| short(&t.path)));
    let mut t = Table {
        title: "Step contexts: CPU user_annotation ↔ GPU user_annotation".into(),
        headers: heads,
        ..Default::default()
    };
    let fig = |name: &str, f: &dyn Fn(&TracePairs) -> Cell| -> Vec<Cell> {
        let mut r = vec![Cell::text(name)];
        r.extend(out.traces.iter().map(f));
        r
    };
    t.row(fig("events", &|x| x.events.into()));
    t.row(fig("device", &|x| {
        Cell::text(x.meta.devices.first().cloned().unwrap_or_default())
    }));
    t.row(fig("context", &|x| Cell::text(x.context.clone())));
    t.row(fig("contexts", &|x| x.contexts.into()));
    t.row(fig("pairs", &|x| x.pairs.into()));
    t.row(fig("cpu_unpaired", &|x| x.cpu_unpaired.into()));
    t.row(fig("gpu_unpaired", &|x| x.gpu_unpaired.into()));
    t.row(fig("multi_stream_pairs", &|x| x.multi_stream_pairs.into()));
    t.row(fig("completion tokens", &|x| {
        Cell::opt_i(x.completion_tokens)
    }));
    t.row(fig("tokens per context (P)", &|x| {
        Cell::opt_f(x.tokens_per_context, 3)
    }));
    for (label, pick) in [("CPU span", true), ("GPU span", false)] {
        for (stat, get) in crate::stats::Summary::FIELDS {
            t.row(fig(&format!("{label} {stat} (ms)"), &|x| {
                let s = if pick { &x.cpu_span_ms } else { &x.gpu_span_ms };
                Cell::opt_f(get(s), 3)
            }));
        }
    }
    t.row(fig("GPU span per token (ms)", &|x| {
        Cell::opt_f(x.gpu_span_per_token_ms, 4)
    }));
    for x in &out.traces {
        if !x.complete {
            t.notes.push(format!(
                "{}: INCOMPLETE — {}",
                short(&x.path),
                x.error.as_deref().unwrap_or("")
            ));
        }
    }
    let mut tables = vec![t];
    if let Some(c) = &out.comparison {
        let mut ct = Table::new(
            format!(
                "Comparison: {} (baseline) vs {} (candidate)",
                short(&c.baseline),
                short(&c.candidate)
            ),
            &["figure", "value"],
        );
        ct.row(vec!["S_context".into(), Cell::opt_f(c.s_context, 3)]);
        ct.row(vec![
            "context reduction (%)".into(),
            Cell::opt_f(c.context_reduction_pct, 1),
        ]);
        ct.row(vec![
            "GPU span median ratio".into(),
            Cell::opt_f(c.gpu_span_median_ratio, 3),
        ]);
        ct.row(vec![
            "CPU span median ratio".into(),
            Cell::opt_f(c.cpu_span_median_ratio, 3),
        ]);
        tables.push(ct);
    }
    let mut names = Table::new(
        "Step names found",
        &["trace", "step name", "kind", "count", "selected"],
    );
    for x in &out.traces {
        for s in &x.step_names {
            names.row(vec![
                short(&x.path).into(),
                s.name.clone().into(),
                s.kind.into(),
                s.count.into(),
                if s.selected { "yes" } else { "" }.into(),
            ]);
        }
    }
    if !names.rows.is_empty() {
        tables.push(names);
    }
    if per_context {
        tables.push(per_context_table(out));
    }
    tables
}

fn per_context_table(out: &PairOutput) -> Table {
    let mut t = Table::new(
        "Per context",
        &[
            "trace",
            "index",
            "event_index",
            "start_us",
            "cpu_ms",
            "gpu_ms",
            "gpu_annotations",
        ],
    );
    for x in &out.traces {
        for (i, r) in x.rows.iter().enumerate() {
            t.row(vec![
                short(&x.path).into(),
                i.into(),
                r.event_index.into(),
                crate::model::Ns(r.start_ns).to_string().into(),
                Cell::Float(r.cpu_ns as f64 / 1e6, 3),
                Cell::opt_f(r.gpu_ns.map(|g| g as f64 / 1e6), 3),
                r.gpu_annotations.into(),
            ]);
        }
    }
    t
}

/// One row per trace, every figure a column (and the comparison appended).
pub fn csv_tables(out: &PairOutput, per_context: bool) -> Vec<Table> {
    let mut heads = vec![
        "path",
        "context",
        "contexts",
        "pairs",
        "cpu_unpaired",
        "gpu_unpaired",
        "multi_stream_pairs",
        "completion_tokens",
        "tokens_per_context",
    ];
    let stat_names = ["median", "mean", "p10", "p90", "min", "max", "sum"];
    let cpu: Vec<String> = stat_names
        .iter()
        .map(|s| format!("cpu_span_{s}_ms"))
        .collect();
    let gpu: Vec<String> = stat_names
        .iter()
        .map(|s| format!("gpu_span_{s}_ms"))
        .collect();
    heads.extend(cpu.iter().map(String::as_str));
    heads.extend(gpu.iter().map(String::as_str));
    heads.extend(["gpu_span_per_token_ms", "complete"]);
    let mut t = Table::new("pair", &heads);
    for x in &out.traces {
        let mut r: Vec<Cell> = vec![
            x.path.clone().into(),
            x.context.clone().into(),
            x.contexts.into(),
            x.pairs.into(),
            x.cpu_unpaired.into(),
            x.gpu_unpaired.into(),
            x.multi_stream_pairs.into(),
            Cell::opt_i(x.completion_tokens),
            Cell::opt_f(x.tokens_per_context, 3),
        ];
        for s in [&x.cpu_span_ms, &x.gpu_span_ms] {
            r.extend(
                crate::stats::Summary::FIELDS
                    .iter()
                    .map(|(_, g)| Cell::opt_f(g(s), 3)),
            );
        }
        r.push(Cell::opt_f(x.gpu_span_per_token_ms, 4));
        r.push(x.complete.to_string().into());
        t.row(r);
    }
    let mut tables = vec![t];
    if let Some(c) = &out.comparison {
        let mut ct = Table::new(
            "comparison",
            &[
                "baseline",
                "candidate",
                "s_context",
                "context_reduction_pct",
                "gpu_span_median_ratio",
                "cpu_span_median_ratio",
            ],
        );
        ct.row(vec![
            c.baseline.clone().into(),
            c.candidate.clone().into(),
            Cell::opt_f(c.s_context, 3),
            Cell::opt_f(c.context_reduction_pct, 1),
            Cell::opt_f(c.gpu_span_median_ratio, 3),
            Cell::opt_f(c.cpu_span_median_ratio, 3),
        ]);
        tables.push(ct);
    }
    if per_context {
        tables.push(per_context_table(out));
    }
    tables
}
