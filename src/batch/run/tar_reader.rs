//! Tar and tar.gz inputs, read front to back once: a reader thread walks
//! the archive; trace members up to the buffer limit are copied into
//! memory and parsed by rayon workers, larger ones parsed from the stream;
//! links are resolved afterwards ([`super::links`]).

use super::links::{link_target, resolve_links, TarLinks};
use super::{
    guarded, input_error, member_info, skip_reason, summary_from_reader, trace_from_reader,
    EntryInfo, Progress,
};
use crate::batch::inputs::{self, Input, Kind};
use crate::batch::{BatchOptions, FileResult, Status};
use crate::trace::open::CountingReader;
use flate2::read::MultiGzDecoder;
use rayon::prelude::*;
use std::fs::File;
use std::io::{BufReader, Read};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// A trace member copied out of a tar, waiting for a worker.
struct Job {
    info: EntryInfo,
    bytes: Vec<u8>,
}

pub(super) fn process_tar(
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
pub(super) fn open_tar(
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
