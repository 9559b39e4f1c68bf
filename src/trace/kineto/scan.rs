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
//!
//! Memory is bounded on any input: a value that must be held (an event, a
//! top-level value [`Meta`] reads) may be at most `limit` bytes, and
//! everything else (whitespace, top-level values nobody reads) streams
//! through without being held. The input is always read to its end: after
//! the document only whitespace may follow, and reading to the end is what
//! makes a gzip decoder check each member's CRC-32 and length.

use super::super::error::ReadError;
use super::super::event::EventPos;
use super::super::message::{clip, clip_str, show_byte, SHOW};
use super::super::{Meta, Prefilter, ReadOptions};
use fast::Hit;

mod fast;
use memchr::{memchr2, memchr3};
use std::io::{self, Read};

/// Initial read-buffer size; it grows only if a single event is larger.
const BUF: usize = 1 << 20;

/// Room the buffer has beyond the limit: the separator before an event
/// that the block scanner keeps (at most `MAX_GAP` plus a block) and a
/// little more, so a value of exactly `limit` bytes always fits.
const HEADROOM: usize = 64 << 10;

/// What a top-level key may always be long (see [`Scanner::cap`]); the
/// buffer's first size is well above it, so the memory bound holds.
const KEY_CAP: usize = 4096;

/// A UTF-8 byte-order mark, accepted at the very start of the text.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// The callback that receives each event's bytes.
pub type OnEvent<'a> = dyn FnMut(&[u8], EventPos) -> Result<(), ReadError> + 'a;

/// The callback told the metadata as the events array starts.
pub(super) type OnStart<'a> = dyn FnMut(&Meta) + 'a;

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
    scan_bytewise_with(src, &ReadOptions::default(), meta, on_event)
}

/// [`scan_bytewise`] with explicit options, to compare with [`scan_with`].
#[doc(hidden)]
pub fn scan_bytewise_with<R: Read>(
    src: R,
    opts: &ReadOptions,
    meta: &mut Meta,
    on_event: &mut OnEvent<'_>,
) -> Result<u64, ReadError> {
    let all = Prefilter::all();
    let mut s = Scanner::new(src, &all, opts);
    s.fast = false;
    s.run(meta, &mut |_| {}, on_event)
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
    scan_with(src, &ReadOptions::default(), meta, filter, on_event)
}

/// [`scan_filtered`] with explicit options (the limit on one event).
pub fn scan_with<R: Read>(
    src: R,
    opts: &ReadOptions,
    meta: &mut Meta,
    filter: &Prefilter,
    on_event: &mut OnEvent<'_>,
) -> Result<u64, ReadError> {
    Scanner::new(src, filter, opts).run(meta, &mut |_| {}, on_event)
}

/// [`scan_with`], calling `on_start` with the metadata read so far just
/// before the first event (it does not change while events are read: one
/// `traceEvents` array is read, and keys after it come after its events).
pub(super) fn scan_with_start<R: Read>(
    src: R,
    opts: &ReadOptions,
    meta: &mut Meta,
    filter: &Prefilter,
    on_start: &mut OnStart<'_>,
    on_event: &mut OnEvent<'_>,
) -> Result<u64, ReadError> {
    Scanner::new(src, filter, opts).run(meta, on_start, on_event)
}

/// What a refill did: how far indices into the buffer moved left, and
/// whether new bytes came (false: the input has ended).
#[derive(Debug, Clone, Copy)]
struct Refill {
    pub shift: usize,
    pub more: bool,
}

/// What the scanner is holding in its buffer, for the message when it is
/// too large.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Holding {
    Event,
    Key,
    Value(String),
}

struct Scanner<'f, R> {
    src: R,
    filter: &'f Prefilter,
    /// Per needle of `filter`: what the last search over the buffer found.
    hits: Vec<Hit>,
    /// What the last search with the filter's searcher of all needles
    /// found, and the length of the needle found.
    set_hit: (Hit, u64),
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
    /// The source's read error, and the offset it came at. Held back until
    /// the buffered text is scanned, so that the events before the damage
    /// are all delivered; it then decides the outcome.
    failed: Option<(io::Error, u64)>,
    /// Events seen so far (the index of the next one).
    events: u64,
    /// The most bytes one held value may have.
    limit: usize,
    /// The most the buffer grows to: `limit` plus [`HEADROOM`].
    max_buf: usize,
    holding: Holding,
}

impl<'f, R: Read> Scanner<'f, R> {
    fn new(src: R, filter: &'f Prefilter, opts: &ReadOptions) -> Self {
        let limit = usize::try_from(opts.max_event_bytes.max(1)).unwrap_or(usize::MAX / 2);
        Scanner {
            src,
            filter,
            hits: vec![Hit::default(); filter.finders.len()],
            set_hit: (Hit::default(), 0),
            fast: true,
            buf: vec![0; BUF],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            failed: None,
            events: 0,
            limit,
            max_buf: BUF.max(limit.saturating_add(HEADROOM)),
            holding: Holding::Event,
        }
    }

    /// The whole input: the document, then nothing but whitespace up to
    /// the end. Returns the number of events.
    fn run(
        mut self,
        meta: &mut Meta,
        on_start: &mut OnStart<'_>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<u64, ReadError> {
        let res = self
            .document(meta, on_start, on_event)
            .and_then(|()| self.finish());
        // Whatever the scan concluded after a read error (most often "JSON
        // ends early") is a consequence of it: report the cause.
        match self.failed.take() {
            Some((e, offset)) => Err(ReadError::decode(e, offset, self.events)),
            None => res.map(|()| self.events),
        }
    }

    fn offset(&self, i: usize) -> u64 {
        self.base + i as u64
    }

    /// Reads more input, keeping `buf[keep..end]`. Existing indices move
    /// left by the returned [`Refill::shift`] (subtract it from any index
    /// ≥ `keep`), also when [`Refill::more`] is false (end of input).
    fn refill(&mut self, keep: usize) -> Result<Refill, ReadError> {
        self.refill_holding(keep, Some(keep))
    }

    /// [`Scanner::refill`] while a value that started at `value_start`
    /// (≥ `keep`) is being held, all of it up to the end of the buffer:
    /// fails once that value is over the limit, so the buffer never grows
    /// past `limit` + [`HEADROOM`]. `None`: the caller checked itself.
    fn refill_holding(
        &mut self,
        keep: usize,
        value_start: Option<usize>,
    ) -> Result<Refill, ReadError> {
        // Checked before the end of input too, so that a value cut by the
        // end is reported the same way however the input was chunked.
        if let Some(start) = value_start {
            if self.end - start > self.cap() {
                return Err(self.too_large(start));
            }
        }
        if self.eof {
            return Ok(Refill {
                shift: 0,
                more: false,
            });
        }
        let shift = keep;
        if shift > 0 {
            self.buf.copy_within(keep..self.end, 0);
            self.end -= shift;
            self.pos -= shift.min(self.pos);
            self.base += shift as u64;
        }
        if self.end == self.buf.len() {
            if self.buf.len() >= self.max_buf {
                // Unreachable while callers hold at most one value and a
                // separator; kept as an error rather than unbounded growth.
                return Err(self.too_large(value_start.unwrap_or(keep) - shift));
            }
            let n = (self.buf.len() * 2).min(self.max_buf);
            self.buf.resize(n, 0);
        }
        let more = self.read_more()?;
        Ok(Refill { shift, more })
    }

    /// One read into the free end of the buffer; false at end of input.
    fn read_more(&mut self) -> Result<bool, ReadError> {
        loop {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.eof = true;
                    self.failed = Some((e, self.offset(self.end)));
                    return Ok(false);
                }
            }
        }
    }

    /// The most bytes the value being held may have: the limit, except
    /// that a top-level key may always have [`KEY_CAP`] (a limit set below
    /// the length of `"traceEvents"` must still let the events be read).
    fn cap(&self) -> usize {
        match self.holding {
            Holding::Key => self.limit.max(KEY_CAP),
            _ => self.limit,
        }
    }

    /// The error for a held value starting at `start` that is over the limit.
    fn too_large(&self, start: usize) -> ReadError {
        let (offset, events, limit) = (self.offset(start), self.events, self.cap() as u64);
        match &self.holding {
            Holding::Event => ReadError::EventTooLarge {
                offset,
                events,
                limit,
            },
            Holding::Key => ReadError::ValueTooLarge {
                key: "(a key)".into(),
                offset,
                events,
                limit,
            },
            Holding::Value(key) => ReadError::ValueTooLarge {
                key: clip_str(key),
                offset,
                events,
                limit,
            },
        }
    }

    /// Skips whitespace and returns the next byte without consuming it.
    /// Whitespace is dropped as it is passed, never held.
    fn peek(&mut self) -> Result<Option<u8>, ReadError> {
        loop {
            let ws = self.buf[self.pos..self.end]
                .iter()
                .position(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'));
            match ws {
                Some(k) => {
                    self.pos += k;
                    return Ok(Some(self.buf[self.pos]));
                }
                None => self.pos = self.end,
            }
            if !self.refill(self.pos)?.more {
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
            Some(b) => Err(self.unexpected(what, b)),
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

    /// "expected X, found `b`" at the current position.
    fn unexpected(&self, what: &str, b: u8) -> ReadError {
        self.syntax(format!("expected {what}, found `{}`", show_byte(b)))
    }

    fn truncated(&self) -> ReadError {
        ReadError::Truncated {
            offset: self.offset(self.end),
            events: self.events,
        }
    }

    /// Reads until `n` bytes from `pos` on are buffered, or the input ends
    /// (so what is shown of them does not depend on read sizes).
    fn fill_to(&mut self, n: usize) -> Result<(), ReadError> {
        while self.end - self.pos < n {
            if !self.refill(self.pos)?.more {
                break;
            }
        }
        Ok(())
    }

    /// Skips a UTF-8 byte-order mark at the very start (some editors and
    /// Windows tools write one; offsets still count its three bytes).
    fn skip_bom(&mut self) -> Result<(), ReadError> {
        self.fill_to(BOM.len())?;
        if self.buf[self.pos..self.end].starts_with(BOM) {
            self.pos += BOM.len();
        }
        Ok(())
    }

    fn document(
        &mut self,
        meta: &mut Meta,
        on_start: &mut OnStart<'_>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<(), ReadError> {
        self.skip_bom()?;
        match self.peek()? {
            Some(b'{') => self.pos += 1,
            // Chrome's "JSON Array Format": the events without a wrapper.
            Some(b'[') => {
                self.pos += 1;
                meta.has_events = true;
                on_start(meta);
                return self.events_array(on_event);
            }
            Some(b) => return Err(self.unexpected("`{`", b)),
            None if self.offset(self.end) == 0 => return Err(ReadError::Empty),
            None => {
                return Err(ReadError::OnlyWhitespace {
                    bytes: self.offset(self.end),
                })
            }
        }
        if self.peek()? == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.member(meta, on_start, on_event)?;
            match self.peek()? {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b) => return Err(self.unexpected("`,` or `}`", b)),
                None => return Err(self.truncated()),
            }
        }
    }

    /// One `"key": value` of the top-level object.
    fn member(
        &mut self,
        meta: &mut Meta,
        on_start: &mut OnStart<'_>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<(), ReadError> {
        let key = self.key()?;
        self.expect(b':', "`:`")?;
        if key == "traceEvents" && meta.has_events {
            meta.notes.push(format!(
                "a second \"traceEvents\" key at byte {}: its events are not read (the first array is the trace; a JSON parser that keeps the last key would read the other one)",
                self.offset(self.pos)
            ));
        }
        if key == "traceEvents" && !meta.has_events {
            return match self.peek()? {
                Some(b'[') => {
                    self.pos += 1;
                    meta.has_events = true;
                    on_start(meta);
                    self.events_array(on_event)
                }
                Some(_) => Err(self.syntax("\"traceEvents\" is not an array".into())),
                None => Err(self.truncated()),
            };
        }
        if Meta::reads(&key) {
            self.holding = Holding::Value(key);
            let (s, e) = self.value(true)?;
            if let Holding::Value(key) = &self.holding {
                meta.absorb(key, &self.buf[s..e]);
            }
            self.pos = e;
        } else if matches!(self.peek()?, Some(b) if !matches!(b, b'{' | b'[' | b'"')) {
            // A number or literal nobody reads: short, so it is held and
            // checked (`"x": tru` is not JSON, whoever reads it).
            self.holding = Holding::Value(key);
            let (s, e) = self.value(true)?;
            if serde_json::from_slice::<serde::de::IgnoredAny>(&self.buf[s..e]).is_err() {
                let shown = clip(&self.buf[s..e]);
                return Err(self.syntax(format!("`{shown}` is not a JSON value")));
            }
            self.pos = e;
        } else if matches!(self.peek()?, Some(b'{' | b'[')) {
            // Nobody reads it: pass over it without holding it, whatever
            // its size (a second "traceEvents", Chrome's systemTraceEvents),
            // checking that it is JSON on the way.
            self.skip_validated()?;
        } else {
            let (_, e) = self.value(false)?;
            self.pos = e;
        }
        Ok(())
    }

    /// Passes over the array or object at `self.pos` without holding it,
    /// validating it as JSON piece by piece.
    fn skip_validated(&mut self) -> Result<(), ReadError> {
        let mut v = super::validate::Validator::default();
        loop {
            match v.feed(&self.buf[self.pos..self.end]) {
                Ok(Some(n)) => {
                    self.pos += n;
                    return Ok(());
                }
                Ok(None) => self.pos = self.end,
                Err((k, why)) => {
                    self.pos += k;
                    return Err(self.syntax(format!(
                        "a top-level value that is not read is not JSON either: {why}"
                    )));
                }
            }
            if !self.refill(self.pos)?.more {
                return Err(self.truncated());
            }
        }
    }

    /// Reads an object key (a JSON string) and decodes it.
    fn key(&mut self) -> Result<String, ReadError> {
        match self.peek()? {
            Some(b'"') => {}
            Some(b) => return Err(self.unexpected("a key", b)),
            None => return Err(self.truncated()),
        }
        self.holding = Holding::Key;
        let (s, e) = self.value(true)?;
        let k = serde_json::from_slice::<String>(&self.buf[s..e]).map_err(|err| {
            let msg = super::event::serde_message(&err);
            self.syntax(format!("bad key: {msg}"))
        })?;
        self.pos = e;
        Ok(k)
    }

    fn events_array(&mut self, on_event: &mut OnEvent<'_>) -> Result<(), ReadError> {
        self.holding = Holding::Event;
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
                        msg: format!("expected an event object, found `{}`", show_byte(b)),
                    })
                }
                None => return Err(self.truncated()),
            }
            let (s, e) = self.value(true)?;
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
                Some(b) => return Err(self.unexpected("`,` or `]` after an event", b)),
                None => return Err(self.truncated()),
            }
        }
    }

    /// After the document: whitespace up to the end of the input, read to
    /// the end even when there is a lot of it (that read is what checks
    /// the gzip trailers), and nothing else.
    fn finish(&mut self) -> Result<(), ReadError> {
        let Some(b) = self.peek()? else {
            return Ok(());
        };
        self.fill_to(SHOW)?;
        let shown = clip(&self.buf[self.pos..self.end.min(self.pos + SHOW)]);
        let found = match b {
            b'{' | b'[' => format!("a second JSON document? `{shown}`"),
            _ => format!("`{shown}`"),
        };
        Err(ReadError::TrailingData {
            offset: self.offset(self.pos),
            events: self.events,
            found,
        })
    }

    /// Finds the extent of the JSON value starting at `self.pos` (after
    /// whitespace). Returns `(start, end)` indices into `buf`, valid until
    /// the next refill; `self.pos` is set to `start`.
    ///
    /// With `hold`, the whole value stays in the buffer (and may be at
    /// most `limit` bytes); without, it is only passed over and `start` is
    /// meaningless.
    fn value(&mut self, hold: bool) -> Result<(usize, usize), ReadError> {
        let first = match self.peek()? {
            Some(b) => b,
            None => return Err(self.truncated()),
        };
        let mut i = self.pos + 1;
        match first {
            b'{' | b'[' => self.scan_container(&mut i, hold)?,
            b'"' => self.scan_string(&mut i, hold)?,
            _ => self.scan_scalar(&mut i, hold)?,
        }
        if hold && i - self.pos > self.cap() {
            return Err(self.too_large(self.pos));
        }
        Ok((self.pos, i))
    }

    /// Where a refill must keep from while scanning at `i`: the value's
    /// start when it is held, else just the scan position.
    fn keep_from(&self, i: usize, hold: bool) -> usize {
        if hold {
            self.pos
        } else {
            i
        }
    }

    /// A scalar (number, literal, or junk): runs until a delimiter.
    fn scan_scalar(&mut self, i: &mut usize, hold: bool) -> Result<(), ReadError> {
        loop {
            while *i < self.end
                && !matches!(
                    self.buf[*i],
                    b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'
                )
            {
                *i += 1;
            }
            if *i < self.end {
                return Ok(());
            }
            let r = self.refill(self.keep_from(*i, hold))?;
            *i -= r.shift;
            if !r.more {
                return Ok(());
            }
        }
    }

    /// Scans a string whose opening quote is already behind `*i`; leaves
    /// `*i` just past the closing quote.
    fn scan_string(&mut self, i: &mut usize, hold: bool) -> Result<(), ReadError> {
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
            let r = self.refill(self.keep_from(*i, hold))?;
            *i -= r.shift;
            if !r.more {
                return Err(self.truncated());
            }
        }
    }

    /// Scans an object or array to its matching close. Brackets and braces
    /// are counted together: in valid JSON they balance, and the event's
    /// own parse reports anything invalid.
    fn scan_container(&mut self, i: &mut usize, hold: bool) -> Result<(), ReadError> {
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
                            self.scan_string(i, hold)?;
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
            let r = self.refill(self.keep_from(*i, hold))?;
            *i -= r.shift;
            if !r.more {
                return Err(self.truncated());
            }
        }
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
    use crate::trace::{EventPos, Meta, Prefilter, ReadError, ReadOptions};

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

    /// Events as (index, offset, length), the outcome, the buffer's size.
    type Limited = (Vec<(u64, u64, usize)>, Result<u64, ReadError>, usize);

    /// Scans with a limit, byte-wise or with the block scanner, through
    /// reads of `chunk` bytes; returns the events' (index, offset, len),
    /// the outcome, and the largest the buffer got.
    fn scan_limited(doc: &[u8], limit: u64, fast: bool, chunk: usize) -> Limited {
        struct Tiny<'a>(&'a [u8], usize);
        impl Read for Tiny<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(self.1).min(out.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let all = Prefilter::all();
        let opts = ReadOptions::with_max_event_bytes(limit);
        let mut s = Scanner::new(Tiny(doc, chunk), &all, &opts);
        s.fast = fast;
        let mut seen = Vec::new();
        let mut meta = Meta::default();
        let res = s
            .document(&mut meta, &mut |_| {}, &mut |raw, at| {
                seen.push((at.index, at.offset, raw.len()));
                Ok(())
            })
            .and_then(|_| s.finish())
            .map(|_| s.events);
        assert!(s.failed.is_none());
        (seen, res, s.buf.len())
    }

    fn events_doc(sizes: &[usize], sep: &str) -> Vec<u8> {
        let evs: Vec<String> = sizes
            .iter()
            .map(|&n| format!("{{\"name\": \"{}\"}}", "x".repeat(n - 12)))
            .collect();
        format!("{{\"traceEvents\": [{}]}}", evs.join(sep)).into_bytes()
    }

    #[test]
    fn events_up_to_the_limit_pass_and_one_byte_more_fails() {
        for fast in [false, true] {
            for chunk in [1 << 20, 7] {
                let doc = events_doc(&[100, 300, 100], ", ");
                let (seen, res, _) = scan_limited(&doc, 300, fast, chunk);
                assert_eq!(res.unwrap(), 3);
                assert_eq!(
                    seen.iter().map(|e| e.2).collect::<Vec<_>>(),
                    [100, 300, 100]
                );
                let (seen, res, _) = scan_limited(&doc, 299, fast, chunk);
                assert_eq!(seen.len(), 1, "fast {fast} chunk {chunk}");
                match res {
                    Err(ReadError::EventTooLarge {
                        offset,
                        events,
                        limit,
                    }) => {
                        assert_eq!((offset, events, limit), (119, 1, 299));
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
    }

    #[test]
    fn limits_smaller_than_a_block_work() {
        // Events of 2 to 9 bytes, far more than a block of them in a row.
        let evs: Vec<String> = (0..200)
            .map(|i| match i % 3 {
                0 => "{}".to_string(),
                1 => format!("{{\"a\":{}}}", i % 10),
                _ => "{\"b\":[1]}".to_string(),
            })
            .collect();
        let doc = format!("{{\"traceEvents\": [{}]}}  ", evs.join(",\n "));
        for fast in [false, true] {
            for chunk in [1 << 20, 5] {
                let (seen, res, _) = scan_limited(doc.as_bytes(), 9, fast, chunk);
                assert_eq!(res.unwrap(), 200, "fast {fast} chunk {chunk}");
                assert_eq!(seen.len(), 200);
                let (seen, res, _) = scan_limited(doc.as_bytes(), 8, fast, chunk);
                assert!(
                    matches!(res, Err(ReadError::EventTooLarge { events: 2, .. })),
                    "{res:?}"
                );
                assert_eq!(seen.len(), 2);
            }
        }
    }

    #[test]
    fn the_buffer_never_grows_far_past_the_limit() {
        // One 8 MiB event, limit 64 KiB: stops early, buffer at its start size.
        let doc = events_doc(&[100, 8 << 20], ",");
        for fast in [false, true] {
            let (seen, res, buf) = scan_limited(&doc, 64 << 10, fast, 1 << 16);
            assert_eq!(seen.len(), 1);
            assert!(
                matches!(res, Err(ReadError::EventTooLarge { events: 1, .. })),
                "{res:?}"
            );
            assert_eq!(buf, BUF);
        }
        // Limit 3 MiB: the buffer grows to the limit and its headroom, no more.
        let (_, res, buf) = scan_limited(&doc, 3 << 20, true, 1 << 16);
        assert!(
            matches!(res, Err(ReadError::EventTooLarge { .. })),
            "{res:?}"
        );
        assert!(buf <= (3 << 20) + HEADROOM, "{buf}");
    }

    #[test]
    fn a_cut_event_over_the_limit_is_too_large_however_it_is_read() {
        let mut doc = events_doc(&[100, 500], ",");
        doc.truncate(doc.len() - 100);
        for fast in [false, true] {
            for chunk in [1 << 20, 1, 13] {
                let (_, res, _) = scan_limited(&doc, 300, fast, chunk);
                assert!(
                    matches!(
                        res,
                        Err(ReadError::EventTooLarge {
                            events: 1,
                            offset: 118,
                            ..
                        })
                    ),
                    "{res:?}"
                );
                let (_, res, _) = scan_limited(&doc, 450, fast, chunk);
                assert!(
                    matches!(res, Err(ReadError::Truncated { events: 1, .. })),
                    "{res:?}"
                );
            }
        }
    }

    #[test]
    fn whitespace_between_events_is_not_held() {
        let pad = " \n".repeat(3 << 20);
        let doc = events_doc(&[100, 100], &format!("{pad},{pad}"));
        let doc = [&doc[..], pad.as_bytes()].concat();
        for fast in [false, true] {
            let (seen, res, buf) = scan_limited(&doc, 200, fast, 1 << 16);
            assert_eq!(res.unwrap(), 2);
            assert_eq!(seen[1].1, 118 + 2 * pad.len() as u64);
            assert_eq!(buf, BUF);
        }
        // Inside an event it counts.
        let doc = format!("{{\"traceEvents\": [{{\"a\": 1,{pad}\"b\": 2}}]}}");
        let (_, res, _) = scan_limited(doc.as_bytes(), 1 << 20, true, 1 << 16);
        assert!(
            matches!(res, Err(ReadError::EventTooLarge { .. })),
            "{res:?}"
        );
    }

    #[test]
    fn top_level_values_nobody_reads_are_skipped_at_any_size() {
        let big = "y".repeat(2 << 20);
        let doc = format!(
            "{{\"systemTraceEvents\": \"{big}\", \"other\": [[\"{big}\", {{\"k\": 1}}]], \"traceEvents\": [{{}}], \"traceEvents\": [\"{big}\"]}}"
        );
        let (seen, res, buf) = scan_limited(doc.as_bytes(), 1000, true, 4096);
        assert_eq!(res.unwrap(), 1);
        assert_eq!(seen.len(), 1);
        assert_eq!(buf, BUF);
        // One it reads is held, so the limit applies.
        let doc = format!("{{\"deviceProperties\": [\"{big}\"], \"traceEvents\": []}}");
        let (_, res, _) = scan_limited(doc.as_bytes(), 1000, true, 4096);
        match res {
            Err(e @ ReadError::ValueTooLarge { .. }) => {
                assert!(
                    e.to_string().contains("\"deviceProperties\" at byte 21"),
                    "{e}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_whitespace_may_follow_the_document() {
        let ok = b"{\"traceEvents\": []} \n\t\r  ";
        assert!(scan_limited(ok, 100, true, 3).1.is_ok());
        for (tail, want) in [
            (&b"x"[..], "`x`"),
            (b"\0\0", "`\\0\\0`"),
            (
                b"{\"traceEvents\": []}",
                "a second JSON document? `{\"traceEvents\": []}`",
            ),
        ] {
            let doc = [&ok[..], tail].concat();
            match scan_limited(&doc, 100, true, 3).1 {
                Err(e @ ReadError::TrailingData { .. }) => {
                    let msg = e.to_string();
                    assert!(
                        msg.contains(&format!("at byte {}: {want}", ok.len())),
                        "{msg}"
                    );
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn byte_order_mark_and_blank_input() {
        let doc = b"\xef\xbb\xbf {\"traceEvents\": [{\"ph\": \"B\"}, {\"ph\": \"E\"}]}";
        for chunk in [1, 2, 1 << 20] {
            let (seen, res, _) = scan_limited(doc, 100, true, chunk);
            assert_eq!(res.unwrap(), 2);
            assert_eq!(seen[0].1, 21);
        }
        assert!(matches!(
            scan_limited(b"", 100, true, 1).1,
            Err(ReadError::Empty)
        ));
        let blank = scan_limited(b" \n\n ", 100, true, 1).1.unwrap_err();
        assert_eq!(blank.to_string(), "no events: only whitespace (4 bytes)");
        let bom_only = scan_limited(b"\xef\xbb\xbf", 100, true, 1).1;
        assert!(matches!(
            bom_only,
            Err(ReadError::OnlyWhitespace { bytes: 3 })
        ));
    }

    #[test]
    fn unexpected_bytes_are_shown_escaped() {
        let (_, res, _) = scan_limited(b"{\"traceEvents\": [{}\0]}", 100, true, 64);
        let msg = res.unwrap_err().to_string();
        assert!(msg.contains("found `\\0`"), "{msg}");
        let (_, res, _) = scan_limited(b"\xff", 100, true, 64);
        let msg = res.unwrap_err().to_string();
        assert!(msg.contains("found `\\xff`"), "{msg}");
    }

    #[test]
    fn every_cut_with_every_chunking_is_an_error_without_panic() {
        // Regression: a refill that shifted the buffer and then met the end
        // of input left the scan position stale (found by the seeded
        // mutation test).
        let doc = format!("{DOC} ");
        for cut in 0..doc.len() {
            for chunk in [1, 2, 3, 5, 64] {
                let res = events_of(&doc[..cut], chunk);
                let full = doc[..cut].trim_end().len() == DOC.len();
                assert_eq!(res.is_ok(), full, "cut {cut} chunk {chunk}: {res:?}");
            }
        }
    }
}
