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
pub mod view;

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

/// Where one context's GPU span came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpanSource {
    /// Its `gpu_user_annotation`s.
    Annotation,
    /// Its launches' GPU work, by correlation.
    Correlation,
}

/// How many contexts got their GPU span from each source.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SpanSources {
    pub annotation: u64,
    pub correlation: u64,
}

/// One selected context, for timelines and plots.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ContextRow {
    /// Index of the CPU annotation in `traceEvents`.
    pub event_index: u64,
    pub start_ns: i64,
    pub cpu_ns: i64,
    /// GPU span, when the context got one.
    pub gpu_ns: Option<i64>,
    pub gpu_annotations: usize,
    /// Where the GPU span came from: `annotation` or `correlation`.
    pub gpu_source: Option<SpanSource>,
}

/// The figures of one trace (JSON keys as documented in README).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TracePairs {
    pub path: String,
    /// The selected step name, or the regex/exact name given.
    pub context: String,
    /// How contexts were chosen: `auto`, `exact` or `regex`.
    pub context_selector: std::borrow::Cow<'static, str>,
    pub contexts: u64,
    pub pairs: u64,
    pub cpu_unpaired: u64,
    pub gpu_unpaired: u64,
    pub multi_stream_pairs: u64,
    /// Contexts still open when the profiler stopped (`"finished": false`);
    /// they are counted, but their CPU span is cut short.
    pub unfinished: u64,
    /// `--gpu-span`: auto, annotation or correlation.
    pub gpu_span_mode: GpuSpanSource,
    /// Contexts that got a GPU span (from either source): P, the span
    /// statistics and the span per token are over these.
    pub measured: u64,
    pub gpu_span_sources: SpanSources,
    pub completion_tokens: Option<u64>,
    pub tokens_source: Option<String>,
    pub tokens_per_context: Option<f64>,
    pub cpu_span_ms: Summary,
    pub gpu_span_ms: Summary,
    pub gpu_span_per_token_ms: Option<f64>,
    /// Σ GPU spans over the measured contexts, exact ns.
    pub gpu_span_sum_ns: i128,
    pub step_names: Vec<StepName>,
    pub events: u64,
    pub meta: Meta,
    pub notes: Vec<String>,
    /// False when the file could not be read to its end; the figures then
    /// cover the events before the problem, and `error` says what it was.
    pub complete: bool,
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub rows: Vec<ContextRow>,
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub gpu_exact: Option<ExactSummary>,
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub cpu_exact: Option<ExactSummary>,
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

/// A pairing key: (annotation name, External id).
type Key<'a> = (&'a str, i64);

/// Values grouped by key: one array sorted by key (file order kept within
/// a key), looked up by binary search. A hash map of `String` keys to small
/// vectors cost ≈ 200 B per key, 9 MB of `pair`'s peak at 800 copies of the
/// benchmark trace (48,000 GPU annotations); this costs 24 B per key and
/// the value.
struct Grouped<'a, T> {
    keys: Vec<Key<'a>>,
    vals: Vec<T>,
}

impl<'a, T> Grouped<'a, T> {
    fn new(mut pairs: Vec<(Key<'a>, T)>) -> Self {
        // Stable: a key's values stay in the order they came.
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        let keys = pairs.iter().map(|p| p.0).collect();
        // Collected in place (the pairs' memory holds the values), then
        // the rest given back: the pairs and an unzipped copy of both
        // halves were held at once before.
        let mut vals: Vec<T> = pairs.into_iter().map(|p| p.1).collect();
        vals.shrink_to_fit();
        Grouped { keys, vals }
    }

    /// The values of `key`, in the order they came (empty if none).
    fn get(&self, key: &Key<'_>) -> &[T] {
        let lo = self.keys.partition_point(|k| k < key);
        let n = self.keys[lo..].partition_point(|k| k == key);
        &self.vals[lo..lo + n]
    }

    /// Each key with its values, in key order.
    fn groups(&self) -> impl Iterator<Item = (Key<'a>, &[T])> + '_ {
        let mut at = 0;
        self.keys.chunk_by(|a, b| a == b).map(move |ks| {
            let vals = &self.vals[at..at + ks.len()];
            at += ks.len();
            (ks[0], vals)
        })
    }
}

/// The selected names' GPU annotations, keyed for pairing.
struct GpuIndex<'a> {
    by_key: Grouped<'a, Span>,
    without_id: u64,
    /// Selected GPU annotations whose `dur` was missing or negative.
    bad_dur: u64,
}

/// What pairing decided without a word in the figures, for notes.
#[derive(Debug, Default)]
struct Silent {
    /// External ids held by several selected contexts, those contexts,
    /// and the GPU annotations shared out among them.
    shared_ids: u64,
    sharing_contexts: u64,
    shared_annotations: u64,
    /// Selected contexts whose `dur` was missing or negative.
    bad_dur: u64,
    /// Contexts whose GPU span does not fit in i64 ns: not measured.
    too_long: u64,
}

impl Silent {
    fn notes(&self, gpu_bad_dur: u64, begin_events: u64) -> Vec<String> {
        let mut n = Vec::new();
        if self.shared_ids > 0 {
            n.push(format!(
                "{} External id(s) are held by {} selected contexts: each of their {} GPU annotations was given to one context, the latest to start at or before it (else the first)",
                self.shared_ids, self.sharing_contexts, self.shared_annotations
            ));
        }
        if self.bad_dur > 0 || gpu_bad_dur > 0 {
            n.push(format!(
                "missing or negative \"dur\" taken as 0: {} selected context(s), {} GPU annotation(s)",
                self.bad_dur, gpu_bad_dur
            ));
        }
        if self.too_long > 0 {
            n.push(format!(
                "{} context(s) have a GPU span beyond i64 nanoseconds: not measured",
                self.too_long
            ));
        }
        if begin_events > 0 {
            n.push(format!(
                "{begin_events} B/E user annotation range(s) (ph \"B\"/\"E\") are not supported: ignored"
            ));
        }
        n
    }
}

/// One row per selected context (sorted by start), the unfinished count,
/// the (name, External id) keys the contexts hold, and what was decided
/// silently.
///
/// An External id held by several selected contexts (ids reused, or two
/// profiler sessions in one file): each GPU annotation of that key goes to
/// one context only, the latest of them to start at or before the
/// annotation (GPU work starts after its launch), else the first.
fn context_rows<'s>(
    steps: &'s Steps,
    contexts: &Contexts,
    gpu: &Grouped<'_, Span>,
) -> (Vec<ContextRow>, u64, Grouped<'s, usize>, Silent) {
    let mut rows = Vec::with_capacity(contexts.len());
    let mut unfinished = 0u64;
    let mut silent = Silent::default();
    let key_of =
        |c: &crate::contexts::Annotation| c.external_id.map(|id| (steps.names.resolve(c.name), id));
    // Contexts (positions, by start) holding each key.
    let holders = Grouped::new(
        contexts
            .iter(steps)
            .enumerate()
            .filter_map(|(k, c)| Some((key_of(c)?, k)))
            .collect(),
    );
    // The shares of keys held more than once: context position → annotations.
    let mut shares: HashMap<usize, Vec<Span>> = HashMap::new();
    let starts: Vec<Ns> = contexts.iter(steps).map(|c| c.start).collect();
    for (key, ks) in holders.groups().filter(|(_, ks)| ks.len() > 1) {
        silent.shared_ids += 1;
        silent.sharing_contexts += ks.len() as u64;
        for &g in gpu.get(&key) {
            silent.shared_annotations += 1;
            // `ks` is in start order: one binary search, not a scan, so N
            // contexts sharing one id with N annotations cost N log N.
            let at = ks.partition_point(|&k| starts[k] <= g.start);
            let owner = ks[at.saturating_sub(1)];
            shares.entry(owner).or_default().push(g);
        }
    }
    for (k, c) in contexts.iter(steps).enumerate() {
        unfinished += u64::from(!c.finished);
        silent.bad_dur += u64::from(c.bad_dur);
        let key = key_of(c);
        let shared = key.as_ref().is_some_and(|key| holders.get(key).len() > 1);
        let spans: &[Span] = if shared {
            shares.get(&k).map(Vec::as_slice).unwrap_or(&[])
        } else {
            key.as_ref().map_or(&[], |key| gpu.get(key))
        };
        let span = span_of(spans);
        let gpu_ns = span.and_then(|n| i64::try_from(n).ok());
        silent.too_long += u64::from(span.is_some() && gpu_ns.is_none());
        rows.push(ContextRow {
            event_index: c.index,
            start_ns: c.start.0,
            cpu_ns: c.dur.0,
            gpu_ns,
            gpu_annotations: spans.len(),
            gpu_source: (!spans.is_empty()).then_some(SpanSource::Annotation),
        });
    }
    (rows, unfinished, holders, silent)
}

/// The span statistics over the measured rows.
fn measure(path: &str, contexts: &Contexts, rows: Vec<ContextRow>) -> TracePairs {
    let measured: Vec<&ContextRow> = rows.iter().filter(|r| r.gpu_ns.is_some()).collect();
    let cpu: Vec<Ns> = measured.iter().map(|r| Ns(r.cpu_ns)).collect();
    let gpu: Vec<Ns> = measured.iter().filter_map(|r| r.gpu_ns.map(Ns)).collect();
    let cpu_exact = ExactSummary::of(&cpu);
    let gpu_exact = ExactSummary::of(&gpu);
    let contexts_n = rows.len() as u64;
    let pairs = rows.iter().filter(|r| r.gpu_annotations > 0).count() as u64;
    let from = |src: SpanSource| {
        measured
            .iter()
            .filter(|r| r.gpu_source == Some(src))
            .count() as u64
    };
    let gpu_span_sources = SpanSources {
        annotation: from(SpanSource::Annotation),
        correlation: from(SpanSource::Correlation),
    };
    TracePairs {
        path: path.into(),
        context: contexts.name.clone(),
        context_selector: contexts.selector.kind().into(),
        contexts: contexts_n,
        pairs,
        cpu_unpaired: contexts_n - pairs,
        gpu_unpaired: 0,
        multi_stream_pairs: rows.iter().filter(|r| r.gpu_annotations > 1).count() as u64,
        unfinished: 0,
        gpu_span_mode: GpuSpanSource::Annotation,
        measured: measured.len() as u64,
        gpu_span_sources,
        completion_tokens: None,
        tokens_source: None,
        tokens_per_context: None,
        cpu_span_ms: cpu_exact.as_ref().map(|s| s.to_ms()).unwrap_or_default(),
        gpu_span_ms: gpu_exact.as_ref().map(|s| s.to_ms()).unwrap_or_default(),
        gpu_span_per_token_ms: None,
        gpu_span_sum_ns: gpu.iter().map(|n| i128::from(n.0)).sum(),
        step_names: contexts.step_names.clone(),
        events: 0,
        meta: Meta::default(),
        notes: Vec::new(),
        complete: true,
        error: None,
        rows,
        gpu_exact,
        cpu_exact,
    }
}

/// Replaces or fills the rows' GPU spans with spans by launch correlation:
/// every row in `correlation` mode, rows without a GPU annotation in `auto`.
fn correlation_spans(rows: &mut [ContextRow], by_correlation: &[Option<i64>], mode: GpuSpanSource) {
    for (row, &span) in rows.iter_mut().zip(by_correlation) {
        if mode == GpuSpanSource::Auto && row.gpu_annotations > 0 {
            continue;
        }
        row.gpu_ns = span;
        row.gpu_source = span.map(|_| SpanSource::Correlation);
    }
}

/// Says which rule gave each context its GPU work when step contexts
/// nest on a thread (an enclosing step annotation of long duration):
/// without it a reader cannot tell whether Σ GPU span lost the inner
/// contexts' work or counted it twice (issue 37).
fn nesting_note(nested: u64, contexts: usize) -> String {
    format!(
        "{nested} of {contexts} step contexts lie inside another step context on their thread: each is measured on its own, \
         by its GPU annotations (Kineto's, for the work launched while it was the innermost range) or by launch correlation \
         (each launch call in the innermost context holding it, as `kernels` counts it), so no inner context's GPU work is \
         lost; an enclosing context's GPU span can still cover an inner one's, and Σ GPU span then counts that time in both"
    )
}

/// Says why contexts lack a GPU annotation and where their spans came
/// from, naming the inner user ranges that took the GPU projection.
fn span_note(r: &TracePairs, steps: &Steps, contexts: &Contexts, ledger: bool) -> Option<String> {
    let bare = r.contexts - r.pairs;
    if bare == 0 {
        return None;
    }
    let inner = inner_ranges(steps, contexts);
    let why = if inner.is_empty() {
        String::new()
    } else {
        format!(": their launches sit inside inner user ranges ({inner}), which take the GPU projection")
    };
    let how = match (r.gpu_span_mode, ledger) {
        (GpuSpanSource::Annotation, _) => {
            "; with --gpu-span annotation they are not measured (auto measures them by launch correlation)".to_string()
        }
        (_, true) => format!(
            "; GPU spans come from launch correlation ({} of them measured)",
            r.gpu_span_sources.correlation
        ),
        (_, false) => "; launch correlation was not read, so they are not measured".into(),
    };
    Some(format!(
        "{bare} of {} step contexts have no GPU annotation{why}{how}",
        r.contexts
    ))
}

/// The most frequent user annotations nested inside the contexts without a
/// GPU annotation (same lane), e.g. "`gpu_model_runner: forward` ×30".
///
/// Each inner range counts once, however many contexts hold it: one
/// containment query per annotation ([`Enclosers`], O(n log n)), so many
/// overlapping contexts cannot make this quadratic.
fn inner_ranges(steps: &Steps, contexts: &Contexts) -> String {
    type LaneKey = (crate::model::Sym, crate::model::Sym);
    let mut ctx_by_lane: HashMap<LaneKey, Vec<Iv>> = HashMap::new();
    for c in contexts.iter(steps) {
        ctx_by_lane.entry(c.lane).or_default().push(Iv {
            start: c.start,
            end: c.end(),
            id: c.index,
        });
    }
    let held: HashMap<LaneKey, Enclosers> = ctx_by_lane
        .into_iter()
        .map(|(lane, ivs)| (lane, Enclosers::new(ivs)))
        .collect();
    let mut counts: HashMap<&str, u64> = HashMap::new();
    for a in steps
        .cpu
        .iter()
        .filter(|a| !contexts.selected.contains(&a.name))
    {
        let iv = Iv {
            start: a.start,
            end: a.end(),
            id: a.index,
        };
        if held.get(&a.lane).is_some_and(|e| e.encloses(&iv)) {
            *counts.entry(steps.names.resolve(a.name)).or_default() += 1;
        }
    }
    let mut v: Vec<(&str, u64)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v.iter()
        .take(3)
        .map(|(n, c)| format!("`{}` ×{c}", crate::trace::message::clip_str(n)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What pairing keeps of a GPU annotation: its interval.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: Ns,
    dur: Ns,
}

impl Span {
    fn of(a: &Annotation) -> Span {
        Span {
            start: a.start,
            dur: a.dur,
        }
    }

    /// `start + dur`, exact.
    fn end_exact(&self) -> i128 {
        i128::from(self.start.0) + i128::from(self.dur.0)
    }
}

/// max end − min start over a context's GPU annotations, exact (ends may
/// lie past `i64::MAX`).
fn span_of(spans: &[Span]) -> Option<i128> {
    let start = spans.iter().map(|a| a.start).min()?;
    let end = spans.iter().map(|a| a.end_exact()).max()?;
    Some(end - i128::from(start.0))
}

impl TracePairs {
    /// Adds the completion-token figures (Eq. 15 and 16).
    pub fn set_tokens(&mut self, tokens: Option<u64>, source: Option<String>) {
        self.completion_tokens = tokens;
        self.tokens_source = source;
        match tokens {
            Some(t) if t > 0 => {
                let n = self.measured;
                self.tokens_per_context = (n > 0).then(|| t as f64 / n as f64);
                self.gpu_span_per_token_ms = (n > 0).then(|| {
                    Exact {
                        num: self.gpu_span_sum_ns,
                        den: i128::from(t),
                    }
                    .ms()
                });
            }
            Some(_) => {
                self.tokens_per_context = None;
                self.gpu_span_per_token_ms = None;
                self.notes
                    .push("completion tokens are 0: token figures are null".into());
            }
            None => {
                self.tokens_per_context = None;
                self.gpu_span_per_token_ms = None;
                self.notes.push(
                    "no completion-token count (give --tokens N, --summary FILE, or put <trace>.summary.json beside the trace): token figures are null"
                        .into(),
                );
            }
        }
    }
}

/// Several traces of one mode as one (`batch`'s pooled comparison): Σ
/// tokens (known only when every trace's is), Σ measured contexts, Σ GPU
/// spans, and the span statistics over every measured context. `None`
/// for no trace.
pub fn pool(label: &str, traces: &[&TracePairs]) -> Option<TracePairs> {
    let mut p = (*traces.first()?).clone();
    p.path = label.to_string();
    let rows: Vec<&ContextRow> = traces
        .iter()
        .flat_map(|t| t.rows.iter())
        .filter(|r| r.gpu_ns.is_some())
        .collect();
    let cpu: Vec<Ns> = rows.iter().map(|r| Ns(r.cpu_ns)).collect();
    let gpu: Vec<Ns> = rows.iter().filter_map(|r| r.gpu_ns.map(Ns)).collect();
    p.cpu_exact = ExactSummary::of(&cpu);
    p.gpu_exact = ExactSummary::of(&gpu);
    p.measured = traces.iter().map(|t| t.measured).sum();
    p.gpu_span_sum_ns = traces.iter().map(|t| t.gpu_span_sum_ns).sum();
    p.completion_tokens = traces
        .iter()
        .map(|t| t.completion_tokens)
        .try_fold(0u64, |acc, t| acc.checked_add(t?));
    p.rows = Vec::new();
    Some(p)
}

/// AR (baseline) against MTP (candidate), Eq. 17 and the span ratios.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Comparison {
    pub baseline: String,
    pub candidate: String,
    pub s_context: Option<f64>,
    pub context_reduction_pct: Option<f64>,
    pub gpu_span_median_ratio: Option<f64>,
    pub cpu_span_median_ratio: Option<f64>,
}

/// Compares two traces' figures.
pub fn compare(base: &TracePairs, cand: &TracePairs) -> Comparison {
    let ratio = crate::stats::ratio;
    let per_token = |t: &TracePairs| -> Option<Exact> {
        let tok = t.completion_tokens.filter(|&k| k > 0)?;
        (t.measured > 0).then_some(Exact {
            num: t.gpu_span_sum_ns,
            den: i128::from(tok),
        })
    };
    let p = |t: &TracePairs| -> Option<Exact> {
        let tok = t.completion_tokens.filter(|&k| k > 0)?;
        (t.measured > 0).then_some(Exact {
            num: i128::from(tok),
            den: i128::from(t.measured),
        })
    };
    let median = |s: &Option<ExactSummary>| s.as_ref().map(|s| s.median);
    Comparison {
        baseline: base.path.clone(),
        candidate: cand.path.clone(),
        s_context: ratio(per_token(base), per_token(cand)),
        context_reduction_pct: ratio(p(base), p(cand)).map(|r| (1.0 - r) * 100.0),
        gpu_span_median_ratio: ratio(median(&cand.gpu_exact), median(&base.gpu_exact)),
        cpu_span_median_ratio: ratio(median(&cand.cpu_exact), median(&base.cpu_exact)),
    }
}

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(test)]
mod tests;
