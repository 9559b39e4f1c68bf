//! `idle` in `batch` (its [`crate::campaign::InBatch::batch_section`]): per
//! workload, AR against MTP — report.md's "Where the GPU waits" section
//! and figure 11.
//!
//! The headline figures per token and per iteration are the *decode
//! iterations'*, as `torchtrace iterations` selects and measures them (the
//! same closed iterations, the same sums, so one quantity has one value):
//! wall, GPU busy and device-level GPU idle (the iteration's GPU span less
//! the union of its activities over every stream), means beside medians.
//! Below them, the mean decode step's busy by class, what lies outside the
//! decode iterations (prefill and mixed steps, the open last iteration,
//! the wait between requests), apart and labelled, the whole-trace
//! figures, and last `torchtrace idle`'s per-stream detail (whose sums
//! count a sparse stream's idle across the whole span). `idle_decode.csv` holds
//! the headline per trace; `idle_steps.csv` one row per step, marked
//! decode or not. Figure 11: per token, wall = GPU busy + GPU idle + the
//! time with none of the iteration's GPU work in flight, AR beside MTP.
//!
//! Before issue 60 the per-token idle was the whole trace's Σ over streams
//! / tokens: the wait between requests, prefill steps and a stream idle
//! for the whole span made AR's "idle per token" 40 times its wall time
//! per token.

use super::{round_ratio, Idle, Part, StepRow, TraceIdle};
use crate::analysis::Results;
use crate::campaign::{Campaign, InBatch, Match, Section, SectionFile};
use crate::plot::{series_color, BarGroup, Segment, StackedBar, StackedBars};
use crate::report::{self, Cell, Table};
use crate::stats::{mean_wide, median_wide, Exact};
use serde::Deserialize;
use std::collections::BTreeSet;

/// The key under which `torchtrace iterations` files its figures.
const DECODE_KEY: &str = "iterations";

/// A trace's decode iterations as `torchtrace iterations` measured them:
/// the part of its output this section uses, read by its key through the
/// results' serialized form (internal rows included), since an analysis
/// names no other analysis (tests/it/structure.rs).
#[derive(Debug, Deserialize)]
pub(crate) struct TraceIterations {
    pub contexts: u64,
    pub iterations_closed: u64,
    pub tokens_per_iteration: Option<f64>,
    pub completion_tokens: Option<u64>,
    pub per_token: LoopPerToken,
    #[serde(default)]
    pub rows: Vec<IterationRow>,
}

/// `iterations`' per-token figures (ms).
#[derive(Debug, Deserialize)]
pub(crate) struct LoopPerToken {
    pub wall_ms: Option<f64>,
    pub gpu_busy_ms: Option<f64>,
    pub gpu_idle_ms: Option<f64>,
}

/// One iteration's figures: its sums of ns are i128, as `iterations`
/// keeps them (an iteration's GPU span can pass i64, issue 59).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct IterationRow {
    pub start_ns: i64,
    pub wall_ns: Option<i128>,
    pub closed: bool,
    pub gpu_busy_ns: i128,
    pub gpu_idle_ns: Option<i128>,
}

/// The decode iterations of a trace's results, when `iterations` ran.
/// Through JSON text, never `serde_json::Value`: a Value holds no integer
/// past u64, so one wide row lost the whole trace's iterations (issue 59).
fn decode_loop(results: &Results) -> Option<TraceIterations> {
    let (_, out) = results.iter().find(|(k, _)| *k == DECODE_KEY)?;
    let text = crate::record::with_internals(|| serde_json::to_vec(out)).ok()?;
    parse_loop(&text)
}

/// [`decode_loop`]'s reading of `iterations`' serialized figures.
fn parse_loop(text: &[u8]) -> Option<TraceIterations> {
    serde_json::from_slice(text).ok()
}

/// The CSV of the headline figures (one row per match and side).
pub const DECODE_CSV: &str = "idle_decode.csv";
/// The CSV of the step rows.
pub const CSV: &str = "idle_steps.csv";
/// Figure 11's file stem.
pub const FIGURE: &str = "fig11_idle_per_step";

/// One trace: its idle figures, its decode iterations (when `iterations`
/// ran) and its step rows split by them.
pub(crate) struct Side<'c> {
    pub idle: &'c TraceIdle,
    pub it: Option<TraceIterations>,
    /// The closed iterations (`iterations`' selection).
    pub closed: Vec<IterationRow>,
    /// `idle`'s step rows whose start is a closed decode iteration's.
    pub decode_steps: Vec<StepRow>,
    /// The other step rows: prefill, mixed, the open iteration.
    pub other_steps: Vec<StepRow>,
}

impl<'c> Side<'c> {
    pub(crate) fn new(idle: &'c TraceIdle, it: Option<TraceIterations>) -> Side<'c> {
        let closed: Vec<IterationRow> = it
            .as_ref()
            .map(|t| t.rows.iter().filter(|r| r.closed).cloned().collect())
            .unwrap_or_default();
        let starts: BTreeSet<i64> = closed.iter().map(|r| r.start_ns).collect();
        let (decode_steps, other_steps) = idle
            .steps
            .rows
            .iter()
            .partition(|s| starts.contains(&s.host_start_ns));
        Side {
            idle,
            it,
            closed,
            decode_steps,
            other_steps,
        }
    }

    /// Wall, GPU busy and GPU idle per token (µs): `iterations`' own.
    pub(crate) fn headline_us(&self) -> [Option<f64>; 3] {
        let Some(t) = &self.it else {
            return [None; 3];
        };
        let p = &t.per_token;
        [p.wall_ms, p.gpu_busy_ms, p.gpu_idle_ms].map(|v| v.map(|ms| ms * 1e3))
    }

    /// Mean and median over the closed iterations of a figure (µs).
    fn per_iteration_us(&self, f: fn(&IterationRow) -> i128) -> (Option<f64>, Option<f64>) {
        per_iteration_us(&self.closed, f)
    }
}

/// Mean and median of a figure over `rows` (µs), exact in i128 until the
/// conversion.
fn per_iteration_us(
    rows: &[IterationRow],
    f: fn(&IterationRow) -> i128,
) -> (Option<f64>, Option<f64>) {
    let mut v: Vec<i128> = rows.iter().map(f).collect();
    (mean_wide(&v).map(us), median_wide(&mut v).map(us))
}

/// Wall of a closed iteration.
fn wall(r: &IterationRow) -> i128 {
    r.wall_ns.unwrap_or(0)
}

/// GPU idle of an iteration (0 without GPU work, as `iterations` sums it).
fn idle(r: &IterationRow) -> i128 {
    r.gpu_idle_ns.unwrap_or(0)
}

/// An exact ns figure in µs.
fn us(e: Exact) -> f64 {
    e.ms() * 1e3
}

struct Row<'c> {
    m: &'c Match,
    ar: Side<'c>,
    mtp: Side<'c>,
}

impl<'c> Row<'c> {
    fn sides(&self) -> [(&str, &Side<'c>); 2] {
        [
            ("ar", &self.ar),
            (self.m.candidate_mode.as_str(), &self.mtp),
        ]
    }
}

/// The section: `None` when no match has idle figures on both sides.
pub(crate) fn section(campaign: &Campaign<'_>) -> Option<Section> {
    let loop_of = |i: usize| campaign.traces.get(i).and_then(|t| decode_loop(t.results));
    let rows: Vec<Row> = campaign
        .matched::<Idle>()
        .into_iter()
        .map(|(m, ar, mtp)| Row {
            m,
            ar: Side::new(ar, loop_of(m.baseline)),
            mtp: Side::new(mtp, loop_of(m.candidate)),
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut md = report::markdown::section(&decode_table(&rows), "##");
    md.push_str(&format!(
        "\nThe decode iterations are `torchtrace iterations`' (a decode step context up to the next step \
         annotation on its thread; the closed ones), so every figure here is `iterations`' own: per token = \
         Σ over the closed iterations × n / (closed × T). GPU idle = the iteration's GPU span (its first \
         activity's start to its last one's end) less the union of its activities over every stream and \
         device: the device-level idle, never more than the span. Wall − busy − idle is the time with none \
         of the iteration's GPU work in flight. CSV: [{DECODE_CSV}]({DECODE_CSV}), per step: [{CSV}]({CSV}).\n\n"
    ));
    for r in &rows {
        md.push_str(&sentence(r));
    }
    md.push('\n');
    md.push_str(&report::markdown::section(&step_table(&rows), "###"));
    md.push_str(&report::markdown::section(&outside_table(&rows), "###"));
    md.push_str(&report::markdown::section(&whole_table(&rows), "###"));
    md.push_str(&report::markdown::section(&stream_table(&rows), "###"));
    Some(Section {
        markdown: md,
        files: vec![
            SectionFile {
                name: DECODE_CSV.into(),
                text: report::csv::to_string(&decode_csv(&rows)),
                what: "GPU busy and idle per token and per decode iteration (as `iterations`), AR vs MTP per workload".into(),
            },
            SectionFile {
                name: CSV.into(),
                text: report::csv::to_string(&csv_table(&rows)),
                what: "GPU busy and idle by cause per step, decode or not, AR vs MTP per workload".into(),
            },
        ],
        figures: vec![Box::new(figure(&rows))],
        lead: String::new(),
    })
}

fn f1(v: Option<f64>) -> Cell {
    Cell::opt_f(v, 1)
}

fn mode_label(mode: &str) -> Cell {
    crate::runinfo::Mode::display(mode).into()
}

/// The headline: per token and per iteration, from the decode iterations.
fn decode_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "Where the GPU waits: the decode iterations, AR vs MTP per workload (µs)",
        &[
            "Workload",
            "Mode",
            "Decode iterations (closed)",
            "Tokens/iteration",
            "Wall/token",
            "GPU busy/token",
            "GPU idle/token",
            "Wall/iteration mean",
            "Wall/iteration median",
            "GPU idle/iteration mean",
            "GPU idle/iteration median",
        ],
    );
    for r in rows {
        for (mode, s) in r.sides() {
            let [w, b, i] = s.headline_us();
            let (wm, wmed) = s.per_iteration_us(wall);
            let (im, imed) = s.per_iteration_us(idle);
            t.row(vec![
                r.m.workload.clone().into(),
                mode_label(mode),
                s.it.as_ref()
                    .map_or(Cell::Null, |x| x.iterations_closed.into()),
                Cell::opt_f(s.it.as_ref().and_then(|x| x.tokens_per_iteration), 3),
                f1(w),
                f1(b),
                f1(i),
                f1(wm),
                f1(wmed),
                f1(im),
                f1(imed),
            ]);
        }
    }
    t.notes.push(
        "`torchtrace iterations`' figures (the same closed iterations and sums); GPU idle = span − union over streams (device level); medians: of the closed iterations".into(),
    );
    t
}

/// One sentence per workload: the decode iterations' wall, busy and idle
/// per token, and the idle's share of the wall.
fn sentence(r: &Row) -> String {
    let [aw, ab, ai] = r.ar.headline_us();
    let [mw, mb, mi] = r.mtp.headline_us();
    let us = |v: Option<f64>| v.map_or("n/a".to_string(), |x| format!("{x:.1} µs"));
    let share = |i: Option<f64>, w: Option<f64>| match (i, w) {
        (Some(i), Some(w)) if w > 0.0 => format!("{:.0} %", 100.0 * i / w),
        _ => "n/a".to_string(),
    };
    let mode = crate::runinfo::Mode::display(&r.m.candidate_mode);
    format!(
        "- **{}**: per generated token of the decode iterations, {mode} takes {} of wall time (AR {}), the GPU busy {} (AR {}) and idle {} (AR {}): idle is {} of {mode}'s wall time per token (AR {}).\n",
        r.m.workload,
        us(mw),
        us(aw),
        us(mb),
        us(ab),
        us(mi),
        us(ai),
        share(mi, mw),
        share(ai, aw),
    )
}

/// Per stream over the whole trace: where the per-stream sums come from.
fn stream_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "Per stream, the whole trace (`torchtrace idle`, ms)",
        &[
            "Workload",
            "Mode",
            "Device:stream",
            "Activities",
            "Span",
            "Busy",
            "Idle",
            "Host wait",
            "Kernel wait",
            "Other",
        ],
    );
    let ms = |x: i128| Cell::Float(round_ratio(x, 1_000_000, 3), 3);
    for r in rows {
        for (mode, s) in r.sides() {
            for x in &s.idle.streams {
                t.row(vec![
                    r.m.workload.clone().into(),
                    mode_label(mode),
                    format!("{}:{}", x.device, x.stream).into(),
                    x.activities.into(),
                    ms(x.span_ns),
                    ms(x.busy_ns),
                    ms(x.idle_ns),
                    ms(x.host_wait_ns),
                    ms(x.kernel_wait_ns),
                    ms(x.other_ns),
                ]);
            }
        }
    }
    t.notes.push(
        "per stream: the gaps before each activity against the stream's running end (I2), by cause (I3). A stream with few activities is idle across most of the trace, so the streams' idle added up counts the same wall time once per stream and can exceed the trace's span: the device-level figures above count it once".into(),
    );
    t
}

/// The step rows' sums.
fn step_sum(rows: &[StepRow]) -> Part {
    super::compute::sum_rows(rows)
}

/// Σ / steps, in µs, exactly rounded to 0.1 µs (C1); null without steps.
fn per_step_us(sum: i128, steps: u64) -> Option<f64> {
    (steps > 0).then(|| round_ratio(sum, i128::from(steps) * 1000, 1))
}

fn step_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "The mean decode step: GPU busy by class (µs per step)",
        &[
            "Workload",
            "Mode",
            "Decode steps",
            "Compute",
            "Comm",
            "Memory",
            "GPU busy (union)",
            "GPU idle (device level)",
        ],
    );
    for r in rows {
        for (mode, s) in r.sides() {
            let p = step_sum(&s.decode_steps);
            let n = s.decode_steps.len() as u64;
            let mut cells: Vec<Cell> =
                vec![r.m.workload.clone().into(), mode_label(mode), n.into()];
            cells.extend(
                [p.compute_ns, p.comm_ns, p.memory_ns]
                    .iter()
                    .map(|&v| f1(per_step_us(v, n))),
            );
            cells.push(f1(s.per_iteration_us(|r| r.gpu_busy_ns).0));
            cells.push(f1(s.per_iteration_us(idle).0));
            t.row(cells);
        }
    }
    t.notes.push(
        "class columns: `torchtrace idle`'s step rows that are closed decode iterations, Σ over devices of the union of each class's activities (C6; comm that overlaps compute is in both) / their count; busy and idle: `iterations`' means per closed iteration".into(),
    );
    t
}

/// What lies outside the decode iterations, apart and labelled.
fn outside_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "Outside the decode iterations: prefill steps and the time between requests (ms, whole trace)",
        &[
            "Workload",
            "Mode",
            "Other steps (prefill, mixed, open)",
            "Their wall",
            "Their GPU busy",
            "Their wall − GPU busy",
            "Before the first step: GPU busy",
        ],
    );
    let ms = |x: i128| Cell::Float(round_ratio(x, 1_000_000, 3), 3);
    for r in rows {
        for (mode, s) in r.sides() {
            let closed: Vec<&StepRow> = s
                .other_steps
                .iter()
                .filter(|x| x.host_end_ns.is_some())
                .collect();
            let wall: i128 = closed
                .iter()
                .filter_map(|x| Some(i128::from(x.host_end_ns? - x.host_start_ns)))
                .sum();
            let busy: i128 = closed.iter().map(|x| x.work.busy_ns).sum();
            t.row(vec![
                r.m.workload.clone().into(),
                mode_label(mode),
                (s.other_steps.len() as u64).into(),
                ms(wall),
                ms(busy),
                ms(wall - busy),
                ms(s.idle.steps.pre.busy_ns),
            ]);
        }
    }
    t.notes.push(
        "not per token: not decode work. A step's wall runs from its annotation to the next one on its thread (the last step, without one, is counted in the count only); so the wait for the next request lies in the wall of the step before it, and wall − GPU busy is mostly that wait. Counted here, not in the headline".into(),
    );
    t
}

/// The whole trace's figures (`torchtrace idle`'s summary).
fn whole_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "The whole trace (requests, prefill and decode together; `torchtrace idle`)",
        &[
            "Workload",
            "Mode",
            "Idle % of device span",
            "Host-wait % of idle Σ streams",
            "Comm/compute overlap %",
            "Queue max",
            "Steps",
        ],
    );
    let f4 = |v: Option<f64>| Cell::opt_f(v, 4);
    for r in rows {
        for (mode, s) in r.sides() {
            let x = s.idle;
            t.row(vec![
                r.m.workload.clone().into(),
                mode_label(mode),
                f4(x.idle_pct()),
                f4(x.host_wait_share_pct()),
                f4(x.comm_comp_overlap_pct),
                x.queue_max().map_or(Cell::Null, Cell::Int),
                x.steps.count.into(),
            ]);
        }
    }
    t.notes.push(
        "idle % = Σ devices' idle / Σ devices' span (I4, device level); host-wait % = Σ streams' host wait / Σ streams' idle (I3); overlap % = comm ∩ compute / comm (null without comm kernels); queue = launched, not finished, per stream (I5)".into(),
    );
    t
}

fn decode_csv(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "idle_decode",
        &[
            "workload",
            "mode",
            "trace",
            "decode_iterations_closed",
            "contexts",
            "completion_tokens",
            "tokens_per_iteration",
            "wall_per_token_ms",
            "gpu_busy_per_token_ms",
            "gpu_idle_per_token_ms",
            "wall_per_iteration_mean_us",
            "wall_per_iteration_median_us",
            "gpu_idle_per_iteration_mean_us",
            "gpu_idle_per_iteration_median_us",
            "decode_steps",
            "other_steps",
        ],
    );
    for r in rows {
        for (mode, s) in r.sides() {
            let it = s.it.as_ref();
            let p = it.map(|x| &x.per_token);
            let (wm, wmed) = s.per_iteration_us(wall);
            let (im, imed) = s.per_iteration_us(idle);
            let f = |v: Option<f64>| v.map_or(Cell::Null, |x| Cell::Float(x, 6));
            t.row(vec![
                r.m.workload.clone().into(),
                mode.into(),
                s.idle.path.clone().into(),
                it.map_or(Cell::Null, |x| x.iterations_closed.into()),
                it.map_or(Cell::Null, |x| x.contexts.into()),
                Cell::opt_i(it.and_then(|x| x.completion_tokens)),
                f(it.and_then(|x| x.tokens_per_iteration)),
                f(p.and_then(|p| p.wall_ms)),
                f(p.and_then(|p| p.gpu_busy_ms)),
                f(p.and_then(|p| p.gpu_idle_ms)),
                f(wm),
                f(wmed),
                f(im),
                f(imed),
                (s.decode_steps.len() as u64).into(),
                (s.other_steps.len() as u64).into(),
            ]);
        }
    }
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
            "decode",
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
        for (mode, x) in r.sides() {
            let decode: BTreeSet<u64> = x.decode_steps.iter().map(|s| s.index).collect();
            for s in &x.idle.steps.rows {
                let w = &s.work;
                t.row(vec![
                    r.m.workload.clone().into(),
                    mode.into(),
                    x.idle.path.clone().into(),
                    s.index.into(),
                    s.name.clone().into(),
                    Cell::text(decode.contains(&s.index).to_string()),
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

/// A bar of figure 11: per token, GPU busy, GPU idle and the rest of the
/// wall time (µs).
fn bar(s: &Side, label: String, mode: &str) -> StackedBar {
    let [w, b, i] = s.headline_us();
    let values = match (w, b, i) {
        (Some(w), Some(b), Some(i)) => Some(vec![b, i, (w - b - i).max(0.0)]),
        _ => None,
    };
    let tpi = s.it.as_ref().and_then(|x| x.tokens_per_iteration);
    StackedBar {
        label,
        mode: Some(mode.into()),
        values,
        top: w.map_or_else(String::new, |w| format!("{w:.0} µs")),
        below: i.map_or_else(String::new, |i| {
            let tpi = tpi.map_or_else(String::new, |t| format!("\n{t:.2} tokens/iteration"));
            format!("idle {i:.0} µs{tpi}")
        }),
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
                    bar(&r.ar, "AR".into(), "ar"),
                    bar(&r.mtp, label, &r.m.candidate_mode),
                ],
                note: None,
            }
        })
        .collect();
    StackedBars {
        stem: FIGURE.into(),
        title: "Decode iterations: wall time per generated token, GPU busy and idle".into(),
        subtitle: "as `torchtrace iterations`: closed decode iterations × n / (closed × T); idle = GPU span − union over streams; prefill and time between requests excluded".into(),
        y_desc: "µs per generated token".into(),
        segments: [
            "GPU busy",
            "GPU idle (device level)",
            "no GPU work of the iteration in flight",
        ]
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
            "needs decode step annotations, GPU work and completion tokens (see `torchtrace iterations`)".into(),
        ),
    }
}

impl InBatch for Idle {
    const BATCH_FILES: &'static [&'static str] = &[DECODE_CSV, CSV];
    /// report.md's "Where the GPU waits", idle_decode.csv, idle_steps.csv
    /// and figure 11.
    fn batch_section(c: &Campaign<'_>) -> Option<Section> {
        section(c)
    }

    /// The headline figures (`idle_idle_pct`, `idle_host_wait_share_pct`, …).
    fn trace_columns(_: &[&Self::Output]) -> Vec<crate::views::Column<Self::Output>> {
        super::view::columns()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `iterations`' figures with rows past i64 (and past u64) are read
    /// whole and exactly (issue 59: the rows were i64 here, so one wide row
    /// lost the trace's decode iterations from the section).
    #[test]
    fn wide_iteration_rows_are_read_exactly() {
        let big = u128::from(u64::MAX); // 2^64 - 1: past i64 and at u64's end
        let text = format!(
            r#"{{"contexts": 3, "iterations_closed": 2, "tokens_per_iteration": 1.0,
                "completion_tokens": 3, "per_token": {{"wall_ms": 1.0, "gpu_busy_ms": 0.5, "gpu_idle_ms": 0.5}},
                "rows": [
                  {{"start_ns": 10, "wall_ns": {w1}, "closed": true, "gpu_busy_ns": 7, "gpu_idle_ns": {i1}}},
                  {{"start_ns": 20, "wall_ns": 1000, "closed": true, "gpu_busy_ns": {b2}, "gpu_idle_ns": 100}},
                  {{"start_ns": 30, "wall_ns": null, "closed": false, "gpu_busy_ns": 1, "gpu_idle_ns": null}}
                ]}}"#,
            w1 = big + 5,
            i1 = big * 4,
            b2 = i128::from(i64::MAX) + 1,
        );
        let it = parse_loop(text.as_bytes()).expect("read");
        assert_eq!(it.rows.len(), 3);
        assert_eq!(it.rows[0].wall_ns, Some((big + 5) as i128));
        assert_eq!(it.rows[1].gpu_busy_ns, i128::from(i64::MAX) + 1);
        let closed: Vec<IterationRow> = it.rows.into_iter().filter(|r| r.closed).collect();
        // Wall: mean = median of two = (2^64 + 4 + 1000) / 2 ns.
        let (mean, median) = per_iteration_us(&closed, wall);
        let exact = Exact {
            num: (big + 5) as i128 + 1000,
            den: 2,
        };
        assert_eq!(mean, Some(us(exact)));
        assert_eq!(median, mean);
        assert_eq!(mean, Some(9_223_372_036_854_776.0));
        // Idle: (4 · (2^64 − 1) + 100) / 2 ns, exact past u64.
        let (mean, _) = per_iteration_us(&closed, idle);
        assert_eq!(mean, Some(3.689_348_814_741_91e16));
        let (mean, _) = per_iteration_us(&closed, |r| r.gpu_busy_ns);
        assert_eq!(mean, Some(4_611_686_018_427_388.0));
    }
}
