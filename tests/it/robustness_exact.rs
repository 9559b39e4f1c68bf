//! Hostile round of issue 59 ("Robustness round 3"): each class a test of
//! its own, the traces generated here (docs/ROBUSTNESS.md, "Issue 59").
//!
//! - Terminal safety: `ops`, `kernels` and `diff` tables (and CSV) print
//!   control characters from trace names escaped, never raw.
//! - Export's temporary files: links planted at the old predictable names
//!   are never written through; a second export into a locked directory
//!   fails clearly; two at once leave intact files; one trace given twice
//!   is exported once.
//! - Wide sums: `idle`'s sums of gaps past i64 are exact in JSON.
//! - `ranks`: files named rank 0 and rank 4 000 000 000 allocate by the
//!   ranks found.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

const STEP: &str = "execute_context_0(0)_generation_1(1)";

/// A complete event (times in µs as Kineto writes them).
fn x(cat: &str, name: &str, pid: u64, tid: u64, ts: &str, dur: &str, args: &str) -> String {
    format!(
        r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":{pid},"tid":{tid},"ts":{ts},"dur":{dur},"args":{{{args}}}}}"#
    )
}

fn doc(events: &[String]) -> String {
    format!("{{\"traceEvents\":[{}]}}", events.join(","))
}

/// What a hostile name holds: clear screen, bell, NUL, a C1 CSI (U+009B).
const EVIL: &str = r"evil\u001b[2J\u0007\u0000\u009b31m";

/// One step launching one kernel; the op and the kernel named with
/// [`EVIL`]; `k` kernels of `dur` µs on stream 7.
fn hostile(k: usize, dur: &str) -> String {
    let mut ev = vec![x("user_annotation", STEP, 1, 1, "0", "100", "")];
    ev.push(x(
        "cpu_op",
        &format!("aten::{EVIL}"),
        1,
        1,
        "10",
        "50",
        "\"External id\":1",
    ));
    for c in 1..=k {
        let a = format!("\"correlation\":{c},\"External id\":1");
        ev.push(x("cuda_runtime", "cudaLaunchKernel", 1, 1, "20", "1", &a));
        ev.push(x(
            "kernel",
            &format!("k{EVIL}"),
            0,
            7,
            &format!("{}", 30 + 20 * c),
            dur,
            &a,
        ));
    }
    doc(&ev)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("runs")
}

/// No control character but the line feed.
fn clean(what: &str, bytes: &[u8]) {
    let s = String::from_utf8_lossy(bytes);
    let bad: Vec<char> = s.chars().filter(|c| c.is_control() && *c != '\n').collect();
    assert!(
        bad.is_empty(),
        "{what}: raw control characters {bad:?} in\n{s}"
    );
}

// ---------------------------------------------------------------------------
// Terminal safety.
// ---------------------------------------------------------------------------

#[test]
fn tables_and_csv_escape_control_characters_from_names() {
    let t = tempfile::tempdir().unwrap();
    let a = write(t.path(), "a.json", &hostile(1, "10"));
    let b = write(t.path(), "b.json", &hostile(2, "10"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let cases: [(&str, Vec<&str>); 4] = [
        ("ops", vec!["ops", "--top", "5", a]),
        ("kernels", vec!["kernels", a]),
        ("diff", vec!["diff", a, b]),
        ("pair", vec!["pair", a]),
    ];
    for (what, args) in cases {
        for format in ["table", "csv"] {
            let mut all = args.clone();
            all.extend(["-f", format]);
            let out = run(&all);
            assert!(
                matches!(out.status.code(), Some(0 | 1)),
                "{what} -f {format}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            clean(&format!("{what} -f {format} stdout"), &out.stdout);
            clean(&format!("{what} -f {format} stderr"), &out.stderr);
        }
    }
    // The names are there, escaped as -f markdown escapes them.
    for args in [vec!["kernels", a], vec!["diff", a, b]] {
        let out = String::from_utf8(run(&args).stdout).unwrap();
        assert!(
            out.contains(r"kevil\u{1b}[2J\u{7}\0\u{9b}31m"),
            "{args:?}:\n{out}"
        );
    }
}

// ---------------------------------------------------------------------------
// Export's temporary files.
// ---------------------------------------------------------------------------

fn parquet_rows(p: &Path) -> usize {
    let f = std::fs::File::open(p).unwrap();
    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum()
}

const TABLES: [&str; 5] = ["activities", "launches", "memory", "ops", "steps"];

/// Links planted at every name the old export used in DIR (the partial
/// files of a multi-trace export, and a final name) point outside it:
/// nothing is written through them, and the tables are plain files.
#[cfg(unix)]
#[test]
fn export_never_writes_through_a_planted_link() {
    let t = tempfile::tempdir().unwrap();
    let a = write(t.path(), "a.json", &hostile(1, "10"));
    let b = write(t.path(), "b.json", &hostile(3, "10"));
    let out = t.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let victim = write(t.path(), "victim", "precious");
    for table in TABLES {
        std::os::unix::fs::symlink(&victim, out.join(format!(".{table}.parquet.partial"))).unwrap();
    }
    std::os::unix::fs::symlink(&victim, out.join("activities.parquet")).unwrap();
    let o = run(&[
        "-q",
        "export",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    for table in TABLES {
        let p = out.join(format!("{table}.parquet"));
        assert!(std::fs::symlink_metadata(&p).unwrap().is_file(), "{table}");
    }
    assert_eq!(parquet_rows(&out.join("activities.parquet")), 4);
    // Nothing of the run is left but the tables and the planted links.
    let mut left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".partial"))
        .collect();
    left.sort();
    assert_eq!(left, TABLES.map(|t| format!("{t}.parquet")));
}

/// A directory another export holds (its lock taken here) is refused at
/// once, exit 2, with a message that says why; free again, it is written.
#[test]
fn export_into_a_busy_directory_fails_clearly() {
    let t = tempfile::tempdir().unwrap();
    let a = write(t.path(), "a.json", &hostile(1, "10"));
    let out = t.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let lock = std::fs::File::create(out.join(".torchtrace-export.lock")).unwrap();
    lock.try_lock().unwrap();
    let args = [
        "-q",
        "export",
        a.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    let o = run(&args);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("another torchtrace export is writing into this directory"),
        "{err}"
    );
    assert!(!out.join("activities.parquet").exists());
    lock.unlock().unwrap();
    let o = run(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(parquet_rows(&out.join("activities.parquet")), 1);
}

/// Two exports into one directory at once: each succeeds or fails with
/// the lock's message, at least one succeeds, and every table is intact
/// (the rows of one whole export).
#[test]
fn concurrent_exports_leave_intact_tables() {
    let t = tempfile::tempdir().unwrap();
    let a = write(t.path(), "a.json", &hostile(200, "10"));
    let out = t.path().join("out");
    for round in 0..3 {
        let kids: Vec<_> = (0..2)
            .map(|_| {
                std::process::Command::new(env!("CARGO_BIN_EXE_torchtrace"))
                    .args([
                        "-q",
                        "export",
                        a.to_str().unwrap(),
                        "-o",
                        out.to_str().unwrap(),
                    ])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut ok = 0;
        for k in kids {
            let o = k.wait_with_output().unwrap();
            match o.status.code() {
                Some(0) => ok += 1,
                Some(2) => assert!(
                    String::from_utf8_lossy(&o.stderr).contains("another torchtrace export"),
                    "{}",
                    String::from_utf8_lossy(&o.stderr)
                ),
                c => panic!("round {round}: exit {c:?}"),
            }
        }
        assert!(ok >= 1, "round {round}");
        assert_eq!(parquet_rows(&out.join("activities.parquet")), 200);
        assert_eq!(parquet_rows(&out.join("launches.parquet")), 200);
    }
}

/// The same trace given twice (the same path, and a copy) is exported
/// once, with a note: `(trace, id)` stays a key.
#[test]
fn export_of_the_same_trace_twice_is_deduplicated() {
    let t = tempfile::tempdir().unwrap();
    let a = write(t.path(), "a.json", &hostile(3, "10"));
    let copy = write(t.path(), "copy.json", &hostile(3, "10"));
    let out = t.path().join("out");
    let (a, copy) = (a.to_str().unwrap(), copy.to_str().unwrap());
    let o = run(&["export", a, a, copy, "-o", out.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(parquet_rows(&out.join("activities.parquet")), 3);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("is the same trace as").count(), 2, "{err}");
    assert!(err.contains("exported once"), "{err}");
}

// ---------------------------------------------------------------------------
// Wide sums.
// ---------------------------------------------------------------------------

/// Three streams, each with two kernels 9·10¹⁸ ns apart: each stream's
/// idle fits i64, their sum (2.7·10¹⁹ ns) does not. `idle` gave a panic
/// in debug builds (wrap in release); now every sum is exact in JSON.
#[test]
fn idle_sums_past_i64_are_exact() {
    let t = tempfile::tempdir().unwrap();
    let mut ev = vec![x("user_annotation", STEP, 1, 1, "0", "100", "")];
    let mut c = 0;
    for stream in [7, 8, 9] {
        for ts in ["0", "9000000000000000"] {
            c += 1;
            let a = format!("\"correlation\":{c}");
            ev.push(x("cuda_runtime", "cudaLaunchKernel", 1, 1, "1", "1", &a));
            ev.push(x("kernel", "k", 0, stream, ts, "1", &a));
        }
    }
    let p = write(t.path(), "wide.json", &doc(&ev));
    let o = run(&["-q", "idle", p.to_str().unwrap(), "-f", "json"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    // serde_json's Value holds at most u64: read the figure's text.
    let gap: i128 = 9_000_000_000_000_000_000 - 1_000;
    let sum = 3 * gap;
    assert!(sum > i128::from(i64::MAX));
    let device_idle = format!("\"idle_ns\":{sum}");
    assert!(
        text.replace([' ', '\n'], "").contains(&device_idle),
        "{text}"
    );
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let _ = v;
    // The table shows the exact figure too.
    let o = run(&["-q", "idle", p.to_str().unwrap()]);
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(table.contains(&sum.to_string()), "{table}");
}

// ---------------------------------------------------------------------------
// ranks.
// ---------------------------------------------------------------------------

/// Two 2 KB traces named rank 0 and rank 4 000 000 000: the run lists 64
/// missing ranks and counts the rest, under a 1 GiB address-space limit
/// (before: a list of four billion ranks, abort).
#[cfg(unix)]
#[test]
fn ranks_allocate_by_the_ranks_found() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    for r in ["0", "4000000000"] {
        write(
            &dir,
            &format!("dp0_pp0_tp0_dcp0_ep0_rank{r}.1.pt.trace.json"),
            &hostile(1, "10"),
        );
    }
    let exe = assert_cmd::cargo::cargo_bin("torchtrace");
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -v 1048576; exec '{}' -q ranks '{}' -f json",
            exe.display(),
            dir.display()
        ))
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{:?}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let run = &v["runs"][0];
    assert_eq!(run["missing_count"], 3_999_999_999u64);
    assert_eq!(run["missing_ranks"].as_array().unwrap().len(), 64);
    assert_eq!(run["missing_ranks"][63], 64);
}

/// Two calls of `f` (the chain `f>g`), each launching two kernels whose
/// union on the GPU passes i64 ns (one before the epoch, one after: each
/// time fits i64, their span does not). `hierarchy`'s per-call GPU busy
/// median is exact (before, each call's busy was clamped to i64::MAX
/// first: a median of 9 223 372 036 854.775807 ms).
#[test]
fn hierarchy_gpu_busy_median_is_exact_past_i64() {
    use torchtrace::analyses::hierarchy::{Hierarchy, HierarchyOptions};
    use torchtrace::{analyze_reader, Plan, Selector};
    let mut ev = vec![x("user_annotation", STEP, 1, 1, "0", "100", "")];
    // (call start µs, [(kernel ts µs, dur µs); 2]): busy 10¹⁹ − 10⁶ ns and
    // 10¹⁹ ns.
    let calls = [
        (
            10,
            [
                ("-5000000000000000", "4999999999999000"),
                ("0", "5000000000000000"),
            ],
        ),
        (
            40,
            [
                ("-4000000000000000", "4000000000000000"),
                ("0", "6000000000000000"),
            ],
        ),
    ];
    let mut corr = 0;
    for (start, kernels) in calls {
        ev.push(x("cpu_op", "f", 1, 1, &start.to_string(), "20", ""));
        ev.push(x("cpu_op", "g", 1, 1, &(start + 1).to_string(), "1", ""));
        for (k, (ts, dur)) in kernels.into_iter().enumerate() {
            corr += 1;
            let a = format!("\"correlation\":{corr}");
            let at = (start + 2 + k).to_string();
            ev.push(x("cuda_runtime", "cudaLaunchKernel", 1, 1, &at, "1", &a));
            ev.push(x("kernel", "k", 0, 7, ts, dur, &a));
        }
    }
    let opts = HierarchyOptions::new(&["f>g".into()], &[], false, 5, Selector::Auto).unwrap();
    let plan = Plan::new(Selector::Auto).with(opts);
    let mut r = analyze_reader("wide", doc(&ev).as_bytes(), &plan);
    assert!(r.error.is_none(), "{:?}", r.error);
    let h = r.take::<Hierarchy>().unwrap();
    let f = &h.chains[0].functions[0];
    assert_eq!((f.calls, f.outermost_calls), (2, 2));
    let gpu = f.gpu.as_ref().unwrap();
    assert_eq!(gpu.kernels, 4);
    assert_eq!(gpu.gpu_busy_sum_ns, 20_000_000_000_000_000_000 - 1_000_000);
    // (2·10¹⁹ − 10⁶) / 2 ns = 9 999 999 999 999.5 ms.
    assert_eq!(gpu.gpu_busy_median_ms, Some(9_999_999_999_999.5));
}
