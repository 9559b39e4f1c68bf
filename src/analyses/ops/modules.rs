//! `ops --by module` (issue 57): the GPU time of the graph replays grouped
//! by the `nn.Module` path that captured it — the module frames around
//! each captured launch's launcher in the capture trace, outermost first
//! (`graphs::capture`), with the launcher ops inside each module. Eager ops
//! (launched outside a graph) keep their rows in `--by op`: the worker
//! trace's own stacks are not read for this view.
//!
//! Every figure is a sum over `graphs.by_module` (per subsystem, module
//! path and launcher op), so Σ over the modules = `graphs.gpu_graph_ns`.

use super::exact::ratio6;
use super::TraceOps;
use crate::report::{Cell, Table};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How `ops` groups its rows (`--by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// One row per host op (O1).
    #[default]
    Op,
    /// The graph replays' GPU time by the module path that captured it.
    Module,
}

/// A launcher op inside a module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleOpRow {
    pub cat: Option<String>,
    pub op: Option<String>,
    pub activities: u64,
    pub gpu_graph_ns: i64,
}

/// One module path of one subsystem in one trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleRow {
    pub path: String,
    pub subsystem: String,
    /// The `nn.Module` path, outermost first; empty when no module frame
    /// held the captured launches.
    pub module: String,
    pub activities: u64,
    pub gpu_graph_ns: i64,
    /// Of the trace's attributed graph GPU time (exact, 6 decimals).
    pub share: Option<f64>,
    /// Per completion token (exact, 6 decimals), when tokens are known.
    pub gpu_graph_per_token_ns: Option<f64>,
    /// Its launcher ops, by GPU ns (desc).
    pub ops: Vec<ModuleOpRow>,
}

/// A trace's module rows, by GPU ns (desc), then subsystem and module.
pub fn rows(t: &TraceOps) -> Vec<ModuleRow> {
    let mut by: BTreeMap<(&str, &str), ModuleRow> = BTreeMap::new();
    for e in &t.graphs.by_module {
        let r = by
            .entry((e.subsystem.as_str(), e.module.as_str()))
            .or_insert_with(|| ModuleRow {
                path: t.path.clone(),
                subsystem: e.subsystem.clone(),
                module: e.module.clone(),
                activities: 0,
                gpu_graph_ns: 0,
                share: None,
                gpu_graph_per_token_ns: None,
                ops: Vec::new(),
            });
        r.activities += e.activities;
        r.gpu_graph_ns = r.gpu_graph_ns.saturating_add(e.gpu_graph_ns);
        // `by_module` is in GPU-ns order: so are a module's ops.
        r.ops.push(ModuleOpRow {
            cat: e.cat.clone(),
            op: e.op.clone(),
            activities: e.activities,
            gpu_graph_ns: e.gpu_graph_ns,
        });
    }
    let total = i128::from(t.graphs.gpu_graph_ns);
    let tokens = t.completion_tokens.filter(|&n| n > 0);
    let mut v: Vec<ModuleRow> = by
        .into_values()
        .map(|mut r| {
            r.share = ratio6(i128::from(r.gpu_graph_ns), total);
            r.gpu_graph_per_token_ns =
                tokens.and_then(|n| ratio6(i128::from(r.gpu_graph_ns), i128::from(n)));
            r
        })
        .collect();
    v.sort_by_key(|r| std::cmp::Reverse(r.gpu_graph_ns));
    v
}

fn op_name(o: &ModuleOpRow) -> String {
    o.op.clone().unwrap_or_else(|| super::NO_OP.to_string())
}

/// The top `top` module rows of a trace and one row summing the rest.
pub fn table(t: &TraceOps, label: &str, top: usize) -> Table {
    let mut table = Table::new(
        format!("Inside the graphs of {label}: GPU time by module (top {top})"),
        &[
            "subsystem",
            "module",
            "activities",
            "gpu_graph_ns",
            "share (%)",
            "per token (ns)",
            "top launcher ops (ns)",
        ],
    );
    let rows = rows(t);
    for r in rows.iter().take(top) {
        let ops: Vec<String> = r
            .ops
            .iter()
            .take(3)
            .map(|o| format!("{} {}", op_name(o), o.gpu_graph_ns))
            .collect();
        table.row(vec![
            r.subsystem.clone().into(),
            Cell::text(crate::text::ellipsize_middle(
                if r.module.is_empty() {
                    "(no module)"
                } else {
                    &r.module
                },
                70,
            )),
            r.activities.into(),
            Cell::Int(r.gpu_graph_ns),
            Cell::opt_f(r.share.map(|s| s * 100.0), 1),
            Cell::opt_f(r.gpu_graph_per_token_ns, 1),
            Cell::text(ops.join(", ")),
        ]);
    }
    let rest = &rows[rows.len().min(top)..];
    if !rest.is_empty() {
        let ns = rest
            .iter()
            .fold(0i64, |a, r| a.saturating_add(r.gpu_graph_ns));
        table.row(vec![
            Cell::Null,
            Cell::text(format!("({} other modules)", rest.len())),
            rest.iter().map(|r| r.activities).sum::<u64>().into(),
            Cell::Int(ns),
            Cell::Null,
            Cell::Null,
            Cell::Null,
        ]);
    }
    let g = &t.graphs;
    table.notes.push(format!(
        "{} of {} graph replays attributed ({} matched{}, {} ambiguous and attributed), {} GPU activities, {} ns; module = the nn.Module frames around the captured launch in the capture trace, outermost first",
        g.replays_matched + g.replays_ambiguous_attributed,
        g.replays,
        g.replays_matched,
        g.with_differences_said(),
        g.replays_ambiguous_attributed,
        g.graph_activities,
        g.gpu_graph_ns
    ));
    if g.replays == 0 {
        table
            .notes
            .push("no graph replay in this trace: nothing to group by module".into());
    } else if g.gpu_graph_ns == 0 {
        table.notes.push(format!(
            "no replay attributed ({}): see -f json's graphs.unmatched",
            g.unmatched
                .first()
                .map_or("not matched", |u| u.reason.as_str())
        ));
    }
    table
}

/// The CSV rows: one per (trace, subsystem, module, launcher op).
pub fn csv(traces: &[TraceOps]) -> Table {
    let mut t = Table::new(
        "ops_modules",
        &[
            "path",
            "subsystem",
            "module",
            "module_activities",
            "module_gpu_graph_ns",
            "module_share",
            "module_gpu_graph_per_token_ns",
            "cat",
            "op",
            "activities",
            "gpu_graph_ns",
        ],
    );
    for x in traces {
        for r in rows(x) {
            for o in &r.ops {
                t.row(vec![
                    r.path.clone().into(),
                    r.subsystem.clone().into(),
                    r.module.clone().into(),
                    r.activities.into(),
                    Cell::Int(r.gpu_graph_ns),
                    Cell::opt_f(r.share, 6),
                    Cell::opt_f(r.gpu_graph_per_token_ns, 6),
                    o.cat.clone().map_or(Cell::Null, Cell::Text),
                    o.op.clone().map_or(Cell::Null, Cell::Text),
                    o.activities.into(),
                    Cell::Int(o.gpu_graph_ns),
                ]);
            }
        }
    }
    t
}
