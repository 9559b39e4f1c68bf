//! Containment queries on one thread (VIEWS.md C4–C5): which ops enclose
//! a runtime call or another op, without a stack.
//!
//! The ops of a thread are sorted by the order key `(ts, −end, file
//! index)`; position p then has every op that starts no later than p. The
//! ops enclosing a runtime call Y are the positions `p < P` (P = the ops
//! with `ts ≤ Y.ts`) whose `end ≥ Y.end`. The innermost (largest key) is
//! the *rightmost* such position, the outermost the *leftmost*; a max-tree
//! of the ends answers either in O(log n), however the ops overlap:
//!
//! ```text
//! thread   A [==========================)          key order: A B C D
//!            B   [==============)                 (B ends after C starts: not nested)
//!                   C [=================)
//!                       D [==)
//! call Y                   [y)               P = 4 (A B C D start ≤ y)
//! ends ≥ y.end:   A B C D all → innermost D (rightmost), outermost A (leftmost)
//! call Z                        [z]          only A and C end after z: innermost C
//! max-tree      [ maxend(A..D) ]
//!               [max(A,B)] [max(C,D)]        descend to the rightmost/leftmost leaf ≥ Y.end
//!                A  B       C  D             inside the prefix [0, P)
//! ```
//!
//! An op's parent is the rightmost position before its own with an end at
//! or after its end (those start no later, and precede it in key order).

/// A max-tree over the ends of a thread's ops in key order (`i64::MIN`
/// for a position that takes no part, e.g. a python frame in the
/// RecordFunction-only tree).
#[derive(Debug, Clone)]
pub struct EndTree {
    size: usize,
    tree: Vec<i64>,
}

impl EndTree {
    /// The tree over `ends` (position p = the p-th op in key order).
    pub fn new(ends: &[i64]) -> EndTree {
        let size = ends.len().next_power_of_two().max(1);
        let mut tree = vec![i64::MIN; 2 * size];
        tree[size..size + ends.len()].copy_from_slice(ends);
        for i in (1..size).rev() {
            tree[i] = tree[2 * i].max(tree[2 * i + 1]);
        }
        EndTree { size, tree }
    }

    /// The largest position `p < limit` with `end[p] ≥ at_least`.
    pub fn rightmost(&self, limit: usize, at_least: i64) -> Option<usize> {
        self.descend(1, 0, self.size, limit, at_least, true)
    }

    /// The smallest position `p < limit` with `end[p] ≥ at_least`.
    pub fn leftmost(&self, limit: usize, at_least: i64) -> Option<usize> {
        self.descend(1, 0, self.size, limit, at_least, false)
    }

    /// Node `node` covers `[lo, hi)`; O(log n): a node is entered only when
    /// it may hold an answer, and at most one partial node per level.
    fn descend(
        &self,
        node: usize,
        lo: usize,
        hi: usize,
        limit: usize,
        at_least: i64,
        right: bool,
    ) -> Option<usize> {
        if lo >= limit || self.tree[node] < at_least {
            return None;
        }
        if hi - lo == 1 {
            return Some(lo);
        }
        let mid = (lo + hi) / 2;
        let (a, b) = ((2 * node, lo, mid), (2 * node + 1, mid, hi));
        let (first, second) = if right { (b, a) } else { (a, b) };
        self.descend(first.0, first.1, first.2, limit, at_least, right)
            .or_else(|| self.descend(second.0, second.1, second.2, limit, at_least, right))
    }
}

#[cfg(test)]
mod tests {
    use super::EndTree;

    /// The drawing of the module docs: A B C D in key order.
    #[test]
    fn the_drawing_of_the_module_docs() {
        // A [0, 100), B [10, 50), C [20, 80), D [30, 40)
        let t = EndTree::new(&[100, 50, 80, 40]);
        // Y = [32, 38]: every op starts before and ends after it.
        assert_eq!(t.rightmost(4, 38), Some(3));
        assert_eq!(t.leftmost(4, 38), Some(0));
        // Z = [60, 70]: only A and C end at or after 70.
        assert_eq!(t.rightmost(4, 70), Some(2));
        // D's parent: rightmost before position 3 ending at or after 40 = C.
        assert_eq!(t.rightmost(3, 40), Some(2));
        assert_eq!(t.rightmost(0, 0), None);
        assert_eq!(t.leftmost(4, 101), None);
    }

    /// Brute force agrees on every prefix and threshold.
    #[test]
    fn equals_brute_force() {
        let ends: Vec<i64> = (0..37).map(|i| (i * 7919 % 53) as i64).collect();
        let t = EndTree::new(&ends);
        for limit in 0..=ends.len() {
            for x in -1..55 {
                let want_r = (0..limit).rev().find(|&p| ends[p] >= x);
                let want_l = (0..limit).find(|&p| ends[p] >= x);
                assert_eq!(t.rightmost(limit, x), want_r, "{limit} {x}");
                assert_eq!(t.leftmost(limit, x), want_l, "{limit} {x}");
            }
        }
        assert_eq!(EndTree::new(&[]).rightmost(0, 0), None);
    }
}
