//! Inflate-only yardstick for `bench/run.sh`: decompresses a gzip (or plain)
//! trace to a sink with the same flate2 backend torchtrace uses, on one
//! thread, and prints the decompressed byte count.
//!
//! ```text
//! cargo run --release --example inflate FILE            # inflate only
//! cargo run --release --example inflate FILE --scan     # + structural scan (every event sliced, none parsed)
//! cargo run --release --example inflate FILE --admits   # + pair's prefilter, event by event
//! cargo run --release --example inflate FILE --filtered # + pair's prefilter inside the scanner
//! cargo run --release --example inflate FILE --parse    # + serde_json parse of every event
//! ```
//!
//! The other modes read through torchtrace's own reader (inflate on a
//! second thread for gzip; a plain JSON file is scanned on one thread), so
//! the modes separate the cost of the stages. The byte count they print is
//! the end of the last event seen.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use torchtrace::trace::{self, open, Meta, Prefilter};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        anyhow::bail!("usage: inflate FILE [--scan|--admits|--filtered|--parse]");
    };
    let mode = args.get(1).map(String::as_str).unwrap_or("");
    let t = Instant::now();
    let bytes = match mode {
        "" => {
            let file = std::fs::File::open(path)?;
            let mut buffered = std::io::BufReader::with_capacity(256 * 1024, file);
            let mut src: Box<dyn Read> = match open::sniff(&mut buffered)? {
                open::Encoding::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(buffered)),
                open::Encoding::Json => Box::new(buffered),
            };
            let mut buf = vec![0u8; 1 << 20];
            let mut total = 0u64;
            loop {
                let n = src.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                total += n as u64;
            }
            total
        }
        "--scan" => {
            let src = open::open_decoded(Path::new(path), Arc::default())?;
            let mut meta = Meta::default();
            let mut last = 0u64;
            let n = trace::stream::scan(src, &mut meta, &mut |raw, at| {
                last = at.offset + raw.len() as u64;
                Ok(())
            })?;
            eprintln!("{n} events");
            last
        }
        "--admits" | "--filtered" => {
            // pair's prefilter, one event at a time or inside the scanner.
            let src = open::open_decoded(Path::new(path), Arc::default())?;
            let filter = torchtrace::analyses::pair::prefilter();
            let mut meta = Meta::default();
            let (mut last, mut admitted) = (0u64, 0u64);
            let mut on = |raw: &[u8], at: trace::EventPos| {
                last = at.offset + raw.len() as u64;
                admitted += 1;
                Ok(())
            };
            let n = if mode == "--admits" {
                trace::stream::scan(src, &mut meta, &mut |raw, at| {
                    if filter.admits(raw) {
                        on(raw, at)
                    } else {
                        Ok(())
                    }
                })?
            } else {
                trace::stream::scan_filtered(src, &mut meta, &filter, &mut on)?
            };
            eprintln!("{n} events, {admitted} admitted");
            last
        }
        "--parse" => {
            let mut meta = Meta::default();
            let mut last = 0u64;
            let st = trace::read_path(
                Path::new(path),
                &Prefilter::all(),
                Arc::default(),
                &mut meta,
                &mut |_, at| last = at.offset,
            )?;
            eprintln!("{} events, {} parsed", st.events, st.parsed);
            last
        }
        other => anyhow::bail!("unknown mode {other}"),
    };
    let s = t.elapsed().as_secs_f64();
    println!(
        "{bytes} bytes in {s:.3} s: {:.0} MB/s",
        bytes as f64 / s / 1e6
    );
    Ok(())
}
