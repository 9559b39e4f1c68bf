//! Multi-rank runs (`torchtrace ranks`, issue 20): per vLLM step, which
//! rank made the others wait, and how long.
//!
//! Per trace (this analysis, one read per rank file) every step annotation
//! on the step thread is kept with the collectives it launched: the GPU
//! activities whose names match the communication patterns, attributed to
//! the step by launch correlation (graph replays included: under CUDA
//! graphs the all-reduces run inside the replay), innermost range first,
//! as `kernels` attributes. The output is bounded by steps × collectives
//! per step, not by events.
//!
//! Across the traces of one run (`runs` groups them, `align` measures):
//!
//! ```text
//!  rank 0  step i  [== step annotation ==)
//!  GPU 0              [AR k=0 ·····wait·····|==)      [AR k=1 ==)
//!  rank 1  step i  [··sleep··][== step ==)
//!  GPU 1                                [AR k=0 ==)   [AR k=1 ==)
//!                     s_0                s_1    e_0≈e_1
//!  wait_0 = max(s) − s_0 = s_1 − s_0; wait_1 = 0; last arriver at k=0: rank 1
//!  offset_r = lower median over matched collectives of (e_r − e_ref):
//!  a blocking collective ends at nearly the same moment on every rank
//! ```
//!
//! Definitions: docs/DEFINITIONS.md, "Ranks of a run (`ranks`)".

pub(crate) mod align;
pub(crate) mod batch;
pub mod figure;
/// Public for the `grouping` fuzz target (issue 59), not an API.
#[doc(hidden)]
pub mod runs;
pub mod view;

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(test)]
mod tests;

use crate::analysis::{Analysis, Configures, Finished, InResults, Need};
use crate::ledger::attribution::{self, LaunchScope, Query};
use crate::ledger::Ledger;
use crate::model::Ns;
use crate::trace::{Event, EventPos, Prefilter};
use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The collective patterns, case-insensitive regular expressions searched
/// anywhere in a GPU activity's name: NCCL (`ncclDevKernel_*`,
/// `ncclKernel_*`), RCCL, vLLM's custom all-reduce
/// (`cross_device_reduce_*`) and the collectives' generic names. The same
/// list as `diff`'s `communication` family.
pub const COLLECTIVE_PATTERN: &str = crate::families::COMMUNICATION;

/// Default k of the threshold's median + k·MAD.
pub const DEFAULT_MAD_K: u32 = 10;
/// Default absolute floor of the threshold (µs).
pub const DEFAULT_FLOOR_US: u64 = 100;
/// Default floor relative to the median decode-step GPU span (percent).
pub const DEFAULT_FLOOR_STEP_PCT: u32 = 50;

/// Whether measured clock offsets are applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Align {
    /// Applied when credible: at least 8 matched collectives, spread at
    /// most 20 µs (`align::MIN_MATCHED`, `align::MAX_SPREAD_NS`).
    #[default]
    Auto,
    /// Never: the traces' own clocks.
    None,
}

impl Align {
    pub fn as_str(self) -> &'static str {
        match self {
            Align::Auto => "auto",
            Align::None => "none",
        }
    }
}

/// Options of the ranks analysis, defined once: the flags of `torchtrace
/// ranks` (clap derive, feature `cli`), Python keywords and records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct RanksSpec {
    /// A further collective pattern (regular expression, case-insensitive;
    /// repeatable), matched besides the built-in list.
    #[cfg_attr(feature = "cli", arg(long = "collective", value_name = "REGEX"))]
    pub collectives: Vec<String>,
    /// The rank in the file name: the first capture group (or group
    /// `rank`) of this regular expression; for files not named as vLLM
    /// names them and without distributedInfo.
    #[cfg_attr(feature = "cli", arg(long, value_name = "REGEX"))]
    pub rank_regex: Option<String>,
    /// Apply the measured clock offsets (auto: when credible) or not.
    #[cfg_attr(feature = "cli", arg(long, value_enum, default_value_t = Align::Auto))]
    pub align: Align,
    /// A fixed straggler threshold in µs (overrides the derived one).
    #[cfg_attr(feature = "cli", arg(long, value_name = "US"))]
    pub threshold_us: Option<u64>,
    /// k of the derived threshold's median + k·MAD of the step delays.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = DEFAULT_MAD_K, value_name = "K"))]
    pub mad_k: u32,
    /// The derived threshold's absolute floor in µs.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = DEFAULT_FLOOR_US, value_name = "US"))]
    pub floor_us: u64,
    /// The derived threshold's floor, in % of the run's median decode-step
    /// GPU span.
    #[cfg_attr(
        feature = "cli",
        arg(long, default_value_t = DEFAULT_FLOOR_STEP_PCT, value_name = "PCT")
    )]
    pub floor_step_pct: u32,
    /// Which launch calls a step holds: those of its own thread, or of any
    /// thread of its process (as `kernels --launch-scope`).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_enum, default_value_t = LaunchScope::Auto, value_name = "SCOPE")
    )]
    pub launch_scope: LaunchScope,
    /// Completion tokens of each run (overrides the run summaries).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub tokens: Option<u64>,
}

impl Default for RanksSpec {
    fn default() -> Self {
        RanksSpec {
            collectives: Vec::new(),
            rank_regex: None,
            align: Align::Auto,
            threshold_us: None,
            mad_k: DEFAULT_MAD_K,
            floor_us: DEFAULT_FLOOR_US,
            floor_step_pct: DEFAULT_FLOOR_STEP_PCT,
            launch_scope: LaunchScope::Auto,
            tokens: None,
        }
    }
}

/// What a plan holds: the options with the patterns compiled.
#[derive(Debug, Clone)]
pub struct RanksConfig {
    pub spec: RanksSpec,
    collectives: Regex,
    pub rank_regex: Option<Regex>,
}

impl RanksConfig {
    /// Checks and compiles the options.
    pub fn new(spec: RanksSpec) -> Result<RanksConfig, String> {
        let mut pattern = COLLECTIVE_PATTERN.to_string();
        for p in &spec.collectives {
            if p.is_empty() {
                return Err("--collective: the pattern is empty".into());
            }
            Regex::new(p).map_err(|e| format!("--collective {p:?}: {e}"))?;
            pattern.push_str(&format!("|(?:{p})"));
        }
        let collectives = RegexBuilder::new(&pattern)
            .case_insensitive(true)
            .build()
            .map_err(|e| format!("collective patterns: {e}"))?;
        let rank_regex = match &spec.rank_regex {
            None => None,
            Some(r) => {
                let re = Regex::new(r).map_err(|e| format!("--rank-regex {r:?}: {e}"))?;
                if re.captures_len() < 2 {
                    return Err(format!(
                        "--rank-regex {r:?}: needs a capture group for the rank"
                    ));
                }
                Some(re)
            }
        };
        if spec.mad_k > 1000 || spec.floor_step_pct > 10_000 {
            return Err("ranks: --mad-k at most 1000, --floor-step-pct at most 10000".into());
        }
        Ok(RanksConfig {
            spec,
            collectives,
            rank_regex,
        })
    }

    /// Whether a GPU activity's name is a collective.
    pub fn is_collective(&self, name: &str) -> bool {
        self.collectives.is_match(name)
    }
}

impl Configures for RanksConfig {
    type Analysis = Ranks;
}

/// One collective a step launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collective {
    pub start_ns: i64,
    pub end_ns: i64,
    /// Index into [`RankTrace::collective_names`].
    pub name: u32,
}

/// One step annotation of one rank, with what it launched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankStep {
    /// Index into [`RankTrace::step_names`].
    pub name: u32,
    pub cpu_start_ns: i64,
    pub cpu_end_ns: i64,
    /// First activity start and last activity end of its GPU work.
    pub gpu: Option<(i64, i64)>,
    /// Its collectives, sorted by (start, end, name).
    pub collectives: Vec<Collective>,
}

impl RankStep {
    /// Last activity end − first activity start.
    pub fn gpu_span(&self) -> Option<i64> {
        self.gpu.map(|(s, e)| e.saturating_sub(s))
    }
}

/// One rank file's steps and collectives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankTrace {
    pub path: String,
    pub complete: bool,
    pub error: Option<String>,
    /// `distributedInfo.rank` / `.world_size`, when the trace has them.
    pub info_rank: Option<i64>,
    pub info_world_size: Option<i64>,
    /// The selected step context (decode steps by default).
    pub context: String,
    pub completion_tokens: Option<u64>,
    pub tokens_source: Option<String>,
    pub step_names: Vec<String>,
    pub collective_names: Vec<String>,
    /// The selected step contexts, by (start, event index).
    pub decode: Vec<RankStep>,
    /// The other vLLM step annotations (prefill, mixed) on the selected
    /// contexts' threads: aligned apart.
    pub boundary: Vec<RankStep>,
    /// Collectives attributed to no step (an MTP drafter's all-reduces run
    /// between step annotations).
    pub collectives_outside_steps: u64,
    pub notes: Vec<String>,
    /// The options it was read with (the run-level figures of `batch`
    /// use them).
    #[serde(default)]
    pub options: RanksSpec,
}

/// Streaming state: everything comes from the driver's steps and ledger.
pub struct Ranks {
    config: RanksConfig,
}

impl Analysis for Ranks {
    const NAME: &'static str = "ranks";
    const KEY: &'static str = "ranks";
    type Config = RanksConfig;
    type Output = RankTrace;

    fn start(config: &RanksConfig) -> Self {
        Ranks {
            config: config.clone(),
        }
    }

    fn ledger(_: &RanksConfig) -> Need {
        Need::Yes
    }

    fn prefilter(&self) -> Prefilter {
        crate::ledger::prefilter()
    }

    fn push(&mut self, _: &Event<'_>, _: EventPos) {}

    /// In `results.json`, the trace's counts only: the steps and their
    /// collectives are in records, the run-level figures in the section.
    fn in_results(t: &RankTrace) -> InResults {
        InResults::Nested(serde_json::json!({
            "rank": t.info_rank,
            "world_size": t.info_world_size,
            "context": t.context,
            "decode_steps": t.decode.len(),
            "boundary_steps": t.boundary.len(),
            "collectives": t.decode.iter().chain(&t.boundary).map(|s| s.collectives.len()).sum::<usize>(),
            "collectives_outside_steps": t.collectives_outside_steps,
        }))
    }

    fn set_tokens(out: &mut RankTrace, tokens: Option<u64>, source: Option<&str>) {
        out.completion_tokens = tokens;
        out.tokens_source = source.map(str::to_string);
    }

    fn finish(self, trace: &Finished<'_>) -> RankTrace {
        let mut out = RankTrace {
            path: trace.path.to_string(),
            complete: trace.complete(),
            error: trace.error_text(),
            info_rank: trace.meta.rank,
            info_world_size: trace.meta.world_size,
            context: trace.contexts.name.clone(),
            completion_tokens: None,
            tokens_source: None,
            step_names: Vec::new(),
            collective_names: Vec::new(),
            decode: Vec::new(),
            boundary: Vec::new(),
            collectives_outside_steps: 0,
            notes: trace.meta.notes.clone(),
            options: self.config.spec.clone(),
        };
        if let Some(ledger) = trace.ledger {
            collect_steps(&mut out, trace, ledger, &self.config);
        }
        out
    }
}

/// A step annotation chosen for the run: its row in `Steps::cpu` and
/// whether it is a selected (decode) context.
struct Chosen {
    row: usize,
    decode: bool,
}

/// The selected contexts and, on their threads, the other vLLM step
/// annotations, by (start, event index).
fn chosen_steps(trace: &Finished<'_>) -> Vec<Chosen> {
    let steps = trace.steps;
    let lanes: std::collections::HashSet<_> = trace.contexts.iter(steps).map(|c| c.lane).collect();
    let mut vllm: HashMap<crate::model::Sym, bool> = HashMap::new();
    let mut out: Vec<Chosen> = Vec::new();
    for (row, a) in steps.cpu.iter().enumerate() {
        let decode = trace.contexts.selected.contains(&a.name);
        let step = decode
            || *vllm
                .entry(a.name)
                .or_insert_with(|| crate::steps::parse(steps.names.resolve(a.name)).is_some());
        if step && lanes.contains(&a.lane) {
            out.push(Chosen { row, decode });
        }
    }
    out.sort_by_key(|c| (steps.cpu[c.row].start, steps.cpu[c.row].index));
    out
}

/// Attributes the ledger's launches to the chosen steps and keeps each
/// step's span and collectives.
fn collect_steps(out: &mut RankTrace, trace: &Finished<'_>, ledger: &Ledger, cfg: &RanksConfig) {
    let steps = trace.steps;
    let chosen = chosen_steps(trace);
    let queries: Vec<Query> = chosen
        .iter()
        .map(|c| {
            let a = &steps.cpu[c.row];
            let (pid, tid) = (steps.names.resolve(a.lane.0), steps.names.resolve(a.lane.1));
            Query {
                lane: ledger.lane_of(pid, tid),
                pid: ledger.pid_of(pid),
                scope: cfg.spec.launch_scope.resolve(steps.names.resolve(a.name)),
                start: a.start,
                end: a.end(),
                index: a.index,
            }
        })
        .collect();
    let mut is_coll: HashMap<crate::model::Sym, Option<u32>> = HashMap::new();
    let mut step_ids: HashMap<crate::model::Sym, u32> = HashMap::new();
    let mut attributed = 0u64;
    // Each step's work folded as it comes (query order): no `Work` per step
    // is held at once.
    attribution::attribute_each(ledger, &queries, |q, w| {
        let c = &chosen[q];
        let a = &steps.cpu[c.row];
        let mut colls: Vec<Collective> = Vec::new();
        for act in w.activities(ledger) {
            let id = *is_coll.entry(act.name).or_insert_with(|| {
                let name = ledger.names.resolve(act.name);
                cfg.is_collective(name).then(|| {
                    out.collective_names.push(name.to_string());
                    out.collective_names.len() as u32 - 1
                })
            });
            if let Some(name) = id {
                colls.push(Collective {
                    start_ns: act.start.0,
                    end_ns: act.end.0,
                    name,
                });
            }
        }
        colls.sort_unstable_by_key(|c| (c.start_ns, c.end_ns, c.name));
        attributed += colls.len() as u64;
        let name = *step_ids.entry(a.name).or_insert_with(|| {
            out.step_names.push(steps.names.resolve(a.name).to_string());
            out.step_names.len() as u32 - 1
        });
        let row = RankStep {
            name,
            cpu_start_ns: a.start.0,
            cpu_end_ns: a.end().0,
            gpu: w.extent.map(|(s, e): (Ns, Ns)| (s.0, e.0)),
            collectives: colls,
        };
        match c.decode {
            true => out.decode.push(row),
            false => out.boundary.push(row),
        }
    });
    let total = ledger
        .activities
        .iter()
        .filter(|a| a.has_correlation())
        .filter(|a| {
            is_coll
                .entry(a.name)
                .or_insert_with(|| {
                    cfg.is_collective(ledger.names.resolve(a.name))
                        .then_some(u32::MAX)
                })
                .is_some()
        })
        .count() as u64;
    out.collectives_outside_steps = total.saturating_sub(attributed);
}
