//! Compact stores that several layers keep their records in: the chunked
//! varint stream and fixed-record chunks ([`pack`]), fixed-size bit sets
//! (`bits`) and unions of integer-ns intervals (`intervals`).
//!
//! They name no analysis and no trace format, so the step index
//! (`contexts`), the ledger and the analyses all build on them without
//! importing each other (the ledger once held them, and `contexts` then
//! imported the ledger that imports `contexts`).

pub(crate) mod bits;
pub(crate) mod intervals;
pub mod pack;
