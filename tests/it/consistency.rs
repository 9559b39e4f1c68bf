//! One quantity, one value: every analysis run on the same traces (the
//! samples and a few fixtures) must agree on what they share (issue 37).
//!
//! | quantity | who reports it |
//! |---|---|
//! | step context name and count | pair, kernels, iterations, diff (steps), hierarchy, ranks (decode steps) |
//! | completion tokens | pair, kernels, iterations, diff, ops, idle, ranks |
//! | kernels / activities of the step contexts | kernels, diff (steps) |
//! | Σ GPU span by correlation (ns) and per token | kernels, pair `--gpu-span correlation`, ranks |
//! | whole-trace activities, kernels, Σ durations | kernels' timeline, ops, idle, diff (trace) |
//! | whole-trace GPU busy (union) | kernels' timeline, idle (one device) |
//! | S_context (pair's) | pair, batch's comparisons and Table 8 |
//! | S_context by correlation | kernels, iterations, pair `--gpu-span correlation` |
//!
//! Integers are compared exactly; ratios and per-token figures (f64 of
//! exact fractions) to well under a nanosecond, as the other CLI tests do.

use crate::common::*;
use serde_json::Value;

/// Runs one analysis and returns its JSON; exit 1 (no step context, no
/// GPU work) is a finding, not a failure, and still prints JSON.
fn json(args: &[&str]) -> Value {
    let out = bin().args(args).output().expect("runs");
    let code = out.status.code();
    assert!(
        matches!(code, Some(0) | Some(1)),
        "{args:?}: {code:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: stdout is not JSON: {e}"))
}

fn analysis(name: &str, trace: &str, extra: &[&str]) -> Value {
    let mut args = vec![name, "-q", "-f", "json"];
    args.extend_from_slice(extra);
    args.push(trace);
    json(&args)
}

fn u(v: &Value, what: &str) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{what}: not an integer: {v}"))
}

fn i(v: &Value, what: &str) -> i128 {
    match v {
        Value::Number(n) => n
            .to_string()
            .parse()
            .unwrap_or_else(|_| panic!("{what}: {n}")),
        Value::String(s) => s.parse().unwrap_or_else(|_| panic!("{what}: {s}")),
        other => panic!("{what}: not an integer: {other}"),
    }
}

/// Traces with step contexts (vLLM workers) and without (HTA, TraceLens
/// fixtures: the whole-trace figures must still agree).
const FIXTURES: &[&str] = &[
    "tests/data/compiled/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1796014765166427155.pt.trace.json.gz",
    "tests/data/compiled/text_mtp_noscopes/dp0_pp0_tp0_dcp0_ep0_rank0.1796014790837458570.pt.trace.json.gz",
    "tests/data/hta_step_based_trace.json.gz",
    "tests/data/hta_nccl_data.json.gz",
    "tests/data/tracelens_sglang_decode.json.gz",
    "tests/data/tracelens_vllm_piecewise.json.gz",
];

const SAMPLES: &[&str] = &[
    "text_ar",
    "text_mtp",
    "reasoning_ar",
    "reasoning_mtp",
    "tool_calling_ar",
    "tool_calling_mtp",
    "text_graphs_ar",
    "text_graphs_mtp",
];

fn traces() -> Vec<String> {
    let mut v: Vec<String> = SAMPLES.iter().map(|s| sample(s)).collect();
    v.extend(FIXTURES.iter().filter(|p| exists(p)).map(|p| p.to_string()));
    v
}

/// Everything one trace's analyses share.
fn check_trace(t: &str) {
    let pair = analysis("pair", t, &[]);
    let pair_c = analysis("pair", t, &["--gpu-span", "correlation"]);
    let kernels = analysis("kernels", t, &["--per-context"]);
    let iters = analysis("iterations", t, &[]);
    let hier = analysis("hierarchy", t, &[]);
    let ops = analysis("ops", t, &[]);
    let idle = analysis("idle", t, &[]);
    let ranks = analysis("ranks", t, &[]);
    let diff = json(&["diff", "-q", "-f", "json", t, t]);
    let diff_t = json(&["diff", "-q", "-f", "json", "--scope", "trace", t, t]);
    let (p, pc, k, it, h) = (
        &pair["traces"][0],
        &pair_c["traces"][0],
        &kernels["traces"][0],
        &iters["traces"][0],
        &hier["traces"][0],
    );
    let (o, id, d, dt) = (
        &ops["traces"][0],
        &idle["traces"][0],
        &diff["baseline"],
        &diff_t["baseline"],
    );

    // The step contexts: one selection everywhere. (`hierarchy` writes
    // null for "no context selected" where the others write 0 and "": its
    // record format has always had it so.)
    let contexts = u(&p["contexts"], "pair contexts");
    for (who, v) in [
        ("pair --gpu-span correlation", &pc["contexts"]),
        ("kernels", &k["contexts"]),
        ("iterations", &it["contexts"]),
        ("diff", &d["contexts"]),
    ] {
        assert_eq!(u(v, who), contexts, "{t}: {who}'s contexts");
    }
    let hc = if h["contexts"].is_null() {
        0
    } else {
        u(&h["contexts"], "hierarchy")
    };
    assert_eq!(hc, contexts, "{t}: hierarchy's contexts");
    for (who, v) in [
        ("kernels", &k["context"]),
        ("iterations", &it["context"]),
        ("diff", &d["context"]),
    ] {
        assert_eq!(v, &p["context"], "{t}: {who}'s context name");
    }
    if contexts > 0 {
        assert_eq!(h["context"], p["context"], "{t}: hierarchy's context name");
    } else {
        assert!(
            h["context"].is_null() && p["context"] == "",
            "{t}: no context"
        );
    }

    // Completion tokens: one source everywhere.
    for (who, v) in [
        ("kernels", &k["completion_tokens"]),
        ("iterations", &it["completion_tokens"]),
        ("diff", &d["completion_tokens"]),
        ("ops", &o["completion_tokens"]),
        ("idle", &id["completion_tokens"]),
    ] {
        assert_eq!(v, &p["completion_tokens"], "{t}: {who}'s tokens");
    }

    // The step contexts' GPU work by correlation: kernels = diff (steps).
    assert_eq!(d["kernels"], k["kernels"], "{t}: kernels of the steps");
    let acts = ["kernels", "memcpys", "memsets"]
        .iter()
        .map(|f| u(&k[*f], f))
        .sum::<u64>();
    assert_eq!(
        u(&d["activities"], "diff activities"),
        acts,
        "{t}: activities"
    );
    assert_eq!(
        d["contexts_with_gpu_work"], k["contexts_with_gpu_work"],
        "{t}: contexts with GPU work"
    );
    // Per token when both know the tokens (diff falls back to per context,
    // and says so in `normalisation`, where kernels gives null).
    if diff["normalisation"] == "token" {
        close(
            &d["kernels_per_token"],
            &k["kernels_per_token"],
            "kernels/token",
        );
    }

    // Σ GPU span by correlation: kernels' rows = pair's correlation sum.
    let rows = k["per_context"].as_array().map_or(&[][..], |r| &r[..]);
    let span: i128 = rows
        .iter()
        .filter(|r| !r["gpu_span_ns"].is_null())
        .map(|r| i(&r["gpu_span_ns"], "gpu_span_ns"))
        .sum();
    if u(&pc["measured"], "measured") > 0 {
        assert_eq!(
            i(&pc["gpu_span_sum_ns"], "pair gpu_span_sum_ns"),
            span,
            "{t}: Σ GPU span by correlation"
        );
        close(
            &pc["gpu_span_per_token_ms"],
            &k["gpu_span_per_token_ms"],
            &format!("{t}: GPU span per token by correlation"),
        );
    }
    assert_eq!(
        pc["measured"], k["contexts_with_gpu_work"],
        "{t}: contexts measured by correlation"
    );

    // The whole trace's GPU activities.
    let s = &o["summary"];
    let tl = &k["timeline"];
    let devices = id["devices"].as_array().map_or(&[][..], |d| &d[..]);
    let idle_acts: u64 = devices.iter().map(|d| u(&d["activities"], "idle")).sum();
    let n = u(&s["activities"], "ops activities");
    assert_eq!(
        u(&tl["activities"], "timeline"),
        n,
        "{t}: kernels' timeline"
    );
    assert_eq!(idle_acts, n, "{t}: idle's activities");
    assert_eq!(
        u(&dt["activities"], "diff trace"),
        n,
        "{t}: diff --scope trace"
    );
    assert_eq!(dt["kernels"], s["kernels"], "{t}: whole-trace kernels");
    assert_eq!(
        i(&dt["gpu_time_ns"], "diff gpu_time_ns"),
        i(&s["gpu_ns"], "ops gpu_ns"),
        "{t}: whole-trace Σ durations"
    );
    if let [dev] = devices {
        let busy_ms = tl["busy_ms"].as_f64().unwrap_or(0.0);
        let busy = i(&dev["busy_ns"], "idle busy_ns");
        assert!(
            (busy_ms * 1e6 - busy as f64).abs() < 0.5,
            "{t}: GPU busy {busy_ms} ms (kernels) vs {busy} ns (idle)"
        );
    }

    // ranks: the trace as a run of one rank.
    if let Some(run) = ranks["runs"].as_array().and_then(|r| r.first()) {
        assert_eq!(
            run["completion_tokens"], p["completion_tokens"],
            "{t}: ranks"
        );
        if contexts > 0 {
            assert_eq!(run["context"], p["context"], "{t}: ranks' context");
            let r0 = &run["ranks"][0];
            assert_eq!(
                i(&r0["gpu_span_ns"], "ranks gpu_span_ns"),
                span,
                "{t}: ranks' Σ GPU span"
            );
        }
    }
}

#[test]
fn every_analysis_agrees_on_each_trace() {
    let all = traces();
    assert!(all.len() >= 8, "{all:?}");
    for t in &all {
        check_trace(t);
    }
}

/// The AR-vs-MTP figures of every analysis on one pair.
fn check_pair(ar: &str, mtp: &str) {
    let two = |args: &[&str]| {
        let mut a = args.to_vec();
        a.extend(["-q", "-f", "json", ar, mtp]);
        json(&a)
    };
    let pair = two(&["pair"]);
    let pair_c = two(&["pair", "--gpu-span", "correlation"]);
    let kernels = two(&["kernels"]);
    let iters = two(&["iterations"]);
    let (p, pc, k, it) = (
        &pair["comparison"],
        &pair_c["comparison"],
        &kernels["comparison"],
        &iters["comparison"],
    );
    // S_context by correlation: one figure under one name, to the bit.
    assert!(k["s_context_correlation"].is_number(), "{ar}: {k}");
    assert_eq!(
        k["s_context_correlation"], it["s_context_correlation"],
        "{ar}: kernels vs iterations"
    );
    close(
        &k["s_context_correlation"],
        &pc["s_context"],
        &format!("{ar}: kernels vs pair --gpu-span correlation"),
    );
    // `s_context` is pair's name only.
    assert!(k.get("s_context").is_none() && it.get("s_context").is_none());
    assert!(p["s_context"].is_number());
}

#[test]
fn every_analysis_agrees_on_each_ar_mtp_pair() {
    for w in ["text", "reasoning", "tool_calling", "text_graphs"] {
        check_pair(&sample(&format!("{w}_ar")), &sample(&format!("{w}_mtp")));
    }
    let (car, cmtp) = (FIXTURES[0], FIXTURES[1]);
    if exists(car) && exists(cmtp) {
        check_pair(car, cmtp);
    }
}

/// `batch` runs the analyses in one pass: its comparisons carry pair's
/// S_context, and kernels' and iterations' figures under their own keys,
/// each equal to the subcommand's.
#[test]
fn batch_comparison_equals_the_subcommands() {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let (ar, mtp) = ("sample_traces/text_ar", "sample_traces/text_mtp");
    let res = bin()
        .args(["batch", "-q", "--no-figures", ar, mtp, "-o", o])
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
    let (sa, sm) = (sample("text_ar"), sample("text_mtp"));
    let two = |name: &str| json(&[name, "-q", "-f", "json", &sa, &sm]);
    let (pair, kernels) = (two("pair"), two("kernels"));
    close(
        &c["s_context"],
        &pair["comparison"]["s_context"],
        "batch s_context",
    );
    close(
        &c["kernels"]["s_context_correlation"],
        &kernels["comparison"]["s_context_correlation"],
        "batch kernels",
    );
    close(
        &c["kernels"]["s_context_busy"],
        &kernels["comparison"]["s_context_busy"],
        "batch kernels busy",
    );
    // iterations.csv: each side's Σ context span is kernels' Σ GPU span by
    // correlation, exactly.
    let mut rd = csv::Reader::from_path(out.path().join("iterations.csv")).unwrap();
    let heads = rd.headers().unwrap().clone();
    let row = rd.records().next().expect("one workload").unwrap();
    for (side, t) in [("ar", &sa), ("mtp", &sm)] {
        let k = analysis("kernels", t, &["--per-context"]);
        let span: i128 = k["traces"][0]["per_context"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| !r["gpu_span_ns"].is_null())
            .map(|r| i(&r["gpu_span_ns"], "gpu_span_ns"))
            .sum();
        let col = heads
            .iter()
            .position(|h| h == format!("{side}_context_span_ns"))
            .expect("context span column");
        assert_eq!(
            row[col].parse::<i128>().unwrap(),
            span,
            "{side} context span"
        );
    }
    // Table 8 (workloads.csv) shows pair's S_context.
    let mut rd = csv::Reader::from_path(out.path().join("workloads.csv")).unwrap();
    let heads = rd.headers().unwrap().clone();
    let col = heads
        .iter()
        .position(|h| h == "s_context")
        .expect("s_context column");
    let row = rd.records().next().expect("one workload").unwrap();
    let s: f64 = row[col].parse().unwrap();
    let want = pair["comparison"]["s_context"].as_f64().unwrap();
    assert!((s - want).abs() < 1e-9, "Table 8 {s} vs pair {want}");
}
