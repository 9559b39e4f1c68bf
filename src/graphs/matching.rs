//! A replay to its capture region, exactly (issue 57).
//!
//! A replay is a graph launch's activities in the order the GPU ran them:
//! by start, then end, then file order, over all its streams (a graph on
//! several streams is one sequence in that order). It matches a region
//! when the counts are equal and every activity equals the captured launch
//! at the same position: the same kind and, where the capture records a
//! kernel name (ROCm's `args.kernel`), the same name. CUDA's capture
//! records none, so there the match is by kind, count and order.
//!
//! - One region matches: `Matched`.
//! - Several match (vLLM captures one graph per batch size, or one per
//!   piece of a PIECEWISE forward, with the same kernels): the one whose
//!   batch size is the smallest captured one ≥ the replay's batch when the
//!   caller knows it; else `Ambiguous` with the candidates, attributed only
//!   when every candidate names the same launcher sequence (then the ops
//!   are known, their shapes not).
//! - None equal: where the regions name their kernels, the replay aligned
//!   to the best of them on ≥ 99 % of the longer side is `Aligned`, with
//!   its differences (G2, `align`); else `Unmatched` with the reason — no
//!   capture, a count no region has, or the first position where the
//!   closest region of the same count differs, with both names.
//!
//! Cost: each region hashed once by its (kind, name) sequence and once by
//! its kinds; a replay hashed the same two ways and compared in full only
//! with the regions of its hash: O(n) per replay, O(n log n) overall with
//! the sorts that order the activities. Only a replay that equals no
//! region is aligned: O(n) per named region to bound its edits from
//! below, O(n·D) (D ≤ 2 % of n) for the few within reach.

use super::{Captured, Captures};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// One replayed activity: its kind (0 kernel, 1 memcpy, 2 memset) and
/// name.
#[derive(Debug, Clone, Copy)]
pub struct Act<'a> {
    pub kind: u8,
    pub name: &'a str,
}

/// What a replay matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Matched(u32),
    /// Aligned to one region with differences (G2): `map[j]` is the
    /// captured launch of activity `j` ([`UNPAIRED`]: none); the
    /// differences by side, kind and name.
    Aligned {
        region: u32,
        map: Vec<u32>,
        differences: Vec<Difference>,
    },
    /// The candidates; `attributed` when they name the same launchers.
    Ambiguous {
        candidates: Vec<u32>,
        attributed: bool,
    },
    Unmatched(String),
}

impl Outcome {
    /// The region whose launchers the replay's activities get, if any
    /// (an attributed ambiguous replay: its first candidate, whose
    /// launcher names all candidates share).
    pub fn region(&self) -> Option<u32> {
        match self {
            Outcome::Matched(r) | Outcome::Aligned { region: r, .. } => Some(*r),
            Outcome::Ambiguous {
                candidates,
                attributed: true,
            } => candidates.first().copied(),
            _ => None,
        }
    }
}

/// An activity of an aligned replay with no captured launch.
pub const UNPAIRED: u32 = u32::MAX;

/// One difference of an aligned replay from its region: a captured launch
/// that ran no activity (`captured: true`), or an activity no captured
/// launch accounts for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Difference {
    pub captured: bool,
    pub kind: u8,
    pub name: String,
}

impl Outcome {
    /// The captured launch (position in its region) of activity `j`:
    /// `j` itself for a positional match, the alignment's for an aligned
    /// one, none for an activity the alignment left out or a replay not
    /// attributed.
    pub fn launch_of(&self, j: usize) -> Option<u32> {
        match self {
            Outcome::Aligned { map, .. } => map.get(j).copied().filter(|&k| k != UNPAIRED),
            _ => self.region().map(|_| j as u32),
        }
    }

    /// Matched to one region (its shapes known): exactly or aligned.
    pub fn exact(&self) -> bool {
        matches!(self, Outcome::Matched(_) | Outcome::Aligned { .. })
    }
}

/// The regions by their two hashes.
#[derive(Debug, Default)]
pub struct Index {
    /// Regions with a kernel name at every kernel launch, by the hash of
    /// their (kind, name) sequence.
    named: HashMap<u64, Vec<u32>>,
    /// Regions without names (CUDA), by the hash of their kinds.
    unnamed: HashMap<u64, Vec<u32>>,
    /// Region counts, for the reasons.
    counts: HashMap<usize, Vec<u32>>,
    /// The regions with a kernel name at every kernel launch, in order:
    /// those a replay may be aligned to (G2).
    pub(super) all_named: Vec<u32>,
}

fn hash_of<'a>(items: impl Iterator<Item = (u8, Option<&'a str>)>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut n = 0usize;
    for (k, s) in items {
        k.hash(&mut h);
        s.hash(&mut h);
        n += 1;
    }
    n.hash(&mut h);
    h.finish()
}

/// A captured launch's name, for a kernel where the capture has one (a
/// memcpy or memset compares by kind: the name a capture records for it
/// is the runtime call's, never the activity's).
pub(super) fn named<'c>(caps: &'c Captures, c: &Captured) -> Option<&'c str> {
    c.kernel.filter(|_| c.kind == 0).map(|k| caps.resolve(k))
}

/// A replayed activity's name as compared: a kernel's; none for a memcpy
/// or memset.
pub(super) fn act_name<'a>(a: &Act<'a>) -> Option<&'a str> {
    (a.kind == 0).then_some(a.name)
}

/// Whether replayed activity `a` is what captured launch `c` launched.
pub(super) fn same(caps: &Captures, c: &Captured, a: &Act<'_>) -> bool {
    c.kind == a.kind && named(caps, c).is_none_or(|n| n == a.name)
}

impl Index {
    pub fn new(caps: &Captures) -> Index {
        let mut ix = Index::default();
        for (r, reg) in caps.regions.iter().enumerate() {
            let r = r as u32;
            let all_named = reg
                .launches
                .iter()
                .all(|c| c.kind != 0 || c.kernel.is_some());
            if all_named {
                let h = hash_of(reg.launches.iter().map(|c| (c.kind, named(caps, c))));
                ix.named.entry(h).or_default().push(r);
                ix.all_named.push(r);
            } else {
                let h = hash_of(reg.launches.iter().map(|c| (c.kind, None)));
                ix.unnamed.entry(h).or_default().push(r);
            }
            ix.counts.entry(reg.launches.len()).or_default().push(r);
        }
        ix
    }
}

/// Whether `acts` equals region `r` position by position; else the first
/// position that differs.
fn differs(caps: &Captures, r: u32, acts: &[Act<'_>]) -> Option<usize> {
    let reg = &caps.regions[r as usize];
    if reg.launches.len() != acts.len() {
        return Some(reg.launches.len().min(acts.len()));
    }
    reg.launches
        .iter()
        .zip(acts)
        .position(|(c, a)| !same(caps, c, a))
}

const KINDS: [&str; 3] = ["kernel", "memcpy", "memset"];

pub(super) fn kind_name(k: u8) -> &'static str {
    KINDS.get(usize::from(k)).copied().unwrap_or("activity")
}

/// How many candidates of the same count the reason compares (linear
/// each: the reason stays O(n) per replay).
const REASON_TRIES: usize = 8;

/// Matches one replay. `batch`: the replay's batch (scheduled tokens)
/// when the trace says it; `subsystem`: whose graph it is when the trace
/// says it (a step's: `decoder`; inside `proposer.propose`:
/// `speculator`). Both only choose among equal regions: the smallest
/// captured batch ≥ `batch` of that subsystem (vLLM pads a batch up to
/// the next captured size), never by position.
pub fn match_replay(
    caps: &Captures,
    ix: &Index,
    acts: &[Act<'_>],
    batch: Option<u64>,
    subsystem: Option<&str>,
) -> Outcome {
    if caps.regions.is_empty() {
        return Outcome::Unmatched("no capture found".into());
    }
    let h_named = hash_of(acts.iter().map(|a| (a.kind, act_name(a))));
    let h_kinds = hash_of(acts.iter().map(|a| (a.kind, None)));
    let mut cands: Vec<u32> = ix
        .named
        .get(&h_named)
        .into_iter()
        .chain(ix.unnamed.get(&h_kinds))
        .flatten()
        .copied()
        .filter(|&r| differs(caps, r, acts).is_none())
        .collect();
    cands.sort_unstable();
    if cands.is_empty() {
        return super::align::best(caps, ix, acts, batch, subsystem)
            .unwrap_or_else(|| Outcome::Unmatched(reason(caps, ix, acts)));
    }
    match narrow(caps, cands, batch, subsystem) {
        Ok(r) => Outcome::Matched(r),
        Err(cands) => {
            let launchers = |r: u32| {
                caps.regions[r as usize].launches.iter().map(|c| {
                    c.launcher
                        .map(|o| (caps.ops[o as usize].cat, caps.ops[o as usize].name))
                })
            };
            let attributed = cands[1..]
                .iter()
                .all(|&r| launchers(r).eq(launchers(cands[0])));
            Outcome::Ambiguous {
                candidates: cands,
                attributed,
            }
        }
    }
}

/// One region among equal candidates (sorted, not empty): the only one,
/// else the only one of `subsystem`, else the one of the smallest captured
/// batch ≥ `batch`; `Err` with those left when several remain.
pub(super) fn narrow(
    caps: &Captures,
    mut cands: Vec<u32>,
    batch: Option<u64>,
    subsystem: Option<&str>,
) -> Result<u32, Vec<u32>> {
    if cands.len() == 1 {
        return Ok(cands[0]);
    }
    if let Some(sub) = subsystem {
        let of_sub: Vec<u32> = cands
            .iter()
            .copied()
            .filter(|&r| caps.regions[r as usize].subsystem == sub)
            .collect();
        match of_sub.len() {
            0 => {}
            1 => return Ok(of_sub[0]),
            _ => cands = of_sub,
        }
    }
    if let Some(b) = batch {
        // The smallest captured batch ≥ the replay's.
        let best = cands
            .iter()
            .filter_map(|&r| caps.regions[r as usize].batch.filter(|&x| x >= b))
            .min();
        if let Some(best) = best {
            let at: Vec<u32> = cands
                .iter()
                .copied()
                .filter(|&r| caps.regions[r as usize].batch == Some(best))
                .collect();
            if at.len() == 1 {
                return Ok(at[0]);
            }
            cands = at;
        }
    }
    Err(cands)
}

/// Why no region matches `acts`.
fn reason(caps: &Captures, ix: &Index, acts: &[Act<'_>]) -> String {
    let Some(same) = ix.counts.get(&acts.len()) else {
        let mut counts: Vec<usize> = ix.counts.keys().copied().collect();
        counts.sort_unstable();
        counts.truncate(8);
        return format!(
            "count: {} activities, no capture region has as many (regions have {:?})",
            acts.len(),
            counts
        );
    };
    // The region of the same count that agrees longest.
    let (r, p) = same
        .iter()
        .take(REASON_TRIES)
        .filter_map(|&r| differs(caps, r, acts).map(|p| (r, p)))
        .max_by_key(|&(r, p)| (p, std::cmp::Reverse(r)))
        .unwrap_or((same[0], 0));
    let c = &caps.regions[r as usize].launches[p];
    let a = &acts[p];
    let captured = match c.kernel {
        Some(k) => format!("{} {}", kind_name(c.kind), caps.resolve(k)),
        None => kind_name(c.kind).to_string(),
    };
    format!(
        "position {p} of {}: region {r} captured {captured}, replay ran {} {}",
        acts.len(),
        kind_name(a.kind),
        a.name
    )
}
