//! `batch --tables DIR` (issue 36): the campaign's Parquet tables, read in
//! the same pass as the rest of batch. The export state rides in the
//! batch plan ([`CampaignTables::plan`]); each file's part is taken out of
//! its results before records or results.json see them ([`take_parts`]),
//! and once workload and mode are resolved the parts are joined in
//! traces.csv's order ([`campaign_parts`]).

use super::{BatchResult, FileResult};
use crate::export::TracePart;
pub use crate::export::{CampaignPart, CampaignTables};
use std::collections::HashMap;

/// The parts of the files of one map step, by (label, input, ordinal).
#[derive(Debug, Default)]
pub struct Parts(HashMap<(String, usize, u64), TracePart>);

impl Parts {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Takes every file's export part out of its results.
pub fn take_parts(files: &mut [FileResult]) -> Parts {
    let mut parts = Parts::default();
    for f in files {
        if let Some(p) = CampaignTables::take(&mut f.results) {
            parts.0.insert((f.path.clone(), f.input, f.ordinal), p);
        }
    }
    parts
}

/// The parts in the batch's record order, each with its record's label,
/// workload and mode.
pub fn campaign_parts(res: &BatchResult, mut parts: Parts) -> Vec<CampaignPart> {
    res.records
        .iter()
        .filter_map(|r| {
            let key = (r.file.path.clone(), r.file.input, r.file.ordinal);
            let part = parts.0.remove(&key)?;
            Some(CampaignPart {
                trace: r.file.path.clone(),
                workload: r.run.workload().map(str::to_string),
                mode: r.run.mode().map(str::to_string),
                part,
            })
        })
        .collect()
}
