//! The analyses: one folder each, holding the analysis (its options,
//! streaming state and figures), its view (column lists and report) and
//! its tests.

pub mod hierarchy;
pub mod kernels;
pub mod pair;
