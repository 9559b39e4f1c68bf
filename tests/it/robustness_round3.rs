//! Hostile round 3 (issue 37): inputs that gave, or could give, a silent
//! wrong figure. Each class is a test of its own; the traces are generated
//! here (docs/ROBUSTNESS.md, "Round 3").
//!
//! - Step annotations whose duration encloses other step contexts on one
//!   thread (nested, and one of huge duration around everything): `pair`'s
//!   Σ GPU span and `kernels`' counts keep every inner context's GPU work,
//!   and both say by which rule.
//! - 10⁵ staggered, overlapping outermost calls of one chain function on
//!   one thread, each launching its own kernels: `hierarchy` gives each
//!   call its own kernels and busy time, in one sweep (no timing asserted).

use crate::common::*;
use serde_json::Value;
use std::fmt::Write as _;
use torchtrace::analyses::hierarchy::HierarchyOptions;
use torchtrace::analyses::kernels::KernelsSpec;
use torchtrace::{analyze_reader, Plan, Selector};

const STEP: &str = "execute_context_0(0)_generation_1(1)";

/// A complete event; times in ns, written as Kineto's µs with 3 decimals.
#[allow(clippy::too_many_arguments)]
fn x(out: &mut String, cat: &str, name: &str, pid: u64, tid: u64, ts: u64, dur: u64, args: &str) {
    let us = |n: u64| format!("{}.{:03}", n / 1000, n % 1000);
    let _ = write!(
        out,
        r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":{pid},"tid":{tid},"ts":{},"dur":{},"args":{{{args}}}}},"#,
        us(ts),
        us(dur)
    );
}

fn doc(events: &str) -> String {
    format!("{{\"traceEvents\":[{}]}}", events.trim_end_matches(','))
}

// ---------------------------------------------------------------------------
// Enclosing step annotations.
// ---------------------------------------------------------------------------

/// Inner step contexts in the trace below.
const M: u64 = 40;
/// Where the GPU work starts (ns).
const G: u64 = 50_000_000;
/// Every kernel's duration (ns).
const KD: u64 = 100;

/// On tid 1: `H`, a step annotation of 10⁹ µs (about 17 minutes) holding
/// everything and launching nothing; inside it `O` [10, 10 + 10⁴·(M+1))
/// ns, launching a kernel before its inner contexts and one after them;
/// inside `O`, M contexts of 5 µs, one kernel each. GPU: `O`'s kernels at
/// G and G + 1000·(M+1), the j-th inner one's at G + 1000·(j+1), so `O`'s
/// span covers the inner ones'. With `gpu`, each context also has the GPU
/// annotation Kineto writes: the span of the work launched while it was
/// the innermost range.
fn enclosing(gpu: bool) -> String {
    let mut ev = String::new();
    let mut corr = 0u64;
    let mut launch = |ev: &mut String, at: u64, ext: u64, gpu_at: u64| {
        corr += 1;
        let a = format!("\"correlation\":{corr},\"External id\":{ext}");
        x(ev, "cuda_runtime", "cudaLaunchKernel", 1, 1, at, 10, &a);
        x(ev, "kernel", &format!("k{ext}"), 0, 7, gpu_at, KD, &a);
    };
    x(
        &mut ev,
        "user_annotation",
        STEP,
        1,
        1,
        0,
        1_000_000_000_000,
        "\"External id\":1",
    );
    let o_end = 10 + 10_000 * (M + 1);
    x(
        &mut ev,
        "user_annotation",
        STEP,
        1,
        1,
        10,
        o_end - 10,
        "\"External id\":2",
    );
    launch(&mut ev, 100, 2, G);
    for j in 0..M {
        let s = 1_000 + 10_000 * j;
        let ext = 3 + j;
        x(
            &mut ev,
            "user_annotation",
            STEP,
            1,
            1,
            s,
            5_000,
            &format!("\"External id\":{ext}"),
        );
        launch(&mut ev, s + 100, ext, G + 1_000 * (j + 1));
        if gpu {
            let g = G + 1_000 * (j + 1);
            x(
                &mut ev,
                "gpu_user_annotation",
                STEP,
                0,
                7,
                g,
                KD,
                &format!("\"External id\":{ext}"),
            );
        }
    }
    launch(&mut ev, o_end - 100, 2, G + 1_000 * (M + 1));
    if gpu {
        // Kineto's annotation of O: from its first kernel to its last.
        let d = 1_000 * (M + 1) + KD;
        x(
            &mut ev,
            "gpu_user_annotation",
            STEP,
            0,
            7,
            G,
            d,
            "\"External id\":2",
        );
    }
    doc(&ev)
}

fn run(args: &[&str], trace: &str) -> Value {
    let f = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    std::fs::write(f.path(), trace).unwrap();
    let mut a = args.to_vec();
    let p = f.path().to_str().unwrap().to_string();
    a.extend(["-q", "-f", "json", "--per-context", "--tokens", "41", &p]);
    run_json(&a, 0)
}

fn has_note(t: &Value, start: &str) -> bool {
    t["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().starts_with(start))
}

/// What both variants must give: every context's own work, nothing lost
/// and nothing moved to the enclosing contexts.
fn check_enclosing(trace: &str, source: &str) {
    // kernels: H launched nothing; O its two kernels; each inner its one.
    let k = run(&["kernels"], trace);
    let k = &k["traces"][0];
    assert_eq!(k["contexts"], M + 2);
    assert_eq!(k["kernels"], M + 2, "no kernel lost or doubled");
    assert_eq!(k["contexts_with_gpu_work"], M + 1);
    let rows = k["per_context"].as_array().unwrap();
    let kernels: Vec<u64> = rows
        .iter()
        .map(|r| r["kernels"].as_u64().unwrap())
        .collect();
    assert_eq!(kernels[..2], [0, 2], "H then O");
    assert!(kernels[2..].iter().all(|&n| n == 1), "{kernels:?}");
    assert!(
        has_note(
            k,
            &format!(
                "{} of {} selected contexts lie inside another",
                M + 1,
                M + 2
            )
        ),
        "{}",
        k["notes"]
    );
    assert!(k["notes"]
        .to_string()
        .contains("innermost context holding it (the latest to start"));

    // pair: O's span covers the inner ones' (both counted, as the note
    // says); each inner context keeps its own 100 ns.
    let p = run(&["pair"], trace);
    let p = &p["traces"][0];
    assert_eq!(p["contexts"], M + 2);
    assert_eq!(p["measured"], M + 1, "H has no GPU work: not measured");
    assert_eq!(
        p["gpu_span_sources"][source],
        M + 1,
        "{}",
        p["gpu_span_sources"]
    );
    let o_span = 1_000 * (M + 1) + KD;
    assert_eq!(p["gpu_span_sum_ns"], o_span + M * KD);
    let rows = p["per_context"].as_array().unwrap();
    let spans: Vec<Option<u64>> = rows.iter().map(|r| r["gpu_ns"].as_u64()).collect();
    assert_eq!(spans[..2], [None, Some(o_span)]);
    assert!(spans[2..].iter().all(|&s| s == Some(KD)), "{spans:?}");
    assert!(
        has_note(
            p,
            &format!(
                "{} of {} step contexts lie inside another step context",
                M + 1,
                M + 2
            )
        ),
        "{}",
        p["notes"]
    );
    assert!(p["notes"].to_string().contains("counts that time in both"));

    // diff (steps) counts what kernels counts; S_context is per token.
    let f = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    std::fs::write(f.path(), trace).unwrap();
    let path = f.path().to_str().unwrap();
    let d = run_json(
        &[
            "diff", "-q", "-f", "json", "--tokens", "41", "--tokens", "41", path, path,
        ],
        0,
    );
    assert_eq!(d["baseline"]["kernels"], M + 2);
    assert_eq!(d["baseline"]["gpu_time_ns"], (M + 2) * KD);
}

#[test]
fn enclosing_step_contexts_keep_inner_gpu_work_by_correlation() {
    check_enclosing(&enclosing(false), "correlation");
}

#[test]
fn enclosing_step_contexts_keep_inner_gpu_work_by_annotation() {
    check_enclosing(&enclosing(true), "annotation");
}

#[test]
fn partial_overlaps_and_other_threads_are_not_nesting() {
    // A staircase of step contexts (each overlaps the next, none holds
    // another): no nesting note from pair; kernels names the overlap. A
    // step context on another thread spanning them all holds none of them
    // (nesting is per thread): it launched nothing, so it is not measured.
    let mut ev = String::new();
    x(
        &mut ev,
        "user_annotation",
        STEP,
        1,
        2,
        0,
        100_000,
        "\"External id\":999",
    );
    for i in 0..50u64 {
        let a = format!("\"External id\":{i}");
        x(&mut ev, "user_annotation", STEP, 1, 1, i * 1_000, 1_500, &a);
        let c = format!("\"correlation\":{i}");
        x(
            &mut ev,
            "cuda_runtime",
            "cudaLaunchKernel",
            1,
            1,
            i * 1_000 + 100,
            10,
            &c,
        );
        x(&mut ev, "kernel", "k", 0, 7, G + i * 1_000, KD, &c);
    }
    let trace = doc(&ev);
    let p = run(&["pair"], &trace);
    let p = &p["traces"][0];
    assert!(
        !p["notes"].to_string().contains("lie inside another"),
        "{}",
        p["notes"]
    );
    assert_eq!(p["gpu_span_sum_ns"], 50 * KD);
    let k = run(&["kernels"], &trace);
    assert!(has_note(
        &k["traces"][0],
        "49 selected contexts overlap another partially"
    ));
}

// ---------------------------------------------------------------------------
// Staggered outermost calls of one chain function.
// ---------------------------------------------------------------------------

#[test]
fn staggered_overlapping_calls_each_keep_their_kernels_in_hierarchy() {
    // N calls of `f` on tid 1, call i = [1000·i, 1000·i + 2500) ns: each
    // overlaps the next two partially, none holds another, so all are
    // outermost. Call i launches 1 + (i mod 2) kernels at 1000·i + 100…,
    // held by calls i − 2, i − 1 and i: the innermost (latest to start) is
    // call i. On the GPU, call i's kernels both run in [G + 30·i, + 50),
    // overlapping the next call's: any kernel given to the wrong call
    // widens that call's busy time past 50 ns, or leaves a call without
    // work. Each call is one query of one sweep (O(n log n)); no timing.
    const N: u64 = 100_000;
    let mut ev = String::with_capacity(60 << 20);
    let mut corr = 0u64;
    for i in 0..N {
        x(&mut ev, "cpu_op", "f", 1, 1, 1_000 * i, 2_500, "");
        for k in 0..1 + i % 2 {
            corr += 1;
            let c = format!("\"correlation\":{corr}");
            x(
                &mut ev,
                "cuda_runtime",
                "cudaLaunchKernel",
                1,
                1,
                1_000 * i + 100 + 20 * k,
                10,
                &c,
            );
            x(&mut ev, "kernel", "k", 0, 7, G + 30 * i, 50, &c);
        }
    }
    x(&mut ev, "cpu_op", "g", 1, 1, 10, 1, "");
    let opts = HierarchyOptions::new(&["f>g".into()], &[], false, 5, Selector::Auto).unwrap();
    let plan = Plan::new(Selector::Auto)
        .with(KernelsSpec::default())
        .with(opts);
    let mut r = analyze_reader("staggered", doc(&ev).as_bytes(), &plan);
    assert!(r.error.is_none(), "{:?}", r.error);
    let h = r
        .take::<torchtrace::analyses::hierarchy::Hierarchy>()
        .unwrap();
    let f = &h.chains[0].functions[0];
    assert_eq!((f.calls, f.outermost_calls), (N, N));
    let gpu = f.gpu.as_ref().unwrap();
    assert_eq!(gpu.calls_with_gpu_work, N, "every call has its own work");
    assert_eq!(gpu.kernels, N + N / 2);
    assert_eq!(gpu.kernels_per_call, Some(1.5));
    assert_eq!(gpu.gpu_busy_median_ms, Some(50e-6));
    assert_eq!(
        gpu.gpu_busy_sum_ns,
        i128::from(50 * N),
        "busy per call 50 ns"
    );
    assert_eq!(gpu.partially_overlapping_calls, N - 1);
}

/// `ops`' summary sums are exact past i64 (they saturated at
/// 9 223 372 036 854 775 807 without a word): two steps of 5·10¹⁸ ns on
/// one launching thread, from −5·10¹⁸ to 5·10¹⁸ ns, make a host window of
/// 10¹⁹ ns; a stream whose two kernels stand as far apart makes a GPU idle
/// and host wait of 10¹⁹ − 200 ns.
#[test]
fn ops_summary_sums_are_exact_past_i64() {
    let e18 = "5000000000000000.000";
    let mut ev = String::new();
    for (k, ts) in [(1, format!("-{e18}")), (2, "0.000".to_string())] {
        let _ = write!(
            ev,
            r#"{{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":{ts},"dur":{e18},"args":{{"External id":{k}}}}},"#
        );
    }
    for (k, at, gpu) in [
        (1, format!("-{e18}"), format!("-{e18}")),
        (
            2,
            "4999999999999999.000".to_string(),
            "4999999999999999.800".to_string(),
        ),
    ] {
        let a = format!("\"correlation\":{k},\"External id\":{k}");
        let _ = write!(
            ev,
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{at},"dur":0.010,"args":{{{a}}}}},"#
        );
        let _ = write!(
            ev,
            r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{gpu},"dur":0.100,"args":{{{a}}}}},"#
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("wide.json");
    std::fs::write(&p, doc(&ev)).unwrap();
    let o = bin()
        .args(["-q", "ops", "-f", "json"])
        .arg(&p)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text} {}", String::from_utf8_lossy(&o.stderr)));
    let s = &v["traces"][0]["summary"];
    assert_eq!(
        s["host_window_ns"].to_string(),
        "10000000000000000000",
        "{s}"
    );
    assert_eq!(s["host_busy_ns"].to_string(), "10000000000000000000", "{s}");
    // The second kernel starts at 5·10¹⁸ − 200 ns, 10¹⁹ − 300 ns after the
    // first one's end (−5·10¹⁸ + 100).
    assert_eq!(s["gpu_idle_ns"].to_string(), "9999999999999999700", "{s}");
    assert_eq!(
        s["gpu_host_wait_ns"].to_string(),
        "9999999999999999700",
        "{s}"
    );
}
