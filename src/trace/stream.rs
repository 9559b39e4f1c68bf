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

use super::{Meta, ReadError};
use memchr::{memchr2, memchr3};
use std::io::{self, Read};

/// Initial read-buffer size; it grows only if a single event is larger.
const BUF: usize = 1 << 20;

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
    on_event: &mut dyn FnMut(&[u8], EventPos) -> Result<(), ReadError>,
) -> Result<u64, ReadError> {
    let mut s = Scanner::new(src);
    s.document(meta, on_event)?;
    Ok(s.events)
}

struct Scanner<R> {
    src: R,
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

impl<R: Read> Scanner<R> {
    fn new(src: R) -> Self {
        Scanner {
            src,
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

    fn document(
        &mut self,
        meta: &mut Meta,
        on_event: &mut dyn FnMut(&[u8], EventPos) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
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

    fn events_array(
        &mut self,
        on_event: &mut dyn FnMut(&[u8], EventPos) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
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
            on_event(&self.buf[s..e], at)?;
            self.events += 1;
            self.pos = e;
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
