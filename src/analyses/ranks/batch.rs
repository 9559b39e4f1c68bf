//! `ranks` in `batch` (its [`crate::campaign::InBatch::batch_section`]): the
//! campaign's rank files grouped into runs, as `torchtrace ranks` groups
//! them — report.md's "Ranks of each run" (one row per run of two ranks
//! or more, not per rank file), the stragglers, and AR against MTP per
//! workload; `ranks_runs.csv`, `ranks.csv` (one row per rank of a run)
//! and `ranks_stragglers.csv`; and figure 9, the rank × step heatmap of
//! each run. A campaign of single-rank traces gets no section.
//!
//! Every figure is [`super::view::RanksReport`]'s, so `batch` and
//! `torchtrace ranks DIR` cannot disagree.

use super::align::RunReport;
use super::view::{csv_tables, RanksReport};
use super::{RankTrace, Ranks, RanksConfig};
use crate::campaign::{Campaign, InBatch, Section, SectionFile};
use crate::plot::{Picture, PlotError};
use crate::report::{self, Cell, Table};
use std::path::Path;

/// The files the section writes.
pub const RUNS_CSV: &str = "ranks_runs.csv";
pub const RANKS_CSV: &str = "ranks.csv";
pub const STRAGGLERS_CSV: &str = "ranks_stragglers.csv";
/// Stragglers listed per run in report.md (the CSV has them all).
const LISTED: usize = 20;

/// A run with the mode and workload of its traces.
struct Run {
    report: RunReport,
    mode: String,
    workload: String,
}

/// The section: `None` when no run has two ranks or more.
pub fn section(campaign: &Campaign<'_>) -> Option<Section> {
    let traces: Vec<(usize, &RankTrace)> = campaign
        .traces
        .iter()
        .enumerate()
        .filter_map(|(i, t)| Some((i, t.get::<Ranks>()?)))
        .collect();
    let first = traces.first()?.1;
    let cfg = RanksConfig::new(first.options.clone()).ok()?;
    let outputs: Vec<RankTrace> = traces
        .iter()
        .map(|&(i, t)| RankTrace {
            path: campaign.traces[i].path.to_string(),
            ..t.clone()
        })
        .collect();
    let report = RanksReport::new(outputs, &cfg);
    let by_path = |p: &str| campaign.traces.iter().find(|t| t.path == p);
    let runs: Vec<Run> = report
        .runs
        .into_iter()
        .filter(|r| r.ranks.len() > 1)
        .map(|r| {
            let info = r.ranks.first().and_then(|k| by_path(&k.path));
            let get = |f: fn(&crate::runinfo::RunInfo) -> Option<&str>| {
                info.and_then(|t| f(t.run)).unwrap_or("").to_string()
            };
            Run {
                mode: get(crate::runinfo::RunInfo::mode),
                workload: get(crate::runinfo::RunInfo::workload),
                report: r,
            }
        })
        .collect();
    if runs.is_empty() {
        return None;
    }
    Some(Section {
        markdown: markdown(&runs),
        files: files(&runs),
        figures: runs
            .iter()
            .zip(super::figure::stems(
                &runs.iter().map(|r| r.report.clone()).collect::<Vec<_>>(),
            ))
            .map(|(r, stem)| {
                Box::new(RunFigure {
                    stem: format!("fig9_{stem}"),
                    run: r.report.clone(),
                }) as Box<dyn Picture>
            })
            .collect(),
        lead: String::new(),
    })
}

fn ms(ns: i64) -> Cell {
    Cell::Float(ns as f64 / 1e6, 3)
}

/// The rank with the most flagged steps, and how many (none: no flag).
fn worst(r: &RunReport) -> Option<(u32, u64)> {
    r.ranks
        .iter()
        .filter(|k| k.straggler_steps > 0)
        .max_by_key(|k| (k.straggler_steps, std::cmp::Reverse(k.rank)))
        .map(|k| (k.rank, k.straggler_steps))
}

/// The rank that waited most per token, and that figure.
fn most_waiting(r: &RunReport) -> Option<(u32, f64)> {
    r.ranks
        .iter()
        .filter_map(|k| Some((k.rank, k.wait_per_token_ms?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

fn runs_table(runs: &[Run]) -> Table {
    let mut t = Table::new(
        "Ranks of each run: which rank made the others wait",
        &[
            "run",
            "mode",
            "workload",
            "ranks",
            "aligned decode steps",
            "flagged steps",
            "threshold (ms)",
            "straggler (flagged steps)",
            "most waiting rank: wait per token (ms)",
            "wait / decode GPU span (%)",
        ],
    );
    for r in runs {
        let x = &r.report;
        t.row(vec![
            x.run.clone().into(),
            r.mode.clone().into(),
            r.workload.clone().into(),
            Cell::Int(x.ranks.len() as i64),
            Cell::Int(x.aligned_steps as i64),
            Cell::Int(x.stragglers.len() as i64),
            Cell::Float(x.threshold.ms(), 3),
            worst(x).map_or(Cell::text("none"), |(k, n)| {
                Cell::text(format!("rank {k} ({n})"))
            }),
            most_waiting(x).map_or(Cell::Null, |(k, v)| Cell::text(format!("rank {k}: {v:.4}"))),
            Cell::opt_f(x.wait_share.map(|s| s * 100.0), 2),
        ]);
    }
    t
}

fn stragglers_table(r: &Run) -> Table {
    let x = &r.report;
    let mut t = Table::new(
        format!(
            "Stragglers of {} ({} of {} decode steps{})",
            x.run,
            x.stragglers.len(),
            x.aligned_steps,
            match x.stragglers.len() > LISTED {
                true => format!("; the first {LISTED}, the CSV has all"),
                false => String::new(),
            }
        ),
        &["step", "name", "straggler rank", "delay (ms)"],
    );
    for s in x.stragglers.iter().take(LISTED) {
        t.row(vec![
            Cell::Int(s.step as i64),
            s.name.clone().into(),
            Cell::Int(s.rank.into()),
            ms(s.delay_ns),
        ]);
    }
    t
}

/// AR against each other mode of the same workload: one row per pair of
/// runs (the first run of each mode).
fn comparison_table(runs: &[Run]) -> Option<Table> {
    let mut t = Table::new(
        "Ranks, AR vs MTP per workload (per run)",
        &[
            "workload",
            "AR run",
            "candidate run",
            "AR max wait per token (ms)",
            "candidate max wait per token (ms)",
            "AR wait share (%)",
            "candidate wait share (%)",
            "AR flagged steps",
            "candidate flagged steps",
        ],
    );
    for ar in runs
        .iter()
        .filter(|r| r.mode == "ar" && !r.workload.is_empty())
    {
        let other = runs
            .iter()
            .find(|r| r.workload == ar.workload && r.mode != "ar" && !r.mode.is_empty());
        let Some(c) = other else { continue };
        let w = |r: &Run| most_waiting(&r.report).map(|x| x.1);
        let share = |r: &Run| r.report.wait_share.map(|s| s * 100.0);
        t.row(vec![
            ar.workload.clone().into(),
            ar.report.run.clone().into(),
            c.report.run.clone().into(),
            Cell::opt_f(w(ar), 4),
            Cell::opt_f(w(c), 4),
            Cell::opt_f(share(ar), 2),
            Cell::opt_f(share(c), 2),
            Cell::Int(ar.report.stragglers.len() as i64),
            Cell::Int(c.report.stragglers.len() as i64),
        ]);
    }
    (!t.rows.is_empty()).then_some(t)
}

fn markdown(runs: &[Run]) -> String {
    let mut md = report::markdown::section(&runs_table(runs), "##");
    md.push_str(&format!(
        "\nThe rank files are grouped into runs (directory, name prefix, profiler cycle) and aligned step by step, \
         as `torchtrace ranks` does: a rank's wait = Σ (latest start − its start) over the matched collectives of \
         the aligned decode steps; a step is flagged when the others waited longer than the run's threshold for its \
         last arriver. CSV: [{RUNS_CSV}]({RUNS_CSV}), [{RANKS_CSV}]({RANKS_CSV}) (per rank), \
         [{STRAGGLERS_CSV}]({STRAGGLERS_CSV}).\n\n"
    ));
    if let Some(t) = comparison_table(runs) {
        md.push_str(&report::markdown::section(&t, "###"));
        md.push('\n');
    }
    for r in runs.iter().filter(|r| !r.report.stragglers.is_empty()) {
        md.push_str(&report::markdown::section(&stragglers_table(r), "###"));
        md.push('\n');
    }
    md
}

/// The view's CSV tables with each run's mode and workload added.
fn files(runs: &[Run]) -> Vec<SectionFile> {
    let reports: Vec<RunReport> = runs.iter().map(|r| r.report.clone()).collect();
    let tables = csv_tables(&reports, false);
    let label = |run: &str| runs.iter().find(|r| r.report.run == run);
    let with_mode = |t: &Table| {
        let mut heads: Vec<&str> = vec!["mode", "workload"];
        heads.extend(t.headers.iter().map(String::as_str));
        let mut out = Table::new(t.title.clone(), &heads);
        for row in &t.rows {
            let r = row.first().and_then(|c| label(&c.raw()));
            let mut cells = vec![
                r.map_or(Cell::Null, |r| r.mode.clone().into()),
                r.map_or(Cell::Null, |r| r.workload.clone().into()),
            ];
            cells.extend(row.iter().cloned());
            out.row(cells);
        }
        report::csv::to_string(&out)
    };
    let named = |title: &str| tables.iter().find(|t| t.title == title);
    [
        (RUNS_CSV, "runs", "multi-rank runs, one row per run"),
        (
            RANKS_CSV,
            "ranks",
            "each rank of each run: offset, wait, stragglers",
        ),
        (STRAGGLERS_CSV, "stragglers", "flagged steps of each run"),
    ]
    .into_iter()
    .filter_map(|(name, title, what)| {
        Some(SectionFile {
            name: name.into(),
            text: with_mode(named(title)?),
            what: what.into(),
        })
    })
    .collect()
}

/// Figure 9 of one run: `torchtrace ranks --plot`'s figure.
struct RunFigure {
    stem: String,
    run: RunReport,
}

impl Picture for RunFigure {
    fn stem(&self) -> &str {
        &self.stem
    }
    fn render(&self, path: &Path, size: (u32, u32)) -> Result<(), PlotError> {
        super::figure::render_run(&self.run, path, size)
    }
}

impl InBatch for Ranks {
    const BATCH_FILES: &'static [&'static str] = &[RUNS_CSV, RANKS_CSV, STRAGGLERS_CSV];
    /// The campaign's rank files grouped into runs (`section`).
    fn batch_section(c: &Campaign<'_>) -> Option<Section> {
        section(c)
    }
}
