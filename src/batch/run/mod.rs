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
//!
//! Child modules, one concern each: `units` (what each input holds and
//! the units of work shards and tasks read), `zip_reader` and
//! `tar_reader` (the archive readers), `links` (tar links to traces
//! and summaries), `summaries` (run summaries read wherever they come
//! from), `guard` (a panic becomes the file's error row) and
//! `progress` (the one progress bar). This file holds what they share:
//! a file's entry before it is read, its row after, and the dispatch of
//! one input's plan.

mod guard;
mod links;
mod progress;
mod summaries;
mod tar_reader;
mod units;
mod zip_reader;

pub use progress::Progress;
pub use units::{plan, Plan, RowsOf, Unit, ZipMember};

use super::inputs::{self, DirFile, Input, Kind};
use super::{BatchOptions, FileResult, Status};
use crate::analysis::{self, TraceResult};
use guard::guarded;
use rayon::prelude::*;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use summaries::{summary_beside, summary_from_reader};
use tar_reader::process_tar;
use zip_reader::process_zip;

/// Tar members up to this size (as stored) are buffered and parsed in
/// parallel; larger ones are parsed while streaming (the default of
/// [`BatchOptions::buffer_limit`]).
pub const BUFFER_LIMIT: u64 = 256 << 20;

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

/// Files skipped by kind, and why.
fn skip_reason(kind: Kind) -> Option<String> {
    Some(
        match kind {
            Kind::Frontend => "frontend (AsyncLLM) trace: no engine steps",
            Kind::Capture => "capture trace (capture_traces/): read only beside its trace on disk, not in an archive (extract it)",
            Kind::ProfilerOut => "torch key_averages table: not analysed",
            Kind::Other => "not a trace (in a directory: neither named *.pt.trace.json[.gz] nor a Kineto trace by its content)",
            Kind::Worker | Kind::Summary => return None,
        }
        .to_string(),
    )
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
        kind: f.kind(),
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
