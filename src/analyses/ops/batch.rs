//! `ops`' part of `batch`: an AR vs MTP section in report.md.

use crate::analysis::{Campaign, Section};

/// Not yet: see the module docs.
pub(crate) fn section(_c: &Campaign<'_>) -> Option<Section> {
    None
}
