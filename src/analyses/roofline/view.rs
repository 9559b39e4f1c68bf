//! The view of `roofline`'s results: per trace the device and its peaks,
//! the op rows (top N by GPU time, JSON: every row) and the GPU time
//! without a model; [`RooflineReport`] is the document it prints.

use super::{RoofRow, Roofline, RooflineSpec, TraceRoofline};
use crate::command::{self, ApiError, Command, Document, Said, TraceOutcome};
use crate::contexts::{Contexts, Selector};
use crate::report::{self, Cell, Format, Table};
use serde::Serialize;
use std::io::{self, Write};

/// `--peak-tflops`' accepted range: 1 GFLOP/s to 1 EFLOP/s.
pub const PEAK_TFLOPS: (f64, f64) = (0.001, 1e6);
/// `--peak-tbps`' accepted range: 1 GB/s to 10 PB/s.
pub const PEAK_TBPS: (f64, f64) = (0.001, 1e4);

/// The document `roofline` prints (`-f json`: every row).
#[derive(Debug, Serialize)]
pub struct RooflineReport {
    pub traces: Vec<TraceRoofline>,
    /// With two traces (AR, then MTP): each side's dominant op against the
    /// bandwidth roof, and the work per token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Vec<SideFigures>>,
    #[serde(skip)]
    pub spec: RooflineSpec,
}

/// One side of the two-trace comparison.
#[derive(Debug, Clone, Serialize)]
pub struct SideFigures {
    pub path: String,
    pub dominant: Option<String>,
    pub dominant_gpu_ns: Option<i64>,
    /// Its GPU ns ÷ the trace's.
    pub dominant_gpu_share: Option<f64>,
    pub dominant_tb_per_s: Option<f64>,
    /// Its TB/s ÷ the device's peak TB/s (whatever its bound).
    pub dominant_share_of_bandwidth_roof: Option<f64>,
    pub dominant_pct_of_peak: Option<f64>,
    pub dominant_bound: Option<&'static str>,
    pub completion_tokens: Option<u64>,
    pub flops_per_token: Option<f64>,
    pub bytes_per_token: Option<f64>,
    pub gpu_ns_per_token: Option<f64>,
}

impl SideFigures {
    pub fn of(t: &TraceRoofline) -> SideFigures {
        let d = dominant_of(t);
        let per = t.per_token.as_ref();
        SideFigures {
            path: t.path.clone(),
            dominant: d.map(super::op_shape),
            dominant_gpu_ns: d.map(|r| r.gpu_ns),
            dominant_gpu_share: d.and_then(|r| super::share(r, t)),
            dominant_tb_per_s: d.and_then(|r| r.tb_per_s),
            dominant_share_of_bandwidth_roof: d
                .and_then(|r| r.tb_per_s)
                .zip(t.device.peak_tbps)
                .filter(|p| p.1 > 0.0)
                .map(|(a, b)| a / b),
            dominant_pct_of_peak: d.and_then(|r| r.pct_of_peak),
            dominant_bound: d.and_then(|r| r.bound).map(|b| b.as_str()),
            completion_tokens: t.completion_tokens,
            flops_per_token: per.map(|p| p.flops),
            bytes_per_token: per.map(|p| p.bytes),
            gpu_ns_per_token: per.map(|p| p.gpu_ns),
        }
    }
}

impl RooflineReport {
    pub fn write<W: Write>(&self, out: &mut W, format: Format) -> io::Result<()> {
        let (tables, csv) = tables(self);
        report::render(out, format, self, &tables, &csv)
    }
}

command::trace_outcome!(TraceRoofline);

impl Document for RooflineReport {
    fn write_to(&self, out: &mut dyn Write, format: Format, _: bool) -> io::Result<()> {
        let mut out = out;
        self.write(&mut out, format)
    }
    fn json_value(&self, _: bool) -> Result<serde_json::Value, ApiError> {
        command::json_of(self)
    }
    fn outcomes(&self) -> Vec<&dyn TraceOutcome> {
        command::outcomes(&self.traces)
    }
}

/// `torchtrace roofline`: one trace or more, each on its own.
impl Command for Roofline {
    type Options = RooflineSpec;
    type Report = RooflineReport;

    fn configure(options: &RooflineSpec, _: &Selector) -> Result<RooflineSpec, ApiError> {
        if options.top == 0 {
            return Err(ApiError::Arguments(
                "roofline: --top must be at least 1".into(),
            ));
        }
        // Physical ranges: a peak outside them is a typo or a unit
        // mistake (1e-320 TB/s made every rate `inf`).
        for (flag, v, (lo, hi), unit) in [
            ("--peak-tflops", options.peak_tflops, PEAK_TFLOPS, "TFLOP/s"),
            ("--peak-tbps", options.peak_tbps, PEAK_TBPS, "TB/s"),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && (lo..=hi).contains(&v)) {
                    return Err(ApiError::Arguments(format!(
                        "roofline: {flag} must be between {lo} and {hi} {unit}, not {}",
                        short_number(v)
                    )));
                }
            }
        }
        Ok(options.clone())
    }

    /// Exit 1 when a read trace has GPU work but no modelled op (no shapes
    /// recorded, say): nothing to put on the roof.
    fn said(t: &TraceRoofline, _: &Contexts) -> Said {
        let mut problems = Vec::new();
        if t.complete && t.rows.is_empty() {
            problems.push(format!(
                "{}: no op with recorded shapes and a model launched GPU work (record the trace with record_shapes=True): nothing to put on the roof",
                t.path
            ));
        }
        Said {
            problems,
            notes: command::path_notes(&t.path, &t.notes()),
        }
    }

    fn report(outputs: Vec<TraceRoofline>, spec: &RooflineSpec) -> RooflineReport {
        let comparison =
            (outputs.len() == 2).then(|| outputs.iter().map(SideFigures::of).collect());
        RooflineReport {
            traces: outputs,
            comparison,
            spec: spec.clone(),
        }
    }
}

/// A trace's dominant op: the modelled row with the most GPU time (the
/// rows are sorted by it).
pub fn dominant_of(t: &TraceRoofline) -> Option<&RoofRow> {
    t.rows.first().filter(|r| r.gpu_ns > 0)
}

/// An exact count as a cell (text past i64).
pub fn big(v: u128) -> Cell {
    i64::try_from(v).map_or_else(|_| Cell::Text(v.to_string()), Cell::Int)
}

fn compact(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The row table's columns.
pub const ROW_HEADS: [&str; 16] = [
    "name",
    "input_dims",
    "input_types",
    "category",
    "calls",
    "flops",
    "bytes",
    "intensity",
    "gpu_ns",
    "tflops_per_s",
    "tb_per_s",
    "precision",
    "peak_tflops",
    "ridge",
    "pct_of_peak",
    "bound",
];

/// One row's cells; `short`: dims and names cut for the terminal.
pub fn row_cells(r: &RoofRow, short: bool) -> Vec<Cell> {
    let cut = |s: String, n: usize| {
        if short {
            crate::text::ellipsize_middle(&s, n)
        } else {
            s
        }
    };
    vec![
        Cell::text(cut(r.name.clone(), 48)),
        Cell::text(cut(compact(&r.input_dims), 48)),
        Cell::text(cut(compact(&r.input_types), 40)),
        Cell::text(r.category.as_str()),
        r.calls.into(),
        big(r.flops),
        big(r.bytes),
        Cell::opt_f(r.intensity, 2),
        Cell::Int(r.gpu_ns),
        Cell::opt_f(r.tflops_per_s, 3),
        Cell::opt_f(r.tb_per_s, 3),
        r.precision.clone().map_or(Cell::Null, Cell::Text),
        Cell::opt_f(r.peak_tflops, 1),
        Cell::opt_f(r.ridge, 1),
        Cell::opt_f(r.pct_of_peak, 1),
        r.bound.map_or(Cell::Null, |b| Cell::text(b.as_str())),
    ]
}

fn device_line(t: &TraceRoofline) -> String {
    let d = &t.device;
    let peaks: Vec<String> = d
        .peak_tflops
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    format!(
        "device {} → {} (TFLOP/s: {}; TB/s: {})",
        d.name.as_deref().unwrap_or("(none)"),
        d.matched.as_deref().unwrap_or("no table entry"),
        if peaks.is_empty() {
            "unknown".to_string()
        } else {
            peaks.join(", ")
        },
        d.peak_tbps.map_or("unknown".into(), |b| b.to_string()),
    )
}

/// The tables (terminal, markdown) and the CSV tables.
fn tables(r: &RooflineReport) -> (Vec<Table>, Vec<Table>) {
    let mut human = Vec::new();
    let mut csv_rows = Table::new("roofline rows", &{
        let mut h = vec!["trace"];
        h.extend(ROW_HEADS);
        h
    });
    let mut csv_un = Table::new(
        "roofline unmodelled",
        &["trace", "name", "reason", "calls", "kernels", "gpu_ns"],
    );
    for t in &r.traces {
        let label = crate::views::short(&t.path);
        human.push(head_table(t, &label));
        human.push(rows_table(t, &label, r.spec.top));
        human.push(unmodelled_table(t, &label, r.spec.top));
        for row in &t.rows {
            let mut cells = vec![Cell::text(t.path.clone())];
            cells.extend(row_cells(row, false));
            csv_rows.row(cells);
        }
        for u in &t.unmodelled {
            let mut cells = vec![Cell::text(t.path.clone())];
            cells.extend(unmodelled_cells(u, false));
            csv_un.row(cells);
        }
    }
    if let Some(sides) = &r.comparison {
        human.push(comparison_table(sides));
    }
    (human, vec![csv_rows, csv_un])
}

/// A trace's GPU time, how much of it the models explain, and the
/// modelled FLOPs and bytes (in all, per token, per step).
fn head_table(t: &TraceRoofline, label: &str) -> Table {
    let s = &t.summary;
    let mut head = Table::new(
        format!("Roofline of {label}: {}", device_line(t)),
        &["figure", "value"],
    );
    for (k, v) in [
        ("GPU time (ns)", s.gpu_ns),
        ("  linked to a launch (ns)", s.gpu_linked_ns),
        ("  modelled rows (ns)", s.modelled_gpu_ns),
        ("  unmodelled (ns)", s.unmodelled_gpu_ns),
        ("  unlinked (ns)", s.unlinked_gpu_ns),
        ("  of graph replays, to captured ops (ns)", s.gpu_graph_ns),
    ] {
        head.row(vec![Cell::text(k), Cell::Int(v)]);
    }
    head.row(vec![Cell::text("rows"), s.rows.into()]);
    head.row(vec![
        Cell::text("modelled FLOPs (Σ calls × flops)"),
        big(t.totals.flops),
    ]);
    head.row(vec![
        Cell::text("modelled bytes (Σ calls × bytes)"),
        big(t.totals.bytes),
    ]);
    for (unit, n, per) in [
        ("token", t.completion_tokens, &t.per_token),
        ("step", t.steps, &t.per_step),
    ] {
        if let (Some(n), Some(p)) = (n, per) {
            head.row(vec![Cell::text(format!("{unit}s")), n.into()]);
            head.row(vec![
                Cell::text(format!("  FLOPs per {unit}")),
                Cell::opt_f(Some(p.flops), 0),
            ]);
            head.row(vec![
                Cell::text(format!("  bytes per {unit}")),
                Cell::opt_f(Some(p.bytes), 0),
            ]);
        }
    }
    head
}

/// The top ops and shapes by GPU time, the rest summed in one row.
fn rows_table(t: &TraceRoofline, label: &str, top: usize) -> Table {
    let mut rows = Table::new(
        format!("Ops and shapes of {label} (top {top} by GPU time)"),
        &ROW_HEADS,
    );
    for row in t.rows.iter().take(top) {
        rows.row(row_cells(row, true));
    }
    if t.rows.len() > top {
        let rest = &t.rows[top..];
        let mut cells = vec![Cell::Null; ROW_HEADS.len()];
        cells[0] = Cell::text(format!("({} other rows)", rest.len()));
        cells[4] = rest.iter().map(|x| x.calls).sum::<u64>().into();
        cells[8] = Cell::Int(rest.iter().map(|x| x.gpu_ns).fold(0, i64::saturating_add));
        rows.row(cells);
    }
    rows
}

/// The top GPU time without a model, with the reason.
fn unmodelled_table(t: &TraceRoofline, label: &str, top: usize) -> Table {
    let mut un = Table::new(
        format!("GPU time without a model in {label} (top {top})"),
        &["name", "reason", "calls", "kernels", "gpu_ns"],
    );
    for u in t.unmodelled.iter().take(top) {
        un.row(unmodelled_cells(u, true));
    }
    un
}

/// One unmodelled row: the name cut to 60 characters for people
/// (`human`), whole for CSV.
fn unmodelled_cells(u: &super::UnmodelledRow, human: bool) -> Vec<Cell> {
    let name = match human {
        true => crate::text::ellipsize_middle(&u.name, 60),
        false => u.name.clone(),
    };
    vec![
        Cell::text(name),
        Cell::text(u.reason.clone()),
        u.calls.into(),
        u.kernels.into(),
        Cell::Int(u.gpu_ns),
    ]
}

/// The two traces side by side (AR first, as given).
fn comparison_table(sides: &[SideFigures]) -> Table {
    let labels: Vec<String> = sides.iter().map(|s| crate::views::short(&s.path)).collect();
    let mut heads = vec!["figure"];
    heads.extend(labels.iter().map(String::as_str));
    let mut t = Table::new(
        "Two traces: each side's dominant op and work per token",
        &heads,
    );
    let mut add = |name: &str, f: &dyn Fn(&SideFigures) -> Cell| {
        let mut cells = vec![Cell::text(name)];
        cells.extend(sides.iter().map(f));
        t.row(cells);
    };
    add("dominant op and shape", &|s| {
        s.dominant.clone().map_or(Cell::Null, Cell::Text)
    });
    add("its GPU ns", &|s| {
        s.dominant_gpu_ns.map_or(Cell::Null, Cell::Int)
    });
    add("its share of the GPU time", &|s| {
        Cell::opt_f(s.dominant_gpu_share, 6)
    });
    add("its TB/s", &|s| Cell::opt_f(s.dominant_tb_per_s, 3));
    add("its share of the bandwidth roof", &|s| {
        Cell::opt_f(s.dominant_share_of_bandwidth_roof, 6)
    });
    add("its % of the roof (by its bound)", &|s| {
        Cell::opt_f(s.dominant_pct_of_peak, 1)
    });
    add("its bound", &|s| {
        s.dominant_bound.map_or(Cell::Null, Cell::text)
    });
    add("completion tokens", &|s| Cell::opt_i(s.completion_tokens));
    add("modelled FLOPs per token", &|s| {
        Cell::opt_f(s.flops_per_token, 0)
    });
    add("modelled bytes per token", &|s| {
        Cell::opt_f(s.bytes_per_token, 0)
    });
    add("modelled GPU ns per token", &|s| {
        Cell::opt_f(s.gpu_ns_per_token, 0)
    });
    t
}

/// A number as a person reads it back: as written in plain form where that
/// is short, else in scientific notation (`1e-320`, not 320 zeros).
fn short_number(v: f64) -> String {
    let a = v.abs();
    if v != 0.0 && a.is_finite() && !(1e-4..1e7).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod number_tests {
    #[test]
    fn out_of_range_peaks_are_written_short() {
        assert_eq!(super::short_number(1e-320), "1e-320");
        assert_eq!(super::short_number(1e300), "1e300");
        assert_eq!(super::short_number(3.35), "3.35");
        assert_eq!(super::short_number(f64::INFINITY), "inf");
    }
}
