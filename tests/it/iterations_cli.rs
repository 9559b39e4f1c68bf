//! `torchtrace iterations` end to end: every figure equals the independent
//! reference (scripts/reference_iterations.py, frozen in tests/data/expected/
//! with the commands in ITERATIONS.md): integers (every per-iteration ns,
//! count) exactly, floats to well under a nanosecond. Plus bad input.

use crate::common::*;
use serde_json::Value;

/// (expected file, trace paths) from tests/data/expected/ITERATIONS.md.
fn frozen() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(root().join("tests/data/expected/ITERATIONS.md")).unwrap();
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("- `")?;
            let (file, cmd) = rest.split_once("`: `python3 scripts/reference_iterations.py ")?;
            let args = cmd
                .strip_suffix('`')?
                .split(' ')
                .map(str::to_string)
                .collect();
            Some((file.to_string(), args))
        })
        .collect()
}

/// Every key of `want`, recursively: integers exactly, other numbers close.
fn equal(got: &Value, want: &Value, at: &str) {
    match want {
        Value::Object(m) => {
            for (k, w) in m {
                equal(&got[k], w, &format!("{at}.{k}"));
            }
        }
        Value::Array(v) => {
            let g = got.as_array().unwrap_or_else(|| panic!("{at}: not a list"));
            assert_eq!(g.len(), v.len(), "{at}: length");
            for (i, (g, w)) in g.iter().zip(v).enumerate() {
                equal(g, w, &format!("{at}[{i}]"));
            }
        }
        Value::Number(n) if n.is_i64() || n.is_u64() => assert_eq!(got, want, "{at}"),
        _ => close(got, want, at),
    }
}

#[test]
fn every_frozen_trace_pair_equals_the_reference() {
    let cases = frozen();
    assert_eq!(cases.len(), 6, "ITERATIONS.md lists the frozen files");
    for (file, paths) in cases {
        let want = expected(&file);
        let mut args = vec!["-q", "iterations", "-f", "json", "--per-iteration"];
        args.extend(paths.iter().map(String::as_str));
        let got = run_json(&args, 0);
        equal(&got, &want, &file);
    }
}

#[test]
fn text_ar_vs_mtp_real_figures() {
    let (ar, mtp) = (sample("text_ar"), sample("text_mtp"));
    let d = run_json(&["-q", "iterations", "-f", "json", &ar, &mtp], 0);
    let (a, m) = (&d["traces"][0], &d["traces"][1]);
    assert_eq!(
        (a["contexts"].as_u64(), a["iterations_closed"].as_u64()),
        (Some(64), Some(63))
    );
    assert_eq!(
        (m["contexts"].as_u64(), m["iterations_closed"].as_u64()),
        (Some(30), Some(29))
    );
    assert_eq!(a["completion_tokens"], 68);
    // MTP's drafter runs between step annotations: the draft phase exists
    // only there, and the drafter's graph does not become the repeating one.
    assert_eq!(a["per_token"]["phases"]["draft"]["gpu_busy_ms"], 0.0);
    assert!(
        m["per_token"]["phases"]["draft"]["gpu_busy_ms"]
            .as_f64()
            .unwrap()
            > 0.06
    );
    assert_eq!(m["graphs"]["repeating"]["kernels_per_replay"], 46);
    assert_eq!(m["graphs"]["repeating"]["replays"], 29);
    let c = &d["comparison"];
    close(&c["token_progress_ratio"], &Value::from(64.0 / 30.0), "P");
    // S_context by correlation is kernels', to the last bit.
    let k = run_json(&["-q", "kernels", "-f", "json", &ar, &mtp], 0);
    assert_eq!(
        c["s_context_correlation"],
        k["comparison"]["s_context_correlation"]
    );
    assert!(c.get("s_context").is_none(), "S_context is pair's name");
    // The decomposition adds up: Σ g_p = P − S_busy.
    let g: f64 = c["decomposition"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["gives_back"].as_f64().unwrap())
        .sum();
    let want = c["token_progress_ratio"].as_f64().unwrap() - c["s_busy"].as_f64().unwrap();
    assert!((g - want).abs() < 1e-12, "{g} vs {want}");
}

#[test]
fn every_format_prints_and_rows_only_with_per_iteration() {
    let ar = sample("text_ar");
    let d = run_json(&["-q", "iterations", "-f", "json", &ar], 0);
    assert!(d["traces"][0].get("rows").is_none() && d["comparison"].is_null());
    for f in ["table", "csv", "markdown"] {
        let out = bin()
            .args(["-q", "iterations", "-f", f, "--per-iteration", &ar])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{f}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("forward"), "{f}: {text}");
        assert!(text.contains("wall_ns"), "{f}: per-iteration rows");
    }
}

#[test]
fn bad_input_says_why_and_never_panics() {
    // No selected step.
    let out = bin()
        .args([
            "iterations",
            "--context",
            "no such step",
            &sample("text_ar"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such step"));
    // One step, no following step annotation: nothing measured.
    let out = bin()
        .args(["iterations", "tests/data/tracelens_sglang_decode.json.gz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no closed iteration"), "{err}");
    assert!(err.contains("completion tokens unknown"), "{err}");
    // No GPU work at all.
    let out = bin()
        .args([
            "iterations",
            "--context-regex",
            ".",
            "tests/data/hta_cpu_only.pt.trace.json.gz",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    // Tokens unknown: figures null, exit 0.
    let d = run_json(
        &["-q", "iterations", "-f", "json", "tests/data/compiled/text_ar_noscopes/dp0_pp0_tp0_dcp0_ep0_rank0.1796014788483690260.pt.trace.json.gz", "--tokens", "0"],
        0,
    );
    assert!(d["traces"][0]["per_token"]["wall_ms"].is_null());
}

#[test]
fn unknown_option_is_refused_by_the_generic_entry() {
    let out = bin()
        .args(["iterations", "--no-such-flag", &sample("text_ar")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn text_outputs_match_their_goldens() {
    let (ar, mtp) = (sample("text_ar"), sample("text_mtp"));
    for (fmt, name) in [
        ("table", "iterations_text.table.txt"),
        ("markdown", "iterations_text.md"),
        ("csv", "iterations_text.csv"),
    ] {
        let out = bin()
            .args(["iterations", "-q", "-f", fmt, &ar, &mtp])
            .output()
            .unwrap();
        assert!(out.status.success());
        golden(name, &String::from_utf8(out.stdout).unwrap());
    }
}
