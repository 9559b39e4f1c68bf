//! `diff` in `batch` (its [`crate::campaign::InBatch::batch_section`]): each
//! worker trace's per-name table travels in records like any analysis's
//! figures; here each workload's AR table (baseline) is compared with its
//! MTP table (candidate), match by match, exactly as `torchtrace diff AR
//! MTP` compares them. Report.md's "What changed (per token)" gives the
//! summary line's exact split (call counts of common kernels, their
//! durations, added − removed), the split by kernel family and the largest
//! per-kernel changes; `diff.csv` (summary, exact units),
//! `diff_families.csv` and `diff_kernels.csv` (every kernel) hold them
//! whole; figure 8 stacks the GPU time per token by family, AR beside MTP.

use super::compare::{Comparison, KernelDiff};
use super::view::{families_csv, kernels_csv};
use super::{compare, Diff, TraceDiff};
use crate::campaign::{Campaign, InBatch, Match, Section, SectionFile};
use crate::plot::{series_color, BarGroup, Segment, StackedBar, StackedBars};
use crate::report::{self, Cell, Table};
use crate::text::ellipsize_middle as ellipsize;

/// The summary CSV (one row per match).
pub const CSV: &str = "diff.csv";
/// Per match and family.
pub const FAMILIES_CSV: &str = "diff_families.csv";
/// Per match and kernel name (every name).
pub const KERNELS_CSV: &str = "diff_kernels.csv";
/// Figure 8's file stem.
pub const FIGURE: &str = "fig8_gpu_time_by_family";
/// Kernels per workload in the report's table of largest changes.
pub const TOP: usize = 5;

/// One match and its comparison.
struct Row<'c> {
    m: &'c Match,
    c: Comparison,
}

/// The section: `None` when no match has per-name tables on both sides.
pub fn section(campaign: &Campaign<'_>) -> Option<Section> {
    let rows: Vec<Row> = campaign
        .matched::<Diff>()
        .into_iter()
        .map(|(m, b, c)| Row {
            m,
            c: compare(b, c),
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut md = report::markdown::section(&summary_table(&rows), "##");
    md.push_str(&format!(
        "\nGPU time = Σ durations of the kernels, memcpys and memsets launched from the decode step contexts \
         (launch correlation, CUDA-graph replays included), per completion token; every row is \
         `torchtrace diff AR MTP`'s summary. Δ = (a) + (b) + (c) exactly (integers of 1/(T_AR·T_MTP) ns in \
         [{CSV}]({CSV})). Per family: [{FAMILIES_CSV}]({FAMILIES_CSV}); every kernel: \
         [{KERNELS_CSV}]({KERNELS_CSV}).\n\n"
    ));
    md.push_str(&report::markdown::section(&families_table(&rows), "###"));
    md.push('\n');
    md.push_str(&report::markdown::section(&top_table(&rows), "###"));
    let file = |name: &str, t: &Table, what: &str| SectionFile {
        name: name.into(),
        text: report::csv::to_string(t),
        what: what.into(),
    };
    Some(Section {
        markdown: md,
        files: vec![
            file(CSV, &summary_csv(&rows), "what changed per token, AR → MTP"),
            file(FAMILIES_CSV, &families_long(&rows), "by kernel family"),
            file(KERNELS_CSV, &long_csv(&rows, kernels_csv), "by kernel"),
        ],
        figures: vec![Box::new(figure(&rows))],
        lead: String::new(),
    })
}

/// What the per-token figures divide by, as the tables name it.
fn per(c: &Comparison) -> &'static str {
    match c.normalisation.as_str() {
        "token" => "token",
        "context" => "context",
        _ => "trace",
    }
}

fn dominant(d: Option<&super::compare::Dominant>) -> Cell {
    d.map_or(Cell::Null, |d| {
        Cell::text(format!(
            "{} [{}], {:.2} µs",
            ellipsize(&d.name, 40),
            d.family,
            d.median_us
        ))
    })
}

fn summary_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "What changed (per token): AR → MTP per workload",
        &[
            "Workload",
            "Mode",
            "Per",
            "GPU time AR (ms)",
            "GPU time MTP (ms)",
            "Δ (ms)",
            "(a) call counts (ms)",
            "(b) durations (ms)",
            "(c) added − removed (ms)",
            "Common / added / removed",
            "Dominant AR (median)",
            "Dominant MTP (median)",
        ],
    );
    for r in rows {
        let (c, s) = (&r.c, &r.c.summary);
        t.row(vec![
            Cell::text(r.m.workload.clone()),
            Cell::text(r.m.candidate_mode.clone()),
            Cell::text(per(c)),
            Cell::opt_f(c.baseline.gpu_time_per_token_ms, 4),
            Cell::opt_f(c.candidate.gpu_time_per_token_ms, 4),
            Cell::opt_f(s.total_delta_ms_per_token, 4),
            Cell::opt_f(s.call_count_change_ms_per_token, 4),
            Cell::opt_f(s.duration_change_ms_per_token, 4),
            Cell::opt_f(s.added_minus_removed_ms_per_token, 4),
            Cell::text(format!("{} / {} / {}", s.common, s.added, s.removed)),
            dominant(c.dominant.baseline.as_ref()),
            dominant(c.dominant.candidate.as_ref()),
        ]);
    }
    t.notes.push(
        "(a) Σ over kernels both run of (calls/token MTP − calls/token AR) × AR's mean duration; (b) Σ of their \
         duration changes at MTP's calls per token; (c) GPU time per token of the kernels only MTP runs minus \
         that of the kernels only AR runs."
            .into(),
    );
    for r in rows.iter().filter(|r| r.c.normalisation != "token") {
        t.notes.push(format!(
            "{}: completion tokens unknown: per {} instead",
            r.m.workload,
            per(&r.c)
        ));
    }
    t.drop_column_if_all("Mode", "mtp");
    t
}

fn families_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "What changed by kernel family (ms per token; the families add up to the totals)",
        &[
            "Workload",
            "Family",
            "Kernels",
            "AR (ms)",
            "MTP (ms)",
            "Δ (ms)",
            "Share AR (%)",
            "Share MTP (%)",
        ],
    );
    for r in rows {
        for f in &r.c.families {
            t.row(vec![
                Cell::text(r.m.workload.clone()),
                Cell::text(f.family.clone()),
                f.kernels.into(),
                Cell::opt_f(f.baseline.time_per_token_ms, 4),
                Cell::opt_f(f.candidate.time_per_token_ms, 4),
                Cell::opt_f(f.delta_time_per_token_ms, 4),
                Cell::opt_f(f.baseline.share_pct, 1),
                Cell::opt_f(f.candidate.share_pct, 1),
            ]);
        }
    }
    t
}

fn top_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        format!("Largest per-kernel changes (top {TOP} per workload by |Δ time per token|)"),
        &[
            "Workload",
            "Kernel",
            "Family",
            "Status",
            "Calls/token AR",
            "Calls/token MTP",
            "µs/token AR",
            "µs/token MTP",
            "Δ µs/token",
        ],
    );
    let us = |v: Option<f64>| Cell::opt_f(v.map(|x| x * 1e3), 3);
    for r in rows {
        for k in r.c.kernels.iter().take(TOP) {
            let KernelDiff {
                baseline: b,
                candidate: c,
                ..
            } = k;
            t.row(vec![
                Cell::text(r.m.workload.clone()),
                Cell::text(ellipsize(&k.name, 60)),
                Cell::text(k.family.clone()),
                Cell::text(k.status.clone()),
                Cell::opt_f(b.calls_per_token, 2),
                Cell::opt_f(c.calls_per_token, 2),
                us(b.time_per_token_ms),
                us(c.time_per_token_ms),
                us(k.delta_time_per_token_ms),
            ]);
        }
    }
    t
}

/// One row per match: both sides' totals and the summary's exact parts.
fn summary_csv(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "diff",
        &[
            "workload",
            "baseline",
            "candidate",
            "candidate_mode",
            "scope",
            "normalisation",
            "baseline_normaliser",
            "candidate_normaliser",
            "baseline_gpu_time_ns",
            "candidate_gpu_time_ns",
            "baseline_gpu_time_per_token_ms",
            "candidate_gpu_time_per_token_ms",
            "total_delta_ms_per_token",
            "call_count_change_ms_per_token",
            "duration_change_ms_per_token",
            "added_minus_removed_ms_per_token",
            "added_ms_per_token",
            "removed_ms_per_token",
            "common",
            "added",
            "removed",
            "denominator",
            "total_units",
            "call_count_units",
            "duration_units",
            "added_units",
            "removed_units",
            "baseline_graph_replays_per_token",
            "candidate_graph_replays_per_token",
            "baseline_dominant",
            "candidate_dominant",
        ],
    );
    let ns = |v: i128| Cell::text(v.to_string());
    let name =
        |d: Option<&super::compare::Dominant>| d.map_or(Cell::Null, |d| Cell::text(d.name.clone()));
    for r in rows {
        let (c, s) = (&r.c, &r.c.summary);
        t.row(vec![
            Cell::text(r.m.workload.clone()),
            Cell::text(c.baseline.path.clone()),
            Cell::text(c.candidate.path.clone()),
            Cell::text(r.m.candidate_mode.clone()),
            Cell::text(c.scope.clone()),
            Cell::text(c.normalisation.clone()),
            c.baseline.normaliser.into(),
            c.candidate.normaliser.into(),
            ns(c.baseline.gpu_time_ns),
            ns(c.candidate.gpu_time_ns),
            Cell::opt_f(c.baseline.gpu_time_per_token_ms, 9),
            Cell::opt_f(c.candidate.gpu_time_per_token_ms, 9),
            Cell::opt_f(s.total_delta_ms_per_token, 9),
            Cell::opt_f(s.call_count_change_ms_per_token, 9),
            Cell::opt_f(s.duration_change_ms_per_token, 9),
            Cell::opt_f(s.added_minus_removed_ms_per_token, 9),
            Cell::opt_f(s.added_ms_per_token, 9),
            Cell::opt_f(s.removed_ms_per_token, 9),
            s.common.into(),
            s.added.into(),
            s.removed.into(),
            ns(s.denominator),
            ns(s.total_units),
            ns(s.call_count_units),
            ns(s.duration_units),
            ns(s.added_units),
            ns(s.removed_units),
            Cell::opt_f(c.graphs.baseline.replays_per_token, 6),
            Cell::opt_f(c.graphs.candidate.replays_per_token, 6),
            name(c.dominant.baseline.as_ref()),
            name(c.dominant.candidate.as_ref()),
        ]);
    }
    t
}

/// `diff -f csv`'s table `table` of every match, one after the other,
/// each row prefixed with its workload, baseline and candidate.
fn long_csv(rows: &[Row], table: fn(&Comparison) -> Table) -> Table {
    let mut out = Table::default();
    for r in rows {
        let t = table(&r.c);
        if out.headers.is_empty() {
            out.title = t.title.clone();
            out.headers = ["workload", "baseline", "candidate"]
                .iter()
                .map(|s| s.to_string())
                .chain(t.headers.iter().cloned())
                .collect();
        }
        for cells in t.rows {
            let mut row = vec![
                Cell::text(r.m.workload.clone()),
                Cell::text(r.c.baseline.path.clone()),
                Cell::text(r.c.candidate.path.clone()),
            ];
            row.extend(cells);
            out.row(row);
        }
    }
    out
}

/// Every match's families, with each Δ exactly: `delta_units` of
/// 1/`denominator` ns (Δ = T_c·N_b − T_b·N_c over N_b·N_c), so that the
/// families' units add up to the summary's `total_units`.
fn families_long(rows: &[Row]) -> Table {
    let mut t = long_csv(rows, families_csv);
    t.headers
        .extend(["delta_units".into(), "denominator".into()]);
    let exact = rows.iter().flat_map(|r| {
        let (nb, nc) = (
            i128::from(r.c.baseline.normaliser),
            i128::from(r.c.candidate.normaliser),
        );
        r.c.families
            .iter()
            .map(move |f| (f.candidate.time_ns * nb - f.baseline.time_ns * nc, nb * nc))
    });
    for (row, (units, den)) in t.rows.iter_mut().zip(exact) {
        row.push(Cell::text(units.to_string()));
        row.push(Cell::text(den.to_string()));
    }
    t
}

/// The families in the order of the first comparison's family table
/// (user families first), keeping those that some match has.
fn family_order(rows: &[Row]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let table = rows.iter().flat_map(|r| &r.c.family_table);
    for f in table.map(|f| &f.family) {
        let present = rows
            .iter()
            .any(|r| r.c.families.iter().any(|x| &x.family == f));
        if present && !out.contains(f) {
            out.push(f.clone());
        }
    }
    out
}

/// A side's bar: its GPU time per token of each family (per token only:
/// a side normalised otherwise is drawn as n/a).
fn bar(r: &Row, baseline: bool, order: &[String]) -> StackedBar {
    let c = &r.c;
    let side = if baseline { &c.baseline } else { &c.candidate };
    let values = (c.normalisation == "token").then(|| {
        order
            .iter()
            .map(|f| {
                let fam = c.families.iter().find(|x| &x.family == f);
                let fig = fam.map(|x| if baseline { &x.baseline } else { &x.candidate });
                fig.and_then(|x| x.time_per_token_ms).unwrap_or(0.0)
            })
            .collect()
    });
    let mode = if baseline {
        "ar".to_string()
    } else {
        r.m.candidate_mode.clone()
    };
    StackedBar {
        label: crate::runinfo::Mode::display(&mode),
        mode: Some(mode),
        values,
        top: side
            .gpu_time_per_token_ms
            .map_or_else(String::new, |v| format!("{v:.3} ms")),
        below: side
            .activities_per_token
            .map_or_else(String::new, |k| format!("{k:.1} activities/token")),
    }
}

/// Figure 8.
fn figure(rows: &[Row]) -> StackedBars {
    let order = family_order(rows);
    let segments = order
        .iter()
        .enumerate()
        .map(|(i, f)| Segment {
            name: f.clone(),
            color: series_color(i),
        })
        .collect();
    let groups = rows
        .iter()
        .map(|r| BarGroup {
            name: r.m.workload.clone(),
            bars: vec![bar(r, true, &order), bar(r, false, &order)],
            note: (r.c.normalisation == "token")
                .then_some(r.c.summary.total_delta_ms_per_token)
                .flatten()
                .map(|d| format!("Δ = {d:+.3} ms/token")),
        })
        .collect();
    StackedBars {
        stem: FIGURE.into(),
        title: "GPU time per generated token by kernel family".into(),
        subtitle: "decode step contexts, by launch correlation · Σ kernel, memcpy and memset durations per completion token · first matching family pattern".into(),
        y_desc: "GPU time per generated token (ms)".into(),
        segments,
        groups,
        empty: (
            "no GPU time per token".into(),
            "needs completion-token counts and GPU work launched from the step contexts".into(),
        ),
    }
}

impl InBatch for Diff {
    const BATCH_FILES: &'static [&'static str] = &[CSV, FAMILIES_CSV, KERNELS_CSV];
    /// Each trace's per-name table travels in records; the section
    /// compares each workload's AR and MTP tables (`section`).
    fn batch_section(c: &Campaign<'_>) -> Option<Section> {
        section(c)
    }

    /// A trace's totals in scope (`diff_activities`, …); the per-name
    /// table is in `results.json` and `diff_kernels.csv`.
    fn trace_columns(_: &[&Self::Output]) -> Vec<crate::views::Column<TraceDiff>> {
        use crate::views::Column;
        vec![
            Column::new("scope", "scope", |t: &TraceDiff| {
                Cell::text(t.scope.clone())
            }),
            Column::new("activities", "activities", |t: &TraceDiff| {
                t.activities.into()
            }),
            Column::new("kernels", "kernels", |t: &TraceDiff| t.kernels.into()),
            Column::new("gpu_time_ns", "GPU time (ns)", |t: &TraceDiff| {
                Cell::text(t.total_ns.to_string())
            }),
            Column::new("names", "distinct names", |t: &TraceDiff| {
                t.names.len().into()
            }),
            Column::new("graph_replays", "graph replays", |t: &TraceDiff| {
                t.graph_replays.into()
            }),
            Column::new("signatures", "replay signatures", |t: &TraceDiff| {
                t.signatures.len().into()
            }),
        ]
    }
}
