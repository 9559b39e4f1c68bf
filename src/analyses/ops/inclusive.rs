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
//! Every F is answered offline: the queries sorted by T, the calls inserted
//! in ts order into a Fenwick tree over their ranked ends.

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
#[derive(Debug, Clone, Copy)]
pub(super) struct Maximal {
    pub row: u32,
    pub ts: i64,
    pub end: i64,
}

type Sums = [i128; WEIGHTS];

fn add(a: &mut Sums, b: &Sums, sign: i128) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += sign * y;
    }
}

/// Adds to `out[row]` the weights of the `points` (one thread's calls)
/// inside any of the row's `maximal` instances (on the same thread).
pub(super) fn add_sums(points: &mut [Point], maximal: &mut [Maximal], out: &mut [Sums]) {
    if points.is_empty() || maximal.is_empty() {
        return;
    }
    points.sort_unstable_by_key(|p| p.ts);
    maximal.sort_unstable_by_key(|m| (m.row, m.ts));
    // Query 2k: −F(a_k, b_k); 2k + 1: +F(a_{k+1}, b_k), T = ∞ for the
    // last instance of its row (`None` sorts last). 4 B a query: the
    // instances hold T and b.
    let t_of = |q: u32| -> Option<i64> {
        let k = (q / 2) as usize;
        if q.is_multiple_of(2) {
            return Some(maximal[k].ts);
        }
        maximal
            .get(k + 1)
            .filter(|n| n.row == maximal[k].row)
            .map(|n| n.ts)
    };
    // Ops are u32 positions throughout (measure.rs): 2^31 maximal instances
    // on one thread would not fit in memory first.
    let mut queries: Vec<u32> = (0..2 * maximal.len() as u32).collect();
    queries.sort_unstable_by_key(|&q| {
        let t = t_of(q);
        (t.is_none(), t)
    });
    let mut ends: Vec<i64> = points.iter().map(|p| p.end).collect();
    ends.sort_unstable();
    ends.dedup();
    let mut tree = vec![[0i128; WEIGHTS]; ends.len() + 1];
    let mut next = 0;
    for q in queries {
        let t = t_of(q);
        let m = maximal[(q / 2) as usize];
        let (b, row, sign) = (m.end, m.row, if q.is_multiple_of(2) { -1 } else { 1 });
        while let Some(p) = points.get(next).filter(|p| t.is_none_or(|t| p.ts < t)) {
            let w = p.w.map(i128::from);
            let mut i = ends.partition_point(|&e| e < p.end) + 1;
            while i < tree.len() {
                add(&mut tree[i], &w, 1);
                i += i & i.wrapping_neg();
            }
            next += 1;
        }
        let mut got = [0i128; WEIGHTS];
        let mut i = ends.partition_point(|&e| e <= b);
        while i > 0 {
            add(&mut got, &tree[i], 1);
            i &= i - 1;
        }
        if let Some(o) = out.get_mut(row as usize) {
            add(o, &got, sign);
        }
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
}
