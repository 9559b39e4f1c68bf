//! The correlation ledger: which GPU activities each CPU range launched.
//!
//! Kineto tags every runtime/driver call and every GPU activity it caused
//! with the same `args.correlation`; a CUDA-graph replay is one
//! `cudaGraphLaunch` whose kernels all carry its correlation. A launch call
//! lies in a range when it starts inside it on the same thread:
//!
//! ```text
//! CPU tid 7  [============ execute_context_0(0)_generation_1(1) ============)
//!              L1 cudaMemcpyAsync c=10   L2 cudaGraphLaunch c=11      L3 c=12 (at the end: out)
//! GPU s 9        [memcpy c=10)
//! GPU s 7                  [k c=11)[k c=11)   [k c=11)
//!                |<----------------- GPU span ------------>|
//!                busy = |∪ activities| (streams together), idle = span − busy
//!                launch latency = activity start − its launch call's ts
//! ```
//!
//! Memory: one 32-byte record per launch call and per GPU activity, kept
//! until the end of the read (Kineto writes the CPU side first and the GPU
//! activities after it, and nothing is sorted, so no activity can be
//! attributed before the file ends). The timeline needs every activity
//! interval anyway.

use super::intervals::{self, Iv};
use crate::model::{Interner, Lane, LaneTable, Ns, Sym};
use crate::stats::{median_sorted, Exact};
use crate::trace::{Event, EventPos, Prefilter};
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
    /// Median of activity start − launch ts.
    pub latency_median: Option<Exact>,
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
    /// Per lane id, its launch calls in `launches`.
    by_lane: Vec<Range<usize>>,
    /// Per launch call (same order): the first in file order with its
    /// correlation, and so the owner of that correlation's activities.
    owner: Vec<bool>,
    /// Activities sorted by (has_corr, corr, start, end).
    pub activities: Vec<Activity>,
    lane_ids: HashMap<(String, String), u32>,
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
        let by_lane = lane_ranges(&launches, lanes.len());
        let owner = owners(&launches);
        let shared_correlations = shared_across_processes(&launches, &lanes);
        activities.sort_unstable_by_key(|a| (a.has_corr, a.corr, a.start, a.end));
        let lane_ids = (0..lanes.len() as u32)
            .map(|id| {
                let l = lanes.resolve(id);
                ((l.pid.to_string(), l.tid.to_string()), id)
            })
            .collect();
        Ledger {
            names,
            launches,
            by_lane,
            owner,
            activities,
            lane_ids,
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

    /// The lane id of a [`Lane`].
    pub fn lane_id(&self, lane: &Lane) -> Option<u32> {
        self.lane_of(&lane.pid.to_string(), &lane.tid.to_string())
    }

    /// Launch calls kept (with a correlation id).
    pub fn launch_calls(&self) -> usize {
        self.launches.len()
    }

    /// The activities of correlation `corr`.
    fn activities_of(&self, corr: i64) -> &[Activity] {
        let key = |a: &Activity| (a.has_corr, a.corr);
        let lo = self.activities.partition_point(|a| key(a) < (true, corr));
        let hi = self.activities.partition_point(|a| key(a) <= (true, corr));
        &self.activities[lo..hi]
    }

    /// The GPU work launched from `lane` during `[start, end)`.
    pub fn work(&self, lane: Option<u32>, start: Ns, end: Ns) -> Work {
        let mut w = Work::default();
        let Some(range) = lane.and_then(|l| self.by_lane.get(l as usize)) else {
            return w;
        };
        let calls = &self.launches[range.clone()];
        let lo = calls.partition_point(|l| l.ts < start);
        let hi = calls.partition_point(|l| l.ts < end);
        let mut ivs: Vec<Iv> = Vec::new();
        let mut latencies: Vec<i64> = Vec::new();
        let owners = &self.owner[range.clone()];
        for (l, _) in calls[lo..hi.max(lo)]
            .iter()
            .zip(&owners[lo..hi.max(lo)])
            .filter(|(_, &own)| own)
        {
            let acts = self.activities_of(l.corr);
            if acts.is_empty() {
                continue;
            }
            w.launches += 1;
            w.graph_launches += u64::from(is_graph_launch(self.names.resolve(l.name)));
            let base = self.offset_of(acts);
            for (j, a) in acts.iter().enumerate() {
                w.add(a, (base + j) as u32);
                ivs.push((a.start, a.end));
                if let Some(d) = a.start.0.checked_sub(l.ts.0) {
                    latencies.push(d);
                }
            }
        }
        w.busy = intervals::length(&intervals::union(ivs));
        latencies.sort_unstable();
        w.latency_median = (!latencies.is_empty()).then(|| median_sorted(&latencies));
        w
    }

    /// Index of a sub-slice's first element in `activities`.
    fn offset_of(&self, sub: &[Activity]) -> usize {
        let size = std::mem::size_of::<Activity>();
        (sub.as_ptr() as usize - self.activities.as_ptr() as usize) / size
    }
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

/// Per lane id, the range of its launch calls (sorted by lane).
fn lane_ranges(launches: &[Launch], lanes: usize) -> Vec<Range<usize>> {
    let mut out = vec![0..0; lanes];
    let mut i = 0;
    while i < launches.len() {
        let lane = launches[i].lane;
        let j = i + launches[i..].partition_point(|l| l.lane == lane);
        out[lane as usize] = i..j;
        i = j;
    }
    out
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
