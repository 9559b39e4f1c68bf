//! Interval index for containment questions (`hierarchy`'s chains, and
//! `pair`'s note on ranges inside the step): the three questions the
//! reports ask, each answered in O(log n) after an O(n log n) sort.
//!
//! # Why not a general interval tree for the counts
//!
//! The counts only ever ask *whether* a containing (or contained) interval
//! exists, never which ones. An interval tree (`intervaltree` 0.2.7: 25 ms to
//! build 1M nested intervals, 22 ms for 20k queries, measured in issue 3)
//! answers "which intervals overlap [a, b)"; to decide containment it would
//! list every interval overlapping the child's start and then filter by end,
//! O(log n + k) per query, where k is the nesting depth around the child.
//! vLLM stacks are 30–60 python_function frames deep and a same-name
//! element (`forward`, `sample_tokens`) nests in itself, so k is not small,
//! and listing is pointless work. Sorting by start and keeping a running
//! maximum of ends answers the existence question in one binary search:
//!
//! ```text
//! parents sorted by start   P1 [0 ........ 10]
//!                           P2    [2 .. 5]
//!                           P3          [6 ............ 14]
//! prefix max end               10   10         14
//! child C [7 .. 12]: last parent with start ≤ 7 is P3 (index 2);
//!                    prefix max end 14 ≥ 12 → some parent contains C.
//! ```
//!
//! "P is not C itself" (an event may match both the parent and the child
//! element, e.g. `forward > forward`) is handled by keeping the *two*
//! largest ends with distinct event ids in the prefix: if the largest is C
//! itself, the second decides. Zero-length intervals need no widening
//! (`rust-lapper` needs it, `iset` panics on them), since only `≤`
//! comparisons on integer ns are made. The reverse question ("does this
//! parent hold any child?") is the mirror image: sort by start, keep suffix
//! minima of ends.
//!
//! `intervaltree` is still the right tool for the one listing query: the
//! events overlapping an uncontained child, shown as examples (at most
//! `--examples` queries per link). See [`Overlaps`] and docs/DECISIONS.md.

use crate::model::Ns;
use intervaltree::IntervalTree;

/// An interval with the id of its event (the index in `traceEvents`,
/// unique within a file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iv {
    pub start: Ns,
    pub end: Ns,
    pub id: u64,
}

/// (end, id) with `id == NONE` meaning "no entry".
type Slot = (i64, u64);
const NONE: u64 = u64::MAX;

/// Answers "is there an interval P ≠ q with P.start ≤ q.start and
/// q.end ≤ P.end?" (does something enclose q).
#[derive(Debug, Default, Clone)]
pub struct Enclosers {
    starts: Vec<i64>,
    /// Prefix top two (largest end first) with distinct ids.
    top: Vec<[Slot; 2]>,
}

impl Enclosers {
    /// Sorts its own copy of `items` (given a `Vec`, that one: no copy).
    pub fn new(items: impl Into<Vec<Iv>>) -> Self {
        let mut v: Vec<Iv> = items.into();
        v.sort_by_key(|i| (i.start, i.id));
        let mut top = Vec::with_capacity(v.len());
        let mut cur: [Slot; 2] = [(i64::MIN, NONE), (i64::MIN, NONE)];
        for i in &v {
            let s = (i.end.0, i.id);
            if cur[0].1 == NONE || s.0 > cur[0].0 {
                cur = [s, cur[0]];
            } else if cur[1].1 == NONE || s.0 > cur[1].0 {
                cur[1] = s;
            }
            top.push(cur);
        }
        Enclosers {
            starts: v.iter().map(|i| i.start.0).collect(),
            top,
        }
    }

    pub fn encloses(&self, q: &Iv) -> bool {
        // Number of intervals with start ≤ q.start.
        let j = self.starts.partition_point(|&s| s <= q.start.0);
        if j == 0 {
            return false;
        }
        self.top[j - 1]
            .iter()
            .find(|s| s.1 != NONE && s.1 != q.id)
            .is_some_and(|s| s.0 >= q.end.0)
    }
}

/// Answers "is there an interval C ≠ q with q.start ≤ C.start and
/// C.end ≤ q.end?" (does q hold something). Needs end ≥ start for every
/// interval, which clamped durations guarantee.
#[derive(Debug, Default, Clone)]
pub struct Enclosed {
    starts: Vec<i64>,
    /// Suffix bottom two (smallest end first) with distinct ids.
    bottom: Vec<[Slot; 2]>,
}

impl Enclosed {
    /// Sorts its own copy of `items` (given a `Vec`, that one: no copy).
    pub fn new(items: impl Into<Vec<Iv>>) -> Self {
        let mut v: Vec<Iv> = items.into();
        v.sort_by_key(|i| (i.start, i.id));
        let mut bottom = vec![[(i64::MAX, NONE); 2]; v.len()];
        let mut cur: [Slot; 2] = [(i64::MAX, NONE), (i64::MAX, NONE)];
        for (k, i) in v.iter().enumerate().rev() {
            let s = (i.end.0, i.id);
            if cur[0].1 == NONE || s.0 < cur[0].0 {
                cur = [s, cur[0]];
            } else if cur[1].1 == NONE || s.0 < cur[1].0 {
                cur[1] = s;
            }
            bottom[k] = cur;
        }
        Enclosed {
            starts: v.iter().map(|i| i.start.0).collect(),
            bottom,
        }
    }

    pub fn holds_any(&self, q: &Iv) -> bool {
        // First interval with start ≥ q.start.
        let j = self.starts.partition_point(|&s| s < q.start.0);
        if j == self.starts.len() {
            return false;
        }
        self.bottom[j]
            .iter()
            .find(|s| s.1 != NONE && s.1 != q.id)
            .is_some_and(|s| s.0 <= q.end.0)
    }
}

/// For each interval (in input order): true when no *other* interval of
/// the set encloses it, identical intervals counting the lower id (earlier
/// in the file) as the outer one.
///
/// Sweep in (start asc, end desc, id asc) order: an interval is nested
/// exactly when one seen before it ends at or after its end.
pub fn outermost(items: &[Iv]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&k| {
        let i = &items[k];
        (i.start, std::cmp::Reverse(i.end), i.id)
    });
    let mut out = vec![true; items.len()];
    let mut max_end: Option<Ns> = None;
    for k in order {
        let i = &items[k];
        if max_end.is_some_and(|m| m >= i.end) {
            out[k] = false;
        }
        max_end = Some(max_end.map_or(i.end, |m| m.max(i.end)));
    }
    out
}

/// Lists the intervals that share at least one instant with a query
/// (closed intervals: touching ends count), via `intervaltree`.
///
/// `intervaltree` works on half-open ranges and a zero-length range
/// `[a, a)` overlaps nothing, so each closed [s, e] is stored as
/// [s, e + 1): [p.s, p.e + 1) and [c.s, c.e + 1) overlap exactly when
/// p.s ≤ c.e and c.s ≤ p.e.
pub struct Overlaps {
    tree: IntervalTree<i64, Iv>,
}

impl Overlaps {
    pub fn new(items: &[Iv]) -> Self {
        Overlaps {
            tree: items
                .iter()
                .map(|i| (i.start.0..i.end.0.saturating_add(1), *i))
                .collect(),
        }
    }

    /// The intervals other than `q` itself overlapping `q`, by (start, id).
    pub fn of(&self, q: &Iv) -> Vec<Iv> {
        let mut v: Vec<Iv> = self
            .tree
            .query(q.start.0..q.end.0.saturating_add(1))
            .map(|e| e.value)
            .filter(|i| i.id != q.id)
            .collect();
        v.sort_by_key(|i| (i.start, i.id));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(start: i64, end: i64, id: u64) -> Iv {
        Iv {
            start: Ns(start),
            end: Ns(end),
            id,
        }
    }

    /// Brute force, the definitions literally.
    fn bf_encloses(set: &[Iv], q: &Iv) -> bool {
        set.iter()
            .any(|p| p.id != q.id && p.start <= q.start && q.end <= p.end)
    }
    fn bf_holds(set: &[Iv], q: &Iv) -> bool {
        set.iter()
            .any(|c| c.id != q.id && q.start <= c.start && c.end <= q.end)
    }
    fn bf_outermost(set: &[Iv]) -> Vec<bool> {
        set.iter()
            .map(|c| {
                !set.iter().any(|p| {
                    p.id != c.id
                        && p.start <= c.start
                        && c.end <= p.end
                        && !(p.start == c.start && p.end == c.end && p.id > c.id)
                })
            })
            .collect()
    }

    /// A small deterministic generator (no extra dependency).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, m: u64) -> i64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) % m) as i64
        }
    }

    #[test]
    fn matches_brute_force_on_random_sets() {
        let mut r = Lcg(7);
        for round in 0..400 {
            let n = 1 + (round % 25);
            // Small coordinates: many equal starts/ends and zero lengths.
            let a: Vec<Iv> = (0..n)
                .map(|k| {
                    let s = r.next(12);
                    iv(s, s + r.next(6), k as u64 * 2)
                })
                .collect();
            // b shares some events (same id) with a: an event matching
            // both the parent and the child element.
            let mut b: Vec<Iv> = (0..n)
                .map(|k| {
                    let s = r.next(12);
                    iv(s, s + r.next(4), k as u64 * 2 + 1)
                })
                .collect();
            b.extend(a.iter().filter(|i| i.id % 3 == 0));
            let enc = Enclosers::new(a.as_slice());
            let held = Enclosed::new(b.as_slice());
            for q in &b {
                assert_eq!(enc.encloses(q), bf_encloses(&a, q), "{q:?} in {a:?}");
            }
            for q in &a {
                assert_eq!(held.holds_any(q), bf_holds(&b, q), "{q:?} holds {b:?}");
            }
            assert_eq!(outermost(&a), bf_outermost(&a));
            let ov = Overlaps::new(&a);
            for q in &b {
                let mut want: Vec<Iv> = a
                    .iter()
                    .filter(|p| p.id != q.id && p.start <= q.end && q.start <= p.end)
                    .copied()
                    .collect();
                want.sort_by_key(|i| (i.start, i.id));
                assert_eq!(ov.of(q), want);
            }
        }
    }

    #[test]
    fn empty_sets() {
        let q = iv(0, 1, 0);
        assert!(!Enclosers::new([]).encloses(&q));
        assert!(!Enclosed::new([]).holds_any(&q));
        assert!(outermost(&[]).is_empty());
        assert!(Overlaps::new(&[]).of(&q).is_empty());
    }

    #[test]
    fn an_interval_does_not_enclose_itself() {
        let a = [iv(0, 10, 1)];
        assert!(!Enclosers::new(a.as_slice()).encloses(&a[0]));
        assert!(!Enclosed::new(a.as_slice()).holds_any(&a[0]));
        // The same interval under another id does.
        assert!(Enclosers::new(a.as_slice()).encloses(&iv(0, 10, 2)));
    }
}
