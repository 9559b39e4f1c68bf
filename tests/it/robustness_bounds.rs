//! Issue 17, round 2: bounded cost on small hostile inputs and clear errors
//! (docs/ROBUSTNESS.md, "Round 2"). Large inputs are generated here, never
//! stored: a gzip member is built from full-flushed deflate segments, so a
//! gigabyte of text costs a few megabytes and no inflated copy is held.

use crate::common::*;
use flate2::{Compress, Compression, Crc, FlushCompress};
use std::path::Path;

/// Builds one gzip member piece by piece without holding the inflated
/// text: [`Gz::text`] deflates bytes, [`Gz::fill`] repeats one full-flushed
/// deflate segment of 1 MiB of one byte (a full flush makes each segment
/// independent of what came before).
struct Gz {
    c: Compress,
    out: Vec<u8>,
    crc: Crc,
    fills: Vec<(u8, Vec<u8>)>,
}

impl Gz {
    fn new() -> Gz {
        Gz {
            c: Compress::new(Compression::fast(), false),
            out: vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff],
            crc: Crc::new(),
            fills: Vec::new(),
        }
    }

    /// Deflates `input` with `flush`, returning the compressed bytes.
    fn deflate(&mut self, input: &[u8], flush: FlushCompress) -> Vec<u8> {
        let mut out = Vec::with_capacity(input.len() / 100 + 1024);
        let mut consumed = 0;
        loop {
            out.reserve(64 * 1024);
            let before = self.c.total_in();
            let status = self
                .c
                .compress_vec(&input[consumed..], &mut out, flush)
                .expect("deflate");
            consumed += (self.c.total_in() - before) as usize;
            let done = consumed == input.len() && out.len() < out.capacity();
            if status == flate2::Status::StreamEnd || (done && flush != FlushCompress::Finish) {
                return out;
            }
        }
    }

    fn text(&mut self, bytes: &[u8]) -> &mut Gz {
        let seg = self.deflate(bytes, FlushCompress::Full);
        self.out.extend(seg);
        self.crc.update(bytes);
        self
    }

    /// `mib` MiB of the byte `fill`.
    fn fill(&mut self, fill: u8, mib: usize) -> &mut Gz {
        let chunk = vec![fill; 1 << 20];
        let seg = match self.fills.iter().find(|(b, _)| *b == fill) {
            Some((_, s)) => s.clone(),
            None => {
                let s = self.deflate(&chunk, FlushCompress::Full);
                self.fills.push((fill, s.clone()));
                s
            }
        };
        for _ in 0..mib {
            self.out.extend_from_slice(&seg);
            self.crc.update(&chunk);
        }
        self
    }

    fn finish(&mut self) -> Vec<u8> {
        let end = self.deflate(b"", FlushCompress::Finish);
        let mut out = std::mem::take(&mut self.out);
        out.extend(end);
        out.extend(self.crc.sum().to_le_bytes());
        out.extend(self.crc.amount().to_le_bytes());
        out
    }
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
        .current_dir(root())
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(99), "ulimit -v failed");
    Some(out)
}

/// The memory limit of the bounded-cost tests (as in tests/it/robustness.rs).
const VM_KIB: u64 = 640 * 1024;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn distinct_long_names_are_stored_cut_in_bounded_memory() {
    // 600 kernels with distinct 1 MiB names: 1.2 GB of interned names
    // before (each held twice), a few MB now.
    let mut gz = Gz::new();
    gz.text(b"{\"traceEvents\": [\n");
    let n = 600;
    for i in 0..n {
        let head = format!(
            "{{\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": {}, \"dur\": 1, \"pid\": 0, \"tid\": 7, \"args\": {{\"correlation\": {}}}, \"name\": \"k{i}_",
            10 + i,
            i + 1
        );
        gz.text(head.as_bytes()).fill(b'a', 1);
        gz.text(if i + 1 < n { b"\"},\n" } else { b"\"}\n" });
    }
    gz.text(b"]}");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("names.json.gz");
    std::fs::write(&p, gz.finish()).unwrap();
    let path = p.to_str().unwrap();
    let Some(out) = run_limited(VM_KIB, &["kernels", "-f", "json", path]) else {
        eprintln!("skipped: no bash for ulimit");
        return;
    };
    let err = stderr(&out);
    // No step annotation: exit 1 after a complete read.
    assert_eq!(out.status.code(), Some(1), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let t = &v["traces"][0];
    assert_eq!(t["complete"], true, "{err}");
    assert_eq!(t["timeline"]["activities"], n, "{err}");
    let notes = t["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "{n} distinct kernel and launch name(s) longer than 4096 bytes"
        )),
        "{notes}"
    );
}

/// The binary as a plain [`std::process::Command`] (for stdin and stdout
/// of one's own), run in the crate root.
fn std_bin() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("torchtrace"));
    c.current_dir(root());
    c
}

/// The one worker trace of the text AR sample.
fn text_ar() -> String {
    sample("text_ar")
}

/// Records of the text AR sample (`batch --records`), in `dir`.
fn records_of_sample(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("r.jsonl");
    let out = bin()
        .args([
            "batch",
            "-q",
            "--records",
            p.to_str().unwrap(),
            "sample_traces/text_ar",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    p
}

#[test]
fn a_record_line_over_the_limit_is_an_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = records_of_sample(dir.path());
    let out = bin()
        .args(["merge", "-o", dir.path().join("o").to_str().unwrap()])
        .arg(&p)
        .env("TORCHTRACE_MAX_EVENT_SIZE", "1K")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}: line 2: the line is longer than the 1 KiB limit on one record line",
            p.display()
        )),
        "{err}"
    );
}

#[test]
fn a_huge_record_line_is_never_held_whole() {
    // 768 MiB on one line through stdin, under a 640 MiB address-space
    // limit: before, the line was read whole (and aborted).
    let Some(bash) = ["/bin/bash", "/usr/bin/bash"]
        .into_iter()
        .find(|b| Path::new(b).exists())
    else {
        eprintln!("skipped: no bash for ulimit");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let p = records_of_sample(dir.path());
    let header = std::fs::read_to_string(&p).unwrap();
    let header = header.lines().next().unwrap().to_string();
    let exe = assert_cmd::cargo::cargo_bin("torchtrace");
    let script = format!("ulimit -v {VM_KIB} || exit 99; exec \"$0\" \"$@\"");
    let mut child = std::process::Command::new(bash)
        .arg("-c")
        .arg(script)
        .arg(exe)
        .args(["merge", "-o", dir.path().join("o").to_str().unwrap(), "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        let chunk = vec![b' '; 1 << 20];
        let _ = writeln!(stdin, "{header}");
        let _ = stdin.write_all(b"{\"file\": \"");
        for _ in 0..768 {
            if stdin.write_all(&chunk).is_err() {
                return; // the reader stopped: what the test wants
            }
        }
        let _ = stdin.write_all(b"\"}\n");
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("-: line 2: the line is longer than the 64 MiB limit on one record line"),
        "{err}"
    );
}

#[test]
fn a_byte_order_mark_in_records_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let p = records_of_sample(dir.path());
    let mut text = b"\xef\xbb\xbf".to_vec();
    text.extend(std::fs::read(&p).unwrap());
    std::fs::write(&p, text).unwrap();
    let out = bin()
        .args([
            "merge",
            "-q",
            "--no-figures",
            "-o",
            dir.path().join("o").to_str().unwrap(),
        ])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_parser_message_is_not_doubled() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.jsonl");
    std::fs::write(&p, "garbage\n").unwrap();
    let out = bin()
        .args(["merge", "-o", dir.path().join("o").to_str().unwrap()])
        .arg(&p)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.matches("expected value at line 1 column 1").count(),
        1,
        "{err}"
    );
}

#[test]
fn shard_counts_are_bounded() {
    for n in ["4294967297", "3000000000", "65537"] {
        let out = bin()
            .args([
                "batch",
                "--records",
                "-",
                "--shard",
                &format!("1/{n}"),
                "sample_traces/text_ar",
            ])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{n}: {err}");
        assert!(err.contains("K/N with 1 ≤ K ≤ N ≤ 65536"), "{n}: {err}");
    }
    // The largest count is accepted, and a shard past the units is empty.
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("r.jsonl");
    let out = bin()
        .args([
            "batch",
            "-q",
            "--records",
            rec.to_str().unwrap(),
            "--shard",
            "65536/65536",
        ])
        .arg("sample_traces/text_ar")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&rec)
        .unwrap()
        .contains("{\"end\":{\"files\":0}}"));
}

#[test]
fn a_records_header_with_too_many_shards_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = records_of_sample(dir.path());
    let text = std::fs::read_to_string(&p).unwrap();
    let bad = text.replacen("\"count\":1}", "\"count\":4294967297}", 1);
    assert_ne!(bad, text, "the header names its shard count");
    std::fs::write(&p, bad).unwrap();
    let out = bin()
        .args(["merge", "-o", dir.path().join("o").to_str().unwrap()])
        .arg(&p)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is not a shard"), "{err}");
}

#[test]
fn plot_sizes_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("o");
    for (flag, v) in [
        ("--width", "65536"),
        ("--height", "4294967295"),
        ("--width", "0"),
    ] {
        let out = bin()
            .args(["plot", "-o", o.to_str().unwrap(), flag, v, &text_ar()])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{flag} {v}: {err}");
        assert!(err.contains("is not in 1..=8192"), "{flag} {v}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn stdin_is_refused_twice() {
    let t = text_ar();
    for args in [
        vec!["pair", "-", "-"],
        vec!["kernels", "-", "-"],
        vec!["hierarchy", "-", "-"],
        vec!["plot", "-o", "/nonexistent/x", "-", "-"],
        vec!["merge", "-o", "/nonexistent/x", "-", "-"],
        // A run summary from stdin beside a trace from stdin.
        vec!["pair", "-", "--summary", "-"],
        vec!["kernels", "-", "--summary", "-"],
    ] {
        let out = std_bin()
            .args(&args)
            .stdin(std::fs::File::open(root().join(&t)).unwrap())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("`-` (stdin) is given 2 times"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_full_stdout_says_stdout() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipped: no /dev/full");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("o");
    let t = text_ar();
    for args in [
        vec!["pair", t.as_str()],
        vec!["kernels", t.as_str()],
        vec!["hierarchy", t.as_str()],
        vec![
            "plot",
            "--format",
            "svg",
            "-o",
            o.to_str().unwrap(),
            t.as_str(),
        ],
    ] {
        let out = std_bin()
            .args(&args)
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("cannot write to stdout: No space left on device"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn a_huge_cell_does_not_pad_every_row() {
    // An auto-selected step name of 3 000 characters: every line of its
    // table column was padded to it.
    let name = format!("execute_1_context_0({})_generation_1(1)", "a".repeat(3000));
    let events: Vec<String> = (0..20)
        .map(|i| {
            format!(
                "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"{name}\", \"ts\": {}, \"dur\": 5, \"pid\": 1, \"tid\": 1, \"args\": {{\"External id\": {i}}}}}",
                10 * i
            )
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("wide.json");
    std::fs::write(&p, format!("{{\"traceEvents\": [{}]}}", events.join(",\n"))).unwrap();
    for sub in ["pair", "kernels"] {
        let out = bin().args([sub, p.to_str().unwrap()]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(widest < 600, "{sub}: a line of {widest} characters");
        // `kernels` prints no per-context table when no context has GPU
        // work (issue 60): only `pair` shows the cut name.
        assert!(sub != "pair" || text.contains("aaa…"), "{sub}: {text}");
    }
}

#[test]
fn messages_escape_and_cut_names_from_the_trace() {
    // No step names: the problem lists the annotations, one with a
    // terminal escape sequence and a NUL, one of 1 MiB.
    let names = [
        "\\u001b]0;pwned\\u0007\\u0000x".to_string(),
        "b".repeat(1 << 20),
    ];
    let events: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            format!(
                "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"{n}\", \"ts\": {i}, \"dur\": 1, \"pid\": 1, \"tid\": 1}}"
            )
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("names.json");
    std::fs::write(&p, format!("{{\"traceEvents\": [{}]}}", events.join(","))).unwrap();
    for sub in ["pair", "kernels", "hierarchy"] {
        let out = bin().args([sub, p.to_str().unwrap()]).output().unwrap();
        let err = stderr(&out);
        assert!(
            !err.contains('\u{1b}') && !err.contains('\0'),
            "{sub}: {err:?}"
        );
        assert!(err.len() < 4096, "{sub}: {} bytes of stderr", err.len());
        if sub != "hierarchy" {
            assert_eq!(out.status.code(), Some(1), "{sub}: {err}");
            assert!(err.contains("\\u{1b}]0;pwned\\u{7}\\0x ×1"), "{sub}: {err}");
            assert!(
                err.contains(&format!("{}… (", "b".repeat(80))),
                "{sub}: {err}"
            );
        }
    }
}

#[test]
fn markdown_escapes_html_and_file_names() {
    let out = bin()
        .args(["kernels", "-f", "markdown", &text_ar()])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("std::array&lt;char*, 3ul>"), "{md}");
    assert!(!md.contains("<char*"), "{md}");
    // A campaign directory whose name holds HTML and a backtick.
    let dir = tempfile::tempdir().unwrap();
    let camp = dir.path().join("c`<img src=x>&|");
    std::fs::create_dir(&camp).unwrap();
    let t = text_ar();
    let file = Path::new(&t).file_name().unwrap();
    std::fs::copy(root().join(&t), camp.join(file)).unwrap();
    let o = dir.path().join("o");
    let out = bin()
        .args([
            "batch",
            "-q",
            "--no-figures",
            "-o",
            o.to_str().unwrap(),
            camp.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = std::fs::read_to_string(o.join("report.md")).unwrap();
    // Literal in a code span fenced past its backtick; escaped in cells.
    let listed = format!("- ``{}`` (directory)", camp.display());
    assert!(report.contains(&listed), "{report}");
    assert_eq!(report.matches("<img").count(), 1, "{report}");
    assert!(report.contains("| c`&lt;img src=x>&amp;\\| |"), "{report}");
}

/// The intact damaged-corpus trace as JSON text.
fn intact_json() -> Vec<u8> {
    use std::io::Read;
    let gz = std::fs::read(root().join("tests/data/damaged/intact.gz")).unwrap();
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut text)
        .unwrap();
    text
}

#[test]
fn a_zip_crc_error_is_called_a_zip_one() {
    use std::io::Write;
    let text = intact_json();
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        z.start_file("run/w.pt.trace.json", opts).unwrap();
        z.write_all(&text).unwrap();
        z.finish().unwrap();
    }
    let mut bytes = buf.into_inner();
    // Change one digit of the stored member: only the zip's CRC-32 sees it.
    let at = bytes.windows(6).position(|w| w == b"\"ts\": ").unwrap() + 7;
    bytes[at] = if bytes[at] == b'7' { b'8' } else { b'7' };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.zip");
    std::fs::write(&p, bytes).unwrap();
    let o = dir.path().join("o");
    let out = bin()
        .args([
            "batch",
            "--no-figures",
            "-o",
            o.to_str().unwrap(),
            p.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("zip member checksum mismatch (CRC-32)"),
        "{err}"
    );
    assert!(!err.contains("gzip"), "{err}");
}

#[test]
fn utf32_is_called_utf32() {
    let dir = tempfile::tempdir().unwrap();
    let text = "{\"traceEvents\": []}";
    for (name, bom, le) in [
        ("le.json", &[0xff, 0xfe, 0, 0][..], true),
        ("be.json", &[0, 0, 0xfe, 0xff][..], false),
        ("nobom.json", &[][..], true),
    ] {
        let mut bytes = bom.to_vec();
        for c in text.chars() {
            let c = c as u32;
            bytes.extend(if le { c.to_le_bytes() } else { c.to_be_bytes() });
        }
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let out = bin().args(["pair", p.to_str().unwrap()]).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains("UTF-32 text, save it as UTF-8"),
            "{name}: {err}"
        );
    }
}

#[test]
fn bad_manifest_tokens_name_the_row_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.csv");
    for (v, shown) in [("-5", "-5"), ("1.5", "1.5"), ("many", "\"many\"")] {
        std::fs::write(
            &m,
            format!("path,mode,workload,completion_tokens\ntext_ar,ar,text,{v}\n"),
        )
        .unwrap();
        let out = bin()
            .args(["batch", "-q", "--no-figures", "-o"])
            .arg(dir.path().join("o"))
            .arg("--manifest")
            .arg(&m)
            .arg("sample_traces/text_ar")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{v}: {err}");
        assert!(
            err.contains(&format!(
                "m.csv: row 2: completion_tokens {shown} is not a token count"
            )),
            "{v}: {err}"
        );
        assert!(!err.contains("untagged"), "{v}: {err}");
    }
}
