//! The graph replays of the host side's links (`hostops`: the records
//! `ops` and `export` keep) matched to the captures (issue 57): each
//! graph launch's activities (C3's owners) in the order the GPU ran them
//! (start, end, file order: every stream of the graph in one sequence;
//! replays in launch order), matched by `matching`, placed by `place`.

use super::matching::{match_replay, Act, Index};
use super::place::Place;
use super::{Captures, GraphsSummary};
use crate::hostops::launch::{Launch, Owners};
use crate::hostops::Linked;
use crate::model::{Interner, Sym};
use crate::store::pack::Records;

/// A replayed activity as kept for the match: its launch call, GPU order
/// key, dur, name and kind.
#[derive(Debug, Clone, Copy)]
struct Rep {
    call: u32,
    ts: i64,
    end: i64,
    index: u64,
    /// Its position among the activity records.
    pos: u32,
    dur: i64,
    name: Sym,
    kind: u8,
}

/// One attributed activity (16 B + its dur): its record position, its
/// region and its position k in the region (its captured launch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Given {
    pub pos: u32,
    pub region: u32,
    pub k: u32,
    pub dur: i64,
    /// Matched to one region (shapes known), not an attributed ambiguous
    /// replay.
    pub exact: bool,
}

/// The replays' summary and the attributed activities, in replay order.
#[derive(Debug, Default)]
pub struct Matched {
    pub summary: GraphsSummary,
    pub given: Vec<Given>,
}

/// Matches every graph launch's activities to `caps`; `place`: where the
/// launch call at a position was made.
pub fn match_replays(
    caps: &Captures,
    acts: &Records<Linked>,
    own: &Owners,
    launched: &[Launch],
    names: &Interner,
    mut place: impl FnMut(u32) -> Place,
) -> Matched {
    let mut out = Matched {
        summary: GraphsSummary::of_captures(caps),
        given: Vec::new(),
    };
    let reps = replayed_activities(acts, own, launched);
    if reps.is_empty() {
        return out;
    }
    let ix = Index::new(caps);
    let mut seq: Vec<Act<'_>> = Vec::new();
    for group in reps.chunk_by(|a, b| a.call == b.call) {
        seq.clear();
        seq.extend(group.iter().map(|r| Act {
            kind: r.kind,
            name: names.resolve(r.name),
        }));
        let at = place(group[0].call);
        let (sub, batch) = at.hints();
        let outcome = match_replay(caps, &ix, &seq, batch, sub);
        let total = group.iter().fold(0i64, |t, x| t.saturating_add(x.dur));
        out.summary
            .count(&outcome, at, group[0].ts, group.len(), total);
        if let Some(r) = outcome.region() {
            let exact = outcome.exact();
            let paired = group
                .iter()
                .enumerate()
                .filter_map(|(j, x)| outcome.launch_of(j).map(|k| (k, x)));
            out.summary.attribute(
                &caps.regions[r as usize],
                paired.clone().map(|(_, x)| x.dur),
            );
            out.given.extend(paired.map(|(k, x)| Given {
                pos: x.pos,
                region: r,
                k,
                dur: x.dur,
                exact,
            }));
        }
    }
    out
}

/// The activities of graph replays (owned by a graph launch), in each
/// replay's GPU order: start, end, file order (every stream of the graph
/// in one sequence), replays in launch order.
fn replayed_activities(acts: &Records<Linked>, own: &Owners, launched: &[Launch]) -> Vec<Rep> {
    let mut reps: Vec<Rep> = acts
        .iter()
        .zip(own.iter())
        .enumerate()
        .filter_map(|(pos, (a, o))| {
            let o = o?;
            launched.get(o as usize).filter(|l| l.graph)?;
            Some(Rep {
                call: o,
                ts: a.ts,
                end: crate::hostops::launch::end_of(a.ts, a.dur),
                index: a.index,
                pos: pos as u32,
                dur: a.dur,
                name: a.name,
                kind: a.code,
            })
        })
        .collect();
    reps.sort_unstable_by_key(|r| (r.call, r.ts, r.end, r.index));
    reps
}
