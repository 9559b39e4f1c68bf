use super::compare::compare;
use super::*;

fn row(name: &str, calls: u64, total: i128, family: &str) -> NameRow {
    NameRow {
        name: name.into(),
        kind: "kernel".into(),
        family: family.into(),
        calls,
        total_ns: total,
        median_ns: (total / i128::from(calls.max(1))) as f64,
    }
}

fn trace(path: &str, tokens: Option<u64>, names: Vec<NameRow>) -> TraceDiff {
    let config = DiffConfig::new(DiffSpec::default()).unwrap();
    TraceDiff {
        path: path.into(),
        scope: "steps".into(),
        context: "step".into(),
        contexts: 4,
        contexts_with_gpu_work: 4,
        completion_tokens: tokens,
        tokens_source: None,
        activities: names.iter().map(|r| r.calls).sum(),
        kernels: names
            .iter()
            .filter(|r| r.kind == "kernel")
            .map(|r| r.calls)
            .sum(),
        total_ns: names.iter().map(|r| r.total_ns).sum(),
        names,
        graph_replays: 0,
        signatures: Vec::new(),
        family_table: config.table.clone(),
        top: 2,
        inside_graphs: None,
        notes: Vec::new(),
        complete: true,
        error: None,
    }
}

#[test]
fn families_follow_the_table_first_match_wins() {
    let c = DiffConfig::new(DiffSpec::default()).unwrap();
    assert_eq!(
        c.family("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"),
        "GEMM/GEMV"
    );
    assert_eq!(
        c.family("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, cutlass::bfloat16_t>>"),
        "attention"
    );
    assert_eq!(
        c.family("triton_per_fused_add_embedding_native_layer_norm_1"),
        "normalisation"
    );
    assert_eq!(
        c.family("triton_poi_fused_cat_embedding_0"),
        "gather/scatter/index"
    );
    assert_eq!(c.family("triton_red_fused_argmax_5"), "reduction");
    assert_eq!(c.family("Memcpy DtoD (Device -> Device)"), "copy/fill");
    assert_eq!(c.family("Memset (Device)"), "copy/fill");
    assert_eq!(
        c.family("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"),
        "communication"
    );
    assert_eq!(
        c.family("cross_device_reduce_1stage<bf16, 2>"),
        "communication"
    );
    assert_eq!(
        c.family("void at::native::radixSortKVInPlace<>"),
        "sort/top-k"
    );
    assert_eq!(c.family("triton_poi_fused_gelu_2"), "elementwise");
    assert_eq!(c.family("mystery"), "other");
    let user = DiffConfig::new(DiffSpec {
        families: vec!["mine=gelu".into()],
        ..DiffSpec::default()
    })
    .unwrap();
    assert_eq!(user.family("triton_poi_fused_gelu_2"), "mine");
    assert_eq!(user.table[0].family, "mine");
    assert!(DiffConfig::new(DiffSpec {
        families: vec!["nope".into()],
        ..DiffSpec::default()
    })
    .is_err());
    assert!(DiffConfig::new(DiffSpec {
        families: vec!["bad=(".into()],
        ..DiffSpec::default()
    })
    .is_err());
}

#[test]
fn summary_parts_add_up_exactly() {
    let b = trace(
        "b",
        Some(3),
        vec![
            row("gemv", 7, 7001, "GEMM/GEMV"),
            row("norm", 5, 503, "normalisation"),
            row("gone", 2, 11, "other"),
        ],
    );
    let c = trace(
        "c",
        Some(7),
        vec![
            row("gemv", 3, 9007, "GEMM/GEMV"),
            row("norm", 11, 1999, "normalisation"),
            row("new", 13, 4242, "sort/top-k"),
        ],
    );
    let d = compare(&b, &c);
    let s = &d.summary;
    assert_eq!(s.denominator, 21);
    assert_eq!(
        s.call_count_units + s.duration_units + s.added_units - s.removed_units,
        s.total_units
    );
    assert_eq!(
        s.total_units,
        (9007 + 1999 + 4242) * 3 - (7001 + 503 + 11) * 7
    );
    assert_eq!((s.common, s.added, s.removed), (2, 1, 1));
    assert_eq!(s.added_units, 4242 * 3);
    assert_eq!(s.removed_units, 11 * 7);
    // (a) of gemv: (3·3 − 7·7)·7001/7 = −40005.71… → −40006; of norm:
    // (11·3 − 5·7)·503/5 = −201.2 → −201.
    assert_eq!(s.call_count_units, -40006 - 201);
    let fam_b: i128 = d.families.iter().map(|f| f.baseline.time_ns).sum();
    let fam_c: i128 = d.families.iter().map(|f| f.candidate.time_ns).sum();
    assert_eq!((fam_b, fam_c), (b.total_ns, c.total_ns));
    // Sorted by |Δ| (units: gemv 9007·3 − 7001·7 = −22006, new 12726,
    // norm 2476, gone −77).
    let names: Vec<&str> = d.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["gemv", "new", "norm", "gone"]);
    assert_eq!(d.kernels[1].status, "added");
    assert_eq!(d.kernels[3].status, "removed");
    assert_eq!(d.normalisation, "token");
}

#[test]
fn unknown_tokens_normalise_per_context_and_say_so() {
    let b = trace("b", None, vec![row("k", 4, 400, "other")]);
    let c = trace("c", Some(9), vec![row("k", 8, 400, "other")]);
    let d = compare(&b, &c);
    assert_eq!(d.normalisation, "context");
    assert_eq!(d.baseline.normaliser, 4);
    assert!(d.notes.iter().any(|n| n.contains("per selected context")));
    assert_eq!(d.kernels[0].baseline.calls_per_token, Some(1.0));
}

#[test]
fn an_empty_side_and_disjoint_sets_are_notes() {
    let b = trace("b", Some(2), vec![]);
    let c = trace("c", Some(2), vec![row("k", 1, 5, "other")]);
    let d = compare(&b, &c);
    assert!(d.notes.iter().any(|n| n.contains("no GPU work")));
    assert!(d
        .notes
        .iter()
        .any(|n| n.contains("no kernel name in common")));
    assert_eq!(d.kernels[0].ratio, None);
    assert!(d.dominant.baseline.is_none());
}

/// Issue 57 on the real CUDA pair (`sample_traces/text_graphs_{ar,mtp}`,
/// H100, torch 2.11+cu130, 32 completion tokens each): graph GPU time per
/// token per captured op, AR (baseline) against MTP (candidate). Figures
/// summed apart from the JSON by a Python script.
fn real_graphs(mode: &str, scope: Scope) -> TraceDiff {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("sample_traces/text_graphs_{mode}"));
    let trace = std::fs::read_dir(&root)
        .expect("sample dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
        .expect("worker trace");
    let spec = DiffSpec {
        scope,
        ..DiffSpec::default()
    };
    let plan = crate::analysis::Plan::new(crate::contexts::Selector::Auto)
        .with(DiffConfig::new(spec).expect("config"));
    let mut r = crate::analysis::analyze_path(&trace, Default::default(), &plan);
    let mut t = r.results.take::<Diff>().expect("diff ran");
    <Diff as Analysis>::set_tokens(&mut t, Some(32), None);
    t
}

#[test]
fn captured_ops_across_the_real_ar_and_mtp_pair() {
    // Steps scope: the decode steps' replays (the target's graphs; the
    // drafter's run in proposer.propose, between the steps).
    let (b, c) = (
        real_graphs("ar", Scope::Steps),
        real_graphs("mtp", Scope::Steps),
    );
    let cmp = compare(&b, &c);
    let op = |sub: &str, name: &str| {
        cmp.captured_ops
            .iter()
            .find(|r| r.subsystem == sub && r.op == name)
            .cloned()
            .expect("row")
    };
    let mm = op("decoder", "aten::mm");
    assert_eq!(
        (mm.baseline_activities, mm.candidate_activities),
        (600, 320)
    );
    assert_eq!(
        (mm.baseline_gpu_ns, mm.candidate_gpu_ns),
        (2_585_331, 1_399_224)
    );
    assert_eq!(mm.baseline_ms_per_token, Some(2_585_331.0 / 32.0 / 1e6));
    assert_eq!(mm.candidate_ms_per_token, Some(1_399_224.0 / 32.0 / 1e6));
    // Exact: (1 399 224·32 − 2 585 331·32) / (32·32) ns.
    assert_eq!(mm.delta_ms_per_token, Some(-1_186_107.0 / 32.0 / 1e6));
    // Each side's attention kernel: flash at bs 1, cuDNN at bs 4.
    let flash = op("decoder", "aten::_flash_attention_forward");
    assert_eq!(
        (flash.baseline_gpu_ns, flash.candidate_gpu_ns),
        (775_183, 0)
    );
    let cudnn = op("decoder", "aten::_cudnn_attention_forward");
    assert_eq!(
        (cudnn.baseline_gpu_ns, cudnn.candidate_gpu_ns),
        (0, 351_422)
    );
    assert!(cmp.captured_ops.iter().all(|r| r.subsystem == "decoder"));
    // The first row has the largest |Δ|: aten::mm.
    assert_eq!(cmp.captured_ops[0].op, "aten::mm");

    // Trace scope: the drafter's graphs too, on the candidate side only.
    let (b, c) = (
        real_graphs("ar", Scope::Trace),
        real_graphs("mtp", Scope::Trace),
    );
    let cmp = compare(&b, &c);
    let argmax = cmp
        .captured_ops
        .iter()
        .find(|r| r.subsystem == "speculator" && r.op == "aten::argmax")
        .expect("row");
    assert_eq!(
        (
            argmax.baseline_gpu_ns,
            argmax.candidate_gpu_ns,
            argmax.candidate_activities
        ),
        (0, 204_675, 36)
    );
    let spec_mm = cmp
        .captured_ops
        .iter()
        .find(|r| r.subsystem == "speculator" && r.op == "aten::mm")
        .expect("row");
    assert_eq!(spec_mm.candidate_gpu_ns, 1_268_309);
}
