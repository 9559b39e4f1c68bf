//! An exact multiset of integers (durations in ns) that grows with its
//! distinct values, not with its count: the exact median of every kernel
//! launch of a name without a list of every launch.
//!
//! Kernel durations repeat: on the real TP=2 trace 40,362 kernels have 1,152
//! distinct (name, duration) pairs (3 %), on the vLLM samples 13–26 %, and
//! a longer run of the same server adds launches, not values. So values are
//! kept as sorted runs (value, count), and pushes wait in a small buffer
//! that is sorted and merged in (in place, from the back) when it is a
//! quarter as long as the runs (at least [`MIN_PENDING`]): memory about
//! 12 B per distinct value + 8 B per buffered one (≤ 15 B per distinct
//! value, against 8 B per value for a list), time O(n log n) amortised,
//! as sorting a list would be.
//!
//! ```text
//! push 7 3 7 9 3 7        pending [7 3 7 9 3 7] ── sort, count ──► runs (3,2) (7,3) (9,1)
//! rank:                                                               0 1   2 3 4   5
//! median (n = 6): mean of ranks 2 and 3 = (7 + 7) / 2, as median_sorted of [3 3 7 7 7 9]
//! ```
//!
//! Every figure equals the one computed over the sorted list
//! ([`super::median_sorted`], [`super::percentile_sorted`]): the tests
//! compare them on random inputs.

use super::Exact;

/// The fewest pushes buffered before a merge (a merge costs the runs' length).
pub const MIN_PENDING: usize = 256;

/// An exact multiset of `i64`; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct Multiset {
    /// Sorted, one entry per run; a value occurs in two adjacent runs only
    /// when its count passed `u32::MAX`.
    values: Vec<i64>,
    counts: Vec<u32>,
    pending: Vec<i64>,
    len: u64,
    sum: i128,
}

impl Multiset {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one occurrence of `v`.
    pub fn push(&mut self, v: i64) {
        self.pending.push(v);
        self.len += 1;
        self.sum += i128::from(v);
        if self.pending.len() >= (self.values.len() / 4).max(MIN_PENDING) {
            self.compact();
        }
    }

    /// How many values were pushed.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The sum of every value pushed, exact.
    pub fn sum(&self) -> i128 {
        self.sum
    }

    /// How many runs are stored (distinct values, once merged).
    pub fn distinct(&mut self) -> usize {
        self.compact();
        self.values.len()
    }

    /// Merges the buffer into the runs, in place from the back (so the
    /// peak is the runs plus the buffer's own runs, never two copies).
    fn compact(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        // The buffer's runs: values deduplicated in place, counts beside.
        self.pending.sort_unstable();
        let mut pc: Vec<u32> = Vec::new();
        let mut k = 0;
        for i in 0..self.pending.len() {
            let v = self.pending[i];
            match pc.last_mut() {
                Some(c) if self.pending[k - 1] == v && *c < u32::MAX => *c += 1,
                _ => {
                    self.pending[k] = v;
                    pc.push(1);
                    k += 1;
                }
            }
        }
        self.pending.truncate(k);
        let old = self.values.len();
        self.values.resize(old + k, 0);
        self.counts.resize(old + k, 0);
        // Merge from the back; equal values combine while the count fits.
        let (mut i, mut j, mut w) = (old, k, old + k);
        while j > 0 {
            let (pv, pcount) = (self.pending[j - 1], pc[j - 1]);
            if i > 0 && self.values[i - 1] > pv {
                i -= 1;
                w -= 1;
                self.values[w] = self.values[i];
                self.counts[w] = self.counts[i];
                continue;
            }
            j -= 1;
            if i > 0 && self.values[i - 1] == pv {
                if let Some(sum) = self.counts[i - 1].checked_add(pcount) {
                    i -= 1;
                    w -= 1;
                    self.values[w] = pv;
                    self.counts[w] = sum;
                    continue;
                }
            }
            w -= 1;
            self.values[w] = pv;
            self.counts[w] = pcount;
        }
        // What is left of the old runs is in place below `w` when nothing
        // combined (w == i); combined slots leave a gap to close.
        if w > i {
            self.values.copy_within(w.., i);
            self.counts.copy_within(w.., i);
            let len = self.values.len() - (w - i);
            self.values.truncate(len);
            self.counts.truncate(len);
        }
        self.pending.clear();
        self.pending
            .shrink_to(MIN_PENDING.max(self.values.len() / 4));
    }

    /// The value at rank `r` (0-based) of the sorted values; the runs must
    /// be compacted.
    fn at(&self, r: u64) -> Option<i64> {
        let mut seen = 0u64;
        for (&v, &c) in self.values.iter().zip(&self.counts) {
            seen += u64::from(c);
            if r < seen {
                return Some(v);
            }
        }
        None
    }

    /// The values at ranks `r` and `r + 1` (the second `None` past the end).
    fn pair_at(&self, r: u64) -> Option<(i64, Option<i64>)> {
        let mut seen = 0u64;
        let mut iter = self.values.iter().zip(&self.counts);
        for (&v, &c) in iter.by_ref() {
            seen += u64::from(c);
            if r < seen {
                let next = if r + 1 < seen {
                    Some(v)
                } else {
                    iter.next().map(|(&w, _)| w)
                };
                return Some((v, next));
            }
        }
        None
    }

    /// The median as [`super::median_sorted`] gives it over the sorted
    /// values; `None` when empty.
    pub fn median(&mut self) -> Option<Exact> {
        self.compact();
        let n = self.len;
        if n == 0 {
            return None;
        }
        if n % 2 == 1 {
            return self.at(n / 2).map(Exact::int);
        }
        let (a, b) = self.pair_at(n / 2 - 1)?;
        Some(Exact {
            num: i128::from(a) + i128::from(b?),
            den: 2,
        })
    }

    /// The `pct`-th percentile as [`super::percentile_sorted`] gives it;
    /// `None` when empty.
    pub fn percentile(&mut self, pct: u32) -> Option<Exact> {
        self.compact();
        let n = i128::from(self.len);
        if n == 0 {
            return None;
        }
        let scaled = (n - 1) * i128::from(pct);
        let lo = u64::try_from(scaled / 100).ok()?;
        let frac = scaled % 100;
        let (a, b) = self.pair_at(lo)?;
        let a = i128::from(a);
        Some(match b {
            Some(b) if frac != 0 => Exact {
                num: a * 100 + (i128::from(b) - a) * frac,
                den: 100,
            },
            _ => Exact {
                num: a * 100,
                den: 100,
            },
        })
    }

    /// Bytes held (runs and buffer, by capacity).
    pub fn bytes(&self) -> usize {
        self.values.capacity() * 8 + self.counts.capacity() * 4 + self.pending.capacity() * 8
    }
}

impl Extend<i64> for Multiset {
    fn extend<T: IntoIterator<Item = i64>>(&mut self, iter: T) {
        for v in iter {
            self.push(v);
        }
    }
}

impl FromIterator<i64> for Multiset {
    fn from_iter<T: IntoIterator<Item = i64>>(iter: T) -> Self {
        let mut m = Multiset::new();
        m.extend(iter);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::super::{median_sorted, percentile_sorted};
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_timeline_of_the_module_docs() {
        let mut m: Multiset = [7, 3, 7, 9, 3, 7].into_iter().collect();
        assert_eq!(m.distinct(), 3);
        assert_eq!(
            (m.values.as_slice(), m.counts.as_slice()),
            (&[3, 7, 9][..], &[2, 3, 1][..])
        );
        assert_eq!(m.median(), Some(Exact { num: 14, den: 2 }));
        assert_eq!(m.len(), 6);
        assert_eq!(m.sum(), 36);
        assert_eq!(Multiset::new().median(), None);
        assert_eq!(Multiset::new().percentile(90), None);
    }

    #[test]
    fn memory_follows_distinct_values_not_the_count() {
        // A million launches of 40 durations: the runs stay at 40.
        let mut m = Multiset::new();
        for i in 0..1_000_000i64 {
            m.push(1_000 + (i * 7919) % 40);
        }
        assert_eq!(m.distinct(), 40);
        assert!(m.bytes() < 8 << 10, "{} bytes", m.bytes());
        let mut v: Vec<i64> = (0..1_000_000i64).map(|i| 1_000 + (i * 7919) % 40).collect();
        v.sort_unstable();
        assert_eq!(m.median(), Some(median_sorted(&v)));
        assert_eq!(m.percentile(90), Some(percentile_sorted(&v, 90)));
    }

    #[test]
    fn counts_past_u32_max_split_into_runs() {
        let mut m = Multiset::new();
        m.values = vec![5];
        m.counts = vec![u32::MAX];
        m.len = u64::from(u32::MAX);
        m.pending = vec![5, 5, 6];
        m.len += 3;
        m.compact();
        assert_eq!(m.values, vec![5, 5, 6]);
        assert_eq!(m.counts, vec![u32::MAX, 2, 1]);
        // n = 2^32 + 2: ranks 2^31 and 2^31 + 1 are both 5.
        assert_eq!(m.median(), Some(Exact { num: 10, den: 2 }));
        assert_eq!(m.at(m.len - 1), Some(6));
    }

    proptest! {
        #[test]
        fn figures_equal_those_of_the_sorted_list(
            v in prop::collection::vec(prop_oneof![0i64..50, any::<i64>()], 0..2_000),
            pct in 0u32..=100,
        ) {
            let mut m: Multiset = v.iter().copied().collect();
            let mut s = v.clone();
            s.sort_unstable();
            prop_assert_eq!(m.len(), s.len() as u64);
            prop_assert_eq!(m.sum(), s.iter().map(|&x| i128::from(x)).sum::<i128>());
            if s.is_empty() {
                prop_assert_eq!(m.median(), None);
            } else {
                prop_assert_eq!(m.median(), Some(median_sorted(&s)));
                prop_assert_eq!(m.percentile(pct), Some(percentile_sorted(&s, pct)));
            }
            let mut distinct = s.clone();
            distinct.dedup();
            prop_assert_eq!(m.distinct(), distinct.len());
        }
    }
}
