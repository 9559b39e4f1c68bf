//! `torchtrace kernels` and `pair --gpu-span` end to end: every figure equals
//! the independent reference (scripts/reference.py, frozen in
//! tests/data/expected/) to the nanosecond. The commands are read from
//! tests/data/expected/COMMANDS.md, so each frozen file is checked with
//! exactly the arguments that made it.

use crate::common::*;
use serde_json::Value;

/// (expected file, reference arguments) for every `kernels` command and
/// every `pair` command that names `--gpu-span`.
fn frozen_commands() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(root().join("tests/data/expected/COMMANDS.md")).unwrap();
    let mut out = Vec::new();
    let mut file: Option<String> = None;
    for line in text.lines() {
        let l = line.trim();
        if let Some(name) = l.strip_prefix("- `").and_then(|s| s.strip_suffix("`:")) {
            file = Some(name.to_string());
        } else if let Some(cmd) = l
            .strip_prefix("`python3 scripts/reference.py ")
            .and_then(|s| s.strip_suffix('`'))
        {
            let args = split_args(cmd);
            let wanted = args[0] == "kernels"
                || (args[0] == "pair" && args.iter().any(|a| a == "--gpu-span"))
                || (args[0] == "pair" && file.as_deref().is_some_and(|f| f.contains("compiled")));
            if let (true, Some(f)) = (wanted, file.take()) {
                out.push((f, args));
            }
        }
    }
    out
}

/// Splits a shell command line written with single quotes where needed.
fn split_args(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for ch in cmd.chars() {
        match ch {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Compares `got` with the reference's `want`, recursively: numbers to a
/// nanosecond, exact-decimal strings as numbers, a null statistic as an
/// object of nulls.
fn compare(got: &Value, want: &Value, at: &str) {
    match (got, want) {
        (Value::Object(g), Value::Null) => {
            for (k, v) in g {
                assert!(k == "count" || v.is_null(), "{at}.{k} should be null");
            }
        }
        (Value::Object(g), Value::Object(w)) => {
            for (k, wv) in w {
                let gv = g.get(k).unwrap_or_else(|| panic!("{at}: no key {k}"));
                compare(gv, wv, &format!("{at}.{k}"));
            }
        }
        (Value::Array(g), Value::Array(w)) => {
            assert_eq!(g.len(), w.len(), "{at}: lengths");
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                compare(gv, wv, &format!("{at}[{i}]"));
            }
        }
        (Value::Number(_), Value::String(s)) => {
            let w: f64 = s.parse().unwrap_or_else(|_| panic!("{at}: {s}"));
            close(got, &serde_json::json!(w), at);
        }
        _ => close(got, want, at),
    }
}

/// `pair`'s figures (the reference also writes exact-ns helper keys).
fn compare_pair(got: &Value, want: &Value, file: &str) {
    const KEYS: &[&str] = &[
        "context",
        "contexts",
        "pairs",
        "cpu_unpaired",
        "gpu_unpaired",
        "multi_stream_pairs",
        "measured",
        "gpu_span_sources",
        "completion_tokens",
        "tokens_per_context",
        "cpu_span_ms",
        "gpu_span_ms",
        "gpu_span_per_token_ms",
    ];
    let (g, w) = (
        got["traces"].as_array().unwrap(),
        want["traces"].as_array().unwrap(),
    );
    assert_eq!(g.len(), w.len(), "{file}");
    for (i, (gt, wt)) in g.iter().zip(w).enumerate() {
        for k in KEYS {
            compare(&gt[*k], &wt[*k], &format!("{file}.traces[{i}].{k}"));
        }
    }
    for k in [
        "s_context",
        "context_reduction_pct",
        "gpu_span_median_ratio",
    ] {
        compare(
            &got["comparison"][k],
            &want["comparison"][k],
            &format!("{file}.{k}"),
        );
    }
}

#[test]
fn every_frozen_kernels_and_gpu_span_output() {
    let cmds = frozen_commands();
    assert!(cmds.len() >= 20, "found {} commands", cmds.len());
    for (file, args) in cmds {
        if args.iter().any(|a| a.starts_with("tests/data/compiled/")) && !exists(&args[1]) {
            continue;
        }
        let mut full: Vec<&str> = args.iter().map(String::as_str).collect();
        full.extend(["-f", "json", "-q", "--per-context"]);
        let out = bin().args(&full).output().unwrap();
        let code = out.status.code();
        assert!(matches!(code, Some(0) | Some(1)), "{file}: {code:?}");
        let got: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let want = expected(&file);
        if args[0] == "kernels" {
            compare(&got, &want, &file);
        } else {
            compare_pair(&got, &want, &file);
        }
    }
}

#[test]
fn annotation_and_correlation_spans_differ_by_kinetos_two_ns() {
    // Kineto widens each GPU annotation by 1 ns per side.
    for w in ["text_ar", "text_mtp", "reasoning_mtp", "tool_calling_ar"] {
        let t = sample(w);
        let rows = |mode: &str| {
            let v = run_json(
                &[
                    "pair",
                    "-f",
                    "json",
                    "--per-context",
                    "--gpu-span",
                    mode,
                    &t,
                ],
                0,
            );
            v["traces"][0]["per_context"].as_array().unwrap().clone()
        };
        let (a, c) = (rows("annotation"), rows("correlation"));
        assert!(!a.is_empty());
        for (x, y) in a.iter().zip(&c) {
            let d = x["gpu_ns"].as_i64().unwrap() - y["gpu_ns"].as_i64().unwrap();
            assert_eq!(d, 2, "{w}");
            assert_eq!(y["gpu_source"], "correlation");
        }
    }
}

#[test]
fn compiled_steps_without_gpu_annotation_are_measured_by_correlation() {
    let t = "tests/data/compiled/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1796014765166427155.pt.trace.json.gz";
    let out = bin().args(["pair", "-f", "json", t]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tr = &v["traces"][0];
    assert_eq!(
        (tr["contexts"].as_u64(), tr["pairs"].as_u64()),
        (Some(30), Some(0))
    );
    assert_eq!(tr["gpu_span_sources"]["correlation"], 30);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("30 of 30 step contexts have no GPU annotation")
            && err.contains("`gpu_model_runner: forward` ×30"),
        "{err}"
    );
    // Annotations only: nothing measured, exit 1.
    let out = bin()
        .args(["pair", "-f", "json", "--gpu-span", "annotation", t])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn golden_kernels_tables() {
    let (ar, mtp) = (sample("text_ar"), sample("text_mtp"));
    for (fmt, name) in [
        ("table", "kernels_text.table.txt"),
        ("markdown", "kernels_text.md"),
        ("csv", "kernels_text.csv"),
    ] {
        let out = bin()
            .args(["kernels", "-q", "-f", fmt, &ar, &mtp])
            .output()
            .unwrap();
        assert!(out.status.success());
        golden(name, &String::from_utf8(out.stdout).unwrap());
    }
}

#[test]
fn stdin_and_one_vs_two_threads_agree() {
    let (ar, mtp) = (sample("text_ar"), sample("text_mtp"));
    let run = |j: &str| {
        bin()
            .args(["kernels", "-j", j, "-f", "json", &ar, &mtp])
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(run("1"), run("2"));
    let bytes = std::fs::read(root().join(&ar)).unwrap();
    let out = bin()
        .args(["kernels", "-", "-f", "json", "--tokens", "68"])
        .write_stdin(bytes)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["traces"][0]["kernels"], 3008);
}

#[test]
fn batch_measures_compiled_steps_by_correlation() {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let res = bin()
        .args([
            "batch",
            "-q",
            "--no-figures",
            "tests/data/compiled/text_ar",
            "tests/data/compiled/text_mtp",
            "-o",
            o,
        ])
        .output()
        .unwrap();
    assert_eq!(
        res.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("results.json")).unwrap())
            .unwrap();
    let c = &v["comparisons"][0];
    // S_context by GPU span: what the reference froze for `pair` (auto) on these traces.
    let want = expected("pair_compiled_text.json");
    compare(
        &c["s_context"],
        &want["comparison"]["s_context"],
        "s_context",
    );
    assert!((c["kernels"]["s_context_busy"].as_f64().unwrap() - 1.978).abs() < 1e-3);
    let table8 = std::fs::read_to_string(out.path().join("workloads.csv")).unwrap();
    assert!(
        table8.lines().nth(1).unwrap().contains(",30,16,"),
        "{table8}"
    );
    let gw = std::fs::read_to_string(out.path().join("gpu_work.csv")).unwrap();
    assert!(gw.contains("36.56") || gw.contains("36.5625"), "{gw}");
}
