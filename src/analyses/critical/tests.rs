//! A hand-built trace with known parts (one column is 1 µs) and every
//! real trace's rows adding up to their windows.
//!
//! ```text
//! step    S0@0                 S1@100               S2@200               S3@300 (open)
//! host    L1@1 L2@3 [sync 10→95)     L3@150           L4@210 [sync 220→260)
//! stream  [k1 5→60)[k2 60→90)         [k3 160→165)            [k4 240→250)
//! parts   GPU-bound:                  host-bound:          launch-bound:
//!         host 6 launch 4 gpu 85      host 100             host 50 launch 30
//!         sync 5                                           gpu 10 sync 10
//! ```

use super::*;
use crate::analysis::{analyze_path, analyze_reader, Plan};
use crate::contexts::Selector;

const STEP: &str = "execute_context_0(0)_generation_1(1)";

fn x(cat: &str, name: &str, ts: &str, dur: &str, args: &str) -> String {
    format!(
        r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":7,"ts":{ts},"dur":{dur},"args":{{{args}}}}}"#
    )
}

fn call(name: &str, ts: &str, dur: &str, corr: i64) -> String {
    x(
        "cuda_runtime",
        name,
        ts,
        dur,
        &format!("\"correlation\":{corr}"),
    )
}

fn k(name: &str, ts: &str, dur: &str, corr: i64) -> String {
    format!(
        r#"{{"ph":"X","cat":"kernel","name":"{name}","pid":0,"tid":7,"ts":{ts},"dur":{dur},"args":{{"correlation":{corr}}}}}"#
    )
}

fn run(events: &[String]) -> TraceCritical {
    let doc = format!("{{\"traceEvents\": [{}]}}", events.join(","));
    let plan = Plan::new(Selector::Auto).with(CriticalSpec::default());
    let mut r = analyze_reader("t", doc.as_bytes(), &plan);
    assert!(r.error.is_none(), "{:?}", r.error);
    r.results.take::<Critical>().unwrap()
}

fn drawing() -> Vec<String> {
    vec![
        x("user_annotation", STEP, "0", "3", ""),
        x("user_annotation", STEP, "100", "3", ""),
        x("user_annotation", STEP, "200", "3", ""),
        x("user_annotation", STEP, "300", "3", ""),
        call("cudaLaunchKernel", "1", "1", 1),
        call("cudaLaunchKernel", "3", "1", 2),
        call("cudaDeviceSynchronize", "10", "85", 10),
        call("cudaLaunchKernel", "150", "2", 3),
        call("cudaLaunchKernel", "210", "5", 4),
        call("cudaDeviceSynchronize", "220", "40", 11),
        k("gemm_a", "5", "55", 1),
        k("gemm_b", "60", "30", 2),
        k("gemm_c", "160", "5", 3),
        k("gemm_d", "240", "10", 4),
    ]
}

fn parts(r: &PathRow) -> [Option<i64>; 5] {
    [r.window_ns, r.host_ns, r.launch_ns, r.gpu_ns, r.sync_ns]
}

#[test]
fn the_drawing_of_the_module_docs() {
    let t = run(&drawing());
    assert_eq!(t.step_grammar.as_deref(), Some("vllm"));
    assert_eq!((t.iterations, t.closed.iterations), (4, 3));
    let us = |v: [i64; 5]| v.map(|x| Some(x * 1000));
    // GPU-bound: k2 queued behind k1 (L2 ended at 4 ≤ 60).
    assert_eq!(parts(&t.rows[0]), us([100, 6, 4, 85, 5]));
    assert_eq!(
        (t.rows[0].activities, t.rows[0].launches, t.rows[0].syncs),
        (2, 1, 1)
    );
    // Host-bound: no sync blocks in the window.
    assert_eq!(parts(&t.rows[1]), us([100, 100, 0, 0, 0]));
    // Launch-bound: L4 submitted at 215 after k3's end (165).
    assert_eq!(parts(&t.rows[2]), us([100, 50, 30, 10, 10]));
    assert_eq!(parts(&t.rows[3]), [None; 5]);
    assert_eq!(
        t.closed.values(),
        [300_000, 156_000, 34_000, 95_000, 15_000]
    );
    let on: Vec<(&str, i128, u64)> = t
        .on_path
        .iter()
        .map(|o| (o.name.as_str(), o.ns, o.count))
        .collect();
    assert_eq!(
        on,
        vec![
            ("gemm_a", 55_000, 1),
            ("gemm_b", 30_000, 1),
            ("gemm_d", 10_000, 1)
        ]
    );
    // P6: Σ over 3 closed decode iterations × 4 ÷ (3 × 8 tokens).
    let mut t = t;
    t.set_tokens(Some(8), Some("test".into()));
    assert_eq!(t.per_token.window_ns, Some(50_000.0));
    assert_eq!(t.per_token.host_ns, Some(26_000.0));
}

#[test]
fn a_trace_without_steps_says_so() {
    let t = run(&[k("a", "1", "1", 1)]);
    assert_eq!(t.closed.iterations, 0);
    assert!(
        t.notes.iter().any(|n| n.contains("no step annotations")),
        "{:?}",
        t.notes
    );
}

/// Every closed iteration of every real trace here: its window is the
/// next step's start on its thread − its start, and its parts add up to it.
#[test]
fn real_iterations_add_up() {
    fn collect(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.to_string_lossy();
            if p.is_dir() {
                collect(&p, out);
            } else if name.ends_with(".json.gz") || name.ends_with(".json") {
                out.push(p);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut traces = Vec::new();
    collect(&root.join("sample_traces"), &mut traces);
    collect(&root.join("tests/data"), &mut traces);
    traces.sort();
    assert!(traces.len() >= 8, "{traces:?}");
    let plan = Plan::new(Selector::Auto).with(CriticalSpec::default());
    let mut closed = 0;
    for p in &traces {
        let progress = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let t = analyze_path(p, progress, &plan)
            .results
            .take::<Critical>()
            .unwrap();
        for (i, r) in t.rows.iter().enumerate() {
            let Some(w) = r.window_ns else { continue };
            let next = t.rows[i + 1..]
                .iter()
                .find(|n| n.start_ns >= r.start_ns && n.index != r.index);
            assert_eq!(
                Some(w),
                next.map(|n| n.start_ns - r.start_ns),
                "{p:?} row {i}"
            );
            let sum: i64 = parts(r)[1..].iter().map(|v| v.unwrap()).sum();
            assert_eq!(sum, w, "{p:?} row {i}");
            assert!(parts(r).iter().all(|v| v.unwrap() >= 0), "{p:?} row {i}");
            closed += 1;
        }
        assert_eq!(t.counts.capped_walks, 0, "{p:?}");
    }
    assert!(closed > 100, "{closed}");
}
