//! Whether two trace files on disk are the same trace: the same file (a
//! path given twice, a symbolic or hard link) or identical content. Moved
//! here from `batch::dedup` so that `export` (issue 59) de-duplicates its
//! inputs by the same rule without naming `batch`.
//!
//! Cheapest test first: canonical path, then (on Unix) device and inode,
//! then size; files of equal size are compared on their first and last
//! MiB and, only when those agree, byte for byte in full. No hash decides
//! alone, so crafted collisions cannot merge two different traces.

use std::collections::HashMap;
use std::fs::File;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Bytes compared at each end before a full comparison.
pub const SAMPLE: u64 = 1 << 20;

/// (duplicate, first occurrence) pairs, as indices into `files` (each a
/// path and its size in bytes), sorted.
pub fn duplicates(files: &[(&Path, u64)]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut by_canon: HashMap<PathBuf, usize> = HashMap::new();
    let mut by_inode: HashMap<(u64, u64), usize> = HashMap::new();
    let mut by_size: HashMap<u64, Vec<usize>> = HashMap::new();
    for (k, &(path, size)) in files.iter().enumerate() {
        let canon = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if let Some(&first) = by_canon.get(&canon) {
            out.push((k, first));
            continue;
        }
        by_canon.insert(canon, k);
        if let Some(id) = inode(path) {
            if let Some(&first) = by_inode.get(&id) {
                out.push((k, first));
                continue;
            }
            by_inode.insert(id, k);
        }
        by_size.entry(size).or_default().push(k);
    }
    for group in by_size.values().filter(|g| g.len() > 1) {
        // Distinct contents seen so far in this size class, by sample.
        let mut reps: HashMap<u64, Vec<usize>> = HashMap::new();
        for &k in group {
            let Ok(sample) = sample_hash(files[k].0, files[k].1) else {
                continue;
            };
            let bucket = reps.entry(sample).or_default();
            let same = bucket
                .iter()
                .copied()
                .find(|&r| same_content(files[r].0, files[k].0).unwrap_or(false));
            match same {
                Some(r) => out.push((k, r)),
                None => bucket.push(k),
            }
        }
    }
    out.sort();
    out
}

#[cfg(unix)]
fn inode(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn inode(_: &Path) -> Option<(u64, u64)> {
    None
}

/// A hash of the first and last [`SAMPLE`] bytes (a bucket, never a
/// verdict).
fn sample_hash(p: &Path, size: u64) -> io::Result<u64> {
    let mut f = File::open(p)?;
    let mut h = DefaultHasher::new();
    let mut buf = Vec::new();
    (&mut f).take(SAMPLE).read_to_end(&mut buf)?;
    buf.hash(&mut h);
    if size > SAMPLE {
        f.seek(SeekFrom::Start(size.saturating_sub(SAMPLE).max(SAMPLE)))?;
        buf.clear();
        f.take(SAMPLE).read_to_end(&mut buf)?;
        buf.hash(&mut h);
    }
    Ok(h.finish())
}

/// Byte-for-byte comparison of two files, streaming.
fn same_content(a: &Path, b: &Path) -> io::Result<bool> {
    let (mut fa, mut fb) = (File::open(a)?, File::open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let na = read_full(&mut fa, &mut ba)?;
        let nb = read_full(&mut fb, &mut bb)?;
        if na != nb || ba[..na] != bb[..nb] {
            return Ok(false);
        }
        if na == 0 {
            return Ok(true);
        }
    }
}

/// Fills `buf` as far as the source allows; the count read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
