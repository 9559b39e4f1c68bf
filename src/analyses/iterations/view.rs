//! The view of `iterations`' results: [`columns`] (one per figure of a
//! trace: the side-by-side table, the CSV and `batch`'s traces.csv), the
//! phase table, the AR-vs-MTP comparison with its decomposition and the
//! per-iteration rows; [`IterationsReport`] is the document it prints.

use super::{Comparison, Iterations, IterationsSpec, Phase, TraceIterations};
use crate::command::{self, ApiError, Command, Document, Said, TraceOutcome};
use crate::contexts::{Contexts, Selector};
use crate::report::{self, Cell, Format, Table};
use crate::views::Column;
use serde::Serialize;
use std::io::{self, Write};

/// The document `iterations` prints (`-f json`).
#[derive(Debug, Serialize)]
pub struct IterationsReport {
    pub traces: Vec<TraceIterations>,
    pub comparison: Option<Comparison>,
}

impl IterationsReport {
    pub fn new(traces: Vec<TraceIterations>) -> Self {
        let comparison = (traces.len() == 2).then(|| super::compare(&traces[0], &traces[1]));
        IterationsReport { traces, comparison }
    }

    /// The JSON document; `rows`: with each trace's iterations under `rows`.
    pub fn json(&self, rows: bool) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if rows {
            if let Some(arr) = v.get_mut("traces").and_then(|t| t.as_array_mut()) {
                for (j, t) in arr.iter_mut().zip(&self.traces) {
                    j["rows"] = serde_json::to_value(&t.rows).unwrap_or_default();
                }
            }
        }
        v
    }

    pub fn write<W: Write>(&self, out: &mut W, format: Format, rows: bool) -> io::Result<()> {
        let labels: Vec<String> = self
            .traces
            .iter()
            .map(|t| crate::views::short(&t.path))
            .collect();
        let tables = human_tables(self, &labels, rows);
        let csv = csv_tables(self, rows);
        report::render(out, format, &self.json(rows), &tables, &csv)
    }
}

command::trace_outcome!(TraceIterations);

impl Document for IterationsReport {
    fn write_to(&self, out: &mut dyn Write, format: Format, rows: bool) -> io::Result<()> {
        let mut out = out;
        self.write(&mut out, format, rows)
    }
    fn json_value(&self, rows: bool) -> Result<serde_json::Value, ApiError> {
        Ok(self.json(rows))
    }
    fn outcomes(&self) -> Vec<&dyn TraceOutcome> {
        command::outcomes(&self.traces)
    }
}

/// `torchtrace iterations`: one or two traces (AR first).
impl Command for Iterations {
    type Options = IterationsSpec;
    type Report = IterationsReport;

    fn configure(options: &IterationsSpec, _: &Selector) -> Result<IterationsSpec, ApiError> {
        if options
            .sample_names
            .iter()
            .chain(&options.draft_names)
            .any(String::is_empty)
        {
            return Err(ApiError::Arguments(
                "iterations: a phase name may not be empty".into(),
            ));
        }
        Ok(options.clone())
    }

    fn said(t: &TraceIterations, contexts: &Contexts) -> Said {
        let mut problems: Vec<String> = command::context_problem(contexts).into_iter().collect();
        let busy: i128 = t.rows.iter().map(|r| r.gpu_busy_ns).sum();
        let launches: u64 = t.rows.iter().map(|r| r.launches).sum();
        if problems.is_empty() && t.complete {
            if t.iterations_closed == 0 {
                problems.push(format!(
                    "{}: none of the {} selected step contexts is followed by another step annotation on its thread: no closed iteration to measure",
                    t.path, t.contexts
                ));
            } else if launches == 0 && busy == 0 {
                problems.push(format!(
                    "{}: none of the {} iterations launched GPU work that the trace recorded",
                    t.path, t.contexts
                ));
            }
        }
        let mut notes: Vec<String> = command::context_note(contexts).into_iter().collect();
        if contexts.fallback.is_some() && t.contexts > 0 {
            // Issue 60: kernels (process scope for these ranges) and
            // iterations disagreed on GPU busy per step with no word why.
            notes.push(format!(
                "{}: iterations count the launches of the step's own thread only; `kernels` counts every thread of the process for ProfilerStep ranges (a training run's autograd thread launches the backward pass), so its GPU busy per step is larger (`kernels --launch-scope thread` gives this scope)",
                t.path
            ));
        }
        notes.extend(command::path_notes(&t.path, &t.notes));
        if t.completion_tokens.is_none() && t.contexts > 0 {
            notes.push(format!(
                "{}: completion tokens unknown (give --tokens or --summary): per-token figures are null",
                t.path
            ));
        }
        Said { problems, notes }
    }

    fn report(outputs: Vec<TraceIterations>, _: &Self::Config) -> IterationsReport {
        IterationsReport::new(outputs)
    }
}

type Figure = Column<TraceIterations>;

/// An exact i128 figure (issue 59): `Int` when it fits, else `Wide`.
fn wide(v: Option<i128>) -> Cell {
    v.map_or(Cell::Null, Cell::wide)
}

fn fig(
    key: &str,
    label: &str,
    cell: impl Fn(&TraceIterations) -> Cell + Send + Sync + 'static,
) -> Figure {
    Column::new(key, label, cell)
}

/// Every per-trace figure, in table order.
pub fn columns() -> Vec<Figure> {
    let mut v = vec![
        fig("context", "context", |t| Cell::text(t.context.clone())),
        fig("contexts", "iterations (n)", |t| t.contexts.into()),
        fig("iterations_closed", "closed iterations", |t| {
            t.iterations_closed.into()
        }),
        fig("completion_tokens", "completion tokens (T)", |t| {
            Cell::opt_i(t.completion_tokens)
        }),
        fig("tokens_per_iteration", "tokens per iteration (T/n)", |t| {
            Cell::opt_f(t.tokens_per_iteration, 4)
        }),
        fig("wall_per_iteration_ms", "wall per iteration (ms)", |t| {
            Cell::opt_f(t.per_iteration.wall_ms, 4)
        }),
        fig(
            "gpu_busy_per_iteration_ms",
            "GPU busy per iteration (ms)",
            |t| Cell::opt_f(t.per_iteration.gpu_busy_ms, 4),
        ),
        fig("wall_per_token_ms", "wall per token (ms)", |t| {
            Cell::opt_f(t.per_token.wall_ms, 4)
        }),
        fig("gpu_busy_per_token_ms", "GPU busy per token (ms)", |t| {
            Cell::opt_f(t.per_token.gpu_busy_ms, 4)
        }),
        fig("gpu_idle_per_token_ms", "GPU idle per token (ms)", |t| {
            Cell::opt_f(t.per_token.gpu_idle_ms, 4)
        }),
    ];
    for p in Phase::ALL {
        v.push(fig(
            &format!("{}_busy_per_token_ms", p.as_str()),
            &format!("  {} GPU busy per token (ms)", p.as_str()),
            move |t| Cell::opt_f(t.per_token.phases.get(p).gpu_busy_ms, 4),
        ));
    }
    v.extend([
        fig("kernels_per_token", "kernels per token", |t| {
            Cell::opt_f(t.per_token.kernels, 2)
        }),
        fig("launches_per_token", "launches per token", |t| {
            Cell::opt_f(t.per_token.launches, 2)
        }),
        fig("graph_launches_per_token", "graph replays per token", |t| {
            Cell::opt_f(t.graphs.replays_per_token, 3)
        }),
        fig("graphs_distinct", "distinct graphs", |t| {
            t.graphs.distinct.into()
        }),
        fig("repeating_graph", "repeating graph (number)", |t| {
            Cell::opt_i(t.graphs.repeating.as_ref().map(|r| r.graph))
        }),
        fig(
            "repeating_replays_per_token",
            "repeating graph replays per token",
            |t| {
                Cell::opt_f(
                    t.graphs
                        .repeating
                        .as_ref()
                        .and_then(|r| r.replays_per_token),
                    3,
                )
            },
        ),
        fig(
            "repeating_kernels_per_replay",
            "kernels per repeating replay",
            |t| Cell::opt_i(t.graphs.repeating.as_ref().map(|r| r.kernels_per_replay)),
        ),
        fig(
            "repeating_cadence_ms_median",
            "repeating graph cadence, median (ms)",
            |t| {
                Cell::opt_f(
                    t.graphs
                        .repeating
                        .as_ref()
                        .and_then(|r| r.cadence_ms_median),
                    4,
                )
            },
        ),
    ]);
    v
}

fn human_tables(r: &IterationsReport, labels: &[String], rows: bool) -> Vec<Table> {
    let mut heads = vec!["figure".to_string()];
    heads.extend(labels.iter().cloned());
    let mut t = Table {
        title: "Decode iterations: a step context up to the next step annotation".into(),
        headers: heads,
        ..Default::default()
    };
    crate::views::transposed(&mut t, &columns(), &r.traces);
    for (x, label) in r.traces.iter().zip(labels) {
        if !x.complete {
            t.notes.push(format!(
                "{label}: INCOMPLETE — {}",
                x.error.as_deref().unwrap_or("")
            ));
        }
    }
    // No trace with a closed iteration (each one's problem said why on
    // stderr): a table of dashes would only repeat it (issue 60).
    if !r.traces.is_empty()
        && r.traces
            .iter()
            .all(|x| x.iterations_closed == 0 && x.complete)
    {
        return Vec::new();
    }
    let mut tables = vec![t];
    if let Some((human, _)) = graph_tables(r, labels) {
        tables.push(human);
    }
    if let Some(c) = &r.comparison {
        tables.push(comparison_table(c, labels));
        tables.push(decomposition_table(c));
        tables.push(change_table(r, labels));
    }
    if rows {
        tables.push(rows_table(r, labels));
    }
    tables
}

fn comparison_table(c: &Comparison, labels: &[String]) -> Table {
    let mut t = Table::new(
        format!(
            "Comparison: {} (AR, baseline) vs {} (MTP, candidate)",
            labels[0], labels[1]
        ),
        &["figure", "value"],
    );
    let rows: [(&str, Option<f64>); 6] = [
        (
            "token progress ratio P (tokens per iteration, MTP / AR)",
            c.token_progress_ratio,
        ),
        ("per-iteration wall cost (MTP / AR)", c.iteration_cost_ratio),
        (
            "per-iteration GPU busy cost C (MTP / AR)",
            c.busy_cost_ratio,
        ),
        ("S_wall (wall per token, AR / MTP)", c.s_wall),
        ("S_busy (GPU busy per token, AR / MTP) = P / C", c.s_busy),
        (
            "S_context by correlation (step contexts' GPU span per token, AR / MTP)",
            c.s_context_correlation,
        ),
    ];
    for (label, v) in rows {
        t.row(vec![label.into(), Cell::opt_f(v, 4)]);
    }
    t
}

fn decomposition_table(c: &Comparison) -> Table {
    let mut t = Table::new(
        "Where the token progress goes: GPU busy per phase (g = P·Δ/C; Σ g = P − S_busy)",
        &[
            "phase",
            "AR busy/token (ms)",
            "MTP busy/token (ms)",
            "AR busy/iteration (ms)",
            "MTP busy/iteration (ms)",
            "Δ (extra busy / AR busy)",
            "gives back g",
        ],
    );
    for row in decomposition_rows(c) {
        t.row(row);
    }
    t.notes.push(
        "P = tokens per iteration MTP/AR; B = mean GPU busy per closed iteration; Δ_p = (B_MTP,p − B_AR,p)/B_AR; C = B_MTP/B_AR = 1 + ΣΔ_p; S_busy = P/C, so P − S_busy = Σ_p P·Δ_p/C".into(),
    );
    t
}

/// The decomposition's cells, a row per phase (phase, GPU busy per token
/// and per iteration AR and MTP, Δ, g) and the total row (C − 1, Σ g =
/// P − S_busy): the subcommand's table and batch's per-workload one.
pub(super) fn decomposition_rows(c: &Comparison) -> Vec<Vec<Cell>> {
    let mut rows: Vec<Vec<Cell>> = c
        .decomposition
        .iter()
        .map(|d| {
            vec![
                d.phase.clone().into(),
                Cell::opt_f(d.baseline_busy_per_token_ms, 4),
                Cell::opt_f(d.candidate_busy_per_token_ms, 4),
                Cell::opt_f(d.baseline_busy_per_iteration_ms, 4),
                Cell::opt_f(d.candidate_busy_per_iteration_ms, 4),
                Cell::opt_f(d.delta, 4),
                Cell::opt_f(d.gives_back, 4),
            ]
        })
        .collect();
    let sum: Option<f64> = c.decomposition.iter().map(|d| d.gives_back).sum();
    let mut total = vec![Cell::text("total (P − S_busy)")];
    total.extend((0..4).map(|_| Cell::text("")));
    total.push(Cell::opt_f(c.busy_cost_ratio.map(|c| c - 1.0), 4));
    total.push(Cell::opt_f(sum, 4));
    rows.push(total);
    rows
}

/// A per-token figure of a trace.
type Get = fn(&TraceIterations) -> Option<f64>;

/// The paper's Table 5: relative change per token, MTP against AR.
fn change_table(r: &IterationsReport, labels: &[String]) -> Table {
    let mut t = Table::new(
        "Per token, MTP against AR (relative change)",
        &["figure", &labels[0], &labels[1], "change (%)"],
    );
    let (a, m) = (&r.traces[0], &r.traces[1]);
    let kernel_ms = |x: &TraceIterations| x.per_token.gpu_busy_ms;
    let figs: [(&str, Get); 5] = [
        ("launch calls per token", |x| x.per_token.launches),
        ("graph replays per token", |x| x.graphs.replays_per_token),
        ("kernels per token", |x| x.per_token.kernels),
        ("GPU busy per token (ms)", kernel_ms),
        ("wall per token (ms)", |x| x.per_token.wall_ms),
    ];
    for (label, get) in figs {
        let change = match (get(a), get(m)) {
            (Some(x), Some(y)) if x != 0.0 => Some((y / x - 1.0) * 100.0),
            _ => None,
        };
        t.row(vec![
            label.into(),
            Cell::opt_f(get(a), 4),
            Cell::opt_f(get(m), 4),
            Cell::opt_f(change, 1),
        ]);
    }
    t
}

const ROW_HEADS: [&str; 14] = [
    "trace",
    "start_ns",
    "wall_ns",
    "closed",
    "gpu_busy_ns",
    "gpu_idle_ns",
    "kernels",
    "launches",
    "graph_launches",
    "forward_busy_ns",
    "sample_busy_ns",
    "draft_busy_ns",
    "other_busy_ns",
    "context_span_ns",
];

fn rows_table(r: &IterationsReport, labels: &[String]) -> Table {
    let mut t = Table::new("Per iteration", &ROW_HEADS);
    for (x, label) in r.traces.iter().zip(labels) {
        for row in &x.rows {
            let mut cells: Vec<Cell> = vec![
                label.clone().into(),
                Cell::Int(row.start_ns),
                wide(row.wall_ns),
                row.closed.to_string().into(),
                Cell::wide(row.gpu_busy_ns),
                wide(row.gpu_idle_ns),
                row.kernels.into(),
                row.launches.into(),
                row.graph_launches.into(),
            ];
            cells.extend(Phase::ALL.map(|p| Cell::wide(row.phases.get(p).gpu_busy_ns)));
            cells.push(wide(row.context_span_ns));
            t.row(cells);
        }
    }
    t
}

/// Inside the graphs (issue 57): the human and CSV tables of the closed
/// iterations' attributed replays.
fn graph_tables(r: &IterationsReport, labels: &[String]) -> Option<(Table, Table)> {
    let views: Vec<(&str, Option<&crate::graphs::replay::GraphView>)> = labels
        .iter()
        .zip(&r.traces)
        .map(|(l, t)| (l.as_str(), t.inside_graphs.as_ref()))
        .collect();
    crate::graphs::replay::tables(&views, GRAPH_ROWS)
}

/// Rows per (trace, subsystem, module/op) in the human graph table.
const GRAPH_ROWS: usize = 10;

fn csv_tables(r: &IterationsReport, rows: bool) -> Vec<Table> {
    let figs = columns();
    let mut heads: Vec<&str> = vec!["path"];
    heads.extend(figs.iter().map(|f| f.key.as_str()));
    heads.push("complete");
    let mut t = Table::new("iterations", &heads);
    for x in &r.traces {
        let mut row: Vec<Cell> = vec![x.path.clone().into()];
        row.extend(figs.iter().map(|f| f.cell(x)));
        row.push(x.complete.to_string().into());
        t.row(row);
    }
    let mut tables = vec![t];
    if let Some(c) = &r.comparison {
        let mut ct = Table::new(
            "comparison",
            &[
                "baseline",
                "candidate",
                "token_progress_ratio",
                "s_wall",
                "s_busy",
                "s_context_correlation",
                "iteration_cost_ratio",
                "busy_cost_ratio",
            ],
        );
        ct.row(vec![
            c.baseline.clone().into(),
            c.candidate.clone().into(),
            Cell::opt_f(c.token_progress_ratio, 6),
            Cell::opt_f(c.s_wall, 6),
            Cell::opt_f(c.s_busy, 6),
            Cell::opt_f(c.s_context_correlation, 6),
            Cell::opt_f(c.iteration_cost_ratio, 6),
            Cell::opt_f(c.busy_cost_ratio, 6),
        ]);
        tables.push(ct);
        let mut dt = Table::new(
            "decomposition",
            &[
                "phase",
                "baseline_busy_per_token_ms",
                "candidate_busy_per_token_ms",
                "baseline_busy_per_iteration_ms",
                "candidate_busy_per_iteration_ms",
                "delta",
                "gives_back",
            ],
        );
        for d in &c.decomposition {
            dt.row(vec![
                d.phase.clone().into(),
                Cell::opt_f(d.baseline_busy_per_token_ms, 6),
                Cell::opt_f(d.candidate_busy_per_token_ms, 6),
                Cell::opt_f(d.baseline_busy_per_iteration_ms, 6),
                Cell::opt_f(d.candidate_busy_per_iteration_ms, 6),
                Cell::opt_f(d.delta, 6),
                Cell::opt_f(d.gives_back, 6),
            ]);
        }
        tables.push(dt);
    }
    let paths: Vec<String> = r.traces.iter().map(|t| t.path.clone()).collect();
    if let Some((_, csv)) = graph_tables(r, &paths) {
        tables.push(csv);
    }
    if rows {
        tables.push(rows_table(r, &paths));
    }
    tables
}
