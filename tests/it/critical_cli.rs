//! `torchtrace critical` end to end: every closed row adds up to its
//! window, the per-token window equals `iterations`' wall per token (an
//! independent analysis of the same iterations), the TP=2 run's injected
//! sleeps show as host time on the sleeping rank and as GPU time on the
//! waiting one (ground truth), the formats, exit codes and thread counts.

use crate::common::*;
use serde_json::Value;

fn json(args: &[&str]) -> (Option<i32>, Value) {
    let out = bin()
        .args(["-q", "critical", "-f", "json"])
        .args(args)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), v)
}

fn i(v: &Value) -> i128 {
    v.as_i64().map(i128::from).unwrap_or_else(|| panic!("{v}"))
}

/// P2 on every row, and the decode sums are the rows' sums.
fn adds_up(t: &Value) {
    let (mut n, mut sums) = (0u64, [0i128; 5]);
    for r in t["rows"].as_array().unwrap() {
        if r["window_ns"].is_null() {
            continue;
        }
        let parts: Vec<i128> = ["host_ns", "launch_ns", "gpu_ns", "sync_ns"]
            .iter()
            .map(|k| i(&r[k]))
            .collect();
        assert!(parts.iter().all(|&p| p >= 0), "{r}");
        assert_eq!(parts.iter().sum::<i128>(), i(&r["window_ns"]), "{r}");
        if r["decode"] == true {
            n += 1;
            sums[0] += i(&r["window_ns"]);
            for (s, p) in sums[1..].iter_mut().zip(&parts) {
                *s += p;
            }
        }
    }
    let d = &t["decode"];
    assert_eq!(d["iterations"], n);
    let keys = ["window_ns", "host_ns", "launch_ns", "gpu_ns", "sync_ns"];
    for (k, s) in keys.iter().zip(sums) {
        assert_eq!(i(&d[k]), s, "{k}");
    }
}

#[test]
fn the_sample_pair_adds_up_and_agrees_with_iterations() {
    let (ar, mtp) = (sample("text_ar"), sample("text_mtp"));
    let (code, doc) = json(&[&ar, &mtp]);
    assert_eq!(code, Some(0));
    for t in doc["traces"].as_array().unwrap() {
        adds_up(t);
    }
    let it: Value = serde_json::from_slice(
        &bin()
            .args(["-q", "iterations", "-f", "json", &ar, &mtp])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    for (c, it) in doc["traces"]
        .as_array()
        .unwrap()
        .iter()
        .zip(it["traces"].as_array().unwrap())
    {
        let window = c["per_token"]["window_ns"].as_f64().unwrap();
        let wall = it["per_token"]["wall_ms"].as_f64().unwrap() * 1e6;
        assert!((window - wall).abs() < 1e-3, "{window} vs {wall}");
    }
    // The AR sample: 677.4 of 698.6 µs per decode iteration on the host.
    let ar = &doc["traces"][0]["decode"];
    assert_eq!(
        (i(&ar["window_ns"]), i(&ar["host_ns"])),
        (44_013_436, 42_677_694)
    );
    let parts = doc["comparison"]["parts"].as_array().unwrap();
    assert_eq!(parts[0]["part"], "window");
    // Exact before the one rounding (Fraction: −82219.66890434…).
    assert_eq!(parts[0]["delta_per_token_ns"], -82219.668904);
}

/// The TP=2 run: rank 1 sleeps inside chosen steps before launching its
/// GPU work (GROUND_TRUTH.json). Its path puts at least the sleep on the
/// host; rank 0's path waits in the graph's all-reduce: GPU time.
#[test]
fn the_tp2_stragglers_sleep_is_host_on_its_rank_and_gpu_on_the_other() {
    let gt: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/data/tp2/GROUND_TRUTH.json")).unwrap(),
    )
    .unwrap();
    let run = &gt["runs"]["ar_plain"];
    let path = |r: &str| {
        format!(
            "tests/data/tp2/ar_plain/{}",
            run["traces"][r].as_str().unwrap()
        )
    };
    let (c0, d0) = json(&[&path("0")]);
    let (c1, d1) = json(&[&path("1")]);
    assert_eq!((c0, c1), (Some(0), Some(0)));
    let decode = |d: &Value| -> Vec<Value> {
        let t = &d["traces"][0];
        adds_up(t);
        t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["decode"] == true)
            .cloned()
            .collect()
    };
    let (r0, r1) = (decode(&d0), decode(&d1));
    let injected = run["injected"].as_array().unwrap();
    assert!(injected.len() >= 10);
    for inj in injected {
        let (step, slept) = (inj["step"].as_u64().unwrap() as usize, i(&inj["slept_ns"]));
        assert!(
            i(&r1[step]["host_ns"]) >= slept,
            "rank 1 step {step}: {}",
            r1[step]
        );
        assert!(
            i(&r0[step]["gpu_ns"]) >= slept,
            "rank 0 step {step}: {}",
            r0[step]
        );
    }
    // The run is GPU-bound on rank 0: most of its decode iterations are GPU.
    let d = &d0["traces"][0]["decode"];
    assert!(i(&d["gpu_ns"]) * 10 > i(&d["window_ns"]) * 7, "{d}");
}

#[test]
fn a_trace_without_steps_is_a_problem() {
    let out = bin()
        .args(["critical", "tests/data/hta_cpu_only.pt.trace.json.gz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no closed iteration"), "{err}");
}

#[test]
fn formats_and_threads_agree() {
    let t = sample("text_graphs_mtp");
    let one = bin()
        .args(["-q", "-j", "1", "critical", "-f", "json", &t])
        .output()
        .unwrap();
    let four = bin()
        .args(["-q", "-j", "4", "critical", "-f", "json", &t])
        .output()
        .unwrap();
    assert_eq!(one.stdout, four.stdout);
    let csv = bin()
        .args(["-q", "critical", "-f", "csv", "--per-iteration", &t])
        .output()
        .unwrap();
    let text = String::from_utf8(csv.stdout).unwrap();
    assert!(text.contains("trace,part,closed iterations Σ"), "{text}");
    assert!(
        text.contains("window_ns,host_ns,launch_ns,gpu_ns,sync_ns"),
        "{text}"
    );
    let md = bin()
        .args(["-q", "critical", "-f", "markdown", &t])
        .output()
        .unwrap();
    assert!(String::from_utf8(md.stdout)
        .unwrap()
        .contains("| trace | part |"));
}

/// HTA's own critical-path test trace (AlexNet forward, A100), each
/// `measure|forward` annotation walked over its interval (`--window`).
/// HTA 0.5.0 on the same instances (BENCHMARKS.md): 78 776 and 35 834 µs,
/// CPU-bound 74 984 and 32 042 µs, GPU 3 712 + 50 + 30 µs on both.
#[test]
fn htas_alexnet_annotation_walked_with_window() {
    let name = "[param|pytorch.model.alex_net|0|0|0|measure|forward]";
    let (code, doc) = json(&[
        "--window",
        name,
        "tests/data/hta_critical_path_alexnet.json.gz",
    ]);
    assert_eq!(code, Some(0));
    let t = &doc["traces"][0];
    assert_eq!(t["step_grammar"], "annotation");
    adds_up(t);
    let rows: Vec<[i128; 5]> = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| ["window_ns", "host_ns", "launch_ns", "gpu_ns", "sync_ns"].map(|k| i(&r[k])))
        .collect();
    assert_eq!(
        rows,
        vec![
            [79_678_000, 76_006_000, 441_000, 3_223_000, 8_000],
            [36_356_000, 32_684_000, 441_000, 3_223_000, 8_000],
        ]
    );
}
