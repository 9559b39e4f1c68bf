//! `torchtrace export`: every linked event as Apache Parquet tables
//! (issue 36); the library's `export::run` does the work.

use super::{note, Exit, FormatArg, GlobalArgs};
use clap::Args;
use std::path::PathBuf;
use torchtrace::api::Document;
use torchtrace::export::{self, Compression, ExportOptions, Table};

/// Write every linked event as Apache Parquet tables (exact int64 ns).
///
/// One file per table in DIR: activities.parquet (one row per GPU kernel,
/// memcpy, memset: device, stream, times, correlation, its launch, graph
/// replay, launcher and top-level op, step), launches.parquet (one row per
/// runtime/driver call: activities launched, Σ dur, launch latency, queue
/// delay), ops.parquet (one row per host op: parent, depth, External id)
/// and steps.parquet (one row per step annotation: window, tokens).
/// Row ids (`id`, `launch_id`, `parent_id`, `step`, …) are positions in
/// file order, per trace. Every table has a `trace` column (the path as
/// given); with several traces their rows follow one another in the order
/// given, in one file per table (not a partitioned dataset). Files are
/// written under a temporary name and renamed when complete.
/// docs/COMMANDS.md defines every column.
///
/// As `batch`, it exports worker traces only: a frontend trace
/// (`*.async_llm.*`), a capture trace, a run summary or a
/// `profiler_out*.txt` named among the TRACEs is skipped with a note
/// (`--all-traces` exports every file named).
///
/// Examples:
///   torchtrace export trace.pt.trace.json.gz -o t/
///   torchtrace export ar.json.gz mtp.json.gz -o t/ --tables activities,steps
///   python -c "import duckdb; print(duckdb.sql(\"SELECT name, sum(dur_ns) FROM 't/activities.parquet' GROUP BY 1\"))"
///
/// Exit status: 0 ok; 2 on unreadable input or a file that cannot be
/// written (nothing half-written is left under a table's name).
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ExportArgs {
    /// Traces (`-` reads stdin).
    #[arg(required = true, num_args = 1.., value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// The output directory (created if missing; the tables' files in it
    /// are replaced).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: PathBuf,
    /// The tables to write, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "activities,launches,ops,steps,memory"
    )]
    pub tables: Vec<Table>,
    /// Parquet compression.
    #[arg(long, value_enum, default_value_t = Compression::Zstd)]
    pub compression: Compression,
    /// The capture traces of the CUDA/HIP graphs (`--capture`).
    #[command(flatten)]
    pub capture: torchtrace::graphs::CaptureSpec,
    /// Export every file named, frontend (`*.async_llm.*`) and capture
    /// traces included (by default they are skipped, as `batch` skips them).
    #[arg(long)]
    pub all_traces: bool,
    /// What is printed about the files written.
    #[arg(long, short = 'f', value_enum, default_value_t = FormatArg::Table)]
    pub format: FormatArg,
}

pub fn run(args: ExportArgs, global: &GlobalArgs) -> anyhow::Result<Exit> {
    use std::io::Write;
    let mut common = global.common(Default::default(), Vec::new());
    common.capture = args.capture;
    let options = ExportOptions {
        out: args.out,
        tables: args.tables,
        compression: args.compression,
    };
    let traces = if args.all_traces {
        args.traces
    } else {
        let (workers, skipped) = torchtrace::api::worker_traces(&args.traces);
        for (p, kind) in &skipped {
            note(
                global,
                &format!(
                    "{}: skipped, a {kind} file, not a worker trace (as `batch` skips it; --all-traces exports it)",
                    p.display()
                ),
            );
        }
        if workers.is_empty() {
            anyhow::bail!(
                "no worker trace among the TRACEs (each is a frontend, capture, summary or profiler_out file): name worker traces (*.pt.trace.json[.gz]) or pass --all-traces"
            );
        }
        workers
    };
    let out = export::run(&traces, &common, &options)?;
    for n in &out.notes {
        note(global, &n.text);
    }
    let mut stdout = super::stdout();
    out.report
        .write_to(&mut stdout, args.format.into(), false)?;
    stdout.flush()?;
    super::incomplete(out.report.completeness(), "tables written")?;
    Ok(Exit::of(&out))
}
