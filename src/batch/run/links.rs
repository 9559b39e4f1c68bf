//! Tar links to traces and summaries: where a link points inside the
//! archive, and what becomes of it once the first pass has seen every
//! member (a duplicate, or read from its target in a second pass).

use super::tar_reader::open_tar;
use super::{guarded, summary_from_reader, trace_from_reader, EntryInfo, Progress};
use crate::batch::inputs::{self, Input, Kind};
use crate::batch::{BatchOptions, FileResult, Status};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// What a tar pass learnt about links: the regular members (normalised
/// name → (label, kind)) and the trace or summary members that are links
/// (hard or symbolic), with their target's normalised name.
#[derive(Default)]
pub(super) struct TarLinks {
    pub(super) regular: HashMap<String, (String, Kind)>,
    pub(super) links: Vec<(EntryInfo, String)>,
}

/// The normalised member name a link points to: a hard link names a
/// member; a symbolic link is relative to the link's directory.
pub(super) fn link_target(rel: &str, target: &str, hard: bool) -> Result<String, String> {
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
pub(super) fn resolve_links(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_targets() {
        assert_eq!(link_target("a/b/x", "../c/y", false).unwrap(), "a/c/y");
        assert_eq!(link_target("a/b/x", "a/c/y", true).unwrap(), "a/c/y");
        assert!(link_target("a/x", "/etc/passwd", false).is_err());
        assert!(link_target("a/x", "../../y", false).is_err());
    }
}
