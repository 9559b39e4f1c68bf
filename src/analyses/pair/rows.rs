//! How `pair` builds its context rows: each selected CPU step annotation
//! grouped with the GPU annotations of the same name and External id, its
//! GPU span (from the annotations, or from the launches by correlation),
//! and the notes on what could not be paired.

use super::*;

/// A pairing key: (annotation name, External id).
pub(super) type Key<'a> = (&'a str, i64);

/// Values grouped by key: one array sorted by key (file order kept within
/// a key), looked up by binary search. A hash map of `String` keys to small
/// vectors cost ≈ 200 B per key, 9 MB of `pair`'s peak at 800 copies of the
/// benchmark trace (48,000 GPU annotations); this costs 24 B per key and
/// the value.
pub(super) struct Grouped<'a, T> {
    pub(super) keys: Vec<Key<'a>>,
    pub(super) vals: Vec<T>,
}

impl<'a, T> Grouped<'a, T> {
    pub(super) fn new(mut pairs: Vec<(Key<'a>, T)>) -> Self {
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
    pub(super) fn get(&self, key: &Key<'_>) -> &[T] {
        let lo = self.keys.partition_point(|k| k < key);
        let n = self.keys[lo..].partition_point(|k| k == key);
        &self.vals[lo..lo + n]
    }

    /// Each key with its values, in key order.
    pub(super) fn groups(&self) -> impl Iterator<Item = (Key<'a>, &[T])> + '_ {
        let mut at = 0;
        self.keys.chunk_by(|a, b| a == b).map(move |ks| {
            let vals = &self.vals[at..at + ks.len()];
            at += ks.len();
            (ks[0], vals)
        })
    }
}

/// The selected names' GPU annotations, keyed for pairing.
pub(super) struct GpuIndex<'a> {
    pub(super) by_key: Grouped<'a, Span>,
    pub(super) without_id: u64,
    /// Selected GPU annotations whose `dur` was missing or negative.
    pub(super) bad_dur: u64,
}

/// What pairing decided without a word in the figures, for notes.
#[derive(Debug, Default)]
pub(super) struct Silent {
    /// External ids held by several selected contexts, those contexts,
    /// and the GPU annotations shared out among them.
    pub(super) shared_ids: u64,
    pub(super) sharing_contexts: u64,
    pub(super) shared_annotations: u64,
    /// Selected contexts whose `dur` was missing or negative.
    pub(super) bad_dur: u64,
    /// Contexts whose GPU span does not fit in i64 ns: not measured.
    pub(super) too_long: u64,
}

impl Silent {
    pub(super) fn notes(&self, gpu_bad_dur: u64, begin_events: u64) -> Vec<String> {
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
pub(super) fn context_rows<'s>(
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
pub(super) fn measure(path: &str, contexts: &Contexts, rows: Vec<ContextRow>) -> TracePairs {
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
pub(super) fn correlation_spans(
    rows: &mut [ContextRow],
    by_correlation: &[Option<i64>],
    mode: GpuSpanSource,
) {
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
pub(super) fn nesting_note(nested: u64, contexts: usize) -> String {
    format!(
        "{nested} of {contexts} step contexts lie inside another step context on their thread: each is measured on its own, \
         by its GPU annotations (Kineto's, for the work launched while it was the innermost range) or by launch correlation \
         (each launch call in the innermost context holding it, as `kernels` counts it), so no inner context's GPU work is \
         lost; an enclosing context's GPU span can still cover an inner one's, and Σ GPU span then counts that time in both"
    )
}

/// Says why contexts lack a GPU annotation and where their spans came
/// from, naming the inner user ranges that took the GPU projection.
pub(super) fn span_note(
    r: &TracePairs,
    steps: &Steps,
    contexts: &Contexts,
    ledger: bool,
) -> Option<String> {
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
pub(super) fn inner_ranges(steps: &Steps, contexts: &Contexts) -> String {
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
pub(super) struct Span {
    pub(super) start: Ns,
    pub(super) dur: Ns,
}

impl Span {
    pub(super) fn of(a: &Annotation) -> Span {
        Span {
            start: a.start,
            dur: a.dur,
        }
    }

    /// `start + dur`, exact.
    pub(super) fn end_exact(&self) -> i128 {
        i128::from(self.start.0) + i128::from(self.dur.0)
    }
}

/// max end − min start over a context's GPU annotations, exact (ends may
/// lie past `i64::MAX`).
pub(super) fn span_of(spans: &[Span]) -> Option<i128> {
    let start = spans.iter().map(|a| a.start).min()?;
    let end = spans.iter().map(|a| a.end_exact()).max()?;
    Some(end - i128::from(start.0))
}
