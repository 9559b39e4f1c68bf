//! Memory per unit of input (issue 59): what `idle` and `batch` keep per
//! decode step, per stream and per trace, counted by a counting allocator
//! (this test binary's global allocator: bytes live at the peak, not RSS,
//! not time), and a campaign that keeps its other results when one member
//! passes its memory budget.
//!
//! The traces are made in the test in the shapes of
//! `bench/hostile_memory.py` (the first decode step of the text AR sample:
//! its annotation name, its `cudaLaunchKernel`, its kernel name and args),
//! at two sizes each; the bound is on the slope between them, so the
//! fixed cost (the binary's tables, the reader's buffers) does not count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                let now = LIVE.fetch_add(new - l.size(), Ordering::Relaxed) + new - l.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// One measurement at a time (the counters are the process's).
static TURN: Mutex<()> = Mutex::new(());

/// The most bytes live during `f` above those live before it.
fn peak_of(f: impl FnOnce()) -> usize {
    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    f();
    PEAK.load(Ordering::SeqCst).saturating_sub(before)
}

const STEP: &str = "execute_context_0(0)_generation_1(1)";
const KERNEL: &str = "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool)";

/// µs with three decimals from ns.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// Step `i` at `t0` ns with `kernels` launches, each kernel on stream
/// `stream + k` (or 7).
fn step(out: &mut String, i: u64, t0: u64, kernels: u64, stream: Option<u64>) {
    let t0 = t0 + 5_111_123_759_707_892;
    out.push_str(&format!(
        r#"{{"ph":"X","cat":"user_annotation","name":"{STEP}","pid":439,"tid":439,"ts":{},"dur":{},"args":{{"External id":{},"Record function id":0}}}},"#,
        us(t0),
        us(1000 + 2000 * kernels),
        10 * i + 1
    ));
    for k in 0..kernels {
        let corr = 1000 + i * kernels + k;
        let s = stream.map_or(7, |s| s + k);
        out.push_str(&format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":439,"tid":439,"ts":{},"dur":0.500,"args":{{"External id":{},"cbid":211,"correlation":{corr}}}}},"#,
            us(t0 + 100 + 2000 * k),
            10 * i + 2
        ));
        out.push_str(&format!(
            r#"{{"ph":"X","cat":"kernel","name":"{KERNEL}","pid":0,"tid":{s},"ts":{},"dur":0.800,"args":{{"External id":{},"queued":0,"device":0,"context":1,"stream":{s},"correlation":{corr},"registers per thread":32,"shared memory":0,"grid":[96,1,1],"block":[128,1,1]}}}},"#,
            us(t0 + 700 + 2000 * k),
            10 * i + 2
        ));
    }
}

fn document(body: String) -> String {
    let body = body.trim_end_matches(',');
    format!(
        r#"{{"schemaVersion":1,"deviceProperties":[{{"id":0,"name":"NVIDIA H200","totalGlobalMem":150109880320,"computeMajor":9,"computeMinor":0,"numSms":132}}],"traceEvents":[{body}],"traceName":"t"}}"#
    )
}

/// `n` decode steps of one launch and one kernel.
fn steps_trace(n: u64) -> String {
    let mut s = String::new();
    for i in 0..n {
        step(&mut s, i, 4000 * i, 1, None);
    }
    document(s)
}

/// One step whose `n` kernels each run on a stream of their own.
fn streams_trace(n: u64) -> String {
    let mut s = String::new();
    step(&mut s, 0, 0, n, Some(100));
    document(s)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::File::create(&p)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    p
}

/// Peak bytes of `idle` on the trace, its JSON document written (with
/// every step row) to nowhere.
fn idle_peak(path: &Path) -> usize {
    let common = torchtrace::api::Common {
        quiet: true,
        ..Default::default()
    };
    peak_of(|| {
        let out = torchtrace::api::run_named(
            "idle",
            &[path.to_path_buf()],
            &common,
            &serde_json::json!({}),
        )
        .unwrap();
        out.report
            .write_to(&mut std::io::sink(), torchtrace::report::Format::Json, true)
            .unwrap();
    })
}

/// The slope of `peak` between sizes `a` and `b` of a shape (bytes per unit).
fn slope(dir: &Path, make: fn(u64) -> String, a: u64, b: u64) -> usize {
    let pa = write(dir, &format!("a{a}.pt.trace.json"), &make(a));
    let pb = write(dir, &format!("b{b}.pt.trace.json"), &make(b));
    let (x, y) = (idle_peak(&pa), idle_peak(&pb));
    y.saturating_sub(x) / (b - a) as usize
}

/// docs/PERFORMANCE.md, "Memory bounds": `idle` keeps at most 700 B per decode step
/// (was about 5 KB: a 1 KB row struct and the whole document as one JSON
/// value) and 2.5 KB per single-activity stream (was about 9 KB).
#[test]
fn idle_keeps_a_small_constant_per_step_and_per_stream() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let per_step = slope(tmp.path(), steps_trace, 2_000, 8_000);
    let per_stream = slope(tmp.path(), streams_trace, 1_000, 4_000);
    eprintln!("idle: {per_step} B per step, {per_stream} B per stream");
    assert!(per_step <= 700, "{per_step} B per step");
    assert!(per_stream <= 2_500, "{per_stream} B per stream");
}

/// A step row as `idle` keeps it: a varint record of at most 100 B on the
/// real sample (its struct with the queue map took about 1 KB).
#[test]
fn idle_step_rows_are_compact_records() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "sample_traces/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz",
    );
    let common = torchtrace::api::Common {
        quiet: true,
        ..Default::default()
    };
    let out = torchtrace::api::run::<torchtrace::analyses::idle::Idle>(
        &[sample],
        &common,
        &Default::default(),
    )
    .unwrap();
    let rows = &out.report.traces[0].steps.rows;
    assert_eq!(rows.len(), 68);
    let per_row = rows.bytes() / rows.len();
    eprintln!("idle: {per_row} B per step row record");
    assert!(per_row <= 100, "{per_row} B per row");
}

/// `n` tiny traces (three steps each) with their ranks in their names.
fn campaign(dir: &Path, n: u64) {
    std::fs::create_dir_all(dir).unwrap();
    for r in 0..n {
        let mut s = String::new();
        for i in 0..3 {
            step(&mut s, i, 4000 * i + r, 1, None);
        }
        write(
            dir,
            &format!("dp0_pp0_tp0_dcp0_ep0_rank{r}.{}.pt.trace.json", 1000 + r),
            &document(s),
        );
    }
}

/// docs/PERFORMANCE.md, "Memory bounds": `batch` keeps at most 40 KB per tiny trace
/// from its read to its outputs written (was about 190 KB: every trace's
/// figures cloned in the merge, and every entry of results.json made as a
/// JSON value at once).
#[test]
fn batch_keeps_a_bounded_amount_per_trace() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let run = |n: u64| {
        let dir = tmp.path().join(format!("c{n}"));
        campaign(&dir, n);
        let out = tmp.path().join(format!("out{n}"));
        let opts = torchtrace::batch::records::CampaignOptions::default()
            .batch_options(true)
            .unwrap();
        peak_of(|| {
            let (res, context) = torchtrace::batch::run_batch(&[dir], &opts).unwrap();
            torchtrace::batch::output::write_all(&res, &out, &context, None).unwrap();
        })
    };
    let (a, b) = (run(40), run(160));
    let per_trace = b.saturating_sub(a) / 120;
    eprintln!("batch: {a} B at 40 traces, {b} B at 160: {per_trace} B per trace");
    assert!(per_trace <= 40_000, "{per_trace} B per trace");
}

/// A member over its memory budget is that file's error row; the
/// campaign keeps every other trace's results, tables and report.
#[test]
fn a_member_over_its_budget_costs_only_its_own_row() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    campaign(&dir, 3);
    // A big member: 20 000 steps, 60 000 events fed to the analyses.
    write(
        &dir,
        "dp0_pp0_tp0_dcp0_ep0_rank9.9999.pt.trace.json",
        &steps_trace(20_000),
    );
    let out = tmp.path().join("out");
    // 4 MiB at 4 KiB an event: 1024 events, enough for the tiny traces
    // (9 events each).
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_torchtrace"))
        .args(["-q", "batch", "--no-figures", "--member-memory", "4M", "-o"])
        .arg(&out)
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let traces = results["traces"].as_array().unwrap();
    let status = |name: &str| {
        traces
            .iter()
            .find(|t| t["path"].as_str().unwrap().contains(name))
            .map(|t| (t["status"].clone(), t["error"].clone()))
            .unwrap()
    };
    let (s, e) = status("rank9.");
    assert_eq!(s, "error");
    let e = e.as_str().unwrap();
    assert!(e.contains("over its memory budget of 4 MiB"), "{e}");
    // What it was fed, of what it needs (60 000 events, 4 KiB each).
    assert!(
        e.contains("first 1024 events of the 60000 they take"),
        "{e}"
    );
    assert!(e.contains("batch --member-memory 235M or more"), "{e}");
    for r in 0..3 {
        let (s, e) = status(&format!("rank{r}."));
        assert_eq!((s, e), ("ok".into(), serde_json::Value::Null));
    }
    assert_eq!(results["failed"], 1);
    let csv = std::fs::read_to_string(out.join("traces.csv")).unwrap();
    assert!(csv.contains("over its memory budget"), "{csv}");
    assert!(out.join("report.md").exists());
    // Without the flag (the memory the process may use, shared) every
    // member is read whole.
    let whole = std::process::Command::new(env!("CARGO_BIN_EXE_torchtrace"))
        .args(["-q", "batch", "--no-figures", "-o"])
        .arg(tmp.path().join("out2"))
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(whole.status.code(), Some(0));
}

/// Bytes live at the peak of `batch` on one trace, its outputs written:
/// every analysis of its plan, what one campaign member keeps.
fn member_peak(dir: &Path, name: &str, text: &str) -> usize {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let p = write(&d, "dp0_pp0_tp0_dcp0_ep0_rank0.1.pt.trace.json", text);
    let out = dir.join(format!("{name}.out"));
    let opts = torchtrace::batch::records::CampaignOptions::default()
        .batch_options(true)
        .unwrap();
    peak_of(|| {
        let (res, context) = torchtrace::batch::run_batch(&[p], &opts).unwrap();
        torchtrace::batch::output::write_all(&res, &out, &context, None).unwrap();
    })
}

/// `batch --member-memory`'s constant bounds what a member keeps per event
/// fed (`analysis::MemoryBudget::PER_EVENT`), on both hostile shapes: a
/// decode step is 3 events fed (annotation, launch, kernel), a
/// single-activity stream 2 (launch, kernel), the costliest per event
/// (docs/PERFORMANCE.md, "Memory bounds": 3.65 KB of peak RSS per event fed).
#[test]
fn a_batch_member_keeps_at_most_the_budget_per_event_fed() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let per_event = |make: fn(u64) -> String, a: u64, b: u64, events_per_unit: u64| {
        let x = member_peak(tmp.path(), &format!("a{a}"), &make(a));
        let y = member_peak(tmp.path(), &format!("b{b}"), &make(b));
        y.saturating_sub(x) as u64 / ((b - a) * events_per_unit)
    };
    let steps = per_event(steps_trace, 2_000, 8_000, 3);
    let streams = per_event(streams_trace, 1_000, 4_000, 2);
    let budget = torchtrace::analysis::MemoryBudget::PER_EVENT;
    eprintln!(
        "batch member: {steps} B per event fed (steps), {streams} (streams); budget {budget}"
    );
    assert!(steps <= budget, "{steps} B per event fed on steps");
    assert!(streams <= budget, "{streams} B per event fed on streams");
    // The steps are the cheaper shape per event: a stream's state is kept
    // once per activity.
    assert!(steps < streams, "{steps} vs {streams}");
}

/// Runs `torchtrace -q batch --no-figures ARGS -o OUT DIR`, under an
/// address-space limit of `address_space` bytes when given.
fn batch_run(
    args: &[&str],
    out: &Path,
    dir: &Path,
    address_space: Option<u64>,
) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_torchtrace"));
    cmd.args(["-q", "batch", "--no-figures"])
        .args(args)
        .arg("-o")
        .arg(out)
        .arg(dir);
    if let Some(bytes) = address_space {
        // SAFETY: setrlimit is async-signal-safe and touches only the
        // child's own limit between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
    cmd.output().unwrap()
}

/// Each trace's (status, error) in `results.json`, by path.
fn statuses(out: &Path) -> Vec<(String, String, Option<String>)> {
    let text = std::fs::read_to_string(out.join("results.json")).unwrap();
    let results: serde_json::Value = serde_json::from_str(&text).unwrap();
    results["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["path"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
                t["error"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// Three tiny traces and a member of 20 000 steps (60 000 events fed),
/// in `TMP/c`.
fn campaign_with_a_big_member() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    campaign(&dir, 3);
    write(
        &dir,
        "dp0_pp0_tp0_dcp0_ep0_rank9.9999.pt.trace.json",
        &steps_trace(20_000),
    );
    (tmp, dir)
}

/// The memory the campaign may use is shared by the traces read at
/// once, not divided by `-j`: at `-j 16` under 1 GiB, a member of 60 000
/// events fed (which the worst-case rule, 4 KiB an event of 1 GiB / 16,
/// refused past 16 384 events) is read whole with the others.
#[test]
fn a_trace_that_fits_is_read_at_any_j() {
    // Its child's output buffers would count in another test's peak.
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let (tmp, dir) = campaign_with_a_big_member();
    let out = tmp.path().join("out");
    let run = batch_run(&["-j", "16", "--memory", "1G"], &out, &dir, None);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let rows = statuses(&out);
    assert_eq!(rows.len(), 4);
    for (path, status, error) in rows {
        assert_eq!((status.as_str(), error), ("ok", None), "{path}");
    }
}

/// A member that cannot fit while read alone becomes its own error row,
/// with what it was fed and the limit it met; the others are read whole
/// and every output is written.
#[test]
fn a_member_that_cannot_fit_alone_costs_only_its_own_row() {
    // Its child's output buffers would count in another test's peak.
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let (tmp, dir) = campaign_with_a_big_member();
    let out = tmp.path().join("out");
    // 4 MiB: less than the process holds before any trace is read. The
    // tiny traces (9 events) end before the first check.
    let run = batch_run(&["-j", "4", "--memory", "4M"], &out, &dir, None);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    for (path, status, error) in statuses(&out) {
        if path.contains("rank9.") {
            assert_eq!(status, "error");
            let e = error.unwrap();
            assert!(
                e.contains("needs more memory than the process may use, 4 MiB (given)"),
                "{e}"
            );
            assert!(e.contains("of the 60000 events they take"), "{e}");
        } else {
            assert_eq!((status.as_str(), error), ("ok", None), "{path}");
        }
    }
    for f in ["traces.csv", "report.md", "hierarchy.csv"] {
        assert!(out.join(f).exists(), "{f}");
    }
}

/// Under an address-space limit (`prlimit --as`) the campaign never
/// aborts: at each limit every output is written, and each trace is ok or
/// names the limit it met.
#[test]
fn under_an_address_space_limit_every_output_is_written() {
    // Its child's output buffers would count in another test's peak.
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces");
    for run in ["text_ar", "text_mtp"] {
        let d = dir.join(run);
        std::fs::create_dir_all(&d).unwrap();
        for e in std::fs::read_dir(root.join(run)).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("dp0_") {
                std::fs::copy(e.path(), d.join(&name)).unwrap();
            }
        }
    }
    // And a member whose finishes need more than the limit leaves (at
    // 400 k steps under 300–500 MiB its finishes aborted the process:
    // allocations of 16–77 MB, two finishes side by side).
    std::fs::create_dir_all(dir.join("big")).unwrap();
    let big = "dp0_pp0_tp0_dcp0_ep0_rank9.9999.pt.trace.json";
    write(&dir.join("big"), big, &steps_trace(100_000));
    for mib in [200u64, 300, 500] {
        let out = tmp.path().join(format!("out{mib}"));
        let run = batch_run(&["-j", "4"], &out, &dir, Some(mib << 20));
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            matches!(run.status.code(), Some(0 | 1)),
            "{mib} MiB: {:?} {stderr}",
            run.status
        );
        for f in ["results.json", "traces.csv", "report.md"] {
            assert!(out.join(f).exists(), "{mib} MiB: {f}");
        }
        for (path, status, error) in statuses(&out) {
            let named = error.as_deref().is_some_and(|e| e.contains("RLIMIT_AS"));
            assert!(status == "ok" || named, "{mib} MiB: {path} {error:?}");
        }
    }
}
