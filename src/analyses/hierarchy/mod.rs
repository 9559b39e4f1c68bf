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

/// The chain checked when none is given.
pub const DEFAULT_CHAIN: &str = "sample_tokens>propose_draft_token_ids>proposer.propose";
/// The chains whose functions figure 4 (and batch's Table 9) show by
/// default: the hierarchy default chain plus the model step.
pub const DEFAULT_PLOT_CHAINS: [&str; 2] = [DEFAULT_CHAIN, "execute_model"];
/// CPU-side categories taking part by default (`Operator` is 2021-era Kineto).
pub const DEFAULT_CATEGORIES: [&str; 4] =
    ["cpu_op", "user_annotation", "python_function", "Operator"];
/// How many enclosing/overlapping parent names an example lists at most.
pub const MAX_OVERLAP_NAMES: usize = 10;

/// One chain element: a name, a python_function function part, or `re:RE`.
#[derive(Debug, Clone)]
pub struct Element {
    pub text: String,
    regex: Option<Regex>,
}

impl Element {
    pub fn parse(text: &str) -> Result<Element, OptionsError> {
        let regex = match text.strip_prefix("re:") {
            Some(re) => Some(Regex::new(re).map_err(|e| OptionsError::Regex {
                element: text.to_string(),
                msg: e.to_string(),
            })?),
            None => None,
        };
        Ok(Element {
            text: text.to_string(),
            regex,
        })
    }

    /// The name equals the element; or a python_function's part after the
    /// last `"): "` does; or the element's regex matches somewhere in the name.
    pub fn matches(&self, name: &str, python_function: bool) -> bool {
        if name == self.text {
            return true;
        }
        if python_function {
            if let Some(p) = name.rfind("): ") {
                if name[p + 3..] == self.text {
                    return true;
                }
            }
        }
        self.regex.as_ref().is_some_and(|r| r.is_match(name))
    }

    pub fn is_regex(&self) -> bool {
        self.regex.is_some()
    }
}

/// A bad `--chain` or category list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    #[error("invalid regex in chain element {element:?}: {msg}")]
    Regex { element: String, msg: String },
    #[error("empty element in chain {0:?} (elements are separated by '>')")]
    EmptyElement(String),
}

/// What to check, built once (see `cli::hierarchy::HierarchyArgs::to_options`).
#[derive(Debug, Clone)]
pub struct HierarchyOptions {
    /// Distinct elements over all chains.
    pub elements: Vec<Element>,
    /// Each chain as indices into `elements`.
    pub chains: Vec<Vec<usize>>,
    pub categories: Vec<String>,
    pub any_thread: bool,
    /// Uncontained children listed per link.
    pub examples: usize,
    /// How step contexts are chosen for calls per context.
    pub selector: Selector,
    /// Also join each function's calls to the GPU work they launched
    /// (needs the ledger; off: containment and durations only, several
    /// times faster).
    pub gpu_work: bool,
}

impl HierarchyOptions {
    /// `chains` as written (`"a>b>c"`, elements trimmed); empty → the
    /// default chain. Empty `categories` → the default categories.
    pub fn new(
        chains: &[String],
        categories: &[String],
        any_thread: bool,
        examples: usize,
        selector: Selector,
    ) -> Result<Self, OptionsError> {
        let default = [DEFAULT_CHAIN.to_string()];
        let chains_text = if chains.is_empty() {
            &default[..]
        } else {
            chains
        };
        let mut elements: Vec<Element> = Vec::new();
        let mut chains = Vec::new();
        for ch in chains_text {
            let mut idx = Vec::new();
            for part in ch.split('>').map(str::trim) {
                if part.is_empty() {
                    return Err(OptionsError::EmptyElement(ch.clone()));
                }
                let k = match elements.iter().position(|e| e.text == part) {
                    Some(k) => k,
                    None => {
                        elements.push(Element::parse(part)?);
                        elements.len() - 1
                    }
                };
                idx.push(k);
            }
            chains.push(idx);
        }
        let categories = if categories.is_empty() {
            DEFAULT_CATEGORIES.iter().map(|s| s.to_string()).collect()
        } else {
            categories.to_vec()
        };
        Ok(HierarchyOptions {
            elements,
            chains,
            categories,
            any_thread,
            examples,
            selector,
            gpu_work: true,
        })
    }
}

/// The options of the hierarchy analysis as users write them (flags,
/// Python keywords, records); [`ChainsSpec::options`] checks and compiles
/// them into [`HierarchyOptions`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct ChainsSpec {
    /// A chain "parent>child>grandchild" (`re:RE` elements match by
    /// regex); repeat for several
    /// [default: sample_tokens>propose_draft_token_ids>proposer.propose]
    #[cfg_attr(feature = "cli", arg(long = "chain", value_name = "A>B>C"))]
    pub chains: Vec<String>,
    /// Event category taking part; repeat for several (replaces the default
    /// list cpu_op, user_annotation, python_function, Operator).
    #[cfg_attr(feature = "cli", arg(long = "category", value_name = "CAT"))]
    pub categories: Vec<String>,
    /// Containment across threads: ignore pid/tid.
    #[cfg_attr(feature = "cli", arg(long))]
    pub any_thread: bool,
    /// Uncontained children listed per link.
    #[cfg_attr(feature = "cli", arg(long, value_name = "N", default_value_t = DEFAULT_EXAMPLES))]
    pub examples: usize,
    /// Skip the GPU work per function (containment and durations only:
    /// reads only the chain's events, several times faster). In Python and
    /// records the field `gpu_work` (default true) says the opposite.
    #[cfg_attr(
        feature = "cli",
        arg(long = "no-gpu-work", action = clap::ArgAction::SetFalse)
    )]
    pub gpu_work: bool,
}

/// Uncontained children listed per link by default.
pub const DEFAULT_EXAMPLES: usize = 5;

impl Default for ChainsSpec {
    fn default() -> Self {
        ChainsSpec {
            chains: Vec::new(),
            categories: Vec::new(),
            any_thread: false,
            examples: DEFAULT_EXAMPLES,
            gpu_work: true,
        }
    }
}

impl ChainsSpec {
    /// Checks and compiles the options (contexts chosen by `selector`).
    pub fn options(&self, selector: &Selector) -> Result<HierarchyOptions, OptionsError> {
        let mut o = HierarchyOptions::new(
            &self.chains,
            &self.categories,
            self.any_thread,
            self.examples,
            selector.clone(),
        )?;
        o.gpu_work = self.gpu_work;
        Ok(o)
    }

    /// The options that compiled into `o` (`gpu_work` as given).
    pub fn of(o: &HierarchyOptions, gpu_work: bool) -> ChainsSpec {
        let chains = o
            .chains
            .iter()
            .map(|c| {
                let names: Vec<&str> = c.iter().map(|&k| o.elements[k].text.as_str()).collect();
                names.join(">")
            })
            .collect();
        ChainsSpec {
            chains,
            categories: o.categories.clone(),
            any_thread: o.any_thread,
            examples: o.examples,
            gpu_work,
        }
    }
}

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
        let mut busy: Vec<Ns> = Vec::with_capacity(queries.len());
        let (mut kernels, mut with_work, mut sum) = (0u64, 0u64, 0i128);
        let overlaps = attribution::attribute_each(ledger, &queries, |_, w| {
            kernels += w.kernels;
            with_work += u64::from(w.has_gpu_work());
            sum += w.busy;
            busy.push(Ns(i64::try_from(w.busy).unwrap_or(i64::MAX)));
        });
        drop(queries);
        let calls = busy.len() as u64;
        FunctionGpu {
            calls_with_gpu_work: with_work,
            kernels,
            kernels_per_call: (calls > 0).then(|| kernels as f64 / calls as f64),
            gpu_busy_median_ms: ExactSummary::of(&busy).map(|s| s.median.ms()),
            gpu_busy_sum_ns: sum,
            gpu_busy_per_token_ms: None,
            partially_overlapping_calls: overlaps.partial,
        }
    }
}

/// The GPU work a function's calls launched (with a kernels analysis in
/// the plan): for `proposer.propose`, the draft model's GPU cost.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionGpu {
    /// Outermost calls that launched GPU work.
    pub calls_with_gpu_work: u64,
    pub kernels: u64,
    /// kernels / outermost calls.
    pub kernels_per_call: Option<f64>,
    /// Median over the outermost calls of their GPU busy time.
    pub gpu_busy_median_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub gpu_busy_sum_ns: i128,
    /// Σ GPU busy of the outermost calls / completion tokens.
    pub gpu_busy_per_token_ms: Option<f64>,
    /// Outermost calls overlapping another partially (never written by
    /// PyTorch): a launch call in both is counted in the later one. Shown
    /// only when not 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub partially_overlapping_calls: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl TraceHierarchy {
    /// Adds GPU busy per token to every function with GPU work figures.
    pub fn set_tokens(&mut self, tokens: Option<u64>) {
        let t = tokens.filter(|&t| t > 0).map(i128::from);
        for f in self.chains.iter_mut().flat_map(|c| c.functions.iter_mut()) {
            if let Some(g) = &mut f.gpu {
                g.gpu_busy_per_token_ms = t.map(|den| {
                    Exact {
                        num: g.gpu_busy_sum_ns,
                        den,
                    }
                    .ms()
                });
            }
        }
    }
}

/// An uncontained child, for the report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Example {
    /// The event's full name.
    pub name: String,
    /// Start, µs as Kineto writes it.
    pub ts: String,
    /// Duration, µs.
    pub dur: String,
    /// "pid/tid".
    pub lane: String,
    /// Index in `traceEvents`.
    pub event_index: u64,
    /// Parent-element events sharing at least one instant with it
    /// ("name [ts +dur]", by start; at most [`MAX_OVERLAP_NAMES`]).
    pub overlapping: Vec<String>,
    pub overlapping_total: u64,
}

/// One link of a chain.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Link {
    pub parent: String,
    pub child: String,
    pub children: u64,
    pub contained: u64,
    pub uncontained: u64,
    pub parents_without_child: u64,
    /// `uncontained == 0`.
    pub holds: bool,
    pub examples: Vec<Example>,
}

/// Calls and inclusive durations of one element.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionStats {
    pub name: String,
    pub calls: u64,
    pub outermost_calls: u64,
    pub median_ms: Option<f64>,
    pub mean_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub min_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub total_ms: Option<f64>,
    /// outermost_calls / step contexts; null without contexts.
    pub calls_per_context: Option<f64>,
    /// GPU work by launch correlation (when the plan has the kernels
    /// analysis).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<FunctionGpu>,
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub exact: Option<ExactSummary>,
}

/// One chain's figures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ChainResult {
    pub chain: Vec<String>,
    pub links: Vec<Link>,
    pub functions: Vec<FunctionStats>,
}

impl ChainResult {
    pub fn holds(&self) -> bool {
        self.links.iter().all(|l| l.holds)
    }
}

/// The figures of one trace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceHierarchy {
    pub path: String,
    /// Selected step-context name, when there are contexts.
    pub context: Option<String>,
    pub contexts: Option<u64>,
    pub any_thread: bool,
    pub categories: Vec<String>,
    pub chains: Vec<ChainResult>,
    pub events: u64,
    pub meta: Meta,
    /// False when the file could not be read to its end (figures cover
    /// the events before the problem; `error` says what it was).
    pub complete: bool,
    pub error: Option<String>,
}

impl TraceHierarchy {
    /// Every link of every chain holds.
    pub fn holds(&self) -> bool {
        self.chains.iter().all(ChainResult::holds)
    }
}

/// Median ratio of one function, candidate / baseline.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FunctionRatio {
    pub name: String,
    pub median_ratio: Option<f64>,
    pub baseline_median_ms: Option<f64>,
    pub candidate_median_ms: Option<f64>,
}

/// Two traces: baseline (first, AR) against candidate (second, MTP).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Comparison {
    pub baseline: String,
    pub candidate: String,
    pub functions: Vec<FunctionRatio>,
}

/// Median ratios per function (each distinct element once, in chain order).
pub fn compare(base: &TraceHierarchy, cand: &TraceHierarchy) -> Comparison {
    let find = |t: &TraceHierarchy, name: &str| -> Option<FunctionStats> {
        t.chains
            .iter()
            .flat_map(|c| &c.functions)
            .find(|f| f.name == name)
            .cloned()
    };
    let mut functions: Vec<FunctionRatio> = Vec::new();
    for f in base.chains.iter().flat_map(|c| &c.functions) {
        if functions.iter().any(|r| r.name == f.name) {
            continue;
        }
        let c = find(cand, &f.name);
        let median =
            |s: &Option<FunctionStats>| s.as_ref().and_then(|s| s.exact.as_ref()).map(|e| e.median);
        functions.push(FunctionRatio {
            name: f.name.clone(),
            median_ratio: ratio(median(&c), f.exact.as_ref().map(|e| e.median)),
            baseline_median_ms: f.median_ms,
            candidate_median_ms: c.as_ref().and_then(|c| c.median_ms),
        });
    }
    Comparison {
        baseline: base.path.clone(),
        candidate: cand.path.clone(),
        functions,
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
