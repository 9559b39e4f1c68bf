//! Each thread's host ops, kept between the end of the read and the
//! thread's sweep as compact varint runs (≈ 6–8 B an op), and read back in
//! C4's key order `(ts, −end, file order)` by merging the runs.
//!
//! Kineto writes a thread's ops nearly in key order: on the vLLM samples the
//! `cpu_op`/`user_annotation` section and the `python_function` section are
//! each sorted, so a thread is a handful of sorted runs. A run starts
//! wherever an op's key is below the previous op's; the merge is a heap of
//! one cursor per run, and a run joins the heap only once the merge reaches
//! its first op (runs apart in time never share it). Adversarial orders
//! (every op its own run) cost a cursor per op and stay O(n log n).
//!
//! ```text
//! file order   a(0) b(3) c(7) | d(1) e(4) | f(2)      runs: [a b c] [d e] [f]
//! merged       a(0) d(1) f(2) b(3) e(4) c(7)          heap of the runs' heads
//! ```
//!
//! Why not a sorted array: 2.58 M ops of the 1.14 GB benchmark trace were
//! 24 B each decoded (62 MB); as runs they are the bytes below.

use crate::hostops::launch::end_of;
use crate::store::pack::{push_varint, unzigzag, varint, zigzag};
use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;

/// The first chunk's size; each next one doubles, up to [`CHUNK_MAX`].
const CHUNK_MIN: usize = 64;
const CHUNK_MAX: usize = 1 << 20;
/// The most bytes one op takes: three varints.
const OP_MAX: usize = 30;

/// An op as the sweep reads it back (ordered only to sit in the merge's
/// heap, behind its key and run, which decide).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Op {
    pub ts: i64,
    pub dur: i64,
    /// Its row (O1).
    pub row: u32,
    /// Its place among its thread's ops in file order (C4's last key).
    pub pos: u32,
}

#[cfg(test)]
impl Op {
    fn key(&self) -> Key {
        (self.ts, Reverse(end_of(self.ts, self.dur)), self.pos)
    }
}

/// C4's order key: (ts, −end, file order).
#[cfg(test)]
type Key = (i64, Reverse<i64>, u32);

/// A run: where its first op starts, how many ops, the first's position.
#[derive(Debug, Clone, Copy)]
struct Run {
    chunk: u32,
    off: u32,
    len: u32,
    pos: u32,
}

/// One thread's ops in file order, as sorted runs of varints (Δts from
/// the run's previous op, dur, row; a run's first op Δ from 0).
#[derive(Debug, Default)]
pub(super) struct Thread {
    chunks: Vec<Vec<u8>>,
    /// Records in each chunk (the merge frees a chunk once all are read).
    in_chunk: Vec<u32>,
    runs: Vec<Run>,
    last: Option<(i64, Reverse<i64>)>,
    prev_ts: i64,
    n: u32,
}

impl Thread {
    /// Appends the next op in file order.
    pub(super) fn push(&mut self, ts: i64, dur: i64, row: u32) {
        let key = (ts, Reverse(end_of(ts, dur)));
        self.begin();
        if self.last.is_none_or(|l| key < l) {
            let chunk = self.chunks.len() - 1;
            let off = self.chunks[chunk].len();
            self.runs.push(Run {
                chunk: chunk as u32,
                off: off as u32,
                len: 0,
                pos: self.n,
            });
            self.prev_ts = 0;
        }
        self.u(zigzag(ts.wrapping_sub(self.prev_ts)));
        self.u(zigzag(dur));
        self.u(u64::from(row));
        self.prev_ts = ts;
        self.last = Some(key);
        if let Some(r) = self.runs.last_mut() {
            r.len += 1;
        }
        if let Some(k) = self.in_chunk.last_mut() {
            *k += 1;
        }
        self.n = self.n.saturating_add(1);
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
                self.in_chunk.reserve_exact(1);
            }
            let size = (cap * 2).clamp(CHUNK_MIN, CHUNK_MAX);
            self.chunks.push(Vec::with_capacity(size));
            self.in_chunk.push(0);
        }
    }

    fn u(&mut self, v: u64) {
        if let Some(c) = self.chunks.last_mut() {
            push_varint(c, v);
        }
    }

    /// Its ops.
    pub(super) fn len(&self) -> usize {
        self.n as usize
    }

    /// Its ops in C4's key order; each chunk is freed once every op in it
    /// is read (Kineto's runs advance together, so little is held at once).
    pub(super) fn into_merged(self) -> Merged {
        let mut m = Merged {
            chunks: self.chunks,
            left: self.in_chunk,
            cursors: self.runs.iter().map(Cursor::of).collect(),
            heap: BinaryHeap::new(),
            waiting: Vec::with_capacity(self.runs.len()),
        };
        for k in 0..m.cursors.len() {
            if let Some(op) = read(&mut m.cursors[k], &mut m.chunks, &mut m.left) {
                m.waiting.push(Head::of(op, k as u32));
            }
        }
        // The least head last (Head's order is reversed), popped off the end.
        m.waiting.sort_unstable();
        m
    }
}

/// A run being read: where its next op is, how many are left.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    chunk: u32,
    off: u32,
    left: u32,
    pos: u32,
    prev_ts: i64,
}

impl Cursor {
    fn of(r: &Run) -> Cursor {
        Cursor {
            chunk: r.chunk,
            off: r.off,
            left: r.len,
            pos: r.pos,
            prev_ts: 0,
        }
    }
}

/// The merge of a thread's runs (see the module docs).
pub(super) struct Merged {
    chunks: Vec<Vec<u8>>,
    /// Records not read yet in each chunk.
    left: Vec<u32>,
    cursors: Vec<Cursor>,
    /// The heads of the runs the merge has reached.
    heap: BinaryHeap<Head>,
    /// The first ops of the runs not reached yet, the least last: a run
    /// joins the heap when its first op is the least of all heads. Runs
    /// apart in time (a long trace's, or concatenated traces') then never
    /// share the heap, which stays a few heads deep (it held every run's,
    /// ≈ 1 000 on the scaled benchmark trace, ten levels a sift).
    waiting: Vec<Head>,
}

/// A run's head in the merge: its op, the op's end, the run. Ordered by
/// C4's key alone, reversed (the heap's top is the least key): keys are
/// unique, the file position being their last part. Compared by hand, not
/// as a derived tuple: the merge's comparisons were most of its time.
#[derive(Debug, Clone, Copy)]
struct Head {
    op: Op,
    end: i64,
    run: u32,
}

impl Head {
    fn of(op: Op, run: u32) -> Head {
        Head {
            op,
            end: end_of(op.ts, op.dur),
            run,
        }
    }
}

impl Ord for Head {
    fn cmp(&self, o: &Head) -> std::cmp::Ordering {
        // (ts, −end, pos) ascending, reversed.
        o.op.ts
            .cmp(&self.op.ts)
            .then(self.end.cmp(&o.end))
            .then(o.op.pos.cmp(&self.op.pos))
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, o: &Head) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl PartialEq for Head {
    fn eq(&self, o: &Head) -> bool {
        self.cmp(o).is_eq()
    }
}

impl Eq for Head {}

/// Reads the next op of the run at `c`, freeing a chunk once all of its
/// records are read.
fn read(c: &mut Cursor, chunks: &mut [Vec<u8>], left: &mut [u32]) -> Option<Op> {
    if c.left == 0 {
        return None;
    }
    let mut bytes = chunks.get(c.chunk as usize)?;
    if c.off as usize >= bytes.len() {
        c.chunk += 1;
        c.off = 0;
        bytes = chunks.get(c.chunk as usize)?;
    }
    let mut at = c.off as usize;
    let ts = c.prev_ts.wrapping_add(unzigzag(varint(bytes, &mut at)));
    let dur = unzigzag(varint(bytes, &mut at));
    let row = varint(bytes, &mut at) as u32;
    c.off = at as u32;
    c.prev_ts = ts;
    c.left -= 1;
    let op = Op {
        ts,
        dur,
        row,
        pos: c.pos,
    };
    c.pos = c.pos.saturating_add(1);
    let chunk = c.chunk as usize;
    if let Some(n) = left.get_mut(chunk) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            // Read whole: a cursor still at its end moves on (len 0).
            chunks[chunk] = Vec::new();
        }
    }
    Some(op)
}

impl Iterator for Merged {
    type Item = Op;

    /// The least head out; its run's next op takes its place at the top
    /// and sinks (one sift, not a pop and a push: a thread is mostly one
    /// long run).
    fn next(&mut self) -> Option<Op> {
        // Keys are unique, so the least waiting head and the heap's top
        // never tie.
        if let Some(&w) = self.waiting.last() {
            if self.heap.peek().is_none_or(|t| w > *t) {
                self.waiting.pop();
                self.heap.push(w);
            }
        }
        let mut top = self.heap.peek_mut()?;
        let Head { op, run, .. } = *top;
        match read(
            &mut self.cursors[run as usize],
            &mut self.chunks,
            &mut self.left,
        ) {
            Some(next) => *top = Head::of(next, run),
            None => {
                PeekMut::pop(top);
            }
        }
        Some(op)
    }
}

/// Threads with at least this many ops are merged on a thread of their
/// own while their sweep runs ([`prefetched`]); fewer are merged inline.
pub(super) const PREFETCH_MIN: usize = 1 << 16;

/// Ops per block the merging thread hands on (24 B each: three blocks in
/// flight are ≈ 0.6 MB).
const BLOCK: usize = 8192;

/// A thread's ops in key order, merged on a second thread when `big`: the
/// merge (decoding the varints, the heap) was a third of the sweep of the
/// 1.14 GB benchmark trace's main thread, which runs alone at the end of
/// the read. The merge is taken from `slot`, so that if the thread cannot
/// start it is still there, and merged inline.
///
/// ```text
/// merging thread   merge → [8192 ops] ─► [8192 ops] ─►   (blocks reused, ≤ 3 in flight)
/// sweep (caller)                 ◄── visit each op, its calls, its rows
/// ```
pub(super) fn prefetched<'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    slot: &'scope std::sync::Mutex<Option<Merged>>,
    big: bool,
) -> Prefetched {
    let take = || slot.lock().ok().and_then(|mut m| m.take());
    if big {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Op>>(1);
        let (back_tx, back_rx) = std::sync::mpsc::sync_channel::<Vec<Op>>(2);
        let merging = std::thread::Builder::new()
            .name("torchtrace-merge".into())
            .spawn_scoped(s, move || {
                let Some(mut merged) = take() else { return };
                loop {
                    let mut block = back_rx.try_recv().unwrap_or_default();
                    block.clear();
                    block.extend(merged.by_ref().take(BLOCK));
                    if block.is_empty() || tx.send(block).is_err() {
                        return;
                    }
                }
            });
        if merging.is_ok() {
            return Prefetched::Remote {
                blocks: rx,
                back: back_tx,
                block: Vec::new(),
                at: 0,
            };
        }
    }
    Prefetched::Inline(take())
}

/// [`prefetched`]'s ops.
pub(super) enum Prefetched {
    Inline(Option<Merged>),
    Remote {
        blocks: std::sync::mpsc::Receiver<Vec<Op>>,
        back: std::sync::mpsc::SyncSender<Vec<Op>>,
        block: Vec<Op>,
        at: usize,
    },
}

impl Iterator for Prefetched {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        match self {
            Prefetched::Inline(m) => m.as_mut()?.next(),
            Prefetched::Remote {
                blocks,
                back,
                block,
                at,
            } => {
                if *at == block.len() {
                    // The merge's end: its sender dropped. (A merge that
                    // panicked makes the scope panic when it joins.)
                    let next = blocks.recv().ok()?;
                    let spent = std::mem::replace(block, next);
                    let _ = back.try_send(spent);
                    *at = 0;
                }
                let op = block.get(*at).copied();
                *at += 1;
                op
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The drawing: three runs, merged in key order; equal keys keep file
    /// order; an enclosing op (earlier start or same start, later end) first.
    #[test]
    fn runs_merge_in_key_order() {
        let mut t = Thread::default();
        for (ts, dur, row) in [
            (0, 5, 0),
            (3, 1, 1),
            (7, 2, 2),
            (1, 9, 3),
            (4, 0, 4),
            (2, 1, 5),
        ] {
            t.push(ts, dur, row);
        }
        assert_eq!(t.runs.len(), 3);
        let rows: Vec<u32> = t.into_merged().map(|o| o.row).collect();
        assert_eq!(rows, vec![0, 3, 5, 1, 4, 2]);
        let mut t = Thread::default();
        // Same start: the longer encloses, so it comes first even when
        // written later; identical ranges keep file order.
        for (ts, dur, row) in [(5, 1, 0), (5, 3, 1), (5, 3, 2)] {
            t.push(ts, dur, row);
        }
        let got: Vec<(u32, u32)> = t.into_merged().map(|o| (o.row, o.pos)).collect();
        assert_eq!(got, vec![(1, 1), (2, 2), (0, 0)]);
    }

    /// A thread of one op holds a small chunk and one-entry lists (a
    /// hostile trace of 200 000 one-op threads took 902 MB with 4 KB
    /// first chunks, 100 MB now).
    #[test]
    fn a_small_thread_is_small() {
        let mut t = Thread::default();
        t.push(1, 2, 3);
        assert_eq!(t.chunks.len(), 1);
        assert_eq!(t.chunks[0].capacity(), CHUNK_MIN);
        assert_eq!((t.runs.capacity(), t.in_chunk.capacity()), (1, 1));
        assert_eq!(t.into_merged().map(|o| o.row).collect::<Vec<_>>(), vec![3]);
    }

    /// Random orders, extreme values and long runs across chunks against a
    /// sort of the same ops.
    #[test]
    fn equals_a_sort() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for case in 0..40 {
            let n = if case == 0 {
                200_000
            } else {
                rnd(3000) as usize
            };
            let mut t = Thread::default();
            let mut want = Vec::new();
            for p in 0..n {
                let ts = match rnd(10) {
                    0 => i64::MAX - rnd(5) as i64,
                    1 => i64::MIN + rnd(5) as i64,
                    2..=5 => p as i64 * 10,
                    _ => rnd(1_000_000) as i64,
                };
                let dur = rnd(1 << 40) as i64;
                let row = rnd(1 << 31) as u32;
                t.push(ts, dur, row);
                want.push(Op {
                    ts,
                    dur,
                    row,
                    pos: p as u32,
                });
            }
            want.sort_by_key(Op::key);
            assert_eq!(t.len(), n);
            let mut m = t.into_merged();
            assert!(m.by_ref().eq(want.into_iter()), "case {case}");
            // Every chunk freed once read.
            assert!(m.chunks.iter().all(|c| c.capacity() == 0), "case {case}");
        }
    }

    /// Merged on a second thread: the same ops in the same order, across
    /// blocks, and inline when not big.
    #[test]
    fn prefetched_equals_inline() {
        for (n, big) in [
            (0u32, true),
            (1, true),
            (BLOCK as u32 * 3 + 5, true),
            (1000, false),
        ] {
            let fill = || {
                let mut t = Thread::default();
                for p in 0..n {
                    let ts = i64::from(p % 7) * 1000 + i64::from(p);
                    t.push(ts, i64::from(p % 13), p);
                }
                t
            };
            let want: Vec<Op> = fill().into_merged().collect();
            let slot = std::sync::Mutex::new(Some(fill().into_merged()));
            let got: Vec<Op> = std::thread::scope(|s| prefetched(s, &slot, big).collect());
            assert_eq!(got, want, "{n} {big}");
        }
    }
}
