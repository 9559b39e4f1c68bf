//! `iterations` in `batch` (its [`crate::campaign::InBatch::batch_section`]):
//! per workload, AR against MTP over the whole decode loop — report.md's
//! "Decode iterations per workload" (the comparison, the per-phase
//! decomposition, Table 5's per-token changes), `iterations.csv` (one row
//! per match, every per-trace figure of both sides, the exact sums and the
//! comparison), and figure 7: GPU busy per token by phase, stacked up to
//! the wall time per token, AR beside MTP, S_wall over each workload and
//! the repeating graph's cadence under each bar; and, when graphs are
//! replayed, figure 7b: the cadence's distribution per trace.
//!
//! Every figure is [`super::compare`]'s, as `torchtrace iterations AR MTP`
//! prints it: the two cannot disagree.

use super::view::{columns, decomposition_rows};
use super::{compare, Comparison, Iterations, Phase, TraceIterations};
use crate::campaign::{Campaign, InBatch, Match, Section, SectionFile};
use crate::plot::{
    series_color, BarGroup, BoxGroup, BoxPlots, BoxSeries, Picture, Segment, StackedBar,
    StackedBars, SERIES,
};
use crate::report::{self, Cell, Table};

/// The CSV file the section writes.
pub const CSV: &str = "iterations.csv";
/// Figure 7's file stem.
pub const FIGURE: &str = "fig7_iterations_per_token";
/// Figure 7b's (the cadence distribution; drawn when a trace has graphs).
pub const CADENCE_FIGURE: &str = "fig7b_graph_cadence";

/// One match with both sides' figures and their comparison.
struct Row<'c> {
    m: &'c Match,
    ar: &'c TraceIterations,
    mtp: &'c TraceIterations,
    c: Comparison,
}

/// The section: `None` when no match has iterations figures on both sides.
pub fn section(campaign: &Campaign<'_>) -> Option<Section> {
    let rows = rows_of(campaign);
    if rows.is_empty() {
        return None;
    }
    let mut md = report::markdown::section(&summary_table(&rows), "##");
    md.push_str(&format!(
        "\nAn iteration is a selected decode step context up to the next step annotation on its thread, so \
         `sample_tokens` and the MTP drafter (between step annotations) are counted; per token = mean over the \
         closed iterations × n / T. P = tokens per iteration MTP/AR, S_wall and S_busy = wall and GPU busy per \
         token AR/MTP, S_context (correlation) = Eq. 17 with every context's GPU span by launch correlation, as in the GPU work \
         per workload (Table 8's S_context takes a context's GPU annotations when it has them). Every row is `torchtrace iterations AR MTP`'s \
         comparison. CSV: [{CSV}]({CSV}).\n\n"
    ));
    md.push_str(&report::markdown::section(
        &decomposition_table(&rows),
        "###",
    ));
    md.push('\n');
    md.push_str(&report::markdown::section(&change_table(&rows), "###"));
    Some(Section {
        markdown: md,
        files: vec![SectionFile {
            name: CSV.into(),
            text: report::csv::to_string(&csv_table(&rows)),
            what: "decode iterations, AR vs MTP per workload".into(),
        }],
        figures: figures(&rows),
        lead: lead(&rows),
    })
}

/// Every match with iterations figures on both sides.
fn rows_of<'c>(campaign: &'c Campaign<'_>) -> Vec<Row<'c>> {
    campaign
        .matched::<Iterations>()
        .into_iter()
        .map(|(m, ar, mtp)| Row {
            m,
            ar,
            mtp,
            c: compare(ar, mtp),
        })
        .collect()
}

/// `batch`'s first words on stdout: per workload, is the candidate faster
/// end to end (S_wall, wall time per generated token, AR / candidate), and
/// why in one sentence — tokens per iteration against the iteration's
/// cost, then per token the GPU's forward work, the drafter's work and
/// the GPU's idle time, each `torchtrace iterations`' own figure.
fn answer(rows: &[Row]) -> String {
    let us = |ms: Option<f64>| ms.map_or("n/a".to_string(), |v| format!("{:.0}", v * 1e3));
    let x = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.2}×"));
    let tpi = |t: &TraceIterations| {
        t.tokens_per_iteration
            .map_or("n/a".to_string(), |v| format!("{v:.2}"))
    };
    let phase = |t: &TraceIterations, p: Phase| us(t.per_token.phases.get(p).gpu_busy_ms);
    let mut s = String::from(
        "### The answer: wall time per generated token, end to end

",
    );
    for r in rows {
        let mode = crate::runinfo::Mode::display(&r.m.candidate_mode);
        let verdict = match r.c.s_wall {
            Some(v) if v > 1.0 => "faster",
            Some(v) if v < 1.0 => "slower",
            Some(_) => "as fast",
            None => "not comparable",
        };
        s.push_str(&format!(
            "- **{w}**: {mode} is {verdict} end to end, S_wall = {sw} ({mw} µs of wall per token, AR {aw} µs). \
             Why: it makes {mt} tokens per iteration (AR {at}) but an iteration costs {ic} AR's; per token its GPU \
             forward work is {mf} µs (AR {af}), the drafter adds {md} µs, and the GPU idles {mi} µs (AR {ai}).\n",
            w = r.m.workload,
            sw = x(r.c.s_wall),
            mw = us(r.mtp.per_token.wall_ms),
            aw = us(r.ar.per_token.wall_ms),
            mt = tpi(r.mtp),
            at = tpi(r.ar),
            ic = x(r.c.iteration_cost_ratio),
            mf = phase(r.mtp, Phase::Forward),
            af = phase(r.ar, Phase::Forward),
            md = phase(r.mtp, Phase::Draft),
            mi = us(r.mtp.per_token.gpu_idle_ms),
            ai = us(r.ar.per_token.gpu_idle_ms),
        ));
    }
    s.push_str(
        "\nS_wall = AR's wall time per generated token ÷ the candidate's, over the decode iterations \
         (`torchtrace iterations`). S_context below is token progress per step context on the GPU, not speed.\n\n",
    );
    s
}

/// The summary table's title: its heading, and the lead's link target.
const TITLE: &str = "Decode iterations per workload (AR vs MTP, the whole decode loop)";

/// A heading's anchor as GitHub and most renderers make it: lower case,
/// letters, digits, `-` and `_` kept, spaces to `-`, the rest dropped.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// report.md's answer, per workload: S_wall, S_context, tokens per
/// iteration and where MTP's wall time per token goes (GPU busy by phase,
/// GPU idle, the rest), each figure `torchtrace iterations`' own.
fn lead(rows: &[Row]) -> String {
    let us = |ms: Option<f64>| ms.map_or("n/a".to_string(), |v| format!("{:.1}", v * 1e3));
    let x = |v: Option<f64>, d: usize| v.map_or("n/a".to_string(), |v| format!("{v:.d$}×"));
    let mut s = String::new();
    for r in rows {
        let c = &r.c;
        let mode = crate::runinfo::Mode::display(&r.m.candidate_mode);
        let verdict = match c.s_wall {
            Some(v) if v > 1.0 => "faster",
            Some(v) if v < 1.0 => "slower",
            Some(_) => "as fast",
            None => "n/a",
        };
        let tpi = |t: &TraceIterations| {
            t.tokens_per_iteration
                .map_or("n/a".to_string(), |v| format!("{v:.2}"))
        };
        let rest = |t: &TraceIterations| {
            let p = &t.per_token;
            match (p.wall_ms, p.gpu_busy_ms, p.gpu_idle_ms) {
                (Some(w), Some(b), Some(i)) => Some(w - b - i),
                _ => None,
            }
        };
        let phases = |t: &TraceIterations| {
            Phase::ALL
                .iter()
                .map(|&p| {
                    format!(
                        "{} {}",
                        p.as_str(),
                        us(t.per_token.phases.get(p).gpu_busy_ms)
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        s.push_str(&format!(
            "- **{w}**: {mode} takes {mw} µs of wall time per generated token, AR {aw} µs: S_wall = {sw} ({mode} {verdict} end to end). \
             Per step context's GPU span, S_context = {sc}; {mode} makes {mt} tokens per iteration, AR {at} (P = {p}), \
             and its iteration costs {ic} AR's wall. Where {mode}'s wall time per token goes (µs): GPU busy {mb} ({mph}), \
             GPU idle {mi}, none of its GPU work in flight {mr}; AR: busy {ab} ({aph}), idle {ai}, none in flight {ar}.\n",
            w = r.m.workload,
            mw = us(r.mtp.per_token.wall_ms),
            aw = us(r.ar.per_token.wall_ms),
            sw = x(c.s_wall, 2),
            sc = x(c.s_context_correlation, 2),
            mt = tpi(r.mtp),
            at = tpi(r.ar),
            p = x(c.token_progress_ratio, 2),
            ic = x(c.iteration_cost_ratio, 2),
            mb = us(r.mtp.per_token.gpu_busy_ms),
            mph = phases(r.mtp),
            mi = us(r.mtp.per_token.gpu_idle_ms),
            mr = us(rest(r.mtp)),
            ab = us(r.ar.per_token.gpu_busy_ms),
            aph = phases(r.ar),
            ai = us(r.ar.per_token.gpu_idle_ms),
            ar = us(rest(r.ar)),
        ));
    }
    s.push_str(&format!(
        "\nDefinitions: [{TITLE}](#{}) (S_wall, S_context by correlation, P, the phases); GPU idle: \"Where the GPU waits\" below.\n",
        anchor(TITLE)
    ));
    s
}

/// Figure 7, and 7b when some trace replays a repeating graph twice or more.
fn figures(rows: &[Row]) -> Vec<Box<dyn Picture>> {
    let mut v: Vec<Box<dyn Picture>> = vec![Box::new(figure(rows))];
    let graphs = rows
        .iter()
        .any(|r| !r.ar.cadence_ns.is_empty() || !r.mtp.cadence_ns.is_empty());
    if graphs {
        v.push(Box::new(cadence_figure(rows)));
    }
    v
}

/// Figure 7b: every start-to-start interval of the repeating graph.
fn cadence_figure(rows: &[Row]) -> BoxPlots {
    let series = |x: &TraceIterations, mode: &str| {
        let values: Vec<f64> = x.cadence_ns.iter().map(|&g| g as f64 / 1e6).collect();
        BoxSeries {
            label: crate::runinfo::Mode::display(mode),
            mode: Some(mode.into()),
            below: per_token(&values, x.tokens_per_iteration),
            values,
        }
    };
    BoxPlots {
        stem: CADENCE_FIGURE.into(),
        title: "Cadence of the repeating CUDA graph".into(),
        subtitle: "start-to-start interval between consecutive replays of the repeating graph · box: quartiles, whiskers 1.5 IQR, dots: every interval, text: median · +N above: intervals past the axis (gaps between requests), counted, not drawn · under: median ÷ tokens per iteration".into(),
        y_desc: "interval between replays (ms)".into(),
        groups: rows
            .iter()
            .map(|r| BoxGroup {
                name: r.m.workload.clone(),
                series: vec![series(r.ar, "ar"), series(r.mtp, &r.m.candidate_mode)],
            })
            .collect(),
        empty: (
            "no repeating CUDA graph".into(),
            "the traces replay no graph twice in closed iterations".into(),
        ),
    }
}

/// The median interval per generated token (median ÷ tokens per
/// iteration): the cadence on one scale for AR and MTP; empty when either
/// is unknown.
fn per_token(values: &[f64], tokens_per_iteration: Option<f64>) -> String {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match (crate::stats::quantile(&v, 0.5), tokens_per_iteration) {
        (Some(m), Some(t)) if t > 0.0 => format!("{:.3} ms/token", m / t),
        _ => String::new(),
    }
}

fn summary_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        TITLE,
        &[
            "Workload",
            "Mode",
            "Iterations AR",
            "Iterations MTP",
            "Tokens/iter. AR",
            "Tokens/iter. MTP",
            "Wall/token AR (ms)",
            "Wall/token MTP (ms)",
            "GPU busy/token AR (ms)",
            "GPU busy/token MTP (ms)",
            "P",
            "S_wall",
            "S_busy",
            "S_context (correlation)",
            "Graph cadence AR (ms)",
            "Graph cadence MTP (ms)",
        ],
    );
    let cadence = |x: &TraceIterations| {
        Cell::opt_f(
            x.graphs
                .repeating
                .as_ref()
                .and_then(|r| r.cadence_ms_median),
            4,
        )
    };
    for r in rows {
        let both = |f: &dyn Fn(&TraceIterations) -> Cell| [f(r.ar), f(r.mtp)];
        let mut row = vec![
            Cell::text(r.m.workload.clone()),
            Cell::text(r.m.candidate_mode.clone()),
        ];
        row.extend(both(&|x| x.contexts.into()));
        row.extend(both(&|x| Cell::opt_f(x.tokens_per_iteration, 3)));
        row.extend(both(&|x| Cell::opt_f(x.per_token.wall_ms, 4)));
        row.extend(both(&|x| Cell::opt_f(x.per_token.gpu_busy_ms, 4)));
        for v in [
            r.c.token_progress_ratio,
            r.c.s_wall,
            r.c.s_busy,
            r.c.s_context_correlation,
        ] {
            row.push(Cell::opt_f(v, 3));
        }
        row.extend(both(&cadence));
        t.row(row);
    }
    t.drop_column_if_all("Mode", "mtp");
    t
}

fn decomposition_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "Where the token progress goes, per workload (GPU busy per phase; g = P·Δ/C, Σ g = P − S_busy)",
        &[
            "Workload",
            "Phase",
            "AR busy/token (ms)",
            "MTP busy/token (ms)",
            "AR busy/iter. (ms)",
            "MTP busy/iter. (ms)",
            "Δ",
            "g",
        ],
    );
    for r in rows {
        let w = || Cell::text(r.m.workload.clone());
        for cells in decomposition_rows(&r.c) {
            let mut row = vec![w()];
            row.extend(cells);
            t.row(row);
        }
    }
    t.notes.push(
        "B = mean GPU busy per closed iteration; Δ_p = (B_MTP,p − B_AR,p)/B_AR; C = B_MTP/B_AR = 1 + ΣΔ_p; \
         S_busy = P/C, so P − S_busy = Σ_p P·Δ_p/C: the GPU busy time each phase adds per iteration gives back \
         g_p of the token progress ratio P."
            .into(),
    );
    t
}

/// A per-token figure of a trace.
type Get = fn(&TraceIterations) -> Option<f64>;

/// Table 5 of the paper: per token, MTP against AR.
fn change_table(rows: &[Row]) -> Table {
    let figs: [(&str, Get); 4] = [
        ("Launches/token", |x| x.per_token.launches),
        ("Graph replays/token", |x| x.graphs.replays_per_token),
        ("Kernels/token", |x| x.per_token.kernels),
        ("GPU busy/token (ms)", |x| x.per_token.gpu_busy_ms),
    ];
    let mut heads = vec!["Workload".to_string()];
    for (name, _) in &figs {
        heads.push(format!("{name} AR"));
        heads.push(format!("{name} MTP"));
        heads.push("change (%)".into());
    }
    let mut t = Table {
        title: "Per token, MTP against AR (Table 5: launches, graph replays, kernels, GPU busy)"
            .into(),
        headers: heads,
        ..Default::default()
    };
    for r in rows {
        let mut row = vec![Cell::text(r.m.workload.clone())];
        for (_, get) in &figs {
            let (a, m) = (get(r.ar), get(r.mtp));
            let change = match (a, m) {
                (Some(x), Some(y)) if x != 0.0 => Some((y / x - 1.0) * 100.0),
                _ => None,
            };
            row.extend([Cell::opt_f(a, 3), Cell::opt_f(m, 3), Cell::opt_f(change, 1)]);
        }
        t.row(row);
    }
    t
}

/// One row per match: both sides' figures (the subcommand's CSV columns,
/// `ar_`/`mtp_` prefixed), their exact sums, and the comparison.
fn csv_table(rows: &[Row]) -> Table {
    let cols = columns();
    let mut heads: Vec<String> = ["workload", "baseline", "candidate", "candidate_mode"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for side in ["ar", "mtp"] {
        heads.extend(cols.iter().map(|c| format!("{side}_{}", c.key)));
        for k in ["closed_wall_ns", "closed_gpu_busy_ns", "context_span_ns"] {
            heads.push(format!("{side}_{k}"));
        }
    }
    heads.extend(
        [
            "token_progress_ratio",
            "s_wall",
            "s_busy",
            "s_context_correlation",
            "iteration_cost_ratio",
            "busy_cost_ratio",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    for p in Phase::ALL {
        heads.push(format!("{}_delta", p.as_str()));
        heads.push(format!("{}_gives_back", p.as_str()));
    }
    let mut t = Table {
        title: "iterations".into(),
        headers: heads,
        ..Default::default()
    };
    let ns = |v: i128| Cell::text(v.to_string());
    for r in rows {
        let mut row = vec![
            Cell::text(r.m.workload.clone()),
            Cell::text(r.ar.path.clone()),
            Cell::text(r.mtp.path.clone()),
            Cell::text(r.m.candidate_mode.clone()),
        ];
        for x in [r.ar, r.mtp] {
            row.extend(cols.iter().map(|c| c.cell(x)));
            let s = &x.sums;
            row.extend([ns(s.wall_ns), ns(s.busy_ns), ns(s.context_span_ns)]);
        }
        let c = &r.c;
        for v in [
            c.token_progress_ratio,
            c.s_wall,
            c.s_busy,
            c.s_context_correlation,
            c.iteration_cost_ratio,
            c.busy_cost_ratio,
        ] {
            row.push(Cell::opt_f(v, 6));
        }
        for d in &c.decomposition {
            row.extend([Cell::opt_f(d.delta, 6), Cell::opt_f(d.gives_back, 6)]);
        }
        t.row(row);
    }
    t
}

/// A side's bar: GPU busy per token of each phase, then the rest of the
/// wall per token (the GPU not busy; 0 when the phases overlap more).
fn bar(x: &TraceIterations, label: &str, mode: &str) -> StackedBar {
    let phases: Option<Vec<f64>> = Phase::ALL
        .iter()
        .map(|&p| x.per_token.phases.get(p).gpu_busy_ms)
        .collect();
    let values = phases.zip(x.per_token.wall_ms).map(|(mut v, wall)| {
        let busy: f64 = v.iter().sum();
        v.push((wall - busy).max(0.0));
        v
    });
    let cadence = x
        .graphs
        .repeating
        .as_ref()
        .and_then(|r| r.cadence_ms_median);
    StackedBar {
        label: label.into(),
        mode: Some(mode.into()),
        values,
        top: x
            .per_token
            .wall_ms
            .map_or_else(String::new, |w| format!("{w:.3} ms")),
        below: cadence.map_or_else(|| "no graph".into(), |c| format!("cadence {c:.3} ms")),
    }
}

/// Figure 7.
fn figure(rows: &[Row]) -> StackedBars {
    let mut segments: Vec<Segment> = Phase::ALL
        .iter()
        .enumerate()
        .map(|(i, p)| Segment {
            name: format!("{} (GPU busy)", p.as_str()),
            color: series_color(i),
        })
        .collect();
    segments.push(Segment {
        name: "GPU not busy".into(),
        color: SERIES[SERIES.len() - 1],
    });
    let groups = rows
        .iter()
        .map(|r| BarGroup {
            name: r.m.workload.clone(),
            bars: vec![
                bar(r.ar, "AR", "ar"),
                bar(
                    r.mtp,
                    &crate::runinfo::Mode::display(&r.m.candidate_mode),
                    &r.m.candidate_mode,
                ),
            ],
            note: r.c.s_wall.map(|s| format!("S_wall = {s:.2}×")),
        })
        .collect();
    StackedBars {
        stem: FIGURE.into(),
        title: "Wall time per generated token, by phase of the decode loop".into(),
        subtitle: "iterations: a decode step up to the next step annotation · colours: GPU busy per token in each phase · grey: the rest of the wall time · under: median cadence of the repeating CUDA graph".into(),
        y_desc: "time per generated token (ms)".into(),
        segments,
        groups,
        empty: (
            "no decode iterations per token".into(),
            "needs completion-token counts and closed iterations (see `torchtrace iterations`)".into(),
        ),
    }
}

impl InBatch for Iterations {
    const BATCH_FILES: &'static [&'static str] = &[CSV];
    fn batch_section(c: &Campaign<'_>) -> Option<Section> {
        section(c)
    }

    /// S_wall per workload and why, in a sentence each: the answer first.
    fn batch_answer(c: &Campaign<'_>) -> Option<String> {
        let rows = rows_of(c);
        (!rows.is_empty()).then(|| answer(&rows))
    }

    /// Every per-trace figure (`iterations_wall_per_token_ms`, …).
    fn trace_columns(_: &[&Self::Output]) -> Vec<crate::views::Column<Self::Output>> {
        columns()
    }
}
