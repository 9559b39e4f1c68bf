//! Issue 59's identity edge cases (docs/ROBUSTNESS.md, "Issue 59"), each a
//! test of its own. The hostile inputs are a REAL trace edited here, not
//! generated: the bundled vLLM worker trace of `sample_traces/text_ar` (AR
//! decode, CUDA graphs; 3,616 GPU activities linked by correlation), its
//! text changed by a regex and written beside the test as plain JSON.
//!
//! - Correlation ids past u64 (2⁶⁴ + id): every link is made as before;
//!   `export` writes null in its Int64 column and names the id in a note.
//! - Kernels whose `args.stream` differs from their tid: placed on the
//!   args' stream (docs/VIEWS.md C2), with a note.
//! - Step names whose generation count is past u64: still steps, still
//!   the selected decode context.

use crate::common::*;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The real trace's text (decompressed).
fn real_text() -> String {
    let p = root().join(sample("text_ar"));
    let mut s = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&p).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    s
}

/// The real trace with `re`'s matches replaced by `f`, written to `dir`;
/// how many were replaced.
fn edited(dir: &Path, re: &str, f: impl Fn(&regex::Captures<'_>) -> String) -> (PathBuf, usize) {
    let re = regex::Regex::new(re).unwrap();
    let text = real_text();
    let n = re.find_iter(&text).count();
    let out = re.replace_all(&text, |c: &regex::Captures<'_>| f(c));
    let p = dir.join("edited.pt.trace.json");
    std::fs::write(&p, out.as_bytes()).unwrap();
    (p, n)
}

/// `cmd -f json` on `path`, its one trace.
fn one(cmd: &str, path: &str) -> Value {
    let out = bin().args([cmd, "-f", "json", path]).output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{cmd} {path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["traces"][0].clone()
}

const TWO_64: u128 = 1 << 64;

/// Every correlation id moved past u64 (2⁶⁴ + id, as the issue found:
/// read as missing, every kernel unlinked): `ops`, `idle` and `kernels`
/// give the same figures as on the real trace.
#[test]
fn correlation_ids_past_u64_link_as_before() {
    let t = tempfile::tempdir().unwrap();
    let (p, n) = edited(t.path(), r#""correlation": (\d+)"#, |c| {
        let id: u128 = c[1].parse().unwrap();
        format!(r#""correlation": {}"#, TWO_64 + id)
    });
    assert!(n > 3000, "{n} ids edited");
    let (p, real) = (p.to_str().unwrap(), root().join(sample("text_ar")));
    let real = real.to_str().unwrap();
    let (a, b) = (one("ops", real), one("ops", p));
    assert_eq!(a["summary"]["activities_linked"], 3616);
    assert_eq!(a["summary"], b["summary"]);
    let (a, b) = (one("idle", real), one("idle", p));
    assert_eq!(b["counts"]["unlinked"], 0);
    assert_eq!(a["counts"], b["counts"]);
    assert_eq!(a["streams"], b["streams"]);
    let (a, b) = (one("kernels", real), one("kernels", p));
    for k in [
        "contexts",
        "kernels",
        "launches",
        "graph_launches",
        "gpu_busy_ms",
    ] {
        assert_eq!(a[k], b[k], "{k}");
    }
}

/// `export`: the links hold (every activity has its launch), the Int64
/// `correlation` column is null for an id it cannot hold, and a note
/// counts them and names the first.
#[test]
fn export_names_correlation_ids_its_column_cannot_hold() {
    use arrow_array::Array;
    let t = tempfile::tempdir().unwrap();
    let (p, _) = edited(t.path(), r#""correlation": (\d+)"#, |c| {
        let id: u128 = c[1].parse().unwrap();
        format!(r#""correlation": {}"#, TWO_64 + id)
    });
    let out = t.path().join("out");
    let o = bin()
        .args(["export", p.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "correlation ids do not fit the tables' Int64 column (the first: 18446744073709551"
        ),
        "{err}"
    );
    let f = std::fs::File::open(out.join("activities.parquet")).unwrap();
    let mut rows = 0;
    for b in parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
    {
        let b = b.unwrap();
        rows += b.num_rows();
        let col = |name: &str| b.column(b.schema().index_of(name).unwrap()).clone();
        assert_eq!(col("correlation").null_count(), b.num_rows());
        assert_eq!(col("launch_id").null_count(), 0);
    }
    assert_eq!(rows, 3616);
}

/// Every activity on stream 7 given `args.stream` 70 (its tid stays 7):
/// C2 places it on stream 70, and the notes say how many were moved.
#[test]
fn args_stream_wins_over_tid_with_a_note() {
    let t = tempfile::tempdir().unwrap();
    let (p, n) = edited(t.path(), r#""stream": 7\b"#, |_| r#""stream": 70"#.into());
    assert!(n > 3000, "{n} streams edited");
    let p = p.to_str().unwrap();
    let idle = one("idle", p);
    let streams = idle["streams"].as_array().unwrap();
    let labels: Vec<&str> = streams
        .iter()
        .map(|s| s["stream"].as_str().unwrap())
        .collect();
    assert!(
        labels.contains(&"70") && !labels.contains(&"7"),
        "{labels:?}"
    );
    let moved: u64 = streams
        .iter()
        .filter(|s| s["stream"] == "70")
        .map(|s| s["activities"].as_u64().unwrap())
        .sum();
    assert_eq!(idle["counts"]["lane_from_args"], moved);
    let notes = idle["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "{moved} device activities whose args.device/args.stream differ"
        )),
        "{notes}"
    );
    // ops (and export, through the same host links) count them too.
    let ops = one("ops", p);
    assert_eq!(ops["input"]["lane_from_args"], moved, "{}", ops["input"]);
    // The real trace, where args and pid/tid agree: no count, no note.
    let real = one("idle", root().join(sample("text_ar")).to_str().unwrap());
    assert!(real["counts"].get("lane_from_args").is_none());
}

/// The decode step's generation count moved past u64: the name is still a
/// step of the grammar, and still the selected decode context (64 of them).
#[test]
fn step_names_with_counts_past_u64_keep_their_step() {
    let t = tempfile::tempdir().unwrap();
    let huge = "18446744073709551621";
    let (p, n) = edited(
        t.path(),
        r"execute_context_0\(0\)_generation_1\(1\)",
        |_| format!("execute_context_0(0)_generation_{huge}(1)"),
    );
    assert!(n >= 64, "{n} names edited");
    let k = one("kernels", p.to_str().unwrap());
    assert_eq!(
        k["context"],
        format!("execute_context_0(0)_generation_{huge}(1)")
    );
    let real = one("kernels", root().join(sample("text_ar")).to_str().unwrap());
    for f in ["contexts", "kernels", "gpu_busy_ms", "gpu_span_ms"] {
        assert_eq!(k[f], real[f], "{f}");
    }
}

/// Every memcpy of the real trace moved to −9.22·10¹⁸ ns (its launch,
/// and so its iteration, unchanged): an iteration with a memcpy then spans
/// more than i64 ns. `iterations` gives its idle and context span exactly
/// (they were `None`, and a busy past i64 was 0); `idle` stays exact.
#[test]
fn iteration_spans_past_i64_are_exact() {
    let t = tempfile::tempdir().unwrap();
    let (p, n) = edited(
        t.path(),
        r#"("cat": "gpu_memcpy",[^\n]*\n\s*"ts": )([0-9.]+)"#,
        |c| format!("{}-9220000000000000", &c[1]),
    );
    assert!(n >= 100, "{n} memcpys moved");
    let p = p.to_str().unwrap();
    let out = bin()
        .args(["iterations", "--per-iteration", "-f", "json", p])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["traces"][0]["rows"].as_array().unwrap().clone();
    let past = |k: &str| {
        rows.iter()
            .filter(|r| r[k].as_u64().is_some_and(|x| x > i64::MAX as u64))
            .count()
    };
    assert!(past("gpu_idle_ns") > 0, "{rows:?}");
    assert_eq!(past("gpu_idle_ns"), past("context_span_ns"));
    assert!(rows.iter().all(|r| r["gpu_busy_ns"].as_i64().is_some()));
    // The table prints them too (Cell::Wide), exactly.
    let out = bin()
        .args(["iterations", "--per-iteration", "-f", "csv", p])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&out.stdout);
    let wide = rows
        .iter()
        .find_map(|r| r["gpu_idle_ns"].as_u64().filter(|&x| x > i64::MAX as u64))
        .unwrap();
    assert!(csv.contains(&wide.to_string()), "{wide}");
}

/// A prefill step renamed `vLLM decode steps`, the name `ops` gives its
/// group of decode step annotations in a comparison: a row of its own,
/// never merged into the group (whose figures stay the real trace's).
#[test]
fn a_range_named_like_the_step_group_stays_apart() {
    let t = tempfile::tempdir().unwrap();
    let (p, n) = edited(
        t.path(),
        r"execute_context_1\(96\)_generation_0\(0\)",
        |_| "vLLM decode steps".into(),
    );
    // The CPU annotation and its two GPU annotations (streams 7 and 13).
    assert_eq!(n, 3);
    let real = root().join(sample("text_ar"));
    let out = bin()
        .args([
            "ops",
            "-f",
            "json",
            real.to_str().unwrap(),
            p.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows: Vec<&Value> = v["comparison"]["top_level"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["name"] == "vLLM decode steps")
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    let group = rows
        .iter()
        .find(|r| !r["baseline_gpu_top_ns"].is_null())
        .unwrap();
    assert_eq!(group["baseline_gpu_top_ns"], group["candidate_gpu_top_ns"]);
    let user = rows
        .iter()
        .find(|r| r["baseline_gpu_top_ns"].is_null())
        .unwrap();
    assert!(user["candidate_gpu_top_ns"].as_i64().unwrap() > 0);
}

/// Three kernels of the real trace given a duration of 4·10¹⁸ ns: `ops`'
/// sums of GPU ns pass i64. The summary's are exact; the rows' are shown
/// saturated, and a note names each (`idle`'s stay exact too).
#[test]
fn ops_names_the_sums_that_pass_i64() {
    let t = tempfile::tempdir().unwrap();
    let seen = std::cell::Cell::new(0);
    let (p, _) = edited(
        t.path(),
        r#"("cat": "kernel",[^\n]*\n\s*"ts": [0-9.]+, "dur": )([0-9.]+)"#,
        |c| {
            seen.set(seen.get() + 1);
            let dur = if seen.get() <= 3 {
                "4000000000000000"
            } else {
                &c[2]
            };
            format!("{}{dur}", &c[1])
        },
    );
    let out = bin()
        .args(["ops", "-f", "json", p.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The summary's GPU sum is exact past i64 (3 · 4·10¹⁸ ns and the
    // trace's other kernels' 12 628 558 ns); the rows' sums still stop at
    // the limit, and the note names them, not the summary's.
    assert_eq!(
        v["traces"][0]["summary"]["gpu_ns"].as_u64(),
        Some(12_000_000_000_012_628_558)
    );
    assert!(!err.contains("summary.gpu_ns"), "{err}");
    assert!(err.contains("at the i64 limit"), "{err}");
}

/// Every correlation id moved past i128 (10³⁹ + id: 40 digits; Kineto
/// writes u64 ids): read as no id, exactly as `"correlation": null` is —
/// `kernels` and `ops` give that trace's figures — but never silently:
/// the reader counts them, and one note per trace says how many.
#[test]
fn correlation_ids_past_i128_are_noted_and_read_as_none() {
    let t = tempfile::tempdir().unwrap();
    let (past_dir, null_dir) = (t.path().join("past"), t.path().join("null"));
    std::fs::create_dir_all(&past_dir).unwrap();
    std::fs::create_dir_all(&null_dir).unwrap();
    let (past, n) = edited(&past_dir, r#""correlation": (\d+)"#, |c| {
        format!(r#""correlation": 1{:0>39}"#, &c[1])
    });
    let (null, m) = edited(&null_dir, r#""correlation": (\d+)"#, |_| {
        r#""correlation": null"#.to_string()
    });
    // Every launch call (1 614) and GPU activity (3 616) of the real trace.
    assert_eq!((n, m), (5230, 5230));
    let (past, null) = (past.to_str().unwrap(), null.to_str().unwrap());
    let note = "5230 event(s) carry an args.correlation past i128";
    let (a, b) = (one("kernels", null), one("kernels", past));
    for k in [
        "contexts",
        "kernels",
        "launches",
        "graph_launches",
        "gpu_busy_ms",
        "timeline",
    ] {
        assert_eq!(a[k], b[k], "{k}");
    }
    let notes = |v: &Value| -> Vec<String> {
        v["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect()
    };
    let said: Vec<String> = notes(&b)
        .into_iter()
        .filter(|n| n.contains("past i128"))
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].starts_with(note), "{said:?}");
    assert!(!notes(&a).iter().any(|n| n.contains("past i128")));
    // `ops`: the same figures, and the note on stderr once.
    let ops = |p: &str| {
        let out = bin().args(["ops", "-f", "json", p]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (v["traces"][0].clone(), err)
    };
    let ((a, a_err), (b, b_err)) = (ops(null), ops(past));
    assert_eq!(a["summary"], b["summary"]);
    assert_eq!(a["ops"], b["ops"]);
    assert_eq!(b["summary"]["activities_linked"], 0);
    assert_eq!(b_err.matches(note).count(), 1, "{b_err}");
    assert!(!a_err.contains("past i128"), "{a_err}");
}
