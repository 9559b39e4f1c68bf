//! Unions and differences of half-open integer-ns intervals, for GPU busy
//! time and the exposed-communication/-memcpy figures of the timeline.
//!
//! ```text
//! a      [----)   [--)        union(a)        = [----)   [--)      busy 6
//!          [---)              (overlapping or touching intervals merge)
//! union  [------) [--)        |union|         = 6 + 3 = 9
//! minus  [------) [--) − [-) = [-)[---) [--)
//! ```

use crate::model::Ns;

/// A half-open interval `[start, end)` in integer ns.
pub type Iv = (Ns, Ns);

/// The union of `ivs`, sorted and merged (intervals that touch merge).
pub fn union(mut ivs: Vec<Iv>) -> Vec<Iv> {
    ivs.sort_unstable();
    let mut out: Vec<Iv> = Vec::with_capacity(ivs.len());
    for (s, e) in ivs {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Total length of a merged (sorted, disjoint) interval list, exact.
pub fn length(merged: &[Iv]) -> i128 {
    merged
        .iter()
        .map(|(s, e)| i128::from(e.0) - i128::from(s.0))
        .sum()
}

/// `b − a` for two merged interval lists: the parts of `b` that no
/// interval of `a` covers.
pub fn subtract(a: &[Iv], b: &[Iv]) -> Vec<Iv> {
    let mut out = Vec::new();
    let mut k = 0;
    for &(bs, be) in b {
        // Skip the parts of `a` that end before this interval starts.
        while k < a.len() && a[k].1 <= bs {
            k += 1;
        }
        let mut cur = bs;
        let mut j = k;
        while j < a.len() && a[j].0 < be {
            if a[j].0 > cur {
                out.push((cur, a[j].0));
            }
            cur = cur.max(a[j].1);
            if cur >= be {
                break;
            }
            j += 1;
        }
        if cur < be {
            out.push((cur, be));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(v: &[(i64, i64)]) -> Vec<Iv> {
        v.iter().map(|&(s, e)| (Ns(s), Ns(e))).collect()
    }

    #[test]
    fn the_drawing_above() {
        // a: [0,5) [2,6) [8,11) → [0,6) [8,11): 6 + 3.
        let u = union(iv(&[(8, 11), (0, 5), (2, 6)]));
        assert_eq!(u, iv(&[(0, 6), (8, 11)]));
        assert_eq!(length(&u), 9);
        // minus [3,4): [0,3) [4,6) [8,11).
        assert_eq!(subtract(&iv(&[(3, 4)]), &u), iv(&[(0, 3), (4, 6), (8, 11)]));
    }

    #[test]
    fn touching_intervals_merge_and_empty_ones_vanish_in_length() {
        assert_eq!(union(iv(&[(0, 2), (2, 4)])), iv(&[(0, 4)]));
        assert_eq!(length(&union(iv(&[(5, 5)]))), 0);
        assert!(union(Vec::new()).is_empty());
    }

    #[test]
    fn subtract_covers_every_case() {
        let b = iv(&[(0, 10), (20, 30)]);
        assert_eq!(subtract(&[], &b), b);
        assert_eq!(subtract(&iv(&[(0, 30)]), &b), Vec::<Iv>::new());
        assert_eq!(
            subtract(&iv(&[(-5, 2), (5, 6), (9, 22), (29, 40)]), &b),
            iv(&[(2, 5), (6, 9), (22, 29)])
        );
    }

    #[test]
    fn subtract_matches_a_brute_force_count() {
        // Pseudo-random lists, checked point by point.
        let mut x: u64 = 7;
        let mut next = |m: i64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 33) as i64) % m
        };
        for _ in 0..200 {
            let mk = |next: &mut dyn FnMut(i64) -> i64| {
                let n = next(6);
                let v: Vec<(i64, i64)> = (0..n)
                    .map(|_| {
                        let s = next(40);
                        (s, s + next(8))
                    })
                    .collect();
                union(iv(&v))
            };
            let a = mk(&mut next);
            let b = mk(&mut next);
            let d = subtract(&a, &b);
            let inside = |l: &[Iv], p: i64| l.iter().any(|(s, e)| s.0 <= p && p < e.0);
            for p in -1..60 {
                assert_eq!(
                    inside(&d, p),
                    inside(&b, p) && !inside(&a, p),
                    "{a:?} {b:?}"
                );
            }
        }
    }
}
