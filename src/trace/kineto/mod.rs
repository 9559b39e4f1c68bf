//! Kineto's Chrome-trace JSON (what `torch.profiler` writes): the top-level
//! object with its metadata keys and the `traceEvents` array, read as a
//! stream ([`scan`], with the block scanner its child `scan::fast`), and each event's
//! JSON turned into the format-neutral [`Event`] ([`event`]; the common
//! shape by the hand-written extractor in `extract`, the rest by serde_json).

pub mod event;
pub(crate) mod extract;
mod meta;
mod parsed;
pub mod pipelined;
pub mod scan;
mod validate;

use super::{Event, EventPos, Meta, Prefilter, ReadError, ReadOptions, ReadStats};
use std::io::Read;

/// Reads a whole Kineto JSON text: every event the prefilter admits is
/// parsed and given to `on_event`; metadata goes into `meta`. The text is
/// read to its end (see [`scan`]).
pub fn read<R: Read>(
    src: R,
    opts: &ReadOptions,
    filter: &Prefilter,
    meta: &mut Meta,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
) -> Result<ReadStats, ReadError> {
    let (mut parsed, mut past_i128) = (0u64, 0u64);
    let scanned = scan::scan_with(src, opts, meta, filter, &mut |raw, at| {
        let ev = event::parse_event_counting(raw, at, &mut past_i128)?;
        parsed += 1;
        on_event(&ev, at);
        Ok(())
    });
    note_past_i128(meta, past_i128);
    let events = scanned?;
    if !meta.has_events {
        return Err(ReadError::NoTraceEvents);
    }
    Ok(ReadStats { events, parsed })
}

/// The reader's one note on the events whose `args.correlation` is an
/// integer past i128 (`event::correlation_past_i128`), when there are any:
/// read as no id, never silently (issue 59). Counted over the events the
/// prefilter admitted, so it is said by the analyses that read them.
fn note_past_i128(meta: &mut Meta, n: u64) {
    if n > 0 {
        meta.notes.push(format!(
            "{n} event(s) carry an args.correlation past i128 (an integer of 39+ digits, beyond the u64 ids Kineto writes); read as no id: they are linked to nothing"
        ));
    }
}
