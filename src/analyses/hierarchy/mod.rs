//! Runtime-hierarchy checks: is every `child` event nested in a `parent`
//! event along a chain `a > b > c`, and how long (inclusive) and how often
//! does each element run? ("all observed propose_draft_token_ids ranges were
//! nested within sample_tokens", and Table 9 of "Beneath the Tokens".)
//!
//! Definitions are in docs/DEFINITIONS.md ("Hierarchy"). On one lane
//! (pid, tid), with the default chain:
//!
//! ```text
//! tid 7  [=========== sample_tokens ===========]      [== sample_tokens ==]
//!          [== propose_draft_token_ids ==]
//!             [proposer.propose]                       [propose_draft_token_ids]
//!                                                                 ▲ contained too
//! tid 9            [propose_draft_token_ids]    ← same interval, other thread:
//!                                                 uncontained (unless --any-thread)
//! ```
//!
//! Per link: children (events matching the child element), contained (in
//! at least one parent event on the same lane, P.start ≤ C.start and
//! C.end ≤ P.end, P not C itself), uncontained, parents holding no child.
//! Per element: calls, outermost calls (a match nested in another match of
//! the same element is not counted twice, e.g. Worker.sample_tokens ⊃
//! GPUModelRunner.sample_tokens) and inclusive-duration statistics over
//! the outermost calls.
//!
//! Events are streamed once ([`Collector`]): only those matching a chain
//! element are kept (interned names and lanes), plus the step annotations
//! `pair` needs to count contexts. The containment queries run on a small
//! sorted index per lane (`crate::containment`), O((n + m) log n).

mod batch;
pub mod figure;
mod options;
mod result;

pub mod view;

use crate::analysis::{Analysis, Configures, Finished, InResults, Need};
use crate::containment::{self, Enclosed, Enclosers, Iv, Overlaps};
use crate::contexts::Selector;
use crate::ledger::attribution::{self, LaunchScope, Query};
use crate::ledger::pack::{Fields, Packed, Record, Records};
use crate::ledger::Ledger;
use crate::model::{FoldState, Interner, LaneTable, Ns, Sym};
use crate::stats::{Exact, ExactSummary};
use crate::trace::{Event, EventPos, Meta, Prefilter};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

pub use options::*;
pub use result::*;

/// A kept event.
#[derive(Debug, Clone, Copy)]
struct Rec {
    start: Ns,
    dur: Ns,
    lane: u32,
    name: Sym,
    index: u64,
}

/// A kept call as read: Δstart, dur, lane, name, Δindex (≈ 9 B of varints
/// instead of 32 while the trace is read and the ledger built).
impl Record for Rec {
    type Prev = (i64, i64);

    fn write(&self, prev: &mut (i64, i64), p: &mut Packed) {
        p.delta(self.start.0, prev.0);
        p.delta(self.dur.0, 0);
        p.u(u64::from(self.lane));
        p.u(u64::from(self.name.0));
        p.delta(self.index as i64, prev.1);
        *prev = (self.start.0, self.index as i64);
    }

    fn read(prev: &mut (i64, i64), f: &mut impl Fields) -> Rec {
        let start = f.delta(prev.0);
        let dur = f.delta(0);
        let lane = f.u() as u32;
        let name = Sym(f.u() as u32);
        let index = f.delta(prev.1);
        *prev = (start, index);
        Rec {
            start: Ns(start),
            dur: Ns(dur),
            lane,
            name,
            index: index as u64,
        }
    }
}

impl Rec {
    /// start + dur, saturating (32 B per decoded call, not 40: every chain
    /// call of the trace is held through the finish).
    fn end(&self) -> Ns {
        self.start.saturating_add(self.dur)
    }

    fn iv(&self) -> Iv {
        Iv {
            start: self.start,
            end: self.end(),
            id: self.index,
        }
    }
}

/// Streaming state for one trace: feed it every event (after
/// [`Collector::prefilter`]) with [`Collector::push`].
#[derive(Debug)]
pub struct Collector {
    elements: Vec<Element>,
    categories: Vec<String>,
    /// Name → matching elements, for [plain, python_function] events.
    cache: [HashMap<Box<str>, Box<[u32]>, FoldState>; 2],
    names: Interner,
    lanes: LaneTable,
    /// The calls kept while reading (file order), decoded one element at
    /// a time by [`Collector::element`].
    kept: Records<Rec>,
    /// Per element, positions in `kept` (increasing).
    by_element: Vec<Vec<u32>>,
    /// The checks to run at the end.
    opts: HierarchyOptions,
}

impl Configures for HierarchyOptions {
    type Analysis = Collector;
}

/// The hierarchy analysis (its streaming state is the [`Collector`]).
pub type Hierarchy = Collector;

impl Analysis for Collector {
    const NAME: &'static str = "hierarchy";
    const KEY: &'static str = "hierarchy";
    type Config = HierarchyOptions;
    type Output = TraceHierarchy;

    fn start(config: &HierarchyOptions) -> Self {
        Collector::new(config)
    }

    fn ledger(config: &HierarchyOptions) -> Need {
        if config.gpu_work {
            Need::Yes
        } else {
            Need::No
        }
    }

    /// An event's text must contain an element (exact and function-part
    /// matches both contain it verbatim; escaped text is admitted by
    /// [`Prefilter`] anyway). Any `re:` element admits everything.
    fn prefilter(&self) -> Prefilter {
        if self.elements.iter().any(Element::is_regex) {
            return Prefilter::all();
        }
        let needles: Vec<String> = self.elements.iter().map(|e| e.text.clone()).collect();
        Prefilter::any_of(&needles)
    }

    fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        Collector::push(self, ev, at)
    }

    fn set_tokens(out: &mut TraceHierarchy, tokens: Option<u64>, _source: Option<&str>) {
        out.set_tokens(tokens);
    }

    /// Under `hierarchy`, less what the trace entry says already, with
    /// whether every link holds.
    fn in_results(h: &TraceHierarchy) -> InResults {
        let mut v = serde_json::to_value(h).unwrap_or(serde_json::Value::Null);
        if let serde_json::Value::Object(m) = &mut v {
            for k in ["path", "meta", "events", "complete", "error", "context"] {
                m.remove(k);
            }
            m.insert("holds".into(), serde_json::Value::Bool(h.holds()));
        }
        InResults::Nested(v)
    }

    fn finish(self, trace: &Finished<'_>) -> TraceHierarchy {
        let ctx = trace.contexts;
        let contexts = (!ctx.is_empty()).then(|| (ctx.name.clone(), ctx.len() as u64));
        let ledger = trace.ledger.filter(|_| self.opts.gpu_work);
        let mut r = self.analyze(trace.path, contexts, ledger);
        r.events = trace.events;
        r.meta = trace.meta.clone();
        if let Some(e) = trace.error_text() {
            r.complete = false;
            r.error = Some(e);
        }
        r
    }
}

impl Collector {
    /// Keeps the events matching a chain element.
    pub fn new(opts: &HierarchyOptions) -> Self {
        Collector {
            elements: opts.elements.clone(),
            categories: opts.categories.clone(),
            cache: Default::default(),
            names: Interner::new(),
            lanes: LaneTable::default(),
            kept: Records::default(),
            by_element: vec![Vec::new(); opts.elements.len()],
            opts: opts.clone(),
        }
    }

    /// Keeps the event if it is a complete event of a selected category
    /// matching some chain element.
    pub fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        if !ev.is_complete() || !self.categories.iter().any(|c| *c == *ev.cat) {
            return;
        }
        let py = usize::from(ev.cat == "python_function");
        let Some(hits) = self.hits(&ev.name, py) else {
            return;
        };
        let start = ev.ts.unwrap_or_default();
        let dur = ev.dur_or_zero();
        let rec = Rec {
            start,
            dur,
            lane: self.lanes.intern(ev.lane()),
            name: self.names.intern(&ev.name),
            index: at.index,
        };
        let id = self.kept.len() as u32;
        self.kept.push(&rec);
        for &k in &hits {
            self.by_element[k as usize].push(id);
        }
    }

    /// The chain elements `name` matches (`py`: 1 for a python_function),
    /// `None` for none (most events of a batch: no allocation then).
    /// Names up to [`crate::model::MAX_NAME_BYTES`] are cached; longer ones
    /// are matched afresh, so distinct huge names are never held.
    fn hits(&mut self, name: &str, py: usize) -> Option<Box<[u32]>> {
        if let Some(h) = self.cache[py].get(name) {
            return (!h.is_empty()).then(|| h.clone());
        }
        let hits: Vec<u32> = self
            .elements
            .iter()
            .enumerate()
            .filter(|(_, e)| e.matches(name, py == 1))
            .map(|(k, _)| k as u32)
            .collect();
        let hits: Box<[u32]> = hits.into();
        if name.len() <= crate::model::MAX_NAME_BYTES {
            self.cache[py].insert(name.into(), hits.clone());
        }
        (!hits.is_empty()).then_some(hits)
    }

    /// The figures of every chain. `contexts` = (context name, count) for
    /// calls per context; `ledger`, when the plan has the kernels analysis,
    /// for the GPU work of each function's calls.
    pub fn analyze(
        self,
        path: &str,
        contexts: Option<(String, u64)>,
        ledger: Option<&Ledger>,
    ) -> TraceHierarchy {
        let opts = &self.opts;
        let chains = opts
            .chains
            .iter()
            .map(|ch| self.analyze_chain(ch, opts, contexts.as_ref().map(|c| c.1), ledger))
            .collect();
        TraceHierarchy {
            path: path.to_string(),
            context: contexts.as_ref().map(|c| c.0.clone()),
            contexts: contexts.as_ref().map(|c| c.1),
            any_thread: opts.any_thread,
            categories: opts.categories.clone(),
            chains,
            events: 0,
            meta: Meta::default(),
            complete: true,
            error: None,
        }
    }

    /// The lane key for grouping: every event on one key with --any-thread.
    fn key(&self, r: &Rec, any_thread: bool) -> u32 {
        if any_thread {
            0
        } else {
            r.lane
        }
    }

    /// The calls of element `e`, in file order, decoded from the stream:
    /// two elements' calls at most are held at once (a link's parents and
    /// children), not every kept call (32 B each: 5.2 MB at 800 copies of
    /// the benchmark trace, for a stream of 1.6 MB).
    fn element(&self, e: usize) -> Vec<Rec> {
        let ids = self.by_element.get(e).map_or(&[][..], Vec::as_slice);
        let mut out = Vec::with_capacity(ids.len());
        let mut want = ids.iter().copied().peekable();
        for (id, r) in self.kept.iter().enumerate() {
            let Some(&next) = want.peek() else {
                break;
            };
            if next as usize == id {
                out.push(r);
                want.next();
            }
        }
        out
    }

    fn group(&self, recs: &[Rec], any_thread: bool) -> BTreeMap<u32, Vec<Iv>> {
        let mut g: BTreeMap<u32, Vec<Iv>> = BTreeMap::new();
        for r in recs {
            g.entry(self.key(r, any_thread)).or_default().push(r.iv());
        }
        g
    }

    fn analyze_chain(
        &self,
        chain: &[usize],
        opts: &HierarchyOptions,
        contexts: Option<u64>,
        ledger: Option<&Ledger>,
    ) -> ChainResult {
        let any = opts.any_thread;
        let mut links = Vec::new();
        for w in chain.windows(2) {
            let (pe, ce) = (w[0], w[1]);
            let (parent_recs, child_recs) = (self.element(pe), self.element(ce));
            // Each lane's intervals go into its tree (no copy); the
            // parents' are grouped again only for the examples.
            let enclosers: HashMap<u32, Enclosers> = self
                .group(&parent_recs, any)
                .into_iter()
                .map(|(k, v)| (k, Enclosers::new(v)))
                .collect();
            let enclosed: HashMap<u32, Enclosed> = self
                .group(&child_recs, any)
                .into_iter()
                .map(|(k, v)| (k, Enclosed::new(v)))
                .collect();
            let mut uncontained: Vec<&Rec> = Vec::new();
            for c in &child_recs {
                let inside = enclosers
                    .get(&self.key(c, any))
                    .is_some_and(|e| e.encloses(&c.iv()));
                if !inside {
                    uncontained.push(c);
                }
            }
            let n_children = child_recs.len() as u64;
            let without_child = parent_recs
                .iter()
                .filter(|p| {
                    !enclosed
                        .get(&self.key(p, any))
                        .is_some_and(|e| e.holds_any(&p.iv()))
                })
                .count() as u64;
            uncontained.sort_by_key(|r| (r.start, r.index));
            drop((enclosers, enclosed));
            let parents = match uncontained.is_empty() {
                true => BTreeMap::new(),
                false => self.group(&parent_recs, any),
            };
            let examples = self.examples(&uncontained, (&parent_recs, &parents), opts);
            let n_un = uncontained.len() as u64;
            links.push(Link {
                parent: opts.elements[pe].text.clone(),
                child: opts.elements[ce].text.clone(),
                children: n_children,
                contained: n_children - n_un,
                uncontained: n_un,
                parents_without_child: without_child,
                holds: n_un == 0,
                examples,
            });
        }
        let functions = chain
            .iter()
            .map(|&e| self.function(e, opts, contexts, ledger))
            .collect();
        ChainResult {
            chain: chain
                .iter()
                .map(|&e| opts.elements[e].text.clone())
                .collect(),
            links,
            functions,
        }
    }

    /// `parents`: the parent element's calls, and their intervals by lane
    /// key.
    fn examples(
        &self,
        uncontained: &[&Rec],
        (parent_recs, parents): (&[Rec], &BTreeMap<u32, Vec<Iv>>),
        opts: &HierarchyOptions,
    ) -> Vec<Example> {
        let mut trees: HashMap<u32, Overlaps> = HashMap::new();
        // Event index → name, for the parents listed.
        let mut out = Vec::new();
        for c in uncontained.iter().take(opts.examples) {
            let key = self.key(c, opts.any_thread);
            let tree = trees.entry(key).or_insert_with(|| {
                Overlaps::new(parents.get(&key).map(Vec::as_slice).unwrap_or(&[]))
            });
            let over = tree.of(&c.iv());
            let names: Vec<String> = over
                .iter()
                .take(MAX_OVERLAP_NAMES)
                .map(|p| self.describe_parent(parent_recs, p, opts.any_thread))
                .collect();
            out.push(Example {
                name: self.names.resolve(c.name).to_string(),
                ts: c.start.to_string(),
                dur: c.dur.to_string(),
                lane: self.lanes.resolve(c.lane).to_string(),
                event_index: c.index,
                overlapping: names,
                overlapping_total: over.len() as u64,
            });
        }
        out
    }

    /// "name [ts +dur]" of an overlapping parent (one of `parents`, with
    /// its lane under --any-thread).
    fn describe_parent(&self, parents: &[Rec], p: &Iv, any_thread: bool) -> String {
        let rec = rec_by_index(parents, p.id);
        let lane = if any_thread {
            format!(" on {}", self.lanes.resolve(rec.lane))
        } else {
            String::new()
        };
        format!(
            "{} [{} +{}]{lane}",
            self.names.resolve(rec.name),
            rec.start,
            rec.dur
        )
    }

    /// The outermost calls among `recs` (a call nested in another call
    /// of the same element on its lane key is not counted twice).
    fn outermost<'r>(&self, recs: &'r [Rec], any_thread: bool) -> Vec<&'r Rec> {
        let mut groups: BTreeMap<u32, Vec<&Rec>> = BTreeMap::new();
        for r in recs {
            groups.entry(self.key(r, any_thread)).or_default().push(r);
        }
        let mut out = Vec::new();
        for recs in groups.values() {
            let ivs: Vec<Iv> = recs.iter().map(|r| r.iv()).collect();
            for (r, outer) in recs.iter().zip(containment::outermost(&ivs)) {
                if outer {
                    out.push(*r);
                }
            }
        }
        out
    }

    fn function(
        &self,
        e: usize,
        opts: &HierarchyOptions,
        contexts: Option<u64>,
        ledger: Option<&Ledger>,
    ) -> FunctionStats {
        let recs = self.element(e);
        let calls = self.outermost(&recs, opts.any_thread);
        let durs: Vec<Ns> = calls.iter().map(|r| r.dur).collect();
        let exact = ExactSummary::of(&durs);
        let s = exact.as_ref().map(|s| s.to_ms());
        let outermost = durs.len() as u64;
        FunctionStats {
            name: opts.elements[e].text.clone(),
            calls: self.by_element[e].len() as u64,
            outermost_calls: outermost,
            median_ms: s.as_ref().and_then(|s| s.median),
            mean_ms: s.as_ref().and_then(|s| s.mean),
            p90_ms: s.as_ref().and_then(|s| s.p90),
            min_ms: s.as_ref().and_then(|s| s.min),
            max_ms: s.as_ref().and_then(|s| s.max),
            total_ms: s.as_ref().and_then(|s| s.sum),
            calls_per_context: contexts
                .filter(|&n| n > 0)
                .map(|n| outermost as f64 / n as f64),
            gpu: ledger.map(|l| self.gpu_work(&calls, l)),
            exact,
        }
    }

    /// The GPU work launched by a function's outermost `calls` (each
    /// call's launches on its own thread, by correlation).
    ///
    /// Outermost calls of one thread never nest; should two overlap
    /// partially (a broken stack, never written by PyTorch), a launch call
    /// in both is counted once, in the later one, so the cost stays
    /// O(n log n) ([`attribution`]) and `partially_overlapping_calls` says so.
    fn gpu_work(&self, calls: &[&Rec], ledger: &Ledger) -> FunctionGpu {
        let queries: Vec<Query> = calls
            .iter()
            .map(|r| Query {
                lane: ledger.lane_id(self.lanes.resolve(r.lane)),
                pid: None,
                scope: LaunchScope::Thread,
                start: r.start,
                end: r.end(),
                index: r.index,
            })
            .collect();
        // Folded as they come: no `Work` per call is kept.
        // Each call's busy exactly (a union of i64 times can pass i64,
        // issue 59): the median is of these, never of clamped values.
        let mut busy: Vec<i128> = Vec::with_capacity(queries.len());
        let (mut kernels, mut with_work, mut sum) = (0u64, 0u64, 0i128);
        let overlaps = attribution::attribute_each(ledger, &queries, |_, w| {
            kernels += w.kernels;
            with_work += u64::from(w.has_gpu_work());
            sum += w.busy;
            busy.push(w.busy);
        });
        drop(queries);
        let calls = busy.len() as u64;
        FunctionGpu {
            calls_with_gpu_work: with_work,
            kernels,
            kernels_per_call: (calls > 0).then(|| kernels as f64 / calls as f64),
            gpu_busy_median_ms: crate::stats::median_wide(&mut busy).map(|m| m.ms()),
            gpu_busy_sum_ns: sum,
            gpu_busy_per_token_ms: None,
            partially_overlapping_calls: overlaps.partial,
        }
    }
}

use crate::stats::ratio;

/// The call with event index `index` among `recs` (in file order, so
/// their event indices increase), or the nearest after it.
fn rec_by_index(recs: &[Rec], index: u64) -> Rec {
    let k = recs.partition_point(|r| r.index < index);
    recs.get(k).or(recs.last()).copied().unwrap_or(Rec {
        start: Ns(0),
        dur: Ns(0),
        lane: 0,
        name: Sym(0),
        index,
    })
}

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(test)]
mod tests;
