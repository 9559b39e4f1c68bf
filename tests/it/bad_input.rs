//! Bad input: one clear line naming the file, what is wrong and where,
//! exit 2, never a panic.

use crate::common::*;
use std::io::Write;

fn stderr_of(args: &[&str]) -> (Option<i32>, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn tmp(name: &str, bytes: &[u8]) -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    (d, p.display().to_string())
}

#[test]
fn missing_file() {
    let (code, err) = stderr_of(&["pair", "no/such/trace.json.gz"]);
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with("torchtrace: no/such/trace.json.gz: cannot open"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
}

#[test]
fn neither_gzip_nor_json() {
    let (_d, p) = tmp("x.json.gz", b"PK\x03\x04 this is a zip");
    let (code, err) = stderr_of(&["pair", &p]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains(&p)
            && err.contains("not a trace: neither gzip nor JSON (first bytes 50 4b 03 04"),
        "{err}"
    );
}

#[test]
fn truncated_gzip_reports_offset_and_events() {
    let full = std::fs::read(root().join("tests/data/hta_step_based_trace.json.gz")).unwrap();
    let (_d, p) = tmp("cut.json.gz", &full[..full.len() / 2]);
    let (code, err) = stderr_of(&["pair", "-q", &p, "--context-regex", "."]);
    assert_eq!(code, Some(2));
    assert!(err.contains(&p), "{err}");
    assert!(
        err.contains("data ends early or is corrupt after byte"),
        "{err}"
    );
    assert!(err.contains("events read intact"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn json_cut_inside_the_event_array_still_reports_what_was_read() {
    let text = "{\"traceEvents\": [\n".to_string()
        + &(0..5)
            .map(|i| format!(r#"{{"ph":"X","cat":"user_annotation","name":"s","pid":1,"tid":1,"ts":{}.000,"dur":5.000,"args":{{"External id":{i}}}}}"#, i * 10))
            .collect::<Vec<_>>()
            .join(",\n")
        + ",\n{\"ph\": \"X\", \"na";
    let (_d, p) = tmp("cut.json.gz", &gz(text.as_bytes()));
    let out = bin()
        .args(["pair", &p, "--context", "s", "-f", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("JSON ends early at byte"), "{err}");
    assert!(err.contains("5 events read intact"), "{err}");
    // The figures of the five complete events are still printed.
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["traces"][0]["contexts"], 5);
    assert_eq!(v["traces"][0]["complete"], false);
}

#[test]
fn no_trace_events() {
    let (_d, p) = tmp(
        "meta.json",
        br#"{"schemaVersion": 1, "deviceProperties": []}"#,
    );
    let (code, err) = stderr_of(&["pair", &p]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no \"traceEvents\" array"), "{err}");
}

#[test]
fn bad_event_names_its_index_and_offset() {
    let (_d, p) = tmp("bad.json", br#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "cat": "user_annotation", "ts": "soon"}]}"#);
    let (code, err) = stderr_of(&["pair", &p, "--context-regex", "."]);
    assert_eq!(code, Some(2));
    assert!(err.contains("event 1 at byte 39"), "{err}");
}

#[test]
fn missing_context_exits_1_with_step_names() {
    let (code, err) = stderr_of(&[
        "pair",
        &sample("text_ar"),
        "--context",
        "execute_context_0(0)_generation_1(3)",
    ]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("execute_context_0(0)_generation_1(1) ×64"),
        "{err}"
    );
}

#[test]
fn bad_arguments_exit_2() {
    let (code, _) = stderr_of(&["pair", "a", "b", "c"]);
    assert_eq!(code, Some(2));
    let (code, err) = stderr_of(&[
        "pair",
        "tests/data/hta_step_based_trace.json.gz",
        "--context-regex",
        "(",
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("invalid --context-regex"), "{err}");
}

/// Cut a real trace's JSON at many offsets and corrupt single bytes: the
/// reader must always return (figures for what was read, or an error with
/// a position), never panic.
#[test]
fn every_cut_and_corruption_is_handled() {
    use std::io::Read;
    use torchtrace::analyses::pair::{PairSpec, Selector};
    use torchtrace::analysis::{analyze_reader, Plan};
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(root().join("tests/data/hta_step_based_trace.json.gz")).unwrap(),
    )
    .read_to_end(&mut json)
    .unwrap();
    let all = Selector::Regex(regex::Regex::new(".").unwrap());
    let plan = || Plan::new(all.clone()).with(PairSpec::default());
    let step = (json.len() / 300).max(1);
    for cut in (0..json.len()).step_by(step) {
        let c = analyze_reader("cut", &json[..cut], &plan());
        assert!(
            c.error.is_some(),
            "a cut at {cut} of {} must be reported",
            json.len()
        );
        assert!(c.get::<torchtrace::analyses::pair::Pair>().unwrap().pairs <= 10);
    }
    for (i, at) in (0..json.len()).step_by(step).enumerate() {
        let mut bad = json.clone();
        bad[at] = [b'{', b'}', b'"', b'\\', b'[', b']', 0xff, b','][i % 8];
        let _ = analyze_reader("corrupt", &bad[..], &plan());
    }
    let whole = analyze_reader("whole", &json[..], &plan());
    assert!(whole.error.is_none());
    assert_eq!(
        whole
            .get::<torchtrace::analyses::pair::Pair>()
            .unwrap()
            .pairs,
        10
    );
}

#[test]
fn ts_plus_dur_beyond_the_time_range_is_an_error_naming_the_event() {
    // 9223372036854775.000 µs is within i64 ns; adding 1 µs is not.
    let doc = br#"{"traceEvents": [{"ph":"X","cat":"user_annotation","name":"s","pid":1,"tid":1,"ts":9223372036854775.000,"dur":1.000}]}"#;
    let (_d, p) = tmp("far.json", doc);
    let (code, err) = stderr_of(&["pair", &p, "--context-regex", "."]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("event 0") && err.contains("beyond the representable time range"),
        "{err}"
    );
}
