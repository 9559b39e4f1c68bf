//! `report.md`: the run in one page — its opening (inputs, counts, the
//! files), the analyses' sections in registry order (`pair`'s definitions
//! and Table 8, `hierarchy`'s Table 9 and containment, …), the figures,
//! the worker traces and the failures — and the table of failed and
//! skipped inputs it shares with stdout.

use super::Written;
use crate::batch::inputs::Kind;
use crate::batch::{BatchResult, Status};
use crate::report::{self, Cell, Table};
use std::path::Path;

/// Failed inputs, and (with `skipped`) skipped ones too.
pub fn problems_table(res: &BatchResult, skipped: bool) -> Table {
    let mut t = Table::new(
        if skipped {
            "Failed and skipped inputs"
        } else {
            "Failed inputs"
        },
        &["path", "kind", "status", "reason"],
    );
    for r in &res.records {
        let f = &r.file;
        if f.status == Status::Error || (skipped && f.status == Status::Skipped) {
            t.row(vec![
                Cell::text(f.path.clone()),
                f.kind.as_str().into(),
                f.status.as_str().into(),
                Cell::text(f.error.clone().unwrap_or_default()),
            ]);
        }
    }
    t
}

/// A short per-trace table for report.md: the trace, its status, mode
/// and workload, then each analysis's [`crate::campaign::InBatch::report_columns`]
/// (`pair`'s contexts, pairs, tokens and span medians).
fn traces_overview(res: &BatchResult) -> Table {
    let workers: Vec<_> = res
        .records
        .iter()
        .filter(|r| r.file.kind == Kind::Worker)
        .collect();
    let all: Vec<&crate::analysis::Results> = workers.iter().map(|r| &r.file.results).collect();
    let extra: Vec<_> = crate::registry::REGISTRY
        .iter()
        .filter_map(|e| e.report_columns_fn())
        .map(|f| f(&all))
        .collect();
    let mut heads: Vec<String> = ["trace", "status", "mode", "workload"]
        .map(String::from)
        .into();
    heads.extend(extra.iter().flat_map(|c| c.heads.iter().cloned()));
    let mut t = Table {
        title: "Worker traces".into(),
        headers: heads,
        ..Default::default()
    };
    for r in workers {
        let mut row = vec![
            Cell::text(r.file.path.clone()),
            r.file.status.as_str().into(),
            r.run.mode().map_or(Cell::Null, Cell::text),
            r.run.workload().map_or(Cell::Null, Cell::text),
        ];
        row.extend(extra.iter().flat_map(|c| c.cells(&r.file.results)));
        t.row(row);
    }
    t
}

/// The report; `sections`: the analyses' own sections, after the opening
/// and before the figures.
pub fn report_md(
    res: &BatchResult,
    context: &str,
    w: &Written,
    dir: &Path,
    sections: &[crate::campaign::Section],
) -> String {
    let mut s = opening(res, context, sections);
    // The answer first (issue 60): each section's lead, in registry order.
    let leads: Vec<&str> = sections
        .iter()
        .map(|sec| sec.lead.as_str())
        .filter(|l| !l.is_empty())
        .collect();
    if !leads.is_empty() {
        s.push_str("\n## The answer\n\n");
        for l in leads {
            s.push_str(l);
        }
    }
    for sec in sections.iter().filter(|s| !s.markdown.is_empty()) {
        s.push('\n');
        s.push_str(&sec.markdown);
    }
    figures(&mut s, w, dir);
    s.push_str("\n## ");
    s.push_str(report::markdown::to_string(&traces_overview(res)).trim_start_matches("### "));
    let probs = problems_table(res, true);
    s.push_str("\n## ");
    if probs.rows.is_empty() {
        s.push_str("Failed and skipped inputs\n\nNone.\n");
    } else {
        s.push_str(report::markdown::to_string(&probs).trim_start_matches("### "));
    }
    if !w.warnings.is_empty() {
        s.push_str("\n## Notes\n\n");
        for n in &w.warnings {
            s.push_str(&format!("- {}\n", report::markdown::escape(n)));
        }
    }
    s
}

/// The title, the inputs, the counts and the files: the sections' own
/// entries of the `Files:` line, then a link to every other file a section
/// writes (issue 60: the line linked 4 of 13 outputs).
fn opening(res: &BatchResult, context: &str, sections: &[crate::campaign::Section]) -> String {
    let mut s = String::from("# torchtrace batch report\n\n");
    let count = |st: Status| res.records.iter().filter(|r| r.file.status == st).count();
    s.push_str("Inputs:\n\n");
    for i in &res.inputs {
        s.push_str(&format!(
            "- {} ({})\n",
            report::markdown::code(&i.path),
            kind_name(i.kind)
        ));
    }
    s.push_str(&format!(
        "\n{}: {} ok, {} failed, {} skipped. Step contexts: {}. {}.\n\n",
        super::count(res.records.len(), "file"),
        count(Status::Ok),
        count(Status::Error),
        count(Status::Skipped),
        report::markdown::escape(context),
        super::count(res.comparisons.len(), "AR/MTP comparison")
    ));
    s.push_str(
        "Files: [results.json](results.json) (everything), [traces.csv](traces.csv) (one row per input file)",
    );
    let mut line = String::new();
    for listed in super::sections::listed() {
        line.push_str(", ");
        line.push_str(listed);
    }
    for f in sections.iter().flat_map(|sec| &sec.files) {
        let target = format!("]({})", link_target(&f.name));
        if !line.contains(&target) {
            line.push_str(&format!(", [{}{target}", link_text(&f.name)));
        }
    }
    s.push_str(&line);
    s.push_str(".\n");
    s
}

/// The figures drawn (fixed ones first, then the sections'), each shown
/// or linked by its path relative to `dir`.
fn figures(s: &mut String, w: &Written, dir: &Path) {
    if w.figures.is_empty() {
        return;
    }
    s.push_str("\n## Figures\n\n");
    for f in &w.figures {
        if let Ok(rel) = f.strip_prefix(dir) {
            let rel = rel.to_string_lossy().replace('\\', "/");
            let name = rel.rsplit('/').next().unwrap_or(&rel).to_string();
            let (name, rel) = (link_text(&name), link_target(&rel));
            if rel.ends_with(".png") || rel.ends_with(".svg") {
                s.push_str(&format!("![{name}]({rel})\n\n"));
            } else {
                s.push_str(&format!("- [{name}]({rel})\n"));
            }
        }
    }
}

/// A file name as a link's text: Markdown escaped, brackets too.
fn link_text(name: &str) -> String {
    report::markdown::escape(name)
        .replace('[', "\\[")
        .replace(']', "\\]")
}

/// A relative path as a link target: bytes that would end or break the
/// target (space, parentheses, `<`, `>`, controls, non-ASCII) percent-encoded.
fn link_target(rel: &str) -> String {
    let mut out = String::with_capacity(rel.len());
    for b in rel.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'/' | b'.' | b'-' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn kind_name(k: crate::batch::inputs::InputKind) -> &'static str {
    use crate::batch::inputs::InputKind::*;
    match k {
        Directory => "directory",
        File => "file",
        Tar => "tar archive",
        TarGz => "gzip-compressed tar archive",
        Zip => "zip archive",
    }
}
