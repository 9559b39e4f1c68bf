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

use super::{mean6, QueueStats};

/// The instants (ascending) and the value after each.
#[derive(Debug, Default, Clone)]
pub(super) struct StepFn {
    t: Vec<i64>,
    v: Vec<i64>,
}

impl StepFn {
    /// From (instant, change) pairs in any order.
    pub(super) fn of(mut changes: Vec<(i64, i64)>) -> StepFn {
        changes.sort_unstable_by_key(|c| c.0);
        let mut f = StepFn::default();
        let mut cur = 0i64;
        for run in changes.chunk_by(|a, b| a.0 == b.0) {
            cur += run.iter().map(|c| c.1).sum::<i64>();
            f.t.push(run[0].0);
            f.v.push(cur);
        }
        f
    }

    pub(super) fn last_change(&self) -> Option<i64> {
        self.t.last().copied()
    }

    /// The statistics over [first change, last change); with one instant,
    /// max and min are the value after it and the window is empty.
    pub(super) fn stats(&self, limit: i64) -> QueueStats {
        let mut s = QueueStats::default();
        let (Some(&t0), Some(&tn)) = (self.t.first(), self.t.last()) else {
            return s;
        };
        s.window_ns = tn - t0;
        if self.t.len() == 1 {
            s.max = self.v[0];
            s.min = self.v[0];
            return s;
        }
        s.max = i64::MIN;
        s.min = i64::MAX;
        for i in 0..self.t.len() - 1 {
            let (v, d) = (self.v[i], self.t[i + 1] - self.t[i]);
            s.max = s.max.max(v);
            s.min = s.min.min(v);
            s.integral_ns += i128::from(v) * i128::from(d);
            if v == 0 {
                s.time_at_zero_ns += d;
            }
            if v >= limit {
                s.time_at_or_above_1024_ns += d;
            }
        }
        s.mean = mean6(s.integral_ns, i128::from(s.window_ns));
        s
    }

    /// (max, integral, length) over [from, to): the value before the first
    /// change is 0. An empty interval gives the value at `from`.
    pub(super) fn over(&self, from: i64, to: i64) -> (i64, i128, i64) {
        let k = self.t.partition_point(|&t| t <= from);
        let mut cur = if k == 0 { 0 } else { self.v[k - 1] };
        let mut max = cur;
        if to <= from {
            return (max, 0, 0);
        }
        let (mut at, mut integral) = (from, 0i128);
        for j in k..self.t.len() {
            if self.t[j] >= to {
                break;
            }
            integral += i128::from(cur) * i128::from(self.t[j] - at);
            at = self.t[j];
            cur = self.v[j];
            max = max.max(cur);
        }
        integral += i128::from(cur) * i128::from(to - at);
        (max, integral, to - from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawing() -> StepFn {
        StepFn::of(vec![(25, -1), (1, 1), (4, 1), (9, -1), (13, -1), (20, 1)])
    }

    #[test]
    fn the_drawing_above() {
        let s = drawing().stats(1024);
        assert_eq!((s.max, s.min, s.integral_ns, s.window_ns), (2, 0, 22, 24));
        assert_eq!(s.mean, Some(0.916667));
        assert_eq!((s.time_at_zero_ns, s.time_at_or_above_1024_ns), (7, 0));
        assert_eq!(s.mean, mean6(22, 24));
        // A window inside: [3, 10): 1·1 + 2·5 + 1·1 = 12.
        assert_eq!(drawing().over(3, 10), (2, 12, 7));
        // Past the last change the value is 0; before the first, 0.
        assert_eq!(drawing().over(-5, 0), (0, 0, 5));
        assert_eq!(drawing().over(30, 40), (0, 0, 10));
    }

    #[test]
    fn changes_at_one_instant_are_applied_together() {
        // +1 and −1 at t = 5 never show a 1: one instant, value 0.
        let s = StepFn::of(vec![(5, 1), (5, -1)]).stats(1024);
        assert_eq!((s.max, s.min, s.window_ns, s.mean), (0, 0, 0, None));
        // A graph launch adding 3 at once, then its kernels ending.
        let s = StepFn::of(vec![(0, 3), (2, -1), (4, -1), (4, -1)]).stats(2);
        assert_eq!(
            (s.max, s.integral_ns, s.time_at_or_above_1024_ns),
            (3, 10, 4)
        );
    }

    #[test]
    fn a_start_before_its_launch_makes_pending_negative_not_a_panic() {
        let s = StepFn::of(vec![(10, 1), (4, -1)]).stats(1024);
        assert_eq!((s.max, s.min, s.integral_ns), (-1, -1, -6));
    }
}
