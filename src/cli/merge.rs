//! `torchtrace merge`: the outputs of `batch` from the records of its
//! shards (`batch --shard K/N --records FILE`) or of distributed workers.

use super::batch::{write_outputs, ReportArgs};
use super::{Exit, GlobalArgs};
use clap::Args;
use std::path::PathBuf;
use torchtrace::batch::records;

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # Two shards' records into one campaign's outputs\n  torchtrace merge part1.jsonl part2.jsonl -o results";

/// Build what `torchtrace batch` writes — results.json, traces.csv, the
/// tables, figures/ and report.md — from per-trace records (JSON lines
/// written by `batch --records`, by each `batch --shard K/N --records`, or
/// by the Python package). The same records give the same bytes as
/// `batch` run in one go.
///
/// Records of one campaign are its shards: each may come once. A unit of
/// work that no record covers (a shard's records missing or cut short) is
/// a failed row saying why — never a missing one. Records of different
/// campaigns made with the same options are combined as if their PATHs
/// had been given together.
///
/// Exit status: 0 ok; 1 when a trace failed or was not analysed; 2 when a
/// records file is unreadable, of another schema, or the shards disagree,
/// when a record is given twice, is of a file the campaign does not hold,
/// or says "ok" without figures, and when another batch or merge is
/// writing OUTDIR. A trace in the records of two campaigns is counted once.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, after_help = EXAMPLES)]
pub struct MergeArgs {
    /// Records files (JSON lines); `-` reads stdin.
    #[arg(required = true, value_name = "RECORDS")]
    pub records: Vec<PathBuf>,
    /// Output directory (created if needed).
    #[arg(long, short = 'o', value_name = "OUTDIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub report: ReportArgs,
}

pub fn run(args: MergeArgs, global: &GlobalArgs) -> anyhow::Result<Exit> {
    let lock = torchtrace::batch::output::lock_outdir(&args.out)?;
    if let Some(w) = &lock.unlocked {
        eprintln!("torchtrace: warning: {w}");
    }
    let sets = args
        .records
        .iter()
        .map(|p| records::read_records(p, &global.read_options()))
        .collect::<Result<Vec<_>, _>>()?;
    let (res, context) = records::merge(sets, global.quiet)?;
    write_outputs(&res, &context, &args.out, &args.report, global)
}
