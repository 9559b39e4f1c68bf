//! One thread's host ops, kept between the read and the thread's sweep as
//! compact varint records in file order, cut into the runs that are sorted
//! in C4's key order `(ts, −end, file order)` (docs/VIEWS.md), and read
//! back by merging the runs. The host store (`store.rs`, for `ops` and `roofline`) and `export`
//! (`export/lanes.rs`) keep their own record ([`RunRecord`]: what it
//! holds, how it is coded) in this one store.
//!
//! Kineto writes a thread's ops nearly in key order: on the vLLM samples
//! the `cpu_op`/`user_annotation` section and the `python_function`
//! section are each sorted, so a thread is a handful of sorted runs. A run
//! starts wherever an op's key is below the previous op's; each record's
//! deltas restart at its run's start, so a run is read from its first
//! byte. The merge is a heap of one cursor per run, and a run joins the
//! heap only once the merge reaches its first op (runs apart in time never
//! share it). Adversarial orders (every op its own run) cost a cursor per
//! op and stay O(n log n).
//!
//! ```text
//! file order   a(0) b(3) c(7) | d(1) e(4) | f(2)      runs: [a b c] [d e] [f]
//! merged       a(0) d(1) f(2) b(3) e(4) c(7)          heap of the runs' heads
//! ```
//!
//! Three walks read them back: [`Runs::into_merged`] (key order, freeing
//! each chunk once read: `ops`' sweep, merged ahead on a thread of its own
//! by [`prefetched`] when the thread is big), [`Runs::in_key_order`] (key
//! order, borrowed: `export`'s sweep) and [`Runs::in_file_order`] (the
//! runs one after another: `export`'s `ops` table).
//!
//! Why not a sorted array: 2.58 M ops of the 1.14 GB benchmark trace were
//! 24 B each decoded (62 MB) in `ops`, 40 B and their External ids
//! (286 MB) in `export`; as runs they are ≈ 6–8 B and ≈ 12 B an op.

use crate::hostops::launch::end_of;
use std::cmp::{Ordering, Reverse};
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;

/// The largest chunk; each chunk doubles the last, from
/// [`RunRecord::FIRST_CHUNK`].
const CHUNK_MAX: usize = 1 << 20;

/// A host op as a store keeps it: its key's parts, and how it is coded.
pub(crate) trait RunRecord: Copy {
    /// What the next record's deltas are from (the default at a run's
    /// start).
    type Prev: Default + Copy;
    /// The most bytes [`RunRecord::write`] writes.
    const MAX_BYTES: usize;
    /// A thread's first chunk, in bytes: small, as a hostile trace of many
    /// threads of a few ops each costs a chunk a thread.
    const FIRST_CHUNK: usize;
    /// Its start (C4's first key).
    fn ts(&self) -> i64;
    /// Its duration: its end is [`end_of`]`(ts, dur)` (C4's second key,
    /// descending).
    fn dur(&self) -> i64;
    /// Its place in file order (C4's last key): any number that grows
    /// with the thread's records (the `pos` [`RunRecord::read`] is given,
    /// or one the record keeps).
    fn pos(&self) -> u32;
    /// Appends its fields to `out` as deltas from `prev`, and updates
    /// `prev`.
    fn write(&self, prev: &mut Self::Prev, out: &mut Vec<u8>);
    /// Reads back what [`RunRecord::write`] wrote at `bytes[*at..]`; `pos`
    /// is its place among its thread's records in file order.
    fn read(prev: &mut Self::Prev, bytes: &[u8], at: &mut usize, pos: u32) -> Self;
}

/// A run: where its first record starts, how many it holds, the first's
/// place among the thread's records.
#[derive(Debug, Clone, Copy)]
struct Run {
    chunk: u32,
    off: u32,
    len: u32,
    pos: u32,
}

/// One thread's records in file order, as sorted runs (see the module
/// docs).
#[derive(Debug)]
pub(crate) struct Runs<R: RunRecord> {
    chunks: Vec<Vec<u8>>,
    /// Records in each chunk (the consuming merge frees a chunk once all
    /// are read).
    in_chunk: Vec<u32>,
    runs: Vec<Run>,
    last: Option<(i64, Reverse<i64>)>,
    prev: R::Prev,
    n: u32,
}

impl<R: RunRecord> Default for Runs<R> {
    fn default() -> Self {
        Runs {
            chunks: Vec::new(),
            in_chunk: Vec::new(),
            runs: Vec::new(),
            last: None,
            prev: R::Prev::default(),
            n: 0,
        }
    }
}

impl<R: RunRecord> Runs<R> {
    /// Appends the next record in file order.
    pub(crate) fn push(&mut self, r: &R) {
        let key = (r.ts(), Reverse(end_of(r.ts(), r.dur())));
        self.begin();
        let chunk = self.chunks.len() - 1;
        if self.last.is_none_or(|l| key < l) {
            self.runs.push(Run {
                chunk: chunk as u32,
                off: self.chunks[chunk].len() as u32,
                len: 0,
                pos: self.n,
            });
            self.prev = R::Prev::default();
        }
        r.write(&mut self.prev, &mut self.chunks[chunk]);
        self.last = Some(key);
        if let Some(run) = self.runs.last_mut() {
            run.len += 1;
        }
        if let Some(k) = self.in_chunk.last_mut() {
            *k += 1;
        }
        self.n = self.n.saturating_add(1);
    }

    /// Room for one record in the last chunk (records never straddle two).
    fn begin(&mut self) {
        let cap = self.chunks.last().map_or(0, Vec::capacity);
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.capacity() - c.len() >= R::MAX_BYTES);
        if !fits {
            // A thread's first chunk and its lists start at one entry, not
            // a `Vec`'s four: a trace of many threads of a few ops each
            // (hostile) costs ≈ 0.3 KB a thread, not 4 KB.
            if self.chunks.capacity() == 0 {
                self.chunks.reserve_exact(1);
                self.runs.reserve_exact(1);
                self.in_chunk.reserve_exact(1);
            }
            let size = (cap * 2).clamp(R::FIRST_CHUNK, CHUNK_MAX);
            self.chunks.push(Vec::with_capacity(size));
            self.in_chunk.push(0);
        }
    }

    /// Its records.
    pub(crate) fn len(&self) -> usize {
        self.n as usize
    }

    /// Its sorted runs.
    #[cfg(test)]
    pub(crate) fn run_count(&self) -> usize {
        self.runs.len()
    }

    /// Bytes of records.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    /// Its records in C4's key order; each chunk is freed once every
    /// record in it is read (Kineto's runs advance together, so little is
    /// held at once).
    pub(crate) fn into_merged(self) -> Merged<R> {
        let source = Owned {
            chunks: self.chunks,
            left: self.in_chunk,
        };
        Merge::new(source, &self.runs)
    }

    /// Its records in C4's key order, the store kept.
    pub(crate) fn in_key_order(&self) -> Merge<R, &[Vec<u8>]> {
        Merge::new(&self.chunks[..], &self.runs)
    }

    /// Its records in file order: the runs one after another.
    pub(crate) fn in_file_order(&self) -> FileOrder<'_, R> {
        FileOrder {
            chunks: &self.chunks,
            runs: &self.runs,
            next_run: 0,
            at: Cursor::default(),
        }
    }
}

/// The chunks a merge reads: owned (each freed once read) or borrowed.
pub(crate) trait Source {
    /// Chunk `i`'s bytes (empty once freed), `None` past the last.
    fn chunk(&self, i: usize) -> Option<&[u8]>;
    /// One record of chunk `i` was read.
    fn read_one(&mut self, i: usize);
}

/// The chunks of a consumed store, with the records not read yet in each.
pub(crate) struct Owned {
    chunks: Vec<Vec<u8>>,
    left: Vec<u32>,
}

impl Source for Owned {
    fn chunk(&self, i: usize) -> Option<&[u8]> {
        self.chunks.get(i).map(Vec::as_slice)
    }

    fn read_one(&mut self, i: usize) {
        if let Some(n) = self.left.get_mut(i) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                // Read whole: a cursor still at its end moves on (len 0).
                self.chunks[i] = Vec::new();
            }
        }
    }
}

impl Source for &[Vec<u8>] {
    fn chunk(&self, i: usize) -> Option<&[u8]> {
        self.get(i).map(Vec::as_slice)
    }

    fn read_one(&mut self, _: usize) {}
}

/// A run being read: where its next record is, how many are left, the
/// next's place, the deltas' base.
#[derive(Debug, Clone, Copy, Default)]
struct Cursor<P> {
    chunk: u32,
    off: u32,
    left: u32,
    pos: u32,
    prev: P,
}

impl<P: Default> Cursor<P> {
    fn of(r: &Run) -> Cursor<P> {
        Cursor {
            chunk: r.chunk,
            off: r.off,
            left: r.len,
            pos: r.pos,
            prev: P::default(),
        }
    }
}

/// Reads the next record of the run at `c`.
#[inline]
fn read<R: RunRecord, S: Source>(c: &mut Cursor<R::Prev>, src: &mut S) -> Option<R> {
    if c.left == 0 {
        return None;
    }
    let mut bytes = src.chunk(c.chunk as usize)?;
    if c.off as usize >= bytes.len() {
        c.chunk += 1;
        c.off = 0;
        bytes = src.chunk(c.chunk as usize)?;
    }
    let mut at = c.off as usize;
    let r = R::read(&mut c.prev, bytes, &mut at, c.pos);
    c.off = at as u32;
    c.left -= 1;
    c.pos = c.pos.saturating_add(1);
    src.read_one(c.chunk as usize);
    Some(r)
}

/// A consumed store's records in key order.
pub(crate) type Merged<R> = Merge<R, Owned>;

/// The merge of a thread's runs (see the module docs).
pub(crate) struct Merge<R: RunRecord, S> {
    src: S,
    cursors: Vec<Cursor<R::Prev>>,
    /// The heads of the runs the merge has reached.
    heap: BinaryHeap<Head<R>>,
    /// The first records of the runs not reached yet, the least last: a
    /// run joins the heap when its first record is the least of all heads.
    /// Runs apart in time (a long trace's, or concatenated traces') then
    /// never share the heap, which stays a few heads deep (it held every
    /// run's, ≈ 1 000 on the scaled benchmark trace, ten levels a sift).
    waiting: Vec<Head<R>>,
}

impl<R: RunRecord, S: Source> Merge<R, S> {
    fn new(mut src: S, runs: &[Run]) -> Merge<R, S> {
        let mut cursors: Vec<Cursor<R::Prev>> = runs.iter().map(Cursor::of).collect();
        let mut waiting = Vec::with_capacity(runs.len());
        for (k, c) in cursors.iter_mut().enumerate() {
            if let Some(r) = read::<R, S>(c, &mut src) {
                waiting.push(Head::of(r, k as u32));
            }
        }
        // The least head last (Head's order is reversed), popped off the end.
        waiting.sort_unstable();
        Merge {
            src,
            cursors,
            heap: BinaryHeap::new(),
            waiting,
        }
    }
}

/// A run's head in the merge: its record, the record's end, the run.
/// Ordered by C4's key alone, reversed (the heap's top is the least key):
/// keys are unique, the file position being their last part. Compared by
/// hand, not as a derived tuple: the merge's comparisons were most of its
/// time.
#[derive(Debug, Clone, Copy)]
struct Head<R> {
    rec: R,
    end: i64,
    run: u32,
}

impl<R: RunRecord> Head<R> {
    fn of(rec: R, run: u32) -> Head<R> {
        Head {
            rec,
            end: end_of(rec.ts(), rec.dur()),
            run,
        }
    }
}

impl<R: RunRecord> Ord for Head<R> {
    #[inline]
    fn cmp(&self, o: &Head<R>) -> Ordering {
        // (ts, −end, pos) ascending, reversed.
        o.rec
            .ts()
            .cmp(&self.rec.ts())
            .then(self.end.cmp(&o.end))
            .then(o.rec.pos().cmp(&self.rec.pos()))
    }
}

impl<R: RunRecord> PartialOrd for Head<R> {
    fn partial_cmp(&self, o: &Head<R>) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl<R: RunRecord> PartialEq for Head<R> {
    fn eq(&self, o: &Head<R>) -> bool {
        self.cmp(o).is_eq()
    }
}

impl<R: RunRecord> Eq for Head<R> {}

impl<R: RunRecord, S: Source> Iterator for Merge<R, S> {
    type Item = R;

    /// The least head out; its run's next record takes its place at the
    /// top and sinks (one sift, not a pop and a push: a thread is mostly
    /// one long run).
    fn next(&mut self) -> Option<R> {
        // Keys are unique, so the least waiting head and the heap's top
        // never tie.
        if let Some(&w) = self.waiting.last() {
            if self.heap.peek().is_none_or(|t| w > *t) {
                self.waiting.pop();
                self.heap.push(w);
            }
        }
        let mut top = self.heap.peek_mut()?;
        let Head { rec, run, .. } = *top;
        match read::<R, S>(&mut self.cursors[run as usize], &mut self.src) {
            Some(next) => *top = Head::of(next, run),
            None => {
                PeekMut::pop(top);
            }
        }
        Some(rec)
    }
}

/// A thread's records in file order (its runs one after another).
pub(crate) struct FileOrder<'a, R: RunRecord> {
    chunks: &'a [Vec<u8>],
    runs: &'a [Run],
    next_run: usize,
    at: Cursor<R::Prev>,
}

impl<R: RunRecord> Iterator for FileOrder<'_, R> {
    type Item = R;

    fn next(&mut self) -> Option<R> {
        while self.at.left == 0 {
            // The next run: its deltas restart.
            self.at = Cursor::of(self.runs.get(self.next_run)?);
            self.next_run += 1;
        }
        read::<R, &[Vec<u8>]>(&mut self.at, &mut { self.chunks })
    }
}

/// Threads with at least this many ops are merged on a thread of their
/// own while their sweep runs ([`prefetched`]); fewer are merged inline.
pub(crate) const PREFETCH_MIN: usize = 1 << 16;

/// Records per block the merging thread hands on (`ops`' are 24 B: three
/// blocks in flight are ≈ 0.6 MB).
const BLOCK: usize = 8192;

/// A thread's records in key order, merged on a second thread when `big`:
/// the merge (decoding the varints, the heap) was a third of the sweep of
/// the 1.14 GB benchmark trace's main thread, which runs alone at the end
/// of the read. The merge is taken from `slot`, so that if the thread
/// cannot start it is still there, and merged inline.
///
/// ```text
/// merging thread   merge → [8192 ops] ─► [8192 ops] ─►   (blocks reused, ≤ 3 in flight)
/// sweep (caller)                 ◄── visit each op, its calls, its rows
/// ```
pub(crate) fn prefetched<'scope, R, I>(
    s: &'scope std::thread::Scope<'scope, '_>,
    slot: &'scope std::sync::Mutex<Option<I>>,
    big: bool,
) -> Prefetched<R, I>
where
    R: Copy + Send + 'static,
    I: Iterator<Item = R> + Send,
{
    let take = || slot.lock().ok().and_then(|mut m| m.take());
    if big {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<R>>(1);
        let (back_tx, back_rx) = std::sync::mpsc::sync_channel::<Vec<R>>(2);
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

/// [`prefetched`]'s records.
pub(crate) enum Prefetched<R, I> {
    Inline(Option<I>),
    Remote {
        blocks: std::sync::mpsc::Receiver<Vec<R>>,
        back: std::sync::mpsc::SyncSender<Vec<R>>,
        block: Vec<R>,
        at: usize,
    },
}

impl<R: Copy, I: Iterator<Item = R>> Iterator for Prefetched<R, I> {
    type Item = R;

    fn next(&mut self) -> Option<R> {
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
                let r = block.get(*at).copied();
                *at += 1;
                r
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::pack::{push_varint, unzigzag, varint, zigzag};

    /// A record of the least the store needs: start, duration, a tag; its
    /// place is the one it is read at.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct T {
        ts: i64,
        dur: i64,
        tag: u32,
        pos: u32,
    }

    impl RunRecord for T {
        type Prev = i64;
        const MAX_BYTES: usize = 30;
        const FIRST_CHUNK: usize = 64;
        fn ts(&self) -> i64 {
            self.ts
        }
        fn dur(&self) -> i64 {
            self.dur
        }
        fn pos(&self) -> u32 {
            self.pos
        }
        fn write(&self, prev: &mut i64, out: &mut Vec<u8>) {
            push_varint(out, zigzag(self.ts.wrapping_sub(*prev)));
            push_varint(out, zigzag(self.dur));
            push_varint(out, u64::from(self.tag));
            *prev = self.ts;
        }
        fn read(prev: &mut i64, bytes: &[u8], at: &mut usize, pos: u32) -> T {
            let ts = prev.wrapping_add(unzigzag(varint(bytes, at)));
            let dur = unzigzag(varint(bytes, at));
            let tag = varint(bytes, at) as u32;
            *prev = ts;
            T { ts, dur, tag, pos }
        }
    }

    fn t(ts: i64, dur: i64, tag: u32) -> T {
        T {
            ts,
            dur,
            tag,
            pos: 0,
        }
    }

    fn key(r: &T) -> (i64, Reverse<i64>, u32) {
        (r.ts, Reverse(end_of(r.ts, r.dur)), r.pos)
    }

    /// A thread of one record holds a small chunk and one-entry lists (a
    /// hostile trace of 200 000 one-op threads took 902 MB with 4 KB
    /// first chunks, 100 MB now).
    #[test]
    fn a_small_thread_is_small() {
        let mut s = Runs::<T>::default();
        s.push(&t(1, 2, 3));
        assert_eq!(s.chunks.len(), 1);
        assert_eq!(s.chunks[0].capacity(), T::FIRST_CHUNK);
        assert_eq!((s.runs.capacity(), s.in_chunk.capacity()), (1, 1));
        assert_eq!(s.into_merged().map(|r| r.tag).collect::<Vec<_>>(), vec![3]);
    }

    /// Random orders, extreme values and long runs across chunks: the three
    /// walks against a sort and a copy of the same records.
    #[test]
    fn equals_a_sort_and_a_copy() {
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
            let mut s = Runs::<T>::default();
            let mut all = Vec::new();
            for p in 0..n {
                let ts = match rnd(10) {
                    0 => i64::MAX - rnd(5) as i64,
                    1 => i64::MIN + rnd(5) as i64,
                    2..=5 => p as i64 * 10,
                    _ => rnd(1_000_000) as i64,
                };
                let r = T {
                    pos: p as u32,
                    ..t(ts, rnd(1 << 40) as i64, rnd(1 << 31) as u32)
                };
                s.push(&r);
                all.push(r);
            }
            assert_eq!(s.len(), n);
            assert!(s.in_file_order().eq(all.iter().copied()), "case {case}");
            let mut want = all.clone();
            want.sort_by_key(key);
            assert!(s.in_key_order().eq(want.iter().copied()), "case {case}");
            let mut m = s.into_merged();
            assert!(m.by_ref().eq(want.into_iter()), "case {case}");
            // Every chunk freed once read.
            assert!(
                m.src.chunks.iter().all(|c| c.capacity() == 0),
                "case {case}"
            );
        }
    }

    /// Merged on a second thread: the same records in the same order,
    /// across blocks, and inline when not big.
    #[test]
    fn prefetched_equals_inline() {
        for (n, big) in [
            (0u32, true),
            (1, true),
            (BLOCK as u32 * 3 + 5, true),
            (1000, false),
        ] {
            let fill = || {
                let mut s = Runs::<T>::default();
                for p in 0..n {
                    let ts = i64::from(p % 7) * 1000 + i64::from(p);
                    s.push(&t(ts, i64::from(p % 13), p));
                }
                s
            };
            let want: Vec<T> = fill().into_merged().collect();
            let slot = std::sync::Mutex::new(Some(fill().into_merged()));
            let got: Vec<T> = std::thread::scope(|s| prefetched(s, &slot, big).collect());
            assert_eq!(got, want, "{n} {big}");
        }
    }
}
