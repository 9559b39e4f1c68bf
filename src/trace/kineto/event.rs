//! Kineto's JSON form of one event: deserialized straight from its byte
//! slice with borrowed strings; times stay as their JSON text until
//! [`RawEvent::resolve`] turns them into exact [`Ns`].
//!
//! Errors name byte offsets in the whole file, not serde's line and column
//! inside the event.

use super::super::error::ReadError;
use super::super::event::{Args, Event, EventPos, MemoryArgs};
use super::super::message::tidy;
use super::super::time::{parse_us, TimeError};
use crate::model::{Ns, ThreadPart};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// The event as it appears in the JSON (unknown keys are skipped).
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct RawEvent<'a> {
    #[serde(borrow)]
    pub ph: Option<Text<'a>>,
    #[serde(borrow)]
    pub cat: Option<Text<'a>>,
    #[serde(borrow)]
    pub name: Option<Text<'a>>,
    pub pid: Option<ThreadPart>,
    pub tid: Option<ThreadPart>,
    #[serde(borrow)]
    pub ts: Option<&'a RawValue>,
    #[serde(borrow)]
    pub dur: Option<&'a RawValue>,
    #[serde(borrow)]
    pub args: Option<Args<'a>>,
}

/// `args` as Kineto writes them (unknown keys skipped, `null` is `None`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct KinetoArgs<'a> {
    #[serde(rename = "External id", deserialize_with = "lenient_i64")]
    external_id: Option<i64>,
    #[serde(deserialize_with = "lenient_i128")]
    correlation: Option<i128>,
    #[serde(deserialize_with = "lenient_i64")]
    device: Option<i64>,
    #[serde(deserialize_with = "lenient_i64")]
    stream: Option<i64>,
    #[serde(deserialize_with = "lenient_bool")]
    finished: Option<bool>,
    #[serde(deserialize_with = "lenient_dims")]
    grid: Option<[i64; 3]>,
    #[serde(deserialize_with = "lenient_dims")]
    block: Option<[i64; 3]>,
    #[serde(rename = "registers per thread", deserialize_with = "lenient_i64")]
    registers: Option<i64>,
    #[serde(rename = "shared memory", deserialize_with = "lenient_i64")]
    shared_memory: Option<i64>,
    /// Any JSON value, kept as its text (`null` is `None`).
    #[serde(rename = "Input Dims", borrow)]
    input_dims: Option<&'a RawValue>,
    #[serde(rename = "Input type", borrow)]
    input_type: Option<&'a RawValue>,
    #[serde(rename = "Input Strides", borrow)]
    input_strides: Option<&'a RawValue>,
    #[serde(borrow)]
    kernel: Option<&'a RawValue>,
    #[serde(rename = "Concrete Inputs", borrow)]
    concrete_inputs: Option<&'a RawValue>,
    #[serde(rename = "Addr", deserialize_with = "lenient_i128")]
    addr: Option<i128>,
    #[serde(rename = "Bytes", deserialize_with = "lenient_i64")]
    bytes: Option<i64>,
    #[serde(rename = "Total Allocated", deserialize_with = "lenient_i64")]
    total_allocated: Option<i64>,
    #[serde(rename = "Total Reserved", deserialize_with = "lenient_i64")]
    total_reserved: Option<i64>,
    #[serde(rename = "Device Type", deserialize_with = "lenient_i64")]
    device_type: Option<i64>,
    #[serde(rename = "Device Id", deserialize_with = "lenient_i64")]
    device_id: Option<i64>,
}

/// `args` must be an object (or `null`): anything else — an array, a
/// number, a string — is an error, never read by position.
impl<'de: 'a, 'a> Deserialize<'de> for Args<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ArgsVisitor(std::marker::PhantomData))
    }
}

struct ArgsVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for ArgsVisitor<'a> {
    type Value = Args<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object (`args` is read by key, never by position)")
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Args<'a>, A::Error> {
        let a = KinetoArgs::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(Args {
            external_id: a.external_id,
            correlation: a.correlation,
            device: a.device,
            stream: a.stream,
            finished: a.finished,
            grid: a.grid,
            block: a.block,
            registers: a.registers,
            shared_memory: a.shared_memory,
            input_dims: a.input_dims.map(|v| Cow::Borrowed(v.get())),
            input_type: a.input_type.map(|v| Cow::Borrowed(v.get())),
            input_strides: a.input_strides.map(|v| Cow::Borrowed(v.get())),
            kernel: a.kernel.map(|v| Cow::Borrowed(v.get())),
            concrete_inputs: a.concrete_inputs.map(|v| Cow::Borrowed(v.get())),
            memory: MemoryArgs {
                addr: a.addr,
                bytes: a.bytes,
                total_allocated: a.total_allocated,
                total_reserved: a.total_reserved,
                device_type: a.device_type,
                device_id: a.device_id,
            },
        })
    }
}

impl<'a> RawEvent<'a> {
    /// Resolves the times exactly; fails only on malformed numbers.
    pub fn resolve(self) -> Result<Event<'a>, TimeError> {
        let ts = self.ts.map(|v| parse_us(v.get())).transpose()?;
        let dur = self.dur.map(|v| parse_us(v.get())).transpose()?;
        Ok(self.into_event(ts, dur))
    }

    fn into_event(self, ts: Option<Ns>, dur: Option<Ns>) -> Event<'a> {
        Event {
            ph: self.ph.map_or(Cow::Borrowed(""), |t| t.0),
            cat: self.cat.map_or(Cow::Borrowed(""), |t| t.0),
            name: self.name.map_or(Cow::Borrowed(""), |t| t.0),
            pid: self.pid.unwrap_or(ThreadPart::Num(0)),
            tid: self.tid.unwrap_or(ThreadPart::Num(0)),
            ts,
            dur,
            args: self.args.unwrap_or_default(),
        }
    }
}

/// Parses one event's bytes (`raw`, found at `at`), with the event and a
/// byte offset in the file in any error.
///
/// The common shape is read by the hand-written extractor
/// (`super::extract`); anything it is unsure of, and every error, by
/// serde_json ([`parse_event_generic`]). Both give the same events.
pub fn parse_event(raw: &[u8], at: EventPos) -> Result<Event<'_>, ReadError> {
    match super::extract::extract(raw) {
        Some(ev) => check_end(&ev, at).map(|()| ev),
        None => parse_event_generic(raw, at),
    }
}

/// [`parse_event`] into `ev`, which the readers reuse from event to event
/// (see `super::extract::extract_into`); on an error `ev` holds nothing
/// of use.
pub fn parse_event_into<'a>(
    raw: &'a [u8],
    at: EventPos,
    ev: &mut Event<'a>,
) -> Result<(), ReadError> {
    parse_event_into_counting(raw, at, ev, &mut 0)
}

/// [`parse_event_into`], adding 1 to `past` for an event whose
/// `args.correlation` is an integer past i128, which is read as no id
/// (issue 59; the reader says how many in a note, never silently). Only
/// the generic path meets one (the extractor hands it every id of 39 or
/// more digits), so an event the extractor reads costs nothing more.
pub fn parse_event_into_counting<'a>(
    raw: &'a [u8],
    at: EventPos,
    ev: &mut Event<'a>,
    past: &mut u64,
) -> Result<(), ReadError> {
    match super::extract::extract_into(raw, ev) {
        Some(()) => check_end(ev, at),
        None => {
            *ev = parse_event_generic(raw, at)?;
            *past += u64::from(ev.args.correlation.is_none() && correlation_past_i128(raw));
            Ok(())
        }
    }
}

/// [`parse_event`], counting in `past` as [`parse_event_into_counting`].
pub fn parse_event_counting<'r>(
    raw: &'r [u8],
    at: EventPos,
    past: &mut u64,
) -> Result<Event<'r>, ReadError> {
    match super::extract::extract(raw) {
        Some(ev) => check_end(&ev, at).map(|()| ev),
        None => {
            let ev = parse_event_generic(raw, at)?;
            *past += u64::from(ev.args.correlation.is_none() && correlation_past_i128(raw));
            Ok(ev)
        }
    }
}

/// Whether the event `raw` (already parsed by the generic path) has an
/// `args.correlation` that is an integer past i128: a JSON integer, or a
/// string of one (which [`lenient_i128`] reads too), of 39 or more digits
/// beyond i128's ends. Kineto writes u64 ids, so such an id is read as no
/// id; this says that it was there. Events whose bytes hold neither the
/// key nor an escape (which could spell it) are passed at once.
pub(crate) fn correlation_past_i128(raw: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(borrow, default)]
        args: Option<ProbeArgs<'a>>,
    }
    #[derive(Deserialize)]
    struct ProbeArgs<'a> {
        #[serde(borrow, default)]
        correlation: Option<&'a RawValue>,
    }
    if memchr::memmem::find(raw, b"correlation").is_none() && memchr::memchr(b'\\', raw).is_none() {
        return false;
    }
    let Ok(Probe {
        args: Some(ProbeArgs {
            correlation: Some(v),
        }),
    }) = serde_json::from_slice::<Probe>(raw)
    else {
        return false;
    };
    integer_past_i128(v.get())
}

/// Whether a JSON value's text is an integer (or a string holding one,
/// trimmed, as [`lenient_i128`] reads it) that i128 cannot hold.
fn integer_past_i128(text: &str) -> bool {
    let s: Cow<'_, str> = match text.starts_with('"') {
        true => match serde_json::from_str::<String>(text) {
            Ok(s) => Cow::Owned(s),
            Err(_) => return false,
        },
        false => Cow::Borrowed(text),
    };
    let t = s.trim();
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && t.parse::<i128>().is_err()
}

/// [`parse_event`] by serde_json alone: the generic path, also the
/// reference the extractor is tested against.
pub fn parse_event_generic(raw: &[u8], at: EventPos) -> Result<Event<'_>, ReadError> {
    let ev: RawEvent = serde_json::from_slice(raw).map_err(|e| {
        let byte = at.offset + serde_offset(raw, &e);
        bad_event(at, format!("{} at byte {byte}", serde_message(&e)))
    })?;
    let ts = time_field(ev.ts, "ts", raw, at)?;
    let dur = time_field(ev.dur, "dur", raw, at)?;
    let ev = ev.into_event(ts, dur);
    check_end(&ev, at).map(|()| ev)
}

/// Every analysis takes end = ts + dur: an event whose end i64 ns cannot
/// hold is refused rather than saturated into a wrong end.
fn check_end(ev: &Event<'_>, at: EventPos) -> Result<(), ReadError> {
    let (ts, dur) = (ev.ts, ev.dur);
    if let (Some(t), Some(d)) = (ts, dur) {
        if d.0 > 0 && t.0.checked_add(d.0).is_none() {
            return Err(bad_event(
                at,
                format!("`ts` + `dur` = {t} + {d} µs is beyond the representable time range (±292 years in ns)"),
            ));
        }
    }
    Ok(())
}

fn bad_event(at: EventPos, msg: String) -> ReadError {
    ReadError::BadEvent {
        index: at.index,
        offset: at.offset,
        msg,
    }
}

/// A time field's exact value, or an error naming the field and where its
/// text starts.
fn time_field(
    v: Option<&RawValue>,
    field: &str,
    raw: &[u8],
    at: EventPos,
) -> Result<Option<Ns>, ReadError> {
    let Some(v) = v else { return Ok(None) };
    parse_us(v.get()).map(Some).map_err(|e| {
        // The raw value borrows from `raw`: its distance from the start is
        // its offset in the event.
        let inside = (v.get().as_ptr() as usize).wrapping_sub(raw.as_ptr() as usize);
        let inside = if inside <= raw.len() {
            inside as u64
        } else {
            0
        };
        bad_event(at, format!("`{field}` at byte {}: {e}", at.offset + inside))
    })
}

/// serde_json's message without its "at line L column C" (relative to the
/// event, so useless to a reader of the file), tidied for printing.
pub(crate) fn serde_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    tidy(full.strip_suffix(&suffix).unwrap_or(&full))
}

/// The byte offset inside `raw` that serde_json's line and column point
/// at (its column counts bytes from the start of the line, 1-based).
fn serde_offset(raw: &[u8], e: &serde_json::Error) -> u64 {
    let line_start = match e.line() {
        0 | 1 => 0,
        n => memchr::memchr_iter(b'\n', raw)
            .nth(n - 2)
            .map_or(raw.len(), |k| k + 1),
    };
    (line_start + e.column().saturating_sub(1)).min(raw.len()) as u64
}

/// A string borrowed from the input when it has no escapes. (serde's own
/// `Cow<str>` never borrows inside an `Option`.)
#[derive(Debug)]
pub struct Text<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed("")))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for ThreadPart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ThreadPart;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer or a string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ThreadPart, E> {
                Ok(ThreadPart::Num(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ThreadPart, E> {
                i64::try_from(v)
                    .map(ThreadPart::Num)
                    .or_else(|_| Ok(ThreadPart::Str(v.to_string())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ThreadPart, E> {
                Ok(ThreadPart::Str(v.to_string()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ThreadPart, E> {
                Ok(ThreadPart::Str(v.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<ThreadPart, E> {
                Ok(ThreadPart::Str(String::new()))
            }
        }
        d.deserialize_any(V)
    }
}

/// Integer ids: numbers, numeric strings or null (→ `None`).
fn lenient_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    struct V;
    impl Visitor<'_> for V {
        type Value = Option<i64>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an integer id")
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(i64::try_from(v).ok())
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok((v.fract() == 0.0 && v.abs() < 9.0e15).then_some(v as i64))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(v.trim().parse().ok())
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
    d.deserialize_any(V)
}

/// A correlation id: [`lenient_i64`]'s reading, but exact up to 38
/// digits (an integer past u64 is an id, issue 59). serde_json gives an
/// integer past u64 as an f64, so the number is read from its text.
fn lenient_i128<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i128>, D::Error> {
    let Some(raw) = Option::<&RawValue>::deserialize(d)? else {
        return Ok(None);
    };
    let text = raw.get();
    if text.starts_with('"') {
        // A string as serde reads it (escapes resolved), then trimmed.
        let s: String = serde_json::from_str(text).map_err(de::Error::custom)?;
        return Ok(s.trim().parse().ok());
    }
    if let Ok(v) = text.parse::<i128>() {
        return Ok(Some(v));
    }
    // Anything else (a float, `true`, an object…) as `lenient_i64` reads it.
    lenient_i64(&mut serde_json::Deserializer::from_str(text))
        .map(|v| v.map(i128::from))
        .map_err(de::Error::custom)
}

/// A kernel's `grid` / `block`: an array of exactly three integers (as
/// `i64`); any other value is `None`, never an error.
fn lenient_dims<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[i64; 3]>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(match v.as_array().map(Vec::as_slice) {
        Some([x, y, z]) => match (x.as_i64(), y.as_i64(), z.as_i64()) {
            (Some(x), Some(y), Some(z)) => Some([x, y, z]),
            _ => None,
        },
        _ => None,
    })
}

fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    struct V;
    impl Visitor<'_> for V {
        type Value = Option<bool>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a boolean")
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v != 0))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v != 0))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(match v {
                "true" | "True" | "1" => Some(true),
                "false" | "False" | "0" => Some(false),
                _ => None,
            })
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
    d.deserialize_any(V)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Event<'_> {
        serde_json::from_str::<RawEvent>(s)
            .unwrap()
            .resolve()
            .unwrap()
    }

    #[test]
    fn kineto_event() {
        let e = parse(
            r#"{"ph": "X", "cat": "user_annotation", "name": "execute_context_0(0)_generation_1(1)",
                "pid": 1234, "tid": 1234, "ts": 5106297913320.790, "dur": 10450.001,
                "args": {"External id": 77, "Record function id": 0, "Ev Idx": 3}}"#,
        );
        assert!(e.is_complete());
        assert_eq!(e.ts, Some(Ns(5_106_297_913_320_790)));
        assert_eq!(e.dur, Some(Ns(10_450_001)));
        assert_eq!(e.args.external_id, Some(77));
        assert!(matches!(e.name, Cow::Borrowed(_)));
    }

    #[test]
    fn odd_shapes() {
        let e = parse(r#"{"ph": "X", "pid": "Spans", "tid": -1, "ts": 0, "args": null}"#);
        assert_eq!(e.pid, ThreadPart::Str("Spans".into()));
        assert_eq!(e.tid, ThreadPart::Num(-1));
        assert_eq!(e.dur, None);
        assert_eq!(e.args, Args::default());
        let e = parse(
            r#"{"ph": "i", "name": "a\"b", "args": {"External id": null, "finished": false}}"#,
        );
        assert_eq!(e.name, "a\"b");
        assert_eq!(e.args.finished, Some(false));
        assert!(!e.is_complete());
        let e = parse(r#"{"ph": "X", "ts": 1, "args": {"External id": "42", "correlation": 7}}"#);
        assert_eq!(e.args.external_id, Some(42));
        assert_eq!(e.args.correlation, Some(7));
    }

    #[test]
    fn bad_time_is_reported() {
        let raw = serde_json::from_str::<RawEvent>(r#"{"ph": "X", "ts": "soon"}"#).unwrap();
        assert!(raw.resolve().is_err());
    }
}
