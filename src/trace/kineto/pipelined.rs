//! The pipelined read: the scanner on its own thread, parsing on the
//! caller's, so that inflating, scanning and parsing overlap.
//!
//! ```text
//!  inflate thread (pipe.rs)   scanner thread                    caller's thread
//!  gzip → 1 MB chunks ──────► block scanner + prefilter ──────► parse (extract / serde)
//!                             admitted events copied into        → on_event, in file order
//!                             batches of ~256 KB ─── channel ──►
//!                             (DEPTH batches in flight, one   ◄── batches come back
//!                             if it is large; spent ones are      for reuse
//!                             reused)
//!                             end: the scan's outcome + Meta ──►
//! ```
//!
//! A full-parse analysis (the ledger's launch calls and GPU activities,
//! ~22 % of a vLLM trace's events) spends about as long parsing as
//! scanning; in one thread the two add up while the inflate thread waits.
//!
//! Same events, same order, same errors as [`super::read`]: batches keep
//! file order; the scan's own outcome comes after its last event; a parse
//! error stops the read there (the scanner, blocked on a full channel or
//! not, stops at its next send, and what it found after is dropped, as
//! the serial read never gets to it). `tests/pipelined.rs` compares the two
//! on every real and damaged trace.

use super::super::{Event, EventPos, Meta, Prefilter, ReadError, ReadOptions, ReadStats};
use super::{event, scan};
use std::cell::Cell;
use std::io::{self, Read};
use std::ops::Range;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Admitted bytes per batch before it is sent.
const BATCH_BYTES: usize = 256 << 10;

/// Batches in flight (memory: about DEPTH × BATCH_BYTES).
const DEPTH: usize = 4;

/// A batch this large (an event of several MB in it) is the only one in
/// flight: the scanner waits until it is parsed and then frees it, so
/// memory stays about one event (the limit) above the serial read's,
/// however many large events follow one another.
const BIG: usize = 4 * BATCH_BYTES;

/// Admitted events, their bytes back to back.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    events: Vec<(EventPos, Range<usize>)>,
}

enum Msg {
    /// The metadata as the events array starts (what a read that stops at
    /// a bad event has).
    Start(Box<Meta>),
    Events(Batch),
    /// The source failed (a cut or corrupt gzip stream) before the events
    /// that follow were delivered: the serial scanner then reports that
    /// failure, not a bad event among them.
    SourceFailed,
    /// The scan ended (its count, or its error) and the metadata it read.
    End(Result<u64, ReadError>, Box<Meta>),
}

/// [`super::read`] with the scanner on a second thread (see the module
/// docs): the same events, in the same order, to `on_event`.
pub fn read<R: Read + Send>(
    src: R,
    opts: &ReadOptions,
    filter: &Prefilter,
    meta: &mut Meta,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
) -> Result<ReadStats, ReadError> {
    let (full_tx, full_rx) = sync_channel::<Msg>(DEPTH);
    let (spent_tx, spent_rx) = sync_channel::<Batch>(DEPTH + 2);
    std::thread::scope(|s| {
        let scanner = std::thread::Builder::new()
            .name("torchtrace-scan".into())
            .spawn_scoped(s, move || produce(src, opts, filter, full_tx, spent_rx));
        let outcome = consume(&full_rx, &spent_tx, meta, on_event);
        // Unblocks a scanner still sending, or waiting for a big batch
        // (after a parse error).
        drop(full_rx);
        drop(spent_tx);
        let joined = match scanner {
            Ok(h) => h.join().is_ok(),
            Err(_) => false,
        };
        match outcome {
            Some(r) => r,
            // The scanner stopped without its outcome: a bug, said so.
            None => Err(ReadError::Io(io::Error::other(if joined {
                "the scanning thread stopped before the end of the data"
            } else {
                "the scanning thread could not run or stopped early"
            }))),
        }
    })
}

/// The scanner's side: every admitted event into batches, then the end.
fn produce<R: Read>(
    src: R,
    opts: &ReadOptions,
    filter: &Prefilter,
    full: SyncSender<Msg>,
    spent: Receiver<Batch>,
) {
    let mut meta = Meta::default();
    let mut batch = Batch::default();
    let failed = Cell::new(false);
    let mut told = false;
    let src = Watch {
        inner: src,
        failed: &failed,
    };
    let full_ref = &full;
    let mut on_start = |m: &Meta| {
        let _ = full_ref.send(Msg::Start(Box::new(m.clone())));
    };
    let res = scan::scan_with_start(
        src,
        opts,
        &mut meta,
        filter,
        &mut on_start,
        &mut |raw, at| {
            if failed.get() && !told {
                told = true;
                let before = std::mem::take(&mut batch);
                let sent = before.events.is_empty() || full_ref.send(Msg::Events(before)).is_ok();
                if !sent || full_ref.send(Msg::SourceFailed).is_err() {
                    return Err(ReadError::Io(io::Error::other("reader gone")));
                }
            }
            let from = batch.bytes.len();
            batch.bytes.extend_from_slice(raw);
            batch.events.push((at, from..batch.bytes.len()));
            if batch.bytes.len() >= BATCH_BYTES {
                let mut next = spent.try_recv().unwrap_or_default();
                next.bytes.clear();
                next.events.clear();
                let full_batch = std::mem::replace(&mut batch, next);
                let big = full_batch.bytes.capacity() >= BIG;
                if full_ref.send(Msg::Events(full_batch)).is_err() || big && !big_came_back(&spent)
                {
                    // The caller stopped (a parse error): so do we.
                    return Err(ReadError::Io(io::Error::other("reader gone")));
                }
            }
            Ok(())
        },
    );
    if !batch.events.is_empty() && full.send(Msg::Events(batch)).is_err() {
        return;
    }
    let _ = full.send(Msg::End(res, Box::new(meta)));
}

/// Waits until the caller has parsed the big batch just sent (it sends
/// back every batch up to that one, in order, the big one waiting for room),
/// dropping them; false when the caller stopped.
fn big_came_back(spent: &Receiver<Batch>) -> bool {
    loop {
        match spent.recv() {
            Ok(b) if b.bytes.capacity() >= BIG => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
}

/// After a bad event at `index` that came after the source failed: the
/// source's error, as the serial read reports it when it stops there.
fn source_error(full: &Receiver<Msg>, index: u64) -> Option<Result<ReadStats, ReadError>> {
    loop {
        if let Msg::End(res, _) = full.recv().ok()? {
            return Some(Err(match res {
                Err(e) => e.with_events(index),
                Ok(_) => ReadError::Io(io::Error::other("the source failed, then did not")),
            }));
        }
    }
}

/// A source that remembers whether it failed (the scanner holds a
/// failure back until the text before it is scanned).
struct Watch<'a, R> {
    inner: R,
    failed: &'a Cell<bool>,
}

impl<R: Read> Read for Watch<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let r = self.inner.read(out);
        if r.as_ref()
            .is_err_and(|e| e.kind() != io::ErrorKind::Interrupted)
        {
            self.failed.set(true);
        }
        r
    }
}

/// The caller's side: parse and deliver each event; `None` when the
/// scanner went away without saying how the scan ended.
fn consume(
    full: &Receiver<Msg>,
    spent: &SyncSender<Batch>,
    meta: &mut Meta,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
) -> Option<Result<ReadStats, ReadError>> {
    let mut parsed = 0u64;
    let mut source_failed = false;
    loop {
        match full.recv().ok()? {
            Msg::Start(m) => *meta = *m,
            Msg::SourceFailed => source_failed = true,
            Msg::Events(batch) => {
                for (at, range) in &batch.events {
                    let ev = match event::parse_event(&batch.bytes[range.clone()], *at) {
                        Ok(ev) => ev,
                        Err(_) if source_failed => return source_error(full, at.index),
                        Err(e) => return Some(Err(e)),
                    };
                    parsed += 1;
                    on_event(&ev, *at);
                }
                if batch.bytes.capacity() >= BIG {
                    // The scanner waits for it (see `big_came_back`); it
                    // is gone when the scan has ended.
                    let _ = spent.send(batch);
                } else {
                    let _ = spent.try_send(batch);
                }
            }
            Msg::End(res, m) => {
                *meta = *m;
                return Some(res.and_then(|events| {
                    if !meta.has_events {
                        return Err(ReadError::NoTraceEvents);
                    }
                    Ok(ReadStats { events, parsed })
                }));
            }
        }
    }
}
