//! Duplicate inputs: the same worker trace reached twice (the same PATH
//! given twice, a directory and a file inside it, a symbolic link, a hard
//! link, a copy) is analysed once; every later occurrence becomes a
//! skipped row "duplicate of FIRST" and is neither measured nor
//! compared.
//!
//! Files on disk are compared before anything is read, cheapest test
//! first: canonical path, then (on Unix) device and inode, then size;
//! files of equal size are compared on their first and last MiB and, only
//! when those agree, byte for byte in full. No hash decides alone, so
//! crafted collisions cannot merge two different traces.
//!
//! Tar hard links are duplicates of the member they link to (see
//! `run::read_tar`). Archive members are not compared by content with
//! each other or with files on disk.

use super::inputs::{self, Input, Kind};
use super::run::Plan;
use std::collections::HashMap;
use std::fs::File;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Bytes compared at each end before a full comparison.
const SAMPLE: u64 = 1 << 20;

/// One worker trace on disk: where its mark goes.
struct Candidate {
    label: String,
    path: PathBuf,
    size: u64,
    /// (input, index in the directory listing; `None` for a file PATH).
    slot: (usize, Option<usize>),
}

/// Marks the duplicate worker traces of the plans; returns notes.
pub fn mark(inputs: &[Input], plans: &mut [Plan]) -> Vec<String> {
    let mut cands = Vec::new();
    for (i, (input, plan)) in inputs.iter().zip(plans.iter()).enumerate() {
        match plan {
            Plan::Directory(files, _) => {
                for (j, f) in files.iter().enumerate() {
                    if f.kind() == Kind::Worker {
                        cands.push(Candidate {
                            label: input.label(&f.rel),
                            path: f.path.clone(),
                            size: f.size,
                            slot: (i, Some(j)),
                        });
                    }
                }
            }
            Plan::File { .. }
                if inputs::classify(&input.path.replace('\\', "/"), true) == Kind::Worker =>
            {
                cands.push(Candidate {
                    label: input.path.clone(),
                    size: std::fs::metadata(&input.fs_path).map_or(0, |m| m.len()),
                    path: input.fs_path.clone(),
                    slot: (i, None),
                });
            }
            _ => {}
        }
    }
    let dups = find(&cands);
    let n = dups.len();
    for (k, first) in dups {
        let c = &cands[k];
        let why = format!("duplicate of {}", cands[first].label);
        match (&mut plans[c.slot.0], c.slot.1) {
            (Plan::Directory(files, _), Some(j)) => files[j].dup_of = Some(why),
            (Plan::File { dup_of }, None) => *dup_of = Some(why),
            _ => {}
        }
    }
    if n == 0 {
        return Vec::new();
    }
    vec![format!(
        "{n} duplicate worker trace(s) (same file, link or identical content) analysed once: listed as skipped, \"duplicate of …\""
    )]
}

/// (duplicate, first occurrence) pairs, as indices into `cands`.
fn find(cands: &[Candidate]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut by_canon: HashMap<PathBuf, usize> = HashMap::new();
    let mut by_inode: HashMap<(u64, u64), usize> = HashMap::new();
    let mut by_size: HashMap<u64, Vec<usize>> = HashMap::new();
    for (k, c) in cands.iter().enumerate() {
        let canon = c.path.canonicalize().unwrap_or_else(|_| c.path.clone());
        if let Some(&first) = by_canon.get(&canon) {
            out.push((k, first));
            continue;
        }
        by_canon.insert(canon, k);
        if let Some(id) = inode(&c.path) {
            if let Some(&first) = by_inode.get(&id) {
                out.push((k, first));
                continue;
            }
            by_inode.insert(id, k);
        }
        by_size.entry(c.size).or_default().push(k);
    }
    for group in by_size.values().filter(|g| g.len() > 1) {
        // Distinct contents seen so far in this size class, by sample.
        let mut reps: HashMap<u64, Vec<usize>> = HashMap::new();
        for &k in group {
            let Ok(sample) = sample_hash(&cands[k].path, cands[k].size) else {
                continue;
            };
            let bucket = reps.entry(sample).or_default();
            let same = bucket
                .iter()
                .copied()
                .find(|&r| same_content(&cands[r].path, &cands[k].path).unwrap_or(false));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_and_different_content() {
        let t = tempfile::tempdir().unwrap();
        let big: Vec<u8> = (0..3 * SAMPLE as usize).map(|i| (i % 251) as u8).collect();
        let mut other = big.clone();
        other[SAMPLE as usize + 7] ^= 1; // differs only in the middle
        for (n, d) in [("a", &big), ("b", &big), ("c", &other)] {
            std::fs::write(t.path().join(n), d).unwrap();
        }
        let cand = |n: &str| Candidate {
            label: n.into(),
            path: t.path().join(n),
            size: big.len() as u64,
            slot: (0, None),
        };
        let cands = [cand("a"), cand("b"), cand("c"), cand("a")];
        // b is a copy of a; the second a is the same file; c differs in
        // a byte the samples do not see.
        assert_eq!(find(&cands), vec![(1, 0), (3, 0)]);
    }
}
