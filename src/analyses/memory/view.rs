//! The view of `memory`'s results: [`columns`] (one per headline figure of
//! a device: the side-by-side table, the CSV and `batch`'s sections), the
//! holder and step tables, the AR-vs-MTP comparison; [`MemoryReport`] is
//! the document it prints (JSON keys as VIEWS.md M1–M6).

use super::{DeviceMemory, Holder, Memory, MemorySpec, TraceMemory};
use crate::command::{self, ApiError, Command, Document, Said, TraceOutcome};
use crate::contexts::{Contexts, Selector};
use crate::report::{self, Cell, Format, Table};
use serde::{Deserialize, Serialize};
use std::io::{self, Write};

/// The document `memory` prints (`-f json`: every step row).
#[derive(Debug, Serialize)]
pub struct MemoryReport {
    pub traces: Vec<TraceMemory>,
    /// With two traces (baseline AR first, candidate MTP): per device.
    pub comparison: Option<Comparison>,
}

/// Two traces' devices side by side (the first is the baseline).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub baseline: String,
    pub candidate: String,
    pub devices: Vec<DeviceComparison>,
}

/// One device of a comparison; a side without the device is null.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceComparison {
    pub device: String,
    pub baseline_peak_allocated_bytes: Option<i128>,
    pub candidate_peak_allocated_bytes: Option<i128>,
    /// candidate − baseline (null unless both are known).
    pub peak_delta_bytes: Option<i128>,
    pub baseline_bytes_allocated_per_token: Option<f64>,
    pub candidate_bytes_allocated_per_token: Option<f64>,
    /// The largest holder at each side's peak (`cat name`).
    pub baseline_top_holder: Option<String>,
    pub candidate_top_holder: Option<String>,
}

/// The two traces' devices matched by (type, id), in the baseline's order
/// then the candidate's own.
pub fn compare(baseline: &TraceMemory, candidate: &TraceMemory) -> Comparison {
    let mut keys: Vec<(i64, i64, String)> = Vec::new();
    for d in baseline.devices.iter().chain(&candidate.devices) {
        let k = (d.device_type, d.device_id, d.device.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let find = |t: &'_ TraceMemory, k: &(i64, i64, String)| -> Option<DeviceMemory> {
        t.devices
            .iter()
            .find(|d| (d.device_type, d.device_id) == (k.0, k.1))
            .cloned()
    };
    let top = |d: &DeviceMemory| d.at_peak.first().map(holder_label);
    let devices = keys
        .iter()
        .map(|k| {
            let (b, c) = (find(baseline, k), find(candidate, k));
            let (bp, cp) = (
                b.as_ref().map(|d| d.peak_allocated_bytes),
                c.as_ref().map(|d| d.peak_allocated_bytes),
            );
            DeviceComparison {
                device: k.2.clone(),
                baseline_peak_allocated_bytes: bp,
                candidate_peak_allocated_bytes: cp,
                peak_delta_bytes: bp.zip(cp).map(|(b, c)| c - b),
                baseline_bytes_allocated_per_token: b
                    .as_ref()
                    .and_then(|d| d.bytes_allocated_per_token),
                candidate_bytes_allocated_per_token: c
                    .as_ref()
                    .and_then(|d| d.bytes_allocated_per_token),
                baseline_top_holder: b.as_ref().and_then(top),
                candidate_top_holder: c.as_ref().and_then(top),
            }
        })
        .collect();
    Comparison {
        baseline: baseline.path.clone(),
        candidate: candidate.path.clone(),
        devices,
    }
}

/// A holder as one label: `cat name` (the name alone without a category).
pub fn holder_label(h: &Holder) -> String {
    if h.cat.is_empty() {
        h.name.clone()
    } else {
        format!("{} {}", h.cat, h.name)
    }
}

impl MemoryReport {
    pub fn new(traces: Vec<TraceMemory>) -> Self {
        let comparison = (traces.len() == 2 && traces.iter().all(|t| !t.devices.is_empty()))
            .then(|| compare(&traces[0], &traces[1]));
        MemoryReport { traces, comparison }
    }

    /// `rows`: the table shows every step (`--per-step`).
    pub fn write<W: Write>(&self, out: &mut W, format: Format, rows: bool) -> io::Result<()> {
        match format {
            Format::Json => report::json::write(out, self),
            Format::Csv => report::render(out, format, &(), &[], &tables(self, true, false)),
            Format::Table | Format::Markdown => {
                report::render(out, format, &(), &tables(self, rows, true), &[])
            }
        }
    }
}

command::trace_outcome!(TraceMemory);

impl Document for MemoryReport {
    fn write_to(&self, out: &mut dyn Write, format: Format, rows: bool) -> io::Result<()> {
        let mut out = out;
        self.write(&mut out, format, rows)
    }
    fn json_value(&self, _rows: bool) -> Result<serde_json::Value, ApiError> {
        // Through the text: a sum past u64 has no `Value` of its own.
        let text = serde_json::to_string(self).map_err(|e| ApiError::Json(io::Error::other(e)))?;
        serde_json::from_str(&text).map_err(|e| ApiError::Json(io::Error::other(e)))
    }
    fn outcomes(&self) -> Vec<&dyn TraceOutcome> {
        command::outcomes(&self.traces)
    }
}

/// `torchtrace memory`: one or more traces (two: AR first, compared).
impl Command for Memory {
    type Options = MemorySpec;
    type Report = MemoryReport;

    fn configure(options: &MemorySpec, _: &Selector) -> Result<MemorySpec, ApiError> {
        if options.timeline > 100_000 {
            return Err(ApiError::Arguments(
                "memory: --timeline may keep at most 100000 points".into(),
            ));
        }
        Ok(options.clone())
    }

    /// A trace without `[memory]` events has nothing to report (exit 1).
    fn said(t: &TraceMemory, _contexts: &Contexts) -> Said {
        let mut problems = Vec::new();
        let mut notes = command::path_notes(&t.path, &t.notes);
        if t.complete && t.devices.is_empty() {
            // Its note says so: a problem, not a note twice.
            notes.retain(|n| !n.contains("no [memory] events"));
            problems.push(format!(
                "{}: no [memory] events (record with profile_memory=True): nothing to report",
                t.path
            ));
        }
        Said { problems, notes }
    }

    fn report(outputs: Vec<TraceMemory>, _: &Self::Config) -> MemoryReport {
        MemoryReport::new(outputs)
    }
}

/// Bytes as MiB (2 decimals) for the human tables.
fn mib(b: i128) -> Cell {
    Cell::Float(b as f64 / 1_048_576.0, 2)
}

fn opt_wide(v: Option<i128>) -> Cell {
    v.map_or(Cell::Null, Cell::wide)
}

/// The device table's columns: (header, cell).
type DeviceColumn = (&'static str, fn(&DeviceMemory) -> Cell);

/// One row per (trace, device): the headline figures (M2–M4).
pub fn device_columns() -> Vec<DeviceColumn> {
    vec![
        ("levels", |d| Cell::text(d.levels.clone())),
        ("events", |d| d.events.into()),
        ("allocations", |d| d.allocations.into()),
        ("frees", |d| d.frees.into()),
        ("bytes_allocated", |d| Cell::wide(d.bytes_allocated)),
        ("bytes_freed", |d| Cell::wide(d.bytes_freed)),
        ("baseline_bytes", |d| opt_wide(d.baseline_bytes)),
        ("peak_allocated_bytes", |d| {
            Cell::wide(d.peak_allocated_bytes)
        }),
        ("peak_ts_ns", |d| Cell::Int(d.peak_ts_ns)),
        ("final_allocated_bytes", |d| {
            Cell::wide(d.final_allocated_bytes)
        }),
        ("peak_reserved_bytes", |d| {
            d.peak_reserved_bytes.map_or(Cell::Null, Cell::Int)
        }),
        ("reserved_minus_allocated_at_peak_bytes", |d| {
            opt_wide(d.reserved_minus_allocated_at_peak_bytes)
        }),
        ("held_at_peak_bytes", |d| Cell::wide(d.held_at_peak_bytes)),
        ("before_trace_bytes", |d| opt_wide(d.before_trace_bytes)),
        ("never_freed_bytes", |d| Cell::wide(d.never_freed_bytes)),
        ("bytes_allocated_per_token", |d| {
            Cell::opt_f(d.bytes_allocated_per_token, 1)
        }),
    ]
}

/// The human labels of [`device_columns`] (the CSV keeps the keys).
fn human(key: &str) -> &str {
    match key {
        "bytes_allocated" => "allocated (B)",
        "bytes_freed" => "freed (B)",
        "baseline_bytes" => "allocated before the trace (B)",
        "peak_allocated_bytes" => "peak (B)",
        "peak_ts_ns" => "peak at (ns)",
        "final_allocated_bytes" => "final (B)",
        "peak_reserved_bytes" => "peak reserved (B)",
        "reserved_minus_allocated_at_peak_bytes" => "reserved − allocated at peak (B)",
        "held_at_peak_bytes" => "trace's live at peak (B)",
        "before_trace_bytes" => "peak held from before (B)",
        "never_freed_bytes" => "never freed (B)",
        "bytes_allocated_per_token" => "allocated per token (B)",
        k => k,
    }
}

/// Every table: devices, holders at the peak (by op, by module), never
/// freed, steps (`steps`), comparison. `human`: labels for people, the
/// peak also in MiB.
fn tables(r: &MemoryReport, steps: bool, human_labels: bool) -> Vec<Table> {
    let cols = device_columns();
    let mut t = Tables::new(&cols);
    for x in &r.traces {
        let path = if human_labels {
            crate::views::short(&x.path)
        } else {
            x.path.clone()
        };
        for d in &x.devices {
            t.device(&path, d, &cols, steps);
        }
    }
    t.into_vec(r, steps, human_labels)
}

/// The memory view's tables while their rows are added, device by device.
struct Tables {
    devices: Table,
    holders: Table,
    modules: Table,
    never: Table,
    steps: Table,
}

impl Tables {
    /// The empty tables, `cols` the device table's figures.
    fn new(cols: &[DeviceColumn]) -> Tables {
        let mut headers: Vec<&str> = vec!["trace", "device"];
        headers.extend(cols.iter().map(|(k, _)| *k));
        Tables {
            devices: Table::new("memory: the allocator per device (M2–M4)", &headers),
            holders: Table::new(
                "memory: what holds each peak — innermost host op of each live allocation (M4)",
                &[
                    "trace",
                    "device",
                    "rank",
                    "cat",
                    "name",
                    "bytes",
                    "allocations",
                    "% of trace's live",
                ],
            ),
            modules: Table::new(
                "memory: what holds each peak, by module (M4)",
                &["trace", "device", "rank", "module", "bytes", "allocations"],
            ),
            never: Table::new(
                "memory: never freed by the trace's end (M4)",
                &[
                    "trace",
                    "device",
                    "rank",
                    "cat",
                    "name",
                    "bytes",
                    "allocations",
                ],
            ),
            steps: Table::new(
                "memory: per step (M5)",
                &[
                    "trace",
                    "device",
                    "step",
                    "name",
                    "tokens",
                    "events",
                    "allocations",
                    "frees",
                    "bytes_allocated",
                    "bytes_freed",
                    "start_bytes",
                    "high_water_bytes",
                    "end_bytes",
                    "net_bytes",
                ],
            ),
        }
    }

    /// The rows of one device of trace `path` (its steps' when `steps`).
    fn device(&mut self, path: &str, d: &DeviceMemory, cols: &[DeviceColumn], steps: bool) {
        let at = || vec![Cell::text(path.to_string()), Cell::text(d.device.clone())];
        let mut row = at();
        row.extend(cols.iter().map(|(_, f)| f(d)));
        self.devices.row(row);
        for (k, h) in d.at_peak.iter().enumerate() {
            let mut row = at();
            row.extend([
                (k as u64 + 1).into(),
                Cell::text(h.cat.clone()),
                Cell::text(h.name.clone()),
                Cell::wide(h.bytes),
                h.allocations.into(),
                Cell::opt_f(crate::stats::ratios::pct(h.bytes, d.held_at_peak_bytes), 2),
            ]);
            self.holders.row(row);
        }
        for (k, h) in d.at_peak_by_module.iter().enumerate() {
            let mut row = at();
            row.extend([
                (k as u64 + 1).into(),
                Cell::text(h.name.clone()),
                Cell::wide(h.bytes),
                h.allocations.into(),
            ]);
            self.modules.row(row);
        }
        for (k, h) in d.never_freed.iter().enumerate() {
            let mut row = at();
            row.extend([
                (k as u64 + 1).into(),
                Cell::text(h.cat.clone()),
                Cell::text(h.name.clone()),
                Cell::wide(h.bytes),
                h.allocations.into(),
            ]);
            self.never.row(row);
        }
        if !steps {
            return;
        }
        for s in &d.steps {
            let mut row = at();
            row.extend([
                s.index.into(),
                Cell::text(s.name.clone()),
                Cell::opt_i(s.tokens),
                s.events.into(),
                s.allocations.into(),
                s.frees.into(),
                Cell::wide(s.bytes_allocated),
                Cell::wide(s.bytes_freed),
                Cell::wide(s.start_bytes),
                Cell::wide(s.high_water_bytes),
                Cell::wide(s.end_bytes),
                Cell::wide(s.net_bytes),
            ]);
            self.steps.row(row);
        }
    }

    /// The tables shown: the device table (transposed for people), the
    /// holders, the others where they have rows, then the comparison.
    fn into_vec(self, r: &MemoryReport, steps: bool, human_labels: bool) -> Vec<Table> {
        let devices = if human_labels {
            transposed(&self.devices)
        } else {
            self.devices
        };
        let mut out = vec![devices, self.holders];
        if !self.modules.rows.is_empty() {
            out.push(self.modules);
        }
        if !human_labels || !self.never.rows.is_empty() {
            out.push(self.never);
        }
        if steps && !self.steps.rows.is_empty() {
            out.push(self.steps);
        }
        if let Some(c) = &r.comparison {
            out.push(comparison_table(c));
        }
        out
    }
}

/// The device table for people: one row per figure (its label, and the
/// peak also in MiB), one column per (trace, device).
fn transposed(t: &Table) -> Table {
    let mut headers: Vec<String> = vec!["figure".to_string()];
    headers.extend(
        t.rows
            .iter()
            .map(|r| format!("{} {}", r[0].display(), r[1].display())),
    );
    let refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut out = Table::new(t.title.clone(), &refs);
    for (k, key) in t.headers.iter().enumerate().skip(2) {
        let mut row = vec![Cell::text(human(key))];
        row.extend(t.rows.iter().map(|r| r[k].clone()));
        out.row(row);
        if key == "peak_allocated_bytes" {
            let mut row = vec![Cell::text("peak (MiB)")];
            row.extend(t.rows.iter().map(|r| match r[k] {
                Cell::Int(b) => mib(i128::from(b)),
                Cell::Wide(b) => mib(b),
                _ => Cell::Null,
            }));
            out.row(row);
        }
    }
    out
}

fn comparison_table(c: &Comparison) -> Table {
    let mut t = Table::new(
        format!(
            "memory: {} (baseline) vs {} (candidate)",
            crate::views::short(&c.baseline),
            crate::views::short(&c.candidate)
        ),
        &[
            "device",
            "peak baseline (B)",
            "peak candidate (B)",
            "candidate − baseline (B)",
            "allocated per token baseline (B)",
            "allocated per token candidate (B)",
            "top holder baseline",
            "top holder candidate",
        ],
    );
    for d in &c.devices {
        t.row(vec![
            Cell::text(d.device.clone()),
            opt_wide(d.baseline_peak_allocated_bytes),
            opt_wide(d.candidate_peak_allocated_bytes),
            opt_wide(d.peak_delta_bytes),
            Cell::opt_f(d.baseline_bytes_allocated_per_token, 1),
            Cell::opt_f(d.candidate_bytes_allocated_per_token, 1),
            d.baseline_top_holder.clone().map_or(Cell::Null, Cell::text),
            d.candidate_top_holder
                .clone()
                .map_or(Cell::Null, Cell::text),
        ]);
    }
    t
}
