//! The view of `idle`'s results: [`columns`] (one per headline figure of a
//! trace: the side-by-side table, the CSV and `batch`'s traces.csv), the
//! device, stream and step tables, the AR-vs-MTP per-token comparison;
//! [`IdleReport`] is the document it prints (JSON keys as VIEWS.md I1–I6).

use super::{Comparison, Idle, IdleSpec, Part, TraceIdle};
use crate::command::{self, ApiError, Command, Document, Said, TraceOutcome};
use crate::contexts::{Contexts, Selector};
use crate::report::{self, Cell, Format, Table};
use crate::views::Column;
use serde::Serialize;
use std::io::{self, Write};

/// The document `idle` prints (`-f json`: always with the step rows).
#[derive(Debug, Serialize)]
pub struct IdleReport {
    pub traces: Vec<TraceIdle>,
    pub comparison: Option<Comparison>,
}

impl IdleReport {
    pub fn new(traces: Vec<TraceIdle>) -> Self {
        let comparison = (traces.len() == 2).then(|| super::compare(&traces[0], &traces[1]));
        IdleReport { traces, comparison }
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// `rows`: the table shows every step (`--per-step`). Each format
    /// builds only what it prints: `-f json` streams its document
    /// ([`IdleReport::write_json`]), the others their own tables.
    pub fn write<W: Write>(&self, out: &mut W, format: Format, rows: bool) -> io::Result<()> {
        match format {
            Format::Json => self.write_json(out),
            Format::Csv => {
                let full: Vec<String> = self.traces.iter().map(|t| t.path.clone()).collect();
                report::render(out, format, &(), &[], &csv_tables(self, &full, rows))
            }
            Format::Table | Format::Markdown => {
                let labels: Vec<String> = self
                    .traces
                    .iter()
                    .map(|t| crate::views::short(&t.path))
                    .collect();
                report::render(out, format, &(), &human_tables(self, &labels, rows), &[])
            }
        }
    }

    /// The JSON document, byte for byte what pretty-printing its whole
    /// `serde_json::Value` gives (keys sorted), without that value: the
    /// per-stream and per-step lists, which grow with the trace, are
    /// written one element at a time (issue 59: the whole value took about
    /// 3 KB per step row). The rest is a value with a placeholder for each
    /// list, pretty-printed, and each placeholder line replaced by its
    /// list at that line's indentation. A sum past u64 (issue 59) has no
    /// `Value`: the document is then written from the report itself
    /// (exact, its fields in struct order), never as `null`.
    pub fn write_json<W: Write>(&self, out: &mut W) -> io::Result<()> {
        let shell = IdleReport {
            traces: self.traces.iter().map(without_lists).collect(),
            comparison: self.comparison.clone(),
        };
        let Ok(mut value) = serde_json::to_value(&shell) else {
            return report::json::write(out, self);
        };
        if let Some(traces) = value.get_mut("traces").and_then(|v| v.as_array_mut()) {
            for (i, t) in traces.iter_mut().enumerate() {
                t["streams"] = placeholder("streams", i).into();
                t["steps"]["rows"] = placeholder("rows", i).into();
            }
        }
        let text = serde_json::to_string_pretty(&value).map_err(io::Error::other)?;
        for line in text.split('\n') {
            let body = line.trim_start();
            let indent = &line[..line.len() - body.len()];
            match deferred(body) {
                Some(("streams", i, comma)) => match self.traces.get(i) {
                    Some(t) => write_list(out, indent, "streams", &t.streams, comma)?,
                    None => writeln!(out, "{line}")?,
                },
                Some((_, i, comma)) => match self.traces.get(i) {
                    Some(t) => write_list(out, indent, "rows", &t.steps.rows, comma)?,
                    None => writeln!(out, "{line}")?,
                },
                None => writeln!(out, "{line}")?,
            }
        }
        Ok(())
    }
}

/// A trace's figures without its streams and step rows (cloned: small).
fn without_lists(t: &TraceIdle) -> TraceIdle {
    TraceIdle {
        path: t.path.clone(),
        units: t.units.clone(),
        thresholds: t.thresholds.clone(),
        devices: t.devices.clone(),
        comm_comp_overlap_pct: t.comm_comp_overlap_pct,
        streams: Vec::new(),
        steps: super::StepIdle {
            grammar: t.steps.grammar.clone(),
            window: t.steps.window.clone(),
            count: t.steps.count,
            rows: Default::default(),
            pre: t.steps.pre.clone(),
            unattributed: t.steps.unattributed.clone(),
            totals: t.steps.totals.clone(),
        },
        counts: t.counts.clone(),
        completion_tokens: t.completion_tokens,
        tokens_source: t.tokens_source.clone(),
        per_token: t.per_token.clone(),
        notes: t.notes.clone(),
        complete: t.complete,
        error: t.error.clone(),
    }
}

/// The marker that stands for list `key` of trace `i`: a NUL cannot come
/// from the report's own strings unescaped, and only these keys hold it.
const DEFERRED: &str = "\u{0}deferred:";

fn placeholder(key: &str, i: usize) -> String {
    format!("{DEFERRED}{key}:{i}")
}

/// A pretty-printed placeholder line's key, trace and trailing comma.
fn deferred(body: &str) -> Option<(&'static str, usize, bool)> {
    let (key, rest) = if let Some(r) = body.strip_prefix("\"streams\": \"") {
        ("streams", r)
    } else {
        ("rows", body.strip_prefix("\"rows\": \"")?)
    };
    let rest = rest.strip_prefix("\\u0000deferred:")?.strip_prefix(key)?;
    let (rest, comma) = match rest.strip_suffix(',') {
        Some(r) => (r, true),
        None => (rest, false),
    };
    let i = rest.strip_prefix(':')?.strip_suffix('"')?.parse().ok()?;
    Some((key, i, comma))
}

/// `"key": [ … ]` as the pretty printer writes it at `indent`, each
/// element through its own value (keys sorted), or written from itself
/// when it has none (a sum past u64).
fn write_list<W: Write, T: Serialize>(
    out: &mut W,
    indent: &str,
    key: &str,
    items: impl IntoIterator<Item = T>,
    comma: bool,
) -> io::Result<()> {
    let end = if comma { "," } else { "" };
    let mut items = items.into_iter().peekable();
    if items.peek().is_none() {
        return writeln!(out, "{indent}\"{key}\": []{end}");
    }
    write!(out, "{indent}\"{key}\": [")?;
    let inner = format!("\n{indent}  ");
    let mut first = true;
    for item in items {
        let text = match serde_json::to_value(&item) {
            Ok(v) => serde_json::to_string_pretty(&v),
            Err(_) => serde_json::to_string_pretty(&item),
        }
        .map_err(io::Error::other)?;
        if !first {
            out.write_all(b",")?;
        }
        first = false;
        for line in text.split('\n') {
            out.write_all(inner.as_bytes())?;
            out.write_all(line.as_bytes())?;
        }
    }
    writeln!(out, "\n{indent}]{end}")
}

command::trace_outcome!(TraceIdle);

impl Document for IdleReport {
    fn write_to(&self, out: &mut dyn Write, format: Format, rows: bool) -> io::Result<()> {
        let mut out = out;
        self.write(&mut out, format, rows)
    }
    fn json_value(&self, _rows: bool) -> Result<serde_json::Value, ApiError> {
        Ok(self.json())
    }
    fn outcomes(&self) -> Vec<&dyn TraceOutcome> {
        command::outcomes(&self.traces)
    }
}

/// `torchtrace idle`: one or more traces (two: AR first, compared).
impl Command for Idle {
    type Options = IdleSpec;
    type Report = IdleReport;

    fn configure(options: &IdleSpec, _: &Selector) -> Result<IdleSpec, ApiError> {
        if options.kernel_wait_ns < 0 {
            return Err(ApiError::Arguments(
                "idle: --kernel-wait-ns may not be negative".into(),
            ));
        }
        Ok(options.clone())
    }

    /// A trace without any GPU activity is a problem (exit 1).
    fn said(t: &TraceIdle, _contexts: &Contexts) -> Said {
        let mut problems = Vec::new();
        if t.complete && t.streams.is_empty() {
            problems.push(format!(
                "{}: no GPU activity (kernel, memcpy, memset): no idle time to explain",
                t.path
            ));
        }
        let mut notes = command::path_notes(&t.path, &t.notes);
        if t.completion_tokens.is_none() {
            notes.push(format!(
                "{}: completion tokens unknown (give --tokens or --summary): per-token figures are null",
                t.path
            ));
        }
        Said { problems, notes }
    }

    fn report(outputs: Vec<TraceIdle>, _: &Self::Config) -> IdleReport {
        IdleReport::new(outputs)
    }
}

type Figure = Column<TraceIdle>;

fn fig(
    key: &str,
    label: &str,
    cell: impl Fn(&TraceIdle) -> Cell + Send + Sync + 'static,
) -> Figure {
    Column::new(key, label, cell)
}

/// An exact sum of ns (issue 59: no longer clamped to i64).
fn i(x: i128) -> Cell {
    Cell::wide(x)
}

/// Every per-trace headline figure, in table order.
pub fn columns() -> Vec<Figure> {
    vec![
        fig("devices", "devices", |t| (t.devices.len() as u64).into()),
        fig("streams", "streams", |t| (t.streams.len() as u64).into()),
        fig("busy_ns", "GPU busy, Σ devices (ns)", |t| i(t.busy_ns())),
        fig("idle_ns", "stream idle, Σ streams (ns)", |t| {
            i(t.idle_sums()[3])
        }),
        fig("idle_pct", "device idle (% of span)", |t| {
            Cell::opt_f(t.idle_pct(), 4)
        }),
        fig("host_wait_ns", "  host wait (ns)", |t| i(t.idle_sums()[0])),
        fig("kernel_wait_ns", "  kernel wait (ns)", |t| {
            i(t.idle_sums()[1])
        }),
        fig("other_ns", "  other (ns)", |t| i(t.idle_sums()[2])),
        fig("host_wait_share_pct", "host wait (% of idle)", |t| {
            Cell::opt_f(t.host_wait_share_pct(), 4)
        }),
        fig(
            "comm_comp_overlap_pct",
            "comm/compute overlap (% of comm)",
            |t| Cell::opt_f(t.comm_comp_overlap_pct, 4),
        ),
        fig("queue_max", "launch queue in flight, max", |t| {
            t.queue_max().map_or(Cell::Null, Cell::Int)
        }),
        fig("step_grammar", "step grammar", |t| {
            t.steps.grammar.clone().map_or(Cell::Null, Cell::text)
        }),
        fig("steps", "steps", |t| t.steps.count.into()),
        fig("completion_tokens", "completion tokens", |t| {
            Cell::opt_i(t.completion_tokens)
        }),
        fig("busy_per_token_ns", "GPU busy per token (ns)", |t| {
            Cell::opt_f(t.per_token.busy_ns, 1)
        }),
        fig("host_wait_per_token_ns", "host wait per token (ns)", |t| {
            Cell::opt_f(t.per_token.host_wait_ns, 1)
        }),
        fig(
            "kernel_wait_per_token_ns",
            "kernel wait per token (ns)",
            |t| Cell::opt_f(t.per_token.kernel_wait_ns, 1),
        ),
        fig("other_per_token_ns", "other idle per token (ns)", |t| {
            Cell::opt_f(t.per_token.other_ns, 1)
        }),
    ]
}

fn human_tables(r: &IdleReport, labels: &[String], rows: bool) -> Vec<Table> {
    let mut heads = vec!["figure".to_string()];
    heads.extend(labels.iter().cloned());
    let mut t = Table {
        title: "GPU idle time: where the GPU waits (ns; I2–I6 of VIEWS.md)".into(),
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
    let mut tables = vec![
        t,
        devices_table(r, labels),
        streams_table(r, labels),
        parts_table(r, labels),
    ];
    if let Some(c) = &r.comparison {
        tables.push(comparison_table(c, labels));
    }
    if rows {
        tables.push(rows_table(r, labels));
    }
    tables
}

const DEVICE_HEADS: [&str; 14] = [
    "trace",
    "device",
    "span_ns",
    "busy_ns",
    "idle_ns",
    "compute_ns",
    "comm_ns",
    "memory_ns",
    "non_compute_ns",
    "comm_kernels",
    "comm_comp_overlap_ns",
    "comm_comp_overlap_pct",
    "idle_pct",
    "compute_pct",
];

fn devices_table(r: &IdleReport, labels: &[String]) -> Table {
    let mut t = Table::new("Per device (I4)", &DEVICE_HEADS);
    for (x, label) in r.traces.iter().zip(labels) {
        for d in &x.devices {
            t.row(vec![
                label.clone().into(),
                d.device.clone().into(),
                Cell::wide(d.span_ns),
                Cell::wide(d.busy_ns),
                Cell::wide(d.idle_ns),
                Cell::wide(d.compute_ns),
                Cell::wide(d.comm_ns),
                Cell::wide(d.memory_ns),
                Cell::wide(d.non_compute_ns),
                d.comm_kernels.into(),
                Cell::wide(d.comm_comp_overlap_ns),
                Cell::opt_f(d.comm_comp_overlap_pct, 4),
                Cell::opt_f(d.idle_pct, 4),
                Cell::opt_f(d.compute_pct, 4),
            ]);
        }
    }
    t
}

const STREAM_HEADS: [&str; 19] = [
    "trace",
    "device",
    "stream",
    "activities",
    "unlinked",
    "span_ns",
    "busy_ns",
    "idle_ns",
    "host_wait_ns",
    "host_wait_gaps",
    "kernel_wait_ns",
    "kernel_wait_gaps",
    "other_ns",
    "other_gaps",
    "host_wait_pct_of_idle",
    "in_flight_max",
    "in_flight_mean",
    "pending_max",
    "starting_before_launch",
];

fn streams_table(r: &IdleReport, labels: &[String]) -> Table {
    let mut t = Table::new("Per stream (I2, I3, I5)", &STREAM_HEADS);
    for (x, label) in r.traces.iter().zip(labels) {
        for s in &x.streams {
            t.row(vec![
                label.clone().into(),
                s.device.clone().into(),
                s.stream.clone().into(),
                s.activities.into(),
                s.unlinked.into(),
                Cell::wide(s.span_ns),
                Cell::wide(s.busy_ns),
                Cell::wide(s.idle_ns),
                Cell::wide(s.host_wait_ns),
                s.host_wait_gaps.into(),
                Cell::wide(s.kernel_wait_ns),
                s.kernel_wait_gaps.into(),
                Cell::wide(s.other_ns),
                s.other_gaps.into(),
                Cell::opt_f(s.host_wait_pct_of_idle, 4),
                Cell::Int(s.queue.in_flight.max),
                Cell::opt_f(s.queue.in_flight.mean, 6),
                Cell::Int(s.queue.pending.max),
                s.queue.activities_starting_before_launch.into(),
            ]);
        }
    }
    t
}

const PART_HEADS: [&str; 15] = [
    "activities",
    "kernels",
    "busy_ns",
    "gpu_ns",
    "idle_ns",
    "host_wait_ns",
    "kernel_wait_ns",
    "other_ns",
    "compute_ns",
    "comm_ns",
    "memory_ns",
    "comm_comp_overlap_ns",
    "comm_comp_overlap_pct",
    "gpu_first_start_ns",
    "gpu_last_end_ns",
];

fn part_cells(p: &Part) -> Vec<Cell> {
    let opt = |v: Option<i64>| v.map_or(Cell::Null, Cell::Int);
    vec![
        p.activities.into(),
        p.kernels.into(),
        Cell::wide(p.busy_ns),
        Cell::wide(p.gpu_ns),
        Cell::wide(p.idle_ns),
        Cell::wide(p.host_wait_ns),
        Cell::wide(p.kernel_wait_ns),
        Cell::wide(p.other_ns),
        Cell::wide(p.compute_ns),
        Cell::wide(p.comm_ns),
        Cell::wide(p.memory_ns),
        Cell::wide(p.comm_comp_overlap_ns),
        Cell::opt_f(p.comm_comp_overlap_pct, 4),
        opt(p.gpu_first_start_ns),
        opt(p.gpu_last_end_ns),
    ]
}

/// Σ over the step rows, pre, unattributed and totals (I6).
fn parts_table(r: &IdleReport, labels: &[String]) -> Table {
    let mut heads = vec!["trace", "part"];
    heads.extend(PART_HEADS);
    let mut t = Table::new(
        "Per step, summed (I6: rows + pre + unattributed = totals)",
        &heads,
    );
    for (x, label) in r.traces.iter().zip(labels) {
        let rows = super::compute::sum_rows(&x.steps.rows);
        let grammar = x.steps.grammar.as_deref().unwrap_or("none");
        let parts = [
            (format!("{} steps ({grammar})", x.steps.count), &rows),
            ("pre".to_string(), &x.steps.pre),
            ("unattributed".to_string(), &x.steps.unattributed),
            ("totals".to_string(), &x.steps.totals),
        ];
        for (name, p) in parts {
            let mut cells: Vec<Cell> = vec![label.clone().into(), name.into()];
            cells.extend(part_cells(p));
            t.row(cells);
        }
    }
    t.notes.push(
        "idle of a part = Σ of the gaps before its activities (the idle before a step's first kernel is that step's); totals equal the streams' sums"
            .into(),
    );
    t
}

fn rows_table(r: &IdleReport, labels: &[String]) -> Table {
    let mut heads = vec!["trace", "index", "name", "host_start_ns", "host_end_ns"];
    heads.extend(PART_HEADS);
    heads.push("queue_in_flight_max");
    let mut t = Table::new("Per step (I6)", &heads);
    for (x, label) in r.traces.iter().zip(labels) {
        for row in &x.steps.rows {
            let mut cells: Vec<Cell> = vec![
                label.clone().into(),
                row.index.into(),
                row.name.clone().into(),
                Cell::Int(row.host_start_ns),
                row.host_end_ns.map_or(Cell::Null, Cell::Int),
            ];
            cells.extend(part_cells(&row.work));
            let qmax = row.queue_in_flight.values().map(|q| q.max).max();
            cells.push(qmax.map_or(Cell::Null, Cell::Int));
            t.row(cells);
        }
    }
    t
}

fn comparison_table(c: &Comparison, labels: &[String]) -> Table {
    let mut t = Table::new(
        format!(
            "Per token: {} (AR, baseline) vs {} (MTP, candidate)",
            labels[0], labels[1]
        ),
        &[
            "figure",
            "AR per token (ns)",
            "MTP per token (ns)",
            "AR / MTP",
        ],
    );
    for x in &c.rows {
        t.row(vec![
            x.figure.clone().into(),
            Cell::opt_f(x.baseline_per_token_ns, 1),
            Cell::opt_f(x.candidate_per_token_ns, 1),
            Cell::opt_f(x.ratio, 4),
        ]);
    }
    t.notes.push(
        "whole-trace sums / completion tokens; busy = Σ devices' busy, the idle categories Σ over streams"
            .into(),
    );
    t
}

fn csv_tables(r: &IdleReport, paths: &[String], rows: bool) -> Vec<Table> {
    let figs = columns();
    let mut heads: Vec<&str> = vec!["path"];
    heads.extend(figs.iter().map(|f| f.key.as_str()));
    heads.push("complete");
    let mut t = Table::new("idle", &heads);
    for x in &r.traces {
        let mut row: Vec<Cell> = vec![x.path.clone().into()];
        row.extend(figs.iter().map(|f| f.cell(x)));
        row.push(x.complete.to_string().into());
        t.row(row);
    }
    let mut tables = vec![
        t,
        devices_table(r, paths),
        streams_table(r, paths),
        parts_table(r, paths),
    ];
    if let Some(c) = &r.comparison {
        tables.push(comparison_table(c, paths));
    }
    if rows {
        tables.push(rows_table(r, paths));
    }
    tables
}
