//! `traces.csv`: one row per input file, whatever became of it: the
//! fixed columns (the file and its run information), then each
//! analysis's own ([`crate::campaign::InBatch::trace_columns`], `NAME_key`, or
//! the key itself for the legacy columns of `pair` and `hierarchy`), in
//! registry order.

use crate::analysis::Results;
use crate::batch::BatchResult;
use crate::report::{Cell, Table};

/// `traces.csv`: one row per input file, whatever became of it.
pub fn traces_table(res: &BatchResult) -> Table {
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
    // The analyses' own columns (the registry hook), in registry order,
    // built once over every file's figures.
    let all: Vec<&Results> = res.records.iter().map(|r| &r.file.results).collect();
    let extra: Vec<_> = crate::registry::REGISTRY
        .iter()
        .filter_map(|e| e.trace_columns_fn())
        .map(|f| f(&all))
        .collect();
    for cols in &extra {
        heads.extend(cols.heads.iter().cloned());
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
        for cols in &extra {
            row.extend(cols.cells(&f.results));
        }
        t.row(row);
    }
    t
}
