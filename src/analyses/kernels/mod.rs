//! GPU work per step by launch→activity correlation (`torchtrace kernels`),
//! and the whole-trace GPU timeline.
//!
//! The step annotation's own GPU annotation disappears under torch.compile
//! (Kineto projects only the innermost user range, `## Call CompiledFxGraph
//! … ##`, onto the GPU), but every launch call the step makes still carries
//! a `correlation` that its kernels, memcpys and memsets share, CUDA-graph
//! replays included. The [`ledger`] follows that link for any CPU range;
//! this module summarises it over the step contexts. Definitions:
//! docs/DEFINITIONS.md, "GPU work by launch correlation".

pub(crate) mod timeline;

pub(crate) mod batch;
mod figure;
pub mod view;

use crate::analysis::{Analysis, Configures, Finished, InResults, Need};
use crate::graphs::replay::GraphView;
use crate::ledger::attribution::{self, LaunchScope, Overlaps, Query};
use crate::ledger::pack::{Fields, Packed, Record};
use crate::ledger::{self, Kind, Ledger, Work};
use crate::model::{Ns, Sym};
use crate::rows::{self, Rows};
use crate::stats::{Exact, ExactSummary, Multiset, Summary};
use crate::trace::{Event, EventPos, Prefilter};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashMap;
pub use timeline::Timeline;

/// How many kernels `top_kernels` lists by default.
pub const DEFAULT_TOP: usize = 10;

/// Options of the kernels analysis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct KernelsSpec {
    /// How many kernels to list per trace.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = DEFAULT_TOP, value_name = "N"))]
    pub top: usize,
    /// Which launch calls a context holds: those of its own thread, or of
    /// any thread of its process inside its window (training steps launch
    /// the backward pass from the autograd thread).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_enum, default_value_t = LaunchScope::Auto, value_name = "SCOPE")
    )]
    pub launch_scope: LaunchScope,
}

impl Default for KernelsSpec {
    fn default() -> Self {
        KernelsSpec {
            top: DEFAULT_TOP,
            launch_scope: LaunchScope::Auto,
        }
    }
}

impl Configures for KernelsSpec {
    type Analysis = Kernels;
}

/// The kernels analysis: summarises the driver's ledger (launch calls and
/// GPU activities) over the step contexts, and the whole-trace timeline.
pub struct Kernels {
    top: usize,
    scope: LaunchScope,
}

impl Analysis for Kernels {
    const NAME: &'static str = "kernels";
    const KEY: &'static str = "kernels";
    type Config = KernelsSpec;
    type Output = TraceKernels;

    fn start(config: &KernelsSpec) -> Self {
        Kernels {
            top: config.top,
            scope: config.launch_scope,
        }
    }

    fn ledger(_: &KernelsSpec) -> Need {
        Need::Yes
    }

    fn prefilter(&self) -> Prefilter {
        ledger::prefilter()
    }

    /// Everything it reads is in the driver's ledger.
    fn push(&mut self, _ev: &Event<'_>, _at: EventPos) {}

    fn set_tokens(out: &mut TraceKernels, tokens: Option<u64>, source: Option<&str>) {
        out.set_tokens(tokens, source.map(str::to_string));
    }

    /// Under `kernels`, less what the trace entry (and pair's keys) say.
    fn in_results(k: &TraceKernels) -> InResults {
        let mut v = serde_json::to_value(k).unwrap_or(serde_json::Value::Null);
        if let serde_json::Value::Object(m) = &mut v {
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
        InResults::Nested(v)
    }

    fn finish(self, trace: &Finished<'_>) -> TraceKernels {
        let empty = Ledger::default();
        let ledger = trace.ledger.unwrap_or(&empty);
        let mut k = summarize(trace, ledger, self.top, self.scope);
        // Inside the graphs (issue 57): every replay of the trace.
        let (caps, replays) = crate::graphs::replay::of_trace(trace, ledger);
        k.inside_graphs = GraphView::of(&caps, ledger, &replays, |_| true);
        if let Some(g) = &k.inside_graphs {
            k.notes.extend(g.summary.said());
        }
        if let Some(e) = trace.error_text() {
            k.complete = false;
            k.error = Some(e);
        }
        k
    }
}

/// One selected context's GPU work (`--per-context`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelRow {
    pub start_ns: i64,
    pub cpu_ns: i64,
    pub launches: u64,
    pub graph_launches: u64,
    pub kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    pub gpu_span_ns: Option<i64>,
    pub gpu_busy_ns: Option<i64>,
    /// Median queue delay (first activity start − launch call end, ≥ 0)
    /// over its launch calls; a half-integer for an even count.
    pub launch_latency_ns: Option<f64>,
    /// Median of activity start − launch call start over its activities.
    #[serde(default)]
    pub launch_to_activity_start_ns: Option<f64>,
    /// The launch scope the context used: `thread` or `process`.
    #[serde(default)]
    pub launch_scope: Cow<'static, str>,
}

/// A row as [`Rows`] keeps it: Δstart, cpu, the five counts, the two
/// optional spans, the two medians, the scope (`thread`: 0, `process`: 1,
/// else its text).
impl Record for KernelRow {
    /// The previous row's start.
    type Prev = i64;
    const MAX_BYTES: usize = 192;

    fn write(&self, prev: &mut i64, p: &mut Packed) {
        p.delta(self.start_ns, *prev);
        *prev = self.start_ns;
        p.delta(self.cpu_ns, 0);
        rows::write_counts(
            p,
            &[
                self.launches,
                self.graph_launches,
                self.kernels,
                self.memcpys,
                self.memsets,
            ],
        );
        rows::write_opts(p, &[self.gpu_span_ns, self.gpu_busy_ns]);
        rows::write_f64(p, self.launch_latency_ns);
        rows::write_f64(p, self.launch_to_activity_start_ns);
        match self.launch_scope.as_ref() {
            "thread" => p.u(0),
            "process" => p.u(1),
            other => {
                p.u(2);
                rows::write_str(p, other);
            }
        }
    }

    fn read(prev: &mut i64, f: &mut impl Fields) -> KernelRow {
        let start_ns = f.delta(*prev);
        *prev = start_ns;
        let cpu_ns = f.delta(0);
        let [launches, graph_launches, kernels, memcpys, memsets] = rows::read_counts(f);
        let [gpu_span_ns, gpu_busy_ns] = rows::read_opts(f);
        let launch_latency_ns = rows::read_f64(f);
        let launch_to_activity_start_ns = rows::read_f64(f);
        let launch_scope = match f.u() {
            0 => Cow::Borrowed("thread"),
            1 => Cow::Borrowed("process"),
            _ => Cow::Owned(rows::read_str(f)),
        };
        KernelRow {
            start_ns,
            cpu_ns,
            launches,
            graph_launches,
            kernels,
            memcpys,
            memsets,
            gpu_span_ns,
            gpu_busy_ns,
            launch_latency_ns,
            launch_to_activity_start_ns,
            launch_scope,
        }
    }
}

/// One kernel name among the contexts' kernels.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TopKernel {
    pub name: String,
    pub calls: u64,
    pub calls_per_context: Option<f64>,
    pub total_ms: f64,
    pub share_pct: Option<f64>,
    pub median_us: f64,
}

/// The kernels figures of one trace (JSON keys as docs/COMMANDS.md
/// documents them).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceKernels {
    pub path: String,
    pub context: String,
    pub contexts: u64,
    pub contexts_with_gpu_work: u64,
    pub completion_tokens: Option<u64>,
    pub tokens_source: Option<String>,
    pub launches: u64,
    pub graph_launches: u64,
    pub kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    pub kernels_per_context: Summary,
    pub kernels_per_token: Option<f64>,
    pub gpu_span_ms: Summary,
    pub gpu_busy_ms: Summary,
    pub gpu_idle_ms: Summary,
    /// Over the contexts' median queue delays (launch call end → first
    /// activity start, clipped at 0).
    pub launch_latency_ms: Summary,
    /// Over the contexts' medians of activity start − launch call start
    /// (every activity, graph members included).
    #[serde(default)]
    pub launch_to_activity_start_ms: Summary,
    /// Launch scope: `thread`, `process`, or `auto (thread: n, process: m)`
    /// when `auto` resolved per context.
    #[serde(default)]
    pub launch_scope: String,
    pub gpu_span_per_token_ms: Option<f64>,
    pub gpu_busy_per_token_ms: Option<f64>,
    pub top_kernels: Vec<TopKernel>,
    pub timeline: Timeline,
    /// Inside the graphs (issue 57): every graph replay of the trace
    /// matched to its capture, and the attributed GPU time split by
    /// module class and launcher op, per completion token; absent when the
    /// trace has no graph replay and no capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inside_graphs: Option<GraphView>,
    pub notes: Vec<String>,
    pub complete: bool,
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub rows: Rows<KernelRow>,
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub sums: Sums,
}

/// Exact sums over the contexts with GPU work, for per-token figures and
/// comparisons.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sums {
    pub kernels: u64,
    pub span_ns: i128,
    pub busy_ns: i128,
}

/// Summarises the ledger over the trace's selected contexts. Each
/// context's work is folded into its row and the figures' inputs as the
/// attribution hands it over ([`Fold`]): no `Work` per context is held
/// (≈ 210 B each, 5 MB at 800 copies of the benchmark trace).
fn summarize(
    trace: &Finished<'_>,
    ledger: &Ledger,
    top: usize,
    scope: LaunchScope,
) -> TraceKernels {
    let qs = attribution::context_queries(trace.steps, trace.contexts, ledger, scope);
    let ctx: Vec<(Ns, Ns)> = trace
        .contexts
        .iter(trace.steps)
        .map(|c| (c.start, c.dur))
        .collect();
    let mut fold = Fold::default();
    let mut rows = Rows::default();
    let overlaps = attribution::attribute_each(ledger, &qs, |q, w| {
        let (start, dur) = ctx[q];
        rows.push(&row(start, dur, &w, qs[q].scope));
        fold.add(ledger, &w);
    });
    drop(ctx);
    rows.shrink();
    let mut k = figures(trace, &fold, rows);
    k.launch_scope = scope_label(scope, &qs);
    k.top_kernels = top_kernels(ledger, fold.by_name, fold.measured, top, k.sums.busy_ns);
    let activities = ledger.activities.len() as u64;
    k.timeline = timeline::of(ledger)
        .map(|t| t.to_ms(activities))
        .unwrap_or_default();
    k.notes = notes(trace, ledger, qs.len(), fold.without, overlaps.nested);
    k.notes.extend(overlap_notes(&overlaps, qs.len()));
    k
}

/// What the figures need of the contexts' works, gathered one work at a
/// time. `measured`: the contexts with GPU work, which every figure is
/// over; a value that does not fit i64 ns is left out of its statistics.
#[derive(Default)]
struct Fold {
    measured: u64,
    /// Contexts without GPU work.
    without: u64,
    launches: u64,
    graph_launches: u64,
    memcpys: u64,
    memsets: u64,
    spans: Vec<Ns>,
    busy: Vec<Ns>,
    idle: Vec<Ns>,
    kernel_counts: Vec<Ns>,
    latencies: Vec<Exact>,
    to_start: Vec<Exact>,
    sums: Sums,
    /// Each kernel name's durations (attribution gives each activity to
    /// one context: no deduplication).
    by_name: HashMap<Sym, Multiset>,
}

impl Fold {
    fn add(&mut self, ledger: &Ledger, w: &Work) {
        if !w.has_gpu_work() {
            self.without += 1;
            return;
        }
        let ns = |v: i128| i64::try_from(v).ok().map(Ns);
        let span = w.span().unwrap_or(0);
        self.measured += 1;
        self.launches += w.launches;
        self.graph_launches += w.graph_launches;
        self.memcpys += w.memcpys;
        self.memsets += w.memsets;
        self.spans.extend(ns(span));
        self.busy.extend(ns(w.busy));
        self.idle.extend(ns(span - w.busy));
        self.kernel_counts.extend(ns(i128::from(w.kernels)));
        self.latencies.extend(w.latency_median);
        self.to_start.extend(w.start_latency_median);
        self.sums.kernels += w.kernels;
        self.sums.span_ns += span;
        self.sums.busy_ns += w.busy;
        for a in w.activities(ledger).filter(|a| a.kind == Kind::Kernel) {
            self.by_name
                .entry(a.name)
                .or_default()
                .push(a.end.0 - a.start.0);
        }
    }
}

/// The scope used: the one given, or what `auto` resolved to.
fn scope_label(scope: LaunchScope, qs: &[Query]) -> String {
    if scope != LaunchScope::Auto {
        return scope.as_str().into();
    }
    let process = qs
        .iter()
        .filter(|q| q.scope == LaunchScope::Process)
        .count();
    match (process, qs.len() - process) {
        (0, _) => "thread".into(),
        (_, 0) => "process".into(),
        (p, t) => format!("auto (thread: {t}, process: {p})"),
    }
}

/// Says when selected contexts nest or overlap, and what was done.
fn overlap_notes(o: &Overlaps, contexts: usize) -> Vec<String> {
    let mut n = Vec::new();
    if o.nested > 0 {
        n.push(format!(
            "{} of {contexts} selected contexts lie inside another selected context: each launch call (and its GPU work) is counted once, in the innermost context holding it (the latest to start; ties: the earliest to end, then the later in the file), so an enclosing context keeps only the work launched outside its inner ones",
            o.nested
        ));
    }
    if o.partial > 0 {
        n.push(format!(
            "{} selected contexts overlap another partially (neither holds the other; vLLM never writes this): a launch call in both goes to the one that starts later",
            o.partial
        ));
    }
    if o.across_scopes > 0 {
        n.push(format!(
            "{} launch call(s) lie both in a process-scope context and in a thread-scope one: each is counted in the one that starts later",
            o.across_scopes
        ));
    }
    n
}

fn row(start: Ns, dur: Ns, w: &Work, scope: LaunchScope) -> KernelRow {
    KernelRow {
        start_ns: start.0,
        cpu_ns: dur.0,
        launches: w.launches,
        graph_launches: w.graph_launches,
        kernels: w.kernels,
        memcpys: w.memcpys,
        memsets: w.memsets,
        gpu_span_ns: w.span().and_then(|s| i64::try_from(s).ok()),
        gpu_busy_ns: w
            .has_gpu_work()
            .then(|| i64::try_from(w.busy).ok())
            .flatten(),
        launch_latency_ns: w.latency_median.map(Exact::ns),
        launch_to_activity_start_ns: w.start_latency_median.map(Exact::ns),
        launch_scope: Cow::Borrowed(scope.as_str()),
    }
}

/// Counts and statistics over the contexts with GPU work.
fn figures(trace: &Finished<'_>, f: &Fold, rows: Rows<KernelRow>) -> TraceKernels {
    TraceKernels {
        path: trace.path.to_string(),
        context: trace.contexts.name.clone(),
        contexts: trace.contexts.len() as u64,
        contexts_with_gpu_work: f.measured,
        completion_tokens: None,
        tokens_source: None,
        launches: f.launches,
        graph_launches: f.graph_launches,
        kernels: f.sums.kernels,
        memcpys: f.memcpys,
        memsets: f.memsets,
        kernels_per_context: counts_summary(&f.kernel_counts),
        kernels_per_token: None,
        gpu_span_ms: Summary::of(&f.spans),
        gpu_busy_ms: Summary::of(&f.busy),
        gpu_idle_ms: Summary::of(&f.idle),
        launch_latency_ms: exact_summary_ms(&f.latencies),
        launch_to_activity_start_ms: exact_summary_ms(&f.to_start),
        launch_scope: String::new(),
        gpu_span_per_token_ms: None,
        gpu_busy_per_token_ms: None,
        top_kernels: Vec::new(),
        timeline: Timeline::default(),
        inside_graphs: None,
        notes: Vec::new(),
        complete: true,
        error: None,
        rows,
        sums: f.sums,
    }
}

/// Summary statistics of counts (values as they are, not ms).
fn counts_summary(values: &[Ns]) -> Summary {
    let Some(s) = ExactSummary::of(values) else {
        return Summary::default();
    };
    Summary {
        count: s.count,
        median: Some(s.median.ns()),
        mean: Some(s.mean.ns()),
        p10: Some(s.p10.ns()),
        p90: Some(s.p90.ns()),
        min: Some(s.min.0 as f64),
        max: Some(s.max.0 as f64),
        sum: Some(s.sum as f64),
    }
}

/// Summary statistics (in ms) of exact rationals such as per-context
/// medians: every value is scaled to a common denominator first.
fn exact_summary_ms(values: &[Exact]) -> Summary {
    // Per-context medians are integers or half-integers: work in half-ns.
    let halves: Vec<Ns> = values
        .iter()
        .filter_map(|e| i64::try_from(e.num * 2 / e.den).ok().map(Ns))
        .collect();
    let Some(s) = ExactSummary::of(&halves) else {
        return Summary::default();
    };
    let half = |e: Exact| {
        Exact {
            num: e.num,
            den: e.den * 2,
        }
        .ms()
    };
    Summary {
        count: s.count,
        median: Some(half(s.median)),
        mean: Some(half(s.mean)),
        p10: Some(half(s.p10)),
        p90: Some(half(s.p90)),
        min: Some(half(Exact::int(s.min.0))),
        max: Some(half(Exact::int(s.max.0))),
        sum: Some(half(Exact { num: s.sum, den: 1 })),
    }
}

/// The kernels of the contexts (each activity in one context), by name,
/// from their durations gathered by [`Fold`] over `contexts` contexts.
///
/// Each name's durations are an exact multiset ([`Multiset`]): the median
/// is exact and memory follows the distinct durations, not the launches.
fn top_kernels(
    ledger: &Ledger,
    by_name: HashMap<Sym, Multiset>,
    contexts: u64,
    top: usize,
    busy: i128,
) -> Vec<TopKernel> {
    let contexts = contexts as f64;
    let mut out: Vec<(i128, TopKernel)> = by_name
        .into_iter()
        .map(|(name, mut durs)| {
            let total = durs.sum();
            let calls = durs.len();
            let k = TopKernel {
                name: ledger.names.resolve(name).to_string(),
                calls,
                calls_per_context: (contexts > 0.0).then(|| calls as f64 / contexts),
                total_ms: Exact { num: total, den: 1 }.ms(),
                share_pct: (busy > 0).then(|| (total * 100) as f64 / busy as f64),
                // Never empty: an entry exists once a duration is pushed.
                median_us: durs.median().map_or(0.0, |m| m.ns() / 1e3),
            };
            (total, k)
        })
        .collect();
    out.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    out.into_iter().take(top).map(|(_, k)| k).collect()
}

/// Notes on what a user might otherwise misread.
fn notes(
    trace: &Finished<'_>,
    ledger: &Ledger,
    contexts: usize,
    without: u64,
    nested: u64,
) -> Vec<String> {
    let mut notes = trace.meta.notes.clone();
    if ledger.shared_correlations() > 0 {
        notes.push(format!(
            "{} correlation id(s) are used by launch calls of more than one process: the GPU activities of each are given to its first launch in the file (an activity does not say which process launched it)",
            ledger.shared_correlations()
        ));
    }
    if contexts > 0 && without > 0 {
        // With nested contexts an outer one may have launched work that
        // its selected inner contexts own: say so rather than "none".
        let why = match nested {
            0 => "launched no GPU work that the trace recorded",
            _ => "have no GPU work of their own (none recorded, or all of it launched inside selected inner contexts)",
        };
        notes.push(format!("{without} of {contexts} step contexts {why}"));
    }
    if ledger.launch_calls() == 0 && !ledger.activities.is_empty() {
        notes.push(
            "the trace has GPU activities but no runtime/driver launch calls with a correlation: no GPU work can be attributed to CPU ranges"
                .into(),
        );
    }
    if trace.contexts.is_empty() {
        notes.push("no step contexts: per-context figures are empty".into());
    }
    notes.extend(crate::model::cut_note(&ledger.names, "kernel and launch"));
    notes
}

impl TraceKernels {
    /// Adds the completion-token figures (Σ over contexts / tokens).
    pub fn set_tokens(&mut self, tokens: Option<u64>, source: Option<String>) {
        self.completion_tokens = tokens;
        self.tokens_source = source;
        let t = tokens.filter(|&t| t > 0).map(i128::from);
        let per = |num: i128| t.map(|den| Exact { num, den });
        self.kernels_per_token = per(i128::from(self.sums.kernels)).map(Exact::ns);
        self.gpu_span_per_token_ms = per(self.sums.span_ns).map(Exact::ms);
        self.gpu_busy_per_token_ms = per(self.sums.busy_ns).map(Exact::ms);
        if let Some(g) = &mut self.inside_graphs {
            crate::graphs::replay::per_token(&mut g.split, t.map(|t| (1, t)));
        }
    }

    fn per_token(&self, num: i128) -> Option<Exact> {
        let t = self.completion_tokens.filter(|&t| t > 0)?;
        Some(Exact {
            num,
            den: i128::from(t),
        })
    }
}

/// AR (baseline) against MTP (candidate) by correlation.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Comparison {
    pub baseline: String,
    pub candidate: String,
    /// Σ GPU span by launch correlation per token, baseline / candidate:
    /// Eq. 17 with every context's span from its launches' activities, as
    /// `pair --gpu-span correlation` gives it. Not named `s_context`: that
    /// is `pair`'s figure, whose spans come from the GPU annotations when a
    /// context has them (issue 37: 2.77259 against 2.77679 on one
    /// reasoning pair; the 7th digit on the samples).
    pub s_context_correlation: Option<f64>,
    /// The same with Σ GPU busy (union of the activities) for Σ GPU span.
    pub s_context_busy: Option<f64>,
    pub kernels_per_token_ratio: Option<f64>,
}

/// Compares two traces' kernels figures (ratios of exact values).
pub fn compare(base: &TraceKernels, cand: &TraceKernels) -> Comparison {
    let ratio = crate::stats::ratio;
    let span = |t: &TraceKernels| t.per_token(t.sums.span_ns);
    let busy = |t: &TraceKernels| t.per_token(t.sums.busy_ns);
    let kernels = |t: &TraceKernels| t.per_token(i128::from(t.sums.kernels));
    Comparison {
        baseline: base.path.clone(),
        candidate: cand.path.clone(),
        s_context_correlation: ratio(span(base), span(cand)),
        s_context_busy: ratio(busy(base), busy(cand)),
        kernels_per_token_ratio: ratio(kernels(cand), kernels(base)),
    }
}

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(test)]
mod tests;
