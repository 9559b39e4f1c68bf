//! `export`'s host ops, kept per thread while reading in the per-thread
//! run store ([`crate::hostops::runs`], as `ops` keeps its own): each
//! thread's ops as compact varint records in file order, cut into the runs
//! that are sorted in C4's key order `(ts, −end, file order)`. Two walks
//! read them back:
//!
//! - one thread in key order ([`LaneOps::in_key_order`]), for its
//!   containment sweep (C4–C5): the store's merge of its runs;
//! - every op in file order ([`LaneOps::in_file_order`]), for the `ops`
//!   table: a heap of one cursor per thread (each reading its runs one
//!   after another), keyed by the op's row id (its position among the
//!   trace's host ops, kept in each record).
//!
//! ```text
//! file order   a0 b1 c2 d3 e4 f5       thread T: a c d f    thread U: b e
//! T's records  [a] [c d] [f]           runs: c ends after a starts → a new run
//! key order T  a c f d (say)           the store's merge of T's runs
//! file order   a0 b1 c2 d3 e4 f5       heap of T's and U's heads, by row id
//! ```
//!
//! Why not the trace-wide record stream `ops` keeps: the sweep needs a
//! thread's ops in key order and the table needs them in file order; one
//! store serves both at ≈ 12 B an op, where the decoded ops (40 B) and
//! their External ids were 286 MB at 2.58 M ops. A record: its row id's
//! step, Δts, dur, Δ event index, name and category, then its External id
//! (Δ) and input texts behind a flag word; the deltas restart at each run,
//! so a run is read from its first byte.

use super::Ext;
use crate::hostops::runs::{self, RunRecord, Runs};
use crate::model::Sym;
use crate::store::pack::{push_varint, unzigzag, varint, zigzag};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A host op as the `ops` table writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Op {
    /// Its thread: the store's, not the record's (0 as read from a
    /// thread's store, set by [`LaneOps`]'s walks).
    pub lane: u32,
    /// Its row id: its position among the trace's host ops in file order.
    pub pos: u32,
    pub ts: i64,
    pub dur: i64,
    /// The event's index in the file.
    pub index: u64,
    pub name: Sym,
    /// Position in `hostops::HOST_CATEGORIES`.
    pub cat: u8,
    pub ext: Ext,
}

/// What the deltas of the next record are taken from (all 0 at a run's
/// start).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Prev {
    ts: i64,
    index: u64,
    pos: u32,
    ext: i64,
}

impl RunRecord for Op {
    type Prev = Prev;
    /// Nine varints.
    const MAX_BYTES: usize = 90;
    const FIRST_CHUNK: usize = 128;

    fn ts(&self) -> i64 {
        self.ts
    }

    fn dur(&self) -> i64 {
        self.dur
    }

    /// The row id: it grows with the thread's ops, as their place does.
    fn pos(&self) -> u32 {
        self.pos
    }

    fn write(&self, prev: &mut Prev, c: &mut Vec<u8>) {
        let p = *prev;
        push_varint(c, u64::from(self.pos.wrapping_sub(p.pos)));
        push_varint(c, zigzag(self.ts.wrapping_sub(p.ts)));
        push_varint(c, zigzag(self.dur));
        push_varint(c, zigzag(self.index.wrapping_sub(p.index) as i64));
        push_varint(c, u64::from(self.name.0) * 4 + u64::from(self.cat & 3));
        let e = self.ext;
        let flags = u64::from(e.external_id.is_some())
            | u64::from(e.input_dims.is_some()) << 1
            | u64::from(e.input_type.is_some()) << 2;
        push_varint(c, flags);
        if let Some(x) = e.external_id {
            push_varint(c, zigzag(x.wrapping_sub(p.ext)));
        }
        for t in [e.input_dims, e.input_type].into_iter().flatten() {
            push_varint(c, u64::from(t));
        }
        *prev = Prev {
            ts: self.ts,
            index: self.index,
            pos: self.pos,
            ext: e.external_id.unwrap_or(p.ext),
        };
    }

    fn read(prev: &mut Prev, bytes: &[u8], at: &mut usize, _: u32) -> Op {
        let p = *prev;
        let pos = p.pos.wrapping_add(varint(bytes, at) as u32);
        let ts = p.ts.wrapping_add(unzigzag(varint(bytes, at)));
        let dur = unzigzag(varint(bytes, at));
        let index = p.index.wrapping_add(unzigzag(varint(bytes, at)) as u64);
        let nc = varint(bytes, at);
        let flags = varint(bytes, at);
        let external_id = (flags & 1 != 0).then(|| p.ext.wrapping_add(unzigzag(varint(bytes, at))));
        let mut text = |bit: u64| (flags & bit != 0).then(|| varint(bytes, at) as u32);
        let input_dims = text(2);
        let input_type = text(4);
        *prev = Prev {
            ts,
            index,
            pos,
            ext: external_id.unwrap_or(p.ext),
        };
        Op {
            lane: 0,
            pos,
            ts,
            dur,
            index,
            name: Sym((nc / 4) as u32),
            cat: (nc % 4) as u8,
            ext: Ext {
                external_id,
                input_dims,
                input_type,
            },
        }
    }
}

/// Every host op of a trace, per thread (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct LaneOps {
    lanes: Vec<Runs<Op>>,
    n: u32,
}

impl LaneOps {
    /// Keeps the next host op in file order (its `pos` is assigned here).
    pub fn push(&mut self, mut op: Op) {
        let l = op.lane as usize;
        if self.lanes.len() <= l {
            self.lanes.resize_with(l + 1, Runs::default);
        }
        op.pos = self.n;
        self.lanes[l].push(&op);
        self.n = self.n.saturating_add(1);
    }

    /// The ops kept.
    pub fn len(&self) -> usize {
        self.n as usize
    }

    /// Bytes of records.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.lanes.iter().map(Runs::bytes).sum()
    }

    /// The threads (lane ids `0..lanes()`; some may hold no op).
    pub fn lanes(&self) -> usize {
        self.lanes.len()
    }

    /// Thread `lane`'s ops in C4's key order.
    pub fn in_key_order(&self, lane: u32) -> KeyOrder<'_> {
        KeyOrder {
            merge: self.lanes.get(lane as usize).map(Runs::in_key_order),
            lane,
        }
    }

    /// Every op in file order (row id order).
    pub fn in_file_order(&self) -> FileOrder<'_> {
        let mut f = FileOrder {
            lanes: self.lanes.iter().map(Runs::in_file_order).collect(),
            heads: vec![None; self.lanes.len()],
            heap: BinaryHeap::with_capacity(self.lanes.len()),
        };
        for l in 0..self.lanes.len() {
            f.advance(l);
        }
        f
    }
}

/// One thread's ops in key order: the store's merge of its runs.
pub(crate) struct KeyOrder<'a> {
    merge: Option<runs::Merge<Op, &'a [Vec<u8>]>>,
    lane: u32,
}

impl Iterator for KeyOrder<'_> {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        let op = self.merge.as_mut()?.next()?;
        Some(Op {
            lane: self.lane,
            ..op
        })
    }
}

/// Every op in file order: the merge of the threads by row id.
pub(crate) struct FileOrder<'a> {
    lanes: Vec<runs::FileOrder<'a, Op>>,
    heads: Vec<Option<Op>>,
    heap: BinaryHeap<Reverse<(u32, u32)>>,
}

impl FileOrder<'_> {
    fn advance(&mut self, l: usize) {
        let head = self.lanes[l].next().map(|op| Op {
            lane: l as u32,
            ..op
        });
        self.heads[l] = head;
        if let Some(op) = head {
            self.heap.push(Reverse((op.pos, l as u32)));
        }
    }
}

impl Iterator for FileOrder<'_> {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        let Reverse((_, l)) = self.heap.pop()?;
        let op = self.heads[l as usize]?;
        self.advance(l as usize);
        Some(op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hostops::launch::end_of;

    /// C4's order key: (ts, −end, file order).
    fn key(o: &Op) -> (i64, Reverse<i64>, u32) {
        (o.ts, Reverse(end_of(o.ts, o.dur)), o.pos)
    }

    fn op(lane: u32, ts: i64, dur: i64, ext: Option<i64>) -> Op {
        Op {
            lane,
            pos: 0,
            ts,
            dur,
            index: 0,
            name: Sym(lane * 7),
            cat: ts.rem_euclid(4) as u8,
            ext: Ext {
                external_id: ext,
                input_dims: (ts % 3 == 0).then_some(ts as u32),
                input_type: None,
            },
        }
    }

    /// The drawing: two threads; thread 0's runs merge in key order, and
    /// both read back whole in file order.
    #[test]
    fn both_orders_of_the_drawing() {
        let mut s = LaneOps::default();
        let kept = [
            op(0, 0, 5, Some(9)),
            op(1, 1, 1, None),
            op(0, 3, 1, Some(7)),
            op(0, 1, 9, None),
            op(1, 4, 0, Some(-3)),
            op(0, 2, 1, Some(i64::MIN)),
        ];
        for (i, o) in kept.iter().enumerate() {
            s.push(Op {
                index: 10 * i as u64,
                ..*o
            });
        }
        assert_eq!(s.len(), 6);
        assert_eq!(s.lanes[0].run_count(), 2);
        let keys: Vec<u32> = s.in_key_order(0).map(|o| o.pos).collect();
        assert_eq!(keys, vec![0, 3, 5, 2]);
        let back: Vec<Op> = s.in_file_order().collect();
        for (i, (b, k)) in back.iter().zip(&kept).enumerate() {
            let want = Op {
                pos: i as u32,
                index: 10 * i as u64,
                ..*k
            };
            assert_eq!(*b, want);
        }
        assert_eq!(back.len(), 6);
        assert!(s.bytes() < 6 * 20, "{} B", s.bytes());
        assert_eq!(s.in_key_order(5).count(), 0);
    }

    /// Random orders, extreme values, many threads and runs across chunks
    /// against a sort and a copy of the same ops.
    #[test]
    fn equals_a_sort_and_a_copy() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for case in 0..30 {
            let n = if case == 0 { 150_000 } else { rnd(3000) };
            let lanes = 1 + rnd(4) as u32;
            let mut s = LaneOps::default();
            let mut all = Vec::new();
            for p in 0..n {
                let ts = match rnd(10) {
                    0 => i64::MAX - rnd(5) as i64,
                    1 => i64::MIN + rnd(5) as i64,
                    2..=5 => p as i64 * 10,
                    _ => rnd(1_000_000) as i64,
                };
                let ext = match rnd(4) {
                    0 => None,
                    1 => Some(i64::MIN + rnd(3) as i64),
                    _ => Some(rnd(1 << 40) as i64 - (1 << 39)),
                };
                let mut o = op(rnd(u64::from(lanes)) as u32, ts, rnd(1 << 40) as i64, ext);
                o.index = p * 3 + rnd(3);
                o.pos = p as u32;
                s.push(o);
                all.push(o);
            }
            assert!(s.in_file_order().eq(all.iter().copied()), "case {case}");
            for l in 0..lanes {
                let mut want: Vec<Op> = all.iter().filter(|o| o.lane == l).copied().collect();
                want.sort_by_key(key);
                assert!(s.in_key_order(l).eq(want), "case {case} lane {l}");
            }
        }
    }
}
