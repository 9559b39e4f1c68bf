//! Map and merge: `batch --shard K/N --records F` on every shard, then
//! `merge`, writes what `batch` writes in one go, byte for byte; missing,
//! cut-short and corrupt pieces become failed rows, never missing ones.

use assert_cmd::Command;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample_traces");

fn torchtrace() -> Command {
    Command::cargo_bin("torchtrace").unwrap()
}

/// Runs torchtrace in `dir`; (exit code, stdout, stderr).
fn run(dir: &Path, args: &[&str]) -> (i32, Vec<u8>, String) {
    let o = torchtrace().current_dir(dir).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        o.stdout,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `batch campaign --shard K/N --records FILE` in `dir`.
fn shard(dir: &Path, k: usize, n: usize, file: &str) -> (i32, Vec<u8>, String) {
    let shard = format!("{k}/{n}");
    run(
        dir,
        &[
            "-q",
            "batch",
            "campaign",
            "--shard",
            &shard,
            "--records",
            file,
        ],
    )
}

/// Every file under `dir`: relative name → bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// A copy of the sample campaign in a temporary directory (so that
/// labels are the same whatever the test's working directory).
fn campaign() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("campaign");
    for (rel, bytes) in tree(Path::new(SAMPLES)) {
        let p = dir.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, bytes).unwrap();
    }
    (tmp, dir)
}

/// The rows `batch` lists for a directory: one per file, but one per
/// `capture_traces/` folder (issue 57: read with the traces beside it).
fn rows_listed(dir: &Path) -> usize {
    let files = tree(dir);
    let folders: std::collections::BTreeSet<&str> = files
        .keys()
        .filter_map(|k| k.split_once("/capture_traces/").map(|(d, _)| d))
        .collect();
    files
        .keys()
        .filter(|k| !k.contains("/capture_traces/"))
        .count()
        + folders.len()
}

/// vLLM's frontend (AsyncLLM) traces sit beside the worker traces.
fn is_frontend(p: &Path) -> bool {
    p.to_string_lossy().contains(".async_llm.")
}

fn assert_same_tree(a: &Path, b: &Path) {
    let (ta, tb) = (tree(a), tree(b));
    assert_eq!(
        ta.keys().collect::<Vec<_>>(),
        tb.keys().collect::<Vec<_>>(),
        "same files"
    );
    for (name, bytes) in &ta {
        assert!(bytes == &tb[name], "{name} differs");
    }
}

/// The rows of a records file: (path, status).
fn rows(records: &Path) -> Vec<(String, String)> {
    fs::read_to_string(records)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let f = v.get("file")?;
            Some((
                f["path"].as_str().unwrap().to_string(),
                f["status"].as_str().unwrap().to_string(),
            ))
        })
        .collect()
}

#[test]
fn shards_then_merge_write_what_batch_writes() {
    let (tmp, _) = campaign();
    let dir = tmp.path();
    let (code, full_stdout, _) = run(dir, &["-q", "batch", "campaign", "-o", "full"]);
    assert_eq!(code, 0);
    let all_rows = {
        run(dir, &["-q", "batch", "campaign", "--records", "all.jsonl"]);
        rows(&dir.join("all.jsonl"))
    };
    let files_in_campaign = rows_listed(&dir.join("campaign"));
    assert_eq!(all_rows.len(), files_in_campaign, "every file is a row");
    for n in 1..=3 {
        let mut files = Vec::new();
        let mut seen = Vec::new();
        for k in 1..=n {
            let f = format!("s{k}of{n}.jsonl");
            let (code, stdout, err) = shard(dir, k, n, &f);
            assert_eq!(code, 0, "{err}");
            assert!(stdout.is_empty(), "records only: nothing on stdout");
            seen.extend(rows(&dir.join(&f)));
            files.push(f);
        }
        // Each file in exactly one shard.
        seen.sort();
        let mut want = all_rows.clone();
        want.sort();
        assert_eq!(seen, want, "{n} shards cover every file once");
        let out = format!("merged{n}");
        let mut args = vec!["-q", "merge"];
        args.extend(files.iter().map(String::as_str));
        args.extend(["-o", &out]);
        let (code, stdout, err) = run(dir, &args);
        assert_eq!(code, 0, "{err}");
        assert_eq!(stdout, full_stdout, "same stdout, {n} shards");
        assert_same_tree(&dir.join("full"), &dir.join(&out));
    }
}

#[test]
fn every_shard_gets_work_and_the_split_is_stable() {
    let (tmp, _) = campaign();
    let dir = tmp.path();
    let mut first = Vec::new();
    for pass in 0..2 {
        let mut split = Vec::new();
        for k in 1..=3 {
            let f = format!("p{pass}s{k}.jsonl");
            shard(dir, k, 3, &f);
            let r = rows(&dir.join(&f));
            let traces = r.iter().filter(|(p, _)| p.contains("rank0"));
            assert!(traces.count() >= 1, "seven traces over three shards");
            split.push(r);
        }
        if pass == 0 {
            first = split;
        } else {
            assert_eq!(split, first, "the same inputs give the same shards");
        }
    }
}

#[test]
fn missing_and_cut_short_shards_are_failed_rows_not_missing_ones() {
    let (tmp, _) = campaign();
    let dir = tmp.path();
    for k in 1..=3 {
        let f = format!("s{k}.jsonl");
        shard(dir, k, 3, &f);
    }
    // Shard 2 missing.
    let (code, _, err) = run(dir, &["-q", "merge", "s1.jsonl", "s3.jsonl", "-o", "part"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("the records of shard 2/3 were not given"),
        "{err}"
    );
    let n = rows_listed(&dir.join("campaign"));
    let csv = fs::read_to_string(dir.join("part/traces.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        n + 1,
        "header + every file of the campaign"
    );
    let not_given = csv.matches("shard 2/3 were not given").count();
    assert!(not_given >= 1);
    assert!(
        err.contains(&format!("{not_given} of ")),
        "every unread trace counts as failed: {err}"
    );
    // Shard 2 cut in the middle of its last line: the rows before are kept.
    let s2 = fs::read(dir.join("s2.jsonl")).unwrap();
    let lines: Vec<&[u8]> = s2.split_inclusive(|&b| b == b'\n').collect();
    let keep: Vec<u8> = lines[..2].concat(); // header and one row
    let mut cut = keep.clone();
    cut.extend_from_slice(&lines[2][..lines[2].len() / 2]);
    fs::write(dir.join("s2cut.jsonl"), &cut).unwrap();
    let (code, _, err) = run(
        dir,
        &[
            "-q",
            "merge",
            "s1.jsonl",
            "s2cut.jsonl",
            "s3.jsonl",
            "-o",
            "cut",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("the records of shard 2/3 end early (the shard did not finish)"),
        "{err}"
    );
    let csv = fs::read_to_string(dir.join("cut/traces.csv")).unwrap();
    assert_eq!(csv.lines().count(), n + 1);
    // Skipped files (README.md, capture_traces/, …) are known from the
    // plan: listed as skipped, not as unread.
    let unread = rows(&dir.join("s2.jsonl"))[1..]
        .iter()
        .filter(|(_, status)| status != "skipped")
        .count();
    assert_eq!(
        csv.matches("end early").count(),
        unread,
        "the one row read is kept"
    );
    // A shard twice, or another schema: errors (exit 2) naming the file.
    let (code, _, err) = run(dir, &["merge", "s1.jsonl", "s1.jsonl", "-o", "x"]);
    assert_eq!(code, 2);
    assert!(err.contains("shard 1/3 given twice"), "{err}");
    let text = fs::read_to_string(dir.join("s1.jsonl")).unwrap();
    fs::write(
        dir.join("v2.jsonl"),
        text.replacen("\"schema\":2,", "\"schema\":1,", 1),
    )
    .unwrap();
    let (code, _, err) = run(dir, &["merge", "v2.jsonl", "-o", "x"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("v2.jsonl: records of schema 1; this torchtrace reads schema 2"),
        "{err}"
    );
}

#[test]
fn a_corrupt_trace_is_one_failed_record() {
    let (tmp, camp) = campaign();
    let dir = tmp.path();
    // A worker trace cut in the middle of its gzip stream.
    let src = fs::read_dir(camp.join("text_ar"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("pt.trace.json.gz") && !is_frontend(p))
        .unwrap();
    let bytes = fs::read(&src).unwrap();
    fs::create_dir_all(camp.join("broken")).unwrap();
    fs::write(
        camp.join("broken/x.pt.trace.json.gz"),
        &bytes[..bytes.len() / 3],
    )
    .unwrap();
    let mut failed = Vec::new();
    for k in 1..=2 {
        let f = format!("s{k}.jsonl");
        let (code, _, _) = shard(dir, k, 2, &f);
        let bad: Vec<_> = rows(&dir.join(&f))
            .into_iter()
            .filter(|(_, s)| s == "error")
            .collect();
        assert_eq!(code, if bad.is_empty() { 0 } else { 1 });
        failed.extend(bad);
    }
    assert_eq!(
        failed,
        vec![("broken/x.pt.trace.json.gz".into(), "error".into())]
    );
    let (code, _, err) = run(dir, &["-q", "merge", "s1.jsonl", "s2.jsonl", "-o", "out"]);
    assert_eq!(code, 1);
    assert!(err.contains("broken/x.pt.trace.json.gz"), "{err}");
    assert!(err.contains("torchtrace: 1 of "), "{err}");
    let (code, _, _) = run(dir, &["-q", "batch", "campaign", "-o", "full"]);
    assert_eq!(code, 1);
    assert_same_tree(&dir.join("full"), &dir.join("out"));
}

#[test]
fn records_through_a_pipe_and_campaigns_combined() {
    let (tmp, camp) = campaign();
    let dir = tmp.path();
    let pick = |sub: &str| -> String {
        let p = fs::read_dir(camp.join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with("pt.trace.json.gz") && !is_frontend(p))
            .unwrap();
        p.strip_prefix(dir).unwrap().to_string_lossy().into_owned()
    };
    let (ar, mtp) = (pick("text_ar"), pick("text_mtp"));
    // One campaign per trace, merged: as if both had been given at once.
    run(dir, &["-q", "batch", &ar, "--records", "ar.jsonl"]);
    let (_, records, _) = run(dir, &["-q", "batch", &mtp, "--records", "-"]);
    let o = torchtrace()
        .current_dir(dir)
        .args([
            "-q",
            "merge",
            "ar.jsonl",
            "-",
            "-o",
            "merged",
            "--no-figures",
        ])
        .write_stdin(records)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let (code, stdout, _) = run(
        dir,
        &["-q", "batch", &ar, &mtp, "-o", "both", "--no-figures"],
    );
    assert_eq!(code, 0);
    assert_eq!(o.stdout, stdout);
    assert_same_tree(&dir.join("both"), &dir.join("merged"));
    let v: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join("merged/results.json")).unwrap()).unwrap();
    assert_eq!(v["comparisons"].as_array().unwrap().len(), 1, "AR vs MTP");
    assert!(v["comparisons"][0]["s_context"].as_f64().unwrap() > 1.0);
}
