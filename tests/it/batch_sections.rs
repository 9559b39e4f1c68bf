//! The analyses' own batch sections (the registry hook): `iterations` and
//! `diff` over the sample campaign write their CSVs, report sections and
//! figures 7 and 8, with the figures of the independent references
//! (`scripts/reference_iterations.py`, `scripts/reference_diff.py`, frozen
//! in `tests/data/expected/`) and of the subcommands.

use crate::common;

use crate::common::{close, expected};
use serde_json::Value;
use std::collections::HashMap;
use std::fs;
use std::path::Path;

/// `batch sample_traces` into `out` (SVG figures); its report.
fn batch(out: &Path) -> String {
    let o = common::bin()
        .args([
            "batch",
            "-q",
            "sample_traces",
            "--image-format",
            "svg",
            "-o",
        ])
        .arg(out)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    fs::read_to_string(out.join("report.md")).unwrap()
}

/// A CSV's rows as header → value maps.
fn csv_rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut rd = csv::Reader::from_path(path).unwrap();
    let heads: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    rd.records()
        .map(|r| {
            let r = r.unwrap();
            heads
                .iter()
                .cloned()
                .zip(r.iter().map(String::from))
                .collect()
        })
        .collect()
}

fn of<'a>(rows: &'a [HashMap<String, String>], workload: &str) -> &'a HashMap<String, String> {
    rows.iter()
        .find(|r| r["workload"] == workload)
        .unwrap_or_else(|| panic!("no row of {workload}"))
}

fn num(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or(Value::Null)
}

#[test]
fn sections_files_and_figures_with_the_references_figures() {
    if !common::exists("sample_traces") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let report = batch(&out);

    // iterations.csv: one row per workload, equal to the reference.
    let it = csv_rows(&out.join("iterations.csv"));
    assert_eq!(it.len(), 4);
    for w in ["reasoning", "text", "text_graphs", "tool_calling"] {
        let want = expected(&format!("iterations_sample_{w}.json"));
        let row = of(&it, w);
        for k in [
            "token_progress_ratio",
            "s_wall",
            "s_busy",
            "s_context_correlation",
        ] {
            close(&num(&row[k]), &want["comparison"][k], &format!("{w} {k}"));
        }
        for (side, t) in [("ar", &want["traces"][0]), ("mtp", &want["traces"][1])] {
            let pt = &t["per_token"];
            for (col, key) in [
                ("wall_per_token_ms", "wall_ms"),
                ("gpu_busy_per_token_ms", "gpu_busy_ms"),
            ] {
                close(&num(&row[&format!("{side}_{col}")]), &pt[key], w);
            }
            for p in ["forward", "sample", "draft", "other"] {
                close(
                    &num(&row[&format!("{side}_{p}_busy_per_token_ms")]),
                    &pt["phases"][p]["gpu_busy_ms"],
                    &format!("{w} {side} {p}"),
                );
            }
            assert_eq!(row[&format!("{side}_contexts")], t["contexts"].to_string());
            close(
                &num(&row[&format!("{side}_repeating_cadence_ms_median")]),
                &t["graphs"]["repeating"]["cadence_ms_median"],
                w,
            );
            // The exact sum over closed iterations: the reference's rows.
            let closed_wall: i64 = t["rows"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|r| r["wall_ns"].as_i64())
                .sum();
            assert_eq!(
                row[&format!("{side}_closed_wall_ns")],
                closed_wall.to_string()
            );
        }
        // The decomposition adds up: Σ g = P − S_busy.
        let g: f64 = ["forward", "sample", "draft", "other"]
            .iter()
            .map(|p| row[&format!("{p}_gives_back")].parse::<f64>().unwrap())
            .sum();
        let p: f64 = row["token_progress_ratio"].parse().unwrap();
        let s: f64 = row["s_busy"].parse().unwrap();
        assert!((g - (p - s)).abs() < 1e-12, "{w}: {g} vs {}", p - s);
    }
    let text = of(&it, "text");
    assert_eq!(text["s_wall"], "1.14291351691487"); // 15 significant digits (CSV)
    assert_eq!(text["ar_closed_wall_ns"], "44013436");

    // diff.csv: the summary's exact units equal the reference's.
    let d = csv_rows(&out.join("diff.csv"));
    assert_eq!(d.len(), 4);
    let want = expected("diff_text_steps.json");
    let row = of(&d, "text");
    for k in [
        "denominator",
        "total_units",
        "call_count_units",
        "duration_units",
        "added_units",
        "removed_units",
    ] {
        assert_eq!(row[k], want["summary"][k].to_string(), "text {k}");
    }
    assert_eq!(row["total_units"], "-406297144");
    assert_eq!(
        row["baseline_gpu_time_ns"],
        want["baseline"]["total_ns"].to_string()
    );
    for r in &d {
        let u = |k: &str| r[k].parse::<i128>().unwrap();
        assert_eq!(
            u("call_count_units") + u("duration_units") + u("added_units") - u("removed_units"),
            u("total_units"),
            "{}",
            r["workload"]
        );
    }
    // Families add up to the total exactly, per workload.
    let fam = csv_rows(&out.join("diff_families.csv"));
    for r in &d {
        let sum: i128 = fam
            .iter()
            .filter(|f| f["workload"] == r["workload"])
            .map(|f| f["delta_units"].parse::<i128>().unwrap())
            .sum();
        assert_eq!(sum.to_string(), r["total_units"], "{}", r["workload"]);
    }
    // Every kernel of the reference, with its exact Δ.
    let kernels = csv_rows(&out.join("diff_kernels.csv"));
    let text_kernels: Vec<_> = kernels.iter().filter(|k| k["workload"] == "text").collect();
    let ref_kernels = want["kernels"].as_array().unwrap();
    assert_eq!(text_kernels.len(), ref_kernels.len());
    for k in ref_kernels {
        let name = k["name"].as_str().unwrap();
        let got = text_kernels
            .iter()
            .find(|r| r["name"] == name && r["kind"] == k["kind"].as_str().unwrap())
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(got["status"], k["status"].as_str().unwrap(), "{name}");
        let t = |side: &str| k[side]["time_ns"].as_i64().unwrap_or(0).to_string();
        assert_eq!(got["baseline_time_ns"], t("baseline"), "{name}");
        assert_eq!(got["candidate_time_ns"], t("candidate"), "{name}");
    }

    // traces.csv: each analysis's own columns (the registry hook).
    let traces = csv_rows(&out.join("traces.csv"));
    let ar = traces
        .iter()
        .find(|t| t["path"].starts_with("text_ar/") && t["kind"] == "worker")
        .unwrap();
    assert_eq!(
        ar["iterations_wall_per_token_ms"],
        of(&it, "text")["ar_wall_per_token_ms"]
    );
    assert_eq!(ar["iterations_contexts"], "64");
    assert_eq!(ar["diff_gpu_time_ns"], "11041846");
    assert_eq!(ar["diff_activities"], "3136");
    let readme = traces.iter().find(|t| t["path"] == "README.md").unwrap();
    assert_eq!(readme["iterations_wall_per_token_ms"], "");

    // The report's sections link their files; the figures are drawn.
    for s in [
        "## Decode iterations per workload",
        "### Where the token progress goes, per workload",
        "### Per token, MTP against AR (Table 5",
        "## What changed (per token): AR → MTP per workload",
        "### What changed by kernel family",
        "[iterations.csv](iterations.csv)",
        "[diff.csv](diff.csv)",
        "[diff_families.csv](diff_families.csv)",
        "[diff_kernels.csv](diff_kernels.csv)",
        "(figures/fig7_iterations_per_token.svg)",
        "(figures/fig8_gpu_time_by_family.svg)",
        "(figures/fig7b_graph_cadence.svg)",
    ] {
        assert!(report.contains(s), "report lacks {s}");
    }
    let fig7 = fs::read_to_string(out.join("figures/fig7_iterations_per_token.svg")).unwrap();
    assert!(fig7.contains("S_wall = 1.14×") && fig7.contains("cadence 0.688 ms"));
    // 7b: the cadence's distribution; its medians are the table's.
    let fig7b = fs::read_to_string(out.join("figures/fig7b_graph_cadence.svg")).unwrap();
    assert!(
        fig7b.contains("\n0.688\n") && fig7b.contains("\n1.310\n") && fig7b.contains("+3 above")
    );
    let fig8 = fs::read_to_string(out.join("figures/fig8_gpu_time_by_family.svg")).unwrap();
    assert!(fig8.contains("GEMM/GEMV") && fig8.contains("Δ = -0.088 ms/token"));

    common::golden(
        "batch_sample.iterations.csv",
        &fs::read_to_string(out.join("iterations.csv")).unwrap(),
    );
    common::golden(
        "batch_sample.diff.csv",
        &fs::read_to_string(out.join("diff.csv")).unwrap(),
    );
}

/// Without figures, the sections are still written (and name no figure).
#[test]
fn sections_without_figures() {
    if !common::exists("sample_traces") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = common::bin()
        .args([
            "batch",
            "-q",
            "sample_traces/text_ar",
            "sample_traces/text_mtp",
            "--no-figures",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let report = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("## What changed (per token)") && !report.contains("fig7"));
    assert_eq!(csv_rows(&out.join("iterations.csv")).len(), 1);
}
