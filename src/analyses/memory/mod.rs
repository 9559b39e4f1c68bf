//! The allocator timeline (`torchtrace memory`): what the `[memory]`
//! instant events of a trace recorded with `profile_memory=True` say —
//! per device the peak and what holds it, per step the high-water mark
//! and the churn, per token where tokens are known — with the definitions
//! of `docs/VIEWS.md` M1–M6 (each rule id is cited where it is applied).
//!
//! ```text
//! events (ts, file order)   +64 @A    +32 @B     −64 @A    +16 @C     −32 @B
//! level (M2)          0 →   64        96 peak    32        48         16   (final)
//! lives (M3)          A [=========================)
//!                     B           [===============================================)
//!                     C                                    [=====================… never freed
//! at the peak (M4)    A and B live: 96 B held by the host ops enclosing their events
//! step window (M5)    [S_i.ts ────────────── S_{i+1}.ts): start 64, high water 96, net −32
//! ```
//!
//! While reading, each `[memory]` event is kept as one fixed record (80 B
//! an event, [`crate::allocator`]); the host ops that enclose an allocation are the per-trace
//! host store's ([`crate::hostops::store`]), read at the finish. The finish
//! sorts the records and sweeps them: O(events log events).

pub(crate) mod batch;
#[cfg(feature = "cli")]
pub mod cli;
mod compute;
mod figure;
#[cfg(test)]
mod tests;
pub mod view;

use crate::allocator::AllocEvents;
use crate::analysis::{Analysis, Configures, Finished, Use};
use crate::hostops::store::{HostStore, HostUse};
use crate::model::LaneTable;
use crate::trace::{Event, EventPos, Prefilter};
use crate::windows::OpSteps;
use serde::{Deserialize, Serialize};

pub use crate::allocator::{device_label, MEMORY_EVENT};

/// Options of the memory analysis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct MemorySpec {
    /// Also keep each device's allocated and reserved bytes over time in at
    /// most N points (M6: the largest level of each of N equal time
    /// slices, so the peak is one of them); 0: none. `batch` keeps 400 for
    /// its figure.
    #[cfg_attr(
        feature = "cli",
        arg(long = "timeline", value_name = "N", default_value_t = 0)
    )]
    pub timeline: u32,
    /// How many holders (host ops, modules) each list keeps, largest
    /// first; the rest are summed in one `(others)` row. 0: all.
    #[cfg_attr(
        feature = "cli",
        arg(long = "top", value_name = "N", default_value_t = DEFAULT_TOP)
    )]
    pub top: u32,
}

/// The holders each list keeps by default.
pub const DEFAULT_TOP: u32 = 20;

impl Default for MemorySpec {
    fn default() -> Self {
        MemorySpec {
            timeline: 0,
            top: DEFAULT_TOP,
        }
    }
}

impl Configures for MemorySpec {
    type Analysis = Memory;
}

/// The streaming state: the memory events, the devices they name, and the
/// `ProfilerStep#` ops (the host ops are the host store's).
pub struct Memory {
    spec: MemorySpec,
    events: AllocEvents,
    lanes: LaneTable,
    op_steps: OpSteps,
}

/// Input M1 and M3 had to leave out or correct, counted; each non-zero
/// count is also a note.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// `[memory]` events kept (M1).
    pub memory_events: u64,
    /// `[memory]` events without `ts`, an integer `Bytes`, `Device Type`
    /// or `Device Id`, skipped (M1).
    pub malformed: u64,
}

/// M4: one holder of live bytes — a host op (its category and name), or a
/// module.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub cat: String,
    pub name: String,
    pub bytes: i128,
    pub allocations: u64,
}

/// M5: one step's memory on one device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepMemory {
    pub index: u64,
    pub name: String,
    pub start_ns: i64,
    /// The next step's start on its thread; null for the last (open).
    pub end_ns: Option<i64>,
    /// Generation tokens the step's name says it produced (vLLM steps).
    pub tokens: Option<u64>,
    pub events: u64,
    pub allocations: u64,
    pub frees: u64,
    pub bytes_allocated: i128,
    pub bytes_freed: i128,
    /// The level when the window opens (M2: after the last earlier event).
    pub start_bytes: i128,
    /// The largest level in the window (its start included).
    pub high_water_bytes: i128,
    /// The level after the window's last event (its start without one).
    pub end_bytes: i128,
    /// end − start.
    pub net_bytes: i128,
}

/// M6: one point of the timeline: a slice's start and the largest levels
/// in it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    pub ts_ns: i64,
    pub allocated_bytes: i128,
    /// Null where no event of the slice wrote `Total Reserved`.
    pub reserved_bytes: Option<i64>,
}

/// M2–M6: one device's allocator timeline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceMemory {
    /// `cpu`, `cuda:<id>`, `hip:<id>`, or `type<t>:<id>` for other types.
    pub device: String,
    /// Kineto's `Device Type` (0 CPU, 1 CUDA, 6 HIP; others by number).
    pub device_type: i64,
    pub device_id: i64,
    /// M2: `total_allocated` (every event wrote `Total Allocated`: the
    /// allocator's own level) or `running_sum` (Σ Bytes from 0).
    pub levels: String,
    pub events: u64,
    pub allocations: u64,
    pub frees: u64,
    pub first_ts_ns: i64,
    pub last_ts_ns: i64,
    pub bytes_allocated: i128,
    pub bytes_freed: i128,
    /// First event's Total Allocated − its Bytes: allocated before the
    /// trace; null for running sums.
    pub baseline_bytes: Option<i128>,
    pub peak_allocated_bytes: i128,
    /// The first event reaching the peak (absolute trace time, ns).
    pub peak_ts_ns: i64,
    pub final_allocated_bytes: i128,
    pub peak_reserved_bytes: Option<i64>,
    /// Total Reserved at the peak event, and that − the peak.
    pub reserved_at_peak_bytes: Option<i64>,
    pub reserved_minus_allocated_at_peak_bytes: Option<i128>,
    /// M4: Σ of the trace's allocations live at the peak, and the rest of
    /// the peak (allocated before the trace; null for running sums).
    pub held_at_peak_bytes: i128,
    pub held_at_peak_allocations: u64,
    pub before_trace_bytes: Option<i128>,
    /// M4: by innermost enclosing host op, bytes descending.
    pub at_peak: Vec<Holder>,
    /// M4: by innermost enclosing `nn.Module: …` frame (traces recorded
    /// with modules or stacks; empty otherwise).
    pub at_peak_by_module: Vec<Holder>,
    /// M4: the trace's allocations still live after its last event.
    pub never_freed_bytes: i128,
    pub never_freed_allocations: u64,
    pub never_freed: Vec<Holder>,
    /// M3's corrections.
    pub frees_of_earlier_allocations: u64,
    pub bytes_freed_of_earlier_allocations: i128,
    pub allocations_without_addr: u64,
    pub frees_without_addr: u64,
    pub reused_live_addresses: u64,
    pub free_size_mismatches: u64,
    /// M2: events whose Total Allocated ≠ the previous one + their Bytes.
    pub total_mismatches: u64,
    /// Per completion token (exact ratios, 6 decimals; null without tokens).
    pub bytes_allocated_per_token: Option<f64>,
    pub allocations_per_token: Option<f64>,
    /// M5: one row per step (C8).
    pub steps: Vec<StepMemory>,
    /// M6: with `--timeline N`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<Point>,
}

/// One trace's memory figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceMemory {
    pub path: String,
    pub units: String,
    /// C8's grammar of the step rows (`vllm`, `ProfilerStep`); null
    /// without steps.
    pub step_grammar: Option<String>,
    pub devices: Vec<DeviceMemory>,
    pub counts: Counts,
    pub completion_tokens: Option<u64>,
    pub tokens_source: Option<String>,
    pub notes: Vec<String>,
    pub complete: bool,
    pub error: Option<String>,
}

impl TraceMemory {
    /// Sets the per-token figures (M5) from the run's completion tokens.
    pub fn set_tokens(&mut self, tokens: Option<u64>, source: Option<String>) {
        self.completion_tokens = tokens.filter(|&t| t > 0);
        self.tokens_source = self.completion_tokens.and(source);
        let t = self.completion_tokens.map(i128::from);
        for d in &mut self.devices {
            d.bytes_allocated_per_token =
                t.and_then(|t| crate::stats::ratios::mean6(d.bytes_allocated, t));
            d.allocations_per_token =
                t.and_then(|t| crate::stats::ratios::mean6(i128::from(d.allocations), t));
        }
    }
}

/// What it asks of the host store: the host ops (the holders, M4).
static MEMORY_HOST: HostUse = HostUse {
    host_ops: true,
    shapes: None,
};

impl Analysis for Memory {
    const NAME: &'static str = "memory";
    const KEY: &'static str = "memory";
    type Config = MemorySpec;
    type Output = TraceMemory;

    fn start(config: &MemorySpec) -> Self {
        Memory {
            spec: config.clone(),
            events: AllocEvents::default(),
            lanes: LaneTable::default(),
            op_steps: OpSteps::default(),
        }
    }

    /// Reads the host store's host ops (M4's holders).
    fn collects(_spec: &MemorySpec) -> Option<Use> {
        Some(Use::of::<HostStore>(&MEMORY_HOST, false))
    }

    /// `[memory]` events and `ProfilerStep#` ops (the host store admits
    /// the host ops).
    fn prefilter(&self) -> Prefilter {
        Prefilter::any_of(&[MEMORY_EVENT, "ProfilerStep#"])
    }

    fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        if ev.name == MEMORY_EVENT {
            let lane = self.lanes.intern(ev.lane());
            self.events.keep(ev, at, lane);
        } else {
            self.op_steps.push(ev, at);
        }
    }

    fn set_tokens(out: &mut TraceMemory, tokens: Option<u64>, source: Option<&str>) {
        out.set_tokens(tokens, source.map(str::to_string));
    }

    fn finish(self, trace: &Finished<'_>) -> TraceMemory {
        let mut out = compute::measure(self, trace);
        if let Some(e) = trace.error_text() {
            out.complete = false;
            out.error = Some(e);
        }
        out
    }
}
