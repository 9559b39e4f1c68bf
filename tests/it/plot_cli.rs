//! `torchtrace plot` end to end on the fixture traces.

use crate::common;

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

const STEP: &str = "tests/data/hta_step_based_trace.json.gz";
const NCCL: &str = "tests/data/hta_nccl_data.json.gz";

const STEMS: [&str; 6] = [
    "fig1_span_distributions",
    "fig2_gpu_span_timeline",
    "fig3_tokens_and_span_per_token",
    "fig4_hierarchy_medians",
    "fig5_cpu_vs_gpu_span",
    "fig6_gpu_busy_per_token",
];

fn torchtrace() -> Command {
    Command::cargo_bin("torchtrace").unwrap()
}

fn plot_pair(dir: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    torchtrace()
        .args(["-q", "plot", STEP, NCCL, "--context-regex", "."])
        .args(["--tokens", "100", "--tokens", "60", "-o"])
        .arg(dir)
        .args(extra)
        .assert()
}

#[test]
fn plot_pair_writes_every_png_at_the_requested_size() {
    let dir = tempfile::tempdir().unwrap();
    let out = plot_pair(dir.path(), &["--width", "960", "--height", "600"]).success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for stem in STEMS {
        let p = dir.path().join(format!("{stem}.png"));
        assert!(stdout.contains(&format!("{stem}.png")), "{stdout}");
        let (w, h, var) = common::png_info(&p);
        assert_eq!((w, h), (960, 600), "{stem}");
        assert!(var > 100.0, "{stem} looks blank (variance {var})");
        assert!(!dir.path().join(format!("{stem}.svg")).exists());
    }
}

#[test]
fn plot_svg_contains_titles_axis_labels_and_s_context() {
    let dir = tempfile::tempdir().unwrap();
    plot_pair(dir.path(), &["--format", "svg"]).success();
    let read =
        |stem: &str| std::fs::read_to_string(dir.path().join(format!("{stem}.svg"))).unwrap();
    let checks: [(&str, &[&str]); 5] = [
        (
            STEMS[0],
            &[
                "Step-context spans per trace",
                "span per step context (ms)",
                "baseline",
                "candidate",
            ],
        ),
        (
            STEMS[1],
            &[
                "GPU span of each step context",
                "step context index",
                "GPU span (ms",
            ],
        ),
        (
            STEMS[2],
            &[
                "Tokens per context and GPU span per token",
                "GPU span per token (ms)",
                "S_context = ",
            ],
        ),
        (
            STEMS[3],
            &["Median inclusive duration of the call-chain functions"],
        ),
        (
            STEMS[4],
            &[
                "CPU span against GPU span, per step context",
                "CPU span: user_annotation duration (ms",
                "GPU span (ms",
            ],
        ),
    ];
    for (stem, needles) in checks {
        let svg = read(stem);
        assert!(
            svg.starts_with("<svg width=\"1280\" height=\"800\""),
            "{stem}"
        );
        for n in needles {
            assert!(svg.contains(n), "{stem} lacks {n:?}");
        }
    }
    // These fixture traces have no vLLM chain functions: a clear empty state.
    assert!(read(STEMS[3]).contains("no hierarchy data"));
}

#[test]
fn plot_twice_gives_identical_bytes() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    plot_pair(a.path(), &["-f", "both"]).success();
    plot_pair(b.path(), &["-f", "both"]).success();
    let mut files: Vec<PathBuf> = std::fs::read_dir(a.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2 * STEMS.len());
    for f in files {
        let other = b.path().join(f.file_name().unwrap());
        assert_eq!(
            std::fs::read(&f).unwrap(),
            std::fs::read(&other).unwrap(),
            "{}",
            f.display()
        );
    }
}

#[test]
fn plot_single_trace_without_tokens() {
    let dir = tempfile::tempdir().unwrap();
    torchtrace()
        .args(["-q", "plot", STEP, "--context-regex", ".", "-o"])
        .arg(dir.path())
        .assert()
        .success();
    let svg = {
        torchtrace()
            .args([
                "-q",
                "plot",
                STEP,
                "--context-regex",
                ".",
                "-f",
                "svg",
                "-o",
            ])
            .arg(dir.path())
            .assert()
            .success();
        std::fs::read_to_string(dir.path().join("fig3_tokens_and_span_per_token.svg")).unwrap()
    };
    assert!(svg.contains("no completion-token counts"));
    for stem in STEMS {
        let (_, _, var) = common::png_info(&dir.path().join(format!("{stem}.png")));
        assert!(var > 10.0, "{stem}");
    }
}

#[test]
fn plot_missing_context_is_exit_1_but_still_draws() {
    let dir = tempfile::tempdir().unwrap();
    torchtrace()
        .args(["-q", "plot", STEP, "--context", "no_such_step", "-o"])
        .arg(dir.path())
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no_such_step"));
    assert!(dir.path().join("fig1_span_distributions.png").exists());
}

#[test]
fn plot_bad_arguments_are_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    torchtrace()
        .args(["plot", STEP, "--tokens", "1", "--tokens", "2", "-o"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--tokens given 2 times"));
    torchtrace()
        .args(["plot", "tests/data/does_not_exist.json.gz", "-o"])
        .arg(dir.path())
        .assert()
        .code(2);
    torchtrace()
        .args(["plot", STEP, "--width", "10", "-o"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("too small"));
}

/// The sample traces, when present: grouped by the workload in their run
/// summaries, AR vs MTP, hierarchy wired.
#[test]
fn plot_sample_traces_groups_by_workload() {
    let root = Path::new("sample_traces");
    let mut traces: Vec<PathBuf> = Vec::new();
    for w in ["text_ar", "text_mtp"] {
        let Ok(rd) = std::fs::read_dir(root.join(w)) else {
            return;
        };
        let mut v: Vec<PathBuf> = rd
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy().into_owned();
                n.ends_with(".pt.trace.json.gz")
                    && p.with_file_name(n.replace(".pt.trace.json.gz", ".summary.json"))
                        .exists()
            })
            .collect();
        v.sort();
        traces.extend(v);
    }
    if traces.len() != 2 {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    torchtrace()
        .args(["-q", "plot", "-f", "svg", "-o"])
        .arg(dir.path())
        .args(&traces)
        .assert()
        .success();
    let fig3 =
        std::fs::read_to_string(dir.path().join("fig3_tokens_and_span_per_token.svg")).unwrap();
    assert!(fig3.contains("text") && fig3.contains("AR") && fig3.contains("MTP"));
    assert!(fig3.contains("S_context = "));
    let fig4 = std::fs::read_to_string(dir.path().join("fig4_hierarchy_medians.svg")).unwrap();
    assert!(
        fig4.contains("proposer.propose") && fig4.contains("not called"),
        "hierarchy wired"
    );
}
