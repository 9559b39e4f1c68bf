//! Run summaries (`X.summary.json`), read into memory wherever they come
//! from — a directory, a zip or tar member, beside a trace named as a
//! PATH — and matched to traces afterwards (`batch::finalize`).

use super::{EntryInfo, Status};
use crate::batch::FileResult;
use crate::summary;
use std::io::Read;
use std::path::Path;

/// Run summaries larger than this are refused (they are a few KiB).
const SUMMARY_LIMIT: u64 = 16 << 20;

pub(super) fn summary_from_reader<R: Read>(info: EntryInfo, src: R) -> FileResult {
    let mut bytes = Vec::new();
    if let Err(e) = src.take(SUMMARY_LIMIT + 1).read_to_end(&mut bytes) {
        return info.result(Status::Error, Some(format!("cannot read run summary: {e}")));
    }
    if bytes.len() as u64 > SUMMARY_LIMIT {
        return info.result(
            Status::Error,
            Some(format!(
                "larger than {} MiB: not a run summary",
                SUMMARY_LIMIT >> 20
            )),
        );
    }
    match summary::parse(&bytes, &info.path) {
        Ok(s) => {
            let mut r = info.result(Status::Ok, None);
            r.summary = Some(s);
            r
        }
        Err(summary::SummaryError::Json { source, .. }) => {
            info.result(Status::Error, Some(format!("not a run summary: {source}")))
        }
        Err(e) => info.result(Status::Error, Some(e.to_string())),
    }
}

/// Reads the run summary beside a trace named directly as a PATH (matched
/// to it by `finalize`); `shown`: the PATH as given, which names it (a
/// distributed task opens the trace by its absolute path).
pub(super) fn summary_beside(trace: &Path, shown: &str) -> Option<crate::batch::SummaryBeside> {
    let p = crate::tracefile::summary_path_for(trace)?;
    if !p.is_file() {
        return None;
    }
    let label = crate::tracefile::summary_path_for(Path::new(shown)).unwrap_or_else(|| p.clone());
    Some(crate::batch::SummaryBeside {
        label: label.display().to_string(),
        summary: summary::read(&p).map_err(|e| e.to_string()),
    })
}
