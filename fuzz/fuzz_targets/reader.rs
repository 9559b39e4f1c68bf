//! Fuzzes the whole reader: any bytes (gzip or not) through `read_stream`
//! with event parsing, under a limit and a prefilter chosen by the first
//! byte. It must never panic, its counts must agree with what it delivered,
//! and its messages must stay short and printable. On text that is not
//! gzip, the block scanner must also slice exactly what the byte-wise
//! scanner slices (a differential check of the SIMD fast path).
#![no_main]

use libfuzzer_sys::fuzz_target;
use torchtrace::trace::{read_stream_with, stream, Meta, Prefilter, ReadOptions};

fuzz_target!(|data: &[u8]| {
    let Some((&knob, input)) = data.split_first() else {
        return;
    };
    // Odd knobs: limits of 1 to 128 bytes, below and around a 64-byte block.
    let limit = if knob & 1 == 0 {
        64 << 20
    } else {
        1 + u64::from(knob >> 1)
    };
    let opts = ReadOptions::with_max_event_bytes(limit);
    read_all(knob, &opts, input);
    if !input.starts_with(&[0x1f, 0x8b]) {
        same_slices(&opts, input);
    }
});

fn read_all(knob: u8, opts: &ReadOptions, input: &[u8]) {
    let filter = if knob & 2 == 0 {
        Prefilter::all()
    } else {
        Prefilter::any_of(&["user_annotation\"", "ac2g"])
    };
    let mut meta = Meta::default();
    let mut delivered = 0u64;
    let mut last = None;
    let res = read_stream_with(input, opts, &filter, &mut meta, &mut |_, at| {
        assert!(last.is_none_or(|l| at.index > l), "indices increase");
        last = Some(at.index);
        delivered += 1;
    });
    match res {
        Ok(st) => {
            assert_eq!(st.parsed, delivered);
            assert!(st.events >= delivered);
        }
        Err(e) => {
            assert!(e.events_read() >= delivered || delivered == 0, "{e}");
            let msg = e.to_string();
            assert!(msg.len() < 1500, "{msg}");
            assert!(!msg.chars().any(|c| c.is_control()), "{msg:?}");
        }
    }
}

fn same_slices(opts: &ReadOptions, input: &[u8]) {
    let run = |fast: bool| {
        let mut out = Vec::new();
        let mut meta = Meta::default();
        let mut cb = |raw: &[u8], at: torchtrace::trace::EventPos| {
            out.push((at, raw.to_vec()));
            Ok(())
        };
        let res = if fast {
            stream::scan_with(input, opts, &mut meta, &Prefilter::all(), &mut cb)
        } else {
            stream::scan_bytewise_with(input, opts, &mut meta, &mut cb)
        };
        (out, format!("{res:?} {meta:?}"))
    };
    assert_eq!(run(true), run(false));
}
