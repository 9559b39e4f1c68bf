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
mod tests;
