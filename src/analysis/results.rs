//! The figures of every analysis of one trace, keyed by analysis: typed
//! access for the code that knows an analysis ([`Results::get`]), and a
//! serde form for the code that does not (records, `merge`, Python), in
//! registry order, so documents keep one key order whatever the plan's.
//!
//! ```text
//!  Results [ (rank 0, "pairs", TracePairs) (rank 1, "hierarchy", TraceHierarchy) … ]
//!    get::<Pair>()      → Option<&TracePairs>       (by the analysis's type)
//!    serialize          → {"pairs": {…}, "hierarchy": {…}}   (registry order)
//!    deserialize        → each key decoded by its registry entry (exact: no
//!                         detour through serde_json::Value, so i128 sums survive)
//! ```

use super::{Analysis, Output};
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::any::{Any, TypeId};
use std::fmt;

/// A result of some analysis, behind a pointer.
pub trait AnyOutput: Any + fmt::Debug + Send + Sync + erased_serde::Serialize {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    fn clone_box(&self) -> Box<dyn AnyOutput>;
    fn eq_dyn(&self, other: &dyn AnyOutput) -> bool;
}

impl<T: Output> AnyOutput for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
    fn clone_box(&self) -> Box<dyn AnyOutput> {
        Box::new(self.clone())
    }
    fn eq_dyn(&self, other: &dyn AnyOutput) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

erased_serde::serialize_trait_object!(AnyOutput);

type Decode =
    fn(&mut dyn erased_serde::Deserializer<'_>) -> Result<Box<dyn AnyOutput>, erased_serde::Error>;
type SetTokens = fn(&mut dyn AnyOutput, Option<u64>, Option<&str>);
type InResultsFn = fn(&dyn AnyOutput) -> Option<super::InResults>;
/// Adds an analysis to a plan, its options as JSON (checked, compiled).
pub type AddTo = fn(
    super::Plan,
    &serde_json::Value,
    &crate::contexts::Selector,
) -> Result<super::Plan, crate::api::ApiError>;
/// Runs an analysis as its subcommand, options as JSON.
pub type RunCommand = fn(
    &[std::path::PathBuf],
    &crate::api::Common,
    &serde_json::Value,
) -> Result<crate::api::AnyOutcome, crate::api::ApiError>;

/// Gives an analysis's section of a campaign's outputs (`batch`).
pub type BatchSection = fn(&super::Campaign<'_>) -> Option<super::Section>;

/// Gives what an analysis prints on `batch`'s stdout.
pub type BatchStdout = fn(&super::Campaign<'_>) -> Option<super::Headline>;

/// An analysis's `traces.csv` columns over a campaign: given every file's
/// results (path order), its headers and a writer of one file's cells.
pub type TraceColumnsFn = fn(&[&Results]) -> TraceColumns;

/// What a trace's results say of its run, for `batch`'s matching
/// ([`crate::api::Command::trace_facts`]).
pub type FactsFn = for<'a> fn(&'a Results) -> Option<super::TraceFacts<'a>>;

/// An analysis's figures of a matched (baseline, candidate) pair of
/// traces ([`crate::api::Command::batch_compare`]).
pub type CompareFn = fn(&Results, &Results) -> Option<super::Compared>;

/// An analysis's figures over a workload's runs of each side
/// ([`crate::api::Command::batch_pool`]).
pub type PoolFn = fn(&str, &[&Results], &[&Results]) -> Option<super::Pooled>;

/// The options `batch` gives an analysis from the campaign's flags
/// ([`crate::api::Command::batch_defaults`]).
pub type DefaultsFn =
    fn(&crate::batch::records::CampaignOptions) -> serde_json::Map<String, serde_json::Value>;

/// One file's `traces.csv` cells of one analysis.
type TraceCells = Box<dyn Fn(&Results) -> Vec<crate::report::Cell>>;

/// An analysis's `traces.csv` columns, type-erased: built once per table,
/// since they may depend on the campaign (hierarchy's chain functions).
pub struct TraceColumns {
    /// The headers (`NAME_key`, or the key itself for legacy columns).
    pub heads: Vec<String>,
    cells: TraceCells,
}

impl TraceColumns {
    /// One file's cells (nulls when the analysis did not run on it).
    pub fn cells(&self, r: &Results) -> Vec<crate::report::Cell> {
        (self.cells)(r)
    }
}

/// One line of the registry: what the code that names no analysis needs
/// to know of one.
#[derive(Clone, Copy)]
pub struct Entry {
    /// [`Analysis::NAME`].
    pub name: &'static str,
    /// [`Analysis::KEY`].
    pub key: &'static str,
    analysis: fn() -> TypeId,
    decode: Decode,
    set_tokens: SetTokens,
    in_results: InResultsFn,
    command: Option<RunCommand>,
    add_to: Option<AddTo>,
    section: Option<BatchSection>,
    stdout: Option<BatchStdout>,
    listed: Option<&'static str>,
    trace_columns: Option<TraceColumnsFn>,
    report_columns: Option<TraceColumnsFn>,
    facts: Option<FactsFn>,
    compare: Option<CompareFn>,
    pool: Option<PoolFn>,
    defaults: Option<DefaultsFn>,
}

impl Entry {
    /// The registry line of analysis `A`.
    pub const fn of<A: Analysis>() -> Entry {
        Entry {
            name: A::NAME,
            key: A::KEY,
            analysis: TypeId::of::<A>,
            decode: decode::<A>,
            set_tokens: set_tokens::<A>,
            in_results: in_results::<A>,
            command: None,
            add_to: None,
            section: None,
            stdout: None,
            listed: None,
            trace_columns: None,
            report_columns: None,
            facts: None,
            compare: None,
            pool: None,
            defaults: None,
        }
    }

    /// The registry line of analysis `A` that is also a subcommand (and
    /// a Python function): `torchtrace.run(NAME, …)` finds it here.
    pub const fn command<A: crate::api::Command>() -> Entry {
        let mut e = Entry::of::<A>();
        e.command = Some(crate::api::run_json::<A>);
        if A::IN_BATCH {
            e.add_to = Some(crate::api::add_json::<A>);
            e.section = Some(A::batch_section);
            e.stdout = Some(A::batch_stdout);
            e.listed = A::BATCH_LISTED;
            e.trace_columns = Some(trace_columns::<A>);
            e.report_columns = Some(report_columns::<A>);
            e.facts = Some(facts::<A>);
            e.compare = Some(compare::<A>);
            e.pool = Some(pool::<A>);
            e.defaults = Some(A::batch_defaults);
        }
        e
    }

    /// Its columns of `report.md`'s "Worker traces" table, if it runs in
    /// batch ([`crate::api::Command::report_columns`]): labels as heads.
    pub fn report_columns_fn(&self) -> Option<TraceColumnsFn> {
        self.report_columns
    }

    /// What a trace's results say of its run, if it runs in batch
    /// ([`crate::api::Command::trace_facts`]).
    pub fn facts_fn(&self) -> Option<FactsFn> {
        self.facts
    }

    /// Its figures of a matched pair of traces, if it runs in batch
    /// ([`crate::api::Command::batch_compare`]).
    pub fn compare_fn(&self) -> Option<CompareFn> {
        self.compare
    }

    /// Its figures over a workload's runs, if it runs in batch
    /// ([`crate::api::Command::batch_pool`]).
    pub fn pool_fn(&self) -> Option<PoolFn> {
        self.pool
    }

    /// The options batch gives it from the campaign's flags, if it runs in
    /// batch ([`crate::api::Command::batch_defaults`]).
    pub fn defaults_fn(&self) -> Option<DefaultsFn> {
        self.defaults
    }

    /// Its columns of `batch`'s `traces.csv`, if it runs in batch:
    /// [`crate::api::Command::trace_columns`], type-erased.
    pub fn trace_columns_fn(&self) -> Option<TraceColumnsFn> {
        self.trace_columns
    }

    /// Its entry in `batch`'s report.md `Files:` line:
    /// [`crate::api::Command::BATCH_LISTED`].
    pub fn batch_listed(&self) -> Option<&'static str> {
        self.listed
    }

    /// What it prints on `batch`'s stdout, if it runs in batch:
    /// [`crate::api::Command::batch_stdout`].
    pub fn batch_stdout_fn(&self) -> Option<BatchStdout> {
        self.stdout
    }

    /// Its section of a campaign's outputs (`batch`'s report, files and
    /// figures), if it runs in batch: [`crate::api::Command::batch_section`].
    pub fn batch_section_fn(&self) -> Option<BatchSection> {
        self.section
    }

    /// How to add it to a plan with options as JSON, if it has options
    /// users write (a subcommand's): `batch` runs every such analysis.
    pub fn add_to_fn(&self) -> Option<AddTo> {
        self.add_to
    }

    /// How to run it as a subcommand, if it is one.
    pub fn command_fn(&self) -> Option<RunCommand> {
        self.command
    }

    fn is<A: Analysis>(&self) -> bool {
        (self.analysis)() == TypeId::of::<A>()
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("key", &self.key)
            .finish()
    }
}

fn decode<A: Analysis>(
    d: &mut dyn erased_serde::Deserializer<'_>,
) -> Result<Box<dyn AnyOutput>, erased_serde::Error> {
    let out: A::Output = erased_serde::deserialize(d)?;
    Ok(Box::new(out))
}

fn trace_columns<A: crate::api::Command>(all: &[&Results]) -> TraceColumns {
    let outputs: Vec<&A::Output> = all.iter().filter_map(|r| r.get::<A>()).collect();
    let cols = A::campaign_trace_columns(&outputs);
    let heads = cols
        .iter()
        .map(|c| match A::LEGACY_TRACE_KEYS {
            true => c.key.clone(),
            false => format!("{}_{}", A::NAME, c.key),
        })
        .collect();
    columns_of::<A>(heads, cols)
}

fn report_columns<A: crate::api::Command>(_: &[&Results]) -> TraceColumns {
    let cols = A::report_columns();
    let heads = cols
        .iter()
        .map(|c| c.label.clone().unwrap_or_else(|| c.key.clone()));
    columns_of::<A>(heads.collect(), cols)
}

/// `cols` of analysis `A`, type-erased: one file's cells, nulls where it
/// did not run.
fn columns_of<A: Analysis>(
    heads: Vec<String>,
    cols: Vec<crate::views::Column<A::Output>>,
) -> TraceColumns {
    let cells = move |r: &Results| match r.get::<A>() {
        Some(out) => cols.iter().map(|c| c.cell(out)).collect(),
        None => vec![crate::report::Cell::Null; cols.len()],
    };
    TraceColumns {
        heads,
        cells: Box::new(cells),
    }
}

fn facts<A: crate::api::Command>(r: &Results) -> Option<super::TraceFacts<'_>> {
    r.get::<A>().and_then(A::trace_facts)
}

fn compare<A: crate::api::Command>(b: &Results, c: &Results) -> Option<super::Compared> {
    A::batch_compare(b.get::<A>(), c.get::<A>())
}

fn pool<A: crate::api::Command>(
    workload: &str,
    b: &[&Results],
    c: &[&Results],
) -> Option<super::Pooled> {
    fn outputs<'r, A: Analysis>(side: &[&'r Results]) -> Vec<&'r A::Output> {
        side.iter().filter_map(|r| r.get::<A>()).collect()
    }
    A::batch_pool(workload, &outputs::<A>(b), &outputs::<A>(c))
}

fn set_tokens<A: Analysis>(out: &mut dyn AnyOutput, tokens: Option<u64>, source: Option<&str>) {
    if let Some(out) = out.as_any_mut().downcast_mut::<A::Output>() {
        A::set_tokens(out, tokens, source);
    }
}

fn in_results<A: Analysis>(out: &dyn AnyOutput) -> Option<super::InResults> {
    out.as_any().downcast_ref::<A::Output>().map(A::in_results)
}

fn registry() -> &'static [Entry] {
    crate::analyses::REGISTRY
}

/// One analysis's result and where it sorts.
struct Slot {
    /// Position in the registry; analyses outside it (a library user's)
    /// sort after, in the order they were added.
    rank: usize,
    entry: Entry,
    value: Box<dyn AnyOutput>,
}

impl Slot {
    fn is<A: Analysis>(&self) -> bool {
        self.entry.is::<A>()
    }
}

impl Clone for Slot {
    fn clone(&self) -> Self {
        Slot {
            rank: self.rank,
            entry: self.entry,
            value: self.value.clone_box(),
        }
    }
}

/// The results of the analyses of one trace, in registry order.
#[derive(Clone, Default)]
pub struct Results {
    slots: Vec<Slot>,
}

impl Results {
    /// Puts analysis `A`'s result in (replacing an earlier one).
    pub fn insert<A: Analysis>(&mut self, out: A::Output) {
        self.slots.retain(|s| !s.is::<A>());
        let rank = registry()
            .iter()
            .position(Entry::is::<A>)
            .unwrap_or(usize::MAX);
        let at = self.slots.partition_point(|s| s.rank <= rank);
        let slot = Slot {
            rank,
            entry: Entry::of::<A>(),
            value: Box::new(out),
        };
        self.slots.insert(at, slot);
    }

    /// Moves `other`'s results in (replacing this one's of the same
    /// analyses), each where registry order puts it; analyses outside the
    /// registry after, in the order they came.
    pub fn absorb(&mut self, other: Results) {
        for slot in other.slots {
            let analysis = (slot.entry.analysis)();
            self.slots.retain(|s| (s.entry.analysis)() != analysis);
            let at = self.slots.partition_point(|s| s.rank <= slot.rank);
            self.slots.insert(at, slot);
        }
    }

    /// Analysis `A`'s result, if it ran.
    pub fn get<A: Analysis>(&self) -> Option<&A::Output> {
        self.slot::<A>()
            .and_then(|s| s.value.as_any().downcast_ref::<A::Output>())
    }

    /// Analysis `A`'s result, to change it.
    pub fn get_mut<A: Analysis>(&mut self) -> Option<&mut A::Output> {
        self.slots
            .iter_mut()
            .find(|s| s.is::<A>())
            .and_then(|s| s.value.as_any_mut().downcast_mut::<A::Output>())
    }

    /// Takes analysis `A`'s result out.
    pub fn take<A: Analysis>(&mut self) -> Option<A::Output> {
        let at = self.slots.iter().position(|s| s.is::<A>())?;
        let slot = self.slots.remove(at);
        slot.value
            .into_any()
            .downcast::<A::Output>()
            .ok()
            .map(|b| *b)
    }

    fn slot<A: Analysis>(&self) -> Option<&Slot> {
        self.slots.iter().find(|s| s.is::<A>())
    }

    /// The results as (key, result), in registry order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &dyn AnyOutput)> {
        self.slots.iter().map(|s| (s.entry.key, &*s.value))
    }

    /// The run's completion tokens became known: every result fills its
    /// per-token figures ([`Analysis::set_tokens`]).
    pub fn set_tokens(&mut self, tokens: Option<u64>, source: Option<&str>) {
        for s in &mut self.slots {
            (s.entry.set_tokens)(&mut *s.value, tokens, source);
        }
    }

    /// Each result as a trace entry of `results.json` shows it
    /// ([`Analysis::in_results`]), with its key, in registry order.
    pub fn in_results(&self) -> Vec<(&'static str, super::InResults)> {
        self.slots
            .iter()
            .filter_map(|s| (s.entry.in_results)(&*s.value).map(|j| (s.entry.key, j)))
            .collect()
    }

    /// What the results say of the trace's run: the first registry entry's
    /// [`crate::api::Command::trace_facts`] that gives them.
    pub fn facts(&self) -> Option<super::TraceFacts<'_>> {
        let mut hooks = registry().iter().filter_map(Entry::facts_fn);
        hooks.find_map(|f| f(self))
    }

    /// Whether the results of the analysis with this key are here.
    pub fn contains_key(&self, key: &str) -> bool {
        self.slots.iter().any(|s| s.entry.key == key)
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// One result as a JSON value, by key (as documents and Python see it).
    pub fn json(&self, key: &str) -> Option<serde_json::Value> {
        let slot = self.slots.iter().find(|s| s.entry.key == key)?;
        serde_json::to_value(&*slot.value).ok()
    }
}

impl fmt::Debug for Results {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.slots.iter().map(|s| (s.entry.key, &s.value)))
            .finish()
    }
}

impl PartialEq for Results {
    fn eq(&self, other: &Self) -> bool {
        self.slots.len() == other.slots.len()
            && self.slots.iter().zip(&other.slots).all(|(a, b)| {
                a.rank == b.rank && a.entry.key == b.entry.key && a.value.eq_dyn(&*b.value)
            })
    }
}

impl Serialize for Results {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.slots.len()))?;
        for slot in &self.slots {
            map.serialize_entry(slot.entry.key, &*slot.value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Results {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ResultsVisitor)
    }
}

struct ResultsVisitor;

impl<'de> Visitor<'de> for ResultsVisitor {
    type Value = Results;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map from analysis key to its results")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Results, M::Error> {
        let mut slots: Vec<Slot> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let Some((rank, entry)) = registry().iter().enumerate().find(|(_, e)| e.key == key)
            else {
                let known: Vec<&str> = registry().iter().map(|e| e.key).collect();
                return Err(de::Error::custom(format!(
                    "results of an unknown analysis {key:?} (this torchtrace knows {})",
                    known.join(", ")
                )));
            };
            if slots.iter().any(|s| s.rank == rank) {
                return Err(de::Error::custom(format!("results of {key:?} twice")));
            }
            let value = map.next_value_seed(Seed(entry))?;
            slots.push(Slot {
                rank,
                entry: *entry,
                value,
            });
        }
        slots.sort_by_key(|s| s.rank);
        Ok(Results { slots })
    }
}

/// Decodes one analysis's result with its registry entry.
struct Seed<'a>(&'a Entry);

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Box<dyn AnyOutput>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let mut erased = <dyn erased_serde::Deserializer>::erase(d);
        (self.0.decode)(&mut erased).map_err(de::Error::custom)
    }
}
