//! `hierarchy.csv` and `hierarchy.md`: Table 9 of the paper (chain
//! functions, AR against MTP) and the chain containment per trace.

use super::traces_csv::function;
use crate::analyses::hierarchy;
use crate::batch::BatchResult;
use crate::report::{Cell, Table};

/// Table 9 of the paper: per workload comparison and chain function,
/// calls and median inclusive duration in AR and MTP, and MTP/AR.
pub fn hierarchy_table(res: &BatchResult, machine: bool) -> Table {
    let heads: &[&str] = if machine {
        &[
            "workload",
            "baseline",
            "candidate",
            "candidate_mode",
            "function",
            "ar_calls",
            "ar_outermost_calls",
            "ar_calls_per_context",
            "ar_median_ms",
            "mtp_calls",
            "mtp_outermost_calls",
            "mtp_calls_per_context",
            "mtp_median_ms",
            "median_ratio_mtp_ar",
        ]
    } else {
        &[
            "Workload",
            "Function",
            "Calls AR",
            "Calls MTP",
            "Calls/ctx AR",
            "Calls/ctx MTP",
            "Median AR (ms)",
            "Median MTP (ms)",
            "MTP/AR",
        ]
    };
    let mut t = Table::new(
        "Table 9: chain functions, calls and median inclusive duration (outermost calls)",
        heads,
    );
    for c in &res.comparisons {
        let b = &res.records[c.baseline_index].file;
        let m = &res.records[c.candidate_index].file;
        let (Some(bh), Some(mh)) = (b.hierarchy(), m.hierarchy()) else {
            continue;
        };
        let cmp = hierarchy::compare(bh, mh);
        for fr in &cmp.functions {
            let (fa, fm) = (function(Some(bh), &fr.name), function(Some(mh), &fr.name));
            let mut row = vec![Cell::text(c.workload.clone())];
            if machine {
                row.push(Cell::text(b.path.clone()));
                row.push(Cell::text(m.path.clone()));
                row.push(Cell::text(c.candidate_mode.clone()));
            }
            row.push(Cell::text(fr.name.clone()));
            if machine {
                for f in [fa, fm] {
                    row.push(Cell::opt_i(f.map(|f| f.calls)));
                    row.push(Cell::opt_i(f.map(|f| f.outermost_calls)));
                    row.push(Cell::opt_f(f.and_then(|f| f.calls_per_context), 3));
                    row.push(Cell::opt_f(f.and_then(|f| f.median_ms), 3));
                }
            } else {
                row.push(Cell::opt_i(fa.map(|f| f.outermost_calls)));
                row.push(Cell::opt_i(fm.map(|f| f.outermost_calls)));
                row.push(Cell::opt_f(fa.and_then(|f| f.calls_per_context), 3));
                row.push(Cell::opt_f(fm.and_then(|f| f.calls_per_context), 3));
                row.push(Cell::opt_f(fa.and_then(|f| f.median_ms), 3));
                row.push(Cell::opt_f(fm.and_then(|f| f.median_ms), 3));
            }
            row.push(Cell::opt_f(fr.median_ratio, 3));
            t.row(row);
        }
    }
    if !machine {
        t.notes.push(
            "Calls are outermost calls (a function nested in itself counts once); calls/ctx per selected step context; \
             durations are inclusive (dur) medians over the outermost calls."
                .into(),
        );
    }
    t
}

/// Per trace and chain link: is every child inside a parent?
pub fn containment_table(res: &BatchResult) -> Table {
    let mut t = Table::new(
        "Chain containment per trace",
        &[
            "trace",
            "parent > child",
            "children",
            "contained",
            "uncontained",
            "parents without child",
            "holds",
        ],
    );
    for r in &res.records {
        let Some(h) = r.file.hierarchy() else {
            continue;
        };
        for l in h.chains.iter().flat_map(|c| &c.links) {
            t.row(vec![
                Cell::text(r.file.path.clone()),
                Cell::text(format!("{} > {}", l.parent, l.child)),
                l.children.into(),
                l.contained.into(),
                l.uncontained.into(),
                l.parents_without_child.into(),
                if l.holds { "yes" } else { "NO" }.into(),
            ]);
        }
    }
    t
}
