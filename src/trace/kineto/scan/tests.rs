//! Tests of the block scanner: every refill path through tiny chunks, the prefilter, malformed documents.

use super::*;
use crate::trace::{EventPos, Meta, Prefilter, ReadError, ReadOptions};

/// Collects event slices as strings, reading through tiny chunks so every
/// refill path is exercised.
fn events_of(doc: &str, chunk: usize) -> Result<(Vec<String>, Meta), ReadError> {
    struct Tiny<'a>(&'a [u8], usize);
    impl Read for Tiny<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let mut meta = Meta::default();
    let mut out = Vec::new();
    scan(Tiny(doc.as_bytes(), chunk), &mut meta, &mut |raw, _| {
        out.push(String::from_utf8(raw.to_vec()).unwrap());
        Ok(())
    })?;
    Ok((out, meta))
}

const DOC: &str = r#"{"schemaVersion": 1, "deviceProperties": [{"name": "NVIDIA H200"}],
      "with_stack": 1,
      "traceEvents": [
        {"ph": "X", "name": "a}\"{[", "args": {"x": [1, {"y": "]"}]}},
        {"ph": "M", "name": "b"}
      ],
      "traceName": "/tmp/x.json", "distributedInfo": {"rank": 3, "world_size": 8}}"#;

#[test]
fn slices_events_with_any_chunking() {
    for chunk in [1, 2, 3, 7, 64, 1 << 20] {
        let (evs, meta) = events_of(DOC, chunk).unwrap();
        assert_eq!(evs.len(), 2, "chunk {chunk}");
        assert_eq!(
            evs[0],
            r#"{"ph": "X", "name": "a}\"{[", "args": {"x": [1, {"y": "]"}]}}"#
        );
        assert_eq!(evs[1], r#"{"ph": "M", "name": "b"}"#);
        assert_eq!(meta.schema_version, Some(1));
        assert_eq!(meta.devices, vec!["NVIDIA H200".to_string()]);
        assert_eq!(meta.rank, Some(3));
        assert_eq!(meta.world_size, Some(8));
        assert_eq!(meta.with_stack, Some(true));
    }
}

#[test]
fn bare_array_and_empty_events() {
    let (evs, meta) = events_of(r#"[{"ph":"X"},{"ph":"i"}]"#, 5).unwrap();
    assert_eq!(evs.len(), 2);
    assert!(meta.has_events);
    let (evs, meta) = events_of(r#"{"traceEvents": []}"#, 5).unwrap();
    assert!(evs.is_empty());
    assert!(meta.has_events);
    let (_, meta) = events_of(r#"{"other": 1}"#, 5).unwrap();
    assert!(!meta.has_events);
}

#[test]
fn cut_inside_the_event_array() {
    let cut = &DOC[..DOC.find(r#"{"ph": "M""#).unwrap() + 5];
    match events_of(cut, 3) {
        Err(ReadError::Truncated { events, offset }) => {
            assert_eq!(events, 1);
            assert_eq!(offset, cut.len() as u64);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn garbage_between_events() {
    let bad = r#"{"traceEvents": [{"ph": "X"} {"ph": "X"}]}"#;
    match events_of(bad, 4) {
        Err(ReadError::Syntax { offset, events, .. }) => {
            assert_eq!(events, 1);
            assert_eq!(offset, 29);
        }
        other => panic!("{other:?}"),
    }
    let bad = r#"{"traceEvents": [{"ph": "X"}, 5]}"#;
    assert!(matches!(
        events_of(bad, 4),
        Err(ReadError::BadEvent { index: 1, .. })
    ));
}

/// A small deterministic generator for the fuzz tests.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn gen_string(r: &mut Rng, out: &mut String) {
    const PIECES: &[&str] = &[
        "a",
        "bc",
        " ",
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\\\"",
        "\\\\",
        "\\n",
        "\\\\\\\"",
        "user_annotation",
        "é",
    ];
    out.push('"');
    let n = if r.below(8) == 0 { 200 } else { r.below(6) };
    for _ in 0..n {
        out.push_str(PIECES[r.below(PIECES.len() as u64) as usize]);
    }
    out.push('"');
}

fn gen_value(r: &mut Rng, depth: u32, out: &mut String) {
    match if depth > 3 { r.below(3) } else { r.below(5) } {
        0 => out.push_str(["1", "-2.5", "true", "null", "1e3"][r.below(5) as usize]),
        1 | 2 => gen_string(r, out),
        3 => {
            out.push('[');
            for i in 0..r.below(4) {
                if i > 0 {
                    out.push_str(", ");
                }
                gen_value(r, depth + 1, out);
            }
            out.push(']');
        }
        _ => gen_object(r, depth + 1, out),
    }
}

fn gen_object(r: &mut Rng, depth: u32, out: &mut String) {
    out.push('{');
    for i in 0..r.below(6) {
        if i > 0 {
            out.push(',');
            out.push_str(["", " ", "\n    "][r.below(3) as usize]);
        }
        gen_string(r, out);
        out.push_str(": ");
        gen_value(r, depth, out);
    }
    out.push('}');
}

fn gen_doc(r: &mut Rng) -> Vec<u8> {
    let mut out = String::from("{\"schemaVersion\": 1, \"traceEvents\": [");
    for i in 0..r.below(40) {
        if i > 0 {
            out.push(',');
        }
        out.push_str(["", " ", "\n  ", "\n\n\t\r "][r.below(4) as usize]);
        gen_object(r, 0, &mut out);
    }
    out.push_str("], \"traceName\": \"x\"}");
    let mut doc = out.into_bytes();
    // Sometimes break it: a byte replaced, or the end cut off.
    match r.below(4) {
        0 if !doc.is_empty() => {
            let at = r.below(doc.len() as u64) as usize;
            doc[at] = b"\"\\{}[],: x5"[r.below(11) as usize];
        }
        1 => {
            let at = r.below(doc.len() as u64 + 1) as usize;
            doc.truncate(at);
        }
        _ => {}
    }
    doc
}

/// Everything a scan gives: the slices with their positions, the count
/// and the error, as text.
fn run_scan(doc: &[u8], chunk: usize, how: u8) -> String {
    struct Tiny<'a>(&'a [u8], usize);
    impl Read for Tiny<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let mut seen = String::new();
    let mut meta = Meta::default();
    let filter = Prefilter::any_of(&["user_annotation\"", "5"]);
    let mut cb = |raw: &[u8], at: EventPos| {
        seen.push_str(&format!(
            "{} {} {}\n",
            at.index,
            at.offset,
            raw.escape_ascii()
        ));
        Ok(())
    };
    let src = Tiny(doc, chunk);
    let res = match how {
        0 => scan_bytewise(src, &mut meta, &mut cb),
        1 => scan(src, &mut meta, &mut cb),
        // The byte-wise scan with the filter applied per event...
        2 => scan_bytewise(src, &mut meta, &mut |raw, at| {
            if filter.admits(raw) {
                cb(raw, at)
            } else {
                Ok(())
            }
        }),
        // ...and the block scanner's own.
        _ => scan_filtered(src, &mut meta, &filter, &mut cb),
    };
    format!("{seen}{res:?} {meta:?}")
}

#[test]
fn block_scanner_agrees_with_bytewise() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..2000 {
        let doc = gen_doc(&mut r);
        for chunk in [1 << 20, 1 + r.below(100) as usize] {
            let want = run_scan(&doc, chunk, 0);
            let got = run_scan(&doc, chunk, 1);
            assert_eq!(
                got,
                want,
                "case {case}, chunk {chunk}: {}",
                doc.escape_ascii()
            );
            let want = run_scan(&doc, chunk, 2);
            let got = run_scan(&doc, chunk, 3);
            assert_eq!(
                got,
                want,
                "filtered, case {case}, chunk {chunk}: {}",
                doc.escape_ascii()
            );
        }
    }
}

#[test]
fn block_scanner_handles_backslash_runs_across_blocks() {
    // Runs of backslashes of every length ending at every offset of a
    // block, so escapes carry from one block into the next.
    for run in 0..6 {
        for pad in 0..70 {
            let s = format!("{}{}\"}}", "x".repeat(pad), "\\".repeat(run * 2));
            let ev = format!("{{\"name\": \"{s}\", \"a\": [1]}}");
            let doc = format!("{{\"traceEvents\": [{ev}, {ev}, {ev}, {ev}]}}");
            for chunk in [1 << 20, 3] {
                assert_eq!(
                    run_scan(doc.as_bytes(), chunk, 1),
                    run_scan(doc.as_bytes(), chunk, 0)
                );
            }
        }
    }
}

#[test]
fn offsets_count_from_the_start() {
    let mut meta = Meta::default();
    let mut offs = Vec::new();
    let doc = r#"{"traceEvents": [ {"a":1}, {"b":2} ]}"#;
    scan(doc.as_bytes(), &mut meta, &mut |_, at| {
        offs.push((at.index, at.offset));
        Ok(())
    })
    .unwrap();
    assert_eq!(offs, vec![(0, 18), (1, 27)]);
}

/// Events as (index, offset, length), the outcome, the buffer's size.
type Limited = (Vec<(u64, u64, usize)>, Result<u64, ReadError>, usize);

/// Scans with a limit, byte-wise or with the block scanner, through
/// reads of `chunk` bytes; returns the events' (index, offset, len),
/// the outcome, and the largest the buffer got.
fn scan_limited(doc: &[u8], limit: u64, fast: bool, chunk: usize) -> Limited {
    struct Tiny<'a>(&'a [u8], usize);
    impl Read for Tiny<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let all = Prefilter::all();
    let opts = ReadOptions::with_max_event_bytes(limit);
    let mut s = Scanner::new(Tiny(doc, chunk), &all, &opts);
    s.fast = fast;
    let mut seen = Vec::new();
    let mut meta = Meta::default();
    let res = s
        .document(&mut meta, &mut |_| {}, &mut |raw, at| {
            seen.push((at.index, at.offset, raw.len()));
            Ok(())
        })
        .and_then(|_| s.finish())
        .map(|_| s.events);
    assert!(s.failed.is_none());
    (seen, res, s.buf.len())
}

fn events_doc(sizes: &[usize], sep: &str) -> Vec<u8> {
    let evs: Vec<String> = sizes
        .iter()
        .map(|&n| format!("{{\"name\": \"{}\"}}", "x".repeat(n - 12)))
        .collect();
    format!("{{\"traceEvents\": [{}]}}", evs.join(sep)).into_bytes()
}

#[test]
fn events_up_to_the_limit_pass_and_one_byte_more_fails() {
    for fast in [false, true] {
        for chunk in [1 << 20, 7] {
            let doc = events_doc(&[100, 300, 100], ", ");
            let (seen, res, _) = scan_limited(&doc, 300, fast, chunk);
            assert_eq!(res.unwrap(), 3);
            assert_eq!(
                seen.iter().map(|e| e.2).collect::<Vec<_>>(),
                [100, 300, 100]
            );
            let (seen, res, _) = scan_limited(&doc, 299, fast, chunk);
            assert_eq!(seen.len(), 1, "fast {fast} chunk {chunk}");
            match res {
                Err(ReadError::EventTooLarge {
                    offset,
                    events,
                    limit,
                }) => {
                    assert_eq!((offset, events, limit), (119, 1, 299));
                }
                other => panic!("{other:?}"),
            }
        }
    }
}

#[test]
fn limits_smaller_than_a_block_work() {
    // Events of 2 to 9 bytes, far more than a block of them in a row.
    let evs: Vec<String> = (0..200)
        .map(|i| match i % 3 {
            0 => "{}".to_string(),
            1 => format!("{{\"a\":{}}}", i % 10),
            _ => "{\"b\":[1]}".to_string(),
        })
        .collect();
    let doc = format!("{{\"traceEvents\": [{}]}}  ", evs.join(",\n "));
    for fast in [false, true] {
        for chunk in [1 << 20, 5] {
            let (seen, res, _) = scan_limited(doc.as_bytes(), 9, fast, chunk);
            assert_eq!(res.unwrap(), 200, "fast {fast} chunk {chunk}");
            assert_eq!(seen.len(), 200);
            let (seen, res, _) = scan_limited(doc.as_bytes(), 8, fast, chunk);
            assert!(
                matches!(res, Err(ReadError::EventTooLarge { events: 2, .. })),
                "{res:?}"
            );
            assert_eq!(seen.len(), 2);
        }
    }
}

#[test]
fn the_buffer_never_grows_far_past_the_limit() {
    // One 8 MiB event, limit 64 KiB: stops early, buffer at its start size.
    let doc = events_doc(&[100, 8 << 20], ",");
    for fast in [false, true] {
        let (seen, res, buf) = scan_limited(&doc, 64 << 10, fast, 1 << 16);
        assert_eq!(seen.len(), 1);
        assert!(
            matches!(res, Err(ReadError::EventTooLarge { events: 1, .. })),
            "{res:?}"
        );
        assert_eq!(buf, BUF);
    }
    // Limit 3 MiB: the buffer grows to the limit and its headroom, no more.
    let (_, res, buf) = scan_limited(&doc, 3 << 20, true, 1 << 16);
    assert!(
        matches!(res, Err(ReadError::EventTooLarge { .. })),
        "{res:?}"
    );
    assert!(buf <= (3 << 20) + HEADROOM, "{buf}");
}

#[test]
fn a_cut_event_over_the_limit_is_too_large_however_it_is_read() {
    let mut doc = events_doc(&[100, 500], ",");
    doc.truncate(doc.len() - 100);
    for fast in [false, true] {
        for chunk in [1 << 20, 1, 13] {
            let (_, res, _) = scan_limited(&doc, 300, fast, chunk);
            assert!(
                matches!(
                    res,
                    Err(ReadError::EventTooLarge {
                        events: 1,
                        offset: 118,
                        ..
                    })
                ),
                "{res:?}"
            );
            let (_, res, _) = scan_limited(&doc, 450, fast, chunk);
            assert!(
                matches!(res, Err(ReadError::Truncated { events: 1, .. })),
                "{res:?}"
            );
        }
    }
}

#[test]
fn whitespace_between_events_is_not_held() {
    let pad = " \n".repeat(3 << 20);
    let doc = events_doc(&[100, 100], &format!("{pad},{pad}"));
    let doc = [&doc[..], pad.as_bytes()].concat();
    for fast in [false, true] {
        let (seen, res, buf) = scan_limited(&doc, 200, fast, 1 << 16);
        assert_eq!(res.unwrap(), 2);
        assert_eq!(seen[1].1, 118 + 2 * pad.len() as u64);
        assert_eq!(buf, BUF);
    }
    // Inside an event it counts.
    let doc = format!("{{\"traceEvents\": [{{\"a\": 1,{pad}\"b\": 2}}]}}");
    let (_, res, _) = scan_limited(doc.as_bytes(), 1 << 20, true, 1 << 16);
    assert!(
        matches!(res, Err(ReadError::EventTooLarge { .. })),
        "{res:?}"
    );
}

#[test]
fn top_level_values_nobody_reads_are_skipped_at_any_size() {
    let big = "y".repeat(2 << 20);
    let doc = format!(
            "{{\"systemTraceEvents\": \"{big}\", \"other\": [[\"{big}\", {{\"k\": 1}}]], \"traceEvents\": [{{}}], \"traceEvents\": [\"{big}\"]}}"
        );
    let (seen, res, buf) = scan_limited(doc.as_bytes(), 1000, true, 4096);
    assert_eq!(res.unwrap(), 1);
    assert_eq!(seen.len(), 1);
    assert_eq!(buf, BUF);
    // One it reads is held, so the limit applies.
    let doc = format!("{{\"deviceProperties\": [\"{big}\"], \"traceEvents\": []}}");
    let (_, res, _) = scan_limited(doc.as_bytes(), 1000, true, 4096);
    match res {
        Err(e @ ReadError::ValueTooLarge { .. }) => {
            assert!(
                e.to_string().contains("\"deviceProperties\" at byte 21"),
                "{e}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn only_whitespace_may_follow_the_document() {
    let ok = b"{\"traceEvents\": []} \n\t\r  ";
    assert!(scan_limited(ok, 100, true, 3).1.is_ok());
    for (tail, want) in [
        (&b"x"[..], "`x`"),
        (b"\0\0", "`\\0\\0`"),
        (
            b"{\"traceEvents\": []}",
            "a second JSON document? `{\"traceEvents\": []}`",
        ),
    ] {
        let doc = [&ok[..], tail].concat();
        match scan_limited(&doc, 100, true, 3).1 {
            Err(e @ ReadError::TrailingData { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(&format!("at byte {}: {want}", ok.len())),
                    "{msg}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn byte_order_mark_and_blank_input() {
    let doc = b"\xef\xbb\xbf {\"traceEvents\": [{\"ph\": \"B\"}, {\"ph\": \"E\"}]}";
    for chunk in [1, 2, 1 << 20] {
        let (seen, res, _) = scan_limited(doc, 100, true, chunk);
        assert_eq!(res.unwrap(), 2);
        assert_eq!(seen[0].1, 21);
    }
    assert!(matches!(
        scan_limited(b"", 100, true, 1).1,
        Err(ReadError::Empty)
    ));
    let blank = scan_limited(b" \n\n ", 100, true, 1).1.unwrap_err();
    assert_eq!(blank.to_string(), "no events: only whitespace (4 bytes)");
    let bom_only = scan_limited(b"\xef\xbb\xbf", 100, true, 1).1;
    assert!(matches!(
        bom_only,
        Err(ReadError::OnlyWhitespace { bytes: 3 })
    ));
}

#[test]
fn unexpected_bytes_are_shown_escaped() {
    let (_, res, _) = scan_limited(b"{\"traceEvents\": [{}\0]}", 100, true, 64);
    let msg = res.unwrap_err().to_string();
    assert!(msg.contains("found `\\0`"), "{msg}");
    let (_, res, _) = scan_limited(b"\xff", 100, true, 64);
    let msg = res.unwrap_err().to_string();
    assert!(msg.contains("found `\\xff`"), "{msg}");
}

#[test]
fn every_cut_with_every_chunking_is_an_error_without_panic() {
    // Regression: a refill that shifted the buffer and then met the end
    // of input left the scan position stale (found by the seeded
    // mutation test).
    let doc = format!("{DOC} ");
    for cut in 0..doc.len() {
        for chunk in [1, 2, 3, 5, 64] {
            let res = events_of(&doc[..cut], chunk);
            let full = doc[..cut].trim_end().len() == DOC.len();
            assert_eq!(res.is_ok(), full, "cut {cut} chunk {chunk}: {res:?}");
        }
    }
}
