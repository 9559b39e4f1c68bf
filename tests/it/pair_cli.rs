//! `torchtrace pair` end to end: figures equal the independent reference
//! (scripts/reference.py, frozen in tests/data/expected/) to the nanosecond.

use crate::common::*;
use serde_json::Value;

const TRACE_KEYS: &[&str] = &[
    "path",
    "context",
    "contexts",
    "pairs",
    "cpu_unpaired",
    "gpu_unpaired",
    "multi_stream_pairs",
    "completion_tokens",
    "tokens_per_context",
    "cpu_span_ms",
    "gpu_span_ms",
    "gpu_span_per_token_ms",
];

const COMPARISON_KEYS: &[&str] = &[
    "baseline",
    "candidate",
    "s_context",
    "context_reduction_pct",
    "gpu_span_median_ratio",
    "cpu_span_median_ratio",
];

/// Step names as the reference writes them: {name: count}.
fn step_counts(t: &Value) -> serde_json::Map<String, Value> {
    t["step_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap().to_string(), s["count"].clone()))
        .collect()
}

/// Runs `pair` with GPU spans from annotations only: the frozen reference
/// outputs that predate `--gpu-span` define exactly that.
fn check(args: &[&str], expected_file: &str, code: i32) {
    let mut full = vec!["pair", "--format", "json", "--gpu-span", "annotation"];
    full.extend_from_slice(args);
    let got = run_json(&full, code);
    let want = expected(expected_file);
    let (gt, wt) = (
        got["traces"].as_array().unwrap(),
        want["traces"].as_array().unwrap(),
    );
    assert_eq!(gt.len(), wt.len());
    for (g, w) in gt.iter().zip(wt) {
        let mut w = w.clone();
        if w["context"].is_null() {
            w["context"] = Value::String(String::new());
        }
        same_keys(g, &w, TRACE_KEYS, expected_file);
        assert_eq!(
            &step_counts(g),
            w["step_names"].as_object().unwrap(),
            "{expected_file}: step names"
        );
    }
    if want["comparison"].is_null() {
        assert!(got["comparison"].is_null());
    } else {
        same_keys(
            &got["comparison"],
            &want["comparison"],
            COMPARISON_KEYS,
            expected_file,
        );
    }
}

#[test]
fn hta_step_based_trace_ten_pairs() {
    check(
        &[
            "tests/data/hta_step_based_trace.json.gz",
            "--context-regex",
            ".",
        ],
        "pair_hta_step_based_trace_all.json",
        0,
    );
}

#[test]
fn hta_nccl_data_thirty_pairs_twelve_cpu_only() {
    check(
        &["tests/data/hta_nccl_data.json.gz", "--context-regex", "."],
        "pair_hta_nccl_data_all.json",
        0,
    );
    check(
        &[
            "tests/data/hta_nccl_data.json.gz",
            "--context",
            "nccl:all_reduce",
        ],
        "pair_hta_nccl_data_all_reduce.json",
        0,
    );
}

#[test]
fn tracelens_traces() {
    for (f, e) in [
        (
            "tracelens_normalization_layer_test",
            "pair_tracelens_normalization_layer_test_all.json",
        ),
        (
            "tracelens_torch_compile_triton",
            "pair_tracelens_torch_compile_triton_all.json",
        ),
        (
            "tracelens_b200_eager_trace",
            "pair_tracelens_b200_eager_trace_all.json",
        ),
    ] {
        check(
            &[&format!("tests/data/{f}.json.gz"), "--context-regex", "."],
            e,
            0,
        );
    }
    check(
        &[
            "tests/data/hta_cpu_only.pt.trace.json.gz",
            "--context-regex",
            ".",
        ],
        "pair_hta_cpu_only_all.json",
        // Nothing measured is a problem.
        1,
    );
}

#[test]
fn default_selection_without_decode_steps_exits_1_and_lists_names() {
    check(
        &["tests/data/tracelens_b200_eager_trace.json.gz"],
        "pair_tracelens_b200_eager_trace_default.json",
        1,
    );
    let out = bin()
        .args(["pair", "tests/data/tracelens_b200_eager_trace.json.gz"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("execute_context_1(888_788544)_generation_0(0) ×1"),
        "{err}"
    );
}

#[test]
fn comparison_of_two_traces_with_tokens() {
    check(
        &[
            "tests/data/hta_step_based_trace.json.gz",
            "tests/data/hta_nccl_data.json.gz",
            "--context-regex",
            ".",
            "--tokens",
            "100",
            "--tokens",
            "250",
        ],
        "pair_compare_step_based_vs_nccl_all.json",
        0,
    );
}

#[test]
fn sample_traces_ar_vs_mtp_per_workload() {
    for w in ["text", "reasoning", "tool_calling"] {
        let (ar, mtp) = (sample(&format!("{w}_ar")), sample(&format!("{w}_mtp")));
        check(&[&ar, &mtp], &format!("pair_sample_{w}.json"), 0);
    }
}

#[test]
fn external_id_reused_in_another_file_does_not_cross_pair() {
    // Both sample traces number their External ids from small integers, so
    // the same id occurs in both files; each file must pair only with itself.
    let ar = sample("text_ar");
    let one = run_json(&["pair", "-f", "json", &ar], 0);
    let two = run_json(&["pair", "-f", "json", &ar, &sample("text_mtp")], 0);
    for k in ["contexts", "pairs", "gpu_unpaired", "cpu_unpaired"] {
        assert_eq!(one["traces"][0][k], two["traces"][0][k], "{k}");
    }
}

#[test]
fn same_output_with_one_and_two_threads() {
    let (ar, mtp) = (sample("text_ar"), sample("text_mtp"));
    let run = |j: &str| {
        bin()
            .args(["pair", "-j", j, "-f", "json", &ar, &mtp])
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(run("1"), run("2"));
}

#[test]
fn stdin_dash_reads_the_trace() {
    let bytes = std::fs::read(root().join("tests/data/hta_step_based_trace.json.gz")).unwrap();
    let out = bin()
        .args(["pair", "-", "--context-regex", ".", "-f", "json"])
        .write_stdin(bytes)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["traces"][0]["pairs"], 10);
    assert_eq!(v["traces"][0]["path"], "-");
}

#[test]
fn golden_human_formats() {
    let (ar, mtp) = (sample("text_ar"), sample("text_mtp"));
    for (fmt, name) in [
        ("table", "pair_text.table.txt"),
        ("markdown", "pair_text.md"),
        ("csv", "pair_text.csv"),
    ] {
        let out = bin()
            .args(["pair", "-q", "-f", fmt, &ar, &mtp])
            .output()
            .unwrap();
        assert!(out.status.success());
        golden(name, &String::from_utf8(out.stdout).unwrap());
    }
}

#[test]
fn per_context_rows() {
    let ar = sample("text_ar");
    let v = run_json(&["pair", "-f", "json", "--per-context", &ar], 0);
    let rows = v["traces"][0]["per_context"].as_array().unwrap();
    assert_eq!(rows.len(), 64);
    // Rows are in time order and each carries both spans.
    let starts: Vec<i64> = rows
        .iter()
        .map(|r| r["start_ns"].as_i64().unwrap())
        .collect();
    assert!(starts.windows(2).all(|w| w[0] <= w[1]));
    assert!(rows
        .iter()
        .all(|r| r["gpu_ns"].is_i64() && r["gpu_annotations"] == 2));
}
