//! Fuzzes the analyses behind the reader: any bytes through the driver
//! with the analyses batch and merge rest on (pair, hierarchy, kernels)
//! and `ranks`, step
//! contexts chosen by the first byte (vLLM's automatic choice, or every
//! user annotation: ranges inside ranges). It must never panic, and:
//!
//! - each GPU activity belongs to one context (the per-context rows of
//!   `kernels` add up to its totals),
//! - counts stay within the contexts (`pair`'s pairs and measured),
//! - a trace taken as both ranks of a run waits nothing and is no
//!   straggler (every offset 0),
//! - results survive the records' round trip exactly (what `merge` reads).
#![no_main]

use libfuzzer_sys::fuzz_target;
use torchtrace::analyses::ranks::{view::RanksReport, Ranks, RanksConfig, RanksSpec};
use torchtrace::{analyze_reader, Plan, Results, Selector};
use torchtrace::analyses::hierarchy::HierarchyOptions;
use torchtrace::analyses::kernels::KernelsSpec;
use torchtrace::analyses::pair::PairSpec;

fuzz_target!(|data: &[u8]| {
    let Some((&knob, input)) = data.split_first() else {
        return;
    };
    let selector = if knob & 1 == 0 {
        Selector::Auto
    } else {
        Selector::from_flags(None, Some(".")).expect("a valid regex")
    };
    let Ok(chains) = HierarchyOptions::new(&[], &[], knob & 2 != 0, 3, selector.clone()) else {
        return;
    };
    let plan = Plan::new(selector)
        .with(PairSpec::default())
        .with(KernelsSpec::default())
        .with(chains)
        .with(RanksConfig::new(RanksSpec::default()).expect("default options"));
    let r = analyze_reader("fuzz", input, &plan);
    if let Some(k) = r.get::<torchtrace::analyses::kernels::Kernels>() {
        let rows: u64 = k.rows.iter().map(|w| w.kernels).sum();
        assert_eq!(rows, k.kernels, "each kernel in one context");
        assert!(k.contexts_with_gpu_work <= k.contexts);
    }
    if let Some(p) = r.get::<torchtrace::analyses::pair::Pair>() {
        assert!(p.pairs <= p.contexts && p.measured <= p.contexts);
    }
    if let Some(t) = r.get::<Ranks>() {
        let twin = |rank: u32| {
            let mut c = t.clone();
            c.path = format!("run/job-rank-{rank}.pt.trace.json.gz");
            c
        };
        let cfg = RanksConfig::new(RanksSpec::default()).expect("default options");
        let rep = RanksReport::new(vec![twin(0), twin(1)], &cfg);
        assert_eq!(rep.runs.len(), 1);
        let run = &rep.runs[0];
        assert!(run.offsets.iter().all(|o| o.offset_ns == 0));
        for s in run.steps.iter().chain(&run.boundary) {
            assert!(s.per_rank.iter().all(|p| p.wait_ns == 0 && p.arrival_ns == 0));
            assert_eq!(s.delay_ns, 0);
        }
        assert!(run.stragglers.is_empty());
    }
    let text = torchtrace::record::with_internals(|| serde_json::to_string(&r.results));
    let text = text.expect("results serialise");
    let back: Results = serde_json::from_str(&text).expect("results read back");
    assert!(back == r.results, "results round trip exactly");
});
