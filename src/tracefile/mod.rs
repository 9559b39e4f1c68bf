//! Trace-file naming, in one place: the trace suffixes, a trace's stem,
//! whether a name is a vLLM worker trace, and the run summary that
//! belongs to a trace (`X.pt.trace.json.gz` → `X.summary.json`) as a file
//! name, a path beside it, or a batch label. `runinfo` (labels, the
//! precedence of evidence), `summary` (reading summaries) and `batch`
//! (classifying and matching files) all name files this way; keeping it
//! here lets `summary` stand without `runinfo`.

pub mod capture;
pub mod inputs;
pub mod same;

use std::path::{Path, PathBuf};

/// The trace-file suffixes, longest first: a trace's stem is its name
/// without the first one that leaves something, and its run summary is
/// `<stem>.summary.json`.
pub const TRACE_SUFFIXES: [&str; 5] = [
    ".pt.trace.json.gz",
    ".pt.trace.json",
    ".json.gz",
    ".json",
    ".gz",
];

/// A trace file name without its trace suffix (the name itself when it
/// has none).
pub fn trace_stem(name: &str) -> &str {
    TRACE_SUFFIXES
        .iter()
        .find_map(|s| name.strip_suffix(s).filter(|stem| !stem.is_empty()))
        .unwrap_or(name)
}

/// The stem of the last component of a path or label.
pub fn file_stem(path: &str) -> String {
    let name = Path::new(path)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string());
    trace_stem(&name).to_string()
}

/// Whether a file name has a vLLM worker-trace suffix
/// (`.pt.trace.json[.gz]`).
pub fn is_worker_trace_name(file: &str) -> bool {
    TRACE_SUFFIXES[..2].iter().any(|s| file.ends_with(s))
}

/// The summary file name that belongs to a trace file name, if the name
/// has a trace suffix.
pub fn summary_name_for(trace_name: &str) -> Option<String> {
    let stem = trace_stem(trace_name);
    (stem.len() < trace_name.len()).then(|| format!("{stem}.summary.json"))
}

/// The path of the summary beside a trace.
pub fn summary_path_for(trace: &Path) -> Option<PathBuf> {
    let name = trace.file_name()?.to_str()?;
    Some(trace.with_file_name(summary_name_for(name)?))
}

/// The summary label that belongs to a trace label (`/`-separated, as
/// batch labels files inside its inputs).
pub fn summary_label_for(label: &str) -> Option<String> {
    let (dir, file) = match label.rsplit_once('/') {
        Some((d, f)) => (Some(d), f),
        None => (None, label),
    };
    let s = summary_name_for(file)?;
    Some(match dir {
        Some(d) => format!("{d}/{s}"),
        None => s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems() {
        assert_eq!(trace_stem("a.1.pt.trace.json.gz"), "a.1");
        assert_eq!(trace_stem("t.json"), "t");
        assert_eq!(trace_stem(".json"), ".json");
        assert_eq!(file_stem("d/x.json.gz"), "x");
        assert!(is_worker_trace_name("x.pt.trace.json.gz"));
        assert!(!is_worker_trace_name("x.json.gz"));
    }

    #[test]
    fn summary_names() {
        assert_eq!(
            summary_name_for("x.pt.trace.json.gz").as_deref(),
            Some("x.summary.json")
        );
        assert_eq!(summary_name_for("notes.txt"), None);
        assert_eq!(
            summary_path_for(Path::new("d/x.json")),
            Some(PathBuf::from("d/x.summary.json"))
        );
    }

    #[test]
    fn summary_labels() {
        assert_eq!(
            summary_label_for("text_ar/x.1.pt.trace.json.gz").as_deref(),
            Some("text_ar/x.1.summary.json")
        );
        assert_eq!(
            summary_label_for("x.pt.trace.json").as_deref(),
            Some("x.summary.json")
        );
    }
}
