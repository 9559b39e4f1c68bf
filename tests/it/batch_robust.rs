//! `torchtrace batch` on bad inputs (issue 11): every failure is a row
//! with its reason while the rest completes, links are followed without
//! loops, duplicates are analysed once, OUTDIR may lie inside an input,
//! `-j` is bounded, and AR/MTP comparisons are matched, never a cross
//! product.

use assert_cmd::Command;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use serde_json::Value;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample_traces");

fn torchtrace() -> Command {
    Command::cargo_bin("torchtrace").unwrap()
}

/// Runs `batch -q --no-figures ARGS -o OUT`: (exit code, stdout, stderr).
fn batch(args: &[&str], out: &Path) -> (i32, String, String) {
    let o = torchtrace()
        .args(["batch", "-q", "--no-figures"])
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn results(out: &Path) -> Value {
    serde_json::from_slice(&fs::read(out.join("results.json")).unwrap()).unwrap()
}

/// The rows of results.json: (path, status, error).
fn rows(v: &Value) -> Vec<(String, String, String)> {
    v["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["path"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
                t["error"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn row<'a>(rows: &'a [(String, String, String)], path: &str) -> &'a (String, String, String) {
    rows.iter()
        .find(|r| r.0 == path)
        .unwrap_or_else(|| panic!("no row {path} in {rows:?}"))
}

/// The one trace and summary of a sample run directory.
fn sample_run(dir: &str) -> (PathBuf, PathBuf) {
    let mut trace = None;
    let mut summary = None;
    for e in fs::read_dir(Path::new(SAMPLES).join(dir)).unwrap() {
        let p = e.unwrap().path();
        let n = p.file_name().unwrap().to_string_lossy().into_owned();
        if n.starts_with("dp0") && n.ends_with(".pt.trace.json.gz") {
            trace = Some(p);
        } else if n.ends_with(".summary.json") {
            summary = Some(p);
        }
    }
    (trace.unwrap(), summary.unwrap())
}

/// Copies the trace and summary of a sample run into `dst` (created).
fn copy_run(dir: &str, dst: &Path) {
    fs::create_dir_all(dst).unwrap();
    let (t, s) = sample_run(dir);
    for p in [t, s] {
        fs::copy(&p, dst.join(p.file_name().unwrap())).unwrap();
    }
}

#[test]
fn missing_path_is_a_failed_row_not_an_abort() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("in");
    copy_run("text_ar", &root.join("text_ar"));
    copy_run("text_mtp", &root.join("text_mtp"));
    let out = tmp.path().join("out");
    let missing = tmp.path().join("nope.pt.trace.json.gz");
    let (code, stdout, _) = batch(&[root.to_str().unwrap(), missing.to_str().unwrap()], &out);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("1 comparison, 1 failed"), "{stdout}");
    let r = rows(&results(&out));
    let m = row(&r, missing.to_str().unwrap());
    assert_eq!(m.1, "error");
    assert!(m.2.contains("no such file"), "{m:?}");
}

#[cfg(unix)]
#[test]
fn fifo_named_like_a_trace_is_an_error_row() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("in");
    copy_run("text_ar", &root.join("text_ar"));
    let fifo = root.join("text_ar/fifo.pt.trace.json.gz");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("mkfifo unavailable: skipped");
        return;
    }
    let out = tmp.path().join("out");
    let (code, stdout, _) = batch(&[root.to_str().unwrap()], &out);
    assert_eq!(code, 1, "{stdout}");
    let r = rows(&results(&out));
    let f = row(&r, "text_ar/fifo.pt.trace.json.gz");
    assert_eq!(f.1, "error");
    assert!(f.2.contains("FIFO"), "{f:?}");
    // The FIFO named directly as a PATH: a row too, never a hang.
    let out2 = tmp.path().join("out2");
    let (code, _, _) = batch(&[fifo.to_str().unwrap()], &out2);
    assert_eq!(code, 1);
    assert!(rows(&results(&out2))[0].2.contains("FIFO"));
}

#[cfg(unix)]
#[test]
fn symlinked_directories_are_followed_and_loops_reported() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("in");
    copy_run("text_ar", &root.join("text_ar"));
    copy_run("text_mtp", &tmp.path().join("elsewhere/text_mtp"));
    // A run directory that is a link, and a loop back to the root.
    symlink(tmp.path().join("elsewhere/text_mtp"), root.join("text_mtp")).unwrap();
    symlink(&root, root.join("text_ar/loop")).unwrap();
    let out = tmp.path().join("out");
    let (code, stdout, stderr) = batch(&[root.to_str().unwrap()], &out);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("1 comparison, 0 failed"), "{stdout}");
    let r = rows(&results(&out));
    let l = row(&r, "text_ar/loop");
    assert_eq!(l.1, "skipped");
    assert!(l.2.contains("loop"), "{l:?}");
}

#[test]
fn duplicate_inputs_are_analysed_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("in");
    copy_run("text_ar", &root.join("text_ar"));
    copy_run("text_mtp", &root.join("text_mtp"));
    // A copy under another name, and the same file given again.
    let (t, _) = sample_run("text_ar");
    let name = t.file_name().unwrap().to_string_lossy().into_owned();
    fs::copy(&t, root.join("text_ar/copy.pt.trace.json.gz")).unwrap();
    let again = root.join("text_ar").join(&name);
    let out = tmp.path().join("out");
    let (code, stdout, _) = batch(&[root.to_str().unwrap(), again.to_str().unwrap()], &out);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("1 comparison, 0 failed"), "{stdout}");
    let v = results(&out);
    let r = rows(&v);
    let dups: Vec<_> = r
        .iter()
        .filter(|r| r.2.starts_with("duplicate of"))
        .collect();
    assert_eq!(dups.len(), 2, "{r:?}");
    assert!(dups.iter().all(|d| d.1 == "skipped"));
    assert!(
        v["notes"].to_string().contains("2 duplicate"),
        "{}",
        v["notes"]
    );
}

#[test]
fn tar_hard_links_are_analysed_as_their_target() {
    let tmp = tempfile::tempdir().unwrap();
    let tar_path = tmp.path().join("runs.tar");
    let mut b = tar::Builder::new(fs::File::create(&tar_path).unwrap());
    let (at, asum) = sample_run("text_ar");
    let (mt, msum) = sample_run("text_mtp");
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    b.append_path_with_name(&at, format!("text_ar/{}", name(&at)))
        .unwrap();
    b.append_path_with_name(&asum, format!("text_ar/{}", name(&asum)))
        .unwrap();
    // The MTP trace stored under a name that is not a trace's, then
    // linked from its run directory (a second pass reads it).
    b.append_path_with_name(&mt, "blobs/0001").unwrap();
    b.append_path_with_name(&msum, format!("text_mtp/{}", name(&msum)))
        .unwrap();
    let link = |b: &mut tar::Builder<fs::File>, path: &str, target: &str| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Link);
        h.set_size(0);
        h.set_mode(0o644);
        b.append_link(&mut h, path, target).unwrap();
    };
    link(&mut b, &format!("text_mtp/{}", name(&mt)), "blobs/0001");
    // A second name of the AR trace: a duplicate of it.
    link(
        &mut b,
        "again/x.pt.trace.json.gz",
        &format!("text_ar/{}", name(&at)),
    );
    link(&mut b, "gone/y.pt.trace.json.gz", "nowhere/z");
    b.into_inner().unwrap().flush().unwrap();

    let out = tmp.path().join("out");
    let (code, stdout, _) = batch(&[tar_path.to_str().unwrap()], &out);
    // The dangling link is the one failure; both runs are compared.
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("1 comparison, 1 failed"), "{stdout}");
    let r = rows(&results(&out));
    assert_eq!(row(&r, &format!("text_mtp/{}", name(&mt))).1, "ok");
    let again = row(&r, "again/x.pt.trace.json.gz");
    assert_eq!(again.1, "skipped");
    assert!(again.2.starts_with("duplicate of text_ar/"), "{again:?}");
    let gone = row(&r, "gone/y.pt.trace.json.gz");
    assert_eq!(gone.1, "error");
    assert!(gone.2.contains("nowhere/z"), "{gone:?}");
}

#[test]
fn outdir_inside_or_equal_to_the_input() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("in");
    copy_run("text_ar", &root.join("text_ar"));
    copy_run("text_mtp", &root.join("text_mtp"));
    for out in [root.clone(), root.join("out")] {
        // Twice: the second run sees the first one's output.
        for _ in 0..2 {
            let (code, stdout, stderr) = batch(&[root.to_str().unwrap()], &out);
            assert_eq!(code, 0, "{stdout}{stderr}");
            assert!(
                stdout.contains("2 worker traces, 1 comparison, 0 failed"),
                "{stdout}"
            );
        }
    }
}

#[test]
fn thread_count_is_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, stderr) = batch(&["-j", "5000", SAMPLES], &tmp.path().join("o"));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("5000") && stderr.contains("1024"),
        "{stderr}"
    );
    // 0: all cores.
    let (code, _, stderr) = batch(&["-j", "0", SAMPLES], &tmp.path().join("o2"));
    assert_eq!(code, 0, "{stderr}");
}

/// 3 AR and 3 MTP runs of one workload (ranks 0–2, distinct bytes): three
/// matched comparisons, each equal to the one-run comparison, and one
/// pooled, not nine.
#[test]
fn comparisons_are_matched_by_rank_not_crossed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("in");
    for mode in ["ar", "mtp"] {
        let (t, s) = sample_run(&format!("text_{mode}"));
        let mut json = Vec::new();
        GzDecoder::new(fs::File::open(&t).unwrap())
            .read_to_end(&mut json)
            .unwrap();
        let dir = root.join(format!("text_{mode}"));
        fs::create_dir_all(&dir).unwrap();
        for rank in 0..3u32 {
            let stem = format!("dp0_pp0_tp0_dcp0_ep0_rank{rank}.{mode}");
            // A different compression level per rank: different bytes.
            let mut gz = GzEncoder::new(
                fs::File::create(dir.join(format!("{stem}.pt.trace.json.gz"))).unwrap(),
                Compression::new(rank + 1),
            );
            gz.write_all(&json).unwrap();
            gz.finish().unwrap();
            fs::copy(&s, dir.join(format!("{stem}.summary.json"))).unwrap();
        }
    }
    let out = tmp.path().join("out");
    let (code, stdout, stderr) = batch(&[root.to_str().unwrap()], &out);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("6 worker traces, 3 comparisons, 0 failed"),
        "{stdout}"
    );
    let v = results(&out);
    let cmps = v["comparisons"].as_array().unwrap();
    for c in cmps {
        let (b, m) = (
            c["baseline"].as_str().unwrap(),
            c["candidate"].as_str().unwrap(),
        );
        let rank = |p: &str| p.split("rank").nth(1).unwrap()[..1].to_string();
        assert_eq!(rank(b), rank(m), "{b} vs {m}");
    }
    // The one-run comparison, for reference.
    let one = tmp.path().join("one");
    let (code, _, _) = batch(
        &[
            &format!("{SAMPLES}/text_ar"),
            &format!("{SAMPLES}/text_mtp"),
        ],
        &one,
    );
    assert_eq!(code, 0);
    let s1 = results(&one)["comparisons"][0]["s_context"].clone();
    assert!(cmps.iter().all(|c| c["s_context"] == s1));
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("pooled over 3 AR and 3 mtp traces"),
        "{notes}"
    );
}
