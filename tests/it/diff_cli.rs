//! `torchtrace diff` end to end: the per-name tables, graph replays and the
//! summary's exact parts equal the independent reference
//! (scripts/reference_diff.py, frozen in tests/data/expected/diff_*.json),
//! families sum to the totals, and bad input gives notes, not panics.

use crate::common::*;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;

const CAR: &str =
    "tests/data/compiled/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1796014765166427155.pt.trace.json.gz";
const CMTP: &str =
    "tests/data/compiled/text_mtp/dp0_pp0_tp0_dcp0_ep0_rank0.1796014771009061482.pt.trace.json.gz";

fn diff(b: &str, c: &str, extra: &[&str], code: i32) -> Value {
    let mut args = vec!["diff", "-q", "-f", "json", b, c];
    args.extend_from_slice(extra);
    run_json(&args, code)
}

fn int(v: &Value) -> i128 {
    match v {
        Value::Number(n) => n.to_string().parse().unwrap(),
        Value::String(s) => s.parse().unwrap(),
        other => panic!("not an integer: {other}"),
    }
}

/// A Fraction's text ("9339/2", "4672") as f64.
fn frac(s: &str) -> f64 {
    match s.split_once('/') {
        Some((n, d)) => n.parse::<f64>().unwrap() / d.parse::<f64>().unwrap(),
        None => s.parse().unwrap(),
    }
}

/// Every figure the reference computes, to the nanosecond.
fn check_against(got: &Value, want: &Value) {
    assert_eq!(got["scope"], want["scope"]);
    assert_eq!(got["normalisation"], want["normalisation"]);
    for side in ["baseline", "candidate"] {
        let (g, w) = (&got[side], &want[side]);
        assert_eq!(g["path"], w["path"]);
        assert_eq!(g["completion_tokens"], w["completion_tokens"], "{side}");
        assert_eq!(g["contexts"], w["contexts"], "{side}");
        assert_eq!(g["activities"], w["activities"], "{side} activities");
        // Kernels are the reference's kernel-kind rows only (issue 37: they
        // once counted memcpys and memsets too).
        let kernels: u64 = want["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k["kind"] == "kernel" && !k[side].is_null())
            .map(|k| k[side]["calls"].as_u64().unwrap())
            .sum();
        assert_eq!(g["kernels"].as_u64().unwrap(), kernels, "{side} kernels");
        let n = w["completion_tokens"].as_f64().unwrap();
        let kpt = g["kernels_per_token"].as_f64().unwrap();
        assert!(
            (kpt - kernels as f64 / n).abs() < 1e-12,
            "{side} kernels/token"
        );
        let apt = g["activities_per_token"].as_f64().unwrap();
        assert!((apt - w["activities"].as_f64().unwrap() / n).abs() < 1e-12);
        assert_eq!(int(&g["gpu_time_ns"]), int(&w["total_ns"]), "{side} Σ ns");
        assert_eq!(g["graph_replays"], w["graph_replays"], "{side}");
        let gr = &got["graphs"][side];
        assert_eq!(gr["replays"], w["graph_replays"]);
        assert_eq!(gr["signatures"], w["signatures"]);
        let n = w["graph_replays"].as_f64().unwrap();
        if n > 0.0 {
            let kpr = w["activities_in_replays"].as_f64().unwrap() / n;
            assert!((gr["kernels_per_replay"].as_f64().unwrap() - kpr).abs() < 1e-9);
        }
        // Per token, from the reference's exact sums.
        let tokens = w["completion_tokens"].as_f64().unwrap();
        let tpt = int(&w["total_ns"]) as f64 / 1e6 / tokens;
        assert!((g["gpu_time_per_token_ms"].as_f64().unwrap() - tpt).abs() < 1e-12);
    }
    assert_eq!(
        got["graphs"]["only_baseline"].as_array().unwrap().len() as u64,
        want["only_baseline_signatures"].as_u64().unwrap()
    );
    assert_eq!(
        got["graphs"]["only_candidate"].as_array().unwrap().len() as u64,
        want["only_candidate_signatures"].as_u64().unwrap()
    );
    let rows: HashMap<(String, String), &Value> = got["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let key = (
                k["kind"].as_str().unwrap().to_string(),
                k["name"].as_str().unwrap().to_string(),
            );
            (key, k)
        })
        .collect();
    let wanted = want["kernels"].as_array().unwrap();
    assert_eq!(rows.len(), wanted.len(), "every name listed");
    for w in wanted {
        let key = (
            w["kind"].as_str().unwrap().to_string(),
            w["name"].as_str().unwrap().to_string(),
        );
        let g = rows.get(&key).unwrap_or_else(|| panic!("missing {key:?}"));
        assert_eq!(g["status"], w["status"], "{key:?}");
        for side in ["baseline", "candidate"] {
            match &w[side] {
                Value::Null => {
                    assert_eq!(g[side]["calls"], 0);
                    assert_eq!(int(&g[side]["time_ns"]), 0);
                }
                ws => {
                    assert_eq!(g[side]["calls"], ws["calls"], "{key:?} {side}");
                    assert_eq!(
                        int(&g[side]["time_ns"]),
                        int(&ws["time_ns"]),
                        "{key:?} {side}"
                    );
                    let med = g[side]["median_us"].as_f64().unwrap() * 1e3;
                    assert!((med - frac(ws["median_ns"].as_str().unwrap())).abs() < 1e-6);
                }
            }
        }
    }
    // Rows sorted by |Δ| (the reference's exact units).
    let units: HashMap<(String, String), i128> = wanted
        .iter()
        .map(|w| {
            let key = (
                w["kind"].as_str().unwrap().to_string(),
                w["name"].as_str().unwrap().to_string(),
            );
            (key, int(&w["delta_units"]).abs())
        })
        .collect();
    let order: Vec<i128> = got["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            units[&(
                k["kind"].as_str().unwrap().to_string(),
                k["name"].as_str().unwrap().to_string(),
            )]
        })
        .collect();
    assert!(order.windows(2).all(|w| w[0] >= w[1]), "sorted by |Δ|");
    let (gs, ws) = (&got["summary"], &want["summary"]);
    for k in [
        "denominator",
        "total_units",
        "call_count_units",
        "duration_units",
        "added_units",
        "removed_units",
    ] {
        assert_eq!(int(&gs[k]), int(&ws[k]), "summary {k}");
    }
}

/// Families partition the names: their sums are the totals, exactly; the
/// summary's parts add up to its total.
fn check_sums(got: &Value) {
    for side in ["baseline", "candidate"] {
        let fam: i128 = got["families"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| int(&f[side]["time_ns"]))
            .sum();
        assert_eq!(fam, int(&got[side]["gpu_time_ns"]), "{side} families");
        let calls: u64 = got["families"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f[side]["calls"].as_u64().unwrap())
            .sum();
        assert_eq!(calls, got[side]["activities"].as_u64().unwrap());
    }
    let s = &got["summary"];
    assert_eq!(
        int(&s["call_count_units"]) + int(&s["duration_units"]) + int(&s["added_units"])
            - int(&s["removed_units"]),
        int(&s["total_units"])
    );
    let f = |k: &str| s[k].as_f64().unwrap();
    let parts = f("call_count_change_ms_per_token")
        + f("duration_change_ms_per_token")
        + f("added_minus_removed_ms_per_token");
    assert!((parts - f("total_delta_ms_per_token")).abs() < 1e-12);
    // The contract's keys.
    for k in [
        "path",
        "completion_tokens",
        "kernels_per_token",
        "gpu_time_per_token_ms",
    ] {
        assert!(
            got["baseline"].get(k).is_some() && got["candidate"].get(k).is_some(),
            "{k}"
        );
    }
    for k in &got["kernels"].as_array().unwrap()[..1] {
        for key in ["name", "status", "baseline", "candidate"] {
            assert!(k.get(key).is_some(), "{key}");
        }
        assert!(k["baseline"].get("calls_per_token").is_some());
        assert!(k["candidate"].get("time_per_token_ms").is_some());
    }
    assert!(got["families"][0].get("family").is_some());
}

#[test]
fn samples_equal_the_reference_in_both_scopes() {
    let (ar, mtp) = (sample("text_ar"), sample("text_mtp"));
    for (b, c, scope, file) in [
        (ar.as_str(), mtp.as_str(), "steps", "diff_text_steps.json"),
        (ar.as_str(), mtp.as_str(), "trace", "diff_text_trace.json"),
        (CAR, CMTP, "steps", "diff_compiled_steps.json"),
        (CAR, CMTP, "trace", "diff_compiled_trace.json"),
    ] {
        let got = diff(b, c, &["--scope", scope], 0);
        check_against(&got, &expected(file));
        check_sums(&got);
    }
}

#[test]
fn sample_figures_as_the_readme_shows_them() {
    let got = diff(&sample("text_ar"), &sample("text_mtp"), &[], 0);
    assert_eq!(got["scope"], "steps");
    assert_eq!(got["normalisation"], "token");
    let s = &got["summary"];
    assert_eq!(int(&s["denominator"]), 68 * 68);
    assert_eq!(int(&s["total_units"]), -406_297_144);
    assert_eq!(int(&s["call_count_units"]), -342_111_299);
    assert_eq!(int(&s["duration_units"]), -2_294_965);
    assert_eq!(int(&s["added_units"]), 44_980_436);
    assert_eq!(int(&s["removed_units"]), 106_871_316);
    assert_eq!(got["baseline"]["activities"], 3136);
    assert_eq!(got["candidate"]["activities"], 1590);
    let d = &got["dominant"];
    assert_eq!(
        d["baseline"]["name"],
        "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"
    );
    assert_eq!(d["baseline"]["calls"], 512);
    assert_eq!(d["candidate"]["calls"], 240);
    assert_eq!(d["baseline"]["family"], "GEMM/GEMV");
    // Graph replays: one signature per side, none shared (46 vs 50 kernels).
    assert_eq!(got["graphs"]["baseline"]["replays"], 64);
    assert_eq!(got["graphs"]["candidate"]["replays"], 30);
    assert_eq!(got["graphs"]["only_candidate"][0]["kernels"], 50);
}

#[test]
fn table_markdown_and_csv_show_every_part() {
    let (ar, mtp) = (sample("text_ar"), sample("text_mtp"));
    let out = bin()
        .args(["diff", "-q", &ar, &mtp, "--top", "3"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "What changed (steps scope, per token)",
        "Per kernel (by |Δ time per token|; top 3 of 14)",
        "(the other 11 kernels, summed)",
        "Per kernel family",
        "Graph replay signatures on one side only",
        "dominant kernel",
        "in units of 1/4624 ns: -406297144 = (a) -342111299",
    ] {
        assert!(text.contains(needle), "{needle} in\n{text}");
    }
    for f in ["markdown", "csv"] {
        let out = bin()
            .args(["diff", "-q", "-f", f, &ar, &mtp])
            .output()
            .unwrap();
        assert!(out.status.success(), "{f}");
        assert!(!out.stdout.is_empty());
    }
}

#[test]
fn user_families_come_first_and_apply_everywhere() {
    let got = diff(
        &sample("text_ar"),
        &sample("text_mtp"),
        &["--family", "nvjet=^nvjet", "--family", "flash=flash_fwd"],
        0,
    );
    assert_eq!(got["family_table"][0]["family"], "nvjet");
    assert_eq!(got["family_table"][1]["family"], "flash");
    assert_eq!(got["dominant"]["baseline"]["family"], "nvjet");
    for k in got["kernels"].as_array().unwrap() {
        let name = k["name"].as_str().unwrap();
        if name.starts_with("nvjet") {
            assert_eq!(k["family"], "nvjet");
        }
    }
    assert!(got["families"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["family"] == "flash"));
    check_sums(&got);
    let bad = bin()
        .args([
            "diff",
            "-q",
            &sample("text_ar"),
            &sample("text_mtp"),
            "--family",
            "x=(",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid regex"));
}

#[test]
fn help_states_the_definitions_and_two_traces_are_required() {
    let out = bin().args(["diff", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "Σ activity",
        "first matching pattern",
        "1/(N_b·N_c)",
        "per",
        "--scope",
        "--family",
    ] {
        assert!(help.contains(needle), "{needle}");
    }
    let one = bin().args(["diff", &sample("text_ar")]).output().unwrap();
    assert_eq!(one.status.code(), Some(2));
}

/// A trace of GPU activities (trace scope needs no launch calls): each
/// (name, duration µs) a kernel with its own correlation.
fn synth(dir: &Path, file: &str, kernels: &[(String, u64)]) -> String {
    let events: Vec<Value> = kernels
        .iter()
        .enumerate()
        .map(|(i, (name, dur))| {
            json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                   "ts": 1000 + 10 * i as u64, "dur": dur, "args": {"correlation": i + 1}})
        })
        .collect();
    let p = dir.join(file);
    std::fs::write(
        &p,
        serde_json::to_vec(&json!({"traceEvents": events})).unwrap(),
    )
    .unwrap();
    p.display().to_string()
}

#[test]
fn disjoint_kernel_sets_are_all_added_or_removed() {
    let dir = tempfile::tempdir().unwrap();
    let b = synth(
        dir.path(),
        "b.json",
        &[
            ("alpha".into(), 3),
            ("alpha".into(), 5),
            ("gemv_x".into(), 7),
        ],
    );
    let c = synth(dir.path(), "c.json", &[("beta_topk".into(), 11)]);
    let got = diff(
        &b,
        &c,
        &["--scope", "trace", "--tokens", "2", "--tokens", "4"],
        0,
    );
    let statuses: Vec<&str> = got["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["status"].as_str().unwrap())
        .collect();
    // Per token: alpha 8000/2, gemv_x 7000/2, beta_topk 11000/4 ns.
    assert_eq!(statuses, ["removed", "removed", "added"]);
    let notes: Vec<&str> = got["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("no kernel name in common")),
        "{notes:?}"
    );
    let s = &got["summary"];
    // units of 1/8 ns: candidate 11000·2, baseline 15000·4.
    assert_eq!(int(&s["total_units"]), 11000 * 2 - 15000 * 4);
    assert_eq!(int(&s["added_units"]), 22000);
    assert_eq!(int(&s["removed_units"]), 60000);
    assert_eq!(int(&s["call_count_units"]), 0);
    assert_eq!(got["kernels"][2]["family"], "sort/top-k");
    assert_eq!(got["kernels"][1]["family"], "GEMM/GEMV");
    check_sums(&got);
}

#[test]
fn one_side_without_gpu_work_and_unknown_tokens_are_notes() {
    let dir = tempfile::tempdir().unwrap();
    let empty = synth(dir.path(), "empty.json", &[]);
    let c = synth(dir.path(), "c.json", &[("k".into(), 2)]);
    // No tokens, no contexts: not normalised, said so; the empty side too.
    let out = bin()
        .args(["diff", "-f", "json", &empty, &c, "--scope", "trace"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["normalisation"], "none");
    let notes = got["notes"].to_string();
    assert!(notes.contains("no GPU work"), "{notes}");
    assert!(notes.contains("tokens unknown"), "{notes}");
    assert!(got["dominant"]["baseline"].is_null());
    assert_eq!(got["kernels"][0]["status"], "added");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no GPU activity in the trace scope"));
    // Tokens unknown (0) on both sides, contexts known: per context.
    // (Tokens for one side only are refused: issue 38.)
    let got = diff(
        &sample("text_ar"),
        CMTP,
        &["--tokens", "0", "--tokens", "0"],
        0,
    );
    assert_eq!(got["normalisation"], "context");
    assert!(got["notes"].to_string().contains("per selected context"));
    assert_eq!(got["baseline"]["normaliser"], got["baseline"]["contexts"]);
    check_sums(&got);
}

#[test]
fn many_distinct_names_stay_bounded_by_names() {
    let dir = tempfile::tempdir().unwrap();
    let n = 100_001usize;
    let names: Vec<(String, u64)> = (0..n)
        .map(|i| (format!("kernel_{i}"), 1 + (i % 7) as u64))
        .collect();
    let b = synth(dir.path(), "big.json", &names);
    let c = synth(dir.path(), "small.json", &[("kernel_5".into(), 9)]);
    let out = bin()
        .args([
            "diff", "-q", &b, &c, "--scope", "trace", "--tokens", "1", "--tokens", "1", "--top",
            "3",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!("top 3 of {n}")),
        "{}",
        &text[..2000.min(text.len())]
    );
    assert!(text.contains(&format!("(the other {} kernels, summed)", n - 3)));
    // The per-trace output holds one row per name, whatever the events.
    let lib = torchtrace::api::run::<torchtrace::analyses::diff::Diff>(
        &[b.clone().into(), c.into()],
        &torchtrace::api::Common {
            quiet: true,
            given: vec![
                torchtrace::runinfo::Given {
                    tokens: Some(1),
                    ..Default::default()
                },
                torchtrace::runinfo::Given {
                    tokens: Some(1),
                    ..Default::default()
                },
            ],
            ..Default::default()
        },
        &torchtrace::analyses::diff::DiffSpec {
            scope: torchtrace::analyses::diff::Scope::Trace,
            ..Default::default()
        },
    )
    .unwrap();
    let k = &lib.report.comparison.kernels;
    assert_eq!(k.len(), n);
    let total: i128 = k.iter().map(|r| r.baseline.time_ns).sum();
    let want: i128 = (0..n).map(|i| 1000 * (1 + (i % 7) as i128)).sum();
    assert_eq!(total, want);
}

/// README's glob over a vLLM run takes its frontend trace too: `diff`
/// says it takes two traces and names the one that is not a worker
/// trace, exit 2 (clap said only "3 were provided").
#[test]
fn three_traces_name_the_frontend_trace() {
    let root = root().join("sample_traces");
    let worker = |d: &str| {
        std::fs::read_dir(root.join(d))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                let n = p.file_name().unwrap().to_string_lossy().into_owned();
                n.starts_with("dp0_") && n.ends_with(".pt.trace.json.gz")
            })
            .unwrap()
    };
    let frontend = root.join("text_mtp/vm_439.async_llm.1795968155950133233.pt.trace.json.gz");
    let out = bin()
        .arg("diff")
        .arg(worker("text_ar"))
        .arg(worker("text_mtp"))
        .arg(&frontend)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("diff takes exactly 2 traces (baseline, then candidate); 3 were given"),
        "{err}"
    );
    assert!(
        err.contains("vm_439.async_llm.1795968155950133233.pt.trace.json.gz (a frontend file)"),
        "{err}"
    );
    // One trace: clap's usage error.
    let out = bin().arg("diff").arg(worker("text_ar")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
