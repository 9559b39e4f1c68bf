//! Unit tests of the export: a small trace whose every link is worked out
//! by hand (VIEWS.md rule ids in the comments), written and read back.

use super::*;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn ev(cat: &str, name: &str, ts: i64, dur: i64, args: &str) -> String {
    format!("{{\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"{name}\", \"pid\": 1, \"tid\": 1, \"ts\": {ts}, \"dur\": {dur}, \"args\": {{{args}}}}}")
}

fn kernel(name: &str, ts: i64, dur: i64, corr: i64) -> String {
    let config = match name {
        "k1" => ", \"grid\": [8, 12, 1], \"block\": [384, 1, 1], \"registers per thread\": 168, \"shared memory\": 4096",
        _ => "",
    };
    format!("{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{name}\", \"pid\": 0, \"tid\": 7, \"ts\": {ts}, \"dur\": {dur}, \"args\": {{\"correlation\": {corr}{config}}}}}")
}

const STEP: &str = "execute_context_0(0)_generation_1(1)";

/// ```text
/// thread 1  [op0 step ======================)        [op3 step =========)
///             [op1 aten::mm =====)                      L1 graph c=2  L2 c=3
///               [op2 inner ==)
///                  L0 c=1
/// stream 7             [k1 c=1)                            [g1][g2]        [orphan c=99]
/// ```
fn trace() -> String {
    let events = [
        ev("user_annotation", STEP, 0, 100, ""),
        ev(
            "cpu_op",
            "aten::mm",
            10,
            30,
            "\"External id\": 5, \"Input Dims\": [[1, 4096], [4096,4096]], \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\"]",
        ),
        ev("cpu_op", "inner", 12, 10, "\"Input Dims\": null"),
        ev(
            "cuda_runtime",
            "cudaLaunchKernel",
            15,
            5,
            "\"correlation\": 1",
        ),
        ev("user_annotation", STEP, 200, 50, ""),
        ev(
            "cuda_runtime",
            "cudaGraphLaunch",
            210,
            5,
            "\"correlation\": 2",
        ),
        ev(
            "cuda_runtime",
            "cudaLaunchKernel",
            220,
            1,
            "\"correlation\": 3",
        ),
        kernel("k1", 25, 10, 1),
        kernel("g1", 230, 4, 2),
        kernel("g2", 235, 4, 2),
        kernel("orphan", 300, 1, 99),
    ];
    format!("{{\"traceEvents\": [{}]}}", events.join(",\n"))
}

fn read(path: &std::path::Path) -> Vec<RecordBatch> {
    let f = std::fs::File::open(path).unwrap();
    let r = ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap();
    r.map(|b| b.unwrap()).collect()
}

fn col(b: &[RecordBatch], name: &str) -> Vec<Option<i64>> {
    let mut v = Vec::new();
    for b in b {
        let a = b.column_by_name(name).unwrap().as_primitive::<Int64Type>();
        v.extend((0..a.len()).map(|i| a.is_valid(i).then(|| a.value(i))));
    }
    v
}

/// A dictionary string column, nulls as `None`.
fn texts(b: &[RecordBatch], name: &str) -> Vec<Option<String>> {
    let mut v = Vec::new();
    for b in b {
        let a = b.column_by_name(name).unwrap().as_dictionary::<Int32Type>();
        let values = a.values().as_string::<i32>();
        v.extend((0..a.len()).map(|i| {
            a.is_valid(i)
                .then(|| values.value(a.keys().value(i) as usize).to_string())
        }));
    }
    v
}

fn some(v: &[i64]) -> Vec<Option<i64>> {
    v.iter().map(|&x| Some(x)).collect()
}

#[test]
fn every_link_of_the_drawing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, trace()).unwrap();
    let options = ExportOptions {
        out: dir.path().join("out"),
        ..ExportOptions::default()
    };
    let common = Common {
        quiet: true,
        ..Common::default()
    };
    let out = run(&[path], &common, &options).unwrap();
    let t = &out.report.traces[0];
    assert_eq!((t.activities, t.activities_dur_ns), (4, 19_000));
    assert_eq!(
        (
            t.runtime_calls,
            t.launches_with_activities,
            t.graph_launches
        ),
        (3, 2, 1)
    );
    assert_eq!(t.step_grammar.as_deref(), Some("vllm"));
    let at = |n: &str| options.out.join(format!("{n}.parquet"));

    // ops: parents and depths (C4–C5), External ids.
    let ops = read(&at("ops"));
    assert_eq!(col(&ops, "parent_id"), vec![None, Some(0), Some(1), None]);
    let depth = ops[0]
        .column_by_name("depth")
        .unwrap()
        .as_primitive::<Int32Type>();
    assert_eq!(depth.values().to_vec(), vec![0, 1, 2, 0]);
    assert_eq!(col(&ops, "external_id"), vec![None, Some(5), None, None]);
    // Input shapes and dtypes: the JSON text exactly as written (spacing
    // kept), null where absent or `null`.
    let mm = Some("[[1, 4096], [4096,4096]]".to_string());
    assert_eq!(texts(&ops, "input_dims"), vec![None, mm, None, None]);
    let ty = Some(r#"["c10::BFloat16", "c10::BFloat16"]"#.to_string());
    assert_eq!(texts(&ops, "input_type"), vec![None, ty, None, None]);
    assert_eq!(
        col(&ops, "end_ns"),
        some(&[100_000, 40_000, 22_000, 250_000])
    );

    // launches: figures (O6), launcher (O2), top-level (O4), step (I6).
    let l = read(&at("launches"));
    assert_eq!(col(&l, "activities"), some(&[1, 2, 0]));
    assert_eq!(col(&l, "activities_dur_ns"), some(&[10_000, 8_000, 0]));
    assert_eq!(
        col(&l, "launch_latency_ns"),
        vec![Some(10_000), Some(20_000), None]
    );
    assert_eq!(
        col(&l, "queue_delay_ns"),
        vec![Some(5_000), Some(15_000), None]
    );
    assert_eq!(col(&l, "launcher_op_id"), some(&[2, 3, 3]));
    assert_eq!(col(&l, "top_op_id"), some(&[0, 3, 3]));
    assert_eq!(col(&l, "graph_replay"), vec![None, Some(0), None]);
    assert_eq!(col(&l, "step"), some(&[0, 1, 1]));

    // activities: owner by correlation (C3), everything of its launch.
    let a = read(&at("activities"));
    assert_eq!(col(&a, "launch_id"), vec![Some(0), Some(1), Some(1), None]);
    assert_eq!(col(&a, "graph_replay"), vec![None, Some(0), Some(0), None]);
    assert_eq!(col(&a, "step"), vec![Some(0), Some(1), Some(1), None]);
    assert_eq!(
        col(&a, "launcher_op_id"),
        vec![Some(2), Some(3), Some(3), None]
    );
    assert_eq!(col(&a, "stream"), some(&[7, 7, 7, 7]));
    let names = a[0]
        .column_by_name("launch_name")
        .unwrap()
        .as_dictionary::<Int32Type>();
    assert!(names.is_null(3));
    // The kernel's launch configuration where the trace has it.
    assert_eq!(col(&a, "grid_y"), vec![Some(12), None, None, None]);
    assert_eq!(col(&a, "block_x"), vec![Some(384), None, None, None]);
    assert_eq!(
        col(&a, "registers_per_thread"),
        vec![Some(168), None, None, None]
    );
    assert_eq!(col(&a, "shared_memory"), vec![Some(4096), None, None, None]);

    // steps: windows (C8), tokens from the name.
    let s = read(&at("steps"));
    assert_eq!(col(&s, "start_ns"), some(&[0, 200_000]));
    assert_eq!(col(&s, "iteration_end_ns"), vec![Some(200_000), None]);
    assert_eq!(col(&s, "generation_tokens"), some(&[1, 1]));
    // memory: no `[memory]` event in the drawing, an empty table.
    assert_eq!(
        read(&at("memory"))
            .iter()
            .map(|b| b.num_rows())
            .sum::<usize>(),
        0
    );
    // Nothing left beside the tables (the lock file is removed).
    let mut left: Vec<String> = std::fs::read_dir(&options.out)
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
    assert!(out.notes.iter().any(|n| n.text.contains("unlinked")));
}

#[test]
fn no_table_and_no_trace_are_errors() {
    let common = Common::default();
    let options = ExportOptions {
        tables: Vec::new(),
        ..ExportOptions::default()
    };
    assert!(matches!(
        run(&[PathBuf::from("x")], &common, &options),
        Err(ExportError::Api(_))
    ));
    assert!(run(&[], &common, &ExportOptions::default()).is_err());
}

/// Distinct launch configurations are kept once each up to
/// `CONFIGS_KEPT`; later new ones whole in their records; all read back in
/// file order.
#[test]
fn configs_kept_once_then_whole() {
    let mut c = Configs::default();
    let mut want = Vec::new();
    let n = 2 * CONFIGS_KEPT as i64;
    for i in 0..n {
        // Every third repeats an earlier one; the rest are new.
        let k = if i % 3 == 0 { i / 7 } else { i };
        let cfg = Config3 {
            grid: Some([k, i64::MIN + k, 1]),
            block: (k % 2 == 0).then_some([k, 1, i64::MAX]),
            registers: (k % 5 != 0).then_some(k),
            shared_memory: None,
        };
        c.push(cfg);
        want.push(cfg);
    }
    assert_eq!(c.list.len(), CONFIGS_KEPT);
    assert!(c.iter().eq(want.iter().copied()));
    c.push(Config3::default());
    assert_eq!(c.iter().last(), Some(Config3::default()));
}

/// Issue 57 on the real CUDA MTP trace (`sample_traces/text_graphs_mtp`,
/// H100, torch 2.11+cu130), its `capture_traces/` found beside it: every
/// replayed activity (16 decoder replays × 50, 36 speculator × 17) gets
/// its captured op, module, shapes and region; the sums by (subsystem,
/// op) equal those summed apart from the JSON by a Python script.
#[test]
fn activities_inside_the_graphs_of_the_real_mtp_trace() {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces/text_graphs_mtp");
    let trace = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = ExportOptions {
        out: dir.path().join("out"),
        tables: vec![Table::Activities],
        ..ExportOptions::default()
    };
    let common = Common {
        quiet: true,
        ..Common::default()
    };
    run(&[trace], &common, &options).unwrap();
    let acts = read(&options.out.join("activities.parquet"));
    let op = texts(&acts, "captured_op");
    let sub = texts(&acts, "capture_subsystem");
    let module = texts(&acts, "captured_module");
    let dims = texts(&acts, "captured_input_dims");
    let batch = col(&acts, "capture_batch");
    let region = col(&acts, "capture_region");
    let dur = col(&acts, "dur_ns");
    assert_eq!(op.iter().filter(|o| o.is_some()).count(), 1412);
    assert_eq!(
        dims.iter().filter(|o| o.is_some()).count(),
        1412,
        "exact matches: shapes known"
    );
    assert_eq!(region.iter().filter(|o| o.is_some()).count(), 1412);
    let sum = |s: &str, o: &str| -> (usize, i64) {
        let rows: Vec<usize> = (0..op.len())
            .filter(|&i| sub[i].as_deref() == Some(s) && op[i].as_deref() == Some(o))
            .collect();
        (rows.len(), rows.iter().map(|&i| dur[i].unwrap_or(0)).sum())
    };
    assert_eq!(sum("decoder", "aten::mm"), (320, 1_399_224));
    assert_eq!(sum("speculator", "aten::mm"), (252, 1_268_309));
    assert_eq!(sum("speculator", "aten::argmax"), (36, 204_675));
    assert_eq!(
        sum("decoder", "aten::_cudnn_attention_forward"),
        (128, 351_422)
    );
    let of_sub = |s: &str| sub.iter().filter(|x| x.as_deref() == Some(s)).count();
    assert_eq!((of_sub("decoder"), of_sub("speculator")), (800, 612));
    let bs = |b: i64| batch.iter().filter(|x| **x == Some(b)).count();
    assert_eq!((bs(4), bs(1)), (800, 612));
    // Attributed but outside every nn.Module frame: the drafter's argmax.
    let no_module = (0..op.len())
        .filter(|&i| op[i].is_some() && module[i].is_none())
        .count();
    assert_eq!(no_module, 36);
    assert!(module
        .iter()
        .flatten()
        .any(|m| m.starts_with("ToyForCausalLM_0/DecoderLayer_") && m.contains("/Linear_")));
}
