//! `traces.csv`: one row per input file, whatever became of it; the pair
//! and chain-function columns are those of the views, then each analysis's
//! own ([`crate::api::Command::trace_columns`], `NAME_key`).

use crate::analyses::hierarchy::{FunctionStats, TraceHierarchy};
use crate::batch::BatchResult;
use crate::report::{Cell, Table};
use crate::views::Column;

/// The distinct chain functions over all traces, in chain order.
pub fn function_names(res: &BatchResult) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for h in res.records.iter().filter_map(|r| r.file.hierarchy()) {
        for f in h.chains.iter().flat_map(|c| &c.functions) {
            if !names.contains(&f.name) {
                names.push(f.name.clone());
            }
        }
    }
    names
}

/// A chain function's figures in a trace.
pub fn function<'a>(h: Option<&'a TraceHierarchy>, name: &str) -> Option<&'a FunctionStats> {
    h?.chains
        .iter()
        .flat_map(|c| &c.functions)
        .find(|f| f.name == name)
}

/// `traces.csv`: one row per input file, whatever became of it.
pub fn traces_table(res: &BatchResult) -> Table {
    let pcols = crate::analyses::pair::view::batch_columns();
    let hcols: Vec<Column<FunctionStats>> = crate::analyses::hierarchy::view::function_columns()
        .into_iter()
        .filter(|c| c.batch)
        .collect();
    let mut heads: Vec<String> = [
        "path",
        "kind",
        "status",
        "error",
        "mode",
        "mode_source",
        "workload",
        "workload_source",
        "speculative_depth",
        "size_bytes",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    heads.extend(pcols.iter().map(|c| c.key.clone()));
    let pair_cols = heads.len();
    let fnames = function_names(res);
    heads.extend(
        ["hierarchy_holds", "hierarchy_uncontained"]
            .iter()
            .map(|s| s.to_string()),
    );
    for n in &fnames {
        heads.extend(hcols.iter().map(|c| format!("{}[{n}]", c.key)));
    }
    let hier_end = heads.len();
    // The analyses' own columns (the registry hook), in registry order.
    let extra: Vec<_> = crate::analyses::REGISTRY
        .iter()
        .filter_map(|e| e.trace_columns_fn())
        .collect();
    for (h, _) in &extra {
        heads.extend(h());
    }
    let mut t = Table {
        title: "traces".into(),
        headers: heads,
        ..Default::default()
    };
    let text = |s: Option<&str>| s.map_or(Cell::Null, Cell::text);
    for r in &res.records {
        let f = &r.file;
        let mut row = vec![
            Cell::text(f.path.clone()),
            f.kind.as_str().into(),
            f.status.as_str().into(),
            text(f.error.as_deref()),
            text(r.run.mode()),
            text(r.run.mode.as_ref().map(|m| m.source.kind())),
            text(r.run.workload()),
            text(r.run.workload.as_ref().map(|w| w.source.kind())),
            Cell::opt_i(r.run.speculative_depth),
            f.size.into(),
        ];
        match f.pairs() {
            Some(p) => row.extend(pcols.iter().map(|c| c.cell(p))),
            None => row.resize(pair_cols, Cell::Null),
        }
        match f.hierarchy() {
            Some(h) => {
                row.push(h.holds().to_string().into());
                row.push(
                    h.chains
                        .iter()
                        .flat_map(|c| &c.links)
                        .map(|l| l.uncontained)
                        .sum::<u64>()
                        .into(),
                );
                for n in &fnames {
                    match function(Some(h), n) {
                        Some(f) => row.extend(hcols.iter().map(|c| c.cell(f))),
                        None => row.extend(hcols.iter().map(|_| Cell::Null)),
                    }
                }
            }
            None => row.resize(hier_end, Cell::Null),
        }
        for (_, cells) in &extra {
            row.extend(cells(&f.results));
        }
        t.row(row);
    }
    t
}
