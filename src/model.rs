//! The event model: an exact integer time type, thread identities and
//! interned names.
//!
//! Times are [`Ns`], integer nanoseconds parsed from the JSON text (see
//! [`crate::trace::time`]); every comparison and sum is done on integers.

use serde::Serialize;
use std::collections::HashMap;
use std::fmt;

/// A time or duration in integer nanoseconds.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Ns(pub i64);

impl Ns {
    pub const ZERO: Ns = Ns(0);

    /// Milliseconds, for display and JSON (exact ns in, nearest f64 out).
    pub fn as_ms(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// `self + other`, saturating. For parsed events it never saturates:
    /// the reader refuses an event whose `ts + dur` leaves the i64 range.
    pub fn saturating_add(self, other: Ns) -> Ns {
        Ns(self.0.saturating_add(other.0))
    }
}

impl fmt::Display for Ns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // µs with three decimals, Kineto's own format.
        let sign = if self.0 < 0 { "-" } else { "" };
        let a = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:03}", a / 1000, a % 1000)
    }
}

/// A `pid` or `tid` as written: Kineto uses integers, but also strings
/// (`"Spans"`, `"Traces"`, `""`) and negative numbers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(untagged)]
pub enum ThreadPart {
    Num(i64),
    Str(String),
}

impl fmt::Display for ThreadPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThreadPart::Num(n) => write!(f, "{n}"),
            ThreadPart::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// The (pid, tid) lane an event sits on. For GPU events this is (device, stream).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Lane {
    pub pid: ThreadPart,
    pub tid: ThreadPart,
}

impl fmt::Display for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.pid, self.tid)
    }
}

/// A complete (`ph: X`) event reduced to what analyses keep: the interval,
/// the lane, its name (interned) and its position in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub start: Ns,
    pub dur: Ns,
    pub lane: u32,
    pub name: Sym,
    /// Index of the event in `traceEvents` (0-based), for reports and tie-breaks.
    pub index: u64,
}

impl Span {
    pub fn end(&self) -> Ns {
        self.start.saturating_add(self.dur)
    }
}

/// The hasher of the interners: a full parse interns the name of every
/// launch call and GPU activity (~1 M names per GB of JSON, kernel names
/// of 100+ bytes), and std's SipHash-1-3 was 3 % of its CPU time. This one
/// takes eight bytes per folded 64 × 64 → 128-bit multiply (the method of
/// the `foldhash` crate), from a per-table random seed, so that names
/// chosen to collide cannot be written into a trace in advance.
#[derive(Debug, Clone, Copy)]
pub struct FoldState {
    seed: u64,
}

impl Default for FoldState {
    fn default() -> Self {
        use std::hash::{BuildHasher, Hasher};
        // std's random keys (per process, varied per table), once per table.
        let seed = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        FoldState { seed: seed | 1 }
    }
}

impl std::hash::BuildHasher for FoldState {
    type Hasher = FoldHasher;
    fn build_hasher(&self) -> FoldHasher {
        FoldHasher { h: self.seed }
    }
}

/// See [`FoldState`].
#[derive(Debug, Clone, Copy)]
pub struct FoldHasher {
    h: u64,
}

/// An odd constant with well-spread bits (2^64 / φ).
const FOLD_K: u64 = 0x9e37_79b9_7f4a_7c15;

/// The folded multiply: both halves of the 128-bit product, xored.
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

impl std::hash::Hasher for FoldHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.h;
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(chunk);
            h = fold(h ^ u64::from_le_bytes(w), FOLD_K);
        }
        let rest = chunks.remainder();
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        // The length keeps "ab" and "ab\0" apart.
        let last = u64::from_le_bytes(w) ^ ((bytes.len() as u64) << 56);
        self.h = fold(h ^ last, FOLD_K);
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.h = fold(self.h ^ i, FOLD_K);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // The last multiply's high bits reach the low ones hashbrown indexes by.
        self.h.rotate_left(26)
    }
}

/// An interned string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub u32);

/// The longest name an [`Interner`] keeps whole, in bytes. Real Kineto
/// names (templated kernel names included) are under 1 KiB; a longer one is
/// kept as its first `MAX_NAME_BYTES` bytes and a [`cut_name`] marker, so
/// distinct huge names cannot fill memory (issue 17).
pub const MAX_NAME_BYTES: usize = 4096;

/// A string interner: analyses keep many events of few distinct names.
///
/// Names longer than [`MAX_NAME_BYTES`] are stored cut ([`cut_name`]);
/// [`Interner::cut`] counts them, for a note.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    map: HashMap<Box<str>, Sym, FoldState>,
    names: Vec<Box<str>>,
    cut: usize,
    /// A direct-mapped cache in front of `map` ([`RECENT`] slots of a
    /// symbol + 1, 0: empty; made at the first name): a name's slot comes
    /// from its length and end bytes, so a hit costs no hash of the whole
    /// name, only the comparison with the name the slot holds (exact).
    /// Python frames' names are long and share their heads; hashing them
    /// was the feeder's largest cost in `ops` (`perf`).
    recent: Vec<u32>,
}

/// Slots of [`Interner`]'s cache.
const RECENT: usize = 1 << 10;

/// A name's cache slot: its length, first and last 8 bytes, mixed.
fn recent_slot(s: &[u8]) -> usize {
    let n = s.len();
    let (head, tail) = match (s.first_chunk::<8>(), s.last_chunk::<8>()) {
        // Two loads for the usual name of eight bytes or more.
        (Some(&head), Some(&tail)) => (u64::from_be_bytes(head), u64::from_be_bytes(tail)),
        _ => {
            let word = |b: &[u8]| b.iter().fold(0u64, |w, &x| w << 8 | u64::from(x));
            (word(s), word(s))
        }
    };
    let mixed = (tail ^ head.rotate_left(29) ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> (64 - RECENT.trailing_zeros())) as usize
}

impl Interner {
    pub fn new() -> Self {
        Self::default()
    }

    /// The symbol of `s` (cut to [`MAX_NAME_BYTES`] first, see
    /// [`cut_name`]), added when new.
    pub fn intern(&mut self, s: &str) -> Sym {
        if s.len() <= MAX_NAME_BYTES {
            if self.recent.is_empty() {
                self.recent = vec![0; RECENT];
            }
            let k = recent_slot(s.as_bytes());
            if let Some(sym) = self.recent[k].checked_sub(1) {
                if *self.names[sym as usize] == *s {
                    return Sym(sym);
                }
            }
            let sym = match self.map.get(s) {
                Some(&sym) => sym,
                None => self.add(s),
            };
            self.recent[k] = sym.0.saturating_add(1);
            return sym;
        }
        let cut = cut_name(s);
        if let Some(&sym) = self.map.get(cut.as_str()) {
            return sym;
        }
        self.cut += 1;
        self.add(&cut)
    }

    /// Adds a name known to be absent.
    fn add(&mut self, s: &str) -> Sym {
        let sym = Sym(self.names.len() as u32);
        self.names.push(s.into());
        self.map.insert(s.into(), sym);
        sym
    }

    /// The symbol of `s` (cut as [`Interner::intern`] cuts it), if present.
    pub fn get(&self, s: &str) -> Option<Sym> {
        if s.len() <= MAX_NAME_BYTES {
            self.map.get(s).copied()
        } else {
            self.map.get(cut_name(s).as_str()).copied()
        }
    }

    pub fn resolve(&self, sym: Sym) -> &str {
        &self.names[sym.0 as usize]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// How many distinct names were longer than [`MAX_NAME_BYTES`] and are
    /// stored cut.
    pub fn cut(&self) -> usize {
        self.cut
    }
}

/// The note for names stored cut, when there are any: `what` says which
/// names ("kernel and launch", "annotation").
pub fn cut_note(interner: &Interner, what: &str) -> Option<String> {
    let n = interner.cut();
    (n > 0).then(|| {
        format!(
            "{n} distinct {what} name(s) longer than {MAX_NAME_BYTES} bytes are shown cut to their first {MAX_NAME_BYTES} bytes and a marker `…[cut: N bytes, fnv HASH]`"
        )
    })
}

/// A name longer than [`MAX_NAME_BYTES`] as it is stored: its first
/// `MAX_NAME_BYTES` bytes (to a character boundary), then
/// `…[cut: N bytes, fnv HHHHHHHHHHHHHHHH]` with the whole length and a
/// 64-bit FNV-1a hash of the whole name, so that long names sharing their
/// first 4 KiB stay apart. Shorter names are returned as they are.
pub fn cut_name(s: &str) -> String {
    if s.len() <= MAX_NAME_BYTES {
        return s.to_string();
    }
    let mut end = MAX_NAME_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{}…[cut: {} bytes, fnv {h:016x}]", &s[..end], s.len())
}

/// Interns whole lanes, so per-event storage is one `u32`.
#[derive(Debug, Default, Clone)]
pub struct LaneTable {
    map: HashMap<Lane, u32, FoldState>,
    lanes: Vec<Lane>,
    /// The lane interned last: events come in runs of one thread's.
    last: u32,
}

impl LaneTable {
    pub fn intern(&mut self, lane: Lane) -> u32 {
        if self.lanes.get(self.last as usize) == Some(&lane) {
            return self.last;
        }
        let id = match self.map.get(&lane) {
            Some(&id) => id,
            None => {
                let id = self.lanes.len() as u32;
                self.lanes.push(lane.clone());
                self.map.insert(lane, id);
                id
            }
        };
        self.last = id;
        id
    }

    pub fn resolve(&self, id: u32) -> &Lane {
        &self.lanes[id as usize]
    }

    /// The id of `lane`, if it was interned.
    pub fn get(&self, lane: &Lane) -> Option<u32> {
        self.map.get(lane).copied()
    }

    pub fn len(&self) -> usize {
        self.lanes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ns_display_is_kineto_microseconds() {
        assert_eq!(Ns(5_106_297_913_320_790).to_string(), "5106297913320.790");
        assert_eq!(Ns(-1_500).to_string(), "-1.500");
        assert_eq!(Ns(7).to_string(), "0.007");
    }

    #[test]
    fn fold_hash_spreads_names_that_differ_in_one_byte_or_length() {
        use std::hash::BuildHasher;
        let st = FoldState::default();
        let mut names: Vec<String> = vec![String::new(), "a".into(), "a\0".into()];
        for len in [1usize, 7, 8, 9, 16, 100] {
            for at in 0..len {
                let mut b = vec![b'k'; len];
                b[at] = b'x';
                names.push(String::from_utf8(b).unwrap_or_default());
            }
        }
        names.sort();
        names.dedup();
        let mut hashes: Vec<u64> = names.iter().map(|n| st.hash_one(n)).collect();
        // And the low 7 bits (a small table's buckets) are not all alike.
        let low: std::collections::BTreeSet<u64> = hashes.iter().map(|h| h & 127).collect();
        hashes.sort_unstable();
        hashes.dedup();
        assert_eq!(hashes.len(), names.len());
        assert!(low.len() > 32, "{}", low.len());
    }

    #[test]
    fn interner_round_trips() {
        let mut i = Interner::new();
        let a = i.intern("sample_tokens");
        let b = i.intern("propose");
        assert_eq!(i.intern("sample_tokens"), a);
        assert_ne!(a, b);
        assert_eq!(i.resolve(b), "propose");
        assert_eq!(i.get("nope"), None);
        assert_eq!(i.cut(), 0);
    }

    #[test]
    fn interner_cuts_long_names_and_keeps_them_apart() {
        let mut i = Interner::new();
        let a = format!("{}a", "é".repeat(MAX_NAME_BYTES));
        let b = format!("{}b", "é".repeat(MAX_NAME_BYTES));
        let (sa, sb) = (i.intern(&a), i.intern(&b));
        assert_ne!(sa, sb);
        assert_eq!(i.intern(&a), sa);
        assert_eq!(i.get(&b), Some(sb));
        assert_eq!(i.cut(), 2);
        let shown = i.resolve(sa);
        assert!(shown.len() < MAX_NAME_BYTES + 64, "{}", shown.len());
        assert!(
            shown.contains(&format!("…[cut: {} bytes, fnv ", a.len())),
            "{shown}"
        );
        let exact = "x".repeat(MAX_NAME_BYTES);
        let e = i.intern(&exact);
        assert_eq!(i.resolve(e), exact);
        assert_eq!(i.cut(), 2);
    }
}
