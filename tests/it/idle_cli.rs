//! `torchtrace idle` end to end: every figure equals the independent
//! reference (scripts/reference_idle.py, written from docs/VIEWS.md,
//! frozen in tests/data/expected/ with the commands in IDLE.md) exactly; the
//! invariants of I2, I3 and I6 on every real trace; the TP=2 all-reduce as
//! comm with 0 % overlap (I4, C6); HTA's graph-heavy queue (I5); the CLI's
//! formats, flags, comparison and exit codes.

use crate::common::*;
use serde_json::Value;
use std::path::PathBuf;

/// (expected file, trace path) from tests/data/expected/IDLE.md.
fn frozen() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("tests/data/expected/IDLE.md")).unwrap();
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("- `")?;
            let (file, cmd) = rest.split_once("`: `python3 scripts/reference_idle.py ")?;
            Some((file.to_string(), cmd.strip_suffix('`')?.to_string()))
        })
        .collect()
}

/// Every key of `want`, recursively, exactly (integers and the rounded
/// ratios alike: both sides round the same exact fraction, C1).
fn equal(got: &Value, want: &Value, at: &str) {
    match want {
        Value::Object(m) => {
            for (k, w) in m {
                if k != "path" {
                    equal(&got[k], w, &format!("{at}.{k}"));
                }
            }
        }
        Value::Array(v) => {
            let g = got.as_array().unwrap_or_else(|| panic!("{at}: not a list"));
            assert_eq!(g.len(), v.len(), "{at}: length");
            for (i, (g, w)) in g.iter().zip(v).enumerate() {
                equal(g, w, &format!("{at}[{i}]"));
            }
        }
        Value::Number(n) if n.is_f64() => {
            assert_eq!(got.as_f64(), n.as_f64(), "{at}");
        }
        _ => assert_eq!(got, want, "{at}"),
    }
}

fn idle_json(path: &str) -> Value {
    let out = bin()
        .args(["-q", "idle", "-f", "json", path])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{path}: exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn every_frozen_trace_equals_the_reference() {
    let cases = frozen();
    assert_eq!(cases.len(), 5, "IDLE.md lists the frozen files");
    for (file, path) in cases {
        let want = expected(&file);
        let got = idle_json(&path);
        equal(&got, &want, &file);
    }
}

/// Every real trace: fixtures, samples and (when present) ../shared/traces.
fn every_trace() -> Vec<PathBuf> {
    let mut v = fixture_files(|p| {
        (p.ends_with(".json.gz") || p.ends_with(".json"))
            && p.contains(".json")
            && !p.contains("/damaged/")
            && !p.contains("/expected/")
            && !p.contains("GROUND_TRUTH")
            && !p.contains("summary.json")
    });
    let shared = root().join("../shared/traces");
    let mut dirs = vec![shared];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.to_string_lossy().ends_with(".json.gz") {
                v.push(p);
            }
        }
    }
    v
}

fn i(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// I2: Σ gaps = span − busy, categories sum to idle; I4: idle = span −
/// busy, non-compute = span − compute − idle; I6: rows + pre +
/// unattributed = the streams' sums = totals.
fn invariants(t: &Value, what: &str) {
    let (mut idle, mut host, mut kern, mut other, mut acts) = (0, 0, 0, 0, 0);
    for s in t["streams"].as_array().unwrap() {
        let cats = i(&s["host_wait_ns"]) + i(&s["kernel_wait_ns"]) + i(&s["other_ns"]);
        assert_eq!(cats, i(&s["idle_ns"]), "{what}: I3 categories sum to idle");
        assert_eq!(
            i(&s["idle_ns"]),
            i(&s["span_ns"]) - i(&s["busy_ns"]),
            "{what}: I2 Σ gaps = span − busy"
        );
        assert!(
            i(&s["idle_ns"]) >= 0 && i(&s["host_wait_ns"]) >= 0,
            "{what}"
        );
        idle += i(&s["idle_ns"]);
        host += i(&s["host_wait_ns"]);
        kern += i(&s["kernel_wait_ns"]);
        other += i(&s["other_ns"]);
        acts += i(&s["activities"]);
    }
    for d in t["devices"].as_array().unwrap() {
        assert_eq!(
            i(&d["idle_ns"]),
            i(&d["span_ns"]) - i(&d["busy_ns"]),
            "{what}"
        );
        assert_eq!(
            i(&d["non_compute_ns"]),
            i(&d["span_ns"]) - i(&d["compute_ns"]) - i(&d["idle_ns"]),
            "{what}"
        );
        assert!(i(&d["comm_comp_overlap_ns"]) <= i(&d["comm_ns"]), "{what}");
    }
    let st = &t["steps"];
    let parts: Vec<&Value> = st["rows"]
        .as_array()
        .unwrap()
        .iter()
        .chain([&st["pre"], &st["unattributed"]])
        .collect();
    let sum = |k: &str| parts.iter().map(|p| i(&p[k])).sum::<i64>();
    assert_eq!(
        sum("idle_ns"),
        idle,
        "{what}: I6 steps + pre + unattributed"
    );
    assert_eq!(sum("host_wait_ns"), host, "{what}");
    assert_eq!(sum("kernel_wait_ns"), kern, "{what}");
    assert_eq!(sum("other_ns"), other, "{what}");
    assert_eq!(sum("activities"), acts, "{what}: C8 every activity once");
    for k in ["idle_ns", "host_wait_ns", "activities", "gpu_ns", "busy_ns"] {
        assert_eq!(sum(k), i(&st["totals"][k]), "{what}: totals.{k}");
    }
}

#[test]
fn invariants_hold_on_every_real_trace() {
    let traces = every_trace();
    assert!(traces.len() >= 20, "fixtures found: {}", traces.len());
    for p in traces {
        let path = p.to_string_lossy().to_string();
        let d = idle_json(&path);
        invariants(&d["traces"][0], &path);
    }
}

#[test]
fn tp2_all_reduce_is_comm_with_zero_overlap() {
    for rank in ["rank0", "rank1"] {
        let dir = root().join("tests/data/tp2/ar_plain");
        let f = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                let n = p.to_string_lossy();
                n.contains(rank) && n.ends_with(".pt.trace.json.gz")
            })
            .unwrap();
        let d = idle_json(&f.to_string_lossy());
        let t = &d["traces"][0];
        let dev = &t["devices"][0];
        // C6: the NCCL all-reduce kernels (12 per step, 217 steps) are comm.
        assert_eq!(dev["comm_kernels"], 2604, "{rank}");
        assert!(i(&dev["comm_ns"]) > 0);
        // I4: under CUDA graphs on one stream nothing overlaps the all-reduce.
        assert_eq!(dev["comm_comp_overlap_ns"], 0);
        assert_eq!(dev["comm_comp_overlap_pct"], 0.0);
        assert_eq!(t["comm_comp_overlap_pct"], 0.0);
        assert_eq!(t["steps"]["grammar"], "vllm");
        assert_eq!(t["steps"]["count"], 217);
    }
    // The exact figures of rank 0 (reference, frozen).
    let r0 = &expected("idle_tp2_rank0.json")["traces"][0]["devices"][0];
    assert_eq!(r0["comm_ns"], 71_676_367);
    assert_eq!(r0["busy_ns"], 223_498_546);
}

#[test]
fn hta_graph_heavy_queue_exceeds_1024() {
    // I5: graph launches add N at once (VIEWS.md: 1 338 on trace_diff/test).
    let p = root().join("../shared/traces/real/hta/tests/data/trace_diff/test/test.json.gz");
    if !p.exists() {
        return;
    }
    let d = idle_json(&p.to_string_lossy());
    let s = &d["traces"][0]["streams"][0];
    assert_eq!(s["stream"], "7");
    assert_eq!(s["queue"]["in_flight"]["max"], 1338);
    assert!(i(&s["queue"]["in_flight"]["time_at_or_above_1024_ns"]) > 0);
}

#[test]
fn hta_negative_queue_rank_counts_early_starts_and_its_real_figures() {
    let d = idle_json("tests/data/hta_negative_queue_rank0.json.gz");
    let t = &d["traces"][0];
    assert_eq!(t["steps"]["grammar"], "ProfilerStep");
    assert_eq!(t["steps"]["count"], 5);
    let want = &expected("idle_hta_negative_queue_rank0.json")["traces"][0];
    assert_eq!(t["streams"], want["streams"]);
    assert!(t["streams"].as_array().unwrap().len() >= 2);
}

#[test]
fn kernel_wait_threshold_moves_gaps_between_kernel_wait_and_other() {
    let ar = sample("text_ar");
    let a = run_json(&["-q", "idle", "-f", "json", &ar], 0);
    let b = run_json(
        &["-q", "idle", "-f", "json", "--kernel-wait-ns", "0", &ar],
        0,
    );
    let (sa, sb) = (&a["traces"][0]["streams"][0], &b["traces"][0]["streams"][0]);
    assert_eq!(b["traces"][0]["thresholds"]["kernel_wait_ns"], 0);
    assert_eq!(sb["kernel_wait_ns"], 0);
    assert_eq!(sa["host_wait_ns"], sb["host_wait_ns"]);
    assert_eq!(
        i(&sa["kernel_wait_ns"]) + i(&sa["other_ns"]),
        i(&sb["other_ns"])
    );
    assert!(i(&sa["kernel_wait_ns"]) > 0);
}

#[test]
fn ar_vs_mtp_compares_per_token() {
    let (ar, mtp) = (sample("text_ar"), sample("text_mtp"));
    let d = run_json(&["-q", "idle", "-f", "json", &ar, &mtp], 0);
    let c = &d["comparison"];
    let rows = c["rows"].as_array().unwrap();
    let figs: Vec<&str> = rows.iter().map(|r| r["figure"].as_str().unwrap()).collect();
    assert_eq!(figs, ["busy", "idle", "host_wait", "kernel_wait", "other"]);
    // Tokens from the summaries beside the traces; busy per token is the
    // devices' busy over them, exactly rounded (C1).
    let a = &d["traces"][0];
    let tokens = a["completion_tokens"].as_i64().unwrap();
    let busy = i(&a["devices"][0]["busy_ns"]);
    let per = rows[0]["baseline_per_token_ns"].as_f64().unwrap();
    assert!((per - busy as f64 / tokens as f64).abs() < 1e-6);
    assert!(rows[0]["ratio"].as_f64().unwrap() > 0.0);
}

#[test]
fn table_shows_step_rows_only_with_per_step_and_json_always_has_them() {
    let ar = sample("text_ar");
    let plain = bin().args(["-q", "idle", &ar]).output().unwrap();
    let text = String::from_utf8_lossy(&plain.stdout);
    assert!(text.contains("Per stream (I2, I3, I5)"));
    assert!(!text.contains("Per step (I6)"));
    let per = bin()
        .args(["-q", "idle", "--per-step", &ar])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&per.stdout).contains("Per step (I6)"));
    let j = run_json(&["-q", "idle", "-f", "json", &ar], 0);
    let t = &j["traces"][0];
    assert_eq!(t["units"], "ns");
    assert_eq!(t["steps"]["window"], "iteration");
    assert_eq!(
        t["steps"]["rows"].as_array().unwrap().len() as u64,
        t["steps"]["count"].as_u64().unwrap()
    );
    let row = &t["steps"]["rows"][0];
    for k in [
        "index",
        "name",
        "host_start_ns",
        "host_end_ns",
        "annotation_end_ns",
        "activities",
        "kernels",
        "gpu_first_start_ns",
        "gpu_last_end_ns",
        "busy_ns",
        "gpu_ns",
        "host_wait_ns",
        "kernel_wait_ns",
        "other_ns",
        "idle_ns",
        "comm_ns",
        "comm_comp_overlap_ns",
        "comm_comp_overlap_pct",
        "queue_in_flight",
    ] {
        assert!(row.get(k).is_some(), "I6 row key {k}");
    }
    assert!(row["queue_in_flight"].get("0:7").is_some());
}

#[test]
fn csv_and_markdown_and_stdin() {
    let ar = sample("text_ar");
    let csv = bin()
        .args(["-q", "idle", "-f", "csv", &ar])
        .output()
        .unwrap();
    assert_eq!(csv.status.code(), Some(0));
    let text = String::from_utf8_lossy(&csv.stdout);
    assert!(text.starts_with("path,devices,streams,busy_ns"));
    let md = bin()
        .args(["-q", "idle", "-f", "markdown", &ar])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&md.stdout).contains("| figure |"));
    let bytes = std::fs::read(root().join(&ar)).unwrap();
    let out = bin()
        .args(["-q", "idle", "-f", "json", "-"])
        .write_stdin(bytes)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    let want = run_json(&["-q", "idle", "-f", "json", &ar], 0);
    assert_eq!(d["traces"][0]["streams"], want["traces"][0]["streams"]);
}

#[test]
fn a_trace_without_gpu_work_exits_1_and_unreadable_input_2() {
    let out = bin()
        .args(["idle", "tests/data/hta_cpu_only.pt.trace.json.gz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no GPU activity"));
    let out = bin().args(["idle", "no/such/trace.json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_states_the_definitions() {
    let out = bin().args(["idle", "--help"]).output().unwrap();
    let h = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "gap_k = max(0, ts_k − max_{j<k} end_j)",
        "host wait (I3)",
        "--kernel-wait-ns",
        "in flight",
        "[S_i.ts, S_{i+1}.ts)",
        "cross_device_reduce",
    ] {
        assert!(h.contains(needle), "help lacks {needle}");
    }
}

/// `x / d` rounded half to even, as an integer (d > 0).
fn half_even(x: i128, d: i128) -> i128 {
    let (q, r) = (x.div_euclid(d), x.rem_euclid(d));
    match (2 * r).cmp(&d) {
        std::cmp::Ordering::Less => q,
        std::cmp::Ordering::Greater => q + 1,
        std::cmp::Ordering::Equal => q + (q & 1),
    }
}

/// `batch` over the samples: report.md's "Where the GPU waits" section with
/// the mean decode step recomputed here from the frozen reference (I6
/// rows, those idle_steps.csv marks as decode iterations), the whole
/// trace's figures, idle_steps.csv holding every step row of both sides,
/// figure 11.
#[test]
fn batch_shows_per_step_where_ar_and_mtp_wait() {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_string_lossy().to_string();
    bin()
        .args(["-q", "batch", "sample_traces", "-o", &o])
        .assert()
        .success();
    let report = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    let at = report
        .find("## Where the GPU waits: the decode iterations, AR vs MTP per workload (µs)")
        .expect("the idle section");
    let section = &report[at..];
    for row in [
        "| text | AR | 98.6027 | 99.8972 | — | 46 | 68 |",
        "| text | MTP | 79.1414 | 97.2774 | — | 50 | 34 |",
    ] {
        assert!(section.contains(row), "{row} not in\n{section}");
    }
    let csv = std::fs::read_to_string(out.path().join("idle_steps.csv")).unwrap();
    for (file, mode, label) in [
        ("idle_sample_text_ar.json", "ar", "AR"),
        ("idle_sample_text_mtp.json", "mtp", "MTP"),
    ] {
        let want = expected(file);
        let rows = want["traces"][0]["steps"]["rows"].as_array().unwrap();
        let mine: Vec<&str> = csv
            .lines()
            .filter(|l| l.starts_with(&format!("text,{mode},")))
            .collect();
        assert_eq!(mine.len(), rows.len(), "{file}: one CSV line per step");
        // The steps the CSV marks as closed decode iterations (column 6).
        let decode: Vec<u64> = mine
            .iter()
            .filter(|l| l.split(',').nth(5) == Some("true"))
            .map(|l| l.split(',').nth(3).unwrap().parse().unwrap())
            .collect();
        let dec: Vec<&serde_json::Value> = rows
            .iter()
            .filter(|r| decode.contains(&r["index"].as_u64().unwrap()))
            .collect();
        let n = dec.len() as i128;
        assert!(
            n > 0 && (n as usize) < rows.len(),
            "{file}: {n} decode steps"
        );
        // The mean decode step, 0.1 µs, exactly as the table rounds it (C1).
        let cell = |k: &str| {
            let s: i128 = dec.iter().map(|r| r[k].as_i64().unwrap() as i128).sum();
            let t = half_even(s, n * 100);
            format!("{}.{}", t / 10, t % 10)
        };
        let line = format!(
            "| text | {label} | {n} | {} | {} | {} |",
            cell("compute_ns"),
            cell("comm_ns"),
            cell("memory_ns"),
        );
        assert!(section.contains(&line), "{line} not in\n{section}");
        // idle_steps.csv: host wait as the reference.
        let host: i64 = mine
            .iter()
            .map(|l| l.rsplit(',').nth(2).unwrap().parse::<i64>().unwrap())
            .sum();
        let want_host: i64 = rows
            .iter()
            .map(|r| r["host_wait_ns"].as_i64().unwrap())
            .sum();
        assert_eq!(host, want_host, "{file}: Σ host wait over the steps");
    }
    assert!(out.path().join("figures/fig11_idle_per_step.png").exists());
}
