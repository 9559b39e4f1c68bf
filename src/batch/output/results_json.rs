//! `results.json` (and `--format json` on stdout): every trace with its
//! run information, its `pair` figures and its hierarchy, the comparisons,
//! the inputs and the notes.

use crate::analyses::hierarchy::TraceHierarchy;
use crate::batch::{BatchResult, Record};
use serde::Serialize;
use serde_json::{Map, Value};

/// One entry of `results.json`'s `traces`.
#[derive(Serialize)]
struct TraceJson<'a> {
    path: &'a str,
    status: &'static str,
    error: Option<&'a str>,
    kind: &'static str,
    mode: Option<&'a str>,
    mode_source: Option<&'static str>,
    workload: Option<&'a str>,
    workload_source: Option<&'static str>,
    speculative_depth: Option<u64>,
    size_bytes: u64,
    /// The trace's hierarchy figures (chains: links, functions), when read.
    #[serde(skip_serializing_if = "Option::is_none")]
    hierarchy: Option<Value>,
    /// The trace's GPU work by launch correlation (`kernels`' figures).
    #[serde(skip_serializing_if = "Option::is_none")]
    kernels: Option<Value>,
    /// The keys of the trace in `pair`'s JSON (less `path` and `error`,
    /// given above).
    #[serde(flatten)]
    pair: Map<String, Value>,
}

fn trace_json(r: &Record) -> TraceJson<'_> {
    let mut pair = match r.file.pairs().map(serde_json::to_value) {
        Some(Ok(Value::Object(m))) => m,
        _ => Map::new(),
    };
    pair.remove("path");
    pair.remove("error");
    TraceJson {
        path: &r.file.path,
        status: r.file.status.as_str(),
        error: r.file.error.as_deref(),
        kind: r.file.kind.as_str(),
        mode: r.run.mode(),
        mode_source: r.run.mode.as_ref().map(|m| m.source.kind()),
        workload: r.run.workload(),
        workload_source: r.run.workload.as_ref().map(|w| w.source.kind()),
        speculative_depth: r.run.speculative_depth,
        size_bytes: r.file.size,
        hierarchy: r.file.hierarchy().map(hierarchy_json),
        kernels: r.file.kernels().map(kernels_json),
        pair,
    }
}

/// A trace's hierarchy figures, less what the trace entry already says.
fn hierarchy_json(h: &TraceHierarchy) -> Value {
    let mut v = serde_json::to_value(h).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        for k in ["path", "meta", "events", "complete", "error", "context"] {
            m.remove(k);
        }
        m.insert("holds".into(), Value::Bool(h.holds()));
    }
    v
}

/// A trace's kernels figures, less what the trace entry already says.
fn kernels_json(k: &crate::analyses::kernels::TraceKernels) -> Value {
    let mut v = serde_json::to_value(k).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        for key in [
            "path",
            "context",
            "contexts",
            "completion_tokens",
            "tokens_source",
            "complete",
            "error",
        ] {
            m.remove(key);
        }
    }
    v
}

/// The whole `results.json` document (keys in this order).
#[derive(Serialize)]
pub struct ResultsDoc<'a> {
    traces: Vec<TraceJson<'a>>,
    comparisons: &'a [crate::batch::WorkloadComparison],
    /// One comparison per workload over all its runs (Σ spans / Σ tokens
    /// per mode; equal to the matched one with one run per mode).
    pooled: &'a [crate::batch::PooledComparison],
    /// How step contexts were selected (`auto`, a name, or `re:…`).
    context: &'a str,
    inputs: &'a [crate::batch::inputs::Input],
    files: usize,
    failed: usize,
    notes: &'a [String],
}

/// The whole `results.json` document.
pub fn results_json<'a>(res: &'a BatchResult, context: &'a str) -> ResultsDoc<'a> {
    ResultsDoc {
        traces: res.records.iter().map(trace_json).collect(),
        comparisons: &res.comparisons,
        pooled: &res.pooled,
        context,
        inputs: &res.inputs,
        files: res.records.len(),
        failed: res.failed().count(),
        notes: &res.notes,
    }
}
