//! `torchtrace hierarchy` end to end: every count and statistic equals the
//! independent reference (scripts/reference.py), frozen in
//! tests/data/expected/hierarchy_*.json by the commands listed in
//! tests/data/expected/COMMANDS.md. The commands are read from that file, so
//! a newly frozen expectation is checked without editing this test.

use crate::common;

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A `reference.py hierarchy` command from COMMANDS.md: its arguments and
/// the expected-output file it writes.
#[derive(Debug)]
struct Case {
    args: Vec<String>,
    expected: String,
}

/// Splits a shell line: whitespace-separated words, single quotes kept literal.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quoted = false;
    for ch in line.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(Path::new(ROOT).join("tests/data/expected/COMMANDS.md"))
        .expect("COMMANDS.md");
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("python3 scripts/reference.py hierarchy ") else {
            continue;
        };
        let Some((cmd, file)) = rest.split_once(" > ") else {
            continue;
        };
        if cmd.contains('<') {
            continue; // a template line
        }
        let expected = file.trim().to_string();
        if out.iter().any(|c: &Case| c.expected == expected) {
            continue;
        }
        out.push(Case {
            args: shell_words(cmd),
            expected,
        });
    }
    out
}

fn torchtrace(args: &[String], threads: &str) -> (i32, String, String) {
    let o = Command::cargo_bin("torchtrace")
        .unwrap()
        .current_dir(ROOT)
        .args(["-j", threads, "hierarchy"])
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn close(g: &Value, w: &Value) -> bool {
    match (g.as_f64(), w.as_f64()) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9,
        _ => g == w,
    }
}

/// Compares the reference's keys (every one of them) with ours.
fn compare(got: &Value, want: &Value, what: &str) {
    let (gt, wt) = (
        got["traces"].as_array().unwrap(),
        want["traces"].as_array().unwrap(),
    );
    assert_eq!(gt.len(), wt.len(), "{what}: traces");
    for (g, w) in gt.iter().zip(wt) {
        assert_eq!(g["path"], w["path"], "{what}");
        let (gc, wc) = (
            g["chains"].as_array().unwrap(),
            w["chains"].as_array().unwrap(),
        );
        assert_eq!(gc.len(), wc.len(), "{what}: chains");
        for (g, w) in gc.iter().zip(wc) {
            assert_eq!(g["chain"], w["chain"], "{what}");
            for part in ["links", "functions"] {
                let (ga, wa) = (g[part].as_array().unwrap(), w[part].as_array().unwrap());
                assert_eq!(ga.len(), wa.len(), "{what}: {part}");
                for (gi, wi) in ga.iter().zip(wa) {
                    for (k, wv) in wi.as_object().unwrap() {
                        assert!(
                            close(&gi[k], wv),
                            "{what}: {} {part}.{k}: got {} want {}",
                            w["chain"],
                            gi[k],
                            wv
                        );
                    }
                }
            }
        }
    }
}

fn has_uncontained(v: &Value) -> bool {
    v["traces"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["chains"].as_array().unwrap())
        .flat_map(|c| c["links"].as_array().unwrap())
        .any(|l| l["uncontained"].as_u64().unwrap() > 0)
}

/// A chain none of whose functions occurs in a trace checked nothing:
/// exit 1, never a vacuous "holds" (the default vLLM chain on another
/// engine's trace).
fn checked_nothing(v: &Value) -> bool {
    v["traces"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["chains"].as_array().unwrap())
        .map(|c| c["functions"].as_array().unwrap())
        .any(|f| !f.is_empty() && f.iter().all(|f| f["calls"].as_u64() == Some(0)))
}

#[test]
fn commands_md_lists_the_hierarchy_expectations() {
    let cs = cases();
    for must in [
        "hierarchy_b200_eager.json",
        "hierarchy_b200_eager_default.json",
        "hierarchy_mtia_rank_0.json",
        "hierarchy_xdit_sd_3.5.json",
        "hierarchy_xdit_sd_3.5_any_thread.json",
    ] {
        assert!(
            cs.iter().any(|c| c.expected.ends_with(must)),
            "{must} not in COMMANDS.md: {cs:?}"
        );
    }
    assert_eq!(
        shell_words("a 'x>y z' --any-thread"),
        vec!["a", "x>y z", "--any-thread"]
    );
}

/// Every frozen hierarchy expectation, in JSON (cases run side by side:
/// debug builds read the larger fixtures slowly).
#[test]
fn figures_equal_the_reference() {
    let handles: Vec<_> = cases()
        .into_iter()
        .map(|case| {
            std::thread::spawn(move || {
                let want: Value = serde_json::from_str(
                    &std::fs::read_to_string(Path::new(ROOT).join(&case.expected)).unwrap(),
                )
                .unwrap();
                let mut args = case.args.clone();
                args.extend(["--format".into(), "json".into()]);
                let (code, out, err) = torchtrace(&args, "1");
                let got: Value = serde_json::from_str(&out)
                    .unwrap_or_else(|e| panic!("{}: {e}\n{out}\n{err}", case.expected));
                compare(&got, &want, &case.expected);
                let problem = has_uncontained(&want) || checked_nothing(&want);
                let expect_code = if problem { 1 } else { 0 };
                assert_eq!(code, expect_code, "{}: exit status; {err}", case.expected);
            })
        })
        .collect();
    let n = handles.len();
    for h in handles {
        h.join().unwrap();
    }
    assert!(n >= 5, "only {n} expectations checked");
}

const B200: &str = "tests/data/tracelens_b200_eager_trace.json.gz";
const XDIT: &str = "tests/data/tracelens_xdit_sd_3.5.json.gz";

/// Several files are read in parallel with -j 2: the output must not
/// depend on it.
#[test]
fn parallel_reading_gives_identical_output() {
    let args: Vec<String> = [
        B200,
        XDIT,
        "--chain",
        "forward>aten::empty",
        "--chain",
        "_bootstrap>_bootstrap_inner>run",
        "-f",
        "json",
    ]
    .map(String::from)
    .to_vec();
    let one = torchtrace(&args, "1");
    let two = torchtrace(&args, "2");
    assert_eq!(one.0, 1, "{}", one.2);
    assert_eq!((one.0, &one.1), (two.0, &two.1));
    let v: Value = serde_json::from_str(&one.1).unwrap();
    assert_eq!(v["traces"][0]["path"], B200);
    assert_eq!(v["traces"][1]["path"], XDIT);
    assert!(v["comparison"]["functions"].is_array());
}

#[test]
fn exit_status_follows_containment() {
    // 2 of 796 aten::empty lie outside every forward: exit 1.
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [B200, "--chain", "forward>aten::empty", "-f", "json"]
            .map(String::from)
            .to_vec();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let (code, out, _) = torchtrace(&args(&[]), "1");
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    let link = &v["traces"][0]["chains"][0]["links"][0];
    assert_eq!(
        (&link["children"], &link["uncontained"], &link["holds"]),
        (&Value::from(796), &Value::from(2), &Value::from(false))
    );
    let ex = link["examples"].as_array().unwrap();
    assert_eq!(ex.len(), 2);
    assert_eq!(ex[0]["name"], "aten::empty");
    assert!(ex[0]["ts"].as_str().unwrap().contains('.'));
    assert!(ex[0]["lane"].as_str().unwrap().contains('/'));
    let (_, out, _) = torchtrace(&args(&["--examples", "1"]), "1");
    let v: Value = serde_json::from_str(&out).unwrap();
    let ex = &v["traces"][0]["chains"][0]["links"][0]["examples"];
    assert_eq!(ex.as_array().unwrap().len(), 1);
    // A chain that holds: exit 0.
    let (code, _, _) = torchtrace(
        &[B200, "--chain", "fused_add_rms_norm>_C::fused_add_rms_norm"].map(String::from),
        "1",
    );
    assert_eq!(code, 0);
}

#[test]
fn human_formats_name_the_functions() {
    for fmt in ["table", "csv", "markdown"] {
        let (code, out, err) = torchtrace(
            &[
                B200,
                "--chain",
                "forward>aten::empty",
                "--chain",
                "re:^aten::(addmm|mm)$>aten::empty",
                "--format",
                fmt,
            ]
            .map(String::from),
            "1",
        );
        assert_eq!(code, 1, "{fmt}: {err}");
        for name in ["forward", "aten::empty", "re:^aten::(addmm"] {
            assert!(out.contains(name), "{fmt}: {name} missing:\n{out}");
        }
    }
}

#[test]
fn bad_arguments_exit_2() {
    let (code, _, err) = torchtrace(&[B200.into(), "--chain".into(), "a>re:(".into()], "1");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("regex"), "{err}");
    let (code, _, _) = torchtrace(&["tests/data/no_such_file.json".into()], "1");
    assert_eq!(code, 2);
}

/// Sample vLLM-like traces: AR has no drafting (no children, exit 0); MTP
/// holds on every link; two traces give median ratios MTP / AR.
#[test]
fn sample_traces_ar_vs_mtp() {
    let pick = |dir: &str| -> Option<String> {
        let d = Path::new(ROOT).join("sample_traces").join(dir);
        let mut v: Vec<String> = std::fs::read_dir(&d)
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("dp0_") && n.ends_with(".pt.trace.json.gz"))
            .collect();
        v.sort();
        v.first().map(|n| format!("sample_traces/{dir}/{n}"))
    };
    let (Some(ar), Some(mtp)) = (pick("text_ar"), pick("text_mtp")) else {
        eprintln!("sample traces not present: skipped");
        return;
    };
    let (code, out, err) = torchtrace(&[ar, mtp, "-f".into(), "json".into()], "2");
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let ar = &v["traces"][0]["chains"][0];
    let mtp = &v["traces"][1]["chains"][0];
    for l in ar["links"].as_array().unwrap() {
        assert_eq!(l["children"], 0);
    }
    for l in mtp["links"].as_array().unwrap() {
        assert!(l["children"].as_u64().unwrap() > 0);
        assert_eq!(l["children"], l["contained"]);
    }
    // Step contexts are present in vLLM traces: calls per context is a number.
    assert!(v["traces"][1]["contexts"].as_u64().unwrap() > 0);
    assert!(mtp["functions"][0]["calls_per_context"].is_f64());
    let cmp = &v["comparison"];
    assert_eq!(cmp["functions"][0]["name"], "sample_tokens");
    let r = cmp["functions"][0]["median_ratio"].as_f64().unwrap();
    let want = mtp["functions"][0]["median_ms"].as_f64().unwrap()
        / ar["functions"][0]["median_ms"].as_f64().unwrap();
    assert!((r - want).abs() < 1e-9, "{r} vs {want}");
    // The AR trace has no drafting: null statistics, null ratio.
    assert!(cmp["functions"][1]["median_ratio"].is_null());
}

/// The hierarchy tables of the sample text pair, in every human format and
/// CSV, as golden files (`TORCHTRACE_BLESS=1` rewrites them).
#[test]
fn golden_tables() {
    let (ar, mtp) = (common::sample("text_ar"), common::sample("text_mtp"));
    for (fmt, name) in [
        ("table", "hierarchy_text.table.txt"),
        ("markdown", "hierarchy_text.md"),
        ("csv", "hierarchy_text.csv"),
    ] {
        let out = common::bin()
            .args(["hierarchy", "-q", "-f", fmt, &ar, &mtp])
            .output()
            .unwrap();
        assert!(out.status.success());
        common::golden(name, &String::from_utf8(out.stdout).unwrap());
    }
}

/// `--chain` with names that occur nowhere: a problem (exit 1) that says
/// the chain checked nothing, not zeros and "holds: yes".
#[test]
fn a_chain_that_occurs_nowhere_is_exit_1() {
    let (code, _, err) = torchtrace(
        &[
            "--chain".into(),
            "foo>bar".into(),
            "sample_traces/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz"
                .into(),
        ],
        "1",
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("none of foo > bar occurs in the trace: the chain checked nothing"),
        "{err}"
    );
}
