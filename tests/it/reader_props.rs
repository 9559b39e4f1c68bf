//! Properties of the reader on a real trace that has been cut or had one
//! byte changed, and a seeded mutation run over every fixture:
//!
//! - a cut of the JSON text gives exactly the events that lie wholly before
//!   the cut, then an error; only a cut in the whitespace after the document
//!   is a complete read;
//! - a cut of the gzip file always is an error, after a prefix of the events;
//! - a changed byte of the gzip file either is an error or changes nothing:
//!   never different events with `Ok` (the CRC-32 and length are checked);
//! - a changed byte of the JSON text leaves every event that does not
//!   contain it as it was;
//! - no mutation, of any kind, panics (the fuzz-like test, for machines
//!   without cargo-fuzz; `scripts/fuzz.sh` runs the real fuzzer).

use proptest::prelude::*;
use std::io::Read;
use std::sync::LazyLock;
use torchtrace::trace::{self, stream, Meta, Prefilter, ReadError, ReadOptions};

const FIXTURE: &str = "tests/data/hta_step_based_trace.json.gz";

/// One event as seen through the public API: position and parsed figures.
type Seen = Vec<String>;

struct Reference {
    gz: Vec<u8>,
    json: Vec<u8>,
    events: Seen,
    /// Byte offset just past each event's closing brace.
    ends: Vec<usize>,
    /// Just past the document's closing brace.
    doc_end: usize,
}

static REF: LazyLock<Reference> = LazyLock::new(|| {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let gz = std::fs::read(root.join(FIXTURE)).expect("fixture");
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut json)
        .unwrap();
    let (events, res) = read(&gz);
    assert_eq!(
        res.expect("intact fixture reads").events,
        events.len() as u64
    );
    let mut ends = Vec::new();
    stream::scan(&json[..], &mut Meta::default(), &mut |raw, at| {
        ends.push(at.offset as usize + raw.len());
        Ok(())
    })
    .unwrap();
    let doc_end = json.iter().rposition(|&b| b == b'}').unwrap() + 1;
    Reference {
        gz,
        json,
        events,
        ends,
        doc_end,
    }
});

fn read(bytes: &[u8]) -> (Seen, Result<trace::ReadStats, ReadError>) {
    read_limited(bytes, &ReadOptions::default())
}

fn read_limited(bytes: &[u8], opts: &ReadOptions) -> (Seen, Result<trace::ReadStats, ReadError>) {
    let mut seen = Vec::new();
    let mut meta = Meta::default();
    let res = trace::read_stream_with(bytes, opts, &Prefilter::all(), &mut meta, &mut |e, at| {
        seen.push(format!("{at:?} {e:?}"))
    });
    (seen, res)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_cut_json_gives_the_events_before_the_cut(frac in 0.0f64..1.0) {
        let r = &*REF;
        let at = (frac * r.json.len() as f64) as usize;
        let (seen, res) = read(&r.json[..at]);
        let whole = r.ends.iter().filter(|&&e| e <= at).count();
        prop_assert_eq!(&seen[..], &r.events[..whole]);
        match res {
            Ok(_) => prop_assert!(at >= r.doc_end, "Ok for a cut at {} < {}", at, r.doc_end),
            Err(e) => {
                prop_assert!(at < r.doc_end, "{}", e);
                prop_assert_eq!(e.events_read(), whole as u64, "{}", e);
            }
        }
    }

    #[test]
    fn a_cut_gzip_is_an_error_after_a_prefix(frac in 0.0f64..1.0) {
        let r = &*REF;
        let at = (frac * r.gz.len() as f64) as usize;
        let (seen, res) = read(&r.gz[..at]);
        prop_assert!(res.is_err(), "a gzip cut at {} of {} read as complete", at, r.gz.len());
        prop_assert_eq!(&seen[..], &r.events[..seen.len()]);
    }

    #[test]
    fn a_changed_gzip_byte_is_an_error_or_changes_nothing(frac in 0.0f64..1.0, byte in any::<u8>()) {
        let r = &*REF;
        let at = (frac * r.gz.len() as f64) as usize;
        let mut bad = r.gz.clone();
        bad[at] = byte;
        let (seen, res) = read(&bad);
        if res.is_ok() {
            prop_assert!(seen == r.events, "byte {} at {} changed the events and read Ok", byte, at);
        }
    }

    #[test]
    fn a_changed_json_byte_leaves_the_other_events_alone(frac in 0.0f64..1.0, byte in any::<u8>()) {
        let r = &*REF;
        let at = (frac * r.json.len() as f64) as usize;
        let mut bad = r.json.clone();
        bad[at] = byte;
        let (seen, res) = read(&bad);
        // Events wholly before the change are read as they were.
        let before = r.ends.iter().filter(|&&e| e <= at).count();
        prop_assert!(seen.len() >= before, "{} of the {} events before byte {} read", seen.len(), before, at);
        prop_assert_eq!(&seen[..before], &r.events[..before]);
        if res.is_ok() {
            prop_assert_eq!(seen.len(), r.events.len());
            for (i, (a, b)) in seen.iter().zip(&r.events).enumerate() {
                let start = if i == 0 { 0 } else { r.ends[i - 1] };
                if !(start..r.ends[i]).contains(&at) {
                    prop_assert_eq!(a, b, "event {} changed by byte {} at {}", i, byte, at);
                }
            }
        }
    }
}

/// xorshift64: a fixed, dependency-free sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One random mutation of `data`, of the kinds fuzzers make: byte changes,
/// interesting bytes, deletions, duplications, insertions, cuts, splices.
fn mutate(r: &mut Rng, data: &mut Vec<u8>, other: &[u8]) {
    const INTERESTING: &[u8] = b"{}[]\",:\\ \n\0\xff\xef\x1f\x8b0";
    let len = data.len();
    match r.below(8) {
        0 if len > 0 => {
            let i = r.below(len);
            data[i] = r.next() as u8;
        }
        1 if len > 0 => {
            let i = r.below(len);
            data[i] = INTERESTING[r.below(INTERESTING.len())];
        }
        2 if len > 0 => {
            let i = r.below(len);
            let n = r.below(64).min(len - i);
            data.drain(i..i + n);
        }
        3 if len > 0 => {
            let i = r.below(len);
            let n = r.below(256).min(len - i);
            let piece = data[i..i + n].to_vec();
            let at = r.below(len);
            data.splice(at..at, piece);
        }
        4 => {
            let at = r.below(len + 1);
            let b = INTERESTING[r.below(INTERESTING.len())];
            data.splice(at..at, std::iter::repeat_n(b, 1 + r.below(100)));
        }
        5 => data.truncate(r.below(len + 1)),
        6 if !other.is_empty() => {
            let at = r.below(len + 1);
            let from = r.below(other.len());
            data.truncate(at);
            data.extend_from_slice(&other[from..]);
        }
        _ if len > 0 => {
            let i = r.below(len);
            data[i] ^= 1 << r.below(8);
        }
        _ => data.push(b'{'),
    }
}

/// Every fixture small enough to mutate quickly, compressed and not.
fn seeds() -> Vec<Vec<u8>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in ["tests/data", "tests/data/damaged"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            let p = e.path();
            let len = e.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
            if p.is_file() && len < 64 * 1024 && !p.to_string_lossy().ends_with(".tsv") {
                out.push(std::fs::read(&p).unwrap());
            }
        }
    }
    let mut plain = Vec::new();
    for s in &out {
        let mut d = Vec::new();
        if flate2::read::MultiGzDecoder::new(&s[..])
            .read_to_end(&mut d)
            .is_ok()
            && d.len() < 512 * 1024
        {
            plain.push(d);
        }
    }
    out.extend(plain);
    out.sort();
    out.dedup();
    out
}

/// The block scanner slices exactly what the byte-wise scanner slices, and
/// ends the same way, at any limit.
fn same_slices(data: &[u8], opts: &ReadOptions, case: usize) {
    let run = |fast: bool| {
        let mut out = Vec::new();
        let mut meta = Meta::default();
        let mut cb = |raw: &[u8], at: trace::EventPos| {
            out.push((at, raw.to_vec()));
            Ok(())
        };
        let res = if fast {
            stream::scan_with(data, opts, &mut meta, &Prefilter::all(), &mut cb)
        } else {
            stream::scan_bytewise_with(data, opts, &mut meta, &mut cb)
        };
        (out, format!("{res:?} {meta:?}"))
    };
    assert!(
        run(true) == run(false),
        "case {case}: fast and byte-wise differ"
    );
}

#[test]
fn seeded_mutations_never_panic_and_keep_their_counts() {
    let seeds = seeds();
    assert!(seeds.len() >= 10, "{} seeds", seeds.len());
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    for case in 0..3000 {
        let mut data = seeds[r.below(seeds.len())].clone();
        let other = &seeds[r.below(seeds.len())];
        for _ in 0..1 + r.below(4) {
            mutate(&mut r, &mut data, other);
        }
        // Limits below, around and well above a 64-byte block.
        let limit = match r.below(3) {
            0 => 1 + r.below(160),
            _ => 1 + r.below(4096) * 64,
        };
        let opts = ReadOptions::with_max_event_bytes(limit as u64);
        let (seen, res) = read_limited(&data, &opts);
        same_slices(&data, &opts, case);
        let delivered = seen.len() as u64;
        match res {
            Ok(st) => assert_eq!(st.parsed, delivered, "case {case}"),
            Err(e) => {
                // The count an error gives is that of the events delivered.
                assert_eq!(e.events_read(), delivered, "case {case}: {e}");
                let msg = e.to_string();
                assert!(msg.len() < 1000, "case {case}: long message {msg}");
                assert!(!msg.contains('\0'), "case {case}: {msg}");
            }
        }
    }
}
