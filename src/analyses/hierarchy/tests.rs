//! Timelines drawn in ASCII and built the same way in code. One column of
//! a drawing is 1 µs; `[` is the start and `]` the end (end = ts + dur), so
//! `[--]` at column 2 is ts 2, dur 3; `|` is a zero-length event.

use super::*;

/// An event line: (cat, name, tid, ts µs, dur µs).
fn ev(cat: &str, name: &str, tid: i64, ts: &str, dur: &str) -> String {
    format!(
        r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":{tid},"ts":{ts},"dur":{dur}}}"#
    )
}

fn op(name: &str, tid: i64, ts: &str, dur: &str) -> String {
    ev("cpu_op", name, tid, ts, dur)
}

fn run_opts(events: &[String], opts: &HierarchyOptions) -> TraceHierarchy {
    let doc = format!("{{\"traceEvents\": [{}]}}", events.join(","));
    let plan = crate::analysis::Plan::new(opts.selector.clone()).with(opts.clone());
    let mut r = crate::analysis::analyze_reader("t", doc.as_bytes(), &plan);
    assert!(r.error.is_none(), "{:?}", r.error);
    r.results.take::<super::Hierarchy>().unwrap()
}

fn opts(chain: &str, any_thread: bool) -> HierarchyOptions {
    HierarchyOptions::new(&[chain.to_string()], &[], any_thread, 5, Selector::Auto).unwrap()
}

fn run(events: &[String], chain: &str) -> TraceHierarchy {
    run_opts(events, &opts(chain, false))
}

/// (children, contained, uncontained, parents_without_child) of link `k`.
fn link(t: &TraceHierarchy, k: usize) -> (u64, u64, u64, u64) {
    let l = &t.chains[0].links[k];
    (
        l.children,
        l.contained,
        l.uncontained,
        l.parents_without_child,
    )
}

fn func<'a>(t: &'a TraceHierarchy, name: &str) -> &'a FunctionStats {
    t.chains[0]
        .functions
        .iter()
        .find(|f| f.name == name)
        .unwrap()
}

#[test]
fn equal_starts_and_equal_ends_are_contained() {
    // tid 1   0         10
    //         [P--------]
    //         [C1--]              same start
    //              [C2--]         same end
    //         [C3------]          both equal? no: 0..9
    //         [C4-------]         identical to P (another event)
    let evs = [
        op("P", 1, "0", "10"),
        op("C", 1, "0", "5"),
        op("C", 1, "5", "5"),
        op("C", 1, "0", "9"),
        op("C", 1, "0", "10"),
    ];
    let t = run(&evs, "P>C");
    assert_eq!(link(&t, 0), (4, 4, 0, 0));
    assert!(t.holds());
}

#[test]
fn zero_length_events() {
    //         0    5    10
    //         [P---------]
    //         |              zero-length child at P's start: inside
    //                    |   zero-length child at P's end: inside
    //                       |  zero-length child at 12: outside
    //                       |  zero-length parent at 12 holds a zero-length child at 12
    let evs = [
        op("P", 1, "0", "10"),
        op("C", 1, "0", "0"),
        op("C", 1, "10", "0"),
        op("C", 1, "12", "0"),
    ];
    let t = run(&evs, "P>C");
    assert_eq!(link(&t, 0), (3, 2, 1, 0));
    let ex = &t.chains[0].links[0].examples;
    assert_eq!(ex.len(), 1);
    assert_eq!((ex[0].ts.as_str(), ex[0].dur.as_str()), ("12.000", "0.000"));
    assert!(ex[0].overlapping.is_empty());

    let evs = [op("P", 1, "12", "0"), op("C", 1, "12", "0")];
    let t = run(&evs, "P>C");
    assert_eq!(link(&t, 0), (1, 1, 0, 0));
    // A zero-length parent does not contain a longer child.
    let evs = [op("P", 1, "12", "0"), op("C", 1, "12", "1")];
    let t = run(&evs, "P>C");
    assert_eq!(link(&t, 0), (1, 0, 1, 1));
    assert_eq!(
        t.chains[0].links[0].examples[0].overlapping,
        vec!["P [12.000 +0.000]"]
    );
}

#[test]
fn same_name_nesting_counts_outermost() {
    // tid 1   0    5    10   15   20   25
    //         [S------------]               Worker.sample_tokens (python_function)
    //           [S-------]                  GPUModelRunner.sample_tokens (nested)
    //                          [S----]      a second step
    //                            [S-]       nested
    //             [D--]                     propose_draft_token_ids
    let evs = [
        ev(
            "python_function",
            "vllm/v1/worker/gpu_worker.py(1): sample_tokens",
            1,
            "0",
            "14",
        ),
        ev(
            "python_function",
            "vllm/v1/worker/gpu_model_runner.py(2): sample_tokens",
            1,
            "2",
            "9",
        ),
        ev(
            "python_function",
            "vllm/v1/worker/gpu_worker.py(1): sample_tokens",
            1,
            "20",
            "6",
        ),
        ev(
            "python_function",
            "vllm/v1/worker/gpu_model_runner.py(2): sample_tokens",
            1,
            "22",
            "3",
        ),
        ev(
            "python_function",
            "x.py(3): propose_draft_token_ids",
            1,
            "4",
            "3",
        ),
    ];
    let t = run(&evs, "sample_tokens>propose_draft_token_ids");
    // D lies in both the outer and the nested call of the first step.
    assert_eq!(link(&t, 0), (1, 1, 0, 2));
    let s = func(&t, "sample_tokens");
    assert_eq!((s.calls, s.outermost_calls), (4, 2));
    // Outermost durations 14 and 6 µs.
    assert_eq!(s.median_ms, Some(0.010));
    assert_eq!(s.total_ms, Some(0.020));
    assert_eq!(s.min_ms, Some(0.006));
    assert_eq!(s.max_ms, Some(0.014));
    // The function part must follow the last "): ".
    let evs = [ev(
        "python_function",
        "a.py(1): sample_tokens_x",
        1,
        "0",
        "1",
    )];
    let t = run(&evs, "sample_tokens>propose_draft_token_ids");
    assert_eq!(func(&t, "sample_tokens").calls, 0);
    assert_eq!(func(&t, "sample_tokens").median_ms, None);
}

#[test]
fn identical_intervals_earlier_in_file_is_outer() {
    // tid 1   [S----]   event 0
    //         [S----]   event 1 (identical): nested in event 0
    //         [S----]   event 2 (identical): nested too
    let evs = [
        op("S", 1, "0", "5"),
        op("S", 1, "0", "5"),
        op("S", 1, "0", "5"),
    ];
    let t = run(&evs, "S>S");
    let s = func(&t, "S");
    assert_eq!((s.calls, s.outermost_calls), (3, 1));
    // As a link S>S, each lies in another S (P is not C itself, but an
    // identical other event is a parent).
    assert_eq!(link(&t, 0), (3, 3, 0, 0));
    // A single event does not contain itself.
    let t = run(&[op("S", 1, "0", "5")], "S>S");
    assert_eq!(link(&t, 0), (1, 0, 1, 1));
}

#[test]
fn overlap_without_nesting_is_uncontained() {
    // tid 1   0    5    10   15
    //         [P--------]
    //               [C--------]     starts inside P, ends after it
    //     [C------]                 starts before P
    let evs = [
        op("P", 1, "10", "10"),
        op("C", 1, "16", "10"),
        op("C", 1, "6", "8"),
    ];
    let t = run(&evs, "P>C");
    assert_eq!(link(&t, 0), (2, 0, 2, 1));
    let ex = &t.chains[0].links[0].examples;
    // Examples in time order, each naming the parent it overlaps.
    assert_eq!(ex[0].ts, "6.000");
    assert_eq!(ex[1].ts, "16.000");
    assert_eq!(ex[0].overlapping, vec!["P [10.000 +10.000]"]);
    assert_eq!(ex[1].lane, "1/1");
    assert_eq!(ex[1].event_index, 1);
}

#[test]
fn same_interval_on_another_thread() {
    // tid 1   [P------]
    // tid 2   [C------]     same interval, other thread
    let evs = [op("P", 1, "0", "10"), op("C", 2, "0", "10")];
    let t = run(&evs, "P>C");
    assert_eq!(link(&t, 0), (1, 0, 1, 1));
    assert!(!t.holds());
    // --any-thread: contained.
    let t = run_opts(&evs, &opts("P>C", true));
    assert_eq!(link(&t, 0), (1, 1, 0, 0));
    // pid differs, tid equal: still another lane.
    let other_pid = r#"{"ph":"X","cat":"cpu_op","name":"C","pid":2,"tid":1,"ts":0,"dur":10}"#;
    let t = run(&[op("P", 1, "0", "10"), other_pid.to_string()], "P>C");
    assert_eq!(link(&t, 0), (1, 0, 1, 1));
}

#[test]
fn child_before_any_parent() {
    // tid 1   [C-]      [P------]
    let evs = [op("C", 1, "0", "2"), op("P", 1, "5", "10")];
    let t = run(&evs, "P>C");
    assert_eq!(link(&t, 0), (1, 0, 1, 1));
    // And no parent at all on the lane.
    let t = run(&[op("C", 1, "0", "2")], "P>C");
    assert_eq!(link(&t, 0), (1, 0, 1, 0));
}

#[test]
fn three_element_chain_and_categories() {
    // tid 1   [sample_tokens------------]
    //            [propose_draft_token_ids-]       ends with sample_tokens
    //               [proposer.propose]            user_annotation
    //          [proposer.propose]                 kernel: not a default category
    let evs = [
        ev("python_function", "w.py(1): sample_tokens", 1, "0", "20"),
        ev(
            "python_function",
            "r.py(2): propose_draft_token_ids",
            1,
            "3",
            "17",
        ),
        ev("user_annotation", "proposer.propose", 1, "6", "5"),
        ev("kernel", "proposer.propose", 1, "1", "1"),
    ];
    let t = run(
        &evs,
        "sample_tokens>propose_draft_token_ids>proposer.propose",
    );
    assert_eq!(link(&t, 0), (1, 1, 0, 0));
    assert_eq!(link(&t, 1), (1, 1, 0, 0));
    // --category kernel only: the kernel lies in no (kernel) parent.
    let o = HierarchyOptions::new(
        &["sample_tokens>proposer.propose".into()],
        &["kernel".into()],
        false,
        5,
        Selector::Auto,
    )
    .unwrap();
    let t = run_opts(&evs, &o);
    assert_eq!(link(&t, 0), (1, 0, 1, 0));
}

#[test]
fn regex_elements_and_default_chain() {
    let evs = [
        op("aten::mm", 1, "1", "1"),
        op("aten::addmm", 1, "3", "1"),
        op("aten::mmx", 1, "5", "1"),
        op("forward", 1, "0", "10"),
    ];
    let t = run(&evs, r"forward>re:^aten::(addmm|mm)$");
    assert_eq!(link(&t, 0), (2, 2, 0, 0));
    let o = HierarchyOptions::new(&[], &[], false, 5, Selector::Auto).unwrap();
    assert_eq!(o.chains.len(), 1);
    assert_eq!(o.elements.len(), 3);
    assert_eq!(o.categories.len(), 4);
    assert!(HierarchyOptions::new(&["a>re:(".into()], &[], false, 5, Selector::Auto).is_err());
    assert_eq!(
        HierarchyOptions::new(&["a>>b".into()], &[], false, 5, Selector::Auto).unwrap_err(),
        OptionsError::EmptyElement("a>>b".into())
    );
}

#[test]
fn calls_per_context_from_step_annotations() {
    // Two decode steps; sample_tokens called once per step, plus once nested.
    let step = "execute_context_0(0)_generation_1(3)";
    let evs = [
        ev("user_annotation", step, 1, "0", "5"),
        ev("user_annotation", step, 1, "10", "5"),
        op("sample_tokens", 1, "6", "3"),
        op("sample_tokens", 1, "16", "3"),
        op("sample_tokens", 1, "16", "2"),
    ];
    let t = run(&evs, "sample_tokens>propose_draft_token_ids");
    assert_eq!(t.contexts, Some(2));
    assert_eq!(t.context.as_deref(), Some(step));
    assert_eq!(func(&t, "sample_tokens").calls_per_context, Some(1.0));
    // No step annotations: null.
    let t = run(&evs[2..], "sample_tokens>propose_draft_token_ids");
    assert_eq!(t.contexts, None);
    assert_eq!(func(&t, "sample_tokens").calls_per_context, None);
}

#[test]
fn comparison_median_ratio() {
    let a = run(&[op("S", 1, "0", "4")], "S");
    let b = run(&[op("S", 1, "0", "6"), op("S", 1, "10", "4")], "S");
    let c = compare(&a, &b);
    assert_eq!(c.functions.len(), 1);
    assert_eq!(c.functions[0].median_ratio, Some(1.25));
}

#[test]
fn prefilter_needles() {
    let c = Collector::new(&opts("alpha>beta", false));
    let f = c.prefilter();
    assert!(f.admits(br#"{"name":"x.py(1): alpha"}"#));
    assert!(!f.admits(br#"{"cat":"cpu_op","name":"z"}"#));
    // Step annotations are the driver's: this analysis does not ask for them.
    assert!(!f.admits(br#"{"cat":"user_annotation","name":"z"}"#));
    let c = Collector::new(&opts("alpha>re:z", false));
    assert!(c.prefilter().admits(br#"{"cat":"cpu_op","name":"q"}"#));
}
