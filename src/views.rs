//! Views: how each analysis's results become [`Table`]s, one file per
//! analysis. A view holds the analysis's column list — machine key, human
//! label, cell — once, and every table of the subcommand (terminal table,
//! Markdown, CSV) and of `batch` (traces.csv, report.md) is cut from it,
//! as [`crate::stats::Summary::FIELDS`] does for statistics. JSON is the
//! results' serde form.
//!
//! A new analysis adds `views/<analysis>.rs` with its column list, its
//! report (the JSON document and its tables) and `write`.

use crate::report::{Cell, Table};
use crate::runinfo;
use std::path::Path;

/// One column of an analysis's results.
pub struct Column<T: ?Sized> {
    /// The machine name (CSV headers, `traces.csv`), snake_case.
    pub key: String,
    /// The human name (terminal and Markdown tables); `None`: machine
    /// tables only.
    pub label: Option<String>,
    /// Also in the subcommand's CSV (else only in `batch`'s traces.csv).
    pub csv: bool,
    /// Also in `batch`'s traces.csv.
    pub batch: bool,
    pub cell: Box<dyn Fn(&T) -> Cell + Send + Sync>,
}

impl<T: ?Sized> Column<T> {
    /// A column in every table, human label given.
    pub fn new(
        key: impl Into<String>,
        label: impl Into<String>,
        cell: impl Fn(&T) -> Cell + Send + Sync + 'static,
    ) -> Self {
        Column {
            key: key.into(),
            label: Some(label.into()),
            csv: true,
            batch: true,
            cell: Box::new(cell),
        }
    }

    /// Machine tables only (no human label).
    pub fn machine(mut self) -> Self {
        self.label = None;
        self
    }

    /// Only in `batch`'s traces.csv.
    pub fn batch_only(mut self) -> Self {
        self.csv = false;
        self.label = None;
        self
    }

    /// Not in `batch`'s traces.csv.
    pub fn not_batch(mut self) -> Self {
        self.batch = false;
        self
    }

    pub fn cell(&self, v: &T) -> Cell {
        (self.cell)(v)
    }
}

/// The column with this machine key (a view's own lists are fixed: a
/// missing key is a bug).
pub fn column<'a, T: ?Sized>(cols: &'a [Column<T>], key: &str) -> &'a Column<T> {
    cols.iter()
        .find(|c| c.key == key)
        .unwrap_or_else(|| panic!("no column {key}"))
}

/// Figures as rows, items as columns: one row per labelled column.
pub fn transposed<T>(table: &mut Table, cols: &[Column<T>], items: &[T]) {
    for c in cols {
        if let Some(label) = &c.label {
            let mut row = vec![Cell::text(label.clone())];
            row.extend(items.iter().map(|x| c.cell(x)));
            table.row(row);
        }
    }
}

/// A report's JSON with each trace's per-context rows added under
/// `per_context` (`rows`: one list per trace, in the report's order).
pub fn json_with_rows<R: serde::Serialize>(
    report: &impl serde::Serialize,
    rows: impl IntoIterator<Item = R>,
) -> serde_json::Value {
    let mut v = serde_json::to_value(report).unwrap_or_default();
    if let Some(arr) = v.get_mut("traces").and_then(|t| t.as_array_mut()) {
        for (j, r) in arr.iter_mut().zip(rows) {
            j["per_context"] = serde_json::to_value(r).unwrap_or_default();
        }
    }
    v
}

/// A short column label: the parent directory and the file's stem,
/// shortened in the middle when long.
pub fn short(path: &str) -> String {
    let stem = crate::text::ellipsize_middle(&runinfo::file_stem(path), 24);
    match Path::new(path).parent().and_then(|d| d.file_name()) {
        Some(dir) => format!("{}/{stem}", dir.to_string_lossy()),
        None => stem,
    }
}
