//! The view of `hierarchy`'s results: the columns of a chain link and of
//! a chain function, the trace labels of its tables, and
//! [`HierarchyReport`], the document `hierarchy` prints in every format.
//! `batch`'s traces.csv and Table 9 (`super::batch`) take their function
//! columns from here.

use crate::analyses::hierarchy::{
    self, ChainsSpec, Comparison, FunctionStats, Hierarchy, HierarchyOptions, Link, TraceHierarchy,
};
use crate::command::{self, ApiError, Command, Document, Said, TraceOutcome};
use crate::contexts::{Contexts, Selector};
use crate::report::{self, Cell, Format, Table};
use crate::runinfo;
use crate::views::Column;
use serde::Serialize;
use std::io::{self, Write};
use std::path::Path;

fn ms(v: Option<f64>) -> Cell {
    Cell::opt_f(v, 3)
}

/// A chain function's figures, from its name to its total. `batch` keeps
/// calls, outermost calls and the median per function.
pub fn function_columns() -> Vec<Column<FunctionStats>> {
    type F = FunctionStats;
    vec![
        Column::new("name", "function", |f: &F| f.name.clone().into()).not_batch(),
        Column::new("calls", "calls", |f: &F| f.calls.into()),
        Column::new("outermost_calls", "outermost", |f: &F| {
            f.outermost_calls.into()
        }),
        Column::new("calls_per_context", "calls/context", |f: &F| {
            Cell::opt_f(f.calls_per_context, 3)
        })
        .not_batch(),
        Column::new("median_ms", "median", |f: &F| ms(f.median_ms)),
        Column::new("mean_ms", "mean", |f: &F| ms(f.mean_ms)).not_batch(),
        Column::new("p90_ms", "p90", |f: &F| ms(f.p90_ms)).not_batch(),
        Column::new("min_ms", "min", |f: &F| ms(f.min_ms)).not_batch(),
        Column::new("max_ms", "max", |f: &F| ms(f.max_ms)).not_batch(),
        Column::new("total_ms", "total", |f: &F| ms(f.total_ms)).not_batch(),
        Column::new("kernels_per_call", "kernels/call", |f: &F| {
            Cell::opt_f(f.gpu.as_ref().and_then(|g| g.kernels_per_call), 2)
        }),
        Column::new("gpu_busy_median_ms", "GPU busy median", |f: &F| {
            ms(f.gpu.as_ref().and_then(|g| g.gpu_busy_median_ms))
        }),
        Column::new("gpu_busy_per_token_ms", "GPU busy/token", |f: &F| {
            Cell::opt_f(f.gpu.as_ref().and_then(|g| g.gpu_busy_per_token_ms), 4)
        }),
    ]
}

/// A chain link's counts (parent and child, and whether it holds, are
/// written by each table in its own way).
pub fn link_columns() -> Vec<Column<Link>> {
    vec![
        Column::new("children", "children", |l: &Link| l.children.into()),
        Column::new("contained", "contained", |l: &Link| l.contained.into()),
        Column::new("uncontained", "uncontained", |l: &Link| {
            l.uncontained.into()
        }),
        Column::new("parents_without_child", "parents w/o child", |l: &Link| {
            l.parents_without_child.into()
        }),
    ]
}

fn labels_of<T>(cols: &[Column<T>]) -> Vec<&str> {
    cols.iter().filter_map(|c| c.label.as_deref()).collect()
}

fn keys_of<T>(cols: &[Column<T>]) -> Vec<&str> {
    cols.iter().map(|c| c.key.as_str()).collect()
}

fn cells<T>(cols: &[Column<T>], v: &T) -> Vec<Cell> {
    cols.iter().map(|c| c.cell(v)).collect()
}

/// Short trace labels for human tables: the file stems when they are
/// distinct and short, else the parent directories' names when those are
/// distinct (vLLM names every worker trace `dp0_pp0_…rank0.<ns>.pt.trace.json.gz`,
/// one run per directory).
pub fn labels(paths: &[&str]) -> Vec<String> {
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
    let stems: Vec<String> = paths.iter().map(|p| runinfo::file_stem(p)).collect();
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

/// The document `hierarchy` prints: every trace's chains and, with two
/// traces, median ratios (second / first).
#[derive(Debug, Serialize)]
pub struct HierarchyReport {
    pub traces: Vec<TraceHierarchy>,
    /// With exactly two traces: second / first.
    pub comparison: Option<Comparison>,
}

/// The human tables' trace labels.
struct Labels<'a> {
    paths: Vec<&'a str>,
    labels: Vec<String>,
}

impl Labels<'_> {
    fn of(&self, p: &str) -> String {
        self.paths
            .iter()
            .position(|q| *q == p)
            .map_or_else(|| p.to_string(), |k| self.labels[k].clone())
    }
}

command::trace_outcome!(TraceHierarchy);

impl Document for HierarchyReport {
    /// `hierarchy` has no per-context rows: `per_context` is ignored.
    fn write_to(&self, out: &mut dyn Write, format: Format, _per_context: bool) -> io::Result<()> {
        let mut out = out;
        self.write(&mut out, format)
    }
    fn json_value(&self, _per_context: bool) -> Result<serde_json::Value, ApiError> {
        crate::command::json_of(self)
    }
    fn outcomes(&self) -> Vec<&dyn TraceOutcome> {
        command::outcomes(&self.traces)
    }
}

/// `torchtrace hierarchy`: any number of traces. Its problems are the
/// broken links; its notes the traces without step contexts.
impl Command for Hierarchy {
    type Options = ChainsSpec;
    type Report = HierarchyReport;
    const PROBLEMS_AFTER_REPORT: bool = true;

    fn configure(options: &ChainsSpec, selector: &Selector) -> Result<HierarchyOptions, ApiError> {
        options
            .options(selector)
            .map_err(|e| ApiError::Arguments(format!("bad chain: {e}")))
    }

    fn said(t: &TraceHierarchy, _: &Contexts) -> Said {
        let mut said = Said::default();
        if t.contexts.is_none() {
            let text = format!(
                "{}: no step contexts found: calls per context are null",
                t.path
            );
            said.notes.push(text);
        }
        // A chain none of whose functions occurs checked nothing: its
        // zeros and "holds" would read as a success (a chain of another
        // engine's names, a typo).
        for c in t
            .chains
            .iter()
            .filter(|c| !c.functions.is_empty() && c.functions.iter().all(|f| f.calls == 0))
        {
            said.problems.push(format!(
                "{}: none of {} occurs in the trace: the chain checked nothing (give --chain with names the trace has)",
                t.path,
                c.chain.join(" > ")
            ));
        }
        for l in t.chains.iter().flat_map(|c| &c.links).filter(|l| !l.holds) {
            said.problems.push(format!(
                "{}: {} of {} {} not inside {}",
                t.path, l.uncontained, l.children, l.child, l.parent
            ));
        }
        said
    }

    fn report(outputs: Vec<TraceHierarchy>, _: &Self::Config) -> HierarchyReport {
        HierarchyReport::new(outputs)
    }
}

impl HierarchyReport {
    pub fn new(traces: Vec<TraceHierarchy>) -> Self {
        let comparison = (traces.len() == 2).then(|| hierarchy::compare(&traces[0], &traces[1]));
        HierarchyReport { traces, comparison }
    }

    /// Every link of every trace holds.
    pub fn holds(&self) -> bool {
        self.traces.iter().all(TraceHierarchy::holds)
    }

    /// Writes the report in `format`.
    pub fn write<W: Write>(&self, out: &mut W, format: Format) -> io::Result<()> {
        report::render(out, format, self, &self.tables(), &self.csv_tables())
    }

    /// Per chain: a links table, a functions table (and with two traces a
    /// comparison table with median ratios), then examples of uncontained
    /// children.
    pub fn tables(&self) -> Vec<Table> {
        let paths: Vec<&str> = self.traces.iter().map(|t| t.path.as_str()).collect();
        let labels = Labels {
            labels: labels(&paths),
            paths,
        };
        let mut tables = Vec::new();
        let nchains = self.traces.first().map_or(0, |t| t.chains.len());
        for ci in 0..nchains {
            let title = self.traces[0].chains[ci].chain.join(" > ");
            tables.push(self.links_table(ci, &title, &labels));
            tables.push(self.functions_table(ci, &title, &labels));
            if let Some(cmp) = &self.comparison {
                tables.push(self.comparison_table(cmp, ci, &title, &labels));
            }
            let ex = self.examples_table(ci, &title, &labels);
            if !ex.rows.is_empty() {
                tables.push(ex);
            }
        }
        tables
    }

    fn links_table(&self, ci: usize, title: &str, lb: &Labels) -> Table {
        let lcols = link_columns();
        let mut heads = vec!["trace", "parent", "child"];
        heads.extend(labels_of(&lcols));
        heads.push("holds");
        let mut links = Table::new(format!("Chain {title}: containment"), &heads);
        for t in &self.traces {
            let Some(c) = t.chains.get(ci) else { continue };
            for l in &c.links {
                let mut row = vec![
                    lb.of(&t.path).into(),
                    l.parent.clone().into(),
                    l.child.clone().into(),
                ];
                row.extend(cells(&lcols, l));
                row.push(if l.holds { "yes" } else { "NO" }.into());
                links.row(row);
            }
        }
        for t in self.traces.iter().filter(|t| !t.complete) {
            links.notes.push(format!(
                "{}: INCOMPLETE — {}",
                lb.of(&t.path),
                t.error.as_deref().unwrap_or("")
            ));
        }
        if ci == 0 {
            for (p, l) in lb.paths.iter().zip(&lb.labels) {
                if p != l {
                    links.notes.push(format!("{l} = {p}"));
                }
            }
        }
        links
    }

    fn functions_table(&self, ci: usize, title: &str, lb: &Labels) -> Table {
        let fcols = function_columns();
        let mut heads = vec!["trace"];
        heads.extend(labels_of(&fcols));
        let mut funcs = Table::new(
            format!("Chain {title}: inclusive durations of outermost calls (ms)"),
            &heads,
        );
        for t in &self.traces {
            let Some(c) = t.chains.get(ci) else { continue };
            for f in &c.functions {
                let mut row = vec![lb.of(&t.path).into()];
                row.extend(cells(&fcols, f));
                funcs.row(row);
            }
        }
        for t in &self.traces {
            funcs.notes.push(match (&t.context, t.contexts) {
                (Some(name), Some(n)) => format!("{}: {n} step contexts ({name})", lb.of(&t.path)),
                _ => format!("{}: no step contexts", lb.of(&t.path)),
            });
        }
        funcs
    }

    fn comparison_table(&self, cmp: &Comparison, ci: usize, title: &str, lb: &Labels) -> Table {
        let (b, c) = (lb.of(&cmp.baseline), lb.of(&cmp.candidate));
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
        for name in &self.traces[0].chains[ci].chain {
            let Some(r) = cmp.functions.iter().find(|r| &r.name == name) else {
                continue;
            };
            ct.row(vec![
                name.clone().into(),
                calls(&self.traces[0], name),
                calls(&self.traces[1], name),
                ms(r.baseline_median_ms),
                ms(r.candidate_median_ms),
                Cell::opt_f(r.median_ratio, 3),
            ]);
        }
        ct.notes
            .push("calls are outermost calls; medians over them".into());
        ct
    }

    fn examples_table(&self, ci: usize, title: &str, lb: &Labels) -> Table {
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
        for t in &self.traces {
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
                        lb.of(&t.path).into(),
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
        ex
    }

    /// Machine-readable tables: links, functions, comparison, examples
    /// (one row per item, full paths).
    pub fn csv_tables(&self) -> Vec<Table> {
        let (lcols, fcols) = (link_columns(), function_columns());
        let mut heads = vec!["path", "chain", "parent", "child"];
        heads.extend(keys_of(&lcols));
        heads.extend(["holds", "complete"]);
        let mut links = Table::new("links", &heads);
        let mut heads = vec!["path", "chain"];
        heads.extend(keys_of(&fcols));
        let mut funcs = Table::new("functions", &heads);
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
        for t in &self.traces {
            for c in &t.chains {
                let chain = c.chain.join(">");
                for l in &c.links {
                    let mut row = vec![
                        t.path.clone().into(),
                        chain.clone().into(),
                        l.parent.clone().into(),
                        l.child.clone().into(),
                    ];
                    row.extend(cells(&lcols, l));
                    row.extend([l.holds.to_string().into(), t.complete.to_string().into()]);
                    links.row(row);
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
                    row.extend(cells(&fcols, f));
                    funcs.row(row);
                }
            }
        }
        let mut tables = vec![links, funcs];
        if let Some(cmp) = &self.comparison {
            tables.push(comparison_csv(cmp));
        }
        if !ex.rows.is_empty() {
            tables.push(ex);
        }
        tables
    }
}

fn comparison_csv(cmp: &Comparison) -> Table {
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
    ct
}
