//! The owning launch calls, 16 B each.
//!
//! The ledger keeps one record per launch call that owns ≥ 1 activity, in
//! (lane, ts, index) order: the attribution sweeps and every `Work` read
//! them by position. A record was 24 B (ts: i64, index, dur, name, rank);
//! it is 16 B by taking what launch calls repeat (`group`: where its
//! activities start in the ledger's store):
//!
//! ```text
//!   record [u32; 4] | off: i32 | index: u32 | dur·64 + name code | group |
//!     ts   = bases[pos / 64] + off      (a base per 64 positions: the ts of
//!                                        the block's first written record)
//!     name = names[code]                (≤ 63 distinct launch names: the
//!                                        runtime's few launch APIs)
//!
//!   lane 0 positions 0..64 ─ base 5106297913320790 ─ offs 0, 4210, 9876, …
//!   lane 0 positions 64..  ─ base 5106297951007311 ─ …
//!
//!   escape (dur·64 + name code = u32::MAX): wide[group] holds the call whole
//!     when ts is beyond ±2^31 ns of its block's base (a > 2.1 s gap inside
//!     64 calls of a thread, or a block shared by two lanes), dur ≥ 2^26 ns
//!     (67 ms) or < 0, or a 64th distinct launch name
//! ```
//!
//! The records live in a zeroed allocation written at each lane's cursor:
//! the system gives its pages as they are first written, so a lane's
//! region grows as its calls arrive, and no (record, place) list is needed
//! to move them there afterwards.

use super::bits::Bits;
use crate::model::Sym;
use std::collections::HashMap;

/// Positions per time base.
const BLOCK: usize = 64;
/// Bits of the name code.
const NAME_BITS: u32 = 6;
/// Distinct names with a code (the code 63 is never given).
const NAMES: usize = (1 << NAME_BITS) - 1;
/// Durations below this fit a record.
const DUR_LIMIT: i64 = 1 << (32 - NAME_BITS);
/// Marks a record held whole in `wide`.
const ESCAPE: u32 = u32::MAX;

/// A launch call as the store takes and gives it back (every field exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Call {
    pub ts: i64,
    pub index: u64,
    pub dur: i64,
    pub name: Sym,
    /// The position of its first activity (unique per owner): its
    /// activities are `Groups::range(group)`.
    pub group: u32,
}

/// The owning launch calls by position (see the module docs).
#[derive(Debug, Default)]
pub(super) struct Launches {
    recs: Vec<[u32; 4]>,
    bases: Vec<i64>,
    /// Blocks whose base is set (by their first written record).
    based: Bits,
    names: Vec<Sym>,
    /// The escaped calls, by group.
    wide: HashMap<u32, Call>,
}

impl Launches {
    /// `n` positions, each to be [`set`](Launches::set) once (before
    /// that they read as a zero call).
    pub fn zeroed(n: usize) -> Self {
        let blocks = n.div_ceil(BLOCK);
        Launches {
            // Zeroed memory: pages come as they are written.
            recs: vec![[0u32; 4]; n],
            bases: vec![0; blocks],
            based: Bits::new(blocks),
            names: Vec::new(),
            wide: HashMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.recs.len()
    }

    /// Bytes held (for the memory tests and benchmarks).
    pub fn bytes(&self) -> usize {
        self.recs.capacity() * std::mem::size_of::<[u32; 4]>()
            + self.bases.capacity() * 8
            + self.wide.capacity() * std::mem::size_of::<(u32, Call)>()
    }

    /// Calls held whole (escaped).
    #[cfg(test)]
    pub fn escaped(&self) -> usize {
        self.wide.len()
    }

    /// Writes `c` at position `pos` (ignored past the end).
    pub fn set(&mut self, pos: usize, c: &Call) {
        let block = pos / BLOCK;
        let Some(&base) = self.bases.get(block) else {
            return;
        };
        let base = match self.based.insert(block) {
            true => {
                self.bases[block] = c.ts;
                c.ts
            }
            false => base,
        };
        let rec = self.compact(base, c).unwrap_or([0, 0, ESCAPE, c.group]);
        if rec[2] == ESCAPE {
            self.wide.insert(c.group, *c);
        }
        if let Some(slot) = self.recs.get_mut(pos) {
            *slot = rec;
        }
    }

    /// The 16 B record of `c` against its block's base, if it fits.
    fn compact(&mut self, base: i64, c: &Call) -> Option<[u32; 4]> {
        let off = i32::try_from(c.ts.checked_sub(base)?).ok()?;
        let index = u32::try_from(c.index).ok()?;
        if !(0..DUR_LIMIT).contains(&c.dur) {
            return None;
        }
        let code = match self.names.iter().position(|&n| n == c.name) {
            Some(k) => k,
            None if self.names.len() < NAMES => {
                self.names.push(c.name);
                self.names.len() - 1
            }
            None => return None,
        };
        Some([
            off as u32,
            index,
            (c.dur as u32) << NAME_BITS | code as u32,
            c.group,
        ])
    }

    /// The call at position `pos` (a zero call past the end).
    pub fn get(&self, pos: usize) -> Call {
        let Some(&[off, index, dn, group]) = self.recs.get(pos) else {
            return Call {
                ts: 0,
                index: 0,
                dur: 0,
                name: Sym(0),
                group: 0,
            };
        };
        if dn == ESCAPE {
            if let Some(c) = self.wide.get(&group) {
                return *c;
            }
        }
        let base = self.bases.get(pos / BLOCK).copied().unwrap_or(0);
        let code = (dn & ((1 << NAME_BITS) - 1)) as usize;
        Call {
            ts: base.saturating_add(i64::from(off as i32)),
            index: u64::from(index),
            dur: i64::from(dn >> NAME_BITS),
            name: self.names.get(code).copied().unwrap_or(Sym(0)),
            group,
        }
    }

    /// The group of the call at `pos` (what its activities are found by).
    pub fn group(&self, pos: usize) -> Option<u32> {
        self.recs.get(pos).map(|r| r[3])
    }

    /// Sorts the positions `r` by (ts, index) — a no-op check when, as
    /// Kineto writes a thread's calls, they already are.
    pub fn sort_range(&mut self, r: std::ops::Range<usize>) {
        let r = r.start.min(self.len())..r.end.min(self.len());
        let key = |c: &Call| (c.ts, c.index);
        let mut prev = None;
        let sorted = r.clone().all(|i| {
            let k = key(&self.get(i));
            let in_order = prev.is_none_or(|p| p <= k);
            prev = Some(k);
            in_order
        });
        if sorted {
            return;
        }
        let mut calls: Vec<Call> = r.clone().map(|i| self.get(i)).collect();
        calls.sort_unstable_by_key(key);
        // Written again against other bases: a call escapes anew or not.
        for c in &calls {
            self.wide.remove(&c.group);
        }
        for (i, c) in r.zip(&calls) {
            self.set(i, c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn call(ts: i64, index: u64, dur: i64, name: u32, group: u32) -> Call {
        Call {
            ts,
            index,
            dur,
            name: Sym(name),
            group,
        }
    }

    #[test]
    fn the_records_of_the_module_docs() {
        assert_eq!(std::mem::size_of::<[u32; 4]>(), 16);
        let t = 5_106_297_913_320_790;
        let mut l = Launches::zeroed(130);
        let calls = [
            (0, call(t, 7, 3_000, 4, 0)),
            (1, call(t + 4_210, 9, 2_500, 9, 1)),
            // 2.5 s after its block's base: whole.
            (2, call(t + 2_500_000_000, 11, 10, 4, 2)),
            // 67 ms: whole; a duration just below fits.
            (3, call(t + 9_876, 12, DUR_LIMIT, 4, 3)),
            (4, call(t + 9_900, 13, DUR_LIMIT - 1, 4, 4)),
            // A new block: its own base, before the previous one's.
            (64, call(t - 1, 1, 0, 4, 5)),
            (129, call(i64::MIN, u64::MAX, -1, 77, 6)),
        ];
        for (pos, c) in &calls {
            l.set(*pos, c);
        }
        for (pos, c) in &calls {
            assert_eq!(l.get(*pos), *c, "position {pos}");
            assert_eq!(l.group(*pos), Some(c.group));
        }
        assert_eq!(l.escaped(), 3, "2.5 s, 67 ms, and the extremes");
        assert_eq!(l.names, [Sym(4), Sym(9)]);
        assert_eq!(l.bases[0..2], [t, t - 1]);
        assert_eq!(l.get(500).ts, 0, "past the end");
        assert_eq!(l.group(500), None);
    }

    #[test]
    fn a_64th_name_is_held_whole() {
        let mut l = Launches::zeroed(70);
        for k in 0..70u32 {
            l.set(k as usize, &call(i64::from(k), u64::from(k), 1, k, k));
        }
        assert_eq!(l.escaped(), 70 - NAMES);
        for k in 0..70u32 {
            assert_eq!(l.get(k as usize).name, Sym(k));
        }
    }

    proptest! {
        /// Any calls, written at any positions, come back exact; a sorted
        /// range is in (ts, index) order and holds the same calls.
        #[test]
        fn gives_back_what_was_set(
            calls in prop::collection::vec(
                (prop_oneof![0i64..5_000, 0i64..5_000_000_000, any::<i64>()],
                 prop_oneof![0u64..100, any::<u64>()],
                 prop_oneof![0i64..100, -5i64..(1 << 27)],
                 0u32..80),
                0..300),
            cut in 0usize..300,
        ) {
            let n = calls.len();
            let mut l = Launches::zeroed(n);
            let calls: Vec<Call> = calls
                .iter()
                .enumerate()
                .map(|(r, &(ts, index, dur, name))| call(ts, index, dur, name, r as u32))
                .collect();
            // Written in reverse order: a block's base is its last position's ts.
            for (pos, c) in calls.iter().enumerate().rev() {
                l.set(pos, c);
            }
            for (pos, c) in calls.iter().enumerate() {
                prop_assert_eq!(l.get(pos), *c);
            }
            let cut = cut.min(n);
            l.sort_range(cut..n);
            let mut want: Vec<Call> = calls[cut..].to_vec();
            want.sort_unstable_by_key(|c| (c.ts, c.index, c.group));
            let mut got: Vec<Call> = (cut..n).map(|i| l.get(i)).collect();
            prop_assert!(got.windows(2).all(|w| (w[0].ts, w[0].index) <= (w[1].ts, w[1].index)));
            got.sort_unstable_by_key(|c| (c.ts, c.index, c.group));
            prop_assert_eq!(got, want);
            for (pos, c) in calls[..cut].iter().enumerate() {
                prop_assert_eq!(l.get(pos), *c);
            }
        }
    }
}
