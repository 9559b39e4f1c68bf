//! What the PATHs of a batch hold: directories (walked recursively, in
//! sorted order), archives (`.tar`, `.tar.gz`/`.tgz`, `.zip`, recognised by
//! their magic bytes) and single files; and what kind of vLLM file each
//! name is.
//!
//! Names found inside archives are only ever used as labels. They are
//! normalised (`./a//b` → `a/b`) and rejected when absolute or when a
//! component is `..`.

use flate2::read::MultiGzDecoder;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// What one PATH argument is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    Directory,
    /// A trace (or any file) named directly.
    File,
    Tar,
    TarGz,
    Zip,
}

impl InputKind {
    pub fn is_archive(self) -> bool {
        matches!(self, InputKind::Tar | InputKind::TarGz | InputKind::Zip)
    }
}

/// One PATH argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Input {
    /// As given on the command line.
    pub path: String,
    pub kind: InputKind,
    /// Prepended to the labels of everything inside it: empty when there is
    /// one PATH (labels are then relative to it), else `PATH/`.
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub prefix: String,
    #[serde(
        default,
        skip_serializing_if = "crate::record::public",
        with = "crate::record::path"
    )]
    pub fs_path: PathBuf,
    /// Why the PATH could not be used (missing, unreadable, a FIFO…; its
    /// kind is then `File`): it becomes one failed row with this reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Input {
    /// The label of a file inside this input.
    pub fn label(&self, rel: &str) -> String {
        format!("{}{rel}", self.prefix)
    }

    /// The input's own name (directory or archive stem), the workload
    /// fallback for files at its top level.
    pub fn stem(&self) -> Option<String> {
        // From the PATH as given: a task may carry its absolute form.
        let name = Path::new(&self.path).file_name()?.to_str()?.to_string();
        let stem = [".tar.gz", ".tgz", ".tar", ".zip"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(&name);
        (!stem.is_empty()).then(|| stem.to_string())
    }
}

/// What kind of vLLM file a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A worker trace `*.pt.trace.json[.gz]` (or a file named as a PATH):
    /// analysed.
    Worker,
    /// A frontend (AsyncLLM) trace `*.async_llm.*`: listed, not analysed.
    Frontend,
    /// Anything under `capture_traces/`: listed, not analysed.
    Capture,
    /// A run summary `*.summary.json`: read for tokens, mode and workload.
    Summary,
    /// `profiler_out*.txt` (torch's key_averages table): listed.
    ProfilerOut,
    /// Anything else: listed, skipped.
    Other,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Worker => "worker",
            Kind::Frontend => "frontend",
            Kind::Capture => "capture",
            Kind::Summary => "summary",
            Kind::ProfilerOut => "profiler_out",
            Kind::Other => "other",
        }
    }
}

/// Classifies a normalised relative name. `explicit` is true for files
/// named directly on the command line: those are analysed as traces
/// unless their name says they are something else.
pub fn classify(rel: &str, explicit: bool) -> Kind {
    let mut parts: Vec<&str> = rel.split('/').collect();
    let file = parts.pop().unwrap_or("");
    if parts.contains(&"capture_traces") {
        return Kind::Capture;
    }
    if file.contains(".async_llm.") {
        return Kind::Frontend;
    }
    if file.ends_with(".summary.json") {
        return Kind::Summary;
    }
    if file.starts_with("profiler_out") && file.ends_with(".txt") {
        return Kind::ProfilerOut;
    }
    // The vLLM worker-trace suffixes: `.pt.trace.json[.gz]`.
    if crate::tracefile::is_worker_trace_name(file) || explicit {
        return Kind::Worker;
    }
    Kind::Other
}

/// Why a member name is refused, or its normalised form.
pub fn normalize_member(raw: &str) -> Result<String, &'static str> {
    let is_drive =
        raw.len() >= 2 && raw.as_bytes()[1] == b':' && raw.as_bytes()[0].is_ascii_alphabetic();
    if raw.starts_with('/') || raw.starts_with('\\') || is_drive {
        return Err("unsafe member name (absolute path)");
    }
    let parts: Vec<&str> = raw
        .split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") {
        return Err("unsafe member name (contains \"..\")");
    }
    if parts.is_empty() {
        return Err("empty member name");
    }
    Ok(parts.join("/"))
}

/// Recognises an input by its content (and, for directories, its type).
pub fn detect(path: &Path) -> io::Result<InputKind> {
    let md = std::fs::metadata(path)?;
    if md.is_dir() {
        return Ok(InputKind::Directory);
    }
    if !md.is_file() {
        // Opening a FIFO would block; a device could be endless.
        return Err(io::Error::other(format!(
            "{}, not a regular file: not read",
            special_kind(&md)
        )));
    }
    let mut head = Vec::with_capacity(512);
    File::open(path)?.take(512).read_to_end(&mut head)?;
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return Ok(InputKind::Zip);
    }
    if is_tar_header(&head) {
        return Ok(InputKind::Tar);
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        // A gzip file: a compressed tar, or a compressed trace.
        let mut inner = Vec::with_capacity(512);
        let _ = MultiGzDecoder::new(File::open(path)?)
            .take(512)
            .read_to_end(&mut inner);
        if is_tar_header(&inner) {
            return Ok(InputKind::TarGz);
        }
    }
    Ok(InputKind::File)
}

/// A POSIX (`ustar\0`) or GNU (`ustar  `) header magic at offset 257.
fn is_tar_header(block: &[u8]) -> bool {
    block.len() >= 263 && &block[257..262] == b"ustar"
}

/// One regular file found under a directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirFile {
    /// Relative to the walked directory, `/`-separated.
    pub rel: String,
    #[serde(with = "crate::record::path")]
    pub path: PathBuf,
    pub size: u64,
    /// Set before reading when the file is a duplicate of an earlier input
    /// (same file, hard link or same content): the earlier one's label.
    pub dup_of: Option<String>,
    /// Position in the sorted listing (kept when a shard takes a subset).
    pub ordinal: u64,
    /// A Kineto trace under a name that does not say so (`ar_run.json.gz`):
    /// recognised by its first bytes ([`looks_like_trace`]) when the walk
    /// listed it, so it is analysed as a file given by its path would be.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trace_by_content: bool,
}

impl DirFile {
    /// What kind of file it is: by its name ([`classify`]), or a worker
    /// trace recognised by content.
    pub fn kind(&self) -> Kind {
        match self.trace_by_content {
            true => Kind::Worker,
            false => classify(&self.rel, false),
        }
    }
}

/// How much of a file (decompressed) is searched for a trace's opening.
const SNIFF_BYTES: u64 = 64 << 10;

/// Whether a file named like none of vLLM's files is a Kineto trace all
/// the same: a JSON object (gzip-compressed or not) whose opening, before
/// the events, holds `"traceEvents"` or Kineto's `"schemaVersion"` with
/// `"deviceProperties"`. Only names ending in `.json` or `.gz` are opened
/// (a trace renamed `ar_run.json.gz`, say), and at most 64 KiB of them
/// read, so a directory of logs costs nothing. A false negative is
/// listed as "not a trace" with the rule in its reason.
pub fn looks_like_trace(path: &Path, name: &str) -> bool {
    if !(name.ends_with(".json") || name.ends_with(".gz")) {
        return false;
    }
    let Ok(mut f) = File::open(path) else {
        return false;
    };
    let mut magic = [0u8; 2];
    let gz = f.read_exact(&mut magic).is_ok() && magic == [0x1f, 0x8b];
    let Ok(f) = File::open(path) else {
        return false;
    };
    let mut head = Vec::with_capacity(SNIFF_BYTES as usize);
    let _ = match gz {
        true => MultiGzDecoder::new(f)
            .take(SNIFF_BYTES)
            .read_to_end(&mut head),
        false => f.take(SNIFF_BYTES).read_to_end(&mut head),
    };
    trace_opening(&head)
}

/// See [`looks_like_trace`]: the first bytes of a document.
fn trace_opening(head: &[u8]) -> bool {
    let start = head.iter().position(|b| !b.is_ascii_whitespace());
    if start.is_none_or(|i| head[i] != b'{') {
        return false;
    }
    let has = |needle: &[u8]| memchr::memmem::find(head, needle).is_some();
    has(b"\"traceEvents\"") || (has(b"\"schemaVersion\"") && has(b"\"deviceProperties\""))
}

/// An entry of a directory that is listed without being read: a
/// directory that could not be listed, a link loop, a FIFO named like a
/// trace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WalkIssue {
    pub rel: String,
    pub reason: String,
    /// An error (counted as failed), else an intentional skip.
    pub error: bool,
}

/// What a file-system object is, in words, when it is not a regular file
/// or a directory.
pub fn special_kind(md: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let ft = md.file_type();
        if ft.is_fifo() {
            return "a FIFO";
        }
        if ft.is_socket() {
            return "a socket";
        }
        if ft.is_block_device() {
            return "a block device";
        }
        if ft.is_char_device() {
            return "a character device";
        }
    }
    let _ = md;
    "not a regular file"
}

/// Walks a directory recursively; files sorted by relative name.
///
/// Symbolic links are followed, to files and to directories. Each
/// directory is walked once, by its canonical path: a link back to a
/// directory being walked (a loop) or to one walked already is listed as
/// a skipped entry and not entered, so the walk is linear in the number
/// of directories whatever the links. Unreadable subdirectories, broken
/// links and special files (FIFOs, sockets, devices) are listed with their
/// reason (errors when named like a trace or a run summary) rather than
/// lost. `skip` is a directory (canonical path) left out, e.g. the output
/// directory when it lies inside an input; the root itself is never
/// skipped.
pub fn walk(root: &Path, skip: Option<&Path>) -> io::Result<(Vec<DirFile>, Vec<WalkIssue>)> {
    let root_canon = root.canonicalize()?;
    let mut w = Walker::default();
    if let Some(out) = skip.filter(|&s| s != root_canon) {
        w.seen.insert(out.to_path_buf(), OUTDIR_MARK.into());
    }
    w.seen.insert(root_canon.clone(), String::new());
    w.stack
        .push((root.to_path_buf(), root_canon, String::new()));
    loop {
        let Some((dir, canon, rel)) = w.stack.pop() else {
            if w.deferred.is_empty() {
                break;
            }
            w.enter_deferred();
            continue;
        };
        match std::fs::read_dir(&dir) {
            Ok(rd) => w.list(rd, &canon, &rel),
            Err(e) if rel.is_empty() => return Err(e),
            Err(e) => w.issues.push(WalkIssue {
                rel,
                reason: format!("cannot read directory: {e}"),
                error: true,
            }),
        }
    }
    w.files.sort_by(|a, b| a.rel.cmp(&b.rel));
    w.issues.sort();
    Ok((w.files, w.issues))
}

/// The state of one directory walk.
#[derive(Default)]
struct Walker {
    files: Vec<DirFile>,
    issues: Vec<WalkIssue>,
    /// Canonical directories walked (or queued), with their relative name.
    seen: std::collections::HashMap<PathBuf, String>,
    /// Directories to walk: (path, canonical path, relative name).
    stack: Pending,
    /// Symbolic links to directories, entered after every real directory.
    deferred: Pending,
}

impl Walker {
    /// Enters the deferred directory links, in sorted order: which alias is
    /// walked does not depend on the order directories are listed in.
    fn enter_deferred(&mut self) {
        self.deferred.sort_by(|a, b| a.2.cmp(&b.2));
        for (path, parent, child) in std::mem::take(&mut self.deferred) {
            match path.canonicalize() {
                Ok(c) => enter(
                    &mut self.seen,
                    &mut self.stack,
                    &mut self.issues,
                    path,
                    c,
                    &parent,
                    child,
                ),
                Err(e) => self.issues.push(WalkIssue {
                    rel: child,
                    reason: format!("cannot resolve directory: {e}"),
                    error: true,
                }),
            }
        }
    }

    /// Takes note of every entry of one directory.
    fn list(&mut self, rd: std::fs::ReadDir, canon: &Path, rel: &str) {
        for ent in rd {
            match ent {
                Ok(ent) => self.entry(&ent, canon, rel),
                Err(e) => self.issues.push(WalkIssue {
                    rel: rel.to_string(),
                    reason: format!("cannot list directory: {e}"),
                    error: true,
                }),
            }
        }
    }

    /// One directory entry: a file to read, a directory to walk, or an
    /// issue to list.
    fn entry(&mut self, ent: &std::fs::DirEntry, canon: &Path, rel: &str) {
        let name = ent.file_name().to_string_lossy().into_owned();
        let child = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let traceish = !matches!(classify(&child, false), Kind::Other);
        let link = ent.file_type().is_ok_and(|t| t.is_symlink());
        // Follows symbolic links.
        let md = match std::fs::metadata(ent.path()) {
            Ok(md) => md,
            Err(e) => {
                self.issues.push(WalkIssue {
                    reason: if link {
                        format!("broken symbolic link: {e}")
                    } else {
                        format!("cannot stat: {e}")
                    },
                    error: traceish || !link,
                    rel: child,
                });
                return;
            }
        };
        if md.is_dir() && ent.file_name() == "capture_traces" {
            // Graph capture traces (issue 57) belong to the traces beside
            // them (the analyses read them there, `graphs::find`), not to
            // the campaign.
            self.issues.push(WalkIssue {
                reason: "graph capture traces: read with the traces beside them".into(),
                error: false,
                rel: child,
            });
        } else if md.is_dir() && link {
            self.deferred.push((ent.path(), canon.to_path_buf(), child));
        } else if md.is_dir() {
            let c = canon.join(ent.file_name());
            enter(
                &mut self.seen,
                &mut self.stack,
                &mut self.issues,
                ent.path(),
                c,
                canon,
                child,
            );
        } else if md.is_file() {
            let by_content = !traceish && looks_like_trace(&ent.path(), &child);
            self.files.push(DirFile {
                rel: child,
                path: ent.path(),
                size: md.len(),
                dup_of: None,
                ordinal: 0,
                trace_by_content: by_content,
            });
        } else {
            self.issues.push(WalkIssue {
                reason: format!("{}, not a regular file: not read", special_kind(&md)),
                error: traceish,
                rel: child,
            });
        }
    }
}

/// Marks the output directory among the walked ones (no name has a NUL).
const OUTDIR_MARK: &str = "\0outdir";

type Pending = Vec<(PathBuf, PathBuf, String)>;

/// Queues the directory `path` (canonical `canon`, found in `parent`)
/// unless it was walked already or is the skipped one; a directory met
/// again is listed (a loop when it holds `parent`).
fn enter(
    seen: &mut std::collections::HashMap<PathBuf, String>,
    stack: &mut Pending,
    issues: &mut Vec<WalkIssue>,
    path: PathBuf,
    canon: PathBuf,
    parent: &Path,
    rel: String,
) {
    if let Some(first) = seen.get(&canon) {
        if first == OUTDIR_MARK {
            return;
        }
        let first = if first.is_empty() { "." } else { first };
        let reason = if parent.starts_with(&canon) {
            format!("symbolic link loop (back to {first}): not followed")
        } else {
            format!("directory already walked as {first}: not walked again")
        };
        issues.push(WalkIssue {
            rel,
            reason,
            error: false,
        });
        return;
    }
    seen.insert(canon.clone(), rel.clone());
    stack.push((path, canon, rel));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!(classify("a/x.pt.trace.json.gz", false), Kind::Worker);
        assert_eq!(classify("x.pt.trace.json", false), Kind::Worker);
        assert_eq!(
            classify("a/vm_1.async_llm.17.pt.trace.json.gz", false),
            Kind::Frontend
        );
        assert_eq!(
            classify("r/capture_traces/x.pt.trace.json.gz", false),
            Kind::Capture
        );
        assert_eq!(classify("a/x.summary.json", false), Kind::Summary);
        assert_eq!(classify("a/profiler_out_0.txt", false), Kind::ProfilerOut);
        assert_eq!(classify("README.md", false), Kind::Other);
        assert_eq!(classify("trace.json", false), Kind::Other);
        assert_eq!(classify("trace.json", true), Kind::Worker);
    }

    /// A trace renamed `ar_run.json.gz` in a directory is found by its
    /// content (issue 38); a JSON file of another kind is not.
    #[test]
    fn renamed_trace_is_recognised_by_content() {
        let dir = tempfile::tempdir().unwrap();
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "sample_traces/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz",
        );
        std::fs::copy(&sample, dir.path().join("ar_run.json.gz")).unwrap();
        std::fs::write(dir.path().join("config.json"), br#"{"model": "x"}"#).unwrap();
        std::fs::write(dir.path().join("plain.json"), b" {\"traceEvents\": []}").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"{\"traceEvents\": []}").unwrap();
        let (files, _) = walk(dir.path(), None).unwrap();
        let kinds: Vec<(&str, Kind)> = files.iter().map(|f| (f.rel.as_str(), f.kind())).collect();
        assert_eq!(
            kinds,
            [
                ("ar_run.json.gz", Kind::Worker),
                ("config.json", Kind::Other),
                ("notes.txt", Kind::Other),
                ("plain.json", Kind::Worker),
            ]
        );
        assert!(!trace_opening(b"[1, 2]"));
        assert!(trace_opening(
            b"{\"schemaVersion\": 1, \"deviceProperties\": []"
        ));
    }

    /// A campaign's `capture_traces/` folders are not walked (issue 57):
    /// listed as skipped, their files left to the traces beside them.
    #[test]
    fn capture_folders_are_left_to_their_traces() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/graphs");
        let (files, issues) = walk(&root, None).expect("walk");
        let mut rels: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        rels.sort_unstable();
        assert_eq!(
            rels,
            [
                "sglang_decode/sglang_Qwen3-8B_decode.json.gz",
                "vllm_piecewise/graph_execution.json.gz"
            ]
        );
        let skipped: Vec<&str> = issues
            .iter()
            .filter(|i| !i.error)
            .map(|i| i.rel.as_str())
            .collect();
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        assert!(skipped.iter().all(|r| r.ends_with("/capture_traces")));
    }

    #[test]
    fn member_names() {
        assert_eq!(normalize_member("./a//b/c.gz").unwrap(), "a/b/c.gz");
        assert!(normalize_member("../evil.pt.trace.json.gz").is_err());
        assert!(normalize_member("a/../../evil").is_err());
        assert!(normalize_member("/etc/passwd").is_err());
        assert!(normalize_member("C:\\x").is_err());
        assert!(normalize_member("./").is_err());
    }
}
