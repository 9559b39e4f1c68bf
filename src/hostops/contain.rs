//! Containment queries on one thread (VIEWS.md C4–C5): which ops enclose
//! a runtime call or another op, without a call stack (the ranges need not
//! nest), in one sweep.
//!
//! The ops of a thread are visited in the order key `(ts, −end, file
//! index)`, and each runtime call Y once every op with `ts ≤ Y.ts` has been
//! (so the ops before it are exactly those that start no later). The ops
//! enclosing Y are then the visited ones with `end ≥ Y.end`; the innermost
//! is the *latest visited*, the outermost the *earliest*. Two lists answer
//! both in O(log n), however the ops overlap:
//!
//! - `stack`: the visited ops that no later-visited op out-ends (a visit
//!   pops those ending strictly before it). Its ends never increase from
//!   bottom to top, so the ops with `end ≥ x` are a bottom run and the
//!   innermost encloser is that run's top. The latest visited op with end ≥ x
//!   is always kept: an op out-ended by a later one is no answer to any x.
//! - `records`: the RecordFunction scopes (python frames excluded, O4)
//!   whose end exceeds every earlier scope's. Ends strictly increase, and
//!   the earliest scope with `end ≥ x` is always one (every scope before it
//!   ends before x): the outermost encloser is the first record ≥ x.
//!
//! ```text
//! thread   A [==========================)          key order: A B C D
//!            B   [==============)                 (B ends after C starts: not nested)
//!                   C [=================)
//!                       D [==)
//! visit A: stack [A]            records [A]
//! visit B: stack [A B]          parent of B = top = A
//! visit C: pops B (ends first)  stack [A C], parent of C = A
//! visit D: stack [A C D]        parent of D = C
//! call Y                   [y)               ends ≥ y.end: A C D → innermost D, outermost A
//! call Z                        [z]          only A and C end after z: innermost C
//! ```
//!
//! An op's parent (C5) is the innermost encloser of its own range among
//! the ops visited before it: the stack's top after the pops.
//!
//! Each stack entry also holds the latest end of the children it has been
//! given so far (`cover_*`, O5's self time: a parent loses the union of its
//! children, which may overlap). A parent is on the stack whenever it gets a
//! child — an op's parent is the top, a call's innermost encloser is in the
//! stack — and once popped it is nobody's encloser again, so the union
//! lives with the entry: memory is the stack's, not one word per op.

/// The sweep over one thread's ops in key order.
#[derive(Debug, Default)]
pub struct Sweep {
    /// Ends non-increasing from bottom to top.
    stack: Vec<Open>,
    /// (end, position, tag's row) of scopes: ends strictly increasing.
    records: Vec<(i64, u32, u32)>,
}

/// What a caller keeps with each open op, so that an op need not be kept
/// once visited: the answers (an encloser, a parent) come with it. `ops`
/// keeps the op's row and start; `export` keeps positions only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tag {
    pub row: u32,
    pub ts: i64,
}

/// A stack entry: a visited op not out-ended by a later one.
#[derive(Debug, Clone, Copy)]
struct Open {
    end: i64,
    pos: u32,
    /// The latest end of the children given so far (`i64::MIN`: none).
    till: i64,
    tag: Tag,
    /// Whether [`Sweep::first_launch`] has named it already.
    launched: bool,
}

impl Open {
    /// The child [ts, end): what it adds to the union of the children.
    fn cover(&mut self, ts: i64, end: i64) -> i64 {
        let from = ts.max(self.till);
        self.till = self.till.max(end);
        end.saturating_sub(from).max(0)
    }
}

impl Sweep {
    /// Visits the op at `pos` (the next in key order) ending at `end`;
    /// `scope`: a RecordFunction scope (not a python frame). Returns its
    /// parent: the latest earlier op ending at or after `end` (C5).
    #[cfg(test)]
    pub fn visit(&mut self, pos: u32, end: i64, scope: bool) -> Option<u32> {
        self.visit_tagged(pos, end, scope, Tag::default())
            .map(|p| p.0)
    }

    /// [`Sweep::visit`], keeping `tag` with the op; the parent comes with
    /// its own tag.
    pub fn visit_tagged(
        &mut self,
        pos: u32,
        end: i64,
        scope: bool,
        tag: Tag,
    ) -> Option<(u32, Tag)> {
        while self.stack.last().is_some_and(|o| o.end < end) {
            self.stack.pop();
        }
        let parent = self.stack.last().map(|o| (o.pos, o.tag));
        self.stack.push(Open {
            end,
            pos,
            till: i64::MIN,
            tag,
            launched: false,
        });
        if scope && self.records.last().is_none_or(|&(e, _, _)| end > e) {
            self.records.push((end, pos, tag.row));
        }
        parent
    }

    /// The innermost op ending at or after `at_least` with its tag.
    pub fn innermost_tagged(&self, at_least: i64) -> Option<(u32, Tag)> {
        self.innermost_at(at_least)
            .map(|k| (self.stack[k].pos, self.stack[k].tag))
    }

    /// The innermost op ending at or after `at_least`, the first time it is
    /// asked for that op (O7's first-launch delay: calls come in start
    /// order, so the first time is its earliest launch); `None` after.
    /// Sound because an op leaves the stack only once a later op out-ends
    /// it, and then it is nobody's innermost encloser again.
    pub fn first_launch(&mut self, at_least: i64) -> Option<Tag> {
        let k = self.innermost_at(at_least)?;
        let o = &mut self.stack[k];
        (!std::mem::replace(&mut o.launched, true)).then_some(o.tag)
    }

    /// The latest visited op with `end ≥ at_least` (C4's innermost).
    pub fn innermost(&self, at_least: i64) -> Option<u32> {
        self.innermost_at(at_least).map(|k| self.stack[k].pos)
    }

    fn innermost_at(&self, at_least: i64) -> Option<usize> {
        let k = self.stack.partition_point(|o| o.end >= at_least);
        k.checked_sub(1)
    }

    /// Gives the latest visited op's parent the child [ts, end) (that op's
    /// own range); returns what it adds to the parent's children's union
    /// (0 without a parent).
    pub fn cover_parent(&mut self, ts: i64, end: i64) -> i64 {
        let n = self.stack.len();
        match n.checked_sub(2) {
            Some(k) => self.stack[k].cover(ts, end),
            None => 0,
        }
    }

    /// Gives the innermost op ending at or after `end` the child [ts, end)
    /// (a runtime call's range); what it adds to its children's union.
    pub fn cover_innermost(&mut self, ts: i64, end: i64) -> i64 {
        match self.innermost_at(end) {
            Some(k) => self.stack[k].cover(ts, end),
            None => 0,
        }
    }

    /// The earliest visited scope with `end ≥ at_least` (O4's top level).
    pub fn outermost_scope(&self, at_least: i64) -> Option<u32> {
        self.outermost_at(at_least).map(|(p, _)| p)
    }

    /// The earliest visited scope with `end ≥ at_least`: (position, its
    /// tag's row).
    pub fn outermost_at(&self, at_least: i64) -> Option<(u32, u32)> {
        let k = self.records.partition_point(|&(e, _, _)| e < at_least);
        self.records.get(k).map(|&(_, p, r)| (p, r))
    }
}

/// One op as a thread's sweep visits it: its position, its range, whether
/// it is a RecordFunction scope (O4), and what the caller keeps with it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Visit {
    pub pos: u32,
    pub ts: i64,
    pub end: i64,
    pub scope: bool,
    pub tag: Tag,
}

/// What a thread's sweep reports, in order (see [`sweep_thread`]).
pub(crate) trait Visitor {
    /// The op `at`, visited in key order, and its parent (C5) with its tag.
    fn op(&mut self, at: &Visit, parent: Option<(u32, Tag)>, sweep: &mut Sweep);
    /// The runtime call `id`, once every op starting no later is visited.
    fn call(&mut self, id: u32, sweep: &mut Sweep);
}

/// One thread's sweep: `ops` in C4's key order, `calls` as (id, ts) in
/// start order; a call comes after every op with `ts ≤` its start, before
/// the first that starts later.
pub(crate) fn sweep_thread(
    ops: impl IntoIterator<Item = Visit>,
    calls: impl IntoIterator<Item = (u32, i64)>,
    v: &mut impl Visitor,
) {
    let mut sweep = Sweep::default();
    let mut calls = calls.into_iter().peekable();
    for at in ops {
        while let Some((id, _)) = calls.next_if(|&(_, c)| c < at.ts) {
            v.call(id, &mut sweep);
        }
        let parent = sweep.visit_tagged(at.pos, at.end, at.scope, at.tag);
        v.op(&at, parent, &mut sweep);
    }
    for (id, _) in calls {
        v.call(id, &mut sweep);
    }
}

#[cfg(test)]
mod tests {
    use super::Sweep;

    /// The drawing of the module docs: A B C D in key order.
    #[test]
    fn the_drawing_of_the_module_docs() {
        // A [0, 100), B [10, 50), C [20, 80), D [30, 40)
        let mut s = Sweep::default();
        assert_eq!(s.visit(0, 100, true), None);
        assert_eq!(s.visit(1, 50, true), Some(0));
        assert_eq!(s.visit(2, 80, true), Some(0));
        assert_eq!(s.visit(3, 40, true), Some(2));
        // Y = [32, 38]: every op starts before and ends after it.
        assert_eq!(s.innermost(38), Some(3));
        assert_eq!(s.outermost_scope(38), Some(0));
        // Z = [60, 70]: only A and C end at or after 70.
        assert_eq!(s.innermost(70), Some(2));
        assert_eq!(s.innermost(101), None);
        assert_eq!(s.outermost_scope(101), None);
    }

    /// The union of a parent's children: overlapping children count once,
    /// a popped op's union is gone with it.
    #[test]
    fn children_union_lives_on_the_stack() {
        // A [0, 100) with children B [10, 50), C [20, 80) (overlapping B:
        // adds 30), a call [85, 90) inside A only (adds 5).
        let mut s = Sweep::default();
        assert_eq!(s.visit(0, 100, true), None);
        assert_eq!(s.cover_parent(0, 100), 0);
        assert_eq!(s.visit(1, 50, true), Some(0));
        assert_eq!(s.cover_parent(10, 50), 40);
        assert_eq!(s.visit(2, 80, true), Some(0));
        assert_eq!(s.cover_parent(20, 80), 30);
        assert_eq!(s.cover_innermost(85, 90), 5);
        // A call [30, 40) inside C: C's first child.
        assert_eq!(s.cover_innermost(30, 40), 10);
        assert_eq!(s.cover_innermost(200, 300), 0);
    }

    /// Brute force agrees after every visit, for every threshold, with
    /// python frames (not scopes) among the ops.
    #[test]
    fn equals_brute_force() {
        let ends: Vec<i64> = (0..61).map(|i| (i * 7919 % 53) as i64).collect();
        let scope = |p: usize| p % 3 != 1;
        let mut s = Sweep::default();
        for (p, &e) in ends.iter().enumerate() {
            let parent = s.visit(p as u32, e, scope(p));
            assert_eq!(
                parent,
                (0..p).rev().find(|&q| ends[q] >= e).map(|q| q as u32)
            );
            for x in -1..55 {
                let inner = (0..=p).rev().find(|&q| ends[q] >= x).map(|q| q as u32);
                let outer = (0..=p)
                    .find(|&q| scope(q) && ends[q] >= x)
                    .map(|q| q as u32);
                assert_eq!(s.innermost(x), inner, "{p} {x}");
                assert_eq!(s.outermost_scope(x), outer, "{p} {x}");
            }
        }
        assert_eq!(Sweep::default().innermost(0), None);
    }

    /// 100 000 staggered ops (each ends after every earlier one) and as many
    /// nested: the stack stays one deep, resp. grows, and both stay exact.
    #[test]
    fn adversarial_overlap_and_nesting() {
        let n = 100_000u32;
        let mut s = Sweep::default();
        for p in 0..n {
            let parent = s.visit(p, 1_000 + i64::from(p), true);
            assert_eq!(parent, None);
        }
        assert_eq!(s.innermost(1_000), Some(n - 1));
        assert_eq!(s.outermost_scope(1_000), Some(0));
        let mut s = Sweep::default();
        for p in 0..n {
            let parent = s.visit(p, 1_000_000 - i64::from(p), true);
            assert_eq!(parent, p.checked_sub(1));
        }
        assert_eq!(s.innermost(1_000_000 - 500), Some(500));
        assert_eq!(s.outermost_scope(0), Some(0));
    }
}
