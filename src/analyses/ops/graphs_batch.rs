//! `ops`' "Inside the graphs" in `batch` (issue 57): for each matched AR/MTP
//! pair, each side's graph replays (matched, ambiguous, unmatched, with the
//! first reason), the GPU time of the attributed replays per completion
//! token, by subsystem (decoder, speculator: the drafter's share of the
//! graph GPU time and its time per token), and the modules and launcher ops
//! inside the graphs per token, AR beside MTP: report.md's section,
//! `graphs.csv`, the comparison's figures in results.json
//! (`ops.graphs`), and traces.csv's `ops_graph_*` columns.
//!
//! Every figure comes from `ops`' `graphs` block ([`crate::graphs::GraphsSummary`],
//! its `by_subsystem` and `by_module`), divided by the trace's completion
//! tokens, the count every per-token figure of the campaign uses.

use super::exact::ratio6;
use super::{TraceOps, NO_OP};
use crate::campaign::Match;
use crate::report::{self, Cell, Table};
use crate::views::Column;
use serde::Serialize;
use std::collections::BTreeMap;

/// The CSV file the section writes.
pub const CSV: &str = "graphs.csv";
/// Rows per workload in the report's module and op tables.
pub const TOP: usize = 8;
/// The drafter's subsystem (vLLM's capture of the speculator's graphs).
const SPECULATOR: &str = "speculator";
const DECODER: &str = "decoder";

/// One trace's graph replays and their attributed GPU time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphSide {
    pub path: String,
    pub completion_tokens: Option<u64>,
    /// Capture files read.
    pub captures: u64,
    pub regions: u64,
    pub replays: u64,
    pub replays_matched: u64,
    pub replays_ambiguous: u64,
    pub replays_unmatched: u64,
    /// Matched with differences (also in `replays_matched`).
    pub replays_with_differences: u64,
    /// The first reason a replay was not matched exactly.
    pub first_unmatched: Option<String>,
    /// Every replayed activity and their GPU ns; the attributed ones are
    /// `graph_activities` and `gpu_graph_ns` (the coverage).
    pub replayed_activities: u64,
    pub replayed_gpu_ns: i64,
    pub graph_activities: u64,
    /// GPU ns of the attributed replays' activities, and per token.
    pub gpu_graph_ns: i64,
    pub gpu_graph_per_token_ns: Option<f64>,
    pub decoder_ns: i64,
    pub decoder_per_token_ns: Option<f64>,
    /// The drafter's (speculator's) graphs.
    pub speculator_ns: i64,
    pub speculator_per_token_ns: Option<f64>,
    /// speculator_ns / gpu_graph_ns (exact, 6 decimals).
    pub speculator_share: Option<f64>,
}

/// One module path (or launcher op) of a subsystem on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NamePair {
    pub subsystem: String,
    pub name: String,
    pub baseline_ns: Option<i64>,
    pub candidate_ns: Option<i64>,
    pub baseline_per_token_ns: Option<f64>,
    pub candidate_per_token_ns: Option<f64>,
}

/// Inside the graphs of a matched AR/MTP pair: `results.json`'s
/// `ops.graphs` of the comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphsComparison {
    pub baseline: GraphSide,
    pub candidate: GraphSide,
    /// By (subsystem, module path without instance numbers:
    /// [`module_class`]), by the larger side's GPU ns (desc).
    pub modules: Vec<NamePair>,
    /// By (subsystem, launcher op), the same order.
    pub ops: Vec<NamePair>,
}

/// `ops`' figures in a comparison of `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compared {
    pub graphs: Option<GraphsComparison>,
}

/// `ns / tokens` (exact, 6 decimals); `None` without tokens.
fn per_token(ns: i64, tokens: Option<u64>) -> Option<f64> {
    let t = tokens.filter(|&t| t > 0)?;
    ratio6(i128::from(ns), i128::from(t))
}

fn subsystem_ns(t: &TraceOps, sub: &str) -> i64 {
    t.graphs.by_subsystem.get(sub).map_or(0, |s| s.gpu_graph_ns)
}

/// A trace's side.
pub fn side(t: &TraceOps) -> GraphSide {
    let g = &t.graphs;
    // Per-token figures only of what was attributed: a trace whose
    // replays matched nothing has no graph time per token (not 0), and a
    // trace without a drafter no drafter figures.
    let attributed = g.replays_matched + g.replays_ambiguous_attributed > 0;
    let tokens = t.completion_tokens.filter(|_| attributed);
    let (dec, spec) = (subsystem_ns(t, DECODER), subsystem_ns(t, SPECULATOR));
    let drafter = g.by_subsystem.contains_key(SPECULATOR);
    GraphSide {
        path: t.path.clone(),
        completion_tokens: tokens,
        captures: g.captures.len() as u64,
        regions: g.regions,
        replays: g.replays,
        replays_matched: g.replays_matched,
        replays_ambiguous: g.replays_ambiguous,
        replays_unmatched: g.replays_unmatched,
        replays_with_differences: g.replays_with_differences,
        replayed_activities: g.replayed_activities,
        replayed_gpu_ns: g.replayed_gpu_ns,
        graph_activities: g.graph_activities,
        first_unmatched: g
            .unmatched
            .iter()
            .find(|u| u.status == "unmatched")
            .map(|u| u.reason.clone()),
        gpu_graph_ns: g.gpu_graph_ns,
        gpu_graph_per_token_ns: per_token(g.gpu_graph_ns, tokens),
        decoder_ns: dec,
        decoder_per_token_ns: per_token(dec, tokens),
        speculator_ns: spec,
        speculator_per_token_ns: per_token(spec, tokens.filter(|_| drafter)),
        speculator_share: ratio6(i128::from(spec), i128::from(g.gpu_graph_ns)).filter(|_| drafter),
    }
}

type Key = (String, String);

/// A module path with torch's instance numbers dropped from each frame
/// (`ToyForCausalLM_0/DecoderLayer_1/Linear_7` →
/// `ToyForCausalLM/DecoderLayer/Linear`: torch names a module frame
/// `nn.Module: <class>_<n>`), so every layer's same module is one row.
pub fn module_class(path: &str) -> String {
    if path.is_empty() {
        return "(no module)".to_string();
    }
    path.split('/')
        .map(|f| match f.rsplit_once('_') {
            Some((class, n))
                if !class.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) =>
            {
                class
            }
            _ => f,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A trace's attributed GPU ns by (subsystem, module path) or (subsystem,
/// launcher op).
fn by(t: &TraceOps, module: bool) -> BTreeMap<Key, i64> {
    let mut m: BTreeMap<Key, i64> = BTreeMap::new();
    for e in &t.graphs.by_module {
        let name = if module {
            module_class(&e.module)
        } else {
            e.op.clone().unwrap_or_else(|| NO_OP.to_string())
        };
        let v = m.entry((e.subsystem.clone(), name)).or_default();
        *v = v.saturating_add(e.gpu_graph_ns);
    }
    m
}

fn pairs(a: &TraceOps, b: &TraceOps, module: bool) -> Vec<NamePair> {
    let (x, y) = (by(a, module), by(b, module));
    let keys: std::collections::BTreeSet<&Key> = x.keys().chain(y.keys()).collect();
    let mut v: Vec<NamePair> = keys
        .into_iter()
        .map(|k| {
            let (p, q) = (x.get(k).copied(), y.get(k).copied());
            NamePair {
                subsystem: k.0.clone(),
                name: k.1.clone(),
                baseline_ns: p,
                candidate_ns: q,
                baseline_per_token_ns: p.and_then(|n| per_token(n, a.completion_tokens)),
                candidate_per_token_ns: q.and_then(|n| per_token(n, b.completion_tokens)),
            }
        })
        .collect();
    // Stable: the keys' order breaks ties.
    v.sort_by_key(|p| {
        std::cmp::Reverse(p.baseline_ns.unwrap_or(0).max(p.candidate_ns.unwrap_or(0)))
    });
    v
}

/// The comparison of an AR trace (baseline) with a trace of another mode;
/// `None` when neither replays a graph.
pub fn compare(a: &TraceOps, b: &TraceOps) -> Option<GraphsComparison> {
    (a.graphs.replays > 0 || b.graphs.replays > 0).then(|| GraphsComparison {
        baseline: side(a),
        candidate: side(b),
        modules: pairs(a, b, true),
        ops: pairs(a, b, false),
    })
}

/// µs with 3 decimals from ns per token.
fn us(v: Option<f64>) -> Cell {
    Cell::opt_f(v.map(|n| n / 1e3), 3)
}

fn share(v: Option<f64>) -> Cell {
    Cell::opt_f(v.map(|s| s * 100.0), 1)
}

/// A mode's label (`AR`, `MTP`).
fn label(mode: &str) -> String {
    crate::runinfo::Mode::display(mode)
}

/// A matched pair whose traces replay graphs: both sides and their
/// comparison.
pub(super) struct Row<'c> {
    pub m: &'c Match,
    pub ar: &'c TraceOps,
    pub mtp: &'c TraceOps,
    pub c: GraphsComparison,
}

/// The section's Markdown, CSV text and the answer's lines; `None` when
/// no match replays a graph.
pub(super) fn section(rows: &[Row<'_>]) -> Option<(String, Option<String>, String)> {
    if rows.is_empty() {
        return None;
    }
    let mut md = report::markdown::section(&replays_table(rows), "##");
    md.push_str(
        "\nA graph replay (`cudaGraphLaunch`) runs N GPU activities without a CPU op each; `ops` reads the capture \
         traces beside each worker trace (`capture_traces/`) and matches each replay exactly to a captured region \
         (same count, kind and order; the step's scheduled tokens pick the batch size; where the capture names \
         its kernels, a replay ≥ 99 % aligned to one is matched with its differences listed), so every replayed \
         activity gets the op, module and subsystem that captured it. Per token = / completion tokens. Decoder = \
         the target model's graphs, drafter = the speculator's (vLLM's speculator captures).\n\n",
    );
    for r in rows {
        md.push_str(&format!("- {}\n", said(r.m, &r.c)));
    }
    let with: Vec<&Row<'_>> = rows
        .iter()
        .filter(|r| r.c.baseline.gpu_graph_ns > 0 || r.c.candidate.gpu_graph_ns > 0)
        .collect();
    if !with.is_empty() {
        md.push_str(&format!("\nCSV: [{CSV}]({CSV}) (every subsystem, module path and launcher op of each trace).\n\n"));
        md.push_str(&report::markdown::section(&names_table(&with, true), "###"));
        md.push('\n');
        md.push_str(&report::markdown::section(
            &names_table(&with, false),
            "###",
        ));
    }
    let lead = with
        .iter()
        .map(|r| lead(r.m, &r.c))
        .collect::<Vec<_>>()
        .concat();
    let csv = (!with.is_empty()).then(|| report::csv::to_string(&csv_table(rows)));
    Some((md, csv, lead))
}

fn replays_table(rows: &[Row<'_>]) -> Table {
    let mut t = Table::new(
        "Inside the graphs: graph replays and their GPU time per token, AR vs MTP per workload (ops, capture traces)",
        &[
            "Workload",
            "Mode",
            "Capture files",
            "Graph replays",
            "Matched",
            "Ambiguous",
            "Unmatched",
            "Graph GPU/token (µs)",
            "Decoder/token (µs)",
            "Drafter/token (µs)",
            "Drafter share of graph GPU (%)",
        ],
    );
    for Row { m, c, .. } in rows {
        for (mode, s) in [
            ("ar", &c.baseline),
            (m.candidate_mode.as_str(), &c.candidate),
        ] {
            t.row(vec![
                m.workload.clone().into(),
                label(mode).into(),
                s.captures.into(),
                s.replays.into(),
                s.replays_matched.into(),
                s.replays_ambiguous.into(),
                s.replays_unmatched.into(),
                us(s.gpu_graph_per_token_ns),
                us(s.decoder_per_token_ns),
                us(s.speculator_per_token_ns),
                share(s.speculator_share),
            ]);
        }
    }
    t
}

/// One line per pair: what was attributed, or why nothing was.
fn said(m: &Match, c: &GraphsComparison) -> String {
    let cand = label(&m.candidate_mode);
    let (a, b) = (&c.baseline, &c.candidate);
    let w = report::markdown::escape(&m.workload);
    if a.gpu_graph_ns == 0 && b.gpu_graph_ns == 0 {
        let why = a
            .first_unmatched
            .as_deref()
            .or(b.first_unmatched.as_deref())
            .unwrap_or("not matched");
        return format!(
            "**{w}**: {} AR and {} {cand} graph replays, none attributed ({}): no capture traces beside these \
             traces, so their GPU time stays under the graph launch (record them with vLLM's \
             `--profiler-config.capture_torch_profiler_dir`).",
            a.replays,
            b.replays,
            report::markdown::escape(why)
        );
    }
    let f = |v: Option<f64>| v.map_or("—".to_string(), |n| format!("{:.3}", n / 1e3));
    let mut s = format!(
        "**{w}**: graph GPU time per token AR {} µs, {cand} {} µs (decoder AR {} µs, {cand} {} µs); \
         {cand}'s drafter (speculator graphs) {} µs per token, {} of its graph GPU time.",
        f(a.gpu_graph_per_token_ns),
        f(b.gpu_graph_per_token_ns),
        f(a.decoder_per_token_ns),
        f(b.decoder_per_token_ns),
        f(b.speculator_per_token_ns),
        b.speculator_share
            .map_or("—".to_string(), |x| format!("{:.1} %", x * 100.0)),
    );
    let left = a.replays - a.replays_matched + b.replays - b.replays_matched;
    let coverage = |x: &GraphSide| {
        format!(
            "{} of {} replayed activities ({:.1} % of their GPU time)",
            x.graph_activities,
            x.replayed_activities,
            if x.replayed_gpu_ns > 0 {
                x.gpu_graph_ns as f64 * 100.0 / x.replayed_gpu_ns as f64
            } else {
                0.0
            }
        )
    };
    if a.graph_activities < a.replayed_activities || b.graph_activities < b.replayed_activities {
        s.push_str(&format!(
            " Attributed to captured ops: AR {}, {cand} {}.",
            coverage(a),
            coverage(b)
        ));
    }
    let differ = a.replays_with_differences + b.replays_with_differences;
    if differ > 0 {
        s.push_str(&format!(
            " {differ} replays matched with differences from their capture (listed in `torchtrace ops -f json`'s `graphs.differences`)."
        ));
    }
    if left > 0 {
        s.push_str(&format!(
            " {left} replays not matched exactly (AR {} ambiguous, {} unmatched; {cand} {}, {}): see `torchtrace ops -f json`'s `graphs`.",
            a.replays_ambiguous, a.replays_unmatched, b.replays_ambiguous, b.replays_unmatched
        ));
    }
    s
}

/// The answer's line for a pair with attributed graphs: the drafter's
/// share and the top module per token on each side.
fn lead(m: &Match, c: &GraphsComparison) -> String {
    let cand = label(&m.candidate_mode);
    let top = |base: bool| {
        c.modules
            .iter()
            .filter(|p| p.subsystem == DECODER)
            .max_by(|x, y| {
                let v = |p: &NamePair| if base { p.baseline_ns } else { p.candidate_ns };
                v(x).cmp(&v(y)).then_with(|| y.name.cmp(&x.name))
            })
            .and_then(|p| {
                let v = if base {
                    p.baseline_per_token_ns
                } else {
                    p.candidate_per_token_ns
                };
                v.map(|n| format!("`{}` {:.3} µs", p.name, n / 1e3))
            })
            .unwrap_or_else(|| "—".into())
    };
    format!(
        "- **{}** inside the graphs: {cand}'s drafter (speculator graphs) takes {} of its graph GPU time, {} µs per token; the top decoder module per token is AR {}, {cand} {} (\"Inside the graphs\" below).\n",
        report::markdown::escape(&m.workload),
        c.candidate
            .speculator_share
            .map_or("—".to_string(), |x| format!("{:.1} %", x * 100.0)),
        c.candidate
            .speculator_per_token_ns
            .map_or("—".to_string(), |n| format!("{:.3}", n / 1e3)),
        top(true),
        top(false),
    )
}

/// MTP − AR per token of one module or op: a side without it counts 0
/// only where that side's per-token figures are known (its tokens, its
/// replays attributed); a side unknown (refused, unmatched, no tokens)
/// leaves the difference unknown, never −AR.
fn difference(p: &NamePair, c: &GraphsComparison) -> Option<f64> {
    let known = |v: Option<f64>, side: &GraphSide| {
        v.or_else(|| side.completion_tokens.filter(|&t| t > 0).map(|_| 0.0))
    };
    let ar = known(p.baseline_per_token_ns, &c.baseline)?;
    let mtp = known(p.candidate_per_token_ns, &c.candidate)?;
    Some(mtp - ar)
}

/// The top modules (or launcher ops) inside the graphs per token.
fn names_table(rows: &[&Row<'_>], modules: bool) -> Table {
    let what = if modules { "modules" } else { "launcher ops" };
    let mut t = Table::new(
        format!("Top {what} inside the graphs per token, AR vs MTP (µs per completion token)"),
        &[
            "Workload",
            "Subsystem",
            if modules { "Module" } else { "Launcher op" },
            "AR/token (µs)",
            "MTP/token (µs)",
            "MTP − AR (µs)",
        ],
    );
    for Row { m, c, .. } in rows.iter().copied() {
        let list = if modules { &c.modules } else { &c.ops };
        for p in list.iter().take(TOP) {
            let diff = difference(p, c);
            t.row(vec![
                m.workload.clone().into(),
                p.subsystem.clone().into(),
                Cell::text(crate::text::ellipsize_middle(&p.name, 70)),
                us(p.baseline_per_token_ns),
                us(p.candidate_per_token_ns),
                us(diff),
            ]);
        }
        if list.len() > TOP {
            t.notes.push(format!(
                "{}: {} more {what} in {CSV}",
                m.workload,
                list.len() - TOP
            ));
        }
    }
    t.notes.push(if modules {
        "module = the nn.Module frames around the captured launch in the capture trace, outermost first, torch's instance numbers dropped (every layer's same module summed; graphs.csv has the full paths); per token = the replayed activities' GPU ns / completion tokens".into()
    } else {
        "launcher op = the innermost op holding the captured launch in the capture trace (O2); per token = the replayed activities' GPU ns / completion tokens".into()
    });
    t
}

/// `graphs.csv`: per pair and side, one row per (subsystem, module path,
/// launcher op) with its activities and GPU ns, and per token.
fn csv_table(rows: &[Row<'_>]) -> Table {
    let mut t = Table::new(
        "graphs",
        &[
            "workload",
            "mode",
            "trace",
            "completion_tokens",
            "subsystem",
            "module",
            "cat",
            "op",
            "activities",
            "gpu_graph_ns",
            "gpu_graph_per_token_ns",
        ],
    );
    for r in rows {
        csv_rows(&mut t, &r.m.workload, "ar", r.ar);
        csv_rows(&mut t, &r.m.workload, &r.m.candidate_mode, r.mtp);
    }
    t
}

/// `graphs.csv`'s rows of one trace.
fn csv_rows(t: &mut Table, workload: &str, mode: &str, x: &TraceOps) {
    for e in &x.graphs.by_module {
        t.row(vec![
            workload.into(),
            mode.into(),
            x.path.clone().into(),
            Cell::opt_i(x.completion_tokens),
            e.subsystem.clone().into(),
            e.module.clone().into(),
            e.cat.clone().map_or(Cell::Null, Cell::Text),
            e.op.clone().map_or(Cell::Null, Cell::Text),
            e.activities.into(),
            Cell::Int(e.gpu_graph_ns),
            Cell::opt_f(per_token(e.gpu_graph_ns, x.completion_tokens), 6),
        ]);
    }
}

/// traces.csv's columns (`ops_graph_*`).
pub fn columns() -> Vec<Column<TraceOps>> {
    let col = |k: &str, l: &str, f: fn(&GraphSide) -> Cell| {
        Column::new(k, l, move |t: &TraceOps| f(&side(t)))
    };
    vec![
        col("graph_replays", "graph replays", |s| s.replays.into()),
        col("graph_replays_matched", "graph replays matched", |s| {
            s.replays_matched.into()
        }),
        col("graph_replays_ambiguous", "graph replays ambiguous", |s| {
            s.replays_ambiguous.into()
        }),
        col("graph_replays_unmatched", "graph replays unmatched", |s| {
            s.replays_unmatched.into()
        }),
        col("gpu_graph_ns", "graph GPU (ns)", |s| {
            Cell::Int(s.gpu_graph_ns)
        }),
        col("gpu_graph_per_token_ns", "graph GPU per token (ns)", |s| {
            Cell::opt_f(s.gpu_graph_per_token_ns, 6)
        }),
        col("graph_speculator_ns", "drafter graph GPU (ns)", |s| {
            Cell::Int(s.speculator_ns)
        }),
        col(
            "graph_speculator_share",
            "drafter share of graph GPU",
            |s| Cell::opt_f(s.speculator_share, 6),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::{difference, module_class, GraphSide, GraphsComparison, NamePair};

    fn side(tokens: Option<u64>) -> GraphSide {
        GraphSide {
            path: String::new(),
            completion_tokens: tokens,
            captures: 0,
            regions: 0,
            replays: 0,
            replays_matched: 0,
            replays_ambiguous: 0,
            replays_unmatched: 0,
            replays_with_differences: 0,
            first_unmatched: None,
            replayed_activities: 0,
            replayed_gpu_ns: 0,
            graph_activities: 0,
            gpu_graph_ns: 0,
            gpu_graph_per_token_ns: None,
            decoder_ns: 0,
            decoder_per_token_ns: None,
            speculator_ns: 0,
            speculator_per_token_ns: None,
            speculator_share: None,
        }
    }

    /// Unknown stays unknown: a module AR has (2 µs a token) and MTP
    /// lacks is −2 µs only where MTP's figures are known; where MTP was
    /// refused or matched nothing (no tokens) the difference is unknown,
    /// not a fake saving of −2 µs.
    #[test]
    fn a_side_unknown_leaves_the_difference_unknown() {
        let p = NamePair {
            subsystem: "decoder".into(),
            name: "Linear".into(),
            baseline_ns: Some(136_000),
            candidate_ns: None,
            baseline_per_token_ns: Some(2_000.0),
            candidate_per_token_ns: None,
        };
        let pair = |mtp: Option<u64>| GraphsComparison {
            baseline: side(Some(68)),
            candidate: side(mtp),
            modules: Vec::new(),
            ops: Vec::new(),
        };
        assert_eq!(difference(&p, &pair(Some(68))), Some(-2_000.0));
        assert_eq!(difference(&p, &pair(None)), None);
        let both = NamePair {
            candidate_per_token_ns: Some(2_500.0),
            ..p.clone()
        };
        assert_eq!(difference(&both, &pair(Some(68))), Some(500.0));
    }

    /// Real module paths of `sample_traces/text_graphs_mtp/`'s captures
    /// (torch's `nn.Module: <class>_<n>` frames), and names that keep
    /// their suffix (not `_<digits>`).
    #[test]
    fn instance_numbers_are_dropped_from_each_frame() {
        assert_eq!(
            module_class("ToyForCausalLM_0/DecoderLayer_1/Linear_7"),
            "ToyForCausalLM/DecoderLayer/Linear"
        );
        assert_eq!(module_class("Linear_5"), "Linear");
        assert_eq!(module_class(""), "(no module)");
        assert_eq!(module_class("Foo_bar/_3/x_"), "Foo_bar/_3/x_");
    }
}
