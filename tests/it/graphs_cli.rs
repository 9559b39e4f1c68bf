//! Inside the graphs when a replay differs from its capture (G2) and when
//! a capture is given twice (G3), on the real ROCm pair of
//! `tests/data/graphs/sglang_decode/` (AMD-AGI/TraceLens, MIT): one
//! `hipGraphLaunch` whose 544 kernels equal the capture's 544 named
//! launches. The changed copy drops the replay's last kernel, as TraceLens's
//! xDiT Flux.1 replays lack the capture's last launch. Figures worked out
//! from the file with Python's json: the 544 kernels last 9 656 404 ns; the
//! last, `bfloat16tofloat32_copy_kernel_cuda`, 8.451 µs.

use crate::common::{bin, root, run_json};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

const PAIR: &str = "tests/data/graphs/sglang_decode";
const TRACE: &str = "sglang_Qwen3-8B_decode.json.gz";

/// The pair copied into `dir` with the replay's last kernel (in GPU
/// order) removed from the trace's text, every other byte kept.
fn without_last_kernel(dir: &Path) -> PathBuf {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(root().join(PAIR).join(TRACE)).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let at = "\"ts\": 4909914689955.489, \"dur\": 8.451";
    assert_eq!(text.matches(at).count(), 1);
    let pos = text.find(at).unwrap();
    let start = text[..pos]
        .rfind("{\"ph\": \"X\", \"cat\": \"kernel\"")
        .unwrap();
    let end_mark = "\"correlation\": 92178, \"kind\": \"Dispatch Task\"}}, ";
    let end = pos + text[pos..].find(end_mark).unwrap() + end_mark.len();
    assert!(text[start..end].contains("bfloat16tofloat32_copy_kernel_cuda"));
    text.replace_range(start..end, "");
    let out = dir.join(TRACE);
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&out).unwrap(),
        flate2::Compression::fast(),
    );
    gz.write_all(text.as_bytes()).unwrap();
    gz.finish().unwrap();
    let caps = dir.join("capture_traces");
    std::fs::create_dir_all(&caps).unwrap();
    for e in std::fs::read_dir(root().join(PAIR).join("capture_traces")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), caps.join(e.file_name())).unwrap();
    }
    out
}

fn graphs_of(v: &Value) -> &Value {
    &v["traces"][0]["graphs"]
}

/// A replay that lacks its capture's last launch: matched with that one
/// difference listed, its 543 activities attributed (100 % of what ran),
/// the same in `ops` (host links) and `kernels` (the driver's ledger).
#[test]
fn a_replay_missing_its_last_launch_is_matched_with_the_difference() {
    let dir = tempfile::tempdir().unwrap();
    let trace = without_last_kernel(dir.path());
    let trace = trace.to_str().unwrap();
    for cmd in ["ops", "kernels"] {
        let v = run_json(&[cmd, "--format", "json", trace], 0);
        let g = match cmd {
            "ops" => graphs_of(&v),
            _ => &v["traces"][0]["inside_graphs"]["summary"],
        };
        assert_eq!(g["replays"], 1, "{cmd}: {g}");
        assert_eq!(g["replays_matched"], 1, "{cmd}");
        assert_eq!(g["replays_with_differences"], 1, "{cmd}");
        assert_eq!(g["replays_unmatched"], 0, "{cmd}");
        assert_eq!(g["graph_activities"], 543, "{cmd}");
        assert_eq!(g["replayed_activities"], 543, "{cmd}");
        assert_eq!(g["gpu_graph_ns"], 9_656_404 - 8_451, "{cmd}");
        assert_eq!(g["replayed_gpu_ns"], g["gpu_graph_ns"], "{cmd}");
        let d = g["differences"].as_array().unwrap();
        assert_eq!(d.len(), 1, "{cmd}: {d:?}");
        assert_eq!(d[0]["side"], "captured, not replayed");
        assert_eq!(d[0]["kind"], "kernel");
        assert_eq!(d[0]["count"], 1);
        assert!(d[0]["name"]
            .as_str()
            .unwrap()
            .contains("bfloat16tofloat32_copy_kernel_cuda"));
    }
}

/// The capture given twice (its folder and the file in it), or beside the
/// trace and by name: the same figures as once, with a note.
#[test]
fn a_capture_given_twice_changes_nothing() {
    let trace = format!("{PAIR}/{TRACE}");
    let once = run_json(&["ops", "--format", "json", &trace], 0);
    let folder = format!("{PAIR}/capture_traces");
    let file = format!("{folder}/bs_32_rank0.json.gz");
    let out = bin()
        .args([
            "ops",
            "--format",
            "json",
            "--capture",
            &folder,
            "--capture",
            &file,
            &trace,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let twice: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (a, b) = (graphs_of(&once), graphs_of(&twice));
    for key in [
        "regions",
        "replays_matched",
        "graph_activities",
        "gpu_graph_ns",
        "by_module",
    ] {
        assert_eq!(a[key], b[key], "{key}");
    }
    assert_eq!(a["gpu_graph_ns"], 9_656_404);
    assert_eq!(once["traces"][0]["rows"], twice["traces"][0]["rows"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("given more than once: read once"), "{err}");
}
