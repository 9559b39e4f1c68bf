//! The correlation ledger: which GPU activities each CPU range launched.
//!
//! Kineto tags every runtime/driver call and every GPU activity it caused
//! with the same `args.correlation`; a CUDA-graph replay is one
//! `cudaGraphLaunch` whose kernels all carry its correlation. A launch call
//! lies in a range when it starts inside it on the same thread (or, with
//! process launch scope, on any thread of the range's process; see
//! [`attribution`], which also gives each launch call to one range):
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
//! Memory: every launch call and GPU activity is kept until the end of the
//! read (Kineto writes the CPU side first and the GPU activities after it,
//! and nothing is sorted, so no activity can be attributed before the file
//! ends; the timeline needs every activity interval anyway). So they are
//! kept in as few bytes as the data allows, in two stages (sizes: the
//! text_mtp sample, 1604 launch calls and 3512 activities per copy):
//!
//! ```text
//! while reading: two varint streams (pack::Packed, 1 MiB chunks, no Vec doubling)
//!   launch   | Δts | Δindex | dur | Δcorr | lane | name |                  ≈ 10 B (was 40)
//!   activity | Δstart | dur | name·8 + kind·2 + has_corr | Δcorr if any |  ≈ 7 B (was 24)
//!   Δ = zigzag(value − previous record's value, wrapping): every i64 exact, no escape
//!
//! end of read: correlation ids are integers issued in order, so no sort:
//!   CorrIndex  bits over [min id, max id] of the launch calls, ranks per 64-bit word
//!     id:     14214 14215 14216 14217 14218 …
//!     bit:        1     0     0     1     1 …     rank(id) = ranks[w] + popcount(bits[w] below id)
//!     rank:       0                 1     2
//!     (fewer than ≈ 1 id in 6 kept, as vLLM's workers: the low byte of each id in
//!     buckets of 256 ids, 1 B per id + 4 B per bucket; wider still: a sorted id list)
//!   1. count the activities per rank            → prefix sums: rank r's group
//!      and collect their shapes (dur, name, kind, has_corr) while at most
//!      one per 4 activities (vLLM: 13–26 % distinct, the TP=2 run 3 %)
//!   2. activities placed at their rank's cursor (counting sort), each group sorted by
//!      (start, end), the unowned ones after them; 65536 records a chunk, each chunk
//!      allocated at its first write while the stream's chunks are freed
//!      few shapes:  Rec6 (6 B)  | off: 2 × u16 | shape: u16 |  + palette: Shape (16 B) each
//!                                 (shape u16::MAX: wide, off = its position in `wide`)
//!        up to n/4: Rec8 (8 B)  | off: i32 | shape: u32 |   (≥ 65,535 shapes)
//!                                 (shape: wide·2^31 + position in `wide`)
//!      else:        Rec (12 B)  | off: i32 | dur: u32 | name·16 + wide·8 + kind·2 + has_corr: u32 |
//!        start = bases[chunk] (the chunk's first written start) + off
//!      ends[rank] (4 B per id, while the owners are found): where rank's activities end
//!   3. launch calls in file order, twice: the first with an id owns it (a second pid:
//!      "shared"); pass one keeps a bit per call (owns, with activities) and counts per
//!      lane, pass two drains the stream and writes each owner at its lane's cursor in
//!      zeroed memory (pages come as written); each lane checked sorted by (ts, index)
//!        Launch (16 B) | off: i32 | index: u32 | dur·64 + name code: u32 | group: u32 |
//!        ts = bases[pos / 64] + off; ≤ 63 launch names (launches.rs);
//!        group = the position of its first activity
//!   4. ends[] becomes a bit per activity position, set at each group's first
//!      (and at the first unowned): a group runs to the next set bit
//!        positions  0 1 2 3 4 5 6 7 8     (8: unowned)
//!        firsts     1 0 0 1 1 0 0 0 1     a call with group 4 has positions 4..8
//!   (2 before 3: the activity stream is gone before the owners fill, and the
//!   per-id "first pid" table before pass two: −12 MB of kernels' heap peak at
//!   800 sample copies)
//!
//!   what stays: 3512 × 6 B + 954 owners × 16 B + 3512 bits ≈ 37 KB per copy (was 148 KB;
//!   57 KB with 24 B launch records and 4 B ends per id, 44 KB with 8 B activities); a
//!   context's Work keeps 4 B per launch call, not per activity
//!
//! exact escapes (rare: a chunk's activities lie within ±2.1 s of its first one):
//!   Rec { wide } ──► Activities::wide[meta >> 4] = { start: i64, dur: i64, name, flags }
//!     (start beyond ±2^31 ns of its chunk's base, dur ≥ 2^32 ns or < 0, name ≥ 2^28)
//!   Rec8 { wide } ──► Activities::wide[shape − 2^31] (start beyond ±2^31 ns only)
//!   Rec6 { shape: u16::MAX } ──► Activities::wide[off] (the same)
//!   Launch { dur·64 + name code: u32::MAX } ──► launches.wide[group] = the whole call
//!     (ts beyond ±2^31 ns of its block's base, index ≥ 2^32, dur ≥ 2^26 ns (67 ms) or
//!     < 0, a 64th launch name; a 5 s call is one)
//! ```
//!
//! (`tests::the_record_layout_of_the_module_docs` checks the sizes and the
//! escapes; the property tests check that the ledger gives back exactly the
//! launch calls and activities read, dense and sparse ids, in and out of
//! file order; `pack`'s tests the streams' round trip.)
//!
//! The files: `collector.rs` (the streams while reading), `corr.rs` (the
//! correlation index), `groups.rs` (the activities counted and placed by
//! rank), `activities.rs` (their records), `owners.rs` (the owning launch
//! calls, stored by `launches.rs`), `attribution.rs` (CPU ranges to launch
//! calls) and this file (the built [`Ledger`] and its queries); the
//! streams, bit sets and intervals are `crate::store`'s.

mod activities;
pub mod attribution;
mod collector;
pub(crate) mod corr;
mod groups;
mod launches;
mod order;
mod owners;

/// The stores once kept here, at their old paths.
pub use crate::store::pack;
pub(crate) use crate::store::{bits, intervals};

pub use activities::{ActIter, Activities, Activity, Acts};
pub use collector::Collector;

use crate::model::{Interner, Lane, LaneTable, Ns};
use crate::stats::{median_sorted, Exact};
use crate::trace::Prefilter;
use corr::CorrIndex;
use groups::{count_groups, place_activities, Groups};
use intervals::Iv;
use launches::{Call, Launches};
use owners::{owners, LaunchSide};
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

impl Kind {
    fn code(self) -> u64 {
        match self {
            Kind::Kernel => 0,
            Kind::Memcpy => 1,
            Kind::Memset => 2,
        }
    }

    fn of_code(c: u64) -> Kind {
        match c {
            1 => Kind::Memcpy,
            2 => Kind::Memset,
            _ => Kind::Kernel,
        }
    }
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
    /// Sorted by (start, end).
    pub activities: Acts<'a>,
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
    /// Its launch calls that have activities (positions in the ledger's
    /// owning launch calls: 4 B each, not 4 B per activity); their
    /// activities are [`Work::activity_positions`].
    calls: Vec<u32>,
}

impl Work {
    pub fn has_gpu_work(&self) -> bool {
        self.extent.is_some()
    }

    /// Last end − first start, exact.
    pub fn span(&self) -> Option<i128> {
        self.extent.map(|(s, e)| i128::from(e.0) - i128::from(s.0))
    }

    /// Positions in [`Ledger::activities`] of its activities, launch call
    /// by launch call (`ledger`: the one that attributed it).
    pub fn activity_positions<'l>(
        &'l self,
        ledger: &'l Ledger,
    ) -> impl Iterator<Item = usize> + 'l {
        self.calls
            .iter()
            .filter_map(|&i| ledger.launches.group(i as usize))
            .flat_map(|r| ledger.acts(r).positions())
    }

    /// Its activities, in [`Work::activity_positions`] order.
    pub fn activities<'l>(&'l self, ledger: &'l Ledger) -> impl Iterator<Item = Activity> + 'l {
        self.activity_positions(ledger)
            .map(|i| ledger.activities.get(i))
    }
}

/// Launch calls and activities, indexed for range queries.
#[derive(Debug, Default)]
pub struct Ledger {
    pub names: Interner,
    /// The launch calls that own ≥ 1 activity (each the first in file order
    /// with its correlation), sorted by (lane, ts, index), 16 B each
    /// ([`launches`]).
    launches: Launches,
    /// Per lane id, where its launch calls start in `launches` (one more
    /// entry at the end: their count).
    lane_starts: Vec<u32>,
    /// Per correlation rank, the end of its activities' group.
    groups: Groups,
    /// Launch calls kept (with a correlation id), owners or not.
    launch_calls: usize,
    /// Grouped by correlation in id order, each group sorted by (start,
    /// end); then the activities no launch call owns.
    pub activities: Activities,
    lane_ids: HashMap<(String, String), u32>,
    /// Per lane id, the id of its pid (for process-wide launch scope).
    lane_pid: Vec<u32>,
    pid_ids: HashMap<String, u32>,
    /// Correlation ids used by launch calls of more than one process.
    shared_correlations: u64,
}

/// Per lane: its pid id; and the lane and pid id maps.
type LaneMaps = (
    HashMap<(String, String), u32>,
    Vec<u32>,
    HashMap<String, u32>,
);

fn lane_maps(lanes: &LaneTable) -> LaneMaps {
    let mut pid_ids: HashMap<String, u32> = HashMap::new();
    let mut lane_ids = HashMap::new();
    let mut lane_pid = Vec::with_capacity(lanes.len());
    for id in 0..lanes.len() as u32 {
        let l = lanes.resolve(id);
        let next = pid_ids.len() as u32;
        lane_pid.push(*pid_ids.entry(l.pid.to_string()).or_insert(next));
        lane_ids.insert((l.pid.to_string(), l.tid.to_string()), id);
    }
    (lane_ids, lane_pid, pid_ids)
}

impl Ledger {
    fn build(c: Collector) -> Ledger {
        let (lane_ids, lane_pid, pid_ids) = lane_maps(&c.lanes);
        let index = CorrIndex::of(&c);
        let Collector {
            names,
            launches,
            unordered,
            n_launches,
            activities,
            n_activities,
            ..
        } = c;
        let (starts, unowned, palette) = count_groups(&activities, &index, n_activities);
        // The activities are placed (their stream freed) before the owners
        // are found (the launch stream freed while they fill): the two
        // streams and the owners are never alive at once (heaptrack's peak
        // at 800 sample copies was all three, plus the group counts).
        let (activities, by_rank) = place_activities(activities, &index, starts, unowned, palette);
        let side = LaunchSide {
            stream: launches,
            unordered,
            lanes: lane_pid.len(),
            n: n_launches,
        };
        let o = owners(side, &index, &by_rank, &lane_pid);
        let groups = Groups::of(&by_rank, activities.len());
        drop(by_rank);
        debug_assert_eq!(activities.len(), n_activities);
        Ledger {
            names,
            launches: o.launches,
            lane_starts: o.lane_starts,
            groups,
            shared_correlations: o.shared,
            launch_calls: n_launches,
            activities,
            lane_ids,
            lane_pid,
            pid_ids,
        }
    }

    /// Bytes held by the launch and activity records (for the memory
    /// tests and benchmarks).
    pub fn record_bytes(&self) -> usize {
        self.launches.bytes() + self.groups.bytes() + self.activities.bytes()
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
        let at = |k: usize| self.lane_starts.get(k).map_or(0, |&s| s as usize);
        let (lo, hi) = (at(lane as usize), at(lane as usize + 1));
        (lo..hi.max(lo)).map(move |i| {
            let c = self.launches.get(i);
            LaunchCall {
                ts: Ns(c.ts),
                end: end_of(&c),
                index: c.index,
                name: self.names.resolve(c.name),
                activities: self.acts(c.group),
            }
        })
    }

    /// Launch calls kept (with a correlation id).
    pub fn launch_calls(&self) -> usize {
        self.launch_calls
    }

    /// The activities of the launch call whose group starts at `group`.
    fn acts(&self, group: u32) -> Acts<'_> {
        let r = self.groups.range(group);
        Acts {
            store: &self.activities,
            first: r.start,
            end: r.end,
        }
    }

    /// The lane of the launch call at position `i`.
    fn lane_at(&self, i: u32) -> u32 {
        let k = self.lane_starts.partition_point(|&s| s <= i);
        k.saturating_sub(1) as u32
    }

    /// Every graph replay of the trace (a `cudaGraphLaunch`-like launch call
    /// owning ≥ 1 activity): its activities' positions in
    /// [`Ledger::activities`] (sorted by start, then end).
    pub fn graph_replays(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        (0..self.launches.len())
            .map(|i| self.launches.get(i))
            .filter(|c| is_graph_launch(self.names.resolve(c.name)))
            .map(|c| self.acts(c.group).positions())
    }

    /// Every graph launch call owning ≥ 1 activity, in (lane, ts, index)
    /// order, with its lane (issue 57: its replay matched to a capture).
    pub fn graph_launch_calls(&self) -> impl Iterator<Item = (u32, LaunchCall<'_>)> + '_ {
        (0..self.launches.len()).filter_map(move |i| {
            let c = self.launches.get(i);
            let name = self.names.resolve(c.name);
            is_graph_launch(name).then(|| {
                let call = LaunchCall {
                    ts: Ns(c.ts),
                    end: end_of(&c),
                    index: c.index,
                    name,
                    activities: self.acts(c.group),
                };
                (self.lane_at(i as u32), call)
            })
        })
    }

    /// How many launch calls own ≥ 1 activity: their positions `0..n` are
    /// in (lane, ts, index) order.
    pub(super) fn working_launches(&self) -> usize {
        self.launches.len()
    }

    /// (lane, pid, ts, file index) of the launch call at position `i`.
    pub(super) fn launch_at(&self, i: u32) -> (u32, u32, Ns, u64) {
        let c = self.launches.get(i as usize);
        let lane = self.lane_at(i);
        let pid = self.lane_pid.get(lane as usize).copied().unwrap_or(0);
        (lane, pid, Ns(c.ts), c.index)
    }

    /// The GPU work of the launch calls at positions `calls` (each owning
    /// ≥ 1 activity; positions below [`Ledger::working_launches`]).
    pub(super) fn work_of(&self, calls: &[u32]) -> Work {
        let mut w = Work::default();
        let n: usize = calls
            .iter()
            .filter_map(|&i| self.launches.group(i as usize))
            .map(|r| self.acts(r).len())
            .sum();
        let mut ivs: Vec<Iv> = Vec::with_capacity(n);
        let mut starts: Vec<i64> = Vec::with_capacity(n);
        let mut queue: Vec<i64> = Vec::new();
        for &i in calls {
            let l = self.launches.get(i as usize);
            let acts = self.acts(l.group);
            let Some(first) = acts.iter().map(|a| a.start).min() else {
                continue;
            };
            w.launches += 1;
            w.calls.push(i);
            w.graph_launches += u64::from(is_graph_launch(self.names.resolve(l.name)));
            // Queue delay: how long the work waited after the call returned.
            queue.push(first.0.saturating_sub(end_of(&l).0).max(0));
            for a in acts.iter() {
                w.add(&a);
                ivs.push((a.start, a.end));
                starts.push(a.start.0.saturating_sub(l.ts));
            }
        }
        w.busy = intervals::length(&intervals::union(ivs));
        w.latency_median = median_of(queue);
        w.start_latency_median = median_of(starts);
        w
    }
}

/// When a launch call returned: ts + dur.
fn end_of(c: &Call) -> Ns {
    Ns(c.ts).saturating_add(Ns(c.dur))
}

/// The median of `v`, exact; `None` when empty.
fn median_of(mut v: Vec<i64>) -> Option<Exact> {
    v.sort_unstable();
    (!v.is_empty()).then(|| median_sorted(&v))
}

impl Work {
    fn add(&mut self, a: &Activity) {
        match a.kind {
            Kind::Kernel => self.kernels += 1,
            Kind::Memcpy => self.memcpys += 1,
            Kind::Memset => self.memsets += 1,
        }
        self.extent = Some(match self.extent {
            Some((s, e)) => (s.min(a.start), e.max(a.end)),
            None => (a.start, a.end),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::activities::*;
    use super::collector::*;
    use super::corr::*;
    use super::groups::*;
    use super::*;
    use crate::model::ThreadPart;
    use crate::trace::Args;
    use crate::trace::{Event, EventPos};
    use proptest::prelude::*;
    use std::borrow::Cow;
    use std::mem::size_of;

    fn event(
        cat: &'static str,
        name: &'static str,
        ts: i64,
        dur: i64,
        corr: i64,
    ) -> Event<'static> {
        on(2, cat, name, ts, dur, Some(corr))
    }

    /// An event of process 1, thread `tid`.
    fn on(
        tid: i64,
        cat: &'static str,
        name: &'static str,
        ts: i64,
        dur: i64,
        corr: Option<i64>,
    ) -> Event<'static> {
        Event {
            ph: Cow::Borrowed("X"),
            cat: Cow::Borrowed(cat),
            name: Cow::Borrowed(name),
            pid: ThreadPart::Num(1),
            tid: ThreadPart::Num(tid),
            ts: Some(Ns(ts)),
            dur: Some(Ns(dur)),
            args: Args {
                correlation: corr.map(i128::from),
                ..Args::default()
            },
        }
    }

    #[test]
    fn the_record_layout_of_the_module_docs() {
        assert_eq!(size_of::<[u32; 4]>(), 16, "a launch record (launches.rs)");
        assert_eq!(size_of::<Rec>(), 12);
        assert_eq!(size_of::<Rec8>(), 8);
        assert_eq!(size_of::<Rec6>(), 6);
        assert_eq!(size_of::<Shape>(), 16);
        assert_eq!(size_of::<WideAct>(), 24);
        assert_eq!(size_of::<Activity>(), 24, "the decoded value, never stored");
        // The drawing's escape: a 5 s launch call with correlation -7, and
        // what it launched; beside them compact ones, and a launch whose
        // duration is exactly u32::MAX (the escape value itself).
        let mut c = Collector::default();
        let at = |index| EventPos { index, offset: 0 };
        c.push(
            &event("cuda_runtime", "cudaLaunchKernel", 100, 5_000_000_000, -7),
            at(0),
        );
        c.push(
            &event("cuda_runtime", "cudaLaunchKernel", 200, 10, 3),
            at(1),
        );
        c.push(
            &event(
                "cuda_runtime",
                "cudaGraphLaunch",
                300,
                i64::from(u32::MAX),
                1 << 40,
            ),
            at(2),
        );
        c.push(
            &event("kernel", "k_wide", 6_000_000_000, 5_000_000_000, -7),
            at(3),
        );
        c.push(&event("kernel", "k", 250, 20, 3), at(4));
        c.push(&event("gpu_memset", "m", 400, 1, 1 << 40), at(5));
        // The streams' bytes: launch 1 is Δts 100 (2 B), Δindex 1, dur 10,
        // Δcorr 10, lane 0, name 0: 7 bytes.
        let mut l = c.launches.reader();
        let mut prev = LaunchPrev::default();
        let _ = prev.read(&mut l);
        assert_eq!(
            prev.read(&mut l),
            Some(RawLaunch {
                ts: 200,
                index: 1,
                dur: 10,
                corr: 3,
                lane: 0,
                name: 0
            })
        );
        let l = c.finish();
        assert_eq!(
            l.launches.escaped(),
            2,
            "launches 0 (5 s) and 2 (2^32 − 1 ns)"
        );
        // k_wide (dur ≥ 2^32) is wide, and it is its chunk's base: k and m
        // start 6 s before it, beyond an i32 offset.
        assert_eq!(l.activities.wide.len(), 3);
        type Call = (Ns, Ns, u64, Vec<(Ns, Ns)>);
        let calls: Vec<Call> = l
            .lane_launches(0)
            .map(|c| {
                (
                    c.ts,
                    c.end,
                    c.index,
                    c.activities.iter().map(|a| (a.start, a.end)).collect(),
                )
            })
            .collect();
        assert_eq!(
            calls,
            vec![
                (
                    Ns(100),
                    Ns(5_000_000_100),
                    0,
                    vec![(Ns(6_000_000_000), Ns(11_000_000_000))]
                ),
                (Ns(200), Ns(210), 1, vec![(Ns(250), Ns(270))]),
                (
                    Ns(300),
                    Ns(300 + i64::from(u32::MAX)),
                    2,
                    vec![(Ns(400), Ns(401))]
                ),
            ]
        );
        // Grouped by correlation: -7, 3, 2^40.
        let names: Vec<&str> = l
            .activities
            .iter()
            .map(|a| l.names.resolve(a.name))
            .collect();
        assert_eq!(names, ["k_wide", "k", "m"]);
        assert_eq!(l.graph_replays().collect::<Vec<_>>(), vec![2..3]);
    }

    /// A correlation id carried by launch calls of two processes (two
    /// traces merged into one file): the first in file order owns its
    /// activities, the id is counted as shared once; a repeat within one
    /// process (one-process bit table) is not shared.
    #[test]
    fn the_first_launch_call_of_an_id_owns_it_and_other_processes_share_it() {
        let in_pid = |pid: i64, tid: i64, ts: i64, corr: i64| {
            let mut e = on(tid, "cuda_runtime", "cudaLaunchKernel", ts, 5, Some(corr));
            e.pid = ThreadPart::Num(pid);
            e
        };
        let k = |ts: i64, corr: i64| on(0, "kernel", "k", ts, 3, Some(corr));
        let at = |index| EventPos { index, offset: 0 };
        for (second_pid, shared) in [(2, 1), (1, 0)] {
            let mut c = Collector::default();
            c.push(&in_pid(1, 7, 100, 10), at(0));
            c.push(&in_pid(second_pid, 8, 50, 10), at(1));
            c.push(&in_pid(second_pid, 8, 60, 10), at(2));
            c.push(&in_pid(1, 7, 200, 11), at(3));
            c.push(&k(300, 10), at(4));
            c.push(&k(310, 11), at(5));
            let l = c.finish();
            assert_eq!(l.shared_correlations(), shared, "second pid {second_pid}");
            assert_eq!(l.launch_calls(), 4);
            let lane = l.lane_of("1", "7").expect("lane of the owners");
            let owners: Vec<(Ns, usize)> = l
                .lane_launches(lane)
                .map(|c| (c.ts, c.activities.len()))
                .collect();
            assert_eq!(owners, [(Ns(100), 1), (Ns(200), 1)]);
            let other = l.lane_of(&second_pid.to_string(), "8");
            assert!(other.is_none_or(|o| l.lane_launches(o).next().is_none()));
        }
    }

    /// The drawing's groups: ranks 0 (positions 0..3), 1 (none), 2 (3..4),
    /// 3 (4..8), then one unowned activity at 8.
    #[test]
    fn groups_run_to_the_next_first() {
        let by_rank = RankEnds {
            ends: vec![3, 3, 4, 8],
        };
        let g = Groups::of(&by_rank, 9);
        let firsts: Vec<bool> = (0..9).map(|i| g.firsts.get(i)).collect();
        assert_eq!(
            firsts,
            [true, false, false, true, true, false, false, false, true]
        );
        for r in [0, 2, 3] {
            let want = by_rank.range(r);
            assert_eq!(g.range(want.start as u32), want, "rank {r}");
        }
        assert_eq!(g.range(8), 8..9, "the unowned run to the end");
        assert_eq!(g.range(50), 9..9, "past the end");
        // No unowned activity: the last group runs to the end.
        let g = Groups::of(&RankEnds { ends: vec![2, 5] }, 5);
        assert_eq!((g.range(0), g.range(2)), (0..2, 2..5));
    }

    /// A launch call or activity of the property test: (is_launch, tid,
    /// ts, dur, corr, name).
    type Ev = (bool, i64, i64, i64, Option<i64>, u8);

    /// What the ledger must give back, computed the plain way: owners =
    /// first in file order per correlation, their activities = those with
    /// that correlation, sorted.
    #[allow(clippy::type_complexity)]
    fn reference(
        evs: &[(u64, Ev)],
    ) -> (Vec<(i64, i64, i64, u64, Vec<(i64, i64, u8)>)>, usize, usize) {
        let mut by_index: Vec<&(u64, Ev)> = evs.iter().collect();
        by_index.sort_by_key(|e| e.0);
        let mut owner: HashMap<i64, (u64, Ev)> = HashMap::new();
        for &&(i, e) in &by_index {
            if let (true, Some(corr)) = (e.0, e.4) {
                owner.entry(corr).or_insert((i, e));
            }
        }
        let mut out = Vec::new();
        for (corr, (index, e)) in &owner {
            let mut acts: Vec<(i64, i64, u8)> = evs
                .iter()
                .filter(|(_, a)| !a.0 && a.4 == Some(*corr))
                .map(|(_, a)| (a.2, a.2.saturating_add(a.3.max(0)), a.5))
                .collect();
            if acts.is_empty() {
                continue;
            }
            acts.sort_unstable();
            out.push((e.1, e.2, e.2.saturating_add(e.3.max(0)), *index, acts));
        }
        out.sort_by_key(|x| (x.0, x.1, x.3));
        let launches = evs.iter().filter(|e| e.1 .0 && e.1 .4.is_some()).count();
        let acts = evs.iter().filter(|e| !e.1 .0).count();
        (out, launches, acts)
    }

    fn ev_strategy(corrs: impl Strategy<Value = i64> + Clone) -> impl Strategy<Value = Ev> {
        let dur = prop_oneof![
            0i64..5_000,
            Just(i64::from(u32::MAX)),
            Just(5_000_000_000i64),
            0i64..i64::MAX
        ];
        let ts = prop_oneof![
            0i64..100_000,
            -4_000_000_000i64..4_000_000_000,
            any::<i64>()
        ];
        (
            any::<bool>(),
            0i64..3,
            ts,
            dur,
            prop::option::weighted(0.9, corrs),
            0u8..4,
        )
    }

    const NAMES: [&str; 4] = ["a", "nccl_b", "c", "cudaGraphLaunch"];

    fn ledger_of(evs: &[(u64, Ev)]) -> Ledger {
        let mut c = Collector::default();
        for &(index, (launch, tid, ts, dur, corr, name)) in evs {
            let name = NAMES[name as usize];
            let cat = match (launch, name) {
                (true, _) => "cuda_runtime",
                (false, "c") => "gpu_memcpy",
                _ => "kernel",
            };
            c.push(
                &on(tid, cat, name, ts, dur, corr),
                EventPos { index, offset: 0 },
            );
        }
        c.finish()
    }

    fn check(evs: &[(u64, Ev)]) -> Result<(), TestCaseError> {
        let l = ledger_of(evs);
        let (want, launches, acts) = reference(evs);
        prop_assert_eq!(l.launch_calls(), launches);
        prop_assert_eq!(l.activities.len(), acts);
        let mut got = Vec::new();
        for lane in 0..3u32 {
            for c in l.lane_launches(lane) {
                let mut a: Vec<(i64, i64, u8)> = c
                    .activities
                    .iter()
                    .map(|a| {
                        (
                            a.start.0,
                            a.end.0,
                            NAMES
                                .iter()
                                .position(|n| *n == l.names.resolve(a.name))
                                .unwrap_or(9) as u8,
                        )
                    })
                    .collect();
                // Ties in (start, end) may come in any order.
                a.sort_unstable();
                got.push((c.ts.0, c.end.0, c.index, a));
            }
        }
        // Lane ids are interned in order of first launch: compare by tid.
        let mut want: Vec<_> = want.into_iter().map(|w| (w.1, w.2, w.3, w.4)).collect();
        want.sort_by_key(|w| w.2);
        got.sort_by_key(|w| w.2);
        prop_assert_eq!(got, want);
        Ok(())
    }

    /// A raw activity for the store tests.
    fn raw_act(start: i64, dur: i64, name: u32, kind: u8, corr: bool) -> RawAct {
        RawAct {
            start,
            dur,
            corr: corr.then_some(0),
            name,
            kind: Kind::of_code(u64::from(kind)),
        }
    }

    #[test]
    fn repeated_shapes_are_kept_in_6_or_8_byte_records() {
        // n activities, each launched by its own call; `start` and `dur`
        // by k.
        let ledger_of = |n: i64, start: &dyn Fn(i64) -> i64, dur: &dyn Fn(i64) -> i64| {
            let mut c = Collector::default();
            for k in 0..n {
                let at = |index| EventPos { index, offset: 0 };
                c.push(
                    &event("cuda_runtime", "cudaLaunchKernel", 10 * k, 2, k),
                    at(2 * k as u64),
                );
                c.push(
                    &event("kernel", "k", start(k), dur(k), k),
                    at(2 * k as u64 + 1),
                );
            }
            c.finish()
        };
        let near = |k: i64| 10 * k + 3;
        // Every 50,000th activity 4 s late: past ±2^31 ns of its chunk's
        // base, so kept in the wide list.
        let far = |k: i64| 10 * k + 3 + if k % 50_000 == 7 { 4_000_000_000 } else { 0 };
        let three = |k: i64| 1 + k % 3;
        let distinct = |k: i64| 1 + k;
        let many_shapes = |k: i64| 1 + k % 70_000;
        // 4,000 activities of 3 shapes, a graph-replay-like trace: 6 B
        // records; 280,000 of 70,000 shapes (more than 16 bits code): 8 B;
        // 4,000 of 4,000 shapes: 12 B records.
        let few = ledger_of(4_000, &near, &three);
        assert!(
            matches!(&few.activities.recs, Recs::Shaped6(_, p) if p.shapes.len() == 3 && p.lookup.is_empty())
        );
        let wide_palette = ledger_of(280_000, &far, &many_shapes);
        assert!(
            matches!(&wide_palette.activities.recs, Recs::Shaped(_, p) if p.shapes.len() == 70_000)
        );
        assert_eq!(wide_palette.activities.wide.len(), 6);
        let many = ledger_of(4_000, &near, &distinct);
        assert!(matches!(&many.activities.recs, Recs::Full(_)));
        // One chunk of 65,536 records each, allocated whole.
        assert!(
            few.activities.bytes() <= 6 * 65_536 + 1024,
            "{}",
            few.activities.bytes()
        );
        assert!(
            many.activities.bytes() >= 12 * 65_536,
            "{}",
            many.activities.bytes()
        );
        type ByK<'a> = &'a dyn Fn(i64) -> i64;
        let cases: [(&Ledger, i64, ByK, ByK); 3] = [
            (&few, 4_000, &near, &three),
            (&wide_palette, 280_000, &far, &many_shapes),
            (&many, 4_000, &near, &distinct),
        ];
        for (l, n, start, dur) in cases {
            let got: Vec<(i64, i64)> = l.activities.iter().map(|a| (a.start.0, a.end.0)).collect();
            let want: Vec<(i64, i64)> = (0..n).map(|k| (start(k), start(k) + dur(k))).collect();
            assert_eq!(got, want);
        }
    }

    /// The drawing of [`CorrIndex`]'s docs.
    #[test]
    fn the_bucketed_index_of_the_docs() {
        let ids = [3i128, 7, 260, 300, 301, 700, 301, 3];
        let index = CorrIndex::bucketed(|| ids.iter().copied(), 0, 701, ids.len());
        let CorrIndex::Bucketed { starts, lows, .. } = &index else {
            panic!("not bucketed");
        };
        assert_eq!(starts, &[0, 2, 5, 6]);
        assert_eq!(lows, &[3, 7, 4, 44, 45, 188]);
        assert_eq!(index.rank(301), Some(4));
        assert_eq!(index.rank(302), None);
        assert_eq!(index.len(), 6);
        // 1.28 M ids over a span 18 times as wide (the benchmark trace at
        // 800 copies) are bucketed; one in three, a bitmap.
        let spread = |every: i128| {
            let n = 1_280_000usize;
            CorrIndex::of_ids(
                || (0..n as i128).map(|i| i * every),
                Some((0, (n as i128 - 1) * every)),
                n,
            )
        };
        assert!(matches!(spread(18), CorrIndex::Bucketed { .. }));
        assert!(matches!(spread(3), CorrIndex::Dense { .. }));
    }

    proptest! {
        /// The three forms of the correlation index give every id the
        /// same rank (its position among the distinct ids), and none to
        /// the ids between.
        #[test]
        fn the_correlation_index_forms_agree(ids in prop::collection::vec(0i64..3_000, 1..300), lo in -3i64..3) {
            // Issue 59: ids are i128; `lo` 2 puts them past u64.
            let base = if lo == 2 { 1i128 << 64 } else { i128::from(lo) * 1_000 };
            let ids: Vec<i128> = ids.into_iter().map(|i| i128::from(i) + base).collect();
            let (min, max) = (*ids.iter().min().unwrap(), *ids.iter().max().unwrap());
            let span = (max - min + 1) as usize;
            let mut distinct = ids.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let each = || ids.iter().copied();
            let forms = [
                CorrIndex::dense(each, min, span),
                CorrIndex::bucketed(each, min, span, ids.len()),
                CorrIndex::Sorted(distinct.clone()),
            ];
            for f in &forms {
                prop_assert_eq!(f.len(), distinct.len());
                for probe in min - 300..=max + 300 {
                    let want = distinct.binary_search(&probe).ok().map(|r| r as u32);
                    prop_assert_eq!(f.rank(probe), want, "{:?} at {}", f, probe);
                }
            }
        }

        /// Dense correlation ids (the bitmap index), file order.
        #[test]
        fn the_ledger_gives_back_what_was_read_dense(evs in prop::collection::vec(ev_strategy(0i64..40), 0..120)) {
            let evs: Vec<(u64, Ev)> = evs.into_iter().enumerate().map(|(i, e)| (i as u64, e)).collect();
            check(&evs)?;
        }

        /// Negative and huge ids (the sorted index), and a reader out of
        /// file order.
        #[test]
        fn the_ledger_gives_back_what_was_read_sparse(evs in prop::collection::vec(ev_strategy(prop_oneof![Just(-7i64), Just(1i64 << 40), Just(i64::MIN), Just(i64::MAX), 0i64..5]), 0..120), shuffle in any::<u64>()) {
            let n = evs.len() as u64;
            let evs: Vec<(u64, Ev)> = evs
                .into_iter()
                .enumerate()
                .map(|(i, e)| ((i as u64).wrapping_mul(shuffle | 1) % n.max(1) + (i as u64) * n, e))
                .collect();
            check(&evs)?;
            let mut rev = evs.clone();
            rev.reverse();
            check(&rev)?;
        }

        /// Few durations and names (the palette), starts near and far
        /// (the wide list of either layout).
        #[test]
        fn the_ledger_gives_back_what_was_read_with_a_palette(evs in prop::collection::vec(
            (any::<bool>(), 0i64..3, prop_oneof![0i64..100_000, -4_000_000_000i64..4_000_000_000], prop_oneof![0i64..3, Just(5_000_000_000i64)], prop::option::weighted(0.9, 0i64..40), 0u8..4),
            0..200,
        )) {
            let evs: Vec<(u64, Ev)> = evs.into_iter().enumerate().map(|(i, e)| (i as u64, e)).collect();
            check(&evs)?;
        }

        /// Both layouts store and give back the same activities.
        #[test]
        fn both_layouts_agree(acts in prop::collection::vec(
            (prop_oneof![0i64..5_000, -4_000_000_000i64..4_000_000_000, any::<i64>()], prop_oneof![0i64..3, any::<i64>()], prop_oneof![0u32..3, any::<u32>()], 0u8..3, any::<bool>()),
            0..300,
        )) {
            let mut full = Activities::of(acts.len(), None);
            let mut shaped = Activities::of(acts.len(), Some(Palette::default()));
            for (i, &(start, dur, name, kind, corr)) in acts.iter().enumerate() {
                let a = raw_act(start, dur, name, kind, corr);
                full.set(i, &a);
                shaped.set(i, &a);
            }
            shaped.seal();
            for (i, &(start, dur, name, kind, corr)) in acts.iter().enumerate() {
                let a = shaped.raw(i);
                prop_assert_eq!((a.start, a.dur, a.name, a.kind, a.corr.is_some()), (start, dur, name, Kind::of_code(u64::from(kind)), corr));
                let f = full.raw(i);
                // 12 B records keep names below 2^28 in place, the rest wide.
                prop_assert_eq!((f.start, f.dur, f.name, f.kind, f.corr.is_some()), (start, dur, name, Kind::of_code(u64::from(kind)), corr));
            }
        }
    }
}
