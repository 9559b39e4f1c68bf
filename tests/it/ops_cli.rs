//! `torchtrace ops` end to end (issue 34): every figure equals the
//! independent reference (scripts/reference_ops.py, frozen in
//! tests/data/expected/ with the commands in OPS.md) to the ns; O4's two
//! invariants on every real trace there is; the comparison, the tables,
//! the exit status; bad input as counted notes (C1, C3, O10); 100 k ops
//! overlapping on one thread.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// (expected file, trace path) from tests/data/expected/OPS.md.
fn frozen() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("tests/data/expected/OPS.md")).unwrap();
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("- `")?;
            let (file, cmd) = rest.split_once("`: `python3 scripts/reference_ops.py ")?;
            Some((file.to_string(), cmd.strip_suffix('`')?.to_string()))
        })
        .collect()
}

/// Every key of `want`, recursively, equal in `got` (numbers exactly:
/// the ratios are rounded to 6 decimals on both sides).
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
        _ => assert_eq!(got, want, "{at}"),
    }
}

/// O1–O9 against the reference, field by field, row by row.
#[test]
fn every_frozen_trace_equals_the_reference() {
    let cases = frozen();
    assert_eq!(cases.len(), 5, "OPS.md lists the frozen files");
    for (file, path) in cases {
        let want = expected(&file);
        let got = run_json(&["-q", "ops", "-f", "json", &path], 0);
        equal(&got["traces"][0], &want["traces"][0], &file);
    }
}

/// Trace files under `dir` (recursively), sorted.
fn traces_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let n = p.to_string_lossy().to_string();
            if p.is_dir() {
                dirs.push(p);
            } else if n.ends_with(".json") || n.ends_with(".json.gz") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// O4: Σ gpu_self_ns = Σ gpu_top_ns = summary.gpu_linked_ns, and O3's
/// inclusive figure of a row is never below its self figure, on every
/// trace of sample_traces/, tests/data and ../shared/traces (absent ones
/// skipped). Failing here is a bug, never a note.
#[test]
fn o4_invariants_hold_on_every_trace() {
    use torchtrace::analyses::ops::{Ops, OpsSpec};
    use torchtrace::api::{self, Common};
    let common = Common {
        quiet: true,
        ..Common::default()
    };
    let mut paths = traces_under(&root().join("sample_traces"));
    paths.extend(traces_under(&root().join("tests/data")));
    paths.extend(traces_under(&root().join("../shared/traces")));
    let mut checked = 0;
    for p in paths {
        if p.to_string_lossy().contains("summary") || p.to_string_lossy().contains("/expected/") {
            continue;
        }
        let Ok(out) = api::run::<Ops>(std::slice::from_ref(&p), &common, &OpsSpec::default())
        else {
            continue; // unreadable (a damaged fixture): nothing to check
        };
        let t = &out.report.traces[0];
        let s = &t.summary;
        let self_sum: i64 = t.ops.iter().map(|r| r.gpu_self_ns).sum();
        let top_sum: i64 = t.ops.iter().map(|r| r.gpu_top_ns).sum();
        let at = p.display();
        assert_eq!(
            i128::from(self_sum),
            s.gpu_linked_ns,
            "{at}: Σ gpu_self (O4)"
        );
        assert_eq!(i128::from(top_sum), s.gpu_linked_ns, "{at}: Σ gpu_top (O4)");
        assert_eq!(s.gpu_linked_ns + s.gpu_unlinked_ns, s.gpu_ns, "{at}");
        assert_eq!(
            t.ops.iter().map(|r| r.launches_self).sum::<u64>(),
            s.launches,
            "{at}: every launch has one launcher (O2)"
        );
        for r in &t.ops {
            assert!(
                r.gpu_total_ns >= r.gpu_self_ns,
                "{at}: {} O3 ≥ self",
                r.name
            );
            assert!(r.cpu_self_ns >= 0, "{at}: {} cpu_self (O5)", r.name);
        }
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} traces checked");
}

/// The sample AR/MTP pair: figures of the reference, both verdicts, the
/// top-level ops side by side per token (tokens from the summaries beside
/// the traces).
#[test]
fn ar_vs_mtp_side_by_side_per_token() {
    let (ar, mtp) = (sample("text_ar"), sample("text_mtp"));
    let d = run_json(&["-q", "ops", "-f", "json", &ar, &mtp], 0);
    let c = &d["comparison"];
    assert_eq!(c["baseline_verdict"], "launch-bound");
    assert_eq!(c["candidate_verdict"], "launch-bound");
    assert_eq!(c["baseline_tokens"], 68);
    let top = c["top_level"].as_array().unwrap();
    let step = top
        .iter()
        .find(|p| p["name"] == "vLLM decode steps")
        .unwrap();
    // O4: the step annotations own the forward graph. Compared as one op:
    // AR's decode steps (`…generation_1(1)`) against MTP's (`…(3)`), each
    // side the sum of its decode step rows.
    let decode_top = |t: &Value| -> i64 {
        t["ops"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["cat"] == "user_annotation")
            .filter(|r| {
                let n = r["name"].as_str().unwrap();
                n.starts_with("execute_context_0(0)_generation_")
                    && !n.ends_with("_generation_0(0)")
            })
            .map(|r| r["gpu_top_ns"].as_i64().unwrap())
            .sum()
    };
    assert_eq!(decode_top(&d["traces"][0]), 11_041_846);
    assert_eq!(step["baseline_gpu_top_ns"], 11_041_846);
    assert_eq!(step["candidate_gpu_top_ns"], decode_top(&d["traces"][1]));
    assert!(step["candidate_gpu_top_ns"].as_i64().unwrap() > 0);
    assert_eq!(step["baseline_gpu_top_per_token_ns"], 162_380.088235);
    // MTP's drafter is its own top-level op.
    let draft = top
        .iter()
        .find(|p| p["name"] == "proposer.propose")
        .unwrap();
    assert_eq!(draft["candidate_gpu_top_ns"], 4_963_018);
    let t = &d["traces"][1];
    assert_eq!(t["units"], "ns");
    assert_eq!(t["thresholds"]["long_launch_delay_ns"], 100_000);
    // O2: a graph replay's launcher is the python frame `replay`.
    let first = &t["ops"][0];
    assert_eq!(first["cat"], "python_function");
    assert!(first["name"]
        .as_str()
        .unwrap()
        .starts_with("<built-in method replay"));
    assert_eq!(first["graph_launches_self"], 98);
}

#[test]
fn no_gpu_work_exits_1() {
    let out = bin()
        .args(["-q", "ops", "tests/data/hta_cpu_only.pt.trace.json.gz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no GPU work at all"));
}

/// The table shows the top N and sums the rest in one row; --sort orders it;
/// CSV has every row; stdin works; --help has the definitions.
#[test]
fn table_top_sort_csv_stdin_help() {
    let ar = sample("text_ar");
    let out = bin()
        .args(["-q", "ops", "--top", "3", "--sort", "calls", &ar])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("other ops)"), "{text}");
    assert!(text.contains("verdict (O9)"));
    let d = run_json(&["-q", "ops", "-f", "json", &ar], 0);
    let rows = d["traces"][0]["ops"].as_array().unwrap();
    for by in ["gpu_self", "gpu_top", "host"] {
        bin()
            .args(["-q", "ops", "--sort", by, &ar])
            .assert()
            .success();
    }
    let most = rows
        .iter()
        .map(|r| r["calls"].as_u64().unwrap())
        .max()
        .unwrap();
    let table_rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Ops of"))
        .skip(3)
        .collect();
    assert!(
        table_rows[0].contains(&format!(" {most} ")),
        "{}",
        table_rows[0]
    );
    let csv = bin()
        .args(["-q", "ops", "-f", "csv", &ar])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout);
    let csv_rows = csv
        .lines()
        .filter(|l| l.starts_with("sample_traces/"))
        .count();
    assert_eq!(csv_rows, 1 + rows.len(), "one summary line and every row");
    let md = bin()
        .args(["-q", "ops", "-f", "markdown", &ar])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&md.stdout).contains("| verdict (O9) |"));
    let bytes = std::fs::read(root().join(&ar)).unwrap();
    let piped = bin()
        .args(["-q", "ops", "-f", "json", "-"])
        .write_stdin(bytes)
        .output()
        .unwrap();
    let piped: Value = serde_json::from_slice(&piped.stdout).unwrap();
    assert_eq!(piped["traces"][0]["summary"], d["traces"][0]["summary"]);
    let help = bin().args(["ops", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for w in [
        "innermost",
        "outermost",
        "once",
        "queue delay",
        "verdict",
        "host wait",
    ] {
        assert!(help.contains(w), "--help lacks {w}");
    }
}

fn tmp(name: &str, text: &str) -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(name);
    std::fs::write(&p, text).unwrap();
    let s = p.to_string_lossy().to_string();
    (d, s)
}

/// C1, C3, O10: each bad input a counted note, figures still exact.
#[test]
fn bad_input_is_counted_never_a_panic() {
    let text = r#"{"traceEvents": [
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100.000, "dur": 50.000},
 {"ph": "X", "cat": "cpu_op", "name": "no ts", "pid": 1, "tid": 1, "dur": 5},
 {"ph": "X", "cat": "user_annotation", "name": "open", "pid": 1, "tid": 1, "ts": 90.000, "dur": 500.000, "args": {"finished": false}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110.000, "dur": 5.000, "args": {"correlation": 7}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 120.000, "dur": 5.000, "args": {"correlation": 7}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 1, "ts": 130.000, "dur": -3.000},
 {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 118.000, "dur": 2.000, "args": {"correlation": 7, "device": 0, "stream": 7}},
 {"ph": "X", "cat": "kernel", "name": "lost", "pid": 0, "tid": 7, "ts": 200.000, "dur": 4.000, "args": {"correlation": 99, "device": 0, "stream": 7}}
]}"#;
    let (_d, p) = tmp("bad.json", text);
    let out = bin().args(["ops", "-f", "json", &p]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    for n in [
        "1 events without ts",
        "1 events with dur < 0",
        "1 runtime calls carry a correlation",
        "1 device activities have no runtime call",
        "1 host ops never end",
    ] {
        assert!(err.contains(n), "stderr lacks {n}: {err}");
    }
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &d["traces"][0];
    assert_eq!(t["input"]["duplicate_runtime_correlation"], 1);
    let s = &t["summary"];
    assert_eq!(s["activities_unlinked"], 1);
    assert_eq!(s["gpu_linked_ns"], 2000);
    assert_eq!(s["gpu_unlinked_ns"], 4000);
    // The first call owns correlation 7 (C3): launch latency 118 − 110 µs,
    // queue delay 118 − 115 µs; aten::mm is its launcher, "open" its top.
    assert_eq!(s["launch_stats"]["launch_latency_ns"]["sum"], 8000);
    assert_eq!(s["launch_stats"]["queue_delay_ns"]["sum"], 3000);
    let mm = t["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "aten::mm")
        .unwrap();
    assert_eq!(mm["gpu_self_ns"], 2000);
    assert_eq!(mm["first_launch_delay_ns_sum"], 10_000);
    // cpu_self = 50 µs − the two 5 µs calls and the clamped sync (0 ns).
    assert_eq!(mm["cpu_self_ns"], 40_000);
    let open = t["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "open")
        .unwrap();
    assert_eq!(open["gpu_top_ns"], 2000);
}

/// 100 k ops on one thread, all overlapping and none nested (each starts
/// and ends 1 µs after the previous), and 100 k properly nested on
/// another: the containment queries are O(n log n) (C4), the figures
/// those of the definitions.
#[test]
fn hundred_thousand_overlapping_ops() {
    const N: i64 = 100_000;
    let mut t = String::from("{\"traceEvents\": [\n");
    for i in 0..N {
        t.push_str(&format!(
            "{{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::x\",\"pid\":1,\"tid\":1,\"ts\":{i},\"dur\":1000000}},\n"
        ));
        t.push_str(&format!(
            "{{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::y\",\"pid\":1,\"tid\":2,\"ts\":{i},\"dur\":{}}},\n",
            2 * (N - i) + 1000
        ));
    }
    for (tid, corr) in [(1, 1), (2, 2)] {
        t.push_str(&format!(
            "{{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":{tid},\"ts\":200000,\"dur\":10,\"args\":{{\"correlation\":{corr}}}}},\n"
        ));
        t.push_str(&format!(
            "{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":{},\"dur\":3,\"args\":{{\"correlation\":{corr}}}}},\n",
            200020 + corr * 10
        ));
    }
    t.push_str("{\"ph\":\"M\",\"name\":\"end\"}]}");
    // The call on tid 2 must sit inside every nested op: the innermost
    // (ts N−1, dur 1002) ends at N + 1001 µs; put it inside that.
    let t = t.replace(
        "\"tid\":2,\"ts\":200000,\"dur\":10",
        &format!("\"tid\":2,\"ts\":{},\"dur\":10", N - 1 + 100),
    );
    let (_d, p) = tmp("many.json", &t);
    let d = run_json(&["-q", "ops", "-f", "json", &p], 0);
    let rows = d["traces"][0]["ops"].as_array().unwrap();
    let row = |n: &str| rows.iter().find(|r| r["name"] == n).unwrap();
    let (x, y) = (row("aten::x"), row("aten::y"));
    assert_eq!(x["calls"], N);
    assert_eq!(y["calls"], N);
    // O5: every x is outermost of its name (none holds another); only the
    // first y is.
    assert_eq!(x["cpu_total_ns"], N * 1_000_000_000);
    assert_eq!(y["cpu_total_ns"], (2 * N + 1000) * 1000);
    // O3: once per name, O2: the innermost launches, O4: the outermost owns.
    for r in [x, y] {
        assert_eq!(r["launches_total"], 1);
        assert_eq!(r["launches_self"], 1);
        assert_eq!(r["first_launch_delay_n"], 1);
        assert_eq!(r["gpu_top_ns"], 3000);
    }
    // The last x started at N − 1 µs; its call at 200 000 µs.
    assert_eq!(x["first_launch_delay_ns_sum"], (200_000 - (N - 1)) * 1000);
    assert_eq!(y["first_launch_delay_ns_sum"], 100 * 1000);
}

/// `batch` over the samples: traces.csv's ops columns, the report's
/// section naming MTP's launch-bound ops (the drafter among them), ops.csv,
/// figure 10, and results.json's summary without the rows.
#[test]
fn batch_names_mtps_launch_bound_ops() {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_string_lossy().to_string();
    bin()
        .args(["-q", "batch", "sample_traces", "-o", &o])
        .assert()
        .success();
    let report = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    let at = report
        .find("## Who launches the GPU work")
        .expect("the ops section");
    let section = &report[at..];
    let text_row = section
        .lines()
        .find(|l| l.starts_with("| text | `"))
        .expect("text's explanation row");
    assert!(text_row.contains("`proposer.propose`"), "{text_row}");
    assert!(section.contains("| text | launch-bound | launch-bound | 71.809132 | 4.952092 |"));
    let csv = std::fs::read_to_string(out.path().join("traces.csv")).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for k in [
        "ops_verdict",
        "ops_host_busy_per_gpu",
        "ops_host_wait_share_of_idle",
        "ops_launches_per_token",
        "ops_short_gpu_launches_per_token",
    ] {
        assert!(head.contains(&k), "traces.csv lacks {k}");
    }
    let ops_csv = std::fs::read_to_string(out.path().join("ops.csv")).unwrap();
    assert!(ops_csv.contains("proposer.propose"));
    assert!(out
        .path()
        .join("figures/fig10_ops_gpu_vs_host_per_token.png")
        .exists());
    let results: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("results.json")).unwrap()).unwrap();
    let t = results["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"].as_str().unwrap().starts_with("text_ar/dp0"))
        .unwrap();
    assert_eq!(t["ops"]["summary"]["gpu_linked_ns"], 12_638_958);
    assert!(t["ops"]["ops"].is_null(), "rows stay out of results.json");
}

/// A trace cut short: the figures of what was read, exit 2, no panic.
#[test]
fn a_damaged_trace_is_an_error_with_figures() {
    let out = bin()
        .args([
            "-q",
            "ops",
            "-f",
            "json",
            "tests/data/damaged/cut_in_events.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["traces"][0]["complete"], false);
}

/// Issue 57 in `batch`: report.md's "Inside the graphs" for the CUDA-graph
/// pair (`sample_traces/text_graphs_{ar,mtp}/`), every figure from
/// `scripts/check_graph_modules.py`'s sums over the JSON (AR 4 766 446 ns,
/// MTP decoder 2 511 299 + drafter 2 364 803 ns, 32 completion tokens
/// each), and the three other workloads' replays said unmatched (no
/// capture traces); traces.csv's `ops_graph_*`, graphs.csv and
/// results.json's `ops.graphs` of the comparison.
#[test]
fn batch_inside_the_graphs_ar_vs_mtp() {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_string_lossy().to_string();
    bin()
        .args(["-q", "batch", "sample_traces", "--no-figures", "-o", &o])
        .assert()
        .success();
    let report = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    let at = report
        .find("## Inside the graphs")
        .expect("the graphs section");
    let section = &report[at..];
    for row in [
        // 4 766 446 / 32 = 148 951.4 ns per token; no drafter in AR.
        "| text_graphs | AR | 3 | 30 | 30 | 0 | 0 | 148.951 | 148.951 | — | — |",
        // 4 876 102 / 32, 2 511 299 / 32, 2 364 803 / 32; 48.5 %.
        "| text_graphs | MTP | 6 | 52 | 52 | 0 | 0 | 152.378 | 78.478 | 73.900 | 48.5 |",
        "| text | AR | 0 | 64 | 0 | 0 | 64 | — | — | — | — |",
        // Decoder Linear layers: 2 585 331 ns (AR), 1 399 224 ns (MTP).
        "| text_graphs | decoder | ToyForCausalLM/DecoderLayer/Linear | 80.792 | 43.726 | -37.066 |",
        "| text_graphs | speculator | ToyEagleDraftModel/DecoderLayer/Linear | — | 24.348 | 24.348 |",
        "| text_graphs | decoder | aten::mm | 80.792 | 43.726 | -37.066 |",
        // The drafter's aten::argmax, outside every module: 204 675 ns.
        "| text_graphs | speculator | (no module) | — | 6.396 | 6.396 |",
    ] {
        assert!(section.contains(row), "{row} not in\n{section}");
    }
    assert!(
        section.contains(
            "**text**: 64 AR and 98 MTP graph replays, none attributed (no capture found)"
        ),
        "{section}"
    );
    // The answer names the drafter's share and the top module per token.
    assert!(report.contains(
        "- **text_graphs** inside the graphs: MTP's drafter (speculator graphs) takes 48.5 % of its graph GPU time, 73.900 µs per token"
    ));
    let csv = std::fs::read_to_string(out.path().join("traces.csv")).unwrap();
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let heads = rd.headers().unwrap().clone();
    let col = |n: &str| heads.iter().position(|h| h == n).unwrap();
    let row = rd
        .records()
        .map(|r| r.unwrap())
        .find(|r| r[0].starts_with("text_graphs_mtp/dp0"))
        .unwrap();
    assert_eq!(&row[col("ops_graph_replays")], "52");
    assert_eq!(&row[col("ops_graph_replays_matched")], "52");
    assert_eq!(&row[col("ops_gpu_graph_ns")], "4876102");
    assert_eq!(&row[col("ops_graph_speculator_ns")], "2364803");
    assert_eq!(&row[col("ops_graph_speculator_share")], "0.484978");
    // graphs.csv: per trace, the rows add up to its total.
    let mut g = csv::Reader::from_path(out.path().join("graphs.csv")).unwrap();
    let gh = g.headers().unwrap().clone();
    let gc = |n: &str| gh.iter().position(|h| h == n).unwrap();
    let mut sums: std::collections::BTreeMap<String, i64> = Default::default();
    for r in g.records() {
        let r = r.unwrap();
        *sums.entry(r[gc("mode")].to_string()).or_default() +=
            r[gc("gpu_graph_ns")].parse::<i64>().unwrap();
    }
    assert_eq!(sums["ar"], 4_766_446);
    assert_eq!(sums["mtp"], 4_876_102);
    let results: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("results.json")).unwrap()).unwrap();
    let c = results["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["workload"] == "text_graphs")
        .unwrap();
    let g = &c["ops"]["graphs"];
    assert_eq!(g["candidate"]["speculator_per_token_ns"], 73_900.093_75);
    assert_eq!(g["baseline"]["gpu_graph_per_token_ns"], 148_951.437_5);
    assert_eq!(
        g["modules"][0]["name"],
        "ToyForCausalLM/DecoderLayer/Linear"
    );
}

/// `ops --by module` on the real pair: the graph replays' GPU time by
/// module path (`scripts/check_graph_modules.py`: MTP's largest is the
/// drafter's decoder layer, 338 369 ns; 48 paths; Σ 4 876 102 ns), as
/// JSON, CSV and a table.
#[test]
fn ops_by_module_on_the_real_pair() {
    let t = sample("text_graphs_mtp");
    let v = run_json(&["-q", "ops", "--by", "module", "-f", "json", &t], 0);
    let m = v["modules"].as_array().unwrap();
    assert_eq!(m.len(), 48);
    assert_eq!(m[0]["subsystem"], "speculator");
    assert_eq!(m[0]["module"], "ToyEagleDraftModel_0/DecoderLayer_0");
    assert_eq!(m[0]["gpu_graph_ns"], 338_369);
    // 338 369 / 32 tokens.
    assert_eq!(m[0]["gpu_graph_per_token_ns"], 10_574.031_25);
    let sum: i64 = m.iter().map(|r| r["gpu_graph_ns"].as_i64().unwrap()).sum();
    assert_eq!(sum, 4_876_102);
    let argmax = m.iter().find(|r| r["module"] == "").unwrap();
    assert_eq!(argmax["ops"][0]["op"], "aten::argmax");
    assert_eq!(argmax["gpu_graph_ns"], 204_675);
    let csv = bin()
        .args(["-q", "ops", "--by", "module", "-f", "csv", &t])
        .output()
        .unwrap();
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert!(csv.contains("path,subsystem,module,module_activities,module_gpu_graph_ns"));
    assert!(csv.contains(",speculator,ToyEagleDraftModel_0/DecoderLayer_0,"));
    let table = bin()
        .args(["-q", "ops", "--by", "module", "--top", "3", &t])
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.contains("GPU time by module (top 3)"), "{table}");
    assert!(table.contains("(45 other modules)"), "{table}");
    assert!(
        table.contains("52 of 52 graph replays attributed"),
        "{table}"
    );
}

/// `--sort cpu_self`: the op rows by their own CPU time (O5's
/// `cpu_self_ns`), largest first — on the text AR sample the cuDNN
/// attention's first calls (805.5 ms, compile-time warm-up) lead, as the
/// JSON's rows sorted by hand say.
#[test]
fn sort_by_cpu_self_puts_the_hosts_own_time_first() {
    let ar = sample("text_ar");
    let d = run_json(&["-q", "ops", "-f", "json", &ar], 0);
    let mut rows: Vec<(String, i64)> = d["traces"][0]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["cpu_self_ns"].as_i64().unwrap(),
            )
        })
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    assert_eq!(
        rows[0],
        ("aten::_cudnn_attention_forward".to_string(), 805_535_524)
    );
    assert_eq!(rows[1], ("aten::mm".to_string(), 40_024_377));
    let o = bin()
        .args([
            "-q", "ops", "--sort", "cpu_self", "--top", "2", "-f", "csv", &ar,
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let csv = String::from_utf8(o.stdout).unwrap();
    let first = csv
        .find("aten::_cudnn_attention_forward,16,806498519,805535524")
        .unwrap();
    let second = csv.find("aten::mm,132,41914367,40024377").unwrap();
    assert!(first < second, "{csv}");
}
