//! `torchtrace ranks` end to end on real multi-rank traces: the TP=2 H200
//! run with injected stragglers (tests/data/tp2, its GROUND_TRUTH.json)
//! finds exactly the injected steps; every figure equals the independent
//! reference (scripts/reference_ranks.py, frozen in
//! tests/data/expected/ranks_*.json); the 8-rank PARAM DLRM training run
//! is grouped by distributedInfo; and a damaged rank is a note, not a
//! panic, with the other ranks still analysed.

use crate::common::*;
use serde_json::Value;

const TP2: &str = "tests/data/tp2/ar_plain";
const DLRM: &str = "tests/data/dlrm_kineto";

fn ranks(args: &[&str], code: i32) -> Value {
    let mut a = vec!["ranks", "-q", "-f", "json"];
    a.extend_from_slice(args);
    run_json(&a, code)
}

/// An exact rational `{num, den}` against a Fraction's text.
fn exact_eq(got: &Value, want: &str) -> bool {
    let (n, d) = (
        got["num"].as_i64().unwrap() as i128,
        got["den"].as_i64().unwrap() as i128,
    );
    let (wn, wd): (i128, i128) = match want.split_once('/') {
        Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
        None => (want.parse().unwrap(), 1),
    };
    n * wd == wn * d
}

/// Every figure of one run against the reference's output.
fn check_run(run: &Value, want: &Value) {
    assert_eq!(run["aligned_steps"], want["aligned"]);
    let n = want["per_rank"].as_array().unwrap().len();
    assert_eq!(run["ranks"].as_array().unwrap().len(), n);
    for (r, o) in want["offsets"].as_array().unwrap().iter().enumerate() {
        let g = &run["offsets"][r];
        assert_eq!(g["offset_ns"], o["offset"], "rank {r} offset");
        assert_eq!(g["spread_ns"], o["spread"], "rank {r} spread");
        assert_eq!(g["matched"], o["matched"], "rank {r} matched");
        assert_eq!(g["credible"], o["credible"], "rank {r} credible");
        assert_eq!(g["applied"], o["applied"], "rank {r} applied");
    }
    assert!(exact_eq(
        &run["threshold"]["ns"],
        want["threshold"].as_str().unwrap()
    ));
    let flagged: Vec<u64> = run["stragglers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_u64().unwrap())
        .collect();
    let want_flagged: Vec<u64> = want["flagged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(flagged, want_flagged);
    for (r, w) in want["per_rank"].as_array().unwrap().iter().enumerate() {
        let g = &run["ranks"][r];
        assert_eq!(g["wait_ns"], w["wait"], "rank {r} wait");
        assert_eq!(g["gpu_span_ns"], w["gpu_span"], "rank {r} span");
        assert_eq!(g["straggler_steps"], w["straggler_steps"], "rank {r}");
    }
    for (kind, key) in [("steps", "steps"), ("boundary", "boundary")] {
        let (g, w) = (run[kind].as_array().unwrap(), want[key].as_array().unwrap());
        assert_eq!(g.len(), w.len(), "{kind}");
        for (gs, ws) in g.iter().zip(w) {
            let at = format!("{kind} {}", ws["step"]);
            assert_eq!(gs["name"], ws["name"], "{at}");
            assert_eq!(gs["collectives"], ws["collectives"], "{at}");
            assert_eq!(gs["straggler"], ws["straggler"], "{at}");
            assert_eq!(gs["delay_ns"], ws["delay"], "{at}");
            for (r, p) in gs["per_rank"].as_array().unwrap().iter().enumerate() {
                assert_eq!(p["wait_ns"], ws["wait"][r], "{at} rank {r}");
                assert_eq!(p["arrival_ns"], ws["arrival"][r], "{at} rank {r}");
                assert_eq!(p["cpu_start_ns"], ws["cpu_start"][r], "{at} rank {r}");
                assert_eq!(p["gpu_span_ns"], ws["gpu_span"][r], "{at} rank {r}");
                assert_eq!(
                    p["in_collectives_ns"], ws["in_collectives"][r],
                    "{at} rank {r}"
                );
            }
        }
    }
}

#[test]
fn tp2_finds_exactly_the_injected_stragglers() {
    let doc = ranks(&[TP2, "--per-step"], 0);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run["run"], TP2);
    assert_eq!(run["world_size"], 2);
    let truth = serde_json::from_str::<Value>(
        &std::fs::read_to_string(root().join("tests/data/tp2/GROUND_TRUTH.json")).unwrap(),
    )
    .unwrap();
    let truth = &truth["runs"]["ar_plain"];
    let injected: Vec<(u64, u64)> = truth["injected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["step"].as_u64().unwrap(), i["rank"].as_u64().unwrap()))
        .collect();
    let found: Vec<(u64, u64)> = run["stragglers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["step"].as_u64().unwrap(), s["rank"].as_u64().unwrap()))
        .collect();
    assert_eq!(found, injected, "every injected step, no false positive");
    assert_eq!(run["aligned_steps"], truth["decode_steps"]);
    // Each flagged delay is at least the ground truth's shortest wait on
    // the other ranks (2084.7 µs), and at most the measured sleep + 1 ms.
    for (s, i) in run["stragglers"]
        .as_array()
        .unwrap()
        .iter()
        .zip(truth["injected"].as_array().unwrap())
    {
        let d = s["delay_ns"].as_i64().unwrap();
        assert!(d >= 2_084_700 - 100, "step {}: {d}", s["step"]);
        assert!(
            d <= i["slept_ns"].as_i64().unwrap() + 1_000_000,
            "step {}: {d}",
            s["step"]
        );
    }
    // The prefill is aligned apart: rank 1 entered ~0.9 ms before rank 0.
    let pre = &run["boundary"][0];
    assert_eq!(pre["straggler"], 0);
    let skew = pre["per_rank"][0]["cpu_skew_ns"].as_i64().unwrap();
    assert!((900_000..=930_000).contains(&skew), "{skew}");
    assert_eq!(run["completion_tokens"], 217);
    check_run(run, &expected("ranks_tp2_ar_plain.json"));
}

#[test]
fn dlrm_eight_ranks_grouped_by_distributed_info() {
    let doc = ranks(&[DLRM, "--context-regex", "ProfilerStep#", "--per-step"], 0);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run["world_size"], 8);
    assert_eq!(run["missing_ranks"], serde_json::json!([]));
    for (r, k) in run["ranks"].as_array().unwrap().iter().enumerate() {
        assert_eq!(k["rank"], r);
        assert_eq!(k["rank_source"], "distributed_info");
        assert!(k["path"].as_str().unwrap().contains(&format!("worker{r}_")));
    }
    // Rank 7 came last to the step's collectives; rank 1 waited longest.
    assert_eq!(run["steps"][0]["straggler"], 7);
    check_run(run, &expected("ranks_dlrm_kineto.json"));
}

#[test]
fn same_output_with_one_and_many_threads_and_every_format() {
    for f in ["table", "csv", "markdown", "json"] {
        let one = bin()
            .args(["-j", "1", "ranks", "-q", "-f", f, TP2])
            .output()
            .unwrap();
        let many = bin()
            .args(["-j", "4", "ranks", "-q", "-f", f, TP2])
            .output()
            .unwrap();
        assert_eq!(one.status.code(), Some(0));
        assert_eq!(one.stdout, many.stdout, "format {f}");
        assert!(!one.stdout.is_empty());
    }
}

#[test]
fn damaged_rank_is_a_note_and_the_other_rank_is_still_analysed() {
    let dir = tempfile::tempdir().unwrap();
    let src = root().join(TP2);
    let mut names: Vec<_> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pt.trace.json.gz"))
        .collect();
    names.sort();
    // Rank 0 intact, rank 1 cut in the middle of its gzip stream.
    std::fs::copy(src.join(&names[0]), dir.path().join(&names[0])).unwrap();
    let bytes = std::fs::read(src.join(&names[1])).unwrap();
    std::fs::write(dir.path().join(&names[1]), &bytes[..bytes.len() / 2]).unwrap();
    let d = dir.path().to_string_lossy().into_owned();
    let out = bin().args(["ranks", "-f", "json", &d]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "an incomplete trace exits 2");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &doc["runs"][0];
    assert_eq!(run["ranks"][0]["complete"], true);
    assert_eq!(run["ranks"][1]["complete"], false);
    // Kineto writes the CPU side first: the cut rank keeps its 216 step
    // annotations but loses the GPU activities of the later steps, which
    // then match no collective (no figures rather than guessed ones).
    assert_eq!(run["ranks"][1]["decode_steps"], 216);
    let lost = run["collective_count_mismatches"].as_u64().unwrap();
    assert!(lost > 0 && lost < 216, "{lost}");
    let truth = [16u64, 33, 50, 67, 84, 101, 118, 120, 121, 122, 123, 124];
    let found: Vec<u64> = run["stragglers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_u64().unwrap())
        .collect();
    assert!(
        !found.is_empty() && found.iter().all(|s| truth.contains(s)),
        "{found:?}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("different numbers of collectives"), "{err}");
    assert!(err.contains("data ends early"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // A rank file that is not a trace at all: reported, the other analysed.
    std::fs::write(dir.path().join(&names[1]), b"not a trace").unwrap();
    let out = bin().args(["ranks", "-f", "json", &d]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &doc["runs"][0];
    assert_eq!(run["ranks"][0]["decode_steps"], 216);
    assert_eq!(run["ranks"][1]["decode_steps"], 0);
    assert!(run["ranks"][1]["error"].as_str().unwrap().len() > 5);
}

#[test]
fn no_trace_in_a_directory_is_an_argument_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["ranks", &dir.path().to_string_lossy()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no worker trace"));
}

#[test]
fn plot_draws_one_figure_per_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_string_lossy().into_owned();
    let out = bin()
        .args([
            "ranks",
            "-q",
            "--plot",
            &d,
            "--plot-format",
            "both",
            TP2,
            DLRM,
        ])
        .args(["--context-regex", "^(ProfilerStep#|execute_context_0)"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for stem in ["ranks_ar_plain", "ranks_dlrm_kineto"] {
        assert!(dir.path().join(format!("{stem}.png")).exists(), "{stem}");
        let svg = std::fs::read_to_string(dir.path().join(format!("{stem}.svg"))).unwrap();
        assert!(svg.contains("rank 1"), "{stem}");
    }
    let svg = std::fs::read_to_string(dir.path().join("ranks_ar_plain.svg")).unwrap();
    assert!(svg.contains("(17 flagged)"));
}

/// `batch` groups the rank files into one run (one row, not one per rank
/// file), and `merge` over its records writes the same section.
#[test]
fn batch_groups_rank_files_into_runs_and_merge_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let (out, merged) = (dir.path().join("out"), dir.path().join("merged"));
    let rec = dir.path().join("r.jsonl");
    let s = |p: &std::path::Path| p.to_string_lossy().into_owned();
    let status = bin()
        .args([
            "batch",
            "-q",
            "tests/data/tp2",
            "-o",
            &s(&out),
            "--records",
            &s(&rec),
        ])
        .output()
        .unwrap();
    assert_eq!(
        status.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let runs = std::fs::read_to_string(out.join("ranks_runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 2, "one run: {runs}");
    assert!(runs
        .lines()
        .nth(1)
        .unwrap()
        .starts_with("ar,plain,ar_plain,2,"));
    let stragglers = std::fs::read_to_string(out.join("ranks_stragglers.csv")).unwrap();
    let steps: Vec<&str> = stragglers
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "16", "33", "50", "67", "84", "101", "118", "120", "121", "122", "123", "124", "135",
            "152", "169", "186", "203"
        ]
    );
    let ranks = std::fs::read_to_string(out.join("ranks.csv")).unwrap();
    assert!(ranks.contains(",55912589,243229662,"), "{ranks}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Ranks of each run"));
    assert!(out.join("figures/fig9_ranks_ar_plain.png").exists());
    let status = bin()
        .args(["merge", "-q", &s(&rec), "-o", &s(&merged), "--no-figures"])
        .output()
        .unwrap();
    assert_eq!(
        status.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    for f in ["ranks_runs.csv", "ranks.csv", "ranks_stragglers.csv"] {
        assert_eq!(
            std::fs::read_to_string(out.join(f)).unwrap(),
            std::fs::read_to_string(merged.join(f)).unwrap(),
            "{f}"
        );
    }
}
