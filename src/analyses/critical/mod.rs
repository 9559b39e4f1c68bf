//! What set each iteration's length (`torchtrace critical`): the backward
//! walk of `docs/VIEWS.md` P1–P6 through each iteration (C8's window),
//! splitting its wall time into host, launch, GPU and sync parts that add
//! up to it exactly, and naming the kernels on the path.
//!
//! The walk itself, with its drawing, is `walk.rs`; `compute.rs` builds
//! its timeline from the per-trace host store (the runtime calls and
//! device activities every host-side analysis reads, held once) and sums
//! the rows; `view.rs` prints them.

pub(crate) mod batch;
#[cfg(feature = "cli")]
pub mod cli;
mod compute;
#[cfg(test)]
mod tests;
pub mod view;
mod walk;

use crate::analysis::{Analysis, Configures, Finished, Use};
use crate::hostops::store::{HostStore, HostUse};
use crate::trace::{Event, EventPos, Prefilter};
use crate::windows::OpSteps;
use serde::{Deserialize, Serialize};

pub use walk::Parts;

/// The kernels each trace lists by default (largest on-path time first).
pub const DEFAULT_TOP: u32 = 10;

/// Options of the critical-path analysis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct CriticalSpec {
    /// How many activity names (kernels, memcpys, memsets) each trace
    /// lists by their time on the path, largest first; 0: all.
    #[cfg_attr(
        feature = "cli",
        arg(long = "top", value_name = "N", default_value_t = DEFAULT_TOP)
    )]
    pub top: u32,
    /// Walk each CPU user annotation named NAME (the whole name) over its
    /// own interval instead of C8's iterations (P1): a region such as
    /// HTA's critical-path annotation, or a trace without step
    /// annotations. Every such window counts as a decode iteration.
    #[cfg_attr(feature = "cli", arg(long = "window", value_name = "NAME"))]
    pub window: Option<String>,
}

impl Default for CriticalSpec {
    fn default() -> Self {
        CriticalSpec {
            top: DEFAULT_TOP,
            window: None,
        }
    }
}

impl Configures for CriticalSpec {
    type Analysis = Critical;
}

/// The streaming state: the `ProfilerStep#` CPU ops (C8's fallback); the
/// runtime calls and activities are the host store's.
pub struct Critical {
    spec: CriticalSpec,
    op_steps: OpSteps,
}

/// One iteration's path (P6): its window and the four parts (null for the
/// open last iteration of a thread).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathRow {
    pub index: u64,
    pub name: String,
    /// P6: a decode iteration (vLLM: no context request, at least one
    /// generation request; ProfilerStep: every step).
    pub decode: bool,
    pub start_ns: i64,
    pub window_ns: Option<i64>,
    pub host_ns: Option<i64>,
    pub launch_ns: Option<i64>,
    pub gpu_ns: Option<i64>,
    pub sync_ns: Option<i64>,
    /// Activities on the path, and the launches and blocking syncs it
    /// went through.
    pub activities: u64,
    pub launches: u64,
    pub syncs: u64,
}

/// Σ of the parts over a set of closed iterations (exact, i128).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartSums {
    pub iterations: u64,
    pub window_ns: i128,
    pub host_ns: i128,
    pub launch_ns: i128,
    pub gpu_ns: i128,
    pub sync_ns: i128,
}

impl PartSums {
    fn add(&mut self, p: &Parts) {
        self.iterations += 1;
        self.window_ns += i128::from(p.total());
        self.host_ns += i128::from(p.host);
        self.launch_ns += i128::from(p.launch);
        self.gpu_ns += i128::from(p.gpu);
        self.sync_ns += i128::from(p.sync);
    }

    /// The five sums in the order of [`PART_NAMES`] (window first).
    pub fn values(&self) -> [i128; 5] {
        [
            self.window_ns,
            self.host_ns,
            self.launch_ns,
            self.gpu_ns,
            self.sync_ns,
        ]
    }
}

/// The parts' names, window first, as the JSON keys say them.
pub const PART_NAMES: [&str; 5] = ["window", "host", "launch", "gpu", "sync"];

/// P6: a part per generated token over the decode iterations (ns, 6
/// decimals; null without tokens or closed decode iterations).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PerToken {
    pub window_ns: Option<f64>,
    pub host_ns: Option<f64>,
    pub launch_ns: Option<f64>,
    pub gpu_ns: Option<f64>,
    pub sync_ns: Option<f64>,
}

impl PerToken {
    pub fn values(&self) -> [Option<f64>; 5] {
        [
            self.window_ns,
            self.host_ns,
            self.launch_ns,
            self.gpu_ns,
            self.sync_ns,
        ]
    }
}

/// One activity name's time on the paths of the closed iterations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnPath {
    /// `kernel`, `memcpy` or `memset`.
    pub kind: String,
    pub name: String,
    /// Σ of its own time on the paths (its gaps are the GPU part's, not
    /// its own).
    pub ns: i128,
    /// Times one of its activities was on a path.
    pub count: u64,
}

/// Input the walk corrected or passed over, counted; each non-zero count
/// but `syncs_not_blocking` (a normal sight: a stream sync after a
/// pageable copy that already waited) is also a note.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// C3: activities with no owning runtime call.
    pub unlinked: u64,
    /// P3: sync-like calls passed over (their activity had ended before
    /// they started: the host was not blocked).
    pub syncs_not_blocking: u64,
    /// Walks stopped at their step bound (never on a well-formed trace).
    pub capped_walks: u64,
    /// C8: step annotations on a thread with no runtime call (their whole
    /// window is host).
    pub steps_without_calls: u64,
}

/// One trace's critical paths.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceCritical {
    pub path: String,
    pub units: String,
    /// C8's grammar of the rows (`vllm`, `ProfilerStep`), or `annotation`
    /// for `--window NAME`; null without steps.
    pub step_grammar: Option<String>,
    pub iterations: u64,
    /// Σ over every closed iteration, and over the closed decode ones.
    pub closed: PartSums,
    pub decode: PartSums,
    /// Decode iterations, open ones included (the n of P6's per token).
    pub decode_iterations: u64,
    pub completion_tokens: Option<u64>,
    pub tokens_source: Option<String>,
    pub per_token: PerToken,
    /// Activity names by time on the closed iterations' paths (`--top`).
    pub on_path: Vec<OnPath>,
    /// Names beyond `--top`, summed.
    pub on_path_others_ns: i128,
    pub rows: Vec<PathRow>,
    pub counts: Counts,
    pub notes: Vec<String>,
    pub complete: bool,
    pub error: Option<String>,
}

impl TraceCritical {
    /// P6's per token: the decode sums' means over closed decode
    /// iterations × all decode iterations ÷ completion tokens.
    pub fn set_tokens(&mut self, tokens: Option<u64>, source: Option<String>) {
        self.completion_tokens = tokens.filter(|&t| t > 0);
        self.tokens_source = self.completion_tokens.and(source);
        let d = &self.decode;
        let den = self
            .completion_tokens
            .map(|t| i128::from(t) * i128::from(d.iterations))
            .filter(|_| d.iterations > 0);
        let n = i128::from(self.decode_iterations);
        let per =
            |v: i128| den.and_then(|den| crate::stats::ratios::mean6(v.saturating_mul(n), den));
        self.per_token = PerToken {
            window_ns: per(d.window_ns),
            host_ns: per(d.host_ns),
            launch_ns: per(d.launch_ns),
            gpu_ns: per(d.gpu_ns),
            sync_ns: per(d.sync_ns),
        };
    }
}

/// What it asks of the host store: runtime calls and activities only.
static CRITICAL_HOST: HostUse = HostUse {
    host_ops: false,
    shapes: None,
};

impl Analysis for Critical {
    const NAME: &'static str = "critical";
    const KEY: &'static str = "critical";
    type Config = CriticalSpec;
    type Output = TraceCritical;

    fn start(config: &CriticalSpec) -> Self {
        Critical {
            spec: config.clone(),
            op_steps: OpSteps::default(),
        }
    }

    /// Reads the host store's runtime calls and activities.
    fn collects(_spec: &CriticalSpec) -> Option<Use> {
        Some(Use::of::<HostStore>(&CRITICAL_HOST, false))
    }

    /// `ProfilerStep#` ops (the host store admits the rest).
    fn prefilter(&self) -> Prefilter {
        Prefilter::any_of(&["ProfilerStep#"])
    }

    fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        self.op_steps.push(ev, at);
    }

    fn set_tokens(out: &mut TraceCritical, tokens: Option<u64>, source: Option<&str>) {
        out.set_tokens(tokens, source.map(str::to_string));
    }

    fn finish(self, trace: &Finished<'_>) -> TraceCritical {
        let mut out = compute::measure(self, trace);
        if let Some(e) = trace.error_text() {
            out.complete = false;
            out.error = Some(e);
        }
        out
    }
}
