//! The plug-in API, proven: `examples/custom_analysis.rs` (a user-defined
//! analysis written only against the public API) run through the
//! library's driver on a real trace, in every format. Expected figures
//! were computed independently with Python's json module over the same
//! file (Σ dur as exact decimal µs × 1000).

#[path = "../../examples/custom_analysis.rs"]
mod example;

use std::path::Path;
use torchtrace::report::Format;

const AR: &str =
    "sample_traces/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz";

fn trace() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(AR)
}

#[test]
fn a_user_analysis_runs_through_the_driver_with_exact_figures() {
    let (figures, _) = example::analyze(&trace(), Format::Json).unwrap();
    let row = |cat: &str| {
        figures
            .categories
            .iter()
            .find(|r| r.category == cat)
            .unwrap_or_else(|| panic!("no {cat}"))
            .clone()
    };
    let k = row("kernel");
    assert_eq!((k.events, k.complete, k.total_ns), (3400, 3400, 12_416_580));
    let u = row("user_annotation");
    assert_eq!((u.events, u.total_ns), (68, 891_302_675));
    assert_eq!(row("python_function").total_ns, 14_453_233_076);
    assert_eq!(row("gpu_memcpy").events, 200);
    assert_eq!(
        row("ac2g").complete,
        0,
        "flow events are not complete events"
    );
    let all: u64 = figures.categories.iter().map(|r| r.events).sum();
    assert_eq!(all, 28_264, "every element of traceEvents, once");
    // The driver's ledger, asked for by the analysis: the same GPU work
    // per context as `torchtrace kernels` reports (64 contexts, 3008 kernels).
    assert_eq!((figures.contexts, figures.context_kernels), (64, 3008));
}

#[test]
fn the_library_report_writers_print_it_in_every_format() {
    let text = |f| example::analyze(&trace(), f).unwrap().1;
    let json: serde_json::Value = serde_json::from_str(&text(Format::Json)).unwrap();
    assert_eq!(json["context_kernels"], 3008);
    assert!(text(Format::Csv).starts_with("category,events,complete,total_ms\n"));
    assert!(text(Format::Markdown).contains("| kernel |"));
    let table = text(Format::Table);
    assert!(table.contains("events per category") && table.contains("kernel"));
}

#[test]
fn an_unreadable_trace_is_an_error_not_a_panic() {
    let err = example::analyze(Path::new("no such trace.json"), Format::Table).unwrap_err();
    assert!(err.contains("no such trace.json"), "{err}");
}
