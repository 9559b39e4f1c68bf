//! The registry: every analysis torchtrace knows, one line each
//! ([`REGISTRY`]), and what the code that names no analysis needs to know
//! of one ([`Entry`]): its engine [`Kind`], and, for a subcommand, how to
//! run it ([`crate::command::Command`]), add it to `batch`'s plan, what it
//! gives a campaign (the hooks of [`InBatch`], type-erased) and which of
//! the paper's figures it draws for `plot` and `batch` ([`Draws`]:
//! [`paper_figures`], [`plot_plan`]).
//!
//! ```text
//!  cli, api, batch, python ─► registry (REGISTRY, Entry; Plan::new; Results' Deserialize)
//!                               │ names each analysis once, in the order of results
//!                               ▼
//!                     analyses/<name>/  ─►  analysis (engine: Plan, Kind, Results)
//! ```
//!
//! The engine (`crate::analysis`) knows no list of analyses: a [`Plan`]
//! carries the [`Order`] its results are kept in and [`Results`] are
//! decoded by the kinds of an order. This module gives torchtrace's:
//! [`Plan::new`] orders a plan's results as the registry lists them, and
//! `Results`' `Deserialize` decodes each key by its registry line.
//!
//! Adding an analysis = its folder under `src/analyses/` + one line here.
//! The registry's order is the order of results in records and documents.

use crate::analyses::{
    critical, diff, hierarchy, idle, iterations, kernels, memory, ops, pair, ranks, roofline,
};
use crate::analysis::{Analysis, Kind, Order, Plan, Results};
use crate::campaign::{
    Campaign, CampaignOptions, Compared, Figures, Headline, InBatch, Pooled, Section, TraceFacts,
};
use crate::command::{AnyOutcome, ApiError, Command, Common};
use crate::contexts::Selector;
use crate::figures::{Draws, PaperFigure, PlotInput};
use crate::trace::ReadOptions;
use serde::de::DeserializeSeed;
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::path::PathBuf;

/// A registry line with its subcommand (`Entry::with_cli`) when the command
/// line is built (feature `cli`); without it the flags' type is never named.
#[cfg(feature = "cli")]
macro_rules! cli {
    ($entry:expr, $args:ty) => {
        $entry.with_cli::<$args>()
    };
}
#[cfg(not(feature = "cli"))]
macro_rules! cli {
    ($entry:expr, $args:ty) => {
        $entry
    };
}

/// Every analysis torchtrace knows, in the order their results are written.
pub static REGISTRY: &[Entry] = ENTRIES;

const ENTRIES: &[Entry] = &[
    cli!(Entry::drawn::<pair::Pair>(), pair::cli::PairArgs),
    cli!(
        Entry::drawn::<hierarchy::Hierarchy>(),
        hierarchy::cli::HierarchyArgs
    ),
    cli!(
        Entry::drawn::<kernels::Kernels>(),
        kernels::cli::KernelsArgs
    ),
    cli!(
        Entry::in_batch::<iterations::Iterations>(),
        iterations::cli::IterationsArgs
    ),
    cli!(Entry::in_batch::<diff::Diff>(), diff::cli::DiffArgs),
    cli!(Entry::in_batch::<ranks::Ranks>(), ranks::cli::RanksArgs),
    cli!(Entry::in_batch::<ops::Ops>(), ops::cli::OpsArgs),
    cli!(Entry::in_batch::<idle::Idle>(), idle::cli::IdleArgs),
    cli!(
        Entry::in_batch::<critical::Critical>(),
        critical::cli::CriticalArgs
    ),
    cli!(
        Entry::in_batch::<roofline::Roofline>(),
        roofline::cli::RooflineArgs
    ),
    cli!(Entry::in_batch::<memory::Memory>(), memory::cli::MemoryCli),
];

/// The registry's kinds, in its order: the [`Order`] of torchtrace's plans
/// and records.
static ORDER: [Kind; ENTRIES.len()] = kinds();

const fn kinds() -> [Kind; ENTRIES.len()] {
    let mut out = [ENTRIES[0].kind; ENTRIES.len()];
    let mut i = 0;
    while i < ENTRIES.len() {
        out[i] = ENTRIES[i].kind;
        i += 1;
    }
    out
}

/// The order of results in records and documents: the registry's.
pub fn order() -> Order {
    &ORDER
}

impl Plan {
    /// A plan whose results are kept in registry order ([`order`];
    /// analyses outside the registry after, in the order they were added).
    pub fn new(selector: Selector) -> Plan {
        Plan::in_order(selector, order())
    }
}

/// Results are decoded by the registry: each key by its registry line
/// (exact: no detour through `serde_json::Value`, so i128 sums survive); a
/// key the registry does not know is an error.
impl<'de> Deserialize<'de> for Results {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Results::seed(order()).deserialize(d)
    }
}

/// [`crate::command::run`] for the analysis named `name` (its [`Analysis::NAME`]; lookup by name is the registry's), with
/// its options as a JSON object (keys as in the analysis's `Options`; a
/// missing key takes its default, an unknown one is an error): the one
/// generic entry the Python package's `torchtrace.run` calls.
pub fn run_named(
    name: &str,
    paths: &[PathBuf],
    common: &Common,
    options: &serde_json::Value,
) -> Result<AnyOutcome, ApiError> {
    let entry = REGISTRY.iter().find(|e| e.name == name).ok_or_else(|| {
        let known: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        ApiError::Arguments(format!(
            "no analysis {name:?} (there are: {})",
            known.join(", ")
        ))
    })?;
    let run = entry
        .command_fn()
        .ok_or_else(|| ApiError::Arguments(format!("the {name} analysis is not a subcommand")))?;
    run(paths, common, options)
}

/// Adds an analysis to a plan, its options as JSON (checked, compiled).
pub type AddTo = fn(Plan, &serde_json::Value, &Selector) -> Result<Plan, ApiError>;

/// Runs an analysis as its subcommand, options as JSON.
pub type RunCommand =
    fn(&[std::path::PathBuf], &Common, &serde_json::Value) -> Result<AnyOutcome, ApiError>;

/// Gives an analysis's section of a campaign's outputs (`batch`).
pub type BatchSection = fn(&Campaign<'_>) -> Option<Section>;

/// Gives what an analysis prints on `batch`'s stdout.
pub type BatchStdout = fn(&Campaign<'_>) -> Option<Headline>;

/// An analysis's answer printed first on `batch`'s stdout.
pub type BatchAnswer = fn(&Campaign<'_>) -> Option<String>;

/// An analysis's `traces.csv` columns over a campaign: given every file's
/// results (path order), its headers and a writer of one file's cells.
pub type TraceColumnsFn = fn(&[&Results]) -> TraceColumns;

/// What a trace's results say of its run, for `batch`'s matching
/// ([`InBatch::trace_facts`]).
pub type FactsFn = for<'a> fn(&'a Results) -> Option<TraceFacts<'a>>;

/// An analysis's figures of a matched (baseline, candidate) pair of
/// traces ([`InBatch::batch_compare`]).
pub type CompareFn = fn(&Results, &Results) -> Option<Compared>;

/// An analysis's figures over a workload's runs of each side
/// ([`InBatch::batch_pool`]).
pub type PoolFn = fn(&str, &[&Results], &[&Results]) -> Option<Pooled>;

/// The options `batch` gives an analysis from the campaign's flags
/// ([`InBatch::batch_defaults`]).
pub type DefaultsFn = fn(&CampaignOptions) -> serde_json::Map<String, serde_json::Value>;

/// An analysis's options in `plot`'s plan ([`Draws::plot_options`]).
pub type PlotOptionsFn = fn(&[String]) -> serde_json::Value;

/// What `plot` notes of one trace's figures ([`Draws::plot_notes`]).
pub type PlotNotesFn = fn(&Results) -> Vec<String>;

/// What `plot` notes of the whole input ([`Draws::input_note`]).
pub type InputNoteFn = fn(&PlotInput<'_>) -> Option<String>;

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
    kind: Kind,
    command: Option<RunCommand>,
    add_to: Option<AddTo>,
    section: Option<BatchSection>,
    stdout: Option<BatchStdout>,
    answer: Option<BatchAnswer>,
    listed: Option<&'static str>,
    trace_columns: Option<TraceColumnsFn>,
    report_columns: Option<TraceColumnsFn>,
    facts: Option<FactsFn>,
    compare: Option<CompareFn>,
    pool: Option<PoolFn>,
    defaults: Option<DefaultsFn>,
    /// The paper's figures it draws ([`Draws`]); empty: none.
    figures: &'static [PaperFigure],
    plot_options: Option<PlotOptionsFn>,
    plot_notes: Option<PlotNotesFn>,
    input_note: Option<InputNoteFn>,
    /// The files its batch section may write ([`InBatch::BATCH_FILES`]).
    outputs: &'static [&'static str],
    /// Its subcommand: flags, help and run (`src/analyses/<name>/cli.rs`).
    #[cfg(feature = "cli")]
    cli: Option<crate::cli_kit::CliLine>,
}

impl Entry {
    /// The registry line of analysis `A`.
    pub const fn of<A: Analysis>() -> Entry {
        Entry {
            name: A::NAME,
            key: A::KEY,
            kind: Kind::of::<A>(),
            command: None,
            add_to: None,
            section: None,
            stdout: None,
            answer: None,
            listed: None,
            trace_columns: None,
            report_columns: None,
            facts: None,
            compare: None,
            pool: None,
            defaults: None,
            figures: &[],
            plot_options: None,
            plot_notes: None,
            input_note: None,
            outputs: &[],
            #[cfg(feature = "cli")]
            cli: None,
        }
    }

    /// The registry line of analysis `A` that is also a subcommand (and
    /// a Python function): `torchtrace.run(NAME, …)` finds it here. It is
    /// not run by `batch` ([`Entry::in_batch`] is).
    pub const fn command<A: Command>() -> Entry {
        let mut e = Entry::of::<A>();
        e.command = Some(crate::command::run_json::<A>);
        e
    }

    /// The registry line of a subcommand that `batch` also runs on every
    /// worker trace, with its campaign hooks ([`InBatch`]).
    pub const fn in_batch<A: Command + InBatch>() -> Entry {
        let mut e = Entry::command::<A>();
        e.add_to = Some(crate::command::add_json::<A>);
        e.section = Some(A::batch_section);
        e.stdout = Some(A::batch_stdout);
        e.answer = Some(A::batch_answer);
        e.listed = A::BATCH_LISTED;
        e.outputs = A::BATCH_FILES;
        e.trace_columns = Some(trace_columns::<A>);
        e.report_columns = Some(report_columns::<A>);
        e.facts = Some(facts_of::<A>);
        e.compare = Some(compare_of::<A>);
        e.pool = Some(pool_of::<A>);
        e.defaults = Some(A::batch_defaults);
        e
    }

    /// The registry line of an analysis that runs in batch and draws some
    /// of the paper's figures ([`Draws`]), for `plot` and `batch` alike.
    pub const fn drawn<A: Command + InBatch + Draws>() -> Entry {
        let mut e = Entry::in_batch::<A>();
        e.figures = A::FIGURES;
        e.plot_options = Some(A::plot_options);
        e.plot_notes = Some(plot_notes_of::<A>);
        e.input_note = Some(A::input_note);
        e
    }

    /// This line with its subcommand: the analysis's own flags and help
    /// `S` (its `cli.rs`) in the kit's [`crate::cli_kit::PerTrace`]; the
    /// binary builds the subcommand from it.
    #[cfg(feature = "cli")]
    pub const fn with_cli<S: crate::cli_kit::PerTraceArgs>(mut self) -> Entry {
        self.cli = Some(crate::cli_kit::CliLine::of::<S>());
        self
    }

    /// Its subcommand, if it has one.
    #[cfg(feature = "cli")]
    pub fn cli(&self) -> Option<&crate::cli_kit::CliLine> {
        self.cli.as_ref()
    }

    /// What the engine knows of it.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Its columns of `report.md`'s "Worker traces" table, if it runs in
    /// batch ([`InBatch::report_columns`]): labels as heads.
    pub fn report_columns_fn(&self) -> Option<TraceColumnsFn> {
        self.report_columns
    }

    /// What a trace's results say of its run, if it runs in batch
    /// ([`InBatch::trace_facts`]).
    pub fn facts_fn(&self) -> Option<FactsFn> {
        self.facts
    }

    /// Its figures of a matched pair of traces, if it runs in batch
    /// ([`InBatch::batch_compare`]).
    pub fn compare_fn(&self) -> Option<CompareFn> {
        self.compare
    }

    /// Its figures over a workload's runs, if it runs in batch
    /// ([`InBatch::batch_pool`]).
    pub fn pool_fn(&self) -> Option<PoolFn> {
        self.pool
    }

    /// The options batch gives it from the campaign's flags, if it runs in
    /// batch ([`InBatch::batch_defaults`]).
    pub fn defaults_fn(&self) -> Option<DefaultsFn> {
        self.defaults
    }

    /// Its columns of `batch`'s `traces.csv`, if it runs in batch:
    /// [`InBatch::trace_columns`], type-erased.
    pub fn trace_columns_fn(&self) -> Option<TraceColumnsFn> {
        self.trace_columns
    }

    /// Its entry in `batch`'s report.md `Files:` line:
    /// [`InBatch::BATCH_LISTED`].
    pub fn batch_listed(&self) -> Option<&'static str> {
        self.listed
    }

    /// The files its batch section may write ([`InBatch::BATCH_FILES`]).
    pub fn batch_files(&self) -> &'static [&'static str] {
        self.outputs
    }

    /// What it prints on `batch`'s stdout, if it runs in batch:
    /// [`InBatch::batch_stdout`].
    pub fn batch_stdout_fn(&self) -> Option<BatchStdout> {
        self.stdout
    }

    /// Its answer printed first on `batch`'s stdout, if it runs in batch:
    /// [`InBatch::batch_answer`].
    pub fn batch_answer_fn(&self) -> Option<BatchAnswer> {
        self.answer
    }

    /// Its section of a campaign's outputs (`batch`'s report, files and
    /// figures), if it runs in batch: [`InBatch::batch_section`].
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
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("key", &self.key)
            .finish()
    }
}

fn trace_columns<A: InBatch>(all: &[&Results]) -> TraceColumns {
    let outputs: Vec<&A::Output> = all.iter().filter_map(|r| r.get::<A>()).collect();
    let cols = A::trace_columns(&outputs);
    let heads = cols
        .iter()
        .map(|c| match A::LEGACY_TRACE_KEYS {
            true => c.key.clone(),
            false => format!("{}_{}", A::NAME, c.key),
        })
        .collect();
    columns_of::<A>(heads, cols)
}

fn report_columns<A: InBatch>(_: &[&Results]) -> TraceColumns {
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

fn plot_notes_of<A: Draws>(r: &Results) -> Vec<String> {
    r.get::<A>().map(A::plot_notes).unwrap_or_default()
}

fn facts_of<A: InBatch>(r: &Results) -> Option<TraceFacts<'_>> {
    r.get::<A>().and_then(A::trace_facts)
}

fn compare_of<A: InBatch>(b: &Results, c: &Results) -> Option<Compared> {
    A::batch_compare(b.get::<A>(), c.get::<A>())
}

fn pool_of<A: InBatch>(workload: &str, b: &[&Results], c: &[&Results]) -> Option<Pooled> {
    fn outputs<'r, A: Analysis>(side: &[&'r Results]) -> Vec<&'r A::Output> {
        side.iter().filter_map(|r| r.get::<A>()).collect()
    }
    A::batch_pool(workload, &outputs::<A>(b), &outputs::<A>(c))
}

/// What a trace's results say of its run: the first registry entry's
/// [`InBatch::trace_facts`] that gives them.
pub fn facts(results: &Results) -> Option<TraceFacts<'_>> {
    let mut hooks = REGISTRY.iter().filter_map(Entry::facts_fn);
    hooks.find_map(|f| f(results))
}

/// Every analysis's figures of a matched pair of traces
/// ([`InBatch::batch_compare`]), in registry order.
pub fn compare(baseline: &Results, candidate: &Results) -> Figures {
    let hooks = REGISTRY
        .iter()
        .filter_map(|e| Some((e.key, e.compare_fn()?)));
    Figures(
        hooks
            .filter_map(|(key, f)| Some((key, f(baseline, candidate)?)))
            .collect(),
    )
}

/// Every analysis's figures over a workload's runs of each side
/// ([`InBatch::batch_pool`]), in registry order, and their notes.
pub fn pool(
    workload: &str,
    baseline: &[&Results],
    candidate: &[&Results],
) -> (Figures, Vec<String>) {
    let mut figures = Figures::default();
    let mut notes = Vec::new();
    for e in REGISTRY {
        let Some(p) = e.pool_fn().and_then(|f| f(workload, baseline, candidate)) else {
            continue;
        };
        figures.0.push((e.key, p.figures));
        notes.extend(p.note);
    }
    (figures, notes)
}

/// The paper's figures, from every registry line that draws some, in
/// their numbers' order (the order `plot` and `batch` write them).
pub fn paper_figures() -> Vec<&'static PaperFigure> {
    let mut out: Vec<&PaperFigure> = REGISTRY.iter().flat_map(|e| e.figures).collect();
    out.sort_by_key(|f| f.number);
    out
}

/// `plot`'s one pass: every analysis that draws a figure, with its
/// options for `plot` (`chains`: `--chain`, empty when not given).
pub fn plot_plan(
    selector: Selector,
    read: ReadOptions,
    chains: &[String],
) -> Result<Plan, ApiError> {
    let mut plan = Plan::new(selector.clone()).reading(read);
    for e in REGISTRY {
        if let (Some(options), Some(add)) = (e.plot_options, e.add_to) {
            plan = add(plan, &options(chains), &selector)?;
        }
    }
    Ok(plan)
}

/// What `plot` notes of one trace's figures, in registry order.
pub fn plot_notes(results: &Results) -> Vec<String> {
    REGISTRY
        .iter()
        .filter_map(|e| e.plot_notes)
        .flat_map(|f| f(results))
        .collect()
}

/// What `plot` notes of the whole input, in registry order.
pub fn input_notes(input: &PlotInput<'_>) -> Vec<String> {
    REGISTRY
        .iter()
        .filter_map(|e| e.input_note?(input))
        .collect()
}
