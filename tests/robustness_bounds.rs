//! Issue 17, round 2: bounded cost on small hostile inputs and clear errors
//! (docs/ROBUSTNESS.md, "Round 2"). Large inputs are generated here, never
//! stored: a gzip member is built from full-flushed deflate segments, so a
//! gigabyte of text costs a few megabytes and no inflated copy is held.

mod common;
use common::*;
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

/// The memory limit of the bounded-cost tests (as in tests/robustness.rs).
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
