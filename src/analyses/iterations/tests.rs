//! The timeline of the module doc, built in code. One column is 1 µs.
//!
//! ```text
//! tid 7  [= s_0 0..10 =)  [sample_tokens 12..20 [propose 14..18))  [= s_1 25..30 =)  [prefill 40..45)  [= s_2 60..65 =)
//!         L1@1 G2@2         L3@13 (sample)  G4@15 (draft)   L5@22    G6@26              L7@41             L8@61
//! GPU     k1 3..5, G2: ga 5..6 gb 6..8      samp 14..15     d 16..17  o 23..24  G6: ga 27..28 gb 28..30   pf 42..43   k 62..63
//! iteration 0 = [0, 25), iteration 1 = [25, 40) (the prefill ends it), iteration 2 = [60, ∞): open
//! ```

use super::sweep::*;
use super::*;
use crate::analysis::{analyze_reader, Plan};
use crate::contexts::Selector;
use crate::model::Sym;
use std::cmp::Reverse;

const STEP: &str = "execute_context_0(0)_generation_1(3)";
const PREFILL: &str = "execute_context_1(96)_generation_0(0)";

fn x(cat: &str, name: &str, ts: &str, dur: &str, args: &str) -> String {
    format!(
        r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":7,"ts":{ts},"dur":{dur},"args":{{{args}}}}}"#
    )
}

fn launch(name: &str, ts: &str, corr: i64) -> String {
    x(
        "cuda_runtime",
        name,
        ts,
        "0.5",
        &format!("\"correlation\":{corr}"),
    )
}

fn k(name: &str, ts: &str, dur: &str, corr: i64) -> String {
    format!(
        r#"{{"ph":"X","cat":"kernel","name":"{name}","pid":0,"tid":7,"ts":{ts},"dur":{dur},"args":{{"correlation":{corr}}}}}"#
    )
}

fn drawing() -> Vec<String> {
    vec![
        x("user_annotation", STEP, "0", "10", ""),
        x("python_function", "x.py(1): sample_tokens", "12", "8", ""),
        x(
            "python_function",
            "x.py(2): propose_draft_token_ids",
            "14",
            "4",
            "",
        ),
        x("user_annotation", STEP, "25", "5", ""),
        x("user_annotation", PREFILL, "40", "5", ""),
        x("user_annotation", STEP, "60", "5", ""),
        launch("cudaLaunchKernel", "1", 1),
        launch("cudaGraphLaunch", "2", 2),
        launch("cudaLaunchKernel", "13", 3),
        launch("cudaGraphLaunch", "15", 4),
        launch("cudaLaunchKernel", "22", 5),
        launch("cudaGraphLaunch", "26", 6),
        launch("cudaLaunchKernel", "41", 7),
        launch("cudaLaunchKernel", "61", 8),
        k("k1", "3", "2", 1),
        k("ga", "5", "1", 2),
        k("gb", "6", "2", 2),
        k("samp", "14", "1", 3),
        k("d", "16", "1", 4),
        k("o", "23", "1", 5),
        k("ga", "27", "1", 6),
        k("gb", "28", "2", 6),
        k("pf", "42", "1", 7),
        k("k", "62", "1", 8),
    ]
}

fn run(events: &[String], spec: IterationsSpec) -> TraceIterations {
    let doc = format!("{{\"traceEvents\": [{}]}}", events.join(","));
    let plan = Plan::new(Selector::Auto).with(spec);
    let mut r = analyze_reader("t", doc.as_bytes(), &plan);
    assert!(r.error.is_none(), "{:?}", r.error);
    r.results.take::<Iterations>().unwrap()
}

#[test]
fn the_drawing_per_iteration() {
    let t = run(&drawing(), IterationsSpec::default());
    assert_eq!((t.contexts, t.iterations_closed), (3, 2));
    let r0 = &t.rows.get(0).expect("row 0");
    assert_eq!(
        (r0.start_ns, r0.wall_ns, r0.closed),
        (0, Some(25_000), true)
    );
    // busy [3,8) ∪ [14,15) ∪ [16,17) ∪ [23,24) = 8 µs over the span 3..24.
    assert_eq!((r0.gpu_busy_ns, r0.gpu_idle_ns), (8_000, Some(13_000)));
    assert_eq!((r0.kernels, r0.launches, r0.graph_launches), (6, 5, 2));
    let busy = |p: &PhaseWork| p.gpu_busy_ns;
    let ph = &r0.phases;
    assert_eq!(
        (
            busy(&ph.forward),
            busy(&ph.sample),
            busy(&ph.draft),
            busy(&ph.other)
        ),
        (5_000, 1_000, 1_000, 1_000)
    );
    assert_eq!((ph.forward.kernels, ph.forward.graph_launches), (3, 1));
    assert_eq!((ph.draft.graph_launches, ph.sample.launches), (1, 1));
    assert_eq!(r0.context_span_ns, Some(5_000));
    // The prefill ends iteration 1; its launch L7 belongs to no iteration.
    let r1 = &t.rows.get(1).expect("row 1");
    assert_eq!(
        (r1.wall_ns, r1.gpu_busy_ns, r1.kernels),
        (Some(15_000), 3_000, 2)
    );
    let r2 = &t.rows.get(2).expect("row 2");
    assert_eq!(
        (r2.wall_ns, r2.closed, r2.gpu_busy_ns),
        (None, false, 1_000)
    );
    assert!(t.notes.iter().any(|n| n.contains("open")), "{:?}", t.notes);
}

#[test]
fn the_drawing_per_token_and_graphs() {
    let mut t = run(&drawing(), IterationsSpec::default());
    // n = 3, closed = 2, T = 3: per token = Σ / 2.
    t.set_tokens(Some(3), None);
    assert_eq!(t.per_token.wall_ms, Some(0.02));
    assert_eq!(t.per_token.gpu_busy_ms, Some(0.0055));
    assert_eq!(t.per_token.kernels, Some(4.0));
    assert_eq!(t.per_token.phases.forward.gpu_busy_ms, Some(0.004));
    let g = &t.graphs;
    assert_eq!((g.replays, g.distinct), (3, 2));
    assert_eq!(g.replays_per_token, Some(1.5));
    let rep = g.repeating.as_ref().unwrap();
    // Graph 0 (ga, gb) is replayed in both closed iterations; cadence 27 − 5.
    assert_eq!((rep.graph, rep.iterations, rep.replays), (0, 2, 2));
    assert_eq!(
        (rep.kernels_per_replay, rep.replays_per_token),
        (2, Some(1.0))
    );
    assert_eq!(rep.cadence_ms_median, Some(0.022));
    // Picking the drafter's graph instead.
    let spec = IterationsSpec {
        graph: Some(1),
        ..Default::default()
    };
    let t = run(&drawing(), spec);
    let rep = t.graphs.repeating.as_ref().unwrap();
    assert_eq!(
        (rep.graph, rep.replays, rep.cadence_ms_median),
        (1, 1, None)
    );
}

#[test]
fn compare_adds_up() {
    let mut a = run(&drawing(), IterationsSpec::default());
    a.set_tokens(Some(3), None);
    let mut m = a.clone();
    m.set_tokens(Some(9), None);
    let c = compare(&a, &m);
    assert_eq!(c.token_progress_ratio, Some(3.0));
    assert_eq!(c.s_busy, Some(3.0));
    assert_eq!(c.s_context_correlation, Some(3.0));
    let g: f64 = c.decomposition.iter().filter_map(|d| d.gives_back).sum();
    assert_eq!(g, 0.0);
}

#[test]
fn names_match_whole_or_function_part() {
    let l = vec!["sample_tokens".to_string()];
    assert!(name_in(&l, "sample_tokens", false));
    assert!(name_in(
        &l,
        "vllm/v1/worker/gpu_model_runner.py(95): sample_tokens",
        true
    ));
    assert!(!name_in(&l, "vllm/x.py(95): sample_tokens", false));
    assert!(!name_in(&l, "x.py(1): not_sample_tokens", true));
}

#[test]
fn no_gpu_work_and_no_step_do_not_panic() {
    let t = run(
        &[x("user_annotation", STEP, "0", "1", "")],
        IterationsSpec::default(),
    );
    assert_eq!(
        (
            t.contexts,
            t.iterations_closed,
            t.rows.get(0).expect("row 0").gpu_busy_ns
        ),
        (1, 0, 0)
    );
    let t = run(&[], IterationsSpec::default());
    assert_eq!(t.contexts, 0);
}

/// The innermost range holding `ts` by brute force: the largest (start,
/// Reverse(end), index, end, phase) among those with start ≤ ts < end.
fn innermost(cands: &[(Ns, Ns, u64, Phase)], ts: Ns) -> Phase {
    cands
        .iter()
        .filter(|c| c.0 <= ts && ts < c.1)
        .max_by_key(|c| ((c.0, Reverse(c.1), c.2), c.1, c.3))
        .map_or(Phase::Other, |c| c.3)
}

fn window(start: i64, ctx_end: i64, index: u64) -> Window {
    Window {
        lane: (Sym(0), Sym(0)),
        start: Ns(start),
        end: None,
        ctx_end: Ns(ctx_end),
        index,
    }
}

fn range(phase: Phase, start: i64, end: i64, index: u64) -> PhaseRange {
    PhaseRange {
        phase,
        lane: 0,
        start: Ns(start),
        end: Ns(end),
        index,
    }
}

/// The timeline of [`Sweep`]'s docs, a thousand steps long: every call
/// lies in the latest-started range, so nothing is popped from the top,
/// and without the clean-up the heap held all 2,000 ranges.
#[test]
fn sweep_drops_ended_ranges_under_an_open_one() {
    let n = 1000;
    let wins: Vec<Window> = (0..n)
        .map(|i| window(100 * i, 100 * i + 50, 2 * i as u64))
        .collect();
    let its: Vec<usize> = (0..wins.len()).collect();
    let ranges: Vec<PhaseRange> = (0..n)
        .map(|i| range(Phase::Sample, 100 * i + 50, 100 * i + 90, 2 * i as u64 + 1))
        .collect();
    let mut sweep = Sweep::new(&wins, &its, vec![&ranges[..]]);
    let mut most = 0;
    for i in 0..n {
        // s_i's calls at +10 and +40, its sample's at +60 and +80.
        for (at, phase) in [
            (10, Phase::Forward),
            (40, Phase::Forward),
            (60, Phase::Sample),
            (80, Phase::Sample),
        ] {
            assert_eq!(sweep.phase_at(Ns(100 * i + at)), phase, "step {i} +{at}");
            most = most.max(sweep.heap.len());
        }
    }
    assert!(most <= 2 * PRUNE_FLOOR, "heap grew to {most}");
}

/// Random ranges (nested, overlapping, empty, equal) and calls: the sweep
/// answers as the brute force does, and its heap stays within twice the
/// ranges open at once (or the floor).
#[test]
fn sweep_matches_brute_force() {
    let mut next = crate::trace::xorshift(0x5eed_1234_abcd_ef01);
    for round in 0..200 {
        let n = (next() % 300) as usize;
        let mut wins: Vec<Window> = Vec::new();
        let mut ranges: Vec<PhaseRange> = Vec::new();
        let mut all = Vec::new();
        for index in 0..n as u64 {
            let start = (next() % 10_000) as i64;
            let long = next().is_multiple_of(4);
            let end = start + (next() % if long { 5_000 } else { 200 }) as i64;
            let phase = [Phase::Forward, Phase::Sample, Phase::Draft][(next() % 3) as usize];
            all.push((Ns(start), Ns(end), index, phase));
            match phase {
                Phase::Forward => wins.push(window(start, end, index)),
                _ => ranges.push(range(phase, start, end, index)),
            }
        }
        wins.sort_unstable_by_key(|w| w.start);
        ranges.sort_unstable_by_key(|r| (r.lane, r.start));
        let its: Vec<usize> = (0..wins.len()).collect();
        // Two slices, as when two interned lanes show as one.
        let half = ranges.len() / 2;
        let (a, b) = ranges.split_at(half);
        let (mut a, mut b) = (a.to_vec(), b.to_vec());
        a.sort_unstable_by_key(|r| r.start);
        b.sort_unstable_by_key(|r| r.start);
        let mut sweep = Sweep::new(&wins, &its, vec![&a[..], &b[..]]);
        let (mut ts, mut most_open) = (0i64, 0);
        for _ in 0..(next() % 500) {
            ts += (next() % 60) as i64;
            let t = Ns(ts);
            assert_eq!(
                sweep.phase_at(t),
                innermost(&all, t),
                "round {round}, ts {ts}"
            );
            most_open = most_open.max(all.iter().filter(|c| c.0 <= t && t < c.1).count());
            let bound = PRUNE_FLOOR.max(2 * most_open);
            assert!(
                sweep.heap.len() <= bound,
                "round {round}: {} > {bound}",
                sweep.heap.len()
            );
        }
    }
}

/// [`LaneRows`]' drawing, on two threads: their iterations interleave in
/// time, tid 7's third one has no launch call, and the rows come back in
/// the contexts' order, each with its own calls.
///
/// ```text
/// tid 7  [it 0..5)        [it 10..15)       [it 20..25)  [it 30..35 … open
///          L@1 L@2          L@11                            L@31
/// tid 8          [it 5..8)        [it 15..18 … open
///                  L@6              L@16 L@17 L@17.5
/// rows (by start): 0 → 2 calls, 5 → 1, 10 → 1, 15 → 3, 20 → 0, 30 → 1
/// ```
#[test]
fn lane_rows_come_back_in_the_contexts_order() {
    let on = |tid: u32, cat: &str, name: &str, ts: &str, dur: &str, args: &str| {
        format!(
            r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":{tid},"ts":{ts},"dur":{dur},"args":{{{args}}}}}"#
        )
    };
    let mut evs = Vec::new();
    for (tid, ts) in [
        (7, "0"),
        (7, "10"),
        (7, "20"),
        (7, "30"),
        (8, "5"),
        (8, "15"),
    ] {
        evs.push(on(tid, "user_annotation", STEP, ts, "3", ""));
    }
    let calls = [
        (7, "1"),
        (7, "2"),
        (8, "6"),
        (7, "11"),
        (8, "16"),
        (8, "17"),
        (8, "17.5"),
        (7, "31"),
    ];
    for (corr, (tid, ts)) in calls.into_iter().enumerate() {
        let corr = corr as i64 + 1;
        let c = format!("\"correlation\":{corr}");
        evs.push(on(tid, "cuda_runtime", "cudaLaunchKernel", ts, "0.1", &c));
        // 0.02 µs after the call starts.
        let start = match ts.contains('.') {
            true => format!("{ts}2"),
            false => format!("{ts}.02"),
        };
        evs.push(k("k", &start, "0.1", corr));
    }
    let t = run(&evs, IterationsSpec::default());
    let got: Vec<(i64, u64, bool)> = t
        .rows
        .iter()
        .map(|r| (r.start_ns, r.launches, r.closed))
        .collect();
    assert_eq!(
        got,
        [
            (0, 2, true),
            (5_000, 1, true),
            (10_000, 1, true),
            (15_000, 3, false),
            (20_000, 0, true),
            (30_000, 1, false),
        ]
    );
    let empty = t.rows.get(4).expect("row 4");
    assert_eq!(
        (empty.gpu_busy_ns, empty.gpu_idle_ns, empty.kernels),
        (0, None, 0)
    );
    assert_eq!(t.rows.get(3).expect("row 3").kernels, 3);
    assert_eq!((t.contexts, t.iterations_closed), (6, 4));
}

/// A row's record gives it back exactly, extremes and absences included.
#[test]
fn a_row_round_trips_through_its_record() {
    let w = |k: u64| PhaseWork {
        // Past i64 (issue 59): sums and spans are i128.
        gpu_busy_ns: i128::from(i64::MIN) * 3 + i128::from(k),
        kernels: u64::MAX - k,
        memcpys: k,
        memsets: 0,
        launches: 7,
        graph_launches: k * 3,
    };
    let a = IterationRow {
        start_ns: i64::MAX,
        wall_ns: None,
        closed: false,
        gpu_busy_ns: -1,
        gpu_idle_ns: Some(i128::MIN),
        kernels: u64::MAX,
        memcpys: 1,
        memsets: 2,
        launches: 3,
        graph_launches: 4,
        context_span_ns: Some(0),
        phases: Phases {
            forward: w(1),
            sample: w(2),
            draft: w(3),
            other: w(4),
        },
    };
    let b = IterationRow {
        start_ns: i64::MIN,
        wall_ns: Some(i128::MAX),
        closed: true,
        context_span_ns: None,
        ..a.clone()
    };
    let rows: Rows<IterationRow> = vec![a.clone(), b.clone()].into();
    assert_eq!(rows.iter().collect::<Vec<_>>(), [a, b]);
}

/// In a campaign (`batch` of the text pair), the matched AR and MTP traces
/// give iterations' figures to its section: 64 and 30 step contexts.
#[test]
fn the_campaign_matches_the_text_pairs_iterations() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces");
    let paths = [root.join("text_ar"), root.join("text_mtp")];
    let opts = crate::batch::records::CampaignOptions::default()
        .batch_options(true)
        .expect("default campaign options");
    let (res, _) = crate::batch::run_batch(&paths, &opts).expect("batch of the samples");
    let c = crate::batch::output::sections::campaign(&res);
    let it = c.matched::<Iterations>();
    assert_eq!(it.len(), 1);
    assert_eq!((it[0].1.contexts, it[0].2.contexts), (64, 30));
}

/// Issue 57 on the real CUDA MTP trace (`sample_traces/text_graphs_mtp`,
/// H100, torch 2.11+cu130): the closed iterations' graph replays split
/// by subsystem, the drafter's (speculator) apart from the target's
/// (decoder). Figures summed apart from the JSON by a Python script (16
/// decode steps `execute_context_0(0)_generation_1(3)`, 15 closed; the
/// replays launched in them: 15 decoder, 30 speculator).
#[test]
fn inside_graphs_of_the_real_mtp_trace_per_token() {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces/text_graphs_mtp");
    let trace = std::fs::read_dir(&root)
        .expect("sample dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
        .expect("worker trace");
    let plan = Plan::new(Selector::Auto).with(IterationsSpec::default());
    let mut r = crate::analysis::analyze_path(&trace, Default::default(), &plan);
    let mut t = r.results.take::<Iterations>().expect("iterations ran");
    // 32 completion tokens (its summary.json).
    Iterations::set_tokens(&mut t, Some(32), None);
    assert_eq!((t.contexts, t.iterations_closed), (16, 15));
    let g = t.inside_graphs.as_ref().expect("graphs");
    assert_eq!((g.summary.replays, g.summary.replays_matched), (52, 52));
    let row = |sub: &str, by: &str, name: &str| {
        g.split
            .iter()
            .find(|r| r.subsystem == sub && r.by == by && r.name == name)
            .map(|r| (r.activities, r.gpu_ns, r.gpu_ms_per_token))
    };
    // Per token = Σ × n / (closed × T) = Σ × 16 / (15 × 32).
    let per = |ns: i64| Some(ns as f64 * 16.0 / (15.0 * 32.0) / 1e6);
    assert_eq!(
        row("decoder", "module", "Linear"),
        Some((300, 1_311_447, per(1_311_447)))
    );
    assert_eq!(
        row("speculator", "module", "Linear"),
        Some((210, 1_055_698, per(1_055_698)))
    );
    assert_eq!(
        row("speculator", "op", "aten::argmax"),
        Some((30, 170_371, per(170_371)))
    );
    assert_eq!(
        row("decoder", "op", "aten::_cudnn_attention_forward"),
        Some((120, 329_598, per(329_598)))
    );
    // The subsystems' totals in closed iterations.
    let total = |sub: &str| -> (u64, i64) {
        g.split
            .iter()
            .filter(|r| r.subsystem == sub && r.by == "module")
            .fold((0, 0), |s, r| (s.0 + r.activities, s.1 + r.gpu_ns))
    };
    assert_eq!(total("decoder"), (750, 2_354_242));
    assert_eq!(total("speculator"), (510, 1_969_530));
}
