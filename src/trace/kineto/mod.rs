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
    let mut parsed = 0u64;
    let events = scan::scan_with(src, opts, meta, filter, &mut |raw, at| {
        let ev = event::parse_event(raw, at)?;
        parsed += 1;
        on_event(&ev, at);
        Ok(())
    })?;
    if !meta.has_events {
        return Err(ReadError::NoTraceEvents);
    }
    Ok(ReadStats { events, parsed })
}
