//! An event parsed on a worker thread and delivered later, on the thread
//! that feeds the analyses: the [`Event`] with its strings held as spans of
//! its batch's bytes instead of borrows.
//!
//! ```text
//!  worker:  parse_event(raw) ─► Event<'raw> ─► Parsed { ph: In(3..4), name: In(40..95), … }
//!                                              (a string with escapes is Owned, as serde made it)
//!  feeder:  Parsed + the batch's bytes ─► Event<'bytes> ─► on_event
//! ```
//!
//! An [`Event`] borrows the text it was parsed from, so it cannot cross a
//! channel with the buffer it points into; a span is an offset that can.
//! Turning it back costs a UTF-8 check of the three short strings (the
//! bytes were checked when parsed; checking again keeps this code free of
//! `unsafe`), far less than the parse it saves.

use super::super::event::{Args, Event};
use crate::model::{Ns, ThreadPart};
use std::borrow::Cow;
use std::ops::Range;

/// A string of a parsed event.
#[derive(Debug)]
enum Span {
    /// Bytes of the batch (the empty string is `In(0..0)`).
    In(Range<usize>),
    /// A string the parser built (it had escapes).
    Owned(String),
}

impl Span {
    /// Where `text` sits in `bytes`; a copy when it is not there.
    fn of(text: Cow<'_, str>, bytes: &[u8]) -> Span {
        let borrowed = match text {
            Cow::Owned(s) => return Span::Owned(s),
            Cow::Borrowed(b) => b,
        };
        if borrowed.is_empty() {
            return Span::In(0..0);
        }
        // A borrowed string is a slice of `bytes` (the parser borrows from
        // the event's bytes, a slice of the batch); its distance from the
        // start is its offset. Anything else (a constant) is copied.
        let start = (borrowed.as_ptr() as usize).wrapping_sub(bytes.as_ptr() as usize);
        match start.checked_add(borrowed.len()) {
            Some(end) if end <= bytes.len() => Span::In(start..end),
            _ => Span::Owned(borrowed.to_string()),
        }
    }

    /// The string back; `None` only if the span is not text of `bytes`
    /// (it always is: the caller then parses the event again).
    fn text(self, bytes: &[u8]) -> Option<Cow<'_, str>> {
        match self {
            Span::In(r) => std::str::from_utf8(bytes.get(r)?).ok().map(Cow::Borrowed),
            Span::Owned(s) => Some(Cow::Owned(s)),
        }
    }
}

/// An [`Event`] without its borrow (see the module docs).
#[derive(Debug)]
pub(super) struct Parsed {
    ph: Span,
    cat: Span,
    name: Span,
    pid: ThreadPart,
    tid: ThreadPart,
    ts: Option<Ns>,
    dur: Option<Ns>,
    /// `args` but its two texts, which are spans here.
    args: Args<'static>,
    texts: [Option<Span>; 2],
}

impl Parsed {
    /// `ev`, parsed from a slice of `bytes`.
    pub(super) fn of(ev: Event<'_>, bytes: &[u8]) -> Parsed {
        let (args, texts) = ev.args.split_texts();
        Parsed {
            ph: Span::of(ev.ph, bytes),
            cat: Span::of(ev.cat, bytes),
            name: Span::of(ev.name, bytes),
            pid: ev.pid,
            tid: ev.tid,
            ts: ev.ts,
            dur: ev.dur,
            args,
            texts: texts.map(|t| t.map(|t| Span::of(t, bytes))),
        }
    }

    /// The event again, borrowing from the same `bytes`; `None` if a span
    /// is not text there (never, for spans made by [`Parsed::of`] from them).
    pub(super) fn into_event(self, bytes: &[u8]) -> Option<Event<'_>> {
        let [dims, types] = self.texts.map(|t| t.map(|t| t.text(bytes)));
        let (dims, types) = (
            dims.map_or(Some(None), |t| t.map(Some)),
            types.map_or(Some(None), |t| t.map(Some)),
        );
        Some(Event {
            ph: self.ph.text(bytes)?,
            cat: self.cat.text(bytes)?,
            name: self.name.text(bytes)?,
            pid: self.pid,
            tid: self.tid,
            ts: self.ts,
            dur: self.dur,
            args: self.args.with_texts([dims?, types?]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::event::parse_event;
    use super::*;
    use crate::trace::EventPos;

    fn round_trip(raw: &[u8]) -> (String, String) {
        let at = EventPos {
            index: 0,
            offset: 0,
        };
        let direct = format!("{:?}", parse_event(raw, at).unwrap());
        let parsed = Parsed::of(parse_event(raw, at).unwrap(), raw);
        let back = format!("{:?}", parsed.into_event(raw).unwrap());
        (direct, back)
    }

    #[test]
    fn events_come_back_the_same() {
        for raw in [
            &br#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.5, "dur": 2}"#[..],
            br#"{"ph": "X", "name": "a\"b", "pid": "Spans", "tid": "x", "ts": 1}"#,
            br#"{"ph": "i", "name": "", "args": {"External id": 4, "correlation": 9}}"#,
            br#"{}"#,
            br#"{"ph": "X", "ts": 1, "name": 12, "cat": null}"#,
        ] {
            let (a, b) = round_trip(raw);
            assert_eq!(a, b, "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn spans_point_into_the_bytes() {
        let raw = br#"{"ph": "X", "name": "kernel_a"}"#;
        let ev = parse_event(
            raw,
            EventPos {
                index: 0,
                offset: 0,
            },
        )
        .unwrap();
        let p = Parsed::of(ev, raw);
        assert!(matches!(&p.name, Span::In(r) if &raw[r.clone()] == b"kernel_a"));
        // Other bytes than the ones parsed: refused, not misread.
        assert!(Parsed::of(
            parse_event(
                raw,
                EventPos {
                    index: 0,
                    offset: 0
                }
            )
            .unwrap(),
            raw
        )
        .into_event(&raw[..5])
        .is_none());
    }
}
