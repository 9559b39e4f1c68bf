//! `batch`: every trace of a benchmark campaign (directories, `.tar`,
//! `.tar.gz`, `.zip`), read once each and in parallel, then grouped by
//! workload and mode, AR compared with MTP, and written out as the paper's
//! tables and figures.
//!
//! ```text
//! PATH… ─ inputs (walk / sniff archives) ─ run (one pass per file, rayon)
//!       ─ finalize (summaries, manifest → mode, workload, tokens)
//!       ─ compare (per workload, AR vs MTP) ─ output (files, report.md)
//! ```

pub mod dedup;
/// What the PATHs hold and what kind of file each is: with the trace files
/// (`tracefile::inputs`), here at its old path.
pub use crate::tracefile::inputs;
pub mod output;
pub mod records;
pub mod run;
pub mod tables;

use crate::analysis::{Analysis, Results};
use crate::campaign::Figures;
use crate::contexts::Selector;
use crate::registry;
use crate::runinfo::{Evidence, Mode, RunInfo};
pub use crate::runinfo::{Manifest, ManifestError, ManifestRow};
use crate::summary::RunSummary;
use inputs::{Input, InputKind, Kind};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// Options of a batch run.
#[derive(Debug)]
pub struct BatchOptions {
    pub selector: Selector,
    /// The analyses run on every worker trace: every analysis of the
    /// registry with options, configured from the campaign's options.
    pub plan: std::sync::Arc<crate::analysis::Plan>,
    pub manifest: Option<Manifest>,
    pub quiet: bool,
    /// Tar members up to this many bytes (as stored) are copied into
    /// memory and parsed in parallel; larger ones are parsed by the
    /// archive's reader thread as they stream ([`run::BUFFER_LIMIT`]).
    pub buffer_limit: u64,
    /// A directory left out of directory walks (the output directory,
    /// canonical path), so that earlier results are not listed as inputs.
    pub exclude: Option<PathBuf>,
    /// The options as they travel in records ([`records::CampaignOptions`]);
    /// `selector`, `hierarchy` and `manifest` are built from them.
    pub campaign: records::CampaignOptions,
}

impl BatchOptions {
    /// These options, reading every trace with `read` (the command line's
    /// `--max-event-size`).
    pub fn reading(mut self, read: crate::trace::ReadOptions) -> Self {
        self.plan = std::sync::Arc::new(self.plan().clone().reading(read));
        self
    }

    /// The analyses run on every worker trace, from one read.
    pub fn plan(&self) -> &crate::analysis::Plan {
        &self.plan
    }
}

/// What became of one input file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Error,
    Skipped,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Skipped => "skipped",
        }
    }
}

/// The outcome of reading one file: what the map step of a batch gives
/// per file, and what a record (`--records`, [`records`]) holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileResult {
    /// Label: relative to the PATH when there is one PATH, else prefixed
    /// with it; never used to write anything.
    pub path: String,
    /// Index of the PATH it came from.
    pub input: usize,
    pub kind: Kind,
    pub size: u64,
    pub status: Status,
    pub error: Option<String>,
    /// Each analysis's figures, keyed by analysis (worker traces that
    /// could be read at least in part; empty otherwise).
    pub results: Results,
    /// The parsed run summary (summary files).
    pub summary: Option<RunSummary>,
    pub dir_name: Option<String>,
    #[serde(with = "crate::record::opt_path")]
    pub fs_path: Option<PathBuf>,
    pub ordinal: u64,
    /// For a trace named directly as a PATH: the run summary found beside
    /// it on disk (read where the trace is read, so that merging never
    /// touches the inputs).
    pub summary_beside: Option<SummaryBeside>,
}

impl FileResult {
    /// The figures of analysis `A`, if it ran on this file.
    pub fn get<A: Analysis>(&self) -> Option<&A::Output> {
        self.results.get::<A>()
    }
}

/// A run summary beside a trace on disk: its path, and its contents or
/// why they are unusable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryBeside {
    pub label: String,
    pub summary: Result<RunSummary, String>,
}

/// A file with what is known about its run.
#[derive(Debug, Clone)]
pub struct Record {
    pub file: FileResult,
    /// Tokens, mode and workload, and where each came from.
    pub run: RunInfo,
}

/// AR against one MTP trace of a workload.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadComparison {
    pub workload: String,
    pub baseline_mode: String,
    pub candidate_mode: String,
    /// Each analysis's figures of the match
    /// ([`crate::campaign::InBatch::batch_compare`]): `pair`'s S_context and
    /// ratios among these keys, `kernels`' under its key, …
    #[serde(flatten)]
    pub figures: Figures,
    /// Indices into `BatchResult::records`.
    #[serde(skip)]
    pub baseline_index: usize,
    #[serde(skip)]
    pub candidate_index: usize,
}

/// Everything a batch found.
#[derive(Debug)]
pub struct BatchResult {
    pub inputs: Vec<Input>,
    /// Sorted by path (then input, then position in it).
    pub records: Vec<Record>,
    /// AR matched with MTP runs, one comparison per match.
    pub comparisons: Vec<WorkloadComparison>,
    /// One comparison per workload over all its runs of each mode.
    pub pooled: Vec<PooledComparison>,
    /// Workloads lacking an AR or an MTP trace, and other remarks.
    pub notes: Vec<String>,
}

impl BatchResult {
    pub fn failed(&self) -> impl Iterator<Item = &Record> {
        self.records
            .iter()
            .filter(|r| r.file.status == Status::Error)
    }

    /// Files read (status ok or error); skipped files are not counted.
    pub fn attempted(&self) -> usize {
        self.records
            .iter()
            .filter(|r| r.file.status != Status::Skipped)
            .count()
    }
}

/// Sorts the file results and resolves mode, workload and tokens.
pub fn finalize(
    inputs: Vec<Input>,
    mut files: Vec<FileResult>,
    opts: &BatchOptions,
) -> BatchResult {
    files.sort_by(|a, b| {
        (a.path.as_str(), a.input, a.ordinal).cmp(&(b.path.as_str(), b.input, b.ordinal))
    });
    // Summaries by (input, label), copied (small): each file's row moves
    // into its record below, never cloned (issue 59: a campaign held every
    // trace's figures twice here).
    let mut summaries: HashMap<(usize, String), RunSummary> = HashMap::new();
    for f in &files {
        if let Some(s) = &f.summary {
            summaries
                .entry((f.input, f.path.clone()))
                .or_insert_with(|| s.clone());
        }
    }
    let mut records = Vec::with_capacity(files.len());
    let mut notes = Vec::new();
    for file in files {
        let mut rec = Record {
            file,
            run: RunInfo::default(),
        };
        if rec.file.kind != Kind::Worker {
            records.push(rec);
            continue;
        }
        let f = &rec.file;
        // The run summary: in the same input, beside the trace; for a trace
        // named directly, the file beside it on disk.
        let mut found: Option<(String, RunSummary)> = None;
        if let Some(sl) = crate::tracefile::summary_label_for(&f.path) {
            let hit = summaries.get(&(f.input, sl.clone())).cloned();
            found = hit.map(|s| (sl, s));
        }
        if found.is_none() && inputs.get(f.input).map(|i| i.kind) == Some(InputKind::File) {
            match &f.summary_beside {
                Some(SummaryBeside {
                    label,
                    summary: Ok(s),
                }) => found = Some((label.clone(), s.clone())),
                Some(SummaryBeside {
                    label,
                    summary: Err(e),
                }) => notes.push(format!("{}: run summary {label} unusable: {e}", f.path)),
                None => {}
            }
        }
        let evidence = Evidence {
            summary_beside: found,
            manifest: opts
                .manifest
                .as_ref()
                .and_then(|m| m.lookup(&f.path, f.fs_path.as_deref())),
            step_names: registry::facts(&f.results).map_or(&[], |p| p.step_names),
            dir_name: f.dir_name.as_deref(),
            ..Default::default()
        };
        rec.run = evidence.resolve();
        let t = rec.run.tokens.as_ref();
        let (tokens, source) = (t.map(|t| t.value), t.map(|t| t.source.describe()));
        rec.file.results.set_tokens(tokens, source.as_deref());
        records.push(rec);
    }
    if !records.iter().any(|r| r.file.kind == Kind::Worker) {
        notes.push("no worker traces (*.pt.trace.json[.gz]) found in the inputs".into());
    }
    let comparisons = compare_workloads(&records, &mut notes);
    let pooled = pool_workloads(&records, &mut notes);
    BatchResult {
        inputs,
        records,
        comparisons,
        pooled,
        notes,
    }
}

/// The rank of a trace: `rank<N>` in the vLLM file name
/// (`dp0_pp0_tp0_dcp0_ep0_rank<N>.<id>.pt.trace.json.gz`), else the
/// metadata's rank.
pub(crate) fn rank_key(r: &Record) -> Option<i64> {
    rank_in_name(&r.file.path).or_else(|| registry::facts(&r.file.results).and_then(|p| p.rank))
}

/// The rank a path's file name gives (`…rank<digits>…`, the first
/// `rank`), when its digits fit i64.
#[doc(hidden)]
pub fn rank_in_name(path: &str) -> Option<i64> {
    let file = path.rsplit('/').next()?;
    file.find("rank").and_then(|at| {
        let digits: String = file[at + 4..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    })
}

/// AR against MTP over all the runs of a workload: Σ GPU spans / Σ tokens
/// of each mode, the pooled context counts and the medians over every
/// measured context.
#[derive(Debug, Clone, Serialize)]
pub struct PooledComparison {
    pub workload: String,
    pub baseline_mode: String,
    pub candidate_mode: String,
    /// Traces pooled on each side.
    pub baseline_traces: usize,
    pub candidate_traces: usize,
    /// Each analysis's pooled figures ([`crate::campaign::InBatch::batch_pool`]).
    #[serde(flatten)]
    pub figures: Figures,
}

/// The runs of one workload, by side.
#[derive(Default)]
struct Sides {
    ar: Vec<usize>,
    cand: Vec<usize>,
}

/// Within each workload, AR runs (baseline) are matched with the runs of
/// the other mode (candidate) and each match is compared once:
///
/// - one run on each side: they are compared;
/// - else runs are matched by (rank, occurrence): the k-th AR trace of a
///   rank (in sorted path order) with the k-th candidate trace of that
///   rank; traces without a rank form one group matched in order.
///
/// Unmatched runs are noted. The number of comparisons is at most the
/// number of runs of the smaller side: never the cross product. The pooled
/// comparisons ([`pool_workloads`]) add one per workload.
fn compare_workloads(records: &[Record], notes: &mut Vec<String>) -> Vec<WorkloadComparison> {
    let (by_wl, failed) = workload_sides(records, notes);
    let mut out = Vec::new();
    for (w, sides) in &by_wl {
        let (ar, cand) = (&sides.ar, &sides.cand);
        if ar.is_empty() || cand.is_empty() {
            let side = |is_ar: bool, empty: bool| -> Option<String> {
                let what = if is_ar { "AR" } else { "MTP" };
                let n = failed.get(&(*w, is_ar)).copied().unwrap_or(0);
                match (empty, n) {
                    (false, _) => None,
                    (true, 0) => Some(format!("no {what} trace")),
                    (true, n) => Some(format!("no {what} trace read without error ({n} failed)")),
                }
            };
            let missing: Vec<String> = [side(true, ar.is_empty()), side(false, cand.is_empty())]
                .into_iter()
                .flatten()
                .collect();
            notes.push(format!(
                "workload {w}: {} — nothing to compare",
                missing.join(", ")
            ));
            continue;
        }
        let (matches, unmatched) = match_runs(records, ar, cand);
        if unmatched > 0 {
            notes.push(format!(
                "workload {w}: {unmatched} trace(s) without a counterpart of the same rank in the other mode: not compared one to one (they are in the pooled comparison)"
            ));
        }
        for (b, c) in matches {
            let figures = registry::compare(&records[b].file.results, &records[c].file.results);
            if figures.is_empty() {
                continue;
            }
            out.push(WorkloadComparison {
                workload: w.to_string(),
                baseline_mode: "ar".into(),
                candidate_mode: records[c].run.mode().unwrap_or_default().to_string(),
                figures,
                baseline_index: b,
                candidate_index: c,
            });
        }
    }
    out
}

/// Worker traces read without error by workload and side; failed ones
/// counted by (workload, is AR).
type WorkloadSides<'a> = (BTreeMap<&'a str, Sides>, BTreeMap<(&'a str, bool), usize>);

fn workload_sides<'a>(records: &'a [Record], notes: &mut Vec<String>) -> WorkloadSides<'a> {
    let mut by_wl: BTreeMap<&str, Sides> = BTreeMap::new();
    let mut failed: BTreeMap<(&str, bool), usize> = BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        if r.file.kind != Kind::Worker || r.file.status == Status::Skipped {
            continue;
        }
        if r.file.status != Status::Ok || registry::facts(&r.file.results).is_none() {
            if let Some(w) = r.run.workload() {
                by_wl.entry(w).or_default();
                *failed
                    .entry((w, r.run.mode_class() == Mode::Ar))
                    .or_default() += 1;
            }
            continue;
        }
        let (Some(w), Some(m)) = (r.run.workload(), r.run.mode()) else {
            notes.push(format!(
                "{}: mode or workload unknown; not compared (add a run summary or --manifest)",
                r.file.path
            ));
            continue;
        };
        let e = by_wl.entry(w).or_default();
        if Mode::of(m) == Mode::Ar {
            e.ar.push(i);
        } else {
            e.cand.push(i);
        }
    }
    (by_wl, failed)
}

/// The (AR, candidate) matches of one workload and the number of runs
/// left without one; linear in the number of runs.
fn match_runs(records: &[Record], ar: &[usize], cand: &[usize]) -> (Vec<(usize, usize)>, usize) {
    match_ranked(ar, cand, |i| rank_key(&records[i]))
}

/// [`match_runs`] over any rank of a run (`rank(i)`, `None`: no rank):
/// one run on each side is matched whatever its rank; else the runs of
/// one rank (no rank is a rank of its own) are matched in the order given,
/// the k-th AR with the k-th candidate. The matches, sorted, and how many
/// runs are left without one. Public for the `grouping` fuzz target.
#[doc(hidden)]
pub fn match_ranked(
    ar: &[usize],
    cand: &[usize],
    rank: impl Fn(usize) -> Option<i64>,
) -> (Vec<(usize, usize)>, usize) {
    if ar.len() == 1 && cand.len() == 1 {
        return (vec![(ar[0], cand[0])], 0);
    }
    // Records are sorted by path: occurrences count in that order.
    let group = |side: &[usize]| -> BTreeMap<Option<i64>, Vec<usize>> {
        let mut g: BTreeMap<Option<i64>, Vec<usize>> = BTreeMap::new();
        for &i in side {
            g.entry(rank(i)).or_default().push(i);
        }
        g
    };
    let (ga, mut gc) = (group(ar), group(cand));
    let mut matches = Vec::new();
    for (rank, a) in &ga {
        let c = gc.remove(rank).unwrap_or_default();
        matches.extend(a.iter().copied().zip(c.iter().copied()));
    }
    let unmatched = ar.len() + cand.len() - 2 * matches.len();
    matches.sort();
    (matches, unmatched)
}

/// One pooled comparison per workload holding an AR run and a run of
/// another mode (every candidate mode pooled together, named by the
/// first). A note gives its figures when a workload has several runs of
/// a mode (with one run each, it equals the one matched comparison).
fn pool_workloads(records: &[Record], notes: &mut Vec<String>) -> Vec<PooledComparison> {
    let (by_wl, _) = workload_sides(records, &mut Vec::new());
    let mut out = Vec::new();
    for (w, sides) in by_wl {
        if sides.ar.is_empty() || sides.cand.is_empty() {
            continue;
        }
        let results = |side: &[usize]| -> Vec<&Results> {
            side.iter().map(|&i| &records[i].file.results).collect()
        };
        let (figures, said) = registry::pool(w, &results(&sides.ar), &results(&sides.cand));
        if figures.is_empty() {
            continue;
        }
        let p = PooledComparison {
            workload: w.to_string(),
            baseline_mode: "ar".into(),
            candidate_mode: records[sides.cand[0]]
                .run
                .mode()
                .unwrap_or_default()
                .to_string(),
            baseline_traces: sides.ar.len(),
            candidate_traces: sides.cand.len(),
            figures,
        };
        if p.baseline_traces > 1 || p.candidate_traces > 1 {
            for note in said {
                notes.push(format!(
                    "workload {w}: pooled over {} AR and {} {} traces {note}",
                    p.baseline_traces, p.candidate_traces, p.candidate_mode,
                ));
            }
        }
        out.push(p);
    }
    out
}

/// Lists the PATH arguments. A PATH that cannot be used (missing,
/// unreadable, a FIFO or device) is kept, with its reason: it becomes one
/// failed row while the others are read.
pub fn resolve_inputs(paths: &[PathBuf]) -> Vec<Input> {
    let several = paths.len() > 1;
    paths
        .iter()
        .map(|p| {
            let (kind, error) = match inputs::detect(p) {
                Ok(k) => (k, None),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => (
                    InputKind::File,
                    Some("no such file or directory".to_string()),
                ),
                Err(e) => (InputKind::File, Some(format!("cannot read: {e}"))),
            };
            let shown = p.display().to_string();
            let prefix = if several && kind != InputKind::File {
                format!("{}/", shown.trim_end_matches(['/', '\\']))
            } else {
                String::new()
            };
            Input {
                path: shown,
                kind,
                prefix,
                fs_path: p.clone(),
                error,
            }
        })
        .collect()
}

/// Runs a whole batch in this process: plan, map every unit, merge — the
/// path that shards and distributed runs take in pieces
/// ([`records`]). Failures of single inputs or files are rows of the
/// result, never an `Err`; the context as the outputs say it comes with it.
pub fn run_batch(
    paths: &[PathBuf],
    opts: &BatchOptions,
) -> Result<(BatchResult, String), records::RecordError> {
    let header = records::plan_campaign(paths, opts.campaign.clone(), opts.exclude.as_deref())?;
    let files = records::map(&header, records::Shard::ALL, opts);
    let set = records::RecordSet {
        header,
        files,
        complete: true,
    };
    records::merge_with(vec![set], opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn opts(buffer_limit: u64) -> BatchOptions {
        let mut o = records::CampaignOptions::default()
            .batch_options(true)
            .unwrap();
        o.buffer_limit = buffer_limit;
        o
    }

    /// Large tar members are parsed while streaming, small ones buffered
    /// and parsed in parallel: both give the same figures.
    #[test]
    fn tar_members_streamed_or_buffered_agree() {
        use std::io::Write;
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces");
        let tmp = tempfile::tempdir().unwrap();
        let tgz = tmp.path().join("t.tgz");
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&tgz).unwrap(),
            flate2::Compression::fast(),
        );
        let mut b = tar::Builder::new(gz);
        for dir in ["text_ar", "text_mtp"] {
            b.append_dir_all(dir, root.join(dir)).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap().flush().unwrap();
        let streamed = run_batch(std::slice::from_ref(&tgz), &opts(0)).unwrap().0;
        let buffered = run_batch(&[tgz], &opts(run::BUFFER_LIMIT)).unwrap().0;
        let figures = |r: &BatchResult| -> Vec<_> {
            r.records
                .iter()
                .map(|r| {
                    (
                        r.file.path.clone(),
                        r.file.status,
                        r.run.mode.clone(),
                        r.file.results.clone(),
                    )
                })
                .collect()
        };
        assert_eq!(figures(&streamed), figures(&buffered));
        assert_eq!(streamed.records.len(), 6);
        assert_eq!(streamed.comparisons.len(), 1);
        assert_eq!(streamed.failed().count(), 0);
        let s_context =
            |r: &BatchResult| serde_json::to_value(&r.comparisons[0]).unwrap()["s_context"].clone();
        assert_eq!(s_context(&streamed), s_context(&buffered));
        assert!(s_context(&streamed).as_f64().is_some());
    }

    #[test]
    fn manifest_lookup() {
        let m = Manifest {
            rows: vec![
                ManifestRow {
                    path: "a/t.pt.trace.json.gz".into(),
                    mode: Some("ar".into()),
                    workload: None,
                    completion_tokens: Some(3),
                },
                ManifestRow {
                    path: "t.pt.trace.json.gz".into(),
                    mode: Some("mtp".into()),
                    workload: None,
                    completion_tokens: None,
                },
            ],
        };
        assert_eq!(
            m.lookup("x/a/t.pt.trace.json.gz", None)
                .unwrap()
                .mode
                .as_deref(),
            Some("ar")
        );
        assert_eq!(
            m.lookup("b/t.pt.trace.json.gz", None)
                .unwrap()
                .mode
                .as_deref(),
            Some("mtp")
        );
        assert!(m.lookup("b/xt.pt.trace.json.gz", None).is_none());
    }
}
