//! The view of `diff`: [`DiffReport`] (the comparison, in every format)
//! and `impl Command for Diff`.

use super::compare::{Comparison, Figures, KernelDiff};
use super::{compare, Diff, DiffConfig, DiffSpec, TraceDiff};
use crate::command::{self, ApiError, Command, Document, Said, TraceOutcome};
use crate::contexts::{Contexts, Selector};
use crate::report::{self, Cell, Format, Table};
use crate::text::ellipsize_middle as ellipsize;
use crate::views::short;
use serde::Serialize;
use std::io::{self, Write};

/// The document `diff` prints: the comparison (`-f json`: its keys are the
/// issue's contract, `baseline`, `candidate`, `scope`, `kernels`,
/// `families`, `summary`, and more).
#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    #[serde(flatten)]
    pub comparison: Comparison,
}

impl DiffReport {
    /// The comparison of the first two tables (one table: against an empty
    /// candidate, with a note).
    pub fn new(mut traces: Vec<TraceDiff>) -> DiffReport {
        let mut note = None;
        if traces.len() < 2 {
            let mut empty = traces.first().cloned().expect("at least one trace");
            empty.path = "(no candidate)".into();
            empty.names.clear();
            empty.signatures.clear();
            empty.inside_graphs = None;
            (
                empty.activities,
                empty.kernels,
                empty.total_ns,
                empty.graph_replays,
            ) = (0, 0, 0, 0);
            traces.push(empty);
            note = Some("diff compares two traces; only one was given".to_string());
        }
        let mut comparison = compare(&traces[0], &traces[1]);
        comparison.notes.extend(note);
        DiffReport { comparison }
    }

    pub fn write<W: Write>(&self, out: &mut W, format: Format) -> io::Result<()> {
        let tables = human_tables(&self.comparison);
        let csv = csv_tables(&self.comparison);
        report::render(out, format, self, &tables, &csv)
    }
}

command::trace_outcome!(compare::Side);

impl Document for DiffReport {
    fn write_to(&self, out: &mut dyn Write, format: Format, _per_context: bool) -> io::Result<()> {
        let mut out = out;
        self.write(&mut out, format)
    }
    fn json_value(&self, _per_context: bool) -> Result<serde_json::Value, ApiError> {
        crate::command::json_of(self)
    }
    fn outcomes(&self) -> Vec<&dyn TraceOutcome> {
        let c = &self.comparison;
        vec![&c.baseline, &c.candidate]
    }
}

/// `torchtrace diff BASELINE CANDIDATE`.
impl Command for Diff {
    type Options = DiffSpec;
    type Report = DiffReport;
    const MAX_TRACES: Option<usize> = Some(2);
    const READS_IN_TURN: bool = true;

    fn configure(options: &DiffSpec, _: &Selector) -> Result<DiffConfig, ApiError> {
        DiffConfig::new(options.clone()).map_err(ApiError::Arguments)
    }

    fn said(d: &TraceDiff, contexts: &Contexts) -> Said {
        let (problem, note) = match d.scope.as_str() {
            "steps" => (
                command::context_problem(contexts),
                command::context_note(contexts),
            ),
            _ => (None, None),
        };
        let mut notes: Vec<String> = note.into_iter().collect();
        notes.extend(command::path_notes(&d.path, &d.notes));
        Said {
            problems: problem.into_iter().collect(),
            notes,
        }
    }

    fn report(outputs: Vec<TraceDiff>, _: &Self::Config) -> DiffReport {
        DiffReport::new(outputs)
    }
}

fn per_label(c: &Comparison) -> &'static str {
    match c.normalisation.as_str() {
        "token" => "token",
        "context" => "context",
        _ => "trace",
    }
}

fn side_rows(c: &Comparison) -> Table {
    let per = per_label(c);
    let mut t = Table::new(
        format!(
            "What changed ({} scope, per {per}): baseline vs candidate",
            c.scope
        ),
        &["figure", "baseline", "candidate"],
    );
    let (b, d) = (&c.baseline, &c.candidate);
    let mut row = |label: &str, x: Cell, y: Cell| t.row(vec![Cell::text(label), x, y]);
    row("trace", short(&b.path).into(), short(&d.path).into());
    row(
        "context",
        Cell::text(b.context.clone()),
        Cell::text(d.context.clone()),
    );
    row("contexts", b.contexts.into(), d.contexts.into());
    row(
        "completion tokens",
        Cell::opt_i(b.completion_tokens),
        Cell::opt_i(d.completion_tokens),
    );
    row("GPU activities", b.activities.into(), d.activities.into());
    row(
        &format!("activities per {per}"),
        Cell::opt_f(b.activities_per_token, 2),
        Cell::opt_f(d.activities_per_token, 2),
    );
    row("of them kernels", b.kernels.into(), d.kernels.into());
    row(
        &format!("kernels per {per}"),
        Cell::opt_f(b.kernels_per_token, 2),
        Cell::opt_f(d.kernels_per_token, 2),
    );
    row(
        "GPU time (ms, Σ durations)",
        Cell::Float(b.gpu_time_ms, 3),
        Cell::Float(d.gpu_time_ms, 3),
    );
    row(
        &format!("GPU time per {per} (ms)"),
        Cell::opt_f(b.gpu_time_per_token_ms, 4),
        Cell::opt_f(d.gpu_time_per_token_ms, 4),
    );
    let g = &c.graphs;
    row(
        "graph replays",
        g.baseline.replays.into(),
        g.candidate.replays.into(),
    );
    row(
        &format!("graph replays per {per}"),
        Cell::opt_f(g.baseline.replays_per_token, 3),
        Cell::opt_f(g.candidate.replays_per_token, 3),
    );
    row(
        "activities per replay",
        Cell::opt_f(g.baseline.kernels_per_replay, 2),
        Cell::opt_f(g.candidate.kernels_per_replay, 2),
    );
    row(
        "replay signatures (one side only)",
        Cell::text(format!(
            "{} ({})",
            g.baseline.signatures,
            g.only_baseline.len()
        )),
        Cell::text(format!(
            "{} ({})",
            g.candidate.signatures,
            g.only_candidate.len()
        )),
    );
    let (db, dc) = (c.dominant.baseline.as_ref(), c.dominant.candidate.as_ref());
    type Dom = super::compare::Dominant;
    let dom = |d: Option<&Dom>, f: &dyn Fn(&Dom) -> Cell| d.map_or(Cell::Null, f);
    let name = |d: &Dom| Cell::text(format!("{} [{}]", ellipsize(&d.name, 48), d.family));
    row("dominant kernel", dom(db, &name), dom(dc, &name));
    let calls = |d: &Dom| Cell::from(d.calls);
    row("dominant: calls", dom(db, &calls), dom(dc, &calls));
    let med = |d: &Dom| Cell::Float(d.median_us, 3);
    row("dominant: median (µs)", dom(db, &med), dom(dc, &med));
    let tpt = |d: &Dom| Cell::opt_f(d.time_per_token_ms, 4);
    row(
        &format!("dominant: time per {per} (ms)"),
        dom(db, &tpt),
        dom(dc, &tpt),
    );
    t.notes.push(c.summary.text.clone());
    t.notes.push(c.summary.arithmetic.clone());
    t.notes.extend(c.notes.iter().cloned());
    t
}

fn kernel_cells(k: &KernelDiff, label: String, status: &str, family: &str) -> Vec<Cell> {
    let f = |x: &Figures| (x.calls_per_token, x.time_per_token_ms, x.share_pct);
    let (cb, tb, sb) = f(&k.baseline);
    let (cc, tc, sc) = f(&k.candidate);
    vec![
        Cell::text(label),
        Cell::text(family),
        Cell::text(status),
        Cell::opt_f(cb, 2),
        Cell::opt_f(cc, 2),
        Cell::opt_f(tb.map(|v| v * 1e3), 3),
        Cell::opt_f(tc.map(|v| v * 1e3), 3),
        Cell::opt_f(k.delta_time_per_token_ms.map(|v| v * 1e3), 3),
        Cell::opt_f(k.ratio, 3),
        Cell::opt_f(sb, 1),
        Cell::opt_f(sc, 1),
    ]
}

fn kernels_table(c: &Comparison) -> Table {
    let per = per_label(c);
    let heads = [
        "kernel".to_string(),
        "family".into(),
        "status".into(),
        format!("calls/{per} B"),
        format!("calls/{per} C"),
        format!("µs/{per} B"),
        format!("µs/{per} C"),
        format!("Δ µs/{per}"),
        "ratio C/B".into(),
        "share B (%)".into(),
        "share C (%)".into(),
    ];
    let mut t = Table {
        title: format!(
            "Per kernel (by |Δ time per {per}|; top {} of {})",
            c.top.min(c.kernels.len()),
            c.kernels.len()
        ),
        headers: heads.to_vec(),
        ..Default::default()
    };
    for k in c.kernels.iter().take(c.top) {
        t.row(kernel_cells(
            k,
            ellipsize(&k.name, 60),
            &k.status,
            &k.family,
        ));
    }
    let rest = &c.kernels[c.top.min(c.kernels.len())..];
    if !rest.is_empty() {
        let sum = |get: fn(&KernelDiff) -> &Figures| -> Figures {
            let mut f = Figures {
                calls: 0,
                calls_per_token: Some(0.0),
                time_ms: 0.0,
                time_per_token_ms: Some(0.0),
                share_pct: Some(0.0),
                median_us: None,
                time_ns: 0,
            };
            for k in rest {
                let x = get(k);
                f.calls += x.calls;
                f.time_ns += x.time_ns;
            }
            f
        };
        let (b, d) = (sum(|k| &k.baseline), sum(|k| &k.candidate));
        let (nb, nc) = (
            c.baseline.normaliser as i128,
            c.candidate.normaliser as i128,
        );
        let ms = |v: i128, n: i128| crate::stats::Exact { num: v, den: n }.ms();
        let share = |v: i128, total: i128| (total > 0).then(|| (v * 100) as f64 / total as f64);
        let fig = |x: Figures, n: i128, total: i128| Figures {
            calls_per_token: Some(x.calls as f64 / n as f64),
            time_per_token_ms: Some(ms(x.time_ns, n)),
            share_pct: share(x.time_ns, total),
            ..x
        };
        let delta = d.time_ns * nb - b.time_ns * nc;
        let k = KernelDiff {
            name: String::new(),
            kind: String::new(),
            family: String::new(),
            status: String::new(),
            ratio: (b.time_ns > 0).then(|| (d.time_ns * nb) as f64 / (b.time_ns * nc) as f64),
            delta_calls_per_token: None,
            delta_time_per_token_ms: Some(ms(delta, nb * nc)),
            baseline: fig(b, nb, c.baseline.gpu_time_ns),
            candidate: fig(d, nc, c.candidate.gpu_time_ns),
        };
        t.row(kernel_cells(
            &k,
            format!("(the other {} kernels, summed)", rest.len()),
            "",
            "",
        ));
    }
    t.notes
        .push("B = baseline, C = candidate; JSON lists every kernel".into());
    t
}

fn families_table(c: &Comparison) -> Table {
    let per = per_label(c);
    let heads = [
        "family".to_string(),
        "kernels".into(),
        format!("calls/{per} B"),
        format!("calls/{per} C"),
        format!("ms/{per} B"),
        format!("ms/{per} C"),
        format!("Δ ms/{per}"),
        "share B (%)".into(),
        "share C (%)".into(),
    ];
    let mut t = Table {
        title: "Per kernel family (first matching pattern; families sum to the totals)".into(),
        headers: heads.to_vec(),
        ..Default::default()
    };
    for f in &c.families {
        t.row(vec![
            Cell::text(f.family.clone()),
            f.kernels.into(),
            Cell::opt_f(f.baseline.calls_per_token, 2),
            Cell::opt_f(f.candidate.calls_per_token, 2),
            Cell::opt_f(f.baseline.time_per_token_ms, 4),
            Cell::opt_f(f.candidate.time_per_token_ms, 4),
            Cell::opt_f(f.delta_time_per_token_ms, 4),
            Cell::opt_f(f.baseline.share_pct, 1),
            Cell::opt_f(f.candidate.share_pct, 1),
        ]);
    }
    t
}

fn graphs_table(c: &Comparison) -> Table {
    let per = per_label(c);
    let mut t = Table::new(
        "Graph replay signatures on one side only",
        &[
            "side",
            "activities",
            "replays",
            &format!("replays/{per}"),
            "first",
            "last",
        ],
    );
    for (label, list) in [
        ("baseline", &c.graphs.only_baseline),
        ("candidate", &c.graphs.only_candidate),
    ] {
        for s in list {
            t.row(vec![
                label.into(),
                s.kernels.into(),
                s.replays.into(),
                Cell::opt_f(s.replays_per_token, 3),
                Cell::text(ellipsize(s.first.as_deref().unwrap_or(""), 40)),
                Cell::text(ellipsize(s.last.as_deref().unwrap_or(""), 40)),
            ]);
        }
    }
    t
}

/// Inside the graphs (issue 57): graph GPU time per token of each captured
/// op on both sides (`top` rows; the CSV has every one).
fn captured_ops_table(c: &Comparison, csv: bool) -> Table {
    let per = per_label(c);
    let (title, heads): (&str, Vec<String>) = if csv {
        (
            "captured_ops",
            [
                "subsystem",
                "op",
                "baseline_activities",
                "candidate_activities",
                "baseline_gpu_ns",
                "candidate_gpu_ns",
                "baseline_ms_per_token",
                "candidate_ms_per_token",
                "delta_ms_per_token",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        )
    } else {
        (
            "Inside the graphs: replayed GPU time per captured op (the op that launched it at capture time)",
            vec![
                "subsystem".into(),
                "op".into(),
                "activities (b / c)".into(),
                format!("baseline ms/{per}"),
                format!("candidate ms/{per}"),
                format!("Δ ms/{per}"),
            ],
        )
    };
    let heads: Vec<&str> = heads.iter().map(String::as_str).collect();
    let mut t = Table::new(title, &heads);
    let rows = c
        .captured_ops
        .iter()
        .take(if csv { usize::MAX } else { c.top });
    for r in rows {
        if csv {
            t.row(vec![
                r.subsystem.clone().into(),
                r.op.clone().into(),
                r.baseline_activities.into(),
                r.candidate_activities.into(),
                Cell::Int(r.baseline_gpu_ns),
                Cell::Int(r.candidate_gpu_ns),
                Cell::opt_f(r.baseline_ms_per_token, 6),
                Cell::opt_f(r.candidate_ms_per_token, 6),
                Cell::opt_f(r.delta_ms_per_token, 6),
            ]);
        } else {
            t.row(vec![
                r.subsystem.clone().into(),
                Cell::text(ellipsize(&r.op, 40)),
                format!("{} / {}", r.baseline_activities, r.candidate_activities).into(),
                Cell::opt_f(r.baseline_ms_per_token, 4),
                Cell::opt_f(r.candidate_ms_per_token, 4),
                Cell::opt_f(r.delta_ms_per_token, 4),
            ]);
        }
    }
    t
}

fn human_tables(c: &Comparison) -> Vec<Table> {
    let mut v = vec![
        side_rows(c),
        kernels_table(c),
        families_table(c),
        graphs_table(c),
    ];
    if !c.captured_ops.is_empty() {
        v.push(captured_ops_table(c, false));
    }
    v
}

/// Machine tables: every kernel (names whole), every family, the summary;
/// every captured op when a side has graphs attributed (issue 57).
fn csv_tables(c: &Comparison) -> Vec<Table> {
    let mut v = vec![kernels_csv(c), families_csv(c), summary_csv(c)];
    if !c.captured_ops.is_empty() {
        v.push(captured_ops_table(c, true));
    }
    v
}

/// Every kernel, names whole (CSV).
pub(super) fn kernels_csv(c: &Comparison) -> Table {
    let mut k = Table::new(
        "kernels",
        &[
            "name",
            "kind",
            "family",
            "status",
            "baseline_calls",
            "candidate_calls",
            "baseline_calls_per_token",
            "candidate_calls_per_token",
            "baseline_time_ns",
            "candidate_time_ns",
            "baseline_time_per_token_ms",
            "candidate_time_per_token_ms",
            "delta_time_per_token_ms",
            "ratio",
            "baseline_share_pct",
            "candidate_share_pct",
        ],
    );
    let ns = |v: i128| Cell::text(v.to_string());
    for r in &c.kernels {
        k.row(vec![
            r.name.clone().into(),
            r.kind.clone().into(),
            r.family.clone().into(),
            r.status.clone().into(),
            r.baseline.calls.into(),
            r.candidate.calls.into(),
            Cell::opt_f(r.baseline.calls_per_token, 6),
            Cell::opt_f(r.candidate.calls_per_token, 6),
            ns(r.baseline.time_ns),
            ns(r.candidate.time_ns),
            Cell::opt_f(r.baseline.time_per_token_ms, 9),
            Cell::opt_f(r.candidate.time_per_token_ms, 9),
            Cell::opt_f(r.delta_time_per_token_ms, 9),
            Cell::opt_f(r.ratio, 6),
            Cell::opt_f(r.baseline.share_pct, 4),
            Cell::opt_f(r.candidate.share_pct, 4),
        ]);
    }
    k
}

/// Every family (CSV).
pub(super) fn families_csv(c: &Comparison) -> Table {
    let ns = |v: i128| Cell::text(v.to_string());
    let mut f = Table::new(
        "families",
        &[
            "family",
            "kernels",
            "baseline_calls",
            "candidate_calls",
            "baseline_time_ns",
            "candidate_time_ns",
            "baseline_time_per_token_ms",
            "candidate_time_per_token_ms",
            "delta_time_per_token_ms",
        ],
    );
    for r in &c.families {
        f.row(vec![
            r.family.clone().into(),
            r.kernels.into(),
            r.baseline.calls.into(),
            r.candidate.calls.into(),
            ns(r.baseline.time_ns),
            ns(r.candidate.time_ns),
            Cell::opt_f(r.baseline.time_per_token_ms, 9),
            Cell::opt_f(r.candidate.time_per_token_ms, 9),
            Cell::opt_f(r.delta_time_per_token_ms, 9),
        ]);
    }
    f
}

/// The summary line's exact parts (CSV).
fn summary_csv(c: &Comparison) -> Table {
    let ns = |v: i128| Cell::text(v.to_string());
    let s = &c.summary;
    let mut sum = Table::new(
        "summary",
        &[
            "baseline",
            "candidate",
            "scope",
            "normalisation",
            "total_delta_ms_per_token",
            "call_count_change_ms_per_token",
            "duration_change_ms_per_token",
            "added_minus_removed_ms_per_token",
            "denominator",
            "total_units",
            "call_count_units",
            "duration_units",
            "added_units",
            "removed_units",
        ],
    );
    sum.row(vec![
        c.baseline.path.clone().into(),
        c.candidate.path.clone().into(),
        c.scope.clone().into(),
        c.normalisation.clone().into(),
        Cell::opt_f(s.total_delta_ms_per_token, 9),
        Cell::opt_f(s.call_count_change_ms_per_token, 9),
        Cell::opt_f(s.duration_change_ms_per_token, 9),
        Cell::opt_f(s.added_minus_removed_ms_per_token, 9),
        ns(s.denominator),
        ns(s.total_units),
        ns(s.call_count_units),
        ns(s.duration_units),
        ns(s.added_units),
        ns(s.removed_units),
    ]);
    sum
}
