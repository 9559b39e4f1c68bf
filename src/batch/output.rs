//! What a batch writes: `results.json`, `traces.csv`, `workloads.csv`/`.md`
//! (Table 8), `hierarchy.csv`/`.md` (Table 9), `figures/`, and `report.md`
//! tying them together; plus the Markdown summary for stdout.
//!
//! Only fixed file names are written under OUTDIR (and figure names that
//! the plot module derives from sanitized labels); no input name is ever
//! used as a path.

use super::{BatchResult, Record, Status};
use crate::hierarchy::{self, FunctionStats, TraceHierarchy};
use crate::pair::TracePairs;
use crate::plot::{self, FunctionMedian, ImageFormat, PlotInput, PlotTrace};
use crate::report::{self, Cell, Table};
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// One entry of `results.json`'s `traces`.
#[derive(Serialize)]
struct TraceJson<'a> {
    path: &'a str,
    status: &'static str,
    error: Option<&'a str>,
    kind: &'static str,
    mode: Option<&'a str>,
    mode_source: Option<&'static str>,
    workload: Option<&'a str>,
    workload_source: Option<&'static str>,
    speculative_depth: Option<u64>,
    size_bytes: u64,
    /// The trace's hierarchy figures (chains: links, functions), when read.
    #[serde(skip_serializing_if = "Option::is_none")]
    hierarchy: Option<Value>,
    /// The keys of the trace in `pair`'s JSON (less `path` and `error`,
    /// given above).
    #[serde(flatten)]
    pair: Map<String, Value>,
}

fn trace_json(r: &Record) -> TraceJson<'_> {
    let mut pair = match r.file.pairs.as_ref().map(serde_json::to_value) {
        Some(Ok(Value::Object(m))) => m,
        _ => Map::new(),
    };
    pair.remove("path");
    pair.remove("error");
    TraceJson {
        path: &r.file.path,
        status: r.file.status.as_str(),
        error: r.file.error.as_deref(),
        kind: r.file.kind.as_str(),
        mode: r.mode.as_deref(),
        mode_source: r.mode_source,
        workload: r.workload.as_deref(),
        workload_source: r.workload_source,
        speculative_depth: r.speculative_depth,
        size_bytes: r.file.size,
        hierarchy: r.file.hierarchy.as_ref().map(hierarchy_json),
        pair,
    }
}

/// A trace's hierarchy figures, less what the trace entry already says.
fn hierarchy_json(h: &TraceHierarchy) -> Value {
    let mut v = serde_json::to_value(h).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        for k in ["path", "meta", "events", "complete", "error", "context"] {
            m.remove(k);
        }
        m.insert("holds".into(), Value::Bool(h.holds()));
    }
    v
}

/// The distinct chain functions over all traces, in chain order.
pub fn function_names(res: &BatchResult) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for h in res.records.iter().filter_map(|r| r.file.hierarchy.as_ref()) {
        for f in h.chains.iter().flat_map(|c| &c.functions) {
            if !names.contains(&f.name) {
                names.push(f.name.clone());
            }
        }
    }
    names
}

fn function<'a>(h: Option<&'a TraceHierarchy>, name: &str) -> Option<&'a FunctionStats> {
    h?.chains
        .iter()
        .flat_map(|c| &c.functions)
        .find(|f| f.name == name)
}

/// The whole `results.json` document (keys in this order).
#[derive(Serialize)]
pub struct ResultsDoc<'a> {
    traces: Vec<TraceJson<'a>>,
    comparisons: &'a [super::WorkloadComparison],
    /// How step contexts were selected (`auto`, a name, or `re:…`).
    context: &'a str,
    inputs: &'a [super::inputs::Input],
    files: usize,
    failed: usize,
    notes: &'a [String],
}

/// The whole `results.json` document.
pub fn results_json<'a>(res: &'a BatchResult, context: &'a str) -> ResultsDoc<'a> {
    ResultsDoc {
        traces: res.records.iter().map(trace_json).collect(),
        comparisons: &res.comparisons,
        context,
        inputs: &res.inputs,
        files: res.records.len(),
        failed: res.failed().count(),
        notes: &res.notes,
    }
}

/// `traces.csv`: one row per input file, whatever became of it.
pub fn traces_table(res: &BatchResult) -> Table {
    let mut heads: Vec<String> = [
        "path",
        "kind",
        "status",
        "error",
        "mode",
        "mode_source",
        "workload",
        "workload_source",
        "speculative_depth",
        "size_bytes",
        "context",
        "contexts",
        "pairs",
        "cpu_unpaired",
        "gpu_unpaired",
        "multi_stream_pairs",
        "completion_tokens",
        "tokens_source",
        "tokens_per_context",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for side in ["cpu", "gpu"] {
        heads.extend(
            crate::stats::Summary::FIELDS
                .iter()
                .map(|(s, _)| format!("{side}_span_{s}_ms")),
        );
    }
    heads.extend(
        ["gpu_span_per_token_ms", "events", "complete"]
            .iter()
            .map(|s| s.to_string()),
    );
    let pair_cols = heads.len();
    let fnames = function_names(res);
    heads.extend(
        ["hierarchy_holds", "hierarchy_uncontained"]
            .iter()
            .map(|s| s.to_string()),
    );
    for n in &fnames {
        heads.push(format!("calls[{n}]"));
        heads.push(format!("outermost_calls[{n}]"));
        heads.push(format!("median_ms[{n}]"));
    }
    let mut t = Table {
        title: "traces".into(),
        headers: heads,
        ..Default::default()
    };
    let text = |s: Option<&str>| s.map_or(Cell::Null, Cell::text);
    for r in &res.records {
        let f = &r.file;
        let mut row = vec![
            Cell::text(f.path.clone()),
            f.kind.as_str().into(),
            f.status.as_str().into(),
            text(f.error.as_deref()),
            text(r.mode.as_deref()),
            text(r.mode_source),
            text(r.workload.as_deref()),
            text(r.workload_source),
            Cell::opt_i(r.speculative_depth),
            f.size.into(),
        ];
        match &f.pairs {
            Some(p) => {
                row.extend([
                    Cell::text(p.context.clone()),
                    p.contexts.into(),
                    p.pairs.into(),
                    p.cpu_unpaired.into(),
                    p.gpu_unpaired.into(),
                    p.multi_stream_pairs.into(),
                    Cell::opt_i(p.completion_tokens),
                    text(p.tokens_source.as_deref()),
                    Cell::opt_f(p.tokens_per_context, 3),
                ]);
                for s in [&p.cpu_span_ms, &p.gpu_span_ms] {
                    row.extend(
                        crate::stats::Summary::FIELDS
                            .iter()
                            .map(|(_, g)| Cell::opt_f(g(s), 3)),
                    );
                }
                row.extend([
                    Cell::opt_f(p.gpu_span_per_token_ms, 4),
                    p.events.into(),
                    p.complete.to_string().into(),
                ]);
            }
            None => row.resize(pair_cols, Cell::Null),
        }
        match &f.hierarchy {
            Some(h) => {
                row.push(h.holds().to_string().into());
                row.push(
                    h.chains
                        .iter()
                        .flat_map(|c| &c.links)
                        .map(|l| l.uncontained)
                        .sum::<u64>()
                        .into(),
                );
                for n in &fnames {
                    let fs = function(Some(h), n);
                    row.push(Cell::opt_i(fs.map(|f| f.calls)));
                    row.push(Cell::opt_i(fs.map(|f| f.outermost_calls)));
                    row.push(Cell::opt_f(fs.and_then(|f| f.median_ms), 3));
                }
            }
            None => row.resize(t.headers.len(), Cell::Null),
        }
        t.row(row);
    }
    t
}

/// Table 8 of the paper, one row per (workload, AR trace, MTP trace).
/// `machine` gives snake_case headers and the trace paths (for CSV).
pub fn workloads_table(res: &BatchResult, machine: bool) -> Table {
    let heads: &[&str] = if machine {
        &[
            "workload",
            "baseline",
            "candidate",
            "candidate_mode",
            "ar_completion_tokens",
            "mtp_completion_tokens",
            "ar_contexts",
            "mtp_contexts",
            "ar_tokens_per_context",
            "mtp_tokens_per_context",
            "ar_cpu_span_median_ms",
            "mtp_cpu_span_median_ms",
            "ar_gpu_span_median_ms",
            "mtp_gpu_span_median_ms",
            "ar_gpu_span_per_token_ms",
            "mtp_gpu_span_per_token_ms",
            "s_context",
            "context_reduction_pct",
            "gpu_span_median_ratio",
            "cpu_span_median_ratio",
        ]
    } else {
        &[
            "Workload",
            "Mode",
            "Tokens AR",
            "Tokens MTP",
            "Contexts AR",
            "Contexts MTP",
            "Tokens/ctx AR",
            "Tokens/ctx MTP",
            "CPU span med. AR (ms)",
            "CPU span med. MTP (ms)",
            "GPU span med. AR (ms)",
            "GPU span med. MTP (ms)",
            "GPU span/token AR (ms)",
            "GPU span/token MTP (ms)",
            "S_context",
            "Context reduction (%)",
        ]
    };
    let mut t = Table::new(
        "Table 8: AR vs MTP per workload (decode step contexts)",
        heads,
    );
    for c in &res.comparisons {
        let (Some(a), Some(m)) = (
            res.records[c.baseline_index].file.pairs.as_ref(),
            res.records[c.candidate_index].file.pairs.as_ref(),
        ) else {
            continue;
        };
        let both = |f: &dyn Fn(&TracePairs) -> Cell| [f(a), f(m)];
        let mut row = vec![Cell::text(c.workload.clone())];
        if machine {
            row.push(Cell::text(c.comparison.baseline.clone()));
            row.push(Cell::text(c.comparison.candidate.clone()));
        }
        row.push(Cell::text(c.candidate_mode.clone()));
        row.extend(both(&|p| Cell::opt_i(p.completion_tokens)));
        row.extend(both(&|p| p.pairs.into()));
        row.extend(both(&|p| Cell::opt_f(p.tokens_per_context, 3)));
        row.extend(both(&|p| Cell::opt_f(p.cpu_span_ms.median, 3)));
        row.extend(both(&|p| Cell::opt_f(p.gpu_span_ms.median, 3)));
        row.extend(both(&|p| Cell::opt_f(p.gpu_span_per_token_ms, 4)));
        row.push(Cell::opt_f(c.comparison.s_context, 3));
        row.push(Cell::opt_f(c.comparison.context_reduction_pct, 1));
        if machine {
            row.push(Cell::opt_f(c.comparison.gpu_span_median_ratio, 3));
            row.push(Cell::opt_f(c.comparison.cpu_span_median_ratio, 3));
        }
        t.row(row);
    }
    if !machine {
        t.notes.extend(res.notes.iter().cloned());
    }
    t
}

/// Table 9 of the paper: per workload comparison and chain function,
/// calls and median inclusive duration in AR and MTP, and MTP/AR.
pub fn hierarchy_table(res: &BatchResult, machine: bool) -> Table {
    let heads: &[&str] = if machine {
        &[
            "workload",
            "baseline",
            "candidate",
            "candidate_mode",
            "function",
            "ar_calls",
            "ar_outermost_calls",
            "ar_calls_per_context",
            "ar_median_ms",
            "mtp_calls",
            "mtp_outermost_calls",
            "mtp_calls_per_context",
            "mtp_median_ms",
            "median_ratio_mtp_ar",
        ]
    } else {
        &[
            "Workload",
            "Function",
            "Calls AR",
            "Calls MTP",
            "Calls/ctx AR",
            "Calls/ctx MTP",
            "Median AR (ms)",
            "Median MTP (ms)",
            "MTP/AR",
        ]
    };
    let mut t = Table::new(
        "Table 9: chain functions, calls and median inclusive duration (outermost calls)",
        heads,
    );
    for c in &res.comparisons {
        let b = &res.records[c.baseline_index].file;
        let m = &res.records[c.candidate_index].file;
        let (Some(bh), Some(mh)) = (b.hierarchy.as_ref(), m.hierarchy.as_ref()) else {
            continue;
        };
        let cmp = hierarchy::compare(bh, mh);
        for fr in &cmp.functions {
            let (fa, fm) = (function(Some(bh), &fr.name), function(Some(mh), &fr.name));
            let mut row = vec![Cell::text(c.workload.clone())];
            if machine {
                row.push(Cell::text(b.path.clone()));
                row.push(Cell::text(m.path.clone()));
                row.push(Cell::text(c.candidate_mode.clone()));
            }
            row.push(Cell::text(fr.name.clone()));
            if machine {
                for f in [fa, fm] {
                    row.push(Cell::opt_i(f.map(|f| f.calls)));
                    row.push(Cell::opt_i(f.map(|f| f.outermost_calls)));
                    row.push(Cell::opt_f(f.and_then(|f| f.calls_per_context), 3));
                    row.push(Cell::opt_f(f.and_then(|f| f.median_ms), 3));
                }
            } else {
                row.push(Cell::opt_i(fa.map(|f| f.outermost_calls)));
                row.push(Cell::opt_i(fm.map(|f| f.outermost_calls)));
                row.push(Cell::opt_f(fa.and_then(|f| f.calls_per_context), 3));
                row.push(Cell::opt_f(fm.and_then(|f| f.calls_per_context), 3));
                row.push(Cell::opt_f(fa.and_then(|f| f.median_ms), 3));
                row.push(Cell::opt_f(fm.and_then(|f| f.median_ms), 3));
            }
            row.push(Cell::opt_f(fr.median_ratio, 3));
            t.row(row);
        }
    }
    if !machine {
        t.notes.push(
            "Calls are outermost calls (a function nested in itself counts once); calls/ctx per selected step context; \
             durations are inclusive (dur) medians over the outermost calls."
                .into(),
        );
    }
    t
}

/// Per trace and chain link: is every child inside a parent?
pub fn containment_table(res: &BatchResult) -> Table {
    let mut t = Table::new(
        "Chain containment per trace",
        &[
            "trace",
            "parent > child",
            "children",
            "contained",
            "uncontained",
            "parents without child",
            "holds",
        ],
    );
    for r in &res.records {
        let Some(h) = &r.file.hierarchy else { continue };
        for l in h.chains.iter().flat_map(|c| &c.links) {
            t.row(vec![
                Cell::text(r.file.path.clone()),
                Cell::text(format!("{} > {}", l.parent, l.child)),
                l.children.into(),
                l.contained.into(),
                l.uncontained.into(),
                l.parents_without_child.into(),
                if l.holds { "yes" } else { "NO" }.into(),
            ]);
        }
    }
    t
}

/// Failed inputs, and (with `skipped`) skipped ones too.
pub fn problems_table(res: &BatchResult, skipped: bool) -> Table {
    let mut t = Table::new(
        if skipped {
            "Failed and skipped inputs"
        } else {
            "Failed inputs"
        },
        &["path", "kind", "status", "reason"],
    );
    for r in &res.records {
        let f = &r.file;
        if f.status == Status::Error || (skipped && f.status == Status::Skipped) {
            t.row(vec![
                Cell::text(f.path.clone()),
                f.kind.as_str().into(),
                f.status.as_str().into(),
                Cell::text(f.error.clone().unwrap_or_default()),
            ]);
        }
    }
    t
}

/// A short per-trace table for report.md.
fn traces_overview(res: &BatchResult) -> Table {
    let mut t = Table::new(
        "Worker traces",
        &[
            "trace",
            "status",
            "mode",
            "workload",
            "contexts",
            "pairs",
            "tokens",
            "tokens/ctx",
            "CPU span med. (ms)",
            "GPU span med. (ms)",
            "GPU span/token (ms)",
        ],
    );
    for r in res
        .records
        .iter()
        .filter(|r| r.file.kind == super::inputs::Kind::Worker)
    {
        let p = r.file.pairs.as_ref();
        t.row(vec![
            Cell::text(r.file.path.clone()),
            r.file.status.as_str().into(),
            r.mode.clone().map_or(Cell::Null, Cell::Text),
            r.workload.clone().map_or(Cell::Null, Cell::Text),
            p.map_or(Cell::Null, |p| p.contexts.into()),
            p.map_or(Cell::Null, |p| p.pairs.into()),
            Cell::opt_i(p.and_then(|p| p.completion_tokens)),
            Cell::opt_f(p.and_then(|p| p.tokens_per_context), 3),
            Cell::opt_f(p.and_then(|p| p.cpu_span_ms.median), 3),
            Cell::opt_f(p.and_then(|p| p.gpu_span_ms.median), 3),
            Cell::opt_f(p.and_then(|p| p.gpu_span_per_token_ms), 4),
        ]);
    }
    t
}

/// The Markdown summary printed on stdout.
pub fn stdout_markdown(res: &BatchResult) -> String {
    let workers = res
        .records
        .iter()
        .filter(|r| r.file.kind == super::inputs::Kind::Worker)
        .count();
    let mut s = format!(
        "## torchtrace batch: {} files, {} worker traces, {} comparisons, {} failed\n\n",
        res.records.len(),
        workers,
        res.comparisons.len(),
        res.failed().count()
    );
    s.push_str(&report::markdown::to_string(&workloads_table(res, false)));
    let failed = problems_table(res, false);
    if !failed.rows.is_empty() {
        s.push('\n');
        s.push_str(&report::markdown::to_string(&failed));
    }
    s
}

/// What `write_all` produced besides the fixed files.
#[derive(Debug, Default)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub figures: Vec<PathBuf>,
    pub warnings: Vec<String>,
}

fn write(dir: &Path, name: &str, text: &str, w: &mut Written) -> anyhow::Result<()> {
    let p = dir.join(name);
    std::fs::write(&p, text).map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", p.display()))?;
    w.files.push(p);
    Ok(())
}

/// The figures' input: every trace read without error, labelled
/// "workload MODE" (made distinct), and the workload comparisons.
pub fn plot_input(res: &BatchResult) -> PlotInput {
    let fnames = function_names(res);
    let mut traces: Vec<PlotTrace> = Vec::new();
    for r in &res.records {
        let (Status::Ok, Some(p)) = (r.file.status, &r.file.pairs) else {
            continue;
        };
        let mode_txt = r.mode.as_deref().map(|m| {
            if m == "ar" || m == "mtp" {
                m.to_ascii_uppercase()
            } else {
                m.to_string()
            }
        });
        let mut label = match (&r.workload, &mode_txt) {
            (Some(w), Some(m)) => format!("{w} {m}"),
            (Some(w), None) => w.clone(),
            _ => r
                .file
                .path
                .rsplit('/')
                .next()
                .unwrap_or(&r.file.path)
                .to_string(),
        };
        if traces.iter().any(|t| t.label == label) {
            label = format!("{label} #{}", traces.len() + 1);
        }
        let functions = fnames
            .iter()
            .filter_map(|n| function(r.file.hierarchy.as_ref(), n))
            .map(|f| FunctionMedian {
                name: f.name.clone(),
                median_ms: f.median_ms,
                calls: f.outermost_calls,
            })
            .collect();
        traces.push(PlotTrace {
            label,
            mode: r.mode.clone(),
            workload: r.workload.clone(),
            pairs: p.clone(),
            functions,
        });
    }
    let comparisons = res
        .comparisons
        .iter()
        .map(|c| (c.workload.clone(), c.comparison.clone()))
        .collect();
    PlotInput {
        traces,
        comparisons,
    }
}

/// Draws the figures into `dir`.
fn render_figures(res: &BatchResult, dir: &Path, fmt: ImageFormat) -> anyhow::Result<Vec<PathBuf>> {
    Ok(plot::render_all(&plot_input(res), dir, fmt, FIGURE_SIZE)?)
}

/// Figure size in pixels.
pub const FIGURE_SIZE: (u32, u32) = (1280, 800);

/// Writes every output file under `dir` (created if needed).
pub fn write_all(
    res: &BatchResult,
    dir: &Path,
    context: &str,
    figures: Option<ImageFormat>,
) -> anyhow::Result<Written> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", dir.display()))?;
    let mut w = Written::default();
    let mut json = serde_json::to_string_pretty(&results_json(res, context))?;
    json.push('\n');
    write(dir, "results.json", &json, &mut w)?;
    write(
        dir,
        "traces.csv",
        &report::csv::to_string(&traces_table(res)),
        &mut w,
    )?;
    write(
        dir,
        "workloads.csv",
        &report::csv::to_string(&workloads_table(res, true)),
        &mut w,
    )?;
    let wl_md = report::markdown::to_string(&workloads_table(res, false));
    write(dir, "workloads.md", &wl_md, &mut w)?;
    write(
        dir,
        "hierarchy.csv",
        &report::csv::to_string(&hierarchy_table(res, true)),
        &mut w,
    )?;
    let h_md = format!(
        "{}\n{}",
        report::markdown::to_string(&hierarchy_table(res, false)),
        report::markdown::to_string(&containment_table(res))
    );
    write(dir, "hierarchy.md", &h_md, &mut w)?;
    if let Some(fmt) = figures {
        let fig_dir = dir.join("figures");
        match render_figures(res, &fig_dir, fmt) {
            Ok(f) => w.figures = f,
            Err(e) => w.warnings.push(format!("figures: {e:#}")),
        }
    }
    let report = report_md(res, context, &w, dir);
    write(dir, "report.md", &report, &mut w)?;
    Ok(w)
}

fn report_md(res: &BatchResult, context: &str, w: &Written, dir: &Path) -> String {
    let mut s = String::from("# torchtrace batch report\n\n");
    let count = |st: Status| res.records.iter().filter(|r| r.file.status == st).count();
    s.push_str("Inputs:\n\n");
    for i in &res.inputs {
        s.push_str(&format!("- `{}` ({})\n", i.path, kind_name(i.kind)));
    }
    s.push_str(&format!(
        "\n{} files: {} ok, {} failed, {} skipped. Step contexts: {}. {} AR/MTP comparisons.\n\n",
        res.records.len(),
        count(Status::Ok),
        count(Status::Error),
        count(Status::Skipped),
        context,
        res.comparisons.len()
    ));
    s.push_str(
        "Files: [results.json](results.json) (everything), [traces.csv](traces.csv) (one row per input file), \
         [workloads.csv](workloads.csv) / [workloads.md](workloads.md) (Table 8)",
    );
    s.push_str(", [hierarchy.csv](hierarchy.csv) / [hierarchy.md](hierarchy.md) (Table 9)");
    s.push_str(".\n\n## Definitions\n\n");
    s.push_str(
        "- A step context is one CPU `user_annotation` of the selected vLLM decode step name; its GPU span is \
         max(end) − min(start) over the `gpu_user_annotation`s with the same name and External id.\n\
         - P (tokens per context) = completion tokens / paired contexts; GPU span per token = Σ GPU spans / completion tokens.\n\
         - S_context = GPU span per token (AR) / GPU span per token (MTP); context reduction = (1 − P_AR / P_MTP) × 100 %.\n\
         - Completion tokens, mode and workload come from each trace's run summary (`X.summary.json`), else the step \
         name (`generation_1(1)` → AR, `generation_1(k+1)` → MTP), else `--manifest`; see docs/DEFINITIONS.md.\n\n",
    );
    s.push_str("## ");
    s.push_str(
        report::markdown::to_string(&workloads_table(res, false)).trim_start_matches("### "),
    );
    s.push_str("\n## ");
    s.push_str(
        report::markdown::to_string(&hierarchy_table(res, false)).trim_start_matches("### "),
    );
    s.push_str("\n### ");
    s.push_str(report::markdown::to_string(&containment_table(res)).trim_start_matches("### "));
    if !w.figures.is_empty() {
        s.push_str("\n## Figures\n\n");
        for f in &w.figures {
            if let Ok(rel) = f.strip_prefix(dir) {
                let rel = rel.to_string_lossy().replace('\\', "/");
                let name = rel.rsplit('/').next().unwrap_or(&rel).to_string();
                if rel.ends_with(".png") || rel.ends_with(".svg") {
                    s.push_str(&format!("![{name}]({rel})\n\n"));
                } else {
                    s.push_str(&format!("- [{name}]({rel})\n"));
                }
            }
        }
    }
    s.push_str("\n## ");
    s.push_str(report::markdown::to_string(&traces_overview(res)).trim_start_matches("### "));
    let probs = problems_table(res, true);
    s.push_str("\n## ");
    if probs.rows.is_empty() {
        s.push_str("Failed and skipped inputs\n\nNone.\n");
    } else {
        s.push_str(report::markdown::to_string(&probs).trim_start_matches("### "));
    }
    if !w.warnings.is_empty() {
        s.push_str("\n## Notes\n\n");
        for n in &w.warnings {
            s.push_str(&format!("- {n}\n"));
        }
    }
    s
}

fn kind_name(k: super::inputs::InputKind) -> &'static str {
    use super::inputs::InputKind::*;
    match k {
        Directory => "directory",
        File => "file",
        Tar => "tar archive",
        TarGz => "gzip-compressed tar archive",
        Zip => "zip archive",
    }
}
