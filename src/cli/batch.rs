//! `torchtrace batch`: a whole campaign (directories, archives) in one go.

use super::{note, Exit, FormatArg, GlobalArgs, ImageFormatArg};
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use torchtrace::batch::{self, records, Manifest};

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # The whole campaign of the samples: report.md, tables, figures\n  torchtrace batch sample_traces -o results\n\n  # An archive, SVG figures\n  torchtrace batch campaign.tar.gz -o out --image-format svg\n\n  # Half a campaign as records, for `merge`\n  torchtrace batch DIR --shard 1/2 --records part1.jsonl";

/// Analyse every trace of a benchmark campaign — directories (recursive),
/// .tar, .tar.gz/.tgz and .zip archives (read as streams, never
/// extracted), or trace files — in parallel, compare AR with MTP within
/// each workload, and write the paper's tables and figures to OUTDIR.
///
/// vLLM's layout is understood: worker traces *.pt.trace.json[.gz] are
/// analysed; frontend traces *.async_llm.*, capture_traces/ and
/// profiler_out*.txt are listed but not analysed; *.summary.json run
/// summaries give completion tokens, mode and workload. Anything else is
/// listed as skipped: every input file appears in traces.csv.
///
/// Tokens, mode and workload of a trace: its run summary
/// ("completion_tokens", "mode", "workload"), else --manifest, else (mode)
/// the step name (generation_1(1) → ar, generation_1(k+1) → mtp) and
/// (workload) the directory's name.
///
/// OUTDIR gets (each table only when some trace or AR/MTP match has its
/// figures):
///   results.json             everything, per trace and per comparison
///   traces.csv               one row per input file: status, reason, figures
///   workloads.csv/.md        Table 8: AR vs MTP per workload (pair)
///   hierarchy.csv/.md        Table 9: the chain's medians (hierarchy)
///   gpu_work.csv/.md         kernels and GPU busy per token (kernels)
///   iterations.csv           the whole decode loop, AR vs MTP (iterations)
///   diff.csv, diff_families.csv, diff_kernels.csv
///                            what changed per token, AR → MTP (diff)
///   ranks_runs.csv, ranks.csv, ranks_stragglers.csv
///                            multi-rank runs, per run and per rank (ranks)
///   ops.csv                  top-level ops per token, AR vs MTP (ops)
///   graphs.csv               inside the CUDA graphs: replayed GPU time by
///                            subsystem, module and op (ops; needs the
///                            capture_traces/ beside the traces)
///   idle_decode.csv          GPU busy and idle per token and per decode
///                            iteration, as `iterations` (idle)
///   idle_steps.csv           busy and idle by cause per step (idle)
///   critical.csv             host, launch, GPU and sync parts of the
///                            iterations, per token (critical)
///   roofline.csv             FLOPs, bytes, TB/s and % of the roof per op and
///                            shape (roofline; needs record_shapes)
///   memory.csv               the allocator per trace and device (memory;
///                            needs profile_memory)
///   figures/                 fig1 … fig6 (the study's spans, tokens, hierarchy,
///                            CPU vs GPU, GPU busy), fig7, fig7b (iterations),
///                            fig8 (diff), fig9_ranks_<run>, fig10 (ops),
///                            fig11 (idle), fig12 (roofline), fig13
///                            (memory), fig14 (critical); .png/.svg:
///                            --image-format
///   report.md                all of it, linked
/// Stdout gets a Markdown summary (or --format).
///
/// Exit status: 0 ok; 1 when some input failed (each is reported with
/// its reason; the rest complete); 2 on bad arguments, an unwritable
/// OUTDIR, or an OUTDIR that another batch or merge is writing (OUTDIR is
/// locked, and its files are replaced only once all are written).
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, after_help = EXAMPLES)]
pub struct BatchArgs {
    /// Directories, archives (.tar, .tar.gz, .tgz, .zip) or trace files.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Output directory (created if needed); optional with --records.
    #[arg(
        long,
        short = 'o',
        value_name = "OUTDIR",
        required_unless_present = "records"
    )]
    pub out: Option<PathBuf>,
    /// CSV with columns path,mode,workload,completion_tokens, used where a
    /// trace has no run summary (path: the trace's path as listed, or a
    /// trailing part of it).
    #[arg(long, value_name = "CSV")]
    pub manifest: Option<PathBuf>,
    #[command(flatten)]
    pub contexts: super::ContextArgs,
    /// Call chain for the hierarchy tables (Table 9), "a>b>c" outermost
    /// first; repeat for several [default:
    /// sample_tokens>propose_draft_token_ids>proposer.propose and execute_model]
    #[arg(long, value_name = "A>B>…")]
    pub chain: Vec<String>,
    #[command(flatten)]
    pub capture: torchtrace::graphs::CaptureSpec,
    #[command(flatten)]
    pub report: ReportArgs,
    /// Analyse only the K-th of N shares of the inputs (1 ≤ K ≤ N): the
    /// same inputs give the same shares on every machine (files balanced
    /// by size). Needs --records; `torchtrace merge` joins the shards.
    #[arg(long, value_name = "K/N", requires = "records")]
    pub shard: Option<records::Shard>,
    /// Write the per-trace records (JSON lines, `-`: stdout) for
    /// `torchtrace merge`, instead of OUTDIR or beside it.
    #[arg(long, value_name = "FILE.jsonl")]
    pub records: Option<PathBuf>,
    /// Also write the campaign's linked events as Parquet tables to DIR,
    /// from the same read: activities, launches, ops and steps.parquet as
    /// `torchtrace export` writes them, every worker trace in one file per
    /// table, led by `trace` (its label in traces.csv), `workload` and
    /// `mode` (null where unknown). DIR may be inside OUTDIR.
    #[arg(long, value_name = "DIR", requires = "out", conflicts_with = "shard")]
    pub tables: Option<PathBuf>,
    /// The memory the campaign may use (e.g. 8G, with K/M/G/T; `none`:
    /// not watched). Default: the limit the process runs under, whichever
    /// binds first: its cgroup's memory limit, RLIMIT_AS, RLIMIT_DATA or
    /// the machine's memory, each compared with what the kernel counts the
    /// process holding. The traces read at once share it: a new one starts
    /// only while less than half is held; past three quarters the youngest
    /// trace read gives way and is read again alone later. A trace that
    /// needs more than three quarters while read alone becomes an error
    /// row ("needs more memory than the process may use") with the figures
    /// of its events before; every other trace's results are kept.
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// A worst-case cap on one trace instead (e.g. 2G; `none`): its
    /// analyses are fed at most SIZE / 4096 events (the costliest shape
    /// measured keeps 3.65 KB per event; real traces 58-250 B), the rest
    /// "over its memory budget". Off unless given.
    #[arg(long, value_name = "SIZE")]
    pub member_memory: Option<String>,
    /// Parquet compression of --tables.
    #[arg(long, value_enum, default_value_t = torchtrace::export::Compression::Zstd, requires = "tables")]
    pub tables_compression: torchtrace::export::Compression,
}

/// A size flag: `None` when absent or `none`.
fn size_arg(flag: &str, value: Option<&str>) -> anyhow::Result<Option<u64>> {
    match value {
        None | Some("none") => Ok(None),
        Some(s) => match torchtrace::trace::parse_size(s) {
            Some(b) if b > 0 => Ok(Some(b)),
            _ => anyhow::bail!("{flag} {s:?}: not a size (e.g. 512M, 2G, or none)"),
        },
    }
}

pub fn run(args: BatchArgs, global: &GlobalArgs) -> anyhow::Result<Exit> {
    let shard = args.shard.unwrap_or(records::Shard::ALL);
    if shard != records::Shard::ALL && args.out.is_some() {
        anyhow::bail!(
            "--shard {shard} with -o: a shard's output would lack the other shards' traces; write --records and run `torchtrace merge` over every shard's records"
        );
    }
    // Held until the outputs are in place: a second batch on this OUTDIR
    // is refused (exit 2) rather than interleaved.
    let lock = args
        .out
        .as_deref()
        .map(batch::output::lock_outdir)
        .transpose()?;
    if let Some(w) = lock.as_ref().and_then(|l| l.unlocked.as_deref()) {
        eprintln!("torchtrace: warning: {w}");
    }
    let campaign = records::CampaignOptions {
        context: args.contexts.context.clone(),
        context_regex: args.contexts.context_regex.clone(),
        chains: args.chain.clone(),
        manifest: args.manifest.as_deref().map(Manifest::read).transpose()?,
        analyses: Default::default(),
        capture: args.capture.clone(),
    };
    let mut opts = campaign
        .batch_options(global.quiet)?
        .reading(global.read_options());
    opts.exclude = args.out.as_deref().and_then(|o| o.canonicalize().ok());
    let tables = args
        .tables
        .as_deref()
        .map(|dir| batch::tables::CampaignTables::new(dir, args.tables_compression))
        .transpose()?;
    if let Some(t) = &tables {
        opts.plan = std::sync::Arc::new(t.plan(opts.plan()));
    }
    let budget = size_arg("--member-memory", args.member_memory.as_deref())?;
    let pool = match size_arg("--memory", args.memory.as_deref())? {
        _ if args.memory.as_deref() == Some("none") => None,
        given => torchtrace::memory::Pool::detected(given),
    };
    opts.plan = std::sync::Arc::new(opts.plan().clone().budgeted(budget).pooled(pool));
    let header =
        records::plan_campaign(&args.paths, campaign, opts.exclude.as_deref())?.for_shard(shard);
    let mut files = records::map(&header, shard, &opts);
    // Out of the results before records or results.json see them.
    let parts = batch::tables::take_parts(&mut files);
    if let Some(path) = &args.records {
        write_records(path, &header, &files)?;
        // Issue 60: a shard that worked said nothing at all.
        note(global, &records_summary(path, shard, &files));
    }
    let Some(out) = &args.out else {
        // A shard may hold no trace when there are more shards than
        // traces; the merge says whether the campaign had any.
        if shard == records::Shard::ALL && !files.iter().any(is_analysed) {
            return Ok(nothing_analysed(files.len(), None));
        }
        return Ok(report_failures(
            files.iter().filter(|f| f.status == batch::Status::Error),
            files
                .iter()
                .filter(|f| f.status != batch::Status::Skipped)
                .count(),
            None,
        ));
    };
    let set = records::RecordSet {
        header,
        files,
        complete: true,
    };
    let (res, context) = records::merge_with(vec![set], &opts)?;
    let exit = write_outputs(&res, &context, out, &args.report, global)?;
    if let Some(t) = &tables {
        write_tables(t, &res, parts, global)?;
    }
    Ok(exit)
}

/// Writes `--tables` and names each file on stderr.
fn write_tables(
    tables: &batch::tables::CampaignTables,
    res: &batch::BatchResult,
    parts: batch::tables::Parts,
    global: &GlobalArgs,
) -> anyhow::Result<()> {
    let parts = batch::tables::campaign_parts(res, parts);
    for f in tables.write(&parts)? {
        note(global, &format!("tables: {} ({} rows)", f.path, f.rows));
    }
    Ok(())
}

/// The one line a shard prints on stderr once its records are written:
/// where, which shard, and what its files came to.
fn records_summary(
    path: &std::path::Path,
    shard: records::Shard,
    files: &[batch::FileResult],
) -> String {
    let read = files.iter().filter(|f| is_analysed(f)).count();
    let failed = files
        .iter()
        .filter(|f| f.status == batch::Status::Error)
        .count();
    let skipped = files
        .iter()
        .filter(|f| f.status == batch::Status::Skipped)
        .count();
    let which = if shard == records::Shard::ALL {
        String::new()
    } else {
        format!(" of shard {shard}")
    };
    let to = if path == std::path::Path::new("-") {
        "stdout".to_string()
    } else {
        path.display().to_string()
    };
    format!(
        "records{which} written to {to}: {} ({read} worker traces read, {failed} failed, {skipped} skipped); `torchtrace merge` joins the shards",
        batch::output::count(files.len(), "file"),
    )
}

/// Writes the records of a shard to FILE (`-`: stdout), created anew.
fn write_records(
    path: &std::path::Path,
    header: &records::Header,
    files: &[batch::FileResult],
) -> anyhow::Result<()> {
    if path == std::path::Path::new("-") {
        let stdout = super::stdout();
        return Ok(records::write_records(
            std::io::BufWriter::new(stdout),
            header,
            files,
        )?);
    }
    // A device or FIFO (/dev/stdout, a pipe) is written as it is.
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .with_context(|| format!("{}: cannot open", path.display()))?;
        return records::write_records(std::io::BufWriter::new(f), header, files)
            .with_context(|| format!("{}: cannot write", path.display()));
    }
    // Written beside FILE and renamed over it at the end: FILE is never
    // half this run's and half an earlier one's.
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp.{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let written = std::fs::File::create(&tmp)
        .with_context(|| format!("{}: cannot create", tmp.display()))
        .and_then(|f| {
            records::write_records(std::io::BufWriter::new(f), header, files)
                .with_context(|| format!("{}: cannot write", tmp.display()))
        })
        .and_then(|()| {
            std::fs::rename(&tmp, path)
                .with_context(|| format!("{}: cannot move into place", path.display()))
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// How the outputs of a batch (or a merge) are written.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// What to print on stdout.
    #[arg(long, short = 'f', value_enum, default_value_t = FormatArg::Markdown)]
    pub format: FormatArg,
    /// Image format of the figures (the same flag on `plot` and `ranks`).
    #[arg(long, value_enum, default_value_t = ImageFormatArg::Png)]
    pub image_format: ImageFormatArg,
    /// Do not draw figures.
    #[arg(long)]
    pub no_figures: bool,
}

/// Writes OUTDIR and the stdout summary of a merged batch; exit 1 when a
/// file failed.
pub fn write_outputs(
    res: &batch::BatchResult,
    context: &str,
    out: &std::path::Path,
    output: &ReportArgs,
    global: &GlobalArgs,
) -> anyhow::Result<Exit> {
    let figures = (!output.no_figures).then_some(output.image_format.into());
    let written = batch::output::write_all_atomic(res, out, context, figures)?;
    for w in &written.warnings {
        eprintln!("torchtrace: warning: {w}");
    }
    for n in &res.notes {
        note(global, n);
    }

    let mut stdout = super::stdout();
    batch::output::write_stdout(&mut stdout, res, context, output.format.into())?;
    stdout.flush()?;
    note(global, &where_it_went(out, &written));
    let table = out.join("traces.csv");
    let analysed = res.records.iter().filter(|r| is_analysed(&r.file)).count();
    if analysed == 0 {
        return Ok(nothing_analysed(res.records.len(), Some(&table)));
    }
    Ok(report_failures(
        res.failed().map(|r| &r.file),
        res.attempted(),
        Some(&table),
    ))
}

/// Where the outputs went, the report first: what a user opens next
/// (stdout holds only the headline table).
fn where_it_went(out: &std::path::Path, w: &batch::output::Written) -> String {
    let fixed = ["report.md", "results.json", "traces.csv"];
    let tables = w
        .files
        .iter()
        .filter_map(|f| f.file_name().and_then(|n| n.to_str()))
        .filter(|n| !fixed.contains(n))
        .count();
    let figures = match w.figures.len() {
        0 => String::new(),
        n => format!(", {n} figures in {}", out.join("figures").display()),
    };
    format!(
        "outputs in {}: report.md (start here: every section, figures linked), results.json (every figure), traces.csv (one row per file), {tables} tables{figures}",
        out.display()
    )
}

/// A worker trace that was read (to its end or not): what a batch is for.
fn is_analysed(f: &batch::FileResult) -> bool {
    f.kind == batch::inputs::Kind::Worker && f.status != batch::Status::Skipped
}

/// A batch that read no worker trace exits 1 and says why, rather than
/// writing empty tables under exit 0 (issue 38: `batch emptydir -o X`).
fn nothing_analysed(files: usize, table: Option<&std::path::Path>) -> Exit {
    let listed = table.map_or(String::new(), |t| {
        format!("; {} gives each file's reason", t.display())
    });
    eprintln!(
        "torchtrace: no trace analysed: the PATHs hold {}, none of them a worker trace (a file named *.pt.trace.json[.gz], a Kineto trace by content in a directory, or a trace file given as a PATH){listed}",
        batch::output::count(files, "file")
    );
    Exit::Problems
}

/// Says on stderr why files failed, one line per reason with a count and
/// the first few files (issue 60: a directory of 63 training and
/// inference traces gave ~80 long lines, one per file), then "N of M
/// failed"; exit 1 when there is one. traces.csv keeps every file's whole
/// error.
fn report_failures<'a>(
    failed: impl Iterator<Item = &'a batch::FileResult>,
    attempted: usize,
    table: Option<&std::path::Path>,
) -> Exit {
    let failed: Vec<_> = failed.collect();
    if failed.is_empty() {
        return Exit::Ok;
    }
    for line in failure_lines(
        failed
            .iter()
            .map(|f| (f.path.as_str(), f.error.as_deref().unwrap_or("failed"))),
    ) {
        eprintln!("torchtrace: {line}");
    }
    match table {
        Some(t) => eprintln!(
            "torchtrace: {} of {} failed (see {})",
            failed.len(),
            attempted,
            t.display()
        ),
        None => eprintln!("torchtrace: {} of {} failed", failed.len(), attempted),
    }
    Exit::Problems
}

/// `s` cut to its first `max` characters (an ellipsis says so).
fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// How many files a reason's line names.
const SHOWN_FILES: usize = 2;

/// A failed file's reason without its path and without the lists a
/// message ends with (`…; step names present: …`), so that files failing
/// for one reason share it.
fn reason(path: &str, error: &str) -> String {
    let e = error
        .strip_prefix(path)
        .and_then(|e| e.strip_prefix(": "))
        .unwrap_or(error);
    let e = e.split("; ").next().unwrap_or(e);
    e.trim_end_matches('.').to_string()
}

/// One line per reason, most frequent first (ties: the reason met
/// first): a file alone is named with its whole error; several are
/// counted, with the first [`SHOWN_FILES`] files (by their last path
/// component) as examples.
fn failure_lines<'a>(failed: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let mut groups: Vec<(String, Vec<(&str, &str)>)> = Vec::new();
    for (path, error) in failed {
        let r = reason(path, error);
        match groups.iter_mut().find(|(g, _)| *g == r) {
            Some((_, files)) => files.push((path, error)),
            None => groups.push((r, vec![(path, error)])),
        }
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.1.len()));
    groups
        .into_iter()
        .map(|(r, files)| match files.as_slice() {
            [(path, error)] => {
                let error = error
                    .strip_prefix(*path)
                    .and_then(|e| e.strip_prefix(": "))
                    .unwrap_or(error);
                format!("{path}: {}", clip(error, 240))
            }
            _ => {
                let shown: Vec<&str> = files
                    .iter()
                    .take(SHOWN_FILES)
                    .map(|(p, _)| p.rsplit('/').next().unwrap_or(p))
                    .collect();
                let more = files.len() - shown.len();
                let more = if more > 0 {
                    format!(", {more} more")
                } else {
                    String::new()
                };
                format!(
                    "{} files: {r} (e.g. {}{more})",
                    files.len(),
                    shown.join(", ")
                )
            }
        })
        .collect()
}

#[cfg(test)]
mod failure_tests {
    use super::failure_lines;

    #[test]
    fn one_line_per_reason() {
        let lines = failure_lines(
            [
                ("d/a.json.gz", "d/a.json.gz: no pure-decode vLLM step annotation found; step names present: x ×1"),
                ("d/b.json.gz", "d/b.json.gz: no pure-decode vLLM step annotation found; step names present: y ×2"),
                ("d/c.json.gz", "d/c.json.gz: no pure-decode vLLM step annotation found; step names present: z ×3"),
                ("d/e.json", "not JSON at byte 0"),
            ]
            .into_iter(),
        );
        assert_eq!(
            lines,
            [
                "3 files: no pure-decode vLLM step annotation found (e.g. a.json.gz, b.json.gz, 1 more)",
                "d/e.json: not JSON at byte 0",
            ]
        );
    }
}
