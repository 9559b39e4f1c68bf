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
pub mod view;

use crate::analysis::{Analysis, Configures, Finished, Need};
use crate::ledger::intervals::{self, Iv};
use crate::ledger::pack::{Fields, Packed, Record, Records};
use crate::ledger::{is_graph_launch, Kind, LaunchCall, Ledger};
use crate::model::{LaneTable, Ns, Sym};
use crate::rows::{self, Rows};
use crate::stats::{median_sorted, Exact};
use crate::trace::{Event, EventPos, Prefilter};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

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
    pub gpu_busy_ns: i64,
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
    /// b_i − start; `None` for the open iteration.
    pub wall_ns: Option<i64>,
    pub closed: bool,
    pub gpu_busy_ns: i64,
    /// (last activity end − first activity start) − busy; `None` without
    /// GPU work.
    pub gpu_idle_ns: Option<i64>,
    pub kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    pub launches: u64,
    pub graph_launches: u64,
    /// GPU span of the work launched inside the step context itself (any
    /// phase): what `kernels`' S_context sums.
    pub context_span_ns: Option<i64>,
    pub phases: Phases<PhaseWork>,
}

/// A row as [`Rows`] keeps it: Δstart, closed, the optional wall, idle and
/// context span, busy, the five counts, then each phase's busy and five
/// counts.
impl Record for IterationRow {
    /// The previous row's start.
    type Prev = i64;
    /// 35 varints.
    const MAX_BYTES: usize = 352;

    fn write(&self, prev: &mut i64, p: &mut Packed) {
        p.delta(self.start_ns, *prev);
        *prev = self.start_ns;
        p.u(u64::from(self.closed));
        rows::write_opts(p, &[self.wall_ns, self.gpu_idle_ns, self.context_span_ns]);
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
            p.delta(w.gpu_busy_ns, 0);
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
        let [wall_ns, gpu_idle_ns, context_span_ns] = rows::read_opts(f);
        let mut work = || {
            let gpu_busy_ns = f.delta(0);
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

/// One iteration's window and context, on its lane.
#[derive(Debug, Clone, Copy)]
struct Window {
    lane: (Sym, Sym),
    start: Ns,
    /// `None`: open.
    end: Option<Ns>,
    ctx_end: Ns,
    index: u64,
}

/// One graph signature's replays, folded as the sweep meets them: what
/// [`graph_figures`] needs, instead of a 64 B record per replay (72,000 of
/// them at 800 sample copies). What grows is 8 B per replay in a closed
/// iteration: its first activity's start, for the cadence.
struct GraphAcc {
    /// Its earliest replay (ts, file index): graphs are numbered by it.
    first: (Ns, u64),
    /// Its earliest replay in a closed iteration, and that replay's kernels.
    first_closed: Option<((Ns, u64), u64)>,
    /// Closed iterations replaying it. A lane's sweep meets an
    /// iteration's launch calls together (its calls in ts order, an
    /// iteration on one lane), so a change of `last_iteration` is a new
    /// iteration.
    iterations: u64,
    last_iteration: Option<usize>,
    /// Σ activity durations of its replays in closed iterations.
    total_ns: i128,
    /// Its replays in closed iterations.
    replays: u64,
    /// Their first activities' starts (the replay's ts when it has none).
    starts: Vec<i64>,
}

impl GraphAcc {
    fn new(first: (Ns, u64)) -> GraphAcc {
        GraphAcc {
            first,
            first_closed: None,
            iterations: 0,
            last_iteration: None,
            total_ns: 0,
            replays: 0,
            starts: Vec::new(),
        }
    }
}

/// The activity intervals of a lane's open iteration, all together and by
/// phase: once the sweep leaves it they become its row's busy and idle
/// figures, so that memory holds one iteration's intervals at a time
/// rather than every activity of the trace (twice).
#[derive(Default)]
struct OpenIvs {
    all: Vec<Iv>,
    phase: [Vec<Iv>; 4],
}

/// The iteration windows: each selected context up to the next step
/// annotation (vLLM step name, or a selected name) on its lane.
fn windows(trace: &Finished<'_>) -> Vec<Window> {
    let steps = trace.steps;
    let mut bounds: HashMap<(Sym, Sym), Vec<(Ns, u64)>> = HashMap::new();
    let mut is_step: HashMap<Sym, bool> = HashMap::new();
    for a in &steps.cpu {
        let step = *is_step.entry(a.name).or_insert_with(|| {
            trace.contexts.selected.contains(&a.name)
                || crate::steps::parse(steps.names.resolve(a.name)).is_some()
        });
        if step {
            bounds.entry(a.lane).or_default().push((a.start, a.index));
        }
    }
    for v in bounds.values_mut() {
        v.sort_unstable();
    }
    trace
        .contexts
        .iter(steps)
        .map(|c| {
            let end = bounds.get(&c.lane).and_then(|v| {
                let k = v.partition_point(|&b| b <= (c.start, c.index));
                v.get(k).map(|b| b.0)
            });
            Window {
                lane: c.lane,
                start: c.start,
                end,
                ctx_end: c.end(),
                index: c.index,
            }
        })
        .collect()
}

/// An open range in the sweep: max-heap order = innermost first; its end
/// and phase.
type Open = ((Ns, Reverse<Ns>, u64), Ns, Phase);

/// The heap size below which ended ranges are left to the top's pops.
const PRUNE_FLOOR: usize = 64;

/// The phase sweep of one lane: its candidate ranges, taken in start order
/// from their sources (the lane's step contexts, `forward`, and its
/// sampling and drafting ranges, each sorted by start), and the ranges
/// open at the last launch call.
///
/// The heap drops ended ranges lazily, from the top only. Under a range
/// that started later and is still open they would stay: when every
/// launch call lies in some range (a vLLM trace: the step context, then
/// `sample_tokens`), nothing is popped and the heap held every range of
/// the lane (1.3 MB at 200 sample copies). So once it doubles past its
/// size after the last clean-up, every ended range goes: it stays
/// O(ranges open at once), at O(1) amortized per range.
///
/// ```text
/// ranges   [== s_0 ==)[sample)  [== s_1 ==)[sample)  [== s_2 ==) …
/// calls       ^   ^       ^        ^   ^       ^         ^
/// heap top: the latest-started open range; s_0 and its sample end
/// under s_1, s_1's under s_2, …: only a clean-up removes them.
/// ```
struct Sweep<'a> {
    wins: &'a [Window],
    /// The lane's iterations not yet pushed, in start order.
    its: &'a [usize],
    /// The lane's phase ranges not yet pushed: one slice per interned
    /// lane that shows as this lane, each in start order.
    ranges: Vec<&'a [PhaseRange]>,
    heap: BinaryHeap<Open>,
    /// The heap size at which ended ranges are dropped.
    prune_at: usize,
}

impl<'a> Sweep<'a> {
    fn new(wins: &'a [Window], its: &'a [usize], ranges: Vec<&'a [PhaseRange]>) -> Sweep<'a> {
        Sweep {
            wins,
            its,
            ranges,
            heap: BinaryHeap::new(),
            prune_at: PRUNE_FLOOR,
        }
    }

    /// The phase of a launch call at `ts` (calls come in ts order): the
    /// innermost open range holding it, `other` when none does.
    fn phase_at(&mut self, ts: Ns) -> Phase {
        while let Some((&i, rest)) = self.its.split_first() {
            let w = &self.wins[i];
            if w.start > ts {
                break;
            }
            self.heap.push((
                (w.start, Reverse(w.ctx_end), w.index),
                w.ctx_end,
                Phase::Forward,
            ));
            self.its = rest;
        }
        for slice in &mut self.ranges {
            while let Some((r, rest)) = slice.split_first() {
                if r.start > ts {
                    break;
                }
                self.heap
                    .push(((r.start, Reverse(r.end), r.index), r.end, r.phase));
                *slice = rest;
            }
        }
        // Calls come in ts order: a range that has ended holds none of
        // the calls still to come.
        if self.heap.len() > self.prune_at {
            self.heap.retain(|o| o.1 > ts);
            self.prune_at = (2 * self.heap.len()).max(PRUNE_FLOOR);
        }
        while self.heap.peek().is_some_and(|top| top.1 <= ts) {
            self.heap.pop();
        }
        self.heap.peek().map_or(Phase::Other, |top| top.2)
    }
}

/// The graph signatures met so far, each kept once: a replay holds the
/// id of its signature (ids in order of first insertion; numbers by
/// first appearance in time are given later, by [`graph_figures`]).
#[derive(Default)]
struct Signatures(HashMap<Vec<Sym>, u32>);

impl Signatures {
    fn id(&mut self, sig: Vec<Sym>) -> u32 {
        let next = self.0.len() as u32;
        *self.0.entry(sig).or_insert(next)
    }
}

/// The graph replays by signature, as the sweep over every lane meets them.
#[derive(Default)]
struct Measured {
    sigs: Signatures,
    /// By signature id.
    graphs: Vec<GraphAcc>,
}

impl Measured {
    /// Folds a graph replay (a graph launch call of iteration `i`, whose
    /// activities' Σ durations and kernels are `total_ns` and `kernels`)
    /// into its signature's [`GraphAcc`]. Its signature is the ordered
    /// (start, end, name) list of its activities' names.
    fn replay(
        &mut self,
        ledger: &Ledger,
        call: &LaunchCall<'_>,
        (i, closed): (usize, bool),
        total_ns: i128,
        kernels: u64,
    ) {
        let mut sig: Vec<(Ns, Ns, &str, Sym)> = call
            .activities
            .iter()
            .map(|a| (a.start, a.end, ledger.names.resolve(a.name), a.name))
            .collect();
        sig.sort_unstable();
        let first_start = sig.first().map_or(call.ts, |s| s.0);
        let at = (call.ts, call.index);
        let id = self.sigs.id(sig.into_iter().map(|s| s.3).collect()) as usize;
        if id >= self.graphs.len() {
            self.graphs.push(GraphAcc::new(at));
        }
        let g = &mut self.graphs[id];
        g.first = g.first.min(at);
        if !closed {
            return;
        }
        if g.first_closed.is_none_or(|(f, _)| at < f) {
            g.first_closed = Some((at, kernels));
        }
        if g.last_iteration != Some(i) {
            g.iterations += 1;
            g.last_iteration = Some(i);
        }
        g.total_ns += total_ns;
        g.replays += 1;
        g.starts.push(first_start.0);
    }
}

/// One lane's iterations, filled in their start order: only the current
/// one is a struct (its row, its activity intervals, its context's extent);
/// the ones the sweep has left are sealed into a varint stream.
///
/// ```text
/// lane's iterations   it0        it1        it2        it3
/// launch calls         c c c      c c                   c c
/// sweep               [it0 open] ─seal─► out: [row0]
///                                [it1 open] ─seal─► out: [row0 row1]
///                     (it2 has no call: sealed empty when the sweep reaches it3)
/// end of lane                                          ─seal─► [row0 row1 row2 row3]
/// ```
///
/// Calls come in ts order per lane and an iteration is the last one of its
/// lane starting at or before a call, so the sweep never goes back: a row
/// is final once sealed. A `Vec` of every row as accumulators held 304 B
/// per iteration through the sweep (7.3 MB at 800 sample copies).
struct LaneRows<'a> {
    wins: &'a [Window],
    its: &'a [usize],
    /// The position in `its` of the current iteration.
    at: usize,
    row: IterationRow,
    open: OpenIvs,
    /// The extent of the activities launched inside the current
    /// iteration's step context (its row's context span).
    ctx: Option<(Ns, Ns)>,
    out: Records<IterationRow>,
}

impl<'a> LaneRows<'a> {
    fn new(wins: &'a [Window], its: &'a [usize]) -> LaneRows<'a> {
        let row = its
            .first()
            .map_or_else(IterationRow::default, |&i| empty_row(&wins[i]));
        LaneRows {
            wins,
            its,
            at: 0,
            row,
            open: OpenIvs::default(),
            ctx: None,
            out: Records::default(),
        }
    }

    /// Seals iterations up to the one at position `k` (not included),
    /// which becomes the current one.
    fn move_to(&mut self, k: usize) {
        while self.at < k {
            self.seal();
            self.at += 1;
            if let Some(&i) = self.its.get(self.at) {
                self.row = empty_row(&self.wins[i]);
            }
        }
    }

    /// Every iteration of the lane, sealed.
    fn finish(mut self) -> Records<IterationRow> {
        self.move_to(self.its.len());
        self.out
    }

    /// Adds a launch call of phase `phase` (inside the step context itself
    /// when `in_ctx`) and its activities to the current iteration; returns
    /// their Σ durations and kernels (a graph replay's figures).
    fn add(&mut self, call: &LaunchCall<'_>, phase: Phase, in_ctx: bool) -> (i128, u64) {
        let w = self.row.phases.get_mut(phase);
        w.launches += 1;
        w.graph_launches += u64::from(is_graph_launch(call.name));
        let mut total: i128 = 0;
        let mut kernels = 0u64;
        for a in call.activities {
            match a.kind {
                Kind::Kernel => w.kernels += 1,
                Kind::Memcpy => w.memcpys += 1,
                Kind::Memset => w.memsets += 1,
            }
            kernels += u64::from(a.kind == Kind::Kernel);
            total += i128::from(a.end.0) - i128::from(a.start.0);
            self.open.all.push((a.start, a.end));
            self.open.phase[phase as usize].push((a.start, a.end));
            if in_ctx {
                self.ctx = Some(match self.ctx {
                    Some((s, e)) => (s.min(a.start), e.max(a.end)),
                    None => (a.start, a.end),
                });
            }
        }
        (total, kernels)
    }

    /// Turns the current iteration's intervals into its row's figures,
    /// fills its totals over the phases, and writes it out.
    fn seal(&mut self) {
        if self.at >= self.its.len() {
            return;
        }
        let len =
            |ivs: Vec<Iv>| i64::try_from(intervals::length(&intervals::union(ivs))).unwrap_or(0);
        let all = std::mem::take(&mut self.open.all);
        let extent = all
            .iter()
            .map(|iv| iv.0)
            .min()
            .zip(all.iter().map(|iv| iv.1).max());
        let busy = len(all);
        let r = &mut self.row;
        r.gpu_busy_ns = busy;
        r.gpu_idle_ns = extent.and_then(|(s, e)| e.0.checked_sub(s.0)?.checked_sub(busy));
        for (p, ivs) in Phase::ALL
            .into_iter()
            .zip(std::mem::take(&mut self.open.phase))
        {
            r.phases.get_mut(p).gpu_busy_ns = len(ivs);
        }
        let ph = [
            &r.phases.forward,
            &r.phases.sample,
            &r.phases.draft,
            &r.phases.other,
        ];
        let sum = |f: fn(&PhaseWork) -> u64| ph.iter().map(|p| f(p)).sum::<u64>();
        (r.kernels, r.memcpys, r.memsets) =
            (sum(|p| p.kernels), sum(|p| p.memcpys), sum(|p| p.memsets));
        (r.launches, r.graph_launches) = (sum(|p| p.launches), sum(|p| p.graph_launches));
        r.context_span_ns = self.ctx.take().and_then(|(s, e)| e.0.checked_sub(s.0));
        self.out.push(&self.row);
    }
}

/// An iteration's row before the sweep: its window's figures, no work.
fn empty_row(w: &Window) -> IterationRow {
    IterationRow {
        start_ns: w.start.0,
        wall_ns: w.end.and_then(|e| e.0.checked_sub(w.start.0)),
        closed: w.end.is_some(),
        ..IterationRow::default()
    }
}

/// Measures every iteration: the windows, the launch calls of their lanes
/// and the phase ranges (sorted by lane, then start).
fn measure(
    trace: &Finished<'_>,
    ledger: &Ledger,
    lanes: &LaneTable,
    ranges: &[PhaseRange],
    pick: Option<u64>,
) -> TraceIterations {
    let wins = windows(trace);
    let mut m = Measured::default();
    // Iterations by lane, in start order.
    let mut by_lane: BTreeMap<(Sym, Sym), Vec<usize>> = BTreeMap::new();
    for (i, w) in wins.iter().enumerate() {
        by_lane.entry(w.lane).or_default().push(i);
    }
    // The phase ranges' lanes as the step index writes them.
    let shown: Vec<(String, String)> = (0..lanes.len() as u32)
        .map(|id| {
            let l = lanes.resolve(id);
            (l.pid.to_string(), l.tid.to_string())
        })
        .collect();
    let names = &trace.steps.names;
    // Each lane's rows, in its iterations' order.
    let mut sealed = Vec::with_capacity(by_lane.len());
    for its in by_lane.values() {
        let lane = wins[its[0]].lane;
        let (pid, tid) = (names.resolve(lane.0), names.resolve(lane.1));
        let mut rows = LaneRows::new(&wins, its);
        if let Some(lane_id) = ledger.lane_of(pid, tid) {
            let on_lane = shown
                .iter()
                .enumerate()
                .filter(|(_, (p, t))| p == pid && t == tid)
                .map(|(id, _)| lane_slice(ranges, id as u32))
                .collect();
            let sweep = Sweep::new(&wins, its, on_lane);
            measure_lane(&mut m, &mut rows, ledger, lane_id, sweep);
        }
        sealed.push(rows.finish());
    }
    let rows = in_iteration_order(&wins, &by_lane, &sealed);
    drop(sealed);
    let mut out = figures(trace, rows);
    graph_figures(&mut out, m.graphs, pick);
    out.notes = notes(trace, ledger, &out);
    out
}

/// The lanes' rows merged back into iteration order (the order of the
/// selected contexts).
fn in_iteration_order(
    wins: &[Window],
    by_lane: &BTreeMap<(Sym, Sym), Vec<usize>>,
    sealed: &[Records<IterationRow>],
) -> Rows<IterationRow> {
    let lane_of: HashMap<(Sym, Sym), usize> =
        by_lane.keys().enumerate().map(|(k, &l)| (l, k)).collect();
    let mut readers: Vec<_> = sealed.iter().map(Records::iter).collect();
    wins.iter()
        .map(|w| {
            lane_of
                .get(&w.lane)
                .and_then(|&k| readers.get_mut(k))
                .and_then(Iterator::next)
                .unwrap_or_else(|| empty_row(w))
        })
        .collect()
}

/// The ranges of interned lane `lane` among `ranges` (sorted by lane).
fn lane_slice(ranges: &[PhaseRange], lane: u32) -> &[PhaseRange] {
    let lo = ranges.partition_point(|r| r.lane < lane);
    let hi = ranges.partition_point(|r| r.lane <= lane);
    &ranges[lo..hi]
}

/// The position in `its` (one lane's iterations, in start order) of the
/// iteration a launch call at `ts` belongs to: the last one starting at or
/// before it, unless it has ended by then.
fn iteration_of(wins: &[Window], its: &[usize], ts: Ns) -> Option<usize> {
    let k = its
        .partition_point(|&i| wins[i].start <= ts)
        .checked_sub(1)?;
    match wins[*its.get(k)?].end {
        Some(e) if ts >= e => None,
        _ => Some(k),
    }
}

/// Sweeps one lane's launch calls (in ts order) into its iterations.
fn measure_lane(
    m: &mut Measured,
    rows: &mut LaneRows<'_>,
    ledger: &Ledger,
    lane_id: u32,
    mut sweep: Sweep<'_>,
) {
    let (wins, its) = (rows.wins, rows.its);
    for call in ledger.lane_launches(lane_id) {
        let Some(k) = iteration_of(wins, its, call.ts) else {
            continue;
        };
        // The sweep has left the iterations before it for good.
        rows.move_to(k);
        let i = its[k];
        let phase = sweep.phase_at(call.ts);
        let in_ctx = call.ts < wins[i].ctx_end;
        let (total, kernels) = rows.add(&call, phase, in_ctx);
        if is_graph_launch(call.name) {
            let closed = wins[i].end.is_some();
            m.replay(ledger, &call, (i, closed), total, kernels);
        }
    }
}

/// Sums over the closed iterations and the per-iteration means.
fn figures(trace: &Finished<'_>, rows: Rows<IterationRow>) -> TraceIterations {
    let mut s = Sums::default();
    let mut closed = 0u64;
    for r in &rows {
        s.context_span_ns += r.context_span_ns.map_or(0, i128::from);
        if !r.closed {
            continue;
        }
        closed += 1;
        s.wall_ns += i128::from(r.wall_ns.unwrap_or(0));
        s.busy_ns += i128::from(r.gpu_busy_ns);
        s.idle_ns += i128::from(r.gpu_idle_ns.unwrap_or(0));
        s.kernels += i128::from(r.kernels);
        s.memcpys += i128::from(r.memcpys);
        s.memsets += i128::from(r.memsets);
        s.launches += i128::from(r.launches);
        s.graph_launches += i128::from(r.graph_launches);
        for p in Phase::ALL {
            let w = r.phases.get(p);
            s.phase_busy_ns[p as usize] += i128::from(w.gpu_busy_ns);
            s.phase_kernels[p as usize] += i128::from(w.kernels);
            s.phase_launches[p as usize] += i128::from(w.launches);
        }
    }
    let c = i128::from(closed);
    let mean = |num: i128| (c > 0).then_some(Exact { num, den: c });
    let per_iteration = PerIteration {
        wall_ms: mean(s.wall_ns).map(Exact::ms),
        gpu_busy_ms: mean(s.busy_ns).map(Exact::ms),
        kernels: mean(s.kernels).map(Exact::ns),
        launches: mean(s.launches).map(Exact::ns),
        graph_launches: mean(s.graph_launches).map(Exact::ns),
        phases: Phases::default().map(|p, _: &()| PhaseToken {
            gpu_busy_ms: mean(s.phase_busy_ns[p as usize]).map(Exact::ms),
            kernels: mean(s.phase_kernels[p as usize]).map(Exact::ns),
            launches: mean(s.phase_launches[p as usize]).map(Exact::ns),
        }),
    };
    TraceIterations {
        path: trace.path.to_string(),
        context: trace.contexts.name.clone(),
        contexts: rows.len() as u64,
        iterations_closed: closed,
        completion_tokens: None,
        tokens_source: None,
        tokens_per_iteration: None,
        per_iteration,
        per_token: PerToken::default(),
        graphs: Graphs::default(),
        notes: Vec::new(),
        complete: true,
        error: None,
        rows,
        sums: s,
        cadence_ns: Vec::new(),
    }
}

/// Numbers the graphs by first appearance, picks the repeating one and
/// its cadence.
fn graph_figures(out: &mut TraceIterations, graphs: Vec<GraphAcc>, pick: Option<u64>) {
    let mut order: Vec<usize> = (0..graphs.len()).collect();
    order.sort_unstable_by_key(|&k| graphs[k].first);
    let mut number = vec![0u64; graphs.len()];
    for (n, &k) in order.iter().enumerate() {
        number[k] = n as u64;
    }
    // The graphs replayed in a closed iteration, by number.
    let mut per: BTreeMap<u64, GraphAcc> = graphs
        .into_iter()
        .zip(number)
        .filter(|(g, _)| g.replays > 0)
        .map(|(g, n)| (n, g))
        .collect();
    out.graphs.replays = per.values().map(|g| g.replays).sum();
    out.graphs.distinct = per.len() as u64;
    let chosen = match pick {
        Some(g) => per.contains_key(&g).then_some((g, "option".to_string())),
        None => per
            .iter()
            .max_by_key(|&(&n, g)| (g.iterations, g.total_ns, Reverse(n)))
            .map(|(&g, _)| {
                (
                    g,
                    "most closed iterations, then GPU time, then number".into(),
                )
            }),
    };
    let Some((g, why, acc)) = chosen.and_then(|(g, why)| per.remove(&g).map(|acc| (g, why, acc)))
    else {
        if let Some(g) = pick {
            out.notes
                .push(format!("graph {g} is not replayed in a closed iteration"));
        }
        return;
    };
    let mut starts = acc.starts;
    starts.sort_unstable();
    let mut gaps: Vec<i64> = starts
        .windows(2)
        .filter_map(|w| w[1].checked_sub(w[0]))
        .collect();
    gaps.sort_unstable();
    out.sums.repeating_replays = i128::from(acc.replays);
    out.cadence_ns.clone_from(&gaps);
    out.graphs.repeating = Some(Repeating {
        graph: g,
        iterations: acc.iterations,
        replays: acc.replays,
        replays_per_token: None,
        kernels_per_replay: acc.first_closed.map_or(0, |(_, k)| k),
        cadence_ms_median: (!gaps.is_empty()).then(|| median_sorted(&gaps).ms()),
        chosen_by: why,
    });
}

fn notes(trace: &Finished<'_>, ledger: &Ledger, out: &TraceIterations) -> Vec<String> {
    let mut n = trace.meta.notes.clone();
    n.extend(out.notes.iter().cloned());
    let open = out.contexts - out.iterations_closed;
    if open > 0 {
        n.push(format!(
            "{open} iteration(s) have no following step annotation on their thread (open): reported, not in the means"
        ));
    }
    if out.contexts > 0 && out.iterations_closed == 0 {
        n.push("no closed iteration: per-iteration and per-token figures are empty".into());
    }
    if ledger.launch_calls() == 0 {
        n.push("no launch calls with a correlation: no GPU work can be attributed".into());
    }
    if out.graphs.replays == 0 {
        n.push("no CUDA-graph replay in a closed iteration: graph figures are null".into());
    }
    n
}

impl TraceIterations {
    /// Fills the per-token figures: mean over closed iterations × n / T.
    pub fn set_tokens(&mut self, tokens: Option<u64>, source: Option<String>) {
        self.completion_tokens = tokens;
        self.tokens_source = source;
        let s = &self.sums;
        let (n, c) = (
            i128::from(self.contexts),
            i128::from(self.iterations_closed),
        );
        let t = tokens.filter(|&t| t > 0).map(i128::from);
        self.tokens_per_iteration = t.filter(|_| n > 0).map(|t| Exact { num: t, den: n }.ns());
        let per = |x: i128| -> Option<Exact> {
            let den = c.checked_mul(t?)?;
            (den > 0).then_some(Exact {
                num: x.checked_mul(n)?,
                den,
            })
        };
        let ms = |x: i128| per(x).map(Exact::ms);
        let cnt = |x: i128| per(x).map(Exact::ns);
        self.per_token = PerToken {
            wall_ms: ms(s.wall_ns),
            gpu_busy_ms: ms(s.busy_ns),
            gpu_idle_ms: ms(s.idle_ns),
            kernels: cnt(s.kernels),
            memcpys: cnt(s.memcpys),
            memsets: cnt(s.memsets),
            launches: cnt(s.launches),
            graph_launches: cnt(s.graph_launches),
            phases: Phases::default().map(|p, _: &()| PhaseToken {
                gpu_busy_ms: ms(s.phase_busy_ns[p as usize]),
                kernels: cnt(s.phase_kernels[p as usize]),
                launches: cnt(s.phase_launches[p as usize]),
            }),
        };
        let any = self.graphs.replays > 0;
        self.graphs.replays_per_token = cnt(i128::from(self.graphs.replays)).filter(|_| any);
        let rr = s.repeating_replays;
        if let Some(r) = self.graphs.repeating.as_mut() {
            r.replays_per_token = cnt(rr);
        }
    }

    /// An exact per-token figure: x × n / (closed × T).
    pub fn per_token_exact(&self, x: i128) -> Option<Exact> {
        let t = i128::from(self.completion_tokens.filter(|&t| t > 0)?);
        let den = i128::from(self.iterations_closed).checked_mul(t)?;
        (den > 0).then_some(Exact {
            num: x.checked_mul(i128::from(self.contexts))?,
            den,
        })
    }
}

/// AR (baseline) against MTP (candidate).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Comparison {
    pub baseline: String,
    pub candidate: String,
    /// P_MTP / P_AR, P = completion tokens per iteration (T / n).
    pub token_progress_ratio: Option<f64>,
    /// Wall per token, AR / MTP.
    pub s_wall: Option<f64>,
    /// GPU busy per token, AR / MTP.
    pub s_busy: Option<f64>,
    /// GPU span per token of the step contexts' own launches, AR / MTP
    /// (= `kernels`' S_context by correlation).
    pub s_context: Option<f64>,
    /// Mean wall per iteration, MTP / AR.
    pub iteration_cost_ratio: Option<f64>,
    /// Mean GPU busy per iteration, MTP / AR (C).
    pub busy_cost_ratio: Option<f64>,
    /// Per phase: how much of the token progress ratio its extra GPU busy
    /// per iteration gives back; the four add up to P − S_busy.
    pub decomposition: Vec<PhaseShare>,
}

/// One phase of the AR-vs-MTP decomposition.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PhaseShare {
    pub phase: String,
    pub baseline_busy_per_token_ms: Option<f64>,
    pub candidate_busy_per_token_ms: Option<f64>,
    pub baseline_busy_per_iteration_ms: Option<f64>,
    pub candidate_busy_per_iteration_ms: Option<f64>,
    /// Δ_p = (B_MTP,p − B_AR,p) / B_AR: its extra busy per iteration,
    /// relative to AR's whole busy per iteration.
    pub delta: Option<f64>,
    /// g_p = P · Δ_p / C.
    pub gives_back: Option<f64>,
}

use crate::stats::ratio;

/// Compares two traces (first = baseline/AR). Decomposition, exactly:
/// with P = P_MTP/P_AR, B = mean GPU busy per iteration and
/// C = B_MTP/B_AR = 1 + Σ_p Δ_p, S_busy = P / C, so
/// P − S_busy = P(C − 1)/C = Σ_p P·Δ_p/C = Σ_p g_p.
pub fn compare(a: &TraceIterations, m: &TraceIterations) -> Comparison {
    let tpi = |t: &TraceIterations| -> Option<Exact> {
        let tokens = i128::from(t.completion_tokens.filter(|&x| x > 0)?);
        (t.contexts > 0).then_some(Exact {
            num: tokens,
            den: i128::from(t.contexts),
        })
    };
    let mean = |t: &TraceIterations, x: i128| -> Option<Exact> {
        (t.iterations_closed > 0).then_some(Exact {
            num: x,
            den: i128::from(t.iterations_closed),
        })
    };
    let span = |t: &TraceIterations| -> Option<Exact> {
        let tokens = i128::from(t.completion_tokens.filter(|&x| x > 0)?);
        Some(Exact {
            num: t.sums.context_span_ns,
            den: tokens,
        })
    };
    let p = ratio(tpi(m), tpi(a));
    let ba = mean(a, a.sums.busy_ns);
    let bm = mean(m, m.sums.busy_ns);
    let c = ratio(bm, ba);
    let decomposition = Phase::ALL
        .iter()
        .map(|&ph| {
            let k = ph as usize;
            let pa = mean(a, a.sums.phase_busy_ns[k]);
            let pm = mean(m, m.sums.phase_busy_ns[k]);
            // Δ = (pm − pa) / ba, exact.
            let delta = (|| {
                let (pa, pm, ba) = (pa?, pm?, ba?);
                let num = pm.num.checked_mul(pa.den)? - pa.num.checked_mul(pm.den)?;
                let den = pm.den.checked_mul(pa.den)?;
                ratio(Some(Exact { num, den }), Some(ba))
            })();
            PhaseShare {
                phase: ph.as_str().into(),
                baseline_busy_per_token_ms: a.per_token.phases.get(ph).gpu_busy_ms,
                candidate_busy_per_token_ms: m.per_token.phases.get(ph).gpu_busy_ms,
                baseline_busy_per_iteration_ms: pa.map(Exact::ms),
                candidate_busy_per_iteration_ms: pm.map(Exact::ms),
                delta,
                gives_back: match (p, delta, c) {
                    (Some(p), Some(d), Some(c)) if c != 0.0 => Some(p * d / c),
                    _ => None,
                },
            }
        })
        .collect();
    Comparison {
        baseline: a.path.clone(),
        candidate: m.path.clone(),
        token_progress_ratio: p,
        s_wall: ratio(
            a.per_token_exact(a.sums.wall_ns),
            m.per_token_exact(m.sums.wall_ns),
        ),
        s_busy: ratio(
            a.per_token_exact(a.sums.busy_ns),
            m.per_token_exact(m.sums.busy_ns),
        ),
        s_context: ratio(span(a), span(m)),
        iteration_cost_ratio: ratio(mean(m, m.sums.wall_ns), mean(a, a.sums.wall_ns)),
        busy_cost_ratio: c,
        decomposition,
    }
}

#[cfg(test)]
mod tests;
