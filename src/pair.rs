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

use crate::model::{Interner, Ns, Sym};
use crate::stats::{Exact, ExactSummary, Summary};
use crate::steps;
use crate::trace::{read_path, read_stream, Event, Meta, Prefilter, TraceError};
use regex::Regex;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// How the step contexts of a trace are chosen.
#[derive(Debug, Clone)]
pub enum Selector {
    /// The most frequent pure-decode vLLM step name.
    Auto,
    /// Annotations with exactly this name.
    Exact(String),
    /// Annotations whose name the regex matches (anywhere).
    Regex(Regex),
}

impl Selector {
    pub fn kind(&self) -> &'static str {
        match self {
            Selector::Auto => "auto",
            Selector::Exact(_) => "exact",
            Selector::Regex(_) => "regex",
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Selector::Auto => "auto".into(),
            Selector::Exact(n) => n.clone(),
            Selector::Regex(r) => format!("re:{}", r.as_str()),
        }
    }
}

/// An annotation event as kept in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotation {
    pub name: Sym,
    pub start: Ns,
    pub dur: Ns,
    pub external_id: Option<i64>,
    pub lane: (Sym, Sym),
    /// Index in `traceEvents`.
    pub index: u64,
    /// False when Kineto marked the range `"finished": false` (still open
    /// when the profiler stopped: its `dur` is cut short).
    pub finished: bool,
}

impl Annotation {
    pub fn end(&self) -> Ns {
        self.start.saturating_add(self.dur)
    }
}

/// The annotation events of one trace: all that `pair` keeps while streaming.
#[derive(Debug, Default)]
pub struct Annotations {
    pub names: Interner,
    pub cpu: Vec<Annotation>,
    pub gpu: Vec<Annotation>,
}

/// The raw-bytes test for events `pair` needs: both categories end in
/// `user_annotation"`.
pub fn prefilter() -> Prefilter {
    Prefilter::any_of(&["user_annotation\""])
}

impl Annotations {
    /// Keeps the event if it is a complete CPU or GPU annotation.
    pub fn push(&mut self, ev: &Event<'_>, index: u64) {
        if !ev.is_complete() {
            return;
        }
        let gpu = match &*ev.cat {
            "user_annotation" => false,
            "gpu_user_annotation" => true,
            _ => return,
        };
        let pid = self.names.intern(&ev.pid.to_string());
        let tid = self.names.intern(&ev.tid.to_string());
        let a = Annotation {
            name: self.names.intern(&ev.name),
            start: ev.ts.unwrap_or_default(),
            dur: ev.dur_or_zero(),
            external_id: ev.args.external_id,
            lane: (pid, tid),
            index,
            finished: ev.args.finished != Some(false),
        };
        if gpu {
            self.gpu.push(a);
        } else {
            self.cpu.push(a);
        }
    }
}

/// A step name found in the trace, with how often it occurs.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StepName {
    pub name: String,
    pub count: u64,
    /// decode, prefill, mixed.
    pub kind: &'static str,
    pub selected: bool,
}

/// One selected context, for timelines and plots.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ContextRow {
    /// Index of the CPU annotation in `traceEvents`.
    pub event_index: u64,
    pub start_ns: i64,
    pub cpu_ns: i64,
    /// GPU span, when the context has GPU annotations.
    pub gpu_ns: Option<i64>,
    pub gpu_annotations: usize,
}

/// The figures of one trace (JSON keys as documented in README).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TracePairs {
    pub path: String,
    /// The selected step name, or the regex/exact name given.
    pub context: String,
    /// How contexts were chosen: `auto`, `exact` or `regex`.
    pub context_selector: &'static str,
    pub contexts: u64,
    pub pairs: u64,
    pub cpu_unpaired: u64,
    pub gpu_unpaired: u64,
    pub multi_stream_pairs: u64,
    /// Contexts still open when the profiler stopped (`"finished": false`);
    /// they are counted, but their CPU span is cut short.
    pub unfinished: u64,
    pub completion_tokens: Option<u64>,
    pub tokens_source: Option<String>,
    pub tokens_per_context: Option<f64>,
    pub cpu_span_ms: Summary,
    pub gpu_span_ms: Summary,
    pub gpu_span_per_token_ms: Option<f64>,
    /// Σ GPU spans over the paired contexts, exact ns.
    pub gpu_span_sum_ns: i64,
    pub step_names: Vec<StepName>,
    pub events: u64,
    pub meta: Meta,
    pub notes: Vec<String>,
    /// False when the file could not be read to its end; the figures then
    /// cover the events before the problem, and `error` says what it was.
    pub complete: bool,
    pub error: Option<String>,
    #[serde(skip)]
    pub rows: Vec<ContextRow>,
    #[serde(skip)]
    pub gpu_exact: Option<ExactSummary>,
    #[serde(skip)]
    pub cpu_exact: Option<ExactSummary>,
}

/// A problem that makes the result incomplete (exit status 1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairProblem {
    #[error("{path}: no pure-decode vLLM step annotation found; step names present: {names}. Choose one with --context or --context-regex")]
    NoDecodeSteps { path: String, names: String },
    #[error(
        "{path}: no user_annotation matches the context {wanted}; step names present: {names}"
    )]
    NoMatch {
        path: String,
        wanted: String,
        names: String,
    },
}

/// Counts every recognised step name.
fn step_names(ann: &Annotations) -> BTreeMap<Sym, (u64, steps::Step)> {
    let mut out: BTreeMap<Sym, (u64, steps::Step)> = BTreeMap::new();
    let mut not_step: HashSet<Sym> = HashSet::new();
    for a in &ann.cpu {
        if not_step.contains(&a.name) {
            continue;
        }
        if let Some(e) = out.get_mut(&a.name) {
            e.0 += 1;
            continue;
        }
        match steps::parse(ann.names.resolve(a.name)) {
            Some(s) => {
                out.insert(a.name, (1, s));
            }
            None => {
                not_step.insert(a.name);
            }
        }
    }
    out
}

/// The default context: the most frequent pure-decode step name (ties: the
/// name that sorts first).
fn auto_select(ann: &Annotations, found: &BTreeMap<Sym, (u64, steps::Step)>) -> Option<Sym> {
    found
        .iter()
        .filter(|(_, (_, s))| s.is_pure_decode())
        .max_by(|(a, (ca, _)), (b, (cb, _))| {
            ca.cmp(cb)
                .then_with(|| ann.names.resolve(**b).cmp(ann.names.resolve(**a)))
        })
        .map(|(sym, _)| *sym)
}

fn names_list(ann: &Annotations, found: &BTreeMap<Sym, (u64, steps::Step)>) -> String {
    if found.is_empty() {
        let mut all: BTreeMap<&str, u64> = BTreeMap::new();
        for a in &ann.cpu {
            *all.entry(ann.names.resolve(a.name)).or_default() += 1;
        }
        if all.is_empty() {
            return "none (no user_annotation events)".into();
        }
        let mut v: Vec<_> = all.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let shown: Vec<String> = v
            .iter()
            .take(12)
            .map(|(n, c)| format!("{n} ×{c}"))
            .collect();
        let more = v.len().saturating_sub(12);
        let tail = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        return format!(
            "no vLLM step names; user_annotations: {}{tail}",
            shown.join(", ")
        );
    }
    found
        .iter()
        .map(|(s, (c, _))| format!("{} ×{c}", ann.names.resolve(*s)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What reading one file gave: the annotations (all of them, or those
/// before a read error), metadata and the error if any.
#[derive(Debug, Default)]
pub struct Collected {
    pub annotations: Annotations,
    pub meta: Meta,
    pub events: u64,
    pub error: Option<TraceError>,
}

/// Streams one trace file and keeps its annotations.
pub fn collect(path: &Path, progress: Arc<AtomicU64>) -> Collected {
    let mut c = Collected::default();
    let filter = prefilter();
    let ann = &mut c.annotations;
    let res = read_path(path, &filter, progress, &mut c.meta, &mut |e, at| {
        ann.push(e, at.index)
    });
    match res {
        Ok(st) => c.events = st.events,
        Err(e) => {
            c.events = e.kind.events_read();
            c.error = Some(e);
        }
    }
    c
}

/// Collects from any byte source (an archive member, say).
pub fn collect_stream<R: std::io::Read>(label: &str, src: R) -> Collected {
    let mut c = Collected::default();
    let filter = prefilter();
    let ann = &mut c.annotations;
    match read_stream(src, &filter, &mut c.meta, &mut |e, at| {
        ann.push(e, at.index)
    }) {
        Ok(st) => c.events = st.events,
        Err(kind) => {
            c.events = kind.events_read();
            c.error = Some(TraceError {
                path: label.to_string(),
                kind,
            });
        }
    }
    c
}

impl Collected {
    /// Pairs what was collected; a read error marks the result incomplete.
    pub fn analyze(self, path: &str, selector: &Selector) -> (TracePairs, Option<PairProblem>) {
        let (mut r, p) = analyze(path, &self.annotations, selector, self.meta, self.events);
        if let Some(e) = self.error {
            r.complete = false;
            r.error = Some(e.kind.to_string());
        }
        (r, p)
    }
}

/// Pairs and measures one trace. On a selection problem the figures are
/// still returned (with zero contexts) together with the problem.
pub fn analyze(
    path: &str,
    ann: &Annotations,
    selector: &Selector,
    meta: Meta,
    events: u64,
) -> (TracePairs, Option<PairProblem>) {
    let found = step_names(ann);
    let (selected, context, mut problem): (HashSet<Sym>, String, Option<PairProblem>) =
        match selector {
            Selector::Auto => match auto_select(ann, &found) {
                Some(s) => (HashSet::from([s]), ann.names.resolve(s).to_string(), None),
                None => (
                    HashSet::new(),
                    String::new(),
                    Some(PairProblem::NoDecodeSteps {
                        path: path.into(),
                        names: names_list(ann, &found),
                    }),
                ),
            },
            Selector::Exact(n) => (ann.names.get(n).into_iter().collect(), n.clone(), None),
            Selector::Regex(r) => {
                // GPU names count too: a GPU annotation whose name matches is
                // "of the selected name" even without a CPU twin.
                let set = ann
                    .cpu
                    .iter()
                    .chain(&ann.gpu)
                    .map(|a| a.name)
                    .collect::<HashSet<_>>()
                    .into_iter()
                    .filter(|s| r.is_match(ann.names.resolve(*s)))
                    .collect();
                (set, r.as_str().to_string(), None)
            }
        };

    // GPU annotations of the selected names, by (name, External id).
    let mut gpu_by_key: HashMap<(Sym, i64), Vec<&Annotation>> = HashMap::new();
    for g in ann.gpu.iter().filter(|g| selected.contains(&g.name)) {
        if let Some(id) = g.external_id {
            gpu_by_key.entry((g.name, id)).or_default().push(g);
        }
    }
    let gpu_without_id = ann
        .gpu
        .iter()
        .filter(|g| selected.contains(&g.name) && g.external_id.is_none())
        .count() as u64;

    let mut rows = Vec::new();
    let mut unfinished = 0u64;
    let mut cpu_keys: HashSet<(Sym, i64)> = HashSet::new();
    for c in ann.cpu.iter().filter(|c| selected.contains(&c.name)) {
        unfinished += u64::from(!c.finished);
        let spans = c
            .external_id
            .and_then(|id| {
                cpu_keys.insert((c.name, id));
                gpu_by_key.get(&(c.name, id))
            })
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let gpu_ns = span_of(spans).map(|n| n.0);
        rows.push(ContextRow {
            event_index: c.index,
            start_ns: c.start.0,
            cpu_ns: c.dur.0,
            gpu_ns,
            gpu_annotations: spans.len(),
        });
    }
    rows.sort_by_key(|r| (r.start_ns, r.event_index));
    let gpu_unpaired = gpu_by_key
        .iter()
        .filter(|(k, _)| !cpu_keys.contains(k))
        .map(|(_, v)| v.len() as u64)
        .sum::<u64>()
        + gpu_without_id;

    let paired: Vec<&ContextRow> = rows.iter().filter(|r| r.gpu_ns.is_some()).collect();
    let cpu: Vec<Ns> = paired.iter().map(|r| Ns(r.cpu_ns)).collect();
    let gpu: Vec<Ns> = paired.iter().filter_map(|r| r.gpu_ns.map(Ns)).collect();
    let cpu_exact = ExactSummary::of(&cpu);
    let gpu_exact = ExactSummary::of(&gpu);
    let contexts = rows.len() as u64;
    let pairs = paired.len() as u64;
    if problem.is_none() && contexts == 0 {
        problem = Some(PairProblem::NoMatch {
            path: path.into(),
            wanted: selector.describe(),
            names: names_list(ann, &found),
        });
    }
    let mut step_names: Vec<StepName> = found
        .iter()
        .map(|(s, (c, st))| StepName {
            name: ann.names.resolve(*s).to_string(),
            count: *c,
            kind: st.kind(),
            selected: selected.contains(s),
        })
        .collect();
    step_names.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    let gpu_sum: i128 = gpu.iter().map(|n| i128::from(n.0)).sum();
    let result = TracePairs {
        path: path.into(),
        context,
        context_selector: selector.kind(),
        contexts,
        pairs,
        cpu_unpaired: contexts - pairs,
        gpu_unpaired,
        multi_stream_pairs: rows.iter().filter(|r| r.gpu_annotations > 1).count() as u64,
        unfinished,
        completion_tokens: None,
        tokens_source: None,
        tokens_per_context: None,
        cpu_span_ms: cpu_exact.as_ref().map(|s| s.to_ms()).unwrap_or_default(),
        gpu_span_ms: gpu_exact.as_ref().map(|s| s.to_ms()).unwrap_or_default(),
        gpu_span_per_token_ms: None,
        gpu_span_sum_ns: i64::try_from(gpu_sum).unwrap_or(i64::MAX),
        step_names,
        events,
        meta,
        notes: if unfinished > 0 {
            vec![format!(
                "{unfinished} context(s) were still open when the profiler stopped (\"finished\": false): counted, but their CPU span is cut short"
            )]
        } else {
            Vec::new()
        },
        complete: true,
        error: None,
        rows,
        gpu_exact,
        cpu_exact,
    };
    (result, problem)
}

/// [min start, max end] over a context's GPU annotations.
fn span_of(spans: &[&Annotation]) -> Option<Ns> {
    let start = spans.iter().map(|a| a.start).min()?;
    let end = spans.iter().map(|a| a.end()).max()?;
    Some(Ns(end.0 - start.0))
}

impl TracePairs {
    /// Adds the completion-token figures (Eq. 15 and 16).
    pub fn set_tokens(&mut self, tokens: Option<u64>, source: Option<String>) {
        self.completion_tokens = tokens;
        self.tokens_source = source;
        match tokens {
            Some(t) if t > 0 => {
                self.tokens_per_context = (self.pairs > 0).then(|| t as f64 / self.pairs as f64);
                self.gpu_span_per_token_ms = (self.pairs > 0).then(|| {
                    Exact {
                        num: i128::from(self.gpu_span_sum_ns),
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
    // Ratios are formed from the exact values: (a/b) / (c/d) = (a·d)/(b·c).
    let ratio = |n: Option<Exact>, d: Option<Exact>| -> Option<f64> {
        let (n, d) = (n?, d?);
        let num = n.num.checked_mul(d.den)?;
        let den = n.den.checked_mul(d.num)?;
        (den != 0).then(|| num as f64 / den as f64)
    };
    let per_token = |t: &TracePairs| -> Option<Exact> {
        let tok = t.completion_tokens.filter(|&k| k > 0)?;
        (t.pairs > 0).then_some(Exact {
            num: i128::from(t.gpu_span_sum_ns),
            den: i128::from(tok),
        })
    };
    let p = |t: &TracePairs| -> Option<Exact> {
        let tok = t.completion_tokens.filter(|&k| k > 0)?;
        (t.pairs > 0).then_some(Exact {
            num: i128::from(tok),
            den: i128::from(t.pairs),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds annotations from JSON event lines.
    fn ann(events: &str) -> Annotations {
        let doc = format!("{{\"traceEvents\": [{events}]}}");
        let mut a = Annotations::default();
        let mut meta = Meta::default();
        read_stream(
            doc.as_bytes(),
            &Prefilter::all(),
            &mut meta,
            &mut |e, at| a.push(e, at.index),
        )
        .unwrap();
        a
    }

    fn ua(name: &str, ts: &str, dur: &str, id: i64) -> String {
        format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur},"args":{{"External id":{id}}}}}"#
        )
    }
    fn gua(name: &str, ts: &str, dur: &str, id: i64, stream: i64) -> String {
        format!(
            r#"{{"ph":"X","cat":"gpu_user_annotation","name":"{name}","pid":0,"tid":{stream},"ts":{ts},"dur":{dur},"args":{{"External id":{id}}}}}"#
        )
    }

    const AR: &str = "execute_context_0(0)_generation_1(1)";

    #[test]
    fn one_to_one_multi_stream_and_unpaired() {
        //  CPU  [ctx id=1 0..10]   [ctx id=2 20..30]   [ctx id=3 40..50]
        //  GPU    s7 [2..9]          s7 [21..28] s9 [19..25]   (none)      s7 id=9 [60..61]
        let evs = [
            ua(AR, "0.000", "10.000", 1),
            ua(AR, "20.000", "10.000", 2),
            ua(AR, "40.000", "10.000", 3),
            ua(
                "execute_context_1(96)_generation_0(0)",
                "-5.000",
                "4.000",
                4,
            ),
            gua(AR, "2.000", "7.000", 1, 7),
            gua(AR, "21.000", "7.000", 2, 7),
            gua(AR, "19.000", "6.000", 2, 9),
            gua(AR, "60.000", "1.000", 9, 7),
        ]
        .join(",");
        let a = ann(&evs);
        let (r, problem) = analyze("t", &a, &Selector::Auto, Meta::default(), 8);
        assert_eq!(problem, None);
        assert_eq!(r.context, AR);
        assert_eq!(
            (
                r.contexts,
                r.pairs,
                r.cpu_unpaired,
                r.gpu_unpaired,
                r.multi_stream_pairs
            ),
            (3, 2, 1, 1, 1)
        );
        // GPU spans: 7 µs and 28-19 = 9 µs → median 8 ms/1000.
        assert_eq!(r.gpu_span_ms.median, Some(0.008));
        assert_eq!(r.gpu_span_ms.sum, Some(0.016));
        assert_eq!(r.cpu_span_ms.median, Some(0.010));
        assert_eq!(r.step_names.len(), 2);
    }

    #[test]
    fn unfinished_contexts_are_counted_and_noted() {
        let open = r#"{"ph":"X","cat":"user_annotation","name":"execute_context_0(0)_generation_1(1)","pid":1,"tid":1,"ts":50,"dur":1,"args":{"External id":5,"finished":false}}"#;
        let evs = [ua(AR, "0", "10", 1), open.to_string()].join(",");
        let (r, _) = analyze("t", &ann(&evs), &Selector::Auto, Meta::default(), 2);
        assert_eq!((r.contexts, r.unfinished), (2, 1));
        assert!(r.notes[0].contains("still open"), "{:?}", r.notes);
    }

    #[test]
    fn same_external_id_other_name_does_not_pair() {
        let evs = [
            ua(AR, "0.000", "10.000", 1),
            gua("other", "1.000", "1.000", 1, 7),
        ]
        .join(",");
        let (r, _) = analyze("t", &ann(&evs), &Selector::Auto, Meta::default(), 2);
        assert_eq!((r.pairs, r.cpu_unpaired, r.gpu_unpaired), (0, 1, 0));
    }

    #[test]
    fn tokens_and_comparison() {
        let mtp = "execute_context_0(0)_generation_1(3)";
        let base = [
            ua(AR, "0", "10", 1),
            gua(AR, "1", "8", 1, 7),
            ua(AR, "20", "10", 2),
            gua(AR, "21", "8", 2, 7),
        ]
        .join(",");
        let cand = [ua(mtp, "0", "12", 1), gua(mtp, "1", "12", 1, 7)].join(",");
        let (mut b, _) = analyze("ar", &ann(&base), &Selector::Auto, Meta::default(), 4);
        let (mut c, _) = analyze("mtp", &ann(&cand), &Selector::Auto, Meta::default(), 2);
        b.set_tokens(Some(2), None);
        c.set_tokens(Some(2), None);
        assert_eq!(b.tokens_per_context, Some(1.0));
        assert_eq!(c.tokens_per_context, Some(2.0));
        assert_eq!(b.gpu_span_per_token_ms, Some(0.008));
        let cmp = compare(&b, &c);
        // AR: 16 µs / 2 tokens; MTP: 12 µs / 2 tokens.
        assert_eq!(cmp.s_context, Some(16.0 / 12.0));
        assert_eq!(cmp.context_reduction_pct, Some(50.0));
        assert_eq!(cmp.gpu_span_median_ratio, Some(1.5));
        assert_eq!(cmp.cpu_span_median_ratio, Some(1.2));
    }

    #[test]
    fn no_decode_steps_is_a_problem_listing_names() {
        let evs = [ua("ProfilerStep#1", "0", "1", 1)].join(",");
        let (r, problem) = analyze("t", &ann(&evs), &Selector::Auto, Meta::default(), 1);
        assert_eq!(r.contexts, 0);
        let msg = problem.unwrap().to_string();
        assert!(msg.contains("ProfilerStep#1 ×1"), "{msg}");
    }
}
