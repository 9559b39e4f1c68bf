//! What each input holds, listed before any trace is read (so that the
//! progress bar knows the total), and its units of work: what a shard or
//! a distributed task reads, how they join again, whether records cover
//! them, and the failed rows of a unit nobody read.

use super::{
    dir_file_info, file_info, input_error, issue_row, member_info, skip_reason, EntryInfo,
};
use crate::batch::inputs::{self, DirFile, Input, InputKind, Kind};
use crate::batch::{FileResult, Status};
use serde::{Deserialize, Serialize};
use std::path::Path;

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
        InputKind::Zip => match super::zip_reader::list_zip(&input.fs_path) {
            Ok(m) => Plan::Zip(m),
            Err(e) => Plan::Broken(format!("cannot read zip archive: {e}")),
        },
    }
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
                .filter(|f| f.kind() == Kind::Worker)
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
