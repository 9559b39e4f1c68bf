//! Aligned plain-text tables for the terminal: text left-aligned, numbers
//! right-aligned, widths by character count. A cell longer than
//! [`MAX_CELL_CHARS`] is cut with `…`, so one huge cell cannot pad every row
//! of its column to its width (issue 17: a 179 KB trace printed 80 GB).
//! CSV, JSON and Markdown keep cells whole.

use super::Table;
use crate::text::ellipsize_end;
use std::io::{self, Write};

/// The widest cell a terminal table shows, in characters; longer cells
/// show their first `MAX_CELL_CHARS − 1` characters and `…`.
pub const MAX_CELL_CHARS: usize = 200;

pub fn write<W: Write>(out: &mut W, tables: &[Table]) -> io::Result<()> {
    for (i, t) in tables.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        write_one(out, t)?;
    }
    Ok(())
}

pub fn write_one<W: Write>(out: &mut W, t: &Table) -> io::Result<()> {
    if !t.title.is_empty() {
        writeln!(out, "{}", t.title)?;
    }
    let cells: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| ellipsize_end(&c.display(), MAX_CELL_CHARS))
                .collect()
        })
        .collect();
    let headers: Vec<String> = t
        .headers
        .iter()
        .map(|h| ellipsize_end(h, MAX_CELL_CHARS))
        .collect();
    let ncol = t.headers.len();
    let width = |c: usize| {
        cells
            .iter()
            .filter_map(|r| r.get(c))
            .chain(std::iter::once(&headers[c]))
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..ncol).map(width).collect();
    let numeric: Vec<bool> = (0..ncol)
        .map(|c| {
            t.rows
                .iter()
                .any(|r| r.get(c).is_some_and(|x| x.is_numeric()))
        })
        .collect();
    let line = |vals: &[String], out: &mut W| -> io::Result<()> {
        let parts: Vec<String> = vals
            .iter()
            .enumerate()
            .map(|(c, v)| {
                pad(
                    v,
                    widths.get(c).copied().unwrap_or(0),
                    numeric.get(c).copied().unwrap_or(false),
                )
            })
            .collect();
        writeln!(out, "{}", parts.join("  ").trim_end())
    };
    line(&headers, out)?;
    let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
    writeln!(out, "{}", rule.join("  "))?;
    for r in &cells {
        line(r, out)?;
    }
    for n in &t.notes {
        writeln!(out, "  note: {n}")?;
    }
    Ok(())
}

fn pad(s: &str, w: usize, right: bool) -> String {
    let n = s.chars().count();
    let fill = " ".repeat(w.saturating_sub(n));
    if right {
        format!("{fill}{s}")
    } else {
        format!("{s}{fill}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Cell;

    #[test]
    fn aligns_columns() {
        let mut t = Table::new("T", &["name", "n"]);
        t.row(vec![Cell::text("long name"), Cell::Int(5)]);
        t.row(vec![Cell::text("x"), Cell::Float(12.345, 1)]);
        let mut buf = Vec::new();
        write_one(&mut buf, &t).unwrap();
        let s = String::from_utf8(buf).unwrap();
        assert_eq!(
            s,
            "T\nname          n\n─────────  ────\nlong name     5\nx          12.3\n"
        );
    }

    #[test]
    fn cuts_huge_cells() {
        let mut t = Table::new("", &["name", "n"]);
        t.row(vec![Cell::text("é".repeat(1_000_000)), Cell::Int(5)]);
        t.row(vec![Cell::text("x"), Cell::Int(6)]);
        t.row(vec![Cell::text("y".repeat(MAX_CELL_CHARS)), Cell::Int(7)]);
        let mut buf = Vec::new();
        write_one(&mut buf, &t).unwrap();
        let s = String::from_utf8(buf).unwrap();
        let widths: Vec<usize> = s.lines().map(|l| l.chars().count()).collect();
        assert!(
            widths.iter().all(|&w| w <= MAX_CELL_CHARS + 2 + 1),
            "{widths:?}"
        );
        assert!(
            s.contains(&format!("{}…  5", "é".repeat(MAX_CELL_CHARS - 1))),
            "{s}"
        );
        assert!(s.contains(&format!("{}  7", "y".repeat(MAX_CELL_CHARS))));
    }
}
