//! Pairing CPU step annotations with their GPU spans, and the per-trace
//! figures of "Beneath the Tokens" (RQ4): tokens per context, CPU/GPU span
//! statistics, GPU span per token, and the AR-vs-MTP comparison (S_context).
//!
//! Kineto records each `record_function` range twice: the CPU
//! `user_annotation`, and for every (device, stream) that ran work launched
//! while it was the innermost range, a `gpu_user_annotation` spanning that
//! work. Both carry the same `External id`:
//!
//! ```text
//! CPU  tid 7   [===== execute_context_0(0)_generation_1(1)  ext=42 =====]
//! GPU  stream 7        [== gua ext=42 ==]            [= gua ext=42 =]        (replay, logits)
//! GPU  stream 9     [gua ext=42]                                             (async H2D copy)
//!                   |<-------------- GPU span = max end − min start --------->|
//! ```

mod batch;
mod figures;
mod result;
mod rows;
pub mod view;

pub use result::*;
use rows::*;

use crate::analysis::{self, Analysis, Configures, Finished, InResults, Need, Plan, TraceResult};
use crate::containment::{Enclosers, Iv};
use crate::contexts::{annotation_prefilter, Contexts, Steps};
pub use crate::contexts::{Annotation, PairProblem, Selector, StepName};
use crate::ledger::attribution::{self, LaunchScope};
use crate::ledger::pack::Records;
use crate::ledger::Ledger;
use crate::model::{Interner, Ns};
use crate::stats::{Exact, ExactSummary, Summary};
use crate::trace::{Event, EventPos, Meta, Prefilter};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// The raw-bytes test for the events pairing needs: both annotation
/// categories end in `user_annotation"`.
pub fn prefilter() -> Prefilter {
    annotation_prefilter()
}

/// Where a context's GPU span comes from (`--gpu-span`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum GpuSpanSource {
    /// Its GPU annotations when it has any, else launch correlation.
    #[default]
    Auto,
    /// Its GPU annotations only.
    Annotation,
    /// Launch correlation only.
    Correlation,
}

impl GpuSpanSource {
    pub fn as_str(self) -> &'static str {
        match self {
            GpuSpanSource::Auto => "auto",
            GpuSpanSource::Annotation => "annotation",
            GpuSpanSource::Correlation => "correlation",
        }
    }
}

/// Options of pairing.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct PairSpec {
    /// Where a context's GPU span comes from: its GPU annotations when it
    /// has any, else its launches' GPU work by correlation (auto); GPU
    /// annotations only; or launch correlation only.
    #[cfg_attr(
        feature = "cli",
        arg(long, value_enum, default_value_t = GpuSpanSource::Auto, value_name = "SOURCE")
    )]
    pub gpu_span: GpuSpanSource,
}

impl Configures for PairSpec {
    type Analysis = Pair;
}

/// Pairing as an [`Analysis`]: keeps the `gpu_user_annotation` events (the
/// CPU step annotations are the driver's [`Steps`]) and finishes into
/// [`TracePairs`]. Spans by launch correlation come from the driver's
/// ledger: always with `--gpu-span correlation`, and with `auto` only when
/// some selected context has no GPU annotation (a fully annotated trace
/// costs what pairing alone costs).
#[derive(Debug, Default)]
pub struct Pair {
    names: Interner,
    /// Kept as a varint stream while reading, decoded at the finish.
    gpu: Records<Annotation>,
    mode: GpuSpanSource,
    /// Complete GPU annotations without a `ts`: not paired, noted.
    gpu_no_ts: u64,
}

impl Analysis for Pair {
    const NAME: &'static str = "pair";
    const KEY: &'static str = "pairs";
    type Config = PairSpec;
    type Output = TracePairs;

    fn start(config: &PairSpec) -> Self {
        Pair {
            mode: config.gpu_span,
            ..Pair::default()
        }
    }

    fn ledger(config: &PairSpec) -> Need {
        match config.gpu_span {
            GpuSpanSource::Annotation => Need::No,
            GpuSpanSource::Auto => Need::OnDemand,
            GpuSpanSource::Correlation => Need::Yes,
        }
    }

    /// Some context lacks a GPU annotation: measure it by correlation.
    fn wants_ledger(_: &PairSpec, out: &TracePairs) -> bool {
        out.pairs < out.contexts
    }

    fn set_tokens(out: &mut TracePairs, tokens: Option<u64>, source: Option<&str>) {
        out.set_tokens(tokens, source.map(str::to_string));
    }

    /// Pair's keys are the trace entry's own (less `path` and `error`,
    /// which the entry gives).
    fn in_results(p: &TracePairs) -> InResults {
        let mut m = match serde_json::to_value(p) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        m.remove("path");
        m.remove("error");
        InResults::Flattened(m)
    }

    fn prefilter(&self) -> Prefilter {
        annotation_prefilter()
    }

    fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        if ev.is_complete() && ev.cat == "gpu_user_annotation" {
            let a = Annotation::of(ev, at, &mut self.names);
            self.gpu.push(&a);
        } else if ev.ph == "X" && ev.ts.is_none() && ev.cat == "gpu_user_annotation" {
            self.gpu_no_ts += 1;
        }
    }

    fn finish(mut self, trace: &Finished<'_>) -> TracePairs {
        let spans = trace.ledger.map(|l| correlation_spans_of(trace, l));
        let gpu = std::mem::take(&mut self.gpu);
        let mut r = self.figures(trace, gpu, spans.as_deref());
        r.events = trace.events;
        r.meta = trace.meta.clone();
        if let Some(n) = time_unit_note(trace.meta) {
            r.notes.push(n);
        }
        r.notes.extend(trace.meta.notes.iter().cloned());
        if trace.steps.no_ts > 0 || self.gpu_no_ts > 0 {
            r.notes.push(format!(
                "missing or null \"ts\": {} CPU and {} GPU user annotation(s) have no start time: not counted as contexts or paired",
                trace.steps.no_ts, self.gpu_no_ts
            ));
        }
        if let Some(e) = trace.error_text() {
            r.complete = false;
            r.error = Some(e);
        }
        r
    }
}

/// Each selected context's GPU span by launch correlation (same contexts,
/// same order), attributed as `kernels` does: each launch call in the
/// innermost context holding it, launch scope `auto`.
fn correlation_spans_of(trace: &Finished<'_>, ledger: &Ledger) -> Vec<Option<i64>> {
    let qs = attribution::context_queries(trace.steps, trace.contexts, ledger, LaunchScope::Auto);
    // Each work folded into its span as it comes: no `Work` per context is
    // held (≈ 210 B each, 5 MB of `batch`'s peak at 800 sample copies).
    let mut spans = Vec::with_capacity(qs.len());
    attribution::attribute_each(ledger, &qs, |_, w| {
        spans.push(w.span().and_then(|s| i64::try_from(s).ok()));
    });
    spans
}

/// The Chrome trace format defines `ts` and `dur` in µs whatever
/// `displayTimeUnit` says (`ms` or `ns`, for display only); another unit
/// there is named, since the writer may have meant it.
fn time_unit_note(meta: &Meta) -> Option<String> {
    let unit = meta.display_time_unit.as_deref()?;
    (!matches!(unit, "ms" | "ns")).then(|| {
        format!(
            "displayTimeUnit {:?} is not one the trace format knows (ms, ns): ts and dur are read as µs, as the format defines",
            unit.chars().take(40).collect::<String>()
        )
    })
}

/// Reads one trace for `pair` with the GPU-span source `mode` (`auto`:
/// a second read with the ledger only when some context needs it, see
/// [`Pair`]).
pub fn analyze_path(
    path: &Path,
    progress: Arc<AtomicU64>,
    selector: &Selector,
    mode: GpuSpanSource,
) -> TraceResult {
    let plan = Plan::new(selector.clone()).with(PairSpec { gpu_span: mode });
    analysis::analyze_path(path, progress, &plan)
}

impl Pair {
    /// Pairs the selected contexts with their GPU annotations, takes spans
    /// by launch correlation where the mode says, and measures.
    /// `by_correlation`: the kernels analysis's per-context rows (same
    /// contexts, same order), when it ran earlier in the plan.
    fn figures(
        &self,
        trace: &Finished<'_>,
        gpu: Records<Annotation>,
        by_correlation: Option<&[Option<i64>]>,
    ) -> TracePairs {
        let (steps, contexts) = (trace.steps, trace.contexts);
        let gpu = self.gpu_index(gpu, steps, contexts);
        let (mut rows, unfinished, cpu_keys, silent) = context_rows(steps, contexts, &gpu.by_key);
        if let Some(k) = by_correlation.filter(|_| self.mode != GpuSpanSource::Annotation) {
            correlation_spans(&mut rows, k, self.mode);
        }
        let gpu_unpaired = gpu
            .by_key
            .groups()
            .filter(|(k, _)| cpu_keys.get(k).is_empty())
            .map(|(_, v)| v.len() as u64)
            .sum::<u64>()
            + gpu.without_id;
        let mut r = measure(trace.path, contexts, rows);
        r.gpu_span_mode = self.mode;
        r.gpu_unpaired = gpu_unpaired;
        r.unfinished = unfinished;
        if unfinished > 0 {
            r.notes.push(format!(
                "{unfinished} context(s) were still open when the profiler stopped (\"finished\": false): counted, but their CPU span is cut short"
            ));
        }
        if let Some(n) = span_note(&r, steps, contexts, by_correlation.is_some()) {
            r.notes.push(n);
        }
        let nested = contexts.nested_on_thread(steps);
        if nested > 0 {
            r.notes.push(nesting_note(nested, contexts.len()));
        }
        r.notes
            .extend(silent.notes(gpu.bad_dur, steps.begin_events));
        r.notes
            .extend(crate::model::cut_note(&steps.names, "annotation"));
        r
    }

    /// GPU annotations of the selected names, by (name, External id).
    /// The stream is decoded as it is indexed: only a selected
    /// annotation's key and span are kept (40 B, not 56 B + 32 B).
    fn gpu_index(
        &self,
        gpu: Records<Annotation>,
        steps: &Steps,
        contexts: &Contexts,
    ) -> GpuIndex<'_> {
        let mut keyed = Vec::new();
        let mut without_id = 0u64;
        let mut bad_dur = 0u64;
        for g in gpu.drain() {
            let name = self.names.resolve(g.name);
            if !contexts.selects(steps, name) {
                continue;
            }
            bad_dur += u64::from(g.bad_dur);
            match g.external_id {
                Some(id) => keyed.push(((name, id), Span::of(&g))),
                None => without_id += 1,
            }
        }
        GpuIndex {
            by_key: Grouped::new(keyed),
            without_id,
            bad_dur,
        }
    }
}

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(test)]
mod tests;
