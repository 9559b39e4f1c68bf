//! Where a graph launch was made, and what that says of its replay
//! (issue 57): a vLLM step annotation around it gives the scheduled
//! tokens (the decoder's graph is the smallest captured batch ≥ them);
//! `proposer.propose` around it makes it the speculator's. Shared by every
//! analysis that matches replays (`ops` from its host ops, the others
//! from the driver's annotations, [`crate::contexts::Steps`]), with the
//! tally of outcomes into a [`GraphsSummary`].

use super::matching::{kind_name, Difference, Outcome};
use super::{
    DifferenceCount, GraphsSummary, Region, Unmatched, CAPTURED_NOT_REPLAYED,
    REPLAYED_NOT_CAPTURED, UNMATCHED_LISTED,
};

pub use crate::hostops::spans::{step_tokens, Place, Spans, PROPOSE};

/// How a replay that is not a unique match is listed: its status and the
/// reason (with where the launch was, for an ambiguous one).
pub fn listed(outcome: &Outcome, place: Place) -> Option<(&'static str, String)> {
    match outcome {
        Outcome::Matched(_) | Outcome::Aligned { .. } => None,
        Outcome::Ambiguous {
            candidates,
            attributed,
        } => Some((
            "ambiguous",
            format!(
                "{} regions equal ({}{}){}: {}",
                candidates.len(),
                candidates
                    .iter()
                    .take(8)
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                if candidates.len() > 8 { ", …" } else { "" },
                match place {
                    Place::Step(Some(t)) =>
                        format!(", {t} scheduled tokens: no single smallest captured batch ≥ {t}"),
                    Place::Step(None) => ", step names no token count".to_string(),
                    Place::Propose => {
                        ", in proposer.propose: the drafter's batch is not in the trace".to_string()
                    }
                    Place::Outside => ", no step annotation encloses the launch".to_string(),
                },
                if *attributed {
                    "the same launcher ops: attributed, shapes unknown"
                } else {
                    "different launcher ops: not attributed"
                }
            ),
        )),
        Outcome::Unmatched(why) => Some(("unmatched", why.clone())),
    }
}

impl GraphsSummary {
    /// An empty summary of `caps` (files, regions, notes).
    pub fn of_captures(caps: &super::Captures) -> GraphsSummary {
        GraphsSummary {
            captures: caps.files.clone(),
            regions: caps.regions.len() as u64,
            notes: caps.notes.clone(),
            ..GraphsSummary::default()
        }
    }

    /// One replay more (of `activities` activities lasting `gpu_ns` in
    /// all, launched at `ts`), counted by its outcome; listed when not a
    /// unique match.
    pub fn count(
        &mut self,
        outcome: &Outcome,
        place: Place,
        ts: i64,
        activities: usize,
        gpu_ns: i64,
    ) {
        self.replays += 1;
        self.replayed_activities += activities as u64;
        self.replayed_gpu_ns = self.replayed_gpu_ns.saturating_add(gpu_ns);
        match outcome {
            Outcome::Matched(_) => self.replays_matched += 1,
            Outcome::Aligned { differences, .. } => {
                self.replays_matched += 1;
                self.replays_with_differences += 1;
                self.differ(differences);
            }
            Outcome::Ambiguous { attributed, .. } => {
                self.replays_ambiguous += 1;
                self.replays_ambiguous_attributed += u64::from(*attributed);
            }
            Outcome::Unmatched(_) => self.replays_unmatched += 1,
        }
        if let Some((status, reason)) = listed(outcome, place) {
            if self.unmatched.len() < UNMATCHED_LISTED {
                self.unmatched.push(Unmatched {
                    ts,
                    activities: activities as u64,
                    status: status.into(),
                    reason,
                });
            }
        }
    }

    /// Adds an aligned replay's differences to the counts (kept sorted by
    /// side, kind, name).
    fn differ(&mut self, differences: &[Difference]) {
        for d in differences {
            let side = if d.captured {
                CAPTURED_NOT_REPLAYED
            } else {
                REPLAYED_NOT_CAPTURED
            };
            let kind = kind_name(d.kind);
            let key = (side, kind, d.name.as_str());
            match self
                .differences
                .binary_search_by(|c| (c.side.as_str(), c.kind.as_str(), c.name.as_str()).cmp(&key))
            {
                Ok(i) => self.differences[i].count += 1,
                Err(i) => self.differences.insert(
                    i,
                    DifferenceCount {
                        side: side.into(),
                        kind: kind.into(),
                        name: d.name.clone(),
                        count: 1,
                    },
                ),
            }
        }
    }

    /// An attributed replay of `region` whose activities last `durs`:
    /// counted in the totals and in its subsystem's share.
    pub fn attribute(&mut self, region: &Region, durs: impl Iterator<Item = i64>) {
        let share = self
            .by_subsystem
            .entry(region.subsystem.clone())
            .or_default();
        share.replays += 1;
        let bs = region
            .batch
            .map_or_else(|| "none".to_string(), |b| b.to_string());
        *share.replays_by_batch.entry(bs).or_default() += 1;
        for dur in durs {
            self.graph_activities += 1;
            self.gpu_graph_ns = self.gpu_graph_ns.saturating_add(dur);
            share.activities += 1;
            share.gpu_graph_ns = share.gpu_graph_ns.saturating_add(dur);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::step_tokens;

    /// The step names of `sample_traces/text_graphs_{ar,mtp}/` (AR decode, MTP
    /// decode, prefill) and forms that do not say a total.
    #[test]
    fn scheduled_tokens_of_real_step_names() {
        assert_eq!(step_tokens("execute_context_0(0)_generation_1(1)"), Some(1));
        assert_eq!(step_tokens("execute_context_0(0)_generation_1(3)"), Some(3));
        assert_eq!(
            step_tokens("execute_context_1(96)_generation_0(0)"),
            Some(96)
        );
        assert_eq!(
            step_tokens("execute_context_1(96)_generation_2(6)"),
            Some(102)
        );
        assert_eq!(step_tokens("execute_new_1_cached_2"), None);
        assert_eq!(step_tokens("proposer.propose"), None);
    }
}
