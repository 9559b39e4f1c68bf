//! Zip inputs: listing the members (names the zip reader would hide
//! behind a later one of the same name included) and reading them in
//! parallel, each rayon task on its own handle (members are random-access).

use super::units::ZipMember;
use super::{guarded, member_info, skip_reason, summary_from_reader, trace_from_reader, Progress};
use crate::batch::inputs::{Input, Kind};
use crate::batch::{BatchOptions, FileResult, Status};
use rayon::prelude::*;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::atomic::Ordering;

pub(super) fn list_zip(path: &Path) -> Result<Vec<ZipMember>, String> {
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

pub(super) fn process_zip(
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
