//! The view of `kernels`' results: [`columns`] (one per figure of a
//! trace, shared by the side-by-side table, the CSV and `batch`'s
//! traces.csv), the timeline, the top kernels, the comparison and the
//! per-context rows; [`KernelsReport`] is the document `kernels` prints.

use crate::analyses::kernels::{self, Comparison, Kernels, KernelsSpec, TraceKernels};
use crate::command::{self, ApiError, Command, Document, Said, TraceOutcome};
use crate::contexts::{Contexts, Selector};
use crate::model::Ns;
use crate::report::{self, Cell, Format, Table};
use crate::stats::Summary;
use crate::text::ellipsize_middle as ellipsize;
use crate::views::Column;
use serde::Serialize;
use std::io::{self, Write};

/// The document `kernels` prints (`-f json`): every trace's figures and,
/// with two traces, their comparison (first = baseline).
#[derive(Debug, Serialize)]
pub struct KernelsReport {
    pub traces: Vec<TraceKernels>,
    pub comparison: Option<Comparison>,
}

impl KernelsReport {
    pub fn new(traces: Vec<TraceKernels>) -> Self {
        let comparison = (traces.len() == 2).then(|| kernels::compare(&traces[0], &traces[1]));
        KernelsReport { traces, comparison }
    }

    /// Writes the report in `format`; `per_context` adds every context.
    pub fn write<W: Write>(
        &self,
        out: &mut W,
        format: Format,
        per_context: bool,
    ) -> io::Result<()> {
        let labels: Vec<String> = self
            .traces
            .iter()
            .map(|t| crate::views::short(&t.path))
            .collect();
        let tables = human_tables(self, &labels, per_context);
        let csv = csv_tables(self);
        if format == Format::Json && per_context {
            let rows = self.traces.iter().map(|t| &t.rows);
            report::render(
                out,
                format,
                &crate::views::json_with_rows(self, rows),
                &tables,
                &csv,
            )
        } else {
            report::render(out, format, self, &tables, &csv)
        }
    }
}

command::trace_outcome!(TraceKernels);

impl Document for KernelsReport {
    fn write_to(&self, out: &mut dyn Write, format: Format, per_context: bool) -> io::Result<()> {
        let mut out = out;
        self.write(&mut out, format, per_context)
    }
    fn json_value(&self, per_context: bool) -> Result<serde_json::Value, ApiError> {
        if per_context {
            Ok(crate::views::json_with_rows(
                self,
                self.traces.iter().map(|t| &t.rows),
            ))
        } else {
            crate::command::json_of(self)
        }
    }
    fn outcomes(&self) -> Vec<&dyn TraceOutcome> {
        command::outcomes(&self.traces)
    }
}

/// `torchtrace kernels`: one or two traces (baseline first).
impl Command for Kernels {
    type Options = KernelsSpec;
    type Report = KernelsReport;

    fn configure(options: &KernelsSpec, _: &Selector) -> Result<KernelsSpec, ApiError> {
        Ok(options.clone())
    }

    fn said(k: &TraceKernels, contexts: &Contexts) -> Said {
        let problem = command::context_problem(contexts).or_else(|| {
            (k.contexts_with_gpu_work == 0 && k.complete).then(|| {
                format!(
                    "{}: none of the {} contexts launched GPU work that the trace recorded",
                    k.path, k.contexts
                )
            })
        });
        let mut notes: Vec<String> = command::context_note(contexts).into_iter().collect();
        if k.contexts > 0 && k.launch_scope.contains("process") {
            // Issue 60: on a training trace kernels' busy per step was 3.7×
            // iterations' with nothing to say why.
            notes.push(format!(
                "{}: launch scope process: the launches of every thread of the process count (ProfilerStep ranges: a training run's autograd thread launches the backward pass); `iterations` counts only the step's own thread — `--launch-scope thread` gives its scope",
                k.path
            ));
        }
        notes.extend(command::path_notes(&k.path, &k.notes));
        Said {
            problems: problem.into_iter().collect(),
            notes,
        }
    }

    fn report(outputs: Vec<TraceKernels>, _: &Self::Config) -> KernelsReport {
        KernelsReport::new(outputs)
    }
}

type Figure = Column<TraceKernels>;

fn fig(
    key: &str,
    label: &str,
    cell: impl Fn(&TraceKernels) -> Cell + Send + Sync + 'static,
) -> Figure {
    Column::new(key, label, cell)
}

/// The statistics of one per-context figure, as columns `<key>_<stat>`.
fn stats(key: &str, label: &str, unit: &str, get: fn(&TraceKernels) -> &Summary) -> Vec<Figure> {
    Summary::FIELDS
        .iter()
        .map(|&(stat, g)| {
            fig(
                &format!("{key}_{stat}{unit}"),
                &format!("{label} {stat}"),
                move |t| Cell::opt_f(g(get(t)), 3),
            )
        })
        .collect()
}

/// Every per-trace figure, in table order.
pub fn columns() -> Vec<Figure> {
    let mut v = vec![
        fig("context", "context", |t| Cell::text(t.context.clone())),
        fig("contexts", "contexts", |t| t.contexts.into()),
        fig("contexts_with_gpu_work", "contexts with GPU work", |t| {
            t.contexts_with_gpu_work.into()
        }),
        fig("completion_tokens", "completion tokens", |t| {
            Cell::opt_i(t.completion_tokens)
        }),
        fig("launches", "launches", |t| t.launches.into()),
        fig("graph_launches", "graph launches", |t| {
            t.graph_launches.into()
        }),
        fig("kernels", "kernels", |t| t.kernels.into()),
        fig("memcpys", "memcpys", |t| t.memcpys.into()),
        fig("memsets", "memsets", |t| t.memsets.into()),
    ];
    v.extend(stats(
        "kernels_per_context",
        "kernels per context",
        "",
        |t| &t.kernels_per_context,
    ));
    v.push(fig("kernels_per_token", "kernels per token", |t| {
        Cell::opt_f(t.kernels_per_token, 2)
    }));
    v.extend(stats("gpu_span", "GPU span (ms)", "_ms", |t| {
        &t.gpu_span_ms
    }));
    v.extend(stats("gpu_busy", "GPU busy (ms)", "_ms", |t| {
        &t.gpu_busy_ms
    }));
    v.extend(stats("gpu_idle", "GPU idle (ms)", "_ms", |t| {
        &t.gpu_idle_ms
    }));
    v.extend(stats("launch_latency", "launch latency (ms)", "_ms", |t| {
        &t.launch_latency_ms
    }));
    v.extend(stats(
        "launch_to_activity_start",
        "launch→start (ms)",
        "_ms",
        |t| &t.launch_to_activity_start_ms,
    ));
    v.push(fig("launch_scope", "launch scope", |t| {
        Cell::text(t.launch_scope.clone())
    }));
    v.push(fig(
        "gpu_span_per_token_ms",
        "GPU span per token (ms)",
        |t| Cell::opt_f(t.gpu_span_per_token_ms, 4),
    ));
    v.push(fig(
        "gpu_busy_per_token_ms",
        "GPU busy per token (ms)",
        |t| Cell::opt_f(t.gpu_busy_per_token_ms, 4),
    ));
    v
}

/// The figures shown in the terminal table (the CSV has every one).
fn shown(key: &str) -> bool {
    let stat = ["_mean", "_p10", "_min", "_max", "_sum"];
    !(stat.iter().any(|s| key.contains(s)) || key.ends_with("_p90") && key.starts_with("kernels"))
}

/// Side-by-side tables for people: figures, timeline, top kernels,
/// comparison and (optionally) per-context rows.
fn human_tables(r: &KernelsReport, labels: &[String], per_context: bool) -> Vec<Table> {
    let mut heads = vec!["figure".to_string()];
    heads.extend(labels.iter().cloned());
    let mut t = Table {
        title: "GPU work of the step contexts (launch → activity correlation)".into(),
        headers: heads.clone(),
        ..Default::default()
    };
    for f in columns().into_iter().filter(|f| shown(&f.key)) {
        let mut row = vec![Cell::text(f.label.clone().unwrap_or_default())];
        row.extend(r.traces.iter().map(|x| f.cell(x)));
        t.row(row);
    }
    for (x, label) in r.traces.iter().zip(labels) {
        if !x.complete {
            t.notes.push(format!(
                "{label}: INCOMPLETE — {}",
                x.error.as_deref().unwrap_or("")
            ));
        }
    }
    // No trace with a context that launched GPU work (each one's problem
    // said why on stderr): tables of dashes and an empty top list would
    // only repeat it (issue 60); the whole-trace timeline needs no context
    // and stays.
    let none = !r.traces.is_empty()
        && r.traces
            .iter()
            .all(|x| x.contexts_with_gpu_work == 0 && x.complete);
    if none {
        return vec![timeline_table(r, &heads)];
    }
    let mut tables = vec![t, timeline_table(r, &heads)];
    tables.push(top_table(r, labels));
    if let Some((human, _)) = graph_tables(r, labels) {
        tables.push(human);
    }
    if let Some(c) = &r.comparison {
        tables.push(comparison_table(c, labels));
    }
    if per_context {
        tables.push(per_context_table(r, labels));
    }
    tables
}

/// A timeline figure.
pub type TimelineGet = fn(&kernels::Timeline) -> Option<f64>;

/// The timeline's figures in table order: machine key (suffix `_ms`) and
/// value; `kernels`' tables and `batch`'s gpu_work tables cut theirs from it.
pub const TIMELINE: [(&str, TimelineGet); 6] = [
    ("total", |t| t.total_ms),
    ("busy", |t| t.busy_ms),
    ("idle", |t| t.idle_ms),
    ("compute", |t| t.compute_ms),
    ("exposed_comm", |t| t.exposed_comm_ms),
    ("exposed_memcpy", |t| t.exposed_memcpy_ms),
];

fn timeline_table(r: &KernelsReport, heads: &[String]) -> Table {
    let mut t = Table {
        title: "Whole-trace GPU timeline (TraceLens definitions)".into(),
        headers: heads.to_vec(),
        ..Default::default()
    };
    let labels = [
        "total (ms)",
        "busy (ms)",
        "idle (ms)",
        "compute (ms)",
        "exposed communication (ms)",
        "exposed memcpy (ms)",
    ];
    for (label, (_, get)) in labels.into_iter().zip(TIMELINE) {
        let mut row = vec![Cell::text(label)];
        row.extend(r.traces.iter().map(|x| Cell::opt_f(get(&x.timeline), 3)));
        t.row(row);
    }
    t
}

fn top_table(r: &KernelsReport, labels: &[String]) -> Table {
    let mut t = Table::new(
        "Top kernels in the step contexts (by total time)",
        &[
            "trace",
            "kernel",
            "calls",
            "calls/context",
            "total (ms)",
            "share of busy (%)",
            "median (µs)",
        ],
    );
    for (x, label) in r.traces.iter().zip(labels) {
        for k in &x.top_kernels {
            t.row(vec![
                label.clone().into(),
                ellipsize(&k.name, 60).into(),
                k.calls.into(),
                Cell::opt_f(k.calls_per_context, 2),
                Cell::Float(k.total_ms, 3),
                Cell::opt_f(k.share_pct, 1),
                Cell::Float(k.median_us, 3),
            ]);
        }
    }
    t
}

fn comparison_table(c: &Comparison, labels: &[String]) -> Table {
    let mut t = Table::new(
        format!(
            "Comparison: {} (baseline) vs {} (candidate)",
            labels[0], labels[1]
        ),
        &["figure", "value"],
    );
    t.row(vec![
        "S_context by correlation (GPU span per token)".into(),
        Cell::opt_f(c.s_context_correlation, 3),
    ]);
    t.row(vec![
        "S_context by correlation (GPU busy per token)".into(),
        Cell::opt_f(c.s_context_busy, 3),
    ]);
    t.row(vec![
        "kernels per token ratio".into(),
        Cell::opt_f(c.kernels_per_token_ratio, 3),
    ]);
    t
}

fn per_context_table(r: &KernelsReport, labels: &[String]) -> Table {
    let mut t = Table::new(
        "Per context",
        &[
            "trace",
            "start_us",
            "cpu_ms",
            "launches",
            "graph_launches",
            "kernels",
            "gpu_span_ms",
            "gpu_busy_ms",
            "launch_latency_us",
            "launch_to_activity_start_us",
            "launch_scope",
        ],
    );
    let ms = |v: Option<i64>| Cell::opt_f(v.map(|n| n as f64 / 1e6), 3);
    for (x, label) in r.traces.iter().zip(labels) {
        for row in &x.rows {
            t.row(vec![
                label.clone().into(),
                Ns(row.start_ns).to_string().into(),
                Cell::Float(row.cpu_ns as f64 / 1e6, 3),
                row.launches.into(),
                row.graph_launches.into(),
                row.kernels.into(),
                ms(row.gpu_span_ns),
                ms(row.gpu_busy_ns),
                Cell::opt_f(row.launch_latency_ns.map(|n| n / 1e3), 3),
                Cell::opt_f(row.launch_to_activity_start_ns.map(|n| n / 1e3), 3),
                Cell::text(row.launch_scope.to_string()),
            ]);
        }
    }
    t
}

/// Machine tables: one row per trace with every figure and the timeline;
/// the top kernels (names whole); the comparison.
/// Inside the graphs (issue 57): the human and CSV tables.
fn graph_tables(r: &KernelsReport, labels: &[String]) -> Option<(Table, Table)> {
    let views: Vec<(&str, Option<&crate::graphs::replay::GraphView>)> = labels
        .iter()
        .zip(&r.traces)
        .map(|(l, t)| (l.as_str(), t.inside_graphs.as_ref()))
        .collect();
    crate::graphs::replay::tables(&views, kernels::DEFAULT_TOP)
}

fn csv_tables(r: &KernelsReport) -> Vec<Table> {
    let figs = columns();
    let tl: Vec<String> = TIMELINE
        .iter()
        .map(|(k, _)| format!("timeline_{k}_ms"))
        .collect();
    let mut heads: Vec<&str> = vec!["path"];
    heads.extend(figs.iter().map(|f| f.key.as_str()));
    heads.extend(tl.iter().map(String::as_str));
    heads.push("complete");
    let mut t = Table::new("kernels", &heads);
    for x in &r.traces {
        let mut row: Vec<Cell> = vec![x.path.clone().into()];
        row.extend(figs.iter().map(|f| f.cell(x)));
        row.extend(
            TIMELINE
                .iter()
                .map(|(_, get)| Cell::opt_f(get(&x.timeline), 6)),
        );
        row.push(x.complete.to_string().into());
        t.row(row);
    }
    let mut top = Table::new(
        "top_kernels",
        &[
            "path",
            "name",
            "calls",
            "calls_per_context",
            "total_ms",
            "share_pct",
            "median_us",
        ],
    );
    for x in &r.traces {
        for k in &x.top_kernels {
            top.row(vec![
                x.path.clone().into(),
                k.name.clone().into(),
                k.calls.into(),
                Cell::opt_f(k.calls_per_context, 4),
                Cell::Float(k.total_ms, 6),
                Cell::opt_f(k.share_pct, 3),
                Cell::Float(k.median_us, 3),
            ]);
        }
    }
    let mut tables = vec![t, top];
    let paths: Vec<String> = r.traces.iter().map(|t| t.path.clone()).collect();
    if let Some((_, csv)) = graph_tables(r, &paths) {
        tables.push(csv);
    }
    if let Some(c) = &r.comparison {
        let mut ct = Table::new(
            "comparison",
            &[
                "baseline",
                "candidate",
                "s_context_correlation",
                "s_context_busy",
                "kernels_per_token_ratio",
            ],
        );
        ct.row(vec![
            c.baseline.clone().into(),
            c.candidate.clone().into(),
            Cell::opt_f(c.s_context_correlation, 6),
            Cell::opt_f(c.s_context_busy, 6),
            Cell::opt_f(c.kernels_per_token_ratio, 6),
        ]);
        tables.push(ct);
    }
    tables
}
