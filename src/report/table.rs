//! Aligned plain-text tables for the terminal: text left-aligned, numbers
//! right-aligned, widths by character count. A cell longer than
//! [`MAX_CELL_CHARS`] is cut with `…`, so one huge cell cannot pad every row
//! of its column to its width (issue 17: a 179 KB trace printed 80 GB).
//! CSV, JSON and Markdown keep cells whole.
//!
//! Every title, header, cell and note is shown through [`show`]: control
//! characters from trace names (ESC, BEL, NUL, CSI, line breaks) are
//! escaped as `-f markdown` escapes them (`\u{1b}`, `\0`, `\n`), so a
//! hostile name cannot drive the terminal or break a row (issue 59).

use super::Table;
use crate::text::ellipsize_end;
use crate::trace::message;
use std::io::{self, Write};

/// The widest cell a terminal table shows, in characters; longer cells
/// show their first `MAX_CELL_CHARS − 1` characters and `…`.
pub const MAX_CELL_CHARS: usize = 200;

/// Text as a terminal table shows it: control characters escaped (the
/// helper `-f markdown` and the messages share), then cut to
/// [`MAX_CELL_CHARS`].
pub fn show(s: &str) -> String {
    ellipsize_end(&message::escape(s), MAX_CELL_CHARS)
}

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
        writeln!(out, "{}", message::escape(&t.title))?;
    }
    let cells: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| r.iter().map(|c| show(&c.display())).collect())
        .collect();
    let headers: Vec<String> = t.headers.iter().map(|h| show(h)).collect();
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
        writeln!(out, "  note: {}", message::escape(n))?;
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
    fn escapes_control_characters() {
        let mut t = Table::new("t\x07", &["name\x1b[2J", "n"]);
        t.row(vec![
            Cell::text("a\x1b]0;pwn\x07b\0c\u{9b}31m\nd"),
            Cell::Int(5),
        ]);
        t.notes.push("note \x1b[31m".into());
        let mut buf = Vec::new();
        write_one(&mut buf, &t).unwrap();
        let s = String::from_utf8(buf).unwrap();
        assert!(!s.chars().any(|c| c.is_control() && c != '\n'), "{s:?}");
        assert!(s.contains("a\\u{1b}]0;pwn\\u{7}b\\0c\\u{9b}31m\\nd"), "{s}");
        assert!(s.starts_with("t\\u{7}\nname\\u{1b}[2J"), "{s}");
        assert!(s.ends_with("  note: note \\u{1b}[31m\n"), "{s}");
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
