//! Fuzzes the two analyses of the GPU timeline's causes, `ops` (which CPU
//! operator launched what) and `idle` (why each device waits), on any
//! bytes through the driver (issue 37: the fuzz targets cover the new
//! analyses' inputs). It must never panic, and:
//!
//! - `ops`' activities split into kernels, memcpys and memsets, and into
//!   linked and unlinked ones (each activity counted once),
//! - `idle`'s devices are never busier than their span, nor idle below 0,
//! - results survive the records' round trip exactly (what `merge` reads).
#![no_main]

use libfuzzer_sys::fuzz_target;
use torchtrace::analyses::idle::{Idle, IdleSpec};
use torchtrace::analyses::ops::{Ops, OpsSpec};
use torchtrace::{analyze_reader, Plan, Results, Selector};

fuzz_target!(|data: &[u8]| {
    let Some((&knob, input)) = data.split_first() else {
        return;
    };
    let selector = if knob & 1 == 0 {
        Selector::Auto
    } else {
        Selector::from_flags(None, Some(".")).expect("a valid regex")
    };
    let plan = Plan::new(selector)
        .with(OpsSpec::default())
        .with(IdleSpec::default());
    let r = analyze_reader("fuzz", input, &plan);
    if let Some(o) = r.get::<Ops>() {
        let s = &o.summary;
        assert_eq!(s.kernels + s.memcpys + s.memsets, s.activities);
        assert_eq!(s.activities_linked + s.activities_unlinked, s.activities);
    }
    if let Some(t) = r.get::<Idle>() {
        for d in &t.devices {
            assert!(d.busy_ns <= d.span_ns && d.idle_ns >= 0, "{d:?}");
        }
    }
    let text = torchtrace::record::with_internals(|| serde_json::to_string(&r.results));
    let text = text.expect("results serialise");
    let back: Results = serde_json::from_str(&text).expect("results read back");
    assert!(back == r.results, "results round trip exactly");
});
