//! One pass, many analyses: the [`Analysis`] trait, the [`Plan`] of the
//! analyses to run, and the driver that feeds them all from a single read
//! of a trace.
//!
//! ```text
//!  source ─ trace::read_* (union of the prefilters) ─┬─ Steps (CPU user annotations, always)
//!                                                    ├─ ledger::Collector (when a plan needs it)
//!                                                    ├─ analysis 1 .push(event, pos)
//!                                                    └─ analysis 2 .push(event, pos)
//!  end of read ─ Contexts::select (once), Ledger (once)
//!              ─ every analysis .finish(&Finished) ─ Results, keyed by analysis ─ TraceResult
//! ```
//!
//! The driver names no analysis. What several analyses share — the step
//! index ([`Steps`], [`Contexts`]) and the launch→activity [`Ledger`] — is
//! the driver's: it builds the ledger only when an analysis of the plan
//! asks for it ([`Analysis::ledger`]) and hands it to every analysis in
//! [`Finished`], so no analysis depends on another or on plan order.
//!
//! Every subcommand and `batch` go through [`analyze_path`] or
//! [`analyze_reader`]: this is the one place outside `trace/` where traces
//! are read. A new analysis is a folder under `src/analyses/` implementing
//! [`Analysis`], and one line in the registry above this module, which
//! also gives the [`Order`] of results ([`Plan::in_order`]). The engine
//! names no analysis and none of the layers above it: the registry, the
//! subcommands, `batch`, the figures, the command line.

mod collect;
mod gate;
mod results;
mod shared;

pub use collect::{Collected, Collector, Collects, Use};
pub use results::{AnyOutput, Kind, Order, Results, ResultsSeed};
pub use shared::Shared;

use gate::Gate;

use crate::contexts::{Contexts, Selector, Steps};
use crate::ledger::{self, Ledger};
use crate::trace::{self, Event, EventPos, Meta, Prefilter, ReadError, ReadOptions, TraceError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Whether an analysis needs the launch→activity [`Ledger`] (every launch
/// call and GPU activity of the trace: the costly part of a read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Need {
    /// Never.
    #[default]
    No,
    /// Only when a first read without it says so
    /// ([`Analysis::wants_ledger`]); the trace is then read a second time
    /// with it. A source that cannot be read twice (stdin, an archive
    /// member) is read once, with the ledger.
    OnDemand,
    /// Always.
    Yes,
}

/// A result that can travel: compared, cloned, and written to and read
/// from records exactly (see `crate::record`).
pub trait Output:
    Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

impl<T> Output for T where
    T: Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

/// One analysis of one trace: it names the events it needs, receives them
/// in file order, and finishes into its [`Analysis::Output`].
///
/// A value of the type is the streaming state of one trace; the plan keeps
/// the [`Analysis::Config`] and starts one state per trace.
pub trait Analysis: Send + Sized + 'static {
    /// The analysis's name (its subcommand, `torchtrace.run(NAME, …)`).
    const NAME: &'static str;
    /// The key of its result in records, results and JSON documents.
    const KEY: &'static str;
    /// What a plan holds for it: options checked and compiled once.
    type Config: Clone + Send + Sync + 'static;
    /// Its figures for one trace.
    type Output: Output;

    /// A fresh state for one trace.
    fn start(config: &Self::Config) -> Self;
    /// Whether it needs the ledger (handed over in [`Finished::ledger`]).
    fn ledger(_config: &Self::Config) -> Need {
        Need::No
    }
    /// The collector it reads besides its own state (the host store:
    /// `crate::hostops::store`), taken once in its finish with
    /// [`Finished::collected`].
    fn collects(_config: &Self::Config) -> Option<Use> {
        None
    }
    /// The raw-bytes test for the events [`Analysis::push`] needs; it must
    /// never reject one of them.
    fn prefilter(&self) -> Prefilter;
    /// One parsed event that some analysis of the plan admitted.
    fn push(&mut self, ev: &Event<'_>, at: EventPos);
    /// Turns what was kept into figures.
    fn finish(self, trace: &Finished<'_>) -> Self::Output;
    /// With [`Need::OnDemand`]: whether the figures of a read without the
    /// ledger call for a second read with it.
    fn wants_ledger(_config: &Self::Config, _output: &Self::Output) -> bool {
        false
    }
    /// The run's completion tokens became known (run information, found
    /// after the read; `source` says where from): fill the per-token
    /// figures.
    fn set_tokens(_output: &mut Self::Output, _tokens: Option<u64>, _source: Option<&str>) {}
    /// How its figures appear in each trace entry of `batch`'s
    /// `results.json`: by default under its [`Analysis::KEY`], less what
    /// the entry says already (`path`, `complete`, `error`), as JSON text
    /// (a JSON value of a trace of 400 k steps took 4.5 times its text).
    fn in_results(output: &Self::Output) -> InResults {
        match crate::record::json_text(output) {
            Ok(json) => InResults::Text {
                json,
                without: &["path", "complete", "error"],
            },
            Err(Some(bytes)) => InResults::Nested(serde_json::json!({
                "error": format!(
                    "its figures' JSON text ({}) did not fit in the memory left: not written",
                    crate::memory::size(bytes)
                )
            })),
            Err(None) => InResults::Nested(serde_json::Value::Null),
        }
    }
}

/// An analysis's figures in a trace entry of `results.json`.
#[derive(Debug, Clone, PartialEq)]
pub enum InResults {
    /// Under its key, written from its compact JSON text with every
    /// object's keys in the order a JSON value keeps them (sorted), less
    /// the top-level keys `without`: the bytes of the value, without the
    /// value.
    Text {
        json: String,
        without: &'static [&'static str],
    },
    /// Under its key.
    Nested(serde_json::Value),
    /// Its keys among the entry's own (`pair`'s, as the entry has always
    /// had them).
    Flattened(serde_json::Map<String, serde_json::Value>),
}

/// An analysis's configuration names its analysis, so that
/// `plan.with(config)` needs no type annotation.
pub trait Configures: Clone + Send + Sync + 'static {
    type Analysis: Analysis<Config = Self>;
}

/// What every analysis may consult when it finishes.
pub struct Finished<'a> {
    /// The label the trace is reported under.
    pub path: &'a str,
    /// The file read, when it is one on disk (not stdin, an archive
    /// member or a stream): what lies beside it (`capture_traces/`, issue
    /// 57) is found from here, `batch`'s label being relative.
    pub file: Option<&'a Path>,
    pub steps: &'a Steps,
    pub contexts: &'a Contexts,
    pub meta: &'a Meta,
    /// The launch calls and GPU activities, when an analysis of the plan
    /// asked for them.
    pub ledger: Option<&'a Ledger>,
    /// What the analyses' collectors kept ([`Analysis::collects`]).
    pub collected: &'a Collected,
    /// Elements of `traceEvents` read (intact ones, on a read error).
    pub events: u64,
    /// The read error, if the trace could not be read to its end.
    pub error: Option<&'a ReadError>,
    /// What the finishes share, built at most once per trace
    /// ([`Finished::shared`]).
    pub slots: &'a Shared,
    /// The plan's capture traces ([`Plan::capture`]), read by
    /// `graphs::captures_of` once per trace.
    pub capture: &'a crate::tracefile::capture::CaptureSpec,
}

impl Finished<'_> {
    /// The sealed collector of type `T`, taken once by each analysis
    /// that uses it ([`Analysis::collects`]); `None` when the plan has
    /// none.
    pub fn collected<T: std::any::Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.collected.take::<T>()
    }

    /// [`Shared::get_or_make`] on this trace's slots.
    pub fn shared<K, T>(&self, key: K, make: impl FnOnce() -> T) -> Arc<T>
    where
        K: PartialEq + Send + Sync + 'static,
        T: Send + Sync + 'static,
    {
        self.slots.get_or_make(key, make)
    }

    /// Whether the trace was read to its end.
    pub fn complete(&self) -> bool {
        self.error.is_none()
    }

    /// The read error as text, for results' `error` fields.
    pub fn error_text(&self) -> Option<String> {
        self.error.map(ToString::to_string)
    }
}

/// An analysis's state behind a pointer, as the driver holds it.
trait Stage: Send {
    fn prefilter(&self) -> Prefilter;
    fn push(&mut self, ev: &Event<'_>, at: EventPos);
    fn finish(self: Box<Self>, trace: &Finished<'_>, out: &mut Results);
}

impl<A: Analysis> Stage for A {
    fn prefilter(&self) -> Prefilter {
        Analysis::prefilter(self)
    }
    fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        Analysis::push(self, ev, at)
    }
    fn finish(self: Box<Self>, trace: &Finished<'_>, out: &mut Results) {
        out.insert::<A>(Analysis::finish(*self, trace));
    }
}

/// An analysis's configuration behind a pointer, as a plan holds it.
trait Configured: Send + Sync {
    fn name(&self) -> &'static str;
    fn start(&self) -> Box<dyn Stage>;
    fn ledger(&self) -> Need;
    fn collects(&self) -> Option<Use>;
    fn wants_ledger(&self, results: &Results) -> bool;
}

struct ConfigOf<A: Analysis>(A::Config);

impl<A: Analysis> Configured for ConfigOf<A> {
    fn name(&self) -> &'static str {
        A::NAME
    }
    fn start(&self) -> Box<dyn Stage> {
        Box::new(A::start(&self.0))
    }
    fn ledger(&self) -> Need {
        A::ledger(&self.0)
    }
    fn collects(&self) -> Option<Use> {
        A::collects(&self.0)
    }
    fn wants_ledger(&self, results: &Results) -> bool {
        results
            .get::<A>()
            .is_some_and(|out| A::wants_ledger(&self.0, out))
    }
}

/// The analyses to run over each trace, how step contexts are chosen, and
/// the order their results are kept in. Cloning is cheap: the
/// configurations are shared. `Plan::new` (the registry's) orders results
/// as the registry does.
#[derive(Clone)]
pub struct Plan {
    pub selector: Selector,
    /// How the traces are read (the limit on one event); default:
    /// [`ReadOptions::default`], the environment's or 64 MiB.
    pub read: ReadOptions,
    /// The most bytes one trace's analyses may keep (`batch
    /// --member-memory`); `None`: no limit. See [`MemoryBudget`].
    pub budget: Option<u64>,
    /// The memory the traces read at once share (`batch`: the limit the
    /// process runs under, or `--memory`); `None`: not watched. See
    /// [`crate::memory`].
    pub pool: Option<Arc<crate::memory::Pool>>,
    /// The capture traces of the CUDA/HIP graphs (`--capture`): an input
    /// of the read, as the trace is; empty: `capture_traces/` beside each
    /// trace. Read once per trace (`graphs::captures_of`).
    pub capture: crate::tracefile::capture::CaptureSpec,
    analyses: Vec<Arc<dyn Configured>>,
    order: Order,
}

impl Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.analyses.iter().map(|a| a.name()).collect();
        f.debug_struct("Plan")
            .field("selector", &self.selector)
            .field("analyses", &names)
            .finish()
    }
}

impl Plan {
    /// No analyses yet; their results are kept in `order` (analyses
    /// outside it after, in the order they were added).
    pub fn in_order(selector: Selector, order: Order) -> Plan {
        Plan {
            selector,
            read: ReadOptions::default(),
            budget: None,
            pool: None,
            capture: Default::default(),
            analyses: Vec::new(),
            order,
        }
    }

    /// The plan, its traces' graphs captured in `capture` (`--capture`).
    pub fn capturing(mut self, capture: crate::tracefile::capture::CaptureSpec) -> Plan {
        self.capture = capture;
        self
    }

    /// The order results are kept in.
    pub fn order(&self) -> Order {
        self.order
    }

    /// The plan, its analyses keeping at most `bytes` per trace (checked
    /// from the events fed them: [`MemoryBudget`]).
    pub fn budgeted(mut self, bytes: Option<u64>) -> Plan {
        self.budget = bytes;
        self
    }

    /// The plan, its traces read at once sharing `pool` (a trace that
    /// cannot fit while read alone ends with [`ReadError::OverMemory`]).
    pub fn pooled(mut self, pool: Option<Arc<crate::memory::Pool>>) -> Plan {
        self.pool = pool;
        self
    }

    /// The plan, reading its traces with `read` (e.g. `--max-event-size`).
    pub fn reading(mut self, read: ReadOptions) -> Plan {
        self.read = read;
        self
    }

    /// Adds the analysis that `config` configures. Order does not
    /// matter: results are kept in the plan's order.
    pub fn with<C: Configures>(self, config: C) -> Plan {
        self.with_analysis::<C::Analysis>(config)
    }

    /// Adds analysis `A` with its configuration.
    pub fn with_analysis<A: Analysis>(mut self, config: A::Config) -> Plan {
        self.analyses.push(Arc::new(ConfigOf::<A>(config)));
        self
    }

    /// The strongest need for the ledger among the analyses.
    pub fn ledger(&self) -> Need {
        self.analyses
            .iter()
            .map(|a| a.ledger())
            .max()
            .unwrap_or_default()
    }

    /// A fresh state of every analysis, with the collector it uses.
    fn start(&self) -> Vec<(Box<dyn Stage>, Option<Use>)> {
        self.analyses
            .iter()
            .map(|a| (a.start(), a.collects()))
            .collect()
    }

    fn wants_ledger(&self, results: &Results) -> bool {
        self.analyses
            .iter()
            .filter(|a| a.ledger() == Need::OnDemand)
            .any(|a| a.wants_ledger(results))
    }
}

/// Everything the analyses of a plan found in one trace.
#[derive(Debug)]
pub struct TraceResult {
    pub path: String,
    pub meta: Meta,
    pub events: u64,
    /// The read error, when the trace could not be read to its end (the
    /// figures then cover the events before it).
    pub error: Option<TraceError>,
    /// The selected step contexts.
    pub contexts: Contexts,
    /// Each analysis's figures, keyed by analysis.
    pub results: Results,
}

impl TraceResult {
    /// The trace could not be read at all: no event before the error.
    pub fn unreadable(&self) -> bool {
        self.events == 0 && self.error.is_some()
    }

    /// The figures of analysis `A`, if the plan had it.
    pub fn get<A: Analysis>(&self) -> Option<&A::Output> {
        self.results.get::<A>()
    }

    /// Takes the figures of analysis `A` out.
    pub fn take<A: Analysis>(&mut self) -> Option<A::Output> {
        self.results.take::<A>()
    }
}

/// Reads a trace file (or `-` for stdin) once and runs every analysis of
/// `plan` over it. `progress` counts the bytes read from the file.
pub fn analyze_path(path: &Path, progress: Arc<AtomicU64>, plan: &Plan) -> TraceResult {
    analyze_file(&path.display().to_string(), path, progress, plan)
}

/// [`analyze_path`], reporting the trace under `label` (batch rows name
/// files relative to their input).
///
/// With [`Need::OnDemand`] the file is read without the ledger first and,
/// only when an analysis asks for it then, a second time with it: a trace
/// that does not need it costs what the cheap analyses cost.
pub fn analyze_file(
    label: &str,
    path: &Path,
    progress: Arc<AtomicU64>,
    plan: &Plan,
) -> TraceResult {
    let file = (path != Path::new("-")).then_some(path);
    let read = |ledger: bool, progress: Arc<AtomicU64>| {
        in_pool(label, plan, file.is_some(), |member| {
            drive(
                label,
                file,
                plan,
                ledger,
                member,
                |filter, meta, on_event| {
                    trace::read_path_with(
                        path,
                        &plan.read,
                        filter,
                        progress.clone(),
                        meta,
                        on_event,
                    )
                    .map_err(|e| e.kind)
                },
            )
        })
    };
    match plan.ledger() {
        Need::No => read(false, progress),
        Need::Yes => read(true, progress),
        Need::OnDemand if path == Path::new("-") => read(true, progress),
        Need::OnDemand => {
            let first = read(false, progress.clone());
            if first.unreadable() || !plan.wants_ledger(&first.results) {
                return first;
            }
            progress.store(0, Ordering::Relaxed);
            read(true, progress)
        }
    }
}

/// One read in the plan's memory pool, if it has one: admitted in turn;
/// a read asked to give way (`None` from `drive`) is done again alone,
/// and a member alone is never asked to. `rereadable`: the source can be
/// read again (a file on disk); one that cannot is never asked to.
fn in_pool(
    label: &str,
    plan: &Plan,
    rereadable: bool,
    mut read: impl FnMut(Option<&crate::memory::Member>) -> Option<TraceResult>,
) -> TraceResult {
    let member = plan.pool.as_ref().map(|p| p.join(rereadable));
    if let Some(done) = read(member.as_ref()) {
        return done;
    }
    drop(member);
    let alone = plan.pool.as_ref().map(|p| p.join_alone());
    read(alone.as_ref()).unwrap_or_else(|| TraceResult {
        path: label.to_string(),
        meta: Meta::default(),
        events: 0,
        error: None,
        contexts: Contexts::select(label, &Steps::default(), &plan.selector),
        results: Results::in_order(plan.order),
    })
}

/// Reads a trace from any byte source (an archive member, say), labelled
/// `label`, and runs every analysis of `plan` over it. The source is read
/// once: an analysis that needs the ledger on demand gets it.
pub fn analyze_reader<R: Read>(label: &str, src: R, plan: &Plan) -> TraceResult {
    let ledger = plan.ledger() != Need::No;
    let mut src = Some(src);
    in_pool(label, plan, false, |member| {
        let src = src.take()?;
        drive(
            label,
            None,
            plan,
            ledger,
            member,
            |filter, meta, on_event| {
                trace::read_stream_with(src, &plan.read, filter, meta, on_event)
            },
        )
    })
}

type OnEvent<'a> = dyn FnMut(&Event<'_>, EventPos) + 'a;

/// Every analysis's finish, at the same time on scoped threads: they share
/// only `finished`, read-only, and each puts its own result, so the results
/// are the same whatever order they end in (kept in the plan's order).
/// `batch`'s six finishes (the ledger's queries, the timeline, the
/// iterations' sweep, …) ran one after another after the read: 1.47 s →
/// 1.22 s on 16 cores for a 1.14 GB trace (BENCHMARKS.md).
///
/// Their working memory then adds up (+21 MB at 200 sample copies), so
/// one trace at a time finishes in parallel (`ParallelFinish`): a batch
/// of many files, already one file per core, stays serial and its memory
/// does not grow with files × analyses, and at most `-j` finishes, and
/// never more than [`MAX_FINISHING`], run at once (`in_threads`). With
/// one analysis, or `-j 1`, it stays on the calling thread.
///
/// Not rayon's pool: a read may itself run on a rayon thread (batch's
/// files), and a pool thread that waits for its finishes steals other
/// jobs — an archive member's, say, blocked on the very reader thread that
/// waits here — a deadlock.
/// The most finishes of one trace at once. `batch`'s six side by side on
/// 16 cores took no less time than three (4.60 GB: 1.34 × inflate both)
/// and held 8 MB more (82 against 74 MB); two took 1.46 ×
/// (BENCHMARKS.md, sixth lease).
pub const MAX_FINISHING: usize = 3;

fn finish_all(
    stages: Vec<(Box<dyn Stage>, Option<Use>)>,
    finished: &Finished<'_>,
    order: Order,
    stop: &(dyn Fn() -> bool + Sync),
    one_at_a_time: bool,
) -> Results {
    let stages = jobs(stages);
    let finish = |job: Vec<Box<dyn Stage>>| {
        let mut r = Results::in_order(order);
        for a in job {
            if stop() {
                break;
            }
            a.finish(finished, &mut r);
        }
        r
    };
    // Finishes side by side gain nothing past the cores there are, and
    // each holds its working memory: `-j 16` on 2 cores ran three, 12 MB
    // more than two at the 1.28 GB trace for the same wall time.
    let threads = rayon::current_num_threads()
        .min(std::thread::available_parallelism().map_or(1, usize::from))
        .min(MAX_FINISHING);
    let alone = (stages.len() > 1 && threads > 1 && !one_at_a_time)
        .then(ParallelFinish::take)
        .flatten();
    let parts: Vec<Results> = match alone {
        None => stages.into_iter().map(finish).collect(),
        Some(_turn) => in_threads(stages, threads, finish),
    };
    let mut results = Results::in_order(order);
    for part in parts {
        results.absorb(part);
    }
    results
}

/// The finishes as jobs run side by side: the collectors' users in one
/// job, one after another — readers first, then the one that may consume
/// what was collected — so that at most one of them holds its working
/// memory beside the collected store, and the last frees it as it goes
/// (issue 64: `ops` and `roofline` side by side held 63 + 64 MB of
/// working memory over their shared 29 MB at the 1.28 GB benchmark
/// trace); every other stage a job of its own. The users' job comes
/// first: it is the longest.
fn jobs(stages: Vec<(Box<dyn Stage>, Option<Use>)>) -> Vec<Vec<Box<dyn Stage>>> {
    let (mut users, others): (Vec<_>, Vec<_>) = stages.into_iter().partition(|s| s.1.is_some());
    // Stable: readers in plan order, then consumers.
    users.sort_by_key(|s| s.1.is_some_and(|u| u.consumes));
    let users: Vec<Box<dyn Stage>> = users.into_iter().map(|s| s.0).collect();
    (!users.is_empty())
        .then_some(users)
        .into_iter()
        .chain(others.into_iter().map(|s| vec![s.0]))
        .collect()
}

/// `finish` of every stage on at most `threads` scoped threads
/// ([`crate::parallel::in_threads`]): at most `-j` finishes hold their
/// working memory at once (on two cores, two of `batch`'s six). Results in
/// the stages' order.
fn in_threads<T, R>(stages: Vec<T>, threads: usize, finish: impl Fn(T) -> R + Sync) -> Vec<R>
where
    T: Send,
    R: Send + Default,
{
    crate::parallel::in_threads(stages, threads, finish)
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect()
}

/// The one trace of the process whose finishes run in parallel; given
/// back when dropped (a panic included).
struct ParallelFinish;

static FINISHING_IN_PARALLEL: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

impl ParallelFinish {
    /// The turn, unless another trace holds it.
    fn take() -> Option<ParallelFinish> {
        use std::sync::atomic::Ordering;
        FINISHING_IN_PARALLEL
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
            .then_some(ParallelFinish)
    }
}

impl Drop for ParallelFinish {
    fn drop(&mut self) {
        FINISHING_IN_PARALLEL.store(false, std::sync::atomic::Ordering::Release);
    }
}

/// A trace's memory budget, checked from the events fed to the analyses
/// (issue 59). Everything the driver keeps for a trace — the step index,
/// the ledger, each analysis's state while reading and at its finish, and
/// its figures — grows at most [`MemoryBudget::PER_EVENT`] bytes per event
/// that passes the prefilters (measured on the hostile shapes of
/// `bench/hostile_memory.py`: docs/PERFORMANCE.md, "Memory bounds"), so a trace fed
/// `bytes / PER_EVENT` events stays within `bytes`. Past that the
/// analyses are fed nothing more, the read goes on to the end (checked,
/// held nowhere), and the trace ends with [`ReadError::OverBudget`]: its
/// figures are those of the events before, marked incomplete, and a
/// `batch` campaign keeps every other trace's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    pub bytes: u64,
}

impl MemoryBudget {
    /// The most bytes kept per event fed to the analyses (every analysis
    /// of `batch`'s plan together, with the ledger and the step index,
    /// to the member's outputs written). Measured (`bench/memory.sh`,
    /// `MEMBER_ONLY=1`: peak RSS of `batch -j 1` on one trace less that on
    /// a trace of one event, over the events fed): 58–250 B on real traces
    /// of 20 k events or more, 1.46 KB on 400 k tiny decode steps, 3.65 KB
    /// on 20 k single-activity streams, the costliest shape (bytes live at
    /// the peak: 1 035 and 2 456, `tests/memory_bounds.rs`). The check
    /// counts events, not their kind, so the constant bounds the costliest
    /// measured: 4 KiB (it was 1 KiB, an estimate that 1.46–3.65 KB passed).
    pub const PER_EVENT: u64 = 4096;

    /// How many events the budget feeds.
    pub fn events(&self) -> u64 {
        self.bytes / Self::PER_EVENT
    }
}

/// The driver: one read with the union of the prefilters, then selection,
/// the ledger, and every analysis's finish. With a pool `member`, it
/// checks the pool every [`crate::memory::CHECK_EVERY`] events fed; `None`
/// when the pool asked it to yield (nothing finished: the caller reads it
/// again).
fn drive<F>(
    label: &str,
    file: Option<&Path>,
    plan: &Plan,
    with_ledger: bool,
    member: Option<&crate::memory::Member>,
    read: F,
) -> Option<TraceResult>
where
    F: FnOnce(&Prefilter, &mut Meta, &mut OnEvent<'_>) -> Result<trace::ReadStats, ReadError>,
{
    let mut stages = plan.start();
    let mut collector = with_ledger.then(ledger::Collector::default);
    let uses: Vec<Use> = stages.iter().filter_map(|s| s.1).collect();
    let mut collectors = collect::start(&uses);
    let filter = collect::read_filter(with_ledger, &collectors, &stages);
    let mut steps = Steps::default();
    let mut meta = Meta::default();
    let mut gate = Gate::new(plan.budget.map(|bytes| MemoryBudget { bytes }), member);
    let read = read(&filter, &mut meta, &mut |ev, at| {
        if !gate.admit() {
            return;
        }
        steps.push(ev, at);
        if let Some(c) = collector.as_mut() {
            c.push(ev, at);
        }
        for c in collectors.iter_mut() {
            c.2.push(ev, at);
        }
        for a in stages.iter_mut() {
            a.0.push(ev, at);
        }
    });
    let (events, error) = match read {
        Ok(st) => (st.events, None),
        Err(e) => (e.events_read(), Some(e)),
    };
    let checked = gate.checked();
    let (events, mut error) = gate.outcome(events, error)?;
    let refused = gate::at_end_of_read(member.filter(|_| checked), events)?;
    let finishing = refused.is_none();
    error = refused.or(error);
    let contexts = Contexts::select(label, &steps, &plan.selector);
    let ledger = collector.map(ledger::Collector::finish);
    let slots = Shared::default();
    let collected = Collected::of(collectors);
    let finished = Finished {
        path: label,
        file,
        steps: &steps,
        contexts: &contexts,
        meta: &meta,
        ledger: ledger.as_ref(),
        collected: &collected,
        events,
        error: error.as_ref(),
        slots: &slots,
        capture: &plan.capture,
    };
    // A failed allocation (served from the reserve, which is then spent)
    // stops the finishes between two analyses, and the trace is read again
    // alone or, alone, refused with its figures dropped: the process was
    // at its limit, and what it would still do with the figures (the
    // campaign's outputs) could not be served.
    let failed = || member.is_some_and(crate::memory::Member::allocation_failed);
    let one_at_a_time = member.is_some_and(crate::memory::Member::tight);
    let mut results = if finishing {
        finish_all(stages, &finished, plan.order, &failed, one_at_a_time)
    } else {
        Results::in_order(plan.order)
    };
    if let Some(m) = member.filter(|m| m.allocation_failed()) {
        if !m.alone() {
            return None;
        }
        error = Some(gate::over_finishing(m, events));
        results = Results::in_order(plan.order);
    } else if slots.was_short() {
        // No pool (one command, the library): the finish that gave up
        // says so, and no figure of a finish cut short is kept.
        error = Some(gate::short_of_memory(events));
        results = Results::in_order(plan.order);
    }
    Some(TraceResult {
        path: label.to_string(),
        meta: meta.clone(),
        events,
        error: error.map(|kind| TraceError {
            path: label.to_string(),
            kind,
        }),
        contexts,
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::ParallelFinish;

    /// One trace at a time holds the turn; dropping it gives it back.
    /// (Other tests' reads may hold it for a moment: wait for it.)
    #[test]
    fn one_trace_at_a_time_finishes_in_parallel() {
        let wait = || {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
            loop {
                if let Some(turn) = ParallelFinish::take() {
                    return turn;
                }
                assert!(
                    std::time::Instant::now() < until,
                    "the turn was never given back"
                );
                std::thread::yield_now();
            }
        };
        let first = wait();
        assert!(ParallelFinish::take().is_none());
        drop(first);
        drop(wait());
    }

    /// `in_threads` keeps at most `threads` finishes running, and gives
    /// the results in the stages' order whatever order they end in.
    #[test]
    fn at_most_the_given_finishes_run_at_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (running, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let out = super::in_threads((0..12u64).collect(), super::MAX_FINISHING, |k| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(12 - k));
            running.fetch_sub(1, Ordering::SeqCst);
            k * 10
        });
        assert_eq!(out, (0..12u64).map(|k| k * 10).collect::<Vec<_>>());
        let most = most.load(Ordering::SeqCst);
        assert!((1..=super::MAX_FINISHING).contains(&most), "{most} at once");
    }
}
