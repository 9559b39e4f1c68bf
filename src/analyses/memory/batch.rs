//! `memory` in a `batch` campaign: report.md's "Memory" section (every
//! trace's devices: peak, reserved, churn per token, what holds the peak;
//! per workload AR against the candidate), `memory.csv` (one row per trace
//! and device, every headline figure of M2–M5) and figure 13 (each
//! device's allocated and reserved bytes over time). A campaign whose
//! traces carry no `[memory]` event gets no section and no file.

use super::view::{compare, device_columns, holder_label};
use super::{Memory, TraceMemory};
use crate::campaign::{Campaign, CampaignOptions, Compared, InBatch, Section, SectionFile};
use crate::report::{self, Cell, Table};

/// The section's CSV.
pub const CSV: &str = "memory.csv";
/// Figure 13's file stem.
pub const FIGURE: &str = "fig13_memory_timeline";
/// The points of each device's timeline batch keeps for the figure (M6).
pub const TIMELINE_POINTS: u32 = 400;

fn mib(b: i128) -> Cell {
    Cell::Float(b as f64 / 1_048_576.0, 2)
}

/// The traces with memory figures, each with its mode.
fn with_memory<'c>(c: &'c Campaign<'_>) -> Vec<(&'c str, Option<String>, &'c TraceMemory)> {
    c.traces
        .iter()
        .filter_map(|t| {
            let m = t.get::<Memory>()?;
            (!m.devices.is_empty()).then(|| {
                let mode = t.run.mode.as_ref().map(|m| m.value.clone());
                (t.path, mode, m)
            })
        })
        .collect()
}

/// One row per (trace, device) for people.
fn devices_table(traces: &[(&str, Option<String>, &TraceMemory)]) -> Table {
    let mut t = Table::new(
        "Memory per trace and device (memory)",
        &[
            "Trace",
            "Mode",
            "Device",
            "Peak allocated (MiB)",
            "Peak at (ns)",
            "Peak reserved (MiB)",
            "Held from before the trace (MiB)",
            "Allocated per token (KiB)",
            "Largest holder at the peak",
        ],
    );
    for (path, mode, m) in traces {
        for d in &m.devices {
            t.row(vec![
                Cell::text(*path),
                mode.clone().map_or(Cell::Null, Cell::text),
                Cell::text(d.device.clone()),
                mib(d.peak_allocated_bytes),
                Cell::Int(d.peak_ts_ns),
                d.peak_reserved_bytes
                    .map_or(Cell::Null, |b| mib(i128::from(b))),
                d.before_trace_bytes.map_or(Cell::Null, mib),
                Cell::opt_f(d.bytes_allocated_per_token.map(|b| b / 1024.0), 1),
                d.at_peak
                    .first()
                    .map_or(Cell::Null, |h| Cell::text(holder_label(h))),
            ]);
        }
    }
    t
}

/// Per workload, each device of AR against the candidate.
fn workloads_table(c: &Campaign<'_>) -> Table {
    let mut t = Table::new(
        "Memory per workload: AR vs the candidate (memory)",
        &[
            "Workload",
            "Mode",
            "Device",
            "Peak AR (MiB)",
            "Peak candidate (MiB)",
            "Candidate − AR (MiB)",
            "Allocated/token AR (KiB)",
            "Allocated/token candidate (KiB)",
            "Largest holder AR",
            "Largest holder candidate",
        ],
    );
    for (m, a, b) in c.matched::<Memory>() {
        if a.devices.is_empty() && b.devices.is_empty() {
            continue;
        }
        for d in compare(a, b).devices {
            t.row(vec![
                Cell::text(m.workload.clone()),
                Cell::text(m.candidate_mode.clone()),
                Cell::text(d.device),
                d.baseline_peak_allocated_bytes.map_or(Cell::Null, mib),
                d.candidate_peak_allocated_bytes.map_or(Cell::Null, mib),
                d.peak_delta_bytes.map_or(Cell::Null, mib),
                Cell::opt_f(d.baseline_bytes_allocated_per_token.map(|b| b / 1024.0), 1),
                Cell::opt_f(d.candidate_bytes_allocated_per_token.map(|b| b / 1024.0), 1),
                d.baseline_top_holder.map_or(Cell::Null, Cell::text),
                d.candidate_top_holder.map_or(Cell::Null, Cell::text),
            ]);
        }
    }
    t.drop_column_if_all("Mode", "mtp");
    t
}

/// Every figure of every (trace, device), keys as in the JSON.
fn csv_table(traces: &[(&str, Option<String>, &TraceMemory)]) -> Table {
    let cols = device_columns();
    let mut heads: Vec<&str> = vec!["trace", "mode", "device"];
    heads.extend(cols.iter().map(|(k, _)| *k));
    heads.push("top_holder_at_peak");
    heads.push("top_holder_bytes");
    let mut t = Table::new("memory", &heads);
    for (path, mode, m) in traces {
        for d in &m.devices {
            let mut row = vec![
                Cell::text(*path),
                mode.clone().map_or(Cell::Null, Cell::text),
                Cell::text(d.device.clone()),
            ];
            row.extend(cols.iter().map(|(_, f)| f(d)));
            let top = d.at_peak.first();
            row.push(top.map_or(Cell::Null, |h| Cell::text(holder_label(h))));
            row.push(top.map_or(Cell::Null, |h| Cell::wide(h.bytes)));
            t.row(row);
        }
    }
    t
}

/// The section: `None` when no trace carries `[memory]` events.
fn section(c: &Campaign<'_>) -> Option<Section> {
    let traces = with_memory(c);
    if traces.is_empty() {
        return None;
    }
    let mut md = String::from("## Memory: the allocator timeline\n\n");
    let w = workloads_table(c);
    if !w.rows.is_empty() {
        md.push_str(&report::markdown::section(&w, "###"));
        md.push('\n');
    }
    md.push_str(&report::markdown::section(&devices_table(&traces), "###"));
    md.push_str(&format!(
        "\nFrom the `[memory]` events (`profile_memory=True`): peak = the largest allocated level (the allocator's \
         `Total Allocated`), first reached at the time shown; held from before = the peak less the trace's own \
         allocations live at it; largest holder = the innermost host op enclosing the most bytes live at the peak; \
         per token = bytes allocated ÷ completion tokens (docs/VIEWS.md M1–M6). Every figure: [{CSV}]({CSV}); \
         figure 13: [{FIGURE}.png](figures/{FIGURE}.png).\n\n"
    ));
    Some(Section {
        markdown: md,
        files: vec![SectionFile {
            name: CSV.into(),
            text: report::csv::to_string(&csv_table(&traces)),
            what: "every trace's allocator figures per device".into(),
        }],
        figures: vec![Box::new(super::figure::MemoryFigure::of(&traces))],
        lead: String::new(),
    })
}

impl InBatch for Memory {
    const BATCH_FILES: &'static [&'static str] = &[CSV];

    fn batch_section(c: &Campaign<'_>) -> Option<Section> {
        section(c)
    }

    /// Each device side by side under `memory`; `null` where a side lacks
    /// the figures.
    fn batch_compare(b: Option<&TraceMemory>, c: Option<&TraceMemory>) -> Option<Compared> {
        let cmp = b
            .zip(c)
            .filter(|(b, c)| !b.devices.is_empty() || !c.devices.is_empty())
            .map(|(b, c)| compare(b, c));
        Some(Compared::nested(cmp))
    }

    /// The timeline figure 13 draws (M6).
    fn batch_defaults(_c: &CampaignOptions) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("timeline".into(), TIMELINE_POINTS.into());
        m
    }
}
