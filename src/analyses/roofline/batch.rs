//! `roofline` in `batch` (its [`crate::campaign::InBatch`] hooks): per
//! trace, its dominant op and shape (the modelled row with the most GPU
//! time) with its share of the trace's GPU time, achieved TB/s and
//! TFLOP/s, % of the roof and bound (`traces.csv`, `report.md`'s worker
//! table, `results.json`'s comparisons); report.md's "How close to the
//! roof" section (per workload, how close AR's and MTP's dominant ops ran
//! to the roof), `roofline.csv` (every op and shape of every trace) and
//! figure 12 (intensity against achieved TFLOP/s on log axes, the roofs
//! drawn, one point per op and shape sized by its GPU time, AR and MTP
//! marked).
//!
//! Every figure is [`super::TraceRoofline`]'s, as `torchtrace roofline`
//! prints it; a trace without recorded shapes has no rows and is said so
//! in one line.

use super::view::dominant_of;
use super::{op_shape, share, Roofline, TraceRoofline};
use crate::campaign::{Campaign, Compared, InBatch, Matched, Section, SectionFile};
use crate::report::{self, Cell, Table};
use crate::views::Column;
use serde::Serialize;

/// The CSV file the section writes.
pub const CSV: &str = "roofline.csv";
/// Figure 12's file stem.
pub const FIGURE: &str = "fig12_roofline";

/// A trace's dominant op as `results.json`'s comparisons give it.
#[derive(Debug, Clone, Serialize)]
pub struct Dominant {
    pub name: String,
    pub input_dims: serde_json::Value,
    pub input_types: serde_json::Value,
    pub gpu_ns: i64,
    /// Its GPU ns ÷ the trace's.
    pub gpu_share: Option<f64>,
    pub tb_per_s: Option<f64>,
    pub tflops_per_s: Option<f64>,
    pub pct_of_peak: Option<f64>,
    pub bound: Option<&'static str>,
    /// FLOPs and bytes of every modelled row per completion token.
    pub flops_per_token: Option<f64>,
    pub bytes_per_token: Option<f64>,
}

fn dominant(t: &TraceRoofline) -> Option<Dominant> {
    let r = dominant_of(t)?;
    let per = t.per_token.as_ref();
    Some(Dominant {
        name: r.name.clone(),
        input_dims: r.input_dims.clone(),
        input_types: r.input_types.clone(),
        gpu_ns: r.gpu_ns,
        gpu_share: share(r, t),
        tb_per_s: r.tb_per_s,
        tflops_per_s: r.tflops_per_s,
        pct_of_peak: r.pct_of_peak,
        bound: r.bound.map(|b| b.as_str()),
        flops_per_token: per.map(|p| p.flops),
        bytes_per_token: per.map(|p| p.bytes),
    })
}

/// The per-trace columns (`traces.csv` as `roofline_…`, and report.md's
/// worker table).
fn columns() -> Vec<Column<TraceRoofline>> {
    let dom = |t: &TraceRoofline| dominant_of(t).cloned();
    vec![
        Column::new("dominant_op", "Dominant op", move |t: &TraceRoofline| {
            dom(t).map_or(Cell::Null, |r| Cell::text(op_shape(&r)))
        }),
        Column::new(
            "dominant_gpu_share",
            "Its GPU share",
            |t: &TraceRoofline| Cell::opt_f(dominant_of(t).and_then(|r| share(r, t)), 6),
        ),
        Column::new("dominant_tb_per_s", "TB/s", |t: &TraceRoofline| {
            Cell::opt_f(dominant_of(t).and_then(|r| r.tb_per_s), 6)
        }),
        Column::new("dominant_tflops_per_s", "TFLOP/s", |t: &TraceRoofline| {
            Cell::opt_f(dominant_of(t).and_then(|r| r.tflops_per_s), 6)
        }),
        Column::new("dominant_pct_of_peak", "% of roof", |t: &TraceRoofline| {
            Cell::opt_f(dominant_of(t).and_then(|r| r.pct_of_peak), 3)
        }),
        Column::new("dominant_bound", "Bound", |t: &TraceRoofline| {
            dominant_of(t)
                .and_then(|r| r.bound)
                .map_or(Cell::Null, |b| Cell::text(b.as_str()))
        }),
        Column::new(
            "modelled_gpu_share",
            "Modelled GPU share",
            |t: &TraceRoofline| {
                let s = &t.summary;
                Cell::opt_f(
                    (s.gpu_ns > 0).then(|| s.modelled_gpu_ns as f64 / s.gpu_ns as f64),
                    6,
                )
            },
        ),
    ]
}

/// The section: `None` when roofline ran on no trace.
fn section(c: &Campaign<'_>) -> Option<Section> {
    let traces: Vec<(&crate::campaign::CampaignTrace<'_>, &TraceRoofline)> = c
        .traces
        .iter()
        .filter_map(|t| Some((t, t.get::<Roofline>()?)))
        .collect();
    if traces.is_empty() {
        return None;
    }
    let shaped = traces.iter().filter(|(_, r)| !r.rows.is_empty()).count();
    let mut md = String::from("## How close to the roof\n\n");
    if shaped == 0 {
        md.push_str(&format!(
            "No trace has an op with recorded shapes and a model ({} read): record with `record_shapes=True` \
             (vLLM `--profiler-config.torch_profiler_record_shapes`) for `torchtrace roofline`.\n\n",
            traces.len()
        ));
        return Some(Section {
            markdown: md,
            files: Vec::new(),
            figures: Vec::new(),
            lead: String::new(),
        });
    }
    let matched = c.matched::<Roofline>();
    let pairs: Vec<_> = matched
        .iter()
        .filter(|(_, a, m)| !a.rows.is_empty() || !m.rows.is_empty())
        .collect();
    if !pairs.is_empty() {
        let t = dominant_table(&pairs);
        md.push_str(&report::markdown::section(&t, "###"));
        md.push('\n');
        for (m, ar, mtp) in &pairs {
            md.push_str(&sentence(&m.workload, &m.candidate_mode, ar, mtp));
        }
        md.push('\n');
    }
    let bare = traces.len() - shaped;
    md.push_str(&format!(
        "Dominant op = the op and shape (`Input Dims`) with the most GPU time among the modelled ones (a graph \
         replay's kernels counted for the op that captured them, with the capture's shapes); GPU share = its GPU \
         time ÷ the trace's; % of roof = achieved ÷ min(peak TFLOP/s, intensity × peak TB/s) of the trace's device \
         (memory-bound: its TB/s share); per token = Σ calls × FLOPs (bytes) over the modelled rows ÷ completion \
         tokens. {shaped} of {} traces have shaped ops{}. Every row: [{CSV}]({CSV}); figure 12: \
         [{FIGURE}.png](figures/{FIGURE}.png).\n\n",
        traces.len(),
        if bare > 0 {
            format!("; {bare} without recorded shapes are not on the roof")
        } else {
            String::new()
        }
    ));
    Some(Section {
        markdown: md,
        files: vec![SectionFile {
            name: CSV.into(),
            text: report::csv::to_string(&csv_table(&traces)),
            what: "every op and shape of every trace on the roof".into(),
        }],
        figures: vec![Box::new(super::figure::RoofFigure::of(c))],
        lead: String::new(),
    })
}

/// Each side's dominant op per workload: its share, rates, % of roof and
/// bound, and the trace's modelled FLOPs and bytes per token.
fn dominant_table(pairs: &[&Matched<'_, '_, Roofline>]) -> Table {
    let mut t = Table::new(
        "How close to the roof: each side's dominant op per workload (roofline)",
        &[
            "Workload",
            "Mode",
            "Side",
            "Dominant op and shape",
            "GPU share %",
            "TB/s",
            "TFLOP/s",
            "% of roof",
            "Bound",
            "FLOPs/token",
            "Bytes/token",
        ],
    );
    for (m, ar, mtp) in pairs.iter().copied() {
        for (side, tr) in [("AR", *ar), (m.candidate_mode.as_str(), *mtp)] {
            let d = dominant_of(tr);
            let per = tr.per_token.as_ref();
            t.row(vec![
                m.workload.clone().into(),
                m.candidate_mode.clone().into(),
                Cell::text(crate::runinfo::Mode::display(side)),
                d.map_or(Cell::text("no shapes"), |r| {
                    Cell::text(format!("`{}`", op_shape(r)))
                }),
                Cell::opt_f(d.and_then(|r| share(r, tr)).map(|s| s * 100.0), 1),
                Cell::opt_f(d.and_then(|r| r.tb_per_s), 3),
                Cell::opt_f(d.and_then(|r| r.tflops_per_s), 3),
                Cell::opt_f(d.and_then(|r| r.pct_of_peak), 1),
                d.and_then(|r| r.bound)
                    .map_or(Cell::Null, |b| Cell::text(b.as_str())),
                Cell::opt_f(per.map(|p| p.flops), 0),
                Cell::opt_f(per.map(|p| p.bytes), 0),
            ]);
        }
    }
    // The Side column says AR and MTP already.
    t.drop_column_if_all("Mode", "mtp");
    t
}

/// One workload's sentence: how close each side's dominant op ran.
fn sentence(workload: &str, mode: &str, ar: &TraceRoofline, mtp: &TraceRoofline) -> String {
    let side = |label: &str, t: &TraceRoofline| match dominant_of(t) {
        None => format!("{label} has no shaped op"),
        Some(r) => {
            let roof = match r.bound {
                Some(super::Bound::Compute) => r
                    .peak_tflops
                    .map(|p| format!("the {p} TFLOP/s compute roof")),
                _ => t
                    .device
                    .peak_tbps
                    .map(|b| format!("the {b} TB/s memory roof")),
            };
            let rate = match r.bound {
                Some(super::Bound::Compute) => r.tflops_per_s.map(|v| format!("{v:.3} TFLOP/s")),
                _ => r.tb_per_s.map(|v| format!("{v:.3} TB/s")),
            };
            format!(
                "{label}'s dominant op `{}` ({} of its GPU time) ran at {}{}",
                op_shape(r),
                share(r, t).map_or("?".into(), |s| format!("{:.1} %", s * 100.0)),
                rate.unwrap_or_else(|| "no rate".into()),
                match (r.pct_of_peak, roof) {
                    (Some(p), Some(roof)) => format!(", {p:.1} % of {roof}"),
                    _ => " (device peaks unknown)".into(),
                }
            )
        }
    };
    format!(
        "- **{workload}**: {}; {}.\n",
        side("AR", ar),
        side(&crate::runinfo::Mode::display(mode), mtp)
    )
}

fn csv_table(traces: &[(&crate::campaign::CampaignTrace<'_>, &TraceRoofline)]) -> Table {
    let mut heads = vec!["trace", "workload", "mode"];
    heads.extend(super::view::ROW_HEADS);
    heads.extend(["gpu_graph_ns", "gpu_share"]);
    let mut t = Table::new("roofline", &heads);
    for (ct, r) in traces {
        for row in &r.rows {
            let mut cells = vec![
                Cell::text(ct.path.to_string()),
                ct.run
                    .workload
                    .as_ref()
                    .map_or(Cell::Null, |w| Cell::text(w.value.clone())),
                ct.run
                    .mode
                    .as_ref()
                    .map_or(Cell::Null, |m| Cell::text(m.value.clone())),
            ];
            cells.extend(super::view::row_cells(row, false));
            cells.push(Cell::Int(row.gpu_graph_ns));
            cells.push(Cell::opt_f(share(row, r), 6));
            t.row(cells);
        }
    }
    t
}

impl InBatch for Roofline {
    const BATCH_FILES: &'static [&'static str] = &[CSV];
    fn batch_section(c: &Campaign<'_>) -> Option<Section> {
        section(c)
    }

    /// `roofline_dominant_op`, `…_gpu_share`, `…_tb_per_s`,
    /// `…_tflops_per_s`, `…_pct_of_peak`, `…_bound`,
    /// `roofline_modelled_gpu_share`.
    fn trace_columns(_: &[&TraceRoofline]) -> Vec<Column<TraceRoofline>> {
        columns()
    }

    fn report_columns() -> Vec<Column<TraceRoofline>> {
        columns()
            .into_iter()
            .filter(|c| {
                matches!(
                    c.key.as_str(),
                    "dominant_op" | "dominant_tb_per_s" | "dominant_pct_of_peak"
                )
            })
            .collect()
    }

    /// `results.json`'s comparisons: each side's dominant op.
    fn batch_compare(
        baseline: Option<&TraceRoofline>,
        candidate: Option<&TraceRoofline>,
    ) -> Option<Compared> {
        #[derive(Serialize)]
        struct Sides {
            baseline: Option<Dominant>,
            candidate: Option<Dominant>,
        }
        let s = Sides {
            baseline: baseline.and_then(dominant),
            candidate: candidate.and_then(dominant),
        };
        (s.baseline.is_some() || s.candidate.is_some()).then(|| Compared::nested(s))
    }
}
