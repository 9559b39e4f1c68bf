//! `export`'s host ops, kept per thread while reading: each thread's ops as
//! compact varint records in file order, cut into the runs that are sorted
//! in C4's key order `(ts, −end, file order)`. Two walks read them back:
//!
//! - one thread in key order ([`LaneOps::in_key_order`]), for its
//!   containment sweep (C4–C5): a heap of one cursor per run, as `ops`
//!   merges its runs;
//! - every op in file order ([`LaneOps::in_file_order`]), for the `ops`
//!   table: a heap of one cursor per thread, keyed by the op's row id (its
//!   position among the trace's host ops, kept in each record).
//!
//! ```text
//! file order   a0 b1 c2 d3 e4 f5       thread T: a c d f    thread U: b e
//! T's records  [a] [c d] [f]           runs: c ends after a starts → a new run
//! key order T  a c f d (say)           heap of T's run heads
//! file order   a0 b1 c2 d3 e4 f5       heap of T's and U's heads, by row id
//! ```
//!
//! Why not the trace-wide record stream `ops` keeps: the sweep needs a
//! thread's ops in key order and the table needs them in file order; one
//! store serves both at ≈ 12 B an op, where the decoded ops (40 B) and
//! their External ids were 286 MB at 2.58 M ops. A record: its row id's
//! step and a run-start bit, Δts, dur, Δ event index, name and category,
//! then its External id (Δ) and input texts behind a flag word; the deltas
//! restart at each run, so a run is read from its first byte.

use super::Ext;
use crate::hostops::launch::end_of;
use crate::model::Sym;
use crate::store::pack::{push_varint, unzigzag, varint, zigzag};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The first chunk's size; each next one doubles, up to [`CHUNK_MAX`].
const CHUNK_MIN: usize = 128;
const CHUNK_MAX: usize = 1 << 20;
/// The most bytes one op takes: nine varints.
const OP_MAX: usize = 90;

/// A host op as the `ops` table writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Op {
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

/// C4's order key: (ts, −end, file order).
type Key = (i64, Reverse<i64>, u32);

impl Op {
    /// C4's order key: (ts, −end, file order).
    fn key(&self) -> Key {
        (self.ts, Reverse(end_of(self.ts, self.dur)), self.pos)
    }
}

/// What the deltas of the next record are taken from (all 0 at a run's
/// start).
#[derive(Debug, Clone, Copy, Default)]
struct Prev {
    ts: i64,
    index: u64,
    pos: u32,
    ext: i64,
}

/// A run: where its first record starts and how many it holds.
#[derive(Debug, Clone, Copy)]
struct Run {
    chunk: u32,
    off: u32,
    len: u32,
}

/// One thread's ops (see the module docs).
#[derive(Debug, Default)]
struct Lane {
    chunks: Vec<Vec<u8>>,
    runs: Vec<Run>,
    last: Option<(i64, Reverse<i64>)>,
    prev: Prev,
}

impl Lane {
    fn push(&mut self, op: &Op) {
        let key = (op.ts, Reverse(end_of(op.ts, op.dur)));
        self.begin();
        let start = self.last.is_none_or(|l| key < l);
        if start {
            let chunk = self.chunks.len() - 1;
            self.runs.push(Run {
                chunk: chunk as u32,
                off: self.chunks[chunk].len() as u32,
                len: 0,
            });
            self.prev = Prev::default();
        }
        let p = self.prev;
        let Some(c) = self.chunks.last_mut() else {
            return;
        };
        push_varint(
            c,
            u64::from(op.pos.wrapping_sub(p.pos)) * 2 + u64::from(start),
        );
        push_varint(c, zigzag(op.ts.wrapping_sub(p.ts)));
        push_varint(c, zigzag(op.dur));
        push_varint(c, zigzag(op.index.wrapping_sub(p.index) as i64));
        push_varint(c, u64::from(op.name.0) * 4 + u64::from(op.cat & 3));
        let e = op.ext;
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
        self.prev = Prev {
            ts: op.ts,
            index: op.index,
            pos: op.pos,
            ext: e.external_id.unwrap_or(p.ext),
        };
        self.last = Some(key);
        if let Some(r) = self.runs.last_mut() {
            r.len += 1;
        }
    }

    /// Room for one op in the last chunk (records never straddle two).
    fn begin(&mut self) {
        let cap = self.chunks.last().map_or(0, Vec::capacity);
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.capacity() - c.len() >= OP_MAX);
        if !fits {
            // A thread's first chunk and its lists start at one entry, not
            // a `Vec`'s four: a trace of many threads of a few ops each
            // (hostile) costs ≈ 0.3 KB a thread, not 4 KB.
            if self.chunks.capacity() == 0 {
                self.chunks.reserve_exact(1);
                self.runs.reserve_exact(1);
            }
            let size = (cap * 2).clamp(CHUNK_MIN, CHUNK_MAX);
            self.chunks.push(Vec::with_capacity(size));
        }
    }

    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }
}

/// Where a walk over a thread's records is.
#[derive(Debug, Clone, Copy, Default)]
struct Cursor {
    chunk: u32,
    off: u32,
    prev: Prev,
}

impl Cursor {
    /// Decodes the record at the cursor (on `lane`'s `chunks`), `None` past
    /// the last.
    fn read(&mut self, chunks: &[Vec<u8>], lane: u32) -> Option<Op> {
        let mut bytes = chunks.get(self.chunk as usize)?;
        if self.off as usize >= bytes.len() {
            self.chunk += 1;
            self.off = 0;
            bytes = chunks.get(self.chunk as usize)?;
            if bytes.is_empty() {
                return None;
            }
        }
        let mut at = self.off as usize;
        let w = varint(bytes, &mut at);
        if w & 1 == 1 {
            self.prev = Prev::default();
        }
        let p = self.prev;
        let pos = p.pos.wrapping_add((w >> 1) as u32);
        let ts = p.ts.wrapping_add(unzigzag(varint(bytes, &mut at)));
        let dur = unzigzag(varint(bytes, &mut at));
        let index = p
            .index
            .wrapping_add(unzigzag(varint(bytes, &mut at)) as u64);
        let nc = varint(bytes, &mut at);
        let flags = varint(bytes, &mut at);
        let external_id =
            (flags & 1 != 0).then(|| p.ext.wrapping_add(unzigzag(varint(bytes, &mut at))));
        let mut text = |bit: u64| (flags & bit != 0).then(|| varint(bytes, &mut at) as u32);
        let input_dims = text(2);
        let input_type = text(4);
        self.off = at as u32;
        self.prev = Prev {
            ts,
            index,
            pos,
            ext: external_id.unwrap_or(p.ext),
        };
        Some(Op {
            lane,
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
        })
    }
}

/// Every host op of a trace, per thread (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct LaneOps {
    lanes: Vec<Lane>,
    n: u32,
}

impl LaneOps {
    /// Keeps the next host op in file order (its `pos` is assigned here).
    pub fn push(&mut self, mut op: Op) {
        let l = op.lane as usize;
        if self.lanes.len() <= l {
            self.lanes.resize_with(l + 1, Lane::default);
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
        self.lanes.iter().map(Lane::bytes).sum()
    }

    /// The threads (lane ids `0..lanes()`; some may hold no op).
    pub fn lanes(&self) -> usize {
        self.lanes.len()
    }

    /// Thread `lane`'s ops in C4's key order.
    pub fn in_key_order(&self, lane: u32) -> KeyOrder<'_> {
        let Some(l) = self.lanes.get(lane as usize) else {
            return KeyOrder {
                chunks: &[],
                lane,
                cursors: Vec::new(),
                heap: BinaryHeap::new(),
            };
        };
        let mut k = KeyOrder {
            chunks: &l.chunks,
            lane,
            cursors: l
                .runs
                .iter()
                .map(|r| RunCursor {
                    at: Cursor {
                        chunk: r.chunk,
                        off: r.off,
                        prev: Prev::default(),
                    },
                    left: r.len,
                    head: None,
                })
                .collect(),
            heap: BinaryHeap::with_capacity(l.runs.len()),
        };
        for r in 0..k.cursors.len() {
            k.advance(r);
        }
        k
    }

    /// Every op in file order (row id order).
    pub fn in_file_order(&self) -> FileOrder<'_> {
        let mut f = FileOrder {
            ops: self,
            cursors: vec![(Cursor::default(), None); self.lanes.len()],
            heap: BinaryHeap::with_capacity(self.lanes.len()),
        };
        for l in 0..self.lanes.len() {
            f.advance(l);
        }
        f
    }
}

/// A run being read in key order.
#[derive(Debug, Clone, Copy)]
struct RunCursor {
    at: Cursor,
    left: u32,
    head: Option<Op>,
}

/// One thread's ops in key order: the merge of its runs.
pub(crate) struct KeyOrder<'a> {
    chunks: &'a [Vec<u8>],
    lane: u32,
    cursors: Vec<RunCursor>,
    heap: BinaryHeap<Reverse<(Key, u32)>>,
}

impl KeyOrder<'_> {
    fn advance(&mut self, r: usize) {
        let c = &mut self.cursors[r];
        c.head = None;
        if c.left == 0 {
            return;
        }
        c.left -= 1;
        if let Some(op) = c.at.read(self.chunks, self.lane) {
            c.head = Some(op);
            self.heap.push(Reverse((op.key(), r as u32)));
        }
    }
}

impl Iterator for KeyOrder<'_> {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        let Reverse((_, r)) = self.heap.pop()?;
        let op = self.cursors[r as usize].head?;
        self.advance(r as usize);
        Some(op)
    }
}

/// Every op in file order: the merge of the threads by row id.
pub(crate) struct FileOrder<'a> {
    ops: &'a LaneOps,
    cursors: Vec<(Cursor, Option<Op>)>,
    heap: BinaryHeap<Reverse<(u32, u32)>>,
}

impl FileOrder<'_> {
    fn advance(&mut self, l: usize) {
        let (c, head) = &mut self.cursors[l];
        *head = c.read(&self.ops.lanes[l].chunks, l as u32);
        if let Some(op) = head {
            self.heap.push(Reverse((op.pos, l as u32)));
        }
    }
}

impl Iterator for FileOrder<'_> {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        let Reverse((_, l)) = self.heap.pop()?;
        let op = self.cursors[l as usize].1?;
        self.advance(l as usize);
        Some(op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(s.lanes[0].runs.len(), 2);
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
                want.sort_by_key(Op::key);
                assert!(s.in_key_order(l).eq(want), "case {case} lane {l}");
            }
        }
    }
}
