//! `torchtrace export` end to end (issue 36): the Parquet tables read back
//! with the parquet crate, their counts and sums equal to the analyses'
//! (`ops`'s summary, `idle`'s per-step rows, `kernels`'s activities) on
//! every real trace; several traces in one file per table; the same bytes
//! with `-j 1` and `-j 2`; bad input and unwritable directories.

use crate::common::*;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use torchtrace::api::{self, Common};

/// Every batch of a Parquet file.
fn read(path: &Path) -> Vec<RecordBatch> {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

/// An int64 column (`None` for nulls) of every batch.
fn ints(batches: &[RecordBatch], col: &str) -> Vec<Option<i64>> {
    let mut v = Vec::new();
    for b in batches {
        let a = b
            .column_by_name(col)
            .unwrap_or_else(|| panic!("no column {col}"));
        let a = a.as_primitive::<Int64Type>();
        v.extend((0..a.len()).map(|i| a.is_valid(i).then(|| a.value(i))));
    }
    v
}

/// A dictionary string column of every batch.
fn strings(batches: &[RecordBatch], col: &str) -> Vec<Option<String>> {
    let mut v = Vec::new();
    for b in batches {
        let a = b
            .column_by_name(col)
            .unwrap_or_else(|| panic!("no column {col}"));
        let d = a.as_dictionary::<Int32Type>();
        let values = d.values().as_string::<i32>();
        for i in 0..d.len() {
            v.push(
                d.is_valid(i)
                    .then(|| values.value(d.keys().value(i) as usize).to_string()),
            );
        }
    }
    v
}

fn rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(|b| b.num_rows()).sum()
}

fn export(args: &[&str], dir: &Path) -> std::process::Output {
    bin()
        .arg("-q")
        .arg("export")
        .args(args)
        .arg("-o")
        .arg(dir)
        .output()
        .expect("runs")
}

const AR: &str = "text_ar";

/// The sample AR trace: the figures of `ops` (gpu_linked_ns 12638958,
/// 736 launches, 64 graph launches) and `kernels`, to the ns.
#[test]
fn sample_ar_equals_ops_and_kernels() {
    let t = sample(AR);
    let dir = tempfile::tempdir().unwrap();
    let out = export(&[&t], dir.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let acts = read(&dir.path().join("activities.parquet"));
    let launches = read(&dir.path().join("launches.parquet"));
    let ops = read(&dir.path().join("ops.parquet"));
    let steps = read(&dir.path().join("steps.parquet"));

    let dur = ints(&acts, "dur_ns");
    let owner = ints(&acts, "launch_id");
    let linked: i64 = dur
        .iter()
        .zip(&owner)
        .filter(|(_, o)| o.is_some())
        .map(|(d, _)| d.unwrap())
        .sum();
    assert_eq!(linked, 12_638_958);
    let with_acts = ints(&launches, "activities")
        .iter()
        .filter(|n| n.unwrap() > 0)
        .count();
    assert_eq!(with_acts, 736);
    let mut replays: Vec<i64> = ints(&acts, "graph_replay").into_iter().flatten().collect();
    replays.dedup();
    assert_eq!(replays.len(), 64);

    let k = run_json(&["-q", "kernels", "-f", "json", &t], 0);
    let timeline = &k["traces"][0]["timeline"];
    assert_eq!(rows(&acts) as u64, timeline["activities"].as_u64().unwrap());
    let kinds = strings(&acts, "kind");
    let n_kernels = kinds
        .iter()
        .filter(|k| k.as_deref() == Some("kernel"))
        .count();
    let o = run_json(&["-q", "ops", "-f", "json", &t], 0);
    let s = &o["traces"][0]["summary"];
    assert_eq!(n_kernels as u64, s["kernels"].as_u64().unwrap());
    assert_eq!(
        dur.iter().map(|d| d.unwrap()).sum::<i64>(),
        s["gpu_ns"].as_i64().unwrap()
    );
    assert_eq!(rows(&launches) as u64, s["runtime_calls"].as_u64().unwrap());
    assert_eq!(rows(&ops) as u64, s["host_ops"].as_u64().unwrap());
    // Graph launches own 3008 - … kernels: Σ over the replays' rows.
    let graph_kernels = ints(&acts, "graph_replay")
        .iter()
        .filter(|r| r.is_some())
        .count();
    assert_eq!(graph_kernels as u64, s["graph_kernels"].as_u64().unwrap());

    // Ids are positions; a launch's figures equal its activities'.
    assert_eq!(
        ints(&acts, "id"),
        (0..rows(&acts) as i64).map(Some).collect::<Vec<_>>()
    );
    let sums = ints(&launches, "activities_dur_ns");
    let mut by_launch: BTreeMap<i64, i64> = BTreeMap::new();
    for (d, o) in dur.iter().zip(&owner) {
        if let Some(o) = o {
            *by_launch.entry(*o).or_default() += d.unwrap();
        }
    }
    for (o, d) in by_launch {
        assert_eq!(sums[o as usize], Some(d));
    }
    // The launch latency is the first activity's start less the call's.
    let lat = ints(&launches, "launch_latency_ns");
    let first = ints(&launches, "first_activity_start_ns");
    let start = ints(&launches, "start_ns");
    for i in 0..lat.len() {
        assert_eq!(lat[i], first[i].map(|f| f - start[i].unwrap()));
    }
    // Parents enclose their children (C4) and are one level up.
    let (ps, pe, parent, depth) = (
        ints(&ops, "start_ns"),
        ints(&ops, "end_ns"),
        ints(&ops, "parent_id"),
        ops.iter()
            .flat_map(|b| {
                let a = b
                    .column_by_name("depth")
                    .unwrap()
                    .as_primitive::<Int32Type>();
                a.values().to_vec()
            })
            .collect::<Vec<i32>>(),
    );
    for i in 0..parent.len() {
        match parent[i] {
            Some(p) => {
                let p = p as usize;
                assert!(ps[p] <= ps[i] && pe[i] <= pe[p], "op {i} inside {p}");
                assert_eq!(depth[i], depth[p] + 1);
            }
            None => assert_eq!(depth[i], 0),
        }
    }
    // Every vLLM step annotation (C8): the 64 selected decode steps and the
    // others (prefill, boundary), as many as `idle`'s per-step rows.
    assert_eq!(rows(&steps), 68);
}

/// Per step: the activities of each step (I6 window) equal `idle`'s rows,
/// and the steps' windows equal its rows'.
fn steps_equal_idle(trace: &str, dir: &Path) {
    let acts = read(&dir.join("activities.parquet"));
    let steps = read(&dir.join("steps.parquet"));
    let idle = run_json(&["-q", "idle", "-f", "json", trace], 0);
    let want = idle["traces"][0]["steps"]["rows"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(rows(&steps), want.len(), "{trace}: steps");
    let mut count = vec![0u64; want.len()];
    let mut gpu = vec![0i64; want.len()];
    for (s, d) in ints(&acts, "step").iter().zip(ints(&acts, "dur_ns")) {
        if let Some(s) = s {
            count[*s as usize] += 1;
            gpu[*s as usize] += d.unwrap();
        }
    }
    let start = ints(&steps, "start_ns");
    let end = ints(&steps, "iteration_end_ns");
    for (i, w) in want.iter().enumerate() {
        assert_eq!(
            count[i],
            w["activities"].as_u64().unwrap(),
            "{trace}: step {i}"
        );
        assert_eq!(gpu[i], w["gpu_ns"].as_i64().unwrap(), "{trace}: step {i}");
        assert_eq!(start[i], w["host_start_ns"].as_i64(), "{trace}: step {i}");
        assert_eq!(end[i], w["host_end_ns"].as_i64(), "{trace}: step {i}");
    }
}

#[test]
fn steps_equal_idle_on_the_sample() {
    let t = sample(AR);
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        export(&[&t, "--tables", "activities,steps"], dir.path())
            .status
            .code(),
        Some(0)
    );
    assert!(!dir.path().join("ops.parquet").exists());
    steps_equal_idle(&t, dir.path());
}

/// Trace files under `dir` (recursively), sorted.
fn traces_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let n = p.to_string_lossy().to_string();
            if p.is_dir() {
                dirs.push(p);
            } else if (n.ends_with(".json") || n.ends_with(".json.gz"))
                && !n.contains("summary")
                && !n.contains("/expected/")
                && !n.contains("/damaged/")
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// On every real trace (sample_traces, tests/data, ../shared/traces; the
/// absent skipped): rows and sums equal `ops`'s summary, each launch's
/// figures its activities'.
#[test]
fn every_trace_agrees_with_ops() {
    use torchtrace::analyses::ops::{Ops, OpsSpec};
    use torchtrace::export::{ExportOptions, Table};
    let common = Common {
        quiet: true,
        ..Common::default()
    };
    let mut paths = traces_under(&root().join("sample_traces"));
    paths.extend(traces_under(&root().join("tests/data")));
    paths.extend(traces_under(&root().join("../shared/traces")));
    let mut checked = 0;
    for p in paths {
        let Ok(o) = api::run::<Ops>(std::slice::from_ref(&p), &common, &OpsSpec::default()) else {
            continue;
        };
        let s = &o.report.traces[0].summary;
        let dir = tempfile::tempdir().unwrap();
        let options = ExportOptions {
            out: dir.path().to_path_buf(),
            tables: vec![Table::Activities, Table::Launches, Table::Ops],
            ..ExportOptions::default()
        };
        let e = torchtrace::export::run(std::slice::from_ref(&p), &common, &options)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let t = &e.report.traces[0];
        let what = p.display().to_string();
        assert_eq!(t.activities, s.activities, "{what}");
        assert_eq!(i128::from(t.activities_dur_ns), s.gpu_ns, "{what}");
        assert_eq!(t.launches_with_activities, s.launches, "{what}");
        assert_eq!(t.graph_launches, s.graph_launches, "{what}");
        assert_eq!(t.host_ops, s.host_ops, "{what}");
        let acts = read(&dir.path().join("activities.parquet"));
        let dur = ints(&acts, "dur_ns");
        let owner = ints(&acts, "launch_id");
        assert_eq!(rows(&acts) as u64, s.activities, "{what}");
        let linked: i64 = dur
            .iter()
            .zip(&owner)
            .filter(|(_, o)| o.is_some())
            .map(|(d, _)| d.unwrap())
            .sum();
        assert_eq!(i128::from(linked), s.gpu_linked_ns, "{what}");
        let launches = read(&dir.path().join("launches.parquet"));
        assert_eq!(rows(&launches) as u64, s.runtime_calls, "{what}");
        let n = ints(&launches, "activities")
            .iter()
            .filter(|n| n.unwrap() > 0)
            .count();
        assert_eq!(n as u64, s.launches, "{what}");
        assert_eq!(
            rows(&read(&dir.path().join("ops.parquet"))) as u64,
            s.host_ops,
            "{what}"
        );
        checked += 1;
    }
    assert!(checked >= 8, "{checked} traces checked");
}

/// Two traces: one file per table, the rows of each after the other with
/// their `trace`; the same bytes with -j 1 and -j 2, and with either
/// compression the same rows.
#[test]
fn several_traces_one_file_per_table_same_with_any_j() {
    let (a, b) = (sample("text_ar"), sample("text_mtp"));
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    for (dir, j) in [(d1.path(), "1"), (d2.path(), "2")] {
        let out = bin()
            .args(["-q", "-j", j, "export", &a, &b, "-o"])
            .arg(dir)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for table in ["activities", "launches", "ops", "steps", "memory"] {
        let f = format!("{table}.parquet");
        let x = std::fs::read(d1.path().join(&f)).unwrap();
        let y = std::fs::read(d2.path().join(&f)).unwrap();
        assert!(x == y, "{f}: -j 1 and -j 2 differ");
    }
    let acts = read(&d1.path().join("activities.parquet"));
    let traces = strings(&acts, "trace");
    let first_b = traces
        .iter()
        .position(|t| t.as_deref() == Some(b.as_str()))
        .unwrap();
    assert!(traces[..first_b]
        .iter()
        .all(|t| t.as_deref() == Some(a.as_str())));
    assert!(traces[first_b..]
        .iter()
        .all(|t| t.as_deref() == Some(b.as_str())));
    // Each trace's rows are its own export's.
    let one = tempfile::tempdir().unwrap();
    assert_eq!(
        export(&[&b, "--compression", "snappy"], one.path())
            .status
            .code(),
        Some(0)
    );
    let alone = read(&one.path().join("activities.parquet"));
    assert_eq!(rows(&acts) - first_b, rows(&alone));
    assert_eq!(ints(&acts, "dur_ns")[first_b..], ints(&alone, "dur_ns")[..]);
    assert_eq!(
        ints(&acts, "launch_id")[first_b..],
        ints(&alone, "launch_id")[..]
    );
    let none = tempfile::tempdir().unwrap();
    assert_eq!(
        export(&[&b, "--compression", "none"], none.path())
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        ints(&read(&none.path().join("activities.parquet")), "dur_ns"),
        ints(&alone, "dur_ns")
    );
    // Nothing left beside the tables.
    let names: Vec<String> = std::fs::read_dir(d1.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 5, "{names:?}");
}

/// An unwritable directory, a damaged trace, no table: exit 2 with a
/// clear message, and no file under a table's name.
#[test]
fn bad_input_and_unwritable_output() {
    let t = sample(AR);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = export(&[&t], &file);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a-file"), "{err}");

    let damaged = root().join("tests/data/damaged");
    let bad = std::fs::read_dir(&damaged)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let to = dir.path().join("t");
    let out = export(&[bad.to_str().unwrap()], &to);
    assert_eq!(out.status.code(), Some(2), "{}", bad.display());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));

    let out = bin()
        .args(["export", &t, "--tables", "kernels", "-o"])
        .arg(&to)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The ops' input shapes and dtypes (`Input Dims`, `Input type`) on real
/// traces that record them: one row per host op in file order, each text
/// the same JSON value as the event's (read here independently with
/// serde_json), null where the op has none.
#[test]
fn ops_keep_input_shapes_and_types_as_written() {
    use std::io::Read;
    for (file, with_dims) in [
        ("hta_cpu_only.pt.trace.json.gz", 14),
        ("tracelens_normalization_layer_test.json.gz", 900),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(file);
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let host = ["cpu_op", "user_annotation", "python_function", "Operator"];
        let want: Vec<[Option<serde_json::Value>; 2]> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| {
                e["ph"] == "X" && host.iter().any(|c| e["cat"] == *c) && e["ts"].is_number()
            })
            .map(|e| {
                let get = |k: &str| e["args"].get(k).filter(|v| !v.is_null()).cloned();
                [get("Input Dims"), get("Input type")]
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let out = export(&[path.to_str().unwrap(), "--tables", "ops"], dir.path());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ops = read(&dir.path().join("ops.parquet"));
        let parse = |v: Vec<Option<String>>| -> Vec<Option<serde_json::Value>> {
            v.into_iter()
                .map(|t| t.map(|t| serde_json::from_str(&t).unwrap()))
                .collect()
        };
        let dims = parse(strings(&ops, "input_dims"));
        let types = parse(strings(&ops, "input_type"));
        assert_eq!(dims.len(), want.len(), "{file}");
        assert_eq!(
            dims.iter().filter(|d| d.is_some()).count(),
            with_dims,
            "{file}"
        );
        for (i, w) in want.iter().enumerate() {
            assert_eq!(
                [dims[i].clone(), types[i].clone()],
                *w,
                "{file}: op row {i}"
            );
        }
    }
    // A first row, as the file writes it.
    let dir = tempfile::tempdir().unwrap();
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hta_cpu_only.pt.trace.json.gz");
    export(&[path.to_str().unwrap(), "--tables", "ops"], dir.path());
    let ops = read(&dir.path().join("ops.parquet"));
    assert_eq!(
        strings(&ops, "input_dims")[0].as_deref(),
        Some("[[321271]]")
    );
    assert_eq!(
        strings(&ops, "input_type")[0].as_deref(),
        Some(r#"["float"]"#)
    );
}

/// `batch --tables` (issue 36): the campaign's tables from the same read
/// as the rest of batch — per trace, the rows of `export`'s tables and the
/// counts of results.json (`kernels`' activities, `ops`' runtime calls and
/// host ops, `idle`'s steps), led by the trace's label, workload and mode
/// as traces.csv gives them; results.json as without --tables; the same
/// bytes with -j 1 and -j 2.
#[test]
fn batch_tables_equal_export_and_results() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces");
    let plain = tempfile::tempdir().unwrap();
    let batch = |out: &Path, extra: &[&str], j: &str| {
        let o = bin()
            .args(["-q", "-j", j, "batch"])
            .arg(&root)
            .arg("--no-figures")
            .arg("-o")
            .arg(out)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    batch(plain.path(), &[], "2");
    let runs: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    for (dir, j) in runs.iter().zip(["1", "2"]) {
        let t = dir.path().join("tables");
        batch(dir.path(), &["--tables", t.to_str().unwrap()], j);
    }
    let tables = runs[0].path().join("tables");
    for table in ["activities", "launches", "ops", "steps", "memory"] {
        let f = format!("{table}.parquet");
        let x = std::fs::read(tables.join(&f)).unwrap();
        let y = std::fs::read(runs[1].path().join("tables").join(&f)).unwrap();
        assert!(x == y, "{f}: -j 1 and -j 2 differ");
    }
    let mut left: Vec<String> = std::fs::read_dir(&tables)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "activities.parquet",
            "launches.parquet",
            "memory.parquet",
            "ops.parquet",
            "steps.parquet"
        ]
    );
    let results = std::fs::read(runs[0].path().join("results.json")).unwrap();
    assert!(
        results == std::fs::read(plain.path().join("results.json")).unwrap(),
        "results.json changed with --tables"
    );

    let r: serde_json::Value = serde_json::from_slice(&results).unwrap();
    let read_t = |t: &str| read(&tables.join(format!("{t}.parquet")));
    let (acts, launches, ops, steps) = (
        read_t("activities"),
        read_t("launches"),
        read_t("ops"),
        read_t("steps"),
    );
    // Rows per (trace, workload, mode), in file order.
    let per_trace = |b: &[RecordBatch]| -> Vec<((String, String, String), usize)> {
        let (t, w, m) = (
            strings(b, "trace"),
            strings(b, "workload"),
            strings(b, "mode"),
        );
        let mut v: Vec<((String, String, String), usize)> = Vec::new();
        for i in 0..t.len() {
            let key = (
                t[i].clone().unwrap(),
                w[i].clone().unwrap(),
                m[i].clone().unwrap(),
            );
            match v.last_mut() {
                Some((k, n)) if *k == key => *n += 1,
                _ => v.push((key, 1)),
            }
        }
        v
    };
    let workers: Vec<&serde_json::Value> = r["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "worker")
        .collect();
    assert_eq!(workers.len(), 8);
    let expect =
        |count: &dyn Fn(&serde_json::Value) -> u64| -> Vec<((String, String, String), usize)> {
            workers
                .iter()
                .map(|t| {
                    let s = |k: &str| t[k].as_str().unwrap().to_string();
                    ((s("path"), s("workload"), s("mode")), count(t) as usize)
                })
                .collect()
        };
    let u = |v: &serde_json::Value| v.as_u64().unwrap();
    assert_eq!(
        per_trace(&acts),
        expect(&|t| u(&t["kernels"]["timeline"]["activities"]))
    );
    assert_eq!(
        per_trace(&launches),
        expect(&|t| u(&t["ops"]["summary"]["runtime_calls"]))
    );
    assert_eq!(
        per_trace(&ops),
        expect(&|t| u(&t["ops"]["summary"]["host_ops"]))
    );
    assert_eq!(
        per_trace(&steps),
        expect(&|t| u(&t["idle"]["steps"]["count"]))
    );
    // The sample's eight traces: 22 922 activities (kernel, gpu_memcpy and
    // gpu_memset events counted from the JSON apart: 19 360 in the six
    // H200 runs, 1 702 + 1 860 in the graph pair), Σ dur = Σ `idle` busy.
    assert_eq!(rows(&acts), 22_922);
    let busy: i64 = workers
        .iter()
        .map(|t| t["ops"]["summary"]["gpu_ns"].as_i64().unwrap())
        .sum();
    assert_eq!(
        ints(&acts, "dur_ns")
            .iter()
            .map(|d| d.unwrap())
            .sum::<i64>(),
        busy
    );

    // A trace's rows are `export`'s of it alone, column for column.
    let label = "text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz";
    let alone = tempfile::tempdir().unwrap();
    assert_eq!(export(&[&sample(AR)], alone.path()).status.code(), Some(0));
    let traces = strings(&acts, "trace");
    let at = traces
        .iter()
        .position(|t| t.as_deref() == Some(label))
        .unwrap();
    let own = read(&alone.path().join("activities.parquet"));
    let n = rows(&own);
    for col in [
        "id",
        "start_ns",
        "dur_ns",
        "launch_id",
        "launcher_op_id",
        "top_op_id",
        "step",
    ] {
        assert_eq!(ints(&acts, col)[at..at + n], ints(&own, col)[..], "{col}");
    }
    assert_eq!(
        strings(&acts, "name")[at..at + n],
        strings(&own, "name")[..]
    );
}

/// `--tables` asks for `-o` and refuses `--shard`: exit 2, said.
#[test]
fn batch_tables_needs_outdir_and_no_shard() {
    for args in [
        &["batch", "sample_traces", "--tables", "t", "--records", "-"][..],
        &[
            "batch",
            "sample_traces",
            "--tables",
            "t",
            "--shard",
            "1/2",
            "--records",
            "-",
        ][..],
    ] {
        let o = bin()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--tables"),
            "{args:?}"
        );
    }
}

/// The memory table (VIEWS.md M1–M2, M5) against `memory`'s figures on the
/// real TraceLens H100 and MI300X traces: one row per event, the level
/// after each, its peak and final the analysis's, every event's step.
#[test]
fn the_memory_table_holds_every_event_and_its_level() {
    for trace in [
        "tests/data/tracelens_h100_bert_small.json.gz",
        "tests/data/memory/tracelens_mi300_qwen_chat.json.gz",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = bin()
            .args(["-q", "export", "--tables", "memory", trace, "-o"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let m = read(&dir.path().join("memory.parquet"));
        let doc = bin()
            .args(["-q", "memory", "-f", "json", trace])
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&doc.stdout).unwrap();
        let devices = strings(&m, "device");
        let level = ints(&m, "allocated_bytes");
        let ts = ints(&m, "ts_ns");
        let step = ints(&m, "step");
        let mut total = 0;
        for d in doc["traces"][0]["devices"].as_array().unwrap() {
            let name = d["device"].as_str().unwrap();
            let rows: Vec<usize> = (0..devices.len())
                .filter(|&i| devices[i].as_deref() == Some(name))
                .collect();
            assert_eq!(
                rows.len() as u64,
                d["events"].as_u64().unwrap(),
                "{trace} {name}"
            );
            let peak = rows.iter().map(|&i| level[i].unwrap()).max().unwrap();
            assert_eq!(
                peak,
                d["peak_allocated_bytes"].as_i64().unwrap(),
                "{trace} {name}"
            );
            let last = *rows.last().unwrap();
            assert_eq!(
                level[last].unwrap(),
                d["final_allocated_bytes"].as_i64().unwrap()
            );
            // Rows in time order within the device (M1).
            assert!(rows.windows(2).all(|w| ts[w[0]] <= ts[w[1]]));
            // Each step row's event count is its rows' (M5).
            for (k, s) in d["steps"].as_array().unwrap().iter().enumerate() {
                let n = rows.iter().filter(|&&i| step[i] == Some(k as i64)).count();
                assert_eq!(
                    n as u64,
                    s["events"].as_u64().unwrap(),
                    "{trace} {name} step {k}"
                );
            }
            total += rows.len();
        }
        assert_eq!(total, devices.len(), "{trace}");
    }
}
