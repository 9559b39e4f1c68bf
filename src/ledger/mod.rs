//! The correlation ledger: which GPU activities each CPU range launched.
//!
//! Kineto tags every runtime/driver call and every GPU activity it caused
//! with the same `args.correlation`; a CUDA-graph replay is one
//! `cudaGraphLaunch` whose kernels all carry its correlation. A launch call
//! lies in a range when it starts inside it on the same thread (or, with
//! process launch scope, on any thread of the range's process; see
//! [`super::attribution`], which also gives each launch call to one range):
//!
//! ```text
//! CPU tid 7  [============ execute_context_0(0)_generation_1(1) ============)
//!              L1 cudaMemcpyAsync c=10   L2 cudaGraphLaunch c=11      L3 c=12 (at the end: out)
//! GPU s 9        [memcpy c=10)
//! GPU s 7                  [k c=11)[k c=11)   [k c=11)
//!                |<----------------- GPU span ------------>|
//!                busy = |∪ activities| (streams together), idle = span − busy
//!                launch latency = first activity start − launch call end (≥ 0)
//! ```
//!
//! Memory: one 56-byte record per launch call (with its activity range) and
//! one 32-byte record per GPU activity, kept
//! until the end of the read (Kineto writes the CPU side first and the GPU
//! activities after it, and nothing is sorted, so no activity can be
//! attributed before the file ends). The timeline needs every activity
//! interval anyway.

pub mod attribution;
pub mod intervals;

use crate::model::{Interner, Lane, LaneTable, Ns, Sym};
use crate::stats::{median_sorted, Exact};
use crate::trace::{Event, EventPos, Prefilter};
use intervals::Iv;
use std::collections::HashMap;
use std::ops::Range;

/// What a GPU activity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Kernel,
    Memcpy,
    Memset,
}

impl Kind {
    /// The activity kind of a category (2021-era names included).
    pub fn of_category(cat: &str) -> Option<Kind> {
        match cat {
            "kernel" | "Kernel" => Some(Kind::Kernel),
            "gpu_memcpy" | "Memcpy" => Some(Kind::Memcpy),
            "gpu_memset" | "Memset" => Some(Kind::Memset),
            _ => None,
        }
    }
}

/// Categories of launch calls.
pub const LAUNCH_CATEGORIES: [&str; 3] = ["cuda_runtime", "cuda_driver", "Runtime"];

/// Launch calls that replay a whole graph.
pub const GRAPH_LAUNCHES: [&str; 3] = ["cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch"];

/// Whether a launch call's name is a graph replay.
pub fn is_graph_launch(name: &str) -> bool {
    GRAPH_LAUNCHES.iter().any(|g| name.starts_with(g))
}

/// The raw-bytes test for launch calls and GPU activities: both carry
/// `args.correlation`, and nothing else in a Kineto trace does; GPU
/// activities written without one still belong to the timeline, so their
/// category names are needles too (`"gpu_mem` stands for `gpu_memcpy` and
/// `gpu_memset`).
pub fn prefilter() -> Prefilter {
    Prefilter::any_of(&[
        "\"correlation\"",
        "\"kernel\"",
        "\"gpu_mem",
        "\"Kernel\"",
        "\"Memcpy\"",
        "\"Memset\"",
    ])
}

/// A runtime/driver call with a correlation id.
#[derive(Debug, Clone, Copy)]
struct Launch {
    ts: Ns,
    /// ts + dur: when the call returned.
    end: Ns,
    corr: i64,
    index: u64,
    lane: u32,
    name: Sym,
}

/// A kernel, memcpy or memset.
#[derive(Debug, Clone, Copy)]
pub struct Activity {
    pub start: Ns,
    pub end: Ns,
    corr: i64,
    pub name: Sym,
    pub kind: Kind,
    has_corr: bool,
}

/// A launch call and the GPU activities it caused ([`Ledger::lane_launches`]).
#[derive(Debug, Clone, Copy)]
pub struct LaunchCall<'a> {
    pub ts: Ns,
    /// ts + dur.
    pub end: Ns,
    /// Index in `traceEvents`.
    pub index: u64,
    pub name: &'a str,
    pub activities: &'a [Activity],
}

impl Activity {
    /// Whether it carried an integer `args.correlation` (a GPU activity in
    /// the definitions' sense; one without is kept for the timeline only).
    pub fn has_correlation(&self) -> bool {
        self.has_corr
    }
}

/// Streaming state: the launch calls and activities seen so far.
#[derive(Debug, Default)]
pub struct Collector {
    names: Interner,
    lanes: LaneTable,
    launches: Vec<Launch>,
    activities: Vec<Activity>,
}

impl Collector {
    /// Keeps the event if it is a launch call with a correlation or a GPU
    /// activity.
    pub fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        if !ev.is_complete() {
            return;
        }
        let start = ev.ts.unwrap_or_default();
        if let Some(kind) = Kind::of_category(&ev.cat) {
            self.activities.push(Activity {
                start,
                end: start.saturating_add(ev.dur_or_zero()),
                corr: ev.args.correlation.unwrap_or(0),
                name: self.names.intern(&ev.name),
                kind,
                has_corr: ev.args.correlation.is_some(),
            });
        } else if LAUNCH_CATEGORIES.contains(&&*ev.cat) {
            let Some(corr) = ev.args.correlation else {
                return;
            };
            self.launches.push(Launch {
                ts: start,
                end: start.saturating_add(ev.dur_or_zero()),
                corr,
                index: at.index,
                lane: self.lanes.intern(ev.lane()),
                name: self.names.intern(&ev.name),
            });
        }
    }

    /// Indexes what was kept.
    pub fn finish(self) -> Ledger {
        Ledger::build(self)
    }
}

/// The GPU work of one CPU range.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Work {
    pub launches: u64,
    pub graph_launches: u64,
    pub kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    /// (first activity start, last activity end), when there is work.
    pub extent: Option<(Ns, Ns)>,
    /// Length of the union of the activity intervals.
    pub busy: i128,
    /// Median over its launch calls of the queue delay: first activity
    /// start − launch call end, clipped at 0.
    pub latency_median: Option<Exact>,
    /// Median over its activities of activity start − launch call start
    /// (the figure `launch_latency` meant before; graph members included).
    pub start_latency_median: Option<Exact>,
    /// Indices into [`Ledger::activities`].
    pub activities: Vec<u32>,
}

impl Work {
    pub fn has_gpu_work(&self) -> bool {
        self.extent.is_some()
    }

    /// Last end − first start, exact.
    pub fn span(&self) -> Option<i128> {
        self.extent.map(|(s, e)| i128::from(e.0) - i128::from(s.0))
    }
}

/// Launch calls and activities, indexed for range queries.
#[derive(Debug, Default)]
pub struct Ledger {
    pub names: Interner,
    /// Launch calls sorted by (lane, ts, index).
    launches: Vec<Launch>,
    /// Per launch call (same order): its activities in `activities`, empty
    /// unless it is the first in file order with its correlation (the owner
    /// of that correlation's activities).
    acts: Vec<Range<usize>>,
    /// Activities sorted by (has_corr, corr, start, end).
    pub activities: Vec<Activity>,
    lane_ids: HashMap<(String, String), u32>,
    /// Per lane id, the id of its pid (for process-wide launch scope).
    lane_pid: Vec<u32>,
    pid_ids: HashMap<String, u32>,
    /// Correlation ids used by launch calls of more than one process.
    shared_correlations: u64,
}

impl Ledger {
    fn build(c: Collector) -> Ledger {
        let Collector {
            names,
            lanes,
            mut launches,
            mut activities,
        } = c;
        launches.sort_unstable_by_key(|l| (l.lane, l.ts, l.index));
        let owner = owners(&launches);
        let shared_correlations = shared_across_processes(&launches, &lanes);
        activities.sort_unstable_by_key(|a| (a.has_corr, a.corr, a.start, a.end));
        let acts = launches
            .iter()
            .zip(&owner)
            .map(|(l, &own)| match own {
                true => activity_range(&activities, l.corr),
                false => 0..0,
            })
            .collect();
        let mut pid_ids: HashMap<String, u32> = HashMap::new();
        let mut lane_ids = HashMap::new();
        let mut lane_pid = Vec::with_capacity(lanes.len());
        for id in 0..lanes.len() as u32 {
            let l = lanes.resolve(id);
            let next = pid_ids.len() as u32;
            lane_pid.push(*pid_ids.entry(l.pid.to_string()).or_insert(next));
            lane_ids.insert((l.pid.to_string(), l.tid.to_string()), id);
        }
        Ledger {
            names,
            launches,
            acts,
            activities,
            lane_ids,
            lane_pid,
            pid_ids,
            shared_correlations,
        }
    }

    /// Correlation ids that launch calls of more than one process carry
    /// (traces of several processes in one file): their activities go to
    /// the first launch in the file, as for any repeated id, since an
    /// activity does not say which process launched it.
    pub fn shared_correlations(&self) -> u64 {
        self.shared_correlations
    }

    /// The lane id of (pid, tid) written as [`crate::model::ThreadPart`]'s
    /// `Display` does, if any launch call ran there.
    pub fn lane_of(&self, pid: &str, tid: &str) -> Option<u32> {
        self.lane_ids
            .get(&(pid.to_string(), tid.to_string()))
            .copied()
    }

    /// The pid id of a pid written as [`crate::model::ThreadPart`]'s
    /// `Display` does, if any launch call ran in that process.
    pub fn pid_of(&self, pid: &str) -> Option<u32> {
        self.pid_ids.get(pid).copied()
    }

    /// The lane id of a [`Lane`].
    pub fn lane_id(&self, lane: &Lane) -> Option<u32> {
        self.lane_of(&lane.pid.to_string(), &lane.tid.to_string())
    }

    /// The launch calls on lane `lane` that own ≥ 1 GPU activity, in
    /// (ts, file index) order, each with its activities (sorted by start,
    /// end): what an analysis walking one thread's launches needs.
    pub fn lane_launches(&self, lane: u32) -> impl Iterator<Item = LaunchCall<'_>> + '_ {
        let lo = self.launches.partition_point(|l| l.lane < lane);
        let hi = self.launches.partition_point(|l| l.lane <= lane);
        (lo..hi.max(lo)).filter_map(move |i| {
            let range = self.acts[i].clone();
            if range.is_empty() {
                return None;
            }
            let l = &self.launches[i];
            Some(LaunchCall {
                ts: l.ts,
                end: l.end,
                index: l.index,
                name: self.names.resolve(l.name),
                activities: &self.activities[range],
            })
        })
    }

    /// Launch calls kept (with a correlation id).
    pub fn launch_calls(&self) -> usize {
        self.launches.len()
    }

    /// Every graph replay of the trace (a `cudaGraphLaunch`-like launch call
    /// owning ≥ 1 activity): its activities' positions in
    /// [`Ledger::activities`] (sorted by start, then end).
    pub fn graph_replays(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        self.launches
            .iter()
            .zip(&self.acts)
            .filter(|(l, r)| !r.is_empty() && is_graph_launch(self.names.resolve(l.name)))
            .map(|(_, r)| r.clone())
    }

    /// Positions (in `launches`) of the launch calls that own ≥ 1 activity,
    /// in (lane, ts, index) order.
    pub(super) fn working_launches(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.launches.len() as u32).filter(|&i| !self.acts[i as usize].is_empty())
    }

    /// (lane, pid, ts, file index) of the launch call at position `i`.
    pub(super) fn launch_at(&self, i: u32) -> (u32, u32, Ns, u64) {
        let l = &self.launches[i as usize];
        let pid = self.lane_pid.get(l.lane as usize).copied().unwrap_or(0);
        (l.lane, pid, l.ts, l.index)
    }

    /// The GPU work of the launch calls at positions `calls` (each owning
    /// ≥ 1 activity; from [`Ledger::working_launches`]).
    pub(super) fn work_of(&self, calls: &[u32]) -> Work {
        let mut w = Work::default();
        let mut ivs: Vec<Iv> = Vec::new();
        let mut starts: Vec<i64> = Vec::new();
        let mut queue: Vec<i64> = Vec::new();
        for &i in calls {
            let (l, range) = (&self.launches[i as usize], self.acts[i as usize].clone());
            let acts = &self.activities[range.clone()];
            let Some(first) = acts.iter().map(|a| a.start).min() else {
                continue;
            };
            w.launches += 1;
            w.graph_launches += u64::from(is_graph_launch(self.names.resolve(l.name)));
            // Queue delay: how long the work waited after the call returned.
            queue.push(first.0.saturating_sub(l.end.0).max(0));
            for (j, a) in range.zip(acts) {
                w.add(a, j as u32);
                ivs.push((a.start, a.end));
                starts.push(a.start.0.saturating_sub(l.ts.0));
            }
        }
        w.busy = intervals::length(&intervals::union(ivs));
        w.latency_median = median_of(queue);
        w.start_latency_median = median_of(starts);
        w
    }
}

/// The median of `v`, exact; `None` when empty.
fn median_of(mut v: Vec<i64>) -> Option<Exact> {
    v.sort_unstable();
    (!v.is_empty()).then(|| median_sorted(&v))
}

/// The activities of correlation `corr` in `activities` (sorted by
/// (has_corr, corr, …)).
fn activity_range(activities: &[Activity], corr: i64) -> Range<usize> {
    let key = |a: &Activity| (a.has_corr, a.corr);
    let lo = activities.partition_point(|a| key(a) < (true, corr));
    let hi = activities.partition_point(|a| key(a) <= (true, corr));
    lo..hi.max(lo)
}

impl Work {
    fn add(&mut self, a: &Activity, id: u32) {
        match a.kind {
            Kind::Kernel => self.kernels += 1,
            Kind::Memcpy => self.memcpys += 1,
            Kind::Memset => self.memsets += 1,
        }
        self.extent = Some(match self.extent {
            Some((s, e)) => (s.min(a.start), e.max(a.end)),
            None => (a.start, a.end),
        });
        self.activities.push(id);
    }
}

/// How many correlation ids are carried by launch calls of more than one
/// process (pid).
fn shared_across_processes(launches: &[Launch], lanes: &LaneTable) -> u64 {
    let mut by_corr: Vec<(i64, u32)> = launches.iter().map(|l| (l.corr, l.lane)).collect();
    by_corr.sort_unstable();
    let mut shared = 0u64;
    let mut i = 0;
    while i < by_corr.len() {
        let corr = by_corr[i].0;
        let j = i + by_corr[i..].partition_point(|&(c, _)| c == corr);
        let pid = |k: usize| &lanes.resolve(by_corr[k].1).pid;
        if (i + 1..j).any(|k| pid(k) != pid(i)) {
            shared += 1;
        }
        i = j;
    }
    shared
}

/// For each launch call, whether it is the first in file order with its
/// correlation id.
fn owners(launches: &[Launch]) -> Vec<bool> {
    let mut order: Vec<u32> = (0..launches.len() as u32).collect();
    order.sort_unstable_by_key(|&k| {
        let l = &launches[k as usize];
        (l.corr, l.index)
    });
    let mut owner = vec![false; launches.len()];
    let mut prev: Option<i64> = None;
    for k in order {
        let corr = launches[k as usize].corr;
        owner[k as usize] = prev != Some(corr);
        prev = Some(corr);
    }
    owner
}
