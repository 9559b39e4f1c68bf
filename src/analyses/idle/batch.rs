//! `idle` in `batch` (its [`crate::campaign::InBatch::batch_section`]): per
//! workload, AR against MTP — report.md's "Where the GPU waits" section
//! (idle share, host-wait share, comm/compute overlap, queue maximum; the
//! per-token breakdown and a sentence naming the category that moved most;
//! the mean step: busy compute/comm/memory and idle host wait/kernel
//! wait/other), `idle_steps.csv` (one row per match, side and step) and
//! figure 11: per workload, the mean step of AR beside MTP's, stacked.
//!
//! Every figure is [`super::compare`]'s or a sum of [`super::StepRow`]s,
//! as `torchtrace idle AR MTP` prints them.

use super::{compare, round_ratio, Comparison, Idle, Part, TraceIdle};
use crate::campaign::{Campaign, InBatch, Match, Section, SectionFile};
use crate::plot::{series_color, BarGroup, Segment, StackedBar, StackedBars};
use crate::report::{self, Cell, Table};

/// The CSV file the section writes.
pub const CSV: &str = "idle_steps.csv";
/// Figure 11's file stem.
pub const FIGURE: &str = "fig11_idle_per_step";

struct Row<'c> {
    m: &'c Match,
    ar: &'c TraceIdle,
    mtp: &'c TraceIdle,
    c: Comparison,
}

/// The section: `None` when no match has idle figures on both sides.
pub(crate) fn section(campaign: &Campaign<'_>) -> Option<Section> {
    let rows: Vec<Row> = campaign
        .matched::<Idle>()
        .into_iter()
        .map(|(m, ar, mtp)| Row {
            m,
            ar,
            mtp,
            c: compare(ar, mtp),
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut md = report::markdown::section(&summary_table(&rows), "##");
    md.push_str(&format!(
        "\nPer trace, `torchtrace idle` (docs/VIEWS.md I1–I6): idle = Σ over streams of the gaps \
         before each activity against the stream's running maximum end (I2); host wait = the activity's \
         runtime call started after the stream went idle; kernel wait = a shorter gap than 30 µs otherwise; \
         other = the rest (I3). Steps: each step annotation to the next on its thread (I6). \
         CSV: [{CSV}]({CSV}).\n\n"
    ));
    for r in &rows {
        md.push_str(&sentence(r));
    }
    md.push('\n');
    md.push_str(&report::markdown::section(&per_token_table(&rows), "###"));
    md.push_str(&report::markdown::section(&step_table(&rows), "###"));
    Some(Section {
        markdown: md,
        files: vec![SectionFile {
            name: CSV.into(),
            text: report::csv::to_string(&csv_table(&rows)),
            what: "GPU busy and idle by cause per step, AR vs MTP per workload".into(),
        }],
        figures: vec![Box::new(figure(&rows))],
    })
}

fn f4(v: Option<f64>) -> Cell {
    Cell::opt_f(v, 4)
}

fn summary_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "Where the GPU waits: AR vs MTP per workload (idle)",
        &[
            "Workload",
            "Candidate mode",
            "Idle % AR",
            "Idle % MTP",
            "Host-wait % of idle AR",
            "Host-wait % of idle MTP",
            "Comm/compute overlap % AR",
            "Comm/compute overlap % MTP",
            "Queue max AR",
            "Queue max MTP",
            "Steps AR",
            "Steps MTP",
        ],
    );
    let q = |t: &TraceIdle| t.queue_max().map_or(Cell::Null, Cell::Int);
    for r in rows {
        let (a, m) = (r.ar, r.mtp);
        t.row(vec![
            r.m.workload.clone().into(),
            r.m.candidate_mode.clone().into(),
            f4(a.idle_pct()),
            f4(m.idle_pct()),
            f4(a.host_wait_share_pct()),
            f4(m.host_wait_share_pct()),
            f4(a.comm_comp_overlap_pct),
            f4(m.comm_comp_overlap_pct),
            q(a),
            q(m),
            a.steps.count.into(),
            m.steps.count.into(),
        ]);
    }
    t.notes.push(
        "idle % = Σ devices' idle / Σ devices' span (I4); overlap % = comm ∩ compute / comm (null without comm kernels); queue = launched, not finished, per stream (I5)".into(),
    );
    t
}

/// One sentence per workload: busy and idle per token, and which idle
/// category changed most per token (MTP − AR).
fn sentence(r: &Row) -> String {
    let get = |name: &str| r.c.rows.iter().find(|x| x.figure == name);
    let (Some(busy), Some(idle)) = (get("busy"), get("idle")) else {
        return String::new();
    };
    let us = |v: Option<f64>| v.map_or("n/a".to_string(), |x| format!("{:.1} µs", x / 1e3));
    let mut s = format!(
        "- **{}**: per generated token the GPU is busy {} with {} (AR {}) and idle {} (AR {})",
        r.m.workload,
        us(busy.candidate_per_token_ns),
        r.m.candidate_mode,
        us(busy.baseline_per_token_ns),
        us(idle.candidate_per_token_ns),
        us(idle.baseline_per_token_ns),
    );
    let moved = ["host_wait", "kernel_wait", "other"]
        .iter()
        .filter_map(|n| {
            let x = get(n)?;
            Some((*n, x.candidate_per_token_ns? - x.baseline_per_token_ns?))
        })
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()));
    match moved {
        Some((name, d)) => s.push_str(&format!(
            "; the idle category that changed most per token is {} ({:+.1} µs).\n",
            name.replace('_', " "),
            d / 1e3
        )),
        None => s.push_str(" (completion tokens unknown: no per-token comparison).\n"),
    }
    s
}

fn per_token_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "GPU busy and idle per generated token (ns)",
        &["Workload", "Figure", "AR", "MTP", "AR / MTP"],
    );
    for r in rows {
        for x in &r.c.rows {
            t.row(vec![
                r.m.workload.clone().into(),
                x.figure.clone().into(),
                Cell::opt_f(x.baseline_per_token_ns, 1),
                Cell::opt_f(x.candidate_per_token_ns, 1),
                Cell::opt_f(x.ratio, 6),
            ]);
        }
    }
    t.notes.push("whole-trace sums / completion tokens; busy = Σ devices' busy; idle categories Σ over streams (> 1: MTP spends less per token)".into());
    t
}

/// The step rows' sums (steps only: not `pre`, not `unattributed`).
fn step_sum(t: &TraceIdle) -> Part {
    super::compute::sum_rows(&t.steps.rows)
}

/// The six stacked figures of a part, in [`SEGMENTS`] order.
fn six(p: &Part) -> [i128; 6] {
    [
        p.compute_ns,
        p.comm_ns,
        p.memory_ns,
        p.host_wait_ns,
        p.kernel_wait_ns,
        p.other_ns,
    ]
}

const SEGMENTS: [&str; 6] = [
    "busy: compute",
    "busy: comm",
    "busy: memory",
    "idle: host wait",
    "idle: kernel wait",
    "idle: other",
];

/// Σ / steps, in µs, exactly rounded to 0.1 µs (C1); null without steps.
fn per_step_us(sum: i128, steps: u64) -> Option<f64> {
    (steps > 0).then(|| round_ratio(sum, i128::from(steps) * 1000, 1))
}

fn step_table(rows: &[Row]) -> Table {
    let mut heads = vec!["Workload", "Mode", "Steps"];
    heads.extend(SEGMENTS.iter().map(|s| match *s {
        "busy: compute" => "Compute µs/step",
        "busy: comm" => "Comm µs/step",
        "busy: memory" => "Memory µs/step",
        "idle: host wait" => "Host wait µs/step",
        "idle: kernel wait" => "Kernel wait µs/step",
        _ => "Other idle µs/step",
    }));
    heads.push("Tokens/step");
    let mut t = Table::new("The mean step: where its GPU time goes (idle, I6)", &heads);
    for r in rows {
        for (mode, x) in [("ar", r.ar), (r.m.candidate_mode.as_str(), r.mtp)] {
            let p = step_sum(x);
            let n = x.steps.count;
            let mut cells: Vec<Cell> = vec![r.m.workload.clone().into(), mode.into(), n.into()];
            cells.extend(six(&p).iter().map(|&v| Cell::opt_f(per_step_us(v, n), 1)));
            let tps = x
                .completion_tokens
                .filter(|_| n > 0)
                .map(|k| round_ratio(i128::from(k), i128::from(n), 3));
            cells.push(Cell::opt_f(tps, 3));
            t.row(cells);
        }
    }
    t.notes.push(
        "Σ over the step rows / steps; busy columns: Σ over devices of the union of each class's activities (C6), so comm that overlaps compute is in both; idle columns: the gaps before the step's activities (I2–I3); tokens/step = completion tokens / steps".into(),
    );
    t
}

fn csv_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "idle_steps",
        &[
            "workload",
            "mode",
            "trace",
            "step",
            "name",
            "host_start_ns",
            "host_end_ns",
            "activities",
            "busy_ns",
            "compute_ns",
            "comm_ns",
            "memory_ns",
            "idle_ns",
            "host_wait_ns",
            "kernel_wait_ns",
            "other_ns",
        ],
    );
    for r in rows {
        for (mode, x) in [("ar", r.ar), (r.m.candidate_mode.as_str(), r.mtp)] {
            for s in &x.steps.rows {
                let w = &s.work;
                t.row(vec![
                    r.m.workload.clone().into(),
                    mode.into(),
                    x.path.clone().into(),
                    s.index.into(),
                    s.name.clone().into(),
                    Cell::Int(s.host_start_ns),
                    s.host_end_ns.map_or(Cell::Null, Cell::Int),
                    w.activities.into(),
                    Cell::wide(w.busy_ns),
                    Cell::wide(w.compute_ns),
                    Cell::wide(w.comm_ns),
                    Cell::wide(w.memory_ns),
                    Cell::wide(w.idle_ns),
                    Cell::wide(w.host_wait_ns),
                    Cell::wide(w.kernel_wait_ns),
                    Cell::wide(w.other_ns),
                ]);
            }
        }
    }
    t
}

fn bar(x: &TraceIdle, label: String, mode: &str) -> StackedBar {
    let n = x.steps.count;
    let p = step_sum(x);
    let values: Option<Vec<f64>> = (n > 0).then(|| {
        six(&p)
            .iter()
            .map(|&v| per_step_us(v, n).unwrap_or(0.0))
            .collect()
    });
    let total: Option<f64> = values.as_ref().map(|v| v.iter().sum());
    StackedBar {
        label,
        mode: Some(mode.into()),
        values,
        top: total.map_or_else(String::new, |t| format!("{t:.0} µs")),
        below: format!("{n} steps"),
    }
}

/// Figure 11.
fn figure(rows: &[Row]) -> StackedBars {
    let groups = rows
        .iter()
        .map(|r| {
            let label = crate::runinfo::Mode::display(&r.m.candidate_mode);
            BarGroup {
                name: r.m.workload.clone(),
                bars: vec![
                    bar(r.ar, "AR".into(), "ar"),
                    bar(r.mtp, label, &r.m.candidate_mode),
                ],
                note: None,
            }
        })
        .collect();
    StackedBars {
        stem: FIGURE.into(),
        title: "The mean decode step: GPU busy by class and idle by cause".into(),
        subtitle: "idle: Σ over the step rows / steps (each step annotation to the next, I6); busy per class (C6), idle gaps by cause (I2–I3)".into(),
        y_desc: "µs per step".into(),
        segments: SEGMENTS
            .iter()
            .enumerate()
            .map(|(i, s)| Segment {
                name: (*s).into(),
                color: series_color(i),
            })
            .collect(),
        groups,
        empty: (
            "no step rows".into(),
            "needs step annotations and GPU work (see `torchtrace idle --per-step`)".into(),
        ),
    }
}

impl InBatch for Idle {
    /// report.md's "Where the GPU waits", idle_steps.csv and figure 11.
    fn batch_section(c: &Campaign<'_>) -> Option<Section> {
        section(c)
    }

    /// The headline figures (`idle_idle_pct`, `idle_host_wait_share_pct`, …).
    fn trace_columns(_: &[&Self::Output]) -> Vec<crate::views::Column<Self::Output>> {
        super::view::columns()
    }
}
