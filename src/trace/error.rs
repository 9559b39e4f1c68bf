//! What can go wrong reading a trace, as one typed error per cause.
//!
//! Every message is one line that says what is wrong and where (a byte
//! offset in the decompressed JSON text) and how many events were read
//! before it, because the analyses still report on those. Whatever a message
//! quotes from the input is cut and escaped ([`super::message`]).

use super::message::size;
use std::io;

/// The environment variable that raises (or lowers) the limit on one event;
/// named in the message of [`ReadError::EventTooLarge`].
pub const MAX_EVENT_SIZE_ENV: &str = "TORCHTRACE_MAX_EVENT_SIZE";

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
    /// Only whitespace (and perhaps a byte-order mark): nothing to read.
    #[error("no events: only whitespace ({bytes} bytes)")]
    OnlyWhitespace { bytes: u64 },
    #[error("not a trace: neither gzip nor JSON ({found})")]
    NotTrace { found: String },
    #[error("data ends early or is corrupt after byte {offset} of the JSON text ({events} events read intact): {source}")]
    Decode {
        offset: u64,
        events: u64,
        source: io::Error,
    },
    /// The gzip trailer (CRC-32 and length) of a member does not match what
    /// was inflated: some of the text, anywhere before `offset`, is wrong,
    /// so the events read from it cannot be trusted.
    #[error("gzip checksum mismatch (CRC-32 or length) after byte {offset} of the JSON text: the data is corrupt somewhere before it ({events} events were read from it, some may be wrong)")]
    Checksum { offset: u64, events: u64 },
    /// An archive member's own checksum (a zip entry's CRC-32) does not
    /// match: the member is corrupt somewhere before `offset`.
    #[error("zip member checksum mismatch (CRC-32) after byte {offset} of the JSON text: the member is corrupt somewhere before it ({events} events were read from it, some may be wrong)")]
    MemberChecksum { offset: u64, events: u64 },
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
    /// One event is longer than the limit ([`super::ReadOptions`]); it is
    /// never held whole, so memory stays bounded on any input.
    #[error("event {events} at byte {offset} is larger than the {} limit on one event (set {MAX_EVENT_SIZE_ENV}, e.g. to 1G, to raise it) ({events} events read intact)", size(*limit))]
    EventTooLarge {
        offset: u64,
        events: u64,
        limit: u64,
    },
    /// A top-level value (metadata beside `traceEvents`) that torchtrace
    /// reads is longer than the limit. (Values it does not read are skipped
    /// without being held, whatever their size.)
    #[error("the value of top-level key \"{key}\" at byte {offset} is larger than the {} limit (set {MAX_EVENT_SIZE_ENV}, e.g. to 1G, to raise it) ({events} events read intact)", size(*limit))]
    ValueTooLarge {
        key: String,
        offset: u64,
        events: u64,
        limit: u64,
    },
    /// Something other than whitespace after the end of the JSON document
    /// (garbage, NULs, a second document).
    #[error("unexpected data after the end of the JSON document, at byte {offset}: {found} ({events} events read intact)")]
    TrailingData {
        offset: u64,
        events: u64,
        found: String,
    },
    /// What the analyses keep would pass the trace's memory budget (issue
    /// 59: `batch --member-memory`): after `events` events they were fed
    /// no more, so the trace's figures are those of its first `events`.
    #[error("over its memory budget of {}: the analyses were fed its first {events} events of the {wanted} they take (they keep at most {per_event} B per event; batch --member-memory {}M or more reads it whole)", size(*budget), wanted.saturating_mul(*per_event).div_ceil(1 << 20))]
    OverBudget {
        events: u64,
        budget: u64,
        per_event: u64,
        /// Every event the analyses would have been fed (counted to the
        /// end of the read): what the whole trace needs.
        wanted: u64,
    },
    /// The process held more than three quarters of the memory it may
    /// use (`limit`, measured as the kernel counts it: `crate::memory`)
    /// while this trace was the only one read: it cannot fit. Its
    /// analyses were fed its first `events` events.
    #[error("needs more memory than the process may use, {limit}: it held {} when its analyses had been fed {events} of the {wanted} events they take; the figures are those of the events before (batch --memory SIZE sets the limit)", size(*used))]
    OverMemory {
        events: u64,
        wanted: u64,
        used: u64,
        limit: String,
    },
    /// Read whole, alone, its finishes met the limit (an allocation
    /// failed, or the process held past three quarters of it once the
    /// read ended): its figures are dropped.
    #[error("needs more memory than the process may use, {limit}: its {events} events were read, and its analyses' finishes met the limit (it held {} then); no figures are kept (batch --memory SIZE sets the limit)", size(*used))]
    OverMemoryFinishing {
        events: u64,
        used: u64,
        limit: String,
    },
}

impl ReadError {
    /// How many events were read before the error.
    pub fn events_read(&self) -> u64 {
        match self {
            ReadError::Decode { events, .. }
            | ReadError::Checksum { events, .. }
            | ReadError::MemberChecksum { events, .. }
            | ReadError::Truncated { events, .. }
            | ReadError::Syntax { events, .. }
            | ReadError::EventTooLarge { events, .. }
            | ReadError::ValueTooLarge { events, .. }
            | ReadError::TrailingData { events, .. }
            | ReadError::OverBudget { events, .. }
            | ReadError::OverMemory { events, .. }
            | ReadError::OverMemoryFinishing { events, .. } => *events,
            ReadError::BadEvent { index, .. } => *index,
            _ => 0,
        }
    }

    /// Where in the decompressed JSON text the problem is (`None` when the
    /// file could not be opened or holds no JSON to point into).
    pub fn offset(&self) -> Option<u64> {
        match self {
            ReadError::Decode { offset, .. }
            | ReadError::Checksum { offset, .. }
            | ReadError::MemberChecksum { offset, .. }
            | ReadError::Truncated { offset, .. }
            | ReadError::Syntax { offset, .. }
            | ReadError::BadEvent { offset, .. }
            | ReadError::EventTooLarge { offset, .. }
            | ReadError::ValueTooLarge { offset, .. }
            | ReadError::TrailingData { offset, .. } => Some(*offset),
            ReadError::Open(_)
            | ReadError::Io(_)
            | ReadError::Empty
            | ReadError::OnlyWhitespace { .. }
            | ReadError::NotTrace { .. }
            | ReadError::NoTraceEvents
            | ReadError::OverBudget { .. }
            | ReadError::OverMemory { .. }
            | ReadError::OverMemoryFinishing { .. } => None,
        }
    }

    /// The same error with `events` events read (a read that stopped
    /// earlier, at a bad event, after the source failed).
    pub(crate) fn with_events(mut self, n: u64) -> ReadError {
        match &mut self {
            ReadError::Decode { events, .. }
            | ReadError::Checksum { events, .. }
            | ReadError::MemberChecksum { events, .. }
            | ReadError::Truncated { events, .. }
            | ReadError::Syntax { events, .. }
            | ReadError::EventTooLarge { events, .. }
            | ReadError::ValueTooLarge { events, .. }
            | ReadError::TrailingData { events, .. }
            | ReadError::OverBudget { events, .. }
            | ReadError::OverMemory { events, .. }
            | ReadError::OverMemoryFinishing { events, .. } => *events = n,
            _ => {}
        }
        self
    }

    /// An error of the decompressing reader at `offset`: a checksum mismatch
    /// gets its own variant, the rest (a cut or corrupt deflate stream) stay
    /// [`ReadError::Decode`].
    pub(crate) fn decode(source: io::Error, offset: u64, events: u64) -> ReadError {
        if source
            .get_ref()
            .is_some_and(|e| e.is::<MemberChecksumError>())
        {
            return ReadError::MemberChecksum { offset, events };
        }
        // flate2 reports a trailer mismatch only through its message.
        let text = source.to_string();
        if text.contains("checksum") {
            ReadError::Checksum { offset, events }
        } else {
            ReadError::Decode {
                offset,
                events,
                source,
            }
        }
    }
}

/// The inner error of the `io::Error` an archive reader gives for a
/// member whose own checksum does not match (made by `batch` from the zip
/// reader's "Invalid checksum"), so that `ReadError::decode` reports a
/// [`ReadError::MemberChecksum`], not a gzip one.
#[derive(Debug, thiserror::Error)]
#[error("zip member checksum mismatch (CRC-32)")]
pub struct MemberChecksumError;

/// A [`ReadError`] with the file it happened in. (The kind is part of the
/// message, not a `source`, so `{:#}` prints it once.)
#[derive(Debug, thiserror::Error)]
#[error("{path}: {kind}")]
pub struct TraceError {
    pub path: String,
    pub kind: ReadError,
}
