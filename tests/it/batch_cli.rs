//! `torchtrace batch` end to end on the bundled sample traces: directory,
//! tar.gz and zip inputs, broken and unsafe members, thread counts, and
//! agreement with `torchtrace pair`.

use crate::common;

use assert_cmd::Command;
use flate2::write::GzEncoder;
use flate2::Compression;
use serde_json::Value;
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample_traces");

/// Every file under sample_traces: (relative name, bytes), sorted.
fn sample_files() -> Vec<(String, Vec<u8>)> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, Vec<u8>)>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let r = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), &r, out);
            } else {
                out.push((r, fs::read(e.path()).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(Path::new(SAMPLES), "", &mut out);
    out.sort();
    out
}

/// The CUDA-graph pair (`text_graphs_{ar,mtp}/`, issue 57): its capture
/// traces are read beside a trace on disk, not inside an archive.
fn is_graph_pair(name: &str) -> bool {
    name.starts_with("text_graphs_")
}

/// The sample files but the graph pair, written under `dir`.
fn samples_without_graph_pair(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let files: Vec<_> = sample_files()
        .into_iter()
        .filter(|(n, _)| !is_graph_pair(n))
        .collect();
    for (name, data) in &files {
        let p = dir.join(name);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, data).unwrap();
    }
    files
}

/// A tar header for `name`, written raw (the tar crate refuses `..`).
fn raw_header(name: &str, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_size(size);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    let gnu = h.as_gnu_mut().unwrap();
    gnu.name[..name.len()].copy_from_slice(name.as_bytes());
    h.set_cksum();
    h
}

fn write_tar_gz(path: &Path, files: &[(String, Vec<u8>)]) {
    let gz = GzEncoder::new(File::create(path).unwrap(), Compression::fast());
    let mut b = tar::Builder::new(gz);
    for (name, data) in files {
        b.append(&raw_header(name, data.len() as u64), &data[..])
            .unwrap();
    }
    b.into_inner().unwrap().finish().unwrap();
}

fn write_zip(path: &Path, files: &[(String, Vec<u8>)]) {
    let mut z = zip::ZipWriter::new(File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in files {
        z.start_file(name.as_str(), opts).unwrap();
        z.write_all(data).unwrap();
    }
    z.finish().unwrap();
}

fn torchtrace() -> Command {
    Command::cargo_bin("torchtrace").unwrap()
}

/// Runs `batch` and returns (exit code, stdout, stderr).
fn batch(args: &[&str], out: &Path) -> (i32, String, String) {
    let o = torchtrace()
        .arg("batch")
        .args(args)
        .arg("-o")
        .arg(out)
        .arg("--no-figures")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn results(out: &Path) -> Value {
    let mut v: Value =
        serde_json::from_slice(&fs::read(out.join("results.json")).unwrap()).unwrap();
    // The only input-specific part: the PATH as given and its kind.
    v.as_object_mut().unwrap().remove("inputs");
    v
}

fn trace<'a>(v: &'a Value, path: &str) -> &'a Value {
    v["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"] == path)
        .unwrap_or_else(|| panic!("no trace {path}"))
}

/// The same campaign as a directory, a tar.gz and a zip (the graph pair
/// apart: an archive's capture traces are not read, see
/// `graph_pair_in_an_archive_says_why_replays_are_unmatched`).
#[test]
fn directory_tar_gz_and_zip_give_identical_results() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("campaign");
    let files = samples_without_graph_pair(&dir);
    let tgz = tmp.path().join("campaign.tar.gz");
    let zip = tmp.path().join("campaign.zip");
    write_tar_gz(&tgz, &files);
    write_zip(&zip, &files);
    let mut outs = Vec::new();
    for (i, input) in [dir, tgz, zip].iter().enumerate() {
        let out = tmp.path().join(format!("out{i}"));
        let (code, stdout, stderr) = batch(&[input.to_str().unwrap(), "-q"], &out);
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("Table 8"), "{stdout}");
        outs.push(out);
    }
    let dir = results(&outs[0]);
    assert_eq!(dir["traces"].as_array().unwrap().len(), files.len());
    assert_eq!(dir["comparisons"].as_array().unwrap().len(), 3);
    let ar = trace(
        &dir,
        "text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz",
    );
    assert_eq!(ar["status"], "ok");
    assert_eq!(ar["mode"], "ar");
    assert_eq!(ar["workload"], "text");
    assert_eq!(ar["completion_tokens"], 68);
    assert_eq!(ar["pairs"], 64);
    let fe = trace(
        &dir,
        "text_mtp/vm_439.async_llm.1795968155950133233.pt.trace.json.gz",
    );
    assert_eq!(
        (&fe["status"], &fe["kind"]),
        (&"skipped".into(), &"frontend".into())
    );
    for other in &outs[1..] {
        assert_eq!(dir, results(other), "{}", other.display());
        for f in ["traces.csv", "workloads.csv", "hierarchy.csv"] {
            assert_eq!(
                fs::read(outs[0].join(f)).unwrap(),
                fs::read(other.join(f)).unwrap(),
                "{f}"
            );
        }
    }
    for f in ["workloads.md", "hierarchy.md", "report.md"] {
        assert!(outs[0].join(f).is_file(), "{f}");
    }
}

#[test]
fn truncated_member_fails_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let mut files = sample_files();
    let bad = "reasoning_mtp/dp0_pp0_tp0_dcp0_ep0_rank0.1795968154053135882.pt.trace.json.gz";
    let entry = files.iter_mut().find(|(n, _)| n == bad).unwrap();
    let half = entry.1.len() / 2;
    entry.1.truncate(half);
    let tgz = tmp.path().join("broken.tgz");
    write_tar_gz(&tgz, &files);
    let out = tmp.path().join("out");
    let (code, stdout, stderr) = batch(&[tgz.to_str().unwrap()], &out);
    assert_eq!(code, 1, "{stderr}");
    let v = results(&out);
    let attempted = v["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] != "skipped")
        .count();
    assert!(
        stderr.contains(&format!("1 of {attempted} failed")),
        "{stderr}"
    );
    let t = trace(&v, bad);
    assert_eq!(t["status"], "error");
    let err = t["error"].as_str().unwrap();
    assert!(err.contains("byte"), "{err}");
    assert!(stdout.contains(bad), "{stdout}");
    for t in v["traces"].as_array().unwrap() {
        if t["path"] != bad {
            assert_ne!(t["status"], "error", "{t}");
        }
    }
    // The other two workloads are still compared.
    let wl: Vec<&str> = v["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["workload"].as_str().unwrap())
        .collect();
    assert_eq!(wl, ["text", "text_graphs", "tool_calling"]);
    let csv = fs::read_to_string(out.join("traces.csv")).unwrap();
    assert_eq!(csv.lines().count(), files.len() + 1);
}

#[test]
fn unsafe_member_names_are_reported_not_written() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("a/b");
    fs::create_dir_all(&work).unwrap();
    let trace = fs::read(format!(
        "{SAMPLES}/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz"
    ))
    .unwrap();
    let files = vec![
        ("../evil.pt.trace.json.gz".to_string(), trace.clone()),
        ("ok/good.pt.trace.json.gz".to_string(), trace.clone()),
    ];
    let tgz = work.join("evil.tar.gz");
    write_tar_gz(&tgz, &files);
    let zip = work.join("evil.zip");
    let mut zfiles = files.clone();
    zfiles.push(("/abs/evil2.pt.trace.json.gz".to_string(), trace));
    write_zip(&zip, &zfiles);
    for (i, input) in [&tgz, &zip].iter().enumerate() {
        let out = work.join(format!("out{i}"));
        let (code, _, stderr) = batch(&[input.to_str().unwrap(), "-q"], &out);
        assert_eq!(code, 1, "{stderr}");
        let v = results(&out);
        let evil = trace_by_prefix(&v, "../evil");
        assert_eq!(evil["status"], "error");
        assert!(evil["error"]
            .as_str()
            .unwrap()
            .contains("unsafe member name"));
        assert!(evil.get("pairs").is_none());
        assert_eq!(trace_by_prefix(&v, "ok/good")["status"], "ok");
        if i == 1 {
            let abs = trace_by_prefix(&v, "/abs/evil2");
            assert!(abs["error"]
                .as_str()
                .unwrap()
                .contains("unsafe member name"));
        }
        assert!(
            stderr.contains(&format!("{} of {} failed", 1 + i, 2 + i)),
            "{stderr}"
        );
    }
    // Nothing named after a member was written anywhere.
    let mut stack = vec![tmp.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(
                !name.contains("evil.pt") && !name.contains("evil2") && name != "abs",
                "{}",
                e.path().display()
            );
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
}

fn trace_by_prefix<'a>(v: &'a Value, prefix: &str) -> &'a Value {
    v["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"].as_str().unwrap().starts_with(prefix))
        .unwrap_or_else(|| panic!("no trace {prefix}…"))
}

#[test]
fn one_and_two_threads_write_identical_files() {
    let tmp = tempfile::tempdir().unwrap();
    let tgz = tmp.path().join("c.tar.gz");
    write_tar_gz(&tgz, &sample_files());
    for input in [SAMPLES, tgz.to_str().unwrap()] {
        let o1 = tmp.path().join("j1");
        let o2 = tmp.path().join("j2");
        let _ = fs::remove_dir_all(&o1);
        let _ = fs::remove_dir_all(&o2);
        assert_eq!(batch(&[input, "-j", "1", "-q"], &o1).0, 0);
        assert_eq!(batch(&[input, "-j", "2", "-q"], &o2).0, 0);
        for f in [
            "results.json",
            "traces.csv",
            "workloads.csv",
            "workloads.md",
            "hierarchy.csv",
            "hierarchy.md",
            "report.md",
        ] {
            assert_eq!(
                fs::read(o1.join(f)).unwrap(),
                fs::read(o2.join(f)).unwrap(),
                "{input}: {f}"
            );
        }
    }
}

#[test]
fn s_context_equals_pair_and_figures_are_linked() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = torchtrace()
        .args(["batch", SAMPLES, "-q", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = fs::read_to_string(out.join("report.md")).unwrap();
    let figs: Vec<_> = fs::read_dir(out.join("figures"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!figs.is_empty());
    for f in &figs {
        assert!(report.contains(&format!("(figures/{f})")), "{f}");
    }
    let mut rd = csv::Reader::from_path(out.join("workloads.csv")).unwrap();
    let heads = rd.headers().unwrap().clone();
    let col = |n: &str| heads.iter().position(|h| h == n).unwrap();
    let mut seen = 0;
    for row in rd.records() {
        let row = row.unwrap();
        let (base, cand) = (&row[col("baseline")], &row[col("candidate")]);
        let s: f64 = row[col("s_context")].parse().unwrap();
        let o = torchtrace()
            .args(["pair", "-f", "json", "-q"])
            .arg(Path::new(SAMPLES).join(base))
            .arg(Path::new(SAMPLES).join(cand))
            .output()
            .unwrap();
        assert!(o.status.success());
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        // CSV floats carry 15 significant digits (report::machine_float):
        // the JSON value at that precision.
        let csv_float = |f: f64| torchtrace::report::machine_float(f).parse::<f64>().unwrap();
        let want = csv_float(v["comparison"]["s_context"].as_f64().unwrap());
        assert_eq!(s, want, "{}", &row[col("workload")]);
        let red: f64 = row[col("context_reduction_pct")].parse().unwrap();
        assert_eq!(
            red,
            csv_float(v["comparison"]["context_reduction_pct"].as_f64().unwrap())
        );
        seen += 1;
    }
    assert_eq!(seen, 4);
}

#[test]
fn annotation_and_manifest_fill_in_without_summaries() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    for (name, data) in sample_files() {
        if (name.starts_with("text_ar/") || name.starts_with("text_mtp/"))
            && name.ends_with(".pt.trace.json.gz")
            && !name.contains("async_llm")
        {
            let p = runs.join(&name);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, data).unwrap();
        }
    }
    let manifest = tmp.path().join("m.csv");
    fs::write(
        &manifest,
        "path,mode,workload,completion_tokens\n\
         text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz,,chat,68\n\
         text_mtp/dp0_pp0_tp0_dcp0_ep0_rank0.1795968151611149496.pt.trace.json.gz,,chat,68\n",
    )
    .unwrap();
    let out = tmp.path().join("out");
    let (code, _, stderr) = batch(
        &[
            runs.to_str().unwrap(),
            "--manifest",
            manifest.to_str().unwrap(),
            "-q",
        ],
        &out,
    );
    assert_eq!(code, 0, "{stderr}");
    let v = results(&out);
    let ar = trace_by_prefix(&v, "text_ar/");
    assert_eq!(
        (&ar["mode"], &ar["mode_source"]),
        (&"ar".into(), &"annotation".into())
    );
    assert_eq!(
        (&ar["workload"], &ar["workload_source"]),
        (&"chat".into(), &"manifest".into())
    );
    assert_eq!(ar["tokens_source"], "manifest");
    let mtp = trace_by_prefix(&v, "text_mtp/");
    assert_eq!(
        (&mtp["mode"], &mtp["speculative_depth"]),
        (&"mtp".into(), &2.into())
    );
    assert_eq!(v["comparisons"][0]["workload"], "chat");
    // Without the manifest: no tokens, workload from the directory name.
    let out2 = tmp.path().join("out2");
    assert_eq!(batch(&[runs.to_str().unwrap(), "-q"], &out2).0, 0);
    let v = results(&out2);
    let ar = trace_by_prefix(&v, "text_ar/");
    assert_eq!(
        (&ar["workload"], &ar["workload_source"]),
        (&"text".into(), &"directory".into())
    );
    assert_eq!(v["comparisons"][0]["s_context"], Value::Null);
}

/// `batch` over the sample traces: its stdout and report.md as golden
/// files. Both are deterministic (paths relative to the PATH given, no
/// time stamps); the output directory's path appears in neither.
#[test]
fn golden_stdout_and_report() {
    if !common::exists("sample_traces") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = common::bin()
        .args([
            "batch",
            "-q",
            "sample_traces",
            "--image-format",
            "svg",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let report = fs::read_to_string(out.join("report.md")).unwrap();
    let outdir = out.display().to_string();
    assert!(!stdout.contains(&outdir) && !report.contains(&outdir));
    // The answer first: S_wall per workload and why, before Table 8.
    let answer = stdout
        .find("### The answer: wall time per generated token")
        .unwrap();
    assert!(answer < stdout.find("### Table 8").unwrap());
    assert!(stdout.contains(
        "- **tool_calling**: MTP is slower end to end, S_wall = 0.86× (712 µs of wall per token, AR 613 µs)."
    ));
    assert!(stdout.contains(
        "- **text_graphs**: MTP is faster end to end, S_wall = 1.37× (554 µs of wall per token, AR 761 µs)."
    ));
    common::golden("batch_sample.stdout.md", &stdout);
    common::golden("batch_sample.report.md", &report);
}

/// The graph pair: in a directory, each trace's `capture_traces/` is one
/// skipped row and is read by `ops` beside its trace (every replay
/// matched); in a tar.gz, each capture member is a skipped `capture` row
/// that says why, and the replays are unmatched ("no capture found"). Counts from sample_traces/GRAPHS.md (30 AR replays, 16 + 36
/// MTP replays).
#[test]
fn graph_pair_in_an_archive_says_why_replays_are_unmatched() {
    let tmp = tempfile::tempdir().unwrap();
    let files: Vec<_> = sample_files()
        .into_iter()
        .filter(|(n, _)| is_graph_pair(n))
        .collect();
    let captures = files
        .iter()
        .filter(|(n, _)| n.contains("/capture_traces/"))
        .count();
    assert_eq!(captures, 3 + 1 + 6 + 1);
    let tgz = tmp.path().join("graphs.tar.gz");
    write_tar_gz(&tgz, &files);
    let out = tmp.path().join("tgz");
    let (code, _, stderr) = batch(&[tgz.to_str().unwrap(), "-q"], &out);
    assert_eq!(code, 0, "{stderr}");
    let v = results(&out);
    let rows = v["traces"].as_array().unwrap();
    assert_eq!(rows.len(), files.len());
    let said: Vec<&Value> = rows.iter().filter(|t| t["kind"] == "capture").collect();
    assert_eq!(said.len(), captures);
    assert!(said.iter().all(|t| t["status"] == "skipped"
        && t["error"]
            .as_str()
            .unwrap()
            .contains("read only beside its trace on disk, not in an archive")));
    let dir = tmp.path().join("campaign");
    for (name, data) in &files {
        let p = dir.join(name);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, data).unwrap();
    }
    let out2 = tmp.path().join("dir");
    let (code, _, stderr) = batch(&[dir.to_str().unwrap(), "-q"], &out2);
    assert_eq!(code, 0, "{stderr}");
    let d = results(&out2);
    for (mode, replays) in [("ar", 30), ("mtp", 52)] {
        let g = &trace_by_prefix(&v, &format!("text_graphs_{mode}/dp0"))["ops"]["graphs"];
        assert_eq!(g["replays"], replays, "{mode}");
        assert_eq!(g["replays_unmatched"], replays, "{mode}");
        assert_eq!(g["unmatched"][0]["reason"], "no capture found");
        let g = &trace_by_prefix(&d, &format!("text_graphs_{mode}/dp0"))["ops"]["graphs"];
        assert_eq!(g["replays"], replays, "{mode}");
        assert_eq!(g["replays_matched"], replays, "{mode}");
        assert_eq!(g["notes"].as_array().unwrap().len(), 0);
    }
    let cap = trace_by_prefix(&d, "text_graphs_ar/capture_traces");
    assert_eq!(
        (&cap["status"], &cap["kind"]),
        (&"skipped".into(), &"other".into())
    );
}

/// `batch --capture PATH`: the capture traces are an input of the read,
/// as for every per-trace subcommand. Given to a run whose trace has no
/// `capture_traces/` beside it, every replay of the CUDA AR sample is
/// matched (30 of 30, 4 766 446 ns, as with the folder beside it), and
/// the capture files are listed once. A campaign of several runs is
/// refused before anything is read (the same captures for every trace
/// would give one run's graphs to another's replays), exit 2.
#[test]
fn capture_traces_given_to_a_run_of_one_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    fs::create_dir_all(&run).unwrap();
    let src = common::root().join("sample_traces/text_graphs_ar");
    for e in fs::read_dir(&src).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("dp0_") {
            fs::copy(e.path(), run.join(&name)).unwrap();
        }
    }
    let caps = src.join("capture_traces");
    let out = tmp.path().join("out");
    let args = [
        run.to_str().unwrap(),
        "-q",
        "--capture",
        caps.to_str().unwrap(),
    ];
    let (code, _, stderr) = batch(&args, &out);
    assert_eq!(code, 0, "{stderr}");
    let v = results(&out);
    let worker = v["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["kind"] == "worker")
        .unwrap();
    let g = &worker["ops"]["graphs"];
    assert_eq!(
        (&g["replays"], &g["replays_matched"]),
        (&30.into(), &30.into())
    );
    assert_eq!(g["gpu_graph_ns"], 4_766_446);
    assert_eq!(g["captures"].as_array().unwrap().len(), 3);
    // Without it: none matched.
    let (code, _, stderr) = batch(&[run.to_str().unwrap(), "-q"], &tmp.path().join("o2"));
    assert_eq!(code, 0, "{stderr}");
    let v = results(&tmp.path().join("o2"));
    let worker = v["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["kind"] == "worker")
        .unwrap();
    assert_eq!(worker["ops"]["graphs"]["replays_matched"], 0);
    // Several runs: refused, nothing written.
    let samples = common::root().join("sample_traces");
    let out3 = tmp.path().join("o3");
    let (code, _, stderr) = batch(
        &[
            samples.to_str().unwrap(),
            "--capture",
            caps.to_str().unwrap(),
        ],
        &out3,
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--capture gives the same capture traces to every trace"),
        "{stderr}"
    );
    assert!(stderr.contains("in 8 folders"), "{stderr}");
    assert!(!out3.join("results.json").exists());
}
