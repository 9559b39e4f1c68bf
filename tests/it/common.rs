//! Shared helpers for the CLI tests: running the binary, loading frozen
//! expectations, comparing JSON figures, and golden files (set
//! `TORCHTRACE_BLESS=1` to rewrite them).
#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub fn bin() -> Command {
    let mut c = Command::cargo_bin("torchtrace").expect("binary built");
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `tests/data/` and `sample_traces/` (recursively) whose
/// path passes `keep`, sorted: the real and damaged fixtures that the
/// reader's property tests run over.
pub fn fixture_files(keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root().join("tests/data"), root().join("sample_traces")];
    while let Some(dir) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.retain(|p| keep(&p.to_string_lossy()));
    out.sort();
    out
}

/// A frozen expectation from `tests/data/expected/`.
pub fn expected(name: &str) -> Value {
    let p = root().join("tests/data/expected").join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).expect("expected file is JSON")
}

/// The one sample worker trace in `sample_traces/<dir>/` (relative path).
pub fn sample(dir: &str) -> String {
    let d = root().join("sample_traces").join(dir);
    let mut found: Vec<String> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pt.trace.json.gz") && !n.contains("async_llm"))
        .collect();
    found.sort();
    assert_eq!(found.len(), 1, "one worker trace in {dir}");
    format!("sample_traces/{dir}/{}", found[0])
}

/// Runs the binary and parses its stdout as JSON, asserting the exit code.
pub fn run_json(args: &[&str], code: i32) -> Value {
    let out = bin().args(args).output().expect("runs");
    assert_eq!(
        out.status.code(),
        Some(code),
        "args {args:?}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// Compares two numbers to well under a nanosecond (values in ms).
pub fn close(a: &Value, b: &Value, what: &str) {
    match (a, b) {
        (Value::Null, Value::Null) => {}
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            let tol = 1e-9 + 1e-12 * y.abs();
            assert!((x - y).abs() <= tol, "{what}: got {x}, expected {y}");
        }
        _ => assert_eq!(a, b, "{what}"),
    }
}

/// Compares the listed keys of two objects.
pub fn same_keys(actual: &Value, expected: &Value, keys: &[&str], ctx: &str) {
    for k in keys {
        let (a, e) = (&actual[*k], &expected[*k]);
        if e.is_null() && a.is_object() {
            // A statistic of an empty set: every figure null.
            for (sub, av) in a.as_object().unwrap() {
                assert!(
                    sub == "count" || av.is_null(),
                    "{ctx}.{k}.{sub} should be null"
                );
            }
        } else if e.is_object() {
            for (sub, ev) in e.as_object().unwrap() {
                close(&a[sub], ev, &format!("{ctx}.{k}.{sub}"));
            }
        } else {
            close(a, e, &format!("{ctx}.{k}"));
        }
    }
}

/// Asserts `actual` equals the golden file, or rewrites it under
/// `TORCHTRACE_BLESS=1`.
pub fn golden(name: &str, actual: &str) {
    let p: PathBuf = root().join("tests/golden").join(name);
    if std::env::var_os("TORCHTRACE_BLESS").is_some() {
        std::fs::write(&p, actual).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&p).unwrap_or_else(|_| {
        panic!(
            "missing golden {}; run with TORCHTRACE_BLESS=1",
            p.display()
        )
    });
    assert_eq!(
        actual, want,
        "golden {name} differs; rerun with TORCHTRACE_BLESS=1 if intended"
    );
}

pub fn exists(p: &str) -> bool {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p).exists()
}

/// (width, height, pixel variance) of a PNG.
pub fn png_info(path: &Path) -> (u32, u32, f64) {
    let dec = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = &buf[..info.buffer_size()];
    let n = px.len() as f64;
    let mean = px.iter().map(|&b| f64::from(b)).sum::<f64>() / n;
    let var = px
        .iter()
        .map(|&b| (f64::from(b) - mean).powi(2))
        .sum::<f64>()
        / n;
    (info.width, info.height, var)
}
