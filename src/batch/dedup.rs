//! Duplicate inputs: the same worker trace reached twice (the same PATH
//! given twice, a directory and a file inside it, a symbolic link, a hard
//! link, a copy) is analysed once; every later occurrence becomes a
//! skipped row "duplicate of FIRST" and is neither measured nor
//! compared.
//!
//! Files on disk are compared before anything is read, by
//! `tracefile::same` (canonical path, device and inode, size, then
//! content; `export` uses it too).
//!
//! Tar hard links are duplicates of the member they link to (see
//! `run::read_tar`). Archive members are not compared by content with
//! each other or with files on disk.

use super::inputs::{self, Input, Kind};
use super::run::Plan;
use std::path::{Path, PathBuf};

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

/// (duplicate, first occurrence) pairs, as indices into `cands`: the
/// comparison `export` shares (`tracefile::same`).
fn find(cands: &[Candidate]) -> Vec<(usize, usize)> {
    let files: Vec<(&Path, u64)> = cands.iter().map(|c| (c.path.as_path(), c.size)).collect();
    crate::tracefile::same::duplicates(&files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_and_different_content() {
        let t = tempfile::tempdir().unwrap();
        let sample = crate::tracefile::same::SAMPLE as usize;
        let big: Vec<u8> = (0..3 * sample).map(|i| (i % 251) as u8).collect();
        let mut other = big.clone();
        other[sample + 7] ^= 1; // differs only in the middle
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
