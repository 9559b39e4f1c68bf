//! `torchtrace memory` end to end: every figure equals the independent
//! reference (scripts/reference_memory.py, written from docs/VIEWS.md M1–M6,
//! frozen in tests/data/expected/ with the commands in MEMORY.md) exactly,
//! to the byte and the ns; M2's invariants on every real trace with memory
//! events; the formats, the comparison, the exit codes, thread counts and
//! batch's section, CSV and figure.

use crate::common::*;
use serde_json::Value;

/// (expected file, trace path, flags) from tests/data/expected/MEMORY.md.
fn frozen() -> Vec<(String, String, Vec<String>)> {
    let text = std::fs::read_to_string(root().join("tests/data/expected/MEMORY.md")).unwrap();
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("- `")?;
            let (file, cmd) = rest.split_once("`: `python3 scripts/reference_memory.py ")?;
            let mut words = cmd.strip_suffix('`')?.split_whitespace();
            let path = words.next()?.to_string();
            Some((file.to_string(), path, words.map(str::to_string).collect()))
        })
        .collect()
}

/// Every key of `want`, recursively, exactly.
fn equal(got: &Value, want: &Value, at: &str) {
    match want {
        Value::Object(m) => {
            for (k, w) in m {
                if k != "path" {
                    assert!(got.get(k).is_some(), "{at}.{k}: missing");
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
        _ => assert_eq!(got, want, "{at}"),
    }
}

fn memory_json(args: &[&str]) -> (Option<i32>, Value) {
    let mut cmd = bin();
    cmd.args(["-q", "memory", "-f", "json"]).args(args);
    let out = cmd.output().unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

#[test]
fn every_frozen_trace_equals_the_reference() {
    let cases = frozen();
    assert_eq!(cases.len(), 4, "MEMORY.md lists the frozen files");
    for (file, path, flags) in cases {
        let want = expected(&file);
        let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
        args.push(&path);
        let (code, got) = memory_json(&args);
        assert_eq!(code, Some(0), "{file}");
        equal(&got, &want, &file);
    }
}

/// The real figures the README and the docs quote.
#[test]
fn the_h100_bert_trace_peaks_at_its_addmm() {
    let (_, v) = memory_json(&["tests/data/tracelens_h100_bert_small.json.gz"]);
    let d = &v["traces"][0]["devices"][1];
    assert_eq!(d["device"], "cuda:0");
    assert_eq!(d["levels"], "total_allocated");
    assert_eq!(d["events"], 218);
    assert_eq!(d["baseline_bytes"], 91_360_768);
    assert_eq!(d["peak_allocated_bytes"], 101_305_344);
    assert_eq!(d["peak_ts_ns"], 1_419_247_337_276_476i64);
    assert_eq!(d["peak_reserved_bytes"], 121_634_816);
    assert_eq!(d["held_at_peak_bytes"], 9_944_576);
    assert_eq!(d["at_peak"][0]["name"], "aten::addmm");
    assert_eq!(d["at_peak"][0]["bytes"], 8_607_232);
    assert_eq!(d["at_peak_by_module"][0]["name"], "nn.Module: Linear_25");
}

/// M2–M4's invariants on every fixture with memory events: the peak is a
/// level between baseline and the largest; held + before = peak; the
/// holders sum to held (without `--top` cutting); steps' nets add up.
#[test]
fn invariants_on_every_fixture_with_memory_events() {
    let traces = fixture_files(|p| p.ends_with(".json.gz") && !p.contains("/damaged/"));
    let mut seen = 0;
    for p in traces {
        let bytes = std::fs::read(&p).unwrap();
        let text = {
            use std::io::Read;
            let mut s = String::new();
            flate2::read::GzDecoder::new(&bytes[..])
                .read_to_string(&mut s)
                .ok();
            s
        };
        if !text.contains("\"[memory]\"") {
            continue;
        }
        seen += 1;
        let path = p.to_string_lossy().to_string();
        let (code, v) = memory_json(&["--top", "0", &path]);
        assert_eq!(code, Some(0), "{path}");
        for d in v["traces"][0]["devices"].as_array().unwrap() {
            let g = |k: &str| d[k].as_i64().unwrap_or_else(|| panic!("{path}: {k}"));
            let what = format!("{path} {}", d["device"]);
            assert!(
                g("peak_allocated_bytes") >= g("final_allocated_bytes"),
                "{what}"
            );
            let held: i64 = d["at_peak"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["bytes"].as_i64().unwrap())
                .sum();
            assert_eq!(held, g("held_at_peak_bytes"), "{what}: M4 rows sum to held");
            if let Some(before) = d["before_trace_bytes"].as_i64() {
                assert_eq!(
                    before + g("held_at_peak_bytes"),
                    g("peak_allocated_bytes"),
                    "{what}"
                );
            }
            for s in d["steps"].as_array().unwrap() {
                let s = |k: &str| s[k].as_i64().unwrap();
                assert_eq!(s("end_bytes") - s("start_bytes"), s("net_bytes"), "{what}");
                assert!(
                    s("high_water_bytes") >= s("start_bytes").max(s("end_bytes")),
                    "{what}"
                );
                assert!(s("high_water_bytes") <= g("peak_allocated_bytes"), "{what}");
            }
        }
    }
    assert!(seen >= 4, "fixtures with memory events: {seen}");
}

#[test]
fn a_trace_without_memory_events_is_exit_1_with_a_clear_problem() {
    let out = bin()
        .args(["memory", "tests/data/hta_nccl_data.json.gz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no [memory] events (record with profile_memory=True)"),
        "{err}"
    );
}

#[test]
fn two_traces_are_compared_per_device() {
    let (code, v) = memory_json(&[
        "tests/data/tracelens_h100_bert_small.json.gz",
        "tests/data/memory/tracelens_h100_vit_falconsai.json.gz",
    ]);
    assert_eq!(code, Some(0));
    let c = &v["comparison"]["devices"][1];
    assert_eq!(c["device"], "cuda:0");
    assert_eq!(c["baseline_peak_allocated_bytes"], 101_305_344);
    assert_eq!(c["candidate_peak_allocated_bytes"], 231_332_864);
    assert_eq!(c["peak_delta_bytes"], 231_332_864i64 - 101_305_344);
    assert_eq!(c["candidate_top_holder"], "cpu_op aten::addmm");
}

#[test]
fn every_format_and_the_step_rows() {
    let path = "tests/data/memory/kineto_resnet50_2021.pt.trace.json.gz";
    for (format, want) in [
        ("table", "peak (MiB)"),
        ("markdown", "| figure |"),
        ("csv", "trace,device,levels,events"),
    ] {
        let out = bin()
            .args(["-q", "memory", "--per-step", "-f", format, path])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{format}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(want), "{format}: {text}");
        assert!(text.contains("ProfilerStep#5"), "{format}: the step rows");
    }
}

#[test]
fn one_thread_and_many_give_the_same_bytes() {
    let path = "tests/data/memory/tracelens_mi300_qwen_chat.json.gz";
    let run = |j: &str| {
        bin()
            .args([
                "-q",
                "-j",
                j,
                "memory",
                "-f",
                "json",
                "--timeline",
                "64",
                path,
            ])
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(run("1"), run("4"));
}

#[test]
fn batch_writes_the_memory_section_csv_and_figure() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    for f in [
        "tests/data/tracelens_h100_bert_small.json.gz",
        "tests/data/memory/tracelens_h100_vit_falconsai.json.gz",
    ] {
        let name = std::path::Path::new(f).file_name().unwrap();
        std::fs::copy(root().join(f), input.join(name)).unwrap();
    }
    let out = dir.path().join("out");
    let run = bin()
        .args(["-q", "batch"])
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(matches!(run.status.code(), Some(0 | 1)), "{run:?}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("## Memory: the allocator timeline"),
        "{report}"
    );
    assert!(
        report.contains("| tracelens_h100_bert_small.json.gz | — | cuda:0 | 96.61 |"),
        "{report}"
    );
    let csv = std::fs::read_to_string(out.join("memory.csv")).unwrap();
    assert!(
        csv.contains(",cuda:0,total_allocated,218,109,109,47460864,"),
        "{csv}"
    );
    assert!(out.join("figures/fig13_memory_timeline.png").is_file());
    // results.json carries the timeline batch asked for (M6).
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let t = results["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"].as_str().unwrap().contains("bert"))
        .unwrap();
    let tl = t["memory"]["devices"][1]["timeline"].as_array().unwrap();
    assert!(!tl.is_empty() && tl.len() <= 400);
    assert!(tl.iter().any(|p| p["allocated_bytes"] == 101_305_344));
}
