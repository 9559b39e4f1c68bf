//! The reader's guarantees on damaged and hostile input (docs/ROBUSTNESS.md):
//!
//! - every case of the damaged corpus (`tests/data/damaged/`, listed with
//!   its expected exit code and message in `EXPECTED.tsv`) gives exactly
//!   that through the binary;
//! - one event over the limit stops the read with a typed error, at any
//!   limit (library, small limits) and through the binary under a hard
//!   memory limit (`ulimit -v`) on a gzip bomb that inflates to a
//!   gigabyte-long string;
//! - whitespace between events and after the document is never held, however
//!   much of it there is.

use crate::common::*;
use flate2::{Compress, Compression, Crc, FlushCompress};
use std::path::Path;
use torchtrace::trace::{self, Meta, Prefilter, ReadError, ReadOptions};

fn corpus() -> Vec<(String, i32, String)> {
    let manifest = root().join("tests/data/damaged/EXPECTED.tsv");
    let text = std::fs::read_to_string(&manifest).expect("EXPECTED.tsv");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert!(f.len() >= 3, "bad manifest line: {l}");
            (
                f[0].to_string(),
                f[1].parse().expect("exit code"),
                f[2].to_string(),
            )
        })
        .collect()
}

#[test]
fn damaged_corpus_gives_the_expected_exit_and_message() {
    let cases = corpus();
    assert!(cases.len() >= 15, "{} cases", cases.len());
    for (name, code, fragment) in cases {
        let path = format!("tests/data/damaged/{name}");
        let out = bin().args(["pair", &path]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{name}: {err}");
        assert!(
            err.contains(&fragment),
            "{name}: want {fragment:?} in {err}"
        );
        assert!(!err.contains("panicked"), "{name}: {err}");
        if code == 2 {
            // One line per error, naming the file.
            let line = err.lines().find(|l| l.contains(&path));
            assert!(line.is_some(), "{name}: {err}");
        }
    }
}

#[test]
fn bom_gives_what_the_plain_file_gives() {
    let run = |name: &str| {
        bin()
            .args(["pair", "-f", "json", &format!("tests/data/damaged/{name}")])
            .output()
            .unwrap()
    };
    let plain = run("intact.gz");
    for name in ["bom.json", "bom.gz", "two_members.gz"] {
        let other = run(name);
        assert_eq!(other.status.code(), plain.status.code(), "{name}");
        let strip = |o: &std::process::Output| {
            String::from_utf8_lossy(&o.stdout).replace(name, "intact.gz")
        };
        assert_eq!(strip(&other), strip(&plain), "{name}");
    }
}

/// A gzip member holding `head`, then `chunks` MiB of the byte `fill`, then
/// `tail`, built without ever holding the inflated text: the fill is one
/// full-flushed deflate segment repeated (a full flush makes each segment
/// independent of what came before). About 1 KB per MiB of fill.
fn gzip_bomb(head: &[u8], fill: u8, chunks: usize, tail: &[u8]) -> Vec<u8> {
    let mut c = Compress::new(Compression::best(), false);
    let mut deflate = |input: &[u8], flush: FlushCompress| {
        let mut out = Vec::with_capacity(input.len() / 100 + 1024);
        let mut consumed = 0;
        loop {
            out.reserve(64 * 1024);
            let before = c.total_in();
            let status = c
                .compress_vec(&input[consumed..], &mut out, flush)
                .expect("deflate");
            consumed += (c.total_in() - before) as usize;
            let done = consumed == input.len() && out.len() < out.capacity();
            if status == flate2::Status::StreamEnd || (done && flush != FlushCompress::Finish) {
                return out;
            }
        }
    };
    let chunk = vec![fill; 1 << 20];
    let mut crc = Crc::new();
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    out.extend(deflate(head, FlushCompress::Full));
    crc.update(head);
    let seg = deflate(&chunk, FlushCompress::Full);
    for _ in 0..chunks {
        out.extend_from_slice(&seg);
        crc.update(&chunk);
    }
    out.extend(deflate(tail, FlushCompress::Finish));
    crc.update(tail);
    out.extend(crc.sum().to_le_bytes());
    out.extend(crc.amount().to_le_bytes());
    out
}

fn read_with(bytes: &[u8], limit: u64) -> (u64, Result<trace::ReadStats, ReadError>) {
    let mut meta = Meta::default();
    let mut n = 0;
    let res = trace::read_stream_with(
        bytes,
        &ReadOptions::with_max_event_bytes(limit),
        &Prefilter::all(),
        &mut meta,
        &mut |_, _| n += 1,
    );
    (n, res)
}

#[test]
fn the_bomb_builder_makes_valid_gzip() {
    let gz = gzip_bomb(b"{\"traceEvents\": [{\"name\": \"", b'a', 3, b"\"}]}");
    let (n, res) = read_with(&gz, 4 << 20);
    assert_eq!(res.unwrap().events, 1);
    assert_eq!(n, 1);
}

#[test]
fn an_event_over_a_small_limit_stops_the_read() {
    let head = b"{\"traceEvents\": [{\"ph\": \"i\"}, {\"name\": \"";
    let gz = gzip_bomb(head, b'a', 8, b"\"}, {}]}");
    let (n, res) = read_with(&gz, 1 << 20);
    assert_eq!(n, 1);
    let err = res.unwrap_err();
    assert!(
        matches!(
            err,
            ReadError::EventTooLarge {
                offset: 30,
                events: 1,
                limit: 1048576
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.events_read(), 1);
    let msg = err.to_string();
    assert!(
        msg.starts_with("event 1 at byte 30 is larger than the 1 MiB limit on one event"),
        "{msg}"
    );
    assert!(msg.ends_with("(1 events read intact)"), "{msg}");
    // Raised above the event's size, the same file reads.
    let (n, res) = read_with(&gz, 9 << 20);
    assert_eq!((n, res.unwrap().events), (3, 3));
}

#[test]
fn the_limit_can_be_set_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.json");
    let ev = format!("{{\"name\": \"{}\"}}", "b".repeat(3000));
    std::fs::write(&p, format!("{{\"traceEvents\": [{{}}, {ev}]}}")).unwrap();
    let out = bin()
        .args(["pair", p.to_str().unwrap()])
        .env(trace::MAX_EVENT_SIZE_ENV, "2K")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("event 1 at byte 21 is larger than the 2 KiB limit"),
        "{err}"
    );
    assert!(err.contains(trace::MAX_EVENT_SIZE_ENV), "{err}");
}

/// `--max-event-size` travels in each plan (no process-wide setting): the
/// per-trace subcommands, `plot` and `batch` all stop at it, and it wins
/// over the environment in both directions.
#[test]
fn the_limit_on_the_command_line_reaches_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.json");
    let ev = format!("{{\"name\": \"{}\"}}", "b".repeat(3000));
    std::fs::write(&p, format!("{{\"traceEvents\": [{{}}, {ev}]}}")).unwrap();
    let trace = p.to_str().unwrap();
    let out_dir = dir.path().join("o");
    let runs: [Vec<&str>; 5] = [
        vec!["pair", trace],
        vec!["kernels", trace],
        vec!["iterations", trace],
        vec!["hierarchy", trace],
        vec![
            "batch",
            "-q",
            "--no-figures",
            "-o",
            out_dir.to_str().unwrap(),
            trace,
        ],
    ];
    for args in &runs {
        let out = bin()
            .args(["--max-event-size", "2K"])
            .args(args)
            .env(trace::MAX_EVENT_SIZE_ENV, "1G")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_ne!(out.status.code(), Some(0), "{args:?}: {text}");
        let report = std::fs::read_to_string(out_dir.join("traces.csv")).unwrap_or_default();
        assert!(
            text.contains("larger than the 2 KiB limit")
                || report.contains("larger than the 2 KiB limit"),
            "{args:?}: {text}"
        );
    }
    // Raised on the command line over a lower environment, the file reads.
    let out = bin()
        .args(["--max-event-size", "1M", "pair", trace])
        .env(trace::MAX_EVENT_SIZE_ENV, "2K")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("limit on one event"), "{err}");
}

/// Runs the binary under `ulimit -v` (virtual memory, KiB); `None` when
/// there is no bash to set it.
fn run_limited(kib: u64, args: &[&str]) -> Option<std::process::Output> {
    let bash = ["/bin/bash", "/usr/bin/bash"]
        .into_iter()
        .find(|b| Path::new(b).exists())?;
    let exe = assert_cmd::cargo::cargo_bin("torchtrace");
    let script = format!("ulimit -v {kib} || exit 99; exec \"$0\" \"$@\"");
    let out = std::process::Command::new(bash)
        .arg("-c")
        .arg(script)
        .arg(exe)
        .args(args)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(99), "ulimit -v failed");
    Some(out)
}

/// The limit under which the binary runs on the bombs: room for its code,
/// threads' reserved stacks and heaps, and one 64 MiB event buffer, but far
/// from the gigabyte an unbounded buffer would take.
const VM_KIB: u64 = 640 * 1024;

#[test]
fn a_gigabyte_string_in_one_event_fails_cleanly_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bomb.json.gz");
    let head = b"{\"traceEvents\": [{\"ph\": \"X\"},\n  {\"name\": \"";
    std::fs::write(&p, gzip_bomb(head, b'A', 1024, b"\"}]}")).unwrap();
    let Some(out) = run_limited(VM_KIB, &["pair", p.to_str().unwrap()]) else {
        eprintln!("skipped: no bash for ulimit");
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("event 1 at byte 32 is larger than the 64 MiB limit on one event"),
        "{err}"
    );
    assert!(err.contains("(1 events read intact)"), "{err}");
}

#[test]
fn whitespace_between_events_and_after_the_document_is_never_held() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("spaces.json.gz");
    // 256 MiB of spaces between two events, and a document end followed by
    // one more member of 128 MiB of newlines.
    let mut gz = gzip_bomb(b"{\"traceEvents\": [{\"ph\": \"X\"},", b' ', 256, b"{}]}");
    gz.extend(gzip_bomb(b"", b'\n', 128, b""));
    std::fs::write(&p, &gz).unwrap();
    let Some(out) = run_limited(VM_KIB, &["pair", "-f", "json", p.to_str().unwrap()]) else {
        eprintln!("skipped: no bash for ulimit");
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    // No step annotation in it: exit 1 after a complete read of 2 events.
    assert_eq!(out.status.code(), Some(1), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["traces"][0]["events"], 2, "{v}");
    assert_eq!(v["traces"][0]["complete"], true, "{v}");
}
