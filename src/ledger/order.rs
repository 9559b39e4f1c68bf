//! The activities in start order, without a sorted copy of them all.
//!
//! The ledger stores activities grouped by correlation, each group by
//! (start, end), the unowned after them. Correlation ids are issued in time
//! order and a stream runs its work in order, so the stored order is almost
//! sorted already: on every real trace in `../shared` it splits into at most
//! 49 runs of non-decreasing starts (one on the vLLM samples). So the runs
//! are found in one pass and merged with a heap of one entry per run:
//!
//! ```text
//! position: 0   1   2   3   4   5   6
//! start:    10  20  40 │15  30 │25  60        runs at 0, 3, 5 (a start below the previous one)
//! heap:     (10,0) (15,3) (25,5) → pop 10, push (20,1) → pop 15, push (30,4) → pop 20 …
//! order:    0 3 1 5 4 2 6                     (start, position) ascending
//! ```
//!
//! Memory: 4 B per run and 16 B per heap entry. A store of more runs than a
//! quarter of its length and than 64 (no real trace) is sorted instead, 4 B
//! per activity as before. Both give the same order, by (start, position).

use super::{Activities, Activity};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// More runs than `len / MAX_RUNS_PER` (a quarter) and than `FEW_RUNS`:
/// sort positions instead.
const MAX_RUNS_PER: usize = 4;
const FEW_RUNS: usize = 64;

/// The activities by (start, position) ([`Activities::by_start`]).
pub struct ByStart<'a> {
    store: &'a Activities,
    how: How,
}

enum How {
    /// Min-heap of (start, position, end of its run).
    Runs(BinaryHeap<Reverse<(i64, u32, u32)>>),
    Sorted(std::vec::IntoIter<u32>),
}

impl Activities {
    /// Every activity in (start, position) order; see the module docs.
    pub fn by_start(&self) -> ByStart<'_> {
        let n = self.len();
        let mut runs: Vec<u32> = Vec::new();
        let mut prev = i64::MIN;
        for (i, a) in self.iter().enumerate() {
            if i == 0 || a.start.0 < prev {
                runs.push(i as u32);
                if runs.len() > (n / MAX_RUNS_PER).max(FEW_RUNS) {
                    return self.sorted();
                }
            }
            prev = a.start.0;
        }
        let mut heap = BinaryHeap::with_capacity(runs.len());
        for (k, &first) in runs.iter().enumerate() {
            let end = runs.get(k + 1).copied().unwrap_or(n as u32);
            heap.push(Reverse((self.start_of(first as usize).0, first, end)));
        }
        ByStart {
            store: self,
            how: How::Runs(heap),
        }
    }

    fn sorted(&self) -> ByStart<'_> {
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        order.sort_unstable_by_key(|&i| (self.start_of(i as usize), i));
        ByStart {
            store: self,
            how: How::Sorted(order.into_iter()),
        }
    }
}

impl Iterator for ByStart<'_> {
    type Item = Activity;

    fn next(&mut self) -> Option<Activity> {
        let at = match &mut self.how {
            How::Sorted(it) => it.next()?,
            How::Runs(heap) => {
                let mut top = heap.peek_mut()?;
                let Reverse((_, at, end)) = *top;
                if at + 1 < end {
                    *top = Reverse((self.store.start_of(at as usize + 1).0, at + 1, end));
                } else {
                    std::collections::binary_heap::PeekMut::pop(top);
                }
                at
            }
        };
        Some(self.store.get(at as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::super::collector::RawAct;
    use super::super::Kind;
    use super::*;
    use proptest::prelude::*;

    fn store(starts: &[i64]) -> Activities {
        let mut s = Activities::with_len(starts.len());
        for (i, &start) in starts.iter().enumerate() {
            let a = RawAct {
                start,
                dur: 1 + i as i64,
                corr: None,
                name: i as u32,
                kind: Kind::Kernel,
            };
            s.set(i, &a);
        }
        s
    }

    /// (start, position) of each activity, by the name that holds it.
    fn order(s: &Activities, it: ByStart<'_>) -> Vec<(i64, u32)> {
        let _ = s;
        it.map(|a| (a.start.0, a.name.0)).collect()
    }

    #[test]
    fn the_timeline_of_the_module_docs() {
        let s = store(&[10, 20, 40, 15, 30, 25, 60]);
        let got: Vec<u32> = order(&s, s.by_start()).iter().map(|p| p.1).collect();
        assert_eq!(got, vec![0, 3, 1, 5, 4, 2, 6]);
        assert!(matches!(s.by_start().how, How::Runs(ref h) if h.len() == 3));
        assert_eq!(store(&[]).by_start().count(), 0);
    }

    #[test]
    fn many_runs_are_sorted_instead_in_the_same_order() {
        // 400 runs of one (each start below the one before), ties in pairs.
        let starts: Vec<i64> = (0..400).map(|i| 1_000 - i / 2).collect();
        let s = store(&starts);
        assert!(matches!(s.by_start().how, How::Sorted(_)));
        let got: Vec<u32> = order(&s, s.by_start()).iter().map(|p| p.1).collect();
        let want: Vec<u32> = (0..200u32).rev().flat_map(|k| [2 * k, 2 * k + 1]).collect();
        assert_eq!(got, want);
        // 64 runs are merged.
        let starts: Vec<i64> = (0..64).map(|i| 1_000 - i).collect();
        assert!(matches!(store(&starts).by_start().how, How::Runs(_)));
    }

    proptest! {
        #[test]
        fn both_ways_give_start_then_position_order(
            starts in prop::collection::vec(prop_oneof![0i64..20, any::<i64>()], 0..300),
            sorted_runs in 1usize..6,
        ) {
            // Nearly sorted stores (a few runs) and arbitrary ones.
            let mut near = starts.clone();
            let cut = near.len() / sorted_runs.max(1);
            for chunk in near.chunks_mut(cut.max(1)) {
                chunk.sort_unstable();
            }
            for v in [starts, near] {
                let s = store(&v);
                let mut want: Vec<(i64, u32)> =
                    v.iter().enumerate().map(|(i, &x)| (x, i as u32)).collect();
                want.sort_unstable();
                prop_assert_eq!(order(&s, s.by_start()), want.clone());
                prop_assert_eq!(order(&s, s.sorted()), want);
            }
        }
    }
}
