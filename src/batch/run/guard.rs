//! The panic guard: a bug met while reading one file costs that file's
//! row, never the batch.

use super::{EntryInfo, Status};
use crate::batch::FileResult;

/// Runs the work on one file; a panic in it (a bug) becomes that file's
/// error row, "internal error: …", and the rest of the batch completes.
pub(super) fn guarded(info: &EntryInfo, work: impl FnOnce() -> FileResult) -> FileResult {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            info.clone()
                .result(Status::Error, Some(format!("internal error: {what}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::inputs::Kind;

    #[test]
    fn a_panic_becomes_the_files_error_row() {
        let info = EntryInfo {
            path: "x.pt.trace.json.gz".into(),
            input: 0,
            kind: Kind::Worker,
            size: 1,
            dir_name: None,
            fs_path: None,
            ordinal: 0,
        };
        let r = guarded(&info, || panic!("boom {}", 7));
        assert_eq!(r.status, Status::Error);
        assert_eq!(r.error.as_deref(), Some("internal error: boom 7"));
        assert_eq!(r.path, "x.pt.trace.json.gz");
    }
}
