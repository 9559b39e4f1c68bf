//! The analyses: one folder each, holding the analysis (its options,
//! streaming state and figures), its view (column lists and report) and
//! its tests. The registry (`crate::registry`) lists them.
//!
//! Adding an analysis = its folder + one line in `crate::registry::REGISTRY`.
//! The registry's order is the order of results in records and documents.

pub mod critical;
pub mod diff;
pub mod hierarchy;
pub mod idle;
pub mod iterations;
pub mod kernels;
pub mod memory;
pub mod ops;
pub mod pair;
pub mod ranks;
pub mod roofline;
