//! What changed between two runs, kernel by kernel and per generated token
//! (`torchtrace diff BASELINE CANDIDATE`).
//!
//! Per trace (this analysis) the GPU activities of the chosen scope are
//! grouped by exact name (memcpys and memsets by their kind and name:
//! Kineto names them by copy kind, `Memcpy DtoD (Device -> Device)`):
//! calls, Σ duration (exact ns), median duration; and every CUDA/HIP graph
//! replay by its signature (the ordered names of its activities). The
//! output is bounded by the distinct names and signatures, not by events.
//! The comparison of a baseline (first trace) and a candidate (second) is
//! [`compare`]. Definitions: docs/DEFINITIONS.md, "What changed (`diff`)".
//!
//! ```text
//!  scope steps: ledger ─ context_queries + attribute (innermost, as kernels) ─ activities of the steps
//!  scope trace: ledger ─ every activity with a correlation
//!        └─ by (kind, name): calls, Σ dur, median ─ family (first matching pattern)
//!        └─ graph launches owning activities: signature → replays
//! ```

pub(crate) mod batch;
pub mod view;

use crate::analysis::{Analysis, Configures, Finished, Need};
use crate::ledger::attribution::{self, LaunchScope};
use crate::ledger::bits::Bits;
use crate::ledger::{self, Kind, Ledger};
use crate::model::Sym;
use crate::stats::Multiset;
use crate::trace::{Event, EventPos, Prefilter};
use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Rows the tables show before summing the rest.
pub const DEFAULT_TOP: usize = 15;

/// The kernel families (`crate::families`, shared with `ranks`).
pub use crate::families::FAMILIES;

/// Which GPU work a trace's table counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The activities launched from the selected step contexts (the
    /// decode steps by default), attributed as `kernels` does.
    #[default]
    Steps,
    /// Every GPU activity of the trace (with a correlation).
    Trace,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Steps => "steps",
            Scope::Trace => "trace",
        }
    }
}

/// Options of the diff analysis (flags, Python keywords).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct DiffSpec {
    /// Which GPU work: the step contexts' (steps) or the whole trace's.
    #[cfg_attr(feature = "cli", arg(long, value_enum, default_value_t = Scope::Steps))]
    pub scope: Scope,
    /// Kernel rows in the tables before the rest is summed (JSON lists
    /// every name).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = DEFAULT_TOP, value_name = "N"))]
    pub top: usize,
    /// A family of your own, NAME=REGEX (case-insensitive), matched before
    /// the built-in ones; repeatable, first match wins.
    #[cfg_attr(feature = "cli", arg(long = "family", value_name = "NAME=REGEX"))]
    pub families: Vec<String>,
    /// Which launch calls a step context holds (as `kernels --launch-scope`).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_enum, default_value_t = LaunchScope::Auto, value_name = "SCOPE")
    )]
    pub launch_scope: LaunchScope,
}

impl Default for DiffSpec {
    fn default() -> Self {
        DiffSpec {
            scope: Scope::Steps,
            top: DEFAULT_TOP,
            families: Vec::new(),
            launch_scope: LaunchScope::Auto,
        }
    }
}

/// One family pattern, as the output records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilyPattern {
    pub family: String,
    pub pattern: String,
}

/// What a plan holds: the options with the family patterns compiled.
#[derive(Debug, Clone)]
pub struct DiffConfig {
    pub spec: DiffSpec,
    pub table: Vec<FamilyPattern>,
    compiled: Vec<Regex>,
}

impl DiffConfig {
    /// Checks and compiles the options (`NAME=REGEX` for every user family).
    pub fn new(spec: DiffSpec) -> Result<DiffConfig, String> {
        let mut table = Vec::new();
        for f in &spec.families {
            let Some((name, re)) = f.split_once('=') else {
                return Err(format!("--family {f:?}: expected NAME=REGEX"));
            };
            if name.trim().is_empty() {
                return Err(format!("--family {f:?}: the family name is empty"));
            }
            table.push(FamilyPattern {
                family: name.trim().to_string(),
                pattern: re.to_string(),
            });
        }
        table.extend(FAMILIES.iter().map(|&(f, p)| FamilyPattern {
            family: f.into(),
            pattern: p.into(),
        }));
        let compiled = table
            .iter()
            .map(|f| {
                RegexBuilder::new(&f.pattern)
                    .case_insensitive(true)
                    .size_limit(1 << 22)
                    .build()
                    .map_err(|e| format!("family {:?}: invalid regex: {e}", f.family))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(DiffConfig {
            spec,
            table,
            compiled,
        })
    }

    /// The family of a name: the first pattern that matches (`other`
    /// matches everything).
    pub fn family(&self, name: &str) -> &str {
        self.compiled
            .iter()
            .position(|re| re.is_match(name))
            .map_or("other", |i| self.table[i].family.as_str())
    }
}

impl Configures for DiffConfig {
    type Analysis = Diff;
}

/// One name's activities in a trace's scope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NameRow {
    pub name: String,
    /// `kernel`, `memcpy` or `memset`.
    pub kind: String,
    pub family: String,
    pub calls: u64,
    /// Σ duration, exact ns.
    pub total_ns: i128,
    /// Median duration (a half-integer for an even count), ns.
    pub median_ns: f64,
}

/// One graph replay signature: the ordered names of a replay's activities
/// (indices into [`TraceDiff::names`]) and how often it was replayed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    pub replays: u64,
    pub names: Vec<u32>,
}

/// The per-name table of one trace's scope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceDiff {
    pub path: String,
    pub scope: String,
    pub context: String,
    pub contexts: u64,
    pub contexts_with_gpu_work: u64,
    pub completion_tokens: Option<u64>,
    pub tokens_source: Option<String>,
    /// Activities counted (kernels, memcpys and memsets).
    pub activities: u64,
    /// Of them, kernels (a graph replay brings all its kernels).
    #[serde(default)]
    pub kernels: u64,
    /// Σ their durations, exact ns.
    pub total_ns: i128,
    /// By (kind, name).
    pub names: Vec<NameRow>,
    pub graph_replays: u64,
    /// By first appearance.
    pub signatures: Vec<Signature>,
    /// The family table used (user patterns first).
    pub family_table: Vec<FamilyPattern>,
    /// The tables' row count (`top`).
    pub top: usize,
    /// Inside the graphs (issue 57): the replays matched to their captures
    /// and, of the attributed replays in scope (their first activity in
    /// scope), the GPU time by module class and by captured op (the
    /// launcher at capture time); absent when the trace has no graph
    /// replay and no capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inside_graphs: Option<crate::graphs::replay::GraphView>,
    pub notes: Vec<String>,
    pub complete: bool,
    pub error: Option<String>,
}

/// The diff analysis: one trace's per-name table.
pub struct Diff {
    config: DiffConfig,
}

impl Analysis for Diff {
    const NAME: &'static str = "diff";
    const KEY: &'static str = "diff";
    type Config = DiffConfig;
    type Output = TraceDiff;

    fn start(config: &DiffConfig) -> Self {
        Diff {
            config: config.clone(),
        }
    }

    fn ledger(_: &DiffConfig) -> Need {
        Need::Yes
    }

    fn prefilter(&self) -> Prefilter {
        ledger::prefilter()
    }

    /// Everything it reads is in the driver's ledger.
    fn push(&mut self, _ev: &Event<'_>, _at: EventPos) {}

    fn set_tokens(out: &mut TraceDiff, tokens: Option<u64>, source: Option<&str>) {
        out.completion_tokens = tokens;
        out.tokens_source = source.map(str::to_string);
        if let Some(g) = &mut out.inside_graphs {
            let t = tokens.filter(|&t| t > 0).map(|t| (1, i128::from(t)));
            crate::graphs::replay::per_token(&mut g.split, t);
        }
    }

    fn finish(self, trace: &Finished<'_>) -> TraceDiff {
        let empty = Ledger::default();
        let ledger = trace.ledger.unwrap_or(&empty);
        let mut d = table(trace, ledger, &self.config);
        if let Some(e) = trace.error_text() {
            d.complete = false;
            d.error = Some(e);
        }
        d
    }
}

fn kind_str(k: Kind) -> &'static str {
    match k {
        Kind::Kernel => "kernel",
        Kind::Memcpy => "memcpy",
        Kind::Memset => "memset",
    }
}

/// The table of one trace: the activities in scope by (kind, name), and
/// the graph replays in scope by signature.
fn table(trace: &Finished<'_>, ledger: &Ledger, config: &DiffConfig) -> TraceDiff {
    let spec = &config.spec;
    let mut notes = trace.meta.notes.clone();
    let (in_scope, with_work) = scope_mask(trace, ledger, spec, &mut notes);
    let rows = name_rows(ledger, &in_scope, config);
    let (graph_replays, signatures) = replay_signatures(ledger, &in_scope, &rows.index);
    let (caps, replays) = crate::graphs::replay::of_trace(trace, ledger);
    let inside_graphs = crate::graphs::replay::GraphView::of(&caps, ledger, &replays, |r| {
        !r.positions.is_empty() && in_scope.get(r.positions.start)
    });
    if let Some(g) = &inside_graphs {
        notes.extend(g.summary.said());
    }
    if rows.activities == 0 {
        notes.push(format!(
            "no GPU activity in the {} scope",
            spec.scope.as_str()
        ));
    }
    notes.extend(crate::model::cut_note(&ledger.names, "kernel"));
    TraceDiff {
        path: trace.path.to_string(),
        scope: spec.scope.as_str().into(),
        context: trace.contexts.name.clone(),
        contexts: trace.contexts.len() as u64,
        contexts_with_gpu_work: with_work,
        completion_tokens: None,
        tokens_source: None,
        activities: rows.activities,
        kernels: rows.kernels,
        total_ns: rows.total_ns,
        names: rows.names,
        graph_replays,
        signatures,
        family_table: config.table.clone(),
        top: spec.top,
        inside_graphs,
        notes,
        complete: true,
        error: None,
    }
}

/// Which activities of the ledger are in scope, and how many contexts
/// have GPU work (steps scope).
fn scope_mask(
    trace: &Finished<'_>,
    ledger: &Ledger,
    spec: &DiffSpec,
    notes: &mut Vec<String>,
) -> (Bits, u64) {
    let mut in_scope = Bits::new(ledger.activities.len());
    let mut with_work = 0u64;
    match spec.scope {
        Scope::Steps => {
            let qs = attribution::context_queries(
                trace.steps,
                trace.contexts,
                ledger,
                spec.launch_scope,
            );
            // Each work marked as it comes: no `Work` per context is held.
            let overlaps = attribution::attribute_each(ledger, &qs, |_, w| {
                with_work += u64::from(w.has_gpu_work());
                for id in w.activity_positions(ledger) {
                    in_scope.insert(id);
                }
            });
            if overlaps.nested > 0 {
                notes.push(format!(
                    "{} selected contexts lie inside another selected context: each launch call is counted once, in the innermost",
                    overlaps.nested
                ));
            }
            if trace.contexts.is_empty() {
                notes.push("no step contexts: the steps scope is empty (try --scope trace)".into());
            }
        }
        Scope::Trace => {
            for (i, a) in ledger.activities.iter().enumerate() {
                if a.has_correlation() {
                    in_scope.insert(i);
                }
            }
        }
    }
    (in_scope, with_work)
}

/// The per-(kind, name) rows of the activities in scope, with each key's
/// row number (for the replay signatures).
struct NameRows<'l> {
    names: Vec<NameRow>,
    index: HashMap<(Kind, &'l str), u32>,
    activities: u64,
    kernels: u64,
    total_ns: i128,
}

fn name_rows<'l>(ledger: &'l Ledger, in_scope: &Bits, config: &DiffConfig) -> NameRows<'l> {
    // Durations as exact multisets: memory follows the distinct durations.
    let mut by_sym: HashMap<(Kind, Sym), Multiset> = HashMap::new();
    for (_, a) in ledger
        .activities
        .iter()
        .enumerate()
        .filter(|(i, _)| in_scope.get(*i))
    {
        by_sym
            .entry((a.kind, a.name))
            .or_default()
            .push(a.end.0 - a.start.0);
    }
    // Rows in (kind, name) order: the replay signatures use their numbers.
    let mut by: Vec<((Kind, &str), Multiset)> = by_sym
        .into_iter()
        .map(|((kind, sym), durs)| ((kind, ledger.names.resolve(sym)), durs))
        .collect();
    by.sort_unstable_by(|x, y| x.0.cmp(&y.0));
    let mut rows = NameRows {
        names: Vec::with_capacity(by.len()),
        index: HashMap::with_capacity(by.len()),
        activities: 0,
        kernels: 0,
        total_ns: 0,
    };
    for (i, ((kind, name), mut durs)) in by.into_iter().enumerate() {
        let total = durs.sum();
        rows.activities += durs.len();
        if kind == Kind::Kernel {
            rows.kernels += durs.len();
        }
        rows.total_ns += total;
        rows.index.insert((kind, name), i as u32);
        rows.names.push(NameRow {
            name: name.to_string(),
            kind: kind_str(kind).into(),
            family: config.family(name).to_string(),
            calls: durs.len(),
            total_ns: total,
            // Never empty: an entry exists once a duration is pushed.
            median_ns: durs.median().map_or(0.0, |m| m.ns()),
        });
    }
    rows
}

/// Graph replays in scope and their signatures (first appearance order).
fn replay_signatures(
    ledger: &Ledger,
    in_scope: &Bits,
    index: &HashMap<(Kind, &str), u32>,
) -> (u64, Vec<Signature>) {
    let mut sig_ix: HashMap<Vec<u32>, usize> = HashMap::new();
    let mut signatures: Vec<Signature> = Vec::new();
    let mut graph_replays = 0u64;
    let mut replays: Vec<std::ops::Range<usize>> = ledger
        .graph_replays()
        .filter(|r| in_scope.get(r.start))
        .collect();
    replays.sort_by_key(|r| {
        let a = ledger.activities.get(r.start);
        (a.start, r.start)
    });
    for r in replays {
        let mut acts: Vec<ledger::Activity> = ledger.activities.range(r).collect();
        acts.sort_by(|x, y| {
            (x.start, x.end, ledger.names.resolve(x.name)).cmp(&(
                y.start,
                y.end,
                ledger.names.resolve(y.name),
            ))
        });
        let sig: Vec<u32> = acts
            .iter()
            .map(|a| index[&(a.kind, ledger.names.resolve(a.name))])
            .collect();
        graph_replays += 1;
        let next = signatures.len();
        let at = *sig_ix.entry(sig.clone()).or_insert(next);
        if at == next {
            signatures.push(Signature {
                replays: 0,
                names: sig,
            });
        }
        signatures[at].replays += 1;
    }
    (graph_replays, signatures)
}

pub(crate) mod compare;
pub use compare::{compare, Comparison};

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(test)]
mod tests;
