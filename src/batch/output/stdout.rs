//! What `batch` prints on stdout: a Markdown summary by default, else
//! `results.json`, the headline table as CSV, or as a terminal table. The
//! headline is the first registry entry's [`crate::campaign::InBatch::batch_stdout`]
//! (`pair`'s Table 8).

use super::report_md::problems_table;
use super::results_json::results_json;
use crate::batch::inputs::Kind;
use crate::batch::BatchResult;
use crate::campaign::Headline;
use crate::report::{self, Format, Table};
use std::io::{self, Write};

/// The headline of the campaign: the first registry entry that gives one.
fn headline(res: &BatchResult) -> Option<Headline> {
    let c = super::sections::campaign(res);
    crate::registry::REGISTRY
        .iter()
        .filter_map(|e| e.batch_stdout_fn())
        .find_map(|f| f(&c))
}

/// The answer first: every registry entry's (`iterations`' S_wall and
/// why, per workload), in registry order.
fn answers(res: &BatchResult) -> String {
    let c = super::sections::campaign(res);
    crate::registry::REGISTRY
        .iter()
        .filter_map(|e| e.batch_answer_fn())
        .filter_map(|f| f(&c))
        .collect()
}

/// The Markdown summary printed on stdout.
pub fn stdout_markdown(res: &BatchResult) -> String {
    let workers = res
        .records
        .iter()
        .filter(|r| r.file.kind == Kind::Worker)
        .count();
    let mut s = format!(
        "## torchtrace batch: {}, {}, {}, {} failed\n\n",
        super::count(res.records.len(), "file"),
        super::count(workers, "worker trace"),
        super::count(res.comparisons.len(), "comparison"),
        res.failed().count()
    );
    s.push_str(&answers(res));
    if let Some(h) = headline(res) {
        s.push_str(&report::markdown::to_string(&h.human));
    }
    let failed = problems_table(res, false);
    if !failed.rows.is_empty() {
        s.push('\n');
        s.push_str(&report::markdown::to_string(&failed));
    }
    s
}

/// Writes `batch`'s stdout in `format`.
pub fn write_stdout<W: Write>(
    out: &mut W,
    res: &BatchResult,
    context: &str,
    format: Format,
) -> io::Result<()> {
    match format {
        Format::Markdown => out.write_all(stdout_markdown(res).as_bytes()),
        Format::Json => report::json::write(out, &results_json(res, context)),
        Format::Csv => {
            let tables: Vec<Table> = headline(res).map(|h| h.machine).into_iter().collect();
            report::csv::write(out, &tables)
        }
        Format::Table => {
            out.write_all(answers(res).as_bytes())?;
            let mut tables: Vec<Table> = headline(res).map(|h| h.human).into_iter().collect();
            let failed = problems_table(res, false);
            if !failed.rows.is_empty() {
                tables.push(failed);
            }
            report::table::write(out, &tables)
        }
    }
}
