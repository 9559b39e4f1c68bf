//! `critical` in a `batch` campaign: report.md's "What set each
//! iteration's length" section (per workload, each part per generated
//! token over the decode iterations, AR against the candidate; per trace
//! each part's share of the closed iterations), `critical.csv` (one row
//! per trace and part) and figure 14 (each workload's AR and candidate
//! bars, the parts per token stacked).

use super::view::compare;
use super::{Critical, TraceCritical, PART_NAMES};
use crate::campaign::{Campaign, Compared, InBatch, Section, SectionFile};
use crate::plot::{series_color, BarGroup, Segment, StackedBar, StackedBars};
use crate::report::{self, Cell, Table};
use crate::stats::ratios::{mean6, pct};

/// The section's CSV.
pub const CSV: &str = "critical.csv";
/// Figure 14's file stem.
pub const FIGURE: &str = "fig14_critical_per_token";

/// µs from ns (rounded by the table's decimals only).
fn us(ns: Option<f64>) -> Option<f64> {
    ns.map(|v| v / 1000.0)
}

/// Per workload and part: AR and the candidate per token, the difference,
/// and each side's share of its decode iterations' windows.
fn workloads_table(c: &Campaign<'_>) -> Table {
    let mut t = Table::new(
        "Critical path per workload: each part per generated token, decode iterations (critical)",
        &[
            "Workload",
            "Mode",
            "Part",
            "AR (µs/token)",
            "Candidate (µs/token)",
            "Candidate − AR (µs/token)",
            "AR (% of iteration)",
            "Candidate (% of iteration)",
        ],
    );
    for (m, a, b) in c.matched::<Critical>() {
        let cmp = compare(a, b);
        let (sa, sb) = (a.decode.values(), b.decode.values());
        for (k, p) in cmp.parts.iter().enumerate() {
            t.row(vec![
                Cell::text(m.workload.clone()),
                Cell::text(m.candidate_mode.clone()),
                Cell::text(p.part.clone()),
                Cell::opt_f(us(p.baseline_per_token_ns), 1),
                Cell::opt_f(us(p.candidate_per_token_ns), 1),
                Cell::opt_f(us(p.delta_per_token_ns), 1),
                Cell::opt_f(pct(sa[k], a.decode.window_ns), 1),
                Cell::opt_f(pct(sb[k], b.decode.window_ns), 1),
            ]);
        }
    }
    t.drop_column_if_all("Mode", "mtp");
    t
}

/// The traces with closed iterations, each with its mode.
fn walked<'c>(c: &'c Campaign<'_>) -> Vec<(&'c str, Option<String>, &'c TraceCritical)> {
    c.traces
        .iter()
        .filter_map(|t| {
            let k = t.get::<Critical>()?;
            (k.closed.iterations > 0).then(|| {
                let mode = t.run.mode.as_ref().map(|m| m.value.clone());
                (t.path, mode, k)
            })
        })
        .collect()
}

/// One row per (trace, part), every figure.
fn csv_table(traces: &[(&str, Option<String>, &TraceCritical)]) -> Table {
    let mut t = Table::new(
        "critical",
        &[
            "trace",
            "mode",
            "part",
            "closed_iterations",
            "closed_ns",
            "closed_pct_of_window",
            "decode_iterations_closed",
            "decode_ns",
            "per_decode_iteration_ns",
            "per_token_ns",
        ],
    );
    for (path, mode, k) in traces {
        let (closed, decode, tok) = (k.closed.values(), k.decode.values(), k.per_token.values());
        for (i, part) in PART_NAMES.iter().enumerate() {
            t.row(vec![
                Cell::text(*path),
                mode.clone().map_or(Cell::Null, Cell::text),
                Cell::text(*part),
                k.closed.iterations.into(),
                Cell::wide(closed[i]),
                Cell::opt_f(pct(closed[i], k.closed.window_ns), 4),
                k.decode.iterations.into(),
                Cell::wide(decode[i]),
                Cell::opt_f(mean6(decode[i], i128::from(k.decode.iterations)), 6),
                Cell::opt_f(tok[i], 6),
            ]);
        }
    }
    t
}

/// One bar: the four parts per token in µs.
fn bar(k: &TraceCritical, label: String, mode: &str) -> StackedBar {
    let t = k.per_token.values();
    let values = t[1..]
        .iter()
        .map(|v| v.map(|v| v / 1000.0))
        .collect::<Option<Vec<f64>>>();
    StackedBar {
        label,
        mode: Some(mode.into()),
        values,
        top: t[0].map_or_else(String::new, |w| format!("{:.0} µs", w / 1000.0)),
        below: String::new(),
    }
}

/// Figure 14.
fn figure(c: &Campaign<'_>) -> StackedBars {
    let groups = c
        .matched::<Critical>()
        .into_iter()
        .map(|(m, a, b)| BarGroup {
            name: m.workload.clone(),
            bars: vec![
                bar(a, "AR".into(), "ar"),
                bar(
                    b,
                    crate::runinfo::Mode::display(&m.candidate_mode),
                    &m.candidate_mode,
                ),
            ],
            note: None,
        })
        .collect();
    StackedBars {
        stem: FIGURE.into(),
        title: "What set each decode iteration's length, per generated token".into(),
        subtitle: "as `torchtrace critical`: a backward walk through each iteration; the parts add up to its wall time (VIEWS.md P1–P6)".into(),
        y_desc: "µs per generated token".into(),
        segments: PART_NAMES[1..]
            .iter()
            .enumerate()
            .map(|(i, s)| Segment {
                name: (*s).into(),
                color: series_color(i),
            })
            .collect(),
        groups,
        empty: (
            "no decode iterations".into(),
            "needs vLLM decode step annotations and completion tokens (see `torchtrace critical`)".into(),
        ),
    }
}

/// The section: `None` when no trace has a closed iteration.
fn section(c: &Campaign<'_>) -> Option<Section> {
    let traces = walked(c);
    if traces.is_empty() {
        return None;
    }
    let mut md = String::from("## What set each iteration's length (critical path)\n\n");
    let w = workloads_table(c);
    if !w.rows.is_empty() {
        md.push_str(&report::markdown::section(&w, "###"));
    }
    md.push_str(&format!(
        "\nEach iteration (a step annotation up to the next) walked back from its end: every nanosecond goes to the \
         part that set it — host work, launch (a launch call's start to its kernel's start, when the kernel did not \
         queue behind GPU work), gpu (kernels on the path and the gaps they queued in), sync (a blocking sync \
         returning after the GPU finished). The parts add up to the iteration's wall time; per token = Σ over closed \
         decode iterations ÷ their number × decode iterations ÷ completion tokens (docs/VIEWS.md P1–P6). Every \
         trace and part: [{CSV}]({CSV}); figure 14: [{FIGURE}.png](figures/{FIGURE}.png).\n\n"
    ));
    Some(Section {
        markdown: md,
        files: vec![SectionFile {
            name: CSV.into(),
            text: report::csv::to_string(&csv_table(&traces)),
            what: "every trace's critical-path parts".into(),
        }],
        figures: vec![Box::new(figure(c))],
        lead: lead(c),
    })
}

/// The answer's line: the range of the host part's share over the
/// matched traces' decode iterations, and per workload the host part's
/// candidate − AR per token.
fn lead(c: &Campaign<'_>) -> String {
    let matched = c.matched::<Critical>();
    let shares: Vec<f64> = matched
        .iter()
        .flat_map(|(_, a, b)| [a, b])
        .filter_map(|k| pct(k.decode.host_ns, k.decode.window_ns))
        .collect();
    let (Some(lo), Some(hi)) = (
        shares.iter().copied().reduce(f64::min),
        shares.iter().copied().reduce(f64::max),
    ) else {
        return String::new();
    };
    let deltas: Vec<String> = matched
        .iter()
        .filter_map(|(m, a, b)| {
            let d = compare(a, b).parts.get(1)?.delta_per_token_ns?;
            Some(format!("{} {:+.1}", m.workload, d / 1000.0))
        })
        .collect();
    let range = if format!("{lo:.0}") == format!("{hi:.0}") {
        format!("{lo:.0} %")
    } else {
        format!("{lo:.0}–{hi:.0} %")
    };
    let mut line = format!(
        "- **What set the iterations' length** (critical path): host work, {range} of every decode iteration, AR and \
         the candidate alike"
    );
    if !deltas.is_empty() {
        line.push_str(&format!(
            "; candidate − AR host time per token (µs): {}",
            deltas.join(", ")
        ));
    }
    line.push_str(" (\"What set each iteration's length\" below).\n");
    line
}

impl InBatch for Critical {
    const BATCH_FILES: &'static [&'static str] = &[CSV];

    fn batch_section(c: &Campaign<'_>) -> Option<Section> {
        section(c)
    }

    /// The parts side by side under `critical`.
    fn batch_compare(b: Option<&TraceCritical>, c: Option<&TraceCritical>) -> Option<Compared> {
        Some(Compared::nested(b.zip(c).map(|(b, c)| compare(b, c))))
    }
}
