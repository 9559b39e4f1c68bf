//! The hand-written event extractor: one event's bytes → [`Event`] for the
//! common shape Kineto writes, without serde.
//!
//! serde_json deserializes every key of an event, and a kernel's `args`
//! hold about fifteen (grid, block, occupancy, …) of which torchtrace reads
//! one; launch calls and GPU activities are ~22 % of a vLLM trace's events
//! and every analysis that builds the correlation ledger parses them all.
//! This extractor reads the fields [`Event`] has (`ph`, `cat`, `name`,
//! `pid`, `tid`, `ts`, `dur`, `args.{External id, correlation, finished,
//! grid, block, registers per thread, shared memory}`)
//! and passes over everything else, still checking that it is JSON.
//!
//! It is deliberately narrow: it answers `None` for anything it is not
//! sure to read exactly as [`super::event::parse_event`] (serde_json) does,
//! and the caller then uses that generic path, which also produces every
//! error message. So it never accepts what serde would refuse, and never
//! reads a value differently:
//!
//! ```text
//!  extract(raw) ── Some(event) ─────────────────────────► same Event as serde
//!       │
//!       └─ None: invalid UTF-8, a backslash or a control byte in a string, a
//!          duplicate known key, a number that is not a plain integer where
//!          an id is read (or has > 18 digits, or is -0), a quoted or bad
//!          time, `ph`/`cat`/`name` not a string, a `finished` that is not
//!          a boolean, nesting deeper than 64, any JSON syntax error
//!                      ──► serde_json (generic path) ──► Event or ReadError
//! ```
//!
//! Two shortcuts follow Kineto's own writing, each falling back to the
//! general reading when the text differs: the next key is guessed to be
//! the one Kineto writes after the last ([`KeyOrder`]: one 16-byte compare
//! of `"key": ` instead of a search for the closing quote and a match),
//! and a time's plain `<digits>.<3 digits>` is read into ns while the
//! cursor passes over it. With them the extractor takes 156 ns an event
//! of the scaled benchmark trace (was 207) and 194 of a vLLM sample (was
//! 250): `cargo run --release --example extract FILE`, BENCHMARKS.md.
//!
//! `tests/it/extract_props.rs` checks the two paths agree on random events and
//! on every event of the real fixture traces.

use super::super::event::{Args, Event};
use super::super::time::{parse_us, plain_us_prefix, TimeError};
use crate::model::{Ns, ThreadPart};
use std::borrow::Cow;

/// Deepest nesting passed over; deeper values go to the generic path.
const MAX_DEPTH: u32 = 64;

/// The most digits an id may have here (i64 holds any 18-digit integer).
const MAX_INT_DIGITS: usize = 18;

/// Reads `raw` (one complete event, `{` to `}`) when it has the common
/// shape; `None` sends it to the generic path.
pub fn extract(raw: &[u8]) -> Option<Event<'_>> {
    let mut ev = Event::empty();
    fill(raw, &mut ev)?;
    Some(ev)
}

/// [`extract`] into `ev`, which it resets first: the readers reuse one
/// event from event to event. The event is ~340 B, and building it from a
/// struct of the fields read, then moving it out through `Option`s and
/// `Result`s, was most of the reading thread's `memcpy` (`perf`, `ops` on
/// two cores: 8.6 % of all samples). On `None`, `ev` holds part of the
/// event: the caller parses it again.
pub fn extract_into<'a>(raw: &'a [u8], ev: &mut Event<'a>) -> Option<()> {
    ev.reset();
    fill(raw, ev)
}

/// Reads `raw` into `ev`, which holds [`Event::empty`]'s fields.
fn fill<'a>(raw: &'a [u8], ev: &mut Event<'a>) -> Option<()> {
    // One UTF-8 check of the whole event (stricter than serde, which does
    // not check strings it skips); substrings are then `&str` for free.
    // simdutf8's SIMD check: std's took ~2 % of `hierarchy`'s samples.
    let text = simdutf8::basic::from_utf8(raw).ok()?;
    let mut c = Cursor {
        s: text,
        b: raw,
        i: 0,
    };
    let times = c.event(ev)?;
    (c.i == raw.len()).then_some(())?;
    ev.ts = times.ts.map(Time::ns).transpose().ok()?;
    ev.dur = times.dur.map(Time::ns).transpose().ok()?;
    Some(())
}

/// `ts` and `dur` as written (`None`: absent or `null`, as for serde's
/// `Option` fields); the extractor reads them into ns once the event is
/// known to be well formed.
#[derive(Default)]
struct Times<'a> {
    ts: Option<Time<'a>>,
    dur: Option<Time<'a>>,
}

/// A time as the cursor met it: its value in ns when it had the plain
/// shape [`Cursor::plain_time`] reads while passing over it, else its text
/// for [`parse_us`].
enum Time<'a> {
    Value(i64),
    Text(&'a str),
}

impl Time<'_> {
    fn ns(self) -> Result<Ns, TimeError> {
        match self {
            Time::Value(ns) => Ok(Ns(ns)),
            Time::Text(t) => parse_us(t),
        }
    }
}

/// [`once`] for a field with a default (`ph`, `cat`, `name`, `pid`,
/// `tid`): absent or `null` leaves the default.
#[inline(always)]
fn once_or_default<T>(slot: &mut T, seen: &mut u32, bit: u32, v: Option<T>) -> Option<()> {
    (*seen & bit == 0).then_some(())?;
    *seen |= bit;
    if let Some(v) = v {
        *slot = v;
    }
    Some(())
}

/// A known key seen twice is serde's "duplicate field" error: the generic
/// path reports it.
#[inline(always)]
fn once<T>(slot: &mut Option<T>, seen: &mut u32, bit: u32, v: Option<T>) -> Option<()> {
    (*seen & bit == 0).then_some(())?;
    *seen |= bit;
    *slot = v;
    Some(())
}

/// The position of the first `"`, `\` or control byte in `b`, sixteen
/// bytes at a time with SSE2 (part of every x86_64 CPU), the tail eight
/// at a time (names are tens to hundreds of bytes: a `memchr` call per
/// string, and a second pass for the other bytes, cost more).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn special(b: &[u8]) -> Option<usize> {
    use std::arch::x86_64::*;
    let mut at = 0;
    while at + 16 <= b.len() {
        // SAFETY: SSE2 is in the x86_64 baseline; the load reads the 16
        // bytes b[at..at + 16], in bounds.
        let mask = unsafe {
            let v = _mm_loadu_si128(b.as_ptr().add(at) as *const __m128i);
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let bs = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            // Unsigned v ≤ 0x1f: min(v, 0x1f) == v.
            let low = _mm_set1_epi8(0x1f);
            let control = _mm_cmpeq_epi8(_mm_min_epu8(v, low), v);
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, bs), control)) as u32
        };
        if mask != 0 {
            return Some(at + mask.trailing_zeros() as usize);
        }
        at += 16;
    }
    special_swar(&b[at..]).map(|k| at + k)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn special(b: &[u8]) -> Option<usize> {
    special_swar(b)
}

/// [`special`] eight bytes at a time, portably.
#[inline(always)]
fn special_swar(b: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    // High bit of each byte of x that is zero (exact for the lowest one,
    // which is all that is used).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let mut chunks = b.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        // Bytes below 0x20: x − 0x20 borrows and the high bit is clear.
        let control = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        let found =
            control | zero(x ^ (ONES * u64::from(b'"'))) | zero(x ^ (ONES * u64::from(b'\\')));
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&c| c < 0x20 || c == b'"' || c == b'\\')
        .map(|k| at + k)
}

/// The keys Kineto writes in an object, in its order: the extractor
/// guesses that the next key is the one after the last it met
/// ([`Cursor::guess`]), by comparing the 16 bytes at the cursor with
/// `"key": ` (masked to its length). A key too long for 16 bytes is
/// never guessed.
struct KeyOrder<const N: usize> {
    names: [&'static str; N],
    pattern: [u128; N],
    mask: [u128; N],
    /// The length of `"key": ` (0: not guessed).
    len: [usize; N],
}

impl<const N: usize> KeyOrder<N> {
    const fn new(names: [&'static str; N]) -> Self {
        let mut pattern = [0u128; N];
        let mut mask = [0u128; N];
        let mut len = [0usize; N];
        let mut k = 0;
        while k < N {
            let name = names[k].as_bytes();
            let n = name.len() + 4;
            if n <= 16 {
                let mut bytes = [0u8; 16];
                bytes[0] = b'"';
                let mut j = 0;
                while j < name.len() {
                    bytes[1 + j] = name[j];
                    j += 1;
                }
                bytes[name.len() + 1] = b'"';
                bytes[name.len() + 2] = b':';
                bytes[name.len() + 3] = b' ';
                pattern[k] = u128::from_le_bytes(bytes);
                mask[k] = if n == 16 {
                    u128::MAX
                } else {
                    (1 << (8 * n)) - 1
                };
                len[k] = n;
            }
            k += 1;
        }
        KeyOrder {
            names,
            pattern,
            mask,
            len,
        }
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.names.iter().position(|&n| n == key)
    }
}

/// An event's members, in the order Kineto writes them.
const EVENT_KEYS: KeyOrder<8> =
    KeyOrder::new(["ph", "cat", "name", "pid", "tid", "ts", "dur", "args"]);

/// The `args` members read, in the order Kineto writes them where it
/// writes several (a kernel's; the others go by their names).
const ARGS_KEYS: KeyOrder<20> = KeyOrder::new([
    "kernel",
    "External id",
    "device",
    "stream",
    "correlation",
    "registers per thread",
    "shared memory",
    "grid",
    "block",
    "finished",
    "Input Dims",
    "Input type",
    "Input Strides",
    "Concrete Inputs",
    "Device Type",
    "Device Id",
    "Addr",
    "Bytes",
    "Total Allocated",
    "Total Reserved",
]);

struct Cursor<'a> {
    /// The event, valid UTF-8, and the same as bytes.
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Skips JSON whitespace; the next byte, if any. Kineto writes one
    /// event per line with `", "` and `": "` between members, so there is
    /// most often no whitespace or one space (every whitespace byte is
    /// ≤ `' '`): those two cases inline, before the loop (5 % of
    /// `hierarchy`'s instructions went to the loop alone).
    #[inline(always)]
    fn ws(&mut self) -> Option<u8> {
        let c = *self.b.get(self.i)?;
        if c > b' ' {
            return Some(c);
        }
        // `": "` and `", "`: one space, then the value or the key.
        if let Some(&d) = self.b.get(self.i + 1) {
            if c == b' ' && d > b' ' {
                self.i += 1;
                return Some(d);
            }
        }
        self.ws_run()
    }

    #[inline(never)]
    fn ws_run(&mut self) -> Option<u8> {
        while let Some(&c) = self.b.get(self.i) {
            match c {
                b' ' | b'\n' | b'\r' | b'\t' => self.i += 1,
                _ => return Some(c),
            }
        }
        None
    }

    /// Consumes `c` after whitespace.
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.ws()? == c).then(|| self.i += 1)
    }

    /// A string without escapes or control bytes (its content); the
    /// cursor is on its opening quote.
    #[inline(always)]
    fn string(&mut self) -> Option<&'a str> {
        let start = self.i + 1;
        let end = start + special(self.b.get(start..)?)?;
        // An escape would change the text; serde refuses control bytes.
        (self.b[end] == b'"').then_some(())?;
        self.i = end + 1;
        Some(self.between_ascii(start, end))
    }

    /// `s[start..end]` where each end is next to an ASCII byte the
    /// cursor has read (the quote before a string and the one after it,
    /// a number's first and last byte): a position beside an ASCII byte
    /// of valid UTF-8 is a char boundary, so the checks of `str::get`
    /// (≈ 2 % of the reading thread's instructions) can be left out.
    #[inline(always)]
    fn between_ascii(&self, start: usize, end: usize) -> &'a str {
        debug_assert!(start <= end && end <= self.b.len());
        debug_assert!(self.s.is_char_boundary(start) && self.s.is_char_boundary(end));
        // SAFETY: `s` is valid UTF-8 and `b` its bytes; `start ≤ end ≤
        // len` (the callers found `end` at or after `start`, inside `b`),
        // and both are char boundaries (above).
        unsafe { self.s.get_unchecked(start..end) }
    }

    /// A JSON number's text, its grammar checked.
    fn number(&mut self) -> Option<&'a str> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.some_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.some_digits()?;
        }
        Some(self.between_ascii(start, self.i))
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let from = self.i;
        self.digits();
        (self.i > from).then_some(())
    }

    /// `null`, `true` or `false` (the literal `word`).
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then(|| self.i = end)
    }

    /// Passes over any JSON value, checking its syntax.
    fn skip(&mut self, depth: u32) -> Option<()> {
        match self.ws()? {
            b'"' => self.string().map(drop),
            b'{' => self.skip_object(depth + 1),
            b'[' => self.skip_array(depth + 1),
            b'n' => self.literal(b"null"),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            _ => self.number().map(drop),
        }
    }

    fn skip_object(&mut self, depth: u32) -> Option<()> {
        (depth <= MAX_DEPTH).then_some(())?;
        self.i += 1;
        if self.ws()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            (self.ws()? == b'"').then_some(())?;
            self.string()?;
            self.colon()?;
            self.skip(depth)?;
            if self.after_member(b'}')? {
                return Some(());
            }
        }
    }

    fn skip_array(&mut self, depth: u32) -> Option<()> {
        (depth <= MAX_DEPTH).then_some(())?;
        self.i += 1;
        if self.ws()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.skip(depth)?;
            if self.after_member(b']')? {
                return Some(());
            }
        }
    }

    /// After a member: `,` (false: more follow) or `close` (true).
    #[inline(always)]
    fn after_member(&mut self, close: u8) -> Option<bool> {
        let c = self.ws()?;
        self.i += 1;
        match c {
            b',' => Some(false),
            c if c == close => Some(true),
            _ => None,
        }
    }

    /// `:` after a key, and the whitespace after it: the cursor is then
    /// on the value. Kineto writes `": "` and the value: that case in one
    /// test, instead of [`Cursor::eat`]'s and [`Cursor::ws`]'s three (the
    /// separators' tests were ≈ 10 % of the extractor's instructions).
    #[inline(always)]
    fn colon(&mut self) -> Option<()> {
        if let Some(&[b':', b' ', v]) = self.b.get(self.i..self.i + 3) {
            if v > b' ' {
                self.i += 2;
                return Some(());
            }
        }
        self.eat(b':')?;
        self.ws().map(drop)
    }

    /// `{` key: value, … `}`, calling `member` with each key (the cursor
    /// then on the value, whitespace skipped).
    fn object<const N: usize>(
        &mut self,
        order: &KeyOrder<N>,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        if self.ws()? == b'}' {
            self.i += 1;
            return Some(());
        }
        let mut next = 0;
        loop {
            (self.ws()? == b'"').then_some(())?;
            let key = match self.guess(order, next) {
                Some(key) => {
                    next += 1;
                    key
                }
                None => {
                    let key = self.string()?;
                    self.colon()?;
                    if let Some(k) = order.position(key) {
                        next = k + 1;
                    }
                    key
                }
            };
            member(self, key)?;
            if self.after_member(b'}')? {
                return Some(());
            }
        }
    }

    /// The key `order` expects `k`-th, when the cursor is on exactly its
    /// `"key": ` and a value follows: one 16-byte compare instead of the
    /// search for the closing quote, the separator's tests and the key's
    /// match ([`KeyOrder`]). The cursor is then on the value. `None`
    /// leaves the cursor where it was.
    #[inline(always)]
    fn guess<const N: usize>(&mut self, order: &KeyOrder<N>, k: usize) -> Option<&'static str> {
        let len = *order.len.get(k)?;
        (len != 0).then_some(())?;
        let word: [u8; 16] = self.b.get(self.i..self.i + 16)?.try_into().ok()?;
        (u128::from_le_bytes(word) & order.mask[k] == order.pattern[k]).then_some(())?;
        (*self.b.get(self.i + len)? > b' ').then_some(())?;
        self.i += len;
        Some(order.names[k])
    }

    /// Reads the event's fields into `ev` (which holds the defaults), and
    /// gives its times' text.
    fn event(&mut self, ev: &mut Event<'a>) -> Option<Times<'a>> {
        let mut t = Times::default();
        let mut seen = 0u32;
        let borrowed = |s: Option<&'a str>| s.map(Cow::Borrowed);
        self.object(&EVENT_KEYS, |c, key| match key {
            "ph" => once_or_default(&mut ev.ph, &mut seen, 1, borrowed(c.text()?)),
            "cat" => once_or_default(&mut ev.cat, &mut seen, 2, borrowed(c.text()?)),
            "name" => once_or_default(&mut ev.name, &mut seen, 4, borrowed(c.text()?)),
            "pid" => once_or_default(&mut ev.pid, &mut seen, 8, c.thread_part()?),
            "tid" => once_or_default(&mut ev.tid, &mut seen, 16, c.thread_part()?),
            "ts" => once(&mut t.ts, &mut seen, 32, c.time()?),
            "dur" => once(&mut t.dur, &mut seen, 64, c.time()?),
            "args" => {
                (seen & 128 == 0).then_some(())?;
                seen |= 128;
                c.args(&mut ev.args)
            }
            _ => c.skip(1),
        })?;
        Some(t)
    }

    /// `ph`, `cat`, `name`: a string, or `null` (absent).
    fn text(&mut self) -> Option<Option<&'a str>> {
        match self.peek()? {
            b'"' => self.string().map(Some),
            b'n' => self.literal(b"null").map(|()| None),
            _ => None,
        }
    }

    /// `pid`, `tid`: an integer or a string; `null` is absent.
    fn thread_part(&mut self) -> Option<Option<ThreadPart>> {
        match self.peek()? {
            b'"' => self.string().map(|s| Some(ThreadPart::Str(s.to_string()))),
            b'n' => self.literal(b"null").map(|()| None),
            _ => self.integer().map(|n| Some(ThreadPart::Num(n))),
        }
    }

    /// `ts`, `dur`: a number; `null` is absent.
    fn time(&mut self) -> Option<Option<Time<'a>>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            _ => match self.plain_time() {
                Some(ns) => Some(Some(Time::Value(ns))),
                None => self.number().map(|t| Some(Time::Text(t))),
            },
        }
    }

    /// The shape Kineto writes nearly every time in, `<digits>[.<1–3
    /// digits>]` µs (at most 16 integer digits, no leading zero; `time`'s
    /// `plain_us_prefix`), read into ns in the one pass that passes over
    /// it; the cursor is left
    /// where it was on `None` (any other number, or a value past
    /// `i64::MAX` ns), and [`Cursor::number`] and [`parse_us`] read it
    /// then. Exactly `parse_us`'s value: no rounding, no sign, no
    /// exponent. Reading the digits twice (the grammar, then the value)
    /// was ≈ 7 % of `ops`' reading thread (`perf`, 1.14 GB).
    #[inline(always)]
    fn plain_time(&mut self) -> Option<i64> {
        let (ns, len) = plain_us_prefix(self.b.get(self.i..)?)?;
        // An exponent is the general path's.
        (!matches!(self.b.get(self.i + len), Some(b'e' | b'E'))).then_some(())?;
        self.i += len;
        Some(ns)
    }

    /// A plain integer of at most [`MAX_INT_DIGITS`] digits (not `-0`:
    /// serde reads that as a float), read in one pass (pid, tid and the
    /// ids: several per event). A fraction or an exponent is `None`, as
    /// is a leading zero's grammar error later (`01`: the cursor stops
    /// after the `0`, as [`Cursor::number`] does).
    fn integer(&mut self) -> Option<i64> {
        let neg = self.peek() == Some(b'-');
        let start = self.i + usize::from(neg);
        let mut end = start;
        let mut n: i64 = 0;
        match self.b.get(end)? {
            b'0' => end += 1,
            b'1'..=b'9' => {
                while let Some(&c @ b'0'..=b'9') = self.b.get(end) {
                    // 18 digits cannot overflow an i64.
                    (end - start < MAX_INT_DIGITS).then_some(())?;
                    n = n * 10 + i64::from(c - b'0');
                    end += 1;
                }
            }
            _ => return None,
        }
        // A fraction or exponent makes it a float; so does `-0`.
        let float = matches!(self.b.get(end), Some(b'.' | b'e' | b'E')) || (neg && n == 0);
        (!float).then_some(())?;
        self.i = end;
        Some(if neg { -n } else { n })
    }

    /// `args` into `a` (which holds the defaults): an object (its known
    /// keys read, the rest passed over) or `null` (the defaults left).
    fn args(&mut self, a: &mut Args<'a>) -> Option<()> {
        if self.peek()? == b'n' {
            return self.literal(b"null");
        }
        let mut seen = 0u32;
        self.object(&ARGS_KEYS, |c, key| match key {
            "External id" => once(&mut a.external_id, &mut seen, 1, c.id()?),
            "correlation" => once(&mut a.correlation, &mut seen, 2, c.wide_id()?),
            "device" => once(&mut a.device, &mut seen, 4096, c.id()?),
            "stream" => once(&mut a.stream, &mut seen, 8192, c.id()?),
            "finished" => once(&mut a.finished, &mut seen, 4, c.flag()?),
            "grid" => once(&mut a.grid, &mut seen, 8, c.dims()?),
            "block" => once(&mut a.block, &mut seen, 16, c.dims()?),
            "registers per thread" => once(&mut a.registers, &mut seen, 32, c.id()?),
            "shared memory" => once(&mut a.shared_memory, &mut seen, 64, c.id()?),
            "Input Dims" => once(&mut a.input_dims, &mut seen, 128, c.raw()?),
            "Input type" => once(&mut a.input_type, &mut seen, 256, c.raw()?),
            "Input Strides" => once(&mut a.input_strides, &mut seen, 512, c.raw()?),
            "kernel" => once(&mut a.kernel, &mut seen, 1024, c.raw()?),
            "Concrete Inputs" => once(&mut a.concrete_inputs, &mut seen, 2048, c.raw()?),
            "Device Type" => once(&mut a.memory.device_type, &mut seen, 1 << 14, c.id()?),
            "Device Id" => once(&mut a.memory.device_id, &mut seen, 1 << 15, c.id()?),
            "Addr" => once(&mut a.memory.addr, &mut seen, 1 << 16, c.wide_id()?),
            "Bytes" => once(&mut a.memory.bytes, &mut seen, 1 << 17, c.id()?),
            "Total Allocated" => once(&mut a.memory.total_allocated, &mut seen, 1 << 18, c.id()?),
            "Total Reserved" => once(&mut a.memory.total_reserved, &mut seen, 1 << 19, c.id()?),
            _ => c.skip(2),
        })
    }

    /// Any value as its JSON text, exactly as written (serde's
    /// `RawValue`); `null` is absent.
    fn raw(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.ws()? == b'n' {
            return self.literal(b"null").map(|()| None);
        }
        let start = self.i;
        self.skip(2)?;
        let s: &'a str = self.s;
        s.get(start..self.i).map(|t| Some(Cow::Borrowed(t)))
    }

    /// An id as serde's lenient reading gives it for plain integers;
    /// `null` and booleans are no id.
    fn id(&mut self) -> Option<Option<i64>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b't' => self.literal(b"true").map(|()| None),
            b'f' => self.literal(b"false").map(|()| None),
            _ => self.integer().map(Some),
        }
    }

    /// A correlation id: [`Cursor::id`], or a plain integer of 19 to 38
    /// digits read exactly into an i128 (an id past u64 is still an id,
    /// issue 59); longer goes to the generic path, which reads it the
    /// same way (`lenient_i128`).
    fn wide_id(&mut self) -> Option<Option<i128>> {
        let at = self.i;
        if let Some(v) = self.id() {
            return Some(v.map(i128::from));
        }
        self.i = at;
        let neg = self.peek() == Some(b'-');
        let start = self.i + usize::from(neg);
        let digits = self.b.get(start..)?;
        let len = digits.iter().take_while(|c| c.is_ascii_digit()).count();
        // A leading zero, a fraction or an exponent: the generic path's.
        let first = *digits.first()?;
        let after = digits.get(len).copied();
        (len >= 1 && first != b'0' && len <= 38 && !matches!(after, Some(b'.' | b'e' | b'E')))
            .then_some(())?;
        let mut n: i128 = 0;
        for &c in &digits[..len] {
            n = n * 10 + i128::from(c - b'0');
        }
        self.i = start + len;
        Some(Some(if neg { -n } else { n }))
    }

    /// `grid`, `block`: `[x, y, z]` of plain integers, or `null`; any
    /// other value goes to the generic path (which reads it as `None`).
    fn dims(&mut self) -> Option<Option<[i64; 3]>> {
        if self.peek()? == b'n' {
            return self.literal(b"null").map(|()| None);
        }
        self.eat(b'[')?;
        let mut v = [0i64; 3];
        for (k, slot) in v.iter_mut().enumerate() {
            self.ws()?;
            *slot = self.integer()?;
            (self.after_member(b']')? == (k == 2)).then_some(())?;
        }
        Some(Some(v))
    }

    /// `finished`: a boolean, or `null` (absent).
    fn flag(&mut self) -> Option<Option<bool>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b't' => self.literal(b"true").map(|()| Some(true)),
            b'f' => self.literal(b"false").map(|()| Some(false)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Ns;

    /// The SIMD and word-at-a-time searches find the first special byte
    /// a byte-wise search finds, at every length and position.
    #[test]
    fn special_finds_the_first_quote_backslash_or_control_byte() {
        let naive = |b: &[u8]| b.iter().position(|&c| c < 0x20 || c == b'"' || c == b'\\');
        let mut next = crate::trace::xorshift(11);
        for _ in 0..20_000 {
            let len = (next() % 70) as usize;
            let mut b = Vec::with_capacity(len);
            for _ in 0..len {
                b.push(match next() % 60 {
                    0 => b'"',
                    1 => b'\\',
                    2 => (next() % 0x20) as u8,
                    3 => 0x80 | (next() as u8),
                    _ => b' ' + (next() % 95) as u8,
                });
            }
            assert_eq!(special(&b), naive(&b), "{b:?}");
            assert_eq!(special_swar(&b), naive(&b), "{b:?}");
        }
    }

    /// A time read while passing over it has `parse_us`'s value; any
    /// other shape is left to `parse_us`.
    #[test]
    fn plain_times_equal_the_general_reading() {
        let times = "0 7 0.5 1.25 12.125 5111125458565.382 5111125458565 9999999999999999.999 \
            1234567890123456 12345678.9 123456789.12 1.2345 01.5 1e3 1.5E2 -1.5 10000000000000000 \
            9223372036854775.807 9223372036854775.808 1. .5";
        for t in times.split_whitespace() {
            let raw = format!(r#"{{"ts": {t}, "dur": {t}}}"#);
            let want = crate::trace::time::parse_us(t).ok();
            let got = extract(raw.as_bytes()).map(|e| (e.ts, e.dur));
            match want {
                Some(ns) => assert_eq!(got, Some((Some(ns), Some(ns))), "{t}"),
                None => assert_eq!(got, None, "{t}"),
            }
        }
    }

    /// The key guess ([`KeyOrder`]) reads what the key search reads:
    /// Kineto's `"key": ` in its order, out of order, twice, other
    /// separators, a long key never guessed.
    #[test]
    fn guessed_keys_read_as_searched_keys() {
        let kineto = r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.5, "dur": 2, "args": {"External id": 3, "queued": 0, "correlation": 9, "registers per thread": 32, "shared memory": 0, "grid": [1, 2, 3], "block": [4, 5, 6]}}"#;
        let compact = kineto.replace(": ", ":").replace(", ", ",");
        let shuffled = r#"{"args": {"block": [4, 5, 6], "grid": [1, 2, 3], "shared memory": 0, "registers per thread": 32, "correlation": 9, "External id": 3}, "dur": 2, "ts": 1.5, "tid": 7, "pid": 0, "name": "k", "cat": "kernel", "ph": "X"}"#;
        let spaced = kineto.replace(": ", " :\n ");
        let want = ok(kineto);
        assert_eq!(
            (want.args.external_id, want.args.correlation),
            (Some(3), Some(9))
        );
        assert_eq!((want.args.registers, want.ts), (Some(32), Some(Ns(1500))));
        for other in [compact.as_str(), shuffled, spaced.as_str()] {
            assert_eq!(format!("{:?}", ok(other)), format!("{want:?}"), "{other}");
        }
        // A key met twice is serde's error, guessed or not.
        for twice in [
            r#"{"ph": "X", "ph": "X"}"#,
            r#"{"ph": "X", "cat": "a", "ph": "X"}"#,
            r#"{"args": {"External id": 1, "External id": 1}}"#,
        ] {
            assert!(extract(twice.as_bytes()).is_none(), "{twice}");
        }
        // `"ph": ` then whitespace, or a key that only starts like one.
        assert_eq!(ok(r#"{"ph":  "X"}"#).ph, "X");
        assert_eq!(ok(r#"{"phx": "Y", "ph": "X"}"#).ph, "X");
        assert_eq!(ok(r#"{"cat": "c", "ph": "X"}"#).cat, "c");
    }

    fn ok(s: &str) -> Event<'_> {
        extract(s.as_bytes()).unwrap_or_else(|| panic!("fell back: {s}"))
    }

    #[test]
    fn kernel_event() {
        let e = ok(r#"{
    "ph": "X", "cat": "kernel", "name": "nvjet_sm90", "pid": 0, "tid": 7,
    "ts": 5111125459464.567, "dur": 5.312,
    "args": {
      "External id": 3615,      "queued": 0, "device": 0, "blocks per SM": 0.727273,
      "grid": [8, 12, 1], "correlation": 14339, "x": {"y": [null, true, false, -1.5e3, ""]}
    }
  }"#);
        assert_eq!((&*e.ph, &*e.cat, &*e.name), ("X", "kernel", "nvjet_sm90"));
        assert_eq!((e.pid, e.tid), (ThreadPart::Num(0), ThreadPart::Num(7)));
        assert_eq!(e.ts, Some(Ns(5_111_125_459_464_567)));
        assert_eq!(e.dur, Some(Ns(5_312)));
        assert_eq!(e.args.external_id, Some(3615));
        assert_eq!(e.args.correlation, Some(14339));
        assert_eq!((e.args.grid, e.args.block), (Some([8, 12, 1]), None));
    }

    /// A capture trace's `args.kernel` (ROCm's hipLaunchKernel) and a host
    /// op's `Input Strides`: their JSON text, as the generic path gives it.
    #[test]
    fn kernel_name_and_strides() {
        let raw = r#"{"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 851, "tid": 851, "ts": 6520367186379.743, "dur": 8.69, "args": {"External id": 19, "kernel": "void k<4>(int)", "cid": 107, "correlation": 18, "grid": [1, 1, 1], "block": [256, 1, 1], "shared memory": 0}}"#;
        let e = ok(raw);
        assert_eq!(e.args.kernel.as_deref(), Some(r#""void k<4>(int)""#));
        assert_eq!(e.args.correlation, Some(18));
        let g = crate::trace::parse_event_generic(
            raw.as_bytes(),
            crate::trace::EventPos {
                index: 0,
                offset: 0,
            },
        )
        .expect("generic");
        assert_eq!(g.args.kernel, e.args.kernel);
        let op = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::slice", "args": {"Input type": ["long int", "Scalar"], "Input Strides": [[1], []], "Input Dims": [[8192], []]}}"#;
        let e = ok(op);
        assert_eq!(e.args.input_strides.as_deref(), Some("[[1], []]"));
        assert_eq!(e.args.input_dims.as_deref(), Some("[[8192], []]"));
    }

    /// A host op's `Input Dims` / `Input type`: the value's text exactly as
    /// written, the same on the fast path and serde's (`RawValue`).
    #[test]
    fn input_shapes_and_types_are_kept_as_written() {
        let raw = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "args": {"Input Dims": [[1, 4096], [4096,4096], []], "Concrete Inputs": ["", "1"], "Input type": ["c10::BFloat16", "Scalar"]}}"#;
        let e = ok(raw);
        assert_eq!(
            e.args.input_dims.as_deref(),
            Some("[[1, 4096], [4096,4096], []]")
        );
        assert_eq!(
            e.args.input_type.as_deref(),
            Some(r#"["c10::BFloat16", "Scalar"]"#)
        );
        let at = crate::trace::EventPos {
            index: 0,
            offset: 0,
        };
        let serde = super::super::event::parse_event_generic(raw.as_bytes(), at).unwrap();
        assert_eq!(serde.args, e.args);
        // Escapes send the event to serde; the text stays as written.
        let esc = r#"{"args": {"Input type": ["\u00e9"]}}"#;
        let e = super::super::event::parse_event(esc.as_bytes(), at).unwrap();
        assert_eq!(e.args.input_type.as_deref(), Some(r#"["\u00e9"]"#));
        let none = ok(r#"{"args": {"Input Dims": null, "Input type": "x"}}"#);
        assert_eq!(none.args.input_dims, None);
        assert_eq!(none.args.input_type.as_deref(), Some(r#""x""#));
    }

    /// A kernel's launch configuration; shapes other than three plain
    /// integers go to serde, which reads them as absent.
    #[test]
    fn launch_configuration() {
        let e = ok(
            r#"{"args": {"grid": [8, 12, 1], "block": [ 384 ,1,1 ], "registers per thread": 168, "shared memory": 0}}"#,
        );
        assert_eq!(
            (e.args.grid, e.args.block),
            (Some([8, 12, 1]), Some([384, 1, 1]))
        );
        assert_eq!(
            (e.args.registers, e.args.shared_memory),
            (Some(168), Some(0))
        );
        for odd in [
            r#"[1, 2]"#,
            r#"[1, 2, 3, 4]"#,
            r#"[1.5, 2, 3]"#,
            r#""8""#,
            r#"[]"#,
        ] {
            let text = format!(r#"{{"args": {{"grid": {odd}}}}}"#);
            assert!(extract(text.as_bytes()).is_none(), "{odd}");
            let at = crate::trace::EventPos {
                index: 0,
                offset: 0,
            };
            let e = super::super::event::parse_event_generic(text.as_bytes(), at).unwrap();
            assert_eq!(e.args.grid, None, "{odd}");
        }
        assert_eq!(ok(r#"{"args": {"grid": null}}"#).args.grid, None);
    }

    #[test]
    fn nulls_are_absent() {
        let e = ok(r#"{"ph": null, "pid": null, "tid": "Spans", "ts": null, "args": null}"#);
        assert_eq!(e.ph, "");
        assert_eq!(e.pid, ThreadPart::Num(0));
        assert_eq!(e.tid, ThreadPart::Str("Spans".into()));
        assert_eq!(e.ts, None);
        let e = ok(r#"{"args": {"External id": null, "correlation": true, "finished": false}}"#);
        assert_eq!(e.args.external_id, None);
        assert_eq!(e.args.correlation, None);
        assert_eq!(e.args.finished, Some(false));
    }

    #[test]
    fn special_bytes_are_found_like_a_plain_loop_finds_them() {
        let naive = |b: &[u8]| b.iter().position(|&c| c < 0x20 || c == b'"' || c == b'\\');
        for len in 0..20 {
            for at in 0..len {
                for byte in 0..=255u8 {
                    // Bytes that borrow in the word arithmetic around it.
                    for fill in [b'a', 0x21, 0xff, 0x80] {
                        let mut b = vec![fill; len];
                        b[at] = byte;
                        if at + 1 < len {
                            b[at + 1] = 0x00;
                        }
                        assert_eq!(special(&b), naive(&b), "{b:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn integers_read_in_one_pass_as_the_number_grammar_reads_them() {
        let id = |s: &str| extract(format!(r#"{{"pid": {s}}}"#).as_bytes()).map(|e| e.pid);
        for (s, want) in [
            ("0", Some(0)),
            ("7", Some(7)),
            ("-7", Some(-7)),
            ("123456789012345678", Some(123_456_789_012_345_678)),
            ("-123456789012345678", Some(-123_456_789_012_345_678)),
            ("1234567890123456789", None),
            ("-0", None),
            ("-00", None),
            ("01", None),
            ("1.0", None),
            ("1e3", None),
            ("1E3", None),
            ("-", None),
            ("- 1", None),
            ("+1", None),
        ] {
            assert_eq!(id(s), want.map(ThreadPart::Num), "{s}");
        }
    }

    /// Issue 59: a correlation id past u64 is an id, exact, read the same
    /// by the extractor and by the generic path; `device` and `stream` are
    /// read as ids.
    #[test]
    fn correlation_ids_past_u64_are_exact_on_both_paths() {
        use super::super::event::parse_event_generic;
        let at = crate::trace::EventPos {
            index: 0,
            offset: 0,
        };
        let max = i128::MAX.to_string();
        let min = i128::MIN.to_string();
        for (text, want) in [
            ("18446744073709551621", Some((1i128 << 64) + 5)),
            ("-18446744073709551621", Some(-(1i128 << 64) - 5)),
            ("9223372036854775808", Some(1i128 << 63)),
            (
                "99999999999999999999999999999999999999",
                Some(10i128.pow(38) - 1),
            ),
            (max.as_str(), Some(i128::MAX)),
            (min.as_str(), Some(i128::MIN)),
            // Past i128: no id (not a number any writer gives).
            ("999999999999999999999999999999999999999999", None),
            ("\"18446744073709551621\"", Some((1i128 << 64) + 5)),
            ("1.8446744073709552e19", None),
            ("7", Some(7)),
        ] {
            let raw = format!(r#"{{"args": {{"device": 3, "stream": 9, "correlation": {text}}}}}"#);
            let generic = parse_event_generic(raw.as_bytes(), at).unwrap();
            assert_eq!(generic.args.correlation, want, "{text}");
            assert_eq!(
                (generic.args.device, generic.args.stream),
                (Some(3), Some(9))
            );
            if let Some(e) = extract(raw.as_bytes()) {
                assert_eq!(e.args.correlation, want, "{text}");
                assert_eq!((e.args.device, e.args.stream), (Some(3), Some(9)));
            }
        }
        // The common lengths stay on the fast path.
        let raw = r#"{"args": {"device": 0, "stream": 7, "correlation": 18446744073709551621}}"#;
        assert_eq!(
            extract(raw.as_bytes()).map(|e| e.args.correlation),
            Some(Some((1i128 << 64) + 5))
        );
    }

    #[test]
    fn unusual_shapes_fall_back() {
        for s in [
            r#"{"name": "a\"b"}"#,
            r#"{"ph": "X", "ph": "X"}"#,
            r#"{"args": {"correlation": 1, "correlation": 2}}"#,
            r#"{"pid": -0}"#,
            r#"{"pid": 1.0}"#,
            r#"{"pid": 1234567890123456789}"#,
            r#"{"ts": "1.5"}"#,
            r#"{"ts": 01}"#,
            r#"{"ts": 1e400}"#,
            r#"{"name": 5}"#,
            r#"{"args": {"finished": 1}}"#,
            r#"{"args": {"correlation": "7"}}"#,
            r#"{"args": []}"#,
            r#"{"x": [1,]}"#,
            r#"{"x": tru}"#,
            r#"{"x": 1} "#,
            "{\"name\": \"a\tb\"}",
            r#"[1]"#,
        ] {
            assert!(extract(s.as_bytes()).is_none(), "{s}");
        }
        // Invalid UTF-8, even in a value nobody reads.
        assert!(extract(b"{\"x\": \"\xff\"}").is_none());
        assert!(extract("{\"name\": \"ünï\"}".as_bytes()).is_some());
    }
}
