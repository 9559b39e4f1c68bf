//! I5: a stream's launch queue as a step function. All changes at one
//! instant are applied together; the value after an instant holds until
//! the next one; statistics are over the window from the first to the
//! last change.
//!
//! ```text
//! changes  (1,+1) (4,+1) (9,−1) (13,−1) (20,+1) (25,−1)
//! t        1   4   9   13  20  25
//! value    1   2   1   0   1   0        segments [1,4)=1 [4,9)=2 [9,13)=1 [13,20)=0 [20,25)=1
//! max 2, min 0, integral 3+10+4+0+5 = 22, window 24, mean 22/24, time at 0 = 7
//! ```
//!
//! The function is never materialised: its instants come from merging two
//! sorted lists, the +1 changes (the runtime calls' starts) and the −1
//! changes (the activities' ends for `in_flight`, their starts for
//! `pending`), 8 B a change for the one stream being measured. The
//! statistics fold over the instants as they come ([`stats`]), and the
//! steps' windows are answered offline in the same walk ([`windows`]: the
//! integral from a running prefix, the maximum from a monotonic stack).

use super::{mean6, QueueStats};

/// The instants of a step function, ascending, each with the value after
/// it: `plus` (+1 each) and `minus` (−1 each) merged, one instant per
/// distinct time. Both inputs must be sorted ascending.
pub(super) struct Instants<P: Iterator<Item = i64>, M: Iterator<Item = i64>> {
    plus: std::iter::Peekable<P>,
    minus: std::iter::Peekable<M>,
    cur: i64,
}

impl<P: Iterator<Item = i64>, M: Iterator<Item = i64>> Instants<P, M> {
    pub(super) fn new(plus: P, minus: M) -> Self {
        Instants {
            plus: plus.peekable(),
            minus: minus.peekable(),
            cur: 0,
        }
    }
}

impl<P: Iterator<Item = i64>, M: Iterator<Item = i64>> Iterator for Instants<P, M> {
    type Item = (i64, i64);

    fn next(&mut self) -> Option<(i64, i64)> {
        let t = match (self.plus.peek(), self.minus.peek()) {
            (Some(&a), Some(&b)) => a.min(b),
            (Some(&a), None) => a,
            (None, Some(&b)) => b,
            (None, None) => return None,
        };
        while self.plus.next_if_eq(&t).is_some() {
            self.cur += 1;
        }
        while self.minus.next_if_eq(&t).is_some() {
            self.cur -= 1;
        }
        Some((t, self.cur))
    }
}

/// The statistics over [first change, last change); with one instant,
/// max and min are the value after it and the window is empty.
pub(super) fn stats(instants: impl Iterator<Item = (i64, i64)>, limit: i64) -> QueueStats {
    let mut s = QueueStats::default();
    let mut first: Option<i64> = None;
    let mut prev: Option<(i64, i64)> = None;
    let (mut max, mut min) = (i64::MIN, i64::MAX);
    for (t, v) in instants {
        if let Some((pt, pv)) = prev {
            let d = t - pt;
            max = max.max(pv);
            min = min.min(pv);
            s.integral_ns += i128::from(pv) * i128::from(d);
            if pv == 0 {
                s.time_at_zero_ns += d;
            }
            if pv >= limit {
                s.time_at_or_above_1024_ns += d;
            }
        } else {
            first = Some(t);
        }
        prev = Some((t, v));
    }
    let (Some(t0), Some((tn, vn))) = (first, prev) else {
        return s;
    };
    s.window_ns = tn - t0;
    if t0 == tn {
        s.max = vn;
        s.min = vn;
        return s;
    }
    s.max = max;
    s.min = min;
    s.mean = mean6(s.integral_ns, i128::from(s.window_ns));
    s
}

/// What one window `[from, to)` of a step function gives: the maximum
/// (the value at `from` included), the integral (value × ns) and the
/// length. An empty window (`to ≤ from`) gives the value at `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Window {
    pub max: i64,
    pub integral: i128,
    pub len: i64,
}

/// Each window `[from, to)` over the step function of `instants` (before
/// the first change the value is 0), in one walk: the windows' ends are
/// sorted, the integral is a running prefix `G(x)` read at both ends, and
/// the maximum over the instants strictly inside comes from a monotonic
/// stack (values decreasing from the bottom) searched by instant number.
/// O((instants + windows) log) time; memory: the windows and the stack.
///
/// ```text
/// t        1   4   9   13  20  25        window [3, 10): value at 3 = 1,
/// value    1   2   1   0   1   0          instants inside: 4 (2), 9 (1)
///              ^---------^                max 2, ∫ = G(10) − G(3) = 15 − 3 = 12
/// ```
pub(super) fn windows(
    instants: impl Iterator<Item = (i64, i64)>,
    asked: &[(i64, i64)],
) -> Vec<Window> {
    // An end is met after the instants before it; a start after the
    // instants at or before it (the value at `from` is the one after
    // them). At one time: ends (1), the instants, then starts (2).
    let mut ends: Vec<(i64, u8, usize)> = Vec::with_capacity(asked.len() * 2);
    for (q, &(from, to)) in asked.iter().enumerate() {
        ends.push((from, 2, q));
        if to > from {
            ends.push((to, 1, q));
        }
    }
    ends.sort_unstable();
    let mut out = vec![Window::default(); asked.len()];
    // Per window: the instants met at its start.
    let mut at_start = vec![0usize; asked.len()];
    let mut w = Walk::default();
    let mut instants = instants.peekable();
    for (x, kind, q) in ends {
        while let Some(&(t, v)) = instants.peek() {
            if t < x || (t == x && kind == 2) {
                w.step(t, v);
                instants.next();
            } else {
                break;
            }
        }
        if kind == 2 {
            at_start[q] = w.met;
            out[q] = Window {
                max: w.cur,
                integral: -w.prefix(x),
                len: 0,
            };
        } else {
            let (from, to) = asked[q];
            let o = &mut out[q];
            o.integral += w.prefix(x);
            o.len = to - from;
            if let Some(m) = w.max_since(at_start[q]) {
                o.max = o.max.max(m);
            }
        }
    }
    for (o, &(from, to)) in out.iter_mut().zip(asked) {
        if to <= from {
            o.integral = 0;
        }
    }
    out
}

/// The walk of [`windows`]: the instants met, the value after the last,
/// the integral up to it, and the monotonic stack of (instant number, value).
#[derive(Default)]
struct Walk {
    met: usize,
    cur: i64,
    last_t: Option<i64>,
    integral: i128,
    stack: Vec<(usize, i64)>,
}

impl Walk {
    fn step(&mut self, t: i64, v: i64) {
        if let Some(lt) = self.last_t {
            self.integral += i128::from(self.cur) * i128::from(t - lt);
        }
        while self.stack.last().is_some_and(|&(_, sv)| sv <= v) {
            self.stack.pop();
        }
        self.stack.push((self.met, v));
        self.met += 1;
        self.cur = v;
        self.last_t = Some(t);
    }

    /// G(x): the integral from the first instant to `x` (0 before it).
    fn prefix(&self, x: i64) -> i128 {
        match self.last_t {
            Some(lt) => self.integral + i128::from(self.cur) * i128::from(x - lt),
            None => 0,
        }
    }

    /// The largest value after an instant numbered ≥ `from` among those
    /// met, if any.
    fn max_since(&self, from: usize) -> Option<i64> {
        let k = self.stack.partition_point(|&(i, _)| i < from);
        self.stack.get(k).map(|&(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The drawing: +1 at 1, 4, 20; −1 at 9, 13, 25.
    fn drawing() -> Vec<(i64, i64)> {
        Instants::new([1, 4, 20].into_iter(), [9, 13, 25].into_iter()).collect()
    }

    /// The definition, for the tests: over [from, to) by brute force.
    fn brute(f: &[(i64, i64)], from: i64, to: i64) -> Window {
        let at = |x: i64| f.iter().rev().find(|p| p.0 <= x).map_or(0, |p| p.1);
        let mut w = Window {
            max: at(from),
            integral: 0,
            len: 0,
        };
        if to <= from {
            return w;
        }
        for x in from..to {
            w.integral += i128::from(at(x));
            w.max = w.max.max(at(x));
        }
        w.len = to - from;
        w
    }

    #[test]
    fn the_drawing_above() {
        let f = drawing();
        assert_eq!(f, vec![(1, 1), (4, 2), (9, 1), (13, 0), (20, 1), (25, 0)]);
        let s = stats(f.iter().copied(), 1024);
        assert_eq!((s.max, s.min, s.integral_ns, s.window_ns), (2, 0, 22, 24));
        assert_eq!(s.mean, Some(0.916667));
        assert_eq!((s.time_at_zero_ns, s.time_at_or_above_1024_ns), (7, 0));
        assert_eq!(s.mean, mean6(22, 24));
        // A window inside: [3, 10): 1·1 + 2·5 + 1·1 = 12. Past the last
        // change the value is 0; before the first, 0.
        let asked = [(3, 10), (-5, 0), (30, 40), (9, 9), (4, 9), (0, 30)];
        let got = windows(f.iter().copied(), &asked);
        assert_eq!(
            got[0],
            Window {
                max: 2,
                integral: 12,
                len: 7
            }
        );
        assert_eq!(
            got[1],
            Window {
                max: 0,
                integral: 0,
                len: 5
            }
        );
        assert_eq!(
            got[2],
            Window {
                max: 0,
                integral: 0,
                len: 10
            }
        );
        for (g, &(a, b)) in got.iter().zip(&asked) {
            assert_eq!(*g, brute(&f, a, b), "[{a}, {b})");
        }
    }

    #[test]
    fn changes_at_one_instant_are_applied_together() {
        // +1 and −1 at t = 5 never show a 1: one instant, value 0.
        let s = stats(Instants::new([5].into_iter(), [5].into_iter()), 1024);
        assert_eq!((s.max, s.min, s.window_ns, s.mean), (0, 0, 0, None));
        // A graph launch adding 3 at once, then its kernels ending.
        let s = stats(
            Instants::new([0, 0, 0].into_iter(), [2, 4, 4].into_iter()),
            2,
        );
        assert_eq!(
            (s.max, s.integral_ns, s.time_at_or_above_1024_ns),
            (3, 10, 4)
        );
        assert_eq!(stats(std::iter::empty(), 1024), QueueStats::default());
    }

    #[test]
    fn a_start_before_its_launch_makes_pending_negative_not_a_panic() {
        let s = stats(Instants::new([10].into_iter(), [4].into_iter()), 1024);
        assert_eq!((s.max, s.min, s.integral_ns), (-1, -1, -6));
    }

    /// Random step functions and windows against the brute force,
    /// overlapping windows included (steps of several threads).
    #[test]
    fn windows_equal_the_definition() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as i64
        };
        for _ in 0..300 {
            let mut plus: Vec<i64> = (0..rnd(12)).map(|_| rnd(40)).collect();
            let mut minus: Vec<i64> = (0..rnd(12)).map(|_| rnd(40)).collect();
            plus.sort_unstable();
            minus.sort_unstable();
            let f: Vec<(i64, i64)> =
                Instants::new(plus.iter().copied(), minus.iter().copied()).collect();
            let asked: Vec<(i64, i64)> = (0..rnd(8)).map(|_| (rnd(45) - 2, rnd(45) - 2)).collect();
            let got = windows(f.iter().copied(), &asked);
            for (g, &(a, b)) in got.iter().zip(&asked) {
                assert_eq!(*g, brute(&f, a, b), "{f:?} [{a}, {b})");
            }
        }
    }
}
