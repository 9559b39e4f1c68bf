//! `results.json` (and `--format json` on stdout): every trace with its
//! run information and each analysis's figures (as the analysis puts them,
//! [`crate::Analysis::in_results`], in registry order), the comparisons,
//! the inputs and the notes.

use crate::analysis::InResults;
use crate::batch::{BatchResult, Record};
use serde::Serialize;

/// One entry of `results.json`'s `traces`: the file and its run
/// information, then each analysis's figures under its key (`hierarchy`,
/// `kernels`, …) in registry order, then the keys of the analyses whose
/// keys are the entry's own (`pair`'s: `contexts`, `gpu_span_ms`, …).
/// Each analysis's JSON value is made as it is written and dropped after
/// ([`crate::analysis::Results::each_in_results`]).
struct TraceJson<'a>(&'a Record);

impl Serialize for TraceJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let r = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("path", &r.file.path)?;
        m.serialize_entry("status", r.file.status.as_str())?;
        m.serialize_entry("error", &r.file.error)?;
        m.serialize_entry("kind", r.file.kind.as_str())?;
        m.serialize_entry("mode", &r.run.mode())?;
        m.serialize_entry("mode_source", &r.run.mode.as_ref().map(|m| m.source.kind()))?;
        m.serialize_entry("workload", &r.run.workload())?;
        let source = r.run.workload.as_ref().map(|w| w.source.kind());
        m.serialize_entry("workload_source", &source)?;
        m.serialize_entry("speculative_depth", &r.run.speculative_depth)?;
        m.serialize_entry("size_bytes", &r.file.size)?;
        for (key, figures) in r.file.results.each_in_results() {
            match figures {
                InResults::Nested(v) => m.serialize_entry(key, &v)?,
                InResults::Text { json, without } => {
                    m.serialize_entry(key, &Sorted::top(&json, without))?
                }
                InResults::Flattened(_) => {}
            }
        }
        for (_, figures) in r.file.results.each_in_results() {
            if let InResults::Flattened(own) = figures {
                for (k, v) in &own {
                    m.serialize_entry(k, v)?;
                }
            }
        }
        m.end()
    }
}

/// JSON text written as the JSON value it parses to would be: every
/// object's keys sorted (as `serde_json::Map` keeps them), the last of a
/// repeated key kept, scalars as they are; at the top level less the keys
/// `without`. Only one object's or array's member list is held at a time,
/// as slices of the text.
struct Sorted<'a> {
    text: &'a str,
    without: &'static [&'static str],
}

impl<'a> Sorted<'a> {
    fn top(text: &'a str, without: &'static [&'static str]) -> Sorted<'a> {
        Sorted { text, without }
    }

    fn inner(raw: &'a serde_json::value::RawValue) -> Sorted<'a> {
        Sorted {
            text: raw.get(),
            without: &[],
        }
    }
}

impl Serialize for Sorted<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        use serde_json::value::RawValue;
        use std::collections::BTreeMap;
        let text = self.text.trim_start();
        if text.starts_with('{') {
            let mut members: BTreeMap<String, &RawValue> =
                serde_json::from_str(text).map_err(S::Error::custom)?;
            members.retain(|k, _| !self.without.contains(&k.as_str()));
            let mut m = s.serialize_map(Some(members.len()))?;
            for (k, v) in &members {
                m.serialize_entry(k, &Sorted::inner(v))?;
            }
            m.end()
        } else if text.starts_with('[') {
            let items: Vec<&RawValue> = serde_json::from_str(text).map_err(S::Error::custom)?;
            s.collect_seq(items.into_iter().map(Sorted::inner))
        } else {
            // A scalar is written the same by any writer: its text.
            let raw: &RawValue = serde_json::from_str(text).map_err(S::Error::custom)?;
            raw.serialize(s)
        }
    }
}

/// The traces' entries, each made as it is written (issue 59: made all
/// at once, their figures as JSON values took about 60 KB per trace beside
/// the campaign's results).
struct Traces<'a>(&'a [Record]);

impl Serialize for Traces<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(TraceJson))
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

#[cfg(test)]
mod tests {
    use super::Sorted;

    /// The text written through `Sorted` is the bytes of the JSON value
    /// it parses to, less the top-level keys left out: nested objects in
    /// arrays, a repeated key (the last kept), escapes, floats, big
    /// integers and empty containers.
    #[test]
    fn sorted_text_writes_what_the_json_value_writes() {
        let text = r#"{"z":1,"path":"p","a":{"y":[{"b":2.5,"a":-0.0}],"x":"é\"\n"},"m":{"10":1,"9":2,"10":3},"e":[],"o":{},"u":18446744073709551615,"f":1e-7,"error":null}"#;
        let mut want: serde_json::Value = serde_json::from_str(text).unwrap();
        want.as_object_mut().unwrap().remove("path");
        want.as_object_mut().unwrap().remove("error");
        let want = serde_json::to_string_pretty(&want).unwrap();
        let got = serde_json::to_string_pretty(&Sorted::top(text, &["path", "error"])).unwrap();
        assert_eq!(got, want);
        let scalar = serde_json::to_string_pretty(&Sorted::top("  42", &[])).unwrap();
        assert_eq!(scalar, "42");
    }
}
