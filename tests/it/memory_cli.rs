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
    assert_eq!(cases.len(), 8, "MEMORY.md lists the frozen files");
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
    // Two real traces made one workload's AR and candidate by a manifest.
    let manifest = dir.path().join("manifest.csv");
    std::fs::write(
        &manifest,
        "path,mode,workload,completion_tokens\n\
         tracelens_h100_bert_small.json.gz,ar,vision_text,10\n\
         tracelens_h100_vit_falconsai.json.gz,mtp,vision_text,10\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let run = bin()
        .args(["-q", "batch"])
        .arg(&input)
        .arg("--manifest")
        .arg(&manifest)
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
        report.contains("| tracelens_h100_bert_small.json.gz | ar | cuda:0 | 96.61 |"),
        "{report}"
    );
    // AR vs the candidate per workload: peaks, churn per token, holders.
    assert!(
        report.contains(
            "| vision_text | cuda:0 | 96.61 | 220.62 | 124.00 | 4634.9 | 35406.6 | cpu_op aten::addmm | cpu_op aten::addmm |"
        ),
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
    let cmp = &results["comparisons"][0]["memory"]["devices"][1];
    assert_eq!(cmp["peak_delta_bytes"], 231_332_864i64 - 101_305_344);
    let tl = t["memory"]["devices"][1]["timeline"].as_array().unwrap();
    assert!(!tl.is_empty() && tl.len() <= 400);
    assert!(tl.iter().any(|p| p["allocated_bytes"] == 101_305_344));
}

/// Against PyTorch's own `export_memory_timeline` of the same run (the
/// stack trace's recording, tests/data/memory/RECORDING.md): its
/// categories' sum rises from its start by exactly the bytes of the
/// trace's allocations live at our peak, at the same instant (PyTorch
/// writes µs). Its absolute level differs: it counts only the tensors it
/// can categorize (8.15 MiB of parameters at the start), not the 36.8 MiB
/// more the allocator's `Total Allocated` already held.
#[test]
fn the_peak_agrees_with_pytorchs_memory_timeline() {
    let text = std::fs::read_to_string(
        root().join("tests/data/expected/pytorch_memory_timeline_hf_greedy.json"),
    )
    .unwrap();
    let (times, sizes): (Vec<i64>, Vec<Vec<i64>>) = serde_json::from_str(&text).unwrap();
    let total: Vec<i64> = sizes.iter().map(|c| c.iter().sum()).collect();
    let peak = *total.iter().max().unwrap();
    let at = total.iter().position(|&t| t == peak).unwrap();
    let (_, v) = memory_json(&["tests/data/memory/hf_greedy_memory_stack.pt.trace.json.gz"]);
    let d = &v["traces"][0]["devices"][1];
    assert_eq!(d["device"], "cuda:0");
    assert_eq!(peak - total[0], d["held_at_peak_bytes"].as_i64().unwrap());
    assert_eq!(peak - total[0], 428_544);
    let after_ns = d["peak_ts_ns"].as_i64().unwrap() - d["first_ts_ns"].as_i64().unwrap();
    assert_eq!(times[at] - times[0], after_ns / 1000);
    // The difference in absolute level, as the docs state it.
    assert_eq!(total[0], 8_548_608);
    assert_eq!(d["baseline_bytes"].as_i64().unwrap() - total[0], 36_513_024);
}

/// Greedy against assisted decoding of the same GPT-2 model (recorded on an
/// H100, tests/data/memory/RECORDING.md): the drafter's extra allocations.
#[test]
fn assisted_decoding_allocates_more_than_greedy() {
    let (code, v) = memory_json(&[
        "--tokens",
        "24",
        "--tokens",
        "24",
        "tests/data/memory/hf_greedy_memory.pt.trace.json.gz",
        "tests/data/memory/hf_assisted_memory.pt.trace.json.gz",
    ]);
    assert_eq!(code, Some(0));
    let c = &v["comparison"]["devices"][1];
    assert_eq!(c["device"], "cuda:0");
    assert_eq!(c["baseline_peak_allocated_bytes"], 45_489_152);
    assert_eq!(c["candidate_peak_allocated_bytes"], 45_634_048);
    assert_eq!(c["peak_delta_bytes"], 144_896);
    // 7 315 968 and 8 158 720 bytes over 24 tokens.
    assert_eq!(c["baseline_bytes_allocated_per_token"], 304_832.0);
    assert_eq!(c["candidate_bytes_allocated_per_token"], 339_946.666667);
}
