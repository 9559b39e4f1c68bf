//! `ops` in `batch` (its [`crate::campaign::InBatch::batch_section`]): per
//! workload, AR against MTP — report.md's "Who launches the GPU work"
//! section (both verdicts, host busy per GPU ns, the host-wait share of
//! GPU idle, launches and short-GPU launches per token, MTP's launch-bound
//! top-level ops and the top-level ops whose host time per token grew the
//! most), `ops.csv` (one row per match and top-level op) and figure 10:
//! per workload, the top-level ops' GPU time and host time per token, AR
//! beside MTP.
//!
//! Every figure is [`super::view::compare`]'s, as `torchtrace ops AR MTP`
//! prints it.

use super::graphs_batch;
use super::view::{compare, count_per_token, OpsComparison};
use super::{Ops, TraceOps};
use crate::campaign::{Campaign, InBatch, Match, Section, SectionFile};
use crate::plot::{series_color, BarGroup, Segment, StackedBar, StackedBars};
use crate::report::{self, Cell, Table};

/// The CSV file the section writes.
pub const CSV: &str = "ops.csv";
/// Figure 10's file stem.
pub const FIGURE: &str = "fig10_ops_gpu_vs_host_per_token";

struct Row<'c> {
    m: &'c Match,
    ar: &'c TraceOps,
    mtp: &'c TraceOps,
    c: OpsComparison,
}

/// The section: `None` when no match has ops figures on both sides.
pub(crate) fn section(campaign: &Campaign<'_>) -> Option<Section> {
    let rows: Vec<Row> = campaign
        .matched::<Ops>()
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
        "\nPer trace, `torchtrace ops`' summary (docs/VIEWS.md O9): host busy = the launching threads' \
         window less their sync-like calls, per ns of linked GPU work; host wait = GPU idle gaps whose work's \
         runtime call started after the stream went idle (I2–I3); verdict = launch-bound iff host busy > GPU work \
         and host wait > half the idle. Short-GPU launch: runtime call ≤ 50 µs and GPU work shorter than it (O6). \
         CSV: [{CSV}]({CSV}).\n\n"
    ));
    md.push_str(&report::markdown::section(&explain_table(&rows), "###"));
    let mut files = vec![SectionFile {
        name: CSV.into(),
        text: report::csv::to_string(&csv_table(&rows)),
        what: "top-level ops per token, AR vs MTP per workload".into(),
    }];
    // Inside the graphs (issue 57): the pairs whose traces replay graphs.
    let graphs: Vec<graphs_batch::Row> = rows
        .iter()
        .filter_map(|r| {
            Some(graphs_batch::Row {
                m: r.m,
                ar: r.ar,
                mtp: r.mtp,
                c: graphs_batch::compare(r.ar, r.mtp)?,
            })
        })
        .collect();
    let mut lead = String::new();
    if let Some((g, csv, l)) = graphs_batch::section(&graphs) {
        md.push('\n');
        md.push_str(&g);
        if let Some(text) = csv {
            files.push(SectionFile {
                name: graphs_batch::CSV.into(),
                text,
                what: "graph replays' GPU time by subsystem, module path and launcher op, AR vs MTP per workload".into(),
            });
        }
        lead = l;
    }
    Some(Section {
        markdown: md,
        files,
        figures: vec![Box::new(figure(&rows))],
        lead,
    })
}

fn f6(v: Option<f64>) -> Cell {
    Cell::opt_f(v, 6)
}

fn verdict(t: &TraceOps) -> Cell {
    t.summary.verdict.clone().map_or(Cell::Null, Cell::Text)
}

fn summary_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "Who launches the GPU work: AR vs MTP per workload (ops)",
        &[
            "Workload",
            "Mode",
            "Verdict AR",
            "Verdict MTP",
            "Host busy/GPU ns AR",
            "Host busy/GPU ns MTP",
            "Host-wait share of idle AR",
            "Host-wait share of idle MTP",
            "Launches/token AR",
            "Launches/token MTP",
            "Short-GPU launches/token AR",
            "Short-GPU launches/token MTP",
        ],
    );
    for r in rows {
        let (a, m) = (r.ar, r.mtp);
        t.row(vec![
            r.m.workload.clone().into(),
            r.m.candidate_mode.clone().into(),
            verdict(a),
            verdict(m),
            f6(a.summary.host_busy_per_gpu),
            f6(m.summary.host_busy_per_gpu),
            f6(a.summary.host_wait_share_of_idle),
            f6(m.summary.host_wait_share_of_idle),
            f6(count_per_token(a.summary.launches, a)),
            f6(count_per_token(m.summary.launches, m)),
            f6(count_per_token(a.summary.launch_stats.short_gpu, a)),
            f6(count_per_token(m.summary.launch_stats.short_gpu, m)),
        ]);
    }
    t.drop_column_if_all("Mode", "mtp");
    t
}

/// Host time per token MTP − AR of a top-level op (ns), when both known.
fn host_growth(p: &super::view::TopLevelPair) -> Option<f64> {
    Some(p.candidate_host_per_token_ns.unwrap_or(0.0) - p.baseline_host_per_token_ns.unwrap_or(0.0))
        .filter(|_| {
            p.candidate_host_per_token_ns.is_some() || p.baseline_host_per_token_ns.is_some()
        })
}

/// The ops that explain the difference: MTP's launch-bound top-level ops
/// (O9) and the three top-level ops whose host time per token grew most.
fn explain_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "The ops that explain the difference",
        &[
            "Workload",
            "MTP's launch-bound top-level ops (by GPU time)",
            "Launch-bound share of MTP's top-level GPU time",
            "Largest growth of host time per token (MTP − AR, ns)",
        ],
    );
    for r in rows {
        let mut grow: Vec<(&str, f64)> =
            r.c.top_level
                .iter()
                .filter_map(|p| host_growth(p).map(|g| (p.name.as_str(), g)))
                .collect();
        grow.sort_by(|a, b| b.1.total_cmp(&a.1));
        let grow: Vec<String> = grow
            .iter()
            .take(3)
            .map(|(n, g)| format!("`{n}` {g:+.0}"))
            .collect();
        // MTP's launch-bound top-level ops as compared (vLLM step
        // annotations of one kind as one op), by MTP's top-level GPU time.
        let mut bound: Vec<(&str, i64)> =
            r.c.top_level
                .iter()
                .filter(|p| p.candidate_launch_bound == Some(true))
                .filter_map(|p| Some((p.name.as_str(), p.candidate_gpu_top_ns.filter(|&g| g > 0)?)))
                .collect();
        bound.sort_by_key(|b| std::cmp::Reverse(b.1));
        let bound: Vec<String> = bound
            .iter()
            .take(5)
            .map(|(n, _)| format!("`{n}`"))
            .collect();
        t.row(vec![
            r.m.workload.clone().into(),
            if bound.is_empty() {
                "none".to_string()
            } else {
                bound.join(", ")
            }
            .into(),
            f6(r.mtp.summary.launch_bound_gpu_share),
            if grow.is_empty() {
                "—".to_string()
            } else {
                grow.join(", ")
            }
            .into(),
        ]);
    }
    t.notes.push(
        "top-level op = the outermost cpu_op/user_annotation enclosing a launch (O4), vLLM step annotations of one kind (decode, prefill, mixed) counted as one op; launch-bound op = its GPU work is shorter than its non-blocked host time (O8); per token = / completion tokens".into(),
    );
    t
}

fn csv_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "ops",
        &[
            "workload",
            "candidate_mode",
            "baseline",
            "candidate",
            "baseline_verdict",
            "candidate_verdict",
            "cat",
            "name",
            "baseline_gpu_top_ns",
            "candidate_gpu_top_ns",
            "baseline_host_ns",
            "candidate_host_ns",
            "baseline_gpu_top_per_token_ns",
            "candidate_gpu_top_per_token_ns",
            "baseline_host_per_token_ns",
            "candidate_host_per_token_ns",
            "baseline_launch_bound",
            "candidate_launch_bound",
        ],
    );
    let i = |v: Option<i64>| v.map_or(Cell::Null, Cell::Int);
    let b = |v: Option<bool>| v.map_or(Cell::Null, |x| Cell::text(x.to_string()));
    for r in rows {
        for p in &r.c.top_level {
            t.row(vec![
                r.m.workload.clone().into(),
                r.m.candidate_mode.clone().into(),
                r.ar.path.clone().into(),
                r.mtp.path.clone().into(),
                verdict(r.ar),
                verdict(r.mtp),
                p.cat.clone().map_or(Cell::Null, Cell::Text),
                p.name.clone().into(),
                i(p.baseline_gpu_top_ns),
                i(p.candidate_gpu_top_ns),
                i(p.baseline_host_ns),
                i(p.candidate_host_ns),
                f6(p.baseline_gpu_top_per_token_ns),
                f6(p.candidate_gpu_top_per_token_ns),
                f6(p.baseline_host_per_token_ns),
                f6(p.candidate_host_per_token_ns),
                b(p.baseline_launch_bound),
                b(p.candidate_launch_bound),
            ]);
        }
    }
    t
}

/// Whether a top-level op is a vLLM prefill, mixed or empty step
/// annotation: not decode work, so apart from figure 10's bars (issue 60:
/// one prefill step's 862 ms of host time made AR's host bar 40 times its
/// decode loop's).
fn outside_decode(r: &super::OpRow) -> bool {
    r.cat.as_deref() == Some("user_annotation")
        && crate::steps::parse(&r.name).is_some_and(|s| s.kind() != "decode")
}

/// Per token, in ms: Σ over a trace's top-level ops with GPU work of
/// (GPU, host) time, the decode loop's (every top-level op but the
/// prefill/mixed step annotations) and theirs.
struct PerToken {
    gpu: f64,
    host: f64,
    prefill_gpu: f64,
    prefill_host: f64,
}

fn per_token_ms(t: &TraceOps) -> Option<PerToken> {
    let tokens = t.completion_tokens.filter(|&n| n > 0)? as f64;
    let top = t.ops.iter().filter(|r| r.gpu_top_ns > 0);
    let sum = |pre: bool, f: fn(&super::OpRow) -> i64| -> f64 {
        let s: i64 = top
            .clone()
            .filter(|r| outside_decode(r) == pre)
            .map(f)
            .sum();
        s as f64 / tokens / 1e6
    };
    Some(PerToken {
        gpu: sum(false, |r| r.gpu_top_ns),
        host: sum(false, |r| r.host_ns),
        prefill_gpu: sum(true, |r| r.gpu_top_ns),
        prefill_host: sum(true, |r| r.host_ns),
    })
}

fn bars(t: &TraceOps, mode_label: &str, mode: &str) -> [StackedBar; 2] {
    let v = per_token_ms(t);
    let bar = |what: &str, values: Option<Vec<f64>>, ms: Option<f64>, below: String| StackedBar {
        label: format!("{mode_label} {what}"),
        mode: Some(mode.into()),
        values,
        top: ms.map_or_else(String::new, |m| format!("{m:.3} ms")),
        below,
    };
    let apart = |ms: Option<f64>| {
        ms.filter(|&m| m > 0.0)
            .map_or_else(String::new, |m| format!("prefill\n+{m:.3} ms"))
    };
    let v = v.as_ref();
    [
        bar(
            "GPU",
            v.map(|p| vec![p.gpu, 0.0]),
            v.map(|p| p.gpu),
            apart(v.map(|p| p.prefill_gpu)),
        ),
        bar(
            "host",
            v.map(|p| vec![0.0, p.host]),
            v.map(|p| p.host),
            apart(v.map(|p| p.prefill_host)),
        ),
    ]
}

/// Both verdicts, labelled (`AR: launch-bound · MTP: launch-bound`).
fn verdicts(r: &Row) -> Option<String> {
    let v = |t: &TraceOps| {
        t.summary
            .verdict
            .clone()
            .unwrap_or_else(|| "no verdict".into())
    };
    (r.ar.summary.verdict.is_some() || r.mtp.summary.verdict.is_some()).then(|| {
        format!(
            "AR: {} · {}: {}",
            v(r.ar),
            crate::runinfo::Mode::display(&r.m.candidate_mode),
            v(r.mtp)
        )
    })
}

/// Figure 10.
fn figure(rows: &[Row]) -> StackedBars {
    let groups = rows
        .iter()
        .map(|r| {
            let mut b: Vec<StackedBar> = bars(r.ar, "AR", "ar").into();
            let label = crate::runinfo::Mode::display(&r.m.candidate_mode);
            b.extend(bars(r.mtp, &label, &r.m.candidate_mode));
            BarGroup {
                name: r.m.workload.clone(),
                bars: b,
                note: verdicts(r),
            }
        })
        .collect();
    StackedBars {
        stem: FIGURE.into(),
        title: "Top-level ops of the decode loop: GPU time vs host time per generated token".into(),
        subtitle: "Σ over the top-level ops (outermost cpu_op/user_annotation) of GPU work and host time (CPU − sync) / tokens; prefill/mixed steps apart, under the bars".into(),
        y_desc: "time per generated token (ms)".into(),
        segments: vec![
            Segment {
                name: "GPU work of the top-level ops".into(),
                color: series_color(0),
            },
            Segment {
                name: "host time of the top-level ops".into(),
                color: series_color(1),
            },
        ],
        groups,
        empty: (
            "no top-level ops per token".into(),
            "needs completion-token counts and GPU work (see `torchtrace ops`)".into(),
        ),
    }
}

impl InBatch for Ops {
    const BATCH_FILES: &'static [&'static str] = &[CSV, super::graphs_batch::CSV];
    fn batch_section(c: &Campaign<'_>) -> Option<Section> {
        section(c)
    }

    /// The per-trace columns of traces.csv (`ops_verdict`,
    /// `ops_host_busy_per_gpu`, `ops_host_wait_share_of_idle`,
    /// `ops_launches_per_token`, `ops_short_gpu_launches_per_token`), then
    /// the graphs' (`ops_graph_replays`, … `ops_graph_speculator_share`).
    fn trace_columns(_: &[&Self::Output]) -> Vec<crate::views::Column<Self::Output>> {
        let mut v: Vec<_> = super::view::columns().into_iter().take(5).collect();
        v.extend(graphs_batch::columns());
        v
    }

    /// Inside the graphs of the pair (`ops.graphs`: each side's replays and
    /// GPU time per token by subsystem, modules and launcher ops); `null`
    /// where neither trace replays a graph or a side lacks ops' figures.
    fn batch_compare(
        b: Option<&TraceOps>,
        c: Option<&TraceOps>,
    ) -> Option<crate::campaign::Compared> {
        let graphs = b.zip(c).and_then(|(b, c)| graphs_batch::compare(b, c));
        Some(crate::campaign::Compared::nested(graphs_batch::Compared {
            graphs,
        }))
    }
}
