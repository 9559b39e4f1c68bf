//! Unit tests of `ops` on small synthetic traces whose every figure is
//! worked out by hand from VIEWS.md (rule ids in each test's doc).

use super::{OpRow, Ops, OpsSpec, TraceOps};
use crate::analysis::{analyze_reader, Plan};
use crate::contexts::Selector;

fn run(events: &[String]) -> TraceOps {
    let text = format!("{{\"traceEvents\": [{}]}}", events.join(",\n"));
    let plan = Plan::new(Selector::default()).with(OpsSpec::default());
    let mut r = analyze_reader("synthetic", text.as_bytes(), &plan);
    r.take::<Ops>().expect("ops ran")
}

/// A complete event, times in µs.
fn ev(cat: &str, name: &str, tid: i64, ts: i64, dur: i64, corr: Option<i64>) -> String {
    let args = corr.map_or(String::new(), |c| {
        format!(", \"args\": {{\"correlation\": {c}}}")
    });
    format!("{{\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"{name}\", \"pid\": 1, \"tid\": {tid}, \"ts\": {ts}, \"dur\": {dur}{args}}}")
}

/// A device activity on stream `stream` of device 0, times in µs.
fn act(cat: &str, name: &str, stream: i64, ts: i64, dur: i64, corr: i64) -> String {
    format!("{{\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"{name}\", \"pid\": 0, \"tid\": {stream}, \"ts\": {ts}, \"dur\": {dur}, \"args\": {{\"correlation\": {corr}, \"device\": 0, \"stream\": {stream}}}}}")
}

fn row<'a>(t: &'a TraceOps, name: &str) -> &'a OpRow {
    t.ops
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name}"))
}

/// The vLLM shape of C4 (a record_function range starting inside the
/// python frame `enter` and ending inside `exit`: not nested), a graph
/// replay (O2: its launcher is the python frame), a pageable DtoH copy
/// (C7: sync-like), a sync call outside every op (O1's pseudo-row):
///
/// ```text
/// tid 1 [step=====================================================)      [sync)
///         [enter)   [exit)  [replay)    [copy_======)             1000   1100
///           [rf==========)    L2 graph   L3 memcpy (Pageable)
///             [topk==)
///               [sort)
///                L1 kernel
/// ```
#[test]
fn the_vllm_shape_by_hand() {
    let t = run(&[
        ev("user_annotation", "step", 1, 0, 1000, None),
        ev("python_function", "enter", 1, 10, 20, None),
        ev("user_annotation", "rf", 1, 20, 180, None),
        ev("python_function", "exit", 1, 190, 20, None),
        ev("cpu_op", "aten::topk", 1, 40, 60, None),
        ev("cpu_op", "aten::sort", 1, 50, 40, None),
        ev("cuda_runtime", "cudaLaunchKernel", 1, 60, 10, Some(1)),
        ev("python_function", "replay", 1, 300, 100, None),
        ev("cuda_runtime", "cudaGraphLaunch", 1, 310, 20, Some(2)),
        ev("cpu_op", "aten::copy_", 1, 500, 200, None),
        ev("cuda_runtime", "cudaMemcpyAsync", 1, 510, 180, Some(3)),
        ev("cuda_runtime", "cudaStreamSynchronize", 1, 1100, 50, None),
        act("kernel", "k1", 7, 75, 5, 1),
        act("kernel", "g1", 7, 335, 10, 2),
        act("kernel", "g2", 7, 350, 2, 2),
        act("kernel", "g3", 8, 340, 20, 2),
        act(
            "gpu_memcpy",
            "Memcpy DtoH (Device -> Pageable)",
            7,
            520,
            80,
            3,
        ),
    ]);
    let us = 1000;
    // O2: the innermost op launches; a replay goes whole to its frame.
    assert_eq!(row(&t, "aten::sort").gpu_self_ns, 5 * us);
    assert_eq!(row(&t, "replay").gpu_self_ns, 32 * us);
    assert_eq!(row(&t, "replay").kernels_self, 3);
    assert_eq!(row(&t, "replay").graph_launches_self, 1);
    assert_eq!(row(&t, "aten::copy_").memcpys_self, 1);
    // O3: inclusive once per name; O4: the step owns every launch.
    assert_eq!(row(&t, "step").gpu_total_ns, 117 * us);
    assert_eq!(row(&t, "rf").gpu_total_ns, 5 * us);
    assert_eq!(row(&t, "aten::topk").gpu_total_ns, 5 * us);
    assert_eq!(row(&t, "step").gpu_top_ns, 117 * us);
    assert_eq!(row(&t, "replay").gpu_top_ns, 0);
    assert_eq!(t.summary.gpu_linked_ns, i128::from(117 * us));
    // O5: the step's children are enter, rf, exit, replay, copy_ (topk's
    // parent is rf): |∪| = 200 + 100 + 200.
    assert_eq!(row(&t, "step").cpu_self_ns, 500 * us);
    assert_eq!(row(&t, "aten::sort").cpu_self_ns, 30 * us);
    // C7: the pageable copy blocks: sync in step and copy_.
    assert_eq!(row(&t, "step").sync_ns, 180 * us);
    assert_eq!(row(&t, "step").host_ns, 820 * us);
    assert_eq!(row(&t, "aten::copy_").host_ns, 20 * us);
    // O8: copy_'s 80 µs of GPU work outlast its 20 µs of host time.
    assert_eq!(row(&t, "aten::copy_").launch_bound, Some(false));
    assert_eq!(row(&t, "aten::sort").launch_bound, Some(true));
    assert_eq!(row(&t, "enter").launch_bound, None);
    // O1: the sync outside every op is in the pseudo-row.
    let pseudo = row(&t, super::NO_OP);
    assert_eq!(
        (pseudo.cat.as_deref(), pseudo.runtime_self_ns),
        (None, 50 * us)
    );
    // O6: per launch; the copy starts before its call returns.
    let s = &t.summary;
    assert_eq!(s.launch_stats.launch_latency_ns.sum, (15 + 25 + 10) * us);
    assert_eq!(s.launch_stats.queue_delay_ns.sum, (5 + 5 - 170) * us);
    assert_eq!(s.launch_stats.queue_delay_ns.negative, 1);
    assert_eq!(s.launch_stats.queue_delay_ns.sum_clipped, 10 * us);
    assert_eq!(s.launch_stats.launch_latency_ns.median, Some(15 * us));
    assert_eq!(s.launch_stats_by_kind.graph.activities, 3);
    assert_eq!(s.launch_stats_by_kind.memcpy.launches, 1);
    assert_eq!(row(&t, "aten::sort").first_launch_delay_ns_sum, 10 * us);
    // O9: window 0..1150, blocked 180 + 50.
    assert_eq!(s.host_window_ns, i128::from(1150 * us));
    assert_eq!(s.host_blocked_ns, i128::from(230 * us));
    assert_eq!(s.host_busy_ns, i128::from(920 * us));
    // I2–I3 on stream 7: gaps 255 (host wait), 5 (not), 168 (host wait).
    assert_eq!(s.gpu_idle_ns, i128::from(428 * us));
    assert_eq!(s.gpu_host_wait_ns, i128::from(423 * us));
    assert_eq!(s.host_wait_share_of_idle, Some(0.988318));
    assert_eq!(s.verdict.as_deref(), Some("launch-bound"));
    assert_eq!(s.host_busy_per_gpu, Some(7.863248));
    // Σ gpu_self = Σ gpu_top = gpu_linked (O4).
    let self_sum: i64 = t.ops.iter().map(|r| r.gpu_self_ns).sum();
    assert_eq!(i128::from(self_sum), s.gpu_linked_ns);
}

/// O10: without host ops every launch is in the pseudo-row (verdict still
/// computed); C4: of two identical intervals the earlier in the file is
/// outer, so the later launches and the earlier is top-level.
#[test]
fn pseudo_row_and_identical_intervals() {
    let t = run(&[
        ev("cuda_runtime", "cudaLaunchKernel", 1, 0, 5, Some(1)),
        act("kernel", "k", 7, 10, 3, 1),
    ]);
    assert_eq!(t.ops.len(), 1);
    assert_eq!(t.ops[0].launches_self, 1);
    assert_eq!(t.ops[0].gpu_top_ns, 3000);
    assert_eq!(t.ops[0].gpu_total_ns, 3000);
    assert_eq!(t.summary.launches_without_op, 1);
    assert_eq!(t.summary.verdict.as_deref(), Some("not launch-bound"));
    let t = run(&[
        ev("cpu_op", "A", 1, 0, 100, None),
        ev("cpu_op", "B", 1, 0, 100, None),
        ev("cuda_runtime", "cudaLaunchKernel", 1, 10, 5, Some(1)),
        act("kernel", "k", 7, 20, 3, 1),
    ]);
    assert_eq!(row(&t, "B").gpu_self_ns, 3000);
    assert_eq!(row(&t, "A").gpu_top_ns, 3000);
    // A's only child is B, which covers it whole.
    assert_eq!(row(&t, "A").cpu_self_ns, 0);
    assert_eq!(row(&t, "B").cpu_self_ns, 95_000);
}

/// C1's rounding helpers: half to even.
#[test]
fn ratios_and_means_round_half_to_even() {
    use super::exact::{div_half_even, ratio6};
    assert_eq!(div_half_even(5, 2), 2);
    assert_eq!(div_half_even(7, 2), 4);
    assert_eq!(div_half_even(-5, 2), -2);
    assert_eq!(ratio6(1, 3), Some(0.333333));
    assert_eq!(ratio6(1, 8_000_000), Some(0.0)); // 0.125e-6 → 0
    assert_eq!(ratio6(3, 2_000_000), Some(0.000002)); // 1.5e-6 → 2e-6
    assert_eq!(ratio6(1, 0), None);
}

/// Every sample trace and real fixture of the repository.
fn fixture_paths() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    for dir in ["sample_traces", "tests/data"] {
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).expect("fixture dir").flatten() {
                let p = e.path();
                if p.is_dir() && !p.ends_with("damaged") {
                    stack.push(p);
                } else if p.to_string_lossy().ends_with(".json.gz") {
                    paths.push(p);
                }
            }
        }
    }
    paths.sort();
    assert!(paths.len() >= 15, "{paths:?}");
    paths
}

/// The host store (`crate::hostops::store`), shared by `ops`, `roofline`
/// and `idle` in one plan, gives each the figures it gives alone; and
/// `ops` gives the same figures whether it consumes the store (alone, or
/// the last of its users) or reads it while another holds it.
#[test]
fn the_shared_host_store_changes_no_figure() {
    use crate::analyses::{idle::IdleSpec, roofline::RooflineSpec};
    use crate::hostops::store::HostStore;
    use std::sync::Arc;
    let run = |p: &std::path::Path, plan: &Plan| {
        crate::analysis::analyze_path(p, Default::default(), plan)
    };
    let all = Plan::new(Selector::default())
        .with(OpsSpec::default())
        .with(RooflineSpec::default())
        .with(IdleSpec::default());
    let mut launches = 0;
    for p in fixture_paths() {
        let mut together = run(&p, &all);
        let alone = |plan: Plan| run(&p, &plan);
        let mut ops = alone(Plan::new(Selector::default()).with(OpsSpec::default()));
        let mut roof = alone(Plan::new(Selector::default()).with(RooflineSpec::default()));
        let mut idle = alone(Plan::new(Selector::default()).with(IdleSpec::default()));
        let shown = p.display();
        assert_eq!(together.take::<Ops>(), ops.take::<Ops>(), "{shown}");
        assert_eq!(
            together.take::<crate::analyses::roofline::Roofline>(),
            roof.take::<crate::analyses::roofline::Roofline>(),
            "{shown}"
        );
        assert_eq!(
            together.take::<crate::analyses::idle::Idle>(),
            idle.take::<crate::analyses::idle::Idle>(),
            "{shown}"
        );
        // The store read whole, then measured consumed and read.
        let mut store = <HostStore as crate::analysis::Collects>::make(&[&super::OPS_HOST]);
        let mut meta = crate::trace::Meta::default();
        let filter = store.prefilter();
        crate::trace::read_path(&p, &filter, Default::default(), &mut meta, &mut |ev, at| {
            store.push(ev, at)
        })
        .expect("a fixture reads");
        let store = Arc::new(store.sealed());
        let caps = crate::graphs::Captures::default();
        let held = store.clone();
        let read = super::measure::measure(held, &caps);
        let consumed = super::measure::measure(store, &caps);
        assert_eq!(read, consumed, "{shown}");
        launches += consumed.summary.launches;
    }
    assert!(launches > 10_000, "{launches}");
}

/// The finish's side threads (the activities' figures beside the
/// launches', a big thread's merge and O3 answers beside its sweep) give
/// what the inline finish gives, on every sample trace and real fixture:
/// forced on for every thread and trace, then off.
#[test]
fn threaded_finish_equals_inline() {
    use super::measure::{Limits, LIMITS};
    let paths = fixture_paths();
    let plan = Plan::new(Selector::default()).with(OpsSpec::default());
    let run_with = |p: &std::path::Path, l: Limits| {
        LIMITS.with(|c| c.set(Some(l)));
        let progress = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut r = crate::analysis::analyze_path(p, progress, &plan);
        r.take::<Ops>().expect("ops ran")
    };
    let mut threaded_launches = 0;
    for p in &paths {
        let inline = run_with(
            p,
            Limits {
                side_min: usize::MAX,
                big_min: usize::MAX,
            },
        );
        let threaded = run_with(
            p,
            Limits {
                side_min: 0,
                big_min: 0,
            },
        );
        assert_eq!(threaded, inline, "{}", p.display());
        threaded_launches += threaded.summary.launches;
    }
    LIMITS.with(|c| c.set(None));
    assert!(threaded_launches > 10_000, "{threaded_launches}");
}

/// Issue 57 on the real ROCm pairs (`tests/data/graphs/`): `ops` of a
/// replay trace with the capture folder found beside it.
fn graphs_run(trace: &str, capture: Vec<std::path::PathBuf>) -> TraceOps {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/graphs")
        .join(trace);
    let plan = Plan::new(Selector::default())
        .capturing(crate::tracefile::capture::CaptureSpec { capture })
        .with(OpsSpec::default());
    let mut r = crate::analysis::analyze_path(&path, Default::default(), &plan);
    r.take::<Ops>().expect("ops ran")
}

/// Σ gpu_graph_ns of the rows = the summary's = Σ dur of the replays'
/// activities (149 919 755 ns and 9 656 404 ns, summed from the files
/// apart), and the graph launches' own GPU ns (O9) when all are
/// attributed.
fn invariant(t: &TraceOps) {
    let rows: i64 = t.ops.iter().map(|r| r.gpu_graph_ns).sum();
    let acts: u64 = t.ops.iter().map(|r| r.graph_activities).sum();
    assert_eq!(rows, t.graphs.gpu_graph_ns);
    assert_eq!(acts, t.graphs.graph_activities);
}

#[test]
fn graphs_vllm_piecewise_every_replay_attributed() {
    let t = graphs_run("vllm_piecewise/graph_execution.json.gz", Vec::new());
    let g = &t.graphs;
    assert_eq!(g.captures.len(), 1, "{:?}", g.notes);
    assert!(g.notes.is_empty(), "{:?}", g.notes);
    assert_eq!(g.regions, 25);
    assert_eq!(g.replays, 25);
    // The first and last pieces are unique; the 23 middle pieces launch
    // the same kernels from the same ops: ambiguous, attributed.
    assert_eq!(g.replays_matched, 2);
    assert_eq!(g.replays_ambiguous, 23);
    assert_eq!(g.replays_ambiguous_attributed, 23);
    assert_eq!(g.replays_unmatched, 0);
    assert_eq!(g.graph_activities, 361);
    assert_eq!(g.gpu_graph_ns, 149_919_755);
    assert_eq!(t.summary.launch_stats_by_kind.graph.gpu_ns, 149_919_755);
    invariant(&t);
    assert_eq!(g.unmatched.len(), 5);
    assert!(
        g.unmatched[0]
            .reason
            .starts_with("23 regions equal (1, 2, 3"),
        "{:?}",
        g.unmatched[0]
    );
    // Capture-only ops get rows: aten::addmm launched inside the graphs.
    let addmm = row(&t, "aten::addmm");
    assert!(addmm.gpu_graph_ns > 0 && addmm.graph_activities > 0);
}

#[test]
fn graphs_sglang_decode_matched() {
    let t = graphs_run("sglang_decode/sglang_Qwen3-8B_decode.json.gz", Vec::new());
    let g = &t.graphs;
    assert_eq!((g.regions, g.replays, g.replays_matched), (1, 1, 1));
    assert_eq!(g.graph_activities, 544);
    assert_eq!(g.gpu_graph_ns, 9_656_404);
    assert_eq!(t.summary.launch_stats_by_kind.graph.gpu_ns, 9_656_404);
    invariant(&t);
    assert_eq!(row(&t, "aten::gather").graph_activities, 1);
}

/// A capture of another run (SGLang's bs 32 graph for vLLM's replays):
/// every replay unmatched with its count, nothing attributed.
#[test]
fn graphs_capture_of_another_run_matches_nothing() {
    let other = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/graphs/sglang_decode/capture_traces");
    let t = graphs_run("vllm_piecewise/graph_execution.json.gz", vec![other]);
    let g = &t.graphs;
    assert_eq!(
        (g.replays, g.replays_unmatched, g.gpu_graph_ns),
        (25, 25, 0)
    );
    assert_eq!(
        g.unmatched[0].reason,
        "count: 4 activities, no capture region has as many (regions have [544])"
    );
    invariant(&t);
    assert!(t
        .notes()
        .iter()
        .any(|n| n.starts_with("graphs: 25 of 25 graph replays unmatched")));
}

/// Issue 57 on the real CUDA pairs (`sample_traces/text_graphs_{ar,mtp}/`, H100,
/// torch 2.11+cu130): `ops` of a worker trace, its `capture_traces/`
/// found beside it.
fn cuda_graphs_run(mode: &str) -> TraceOps {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample_traces")
        .join(mode);
    let trace = std::fs::read_dir(&dir)
        .expect("cuda_graphs folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
        .expect("worker trace");
    let plan = Plan::new(Selector::default()).with(OpsSpec::default());
    let mut r = crate::analysis::analyze_path(&trace, Default::default(), &plan);
    r.take::<Ops>().expect("ops ran")
}

/// AR: 30 decode steps `generation_1(1)` (1 token), each replaying the
/// decoder's bs-1 graph (46 activities; bs 2 and 4 have 50). Σ dur
/// (4 766 446 ns over 1 380 activities) summed from the file apart.
#[test]
fn graphs_cuda_ar_replays_decoder_bs1() {
    let t = cuda_graphs_run("text_graphs_ar");
    let g = &t.graphs;
    assert_eq!(g.captures.len(), 3);
    assert_eq!(g.regions, 3);
    assert_eq!((g.replays, g.replays_matched), (30, 30));
    assert_eq!((g.replays_ambiguous, g.replays_unmatched), (0, 0));
    assert_eq!(g.graph_activities, 1380);
    assert_eq!(g.gpu_graph_ns, 4_766_446);
    assert!(g.unmatched.is_empty() && g.notes.is_empty());
    let dec = &g.by_subsystem["decoder"];
    assert_eq!(g.by_subsystem.len(), 1);
    assert_eq!(dec.replays_by_batch.get("1"), Some(&30));
    assert_eq!((dec.activities, dec.gpu_graph_ns), (1380, 4_766_446));
    invariant(&t);
}

/// MTP: 16 decode steps `generation_1(3)` (3 tokens → bs 4, not bs 2
/// whose region is equal in kinds and count) and 36 drafter replays in
/// `proposer.propose` (17 activities: only the speculator's bs-1 region
/// has as many, so no batch is needed; the step does not enclose them).
/// Σ dur per subsystem summed from the file apart: decoder 2 511 299 ns
/// (800 activities), speculator 2 364 803 ns (612).
#[test]
fn graphs_cuda_mtp_decoder_bs4_and_speculator() {
    let t = cuda_graphs_run("text_graphs_mtp");
    let g = &t.graphs;
    assert_eq!(g.regions, 6);
    assert_eq!((g.replays, g.replays_matched), (52, 52));
    assert_eq!((g.replays_ambiguous, g.replays_unmatched), (0, 0));
    assert_eq!((g.graph_activities, g.gpu_graph_ns), (1412, 4_876_102));
    let dec = &g.by_subsystem["decoder"];
    assert_eq!(dec.replays, 16);
    assert_eq!(dec.replays_by_batch.len(), 1);
    assert_eq!(dec.replays_by_batch.get("4"), Some(&16));
    assert_eq!((dec.activities, dec.gpu_graph_ns), (800, 2_511_299));
    let spec = &g.by_subsystem["speculator"];
    assert_eq!(spec.replays, 36);
    assert_eq!(spec.replays_by_batch.get("1"), Some(&36));
    assert_eq!((spec.activities, spec.gpu_graph_ns), (612, 2_364_803));
    // The drafter's share of graph GPU time: 48.5 %.
    assert_eq!(spec.gpu_graph_ns * 1000 / g.gpu_graph_ns, 484);
    invariant(&t);
}

/// Without the step's tokens the decoder replays stay ambiguous between
/// bs 2 and bs 4 (attributed: the same launchers), never picked by
/// position.
#[test]
fn graphs_cuda_mtp_without_batch_is_ambiguous() {
    use crate::graphs::matching::{match_replay, Act, Index, Outcome};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample_traces/text_graphs_mtp/capture_traces");
    let caps = crate::graphs::Captures::load(&[dir], std::path::Path::new("."));
    let ix = Index::new(&caps);
    let bs = |r: u32| caps.regions[r as usize].batch;
    let bs4 = (0..caps.regions.len() as u32)
        .find(|&r| bs(r) == Some(4) && caps.regions[r as usize].subsystem == "decoder")
        .expect("decoder bs 4");
    let acts: Vec<Act<'_>> = caps.regions[bs4 as usize]
        .launches
        .iter()
        .map(|c| Act {
            kind: c.kind,
            name: "k",
        })
        .collect();
    assert_eq!(acts.len(), 50);
    match match_replay(&caps, &ix, &acts, None, Some("decoder")) {
        Outcome::Ambiguous {
            candidates,
            attributed,
        } => {
            let mut b: Vec<_> = candidates.iter().map(|&r| bs(r)).collect();
            b.sort();
            assert_eq!(b, vec![Some(2), Some(4)]);
            assert!(attributed);
        }
        o => panic!("{o:?}"),
    }
    assert_eq!(
        match_replay(&caps, &ix, &acts, Some(3), Some("decoder")),
        Outcome::Matched(bs4)
    );
    // 2 tokens: bs 2, the smallest captured ≥ 2.
    let got = match_replay(&caps, &ix, &acts, Some(2), Some("decoder"));
    assert_eq!(got.region().and_then(bs), Some(2));
}

/// The replayed GPU time by module path and launcher op (`graphs.by_module`)
/// on the real CUDA pair, against `scripts/check_graph_modules.py` (its
/// own capture regions, module frames and innermost cpu_op, from the JSON):
/// AR's 34 module paths, MTP's 48 (the drafter's `aten::argmax` outside
/// every module); Σ = the graph totals.
#[test]
fn graphs_cuda_by_module_equals_the_python_check() {
    let module = |t: &TraceOps, sub: &str, path: &str| -> i64 {
        t.graphs
            .by_module
            .iter()
            .filter(|e| e.subsystem == sub && e.module == path)
            .map(|e| e.gpu_graph_ns)
            .sum()
    };
    let op = |t: &TraceOps, sub: &str, name: &str| -> i64 {
        t.graphs
            .by_module
            .iter()
            .filter(|e| e.subsystem == sub && e.op.as_deref() == Some(name))
            .map(|e| e.gpu_graph_ns)
            .sum()
    };
    let paths = |t: &TraceOps| {
        let s: std::collections::BTreeSet<(&str, &str)> = t
            .graphs
            .by_module
            .iter()
            .map(|e| (e.subsystem.as_str(), e.module.as_str()))
            .collect();
        s.len()
    };
    let ar = cuda_graphs_run("text_graphs_ar");
    let sum: i64 = ar.graphs.by_module.iter().map(|e| e.gpu_graph_ns).sum();
    let acts: u64 = ar.graphs.by_module.iter().map(|e| e.activities).sum();
    assert_eq!((sum, acts), (4_766_446, 1380));
    assert_eq!(paths(&ar), 34);
    assert_eq!(
        module(&ar, "decoder", "ToyForCausalLM_0/DecoderLayer_1"),
        268_835
    );
    assert_eq!(
        module(&ar, "decoder", "ToyForCausalLM_0/DecoderLayer_1/Linear_7"),
        221_922
    );
    assert_eq!(
        module(&ar, "decoder", "ToyForCausalLM_0/Embedding_0"),
        79_429
    );
    assert_eq!(op(&ar, "decoder", "aten::mm"), 2_585_331);
    assert_eq!(
        op(&ar, "decoder", "aten::_flash_attention_forward"),
        775_183
    );
    // The row of aten::mm holds the same graph time (its eager prefill
    // launches are not graph activities).
    assert_eq!(row(&ar, "aten::mm").gpu_graph_ns, 2_585_331);
    // The first entry is the largest.
    let top = &ar.graphs.by_module[0];
    assert!(ar
        .graphs
        .by_module
        .iter()
        .all(|e| e.gpu_graph_ns <= top.gpu_graph_ns));

    let mtp = cuda_graphs_run("text_graphs_mtp");
    let sum: i64 = mtp.graphs.by_module.iter().map(|e| e.gpu_graph_ns).sum();
    assert_eq!(sum, 4_876_102);
    assert_eq!(paths(&mtp), 48);
    assert_eq!(
        module(&mtp, "speculator", "ToyEagleDraftModel_0/DecoderLayer_0"),
        338_369
    );
    assert_eq!(module(&mtp, "speculator", "Linear_5"), 294_214);
    assert_eq!(module(&mtp, "speculator", ""), 204_675);
    assert_eq!(op(&mtp, "speculator", "aten::argmax"), 204_675);
    assert_eq!(op(&mtp, "decoder", "aten::mm"), 1_399_224);
    assert_eq!(op(&mtp, "speculator", "aten::mm"), 1_268_309);
    assert_eq!(
        op(&mtp, "decoder", "aten::_cudnn_attention_forward"),
        351_422
    );
}

/// The replays are matched by one matcher (`graphs::matching`) whichever
/// side gathers them — the host store's links for `ops`, the driver's
/// ledger for `kernels` (and `iterations`, `diff`) — and the capture
/// regions are read once per trace, in its shared slots: in one read
/// of every graph fixture, `ops` and `kernels` give the same summary
/// (capture files, regions, replays, matched, ambiguous, unmatched,
/// activities and GPU ns, by subsystem and batch; `by_module` is `ops`'
/// alone: `kernels` splits by module class).
#[test]
fn ops_and_kernels_match_the_same_replays() {
    use crate::analyses::kernels::{Kernels, KernelsSpec};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let traces = [
        "tests/data/graphs/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
        "tests/data/graphs/vllm_piecewise/graph_execution.json.gz",
    ]
    .map(|t| root.join(t))
    .into_iter()
    .chain(
        ["text_graphs_ar", "text_graphs_mtp"]
            .into_iter()
            .flat_map(|d| {
                std::fs::read_dir(root.join("sample_traces").join(d))
                    .expect("sample dir")
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with("dp0_"))
                    })
            }),
    );
    let mut matched = 0;
    for path in traces {
        let plan = Plan::new(Selector::default())
            .with(OpsSpec::default())
            .with(KernelsSpec::default());
        let mut r = crate::analysis::analyze_path(&path, Default::default(), &plan);
        let ops = r.take::<Ops>().expect("ops ran").graphs;
        let k = r.take::<Kernels>().expect("kernels ran");
        let kg = k.inside_graphs.expect("graphs").summary;
        let key = |g: &crate::graphs::GraphsSummary| {
            (
                g.captures.clone(),
                g.regions,
                (g.replays, g.replays_matched, g.replays_ambiguous),
                (g.replays_ambiguous_attributed, g.replays_unmatched),
                (g.graph_activities, g.gpu_graph_ns),
                g.by_subsystem.clone(),
            )
        };
        assert_eq!(key(&ops), key(&kg), "{}", path.display());
        matched += ops.replays_matched;
    }
    // 30 + 52 replays of the CUDA pair, and the ROCm pairs'.
    assert!(matched > 82, "{matched}");
}
