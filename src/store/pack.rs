//! The ledger's compact stores: a chunked stream of zigzag varints (the
//! launch calls and activities as they are read) and a chunked array of
//! fixed records (the activities once grouped by correlation).
//!
//! ```text
//! Packed: chunks of 1 MiB, records never straddle two chunks
//!   [rec rec rec … rec | unused] [rec rec … | unused] [rec …
//!   rec = varints, 1 byte per 7 bits; a signed field is zigzag-coded
//!   (0 → 0, −1 → 1, 1 → 2, …) after a wrapping delta from the previous
//!   record's value, so every i64 round-trips exactly
//! Chunked<T>: chunks of 65536 records, allocated at their first write
//! ```
//!
//! Why chunks: a `Vec` that doubles holds up to twice its length, and
//! three times while it moves; chunks cost their last one's slack only,
//! and a [`Drain`] frees each one once it has been read, so the next
//! store built from it reuses the memory.

/// Bytes per chunk of a [`Packed`] stream.
const CHUNK_BYTES: usize = 1 << 20;
/// The longest record of most kinds: six varints of at most 10 bytes
/// (a kind with more fields says so: [`Record::MAX_BYTES`]).
pub(crate) const MAX_RECORD: usize = 64;

/// A chunked stream of varint records (see the module docs).
#[derive(Debug, Default, Clone)]
pub struct Packed {
    chunks: Vec<Vec<u8>>,
}

impl Packed {
    /// Starts a record of at most `room` bytes: makes room for it in one
    /// chunk. (A longer one still stays in one chunk, which then grows.)
    pub fn begin(&mut self, room: usize) {
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.capacity() - c.len() >= room);
        if !fits {
            self.chunks.push(Vec::with_capacity(CHUNK_BYTES.max(room)));
        }
    }

    /// The bytes its chunks hold (their capacity: what it costs).
    pub fn bytes(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum()
    }

    /// Gives back the last chunk's unused room (a store that is complete).
    pub fn shrink(&mut self) {
        if let Some(c) = self.chunks.last_mut() {
            c.shrink_to_fit();
        }
    }

    /// Appends an unsigned varint to the record begun last.
    pub fn u(&mut self, v: u64) {
        if let Some(c) = self.chunks.last_mut() {
            push_varint(c, v);
        }
    }

    /// Appends `v − prev` (wrapping, zigzag-coded): exact for any i64.
    pub fn delta(&mut self, v: i64, prev: i64) {
        self.u(zigzag(v.wrapping_sub(prev)));
    }

    /// [`Packed::delta`] of an i128 (a correlation id, issue 59): the same
    /// bytes as `delta` for a delta that fits i64, up to 19 for any other.
    pub fn delta_wide(&mut self, v: i128, prev: i128) {
        if let Some(c) = self.chunks.last_mut() {
            let d = v.wrapping_sub(prev);
            let mut z = ((d << 1) ^ (d >> 127)) as u128;
            while z >= 0x80 {
                c.push((z as u8) | 0x80);
                z >>= 7;
            }
            c.push(z as u8);
        }
    }

    /// A reader over the records, front to back.
    pub fn reader(&self) -> Reader<'_> {
        Reader {
            chunks: &self.chunks,
            at: 0,
            pos: 0,
        }
    }

    /// A reader that frees each chunk once read.
    pub fn drain(self) -> Drain {
        let mut chunks = self.chunks;
        chunks.reverse();
        Drain {
            current: Vec::new(),
            pos: 0,
            rest: chunks,
        }
    }
}

/// Zigzag: small magnitudes of either sign become small unsigned values.
pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The inverse of [`zigzag`].
pub(crate) fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// Appends `v` as an unsigned varint (7 bits a byte, low first).
pub(crate) fn push_varint(c: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        c.push((v as u8) | 0x80);
        v >>= 7;
    }
    c.push(v as u8);
}

/// Decodes a varint at `bytes[*pos..]`; 0 past the end (never on a stream
/// this module wrote).
pub(crate) fn varint(bytes: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0u32;
    while let Some(&b) = bytes.get(*pos) {
        *pos += 1;
        if shift < 64 {
            v |= u64::from(b & 0x7f) << shift;
        }
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    v
}

/// Decodes a varint of up to 128 bits at `bytes[*pos..]` (what
/// [`Packed::delta_wide`] wrote); 0 past the end.
pub(crate) fn varint_wide(bytes: &[u8], pos: &mut usize) -> u128 {
    let mut v = 0u128;
    let mut shift = 0u32;
    while let Some(&b) = bytes.get(*pos) {
        *pos += 1;
        if shift < 128 {
            v |= u128::from(b & 0x7f) << shift;
        }
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    v
}

/// Reads fields of records in the order they were written.
pub trait Fields {
    /// Moves to the next record; false at the end of the stream.
    fn next_record(&mut self) -> bool;
    /// The next unsigned field of the current record.
    fn u(&mut self) -> u64;
    /// The next field of up to 128 bits.
    fn u_wide(&mut self) -> u128;
    /// The next wide delta field ([`Packed::delta_wide`]): `prev` + it.
    fn delta_wide(&mut self, prev: i128) -> i128 {
        let u = self.u_wide();
        prev.wrapping_add(((u >> 1) as i128) ^ -((u & 1) as i128))
    }
    /// The next delta field: `prev` + the delta.
    fn delta(&mut self, prev: i64) -> i64 {
        prev.wrapping_add(unzigzag(self.u()))
    }
}

/// A borrowing reader of a [`Packed`] stream.
pub struct Reader<'a> {
    chunks: &'a [Vec<u8>],
    at: usize,
    pos: usize,
}

impl Fields for Reader<'_> {
    fn next_record(&mut self) -> bool {
        while let Some(c) = self.chunks.get(self.at) {
            if self.pos < c.len() {
                return true;
            }
            self.at += 1;
            self.pos = 0;
        }
        false
    }

    fn u(&mut self) -> u64 {
        match self.chunks.get(self.at) {
            Some(c) => varint(c, &mut self.pos),
            None => 0,
        }
    }

    fn u_wide(&mut self) -> u128 {
        match self.chunks.get(self.at) {
            Some(c) => varint_wide(c, &mut self.pos),
            None => 0,
        }
    }
}

/// A consuming reader of a [`Packed`] stream: chunks are freed as it goes.
pub struct Drain {
    current: Vec<u8>,
    pos: usize,
    /// The chunks not yet read, last first.
    rest: Vec<Vec<u8>>,
}

impl Fields for Drain {
    fn next_record(&mut self) -> bool {
        while self.pos >= self.current.len() {
            match self.rest.pop() {
                // The read chunk is dropped here.
                Some(c) => (self.current, self.pos) = (c, 0),
                None => {
                    self.current = Vec::new();
                    return false;
                }
            }
        }
        true
    }

    fn u(&mut self) -> u64 {
        varint(&self.current, &mut self.pos)
    }

    fn u_wide(&mut self) -> u128 {
        varint_wide(&self.current, &mut self.pos)
    }
}

/// A record an analysis keeps in a [`Records`] stream: how it writes its
/// fields after the previous record's and reads them back.
pub trait Record: Sized {
    /// What the next record's deltas are from.
    type Prev: Default + Clone;
    /// The most bytes [`Record::write`] writes.
    const MAX_BYTES: usize = MAX_RECORD;
    /// Writes the fields (at most [`Record::MAX_BYTES`]).
    fn write(&self, prev: &mut Self::Prev, p: &mut Packed);
    /// Reads back what [`Record::write`] wrote.
    fn read(prev: &mut Self::Prev, f: &mut impl Fields) -> Self;
}

/// Records kept while a trace is read, as a varint stream instead of a
/// `Vec`, and decoded once, when their analysis finishes:
///
/// ```text
/// reading   hierarchy's calls  [Δstart dur lane name Δindex][…]…   ≈ 9 B a call
///           pair's annotations [name Δstart dur …]…                 ≈ 12 B
///           iterations' ranges [phase lane Δstart len Δindex]…      ≈ 9 B
///           ledger build (every analysis's stream still held)
/// finishing each analysis decodes its own (the stream freed as it goes):
///           hierarchy Vec<Rec> 32 B a call, iterations 32 B a range;
///           pair only a selected annotation's key and interval (40 B)
/// ```
///
/// A `Vec` of the records would be held through the ledger's build, whose
/// peak was `batch`'s: at 800 copies of the benchmark trace the kept
/// events were 12 MB decoded (5.2 + 4.6 + 2.6), and the build's high-water
/// mark went from 64.9 to 55.4 MB with them as streams.
#[derive(Debug)]
pub struct Records<T: Record> {
    packed: Packed,
    prev: T::Prev,
    len: usize,
}

impl<T: Record> Clone for Records<T> {
    fn clone(&self) -> Self {
        Records {
            packed: self.packed.clone(),
            prev: self.prev.clone(),
            len: self.len,
        }
    }
}

impl<T: Record> Default for Records<T> {
    fn default() -> Self {
        Records {
            packed: Packed::default(),
            prev: T::Prev::default(),
            len: 0,
        }
    }
}

impl<T: Record> Records<T> {
    pub fn push(&mut self, r: &T) {
        self.packed.begin(T::MAX_BYTES);
        r.write(&mut self.prev, &mut self.packed);
        self.len += 1;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes its stream holds ([`Packed::bytes`]).
    pub fn bytes(&self) -> usize {
        self.packed.bytes()
    }

    /// Gives back the unused room of the last chunk (no more pushes due).
    pub fn shrink(&mut self) {
        self.packed.shrink();
    }

    /// The records in the order pushed, decoded one by one (the stream
    /// stays).
    pub fn iter(&self) -> Iter<'_, T> {
        Iter {
            prev: T::Prev::default(),
            reader: self.packed.reader(),
            left: self.len,
        }
    }

    /// The records in the order pushed; each chunk of the stream is freed
    /// once decoded.
    pub fn into_vec(self) -> Vec<T> {
        let mut out = Vec::with_capacity(self.len);
        out.extend(self.drain());
        out
    }

    /// The records one by one, in the order pushed, each chunk of the
    /// stream freed once decoded: for a finish that keeps only part of
    /// each record.
    pub fn drain(self) -> impl Iterator<Item = T> {
        let mut prev = T::Prev::default();
        let mut d = self.packed.drain();
        std::iter::from_fn(move || d.next_record().then(|| T::read(&mut prev, &mut d)))
    }
}

/// The records of a [`Records`], decoded one by one.
pub struct Iter<'a, T: Record> {
    prev: T::Prev,
    reader: Reader<'a>,
    left: usize,
}

impl<T: Record> Iterator for Iter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if !self.reader.next_record() {
            return None;
        }
        self.left = self.left.saturating_sub(1);
        Some(T::read(&mut self.prev, &mut self.reader))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<T: Record> ExactSizeIterator for Iter<'_, T> {}

/// Records per chunk of a [`Chunked`] store.
const CHUNK_RECORDS: usize = 1 << 16;

/// A fixed-size array of records in chunks (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T: Copy + Default> Chunked<T> {
    /// `len` records, none allocated yet.
    pub fn with_len(len: usize) -> Self {
        Chunked {
            chunks: (0..len.div_ceil(CHUNK_RECORDS))
                .map(|_| Vec::new())
                .collect(),
            len,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The record at `i`; the default one if never written or out of range.
    pub fn get(&self, i: usize) -> T {
        self.chunks
            .get(i / CHUNK_RECORDS)
            .and_then(|c| c.get(i % CHUNK_RECORDS))
            .copied()
            .unwrap_or_default()
    }

    /// Writes the record at `i` (ignored out of range).
    pub fn set(&mut self, i: usize, v: T) {
        if i >= self.len {
            return;
        }
        let Some(c) = self.chunks.get_mut(i / CHUNK_RECORDS) else {
            return;
        };
        if c.is_empty() {
            *c = vec![T::default(); CHUNK_RECORDS];
        }
        c[i % CHUNK_RECORDS] = v;
    }

    /// The chunk that holds record `i`.
    pub fn chunk_of(i: usize) -> usize {
        i / CHUNK_RECORDS
    }

    /// How many chunks.
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }

    /// Whether record `i`'s chunk has been written to.
    pub fn is_allocated(&self, i: usize) -> bool {
        self.chunks
            .get(i / CHUNK_RECORDS)
            .is_some_and(|c| !c.is_empty())
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.capacity()).sum::<usize>() * std::mem::size_of::<T>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Three fields, two of them deltas (any i64 round-trips).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Triple(i64, i64, u32);

    impl Record for Triple {
        type Prev = (i64, i64);
        fn write(&self, prev: &mut (i64, i64), p: &mut Packed) {
            p.delta(self.0, prev.0);
            p.delta(self.1, prev.1);
            p.u(u64::from(self.2));
            *prev = (self.0, self.1);
        }
        fn read(prev: &mut (i64, i64), f: &mut impl Fields) -> Self {
            let t = Triple(f.delta(prev.0), f.delta(prev.1), f.u() as u32);
            *prev = (t.0, t.1);
            t
        }
    }

    #[test]
    fn zigzag_orders_small_magnitudes_first() {
        let v: Vec<u64> = [0, -1, 1, -2, 2, i64::MAX, i64::MIN]
            .into_iter()
            .map(zigzag)
            .collect();
        assert_eq!(v, [0, 1, 2, 3, 4, u64::MAX - 1, u64::MAX]);
        for x in [0, -1, 1, i64::MAX, i64::MIN, -7, 1 << 40] {
            assert_eq!(unzigzag(zigzag(x)), x);
        }
    }

    /// Wide deltas (correlation ids, issue 59): exact at i128's ends,
    /// through both readers, and the same bytes as `delta` where it fits.
    #[test]
    fn wide_deltas_round_trip() {
        let vals = [
            0i128,
            5,
            (1 << 64) + 5,
            -7,
            i128::MAX,
            i128::MIN,
            i64::MAX.into(),
            i64::MIN.into(),
            3,
        ];
        let mut p = Packed::default();
        let mut prev = 0i128;
        for &v in &vals {
            p.begin(MAX_RECORD);
            p.delta_wide(v, prev);
            prev = v;
        }
        let (mut r, mut prev) = (p.reader(), 0i128);
        for &v in &vals {
            assert!(r.next_record());
            prev = r.delta_wide(prev);
            assert_eq!(prev, v);
        }
        assert!(!r.next_record());
        let (mut d, mut prev) = (p.clone().drain(), 0i128);
        for &v in &vals {
            assert!(d.next_record());
            prev = d.delta_wide(prev);
            assert_eq!(prev, v);
        }
        let (mut narrow, mut wide) = (Packed::default(), Packed::default());
        for (v, prev) in [(7i64, 3i64), (-9, 1 << 40), (i64::MIN, i64::MAX)] {
            narrow.begin(MAX_RECORD);
            narrow.delta(v, prev);
            wide.begin(MAX_RECORD);
            wide.delta_wide(v.into(), prev.into());
        }
        // The first two deltas fit i64: the same 1 + 6 bytes. (The third
        // wraps in i64, not in i128: only such deltas differ.)
        assert_eq!(narrow.chunks[0][..7], wide.chunks[0][..7]);
    }

    #[test]
    fn a_varint_takes_one_byte_per_7_bits() {
        let mut p = Packed::default();
        p.begin(MAX_RECORD);
        for v in [0u64, 127, 128, 16_383, 16_384, u64::MAX] {
            p.u(v);
        }
        // 1 + 1 + 2 + 2 + 3 + 10 bytes.
        assert_eq!(p.chunks[0].len(), 19);
        let mut r = p.reader();
        assert!(r.next_record());
        let back: Vec<u64> = (0..6).map(|_| r.u()).collect();
        assert_eq!(back, [0, 127, 128, 16_383, 16_384, u64::MAX]);
        assert!(!r.next_record());
    }

    proptest! {
        /// Records of any i64s come back exactly, through both readers,
        /// across chunk boundaries.
        #[test]
        fn kept_records_round_trip(recs in prop::collection::vec((any::<i64>(), any::<i64>(), any::<u32>()), 0..400), repeat in 1usize..60) {
            let all: Vec<Triple> = recs.iter().cycle().take(recs.len() * repeat).map(|&(a, b, c)| Triple(a, b, c)).collect();
            let mut kept = Records::<Triple>::default();
            for r in &all {
                kept.push(r);
            }
            prop_assert_eq!(kept.len(), all.len());
            prop_assert_eq!(kept.into_vec(), all);
        }

        #[test]
        fn records_round_trip(recs in prop::collection::vec((any::<i64>(), any::<i64>(), any::<u32>()), 0..400), repeat in 1usize..60) {
            let mut p = Packed::default();
            let mut prev = (0i64, 0i64);
            let all: Vec<_> = recs.iter().cycle().take(recs.len() * repeat).copied().collect();
            for &(a, b, c) in &all {
                p.begin(MAX_RECORD);
                p.delta(a, prev.0);
                p.delta(b, prev.1);
                p.u(u64::from(c));
                prev = (a, b);
            }
            for drain in [false, true] {
                let mut back = Vec::new();
                let mut prev = (0i64, 0i64);
                let mut read = |f: &mut dyn FnMut() -> Option<(i64, i64, u32)>| {
                    while let Some(x) = f() { back.push(x); }
                };
                if drain {
                    let mut r = std::mem::take(&mut p).drain();
                    read(&mut || {
                        r.next_record().then(|| {
                            let a = r.delta(prev.0);
                            let b = r.delta(prev.1);
                            prev = (a, b);
                            (a, b, r.u() as u32)
                        })
                    });
                } else {
                    let mut r = p.reader();
                    read(&mut || {
                        r.next_record().then(|| {
                            let a = r.delta(prev.0);
                            let b = r.delta(prev.1);
                            prev = (a, b);
                            (a, b, r.u() as u32)
                        })
                    });
                }
                prop_assert_eq!(&back, &all);
            }
        }

        #[test]
        fn chunked_gives_back_what_was_set(vals in prop::collection::vec(any::<u32>(), 1..300), lo in 0usize..100) {
            // The values straddle the first chunk boundary; the rest stays
            // unallocated and reads as the default.
            let base = CHUNK_RECORDS - lo;
            let mut c: Chunked<u32> = Chunked::with_len(base + vals.len() + CHUNK_RECORDS);
            for (i, &v) in vals.iter().enumerate() {
                c.set(base + i, v);
            }
            let got: Vec<u32> = (0..vals.len()).map(|i| c.get(base + i)).collect();
            prop_assert_eq!(got, vals.clone());
            prop_assert!(!c.is_allocated(base + vals.len() + CHUNK_RECORDS - 1) || vals.len() + lo > CHUNK_RECORDS);
            prop_assert_eq!(c.get(usize::MAX), 0);
        }
    }
}
