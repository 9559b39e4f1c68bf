//! `torchtrace hierarchy`: containment chains and inclusive-duration tables.

use super::{note, Exit, GlobalArgs};
use crate::analysis::{analyze_path, Plan};
use crate::hierarchy::{self, Comparison, FunctionStats, HierarchyOptions, TraceHierarchy};
use crate::report::{self, Cell, Format, Table};
use anyhow::{bail, Context};
use clap::Args;
use rayon::prelude::*;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Verify that events nest along chains `a>b>c` (every b inside some a,
/// every c inside some b) and report call counts and inclusive durations;
/// with two traces, median ratios (second / first, e.g. MTP / AR).
///
/// Matching (a chain element E; default categories cpu_op, user_annotation,
/// python_function, Operator):
///   the event name equals E; or a python_function's function part (after
///   the last "): ", e.g. "gpu_model_runner.py(4270): sample_tokens") equals
///   E; or E is "re:RE" and RE matches somewhere in the name.
///
/// Figures (exact integer-ns arithmetic; ms in output):
///   children               events matching the child element
///   contained              children lying in some parent event: same pid/tid
///                          (unless --any-thread), P.start ≤ C.start and
///                          C.end ≤ P.end, P not C itself
///   uncontained            children − contained (examples listed)
///   parents_without_child  parent events holding no child event
///   calls                  events matching the element
///   outermost_calls        calls not lying in another call of the same element
///                          (identical intervals: the earlier in the file is outer)
///   median/mean/p90/min/max/total
///                          inclusive durations (dur) of the outermost calls
///   calls/context          outermost_calls / step contexts (as `pair` selects them)
///
/// Exit status: 0 every link holds; 1 some link has uncontained children;
/// 2 on unreadable input or bad arguments.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct HierarchyArgs {
    /// Trace files (`-` reads stdin). With two: baseline (AR) then candidate (MTP).
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// A chain "parent>child>grandchild"; repeat for several
    /// [default: sample_tokens>propose_draft_token_ids>proposer.propose]
    #[arg(long, value_name = "A>B>C")]
    pub chain: Vec<String>,
    /// Event category taking part; repeat for several (replaces the default
    /// list cpu_op, user_annotation, python_function, Operator).
    #[arg(long, value_name = "CAT")]
    pub category: Vec<String>,
    /// Containment across threads: ignore pid/tid.
    #[arg(long)]
    pub any_thread: bool,
    /// Uncontained children listed per link.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub examples: usize,
    #[command(flatten)]
    pub contexts: super::ContextArgs,
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

impl HierarchyArgs {
    pub fn to_options(&self) -> anyhow::Result<HierarchyOptions> {
        let selector = self.contexts.selector()?;
        HierarchyOptions::new(
            &self.chain,
            &self.category,
            self.any_thread,
            self.examples,
            selector,
        )
        .context("bad --chain")
    }
}

/// The JSON document `hierarchy` prints.
#[derive(Debug, Serialize)]
pub struct HierarchyOutput {
    pub traces: Vec<TraceHierarchy>,
    /// With exactly two traces: second / first.
    pub comparison: Option<Comparison>,
}

impl HierarchyOutput {
    pub fn new(traces: Vec<TraceHierarchy>) -> Self {
        let comparison = (traces.len() == 2).then(|| hierarchy::compare(&traces[0], &traces[1]));
        HierarchyOutput { traces, comparison }
    }

    /// Every link of every trace holds.
    pub fn holds(&self) -> bool {
        self.traces.iter().all(TraceHierarchy::holds)
    }
}

pub fn run(args: HierarchyArgs, global: &GlobalArgs) -> anyhow::Result<Exit> {
    let opts = args.to_options()?;
    let plan = Plan::new(opts.selector.clone()).with(opts.clone());
    let results: Vec<anyhow::Result<TraceHierarchy>> = args
        .traces
        .par_iter()
        .map(|path| {
            let progress = crate::progress::FileProgress::new(path, global.quiet);
            let res = analyze_path(path, progress.counter(), &plan);
            progress.finish();
            if res.unreadable() {
                if let Some(e) = res.error {
                    return Err(e.into());
                }
            }
            res.hierarchy.context("hierarchy ran")
        })
        .collect();
    let traces = results.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    for t in &traces {
        if t.contexts.is_none() {
            note(
                global,
                &format!(
                    "{}: no step contexts found: calls per context are null",
                    t.path
                ),
            );
        }
    }
    let out = HierarchyOutput::new(traces);
    let mut stdout = std::io::stdout().lock();
    report::render(
        &mut stdout,
        args.format,
        &out,
        &human_tables(&out),
        &csv_tables(&out),
    )?;
    stdout.flush()?;
    if let Some(t) = out.traces.iter().find(|t| !t.complete) {
        bail!(
            "{}: {} (figures above cover the events before it)",
            t.path,
            t.error.as_deref().unwrap_or("incomplete")
        );
    }
    for t in &out.traces {
        for c in &t.chains {
            for l in c.links.iter().filter(|l| !l.holds) {
                note(
                    global,
                    &format!(
                        "{}: {} of {} {} not inside {}",
                        t.path, l.uncontained, l.children, l.child, l.parent
                    ),
                );
            }
        }
    }
    Ok(if out.holds() {
        Exit::Ok
    } else {
        Exit::Problems
    })
}

/// Short trace labels for human tables: the file names without trace
/// extensions when they are distinct and short, else the parent
/// directories' names when those are distinct (vLLM names every worker
/// trace `dp0_pp0_…rank0.<ns>.pt.trace.json.gz`, one run per directory).
pub fn labels(paths: &[&str]) -> Vec<String> {
    let stem = |p: &str| -> String {
        let name = Path::new(p)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.to_string());
        for ext in [
            ".pt.trace.json.gz",
            ".pt.trace.json",
            ".json.gz",
            ".json",
            ".gz",
        ] {
            if let Some(s) = name.strip_suffix(ext) {
                if !s.is_empty() {
                    return s.to_string();
                }
            }
        }
        name
    };
    let parent = |p: &str| -> Option<String> {
        Path::new(p)
            .parent()
            .and_then(|d| d.file_name())
            .map(|f| f.to_string_lossy().into_owned())
    };
    let distinct = |v: &[String]| {
        let mut s = v.to_vec();
        s.sort();
        s.dedup();
        s.len() == v.len()
    };
    let stems: Vec<String> = paths.iter().map(|p| stem(p)).collect();
    if distinct(&stems) && stems.iter().all(|s| s.chars().count() <= 32) {
        return stems;
    }
    if let Some(parents) = paths.iter().map(|p| parent(p)).collect::<Option<Vec<_>>>() {
        if distinct(&parents) {
            return parents;
        }
    }
    stems
}

/// A function's figures, from its name to its total (human and CSV tables).
fn function_cells(f: &FunctionStats) -> Vec<Cell> {
    vec![
        f.name.clone().into(),
        f.calls.into(),
        f.outermost_calls.into(),
        Cell::opt_f(f.calls_per_context, 3),
        ms(f.median_ms),
        ms(f.mean_ms),
        ms(f.p90_ms),
        ms(f.min_ms),
        ms(f.max_ms),
        ms(f.total_ms),
    ]
}

fn ms(v: Option<f64>) -> Cell {
    Cell::opt_f(v, 3)
}

/// Per chain: a links table, a functions table (and with two traces a
/// comparison table with median ratios), then examples of uncontained
/// children.
pub fn human_tables(out: &HierarchyOutput) -> Vec<Table> {
    let mut tables = Vec::new();
    let paths: Vec<&str> = out.traces.iter().map(|t| t.path.as_str()).collect();
    let label = labels(&paths);
    let short = |p: &str| -> String {
        paths
            .iter()
            .position(|q| *q == p)
            .map_or_else(|| p.to_string(), |k| label[k].clone())
    };
    let nchains = out.traces.first().map_or(0, |t| t.chains.len());
    for ci in 0..nchains {
        let title = out.traces[0].chains[ci].chain.join(" > ");
        let mut links = Table::new(
            format!("Chain {title}: containment"),
            &[
                "trace",
                "parent",
                "child",
                "children",
                "contained",
                "uncontained",
                "parents w/o child",
                "holds",
            ],
        );
        let mut funcs = Table::new(
            format!("Chain {title}: inclusive durations of outermost calls (ms)"),
            &[
                "trace",
                "function",
                "calls",
                "outermost",
                "calls/context",
                "median",
                "mean",
                "p90",
                "min",
                "max",
                "total",
            ],
        );
        for t in &out.traces {
            let Some(c) = t.chains.get(ci) else { continue };
            for l in &c.links {
                links.row(vec![
                    short(&t.path).into(),
                    l.parent.clone().into(),
                    l.child.clone().into(),
                    l.children.into(),
                    l.contained.into(),
                    l.uncontained.into(),
                    l.parents_without_child.into(),
                    if l.holds { "yes" } else { "NO" }.into(),
                ]);
            }
            for f in &c.functions {
                let mut row = vec![short(&t.path).into()];
                row.extend(function_cells(f));
                funcs.row(row);
            }
        }
        for t in &out.traces {
            funcs.notes.push(match (&t.context, t.contexts) {
                (Some(name), Some(n)) => format!("{}: {n} step contexts ({name})", short(&t.path)),
                _ => format!("{}: no step contexts", short(&t.path)),
            });
            if !t.complete {
                links.notes.push(format!(
                    "{}: INCOMPLETE — {}",
                    short(&t.path),
                    t.error.as_deref().unwrap_or("")
                ));
            }
        }
        if ci == 0 {
            for (p, l) in paths.iter().zip(&label) {
                if p != l {
                    links.notes.push(format!("{l} = {p}"));
                }
            }
        }
        tables.push(links);
        tables.push(funcs);
        if let Some(cmp) = &out.comparison {
            let (b, c) = (short(&cmp.baseline), short(&cmp.candidate));
            let mut ct = Table {
                title: format!("Chain {title}: {c} vs {b} (median ratio = {c} / {b})"),
                headers: vec![
                    "function".into(),
                    format!("calls {b}"),
                    format!("calls {c}"),
                    format!("median ms {b}"),
                    format!("median ms {c}"),
                    "median ratio".into(),
                ],
                ..Default::default()
            };
            let calls = |t: &TraceHierarchy, name: &str| -> Cell {
                t.chains
                    .get(ci)
                    .and_then(|c| c.functions.iter().find(|f| f.name == name))
                    .map_or(Cell::Null, |f| f.outermost_calls.into())
            };
            for name in &out.traces[0].chains[ci].chain {
                let Some(r) = cmp.functions.iter().find(|r| &r.name == name) else {
                    continue;
                };
                ct.row(vec![
                    name.clone().into(),
                    calls(&out.traces[0], name),
                    calls(&out.traces[1], name),
                    ms(r.baseline_median_ms),
                    ms(r.candidate_median_ms),
                    Cell::opt_f(r.median_ratio, 3),
                ]);
            }
            ct.notes
                .push("calls are outermost calls; medians over them".into());
            tables.push(ct);
        }
        let mut ex = Table::new(
            format!("Chain {title}: uncontained children (examples)"),
            &[
                "trace",
                "child",
                "name",
                "ts (µs)",
                "dur (µs)",
                "pid/tid",
                "overlapping parent events",
            ],
        );
        for t in &out.traces {
            let Some(c) = t.chains.get(ci) else { continue };
            for l in &c.links {
                for e in &l.examples {
                    let mut over = e.overlapping.join("; ");
                    if e.overlapping_total > e.overlapping.len() as u64 {
                        over.push_str(&format!(
                            "; … {} more",
                            e.overlapping_total - e.overlapping.len() as u64
                        ));
                    }
                    if over.is_empty() {
                        over = "none".into();
                    }
                    ex.row(vec![
                        short(&t.path).into(),
                        l.child.clone().into(),
                        e.name.clone().into(),
                        e.ts.clone().into(),
                        e.dur.clone().into(),
                        e.lane.clone().into(),
                        over.into(),
                    ]);
                }
            }
        }
        if !ex.rows.is_empty() {
            tables.push(ex);
        }
    }
    tables
}

/// Machine-readable tables: links, functions, comparison, examples (one
/// row per item, full paths).
pub fn csv_tables(out: &HierarchyOutput) -> Vec<Table> {
    let mut links = Table::new(
        "links",
        &[
            "path",
            "chain",
            "parent",
            "child",
            "children",
            "contained",
            "uncontained",
            "parents_without_child",
            "holds",
            "complete",
        ],
    );
    let mut funcs = Table::new(
        "functions",
        &[
            "path",
            "chain",
            "name",
            "calls",
            "outermost_calls",
            "calls_per_context",
            "median_ms",
            "mean_ms",
            "p90_ms",
            "min_ms",
            "max_ms",
            "total_ms",
        ],
    );
    let mut ex = Table::new(
        "examples",
        &[
            "path",
            "chain",
            "parent",
            "child",
            "name",
            "ts_us",
            "dur_us",
            "lane",
            "event_index",
            "overlapping",
        ],
    );
    for t in &out.traces {
        for c in &t.chains {
            let chain = c.chain.join(">");
            for l in &c.links {
                links.row(vec![
                    t.path.clone().into(),
                    chain.clone().into(),
                    l.parent.clone().into(),
                    l.child.clone().into(),
                    l.children.into(),
                    l.contained.into(),
                    l.uncontained.into(),
                    l.parents_without_child.into(),
                    l.holds.to_string().into(),
                    t.complete.to_string().into(),
                ]);
                for e in &l.examples {
                    ex.row(vec![
                        t.path.clone().into(),
                        chain.clone().into(),
                        l.parent.clone().into(),
                        l.child.clone().into(),
                        e.name.clone().into(),
                        e.ts.clone().into(),
                        e.dur.clone().into(),
                        e.lane.clone().into(),
                        e.event_index.into(),
                        e.overlapping.join("; ").into(),
                    ]);
                }
            }
            for f in &c.functions {
                let mut row = vec![t.path.clone().into(), chain.clone().into()];
                row.extend(function_cells(f));
                funcs.row(row);
            }
        }
    }
    let mut tables = vec![links, funcs];
    if let Some(cmp) = &out.comparison {
        let mut ct = Table::new(
            "comparison",
            &[
                "baseline",
                "candidate",
                "name",
                "baseline_median_ms",
                "candidate_median_ms",
                "median_ratio",
            ],
        );
        for r in &cmp.functions {
            ct.row(vec![
                cmp.baseline.clone().into(),
                cmp.candidate.clone().into(),
                r.name.clone().into(),
                ms(r.baseline_median_ms),
                ms(r.candidate_median_ms),
                Cell::opt_f(r.median_ratio, 3),
            ]);
        }
        tables.push(ct);
    }
    if !ex.rows.is_empty() {
        tables.push(ex);
    }
    tables
}
