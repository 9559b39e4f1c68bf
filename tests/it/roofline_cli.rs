//! `torchtrace roofline` on a real H100 trace with shapes (TraceLens's
//! bert-small, tests/data/README.md): the JSON document, the CSV, the exit
//! status without shapes, the peak overrides.

use assert_cmd::Command;

const BERT: &str = "tests/data/tracelens_h100_bert_small.json.gz";

fn json(args: &[&str], code: i32) -> serde_json::Value {
    let out = Command::cargo_bin("torchtrace")
        .expect("binary")
        .args(args)
        .assert()
        .code(code)
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("JSON")
}

#[test]
fn json_rows_of_a_real_h100_trace() {
    let d = json(&["-q", "roofline", "-f", "json", BERT], 0);
    let t = &d["traces"][0];
    assert_eq!(t["device"]["matched"], "H100 SXM");
    assert_eq!(t["device"]["peak_tbps"], 3.35);
    let rows = t["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 15);
    // The vocabulary projection: TraceLens's 4.41119205 GFLOPS and
    // 38.211021423339844 MiB, one call of 41 280 ns.
    let vocab = rows
        .iter()
        .find(|r| r["input_dims"][0][0] == 30522)
        .expect("the vocabulary GEMM");
    assert_eq!(vocab["name"], "aten::addmm");
    assert_eq!(vocab["input_types"][1], "c10::BFloat16");
    assert_eq!(vocab["flops"], 4_411_192_050u64);
    assert_eq!(vocab["bytes"], 40_067_160u64);
    assert_eq!(vocab["gpu_ns"], 41_280);
    assert_eq!(vocab["bound"], "memory");
    let s = &t["summary"];
    assert_eq!(s["gpu_ns"], 309_437);
    assert_eq!(s["modelled_gpu_ns"], 307_197);
    assert_eq!(s["unmodelled_gpu_ns"], 2_240);
    assert_eq!(t["unmodelled"][0]["name"], "aten::_local_scalar_dense");
}

#[test]
fn overrides_and_csv() {
    let d = json(
        &[
            "-q",
            "roofline",
            "-f",
            "json",
            "--peak-tflops",
            "100",
            "--peak-tbps",
            "1",
            BERT,
        ],
        0,
    );
    let r = &d["traces"][0]["rows"][0];
    assert_eq!(r["peak_tflops"], 100.0);
    assert_eq!(r["ridge"], 100.0);
    let out = Command::cargo_bin("torchtrace")
        .expect("binary")
        .args(["-q", "roofline", "-f", "csv", BERT])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).expect("utf-8");
    assert!(text.contains("aten::_scaled_dot_product_flash_attention"));
    Command::cargo_bin("torchtrace")
        .expect("binary")
        .args(["-q", "roofline", "--peak-tbps", "0", BERT])
        .assert()
        .code(2);
}

/// The vLLM samples have no shapes (record_shapes off): exit 1, a note.
#[test]
fn no_shapes_is_exit_1() {
    let trace = std::fs::read_dir("sample_traces/text_ar")
        .expect("samples")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".gz"))
        .expect("a sample trace");
    Command::cargo_bin("torchtrace")
        .expect("binary")
        .args(["-q", "roofline"])
        .arg(&trace)
        .assert()
        .code(1);
}

fn worker(dir: &str) -> String {
    std::fs::read_dir(dir)
        .expect("sample dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
        .expect("worker trace")
        .to_string_lossy()
        .into_owned()
}

/// The real CUDA-graph pair (sample_traces/text_graphs_{ar,mtp}, H100):
/// two traces side by side, each side's dominant op against the
/// bandwidth roof and the work per token; the decode's replayed kernels
/// are on the roof with the capture traces' shapes.
#[test]
fn the_graph_pair_side_by_side() {
    let ar = worker("sample_traces/text_graphs_ar");
    let mtp = worker("sample_traces/text_graphs_mtp");
    let d = json(&["-q", "roofline", "-f", "json", &ar, &mtp], 0);
    let sides = d["comparison"].as_array().expect("two sides");
    assert_eq!(sides.len(), 2);
    for (s, t) in sides.iter().zip(d["traces"].as_array().unwrap()) {
        assert_eq!(s["completion_tokens"], 32, "both runs made 32 tokens");
        let dom = &t["rows"][0];
        assert_eq!(s["dominant_gpu_ns"], dom["gpu_ns"]);
        let share = s["dominant_share_of_bandwidth_roof"].as_f64().unwrap();
        let tbps = dom["tb_per_s"].as_f64().unwrap();
        assert!((share - tbps / 3.35).abs() < 1e-12);
        // Per token: Σ calls × flops of every row ÷ 32.
        let flops: u128 = t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["calls"].as_u64().unwrap() as u128 * r["flops"].as_u64().unwrap() as u128)
            .sum();
        assert_eq!(t["totals"]["flops"].as_u64().unwrap() as u128, flops);
        let per = s["flops_per_token"].as_f64().unwrap();
        assert!((per - flops as f64 / 32.0).abs() < 1e-6 * per);
    }
    assert_eq!(d["traces"][0]["summary"]["gpu_graph_ns"], 4_766_446);
    assert_eq!(d["traces"][1]["summary"]["gpu_graph_ns"], 4_876_102);
}

/// `batch` over the graph pair: the report's "How close to the roof"
/// section says for the workload how close each side's dominant op ran,
/// traces.csv has the per-trace columns, roofline.csv every row, figure
/// 12 is drawn, results.json compares the sides; `--records` then
/// `merge` writes the same report.
#[test]
fn batch_section_and_records_round_trip() {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().join("one");
    let bin = || Command::cargo_bin("torchtrace").expect("binary");
    bin()
        .args([
            "-q",
            "batch",
            "sample_traces/text_graphs_ar",
            "sample_traces/text_graphs_mtp",
            "-o",
        ])
        .arg(&o)
        .assert()
        .success();
    let report = std::fs::read_to_string(o.join("report.md")).unwrap();
    let at = report
        .find("## How close to the roof")
        .expect("the section");
    let section = &report[at..];
    let line = section
        .lines()
        .find(|l| l.starts_with("- **"))
        .expect("a workload's sentence");
    assert!(line.contains("AR's dominant op `"), "{line}");
    assert!(line.contains("of the 3.35 TB/s memory roof"), "{line}");
    assert!(line.contains("MTP's dominant op `"), "{line}");
    let csv = std::fs::read_to_string(o.join("traces.csv")).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for k in [
        "roofline_dominant_op",
        "roofline_dominant_gpu_share",
        "roofline_dominant_tb_per_s",
        "roofline_dominant_tflops_per_s",
        "roofline_dominant_pct_of_peak",
        "roofline_dominant_bound",
    ] {
        assert!(head.contains(&k), "traces.csv lacks {k}");
    }
    let rows = std::fs::read_to_string(o.join("roofline.csv")).unwrap();
    assert!(rows.contains("aten::_scaled_dot_product_cudnn_attention"));
    assert!(o.join("figures/fig12_roofline.png").exists());
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(o.join("results.json")).unwrap()).unwrap();
    let c = &results["comparisons"][0]["roofline"];
    assert!(
        c["baseline"]["name"].is_string() && c["candidate"]["name"].is_string(),
        "{c}"
    );
    // Records, then merge: the same report.
    let rec = out.path().join("records.jsonl");
    bin()
        .args([
            "-q",
            "batch",
            "sample_traces/text_graphs_ar",
            "sample_traces/text_graphs_mtp",
            "--no-figures",
            "--records",
        ])
        .arg(&rec)
        .assert()
        .success();
    let m = out.path().join("merged");
    bin()
        .args(["-q", "merge"])
        .arg(&rec)
        .arg("-o")
        .arg(&m)
        .arg("--no-figures")
        .assert()
        .success();
    let merged = std::fs::read_to_string(m.join("report.md")).unwrap();
    let mat = merged
        .find("## How close to the roof")
        .expect("merged section");
    // The section alone: up to the next `## ` heading.
    let own = |s: &str| s[..s[3..].find("\n## ").map_or(s.len(), |e| e + 3)].to_string();
    assert_eq!(own(&merged[mat..]), own(section));
    assert_eq!(
        std::fs::read_to_string(m.join("roofline.csv")).unwrap(),
        rows
    );
}

/// A peak outside any physical range (a typo, a unit mistake: 1e-320
/// TB/s made every rate `inf`) is refused, exit 2, with the range.
#[test]
fn a_peak_outside_its_physical_range_is_refused_with_the_range() {
    for (flag, v, range) in [
        ("--peak-tbps", "1e-320", "between 0.001 and 10000 TB/s"),
        ("--peak-tbps", "0", "between 0.001 and 10000 TB/s"),
        ("--peak-tbps", "NaN", "between 0.001 and 10000 TB/s"),
        ("--peak-tflops", "1e9", "between 0.001 and 1000000 TFLOP/s"),
    ] {
        let o = Command::cargo_bin("torchtrace")
            .unwrap()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["roofline", BERT, flag, v])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {v}: {err}");
        assert!(
            err.contains(&format!("{flag} must be {range}, not")),
            "{err}"
        );
    }
    // The edges of the ranges are accepted.
    let edges = ["-q", "roofline", "-f", "json", BERT, "--peak-tbps", "0.001"];
    json(&[&edges[..], &["--peak-tflops", "1000000"]].concat(), 0);
}
