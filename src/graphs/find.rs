//! Which capture files belong to a trace (issue 57).
//!
//! - `--capture PATH` (repeatable): a file is read as a capture trace; a
//!   folder gives its trace files (`.json`, `.json.gz`, `.gz`) in name
//!   order. Given, they replace the search below.
//! - Else `capture_traces/` beside the trace, vLLM's
//!   (`capture_traces/graph_capture_rank_<r>.<id>.pt.trace.json.gz`) and
//!   SGLang's (`capture_traces/bs_<bs>_rank<r>.json.gz`) layout alike.
//! - In a folder, `execution_details.json` (a list of `{file, batch_size,
//!   mode}`) gives each named file its batch size and mode; it is not a
//!   trace itself. A file it names that is missing is a note.
//! - A file given twice (twice by name, or by name and by its folder) is
//!   read once, with a note (G3 of docs/VIEWS.md).

use super::Detail;
use std::path::{Path, PathBuf};

/// The folder name searched beside a trace.
pub const CAPTURE_DIR: &str = "capture_traces";
/// The capture files' index in a folder.
pub const DETAILS: &str = "execution_details.json";

/// A capture file and what `execution_details.json` says of it.
pub type CaptureFile = (PathBuf, Option<Detail>);

fn is_trace_name(name: &str) -> bool {
    name != DETAILS
        && [".json", ".json.gz", ".gz"]
            .iter()
            .any(|s| name.ends_with(s))
}

/// The files of one folder, with their details; notes for what is wrong.
fn folder(dir: &Path, notes: &mut Vec<String>) -> Vec<CaptureFile> {
    let details: Vec<Detail> = match std::fs::read(dir.join(DETAILS)) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            notes.push(format!(
                "{} unreadable ({e}): batch sizes and modes from the traces only",
                dir.join(DETAILS).display()
            ));
            Vec::new()
        }),
        Err(_) => Vec::new(),
    };
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(Result::ok)
            .filter(|e| e.path().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| is_trace_name(n))
            .collect(),
        Err(e) => {
            notes.push(format!("capture folder {} unreadable ({e})", dir.display()));
            return Vec::new();
        }
    };
    names.sort();
    for d in &details {
        if !names.contains(&d.file) {
            notes.push(format!(
                "{} names {} which is not in the folder",
                DETAILS, d.file
            ));
        }
    }
    names
        .into_iter()
        .map(|n| {
            let d = details.iter().find(|d| d.file == n).cloned();
            (dir.join(n), d)
        })
        .collect()
}

/// The capture files of `trace`: `explicit` when given, else its
/// `capture_traces/` folder; notes for what could not be used.
pub fn capture_files(explicit: &[PathBuf], trace: &Path) -> (Vec<CaptureFile>, Vec<String>) {
    let mut notes = Vec::new();
    let mut out = Vec::new();
    if explicit.is_empty() {
        let beside = trace
            .parent()
            .map(|p| p.join(CAPTURE_DIR))
            .filter(|d| d.is_dir());
        if let Some(d) = beside {
            out = folder(&d, &mut notes);
        }
        return (out, notes);
    }
    for p in explicit {
        if p.is_dir() {
            out.extend(folder(p, &mut notes));
        } else if p.is_file() {
            let d = p
                .parent()
                .map(|dir| folder_details(dir, p))
                .unwrap_or_default();
            out.push((p.clone(), d));
        } else {
            notes.push(format!("--capture {}: no such file or folder", p.display()));
        }
    }
    once(&mut out, &mut notes);
    (out, notes)
}

/// Keeps the first of files that are the same file on disk (a file given
/// twice, or a file and its folder: G3), with a note naming each repeat.
fn once(files: &mut Vec<CaptureFile>, notes: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    files.retain(|(p, _)| {
        let key = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        let first = seen.insert(key);
        if !first {
            notes.push(format!(
                "capture trace {} given more than once: read once",
                p.display()
            ));
        }
        first
    });
}

/// A single file's entry in its folder's `execution_details.json`.
fn folder_details(dir: &Path, file: &Path) -> Option<Detail> {
    let bytes = std::fs::read(dir.join(DETAILS)).ok()?;
    let details: Vec<Detail> = serde_json::from_slice(&bytes).ok()?;
    let name = file.file_name()?.to_string_lossy();
    details.into_iter().find(|d| d.file == name)
}
