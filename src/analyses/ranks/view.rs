//! The view of `ranks`: the runs, each with its ranks table (clock offset,
//! wait, share, straggler steps), its stragglers, its boundary (prefill)
//! steps and, with `--per-step`, every aligned step; [`RanksReport`] is
//! the document it prints.

use super::align::{self, RunReport, StepRow};
use super::runs::{self, Member};
use super::{RankTrace, Ranks, RanksConfig, RanksSpec};
use crate::command::{self, ApiError, Command, Document, Said, TraceOutcome};
use crate::contexts::{Contexts, Selector};
use crate::report::{self, Cell, Format, Table};
use serde::Serialize;
use std::io::{self, Write};

/// The document `ranks` prints (`-f json`): one entry per run.
#[derive(Debug, Serialize)]
pub struct RanksReport {
    pub runs: Vec<RunReport>,
    /// The traces, for the exit status (not in the document).
    #[serde(skip)]
    traces: Vec<(String, bool, Option<String>)>,
}

impl RanksReport {
    /// Groups the traces into runs and measures each.
    pub fn new(traces: Vec<RankTrace>, cfg: &RanksConfig) -> Self {
        let members: Vec<Member<'_>> = traces
            .iter()
            .map(|t| Member {
                path: &t.path,
                info_rank: t.info_rank,
                info_world_size: t.info_world_size,
            })
            .collect();
        let groups = runs::group(&members, cfg.rank_regex.as_ref());
        let runs = groups
            .iter()
            .map(|g| {
                let of: Vec<&RankTrace> = g.members.iter().map(|&(_, i)| &traces[i]).collect();
                align::run_report(g, &of, cfg)
            })
            .collect();
        RanksReport {
            runs,
            traces: traces
                .iter()
                .map(|t| (t.path.clone(), t.complete, t.error.clone()))
                .collect(),
        }
    }

    /// The JSON document; `steps`: with every aligned decode step.
    pub fn json(&self, steps: bool) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if !steps {
            if let Some(runs) = v.get_mut("runs").and_then(|r| r.as_array_mut()) {
                for r in runs {
                    if let Some(m) = r.as_object_mut() {
                        m.remove("steps");
                    }
                }
            }
        }
        v
    }

    /// Each format builds only what it prints (issue 59: the document's
    /// JSON value, with every aligned step, was built for the tables too:
    /// about 2 KB per decode step).
    pub fn write<W: Write>(&self, out: &mut W, format: Format, steps: bool) -> io::Result<()> {
        match format {
            Format::Json => report::render(out, format, &self.json(steps), &[], &[]),
            Format::Csv => report::render(out, format, &(), &[], &csv_tables(&self.runs, steps)),
            Format::Table | Format::Markdown => {
                let mut tables = Vec::new();
                for r in &self.runs {
                    tables.extend(human_tables(r, steps));
                }
                report::render(out, format, &(), &tables, &[])
            }
        }
    }
}

impl Document for RanksReport {
    fn write_to(&self, out: &mut dyn Write, format: Format, steps: bool) -> io::Result<()> {
        let mut out = out;
        self.write(&mut out, format, steps)
    }
    fn json_value(&self, steps: bool) -> Result<serde_json::Value, ApiError> {
        Ok(self.json(steps))
    }
    fn outcomes(&self) -> Vec<&dyn TraceOutcome> {
        command::outcomes(&self.traces)
    }
}

/// `torchtrace ranks`: any number of rank traces, grouped into runs.
impl Command for Ranks {
    type Options = RanksSpec;
    type Report = RanksReport;
    const TAKES_DIRECTORIES: bool = true;
    const KEEPS_UNREADABLE: bool = true;

    fn configure(options: &RanksSpec, _: &Selector) -> Result<RanksConfig, ApiError> {
        RanksConfig::new(options.clone()).map_err(ApiError::Arguments)
    }

    fn said(t: &RankTrace, contexts: &Contexts) -> Said {
        let mut problems = Vec::new();
        if t.error.is_none() || !t.decode.is_empty() {
            problems.extend(command::context_problem(contexts));
        }
        let mut notes: Vec<String> = command::context_note(contexts).into_iter().collect();
        notes.extend(command::path_notes(&t.path, &t.notes));
        if !t.decode.is_empty() && t.decode.iter().all(|s| s.collectives.is_empty()) {
            notes.push(format!(
                "{}: no collective (NCCL, RCCL, custom all-reduce: see --collective) in its {} decode steps: waits cannot be measured for this rank",
                t.path,
                t.decode.len()
            ));
        }
        if t.collectives_outside_steps > 0 {
            notes.push(format!(
                "{}: {} collective(s) ran outside every step annotation (an MTP drafter's, say): not in the step figures",
                t.path, t.collectives_outside_steps
            ));
        }
        Said { problems, notes }
    }

    fn report(outputs: Vec<RankTrace>, config: &RanksConfig) -> RanksReport {
        RanksReport::new(outputs, config)
    }

    fn report_said(report: &RanksReport) -> Said {
        Said {
            problems: Vec::new(),
            notes: report.runs.iter().flat_map(|r| r.notes.clone()).collect(),
        }
    }
}

fn ms(ns: i64) -> Cell {
    Cell::Float(ns as f64 / 1e6, 3)
}

fn us(ns: i64) -> Cell {
    Cell::Float(ns as f64 / 1e3, 1)
}

fn short(path: &str) -> String {
    crate::views::short(path)
}

fn human_tables(r: &RunReport, steps: bool) -> Vec<Table> {
    let mut out = vec![ranks_table(r), stragglers_table(r)];
    if !r.boundary.is_empty() {
        out.push(steps_table(
            r,
            &r.boundary,
            false,
            "Boundary steps (prefill, mixed), aligned apart: start-up skew lands here",
        ));
    }
    if steps {
        out.push(steps_table(r, &r.steps, true, "Every aligned decode step"));
    }
    out
}

fn ranks_table(r: &RunReport) -> Table {
    let mut t = Table::new(
        format!(
            "Run {}: {} rank(s){}, {} decode steps aligned ({})",
            r.run,
            r.ranks.len(),
            r.world_size
                .map_or(String::new(), |w| format!(" of world size {w}")),
            r.aligned_steps,
            r.context
        ),
        &[
            "rank",
            "trace",
            "decode steps",
            "collectives",
            "matched",
            "clock offset (µs)",
            "offset spread (µs)",
            "applied",
            "wait (ms)",
            "wait per token (ms)",
            "wait / decode GPU span (%)",
            "straggler steps",
            "delay imposed (ms)",
        ],
    );
    for (row, o) in r.ranks.iter().zip(&r.offsets) {
        t.row(vec![
            Cell::Int(row.rank.into()),
            short(&row.path).into(),
            Cell::Int(row.decode_steps as i64),
            Cell::Int(row.collectives as i64),
            Cell::Int(row.collectives_matched as i64),
            us(o.offset_ns),
            o.spread_ns.map_or(Cell::Null, us),
            o.applied.to_string().into(),
            ms(row.wait_ns),
            Cell::opt_f(row.wait_per_token_ms, 4),
            Cell::opt_f(row.wait_share.map(|s| s * 100.0), 2),
            Cell::Int(row.straggler_steps as i64),
            ms(row.imposed_ns),
        ]);
    }
    let th = &r.threshold;
    t.notes.push(format!(
        "straggler threshold {:.3} ms ({}; median delay {} ms, MAD {} ms, median step GPU span {} ms; rule max({} µs floor, {}% of the step span, median + {}·MAD)); wait share of the run {}",
        th.ms(),
        th.rule,
        fmt_ms(th.median_delay_ns),
        fmt_ms(th.mad_delay_ns),
        fmt_ms(th.median_step_span_ns),
        th.floor_us,
        th.floor_step_pct,
        th.mad_k,
        r.wait_share.map_or("n/a".into(), |s| format!("{:.2} %", s * 100.0)),
    ));
    if r.ranks
        .iter()
        .any(|x| x.collectives != x.collectives_matched)
    {
        t.notes.push(
            "collectives = the rank's own in the aligned decode steps; matched = those every rank has (per step the first k, k the fewest): waits are over the matched ones"
                .into(),
        );
    }
    if !r.missing_ranks.is_empty() {
        let more = r.missing_count.saturating_sub(r.missing_ranks.len() as u64);
        t.notes.push(match more {
            0 => format!("missing ranks: {:?}", r.missing_ranks),
            m => format!("missing ranks: {:?} and {m} more", r.missing_ranks),
        });
    }
    if let Some(stop) = &r.alignment_stop {
        let (step, names) = (stop.step, &stop.names);
        let names: Vec<String> = names
            .iter()
            .map(|(k, n)| format!("rank {k}: {n}"))
            .collect();
        t.notes.push(format!(
            "alignment stopped at decode step {step}: {}",
            names.join("; ")
        ));
    }
    for row in r.ranks.iter().filter(|x| !x.complete) {
        t.notes.push(format!(
            "{}: INCOMPLETE — {}",
            short(&row.path),
            row.error.as_deref().unwrap_or("")
        ));
    }
    t
}

fn fmt_ms(v: Option<crate::stats::Exact>) -> String {
    v.map_or("n/a".into(), |x| format!("{:.3}", x.ms()))
}

fn stragglers_table(r: &RunReport) -> Table {
    let mut t = Table::new(
        format!(
            "Stragglers of {}: decode steps whose delay exceeds {:.3} ms ({} of {})",
            r.run,
            r.threshold.ms(),
            r.stragglers.len(),
            r.aligned_steps
        ),
        &["step", "name", "straggler rank", "delay (ms)"],
    );
    for s in &r.stragglers {
        t.row(vec![
            Cell::Int(s.step as i64),
            s.name.clone().into(),
            Cell::Int(s.rank.into()),
            ms(s.delay_ns),
        ]);
    }
    t
}

/// Step rows: the step's figures, then per rank wait, arrival, CPU skew
/// and GPU span.
fn steps_table(r: &RunReport, rows: &[StepRow], flagged: bool, title: &str) -> Table {
    let mut heads: Vec<String> = ["step", "name", "collectives", "straggler", "delay (ms)"]
        .map(String::from)
        .to_vec();
    if flagged {
        heads.push("flagged".into());
    }
    for row in &r.ranks {
        let k = row.rank;
        heads.extend([
            format!("r{k} wait (ms)"),
            format!("r{k} arrival (ms)"),
            format!("r{k} CPU skew (ms)"),
            format!("r{k} GPU span (ms)"),
        ]);
    }
    let heads_ref: Vec<&str> = heads.iter().map(String::as_str).collect();
    let mut t = Table::new(format!("{title} — {}", r.run), &heads_ref);
    for s in rows {
        let mut cells = vec![
            Cell::Int(s.step as i64),
            s.name.clone().into(),
            Cell::Int(s.collectives as i64),
            s.straggler.map_or(Cell::Null, |x| Cell::Int(x.into())),
            ms(s.delay_ns),
        ];
        if flagged {
            cells.push(s.flagged.to_string().into());
        }
        for p in &s.per_rank {
            cells.extend([
                ms(p.wait_ns),
                ms(p.arrival_ns),
                ms(p.cpu_skew_ns),
                p.gpu_span_ns.map_or(Cell::Null, ms),
            ]);
        }
        t.row(cells);
    }
    t
}

/// The CSV tables: `runs`, `ranks`, `stragglers` and `steps` (boundary
/// steps; decode steps too with `steps`).
pub fn csv_tables(runs: &[RunReport], steps: bool) -> Vec<Table> {
    let mut rt = Table::new(
        "runs",
        &[
            "run",
            "ranks",
            "world_size",
            "missing_ranks",
            "context",
            "aligned_steps",
            "completion_tokens",
            "threshold_ns",
            "threshold_rule",
            "stragglers",
            "wait_share",
        ],
    );
    let mut kt = Table::new(
        "ranks",
        &[
            "run",
            "rank",
            "path",
            "rank_source",
            "complete",
            "decode_steps",
            "collectives",
            "collectives_outside_steps",
            "offset_ns",
            "offset_spread_ns",
            "offset_matched",
            "offset_credible",
            "offset_applied",
            "wait_ns",
            "gpu_span_ns",
            "wait_per_token_ms",
            "wait_share",
            "straggler_steps",
            "imposed_ns",
        ],
    );
    let mut st = Table::new("stragglers", &["run", "step", "name", "rank", "delay_ns"]);
    let mut pt = Table::new(
        "steps",
        &[
            "run",
            "kind",
            "step",
            "name",
            "collectives",
            "straggler",
            "delay_ns",
            "flagged",
            "rank",
            "cpu_start_ns",
            "cpu_skew_ns",
            "gpu_span_ns",
            "in_collectives_ns",
            "wait_ns",
            "arrival_ns",
        ],
    );
    for r in runs {
        run_csv_rows(r, &mut rt, &mut kt, &mut st);
        for (kind, rows) in [("boundary", &r.boundary), ("decode", &r.steps)] {
            if kind == "decode" && !steps {
                continue;
            }
            for s in rows.iter() {
                for p in &s.per_rank {
                    pt.row(vec![
                        r.run.clone().into(),
                        kind.into(),
                        Cell::Int(s.step as i64),
                        s.name.clone().into(),
                        Cell::Int(s.collectives as i64),
                        s.straggler.map_or(Cell::Null, |x| Cell::Int(x.into())),
                        Cell::Int(s.delay_ns),
                        s.flagged.to_string().into(),
                        Cell::Int(p.rank.into()),
                        Cell::Int(p.cpu_start_ns),
                        Cell::Int(p.cpu_skew_ns),
                        p.gpu_span_ns.map_or(Cell::Null, Cell::Int),
                        Cell::Int(p.in_collectives_ns),
                        Cell::Int(p.wait_ns),
                        Cell::Int(p.arrival_ns),
                    ]);
                }
            }
        }
    }
    vec![rt, kt, st, pt]
}

fn run_csv_rows(r: &RunReport, rt: &mut Table, kt: &mut Table, st: &mut Table) {
    let missing: Vec<String> = r.missing_ranks.iter().map(u32::to_string).collect();
    rt.row(vec![
        r.run.clone().into(),
        Cell::Int(r.ranks.len() as i64),
        r.world_size.map_or(Cell::Null, |w| Cell::Int(w.into())),
        missing.join(" ").into(),
        r.context.clone().into(),
        Cell::Int(r.aligned_steps as i64),
        Cell::opt_i(r.completion_tokens),
        Cell::Float(r.threshold.ns.ns(), 1),
        r.threshold.rule.clone().into(),
        Cell::Int(r.stragglers.len() as i64),
        Cell::opt_f(r.wait_share, 6),
    ]);
    for (k, o) in r.ranks.iter().zip(&r.offsets) {
        kt.row(vec![
            r.run.clone().into(),
            Cell::Int(k.rank.into()),
            k.path.clone().into(),
            k.rank_source.map_or(Cell::Null, |s| {
                Cell::text(
                    serde_json::to_value(s)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default(),
                )
            }),
            k.complete.to_string().into(),
            Cell::Int(k.decode_steps as i64),
            Cell::Int(k.collectives as i64),
            Cell::Int(k.collectives_outside_steps as i64),
            Cell::Int(o.offset_ns),
            o.spread_ns.map_or(Cell::Null, Cell::Int),
            Cell::Int(o.matched as i64),
            o.credible.to_string().into(),
            o.applied.to_string().into(),
            Cell::Int(k.wait_ns),
            Cell::Int(k.gpu_span_ns),
            Cell::opt_f(k.wait_per_token_ms, 6),
            Cell::opt_f(k.wait_share, 6),
            Cell::Int(k.straggler_steps as i64),
            Cell::Int(k.imposed_ns),
        ]);
    }
    for s in &r.stragglers {
        st.row(vec![
            r.run.clone().into(),
            Cell::Int(s.step as i64),
            s.name.clone().into(),
            Cell::Int(s.rank.into()),
            Cell::Int(s.delay_ns),
        ]);
    }
}
