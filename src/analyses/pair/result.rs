//! `pair`'s results: one trace's figures ([`TracePairs`], its context rows
//! and span sources), their pool over a workload's runs ([`pool`]) and the
//! comparison of a baseline with a candidate ([`compare`]).

use super::*;

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

/// The figures of one trace (JSON keys as docs/COMMANDS.md documents them).
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
