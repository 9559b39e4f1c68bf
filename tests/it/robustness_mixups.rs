//! Issue 17, "nothing silently mixed, doubled or dropped": every case is a
//! hostile input built here, and each gets a defined behaviour — counted,
//! an error (exit 2, or an error row), or a note. See
//! docs/ROBUSTNESS-batch.md, "Round 2".

use crate::common;

use serde_json::Value;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample_traces");

/// Runs torchtrace in `dir`; (exit code, stdout, stderr).
fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let o = common::bin().current_dir(dir).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Copies sample run directories (e.g. `text_ar`) into `dst`.
fn copy_runs(dst: &Path, runs: &[&str]) {
    for r in runs {
        let to = dst.join(r);
        fs::create_dir_all(&to).unwrap();
        for e in fs::read_dir(Path::new(SAMPLES).join(r)).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
            }
        }
    }
}

fn results(out: &Path) -> Value {
    serde_json::from_slice(&fs::read(out.join("results.json")).unwrap()).unwrap()
}

/// The first value under `key` anywhere in `v` (depth first).
fn find<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m.get(key).or_else(|| m.values().find_map(|x| find(x, key))),
        Value::Array(a) => a.iter().find_map(|x| find(x, key)),
        _ => None,
    }
}

/// Every string in `v` (notes, messages), joined by newlines.
fn strings(v: &Value) -> String {
    let mut out = String::new();
    fn walk(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(m) => m.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(v, &mut out);
    out
}

// ---------------------------------------------------------------- outputs

/// A second batch (or merge) on an OUTDIR that another one holds exits 2
/// at once, naming the reason, and writes nothing there.
#[test]
fn a_second_batch_on_one_outdir_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_runs(dir, &["text_ar"]);
    let out = dir.join("out");
    fs::create_dir_all(&out).unwrap();
    let held = fs::File::open(&out).unwrap();
    held.try_lock().expect("the test takes the lock first");
    let (code, _, err) = run(
        dir,
        &["-q", "batch", "text_ar", "-o", "out", "--no-figures"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("another torchtrace batch or merge"), "{err}");
    assert!(!out.join("results.json").exists());
    let (code, _, err) = run(dir, &["-q", "batch", "text_ar", "--records", "r.jsonl"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(
        dir,
        &["-q", "merge", "r.jsonl", "-o", "out", "--no-figures"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("another torchtrace batch or merge"), "{err}");
    drop(held);
    let (code, _, err) = run(
        dir,
        &["-q", "batch", "text_ar", "-o", "out", "--no-figures"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.join("results.json").exists());
}

/// Outputs are written into a temporary directory and renamed into place
/// only when all are written: a run that fails while writing leaves the
/// previous run's files as they were (never results.json of one run
/// beside report.md of another), and no temporary directory stays.
#[test]
fn a_failed_write_leaves_the_previous_outputs_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_runs(dir, &["text_ar", "text_mtp"]);
    let (code, _, err) = run(
        dir,
        &["-q", "batch", "text_ar", "-o", "out", "--no-figures"],
    );
    assert_eq!(code, 0, "{err}");
    let out = dir.join("out");
    let old_results = fs::read(out.join("results.json")).unwrap();
    let old_traces = fs::read(out.join("traces.csv")).unwrap();
    // report.md is now a directory that cannot be replaced.
    fs::remove_file(out.join("report.md")).unwrap();
    fs::create_dir_all(out.join("report.md/keep")).unwrap();
    // And a killed run left its temporary directory.
    fs::create_dir_all(out.join(".torchtrace-tmp.1/figures")).unwrap();
    let (code, _, err) = run(
        dir,
        &["-q", "batch", "text_mtp", "-o", "out", "--no-figures"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("report.md"), "{err}");
    assert_eq!(fs::read(out.join("results.json")).unwrap(), old_results);
    assert_eq!(fs::read(out.join("traces.csv")).unwrap(), old_traces);
    let left: Vec<_> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".torchtrace-tmp"))
        .collect();
    assert!(left.is_empty(), "temporary directories left: {left:?}");
    // Once it can be replaced, the whole new set is in place.
    fs::remove_dir_all(out.join("report.md")).unwrap();
    let (code, _, err) = run(dir, &["-q", "batch", "text_mtp", "-o", "out"]);
    assert_eq!(code, 0, "{err}");
    assert_ne!(fs::read(out.join("results.json")).unwrap(), old_results);
    assert!(fs::read_to_string(out.join("report.md"))
        .unwrap()
        .contains("text_mtp"));
}

// ------------------------------------------------------------------ merge

/// The lines of a records file, and one rewritten with its end line
/// recounted.
fn lines(p: &Path) -> Vec<String> {
    fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_lines(p: &Path, body: &[String]) {
    let files = body.iter().filter(|l| l.starts_with("{\"file\"")).count();
    let mut text: Vec<String> = body
        .iter()
        .filter(|l| !l.starts_with("{\"end\""))
        .cloned()
        .collect();
    text.push(format!("{{\"end\":{{\"files\":{files}}}}}"));
    fs::write(p, text.join("\n") + "\n").unwrap();
}

/// The index of the first file line of a worker trace.
fn worker_line(l: &[String]) -> usize {
    l.iter()
        .position(|l| l.starts_with("{\"file\"") && l.contains("\"kind\":\"worker\""))
        .expect("a worker row")
}

/// A campaign of text_ar and text_mtp, its records in `all.jsonl`.
fn records_campaign() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    copy_runs(&dir, &["text_ar", "text_mtp"]);
    let (code, _, err) = run(
        &dir,
        &[
            "-q",
            "batch",
            "text_ar",
            "text_mtp",
            "--records",
            "all.jsonl",
        ],
    );
    assert_eq!(code, 0, "{err}");
    (tmp, dir)
}

fn merge(dir: &Path, files: &[&str]) -> (i32, String, String) {
    let mut args = vec!["-q", "merge"];
    args.extend_from_slice(files);
    args.extend_from_slice(&["-o", "out", "--no-figures"]);
    run(dir, &args)
}

#[test]
fn merge_refuses_a_duplicated_file_record() {
    let (_tmp, dir) = records_campaign();
    let mut l = lines(&dir.join("all.jsonl"));
    let k = worker_line(&l);
    l.insert(k + 1, l[k].clone());
    write_lines(&dir.join("dup.jsonl"), &l);
    let (code, _, err) = merge(&dir, &["dup.jsonl"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is given twice"), "{err}");
    assert!(!dir.join("out/results.json").exists());
}

#[test]
fn merge_refuses_a_record_of_a_file_outside_the_campaign() {
    let (_tmp, dir) = records_campaign();
    let l = lines(&dir.join("all.jsonl"));
    let k = worker_line(&l);
    for (input, path) in [
        (0, "../../etc/passwd"),
        (0, "text_ar/other.pt.trace.json.gz"),
        (7, "x"),
    ] {
        let mut v: Value = serde_json::from_str(&l[k]).unwrap();
        v["file"]["path"] = Value::from(path);
        v["file"]["input"] = Value::from(input);
        let mut l2 = l.clone();
        l2.insert(k + 1, v.to_string());
        write_lines(&dir.join("alien.jsonl"), &l2);
        let (code, _, err) = merge(&dir, &["alien.jsonl"]);
        assert_eq!(code, 2, "{path}: {err}");
        assert!(
            err.contains("does not hold") || err.contains("names input 7"),
            "{path}: {err}"
        );
    }
}

#[test]
fn merge_refuses_an_ok_worker_record_without_figures() {
    let (_tmp, dir) = records_campaign();
    let mut l = lines(&dir.join("all.jsonl"));
    let k = worker_line(&l);
    let mut v: Value = serde_json::from_str(&l[k]).unwrap();
    v["file"]["results"]
        .as_object_mut()
        .expect("results")
        .remove("pairs");
    l[k] = v.to_string();
    write_lines(&dir.join("bare.jsonl"), &l);
    let (code, _, err) = merge(&dir, &["bare.jsonl"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("holds no figures"), "{err}");
}

/// Two campaigns that share a trace: it is counted once, as `batch` over
/// all their PATHs counts it, the later copy a skipped row with a note.
#[test]
fn a_trace_in_two_campaigns_is_counted_once() {
    let (_tmp, dir) = records_campaign();
    let (code, _, err) = run(&dir, &["-q", "batch", "text_ar", "--records", "ar.jsonl"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = merge(&dir, &["all.jsonl", "ar.jsonl"]);
    assert_eq!(code, 0, "{err}");
    let merged = results(&dir.join("out"));
    let (code, _, err) = run(
        &dir,
        &[
            "-q",
            "batch",
            "text_ar",
            "text_mtp",
            "text_ar",
            "-o",
            "b",
            "--no-figures",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let batch = results(&dir.join("b"));
    for key in ["baseline_traces", "candidate_traces", "s_context"] {
        assert_eq!(
            merged["pooled"][0][key], batch["pooled"][0][key],
            "pooled {key}"
        );
    }
    assert_eq!(merged["pooled"][0]["baseline_traces"], 1);
    let skipped: Vec<&Value> = merged["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "worker" && t["status"] == "skipped")
        .collect();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0]["error"]
        .as_str()
        .unwrap()
        .starts_with("duplicate of text_ar/"));
    assert!(strings(&merged["notes"]).contains("more than one campaign"));
    assert_eq!(merged["comparisons"], batch["comparisons"]);
}

/// A split over shards still merges to exactly what `batch` writes (the
/// checks above refuse nothing that a batch itself writes).
#[test]
fn merge_of_shards_still_equals_batch() {
    let (_tmp, dir) = records_campaign();
    for k in 1..=3 {
        let shard = format!("{k}/3");
        let file = format!("s{k}.jsonl");
        let (code, _, err) = run(
            &dir,
            &[
                "-q",
                "batch",
                "text_ar",
                "text_mtp",
                "--shard",
                &shard,
                "--records",
                &file,
            ],
        );
        assert_eq!(code, 0, "{err}");
    }
    let (code, _, err) = merge(&dir, &["s1.jsonl", "s2.jsonl", "s3.jsonl"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(
        &dir,
        &[
            "-q",
            "batch",
            "text_ar",
            "text_mtp",
            "-o",
            "b",
            "--no-figures",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        fs::read(dir.join("out/results.json")).unwrap(),
        fs::read(dir.join("b/results.json")).unwrap()
    );
}

// ----------------------------------------------------- archives, manifest

/// A tiny worker trace: one step context and one kernel.
fn tiny_trace(corr: u32) -> String {
    format!(
        r#"{{"schemaVersion": 1, "traceEvents": [
{{"ph": "X", "cat": "user_annotation", "name": "execute_context_0(0)_generation_1(1)", "pid": 1, "tid": 1, "ts": 0.000, "dur": 100.000, "args": {{"External id": 5}}}},
{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10.000, "dur": 5.000, "args": {{"correlation": {corr}}}}},
{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20.000, "dur": 10.000, "args": {{"correlation": {corr}}}}}
]}}"#
    )
}

/// Two zip members of one name: the zip reader sees only the last, which
/// is read; the other is a row of its own, an error saying why (before:
/// one row, exit 0).
#[test]
fn a_zip_with_two_members_of_one_name_is_an_error_row() {
    use zip::write::SimpleFileOptions;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let zpath = dir.join("c.zip");
    {
        let mut z = zip::ZipWriter::new(fs::File::create(&zpath).unwrap());
        let o = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        for (name, corr) in [("run/a.pt.trace.json", 7), ("run/b.pt.trace.json", 8)] {
            z.start_file(name, o).unwrap();
            z.write_all(tiny_trace(corr).as_bytes()).unwrap();
        }
        z.finish().unwrap();
    }
    // Rename b to a in the local headers and the central directory.
    let bytes = fs::read(&zpath).unwrap();
    let (from, to) = (b"run/b.pt.trace.json", b"run/a.pt.trace.json");
    let mut patched = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(from) {
            patched.extend_from_slice(to);
            i += from.len();
        } else {
            patched.push(bytes[i]);
            i += 1;
        }
    }
    fs::write(&zpath, patched).unwrap();
    let (code, _, err) = run(dir, &["-q", "batch", "c.zip", "-o", "out", "--no-figures"]);
    assert_eq!(code, 1, "{err}");
    let v = results(&dir.join("out"));
    let rows: Vec<(&str, &str, &str)> = v["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["path"].as_str().unwrap(),
                t["status"].as_str().unwrap(),
                t["error"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows.iter().all(|r| r.0 == "run/a.pt.trace.json"),
        "{rows:?}"
    );
    assert!(rows.iter().any(|r| r.1 == "ok"), "{rows:?}");
    assert!(
        rows.iter()
            .any(|r| r.1 == "error" && r.2.contains("has the same name")),
        "{rows:?}"
    );
    assert!(err.contains("has the same name"), "{err}");
}

/// Two manifest rows for one path with different values: which is meant?
/// An error (exit 2) naming both rows; an identical repeat is harmless.
#[test]
fn conflicting_manifest_rows_are_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_runs(dir, &["text_ar"]);
    let name = fs::read_dir(dir.join("text_ar"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".pt.trace.json.gz"))
        .unwrap();
    fs::write(
        dir.join("m.csv"),
        format!("path,mode,workload,completion_tokens\n{name},ar,text,68\n{name},mtp,text,68\n"),
    )
    .unwrap();
    let (code, _, err) = run(
        dir,
        &[
            "-q",
            "batch",
            "text_ar",
            "--manifest",
            "m.csv",
            "-o",
            "out",
            "--no-figures",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("rows 2 and 3"), "{err}");
    fs::write(
        dir.join("m.csv"),
        format!("path,mode,workload,completion_tokens\n{name},ar,text,68\n{name},ar,text,68\n"),
    )
    .unwrap();
    let (code, _, err) = run(
        dir,
        &[
            "-q",
            "batch",
            "text_ar",
            "--manifest",
            "m.csv",
            "-o",
            "out",
            "--no-figures",
        ],
    );
    assert_eq!(code, 0, "{err}");
}

// ------------------------------------------------------------- the reader

/// Writes `doc` as a trace file and runs `SUBCOMMAND FILE --format json`.
fn analyse(sub: &str, doc: &str) -> (i32, Value, String) {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("t.pt.trace.json");
    fs::write(&p, doc).unwrap();
    let (code, out, err) = run(
        tmp.path(),
        &[
            sub,
            p.to_str().unwrap(),
            "--format",
            "json",
            "--tokens",
            "1",
        ],
    );
    let v = serde_json::from_str(&out).unwrap_or(Value::Null);
    (code, v, err)
}

const STEP: &str = r#"{"ph": "X", "cat": "user_annotation", "name": "execute_context_0(0)_generation_1(1)", "pid": 1, "tid": 1, "ts": 0.000, "dur": 100.000, "args": {"External id": 5}}"#;

fn doc(events: &[&str]) -> String {
    format!("{{\"traceEvents\": [\n{}\n]}}", events.join(",\n"))
}

/// A GPU activity written without `args.correlation` still ran on the GPU:
/// it is in the whole-trace timeline (before, the prefilter dropped it).
#[test]
fn activities_without_correlation_are_in_the_timeline() {
    let d = doc(&[
        STEP,
        r#"{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10.000, "dur": 5.000, "args": {"correlation": 7}}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20.000, "dur": 10.000, "args": {"correlation": 7}}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "orphan", "pid": 0, "tid": 7, "ts": 50.000, "dur": 30.000, "args": {"device": 0}}"#,
        r#"{"ph": "X", "cat": "gpu_memset", "name": "Memset", "pid": 0, "tid": 7, "ts": 90.000, "dur": 1.000}"#,
    ]);
    let (code, v, err) = analyse("kernels", &d);
    assert!(code == 0 || code == 1, "{err}");
    let tl = find(&v, "timeline").expect("a timeline");
    assert_eq!(tl["activities"], 3, "{tl}");
}

/// Two `traceEvents` keys: the first array is read and a note says the
/// second was not (a parser keeping the last key would read the other).
#[test]
fn a_second_trace_events_key_is_noted() {
    let d = format!(
        "{{\"traceEvents\": [{STEP}], \"traceEvents\": [{}]}}",
        r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20.000, "dur": 10.000, "args": {"correlation": 7}}"#
    );
    let (code, v, err) = analyse("pair", &d);
    assert!(code == 0 || code == 1, "{err}");
    assert!(strings(&v).contains("a second \"traceEvents\" key"), "{v}");
}

/// `args` that is not an object is an error naming the event, never read
/// by position as External id and correlation (before, a step and its GPU
/// annotation with `"args": [5]` were paired by "External id" 5).
#[test]
fn args_that_are_not_an_object_are_an_error() {
    for args in ["[5]", "5", "\"x\""] {
        let step = STEP.replace("{\"External id\": 5}", args);
        let gpu = format!(
            r#"{{"ph": "X", "cat": "gpu_user_annotation", "name": "execute_context_0(0)_generation_1(1)", "pid": 0, "tid": 7, "ts": 19.000, "dur": 12.000, "args": {args}}}"#
        );
        let (code, _, err) = analyse("pair", &doc(&[&step, &gpu]));
        assert_eq!(code, 2, "{args}: {err}");
        assert!(err.contains("event 0 at byte"), "{args}: {err}");
        assert!(err.contains("expected an object"), "{args}: {err}");
    }
    let kernel = r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20.000, "dur": 10.000, "args": [0, 7]}"#;
    let (code, _, err) = analyse("kernels", &doc(&[STEP, kernel]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("event 1 at byte"), "{err}");
    let step = STEP.replace("{\"External id\": 5}", "null");
    let (code, _, err) = analyse("pair", &doc(&[&step]));
    assert!(code == 0 || code == 1, "null args: {err}");
}

/// A context without a start time (no `ts`, or `null`) is not a context,
/// and a note says so, as for a missing `dur`.
#[test]
fn a_context_without_ts_is_noted() {
    let d = doc(&[
        STEP,
        r#"{"ph": "X", "cat": "user_annotation", "name": "execute_context_0(0)_generation_1(1)", "pid": 1, "tid": 1, "ts": null, "dur": 100.000}"#,
        r#"{"ph": "X", "cat": "user_annotation", "name": "execute_context_0(0)_generation_1(1)", "pid": 1, "tid": 1, "dur": 100.000}"#,
    ]);
    let (code, v, err) = analyse("pair", &d);
    assert!(code == 0 || code == 1, "{err}");
    assert_eq!(v["traces"][0]["contexts"], 1, "{v}");
    assert!(
        strings(&v).contains("2 CPU and 0 GPU user annotation(s) have no start time"),
        "{v}"
    );
}

/// One correlation id used by launch calls of two processes: the
/// activities go to the first launch in the file, and a note says so.
#[test]
fn a_correlation_id_of_two_processes_is_noted() {
    let d = doc(&[
        STEP,
        r#"{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10.000, "dur": 5.000, "args": {"correlation": 7}}"#,
        r#"{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 2, "tid": 1, "ts": 12.000, "dur": 5.000, "args": {"correlation": 7}}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20.000, "dur": 10.000, "args": {"correlation": 7}}"#,
    ]);
    let (code, v, err) = analyse("kernels", &d);
    assert!(code == 0 || code == 1, "{err}");
    assert!(
        strings(&v)
            .contains("1 correlation id(s) are used by launch calls of more than one process"),
        "{v}"
    );
}

/// Invalid JSON in a top-level value that nothing reads is still invalid
/// JSON: an error (exit 2), not exit 0.
#[test]
fn invalid_json_in_an_unread_top_level_value_is_an_error() {
    for bad in ["tru", "1.2.3", "nul", "-", "0x10"] {
        let d = format!("{{\"traceName\": {bad}, \"traceEvents\": [{STEP}]}}");
        let (code, _, err) = analyse("pair", &d);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("is not a JSON value"), "{bad}: {err}");
    }
    for bad in ["[1 2]", "{\"a\" 1}", "[tru]", "{\"a\": [1,]}"] {
        let d = format!("{{\"other\": {bad}, \"traceEvents\": [{STEP}]}}");
        let (code, _, err) = analyse("pair", &d);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("is not JSON either"), "{bad}: {err}");
    }
    for good in [
        "true",
        "-1.5e3",
        "null",
        "0",
        "[1, {\"a\": [\"\\u00e9\"]}]",
        "{}",
    ] {
        let d = format!("{{\"traceName\": {good}, \"traceEvents\": [{STEP}]}}");
        let (code, _, err) = analyse("pair", &d);
        assert!(code == 0 || code == 1, "{good}: {err}");
    }
}

/// A reader note (a second `traceEvents` key) is part of the figures'
/// metadata: it survives the records' round trip, so a result read back
/// equals the one written (found by the `analyses` fuzz target).
#[test]
fn a_reader_note_survives_the_records_round_trip() {
    use torchtrace::analyses::kernels::KernelsSpec;
    use torchtrace::analyses::pair::{Pair, PairSpec};
    use torchtrace::{analyze_reader, Plan, Results, Selector};
    let doc = r#"{"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}], "traceEvents": []}"#;
    let every = Selector::from_flags(None, Some(".")).unwrap();
    let plan = Plan::new(every)
        .with(PairSpec::default())
        .with(KernelsSpec::default());
    let r = analyze_reader("t", doc.as_bytes(), &plan);
    assert_eq!(r.get::<Pair>().unwrap().meta.notes.len(), 1);
    let text = torchtrace::record::with_internals(|| serde_json::to_string(&r.results)).unwrap();
    let back: Results = serde_json::from_str(&text).unwrap();
    assert!(back == r.results);
}

/// Every file `batch` writes beside report.md is named in the code
/// (`sections::all_files`: the fixed files and each analysis's
/// `BATCH_FILES`), and a run over OUTDIR removes an earlier run's outputs
/// that it does not write itself: the graph campaign's `graphs.csv` does
/// not stay beside a campaign without graphs.
#[test]
fn an_earlier_runs_outputs_never_stay_beside_a_new_run() {
    let known = torchtrace::batch::output::sections::all_files();
    let mut unique = known.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        known.len(),
        "a name declared twice: {known:?}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let graphs = Path::new(SAMPLES);
    let (code, _, err) = run(
        dir,
        &[
            "-q",
            "batch",
            graphs.join("text_graphs_ar").to_str().unwrap(),
            graphs.join("text_graphs_mtp").to_str().unwrap(),
            "-o",
            "out",
            "--no-figures",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let out = dir.join("out");
    let names = |out: &Path| -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "figures")
            .collect();
        v.sort();
        v
    };
    let first = names(&out);
    for n in &first {
        assert!(known.contains(&n.as_str()), "{n} is not named in the code");
    }
    assert!(first.contains(&"graphs.csv".to_string()), "{first:?}");
    copy_runs(dir, &["text_ar", "text_mtp"]);
    let text_pair = |outdir: &str| {
        let (code, _, err) = run(
            dir,
            &[
                "-q",
                "batch",
                "text_ar",
                "text_mtp",
                "-o",
                outdir,
                "--no-figures",
            ],
        );
        assert_eq!(code, 0, "{err}");
    };
    text_pair("out");
    let second = names(&out);
    assert!(!second.contains(&"graphs.csv".to_string()), "{second:?}");
    // What the second run wrote is what a run into an empty folder writes.
    text_pair("fresh");
    assert_eq!(second, names(&dir.join("fresh")));
}

/// A write that fails (here the file-size limit, with SIGXFSZ ignored, as
/// a shell's `ulimit -f` under some supervisors) names the output it was
/// writing, not a temporary folder and not the system's words alone.
#[test]
fn a_failed_write_names_its_output() {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_runs(dir, &["text_ar"]);
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_torchtrace"));
    cmd.current_dir(dir)
        .args(["-q", "batch", "text_ar", "-o", "out", "--no-figures"]);
    // SAFETY: setrlimit and signal are async-signal-safe and touch only
    // the child between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: 16 << 10,
                rlim_max: 16 << 10,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    // OUTDIR as given (`-o out`), with the file.
    assert!(err.contains("out/results.json: cannot write"), "{err}");
    assert!(err.contains("File too large"), "{err}");
    assert!(!err.contains(".torchtrace-tmp"), "{err}");
}
