//! Fuzzes the analyses behind the reader: any bytes through the driver
//! with the analyses batch and merge rest on (pair, hierarchy, kernels), step
//! contexts chosen by the first byte (vLLM's automatic choice, or every
//! user annotation: ranges inside ranges). It must never panic, and:
//!
//! - each GPU activity belongs to one context (the per-context rows of
//!   `kernels` add up to its totals),
//! - counts stay within the contexts (`pair`'s pairs and measured),
//! - results survive the records' round trip exactly (what `merge` reads).
#![no_main]

use libfuzzer_sys::fuzz_target;
use torchtrace::{analyze_reader, HierarchyOptions, KernelsSpec, PairSpec, Plan, Results, Selector};

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
        .with(chains);
    let r = analyze_reader("fuzz", input, &plan);
    if let Some(k) = r.get::<torchtrace::kernels::Kernels>() {
        let rows: u64 = k.rows.iter().map(|w| w.kernels).sum();
        assert_eq!(rows, k.kernels, "each kernel in one context");
        assert!(k.contexts_with_gpu_work <= k.contexts);
    }
    if let Some(p) = r.get::<torchtrace::pair::Pair>() {
        assert!(p.pairs <= p.contexts && p.measured <= p.contexts);
    }
    let text = torchtrace::record::with_internals(|| serde_json::to_string(&r.results));
    let text = text.expect("results serialise");
    let back: Results = serde_json::from_str(&text).expect("results read back");
    assert!(back == r.results, "results round trip exactly");
});
