//! The timeline of `ledger`'s module doc, built in code. One column is 1 µs.
//!
//! ```text
//! CPU tid 7  [== step ext=1, 0..20 =====================)   [== step ext=2, 30..40 ==)
//!              L c=10 @1 (memcpy)  L c=11 @2 (graph)  L c=12 @20 (at the end: out)
//!   tid 8      L c=13 @3 (other thread: out)
//! GPU s 9        [memcpy c=10 4..6)
//! GPU s 7                  [k c=11 8..10)[k c=11 10..12)  [k c=11 14..15)
//! GPU s 7      [nccl k c=12 21..25)   [k c=13 26..27)   orphan [k c=99 50..52) (no launch call)
//! ```

use super::*;
use crate::analysis::{analyze_reader, Plan};
use crate::contexts::Selector;

const STEP: &str = "execute_context_0(0)_generation_1(1)";

fn x(cat: &str, name: &str, tid: i64, ts: &str, dur: &str, args: &str) -> String {
    format!(
        r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":{tid},"ts":{ts},"dur":{dur},"args":{{{args}}}}}"#
    )
}

fn launch(name: &str, tid: i64, ts: &str, corr: i64) -> String {
    x(
        "cuda_runtime",
        name,
        tid,
        ts,
        "0.5",
        &format!("\"correlation\":{corr}"),
    )
}

fn act(cat: &str, name: &str, ts: &str, dur: &str, corr: Option<i64>) -> String {
    let args = corr.map_or(String::new(), |c| format!("\"correlation\":{c}"));
    let tid = if cat == "gpu_memcpy" { 9 } else { 7 };
    format!(
        r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":0,"tid":{tid},"ts":{ts},"dur":{dur},"args":{{{args}}}}}"#
    )
}

fn drawing() -> Vec<String> {
    vec![
        x("user_annotation", STEP, 7, "0", "20", "\"External id\":1"),
        x("user_annotation", STEP, 7, "30", "10", "\"External id\":2"),
        launch("cudaMemcpyAsync", 7, "1", 10),
        launch("cudaGraphLaunch", 7, "2", 11),
        launch("cudaLaunchKernel", 7, "20", 12),
        launch("cudaLaunchKernel", 8, "3", 13),
        act("gpu_memcpy", "Memcpy HtoD", "4", "2", Some(10)),
        act("kernel", "gemm", "8", "2", Some(11)),
        act("kernel", "gemm", "10", "2", Some(11)),
        act("kernel", "softmax", "14", "1", Some(11)),
        act("kernel", "ncclKernel_AllReduce", "21", "4", Some(12)),
        act("kernel", "other", "26", "1", Some(13)),
        act("kernel", "orphan", "50", "2", Some(99)),
    ]
}

fn run(events: &[String]) -> crate::TraceResult {
    let doc = format!("{{\"traceEvents\": [{}]}}", events.join(","));
    let plan = Plan::new(Selector::Auto).with(KernelsSpec::default());
    let r = analyze_reader("t", doc.as_bytes(), &plan);
    assert!(r.error.is_none(), "{:?}", r.error);
    r
}

#[test]
fn the_drawing_per_context() {
    let mut r = run(&drawing());
    let k = r.results.take::<Kernels>().unwrap();
    assert_eq!((k.contexts, k.contexts_with_gpu_work), (2, 1));
    let row = &k.rows.get(0).expect("row 0");
    // c=10 and c=11 lie in the step; c=12 starts at its end, c=13 on tid 8.
    assert_eq!((row.launches, row.graph_launches), (2, 1));
    assert_eq!((row.kernels, row.memcpys, row.memsets), (3, 1, 0));
    // Span 4..15 = 11 µs; busy [4,6) [8,12) [14,15) = 2 + 4 + 1 = 7 µs.
    assert_eq!(row.gpu_span_ns, Some(11_000));
    assert_eq!(row.gpu_busy_ns, Some(7_000));
    // Queue delay per launch call (calls last 0.5 µs): memcpy 4 − 1.5 = 2.5,
    // graph 8 − 2.5 = 5.5 (its first kernel) → median 4 µs.
    assert_eq!(row.launch_latency_ns, Some(4_000.0));
    // Start to start, per activity: 4−1 = 3, 8−2 = 6, 10−2 = 8, 14−2 = 12 → (6+8)/2 = 7 µs.
    assert_eq!(row.launch_to_activity_start_ns, Some(7_000.0));
    assert_eq!(
        (row.launch_scope.as_ref(), k.launch_scope.as_str()),
        ("thread", "thread")
    );
    assert_eq!(k.rows.get(1).expect("row 1").gpu_span_ns, None);
    assert_eq!(k.gpu_idle_ms.median, Some(0.004));
    assert_eq!(k.kernels_per_context.median, Some(3.0));
    assert!(
        k.notes[0].starts_with("1 of 2 step contexts"),
        "{:?}",
        k.notes
    );
}

#[test]
fn the_drawing_top_kernels_and_tokens() {
    let mut k = run(&drawing()).results.take::<Kernels>().unwrap();
    let names: Vec<(&str, u64)> = k
        .top_kernels
        .iter()
        .map(|t| (t.name.as_str(), t.calls))
        .collect();
    assert_eq!(names, vec![("gemm", 2), ("softmax", 1)]);
    assert_eq!(k.top_kernels[0].total_ms, 0.004);
    assert_eq!(k.top_kernels[0].median_us, 2.0);
    // 4 µs of 7 µs busy.
    assert_eq!(k.top_kernels[0].share_pct, Some(400.0 / 7.0));
    k.set_tokens(Some(2), None);
    assert_eq!(k.kernels_per_token, Some(1.5));
    assert_eq!(k.gpu_span_per_token_ms, Some(0.0055));
    assert_eq!(k.gpu_busy_per_token_ms, Some(0.0035));
}

#[test]
fn the_drawing_timeline() {
    let t = run(&drawing()).results.take::<Kernels>().unwrap().timeline;
    // All activities, the orphan included: 4..52.
    assert_eq!(t.total_ms, Some(0.048));
    // Busy: 2 + 4 + 1 + 4 + 1 + 2 = 14 µs.
    assert_eq!(t.busy_ms, Some(0.014));
    assert_eq!(t.idle_ms, Some(0.034));
    // Compute: gemm, gemm, softmax, other, orphan = 4 + 1 + 1 + 2 = 8 µs.
    assert_eq!(t.compute_ms, Some(0.008));
    assert_eq!(t.exposed_comm_ms, Some(0.004));
    assert_eq!(t.exposed_memcpy_ms, Some(0.002));
    assert_eq!(t.activities, 7);
}

#[test]
fn duplicate_correlation_belongs_to_the_first_call() {
    let mut evs = drawing();
    // A second call with c=11, later in the file, inside step 2.
    evs.push(launch("cudaLaunchKernel", 7, "31", 11));
    let k = run(&evs).results.take::<Kernels>().unwrap();
    assert_eq!(k.rows.get(0).expect("row 0").kernels, 3);
    assert_eq!(k.rows.get(1).expect("row 1").kernels, 0);
}

#[test]
fn comparison_by_correlation() {
    let mut a = run(&drawing()).results.take::<Kernels>().unwrap();
    let mut b = a.clone();
    a.set_tokens(Some(1), None);
    b.set_tokens(Some(2), None);
    let c = compare(&a, &b);
    assert_eq!(c.s_context_correlation, Some(2.0));
    assert_eq!(c.s_context_busy, Some(2.0));
    assert_eq!(c.kernels_per_token_ratio, Some(0.5));
}

#[test]
fn memcpy_under_compute_is_not_exposed() {
    let evs = vec![
        act("kernel", "k", "0", "10", Some(1)),
        act("gpu_memcpy", "m", "2", "3", Some(2)),
        act("gpu_memset", "ncclMemset", "8", "4", Some(3)),
    ];
    let t = run(&evs).results.take::<Kernels>().unwrap().timeline;
    assert_eq!(t.total_ms, Some(0.012));
    assert_eq!(t.compute_ms, Some(0.010));
    // The nccl memset is communication: 10..12 is exposed.
    assert_eq!(t.exposed_comm_ms, Some(0.002));
    assert_eq!(t.exposed_memcpy_ms, Some(0.0));
}

/// A small random-number generator for the brute-force comparison.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, m: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % m
    }
}

/// (name, tid, start µs, dur µs) of a random context.
type Ctx = (String, u64, u64, u64);

/// The innermost context holding a launch at `ts` on `tid`, straight from
/// the definition (auto scope: `ProfilerStep#` contexts see every thread).
fn innermost(ctxs: &[Ctx], tid: u64, ts: u64) -> Option<usize> {
    (0..ctxs.len())
        .filter(|&i| {
            let (name, ctid, s, d) = &ctxs[i];
            let any_thread = name.starts_with("ProfilerStep#");
            (any_thread || *ctid == tid) && *s <= ts && ts < s + d
        })
        // Latest start, then earliest end, then later in file order.
        .max_by_key(|&i| (ctxs[i].2, std::cmp::Reverse(ctxs[i].2 + ctxs[i].3), i))
}

#[test]
fn attribution_matches_brute_force_on_random_nestings() {
    let mut r = Lcg(17);
    let every = Selector::Regex(regex::Regex::new(".").unwrap());
    for round in 0..300 {
        let ctxs: Vec<Ctx> = (0..1 + round % 9)
            .map(|k| {
                let name = if r.next(4) == 0 {
                    format!("ProfilerStep#{k}")
                } else {
                    "s".into()
                };
                (name, 1 + r.next(2), r.next(20), r.next(12))
            })
            .collect();
        let mut evs: Vec<String> = ctxs
            .iter()
            .map(|(n, tid, s, d)| {
                x(
                    "user_annotation",
                    n,
                    *tid as i64,
                    &s.to_string(),
                    &d.to_string(),
                    "",
                )
            })
            .collect();
        let mut want = vec![0u64; ctxs.len()];
        for c in 0..r.next(25) {
            let (tid, ts) = (1 + r.next(2), r.next(34));
            evs.push(launch(
                "cudaLaunchKernel",
                tid as i64,
                &ts.to_string(),
                c as i64,
            ));
            evs.push(act(
                "kernel",
                "k",
                &(ts + 1).to_string(),
                "1",
                Some(c as i64),
            ));
            if let Some(i) = innermost(&ctxs, tid, ts) {
                want[i] += 1;
            }
        }
        let doc = format!("{{\"traceEvents\": [{}]}}", evs.join(","));
        let plan = Plan::new(every.clone()).with(KernelsSpec::default());
        let k = analyze_reader("t", doc.as_bytes(), &plan)
            .results
            .take::<Kernels>()
            .unwrap();
        // Rows are in (start, file order) order.
        let mut order: Vec<usize> = (0..ctxs.len()).collect();
        order.sort_by_key(|&i| (ctxs[i].2, i));
        let got: Vec<u64> = k.rows.iter().map(|row| row.kernels).collect();
        let want: Vec<u64> = order.iter().map(|&i| want[i]).collect();
        assert_eq!(got, want, "round {round}: {ctxs:?}");
    }
}

/// A row's record gives it back exactly: medians, absences and any scope text.
#[test]
fn a_row_round_trips_through_its_record() {
    let a = KernelRow {
        start_ns: 5_111_125_509_725_324,
        cpu_ns: -3,
        launches: u64::MAX,
        graph_launches: 0,
        kernels: 89,
        memcpys: 1,
        memsets: 2,
        gpu_span_ns: None,
        gpu_busy_ns: Some(i64::MIN),
        launch_latency_ns: Some(2_500.5),
        launch_to_activity_start_ns: Some(0.1),
        launch_scope: "thread".into(),
    };
    let b = KernelRow {
        launch_latency_ns: None,
        launch_scope: "auto (thread: 1, process: 2)".to_string().into(),
        ..a.clone()
    };
    let c = KernelRow {
        launch_scope: "process".into(),
        ..a.clone()
    };
    let rows: crate::rows::Rows<KernelRow> = vec![a.clone(), b.clone(), c.clone()].into();
    assert_eq!(rows.iter().collect::<Vec<_>>(), [a, b, c]);
}

/// Issue 57 on the real CUDA pair (`sample_traces/text_graphs_{ar,mtp}`,
/// H100, torch 2.11+cu130): `kernels` of a worker trace with its
/// `capture_traces/` beside it, tokens from its `summary.json`. Every
/// figure below was summed apart from the JSON files by a Python script
/// (capture regions from the runtime calls, each captured launch's
/// innermost `cpu_op` and `nn.Module` frame, the replays' activities by
/// correlation in (start, end) order, exact decimal ns).
fn graphs_kernels(dir: &str) -> TraceKernels {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let trace = std::fs::read_dir(&root)
        .expect("sample dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
        .expect("worker trace");
    let summary = std::fs::read_dir(&root)
        .expect("sample dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".summary.json"))
        .expect("summary");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(summary).expect("summary")).expect("json");
    let tokens = v["completion_tokens"].as_u64();
    assert_eq!(tokens, Some(32));
    let plan = Plan::new(Selector::Auto).with(KernelsSpec::default());
    let mut r = crate::analysis::analyze_path(&trace, Default::default(), &plan);
    let mut k = r.results.take::<Kernels>().expect("kernels ran");
    Kernels::set_tokens(&mut k, tokens, None);
    k
}

/// (activities, gpu_ns) of a split row.
fn split_of(g: &crate::graphs::replay::GraphView, sub: &str, by: &str, name: &str) -> (u64, i64) {
    g.split
        .iter()
        .find(|r| r.subsystem == sub && r.by == by && r.name == name)
        .map_or((0, 0), |r| (r.activities, r.gpu_ns))
}

/// Σ of a subsystem's split rows `by` = the summary's share of it.
fn split_sums_to_summary(g: &crate::graphs::replay::GraphView) {
    for (sub, share) in &g.summary.by_subsystem {
        for by in ["module", "op"] {
            let rows = g.split.iter().filter(|r| &r.subsystem == sub && r.by == by);
            let (a, ns) = rows.fold((0, 0), |s, r| (s.0 + r.activities, s.1 + r.gpu_ns));
            assert_eq!(
                (a, ns),
                (share.activities, share.gpu_graph_ns),
                "{sub} {by}"
            );
        }
    }
}

#[test]
fn inside_graphs_of_the_real_cuda_ar_trace() {
    let k = graphs_kernels("sample_traces/text_graphs_ar");
    let g = k.inside_graphs.as_ref().expect("graphs");
    assert_eq!(g.summary.captures.len(), 3, "{:?}", g.summary.notes);
    assert_eq!(
        (
            g.summary.replays,
            g.summary.replays_matched,
            g.summary.replays_unmatched
        ),
        (30, 30, 0)
    );
    assert_eq!(g.summary.by_subsystem["decoder"].replays_by_batch["1"], 30);
    let d = |by, name| split_of(g, "decoder", by, name);
    assert_eq!(d("module", "Linear"), (600, 2_585_331));
    assert_eq!(d("module", "DecoderLayer"), (360, 1_025_045));
    assert_eq!(d("module", "LayerNorm"), (270, 920_218));
    assert_eq!(d("module", "GELU"), (120, 156_423));
    assert_eq!(d("module", "Embedding"), (30, 79_429));
    assert_eq!(d("op", "aten::mm"), (600, 2_585_331));
    assert_eq!(d("op", "aten::_flash_attention_forward"), (120, 775_183));
    assert_eq!(d("op", "aten::add"), (240, 249_862));
    assert_eq!(d("op", "aten::native_layer_norm"), (270, 920_218));
    assert_eq!(g.summary.gpu_graph_ns, 4_766_446);
    split_sums_to_summary(g);
    // Per token: 2 585 331 ns / 32 tokens.
    let linear = g.split.iter().find(|r| r.name == "Linear").expect("row");
    assert_eq!(linear.gpu_ms_per_token, Some(2_585_331.0 / 32.0 / 1e6));
    assert!((linear.share - 2_585_331.0 / 4_766_446.0).abs() < 1e-12);
    assert!(!g.split.iter().any(|r| r.subsystem == "speculator"));
}

/// MTP: the drafter's graphs (speculator, replayed inside
/// `proposer.propose`) apart from the target's (decoder, bs 4 for 3
/// scheduled tokens).
#[test]
fn inside_graphs_of_the_real_cuda_mtp_trace_split_the_drafter() {
    let k = graphs_kernels("sample_traces/text_graphs_mtp");
    let g = k.inside_graphs.as_ref().expect("graphs");
    assert_eq!(
        (
            g.summary.replays,
            g.summary.replays_matched,
            g.summary.replays_unmatched
        ),
        (52, 52, 0)
    );
    let dec = &g.summary.by_subsystem["decoder"];
    let spec = &g.summary.by_subsystem["speculator"];
    assert_eq!(
        (dec.replays, dec.activities, dec.gpu_graph_ns),
        (16, 800, 2_511_299)
    );
    assert_eq!(
        (spec.replays, spec.activities, spec.gpu_graph_ns),
        (36, 612, 2_364_803)
    );
    assert_eq!(dec.replays_by_batch["4"], 16);
    assert_eq!(spec.replays_by_batch["1"], 36);
    let s = |by, name| split_of(g, "speculator", by, name);
    assert_eq!(s("module", "Linear"), (252, 1_268_309));
    assert_eq!(s("module", "(no module)"), (36, 204_675));
    assert_eq!(s("module", "ToyEagleDraftModel"), (36, 42_016));
    assert_eq!(s("op", "aten::argmax"), (36, 204_675));
    assert_eq!(s("op", "aten::_flash_attention_forward"), (36, 263_587));
    let d = |by, name| split_of(g, "decoder", by, name);
    assert_eq!(d("module", "Linear"), (320, 1_399_224));
    assert_eq!(d("op", "aten::_cudnn_attention_forward"), (128, 351_422));
    assert_eq!(d("op", "aten::_flash_attention_forward"), (0, 0));
    split_sums_to_summary(g);
    let row = g
        .split
        .iter()
        .find(|r| r.subsystem == "speculator" && r.name == "aten::mm")
        .expect("row");
    assert_eq!(row.gpu_ms_per_token, Some(1_268_309.0 / 32.0 / 1e6));
}

/// A capture of another batch size (`--capture` the MTP run's decoder bs-4
/// file for the AR trace, whose replays are bs 1: 46 activities against
/// 50 launches): every replay unmatched with its reason, nothing split,
/// no panic.
#[test]
fn inside_graphs_with_a_capture_of_another_batch_size() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let trace = std::fs::read_dir(root.join("sample_traces/text_graphs_ar"))
        .expect("sample dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
        .expect("worker trace");
    let bs4 = root.join(
        "sample_traces/text_graphs_mtp/capture_traces/graph_capture_rank_0.1796594516722073437.pt.trace.json.gz",
    );
    let plan = Plan::new(Selector::Auto)
        .capturing(crate::tracefile::capture::CaptureSpec { capture: vec![bs4] })
        .with(KernelsSpec::default());
    let mut r = crate::analysis::analyze_path(&trace, Default::default(), &plan);
    let k = r.results.take::<Kernels>().expect("kernels ran");
    let g = k.inside_graphs.as_ref().expect("graphs");
    assert_eq!(g.summary.regions, 1);
    assert_eq!((g.summary.replays, g.summary.replays_unmatched), (30, 30));
    assert_eq!(g.summary.gpu_graph_ns, 0);
    assert!(g.split.is_empty());
    assert_eq!(
        g.summary.unmatched[0].reason,
        "count: 46 activities, no capture region has as many (regions have [50])"
    );
    assert!(
        k.notes
            .iter()
            .any(|n| n.contains("30 of 30 graph replays unmatched")),
        "{:?}",
        k.notes
    );
}
