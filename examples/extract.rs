//! The event extractor alone, against serde_json on the same events: the
//! cost of turning one event's bytes into an `Event`, without the read.
//!
//! ```text
//! cargo run --release --example extract FILE [PASSES]
//! ```
//!
//! Decodes FILE (gzip or plain JSON) into memory, slices every event with
//! the structural scanner, then times PASSES (default 7) passes of
//! `trace::parse_event` (the hand-written extractor, serde on its rare
//! fallbacks) and of `trace::parse_event_generic` (serde_json alone) over
//! all events, and prints the fastest pass of each and their ratio. Each
//! reads into one reused event, as torchtrace's readers do
//! (`parse_event_into`). One thread; the events are in memory, so inflate
//! and scan are not timed.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use torchtrace::trace::kineto::event;
use torchtrace::trace::{self, open, EventPos, Meta};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        anyhow::bail!("usage: extract FILE [PASSES]");
    };
    let passes: usize = args.get(1).map_or(Ok(7), |p| p.parse())?;
    let mut text = Vec::new();
    open::open_decoded(Path::new(path), Arc::default())?.read_to_end(&mut text)?;
    let mut events: Vec<(usize, usize, EventPos)> = Vec::new();
    trace::stream::scan(&text[..], &mut Meta::default(), &mut |raw, at| {
        events.push((at.offset as usize, raw.len(), at));
        Ok(())
    })?;
    let bytes: usize = events.iter().map(|e| e.1).sum();
    // The fastest of `passes` passes; the sum of the times read keeps the
    // work from being optimised away, and must agree between the paths.
    let time = |generic: bool| {
        let mut best = f64::MAX;
        let mut sum = 0i64;
        let mut ev = trace::Event::empty();
        for _ in 0..passes {
            let t = Instant::now();
            sum = 0;
            for &(offset, len, at) in &events {
                let raw = &text[offset..offset + len];
                let ok = if generic {
                    trace::parse_event_generic(raw, at).map(|e| ev = e)
                } else {
                    event::parse_event_into(raw, at, &mut ev)
                };
                if ok.is_ok() {
                    sum = sum.wrapping_add(ev.ts.map_or(0, |t| t.0));
                }
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        (best, sum)
    };
    let (fast, a) = time(false);
    let (serde, b) = time(true);
    anyhow::ensure!(a == b, "the two paths read different times");
    let n = events.len();
    for (name, s) in [("extractor", fast), ("serde_json", serde)] {
        println!(
            "{name:>10}: {n} events, {:.1} MB in {:.1} ms: {:.0} ns an event, {:.0} MB/s",
            bytes as f64 / 1e6,
            s * 1e3,
            s * 1e9 / n as f64,
            bytes as f64 / s / 1e6
        );
    }
    println!("extractor / serde_json: {:.3}", fast / serde);
    Ok(())
}
