//! The streaming scanner: walks the top-level JSON object, hands each
//! element of `traceEvents` to a callback as a byte slice, and never holds
//! more than one event (plus a read buffer) in memory.
//!
//! ```text
//!  { "schemaVersion": 1, "deviceProperties": [...], "traceEvents": [ {..}, {..}, ... ], "traceName": ".." }
//!    └─ small values: parsed ─────────────────────┘                  └─ one slice each ┘  └─ parsed ──┘
//! ```
//!
//! Only structure is scanned here (strings, braces); whether an event is
//! worth a full JSON parse is decided by the caller from the raw bytes.

use super::{Meta, Prefilter, ReadError};
use memchr::{memchr2, memchr3};
use std::io::{self, Read};

/// Initial read-buffer size; it grows only if a single event is larger.
const BUF: usize = 1 << 20;

/// The callback that receives each event's bytes.
pub type OnEvent<'a> = dyn FnMut(&[u8], EventPos) -> Result<(), ReadError> + 'a;

/// Where an event sits in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventPos {
    /// 0-based index in `traceEvents`.
    pub index: u64,
    /// Byte offset of its `{` in the decompressed JSON text.
    pub offset: u64,
}

/// Reads a whole trace, calling `on_event` for every element of
/// `traceEvents` and collecting top-level metadata into `meta`.
pub fn scan<R: Read>(
    src: R,
    meta: &mut Meta,
    on_event: &mut OnEvent<'_>,
) -> Result<u64, ReadError> {
    scan_filtered(src, meta, &Prefilter::all(), on_event)
}

/// [`scan`] without the block scanner: every event is sliced byte-wise.
/// For tests that compare the two paths.
#[doc(hidden)]
pub fn scan_bytewise<R: Read>(
    src: R,
    meta: &mut Meta,
    on_event: &mut OnEvent<'_>,
) -> Result<u64, ReadError> {
    let all = Prefilter::all();
    let mut s = Scanner::new(src, &all);
    s.fast = false;
    s.document(meta, on_event)?;
    Ok(s.events)
}

/// Like [`scan`], but `on_event` sees only the events that `filter` admits
/// (exactly those for which [`Prefilter::admits`] is true); the count
/// returned is still that of all events. The filter is evaluated inside the
/// scanner, where it is cheaper than per event: needles are searched over
/// the whole read buffer and backslashes come from the structural masks.
pub fn scan_filtered<R: Read>(
    src: R,
    meta: &mut Meta,
    filter: &Prefilter,
    on_event: &mut OnEvent<'_>,
) -> Result<u64, ReadError> {
    let mut s = Scanner::new(src, filter);
    s.document(meta, on_event)?;
    Ok(s.events)
}

struct Scanner<'f, R> {
    src: R,
    filter: &'f Prefilter,
    /// Per needle of `filter`: what the last search over the buffer found.
    hits: Vec<Hit>,
    /// Whether to use the block scanner ([`Scanner::fast_events`]).
    fast: bool,
    buf: Vec<u8>,
    /// First byte not yet consumed.
    pos: usize,
    /// End of valid data in `buf`.
    end: usize,
    /// Offset of `buf[0]` in the decoded stream.
    base: u64,
    eof: bool,
    /// Events seen so far (the index of the next one).
    events: u64,
}

impl<'f, R: Read> Scanner<'f, R> {
    fn new(src: R, filter: &'f Prefilter) -> Self {
        Scanner {
            src,
            filter,
            hits: vec![Hit::default(); filter.finders.len()],
            fast: true,
            buf: vec![0; BUF],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            events: 0,
        }
    }

    fn offset(&self, i: usize) -> u64 {
        self.base + i as u64
    }

    /// Reads more input, keeping `buf[keep..end]`; returns how far existing
    /// indices moved left (subtract it from any index ≥ `keep`). `Ok(None)`
    /// at end of input.
    fn refill(&mut self, keep: usize) -> Result<Option<usize>, ReadError> {
        if self.eof {
            return Ok(None);
        }
        let shift = keep;
        if shift > 0 {
            self.buf.copy_within(keep..self.end, 0);
            self.end -= shift;
            self.pos -= shift.min(self.pos);
            self.base += shift as u64;
        }
        if self.end == self.buf.len() {
            let n = self.buf.len() * 2;
            self.buf.resize(n, 0);
        }
        loop {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(None);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(Some(shift));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(ReadError::Decode {
                        offset: self.offset(self.end),
                        events: self.events,
                        source: e,
                    })
                }
            }
        }
    }

    /// Skips whitespace and returns the next byte without consuming it.
    fn peek(&mut self) -> Result<Option<u8>, ReadError> {
        loop {
            while self.pos < self.end {
                let b = self.buf[self.pos];
                if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                    return Ok(Some(b));
                }
                self.pos += 1;
            }
            if self.refill(self.pos)?.is_none() {
                return Ok(None);
            }
        }
    }

    fn expect(&mut self, want: u8, what: &str) -> Result<(), ReadError> {
        match self.peek()? {
            Some(b) if b == want => {
                self.pos += 1;
                Ok(())
            }
            Some(b) => Err(self.syntax(format!("expected {what}, found `{}`", b as char))),
            None => Err(self.truncated()),
        }
    }

    fn syntax(&self, msg: String) -> ReadError {
        ReadError::Syntax {
            offset: self.offset(self.pos),
            events: self.events,
            msg,
        }
    }

    fn truncated(&self) -> ReadError {
        ReadError::Truncated {
            offset: self.offset(self.end),
            events: self.events,
        }
    }

    fn document(&mut self, meta: &mut Meta, on_event: &mut OnEvent<'_>) -> Result<(), ReadError> {
        match self.peek()? {
            Some(b'{') => self.pos += 1,
            // Chrome's "JSON Array Format": the events without a wrapper.
            Some(b'[') => {
                self.pos += 1;
                meta.has_events = true;
                return self.events_array(on_event);
            }
            Some(b) => return Err(self.syntax(format!("expected `{{`, found `{}`", b as char))),
            None => return Err(ReadError::Empty),
        }
        if self.peek()? == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            let key = self.key()?;
            self.expect(b':', "`:`")?;
            if key == "traceEvents" && !meta.has_events {
                match self.peek()? {
                    Some(b'[') => {
                        self.pos += 1;
                        meta.has_events = true;
                        self.events_array(on_event)?;
                    }
                    Some(_) => return Err(self.syntax("\"traceEvents\" is not an array".into())),
                    None => return Err(self.truncated()),
                }
            } else {
                let (s, e) = self.value()?;
                meta.absorb(&key, &self.buf[s..e]);
                self.pos = e;
            }
            match self.peek()? {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b) => {
                    return Err(self.syntax(format!("expected `,` or `}}`, found `{}`", b as char)))
                }
                None => return Err(self.truncated()),
            }
        }
    }

    /// Reads an object key (a JSON string) and decodes it.
    fn key(&mut self) -> Result<String, ReadError> {
        match self.peek()? {
            Some(b'"') => {}
            Some(b) => return Err(self.syntax(format!("expected a key, found `{}`", b as char))),
            None => return Err(self.truncated()),
        }
        let (s, e) = self.value()?;
        let k = serde_json::from_slice::<String>(&self.buf[s..e])
            .map_err(|err| self.syntax(format!("bad key: {err}")))?;
        self.pos = e;
        Ok(k)
    }

    fn events_array(&mut self, on_event: &mut OnEvent<'_>) -> Result<(), ReadError> {
        if self.peek()? == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            match self.peek()? {
                Some(b'{') => {}
                Some(b) => {
                    return Err(ReadError::BadEvent {
                        index: self.events,
                        offset: self.offset(self.pos),
                        msg: format!("expected an event object, found `{}`", b as char),
                    })
                }
                None => return Err(self.truncated()),
            }
            let (s, e) = self.value()?;
            let at = EventPos {
                index: self.events,
                offset: self.offset(s),
            };
            let raw = &self.buf[s..e];
            if self.filter.admits(raw) {
                on_event(raw, at)?;
            }
            self.events += 1;
            self.pos = e;
            // The common case, many well-formed events in a row, goes
            // through the block scanner; it stops before anything unusual
            // and leaves it to this loop.
            if self.fast {
                self.fast_events(on_event)?;
            }
            match self.peek()? {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b) => {
                    return Err(self.syntax(format!(
                        "expected `,` or `]` after an event, found `{}`",
                        b as char
                    )))
                }
                None => return Err(self.truncated()),
            }
        }
    }

    /// Finds the extent of the JSON value starting at `self.pos` (after
    /// whitespace). Returns `(start, end)` indices into `buf`, valid until
    /// the next refill; `self.pos` is set to `start`.
    fn value(&mut self) -> Result<(usize, usize), ReadError> {
        let first = match self.peek()? {
            Some(b) => b,
            None => return Err(self.truncated()),
        };
        let start = self.pos;
        let mut i = start + 1;
        match first {
            b'{' | b'[' => self.scan_container(start, &mut i)?,
            b'"' => {
                let mut ii = i;
                self.scan_string(start, &mut ii)?;
                i = ii;
            }
            _ => {
                // A scalar: runs until a delimiter.
                loop {
                    while i < self.end
                        && !matches!(
                            self.buf[i],
                            b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'
                        )
                    {
                        i += 1;
                    }
                    if i < self.end {
                        break;
                    }
                    match self.refill(self.pos)? {
                        Some(shift) => i -= shift,
                        None => break,
                    }
                }
            }
        }
        Ok((self.pos, i))
    }

    /// Scans a string whose opening quote is already behind `*i`; leaves
    /// `*i` just past the closing quote. `start` is the value's first byte,
    /// kept across refills.
    fn scan_string(&mut self, _start: usize, i: &mut usize) -> Result<(), ReadError> {
        loop {
            match memchr2(b'"', b'\\', &self.buf[*i..self.end]) {
                Some(k) => {
                    let at = *i + k;
                    if self.buf[at] == b'"' {
                        *i = at + 1;
                        return Ok(());
                    }
                    // Backslash: skip it and the escaped byte.
                    if at + 1 < self.end {
                        *i = at + 2;
                        continue;
                    }
                    *i = at;
                }
                None => *i = self.end,
            }
            match self.refill(self.pos)? {
                Some(shift) => *i -= shift,
                None => return Err(self.truncated()),
            }
        }
    }

    /// Scans an object or array to its matching close. Brackets and braces
    /// are counted together: in valid JSON they balance, and the event's
    /// own parse reports anything invalid.
    fn scan_container(&mut self, start: usize, i: &mut usize) -> Result<(), ReadError> {
        let mut depth = 1usize;
        loop {
            let hay = &self.buf[*i..self.end];
            // Find the next quote or brace; arrays are rarer, so look for
            // them only in the gap we skipped.
            match memchr3(b'"', b'{', b'}', hay) {
                Some(k) => {
                    if let Some(close) = walk_gap(&hay[..k], &mut depth) {
                        *i += close + 1;
                        return Ok(());
                    }
                    let at = *i + k;
                    match self.buf[at] {
                        b'"' => {
                            *i = at + 1;
                            self.scan_string(start, i)?;
                            continue;
                        }
                        b'{' => depth += 1,
                        _ => depth -= 1,
                    }
                    *i = at + 1;
                    if depth == 0 {
                        return Ok(());
                    }
                    continue;
                }
                None => {
                    if let Some(close) = walk_gap(hay, &mut depth) {
                        *i += close + 1;
                        return Ok(());
                    }
                    *i = self.end;
                }
            }
            match self.refill(self.pos)? {
                Some(shift) => *i -= shift,
                None => return Err(self.truncated()),
            }
        }
    }
}

/// What a search for one needle found, in absolute offsets of the decoded
/// stream: no occurrence starts in `from..at`, and one starts at `at`; or,
/// when `at == u64::MAX`, none lies wholly inside `from..to`.
#[derive(Debug, Clone, Copy)]
struct Hit {
    from: u64,
    at: u64,
    to: u64,
}

impl Default for Hit {
    fn default() -> Self {
        // Covers nothing: the first query searches.
        Hit {
            from: u64::MAX,
            at: u64::MAX,
            to: 0,
        }
    }
}

/// Bit masks of one 64-byte block: bit `k` is byte `k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    quote: u64,
    backslash: u64,
    /// `{` or `[`.
    open: u64,
    /// `}` or `]`.
    close: u64,
}

const BLOCK: usize = 64;

/// The longest run between two events that the block scanner crosses.
const MAX_GAP: usize = 4096;

/// Classifies 64 bytes, portably.
#[allow(dead_code)]
#[inline(always)]
fn classify_scalar(b: &[u8; BLOCK]) -> Block {
    let mut m = Block {
        quote: 0,
        backslash: 0,
        open: 0,
        close: 0,
    };
    for (k, &c) in b.iter().enumerate() {
        let bit = 1u64 << k;
        match c {
            b'"' => m.quote |= bit,
            b'\\' => m.backslash |= bit,
            b'{' | b'[' => m.open |= bit,
            b'}' | b']' => m.close |= bit,
            _ => {}
        }
    }
    m
}

/// Classifies 64 bytes with SSE2 (part of every x86_64 CPU).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn classify(b: &[u8; BLOCK]) -> Block {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is in the x86_64 baseline; the loads are unaligned
    // reads of 16 bytes each within the 64-byte array.
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let bs = _mm_set1_epi8(b'\\' as i8);
        // `{` 0x7b and `[` 0x5b differ only in bit 0x20, as do `}` and `]`.
        let case = _mm_set1_epi8(0x20);
        let open = _mm_set1_epi8(b'{' as i8);
        let close = _mm_set1_epi8(b'}' as i8);
        let mut m = Block {
            quote: 0,
            backslash: 0,
            open: 0,
            close: 0,
        };
        for lane in 0..4 {
            let v = _mm_loadu_si128(b.as_ptr().add(lane * 16) as *const __m128i);
            let folded = _mm_or_si128(v, case);
            let sh = lane * 16;
            m.quote |= (_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)) as u16 as u64) << sh;
            m.backslash |= (_mm_movemask_epi8(_mm_cmpeq_epi8(v, bs)) as u16 as u64) << sh;
            m.open |= (_mm_movemask_epi8(_mm_cmpeq_epi8(folded, open)) as u16 as u64) << sh;
            m.close |= (_mm_movemask_epi8(_mm_cmpeq_epi8(folded, close)) as u16 as u64) << sh;
        }
        m
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn classify(b: &[u8; BLOCK]) -> Block {
    classify_scalar(b)
}

/// Which bytes of a block are escaped by a backslash (simdjson's
/// branchless odd-run detection). `carry` is 1 when the block's first byte
/// is escaped by a backslash that ended the previous block.
#[inline(always)]
fn escaped(backslash: u64, carry: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let backslash = backslash & !*carry;
    let follows = (backslash << 1) | *carry;
    let odd_starts = backslash & !EVEN & !follows;
    let (seq_even, overflow) = odd_starts.overflowing_add(backslash);
    *carry = overflow as u64;
    let invert = seq_even << 1;
    (EVEN ^ invert) & follows
}

/// Bit `k` set when an odd number of bits at or below `k` are set.
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// Whether the bytes between two events are a valid separator:
/// whitespace, one comma, whitespace.
#[inline(always)]
fn is_separator(gap: &[u8]) -> bool {
    let mut comma = false;
    for &c in gap {
        match c {
            b' ' | b'\n' | b'\r' | b'\t' => {}
            b',' if !comma => comma = true,
            _ => return false,
        }
    }
    comma
}

impl<R: Read> Scanner<'_, R> {
    /// Slices events 64 bytes at a time with bit masks (quotes, escapes,
    /// brackets), the way simdjson's first stage does. Starts just after an
    /// event, between two elements of the events array; returns with
    /// `self.pos` just after the last event it delivered, leaving whatever
    /// it does not handle (the end of the array, bad separators, the end of
    /// the input) to the byte-wise scanner, which then reports exactly what
    /// it would have reported alone. The slices it delivers are those the
    /// byte-wise scanner would: brackets and braces counted together, and
    /// strings with their escapes skipped.
    fn fast_events(&mut self, on_event: &mut OnEvent<'_>) -> Result<(), ReadError> {
        let all = self.filter.finders.is_empty();
        // Nesting depth inside the current event (0: between events).
        let mut depth = 0usize;
        // All ones when the next block starts inside a string.
        let mut in_string = 0u64;
        let mut esc_carry = 0u64;
        let mut ev_start = 0usize;
        // Index of the last backslash in the blocks before `p`.
        let mut last_bs: Option<usize> = None;
        let mut p = self.pos;
        loop {
            if p + BLOCK > self.end {
                // `self.pos` (after the last event delivered) is at or before
                // everything still needed.
                match self.refill(self.pos)? {
                    Some(shift) => {
                        p -= shift;
                        ev_start = ev_start.wrapping_sub(shift);
                        last_bs = last_bs.and_then(|b| b.checked_sub(shift));
                        continue;
                    }
                    None => return Ok(()),
                }
            }
            let chunk: &[u8; BLOCK] = self.buf[p..p + BLOCK].try_into().expect("64 bytes");
            let m = classify(chunk);
            let esc = if m.backslash | esc_carry == 0 {
                0
            } else {
                escaped(m.backslash, &mut esc_carry)
            };
            let inside = prefix_xor(m.quote & !esc) ^ in_string;
            in_string = ((inside as i64) >> 63) as u64;
            let mut structural = (m.open | m.close) & !inside;
            // A backslash outside a string (invalid JSON) escapes nothing
            // for the byte-wise scanner: hand over from there on.
            let stray = m.backslash & !inside;
            if stray != 0 {
                structural &= (1u64 << stray.trailing_zeros()) - 1;
            }
            while structural != 0 {
                let k = structural.trailing_zeros() as usize;
                structural &= structural - 1;
                let at = p + k;
                if (m.open >> k) & 1 == 1 {
                    if depth == 0 {
                        // An array where an event belongs, or a bad separator.
                        if self.buf[at] != b'{' || !is_separator(&self.buf[self.pos..at]) {
                            return Ok(());
                        }
                        ev_start = at;
                    }
                    depth += 1;
                } else {
                    if depth == 0 {
                        return Ok(());
                    }
                    depth -= 1;
                    if depth == 0 {
                        let e = at + 1;
                        let admit = all || {
                            let below = m.backslash & ((1u64 << k) - 1);
                            let bs = if below != 0 {
                                Some(p + 63 - below.leading_zeros() as usize)
                            } else {
                                last_bs
                            };
                            bs.is_some_and(|b| b >= ev_start) || self.has_needle(ev_start, e)
                        };
                        if admit {
                            let pos = EventPos {
                                index: self.events,
                                offset: self.offset(ev_start),
                            };
                            on_event(&self.buf[ev_start..e], pos)?;
                        }
                        self.events += 1;
                        self.pos = e;
                    }
                }
            }
            if stray != 0 {
                return Ok(());
            }
            if m.backslash != 0 {
                last_bs = Some(p + 63 - m.backslash.leading_zeros() as usize);
            }
            p += BLOCK;
            // Between events only a separator is expected; a long stretch
            // (a stray string, say) is the byte-wise scanner's to report,
            // before the buffer grows to hold it.
            if depth == 0 && p - self.pos > MAX_GAP {
                return Ok(());
            }
        }
    }

    /// Whether `buf[s..e]` contains one of the filter's needles, from a
    /// search over the rest of the buffer that later events reuse.
    fn has_needle(&mut self, s: usize, e: usize) -> bool {
        let (abs_s, abs_e) = (self.offset(s), self.offset(e));
        for (i, f) in self.filter.finders.iter().enumerate() {
            let len = f.needle().len() as u64;
            let mut h = self.hits[i];
            let covered = h.from <= abs_s
                && if h.at == u64::MAX {
                    abs_e <= h.to
                } else {
                    abs_s <= h.at
                };
            if !covered {
                h = match f.find(&self.buf[s..self.end]) {
                    Some(k) => Hit {
                        from: abs_s,
                        at: abs_s + k as u64,
                        to: 0,
                    },
                    None => Hit {
                        from: abs_s,
                        at: u64::MAX,
                        to: self.offset(self.end),
                    },
                };
                self.hits[i] = h;
            }
            if h.at != u64::MAX && h.at + len <= abs_e {
                return true;
            }
        }
        false
    }
}

/// Applies the `[`/`]` in a stretch without strings or braces to `depth`;
/// returns the index of the bracket that closes the container, if any.
#[inline]
fn walk_gap(gap: &[u8], depth: &mut usize) -> Option<usize> {
    for k in memchr::memchr2_iter(b'[', b']', gap) {
        if gap[k] == b'[' {
            *depth += 1;
        } else {
            *depth = depth.saturating_sub(1);
            if *depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Collects event slices as strings, reading through tiny chunks so every
    /// refill path is exercised.
    fn events_of(doc: &str, chunk: usize) -> Result<(Vec<String>, Meta), ReadError> {
        struct Tiny<'a>(&'a [u8], usize);
        impl Read for Tiny<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(self.1).min(out.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut meta = Meta::default();
        let mut out = Vec::new();
        scan(Tiny(doc.as_bytes(), chunk), &mut meta, &mut |raw, _| {
            out.push(String::from_utf8(raw.to_vec()).unwrap());
            Ok(())
        })?;
        Ok((out, meta))
    }

    const DOC: &str = r#"{"schemaVersion": 1, "deviceProperties": [{"name": "NVIDIA H200"}],
      "with_stack": 1,
      "traceEvents": [
        {"ph": "X", "name": "a}\"{[", "args": {"x": [1, {"y": "]"}]}},
        {"ph": "M", "name": "b"}
      ],
      "traceName": "/tmp/x.json", "distributedInfo": {"rank": 3, "world_size": 8}}"#;

    #[test]
    fn slices_events_with_any_chunking() {
        for chunk in [1, 2, 3, 7, 64, 1 << 20] {
            let (evs, meta) = events_of(DOC, chunk).unwrap();
            assert_eq!(evs.len(), 2, "chunk {chunk}");
            assert_eq!(
                evs[0],
                r#"{"ph": "X", "name": "a}\"{[", "args": {"x": [1, {"y": "]"}]}}"#
            );
            assert_eq!(evs[1], r#"{"ph": "M", "name": "b"}"#);
            assert_eq!(meta.schema_version, Some(1));
            assert_eq!(meta.devices, vec!["NVIDIA H200".to_string()]);
            assert_eq!(meta.rank, Some(3));
            assert_eq!(meta.world_size, Some(8));
            assert_eq!(meta.with_stack, Some(true));
        }
    }

    #[test]
    fn bare_array_and_empty_events() {
        let (evs, meta) = events_of(r#"[{"ph":"X"},{"ph":"i"}]"#, 5).unwrap();
        assert_eq!(evs.len(), 2);
        assert!(meta.has_events);
        let (evs, meta) = events_of(r#"{"traceEvents": []}"#, 5).unwrap();
        assert!(evs.is_empty());
        assert!(meta.has_events);
        let (_, meta) = events_of(r#"{"other": 1}"#, 5).unwrap();
        assert!(!meta.has_events);
    }

    #[test]
    fn cut_inside_the_event_array() {
        let cut = &DOC[..DOC.find(r#"{"ph": "M""#).unwrap() + 5];
        match events_of(cut, 3) {
            Err(ReadError::Truncated { events, offset }) => {
                assert_eq!(events, 1);
                assert_eq!(offset, cut.len() as u64);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn garbage_between_events() {
        let bad = r#"{"traceEvents": [{"ph": "X"} {"ph": "X"}]}"#;
        match events_of(bad, 4) {
            Err(ReadError::Syntax { offset, events, .. }) => {
                assert_eq!(events, 1);
                assert_eq!(offset, 29);
            }
            other => panic!("{other:?}"),
        }
        let bad = r#"{"traceEvents": [{"ph": "X"}, 5]}"#;
        assert!(matches!(
            events_of(bad, 4),
            Err(ReadError::BadEvent { index: 1, .. })
        ));
    }

    /// A small deterministic generator for the fuzz tests.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn gen_string(r: &mut Rng, out: &mut String) {
        const PIECES: &[&str] = &[
            "a",
            "bc",
            " ",
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\\\"",
            "\\\\",
            "\\n",
            "\\\\\\\"",
            "user_annotation",
            "é",
        ];
        out.push('"');
        let n = if r.below(8) == 0 { 200 } else { r.below(6) };
        for _ in 0..n {
            out.push_str(PIECES[r.below(PIECES.len() as u64) as usize]);
        }
        out.push('"');
    }

    fn gen_value(r: &mut Rng, depth: u32, out: &mut String) {
        match if depth > 3 { r.below(3) } else { r.below(5) } {
            0 => out.push_str(["1", "-2.5", "true", "null", "1e3"][r.below(5) as usize]),
            1 | 2 => gen_string(r, out),
            3 => {
                out.push('[');
                for i in 0..r.below(4) {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    gen_value(r, depth + 1, out);
                }
                out.push(']');
            }
            _ => gen_object(r, depth + 1, out),
        }
    }

    fn gen_object(r: &mut Rng, depth: u32, out: &mut String) {
        out.push('{');
        for i in 0..r.below(6) {
            if i > 0 {
                out.push(',');
                out.push_str(["", " ", "\n    "][r.below(3) as usize]);
            }
            gen_string(r, out);
            out.push_str(": ");
            gen_value(r, depth, out);
        }
        out.push('}');
    }

    fn gen_doc(r: &mut Rng) -> Vec<u8> {
        let mut out = String::from("{\"schemaVersion\": 1, \"traceEvents\": [");
        for i in 0..r.below(40) {
            if i > 0 {
                out.push(',');
            }
            out.push_str(["", " ", "\n  ", "\n\n\t\r "][r.below(4) as usize]);
            gen_object(r, 0, &mut out);
        }
        out.push_str("], \"traceName\": \"x\"}");
        let mut doc = out.into_bytes();
        // Sometimes break it: a byte replaced, or the end cut off.
        match r.below(4) {
            0 if !doc.is_empty() => {
                let at = r.below(doc.len() as u64) as usize;
                doc[at] = b"\"\\{}[],: x5"[r.below(11) as usize];
            }
            1 => {
                let at = r.below(doc.len() as u64 + 1) as usize;
                doc.truncate(at);
            }
            _ => {}
        }
        doc
    }

    /// Everything a scan gives: the slices with their positions, the count
    /// and the error, as text.
    fn run_scan(doc: &[u8], chunk: usize, how: u8) -> String {
        struct Tiny<'a>(&'a [u8], usize);
        impl Read for Tiny<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(self.1).min(out.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut seen = String::new();
        let mut meta = Meta::default();
        let filter = Prefilter::any_of(&["user_annotation\"", "5"]);
        let mut cb = |raw: &[u8], at: EventPos| {
            seen.push_str(&format!(
                "{} {} {}\n",
                at.index,
                at.offset,
                raw.escape_ascii()
            ));
            Ok(())
        };
        let src = Tiny(doc, chunk);
        let res = match how {
            0 => scan_bytewise(src, &mut meta, &mut cb),
            1 => scan(src, &mut meta, &mut cb),
            // The byte-wise scan with the filter applied per event...
            2 => scan_bytewise(src, &mut meta, &mut |raw, at| {
                if filter.admits(raw) {
                    cb(raw, at)
                } else {
                    Ok(())
                }
            }),
            // ...and the block scanner's own.
            _ => scan_filtered(src, &mut meta, &filter, &mut cb),
        };
        format!("{seen}{res:?} {meta:?}")
    }

    #[test]
    fn block_scanner_agrees_with_bytewise() {
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..2000 {
            let doc = gen_doc(&mut r);
            for chunk in [1 << 20, 1 + r.below(100) as usize] {
                let want = run_scan(&doc, chunk, 0);
                let got = run_scan(&doc, chunk, 1);
                assert_eq!(
                    got,
                    want,
                    "case {case}, chunk {chunk}: {}",
                    doc.escape_ascii()
                );
                let want = run_scan(&doc, chunk, 2);
                let got = run_scan(&doc, chunk, 3);
                assert_eq!(
                    got,
                    want,
                    "filtered, case {case}, chunk {chunk}: {}",
                    doc.escape_ascii()
                );
            }
        }
    }

    #[test]
    fn block_scanner_handles_backslash_runs_across_blocks() {
        // Runs of backslashes of every length ending at every offset of a
        // block, so escapes carry from one block into the next.
        for run in 0..6 {
            for pad in 0..70 {
                let s = format!("{}{}\"}}", "x".repeat(pad), "\\".repeat(run * 2));
                let ev = format!("{{\"name\": \"{s}\", \"a\": [1]}}");
                let doc = format!("{{\"traceEvents\": [{ev}, {ev}, {ev}, {ev}]}}");
                for chunk in [1 << 20, 3] {
                    assert_eq!(
                        run_scan(doc.as_bytes(), chunk, 1),
                        run_scan(doc.as_bytes(), chunk, 0)
                    );
                }
            }
        }
    }

    #[test]
    fn classify_matches_scalar() {
        let mut r = Rng(42);
        for _ in 0..2000 {
            let mut b = [0u8; BLOCK];
            for x in b.iter_mut() {
                *x = match r.below(4) {
                    0 => b"\"\\{}[]"[r.below(6) as usize],
                    _ => r.next() as u8,
                };
            }
            assert_eq!(classify(&b), classify_scalar(&b));
        }
    }

    #[test]
    fn offsets_count_from_the_start() {
        let mut meta = Meta::default();
        let mut offs = Vec::new();
        let doc = r#"{"traceEvents": [ {"a":1}, {"b":2} ]}"#;
        scan(doc.as_bytes(), &mut meta, &mut |_, at| {
            offs.push((at.index, at.offset));
            Ok(())
        })
        .unwrap();
        assert_eq!(offs, vec![(0, 18), (1, 27)]);
    }
}
