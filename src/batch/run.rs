//! Reading every file of every input once, in parallel where the input
//! allows it, into one [`FileResult`] per file.
//!
//! - Directory files and zip members are independent: rayon processes
//!   them in parallel (each zip task opens its own handle on the archive;
//!   zip members are random-access).
//! - A tar (or tar.gz) can only be read front to back. A reader thread
//!   walks it once; each trace member up to [`BUFFER_LIMIT`] bytes (as
//!   stored, i.e. still gzip-compressed when it is `.gz`) is copied into
//!   memory and handed to rayon through a channel of `threads` slots, so
//!   parsing runs in parallel while the archive streams; larger members are
//!   parsed by the reader thread straight from the archive stream. Memory
//!   stays bounded by about (2 × threads + 1) member buffers plus one
//!   file's analysis state per thread; no member is ever written to disk.
//! - Run summaries are small: they are read into memory wherever they come
//!   from, and matched to traces afterwards (in `batch::finalize`), so a
//!   tar needs a single pass whatever order its members are in.

use super::inputs::{self, DirFile, Input, InputKind, Kind};
use super::{BatchOptions, FileResult, Status};
use crate::analysis::{self, TraceResult};
use crate::summary;
use crate::trace::open::CountingReader;
use flate2::read::MultiGzDecoder;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Tar members up to this size (as stored) are buffered and parsed in
/// parallel; larger ones are parsed while streaming (the default of
/// [`BatchOptions::buffer_limit`]).
pub const BUFFER_LIMIT: u64 = 256 << 20;

/// Run summaries larger than this are refused (they are a few KiB).
const SUMMARY_LIMIT: u64 = 16 << 20;

/// What is known about a file before it is read.
#[derive(Debug, Clone)]
pub struct EntryInfo {
    pub path: String,
    pub input: usize,
    pub kind: Kind,
    pub size: u64,
    /// Name of the directory holding the file (workload fallback).
    pub dir_name: Option<String>,
    /// Where it is on disk (directory and file inputs).
    pub fs_path: Option<PathBuf>,
    /// Position in its input (archives may hold one name twice).
    pub ordinal: u64,
}

impl EntryInfo {
    fn result(self, status: Status, error: Option<String>) -> FileResult {
        FileResult {
            path: self.path,
            input: self.input,
            kind: self.kind,
            size: self.size,
            status,
            error,
            results: Default::default(),
            summary: None,
            dir_name: self.dir_name,
            fs_path: self.fs_path,
            ordinal: self.ordinal,
            summary_beside: None,
        }
    }

    fn skipped(self, why: Option<String>) -> FileResult {
        self.result(Status::Skipped, why)
    }
}

/// Turns the driver's result for one file into its batch row.
fn finish(info: EntryInfo, res: TraceResult) -> FileResult {
    let error = match (&res.error, &res.contexts.problem) {
        (Some(e), _) => Some(e.kind.to_string()),
        (None, Some(p)) => {
            let msg = p.to_string();
            // The path is in its own column.
            let own = format!("{}: ", info.path);
            Some(msg.strip_prefix(&own).map(str::to_string).unwrap_or(msg))
        }
        (None, None) => None,
    };
    let status = if error.is_some() {
        Status::Error
    } else {
        Status::Ok
    };
    let unreadable = res.unreadable();
    let mut r = info.result(status, error);
    // Figures of a file that gave no event at all mean nothing.
    if !unreadable {
        r.results = res.results;
    }
    r
}

fn trace_from_reader<R: Read>(info: EntryInfo, src: R, opts: &BatchOptions) -> FileResult {
    let res = analysis::analyze_reader(&info.path, src, opts.plan());
    finish(info, res)
}

fn trace_from_path(
    info: EntryInfo,
    path: &Path,
    counter: Arc<AtomicU64>,
    opts: &BatchOptions,
) -> FileResult {
    let res = analysis::analyze_file(&info.path, path, counter, opts.plan());
    finish(info, res)
}

fn summary_from_reader<R: Read>(info: EntryInfo, src: R) -> FileResult {
    let mut bytes = Vec::new();
    if let Err(e) = src.take(SUMMARY_LIMIT + 1).read_to_end(&mut bytes) {
        return info.result(Status::Error, Some(format!("cannot read run summary: {e}")));
    }
    if bytes.len() as u64 > SUMMARY_LIMIT {
        return info.result(
            Status::Error,
            Some(format!(
                "larger than {} MiB: not a run summary",
                SUMMARY_LIMIT >> 20
            )),
        );
    }
    match summary::parse(&bytes, &info.path) {
        Ok(s) => {
            let mut r = info.result(Status::Ok, None);
            r.summary = Some(s);
            r
        }
        Err(summary::SummaryError::Json { source, .. }) => {
            info.result(Status::Error, Some(format!("not a run summary: {source}")))
        }
        Err(e) => info.result(Status::Error, Some(e.to_string())),
    }
}

/// Runs the work on one file; a panic in it (a bug) becomes that file's
/// error row, "internal error: …", and the rest of the batch completes.
fn guarded(info: &EntryInfo, work: impl FnOnce() -> FileResult) -> FileResult {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            info.clone()
                .result(Status::Error, Some(format!("internal error: {what}")))
        }
    }
}

/// Files skipped by kind, and why.
fn skip_reason(kind: Kind) -> Option<String> {
    Some(
        match kind {
            Kind::Frontend => "frontend (AsyncLLM) trace: no engine steps",
            Kind::Capture => "capture trace (capture_traces/): not analysed",
            Kind::ProfilerOut => "torch key_averages table: not analysed",
            Kind::Other => "not a trace",
            Kind::Worker | Kind::Summary => return None,
        }
        .to_string(),
    )
}

/// What each input holds, found before any trace is read (so that the
/// progress bar knows the total, and shards can split the work).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Plan {
    Directory(Vec<DirFile>, Vec<inputs::WalkIssue>),
    /// A file named as a PATH; `dup_of`: see [`DirFile::dup_of`].
    File {
        dup_of: Option<String>,
    },
    Tar {
        gz: bool,
    },
    Zip(Vec<ZipMember>),
    /// The input could not be opened or listed.
    Broken(String),
    /// Nothing of this input is read here: another shard reads it.
    Elsewhere,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZipMember {
    pub index: usize,
    pub name: String,
    pub size: u64,
    pub compressed: u64,
    pub is_dir: bool,
    /// Why it is not read: another member has its name, and the zip
    /// reader sees only one of them (see `list_zip`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadowed: Option<String>,
}

/// Lists an input; `skip`: a directory left out of walks (OUTDIR).
pub fn plan(input: &Input, skip: Option<&Path>) -> Plan {
    if let Some(why) = &input.error {
        return Plan::Broken(why.clone());
    }
    match input.kind {
        InputKind::Directory => match inputs::walk(&input.fs_path, skip) {
            Ok((mut files, errors)) => {
                for (i, f) in files.iter_mut().enumerate() {
                    f.ordinal = i as u64;
                }
                Plan::Directory(files, errors)
            }
            Err(e) => Plan::Broken(format!("cannot read directory: {e}")),
        },
        InputKind::File => Plan::File { dup_of: None },
        InputKind::Tar => Plan::Tar { gz: false },
        InputKind::TarGz => Plan::Tar { gz: true },
        InputKind::Zip => match list_zip(&input.fs_path) {
            Ok(m) => Plan::Zip(m),
            Err(e) => Plan::Broken(format!("cannot read zip archive: {e}")),
        },
    }
}

fn list_zip(path: &Path) -> Result<Vec<ZipMember>, String> {
    let f = File::open(path).map_err(|e| e.to_string())?;
    let mut z = zip::ZipArchive::new(BufReader::new(f)).map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(z.len());
    for index in 0..z.len() {
        let m = z
            .by_index_raw(index)
            .map_err(|e| format!("member {index}: {e}"))?;
        out.push(ZipMember {
            index,
            name: m.name().to_string(),
            size: m.size(),
            compressed: m.compressed_size(),
            is_dir: m.is_dir(),
            shadowed: None,
        });
    }
    // The zip reader keeps one entry per name (the last): the others would
    // vanish without a row. Each becomes a member of its own (an index past
    // the reader's), reported as an error, never read.
    let dir = zip_directory(path);
    let listed = dir.as_ref().map_or(0, |d| d.count);
    if listed > z.len() as u64 {
        let hidden = dir
            .as_ref()
            .and_then(|d| shadowed_entries(path, d))
            .filter(|h| h.len() as u64 == listed - z.len() as u64)
            .ok_or_else(|| {
                format!(
                    "the archive lists {listed} entries but only {} distinct names, and its central directory could not be read to find which: refused rather than drop a member",
                    z.len()
                )
            })?;
        let why = "another member of this archive has the same name and a zip reader sees only one of them (the last): not analysed (rename the members)";
        for (k, (name, size)) in hidden.into_iter().enumerate() {
            out.push(ZipMember {
                index: z.len() + k,
                is_dir: name.ends_with('/'),
                name,
                size,
                compressed: 0,
                shadowed: Some(why.to_string()),
            });
        }
    }
    Ok(out)
}

/// Where a zip's central directory is and how many entries it declares
/// (from the end-of-central-directory record; zip64 included).
#[derive(Debug)]
struct ZipDirectory {
    count: u64,
    /// Absolute offset of the central directory's first entry.
    start: u64,
    size: u64,
}

fn zip_directory(path: &Path) -> Option<ZipDirectory> {
    use std::io::{Seek, SeekFrom};
    let mut f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let tail_len = len.min(22 + 65535 + 20);
    let tail_at = len - tail_len;
    f.seek(SeekFrom::Start(tail_at)).ok()?;
    let mut tail = vec![0u8; tail_len as usize];
    f.read_exact(&mut tail).ok()?;
    let at = tail
        .windows(4)
        .rposition(|w| w == b"PK\x05\x06")
        .filter(|&a| a + 22 <= tail.len())?;
    let u16_at = |b: &[u8], i: usize| u64::from(u16::from_le_bytes([b[i], b[i + 1]]));
    let u32_at =
        |b: &[u8], i: usize| u64::from(u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]));
    let u64_at = |b: &[u8], i: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[i..i + 8]);
        u64::from_le_bytes(x)
    };
    let (count, size) = (u16_at(&tail, at + 10), u32_at(&tail, at + 12));
    if count != 0xFFFF && size != 0xFFFF_FFFF {
        // The directory ends where this record begins (prefixed archives too).
        let end = tail_at + at as u64;
        return Some(ZipDirectory {
            count,
            start: end.checked_sub(size)?,
            size,
        });
    }
    // Zip64: the locator just before the record gives the zip64 record.
    let loc = at.checked_sub(20)?;
    if &tail[loc..loc + 4] != b"PK\x06\x07" {
        return None;
    }
    let rec_at = u64_at(&tail, loc + 8);
    f.seek(SeekFrom::Start(rec_at)).ok()?;
    let mut rec = [0u8; 56];
    f.read_exact(&mut rec).ok()?;
    if &rec[..4] != b"PK\x06\x06" {
        return None;
    }
    let size = u64_at(&rec, 40);
    Some(ZipDirectory {
        count: u64_at(&rec, 32),
        start: rec_at.checked_sub(size)?,
        size,
    })
}

/// The central-directory entries hidden behind a later one of the same
/// name (every occurrence but the last), as (name, size), in directory
/// order; `None` when the directory cannot be walked.
fn shadowed_entries(path: &Path, dir: &ZipDirectory) -> Option<Vec<(String, u64)>> {
    use std::io::{Seek, SeekFrom};
    let mut f = BufReader::new(File::open(path).ok()?);
    f.seek(SeekFrom::Start(dir.start)).ok()?;
    let mut entries: Vec<(Vec<u8>, u64)> = Vec::new();
    let mut last: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut read = 0u64;
    for k in 0..dir.count {
        let mut h = [0u8; 46];
        f.read_exact(&mut h).ok()?;
        if &h[..4] != b"PK\x01\x02" {
            return None;
        }
        let u16_at = |i: usize| u16::from_le_bytes([h[i], h[i + 1]]) as usize;
        let size = u64::from(u32::from_le_bytes([h[24], h[25], h[26], h[27]]));
        let (name_len, extra, comment) = (u16_at(28), u16_at(30), u16_at(32));
        let mut name = vec![0u8; name_len];
        f.read_exact(&mut name).ok()?;
        f.seek_relative((extra + comment) as i64).ok()?;
        read += (46 + name_len + extra + comment) as u64;
        if read > dir.size {
            return None;
        }
        last.insert(name.clone(), k as usize);
        entries.push((name, size));
    }
    Some(
        entries
            .into_iter()
            .enumerate()
            .filter(|(k, (name, _))| last.get(name) != Some(k))
            .map(|(_, (name, size))| (String::from_utf8_lossy(&name).into_owned(), size))
            .collect(),
    )
}

impl Plan {
    /// Bytes the progress bar expects to see read.
    pub fn bytes(&self, input: &Input) -> u64 {
        let file_size = || {
            std::fs::metadata(&input.fs_path)
                .map(|m| m.len())
                .unwrap_or(0)
        };
        match self {
            Plan::Directory(files, _) => files
                .iter()
                .filter(|f| inputs::classify(&f.rel, false) == Kind::Worker)
                .map(|f| f.size)
                .sum(),
            Plan::File { .. } | Plan::Tar { .. } => file_size(),
            Plan::Zip(m) => m
                .iter()
                .filter(|m| !m.is_dir && inputs::classify(&m.name, false) == Kind::Worker)
                .map(|m| m.compressed)
                .sum(),
            Plan::Broken(_) | Plan::Elsewhere => 0,
        }
    }
}

/// The rows one input got, indexed by label and by position, so that
/// checking every unit of a large directory stays linear.
#[derive(Debug, Default)]
pub struct RowsOf<'a> {
    paths: std::collections::HashSet<&'a str>,
    ordinals: std::collections::HashSet<u64>,
    any: bool,
}

impl<'a> RowsOf<'a> {
    pub fn add(&mut self, r: &'a FileResult) {
        self.paths.insert(&r.path);
        self.ordinals.insert(r.ordinal);
        self.any = true;
    }
}

/// One unit of work of a plan: what a shard or a distributed task reads.
/// Directory files and zip members are units of their own; a tar (read
/// front to back), a file PATH and a broken input are one unit each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unit {
    /// The plan of this unit alone.
    pub plan: Plan,
    /// Bytes it reads (as stored), for balancing shards.
    pub bytes: u64,
    /// The label of the file it reads, or the input's path.
    pub label: String,
}

impl Plan {
    /// The units of work of this input's plan, in listing order.
    pub fn units(&self, input: &Input) -> Vec<Unit> {
        let whole = |bytes| {
            vec![Unit {
                plan: self.clone(),
                bytes,
                label: input.path.clone(),
            }]
        };
        match self {
            Plan::Directory(files, issues) => {
                let files = files.iter().map(|f| Unit {
                    plan: Plan::Directory(vec![f.clone()], Vec::new()),
                    bytes: f.size,
                    label: input.label(&f.rel),
                });
                let issues = issues.iter().map(|i| Unit {
                    plan: Plan::Directory(Vec::new(), vec![i.clone()]),
                    bytes: 0,
                    label: input.label(&i.rel),
                });
                files.chain(issues).collect()
            }
            Plan::Zip(members) => members
                .iter()
                .filter(|m| !m.is_dir)
                .map(|m| Unit {
                    plan: Plan::Zip(vec![m.clone()]),
                    bytes: m.compressed,
                    label: input.label(&m.name),
                })
                .collect(),
            Plan::File { .. } | Plan::Tar { .. } => whole(self.bytes(input)),
            Plan::Broken(_) => whole(0),
            Plan::Elsewhere => Vec::new(),
        }
    }

    /// The plan of several units of one input (the inverse of
    /// [`Plan::units`]); none: [`Plan::Elsewhere`].
    pub fn join(units: Vec<Plan>) -> Plan {
        let mut out = Plan::Elsewhere;
        for u in units {
            out = match (out, u) {
                (Plan::Elsewhere, u) => u,
                (Plan::Directory(mut f, mut i), Plan::Directory(f2, i2)) => {
                    f.extend(f2);
                    i.extend(i2);
                    Plan::Directory(f, i)
                }
                (Plan::Zip(mut m), Plan::Zip(m2)) => {
                    m.extend(m2);
                    Plan::Zip(m)
                }
                // Whole-input plans are one unit: a second cannot occur.
                (kept, _) => kept,
            };
        }
        out
    }

    /// Whether the rows this plan's input got hold the outcome of this
    /// one-unit plan.
    pub fn covered_by(&self, input: &Input, rows: &RowsOf<'_>) -> bool {
        match self {
            Plan::Directory(files, issues) => files
                .iter()
                .map(|f| &f.rel)
                .chain(issues.iter().map(|i| &i.rel))
                .all(|rel| rows.paths.contains(input.label(rel).as_str())),
            Plan::Zip(members) => members
                .iter()
                .all(|m| rows.ordinals.contains(&(m.index as u64))),
            Plan::Elsewhere => true,
            Plan::File { .. } | Plan::Tar { .. } | Plan::Broken(_) => rows.any,
        }
    }

    /// The rows of a unit that was not read (its task failed, its shard's
    /// records are missing): each file it would have read is a failed row
    /// saying why; directory entries that are read by nobody stay as they
    /// are.
    pub fn failed_rows(&self, idx: usize, input: &Input, why: &str) -> Vec<FileResult> {
        // Files that would not have been read keep the row reading gives.
        let fail = |info: EntryInfo| match info.kind {
            Kind::Worker | Kind::Summary => info.result(Status::Error, Some(why.to_string())),
            k => info.skipped(skip_reason(k)),
        };
        match self {
            Plan::Directory(files, issues) => {
                let files = files.iter().map(|f| {
                    let info = dir_file_info(idx, input, f);
                    match &f.dup_of {
                        Some(dup) => info.skipped(Some(dup.clone())),
                        None => fail(info),
                    }
                });
                let issues = issues.iter().map(|i| issue_row(idx, input, i.clone()));
                files.chain(issues).collect()
            }
            Plan::Zip(members) => members
                .iter()
                .map(
                    |m| match member_info(idx, input, &m.name, m.size, m.index as u64) {
                        (info, None) if m.shadowed.is_none() => fail(info),
                        (info, why) => {
                            info.result(Status::Error, why.or_else(|| m.shadowed.clone()))
                        }
                    },
                )
                .collect(),
            Plan::File { dup_of: Some(dup) } => {
                vec![file_info(idx, input).skipped(Some(dup.clone()))]
            }
            Plan::File { dup_of: None } => vec![fail(file_info(idx, input))],
            Plan::Tar { .. } | Plan::Broken(_) => vec![input_error(idx, input, why.to_string())],
            Plan::Elsewhere => Vec::new(),
        }
    }
}

/// The parent directory's name of a `/`-separated relative name, else the
/// input's own name.
fn dir_name_of(rel: &str, input: &Input) -> Option<String> {
    match rel.rsplit_once('/') {
        Some((dir, _)) => dir.rsplit('/').next().map(str::to_string),
        None => input.stem(),
    }
}

/// Reads everything one input holds.
pub fn process(
    idx: usize,
    input: &Input,
    plan: Plan,
    opts: &BatchOptions,
    progress: &Progress,
) -> Vec<FileResult> {
    match plan {
        Plan::Broken(why) => vec![input_error(idx, input, why)],
        Plan::Elsewhere => Vec::new(),
        Plan::File { dup_of } => {
            let info = file_info(idx, input);
            if let Some(why) = dup_of {
                progress.file_done();
                return vec![info.skipped(Some(why))];
            }
            let mut r = process_file(info, &input.fs_path, opts, progress);
            if r.kind == Kind::Worker {
                r.summary_beside = summary_beside(&input.fs_path, &input.path);
            }
            vec![r]
        }
        Plan::Directory(files, issues) => {
            let mut out: Vec<FileResult> = files
                .par_iter()
                .map(|f| {
                    let info = dir_file_info(idx, input, f);
                    if let Some(why) = &f.dup_of {
                        progress.file_done();
                        return info.skipped(Some(why.clone()));
                    }
                    process_file(info, &f.path, opts, progress)
                })
                .collect();
            for issue in issues {
                progress.file_done();
                out.push(issue_row(idx, input, issue));
            }
            out
        }
        Plan::Zip(members) => process_zip(idx, input, &members, opts, progress),
        Plan::Tar { gz } => process_tar(idx, input, gz, opts, progress),
    }
}

/// The entry of a file found in a directory input.
fn dir_file_info(idx: usize, input: &Input, f: &DirFile) -> EntryInfo {
    EntryInfo {
        path: input.label(&f.rel),
        input: idx,
        kind: inputs::classify(&f.rel, false),
        size: f.size,
        dir_name: dir_name_of(&f.rel, input),
        fs_path: Some(f.path.clone()),
        ordinal: f.ordinal,
    }
}

/// The entry of a file named as a PATH.
fn file_info(idx: usize, input: &Input) -> EntryInfo {
    EntryInfo {
        path: input.path.clone(),
        input: idx,
        kind: inputs::classify(&input.path.replace('\\', "/"), true),
        size: std::fs::metadata(&input.fs_path)
            .map(|m| m.len())
            .unwrap_or(0),
        dir_name: input
            .fs_path
            .canonicalize()
            .ok()
            .and_then(|p| p.parent()?.file_name()?.to_str().map(str::to_string)),
        fs_path: Some(input.fs_path.clone()),
        ordinal: 0,
    }
}

/// The row of a directory entry listed without being read.
fn issue_row(idx: usize, input: &Input, issue: inputs::WalkIssue) -> FileResult {
    let info = EntryInfo {
        path: input.label(&issue.rel),
        input: idx,
        kind: inputs::classify(&issue.rel, false),
        size: 0,
        dir_name: None,
        fs_path: None,
        ordinal: 0,
    };
    let status = if issue.error {
        Status::Error
    } else {
        Status::Skipped
    };
    info.result(status, Some(issue.reason))
}

/// An entry standing for a whole input that could not be read.
fn input_error(idx: usize, input: &Input, why: String) -> FileResult {
    EntryInfo {
        path: input.path.clone(),
        input: idx,
        kind: Kind::Other,
        size: 0,
        dir_name: None,
        fs_path: Some(input.fs_path.clone()),
        ordinal: u64::MAX,
    }
    .result(Status::Error, Some(why))
}

fn process_file(
    info: EntryInfo,
    path: &Path,
    opts: &BatchOptions,
    progress: &Progress,
) -> FileResult {
    let r = guarded(&info.clone(), || match info.kind {
        Kind::Worker => trace_from_path(info, path, progress.bytes.clone(), opts),
        Kind::Summary => match File::open(path) {
            Ok(f) => summary_from_reader(info, f),
            Err(e) => info.result(Status::Error, Some(format!("cannot open: {e}"))),
        },
        k => info.skipped(skip_reason(k)),
    });
    progress.file_done();
    r
}

fn process_zip(
    idx: usize,
    input: &Input,
    members: &[ZipMember],
    opts: &BatchOptions,
    progress: &Progress,
) -> Vec<FileResult> {
    members
        .par_iter()
        .filter(|m| !m.is_dir)
        .map_init(
            || {
                File::open(&input.fs_path)
                    .map_err(|e| e.to_string())
                    .and_then(|f| {
                        zip::ZipArchive::new(BufReader::new(f)).map_err(|e| e.to_string())
                    })
            },
            |archive, m| {
                let r = guarded(
                    &member_info(idx, input, &m.name, m.size, m.index as u64).0,
                    || zip_member(idx, input, archive, m, opts),
                );
                if r.kind == Kind::Worker {
                    progress.bytes.fetch_add(m.compressed, Ordering::Relaxed);
                }
                progress.file_done();
                r
            },
        )
        .collect()
}

fn zip_member(
    idx: usize,
    input: &Input,
    archive: &mut Result<zip::ZipArchive<BufReader<File>>, String>,
    m: &ZipMember,
    opts: &BatchOptions,
) -> FileResult {
    let (info, safe) = member_info(idx, input, &m.name, m.size, m.index as u64);
    if let Some(why) = safe.or_else(|| m.shadowed.clone()) {
        return info.result(Status::Error, Some(why));
    }
    if !matches!(info.kind, Kind::Worker | Kind::Summary) {
        let k = info.kind;
        return info.skipped(skip_reason(k));
    }
    let archive = match archive {
        Ok(a) => a,
        Err(e) => return info.result(Status::Error, Some(format!("cannot open archive: {e}"))),
    };
    let file = match archive.by_index(m.index) {
        Ok(f) => f,
        Err(e) => return info.result(Status::Error, Some(format!("cannot read member: {e}"))),
    };
    match info.kind {
        Kind::Summary => summary_from_reader(info, file),
        _ => trace_from_reader(info, ZipCrc(file), opts),
    }
}

/// A zip member's reader whose CRC-32 mismatch is tagged as the member's
/// ([`crate::trace::MemberChecksumError`]): the zip crate reports it only
/// as an `InvalidData` "Invalid checksum", which the trace reader would
/// otherwise take for a gzip trailer mismatch.
struct ZipCrc<R>(R);

impl<R: Read> Read for ZipCrc<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::InvalidData && e.to_string().contains("checksum") {
                std::io::Error::new(e.kind(), crate::trace::MemberChecksumError)
            } else {
                e
            }
        })
    }
}

/// The entry of an archive member, and why its name is refused if it is.
fn member_info(
    idx: usize,
    input: &Input,
    raw: &str,
    size: u64,
    ordinal: u64,
) -> (EntryInfo, Option<String>) {
    match inputs::normalize_member(raw) {
        Ok(rel) => (
            EntryInfo {
                path: input.label(&rel),
                input: idx,
                kind: inputs::classify(&rel, false),
                size,
                dir_name: dir_name_of(&rel, input),
                fs_path: None,
                ordinal,
            },
            None,
        ),
        Err(why) => (
            EntryInfo {
                // Shown, never used as a path: control characters escaped.
                path: input.label(&raw.escape_debug().to_string()),
                input: idx,
                kind: Kind::Other,
                size,
                dir_name: None,
                fs_path: None,
                ordinal,
            },
            Some(why.to_string()),
        ),
    }
}

/// A trace member copied out of a tar, waiting for a worker.
struct Job {
    info: EntryInfo,
    bytes: Vec<u8>,
}

fn process_tar(
    idx: usize,
    input: &Input,
    gz: bool,
    opts: &BatchOptions,
    progress: &Progress,
) -> Vec<FileResult> {
    let src = match open_tar(input, gz, progress.bytes.clone()) {
        Ok(s) => s,
        Err(e) => return vec![input_error(idx, input, format!("cannot open: {e}"))],
    };
    let slots = rayon::current_num_threads().max(1);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Job>(slots);
    std::thread::scope(|s| {
        // The reader is a plain thread, not a rayon worker: with -j 1 the
        // one worker parses while the reader waits for a free slot.
        let reader = s.spawn(move || read_tar(idx, input, src, tx, opts, progress));
        let mut out: Vec<FileResult> = rx
            .into_iter()
            .par_bridge()
            .map(|job| {
                let info = job.info.clone();
                let r = guarded(&info, || trace_from_reader(job.info, &job.bytes[..], opts));
                progress.file_done();
                r
            })
            .collect();
        match reader.join() {
            Ok((inline, links)) => {
                out.extend(inline);
                out.extend(resolve_links(input, gz, links, opts, progress));
            }
            Err(_) => out.push(input_error(idx, input, "archive reader panicked".into())),
        }
        out
    })
}

/// The decompressed byte stream of a tar or tar.gz, counting the bytes
/// read from disk into `counter`.
fn open_tar(
    input: &Input,
    gz: bool,
    counter: Arc<AtomicU64>,
) -> std::io::Result<Box<dyn Read + Send>> {
    let file = File::open(&input.fs_path)?;
    let counted = BufReader::with_capacity(256 * 1024, CountingReader::new(file, counter));
    Ok(if gz {
        Box::new(MultiGzDecoder::new(counted))
    } else {
        Box::new(counted)
    })
}

/// What a tar pass learnt about links: the regular members (normalised
/// name → (label, kind)) and the trace or summary members that are links
/// (hard or symbolic), with their target's normalised name.
#[derive(Default)]
struct TarLinks {
    regular: HashMap<String, (String, Kind)>,
    links: Vec<(EntryInfo, String)>,
}

/// The normalised member name a link points to: a hard link names a
/// member; a symbolic link is relative to the link's directory.
fn link_target(rel: &str, target: &str, hard: bool) -> Result<String, String> {
    let joined = match rel.rsplit_once('/') {
        Some((dir, _)) if !hard && !target.starts_with('/') => format!("{dir}/{target}"),
        _ => target.to_string(),
    };
    // `a/../b` inside the archive is fine for a link: fold it first.
    let mut parts: Vec<&str> = Vec::new();
    for p in joined.split('/') {
        match p {
            "" | "." => {}
            ".." if parts.pop().is_some() => {}
            _ => parts.push(p),
        }
    }
    inputs::normalize_member(&parts.join("/"))
        .map_err(|why| format!("link to {target:?} outside the archive ({why})"))
        .and_then(|t| {
            if joined.starts_with('/') {
                Err(format!("link to an absolute path {target:?}: not followed"))
            } else {
                Ok(t)
            }
        })
}

/// Tar links to traces and summaries, once the first pass has seen every
/// member. A link to a regular trace member is a duplicate of it (its
/// bytes are that member's, analysed once already). A link whose target
/// was not read as what the link's name says (say `run/x.pt.trace.json.gz`
/// → `blobs/0001`) is analysed from its target in a second pass over the
/// archive, made only when such a link exists: a single streaming pass
/// would have to hold every member that a later link might name. Links to
/// links and to missing members are errors.
fn resolve_links(
    input: &Input,
    gz: bool,
    tl: TarLinks,
    opts: &BatchOptions,
    progress: &Progress,
) -> Vec<FileResult> {
    let mut out = Vec::new();
    let mut wanted: HashMap<String, Vec<EntryInfo>> = HashMap::new();
    for (info, target) in tl.links {
        match tl.regular.get(&target) {
            Some((label, kind)) if *kind == Kind::Worker && info.kind == Kind::Worker => {
                out.push(info.skipped(Some(format!("duplicate of {label} (tar link)"))));
            }
            Some(_) => wanted.entry(target).or_default().push(info),
            None => {
                let why = format!("link to {target}, which is not a regular member of the archive");
                out.push(info.result(Status::Error, Some(why)));
            }
        }
    }
    if wanted.is_empty() {
        return out;
    }
    let done = |out: &mut Vec<FileResult>, r: FileResult| {
        progress.file_done();
        out.push(r);
    };
    let fail_all =
        |wanted: HashMap<String, Vec<EntryInfo>>, why: &str, out: &mut Vec<FileResult>| {
            for info in wanted.into_values().flatten() {
                out.push(info.result(
                    Status::Error,
                    Some(format!("link target unreadable: {why}")),
                ));
            }
        };
    let src = match open_tar(input, gz, Arc::new(AtomicU64::new(0))) {
        Ok(s) => s,
        Err(e) => {
            fail_all(wanted, &e.to_string(), &mut out);
            return out;
        }
    };
    let mut archive = tar::Archive::new(src);
    let entries = match archive.entries() {
        Ok(e) => e,
        Err(e) => {
            fail_all(wanted, &e.to_string(), &mut out);
            return out;
        }
    };
    for entry in entries {
        if wanted.is_empty() {
            break;
        }
        let mut entry = match entry {
            Ok(e) => e,
            Err(e) => {
                fail_all(std::mem::take(&mut wanted), &e.to_string(), &mut out);
                break;
            }
        };
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let Ok(rel) = inputs::normalize_member(&raw) else {
            continue;
        };
        let Some(links) = wanted.remove(&rel) else {
            continue;
        };
        let mut links = links.into_iter();
        let Some(first) = links.next() else { continue };
        let label = first.path.clone();
        let copy = first.clone();
        let r = guarded(&copy, || match first.kind {
            Kind::Summary => summary_from_reader(first, &mut entry),
            _ => trace_from_reader(first, &mut entry, opts),
        });
        done(&mut out, r);
        for info in links {
            done(
                &mut out,
                info.skipped(Some(format!("duplicate of {label} (tar link)"))),
            );
        }
    }
    fail_all(
        wanted,
        "not found in a second pass over the archive",
        &mut out,
    );
    out
}

/// Walks a tar once. Returns the entries it handled itself (skipped,
/// refused, summaries, large traces, archive errors); buffered traces go
/// to `tx`.
fn read_tar(
    idx: usize,
    input: &Input,
    src: Box<dyn Read + Send>,
    tx: std::sync::mpsc::SyncSender<Job>,
    opts: &BatchOptions,
    progress: &Progress,
) -> (Vec<FileResult>, TarLinks) {
    let mut out = Vec::new();
    let mut tl = TarLinks::default();
    let mut archive = tar::Archive::new(src);
    let entries = match archive.entries() {
        Ok(e) => e,
        Err(e) => {
            let r = input_error(idx, input, format!("not a readable tar: {e}"));
            return (vec![r], tl);
        }
    };
    for (ordinal, entry) in entries.enumerate() {
        let mut entry = match entry {
            Ok(e) => e,
            Err(e) => {
                out.push(input_error(
                    idx,
                    input,
                    format!("archive unreadable after {ordinal} members: {e}"),
                ));
                break;
            }
        };
        let et = entry.header().entry_type();
        if et.is_dir() || et.is_pax_global_extensions() {
            continue;
        }
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let size = entry.size();
        let (info, unsafe_name) = member_info(idx, input, &raw, size, ordinal as u64);
        let traceish = matches!(info.kind, Kind::Worker | Kind::Summary);
        let is_link = et.is_hard_link() || et.is_symlink();
        let r = if let Some(why) = unsafe_name {
            Some(info.result(Status::Error, Some(why)))
        } else if is_link && traceish {
            let target = entry
                .link_name_bytes()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let rel = inputs::normalize_member(&raw).unwrap_or_default();
            match link_target(&rel, &target, et.is_hard_link()) {
                Ok(t) => {
                    tl.links.push((info, t));
                    None
                }
                Err(why) => Some(info.result(Status::Error, Some(why))),
            }
        } else if !et.is_file() {
            let why = format!("not a regular file ({et:?})");
            Some(if traceish {
                info.result(Status::Error, Some(why))
            } else {
                info.skipped(Some(why))
            })
        } else {
            if let Ok(rel) = inputs::normalize_member(&raw) {
                tl.regular
                    .entry(rel)
                    .or_insert_with(|| (info.path.clone(), info.kind));
            }
            match regular_member(info, &mut entry, size, &tx, opts) {
                Handled::Row(r) => Some(*r),
                Handled::Queued => None,
                Handled::Stop => break,
            }
        };
        if let Some(r) = r {
            progress.file_done();
            out.push(r);
        }
    }
    (out, tl)
}

/// What became of a regular tar member.
enum Handled {
    /// Its row, made here (boxed: a row is large, the other cases empty).
    Row(Box<FileResult>),
    /// Copied into memory and handed to a worker.
    Queued,
    /// The workers are gone: stop reading.
    Stop,
}

/// A regular member: a summary read now, a trace buffered for the workers
/// (up to the buffer limit) or parsed while streaming, anything else skipped.
fn regular_member<E: Read>(
    info: EntryInfo,
    entry: &mut E,
    size: u64,
    tx: &std::sync::mpsc::SyncSender<Job>,
    opts: &BatchOptions,
) -> Handled {
    match info.kind {
        Kind::Summary => Handled::Row(Box::new(summary_from_reader(info, entry))),
        Kind::Worker if size <= opts.buffer_limit => {
            let mut bytes = Vec::with_capacity(size as usize);
            match entry.read_to_end(&mut bytes) {
                Ok(_) => match tx.send(Job { info, bytes }) {
                    Ok(()) => Handled::Queued,
                    Err(_) => Handled::Stop,
                },
                Err(e) => Handled::Row(Box::new(info.result(
                    Status::Error,
                    Some(format!(
                        "archive data ends early or is corrupt inside this member (after byte {} of it): {e}",
                        bytes.len()
                    )),
                ))),
            }
        }
        Kind::Worker => {
            let copy = info.clone();
            Handled::Row(Box::new(guarded(&copy, || {
                trace_from_reader(info, entry, opts)
            })))
        }
        k => Handled::Row(Box::new(info.skipped(skip_reason(k)))),
    }
}

/// One progress bar for the whole batch: bytes read (compressed, as
/// stored), files done, ETA. Drawn only when stderr is a terminal.
pub struct Progress {
    pub bytes: Arc<AtomicU64>,
    files: Arc<AtomicU64>,
    ticker: Option<(ProgressBar, std::thread::JoinHandle<()>, Arc<AtomicBool>)>,
}

impl Progress {
    pub fn new(total_bytes: u64, quiet: bool) -> Self {
        let bytes = Arc::new(AtomicU64::new(0));
        let files = Arc::new(AtomicU64::new(0));
        if !crate::progress::enabled(quiet) {
            return Progress {
                bytes,
                files,
                ticker: None,
            };
        }
        let bar = ProgressBar::with_draw_target(Some(total_bytes), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let (b, c, f, s) = (bar.clone(), bytes.clone(), files.clone(), stop.clone());
        let handle = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                b.set_position(c.load(Ordering::Relaxed));
                b.set_message(format!("{} files", f.load(Ordering::Relaxed)));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Progress {
            bytes,
            files,
            ticker: Some((bar, handle, stop)),
        }
    }

    pub fn file_done(&self) {
        self.files.fetch_add(1, Ordering::Relaxed);
    }

    pub fn finish(self) {
        if let Some((bar, handle, stop)) = self.ticker {
            stop.store(true, Ordering::Relaxed);
            let _ = handle.join();
            bar.finish_and_clear();
        }
    }
}

/// Reads the run summary beside a trace named directly as a PATH (matched
/// to it by `finalize`); `shown`: the PATH as given, which names it (a
/// distributed task opens the trace by its absolute path).
fn summary_beside(trace: &Path, shown: &str) -> Option<super::SummaryBeside> {
    let p = summary::summary_path_for(trace)?;
    if !p.is_file() {
        return None;
    }
    let label = summary::summary_path_for(Path::new(shown)).unwrap_or_else(|| p.clone());
    Some(super::SummaryBeside {
        label: label.display().to_string(),
        summary: summary::read(&p).map_err(|e| e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_files_error_row() {
        let info = EntryInfo {
            path: "x.pt.trace.json.gz".into(),
            input: 0,
            kind: Kind::Worker,
            size: 1,
            dir_name: None,
            fs_path: None,
            ordinal: 0,
        };
        let r = guarded(&info, || panic!("boom {}", 7));
        assert_eq!(r.status, Status::Error);
        assert_eq!(r.error.as_deref(), Some("internal error: boom 7"));
        assert_eq!(r.path, "x.pt.trace.json.gz");
    }

    #[test]
    fn link_targets() {
        assert_eq!(link_target("a/b/x", "../c/y", false).unwrap(), "a/c/y");
        assert_eq!(link_target("a/b/x", "a/c/y", true).unwrap(), "a/c/y");
        assert!(link_target("a/x", "/etc/passwd", false).is_err());
        assert!(link_target("a/x", "../../y", false).is_err());
    }
}
