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

fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
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
