//! The timeline of the module docs, built in code (one column is 1 µs),
//! and each correction M1–M3 define.

use super::*;
use crate::analysis::{analyze_reader, Plan};
use crate::contexts::Selector;

const STEP: &str = "execute_context_0(0)_generation_1(2)";

fn op(name: &str, ts: u32, dur: u32) -> String {
    format!(
        r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":7,"ts":{ts},"dur":{dur},"args":{{}}}}"#
    )
}

fn ann(name: &str, ts: u32, dur: u32) -> String {
    format!(
        r#"{{"ph":"X","cat":"user_annotation","name":"{name}","pid":1,"tid":7,"ts":{ts},"dur":{dur},"args":{{}}}}"#
    )
}

/// A CUDA `[memory]` event on device 0 with Total Allocated `total` (None:
/// not written).
fn mem(ts: u32, bytes: i64, addr: Option<u64>, total: Option<i64>) -> String {
    let mut args = format!(r#""Device Type": 1, "Device Id": 0, "Bytes": {bytes}"#);
    if let Some(a) = addr {
        args += &format!(r#", "Addr": {a}"#);
    }
    if let Some(t) = total {
        args += &format!(
            r#", "Total Allocated": {t}, "Total Reserved": {}"#,
            t + 1000
        );
    }
    format!(
        r#"{{"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":1,"tid":7,"ts":{ts},"args":{{{args}}}}}"#
    )
}

fn run_with(events: &[String], spec: MemorySpec) -> TraceMemory {
    let doc = format!("{{\"traceEvents\": [{}]}}", events.join(","));
    let plan = Plan::new(Selector::Auto).with(spec);
    let mut r = analyze_reader("t", doc.as_bytes(), &plan);
    assert!(r.error.is_none(), "{:?}", r.error);
    r.results.take::<Memory>().unwrap()
}

fn run(events: &[String]) -> TraceMemory {
    run_with(events, MemorySpec::default())
}

/// The drawing: +64 @A, +32 @B, −64 @A, +16 @C, −32 @B, with 1000 bytes
/// allocated before the trace; A and B under `aten::mm`, C under
/// `aten::cat`; one step window [2, 40) over the last four.
fn drawing() -> Vec<String> {
    vec![
        mem(10, 64, Some(0xA), Some(1064)),
        op("aten::mm", 0, 25),
        mem(20, 32, Some(0xB), Some(1096)),
        ann(STEP, 15, 3),
        mem(30, -64, Some(0xA), Some(1032)),
        op("aten::cat", 35, 5),
        mem(40, 16, Some(0xC), Some(1048)),
        mem(50, -32, Some(0xB), Some(1016)),
    ]
}

#[test]
fn the_drawing_of_the_module_docs() {
    let t = run(&drawing());
    assert_eq!(t.devices.len(), 1);
    let d = &t.devices[0];
    assert_eq!(d.device, "cuda:0");
    assert_eq!(d.levels, "total_allocated");
    assert_eq!((d.events, d.allocations, d.frees), (5, 3, 2));
    assert_eq!((d.bytes_allocated, d.bytes_freed), (112, 96));
    // M2: baseline 1064 − 64; the peak is the second event's level.
    assert_eq!(d.baseline_bytes, Some(1000));
    assert_eq!((d.peak_allocated_bytes, d.peak_ts_ns), (1096, 20_000));
    assert_eq!(d.final_allocated_bytes, 1016);
    assert_eq!(d.peak_reserved_bytes, Some(2096));
    assert_eq!(d.reserved_minus_allocated_at_peak_bytes, Some(1000));
    // M4: A and B live at the peak, both under aten::mm; C at 40 µs is
    // inside aten::cat's [35, 40] (C4: an end equal to the op's is in).
    assert_eq!((d.held_at_peak_bytes, d.held_at_peak_allocations), (96, 2));
    assert_eq!(d.before_trace_bytes, Some(1000));
    assert_eq!(d.at_peak.len(), 1);
    assert_eq!(
        (
            d.at_peak[0].name.as_str(),
            d.at_peak[0].bytes,
            d.at_peak[0].allocations
        ),
        ("aten::mm", 96, 2)
    );
    assert_eq!((d.never_freed_bytes, d.never_freed_allocations), (16, 1));
    assert_eq!(d.never_freed[0].name, "aten::cat");
    // M5: the window [15, ∞) holds the events at 20…50.
    let s = &d.steps[0];
    assert_eq!((s.events, s.allocations, s.frees), (4, 2, 2));
    assert_eq!(
        (s.start_bytes, s.high_water_bytes, s.end_bytes),
        (1064, 1096, 1016)
    );
    assert_eq!((s.net_bytes, s.tokens), (-48, Some(2)));
    assert_eq!(t.step_grammar.as_deref(), Some("vllm"));
    assert!(t.notes.is_empty(), "{:?}", t.notes);
}

#[test]
fn per_token_figures_come_with_the_tokens() {
    let mut t = run(&drawing());
    assert_eq!(t.devices[0].bytes_allocated_per_token, None);
    t.set_tokens(Some(3), Some("test".into()));
    assert_eq!(t.devices[0].bytes_allocated_per_token, Some(37.333333));
    assert_eq!(t.devices[0].allocations_per_token, Some(1.0));
}

#[test]
fn without_total_allocated_the_levels_are_running_sums() {
    let evs = vec![
        mem(10, 64, Some(0xA), None),
        mem(20, 32, Some(0xB), Some(5000)),
        mem(30, -64, Some(0xA), None),
    ];
    let d = &run(&evs).devices[0];
    assert_eq!(d.levels, "running_sum");
    assert_eq!((d.peak_allocated_bytes, d.final_allocated_bytes), (96, 32));
    assert_eq!((d.baseline_bytes, d.before_trace_bytes), (None, None));
}

#[test]
fn frees_of_earlier_memory_reuse_and_size_mismatches_are_counted() {
    let evs = vec![
        mem(10, -100, Some(0xF), Some(900)),
        mem(20, 64, Some(0xA), Some(964)),
        mem(30, 64, Some(0xA), Some(1028)),
        mem(40, -32, Some(0xA), Some(996)),
        mem(50, 8, None, Some(1000)),
    ];
    let t = run(&evs);
    let d = &t.devices[0];
    assert_eq!(
        (
            d.frees_of_earlier_allocations,
            d.bytes_freed_of_earlier_allocations
        ),
        (1, 100)
    );
    assert_eq!((d.reused_live_addresses, d.free_size_mismatches), (1, 1));
    assert_eq!(d.allocations_without_addr, 1);
    // 996 + 8 = 1004, not 1000.
    assert_eq!(d.total_mismatches, 1);
    assert_eq!(t.notes.len(), 5, "{:?}", t.notes);
}

#[test]
fn malformed_events_are_counted_and_named() {
    let evs = vec![
        r#"{"ph":"i","name":"[memory]","pid":1,"tid":7,"ts":5,"args":{"Bytes":1.5,"Device Type":1,"Device Id":0}}"#
            .to_string(),
        r#"{"ph":"i","name":"[memory]","pid":1,"tid":7,"args":{"Bytes":1,"Device Type":1,"Device Id":0}}"#
            .to_string(),
        mem(10, 64, Some(0xA), Some(64)),
    ];
    let t = run(&evs);
    assert_eq!((t.counts.memory_events, t.counts.malformed), (1, 2));
    assert!(
        t.notes[0].contains("no integer Bytes at event index 0"),
        "{:?}",
        t.notes
    );
}

#[test]
fn a_trace_without_memory_events_says_so() {
    let t = run(&[op("aten::mm", 0, 5)]);
    assert!(t.devices.is_empty() && t.complete);
    assert!(t.notes[0].contains("profile_memory=True"));
}

#[test]
fn the_timeline_keeps_each_slices_largest_level() {
    let spec = MemorySpec {
        timeline: 2,
        ..MemorySpec::default()
    };
    let d = &run_with(&drawing(), spec).devices[0];
    // Span [10, 50] µs (40 001 ns) cut in two: 10…30 and 40…50.
    let got: Vec<(i64, i128)> = d
        .timeline
        .iter()
        .map(|p| (p.ts_ns, p.allocated_bytes))
        .collect();
    assert_eq!(got, vec![(10_000, 1096), (30_000, 1048)]);
}

#[test]
fn holders_past_top_are_summed() {
    let evs = vec![
        op("a", 0, 100),
        op("b", 10, 10),
        op("c", 30, 10),
        mem(5, 10, Some(1), Some(10)),
        mem(15, 20, Some(2), Some(30)),
        mem(35, 30, Some(3), Some(60)),
    ];
    let spec = MemorySpec {
        top: 1,
        ..MemorySpec::default()
    };
    let d = &run_with(&evs, spec).devices[0];
    let rows: Vec<(&str, i128)> = d
        .at_peak
        .iter()
        .map(|h| (h.name.as_str(), h.bytes))
        .collect();
    assert_eq!(rows, vec![("c", 30), ("(others) 2 holders", 30)]);
}
