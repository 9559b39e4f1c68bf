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
