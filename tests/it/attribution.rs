//! Attribution correctness and bounded cost (issue 17).
//!
//! Real traces: each GPU activity belongs to one selected context (the
//! innermost holding its launch call), launch scope `process` finds the
//! autograd thread's launches inside `ProfilerStep#N`, and launch latency is
//! the queue delay. The expected numbers come from
//! `scripts/check_attribution.py` (stdlib Python, independent of both
//! torchtrace and scripts/reference.py).
//!
//! Hostile inputs: generated here, sized so that the quadratic versions
//! would need more than 10⁹ steps (and, for `kernels`, about 10 GB of
//! activity ids); none of these tests is timed.

use crate::common::*;
use serde_json::Value;
use std::fmt::Write as _;
use torchtrace::analyses::hierarchy::HierarchyOptions;
use torchtrace::analyses::kernels::KernelsSpec;
use torchtrace::analyses::pair::PairSpec;
use torchtrace::ledger::attribution::LaunchScope;
use torchtrace::{analyze_reader, Plan, Selector};

const SGLANG: &str = "tests/data/tracelens_sglang_decode.json.gz";
const NCCL: &str = "tests/data/hta_nccl_data.json.gz";
const STEP: &str = "execute_context_0(0)_generation_1(1)";

/// The one worker trace under `tests/data/compiled/<dir>/`.
fn compiled(dir: &str) -> String {
    let d = root().join("tests/data/compiled").join(dir);
    let name = std::fs::read_dir(&d)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".pt.trace.json.gz"))
        .unwrap();
    format!("tests/data/compiled/{dir}/{name}")
}

/// `kernels -f json --per-context` on one trace: its trace object.
fn kernels(args: &[&str]) -> Value {
    let mut all = vec!["kernels", "-f", "json", "--per-context", "--top", "100000"];
    all.extend_from_slice(args);
    run_json(&all, 0)["traces"][0].clone()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Rows, totals, calls/context and shares agree: nothing counted twice.
fn assert_consistent(t: &Value) {
    let rows = t["per_context"].as_array().unwrap();
    for key in ["launches", "graph_launches", "kernels"] {
        let sum: u64 = rows.iter().map(|r| u(&r[key])).sum();
        assert_eq!(sum, u(&t[key]), "Σ per-context {key} = total");
    }
    let top = t["top_kernels"].as_array().unwrap();
    let calls: u64 = top.iter().map(|k| u(&k["calls"])).sum();
    assert_eq!(calls, u(&t["kernels"]), "Σ top-kernel calls = kernels");
    let with_work = u(&t["contexts_with_gpu_work"]) as f64;
    for k in top {
        let cpc = k["calls_per_context"].as_f64().unwrap();
        assert_eq!(cpc, u(&k["calls"]) as f64 / with_work, "{k}");
    }
    let kpc = t["kernels_per_context"]["sum"].as_f64().unwrap();
    assert_eq!(kpc, u(&t["kernels"]) as f64);
}

#[test]
fn nested_contexts_count_each_kernel_once_on_sglang() {
    // 2 user annotations, one inside the other; 555 kernels reachable
    // (1 105 when both counted what they held).
    let t = kernels(&[SGLANG, "--context-regex", "."]);
    assert_eq!(u(&t["contexts"]), 2);
    assert_eq!(u(&t["kernels"]), 555);
    assert_eq!(u(&t["graph_launches"]), 1);
    assert_eq!(u(&t["launches"]), 15);
    assert_consistent(&t);
    let notes = t["notes"].to_string();
    assert!(
        notes.contains("1 of 2 selected contexts lie inside another"),
        "{notes}"
    );
}

#[test]
fn compiled_fx_graph_ranges_inside_steps_count_once() {
    // torch.compile trace, every user range selected: forward/preprocess
    // ranges inside the steps. Before: 2 492 kernels, 60 graph launches
    // (AR); 1 922 and 68 (MTP).
    let ar = kernels(&[&compiled("text_ar"), "--context-regex", "."]);
    assert_eq!((u(&ar["kernels"]), u(&ar["graph_launches"])), (1246, 30));
    assert_eq!(u(&ar["contexts"]), 96);
    assert_consistent(&ar);
    let mtp = kernels(&[&compiled("text_mtp"), "--context-regex", "."]);
    assert_eq!((u(&mtp["kernels"]), u(&mtp["graph_launches"])), (1222, 52));
    assert_consistent(&mtp);
    // The steps alone still reach the same 1 246 kernels (nothing lost).
    let steps = kernels(&[&compiled("text_ar"), "--context-regex", "^execute_"]);
    assert_eq!(u(&steps["kernels"]), 1246);
}

#[test]
fn profiler_steps_take_the_autograd_threads_launches() {
    // 3 ProfilerStep#N on the main thread; the backward pass is launched
    // from the autograd thread: 900 kernels per step (308 on the main
    // thread alone).
    let auto = kernels(&[NCCL, "--context-regex", "^ProfilerStep#"]);
    assert_eq!(auto["launch_scope"], "process");
    let per: Vec<u64> = auto["per_context"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| u(&r["kernels"]))
        .collect();
    assert_eq!(per, [900, 900, 900]);
    assert!(auto["per_context"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["launch_scope"] == "process"));
    assert_consistent(&auto);
    let thread = kernels(&[
        NCCL,
        "--context-regex",
        "^ProfilerStep#",
        "--launch-scope",
        "thread",
    ]);
    assert_eq!(thread["launch_scope"], "thread");
    assert_eq!(u(&thread["kernels"]), 924);
    let process = kernels(&[
        NCCL,
        "--context-regex",
        "^ProfilerStep#",
        "--launch-scope",
        "process",
    ]);
    assert_eq!(u(&process["kernels"]), 2700);
}

#[test]
fn vllm_steps_default_to_thread_scope() {
    let t = kernels(&[&sample("text_ar")]);
    assert_eq!(t["launch_scope"], "thread");
    assert_eq!(u(&t["kernels"]), 3008);
}

#[test]
fn launch_latency_is_the_queue_delay() {
    // Median over the 64 AR steps of each step's median queue delay
    // (first activity start − launch call end, ≥ 0): 3 034.5 ns. The old
    // figure (activity start − launch call start, every activity) is
    // 171 987.5 ns and stays under its own name.
    let t = kernels(&[&sample("text_ar")]);
    assert_eq!(t["launch_latency_ms"]["median"].as_f64(), Some(0.0030345));
    assert_eq!(
        t["launch_to_activity_start_ms"]["median"].as_f64(),
        Some(0.1719875)
    );
    for r in t["per_context"].as_array().unwrap() {
        let q: f64 = r["launch_latency_ns"].as_f64().unwrap();
        let s: f64 = r["launch_to_activity_start_ns"].as_f64().unwrap();
        assert!((0.0..s).contains(&q), "{r}");
    }
}

// ---------------------------------------------------------------------------
// Bounded cost: generated hostile traces.
// ---------------------------------------------------------------------------

/// A complete event.
fn x(out: &mut String, cat: &str, name: &str, tid: u64, ts_ns: u64, dur_ns: u64, args: &str) {
    let us = |n: u64| format!("{}.{:03}", n / 1000, n % 1000);
    let _ = write!(
        out,
        r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":{tid},"ts":{},"dur":{},"args":{{{args}}}}},"#,
        us(ts_ns),
        us(dur_ns)
    );
}

/// `n` launch calls at `t0 + j` ns on tid 1, each with one kernel.
fn launches(out: &mut String, n: u64, t0: u64) {
    for j in 0..n {
        x(
            out,
            "cuda_runtime",
            "cudaLaunchKernel",
            1,
            t0 + j,
            0,
            &format!("\"correlation\":{j}"),
        );
        x(
            out,
            "kernel",
            "k",
            7,
            t0 + n + 10 * j,
            5,
            &format!("\"correlation\":{j}"),
        );
    }
}

fn doc(events: String) -> String {
    format!("{{\"traceEvents\":[{}]}}", events.trim_end_matches(','))
}

/// Writes the trace to a temporary file (plain JSON) and reads it back
/// through the same reader the CLI uses.
fn analyze(text: &str, plan: &Plan) -> torchtrace::TraceResult {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), text).unwrap();
    let r = torchtrace::analyze_path(f.path(), Default::default(), plan);
    assert!(r.error.is_none(), "{:?}", r.error);
    r
}

#[test]
fn many_identical_step_contexts_are_linear_in_kernels() {
    // N identical step contexts each holding all N launches: O(N²) = 2.5·10⁹
    // attributions (10 GB of u32 activity ids) when every context listed
    // what it held. Now each launch goes to one context: the innermost,
    // i.e. the last in file order of identical ranges.
    const N: u64 = 50_000;
    let mut ev = String::new();
    for i in 0..N {
        x(
            &mut ev,
            "user_annotation",
            STEP,
            1,
            0,
            10 * N,
            &format!("\"External id\":{i}"),
        );
    }
    launches(&mut ev, N, 1_000);
    let plan = Plan::new(Selector::Auto)
        .with(KernelsSpec::default())
        .with(PairSpec::default());
    let mut r = analyze(&doc(ev), &plan);
    let k = r.take::<torchtrace::analyses::kernels::Kernels>().unwrap();
    assert_eq!((k.contexts, k.kernels, k.launches), (N, N, N));
    assert_eq!(k.contexts_with_gpu_work, 1);
    assert_eq!(k.rows.last().map(|r| r.kernels), Some(N));
    assert!(
        k.notes
            .iter()
            .any(|n| n.starts_with("49999 of 50000 selected contexts lie inside")),
        "{:?}",
        k.notes
    );
    // pair (auto): the one context with work is measured by correlation;
    // its note on inner ranges is one containment query per annotation.
    let p = r.take::<torchtrace::analyses::pair::Pair>().unwrap();
    assert_eq!((p.contexts, p.pairs, p.measured), (N, 0, 1));
}

#[test]
fn staircase_overlaps_keep_kernels_linear_and_are_noted() {
    // N contexts [i, i + 2N) µs: each overlaps the next partially and all
    // hold the N launches at the middle. Each launch goes to the latest
    // starting context: the last.
    const N: u64 = 50_000;
    let mut ev = String::new();
    for i in 0..N {
        x(
            &mut ev,
            "user_annotation",
            STEP,
            1,
            i * 1000,
            2 * N * 1000,
            &format!("\"External id\":{i}"),
        );
    }
    launches(&mut ev, N, N * 1000);
    let plan = Plan::new(Selector::Auto).with(KernelsSpec {
        launch_scope: LaunchScope::Thread,
        ..KernelsSpec::default()
    });
    let k = analyze(&doc(ev), &plan)
        .take::<torchtrace::analyses::kernels::Kernels>()
        .unwrap();
    assert_eq!((k.kernels, k.contexts_with_gpu_work), (N, 1));
    assert!(
        k.notes
            .iter()
            .any(|n| n.starts_with("49999 selected contexts overlap another partially")),
        "{:?}",
        k.notes
    );
}

#[test]
fn overlapping_calls_of_a_chain_function_are_linear_in_hierarchy() {
    // N calls of `f` [i, i + 2N) µs on one thread, none inside another (so
    // all outermost), each holding all N launches: N² = 2.5·10⁹ before.
    const N: u64 = 50_000;
    let mut ev = String::new();
    for i in 0..N {
        x(&mut ev, "cpu_op", "f", 1, i * 1000, 2 * N * 1000, "");
    }
    x(&mut ev, "cpu_op", "g", 1, N * 1000, 1, "");
    launches(&mut ev, N, N * 1000);
    let opts = HierarchyOptions::new(&["f>g".into()], &[], false, 5, Selector::Auto).unwrap();
    let plan = Plan::new(Selector::Auto)
        .with(KernelsSpec::default())
        .with(opts);
    let h = analyze(&doc(ev), &plan)
        .take::<torchtrace::analyses::hierarchy::Hierarchy>()
        .unwrap();
    let f = &h.chains[0].functions[0];
    assert_eq!((f.calls, f.outermost_calls), (N, N));
    let gpu = f.gpu.as_ref().unwrap();
    assert_eq!((gpu.kernels, gpu.calls_with_gpu_work), (N, 1));
    assert_eq!(gpu.partially_overlapping_calls, N - 1);
    assert_eq!(h.chains[0].links[0].contained, 1);
}

#[test]
fn many_contexts_sharing_one_external_id_are_linear_in_pair() {
    // N step contexts and N GPU annotations all with External id 1; the
    // j-th annotation starts with the j-th context, so finding "the latest
    // context to start at or before it" by a backward scan was N²/2 =
    // 1.1·10¹⁰ steps. Each annotation still goes to exactly that context.
    const N: u64 = 150_000;
    let mut ev = String::new();
    for i in 0..N {
        x(
            &mut ev,
            "user_annotation",
            STEP,
            1,
            i * 1000,
            500,
            "\"External id\":1",
        );
    }
    for j in 0..N {
        let _ = write!(
            ev,
            r#"{{"ph":"X","cat":"gpu_user_annotation","name":"{STEP}","pid":0,"tid":7,"ts":{j}.100,"dur":0.200,"args":{{"External id":1}}}},"#
        );
    }
    let plan = Plan::new(Selector::Auto).with(PairSpec::default());
    let mut r = analyze_reader("t", doc(ev).as_bytes(), &plan);
    let p = r.take::<torchtrace::analyses::pair::Pair>().unwrap();
    assert_eq!((p.contexts, p.pairs, p.measured), (N, N, N));
    assert_eq!(p.gpu_span_ms.median, Some(0.0002));
    assert!(
        p.notes
            .iter()
            .any(|n| n.starts_with("1 External id(s) are held by 150000 selected contexts")),
        "{:?}",
        p.notes
    );
}
