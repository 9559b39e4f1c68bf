//! Reading traces: open (plain or gzip, by magic bytes), stream the events of
//! `traceEvents` one at a time, and keep the top-level metadata.
//!
//! Memory stays bounded by one read buffer and one event: the decompressed
//! text is never held whole and no tree of all events is built. A
//! [`Prefilter`] lets an analysis reject events from their raw bytes before
//! any JSON parsing, which is what makes GB-size traces fast: the events
//! `pair` needs are well under 1% of a vLLM trace.

pub mod event;
pub mod open;
pub mod pipe;
pub mod stream;
pub mod time;

pub use event::{Args, Event, RawEvent};
pub use stream::EventPos;

use flate2::bufread::MultiGzDecoder;
use memchr::memmem;
use serde::Serialize;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// What went wrong while reading one trace. Offsets are byte offsets in the
/// decompressed JSON text; `events` is how many events were read intact
/// before the problem (the analysis of those is still available).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot open: {0}")]
    Open(io::Error),
    #[error("read failed: {0}")]
    Io(io::Error),
    #[error("the file is empty")]
    Empty,
    #[error("not a trace: neither gzip nor JSON ({found})")]
    NotTrace { found: String },
    #[error("data ends early or is corrupt after byte {offset} of the JSON text ({events} events read intact): {source}")]
    Decode {
        offset: u64,
        events: u64,
        source: io::Error,
    },
    #[error("JSON ends early at byte {offset}, inside the trace ({events} events read intact)")]
    Truncated { offset: u64, events: u64 },
    #[error("invalid JSON at byte {offset} ({events} events read intact): {msg}")]
    Syntax {
        offset: u64,
        events: u64,
        msg: String,
    },
    #[error("event {index} at byte {offset}: {msg}")]
    BadEvent {
        index: u64,
        offset: u64,
        msg: String,
    },
    #[error("no \"traceEvents\" array in the top-level object")]
    NoTraceEvents,
}

impl ReadError {
    /// How many events were read intact before the error.
    pub fn events_read(&self) -> u64 {
        match self {
            ReadError::Decode { events, .. }
            | ReadError::Truncated { events, .. }
            | ReadError::Syntax { events, .. } => *events,
            ReadError::BadEvent { index, .. } => *index,
            _ => 0,
        }
    }
}

/// A [`ReadError`] with the file it happened in. (The kind is part of the
/// message, not a `source`, so `{:#}` prints it once.)
#[derive(Debug, thiserror::Error)]
#[error("{path}: {kind}")]
pub struct TraceError {
    pub path: String,
    pub kind: ReadError,
}

/// Top-level metadata worth showing. Unknown keys are listed by name only.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
pub struct Meta {
    pub schema_version: Option<i64>,
    pub base_time_ns: Option<i64>,
    pub devices: Vec<String>,
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    pub vllm_version: Option<String>,
    pub with_stack: Option<bool>,
    pub display_time_unit: Option<String>,
    #[serde(skip)]
    pub has_events: bool,
}

impl Meta {
    /// Takes note of one top-level key and its value's raw JSON.
    pub(crate) fn absorb(&mut self, key: &str, raw: &[u8]) {
        use serde_json::Value;
        let val = || serde_json::from_slice::<Value>(raw).ok();
        match key {
            "schemaVersion" => self.schema_version = val().and_then(|v| v.as_i64()),
            "baseTimeNanoseconds" => self.base_time_ns = val().and_then(|v| v.as_i64()),
            "deviceProperties" => {
                if let Some(Value::Array(devs)) = val() {
                    self.devices = devs
                        .iter()
                        .filter_map(|d| d.get("name").and_then(Value::as_str))
                        .map(str::to_string)
                        .collect();
                }
            }
            "distributedInfo" => {
                if let Some(v) = val() {
                    self.rank = v.get("rank").and_then(Value::as_i64);
                    self.world_size = v.get("world_size").and_then(Value::as_i64);
                }
            }
            "vllm_version" => {
                self.vllm_version = val().map(|v| match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                })
            }
            "with_stack" => {
                self.with_stack =
                    val().and_then(|v| v.as_bool().or_else(|| v.as_i64().map(|i| i != 0)))
            }
            "displayTimeUnit" => {
                self.display_time_unit = val().and_then(|v| v.as_str().map(str::to_string))
            }
            _ => {}
        }
    }
}

/// A cheap test on an event's raw bytes: could it be one the analysis needs?
///
/// It must never reject a needed event. An event passes when it contains
/// one of the needles, or a backslash (an escape could spell a needle
/// differently), or when there are no needles at all.
#[derive(Debug, Clone, Default)]
pub struct Prefilter {
    finders: Vec<memmem::Finder<'static>>,
}

impl Prefilter {
    /// Admits every event.
    pub fn all() -> Self {
        Prefilter::default()
    }

    /// Admits events whose raw text contains any of `needles`.
    pub fn any_of<S: AsRef<str>>(needles: &[S]) -> Self {
        Prefilter {
            finders: needles
                .iter()
                .map(|n| memmem::Finder::new(n.as_ref().as_bytes()).into_owned())
                .collect(),
        }
    }

    /// Admits what either filter admits (all, when either admits all).
    pub fn union(&self, other: &Prefilter) -> Prefilter {
        if self.finders.is_empty() || other.finders.is_empty() {
            return Prefilter::all();
        }
        let mut finders = self.finders.clone();
        for f in &other.finders {
            if !finders.iter().any(|g| g.needle() == f.needle()) {
                finders.push(f.clone());
            }
        }
        Prefilter { finders }
    }

    pub fn admits(&self, raw: &[u8]) -> bool {
        self.finders.is_empty()
            || self.finders.iter().any(|f| f.find(raw).is_some())
            || memchr::memchr(b'\\', raw).is_some()
    }
}

/// The outcome of a read that got to the end.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReadStats {
    /// Elements of `traceEvents`.
    pub events: u64,
    /// Events that passed the prefilter and were parsed.
    pub parsed: u64,
}

/// Streams the events of a trace file (or `-` for stdin).
///
/// `on_event` sees every parsed event that the prefilter admitted. On error
/// the events seen so far have been delivered, so the caller can still
/// report what they give.
pub fn read_path(
    path: &Path,
    filter: &Prefilter,
    progress: Arc<AtomicU64>,
    meta: &mut Meta,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
) -> Result<ReadStats, TraceError> {
    let label = path.display().to_string();
    let wrap = |kind| TraceError {
        path: label.clone(),
        kind,
    };
    let src = open::open_decoded(path, progress).map_err(wrap)?;
    read_decoded(src, filter, meta, on_event).map_err(wrap)
}

/// Streams the events of a trace from any byte source (e.g. an archive
/// member), decompressing inline when it is gzip.
pub fn read_stream<R: Read>(
    raw: R,
    filter: &Prefilter,
    meta: &mut Meta,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
) -> Result<ReadStats, ReadError> {
    let mut buffered = BufReader::with_capacity(256 * 1024, raw);
    match open::sniff(&mut buffered)? {
        open::Encoding::Gzip => read_decoded(MultiGzDecoder::new(buffered), filter, meta, on_event),
        open::Encoding::Json => read_decoded(buffered, filter, meta, on_event),
    }
}

/// Scans decompressed JSON text.
pub fn read_decoded<R: Read>(
    src: R,
    filter: &Prefilter,
    meta: &mut Meta,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
) -> Result<ReadStats, ReadError> {
    let mut parsed = 0u64;
    let events = stream::scan_filtered(src, meta, filter, &mut |raw, at| {
        let ev = parse_event(raw, at)?;
        parsed += 1;
        on_event(&ev, at);
        Ok(())
    })?;
    if !meta.has_events {
        return Err(ReadError::NoTraceEvents);
    }
    Ok(ReadStats { events, parsed })
}

/// Parses one event's bytes, with its position in any error.
pub fn parse_event(raw: &[u8], at: EventPos) -> Result<Event<'_>, ReadError> {
    let bad = |msg: String| ReadError::BadEvent {
        index: at.index,
        offset: at.offset,
        msg,
    };
    let rawev: RawEvent = serde_json::from_slice(raw).map_err(|e| bad(e.to_string()))?;
    rawev.resolve().map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefilter_never_rejects_escaped_text() {
        let f = Prefilter::any_of(&["user_annotation\""]);
        assert!(f.admits(br#"{"cat": "gpu_user_annotation", "name": "x"}"#));
        assert!(f.admits(br#"{"cat": "user_annotation"}"#));
        assert!(!f.admits(br#"{"cat": "python_function", "name": "x"}"#));
        assert!(f.admits(br#"{"cat": "user\u005fannotation"}"#));
        assert!(Prefilter::all().admits(b"{}"));
    }

    #[test]
    fn reads_events_and_reports_bad_ones() {
        let doc = br#"{"traceEvents": [{"ph": "X", "ts": 1.5, "dur": 2}, {"ph": "X", "ts": "x"}]}"#;
        let mut meta = Meta::default();
        let mut seen = Vec::new();
        let err = read_stream(&doc[..], &Prefilter::all(), &mut meta, &mut |e, _| {
            seen.push(e.ts)
        })
        .unwrap_err();
        assert_eq!(seen, vec![Some(crate::model::Ns(1500))]);
        match err {
            ReadError::BadEvent { index, offset, .. } => {
                assert_eq!(index, 1);
                assert_eq!(offset, 51);
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn missing_trace_events() {
        let mut meta = Meta::default();
        let err = read_stream(
            &br#"{"schemaVersion": 1}"#[..],
            &Prefilter::all(),
            &mut meta,
            &mut |_, _| {},
        )
        .unwrap_err();
        assert!(matches!(err, ReadError::NoTraceEvents));
        assert_eq!(meta.schema_version, Some(1));
    }
}
