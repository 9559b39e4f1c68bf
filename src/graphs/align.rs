//! A replay aligned to a capture region that it does not equal (G2 of
//! docs/VIEWS.md): the longest common subsequence of the two (kind, name)
//! sequences, found by Myers' O((n + m)·D) diff bounded to the few edits a
//! replay may differ by.
//!
//! ```text
//! region   L0 L1 L2 L3 L4 … L1565 L1566     (1 567 captured launches)
//! replay   a0 a1 a2 a3 a4 … a1565           (1 566 activities)
//! pairs    (0,0) (1,1) … (1565,1565)         L1566: captured, never replayed
//! ```
//!
//! Edits are insertions and deletions only (a changed name is one of
//! each), so D = n + m − 2·LCS. The walk keeps, per edit count d, the
//! furthest point of each diagonal (2d + 1 integers): O(D²) memory for
//! the walk back that yields the pairs. Deterministic: among equal-length
//! alignments Myers' rule (prefer deletion from the region) picks one,
//! always the same.

use super::matching::{
    act_name, kind_name, named, narrow, same, Act, Difference, Index, Outcome, UNPAIRED,
};
use super::{Captured, Captures};
use std::collections::HashMap;

/// The pairs (i in the region, j in the replay) of a longest common
/// subsequence of `n` region items and `m` replay items under `eq`, in
/// increasing order; `None` when more than `max_d` insertions plus
/// deletions separate them.
pub fn lcs_pairs(
    n: usize,
    m: usize,
    max_d: usize,
    eq: impl Fn(usize, usize) -> bool,
) -> Option<Vec<(u32, u32)>> {
    let max_d = max_d.min(n + m);
    let off = max_d as isize + 1;
    // v[k + off] = furthest x on diagonal k = x − y.
    let mut v = vec![0isize; 2 * max_d + 3];
    // trace[d] = v's diagonals −d..=d after d edits.
    let mut trace: Vec<Vec<isize>> = Vec::new();
    let (n_i, m_i) = (n as isize, m as isize);
    for d in 0..=max_d as isize {
        let mut k = -d;
        while k <= d {
            let i = (k + off) as usize;
            let mut x = if k == -d || (k != d && v[i - 1] < v[i + 1]) {
                v[i + 1]
            } else {
                v[i - 1] + 1
            };
            let mut y = x - k;
            while x < n_i && y < m_i && eq(x as usize, y as usize) {
                x += 1;
                y += 1;
            }
            v[i] = x;
            if x >= n_i && y >= m_i {
                trace.push(v[(off - d) as usize..=(off + d) as usize].to_vec());
                return Some(walk_back(&trace, n_i, m_i));
            }
            k += 2;
        }
        trace.push(v[(off - d) as usize..=(off + d) as usize].to_vec());
    }
    None
}

/// The diagonal pairs of the path that `trace` records, from (n, m) back
/// to (0, 0).
fn walk_back(trace: &[Vec<isize>], n: isize, m: isize) -> Vec<(u32, u32)> {
    let at = |d: isize, k: isize| trace[d as usize][(k + d) as usize];
    let mut pairs = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..trace.len() as isize).rev() {
        let k = x - y;
        let down = k == -d || (k != d && at(d - 1, k - 1) < at(d - 1, k + 1));
        let pk = if down { k + 1 } else { k - 1 };
        let px = at(d - 1, pk);
        let py = px - pk;
        // The snake starts one edit after (px, py).
        let (sx, sy) = if down { (px, py + 1) } else { (px + 1, py) };
        while x > sx && y > sy {
            x -= 1;
            y -= 1;
            pairs.push((x as u32, y as u32));
        }
        x = px;
        y = py;
    }
    while x > 0 && y > 0 {
        x -= 1;
        y -= 1;
        pairs.push((x as u32, y as u32));
    }
    pairs.reverse();
    pairs
}

/// The most edits a replay of `m` activities may differ by from a region
/// of `n` launches and still be aligned: the alignment must pair ≥ 99 %
/// of the longer side (G2), so D = n + m − 2·pairs ≤ n + m − 2·⌈0.99·max⌉.
pub fn max_edits(n: usize, m: usize) -> Option<usize> {
    let longer = n.max(m);
    let need = (99 * longer).div_ceil(100);
    (n + m).checked_sub(2 * need)
}

/// Whether `pairs` pairs enough of a region of `n` and a replay of `m`
/// (≥ 99 % of the longer side, in integers).
pub fn enough(pairs: usize, n: usize, m: usize) -> bool {
    100 * pairs >= 99 * n.max(m)
}

/// The region a replay that equals none aligns to best (G2): among the
/// regions whose kernels are all named, those an alignment pairs with
/// ≥ 99 % of the longer side, the most pairs first; equal ones narrowed
/// as equal regions are (subsystem, batch). `None` when no region
/// aligns.
pub(super) fn best(
    caps: &Captures,
    ix: &Index,
    acts: &[Act<'_>],
    batch: Option<u64>,
    subsystem: Option<&str>,
) -> Option<Outcome> {
    let m = acts.len();
    if m == 0 || ix.all_named.is_empty() {
        return None;
    }
    let mut bag: HashMap<(u8, Option<&str>), i64> = HashMap::new();
    for a in acts {
        *bag.entry((a.kind, act_name(a))).or_default() += 1;
    }
    let mut found: Vec<(u32, Vec<(u32, u32)>)> = Vec::new();
    for &r in &ix.all_named {
        let reg = &caps.regions[r as usize];
        let n = reg.launches.len();
        let Some(max_d) = max_edits(n, m) else {
            continue;
        };
        // The multiset difference bounds the edits from below: most
        // regions stop here, in O(n).
        if bag_distance(caps, &bag, &reg.launches) > max_d {
            continue;
        }
        let Some(pairs) = lcs_pairs(n, m, max_d, |i, j| same(caps, &reg.launches[i], &acts[j]))
        else {
            continue;
        };
        if !enough(pairs.len(), n, m) {
            continue;
        }
        match found.first().map(|f| f.1.len()) {
            Some(best) if best > pairs.len() => {}
            Some(best) if best == pairs.len() => found.push((r, pairs)),
            _ => found = vec![(r, pairs)],
        }
    }
    if found.is_empty() {
        return None;
    }
    let cands: Vec<u32> = found.iter().map(|f| f.0).collect();
    match narrow(caps, cands, batch, subsystem) {
        Ok(r) => {
            let pairs = found.into_iter().find(|f| f.0 == r).map(|f| f.1)?;
            Some(aligned(caps, r, &pairs, acts))
        }
        Err(candidates) => Some(Outcome::Ambiguous {
            candidates,
            attributed: false,
        }),
    }
}

/// Σ |count in the replay − count in the region| over (kind, name).
fn bag_distance(
    caps: &Captures,
    bag: &HashMap<(u8, Option<&str>), i64>,
    launches: &[Captured],
) -> usize {
    let mut left = bag.clone();
    for c in launches {
        *left.entry((c.kind, named(caps, c))).or_default() -= 1;
    }
    left.values().map(|v| v.unsigned_abs() as usize).sum()
}

/// The outcome of replay `acts` aligned to region `r` by `pairs`.
fn aligned(caps: &Captures, r: u32, pairs: &[(u32, u32)], acts: &[Act<'_>]) -> Outcome {
    let launches = &caps.regions[r as usize].launches;
    let mut map = vec![UNPAIRED; acts.len()];
    let mut replayed = vec![false; launches.len()];
    for &(i, j) in pairs {
        map[j as usize] = i;
        replayed[i as usize] = true;
    }
    let mut differences: Vec<Difference> = launches
        .iter()
        .zip(&replayed)
        .filter(|(_, &done)| !done)
        .map(|(c, _)| Difference {
            captured: true,
            kind: c.kind,
            name: c.kernel.map_or_else(
                || kind_name(c.kind).to_string(),
                |k| caps.resolve(k).to_string(),
            ),
        })
        .collect();
    differences.extend(
        acts.iter()
            .zip(&map)
            .filter(|(_, &k)| k == UNPAIRED)
            .map(|(a, _)| Difference {
                captured: false,
                kind: a.kind,
                name: a.name.to_string(),
            }),
    );
    Outcome::Aligned {
        region: r,
        map,
        differences,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The LCS length by the textbook table, for comparison.
    fn lcs_len(a: &[u8], b: &[u8]) -> usize {
        let mut t = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for i in 0..a.len() {
            for j in 0..b.len() {
                t[i + 1][j + 1] = if a[i] == b[j] {
                    t[i][j] + 1
                } else {
                    t[i][j + 1].max(t[i + 1][j])
                };
            }
        }
        t[a.len()][b.len()]
    }

    fn check(a: &[u8], b: &[u8]) {
        let pairs =
            lcs_pairs(a.len(), b.len(), a.len() + b.len(), |i, j| a[i] == b[j]).expect("unbounded");
        assert_eq!(pairs.len(), lcs_len(a, b), "{a:?} {b:?}");
        for w in pairs.windows(2) {
            assert!(w[0].0 < w[1].0 && w[0].1 < w[1].1);
        }
        for &(i, j) in &pairs {
            assert_eq!(a[i as usize], b[j as usize]);
        }
    }

    #[test]
    fn equals_the_table_on_many_sequences() {
        // A fixed pseudo-random walk over small alphabets and lengths.
        let mut rng = crate::trace::xorshift(0x2545_f491);
        let mut next = |m: u64| rng() % m;
        for _ in 0..2000 {
            let (la, lb, k) = (next(12) as usize, next(12) as usize, 1 + next(4) as u8);
            let a: Vec<u8> = (0..la).map(|_| next(u64::from(k)) as u8).collect();
            let b: Vec<u8> = (0..lb).map(|_| next(u64::from(k)) as u8).collect();
            check(&a, &b);
        }
        check(&[], &[]);
        check(&[1, 2, 3], &[]);
        check(&[], &[1]);
    }

    #[test]
    fn one_unreplayed_launch_at_the_end() {
        let a: Vec<u32> = (0..1567).collect();
        let b: Vec<u32> = (0..1566).collect();
        let pairs = lcs_pairs(a.len(), b.len(), max_edits(1567, 1566).unwrap(), |i, j| {
            a[i] == b[j]
        })
        .unwrap();
        assert_eq!(pairs.len(), 1566);
        assert_eq!(pairs.last(), Some(&(1565, 1565)));
        assert!(enough(pairs.len(), 1567, 1566));
    }

    #[test]
    fn bounded() {
        let a = [1u8, 2, 3, 4];
        let b = [5u8, 6, 7, 8];
        assert!(lcs_pairs(4, 4, 7, |i, j| a[i] == b[j]).is_none());
        assert_eq!(lcs_pairs(4, 4, 8, |i, j| a[i] == b[j]), Some(vec![]));
        // 99 % of 1 000 → at most 20 edits between 1 000 and 1 000.
        assert_eq!(max_edits(1000, 1000), Some(20));
        assert_eq!(max_edits(1000, 980), Some(0));
        assert_eq!(max_edits(1000, 979), None);
        assert!(enough(99, 100, 100) && !enough(98, 100, 100));
    }
}
