//! Run summaries: the benchmark client's record of a run, kept beside the
//! trace as `<stem>.summary.json` (`X.pt.trace.json.gz` → `X.summary.json`).
//! Completion tokens come from here, never from the trace.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The keys torchtrace reads; others are ignored.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct RunSummary {
    pub completion_tokens: Option<u64>,
    pub mode: Option<String>,
    pub workload: Option<String>,
}

/// Problems with a summary file.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error("{path}: cannot read run summary: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a run summary: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
}

// Which summary belongs to which trace is trace-file naming.
pub use crate::tracefile::{summary_name_for, summary_path_for};

/// Parses a summary's bytes.
pub fn parse(bytes: &[u8], label: &str) -> Result<RunSummary, SummaryError> {
    serde_json::from_slice(bytes).map_err(|source| SummaryError::Json {
        path: label.to_string(),
        source,
    })
}

/// Reads a summary file.
pub fn read(path: &Path) -> Result<RunSummary, SummaryError> {
    let label = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| SummaryError::Io {
        path: label.clone(),
        source,
    })?;
    parse(&bytes, &label)
}

/// Reads the summary beside `trace`, if there is one.
pub fn beside(trace: &Path) -> Result<Option<(PathBuf, RunSummary)>, SummaryError> {
    match summary_path_for(trace) {
        Some(p) if p.is_file() => read(&p).map(|s| Some((p, s))),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            summary_name_for("rank0.1234.pt.trace.json.gz").as_deref(),
            Some("rank0.1234.summary.json")
        );
        assert_eq!(
            summary_name_for("w.pt.trace.json").as_deref(),
            Some("w.summary.json")
        );
        assert_eq!(
            summary_name_for("trace.json.gz").as_deref(),
            Some("trace.summary.json")
        );
        assert_eq!(summary_name_for("notes.txt"), None);
    }

    #[test]
    fn parses_extra_keys() {
        let s = parse(
            br#"{"completion_tokens": 512, "mode": "mtp", "workload": "text", "x": [1]}"#,
            "s",
        )
        .unwrap();
        assert_eq!(s.completion_tokens, Some(512));
        assert_eq!(s.mode.as_deref(), Some("mtp"));
        assert!(parse(b"[1]", "s").is_err());
    }
}
