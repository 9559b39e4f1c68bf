//! Reading traces: open (plain or gzip, by magic bytes), stream the events
//! one at a time, and keep the top-level metadata.
//!
//! ```text
//!  open.rs        bytes → encoding (gzip / JSON), inflate on its own thread (pipe.rs)
//!  kineto/        Kineto's Chrome-trace JSON: top-level object, traceEvents scanning
//!                 (scan.rs, with the block scanner its child scan/fast.rs over classify.rs), event parsing
//!                 (extract.rs by hand, event.rs by serde_json), and the pipelined read of
//!                 files (pipelined.rs: the scanner on its own thread, the parse on N workers,
//!                 delivered in file order; parsed.rs: a parsed event that crosses threads)
//!  event.rs       the event model every format produces (Event, Args, EventPos)
//!  prefilter.rs   the raw-bytes test that spares most events a parse
//!  error.rs       ReadError: one variant per cause, offsets in the decompressed text
//! ```
//!
//! Guarantees on any input (see docs/ROBUSTNESS.md): memory stays bounded
//! by one read buffer and one event, and one event may be at most
//! [`ReadOptions::max_event_bytes`] long; the input is always read to its
//! end, so every gzip member's CRC-32 and length are checked and anything
//! after the JSON document other than whitespace is an error; errors never
//! panic and say where (a byte offset) and how many events were read.
//!
//! A [`Prefilter`] lets an analysis reject events from their raw bytes
//! before any JSON parsing, which is what makes GB-size traces fast: the
//! events `pair` needs are well under 1% of a vLLM trace.

pub(crate) mod classify;
mod error;
pub mod event;
pub mod kineto;
pub(crate) mod message;
pub mod open;
pub(crate) mod pipe;
mod prefilter;
pub mod stream;
pub mod time;

/// A deterministic pseudo-random u64 stream (xorshift64) for the fast
/// paths' randomized tests: no dependency, the same bytes on every run.
#[cfg(test)]
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

pub use error::{MemberChecksumError, ReadError, TraceError, MAX_EVENT_SIZE_ENV};
pub use event::{Args, Event, EventPos, MemoryArgs};
pub use kineto::event::RawEvent;
pub use prefilter::Prefilter;

use flate2::bufread::MultiGzDecoder;
use serde::Serialize;
use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// The default limit on one event (or one top-level value that is read).
/// Real events are under a few KB; 64 MiB leaves room for anything sane
/// while keeping a damaged or hostile file from taking the machine's memory.
pub const DEFAULT_MAX_EVENT_BYTES: u64 = 64 << 20;

/// How to read a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// The most bytes one event (from its `{` to its `}`) may have; past
    /// it, reading stops with [`ReadError::EventTooLarge`]. Whitespace
    /// between events does not count. Peak memory is about this plus a
    /// few MiB.
    pub max_event_bytes: u64,
}

impl Default for ReadOptions {
    /// [`default_max_event_bytes`].
    fn default() -> Self {
        ReadOptions {
            max_event_bytes: default_max_event_bytes(),
        }
    }
}

impl ReadOptions {
    /// Options with the given limit on one event (at least 1 byte).
    pub fn with_max_event_bytes(max_event_bytes: u64) -> Self {
        ReadOptions {
            max_event_bytes: max_event_bytes.max(1),
        }
    }
}

/// The limit that [`ReadOptions::default`] (and so every `read_*` function
/// without options) uses: the environment variable [`MAX_EVENT_SIZE_ENV`]
/// (`TORCHTRACE_MAX_EVENT_SIZE`, read by [`parse_size`]; ignored when it
/// does not parse), else [`DEFAULT_MAX_EVENT_BYTES`]. There is no
/// process-wide setter: a command-line limit travels in the options
/// (an analysis [`Plan`](crate::analysis::Plan)'s `read`), so two callers
/// in one process (tests, the Python package) never change each other's.
pub fn default_max_event_bytes() -> u64 {
    std::env::var(MAX_EVENT_SIZE_ENV)
        .ok()
        .and_then(|v| parse_size(&v))
        .unwrap_or(DEFAULT_MAX_EVENT_BYTES)
}

/// Parses a size: a whole number of bytes with an optional unit, `K`, `M`,
/// `G` or `T` (powers of 1024; `KB`, `KiB`, `k` are the same). `None` for
/// anything else, zero, or more than `u64::MAX`.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return None,
    };
    let bytes = n.checked_mul(1u64 << shift)?;
    (bytes > 0).then_some(bytes)
}

/// Top-level metadata worth showing. Unknown keys are listed by name only.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Meta {
    pub schema_version: Option<i64>,
    pub base_time_ns: Option<i64>,
    pub devices: Vec<String>,
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    pub vllm_version: Option<String>,
    pub with_stack: Option<bool>,
    pub display_time_unit: Option<String>,
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub has_events: bool,
    /// What the reader passed over in the document's structure (a second
    /// `traceEvents` key), for the analyses' notes; not in the public
    /// JSON (the notes carry it), but in records, so that a result read
    /// back equals the one written (the `analyses` fuzz target found it).
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub notes: Vec<String>,
}

/// The outcome of a read that got to the end.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReadStats {
    /// Elements of `traceEvents`.
    pub events: u64,
    /// Events that passed the prefilter and were parsed.
    pub parsed: u64,
}

/// Streams the events of a trace file (or `-` for stdin), with the default
/// [`ReadOptions`].
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
    read_path_with(
        path,
        &ReadOptions::default(),
        filter,
        progress,
        meta,
        on_event,
    )
}

/// [`read_path`] with explicit options.
pub fn read_path_with(
    path: &Path,
    opts: &ReadOptions,
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
    if pipelined() {
        // Held until the read ends, so that files read side by side share
        // the worker threads (see `claim_workers`).
        let workers = kineto::pipelined::claim_workers();
        kineto::pipelined::read_with_workers(src, opts, filter, meta, on_event, workers.count())
            .map_err(wrap)
    } else {
        read_decoded_with(src, opts, filter, meta, on_event).map_err(wrap)
    }
}

/// Turns the pipelined read of files off when set to `0` (for comparing
/// the two; the output is the same).
pub const PIPELINE_ENV: &str = "TORCHTRACE_PIPELINE";

/// Whether files are read with the scanner on its own thread and, with
/// enough worker threads, the parse on workers ([`kineto::pipelined`]):
/// yes unless [`PIPELINE_ENV`] is `0`.
pub fn pipelined() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var(PIPELINE_ENV).map_or(true, |v| v.trim() != "0"))
}

/// Streams the events of a trace from any byte source (e.g. an archive
/// member), decompressing inline when it is gzip.
pub fn read_stream<R: Read>(
    raw: R,
    filter: &Prefilter,
    meta: &mut Meta,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
) -> Result<ReadStats, ReadError> {
    read_stream_with(raw, &ReadOptions::default(), filter, meta, on_event)
}

/// [`read_stream`] with explicit options.
pub fn read_stream_with<R: Read>(
    raw: R,
    opts: &ReadOptions,
    filter: &Prefilter,
    meta: &mut Meta,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
) -> Result<ReadStats, ReadError> {
    let mut buffered = BufReader::with_capacity(256 * 1024, raw);
    match open::sniff(&mut buffered)? {
        open::Encoding::Gzip => {
            read_decoded_with(MultiGzDecoder::new(buffered), opts, filter, meta, on_event)
        }
        open::Encoding::Json => read_decoded_with(buffered, opts, filter, meta, on_event),
    }
}

/// Reads decompressed text, with the default [`ReadOptions`].
pub fn read_decoded<R: Read>(
    src: R,
    filter: &Prefilter,
    meta: &mut Meta,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
) -> Result<ReadStats, ReadError> {
    read_decoded_with(src, &ReadOptions::default(), filter, meta, on_event)
}

/// Reads decompressed text to its end. The text is Kineto's JSON, the one
/// format there is ([`open::Format`]); a second format would be recognised
/// there and read by its own module beside [`kineto`], into the same
/// [`Event`]s.
pub fn read_decoded_with<R: Read>(
    src: R,
    opts: &ReadOptions,
    filter: &Prefilter,
    meta: &mut Meta,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
) -> Result<ReadStats, ReadError> {
    kineto::read(src, opts, filter, meta, on_event)
}

/// Parses one event's bytes, with its position in any error (offsets in
/// the file, not in the event).
pub fn parse_event(raw: &[u8], at: EventPos) -> Result<Event<'_>, ReadError> {
    kineto::event::parse_event(raw, at)
}

/// [`parse_event`] by serde_json alone (the generic path), to compare
/// with the extractor in tests.
#[doc(hidden)]
pub fn parse_event_generic(raw: &[u8], at: EventPos) -> Result<Event<'_>, ReadError> {
    kineto::event::parse_event_generic(raw, at)
}

/// The hand-written extractor alone: `None` where [`parse_event`] would
/// use the generic path. For tests.
#[doc(hidden)]
pub fn extract_event(raw: &[u8]) -> Option<Event<'_>> {
    kineto::extract::extract(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn first_error(doc: &[u8]) -> String {
        let mut meta = Meta::default();
        read_stream(doc, &Prefilter::all(), &mut meta, &mut |_, _| {})
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn event_errors_name_offsets_in_the_file() {
        // serde's own position is line 2 column 12 of the event.
        let doc = b"{\"traceEvents\": [{},\n  {\"ph\": \"X\",\n   \"pid\": tru, \"ts\": 1}]}";
        let msg = first_error(doc);
        let at = doc.iter().position(|&b| b == b'u').unwrap() + 1;
        assert!(msg.starts_with("event 1 at byte 23: "), "{msg}");
        assert!(msg.ends_with(&format!("at byte {at}")), "{msg}");
        assert!(!msg.contains("line"), "{msg}");
        let doc = b"{\"traceEvents\": [{\"ph\": \"X\", \"dur\": 1, \"ts\": \"soon\"}]}";
        let msg = first_error(doc);
        assert!(
            msg.ends_with("`ts` at byte 45: `\"soon\"` is not a number"),
            "{msg}"
        );
    }

    #[test]
    fn long_values_in_messages_are_cut() {
        let long = "z".repeat(100_000);
        let doc = format!("{{\"traceEvents\": [{{\"args\": \"{long}\"}}]}}");
        let msg = first_error(doc.as_bytes());
        assert!(msg.len() < 300, "{msg}");
        assert!(msg.contains("… (100000 bytes)"), "{msg}");
        let doc = format!("{{\"traceEvents\": [{{\"ts\": \"{long}\\u0000\"}}]}}");
        let msg = first_error(doc.as_bytes());
        assert!(msg.len() < 300, "{msg}");
        let doc = "{\"traceEvents\": [{\"name\": \"a\u{1b}[31m\u{0}\"}]}";
        let msg = first_error(doc.as_bytes());
        assert!(!msg.contains('\u{1b}') && !msg.contains('\0'), "{msg}");
    }

    #[test]
    fn begin_and_end_events_pass_through() {
        let doc =
            br#"{"traceEvents": [{"ph": "B", "name": "a", "ts": 1}, {"ph": "E", "ts": 2.5}]}"#;
        let mut meta = Meta::default();
        let mut seen = Vec::new();
        read_stream(&doc[..], &Prefilter::all(), &mut meta, &mut |e, _| {
            seen.push((e.ph.to_string(), e.ts, e.dur))
        })
        .unwrap();
        use crate::model::Ns;
        assert_eq!(
            seen,
            [
                ("B".to_string(), Some(Ns(1000)), None),
                ("E".to_string(), Some(Ns(2500)), None)
            ]
        );
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("64M"), Some(64 << 20));
        assert_eq!(parse_size(" 1 GiB "), Some(1 << 30));
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("2kb"), Some(2048));
        for bad in ["", "0", "-1", "1.5G", "12X", "99999999999T"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }
}
