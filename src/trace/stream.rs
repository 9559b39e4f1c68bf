//! The streaming scanner's entry points under their original path; the
//! scanner itself is Kineto-specific and lives in [`super::kineto::scan`].

pub use super::event::EventPos;
pub use super::kineto::scan::{
    scan, scan_bytewise, scan_bytewise_with, scan_filtered, scan_with, OnEvent,
};
