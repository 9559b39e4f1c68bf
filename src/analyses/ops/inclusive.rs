//! Inclusive attribution (O3, and O5's `sync_ns`) in O(n log n): for each
//! op name, the runtime calls inside *any* of its instances on a thread,
//! each counted once per name however the instances nest or overlap.
//!
//! A call is inside some instance of a name iff it is inside one of the
//! name's *maximal* instances (those no other instance of the name
//! encloses, C4): containment is transitive. Maximal instances of one
//! name on one thread have distinct starts a_1 < a_2 < … and, since none
//! holds another, increasing ends b_1 < b_2 < …. A call (t, e) is then
//! inside one of them iff `e ≤ b_i` for the last i with `a_i ≤ t`:
//!
//! ```text
//!  name N    [a1==============b1)
//!                     [a2===================b2)     (improperly nested twins)
//!  calls       x    y          z         w
//!  x, y: t in [a1, a2): inside iff e ≤ b1      z: t ≥ a2: inside iff e ≤ b2
//!  Σ over N = Σ_i  F(a_{i+1}, b_i) − F(a_i, b_i),  F(T, b) = Σ w of calls with t < T, e ≤ b
//! ```
//!
//! Every F is answered online, during the thread's sweep ([`Online`]): the
//! queries come in T order, the calls inserted in ts order into a Fenwick
//! tree over their ranked ends; nothing per op is kept.

/// A runtime call with what it adds to each name holding it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Point {
    pub ts: i64,
    pub end: i64,
    pub w: [i64; WEIGHTS],
}

/// How many sums a point carries (launches, activities, GPU ns, sync ns).
pub(super) const WEIGHTS: usize = 4;

/// A maximal instance of a row's name on the thread.
#[cfg(test)]
#[derive(Debug, Clone, Copy)]
pub(super) struct Maximal {
    pub row: u32,
    pub ts: i64,
    pub end: i64,
}

pub(super) type Sums = [i128; WEIGHTS];

fn add(a: &mut Sums, b: &Sums, sign: i128) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += sign * y;
    }
}

/// The sums answered *during* the thread's sweep, so that no maximal
/// instance is kept (they were 24 B an op): the sweep visits the ops in
/// C4's key order, so every F(T, b) above is asked at T = the start of
/// the op being visited (or ∞ at the end), and T never decreases. The
/// calls are inserted into a Fenwick tree over their ranked ends as T
/// passes their start; one row's terms arrive at its instances' visits:
///
/// ```text
///  visit a_1:  −F(a_1, b_1)
///  visit a_2:  +F(a_2, b_1) −F(a_2, b_2)      (b_1: the row's reach so far)
///  thread end: +F(∞, b_last)
/// ```
pub(super) struct Online<'a> {
    /// The thread's calls, sorted by start, as ids of `point`'s (no
    /// point is kept: each is made when inserted).
    ids: &'a [u32],
    point: &'a dyn Fn(u32) -> Point,
    ends: Vec<i64>,
    tree: Tree,
    next: usize,
    /// The start of call `ids[next]` (asked at every instance: kept, not
    /// made again through `point`).
    next_ts: i64,
    /// The rank of the last inserted call's end: where [`Online::rank`]
    /// starts looking (an instance ends near the calls starting in it).
    hint: usize,
}

/// The Fenwick tree's nodes: i64 sums (32 B a node) when no sum of the
/// thread's weights can leave i64 — Σ |w| over all its calls fits, per
/// weight — else i128 (64 B). Either way every sum is exact.
enum Tree {
    Narrow(Vec<[i64; WEIGHTS]>),
    Wide(Vec<Sums>),
}

impl Tree {
    fn new(nodes: usize, points: impl Iterator<Item = Point>) -> Tree {
        let mut total = [0i128; WEIGHTS];
        for p in points {
            for (t, w) in total.iter_mut().zip(p.w) {
                *t += i128::from(w).abs();
            }
        }
        let fits = total.iter().all(|&t| t <= i128::from(i64::MAX));
        if fits {
            Tree::Narrow(vec![[0; WEIGHTS]; nodes])
        } else {
            Tree::Wide(vec![[0; WEIGHTS]; nodes])
        }
    }

    fn len(&self) -> usize {
        match self {
            Tree::Narrow(v) => v.len(),
            Tree::Wide(v) => v.len(),
        }
    }

    fn add_at(&mut self, i: usize, w: &[i64; WEIGHTS]) {
        match self {
            Tree::Narrow(v) => {
                for (x, y) in v[i].iter_mut().zip(w) {
                    *x += y;
                }
            }
            Tree::Wide(v) => add(&mut v[i], &w.map(i128::from), 1),
        }
    }

    fn at(&self, i: usize) -> Sums {
        match self {
            Tree::Narrow(v) => v[i].map(i128::from),
            Tree::Wide(v) => v[i],
        }
    }
}

impl<'a> Online<'a> {
    /// `ids`: one thread's calls, sorted by `ts`; `point`: a call's point.
    pub fn new(ids: &'a [u32], point: &'a dyn Fn(u32) -> Point) -> Online<'a> {
        let mut ends: Vec<i64> = ids.iter().map(|&i| point(i).end).collect();
        ends.sort_unstable();
        ends.dedup();
        let tree = Tree::new(ends.len() + 1, ids.iter().map(|&i| point(i)));
        let next_ts = ids.first().map_or(i64::MAX, |&i| point(i).ts);
        Online {
            ids,
            point,
            ends,
            tree,
            next: 0,
            next_ts,
            hint: 0,
        }
    }

    /// Inserts the calls starting before `t` (all of them for `None`).
    fn advance(&mut self, t: Option<i64>) {
        while let Some(&id) = self.ids.get(self.next) {
            if t.is_some_and(|t| self.next_ts >= t) {
                break;
            }
            let p = (self.point)(id);
            let mut i = self.ends.partition_point(|&e| e < p.end) + 1;
            self.hint = i;
            while i < self.tree.len() {
                self.tree.add_at(i, &p.w);
                i += i & i.wrapping_neg();
            }
            self.next += 1;
            if let Some(&n) = self.ids.get(self.next) {
                self.next_ts = (self.point)(n).ts;
            }
        }
    }

    /// Σ w of the inserted calls among the `i` smallest distinct ends.
    fn prefix(&self, mut i: usize) -> Sums {
        let mut got = [0i128; WEIGHTS];
        while i > 0 {
            add(&mut got, &self.tree.at(i), 1);
            i &= i - 1;
        }
        got
    }

    /// A maximal instance [ts, end] of a row visited; `reach`: the rank
    /// (how many distinct call ends are ≤ it) of the end of the row's
    /// previous maximal instance on the thread, if any, as this returned
    /// it. Returns the rank of `end`, for the row's next instance: kept
    /// by the caller, so that most instances need no search.
    pub fn instance(&mut self, out: &mut Sums, reach: Option<u32>, ts: i64, end: i64) -> u32 {
        self.advance(Some(ts));
        // Σ over (reach, end]: nothing when no call's end lies there (most
        // python frames): a look at the next end tells, and then end's rank
        // is reach's.
        let lo = reach.map_or(0, |r| r as usize);
        if self.ends.get(lo).is_none_or(|&e| e > end) {
            return lo as u32;
        }
        let hi = self.rank(end);
        add(out, &self.between(lo, hi), -1);
        hi as u32
    }

    /// `prefix(hi) − prefix(lo)`, walking the two index chains only until
    /// they meet: an instance spans few calls, so `lo` and `hi` are close
    /// and share most of their chains (two full prefixes read ≈ 2 log n
    /// nodes each time; this reads a few).
    fn between(&self, mut lo: usize, mut hi: usize) -> Sums {
        let mut got = [0i128; WEIGHTS];
        // Invariant: got + prefix(hi) − prefix(lo) is the answer.
        while hi != lo {
            if hi > lo {
                add(&mut got, &self.tree.at(hi), 1);
                hi &= hi - 1;
            } else {
                add(&mut got, &self.tree.at(lo), -1);
                lo &= lo - 1;
            }
        }
        got
    }

    /// How many distinct call ends are ≤ `b`: a galloping search from
    /// [`Online::hint`] (steps 1, 2, 4, … then a binary search in the last
    /// step), so an answer near the hint reads few, nearby ends.
    fn rank(&self, b: i64) -> usize {
        let e = &self.ends;
        let h = self.hint.min(e.len());
        let (lo, hi) = if h < e.len() && e[h] <= b {
            // Forward: e[lo] <= b.
            let (mut lo, mut step) = (h, 1);
            while lo + step < e.len() && e[lo + step] <= b {
                lo += step;
                step *= 2;
            }
            (lo + 1, (lo + step).min(e.len()))
        } else {
            // Backward: the answer is at most h.
            let (mut hi, mut step) = (h, 1);
            while hi >= step && e[hi - step] > b {
                hi -= step;
                step *= 2;
            }
            (hi.saturating_sub(step), hi)
        };
        lo + e[lo..hi].partition_point(|&x| x <= b)
    }

    /// The thread's end, for a row whose last maximal instance's end has
    /// rank `reach` ([`Online::instance`]'s answer).
    pub fn last(&mut self, out: &mut Sums, reach: u32) {
        self.advance(None);
        add(out, &self.prefix(reach as usize), 1);
    }
}

/// One thread's maximal instances as its sweep finds them, answered by
/// [`Online`]: each row's reach (the rank [`Online::instance`] gave its
/// previous instance) is kept here, and the thread's end adds each row's
/// last term. The same calls in the same order wherever it runs: on the
/// sweep's thread, or on one of its own fed in blocks ([`Instance`]).
pub(super) struct Instances<'a> {
    online: Online<'a>,
    /// Per row: 1 + the reach so far (0: no instance yet on this thread).
    /// Shared from thread to thread, put back to 0 at the end.
    reach: &'a mut Vec<u32>,
    touched: Vec<u32>,
}

/// A maximal instance found by a sweep, as sent to [`Instances`] on a
/// thread of its own.
#[derive(Debug, Clone, Copy)]
pub(super) struct Instance {
    pub row: u32,
    pub ts: i64,
    pub end: i64,
}

impl<'a> Instances<'a> {
    pub fn new(online: Online<'a>, reach: &'a mut Vec<u32>) -> Self {
        Instances {
            online,
            reach,
            touched: Vec::new(),
        }
    }

    /// The row's next maximal instance [ts, end] in the sweep's order.
    pub fn add(&mut self, sums: &mut Vec<Sums>, m: Instance) {
        let r = m.row as usize;
        if self.reach.len() <= r {
            self.reach.resize(r + 1, 0);
        }
        if sums.len() <= r {
            sums.resize(r + 1, [0; WEIGHTS]);
        }
        let prev = self.reach[r].checked_sub(1);
        if prev.is_none() {
            self.touched.push(m.row);
        }
        self.reach[r] = self.online.instance(&mut sums[r], prev, m.ts, m.end) + 1;
    }

    /// The thread's end: each row's last term ([`Online::last`]).
    pub fn finish(mut self, sums: &mut [Sums]) {
        for row in std::mem::take(&mut self.touched) {
            let r = std::mem::replace(&mut self.reach[row as usize], 0);
            self.online.last(&mut sums[row as usize], r - 1);
        }
    }
}

/// Adds to `out[row]` the weights of the `points` (one thread's calls)
/// inside any of the row's `maximal` instances (on the same thread): the
/// [`Online`] sums over instances given at once (tests, and a check of
/// the sweep's use of them).
#[cfg(test)]
pub(super) fn add_sums(points: &mut [Point], maximal: &mut [Maximal], out: &mut [Sums]) {
    points.sort_unstable_by_key(|p| p.ts);
    maximal.sort_unstable_by_key(|m| m.ts);
    let ids: Vec<u32> = (0..points.len() as u32).collect();
    let point = |i: u32| points[i as usize];
    let mut online = Online::new(&ids, &point);
    let mut reach: std::collections::BTreeMap<u32, u32> = Default::default();
    for m in maximal.iter() {
        let prev = reach.get(&m.row).copied();
        let r = online.instance(&mut out[m.row as usize], prev, m.ts, m.end);
        reach.insert(m.row, r);
    }
    for (row, r) in reach {
        online.last(&mut out[row as usize], r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(ts: i64, end: i64) -> Point {
        Point {
            ts,
            end,
            w: [1, 0, end - ts, 0],
        }
    }

    /// The drawing of the module docs, against brute force.
    #[test]
    fn overlapping_twins_count_each_call_once() {
        let mut points = vec![pt(5, 8), pt(20, 25), pt(40, 55), pt(70, 75), pt(58, 95)];
        let mut maximal = vec![
            Maximal {
                row: 0,
                ts: 0,
                end: 60,
            },
            Maximal {
                row: 0,
                ts: 30,
                end: 90,
            },
            Maximal {
                row: 1,
                ts: 19,
                end: 26,
            },
        ];
        let brute = |row: u32, ms: &[Maximal], ps: &[Point]| -> i128 {
            ps.iter()
                .filter(|p| {
                    ms.iter()
                        .any(|m| m.row == row && m.ts <= p.ts && p.end <= m.end)
                })
                .count() as i128
        };
        let (m0, p0) = (maximal.clone(), points.clone());
        let mut out = vec![[0i128; WEIGHTS]; 2];
        add_sums(&mut points, &mut maximal, &mut out);
        assert_eq!(out[0][0], brute(0, &m0, &p0));
        assert_eq!(out[0][0], 4); // (58, 95) ends after both
        assert_eq!(out[1][0], brute(1, &m0, &p0));
        assert_eq!(out[0][2], 3 + 5 + 15 + 5);
    }

    /// Random maximal instances (per row: increasing starts and ends, as
    /// the sweep finds them) and calls against brute force, every weight.
    #[test]
    fn random_instances_equal_brute_force() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as i64
        };
        for _ in 0..200 {
            let rows = 1 + rnd(4) as u32;
            let mut maximal = Vec::new();
            for row in 0..rows {
                let (mut ts, mut end) = (rnd(20), 0);
                for _ in 0..rnd(5) {
                    end = (end + 1).max(ts + rnd(30));
                    maximal.push(Maximal { row, ts, end });
                    ts += 1 + rnd(15);
                    if ts >= end {
                        end = ts;
                    }
                }
            }
            // Every fourth case with weights whose sums leave i64 (the
            // wide tree).
            let wide = rnd(4) == 0;
            let mut points: Vec<Point> = (0..rnd(30))
                .map(|_| {
                    let t = rnd(120);
                    let big = if wide { i64::MAX - rnd(9) } else { rnd(100) };
                    Point {
                        ts: t,
                        end: t + rnd(10),
                        w: [1, rnd(3), big, -rnd(7)],
                    }
                })
                .collect();
            let want: Vec<Sums> = (0..rows)
                .map(|row| {
                    let mut s = [0i128; WEIGHTS];
                    for p in &points {
                        if maximal
                            .iter()
                            .any(|m| m.row == row && m.ts <= p.ts && p.end <= m.end)
                        {
                            add(&mut s, &p.w.map(i128::from), 1);
                        }
                    }
                    s
                })
                .collect();
            let mut out = vec![[0i128; WEIGHTS]; rows as usize];
            add_sums(&mut points, &mut maximal, &mut out);
            assert_eq!(out, want);
        }
    }

    /// The meeting walk equals two prefixes, for every pair of indices.
    #[test]
    fn between_equals_two_prefixes() {
        let points: Vec<Point> = (0..37)
            .map(|i| Point {
                ts: i,
                end: i * 3 % 41,
                w: [1, i, i * i - 50, -i],
            })
            .collect();
        let ids: Vec<u32> = (0..points.len() as u32).collect();
        let point = |i: u32| points[i as usize];
        let mut o = Online::new(&ids, &point);
        o.advance(None);
        for lo in 0..o.tree.len() {
            for hi in 0..o.tree.len() {
                let mut want = o.prefix(hi);
                add(&mut want, &o.prefix(lo), -1);
                assert_eq!(o.between(lo, hi), want, "{lo} {hi}");
            }
        }
    }

    /// The galloping rank equals a plain binary search from every hint.
    #[test]
    fn rank_from_any_hint() {
        let point = |_: u32| Point {
            ts: 0,
            end: 0,
            w: [0; WEIGHTS],
        };
        let ids: Vec<u32> = Vec::new();
        for ends in [
            vec![],
            vec![5],
            vec![1, 3, 3, 7, 9, 20, 21, 40, 41, 42, 100],
        ] {
            let mut o = Online::new(&ids, &point);
            o.ends = ends.clone();
            for hint in 0..=ends.len() + 2 {
                o.hint = hint;
                for b in -1..=101 {
                    assert_eq!(o.rank(b), ends.partition_point(|&e| e <= b), "{hint} {b}");
                }
            }
        }
    }
}
