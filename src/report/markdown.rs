//! Markdown output: a `###` heading and a pipe table per table, numbers
//! right-aligned.

use super::Table;
use std::io::{self, Write};

pub fn write<W: Write>(out: &mut W, tables: &[Table]) -> io::Result<()> {
    for (i, t) in tables.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        write_one(out, t)?;
    }
    Ok(())
}

/// Text for a Markdown table cell, heading or note: HTML (`<`, `&`) and the
/// cell separator `|` escaped, line breaks made spaces, other control
/// characters escaped (`\u{1b}`), so a name from a trace or a file name
/// cannot inject markup or break the table.
pub fn escape(s: &str) -> String {
    let flat = s.replace(['\n', '\r'], " ");
    let mut out = String::with_capacity(flat.len());
    for c in crate::trace::message::escape(&flat).chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '&' => out.push_str("&amp;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` as a Markdown code span: fenced by more backticks than any run
/// inside it (CommonMark), control characters escaped and line breaks made
/// spaces, so a file name shows literally whatever it holds.
pub fn code(s: &str) -> String {
    let s = crate::trace::message::escape(&s.replace(['\n', '\r'], " "));
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

pub fn write_one<W: Write>(out: &mut W, t: &Table) -> io::Result<()> {
    if !t.title.is_empty() {
        writeln!(out, "### {}\n", escape(&t.title))?;
    }
    let heads: Vec<String> = t.headers.iter().map(|h| escape(h)).collect();
    writeln!(out, "| {} |", heads.join(" | "))?;
    let numeric: Vec<bool> = (0..t.headers.len())
        .map(|c| {
            !t.rows.is_empty()
                && t.rows.iter().all(|r| {
                    r.get(c)
                        .is_none_or(|x| x.is_numeric() || x.raw().is_empty())
                })
        })
        .collect();
    let rule: Vec<&str> = numeric
        .iter()
        .map(|&n| if n { "---:" } else { "---" })
        .collect();
    writeln!(out, "|{}|", rule.join("|"))?;
    for r in &t.rows {
        let cells: Vec<String> = r.iter().map(|c| escape(&c.display())).collect();
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    for n in &t.notes {
        writeln!(out, "\n> {}", escape(n))?;
    }
    Ok(())
}

/// One table as a Markdown string.
pub fn to_string(t: &Table) -> String {
    let mut buf = Vec::new();
    let _ = write_one(&mut buf, t);
    String::from_utf8_lossy(&buf).into_owned()
}

/// One table as a report section: its heading at `level` (`"##"`)
/// instead of `###`.
pub fn section(t: &Table, level: &str) -> String {
    let s = to_string(t);
    match s.strip_prefix("### ") {
        Some(rest) => format!("{level} {rest}"),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_html_separators_and_controls() {
        assert_eq!(
            escape("a|b<script>&amp;\x1b[2J\nx"),
            "a\\|b&lt;script>&amp;amp;\\u{1b}[2J x"
        );
        assert_eq!(code("plain.json"), "`plain.json`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("n\u{0}l"), "`n\\0l`");
    }
}
