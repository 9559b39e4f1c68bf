//! The activities grouped by correlation rank: counted per rank (and their
//! shapes collected), placed by a counting sort, and each group's extent kept
//! as a bit per activity position once the owners are known.

use super::activities::{Activities, Palette, SHAPES_PER};
use super::collector::acts_of;
use super::corr::CorrIndex;
use crate::store::bits::Bits;
use crate::store::pack::Packed;
use std::ops::Range;

/// While the ledger is built, the activities grouped by correlation rank:
/// `ends[r]` = the end of rank r's group (its start is `ends[r − 1]`, 0
/// for r = 0); 4 B per id.
#[derive(Debug, Default)]
pub(super) struct RankEnds {
    pub(super) ends: Vec<u32>,
}

/// In the ledger, a bit per activity position: the first of each owned
/// group, and the first unowned one. A group runs from its first position
/// to the next set bit: 1/32 of `RankEnds`' 4 B per id, and a launch call
/// names its group by its first position.
#[derive(Debug, Default)]
pub(super) struct Groups {
    pub(super) firsts: Bits,
    pub(super) len: usize,
}

impl Groups {
    pub(super) fn of(by_rank: &RankEnds, len: usize) -> Groups {
        let mut firsts = Bits::new(len + 1);
        let mut lo = 0;
        for &end in &by_rank.ends {
            if end as usize > lo {
                firsts.insert(lo);
            }
            lo = lo.max(end as usize);
        }
        firsts.insert(lo);
        Groups { firsts, len }
    }

    /// The group whose first position is `first`.
    pub(super) fn range(&self, first: u32) -> Range<usize> {
        let lo = (first as usize).min(self.len);
        lo..self
            .firsts
            .next_set(lo + 1)
            .map_or(self.len, |e| e.min(self.len))
    }

    pub(super) fn bytes(&self) -> usize {
        self.firsts.bytes()
    }
}

impl RankEnds {
    pub(super) fn range(&self, r: u32) -> Range<usize> {
        let r = r as usize;
        let lo = match r {
            0 => 0,
            _ => self.ends.get(r - 1).copied().unwrap_or(0) as usize,
        };
        lo..(self.ends.get(r).copied().unwrap_or(0) as usize).max(lo)
    }
}

/// Activities per correlation rank, as prefix sums: rank r's group is
/// `starts[r]..starts[r + 1]`; how many no launch call owns; and the
/// shapes' palette when they are few enough for 8 B records.
pub(super) fn count_groups(
    stream: &Packed,
    index: &CorrIndex,
    n: usize,
) -> (Vec<u32>, usize, Option<Palette>) {
    let mut starts = vec![0u32; index.len() + 1];
    let mut unowned = 0usize;
    let mut palette = Some(Palette::default());
    for a in acts_of(stream.reader()) {
        match a.corr.and_then(|k| index.rank(k)) {
            Some(r) => starts[r as usize + 1] = starts[r as usize + 1].saturating_add(1),
            None => unowned += 1,
        }
        if let Some(p) = &mut palette {
            p.code(&a);
            if p.shapes.len() > n / SHAPES_PER {
                palette = None;
            }
        }
    }
    for r in 1..starts.len() {
        starts[r] = starts[r].saturating_add(starts[r - 1]);
    }
    (starts, unowned, palette)
}

/// Counting sort of the activity stream by correlation rank (the stream's
/// chunks are freed as they are placed): owned activities first, by rank,
/// each group sorted by (start, end); then the unowned ones.
pub(super) fn place_activities(
    stream: Packed,
    index: &CorrIndex,
    mut starts: Vec<u32>,
    unowned: usize,
    palette: Option<Palette>,
) -> (Activities, RankEnds) {
    let ranks = index.len();
    let owned = starts.get(ranks).copied().unwrap_or(0) as usize;
    let mut store = Activities::of(owned + unowned, palette);
    let mut next_unowned = owned;
    // starts[r] is rank r's cursor: once placed, it is rank r's end.
    for a in acts_of(stream.drain()) {
        let at = match a.corr.and_then(|k| index.rank(k)) {
            Some(r) => {
                let at = starts[r as usize];
                starts[r as usize] += 1;
                at as usize
            }
            None => {
                next_unowned += 1;
                next_unowned - 1
            }
        };
        store.set(at, &a);
    }
    starts.truncate(ranks);
    let groups = RankEnds { ends: starts };
    for r in 0..ranks as u32 {
        let range = groups.range(r);
        if range.len() > 1 {
            store.sort_range(range);
        }
    }
    store.seal();
    (store, groups)
}
