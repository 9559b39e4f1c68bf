//! What `batch` prints on stdout: a Markdown summary by default, else
//! `results.json`, Table 8 as CSV, or Table 8 as a terminal table.

use super::report_md::problems_table;
use super::results_json::results_json;
use super::workloads::workloads_table;
use crate::batch::inputs::Kind;
use crate::batch::BatchResult;
use crate::report::{self, Format};
use std::io::{self, Write};

/// The Markdown summary printed on stdout.
pub fn stdout_markdown(res: &BatchResult) -> String {
    let workers = res
        .records
        .iter()
        .filter(|r| r.file.kind == Kind::Worker)
        .count();
    let mut s = format!(
        "## torchtrace batch: {} files, {} worker traces, {} comparisons, {} failed\n\n",
        res.records.len(),
        workers,
        res.comparisons.len(),
        res.failed().count()
    );
    s.push_str(&report::markdown::to_string(&workloads_table(res, false)));
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
        Format::Csv => report::csv::write(out, &[workloads_table(res, true)]),
        Format::Table => {
            let mut tables = vec![workloads_table(res, false)];
            let failed = problems_table(res, false);
            if !failed.rows.is_empty() {
                tables.push(failed);
            }
            report::table::write(out, &tables)
        }
    }
}
