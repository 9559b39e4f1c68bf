//! `results.json` (and `--format json` on stdout): every trace with its
//! run information and each analysis's figures (as the analysis puts them,
//! [`crate::Analysis::in_results`], in registry order), the comparisons,
//! the inputs and the notes.

use crate::analysis::InResults;
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
    /// Each analysis's figures under its key (`hierarchy`, `kernels`, …),
    /// in registry order, when read.
    #[serde(flatten)]
    nested: Nested,
    /// The analyses whose keys are the entry's own (`pair`'s: `contexts`,
    /// `gpu_span_ms`, …).
    #[serde(flatten)]
    flattened: Map<String, Value>,
}

/// (key, figures) pairs written as map entries, in their order.
struct Nested(Vec<(&'static str, Value)>);

impl Serialize for Nested {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

fn trace_json(r: &Record) -> TraceJson<'_> {
    let mut nested = Vec::new();
    let mut flattened = Map::new();
    for (key, figures) in r.file.results.in_results() {
        match figures {
            InResults::Nested(v) => nested.push((key, v)),
            InResults::Flattened(m) => flattened.extend(m),
        }
    }
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
        nested: Nested(nested),
        flattened,
    }
}

/// The traces' entries, each made as it is written (issue 59: made all
/// at once, their figures as JSON values took about 60 KB per trace beside
/// the campaign's results).
struct Traces<'a>(&'a [Record]);

impl Serialize for Traces<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(trace_json))
    }
}

/// The whole `results.json` document (keys in this order).
#[derive(Serialize)]
pub struct ResultsDoc<'a> {
    traces: Traces<'a>,
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
        traces: Traces(&res.records),
        comparisons: &res.comparisons,
        pooled: &res.pooled,
        context,
        inputs: &res.inputs,
        files: res.records.len(),
        failed: res.failed().count(),
        notes: &res.notes,
    }
}
