//! Tests of `pair`: the pairing, the spans and the notes on small written traces.

use super::*;
use crate::analysis::{analyze_reader, Plan};

/// Pairs a trace made of JSON event lines through the driver.
fn run(events: &str, selector: &Selector) -> (TracePairs, Option<PairProblem>) {
    let doc = format!("{{\"traceEvents\": [{events}]}}");
    let plan = Plan::new(selector.clone()).with(PairSpec::default());
    let mut r = analyze_reader("t", doc.as_bytes(), &plan);
    assert!(r.error.is_none(), "{:?}", r.error);
    (r.results.take::<Pair>().unwrap(), r.contexts.problem)
}

fn ua(name: &str, ts: &str, dur: &str, id: i64) -> String {
    format!(
        r#"{{"ph":"X","cat":"user_annotation","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur},"args":{{"External id":{id}}}}}"#
    )
}
fn gua(name: &str, ts: &str, dur: &str, id: i64, stream: i64) -> String {
    format!(
        r#"{{"ph":"X","cat":"gpu_user_annotation","name":"{name}","pid":0,"tid":{stream},"ts":{ts},"dur":{dur},"args":{{"External id":{id}}}}}"#
    )
}

const AR: &str = "execute_context_0(0)_generation_1(1)";

#[test]
fn one_to_one_multi_stream_and_unpaired() {
    //  CPU  [ctx id=1 0..10]   [ctx id=2 20..30]   [ctx id=3 40..50]
    //  GPU    s7 [2..9]          s7 [21..28] s9 [19..25]   (none)      s7 id=9 [60..61]
    let evs = [
        ua(AR, "0.000", "10.000", 1),
        ua(AR, "20.000", "10.000", 2),
        ua(AR, "40.000", "10.000", 3),
        ua(
            "execute_context_1(96)_generation_0(0)",
            "-5.000",
            "4.000",
            4,
        ),
        gua(AR, "2.000", "7.000", 1, 7),
        gua(AR, "21.000", "7.000", 2, 7),
        gua(AR, "19.000", "6.000", 2, 9),
        gua(AR, "60.000", "1.000", 9, 7),
    ]
    .join(",");
    let (r, problem) = run(&evs, &Selector::Auto);
    assert_eq!(problem, None);
    assert_eq!(r.context, AR);
    assert_eq!(
        (
            r.contexts,
            r.pairs,
            r.cpu_unpaired,
            r.gpu_unpaired,
            r.multi_stream_pairs
        ),
        (3, 2, 1, 1, 1)
    );
    // GPU spans: 7 µs and 28-19 = 9 µs → median 8 ms/1000.
    assert_eq!(r.gpu_span_ms.median, Some(0.008));
    assert_eq!(r.gpu_span_ms.sum, Some(0.016));
    assert_eq!(r.cpu_span_ms.median, Some(0.010));
    assert_eq!(r.step_names.len(), 2);
}

#[test]
fn unfinished_contexts_are_counted_and_noted() {
    let open = r#"{"ph":"X","cat":"user_annotation","name":"execute_context_0(0)_generation_1(1)","pid":1,"tid":1,"ts":50,"dur":1,"args":{"External id":5,"finished":false}}"#;
    let evs = [ua(AR, "0", "10", 1), open.to_string()].join(",");
    let (r, _) = run(&evs, &Selector::Auto);
    assert_eq!((r.contexts, r.unfinished), (2, 1));
    assert!(r.notes[0].contains("still open"), "{:?}", r.notes);
}

#[test]
fn same_external_id_other_name_does_not_pair() {
    let evs = [
        ua(AR, "0.000", "10.000", 1),
        gua("other", "1.000", "1.000", 1, 7),
    ]
    .join(",");
    let (r, _) = run(&evs, &Selector::Auto);
    assert_eq!((r.pairs, r.cpu_unpaired, r.gpu_unpaired), (0, 1, 0));
}

#[test]
fn tokens_and_comparison() {
    let mtp = "execute_context_0(0)_generation_1(3)";
    let base = [
        ua(AR, "0", "10", 1),
        gua(AR, "1", "8", 1, 7),
        ua(AR, "20", "10", 2),
        gua(AR, "21", "8", 2, 7),
    ]
    .join(",");
    let cand = [ua(mtp, "0", "12", 1), gua(mtp, "1", "12", 1, 7)].join(",");
    let (mut b, _) = run(&base, &Selector::Auto);
    let (mut c, _) = run(&cand, &Selector::Auto);
    b.set_tokens(Some(2), None);
    c.set_tokens(Some(2), None);
    assert_eq!(b.tokens_per_context, Some(1.0));
    assert_eq!(c.tokens_per_context, Some(2.0));
    assert_eq!(b.gpu_span_per_token_ms, Some(0.008));
    let cmp = compare(&b, &c);
    // AR: 16 µs / 2 tokens; MTP: 12 µs / 2 tokens.
    assert_eq!(cmp.s_context, Some(16.0 / 12.0));
    assert_eq!(cmp.context_reduction_pct, Some(50.0));
    assert_eq!(cmp.gpu_span_median_ratio, Some(1.5));
    assert_eq!(cmp.cpu_span_median_ratio, Some(1.2));
}

#[test]
fn unknown_display_time_unit_is_noted() {
    let doc = format!(
        "{{\"displayTimeUnit\": \"s\", \"traceEvents\": [{}]}}",
        ua(AR, "0", "10", 1)
    );
    let plan = Plan::new(Selector::Auto).with(PairSpec::default());
    let r = analyze_reader("t", doc.as_bytes(), &plan)
        .results
        .take::<Pair>()
        .unwrap();
    assert!(
        r.notes.iter().any(|n| n.contains("displayTimeUnit \"s\"")),
        "{:?}",
        r.notes
    );
}

#[test]
fn no_decode_steps_is_a_problem_listing_names() {
    let evs = [ua("my_range", "0", "1", 1)].join(",");
    let (r, problem) = run(&evs, &Selector::Auto);
    assert_eq!(r.contexts, 0);
    let msg = problem.unwrap().to_string();
    assert!(msg.contains("my_range ×1"), "{msg}");
}

/// Without a vLLM step name, the default selection falls back to the
/// ProfilerStep ranges (issue 60), as `idle` does.
#[test]
fn profiler_steps_are_the_fallback_contexts() {
    let evs = [ua("ProfilerStep#1", "0", "1", 1)].join(",");
    let (r, _) = run(&evs, &Selector::Auto);
    assert_eq!(r.contexts, 1);
}

#[test]
fn shared_external_id_gives_each_annotation_to_one_context() {
    //  CPU  [ctx id=1 0..10]            [ctx id=1 20..30]
    //  GPU     [1..5]  (→ first)            [21..24] [25..29] (→ second)
    let evs = [
        ua(AR, "0", "10", 1),
        ua(AR, "20", "10", 1),
        gua(AR, "1", "4", 1, 7),
        gua(AR, "21", "3", 1, 7),
        gua(AR, "25", "4", 1, 7),
    ]
    .join(",");
    let (r, _) = run(&evs, &Selector::Auto);
    assert_eq!((r.contexts, r.pairs, r.multi_stream_pairs), (2, 2, 1));
    // Spans 4 µs and 8 µs, not 28 µs twice.
    assert_eq!(r.gpu_span_ms.sum, Some(0.012));
    let n = r.notes.join("\n");
    assert!(
        n.contains("1 External id(s) are held by 2 selected contexts")
            && n.contains("3 GPU annotations"),
        "{n}"
    );
}

#[test]
fn missing_or_negative_dur_is_noted() {
    let no_dur = r#"{"ph":"X","cat":"gpu_user_annotation","name":"execute_context_0(0)_generation_1(1)","pid":0,"tid":7,"ts":2,"args":{"External id":1}}"#;
    let evs = [
        ua(AR, "0", "10", 1),
        ua(AR, "20", "-3", 2),
        no_dur.to_string(),
    ]
    .join(",");
    let (r, _) = run(&evs, &Selector::Auto);
    let n = r.notes.join("\n");
    assert!(
        n.contains("taken as 0: 1 selected context(s), 1 GPU annotation(s)"),
        "{n}"
    );
}

#[test]
fn begin_end_ranges_are_counted_as_unsupported() {
    let b = r#"{"ph":"B","cat":"user_annotation","name":"execute_context_0(0)_generation_1(1)","pid":1,"tid":1,"ts":30}"#;
    let e = r#"{"ph":"E","pid":1,"tid":1,"ts":31}"#;
    let evs = [ua(AR, "0", "10", 1), b.to_string(), e.to_string()].join(",");
    let (r, _) = run(&evs, &Selector::Auto);
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("1 B/E user annotation")),
        "{:?}",
        r.notes
    );
    // Only B/E ranges: the problem says so.
    let doc = format!("{{\"traceEvents\": [{b},{e}]}}");
    let plan = Plan::new(Selector::Auto).with(PairSpec::default());
    let res = analyze_reader("t", doc.as_bytes(), &plan);
    let msg = res.contexts.problem.unwrap().to_string();
    assert!(msg.contains("1 B/E ranges"), "{msg}");
}

#[test]
fn ends_past_i64_max_are_refused_not_saturated() {
    // ts + dur beyond i64::MAX ns cannot be an exact end: the reader
    // refuses the event (naming it) instead of saturating it into a
    // wrong span; the events before it are still measured.
    let evs = [
        ua(AR, "0", "10", 2),
        gua(AR, "1", "5", 2, 7),
        ua(AR, "9223372036854700.000", "200.000", 1),
    ]
    .join(",");
    let doc = format!("{{\"traceEvents\": [{evs}]}}");
    let plan = Plan::new(Selector::Auto).with(PairSpec::default());
    let mut r = analyze_reader("t", doc.as_bytes(), &plan);
    let err = r.error.expect("refused").to_string();
    assert!(
        err.contains("event 2") && err.contains("beyond the representable"),
        "{err}"
    );
    let p = r.results.take::<Pair>().unwrap();
    assert_eq!((p.pairs, p.gpu_span_sum_ns), (1, 5_000));
}
