//! The pipelined read: inflating, scanning and parsing overlap on their
//! own threads; the analyses are fed on the caller's thread, in file order.
//!
//! ```text
//!  inflate thread     scanner thread               parse workers (0..N)      caller's thread
//!  (pipe.rs)
//!  gzip → ½ MB ─────► block scanner + prefilter;   batch k goes to worker    takes batch k from worker
//!  chunks             admitted events copied into  k mod N, which parses     k mod N (k = 0, 1, 2, …:
//!                     batches of ~128 KB, numbered it whole (extract /       file order), rebuilds each
//!                     in file order ─────────────► serde) into `Parsed` ───► Event from its spans
//!                                                  events (parsed.rs)        → on_event
//!                     ◄──────────────────────────────── spent batches come back for reuse ──┘
//!                     end: the scan's outcome + Meta (through the same lanes, in order)
//!
//!  N = 0 (one or two cores, -j 1/2): no workers; the scanner's batches go
//!  straight to the caller's thread, which parses them itself.
//! ```
//!
//! A full-parse analysis (the ledger's launch calls and GPU activities,
//! ~22 % of a vLLM trace's events) spends about three quarters of the
//! caller's thread parsing and a fifth in the analyses' `on_event`
//! (`perf`, `kernels` on the 1.1 GB benchmark trace); with workers parsing,
//! what is left for that thread is rebuilding the events and feeding.
//!
//! Order without a reorder buffer: the scanner deals batches round-robin
//! and the caller collects them round-robin, so batch k is always the next
//! message of lane k mod N; each lane is a pair of bounded channels, so
//! memory stays about DEPTH × BATCH_BYTES per worker (one batch waiting for
//! it, one in hand, two parsed). A lane's worker also passes on the
//! scanner's other messages (start, source failed, end) unchanged, in turn.
//!
//! Same events, same order, same errors as [`super::read`]: batches keep
//! file order; the scan's own outcome comes after its last event; a parse
//! error ends the batch's parsing there and the caller stops at that event
//! (the scanner and workers, blocked on a full channel or not, stop at
//! their next send, and what they found after is dropped, as the serial
//! read never gets to it). `tests/it/pipelined.rs` compares the two on every
//! real and damaged trace, with 0, 1, 2 and 4 workers.

use super::super::{Event, EventPos, Meta, Prefilter, ReadError, ReadOptions, ReadStats};
use super::parsed::{Parsed, Src};
use super::{event, scan};
use std::cell::Cell;
use std::io::{self, Read};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::{Builder, ScopedJoinHandle};

/// Admitted bytes per batch before it is sent. With 8 parse workers the
/// batches in flight (their bytes and their parsed events, each about
/// this size) held 22 MB at 256 KB, `ops`' peak at 1.28 GB on 16 cores
/// (BENCHMARKS.md, nineteenth measurement); at 128 KB a message is still
/// ~500 events.
const BATCH_BYTES: usize = 128 << 10;

/// Batches in flight between the scanner and the caller without workers,
/// and per worker with them (memory: about DEPTH × BATCH_BYTES each).
const DEPTH: usize = 4;

/// Per worker: batches waiting for it, and parsed batches waiting for the
/// caller (with the one in its hands, DEPTH).
const LANE_IN: usize = 1;
const LANE_OUT: usize = DEPTH - 1 - LANE_IN;

/// The most parse workers one read uses. Four already parse faster than
/// one thread inflates (the parse is ~1× the inflate's CPU time on the
/// benchmark trace); more only hold memory.
pub const MAX_WORKERS: usize = 8;

/// Sets the parse workers of every file's read (0: the caller parses), in
/// place of the share of `-j` (see [`claim_workers`]); for measuring.
pub const PARSE_WORKERS_ENV: &str = "TORCHTRACE_PARSE_WORKERS";

/// A batch this large (an event of several MB in it) is the only one in
/// flight: the scanner waits until it is parsed and then frees it, so
/// memory stays about one event (the limit) above the serial read's,
/// however many large events follow one another.
const BIG: usize = 4 * BATCH_BYTES;

/// Admitted events, their bytes back to back; after a worker had it, the
/// events it parsed and the error that stopped it.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    /// Set by a worker: `bytes`, moved here once checked as UTF-8 whole
    /// (empty when they are not, or when no worker had the batch).
    text: String,
    events: Vec<(EventPos, Range<usize>)>,
    /// Set by a worker: `parsed` holds the first events, in order.
    on_worker: bool,
    parsed: Vec<Parsed>,
    /// The event after the last of `parsed`, and its parse error.
    failure: Option<(EventPos, ReadError)>,
    /// Set by a worker: how many of `parsed` have an `args.correlation`
    /// past i128 (`event::parse_event_into_counting`).
    past_i128: u64,
}

impl Batch {
    /// Empties a spent batch for reuse (keeping its allocations).
    fn clear(&mut self) {
        self.unchecked();
        self.bytes.clear();
        self.events.clear();
        self.parsed.clear();
        self.on_worker = false;
        self.failure = None;
        self.past_i128 = 0;
    }

    /// The bytes back from `text` (the allocation kept).
    fn unchecked(&mut self) {
        if self.text.capacity() > 0 {
            self.bytes = std::mem::take(&mut self.text).into_bytes();
        }
    }

    /// `bytes` as checked text when they are UTF-8 (std's check; the
    /// feeder then slices the strings back without checking them).
    fn check(&mut self) {
        match String::from_utf8(std::mem::take(&mut self.bytes)) {
            Ok(t) => self.text = t,
            Err(e) => self.bytes = e.into_bytes(),
        }
    }
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

/// The scanner's end: message k to lane k mod N.
struct Fanout {
    lanes: Vec<SyncSender<Msg>>,
    next: Cell<usize>,
}

impl Fanout {
    /// False when the lane is gone (the caller stopped).
    fn send(&self, msg: Msg) -> bool {
        let k = self.next.get();
        self.next.set((k + 1) % self.lanes.len().max(1));
        self.lanes.get(k).is_some_and(|tx| tx.send(msg).is_ok())
    }
}

/// The caller's end: message k from lane k mod N.
struct Fanin {
    lanes: Vec<Receiver<Msg>>,
    next: usize,
}

impl Fanin {
    /// `None` when the lane's sender went away without the end.
    fn recv(&mut self) -> Option<Msg> {
        let k = self.next;
        self.next = (k + 1) % self.lanes.len().max(1);
        self.lanes.get(k)?.recv().ok()
    }
}

/// A worker's two channel ends: batches in, parsed batches out.
type Lane = (Receiver<Msg>, SyncSender<Msg>);

/// The channels for `workers` workers (none: scanner → caller directly).
fn channels(workers: usize) -> (Fanout, Fanin, Vec<Lane>) {
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    if workers == 0 {
        let (tx, rx) = sync_channel::<Msg>(DEPTH);
        out.0.push(tx);
        out.1.push(rx);
    }
    for _ in 0..workers {
        let (in_tx, in_rx) = sync_channel::<Msg>(LANE_IN);
        let (out_tx, out_rx) = sync_channel::<Msg>(LANE_OUT);
        out.0.push(in_tx);
        out.1.push(out_rx);
        out.2.push((in_rx, out_tx));
    }
    let fanout = Fanout {
        lanes: out.0,
        next: Cell::new(0),
    };
    let fanin = Fanin {
        lanes: out.1,
        next: 0,
    };
    (fanout, fanin, out.2)
}

/// [`super::read`] with the scanner on a second thread and no parse
/// workers (see the module docs): the same events, in the same order, to
/// `on_event`.
pub fn read<R: Read + Send>(
    src: R,
    opts: &ReadOptions,
    filter: &Prefilter,
    meta: &mut Meta,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
) -> Result<ReadStats, ReadError> {
    read_with_workers(src, opts, filter, meta, on_event, 0)
}

/// [`read`] with `workers` parse workers (at most [`MAX_WORKERS`]; 0: the
/// caller parses): the same events, in the same order, to `on_event`,
/// which runs on the caller's thread.
pub fn read_with_workers<R: Read + Send>(
    src: R,
    opts: &ReadOptions,
    filter: &Prefilter,
    meta: &mut Meta,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
    workers: usize,
) -> Result<ReadStats, ReadError> {
    let workers = workers.min(MAX_WORKERS);
    let (fanout, mut fanin, lanes) = channels(workers);
    // Room for every batch in flight, so that spent ones are all reused.
    let (spent_tx, spent_rx) = sync_channel::<Batch>(DEPTH * (workers + 1) + 2);
    std::thread::scope(|s| {
        let scanner = Builder::new()
            .name("torchtrace-scan".into())
            .spawn_scoped(s, move || produce(src, opts, filter, fanout, spent_rx));
        // A worker that cannot start drops its lane: the scanner's and the
        // caller's next use of it fail, and the read ends with an error.
        let parsers: Vec<_> = lanes
            .into_iter()
            .enumerate()
            .map(|(k, (rx, tx))| {
                Builder::new()
                    .name(format!("torchtrace-parse{k}"))
                    .spawn_scoped(s, move || work(&rx, &tx))
            })
            .collect();
        let mut past_i128 = 0u64;
        let outcome = consume(&mut fanin, &spent_tx, meta, on_event, &mut past_i128);
        super::note_past_i128(meta, past_i128);
        // Unblocks a scanner or worker still sending, or a scanner waiting
        // for a big batch (after a parse error).
        drop(fanin);
        drop(spent_tx);
        let joined = parsers
            .into_iter()
            .fold(joined(scanner), |ok, p| joined(p) && ok);
        if workers > 0 {
            release_workers_memory();
        }
        match outcome {
            Some(r) => r,
            // A thread stopped without the scan's outcome: a bug, said so.
            None => Err(ReadError::Io(io::Error::other(if joined {
                "the scanning thread stopped before the end of the data"
            } else {
                "a reading thread could not run or stopped early"
            }))),
        }
    })
}

/// Gives the parse workers' freed batches back to the system. Each worker
/// thread allocates in a glibc arena of its own, which keeps what its
/// batches held once they are freed; the analyses' finish then allocates
/// beside it on the caller's thread: 1.6 MB more peak RSS for `ops` at
/// 1.28 GB with 8 workers (BENCHMARKS.md, nineteenth measurement).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_workers_memory() {
    // SAFETY: malloc_trim only returns free memory of glibc's arenas to
    // the system; it takes the arenas' locks itself and touches no block
    // in use.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_workers_memory() {}

/// Whether a thread started and ended without a panic.
fn joined(h: io::Result<ScopedJoinHandle<'_, ()>>) -> bool {
    h.is_ok_and(|h| h.join().is_ok())
}

/// A worker: parses each batch of its lane, passing every message on in
/// the order it came.
fn work(input: &Receiver<Msg>, output: &SyncSender<Msg>) {
    while let Ok(mut msg) = input.recv() {
        if let Msg::Events(batch) = &mut msg {
            parse_batch(batch);
        }
        if output.send(msg).is_err() {
            return; // the caller stopped
        }
    }
}

/// Parses a batch's events up to the first that fails (what the caller
/// would have parsed before stopping).
fn parse_batch(batch: &mut Batch) {
    batch.on_worker = true;
    batch.parsed.clear();
    batch.parsed.reserve(batch.events.len());
    batch.past_i128 = 0;
    let mut ev = Event::empty();
    for (at, range) in &batch.events {
        let raw = &batch.bytes[range.clone()];
        match event::parse_event_into_counting(raw, *at, &mut ev, &mut batch.past_i128) {
            Ok(()) => batch.parsed.push(Parsed::of(&ev, &batch.bytes)),
            Err(e) => {
                batch.failure = Some((*at, e));
                break;
            }
        }
    }
    batch.check();
}

/// The scanner's side: every admitted event into batches, then the end.
fn produce<R: Read>(
    src: R,
    opts: &ReadOptions,
    filter: &Prefilter,
    full: Fanout,
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
        // A caller gone is seen at the first batch.
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
                let sent = before.events.is_empty() || full_ref.send(Msg::Events(before));
                if !sent || !full_ref.send(Msg::SourceFailed) {
                    return Err(gone());
                }
            }
            let from = batch.bytes.len();
            batch.bytes.extend_from_slice(raw);
            batch.events.push((at, from..batch.bytes.len()));
            if batch.bytes.len() >= BATCH_BYTES {
                let mut next = spent.try_recv().unwrap_or_default();
                next.clear();
                let full_batch = std::mem::replace(&mut batch, next);
                let big = full_batch.bytes.capacity() >= BIG;
                if !full_ref.send(Msg::Events(full_batch)) || big && !big_came_back(&spent) {
                    // The caller stopped (a parse error): so do we.
                    return Err(gone());
                }
            }
            Ok(())
        },
    );
    if !batch.events.is_empty() && !full.send(Msg::Events(batch)) {
        return;
    }
    let _ = full.send(Msg::End(res, Box::new(meta)));
}

/// What the scanner's callback answers once the caller has stopped (never
/// seen: the caller has its own outcome by then).
fn gone() -> ReadError {
    ReadError::Io(io::Error::other("reader gone"))
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
fn source_error(full: &mut Fanin, index: u64) -> Option<Result<ReadStats, ReadError>> {
    loop {
        if let Msg::End(res, _) = full.recv()? {
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

/// How a batch's delivery ended: every event delivered, or the event that
/// failed to parse (where it is, and its error).
type Delivered = Result<(), (EventPos, ReadError)>;

/// The caller's side: deliver each event (parsing it here when no worker
/// did); `None` when a thread went away without saying how the scan ended.
fn consume(
    full: &mut Fanin,
    spent: &SyncSender<Batch>,
    meta: &mut Meta,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
    past_i128: &mut u64,
) -> Option<Result<ReadStats, ReadError>> {
    let mut parsed = 0u64;
    let mut source_failed = false;
    loop {
        match full.recv()? {
            Msg::Start(m) => *meta = *m,
            Msg::SourceFailed => source_failed = true,
            Msg::Events(mut batch) => {
                let delivered = if batch.on_worker {
                    deliver_parsed(&mut batch, &mut parsed, on_event, past_i128)
                } else {
                    parse_and_deliver(&batch, &mut parsed, on_event, past_i128)
                };
                match delivered {
                    Ok(()) => give_back(batch, spent),
                    Err((at, _)) if source_failed => return source_error(full, at.index),
                    Err((_, e)) => return Some(Err(e)),
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

/// Parses and delivers a batch's events on this thread (no workers).
fn parse_and_deliver(
    batch: &Batch,
    parsed: &mut u64,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
    past_i128: &mut u64,
) -> Delivered {
    // One event, filled in place for each (`event::parse_event_into`).
    let mut ev = Event::empty();
    for (at, range) in &batch.events {
        let raw = &batch.bytes[range.clone()];
        event::parse_event_into_counting(raw, *at, &mut ev, past_i128).map_err(|e| (*at, e))?;
        *parsed += 1;
        on_event(&ev, *at);
    }
    Ok(())
}

/// Delivers the events a worker parsed, then its error if it stopped at one.
fn deliver_parsed(
    batch: &mut Batch,
    parsed: &mut u64,
    on_event: &mut dyn FnMut(&Event<'_>, EventPos),
    past_i128: &mut u64,
) -> Delivered {
    let Batch {
        bytes,
        text,
        events,
        parsed: ps,
        failure,
        past_i128: counted,
        ..
    } = batch;
    *past_i128 += std::mem::take(counted);
    let src = Src::of(text, bytes);
    // One parsed event per event, in order, from the first.
    for (p, &(at, ref range)) in ps.iter().zip(&*events) {
        let ev = match p.event(src) {
            Some(ev) => ev,
            // Not reached (spans are text of these bytes); parsed again
            // rather than trusted.
            None => event::parse_event(&src.raw()[range.clone()], at).map_err(|e| (at, e))?,
        };
        *parsed += 1;
        on_event(&ev, at);
    }
    ps.clear();
    failure.take().map_or(Ok(()), Err)
}

/// Hands a spent batch back to the scanner for reuse.
fn give_back(mut batch: Batch, spent: &SyncSender<Batch>) {
    batch.unchecked();
    if batch.bytes.capacity() >= BIG {
        // The scanner waits for it (see `big_came_back`); it is gone when
        // the scan has ended.
        let _ = spent.send(batch);
    } else {
        let _ = spent.try_send(batch);
    }
}

/// Parse workers held by the reads in progress (see [`claim_workers`]).
static IN_USE: AtomicUsize = AtomicUsize::new(0);

/// Parse workers for one read, given back when dropped.
#[derive(Debug)]
pub struct Workers {
    count: usize,
    /// Whether `count` was taken from the process's share ([`IN_USE`]).
    shared: bool,
}

impl Workers {
    /// How many to start.
    pub fn count(&self) -> usize {
        self.count
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        if self.shared {
            IN_USE.fetch_sub(self.count, Ordering::Relaxed);
        }
    }
}

/// The parse workers for the read of one file: [`PARSE_WORKERS_ENV`] when
/// set, else a share of the worker threads (`-j`, rayon's pool): all
/// reads in progress together hold at most that many less two (a file's
/// inflate and scan threads run anyway), and one read at most
/// [`MAX_WORKERS`], and never more than the cores there are less two. So
/// `-j 1` and `-j 2` (and two cores, whatever `-j`: `-j 16` there ran 8
/// workers on 2 cores, 8 % more CPU time and more memory for no speed)
/// parse on the caller's thread as before, and files read side by side do
/// not each start a pool: the first take the workers, later ones none.
pub fn claim_workers() -> Workers {
    if let Some(n) = std::env::var(PARSE_WORKERS_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        return Workers {
            count: n.min(MAX_WORKERS),
            shared: false,
        };
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let share = rayon::current_num_threads().min(cores).saturating_sub(2);
    let mut count = 0;
    // Never fails: the closure always answers.
    let _ = IN_USE.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
        count = share.saturating_sub(used).min(MAX_WORKERS);
        Some(used + count)
    });
    Workers {
        count,
        shared: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(events: usize) -> Vec<u8> {
        let mut d = String::from("{\"traceEvents\": [");
        for i in 0..events {
            if i > 0 {
                d.push(',');
            }
            d.push_str(&format!(
                "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\\\"{i}\", \"pid\": 0, \"tid\": \"s\", \"ts\": {i}.5, \"dur\": 1}}"
            ));
        }
        d.push_str("]}");
        d.into_bytes()
    }

    fn names(workers: usize, data: &[u8]) -> (Vec<String>, u64) {
        let mut meta = Meta::default();
        let mut seen = Vec::new();
        let stats = read_with_workers(
            data,
            &ReadOptions::default(),
            &Prefilter::all(),
            &mut meta,
            &mut |ev, at| seen.push(format!("{} {} {:?}", at.index, ev.name, ev.ts)),
            workers,
        )
        .unwrap();
        assert_eq!(stats.events, stats.parsed);
        (seen, stats.events)
    }

    #[test]
    fn workers_deliver_in_file_order() {
        // ~5 MB: twenty batches or so, dealt over the workers.
        let data = doc(60_000);
        let serial = names(0, &data);
        assert_eq!(serial.1, 60_000);
        for w in [1, 2, 3, 8, 100] {
            assert_eq!(names(w, &data), serial, "{w} workers");
        }
    }

    /// Correlation ids past i128 (a 40-digit integer, ±, as a number or a
    /// string, the key spelled with an escape) are read as no id and
    /// counted in one note, by the serial reader and the pipelined one
    /// with and without workers alike; i128's own ends, `null`, a small id
    /// and a float are not counted. Many events, so that workers get
    /// batches.
    #[test]
    fn correlations_past_i128_are_counted_in_one_note() {
        let ids = [
            "1000000000000000000000000000000000000007",
            "-1000000000000000000000000000000000000007",
            "\"1000000000000000000000000000000000000007\"",
            "170141183460469231731687303715884105727",
            "-170141183460469231731687303715884105728",
            "null",
            "5",
            "1e40",
        ];
        let mut d = String::from("{\"traceEvents\": [");
        for i in 0..40_000 {
            let key = if i % 16 == 8 {
                "\\u0063orrelation"
            } else {
                "correlation"
            };
            let id = ids[i % ids.len()];
            d.push_str(&format!(
                "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": {i}, \"dur\": 1, \"args\": {{\"{key}\": {id}}}}},"
            ));
        }
        d.push_str("{}]}");
        // Counted: ids 0, 1 and 2 of every eight events.
        let note = "15000 event(s) carry an args.correlation past i128";
        let read = |workers: Option<usize>| {
            let mut meta = Meta::default();
            let mut none = 0u64;
            let mut on =
                |ev: &Event<'_>, _: EventPos| none += u64::from(ev.args.correlation.is_none());
            let f = Prefilter::all();
            let o = ReadOptions::default();
            match workers {
                None => super::super::read(d.as_bytes(), &o, &f, &mut meta, &mut on),
                Some(w) => read_with_workers(d.as_bytes(), &o, &f, &mut meta, &mut on, w),
            }
            .unwrap();
            (meta.notes, none)
        };
        let serial = read(None);
        assert_eq!(serial.0.len(), 1, "{:?}", serial.0);
        assert!(serial.0[0].starts_with(note), "{:?}", serial.0);
        // Past i128, null, 1e40 and the last `{}`: no id.
        assert_eq!(serial.1, 25_001);
        for w in [0, 1, 3] {
            assert_eq!(read(Some(w)), serial, "{w} workers");
        }
    }

    #[test]
    fn one_or_two_threads_mean_no_workers() {
        let with = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| claim_workers().count())
        };
        if std::env::var_os(PARSE_WORKERS_ENV).is_none() {
            assert_eq!(with(1), 0);
            assert_eq!(with(2), 0);
            // Reads of other tests may hold some of the share meanwhile.
            assert!(with(4) <= 2);
            assert!(with(64) <= MAX_WORKERS);
        }
    }
}
