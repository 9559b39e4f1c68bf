//! The view of `pair`'s results: [`columns`] (one per figure of a trace),
//! the comparison's columns, and [`PairReport`], the document `pair`
//! prints in every format. `batch`'s traces.csv takes its pair columns
//! from here too.

use crate::analyses::pair::{self, Comparison, Pair, PairSpec, TracePairs};
use crate::command::{self, ApiError, Command, Document, Said, TraceOutcome};
use crate::contexts::{Contexts, Selector};
use crate::model::Ns;
use crate::report::{self, Cell, Format, Table};
use crate::stats::Summary;
use crate::views::{json_with_rows, short, transposed, Column};
use serde::Serialize;
use std::io::{self, Write};

/// Every figure of a trace, in table order.
pub fn columns() -> Vec<Column<TracePairs>> {
    let mut cols = vec![
        Column::new("context", "context", |x: &TracePairs| {
            Cell::text(x.context.clone())
        }),
        Column::new("contexts", "contexts", |x: &TracePairs| x.contexts.into()),
        Column::new("pairs", "pairs", |x: &TracePairs| x.pairs.into()),
        Column::new("cpu_unpaired", "cpu_unpaired", |x: &TracePairs| {
            x.cpu_unpaired.into()
        }),
        Column::new("gpu_unpaired", "gpu_unpaired", |x: &TracePairs| {
            x.gpu_unpaired.into()
        }),
        Column::new(
            "multi_stream_pairs",
            "multi_stream_pairs",
            |x: &TracePairs| x.multi_stream_pairs.into(),
        ),
        Column::new("measured", "measured (got a GPU span)", |x: &TracePairs| {
            x.measured.into()
        }),
        Column::new("gpu_span_source", "GPU span source", |x: &TracePairs| {
            let s = &x.gpu_span_sources;
            Cell::text(format!(
                "{}: {} annotation, {} correlation",
                x.gpu_span_mode.as_str(),
                s.annotation,
                s.correlation
            ))
        }),
        Column::new(
            "completion_tokens",
            "completion tokens",
            |x: &TracePairs| Cell::opt_i(x.completion_tokens),
        ),
        Column::new("tokens_source", "", |x: &TracePairs| {
            x.tokens_source.clone().map_or(Cell::Null, Cell::Text)
        })
        .batch_only(),
        Column::new(
            "tokens_per_context",
            "tokens per context (P)",
            |x: &TracePairs| Cell::opt_f(x.tokens_per_context, 3),
        ),
    ];
    for (side, label) in [("cpu", "CPU"), ("gpu", "GPU")] {
        for (stat, get) in Summary::FIELDS {
            let span = move |x: &TracePairs| -> Cell {
                let s = if side == "cpu" {
                    &x.cpu_span_ms
                } else {
                    &x.gpu_span_ms
                };
                Cell::opt_f(get(s), 3)
            };
            cols.push(Column::new(
                format!("{side}_span_{stat}_ms"),
                format!("{label} span {stat} (ms)"),
                span,
            ));
        }
    }
    cols.extend([
        Column::new(
            "gpu_span_per_token_ms",
            "GPU span per token (ms)",
            |x: &TracePairs| Cell::opt_f(x.gpu_span_per_token_ms, 4),
        ),
        Column::new("events", "", |x: &TracePairs| x.events.into()).batch_only(),
        Column::new("complete", "", |x: &TracePairs| {
            x.complete.to_string().into()
        })
        .machine(),
    ]);
    cols
}

/// The figures of a baseline-vs-candidate comparison.
pub fn comparison_columns() -> Vec<Column<Comparison>> {
    vec![
        Column::new("s_context", "S_context", |c: &Comparison| {
            Cell::opt_f(c.s_context, 3)
        }),
        Column::new(
            "context_reduction_pct",
            "context reduction (%)",
            |c: &Comparison| Cell::opt_f(c.context_reduction_pct, 1),
        ),
        Column::new(
            "gpu_span_median_ratio",
            "GPU span median ratio",
            |c: &Comparison| Cell::opt_f(c.gpu_span_median_ratio, 3),
        ),
        Column::new(
            "cpu_span_median_ratio",
            "CPU span median ratio",
            |c: &Comparison| Cell::opt_f(c.cpu_span_median_ratio, 3),
        ),
    ]
}

command::trace_outcome!(TracePairs);

impl Document for PairReport {
    fn write_to(&self, out: &mut dyn Write, format: Format, per_context: bool) -> io::Result<()> {
        let mut out = out;
        self.write(&mut out, format, per_context)
    }
    fn json_value(&self, per_context: bool) -> Result<serde_json::Value, ApiError> {
        if per_context {
            Ok(json_with_rows(self, self.traces.iter().map(|t| &t.rows)))
        } else {
            crate::command::json_of(self)
        }
    }
    fn outcomes(&self) -> Vec<&dyn TraceOutcome> {
        command::outcomes(&self.traces)
    }
}

/// `torchtrace pair`: one or two traces (baseline first, then candidate).
impl Command for Pair {
    type Options = PairSpec;
    type Report = PairReport;

    fn configure(options: &PairSpec, _: &Selector) -> Result<PairSpec, ApiError> {
        Ok(*options)
    }

    fn said(r: &TracePairs, contexts: &Contexts) -> Said {
        let problem = command::context_problem(contexts).or_else(|| {
            // A trace cut short is reported as such, not as unmeasured.
            (r.measured == 0 && r.complete).then(|| {
                format!(
                    "{}: none of the {} contexts got a GPU span (--gpu-span {})",
                    r.path,
                    r.contexts,
                    r.gpu_span_mode.as_str()
                )
            })
        });
        let mut notes: Vec<String> = command::context_note(contexts).into_iter().collect();
        notes.extend(command::path_notes(&r.path, &r.notes));
        Said {
            problems: problem.into_iter().collect(),
            notes,
        }
    }

    fn report(outputs: Vec<TracePairs>, _: &Self::Config) -> PairReport {
        PairReport::new(outputs)
    }
}

/// `report.md`'s "Worker traces" columns.
pub(crate) fn report_columns() -> Vec<Column<TracePairs>> {
    let col = |label: &str, cell: fn(&TracePairs) -> Cell| Column::new(label, label, cell);
    vec![
        col("contexts", |p| p.contexts.into()),
        col("pairs", |p| p.pairs.into()),
        col("tokens", |p| Cell::opt_i(p.completion_tokens)),
        col("tokens/ctx", |p| Cell::opt_f(p.tokens_per_context, 3)),
        col("CPU span med. (ms)", |p| {
            Cell::opt_f(p.cpu_span_ms.median, 3)
        }),
        col("GPU span med. (ms)", |p| {
            Cell::opt_f(p.gpu_span_ms.median, 3)
        }),
        col("GPU span/token (ms)", |p| {
            Cell::opt_f(p.gpu_span_per_token_ms, 4)
        }),
    ]
}

/// The document `pair` prints: every trace's figures and, with two
/// traces, their comparison (first = baseline).
#[derive(Debug, Serialize)]
pub struct PairReport {
    pub traces: Vec<TracePairs>,
    pub comparison: Option<Comparison>,
}

impl PairReport {
    pub fn new(traces: Vec<TracePairs>) -> Self {
        let comparison = (traces.len() == 2).then(|| pair::compare(&traces[0], &traces[1]));
        PairReport { traces, comparison }
    }

    /// Writes the report in `format`; `per_context` adds every context.
    pub fn write<W: Write>(
        &self,
        out: &mut W,
        format: Format,
        per_context: bool,
    ) -> io::Result<()> {
        let tables = self.tables(per_context);
        let csv = self.csv_tables(per_context);
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

    /// Figures as rows, traces as columns: easy to read side by side.
    pub fn tables(&self, per_context: bool) -> Vec<Table> {
        let mut tables = vec![self.figures_table()];
        if let Some(c) = &self.comparison {
            let mut ct = Table::new(
                format!(
                    "Comparison: {} (baseline) vs {} (candidate)",
                    short(&c.baseline),
                    short(&c.candidate)
                ),
                &["figure", "value"],
            );
            transposed(&mut ct, &comparison_columns(), std::slice::from_ref(c));
            tables.push(ct);
        }
        let names = self.step_names_table();
        if !names.rows.is_empty() {
            tables.push(names);
        }
        if per_context {
            tables.push(self.per_context_table());
        }
        tables
    }

    fn figures_table(&self) -> Table {
        let mut heads = vec!["figure".to_string()];
        heads.extend(self.traces.iter().map(|t| short(&t.path)));
        let mut t = Table {
            title: "Step contexts: CPU user_annotation ↔ GPU user_annotation".into(),
            headers: heads,
            ..Default::default()
        };
        let identity = |name: &str, f: &dyn Fn(&TracePairs) -> Cell| -> Vec<Cell> {
            let mut r = vec![Cell::text(name)];
            r.extend(self.traces.iter().map(f));
            r
        };
        t.row(identity("events", &|x| x.events.into()));
        t.row(identity("device", &|x| {
            Cell::text(x.meta.devices.first().cloned().unwrap_or_default())
        }));
        transposed(&mut t, &columns(), &self.traces);
        for x in self.traces.iter().filter(|x| !x.complete) {
            t.notes.push(format!(
                "{}: INCOMPLETE — {}",
                short(&x.path),
                x.error.as_deref().unwrap_or("")
            ));
        }
        t
    }

    fn step_names_table(&self) -> Table {
        let mut names = Table::new(
            "Step names found",
            &["trace", "step name", "kind", "count", "selected"],
        );
        for x in &self.traces {
            for s in &x.step_names {
                names.row(vec![
                    short(&x.path).into(),
                    s.name.clone().into(),
                    s.kind.to_string().into(),
                    s.count.into(),
                    if s.selected { "yes" } else { "" }.into(),
                ]);
            }
        }
        names
    }

    fn per_context_table(&self) -> Table {
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
        for x in &self.traces {
            for (i, r) in x.rows.iter().enumerate() {
                t.row(vec![
                    short(&x.path).into(),
                    i.into(),
                    r.event_index.into(),
                    Ns(r.start_ns).to_string().into(),
                    Cell::Float(r.cpu_ns as f64 / 1e6, 3),
                    Cell::opt_f(r.gpu_ns.map(|g| g as f64 / 1e6), 3),
                    r.gpu_annotations.into(),
                ]);
            }
        }
        t
    }

    /// One row per trace, every figure a column (and the comparison).
    pub fn csv_tables(&self, per_context: bool) -> Vec<Table> {
        let cols: Vec<Column<TracePairs>> = columns().into_iter().filter(|c| c.csv).collect();
        let mut heads = vec!["path"];
        heads.extend(cols.iter().map(|c| c.key.as_str()));
        let mut t = Table::new("pair", &heads);
        for x in &self.traces {
            let mut r: Vec<Cell> = vec![x.path.clone().into()];
            r.extend(cols.iter().map(|c| c.cell(x)));
            t.row(r);
        }
        let mut tables = vec![t];
        if let Some(c) = &self.comparison {
            let ccols = comparison_columns();
            let mut heads = vec!["baseline", "candidate"];
            heads.extend(ccols.iter().map(|c| c.key.as_str()));
            let mut ct = Table::new("comparison", &heads);
            let mut row = vec![c.baseline.clone().into(), c.candidate.clone().into()];
            row.extend(ccols.iter().map(|col| col.cell(c)));
            ct.row(row);
            tables.push(ct);
        }
        if per_context {
            tables.push(self.per_context_table());
        }
        tables
    }
}
