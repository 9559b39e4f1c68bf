//! Unions of half-open integer-ns intervals, for the GPU busy time of a
//! CPU range.
//!
//! ```text
//! a      [----)   [--)        overlapping or touching intervals merge
//!          [---)
//! union  [------) [--)        |union| = 6 + 3 = 9
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
    }

    #[test]
    fn touching_intervals_merge_and_empty_ones_vanish_in_length() {
        assert_eq!(union(iv(&[(0, 2), (2, 4)])), iv(&[(0, 4)]));
        assert_eq!(length(&union(iv(&[(5, 5)]))), 0);
        assert!(union(Vec::new()).is_empty());
    }
}
