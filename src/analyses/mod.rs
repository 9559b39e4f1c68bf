//! The analyses: one folder each, holding the analysis (its options,
//! streaming state and figures), its view (column lists and report) and
//! its tests; and the registry that lists them.
//!
//! Adding an analysis = its folder + one line in [`REGISTRY`]. The
//! registry's order is the order of results in records and documents.

pub mod diff;
pub mod hierarchy;
pub mod idle;
pub mod iterations;
pub mod kernels;
pub mod ops;
pub mod pair;
pub mod ranks;

use crate::analysis::Entry;

/// Every analysis torchtrace knows, in the order their results are written.
pub static REGISTRY: &[Entry] = &[
    Entry::command::<pair::Pair>(),
    Entry::command::<hierarchy::Hierarchy>(),
    Entry::command::<kernels::Kernels>(),
    Entry::command::<iterations::Iterations>(),
    Entry::command::<diff::Diff>(),
    Entry::command::<ranks::Ranks>(),
    Entry::command::<ops::Ops>(),
    Entry::command::<idle::Idle>(),
];
