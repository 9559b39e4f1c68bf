//! Issue 38: what a newcomer trips over, run as the newcomer ran it, on
//! the sample traces.

use assert_cmd::Command;
use std::path::Path;

const AR: &str =
    "sample_traces/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz";
const MTP: &str =
    "sample_traces/text_mtp/dp0_pp0_tp0_dcp0_ep0_rank0.1795968151611149496.pt.trace.json.gz";

/// Runs the binary; (exit status, stdout, stderr).
fn tt(args: &[&str]) -> (i32, String, String) {
    let out = Command::cargo_bin("torchtrace")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `--tokens` for one of two traces: exit 2, for every subcommand that
/// takes tokens (before, `pair` mixed 5 with the summary's 68 silently).
#[test]
fn partial_tokens_are_refused_everywhere() {
    for sub in ["pair", "kernels", "iterations", "diff"] {
        let (code, out, err) = tt(&[sub, "-q", "--tokens", "5", AR, MTP]);
        assert_eq!(code, 2, "{sub}: {err}");
        assert!(out.is_empty(), "{sub}: {out}");
        assert!(err.contains("given for 1 of 2 traces"), "{sub}: {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().to_str().unwrap();
    let (code, _, err) = tt(&["plot", "-q", "--tokens", "5", AR, MTP, "-o", o]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("given for 1 of 2 traces"), "{err}");
    // Once per trace is fine: S_context from the tokens given.
    let (code, out, _) = tt(&[
        "pair", "-q", "-f", "json", "--tokens", "5", "--tokens", "5", AR, MTP,
    ]);
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["traces"][1]["completion_tokens"], 5);
}

/// An empty directory: exit 1 and why; a trace renamed inside a
/// directory is analysed (found by content).
#[test]
fn empty_batch_fails_and_renamed_trace_is_found() {
    let empty = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = out.path().join("o");
    let (code, _, err) = tt(&[
        "batch",
        "-q",
        empty.path().to_str().unwrap(),
        "-o",
        o.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no trace analysed"), "{err}");

    let runs = tempfile::tempdir().unwrap();
    std::fs::copy(AR, runs.path().join("ar_run.json.gz")).unwrap();
    let (code, _, err) = tt(&[
        "batch",
        "-q",
        runs.path().to_str().unwrap(),
        "-o",
        o.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let csv = std::fs::read_to_string(o.join("traces.csv")).unwrap();
    let row = csv
        .lines()
        .find(|l| l.starts_with("ar_run.json.gz"))
        .unwrap();
    assert!(row.contains(",worker,ok,"), "{row}");
    let report = std::fs::read_to_string(o.join("report.md")).unwrap();
    assert!(report.contains("1 file: 1 ok"), "{report}");
    assert!(report.contains("0 AR/MTP comparisons"), "{report}");
}

/// `batch -o FILE` says OUTDIR is a file; `pair DIR` suggests `batch`.
#[test]
fn messages_say_what_to_do() {
    let (code, _, err) = tt(&["batch", "-q", "sample_traces/text_ar", "-o", "README.md"]);
    assert_eq!(code, 2);
    assert!(err.contains("README.md: OUTDIR (-o) is a file"), "{err}");
    let (code, _, err) = tt(&["pair", "sample_traces/text_ar"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("torchtrace batch sample_traces/text_ar -o OUTDIR"),
        "{err}"
    );
}

/// Help: diff's usage names its two traces; the global options have their
/// own heading; one image-format flag, the old spellings hidden but kept.
#[test]
fn help_and_flags() {
    let (_, diff, _) = tt(&["diff", "--help"]);
    assert!(diff.contains("<BASELINE> <CANDIDATE>"), "{diff}");
    assert!(!diff.contains("<TRACE> <TRACE>..."), "{diff}");
    for sub in ["pair", "batch", "ranks", "plot"] {
        let (_, help, _) = tt(&[sub, "--help"]);
        let (own, global) = help.split_once("Global options (any subcommand):").unwrap();
        assert!(
            global.contains("--threads") && global.contains("--max-event-size"),
            "{sub}"
        );
        assert!(!own.contains("--max-event-size"), "{sub}");
        if sub != "pair" {
            assert!(help.contains("--image-format"), "{sub}");
            // Old spellings are hidden aliases: no option line of theirs.
            let listed = |flag: &str| help.lines().any(|l| l.trim_start().starts_with(flag));
            assert!(
                !listed("--plot-format") && (sub != "plot" || !listed("-f, --format <")),
                "{sub}"
            );
        }
    }
    assert!(Path::new(AR).exists());
}

/// Every subcommand's `--help` ends with examples: real command lines of
/// that subcommand (issue 38).
#[test]
fn every_subcommand_help_has_examples() {
    for sub in [
        "pair",
        "hierarchy",
        "kernels",
        "iterations",
        "diff",
        "ranks",
        "ops",
        "idle",
        "batch",
        "merge",
        "plot",
    ] {
        let out = Command::cargo_bin("torchtrace")
            .unwrap()
            .args([sub, "--help"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{sub} --help");
        let text = String::from_utf8_lossy(&out.stdout);
        let at = text
            .find("Examples:")
            .unwrap_or_else(|| panic!("{sub} --help has no examples"));
        let lines = text[at..]
            .lines()
            .filter(|l| l.trim_start().starts_with(&format!("torchtrace {sub} ")))
            .count();
        assert!(lines >= 1, "{sub}: no `torchtrace {sub} …` example");
    }
}

/// `batch --help` names every file a real batch writes (the samples: AR/MTP
/// matches; the TP=2 run: ranks) (issue 38).
#[test]
fn batch_help_lists_every_output() {
    let help = Command::cargo_bin("torchtrace")
        .unwrap()
        .args(["batch", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout).to_string();
    for input in ["sample_traces", "tests/data/tp2"] {
        let out = tempfile::tempdir().unwrap();
        Command::cargo_bin("torchtrace")
            .unwrap()
            .args(["-q", "batch", input, "-o"])
            .arg(out.path())
            .assert()
            .success();
        for e in std::fs::read_dir(out.path()).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().to_string();
            let stem = name.split('.').next().unwrap().to_string();
            assert!(
                help.contains(&name)
                    || help.contains(&format!("{stem}.csv/.md"))
                    || name == "figures",
                "batch --help does not name {name} ({input})"
            );
        }
        for e in std::fs::read_dir(out.path().join("figures")).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().to_string();
            // fig1 … fig6 is a range; every other figure by its number.
            let fig = name.split('_').next().unwrap();
            let n: u32 = fig[3..].trim_end_matches('b').parse().unwrap();
            assert!(
                (1..=6).contains(&n) && help.contains("fig1 … fig6")
                    || help.contains(&format!("{fig} "))
                    || help.contains(&format!("{fig},"))
                    || help.contains(&format!("{fig}_")),
                "batch --help does not name figure {name}"
            );
        }
    }
}

/// `ranks` with one rank's trace cut short: the intact rank keeps its own
/// collectives (2 592 on TP=2 rank 0), the broken one is marked incomplete,
/// and the matched count (what the waits are over) is given apart (issue 38).
#[test]
fn ranks_keeps_the_intact_ranks_figures() {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tp2/ar_plain");
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".pt.trace.json.gz") {
            continue;
        }
        let bytes = std::fs::read(&p).unwrap();
        let keep = if name.contains("rank1") {
            bytes.len() / 2
        } else {
            bytes.len()
        };
        std::fs::write(dir.path().join(&name), &bytes[..keep]).unwrap();
    }
    let out = Command::cargo_bin("torchtrace")
        .unwrap()
        .args(["-q", "ranks", "-f", "json"])
        .arg(dir.path())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let text = v.to_string();
    let ranks = find_ranks(&v).unwrap_or_else(|| panic!("no rank rows in {text:.400}"));
    let r0 = ranks.iter().find(|r| r["rank"] == 0).unwrap();
    let r1 = ranks.iter().find(|r| r["rank"] == 1).unwrap();
    assert_eq!(r0["collectives"], 2592);
    assert_eq!(r0["complete"], true);
    assert_eq!(r1["complete"], false);
    let m = r0["collectives_matched"].as_u64().unwrap();
    assert_eq!(r1["collectives_matched"].as_u64().unwrap(), m);
    assert!(m < 2592 && m <= r1["collectives"].as_u64().unwrap());
}

/// The first array of objects with a "rank" and a "complete" key (the rank rows).
fn find_ranks(v: &serde_json::Value) -> Option<&Vec<serde_json::Value>> {
    match v {
        serde_json::Value::Array(a) => {
            if a.first()
                .is_some_and(|x| x.get("rank").is_some() && x.get("complete").is_some())
            {
                return Some(a);
            }
            a.iter().find_map(find_ranks)
        }
        serde_json::Value::Object(m) => m.values().find_map(find_ranks),
        _ => None,
    }
}

/// Issue 60: the batch report's idle and wall per token are `iterations`'
/// (the same closed decode iterations and sums: one quantity, one value),
/// the idle device level, never more than the wall per token; before, AR's
/// "idle per token" was the whole trace's per-stream sum, 26 407 µs
/// against 657.5 µs of wall.
#[test]
fn batch_idle_per_token_is_the_decode_iterations() {
    if !Path::new(AR).exists() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let (code, _, err) = tt(&[
        "-q",
        "batch",
        "sample_traces/text_ar",
        "sample_traces/text_mtp",
        "--no-figures",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, json, err) = tt(&["iterations", "-f", "json", AR, MTP]);
    assert_eq!(code, 0, "{err}");
    let it: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut rd = csv::Reader::from_path(out.join("idle_decode.csv")).unwrap();
    let heads = rd.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 2);
    let col = |r: &csv::StringRecord, k: &str| -> f64 {
        let i = heads.iter().position(|h| h == k).unwrap();
        r[i].parse().unwrap()
    };
    for (r, t) in rows.iter().zip(it["traces"].as_array().unwrap()) {
        let pt = &t["per_token"];
        for (c, k) in [
            ("wall_per_token_ms", "wall_ms"),
            ("gpu_busy_per_token_ms", "gpu_busy_ms"),
            ("gpu_idle_per_token_ms", "gpu_idle_ms"),
        ] {
            // CSV floats carry 15 significant digits (report::machine_float).
            let want: f64 = torchtrace::report::machine_float(pt[k].as_f64().unwrap())
                .parse()
                .unwrap();
            assert_eq!(col(r, c), want, "{c}");
        }
        assert!(col(r, "gpu_idle_per_token_ms") <= col(r, "wall_per_token_ms"));
        assert!(
            col(r, "gpu_idle_per_iteration_median_us") <= col(r, "wall_per_iteration_median_us")
        );
        assert_eq!(
            col(r, "decode_iterations_closed"),
            t["iterations_closed"].as_f64().unwrap()
        );
    }
    // The real figures: AR 63 closed iterations, idle 233.8 µs of 657.5 µs
    // per token (median 243.0 µs per iteration); MTP 308.2 of 575.3.
    assert_eq!(col(&rows[0], "gpu_idle_per_token_ms"), 0.233828661064426);
    assert_eq!(col(&rows[1], "gpu_idle_per_token_ms"), 0.308175334685598);
    assert_eq!(col(&rows[0], "gpu_idle_per_iteration_median_us"), 243.01);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains(
        "| text | AR | 63 | 1.062 | 657.5 | 175.1 | 233.8 | 698.6 | 678.6 | 248.4 | 243.0 |"
    ));
    assert!(report.contains("| text | MTP | 29 | 2.267 | 575.3 | 148.2 | 308.2 |"));
    // Prefill steps and the wait between requests, apart: AR's 5 other
    // steps hold 863.633 ms of wall.
    assert!(report.contains("| text | AR | 5 | 863.633 |"), "{report}");
    // The report opens with the answer: S_wall, S_context, tokens per
    // iteration and where MTP's wall time per token goes.
    let answer = report.find("## The answer").unwrap();
    assert!(answer < report.find("## Definitions").unwrap());
    assert!(report.contains(
        "- **text**: MTP takes 575.3 µs of wall time per generated token, AR 657.5 µs: S_wall = 1.14× (MTP faster end to end). Per step context's GPU span, S_context = 2.51×; MTP makes 2.27 tokens per iteration, AR 1.06 (P = 2.13×)"
    ));
    assert!(report.contains("GPU idle 308.2, none of its GPU work in flight 118.9"));
    // The Files: line links every file batch wrote.
    let files = report.lines().find(|l| l.starts_with("Files: ")).unwrap();
    for e in std::fs::read_dir(&out).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        if name != "report.md" {
            assert!(files.contains(&format!("]({name})")), "{name} not linked");
        }
    }
}

/// Issue 60: `export DIR/*.pt.trace.json.gz` skips the frontend's
/// `…async_llm…` trace as `batch` does, with a note naming it;
/// `--all-traces` exports it (1 841 host ops more); only frontend traces
/// named is an error.
#[test]
fn export_skips_frontend_traces_like_batch() {
    const FRONT: &str =
        "sample_traces/text_mtp/vm_439.async_llm.1795968155950133233.pt.trace.json.gz";
    if !Path::new(FRONT).exists() {
        return;
    }
    let ops_rows = |args: &[&str]| -> (String, usize, u64) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_str().unwrap().to_string();
        let mut a: Vec<&str> = vec!["export", "--tables", "ops", "-f", "json", "-o", &dir];
        a.extend_from_slice(args);
        let (code, out, err) = tt(&a);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let n = v["files"][0]["rows"].as_u64().unwrap();
        let traces = v["traces"].as_array().unwrap().len();
        (err, traces, n)
    };
    let (err, traces, workers) = ops_rows(&[MTP, FRONT]);
    assert_eq!(traces, 1);
    assert!(
        err.contains(&format!("{FRONT}: skipped, a frontend file")),
        "{err}"
    );
    let (_, _, only) = ops_rows(&[MTP]);
    assert_eq!((workers, only), (12895, 12895));
    let (err, traces, all) = ops_rows(&["--all-traces", MTP, FRONT]);
    assert!(!err.contains("skipped"), "{err}");
    assert_eq!(traces, 2);
    assert_eq!(all - only, 1841);
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, err) = tt(&["export", "-o", tmp.path().to_str().unwrap(), FRONT]);
    assert_eq!(code, 2);
    assert!(err.contains("no worker trace among the TRACEs"), "{err}");
}
