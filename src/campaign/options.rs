//! The options of a campaign as they travel to every shard and worker:
//! plain data, read by the analyses' campaign hooks (`hierarchy`'s chains);
//! `batch::records` checks them and makes its plan of them.

use crate::runinfo::Manifest;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the analyses of a campaign need, in a form that travels to every
/// shard and worker (the command line's `--context`, `--context-regex`,
/// `--chain`, `--manifest`, `--capture`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CampaignOptions {
    pub context: Option<String>,
    pub context_regex: Option<String>,
    /// Chains for the hierarchy tables, "a>b>c"; empty: the default chains
    /// (the same as `plot`'s, so Table 9 and figure 4 agree).
    pub chains: Vec<String>,
    /// Rows of `--manifest`, applied at merge.
    pub manifest: Option<Manifest>,
    /// Each analysis's own options by its name, as its `Options` type
    /// defines them (a missing analysis or key: its default). Every
    /// analysis of the registry with options runs on every worker trace.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub analyses: BTreeMap<String, serde_json::Value>,
    /// The capture traces of the CUDA/HIP graphs (`--capture`), the same
    /// for every trace; empty: `capture_traces/` beside each trace.
    #[serde(
        default,
        skip_serializing_if = "crate::tracefile::capture::CaptureSpec::is_empty"
    )]
    pub capture: crate::tracefile::capture::CaptureSpec,
}
