//! The hand-written event extractor and serde_json (the generic path) give
//! identical events — or the same error — on random events and on every
//! event of the real traces (tests/data, its subfolders, sample_traces).
//!
//! `trace::parse_event` is the extractor with the generic path as its
//! fallback; `trace::parse_event_generic` is serde_json alone. Events are
//! compared through `Debug` (every field: ph, cat, name, pid, tid, ts, dur,
//! args), errors by message.

use crate::common;

use proptest::prelude::*;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use torchtrace::trace::{self, open, stream, EventPos, Meta};

/// Both paths' outcome for one event, as comparable text.
fn both(raw: &[u8]) -> (String, String) {
    let at = EventPos {
        index: 3,
        offset: 1000,
    };
    let show = |r: Result<trace::Event<'_>, trace::ReadError>| match r {
        Ok(ev) => format!("ok {ev:?}"),
        Err(e) => format!("err {e}"),
    };
    (
        show(trace::parse_event(raw, at)),
        show(trace::parse_event_generic(raw, at)),
    )
}

fn agree(raw: &[u8]) -> Result<(), TestCaseError> {
    let (fast, generic) = both(raw);
    prop_assert_eq!(&fast, &generic, "event: {}", String::from_utf8_lossy(raw));
    Ok(())
}

// ---- random events -------------------------------------------------------

/// JSON whitespace, mostly none or one space.
fn ws() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just(String::new()),
        4 => Just(" ".to_string()),
        1 => "[ \t\r\n]{0,3}",
    ]
}

/// String contents: plain names, escapes, control bytes, non-ASCII.
fn string_body() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[a-zA-Z0-9_:<>(), *&.#-]{0,40}",
        1 => Just(r#"a\"b"#.to_string()),
        1 => Just(r#"\u0041\\n"#.to_string()),
        1 => Just("tab\there".to_string()),
        1 => Just("ünï €".to_string()),
        1 => Just(r#"bad\q"#.to_string()),
        1 => prop::sample::select(vec!["X", "i", "kernel", "cuda_runtime", "gpu_memcpy", "user_annotation", ""])
            .prop_map(str::to_string),
    ]
}

fn json_string() -> impl Strategy<Value = String> {
    string_body().prop_map(|s| format!("\"{s}\""))
}

/// Numbers of every shape, valid JSON and not.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0u64..6_000_000_000_000, 0u32..1000).prop_map(|(i, f)| format!("{i}.{f:03}")),
        3 => any::<i64>().prop_map(|i| i.to_string()),
        2 => (-1000i64..100_000).prop_map(|i| i.to_string()),
        1 => any::<u64>().prop_map(|i| i.to_string()),
        1 => prop::sample::select(vec![
            "0", "-0", "-0.0", "1.0", "1e3", "1E+2", "2.5e-3", "1e400", "-1e400", "01", "1.", ".5",
            "-", "1e", "+1", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
            "123456789012345678", "1234567890123456789", "0.0000001", "5106297913320.7905",
            "NaN", "Infinity",
        ])
        .prop_map(str::to_string),
    ]
}

/// Any value: scalars, strings, nested arrays and objects, and junk.
fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        8 => number(),
        8 => json_string(),
        3 => prop::sample::select(vec!["null", "true", "false", "[]", "{}"]).prop_map(str::to_string),
        1 => prop::sample::select(vec!["tru", "nul", "[1,]", "{\"a\"}", "{\"a\":}", "[", "\"", "}"])
            .prop_map(str::to_string),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec((inner.clone(), ws()), 0..4).prop_map(|v| {
                let items: Vec<String> = v.into_iter().map(|(x, w)| format!("{w}{x}{w}")).collect();
                format!("[{}]", items.join(","))
            }),
            prop::collection::vec((json_string(), inner), 0..4).prop_map(|v| {
                let items: Vec<String> = v.into_iter().map(|(k, x)| format!("{k}: {x}")).collect();
                format!("{{{}}}", items.join(", "))
            }),
        ]
    })
}

/// A value for a known key, biased to what that key usually holds.
fn value_for(key: &'static str) -> BoxedStrategy<String> {
    match key {
        "ph" | "cat" | "name" => prop_oneof![6 => json_string(), 1 => value()].boxed(),
        "pid" | "tid" => prop_oneof![
            4 => (-2i64..100_000).prop_map(|i| i.to_string()),
            2 => prop::sample::select(vec!["-0", "0", "-1", "1.0", "1e2", "null", "true", "9223372036854775808",
                "-9223372036854775808", "123456789012345678", "-123456789012345678", "1234567890123456789"])
                .prop_map(str::to_string),
            2 => json_string(),
            2 => value(),
        ]
        .boxed(),
        "ts" | "dur" => prop_oneof![6 => number(), 1 => value()].boxed(),
        "args" => prop_oneof![6 => args(), 1 => value()].boxed(),
        _ => value().boxed(),
    }
}

/// `args`: the three keys read, others, duplicates, odd values.
fn args() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "External id",
        "correlation",
        "finished",
        "cbid",
        "grid",
        "device",
        "stream",
        "External ID",
        "Bytes",
        "Addr",
        "Total Allocated",
        "Device Type",
    ]);
    let member = (key, value(), ws(), any::<bool>()).prop_map(|(k, v, w, kineto)| {
        let v = match (k, v.len() % 3) {
            ("External id" | "correlation" | "Bytes" | "Total Allocated", 0) => {
                (v.len() * 7919).to_string()
            }
            ("Addr", 0) => format!("1{}", "2".repeat(v.len() % 30)),
            ("finished", 0) => "false".to_string(),
            _ => v,
        };
        separated(k, &v, &w, kineto)
    });
    prop::collection::vec(member, 0..5).prop_map(|m| format!("{{{}}}", m.join(",")))
}

const KEYS: [&str; 12] = [
    "ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "bp", "s", "ph ",
];

/// A member `"k": v`: with Kineto's separators (` "k": v`, which the
/// extractor's key guess reads) or with random whitespace around each part.
fn separated(k: &str, v: &str, w: &str, kineto: bool) -> String {
    if kineto {
        format!(" \"{k}\": {v}")
    } else {
        format!("{w}\"{k}\"{w}:{w}{v}{w}")
    }
}

/// One event's text: known and unknown keys in any order or in Kineto's
/// (some twice), Kineto's separators or random whitespace, sometimes
/// damaged.
fn event() -> impl Strategy<Value = Vec<u8>> {
    let member = prop::sample::select(KEYS.to_vec())
        .prop_flat_map(|k| (Just(k), value_for(k), ws(), any::<bool>()))
        .prop_map(|(k, v, w, kineto)| (k, separated(k, &v, &w, kineto)));
    (
        prop::collection::vec(member, 0..8),
        any::<bool>(),
        prop_oneof![12 => Just(None), 1 => any::<prop::sample::Index>().prop_map(Some)],
        any::<u8>(),
    )
        .prop_map(|(mut members, in_order, damage, byte)| {
            if in_order {
                members.sort_by_key(|(k, _)| KEYS.iter().position(|x| x == k));
            }
            let members: Vec<String> = members.into_iter().map(|(_, m)| m).collect();
            let mut text = format!("{{{}}}", members.join(",")).into_bytes();
            // Replace one byte: broken syntax, stray controls, bad UTF-8.
            if let Some(at) = damage {
                let i = at.index(text.len());
                text[i] = byte;
            }
            text
        })
}

/// A well-formed launch call or kernel as Kineto writes it.
fn kineto_event() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(vec!["kernel", "cuda_runtime", "cuda_driver", "gpu_memcpy", "gpu_memset"]),
        "[a-zA-Z_:<>(), *&]{1,60}",
        (0i64..2000, 0i64..2000),
        (0u64..6_000_000_000_000, 0u32..1000, 0u32..100_000),
        0i64..10_000_000,
        ws(),
    )
        .prop_map(|(cat, name, (pid, tid), (ts, frac, dur), corr, w)| {
            format!(
                "{{\n    \"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"{name}\", \"pid\": {pid}, \"tid\": {tid},\n    \
                 \"ts\": {ts}.{frac:03}, \"dur\": {}.{:03},\n    \"args\": {{\n      \"External id\": {corr},{w}\"queued\": 0, \
                 \"device\": 0, \"stream\": 7, \"correlation\": {corr}, \"blocks per SM\": 0.727273, \"grid\": [8, 12, 1]\n    }}\n  }}",
                dur / 1000,
                dur % 1000
            )
            .into_bytes()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn random_events_read_the_same(raw in event()) {
        agree(&raw)?;
    }

    #[test]
    fn kineto_events_read_the_same_and_take_the_fast_path(raw in kineto_event()) {
        agree(&raw)?;
        prop_assert!(trace::extract_event(&raw).is_some(), "{}", String::from_utf8_lossy(&raw));
    }
}

// ---- real traces ---------------------------------------------------------

fn traces() -> Vec<PathBuf> {
    common::fixture_files(|n| n.ends_with(".json.gz") || n.ends_with(".json"))
}

#[test]
fn every_event_of_the_real_traces_reads_the_same() {
    let mut checked = 0u64;
    let (mut ledger_events, mut ledger_fast) = (0u64, 0u64);
    let files = traces();
    assert!(files.len() >= 8, "fixture traces expected: {files:?}");
    for path in files {
        let mut text = Vec::new();
        let Ok(mut src) = open::open_decoded(&path, Arc::default()) else {
            continue;
        };
        // Damaged fixtures end early: the events before the damage count.
        let _ = src.read_to_end(&mut text);
        let mut meta = Meta::default();
        let _ = stream::scan(&text[..], &mut meta, &mut |raw, _| {
            let (fast, generic) = both(raw);
            assert_eq!(
                fast,
                generic,
                "{}: {}",
                path.display(),
                String::from_utf8_lossy(raw)
            );
            checked += 1;
            if let Ok(ev) = trace::parse_event_generic(
                raw,
                EventPos {
                    index: 0,
                    offset: 0,
                },
            ) {
                let ledger = matches!(
                    &*ev.cat,
                    "kernel" | "gpu_memcpy" | "gpu_memset" | "cuda_runtime" | "cuda_driver"
                );
                if ledger && !raw.contains(&b'\\') {
                    ledger_events += 1;
                    ledger_fast += u64::from(trace::extract_event(raw).is_some());
                }
            }
            Ok(())
        });
    }
    assert!(checked > 100_000, "{checked} events checked");
    // Every launch call and GPU activity without escapes takes the fast path.
    assert_eq!(ledger_fast, ledger_events, "of {checked} events");
    assert!(ledger_events > 10_000, "{ledger_events}");
}

#[test]
fn random_events_exercise_both_paths() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = event();
    let (mut fast, mut ok, n) = (0u32, 0u32, 4000u32);
    for _ in 0..n {
        let raw = strategy.new_tree(&mut runner).unwrap().current();
        fast += u32::from(trace::extract_event(&raw).is_some());
        ok += u32::from(
            trace::parse_event_generic(
                &raw,
                EventPos {
                    index: 0,
                    offset: 0,
                },
            )
            .is_ok(),
        );
    }
    // Enough of each kind for the property above to mean something.
    assert!(fast > n / 10, "{fast} of {n} took the fast path");
    assert!(ok > fast + n / 20, "{ok} of {n} parsed, {fast} fast");
    assert!(ok < n - n / 20, "{ok} of {n} parsed");
}
