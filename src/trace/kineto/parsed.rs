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
//! Turning it back costs a char-boundary check of each string: the worker
//! checks its batch's bytes as UTF-8 once, whole, and hands them on as a
//! `String` (without `unsafe`); a batch that is not all UTF-8 has each
//! string checked again, as before.

use super::super::event::{Args, Event, MemoryArgs};
use crate::model::{Ns, ThreadPart};
use std::borrow::Cow;
use std::ops::Range;

/// A string of a parsed event (16 B: a batch is far below 4 GiB, and a
/// span that is not is kept owned).
#[derive(Debug)]
enum Span {
    /// Bytes `[start, end)` of the batch (the empty string is `In(0, 0)`).
    In(u32, u32),
    /// A string the parser built (it had escapes).
    Owned(Box<str>),
}

impl Span {
    /// Where `borrowed` sits in `bytes`; a copy when it is not there (a
    /// string the parser built, with escapes).
    fn of(borrowed: &str, bytes: &[u8]) -> Span {
        if borrowed.is_empty() {
            return Span::In(0, 0);
        }
        // A borrowed string is a slice of `bytes` (the parser borrows from
        // the event's bytes, a slice of the batch); its distance from the
        // start is its offset. Anything else (a string the parser built,
        // a constant) is copied.
        let start = (borrowed.as_ptr() as usize).wrapping_sub(bytes.as_ptr() as usize);
        match start.checked_add(borrowed.len()) {
            Some(end) if end <= bytes.len() => match (u32::try_from(start), u32::try_from(end)) {
                (Ok(a), Ok(b)) => Span::In(a, b),
                _ => Span::Owned(borrowed.into()),
            },
            _ => Span::Owned(borrowed.into()),
        }
    }

    /// The string back; `None` only if the span is not text of `src`
    /// (it always is: the caller then parses the event again). An owned
    /// string is borrowed from the span, which the caller keeps until the
    /// event is delivered.
    fn text<'a>(&'a self, src: Src<'a>) -> Option<Cow<'a, str>> {
        match self {
            Span::In(a, b) => src.get(*a as usize..*b as usize).map(Cow::Borrowed),
            Span::Owned(s) => Some(Cow::Borrowed(s)),
        }
    }
}

/// A batch's bytes as the feeder reads its events' strings back: text a
/// worker checked whole (a span is then a slice, checked only for char
/// boundaries), or bytes whose spans are each checked (a batch with a byte
/// that is not UTF-8 in it, or the tests').
#[derive(Debug, Clone, Copy)]
pub(super) enum Src<'a> {
    Text(&'a str),
    Bytes(&'a [u8]),
}

impl<'a> Src<'a> {
    /// A batch's checked `text`, else (empty: not checked) its `bytes`.
    pub(super) fn of(text: &'a str, bytes: &'a [u8]) -> Src<'a> {
        if text.is_empty() {
            Src::Bytes(bytes)
        } else {
            Src::Text(text)
        }
    }

    /// The bytes, checked or not.
    pub(super) fn raw(self) -> &'a [u8] {
        match self {
            Src::Text(t) => t.as_bytes(),
            Src::Bytes(b) => b,
        }
    }

    fn get(self, r: Range<usize>) -> Option<&'a str> {
        match self {
            Src::Text(t) => t.get(r),
            Src::Bytes(b) => std::str::from_utf8(b.get(r)?).ok(),
        }
    }
}

/// An event's numbers packed: `vals[i]` is present when bit `i` of `has`
/// is set (`grid` and `block` by their first slot's bit). 104 B where the
/// `Option`s took 168: a batch's parsed events are held while it waits in
/// its lane, so this is memory times the parse workers.
#[derive(Debug, Clone, Copy)]
struct Numbers {
    vals: [i64; 12],
    has: u16,
    finished: Option<bool>,
}

/// The slots of [`Numbers::vals`].
const TS: usize = 0;
const DUR: usize = 1;
const EXTERNAL_ID: usize = 2;
const CORRELATION: usize = 3;
const REGISTERS: usize = 4;
const SHARED_MEMORY: usize = 5;
const GRID: usize = 6;
const BLOCK: usize = 9;

/// Bits of [`Numbers::has`] past the slots: `args.device` equals the
/// event's pid, `args.stream` its tid (Kineto writes them so on every GPU
/// activity: the value is then the thread part, and nothing is stored).
const DEVICE_IS_PID: u16 = 1 << 12;
const STREAM_IS_TID: u16 = 1 << 13;

impl Numbers {
    fn of(ev: &Event<'_>) -> Numbers {
        let mut n = Numbers {
            vals: [0; 12],
            has: 0,
            finished: ev.args.finished,
        };
        let a = &ev.args;
        for (slot, v) in [
            (TS, ev.ts.map(|t| t.0)),
            (DUR, ev.dur.map(|d| d.0)),
            (EXTERNAL_ID, a.external_id),
            // A correlation past i64 is kept in `Extra` instead.
            (
                CORRELATION,
                a.correlation.and_then(|c| i64::try_from(c).ok()),
            ),
            (REGISTERS, a.registers),
            (SHARED_MEMORY, a.shared_memory),
        ] {
            n.put(slot, v);
        }
        for (slot, v) in [(GRID, a.grid), (BLOCK, a.block)] {
            if let Some(v) = v {
                n.vals[slot..slot + 3].copy_from_slice(&v);
                n.has |= 1 << slot;
            }
        }
        if a.device.is_some_and(|d| ev.pid == ThreadPart::Num(d)) {
            n.has |= DEVICE_IS_PID;
        }
        if a.stream.is_some_and(|s| ev.tid == ThreadPart::Num(s)) {
            n.has |= STREAM_IS_TID;
        }
        n
    }

    fn put(&mut self, slot: usize, v: Option<i64>) {
        if let Some(v) = v {
            self.vals[slot] = v;
            self.has |= 1 << slot;
        }
    }

    fn get(&self, slot: usize) -> Option<i64> {
        (self.has & (1 << slot) != 0).then(|| self.vals[slot])
    }

    fn three(&self, slot: usize) -> Option<[i64; 3]> {
        (self.has & (1 << slot) != 0).then(|| [0, 1, 2].map(|k| self.vals[slot + k]))
    }

    /// The args, with their texts and the rarer numbers (`rare`: those
    /// of [`Extra`]), the device and stream from the thread parts when
    /// they were equal.
    fn args<'a>(
        &self,
        [input_dims, input_type, input_strides, kernel, concrete_inputs]: [Option<Cow<'a, str>>; 5],
        rare: Option<&Extra>,
        (pid, tid): (&ThreadPart, &ThreadPart),
    ) -> Args<'a> {
        let num = |p: &ThreadPart| match p {
            ThreadPart::Num(n) => Some(*n),
            ThreadPart::Str(_) => None,
        };
        Args {
            external_id: self.get(EXTERNAL_ID),
            correlation: self
                .get(CORRELATION)
                .map(i128::from)
                .or(rare.and_then(|r| r.correlation)),
            device: if self.has & DEVICE_IS_PID != 0 {
                num(pid)
            } else {
                rare.and_then(|r| r.device)
            },
            stream: if self.has & STREAM_IS_TID != 0 {
                num(tid)
            } else {
                rare.and_then(|r| r.stream)
            },
            finished: self.finished,
            grid: self.three(GRID),
            block: self.three(BLOCK),
            registers: self.get(REGISTERS),
            shared_memory: self.get(SHARED_MEMORY),
            input_dims,
            input_type,
            input_strides,
            kernel,
            concrete_inputs,
            memory: rare.map(|r| r.memory).unwrap_or_default(),
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
    /// `ts`, `dur` and the args' numbers.
    numbers: Numbers,
    /// The args' two common texts (`Input Dims`, `Input type`).
    texts: [Option<Span>; 2],
    /// The rarer ones, boxed only when present so that an event stays
    /// ≤ 256 B.
    extra: Option<Box<Extra>>,
}

/// What few events carry: the texts `Input Strides`, `kernel` (capture
/// traces, issue 57) and `Concrete Inputs` (shapes recorded, `roofline`);
/// a correlation id past i64, and a device or stream other than the pid
/// or tid (issue 59).
#[derive(Debug, Default)]
struct Extra {
    texts: [Option<Span>; 3],
    correlation: Option<i128>,
    device: Option<i64>,
    stream: Option<i64>,
    /// A `[memory]` instant's figures.
    memory: MemoryArgs,
}

impl Extra {
    /// The rare fields of `ev`, if it has any.
    fn of(ev: &Event<'_>, bytes: &[u8]) -> Option<Box<Extra>> {
        let a = &ev.args;
        let x = Extra {
            texts: [&a.input_strides, &a.kernel, &a.concrete_inputs]
                .map(|t| t.as_ref().map(|t| Span::of(t, bytes))),
            correlation: a.correlation.filter(|c| i64::try_from(*c).is_err()),
            device: a.device.filter(|d| ev.pid != ThreadPart::Num(*d)),
            stream: a.stream.filter(|s| ev.tid != ThreadPart::Num(*s)),
            memory: a.memory,
        };
        let any = x.memory.any()
            || x.texts.iter().any(Option::is_some)
            || x.correlation.is_some()
            || x.device.is_some()
            || x.stream.is_some();
        any.then(|| Box::new(x))
    }
}

impl Parsed {
    /// `ev`, parsed from a slice of `bytes`.
    pub(super) fn of(ev: &Event<'_>, bytes: &[u8]) -> Parsed {
        let a = &ev.args;
        Parsed {
            ph: Span::of(&ev.ph, bytes),
            cat: Span::of(&ev.cat, bytes),
            name: Span::of(&ev.name, bytes),
            pid: ev.pid.clone(),
            tid: ev.tid.clone(),
            numbers: Numbers::of(ev),
            texts: [&a.input_dims, &a.input_type].map(|t| t.as_ref().map(|t| Span::of(t, bytes))),
            extra: Extra::of(ev, bytes),
        }
    }

    /// The event again, borrowing from the same bytes (`src`) and from
    /// this value; `None` if a span is not text there (never, for spans
    /// made by [`Parsed::of`] from them). By reference, so that a batch's
    /// parsed events are not moved out one by one (a third of the feeder's
    /// copies, `perf`). The thread parts are cloned: a number, except the
    /// rare named process or thread.
    pub(super) fn event<'a>(&'a self, src: Src<'a>) -> Option<Event<'a>> {
        let Parsed {
            ph,
            cat,
            name,
            pid,
            tid,
            numbers,
            texts,
            extra,
        } = self;
        let text = |t: &'a Option<Span>| match t {
            Some(t) => t.text(src).map(Some),
            None => Some(None),
        };
        let (dims, types) = (text(&texts[0])?, text(&texts[1])?);
        let (strides, kernel, concrete) = match extra {
            Some(x) => (text(&x.texts[0])?, text(&x.texts[1])?, text(&x.texts[2])?),
            None => (None, None, None),
        };
        Some(Event {
            ph: ph.text(src)?,
            cat: cat.text(src)?,
            name: name.text(src)?,
            pid: pid.clone(),
            tid: tid.clone(),
            ts: numbers.get(TS).map(Ns),
            dur: numbers.get(DUR).map(Ns),
            args: numbers.args(
                [dims, types, strides, kernel, concrete],
                extra.as_deref(),
                (pid, tid),
            ),
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
        let parsed = Parsed::of(&parse_event(raw, at).unwrap(), raw);
        let back = format!("{:?}", parsed.event(Src::Bytes(raw)).unwrap());
        let parsed = Parsed::of(&parse_event(raw, at).unwrap(), raw);
        let text = std::str::from_utf8(raw).unwrap();
        let again = format!("{:?}", parsed.event(Src::Text(text)).unwrap());
        assert_eq!(back, again);
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
            br#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": -3, "dur": 0, "args": {"External id": -1, "correlation": 0, "grid": [1, 2, 3], "block": [4, 5, 6], "registers per thread": 32, "shared memory": 0}}"#,
            br#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 2, "args": {"finished": false, "Input Dims": [[1, 2], []], "Input type": ["float", ""]}}"#,
            // Issue 59: a device and stream equal to pid/tid (stored as a
            // bit), others (stored apart), a correlation past u64.
            br#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "args": {"device": 0, "stream": 7, "correlation": 18446744073709551621}}"#,
            br#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "args": {"device": 3, "stream": 9, "correlation": -170141183460469231731687303715884105728}}"#,
            br#"{"ph": "X", "cat": "kernel", "name": "k", "pid": "Spans", "tid": 7, "ts": 1, "args": {"device": 0, "correlation": 9223372036854775808}}"#,
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
        let p = Parsed::of(&ev, raw);
        assert!(matches!(p.name, Span::In(a, b) if &raw[a as usize..b as usize] == b"kernel_a"));
        // Other bytes than the ones parsed: refused, not misread.
        assert!(Parsed::of(
            &parse_event(
                raw,
                EventPos {
                    index: 0,
                    offset: 0
                }
            )
            .unwrap(),
            raw
        )
        .event(Src::Bytes(&raw[..5]))
        .is_none());
    }
}

#[cfg(test)]
mod size {
    /// What a batch's parsed events hold per event (see [`super::Numbers`]);
    /// the rarer texts (`Input Strides`, `kernel`, `Concrete Inputs`) are
    /// boxed, so a trace without them pays 8 B, not three spans.
    #[test]
    fn a_parsed_event_is_small() {
        assert!(
            std::mem::size_of::<super::Parsed>() <= 256,
            "{}",
            std::mem::size_of::<super::Parsed>()
        );
    }
}
