//! Output formats. Analyses describe their results as [`Table`]s (for
//! `table`, `markdown` and `csv`) and as a serde value (for `json`); each
//! format lives in its own file.

pub mod csv;
pub mod json;
pub mod markdown;
pub mod table;

use serde::Serialize;
use std::io::{self, Write};

/// Output formats of the reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Aligned text for the terminal.
    #[default]
    Table,
    /// Everything, full precision.
    Json,
    /// Comma-separated values (tables separated by a blank line).
    Csv,
    /// GitHub-flavoured Markdown tables.
    Markdown,
}

/// One cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    Int(i64),
    /// A wide integer: a sum of ns that can pass i64 (issue 59), shown
    /// exactly.
    Wide(i128),
    /// A float shown with the given number of decimals in tables (CSV keeps full precision).
    Float(f64, usize),
    Null,
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    pub fn opt_f(v: Option<f64>, decimals: usize) -> Cell {
        v.map_or(Cell::Null, |x| Cell::Float(x, decimals))
    }

    /// An exact sum: `Int` when it fits i64, else `Wide`.
    pub fn wide(v: i128) -> Cell {
        i64::try_from(v).map_or(Cell::Wide(v), Cell::Int)
    }

    pub fn opt_i(v: Option<u64>) -> Cell {
        v.map_or(Cell::Null, |x| Cell::Int(x as i64))
    }

    /// For human formats: rounded, `—` for missing.
    pub fn display(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Int(i) => i.to_string(),
            Cell::Wide(i) => i.to_string(),
            Cell::Float(f, d) => format!("{f:.*}", d),
            Cell::Null => "—".into(),
        }
    }

    /// For machine formats: full precision, empty for missing.
    pub fn raw(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Int(i) => i.to_string(),
            Cell::Wide(i) => i.to_string(),
            Cell::Float(f, _) => machine_float(*f),
            Cell::Null => String::new(),
        }
    }

    pub fn is_numeric(&self) -> bool {
        matches!(self, Cell::Int(_) | Cell::Wide(_) | Cell::Float(..))
    }
}

/// A float for CSV: 15 significant digits (what an f64 holds exactly),
/// then the shortest form that reads back to that value, so that binary
/// noise from arithmetic goes (`0.34599759999999996` → `0.3459976`,
/// issue 60) and every real digit stays. Non-finite values as Rust writes
/// them.
pub fn machine_float(f: f64) -> String {
    if !f.is_finite() {
        return format!("{f}");
    }
    let rounded: f64 = format!("{f:.14e}").parse().unwrap_or(f);
    format!("{rounded}")
}

impl From<u64> for Cell {
    fn from(v: u64) -> Cell {
        Cell::Int(v as i64)
    }
}

impl From<usize> for Cell {
    fn from(v: usize) -> Cell {
        Cell::Int(v as i64)
    }
}

impl From<&str> for Cell {
    fn from(v: &str) -> Cell {
        Cell::Text(v.into())
    }
}

impl From<String> for Cell {
    fn from(v: String) -> Cell {
        Cell::Text(v)
    }
}

/// A titled table with optional notes under it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    pub notes: Vec<String>,
}

impl Table {
    pub fn new(title: impl Into<String>, headers: &[&str]) -> Self {
        Table {
            title: title.into(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push(cells);
    }

    /// Removes the column headed `header` when every row holds the text
    /// `value` there (ASCII case ignored), and says whether it did: a batch
    /// comparison's candidate-mode column reads `mtp` in every row when
    /// every candidate is MTP, which its headers ("Tokens MTP", …) already
    /// say (issue 60). A campaign with EAGLE or another mode keeps it.
    pub fn drop_column_if_all(&mut self, header: &str, value: &str) -> bool {
        let Some(k) = self.headers.iter().position(|h| h == header) else {
            return false;
        };
        let every = self
            .rows
            .iter()
            .all(|r| matches!(r.get(k), Some(Cell::Text(t)) if t.eq_ignore_ascii_case(value)));
        if every {
            self.headers.remove(k);
            for r in &mut self.rows {
                r.remove(k);
            }
        }
        every
    }
}

/// Writes a result in the chosen format: `value` for JSON, `tables` (human)
/// or `csv_tables` (one row per item) for the others.
pub fn render<W: Write, T: Serialize>(
    out: &mut W,
    format: Format,
    value: &T,
    tables: &[Table],
    csv_tables: &[Table],
) -> io::Result<()> {
    match format {
        Format::Json => json::write(out, value),
        Format::Table => table::write(out, tables),
        Format::Markdown => markdown::write(out, tables),
        Format::Csv => csv::write(out, csv_tables),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(modes: &[&str]) -> Table {
        let mut t = Table::new("t", &["Workload", "Mode", "Tokens AR"]);
        for m in modes {
            t.row(vec![Cell::text("text"), Cell::text(*m), Cell::Int(68)]);
        }
        t
    }

    #[test]
    fn a_column_that_says_mtp_in_every_row_goes() {
        let mut t = table(&["mtp", "MTP"]);
        assert!(t.drop_column_if_all("Mode", "mtp"));
        assert_eq!(t.headers, ["Workload", "Tokens AR"]);
        assert!(t.rows.iter().all(|r| r.len() == 2));
    }

    #[test]
    fn another_mode_keeps_the_column() {
        let mut t = table(&["mtp", "eagle"]);
        assert!(!t.drop_column_if_all("Mode", "mtp"));
        assert_eq!(t.headers.len(), 3);
        assert!(!t.drop_column_if_all("No such header", "mtp"));
    }
}
