//! Where each generated token's time goes over the whole decode loop
//! (`torchtrace iterations`, issue 18), AR against MTP.
//!
//! The step annotation holds only `execute_model`'s part of an engine
//! step; vLLM v1 then runs `sample_tokens` (and under MTP/EAGLE the drafter,
//! `sample_tokens → propose_draft_token_ids → proposer.propose`) *between*
//! step annotations. An iteration is a selected step context up to the next
//! step annotation of any kind on its thread, so everything the engine does
//! for one step is counted:
//!
//! ```text
//! thread T  [== s_0 (decode) ==)  [sample_tokens [propose_draft_token_ids)) [== s_1 ==) … [== prefill ==)
//!            L1 (forward)           L2 (sample)    L3 (draft)        L4 (other)
//!           |<------------------------ iteration 0 ------------------------>|<-- it. 1 ->|
//!           start(s_0)                                               b_0 = start(s_1)  b_1 = start(prefill)
//! GPU        [k1)[k1')               [k2)           [k3)               [k4)
//!           iteration 0: wall = b_0 − start(s_0); busy = |k1 ∪ k1' ∪ k2 ∪ k3 ∪ k4|,
//!           forward = |k1 ∪ k1'|, sample = |k2|, draft = |k3|, other = |k4|;
//!           idle = (last end − first start) − busy
//! ```
//!
//! - A launch call (with GPU activity, graph launches included) on T whose
//!   start lies in [start(s_i), b_i) belongs to iteration i, with all its
//!   activities. The last selected context has no b when no step
//!   annotation follows it: that iteration is *open* ([start, ∞)), reported
//!   but left out of the means.
//! - Its phase is the innermost (latest start, then earliest end, then later
//!   in the file) range on T holding it (start ≤ ts < end) among: the step
//!   context s_i (`forward`), a `user_annotation` or `python_function` whose
//!   name (for a python_function, also the part after the last `"): "`) is
//!   in the sampling list (`sample`) or the drafting list (`draft`);
//!   `other` when none holds it.
//! - Per token: mean over the closed iterations × n / T (n = selected
//!   contexts, T = completion tokens).
//! - CUDA graphs: a replay's signature is the ordered (start, end, name)
//!   list of its activities' names; the repeating graph is the signature
//!   replayed in the most closed iterations (ties: larger Σ activity
//!   durations, then smaller number); cadence = median start-to-start
//!   interval between its consecutive replays (first activity starts).
//!
//! Integer ns throughout, sums in i128; the phase sweep is the ledger's
//! (a max-heap of open ranges, O((ranges + launches) log ranges)).

pub(crate) mod batch;
mod comparison;
mod figures;
mod sweep;
pub mod view;

pub use comparison::{compare, Comparison, PhaseShare};
use sweep::measure;

use crate::analysis::{Analysis, Configures, Finished, Need};
use crate::ledger::pack::{Fields, Packed, Record, Records};
use crate::ledger::Ledger;
use crate::model::{LaneTable, Ns};
use crate::rows::{self, Rows};
use crate::trace::{Event, EventPos, Prefilter};
use serde::{Deserialize, Serialize};

/// The default sampling range names.
pub const SAMPLE_NAMES: [&str; 3] = [
    "sample_tokens",
    "gpu_model_runner: sample",
    "gpu_model_runner: sample_tokens",
];

/// The default drafting range names.
pub const DRAFT_NAMES: [&str; 4] = [
    "propose_draft_token_ids",
    "proposer.propose",
    "gpu_model_runner: draft",
    "gpu_model_runner: propose_draft_token_ids",
];

/// Options of the iterations analysis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct IterationsSpec {
    /// A sampling range name: its GPU work is the `sample` phase
    /// (repeatable; replaces the defaults).
    #[cfg_attr(
        feature = "cli",
        arg(long = "sample-name", value_name = "NAME", default_values = SAMPLE_NAMES)
    )]
    pub sample_names: Vec<String>,
    /// A drafting range name: its GPU work is the `draft` phase (innermost
    /// wins, so a drafter inside `sample_tokens` is `draft`; repeatable;
    /// replaces the defaults).
    #[cfg_attr(
        feature = "cli",
        arg(long = "draft-name", value_name = "NAME", default_values = DRAFT_NAMES)
    )]
    pub draft_names: Vec<String>,
    /// Report graph N (numbered by first appearance, from 0) as the
    /// repeating graph, instead of the one chosen by the rule.
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub graph: Option<u64>,
}

impl Default for IterationsSpec {
    fn default() -> Self {
        IterationsSpec {
            sample_names: SAMPLE_NAMES.iter().map(|s| s.to_string()).collect(),
            draft_names: DRAFT_NAMES.iter().map(|s| s.to_string()).collect(),
            graph: None,
        }
    }
}

impl Configures for IterationsSpec {
    type Analysis = Iterations;
}

/// A phase of an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    Forward = 0,
    Sample = 1,
    Draft = 2,
    Other = 3,
}

impl Phase {
    pub const ALL: [Phase; 4] = [Phase::Forward, Phase::Sample, Phase::Draft, Phase::Other];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Forward => "forward",
            Phase::Sample => "sample",
            Phase::Draft => "draft",
            Phase::Other => "other",
        }
    }
}

/// Whether a range named `name` (of a python_function when `py`) has a
/// name in `list`: equal, or its part after the last `"): "` is.
pub fn name_in(list: &[String], name: &str, py: bool) -> bool {
    // Both forms below are suffixes of `name`: with no listed name a
    // suffix, neither matches, and the search for `): ` is skipped (in a
    // batch every host op comes here).
    if !list.iter().any(|n| name.ends_with(n.as_str())) {
        return false;
    }
    let func = match (py, name.rfind("): ")) {
        (true, Some(p)) => Some(&name[p + 3..]),
        _ => None,
    };
    list.iter()
        .any(|n| n == name || func.is_some_and(|f| f == n))
}

/// A sampling or drafting range kept from the stream, its lane interned
/// (not its pid and tid as two strings).
#[derive(Debug, Clone, Copy)]
struct PhaseRange {
    phase: Phase,
    lane: u32,
    start: Ns,
    end: Ns,
    index: u64,
}

/// A range as kept by [`Records`]: phase, lane, Δstart, end − start,
/// Δindex (≈ 9 B of varints instead of 32 while the trace is read).
impl Record for PhaseRange {
    /// (start, index) of the previous record.
    type Prev = (i64, i64);

    fn write(&self, prev: &mut (i64, i64), p: &mut Packed) {
        p.u(self.phase as u64);
        p.u(u64::from(self.lane));
        p.delta(self.start.0, prev.0);
        p.delta(self.end.0, self.start.0);
        p.delta(self.index as i64, prev.1);
        *prev = (self.start.0, self.index as i64);
    }

    fn read(prev: &mut (i64, i64), f: &mut impl Fields) -> PhaseRange {
        let phase = match f.u() {
            0 => Phase::Forward,
            1 => Phase::Sample,
            2 => Phase::Draft,
            _ => Phase::Other,
        };
        let lane = f.u() as u32;
        let start = f.delta(prev.0);
        let end = f.delta(start);
        let index = f.delta(prev.1);
        *prev = (start, index);
        PhaseRange {
            phase,
            lane,
            start: Ns(start),
            end: Ns(end),
            index: index as u64,
        }
    }
}

/// The streaming state: the sampling and drafting ranges.
pub struct Iterations {
    spec: IterationsSpec,
    lanes: LaneTable,
    /// Kept as a varint stream while reading, decoded at the finish.
    ranges: Records<PhaseRange>,
}

impl Analysis for Iterations {
    const NAME: &'static str = "iterations";
    const KEY: &'static str = "iterations";
    type Config = IterationsSpec;
    type Output = TraceIterations;

    fn start(config: &IterationsSpec) -> Self {
        Iterations {
            spec: config.clone(),
            lanes: LaneTable::default(),
            ranges: Records::default(),
        }
    }

    fn ledger(_: &IterationsSpec) -> Need {
        Need::Yes
    }

    /// The phase names themselves (a python_function's name holds its
    /// function name verbatim).
    fn prefilter(&self) -> Prefilter {
        let names: Vec<&str> = self
            .spec
            .sample_names
            .iter()
            .chain(&self.spec.draft_names)
            .map(String::as_str)
            .filter(|n| !n.is_empty())
            .collect();
        Prefilter::any_of(&names)
    }

    fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        if !ev.is_complete() {
            return;
        }
        let py = match &*ev.cat {
            "python_function" => true,
            "user_annotation" => false,
            _ => return,
        };
        let phase = if name_in(&self.spec.draft_names, &ev.name, py) {
            Phase::Draft
        } else if name_in(&self.spec.sample_names, &ev.name, py) {
            Phase::Sample
        } else {
            return;
        };
        let start = ev.ts.unwrap_or_default();
        self.ranges.push(&PhaseRange {
            phase,
            lane: self.lanes.intern(ev.lane()),
            start,
            end: start.saturating_add(ev.dur_or_zero()),
            index: at.index,
        });
    }

    fn set_tokens(out: &mut TraceIterations, tokens: Option<u64>, source: Option<&str>) {
        out.set_tokens(tokens, source.map(str::to_string));
    }

    fn finish(mut self, trace: &Finished<'_>) -> TraceIterations {
        let empty = Ledger::default();
        let ledger = trace.ledger.unwrap_or(&empty);
        // The sweep takes each lane's ranges in start order.
        let mut ranges = std::mem::take(&mut self.ranges).into_vec();
        ranges.sort_unstable_by_key(|r| (r.lane, r.start));
        let mut out = measure(trace, ledger, &self.lanes, &ranges, self.spec.graph);
        // Inside the graphs (issue 57): the replays of closed iterations.
        let (caps, replays) = crate::graphs::replay::of_trace(trace, ledger);
        let closed = sweep::closed_windows(trace, ledger);
        out.inside_graphs = crate::graphs::replay::GraphView::of(&caps, ledger, &replays, |r| {
            closed.holds(r.lane, r.ts)
        });
        if let Some(g) = &out.inside_graphs {
            out.notes.extend(g.summary.said());
        }
        if let Some(e) = trace.error_text() {
            out.complete = false;
            out.error = Some(e);
        }
        out
    }
}

/// One phase's GPU work in one iteration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseWork {
    /// Exact (a union of activities can pass i64 ns, issue 59).
    pub gpu_busy_ns: i128,
    pub kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    pub launches: u64,
    pub graph_launches: u64,
}

/// The four phases, in this order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phases<T> {
    pub forward: T,
    pub sample: T,
    pub draft: T,
    pub other: T,
}

impl<T> Phases<T> {
    pub fn get(&self, p: Phase) -> &T {
        match p {
            Phase::Forward => &self.forward,
            Phase::Sample => &self.sample,
            Phase::Draft => &self.draft,
            Phase::Other => &self.other,
        }
    }

    fn get_mut(&mut self, p: Phase) -> &mut T {
        match p {
            Phase::Forward => &mut self.forward,
            Phase::Sample => &mut self.sample,
            Phase::Draft => &mut self.draft,
            Phase::Other => &mut self.other,
        }
    }

    fn map<U>(&self, f: impl Fn(Phase, &T) -> U) -> Phases<U> {
        Phases {
            forward: f(Phase::Forward, &self.forward),
            sample: f(Phase::Sample, &self.sample),
            draft: f(Phase::Draft, &self.draft),
            other: f(Phase::Other, &self.other),
        }
    }
}

/// One iteration (`--per-iteration`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationRow {
    pub start_ns: i64,
    /// b_i − start; `None` for the open iteration. Spans and sums of ns
    /// are i128: exact past i64 (issue 59).
    pub wall_ns: Option<i128>,
    pub closed: bool,
    pub gpu_busy_ns: i128,
    /// (last activity end − first activity start) − busy; `None` without
    /// GPU work.
    pub gpu_idle_ns: Option<i128>,
    pub kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    pub launches: u64,
    pub graph_launches: u64,
    /// GPU span of the work launched inside the step context itself (any
    /// phase): what `kernels`' `s_context_correlation` sums.
    pub context_span_ns: Option<i128>,
    pub phases: Phases<PhaseWork>,
}

/// A row as [`Rows`] keeps it: Δstart, closed, the optional wall, idle and
/// context span, busy, the five counts, then each phase's busy and five
/// counts.
impl Record for IterationRow {
    /// The previous row's start.
    type Prev = i64;
    /// 35 varints, 8 of them up to 19 bytes.
    const MAX_BYTES: usize = 432;

    fn write(&self, prev: &mut i64, p: &mut Packed) {
        p.delta(self.start_ns, *prev);
        *prev = self.start_ns;
        p.u(u64::from(self.closed));
        rows::write_wide_opts(p, &[self.wall_ns, self.gpu_idle_ns, self.context_span_ns]);
        let totals = PhaseWork {
            gpu_busy_ns: self.gpu_busy_ns,
            kernels: self.kernels,
            memcpys: self.memcpys,
            memsets: self.memsets,
            launches: self.launches,
            graph_launches: self.graph_launches,
        };
        for w in [
            &totals,
            &self.phases.forward,
            &self.phases.sample,
            &self.phases.draft,
            &self.phases.other,
        ] {
            p.delta_wide(w.gpu_busy_ns, 0);
            rows::write_counts(
                p,
                &[
                    w.kernels,
                    w.memcpys,
                    w.memsets,
                    w.launches,
                    w.graph_launches,
                ],
            );
        }
    }

    fn read(prev: &mut i64, f: &mut impl Fields) -> IterationRow {
        let start_ns = f.delta(*prev);
        *prev = start_ns;
        let closed = f.u() != 0;
        let [wall_ns, gpu_idle_ns, context_span_ns] = rows::read_wide_opts(f);
        let mut work = || {
            let gpu_busy_ns = f.delta_wide(0);
            let [kernels, memcpys, memsets, launches, graph_launches] = rows::read_counts(f);
            PhaseWork {
                gpu_busy_ns,
                kernels,
                memcpys,
                memsets,
                launches,
                graph_launches,
            }
        };
        // The row's totals, then each phase's, as written.
        let t = work();
        let phases = Phases {
            forward: work(),
            sample: work(),
            draft: work(),
            other: work(),
        };
        IterationRow {
            start_ns,
            wall_ns,
            closed,
            gpu_busy_ns: t.gpu_busy_ns,
            gpu_idle_ns,
            kernels: t.kernels,
            memcpys: t.memcpys,
            memsets: t.memsets,
            launches: t.launches,
            graph_launches: t.graph_launches,
            context_span_ns,
            phases,
        }
    }
}

/// Per-token figures of one phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseToken {
    pub gpu_busy_ms: Option<f64>,
    pub kernels: Option<f64>,
    pub launches: Option<f64>,
}

/// Per-token figures (mean over closed iterations × n / T).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PerToken {
    pub wall_ms: Option<f64>,
    pub gpu_busy_ms: Option<f64>,
    pub gpu_idle_ms: Option<f64>,
    pub kernels: Option<f64>,
    pub memcpys: Option<f64>,
    pub memsets: Option<f64>,
    pub launches: Option<f64>,
    pub graph_launches: Option<f64>,
    pub phases: Phases<PhaseToken>,
}

/// Means over the closed iterations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PerIteration {
    pub wall_ms: Option<f64>,
    pub gpu_busy_ms: Option<f64>,
    pub kernels: Option<f64>,
    pub launches: Option<f64>,
    pub graph_launches: Option<f64>,
    pub phases: Phases<PhaseToken>,
}

/// The repeating CUDA graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repeating {
    /// Its number (graphs numbered by first appearance, from 0).
    pub graph: u64,
    /// Closed iterations replaying it.
    pub iterations: u64,
    /// Its replays in closed iterations.
    pub replays: u64,
    pub replays_per_token: Option<f64>,
    pub kernels_per_replay: u64,
    /// Median start-to-start interval between its consecutive replays.
    pub cadence_ms_median: Option<f64>,
    pub chosen_by: String,
}

/// CUDA-graph figures (over closed iterations).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Graphs {
    /// Graph replays in closed iterations.
    pub replays: u64,
    /// Distinct signatures among them.
    pub distinct: u64,
    pub replays_per_token: Option<f64>,
    pub repeating: Option<Repeating>,
}

/// Exact sums over the closed iterations (and the context spans of all).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sums {
    pub wall_ns: i128,
    pub busy_ns: i128,
    pub idle_ns: i128,
    pub kernels: i128,
    pub memcpys: i128,
    pub memsets: i128,
    pub launches: i128,
    pub graph_launches: i128,
    pub phase_busy_ns: [i128; 4],
    pub phase_kernels: [i128; 4],
    pub phase_launches: [i128; 4],
    /// Repeating-graph replays in closed iterations.
    pub repeating_replays: i128,
    /// Σ context GPU span over every iteration with work in its context.
    pub context_span_ns: i128,
}

/// The iterations figures of one trace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceIterations {
    pub path: String,
    pub context: String,
    /// n: selected step contexts (= iterations).
    pub contexts: u64,
    pub iterations_closed: u64,
    pub completion_tokens: Option<u64>,
    pub tokens_source: Option<String>,
    /// T / n.
    pub tokens_per_iteration: Option<f64>,
    pub per_iteration: PerIteration,
    pub per_token: PerToken,
    pub graphs: Graphs,
    /// Inside the graphs (issue 57): every graph replay of the trace
    /// matched to its capture (`summary`), and the GPU time of the
    /// attributed replays launched in closed iterations split by
    /// subsystem (decoder: the target model; speculator: the drafter) and
    /// module class or launcher op, per token as the other per-token
    /// figures; absent when the trace has no graph replay and no capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inside_graphs: Option<crate::graphs::replay::GraphView>,
    pub notes: Vec<String>,
    pub complete: bool,
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub rows: Rows<IterationRow>,
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub sums: Sums,
    /// The repeating graph's start-to-start intervals (ns, sorted): the
    /// cadence's distribution (batch's figure 7b; its median is
    /// `graphs.repeating.cadence_ms_median`).
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub cadence_ns: Vec<i64>,
}

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(test)]
mod tests;
