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
//! ends; the timeline needs every activity interval anyway). So the records
//! are small: 40 bytes per launch call (56 before) and 24 per activity (32
//! before), durations and correlation ids held as `u32` — what they are in
//! every real trace: durations under 4.29 s, ids small non-negative
//! integers issued in order — with an exact escape for anything else:
//!
//! ```text
//! Launch (32 B)  | ts: i64 | index: u64 | dur: u32 | corr: u32 | lane: u32 | name: u32 |
//!   + its activities in the ledger (8 B): | first: u32 | count: u32 |
//! Act (24 B)     | start: i64 | dur: u32 | corr: u32 | name: u32 | kind: u8 | flags: u8 | pad |
//!   (collected; once sorted by (has_corr, corr, start, end), each becomes an
//!    Activity (24 B) | start: i64 | end: i64 | name: u32 | kind | has_corr | in place)
//!
//! dur == u32::MAX (launch) or the WIDE flag (activity): the real (dur, corr)
//! are `wide[corr]`, exact i64s — a dur ≥ u32::MAX ns, or a correlation id
//! outside 0..=u32::MAX (negative, huge):
//!   Launch { dur: u32::MAX, corr: 0 } ──► wide[0] = Wide { dur: 5_000_000_000, corr: -7 }
//! ```
//!
//! (`tests::the_record_layout_of_the_module_docs` checks the sizes and the
//! escape.)

pub mod attribution;
pub(crate) mod intervals;

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

/// A runtime/driver call with a correlation id (see the module docs).
#[derive(Debug, Clone, Copy)]
struct Launch {
    ts: Ns,
    index: u64,
    /// Its duration, or [`ESCAPE`]: then `wide[corr]` holds both.
    dur: u32,
    corr: u32,
    lane: u32,
    name: Sym,
}

/// Marks a launch whose duration and correlation are in `wide`.
const ESCAPE: u32 = u32::MAX;

/// A duration and correlation id that do not fit the compact records.
#[derive(Debug, Clone, Copy)]
struct Wide {
    dur: i64,
    corr: i64,
}

/// A kernel, memcpy or memset as collected (see the module docs).
#[derive(Debug, Clone, Copy)]
struct Act {
    start: Ns,
    dur: u32,
    corr: u32,
    name: Sym,
    kind: Kind,
    /// [`HAS_CORR`], [`WIDE`].
    flags: u8,
}

/// The activity carried an integer `args.correlation`.
const HAS_CORR: u8 = 1;
/// Its duration and correlation are `wide[corr]`.
const WIDE: u8 = 2;

/// A kernel, memcpy or memset.
#[derive(Debug, Clone, Copy)]
pub struct Activity {
    pub start: Ns,
    pub end: Ns,
    pub name: Sym,
    pub kind: Kind,
    has_corr: bool,
}

/// The `wide` entries and the compact fields' readers.
#[derive(Debug, Default)]
struct Wides(Vec<Wide>);

impl Wides {
    /// (dur, corr) as stored: compact when both fit, else an escape to a
    /// new entry. `flag` is set in `flags` on escape.
    fn store(&mut self, dur: i64, corr: i64) -> (u32, u32, bool) {
        match (u32::try_from(dur), u32::try_from(corr)) {
            (Ok(d), Ok(c)) if d != ESCAPE => (d, c, false),
            _ => {
                let at = u32::try_from(self.0.len()).unwrap_or(u32::MAX);
                self.0.push(Wide { dur, corr });
                (ESCAPE, at, true)
            }
        }
    }

    fn get(&self, at: u32) -> Wide {
        self.0
            .get(at as usize)
            .copied()
            .unwrap_or(Wide { dur: 0, corr: 0 })
    }

    fn launch_dur(&self, l: &Launch) -> i64 {
        match l.dur {
            ESCAPE => self.get(l.corr).dur,
            d => i64::from(d),
        }
    }

    fn launch_corr(&self, l: &Launch) -> i64 {
        match l.dur {
            ESCAPE => self.get(l.corr).corr,
            _ => i64::from(l.corr),
        }
    }

    fn act_dur(&self, a: &Act) -> i64 {
        match a.flags & WIDE {
            0 => i64::from(a.dur),
            _ => self.get(a.corr).dur,
        }
    }

    fn act_corr(&self, a: &Act) -> i64 {
        match a.flags & WIDE {
            0 => i64::from(a.corr),
            _ => self.get(a.corr).corr,
        }
    }

    /// The sort key of activities: (has_corr, corr, start, end).
    fn act_key(&self, a: &Act) -> (bool, i64, Ns, Ns) {
        let has = a.flags & HAS_CORR != 0;
        let corr = if has { self.act_corr(a) } else { 0 };
        (has, corr, a.start, self.act_end(a))
    }

    fn act_end(&self, a: &Act) -> Ns {
        a.start.saturating_add(Ns(self.act_dur(a)))
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
    activities: Vec<Act>,
    wide: Wides,
}

impl Collector {
    /// Keeps the event if it is a launch call with a correlation or a GPU
    /// activity.
    pub fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        if !ev.is_complete() {
            return;
        }
        let start = ev.ts.unwrap_or_default();
        let dur = ev.dur_or_zero().0;
        if let Some(kind) = Kind::of_category(&ev.cat) {
            let corr = ev.args.correlation;
            let (dur, corr, wide) = self.wide.store(dur, corr.unwrap_or(0));
            let has_corr = ev.args.correlation.is_some();
            self.activities.push(Act {
                start,
                dur,
                corr,
                name: self.names.intern(&ev.name),
                kind,
                flags: (u8::from(has_corr) * HAS_CORR) | (u8::from(wide) * WIDE),
            });
        } else if LAUNCH_CATEGORIES.contains(&&*ev.cat) {
            let Some(corr) = ev.args.correlation else {
                return;
            };
            let (dur, corr, _) = self.wide.store(dur, corr);
            self.launches.push(Launch {
                ts: start,
                index: at.index,
                dur,
                corr,
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
    /// Per launch call (same order): its activities in `activities` (first,
    /// count), empty unless it is the first in file order with its
    /// correlation (the owner of that correlation's activities).
    acts: Vec<(u32, u32)>,
    /// Activities sorted by (has_corr, corr, start, end).
    pub activities: Vec<Activity>,
    /// Durations and correlation ids of launches that do not fit `u32`.
    wide: Wides,
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
            activities: mut collected,
            wide,
        } = c;
        launches.sort_unstable_by_key(|l| (l.lane, l.ts, l.index));
        let owner = owners(&launches, &wide);
        let shared_correlations = shared_across_processes(&launches, &lanes, &wide);
        collected.sort_unstable_by_key(|a| wide.act_key(a));
        let acts = launches
            .iter()
            .zip(&owner)
            .map(|(l, &own)| match own {
                true => activity_range(&collected, &wide, wide.launch_corr(l)),
                false => (0, 0),
            })
            .collect();
        // In place: an Act and an Activity have the same size and alignment.
        let activities: Vec<Activity> = collected
            .into_iter()
            .map(|a| Activity {
                start: a.start,
                end: wide.act_end(&a),
                name: a.name,
                kind: a.kind,
                has_corr: a.flags & HAS_CORR != 0,
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
            wide,
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
            let range = self.range(i);
            if range.is_empty() {
                return None;
            }
            let l = &self.launches[i];
            Some(LaunchCall {
                ts: l.ts,
                end: self.end_of(l),
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

    /// The activities of the launch call at position `i`.
    fn range(&self, i: usize) -> Range<usize> {
        let (first, count) = self.acts[i];
        first as usize..first as usize + count as usize
    }

    /// When a launch call returned: ts + dur.
    fn end_of(&self, l: &Launch) -> Ns {
        l.ts.saturating_add(Ns(self.wide.launch_dur(l)))
    }

    /// Every graph replay of the trace (a `cudaGraphLaunch`-like launch call
    /// owning ≥ 1 activity): its activities' positions in
    /// [`Ledger::activities`] (sorted by start, then end).
    pub fn graph_replays(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        (0..self.launches.len())
            .filter(|&i| {
                self.acts[i].1 > 0 && is_graph_launch(self.names.resolve(self.launches[i].name))
            })
            .map(|i| self.range(i))
    }

    /// Positions (in `launches`) of the launch calls that own ≥ 1 activity,
    /// in (lane, ts, index) order.
    pub(super) fn working_launches(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.launches.len() as u32).filter(|&i| self.acts[i as usize].1 > 0)
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
            let (l, range) = (&self.launches[i as usize], self.range(i as usize));
            let acts = &self.activities[range.clone()];
            let Some(first) = acts.iter().map(|a| a.start).min() else {
                continue;
            };
            w.launches += 1;
            w.graph_launches += u64::from(is_graph_launch(self.names.resolve(l.name)));
            // Queue delay: how long the work waited after the call returned.
            queue.push(first.0.saturating_sub(self.end_of(l).0).max(0));
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
/// (has_corr, corr, …)), as (first, count).
fn activity_range(activities: &[Act], wide: &Wides, corr: i64) -> (u32, u32) {
    let key = |a: &Act| {
        let has = a.flags & HAS_CORR != 0;
        (has, if has { wide.act_corr(a) } else { 0 })
    };
    let lo = activities.partition_point(|a| key(a) < (true, corr));
    let hi = activities.partition_point(|a| key(a) <= (true, corr));
    // Work::activities holds u32 positions: a ledger holds < 2^32.
    let first = u32::try_from(lo).unwrap_or(u32::MAX);
    (first, u32::try_from(hi.max(lo) - lo).unwrap_or(0))
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
fn shared_across_processes(launches: &[Launch], lanes: &LaneTable, wide: &Wides) -> u64 {
    let mut by_corr: Vec<(i64, u32)> = launches
        .iter()
        .map(|l| (wide.launch_corr(l), l.lane))
        .collect();
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
fn owners(launches: &[Launch], wide: &Wides) -> Vec<bool> {
    let mut order: Vec<u32> = (0..launches.len() as u32).collect();
    order.sort_unstable_by_key(|&k| {
        let l = &launches[k as usize];
        (wide.launch_corr(l), l.index)
    });
    let mut owner = vec![false; launches.len()];
    let mut prev: Option<i64> = None;
    for k in order {
        let corr = wide.launch_corr(&launches[k as usize]);
        owner[k as usize] = prev != Some(corr);
        prev = Some(corr);
    }
    owner
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ThreadPart;
    use crate::trace::Args;
    use std::borrow::Cow;
    use std::mem::size_of;

    fn event(
        cat: &'static str,
        name: &'static str,
        ts: i64,
        dur: i64,
        corr: i64,
    ) -> Event<'static> {
        Event {
            ph: Cow::Borrowed("X"),
            cat: Cow::Borrowed(cat),
            name: Cow::Borrowed(name),
            pid: ThreadPart::Num(1),
            tid: ThreadPart::Num(2),
            ts: Some(Ns(ts)),
            dur: Some(Ns(dur)),
            args: Args {
                correlation: Some(corr),
                ..Args::default()
            },
        }
    }

    #[test]
    fn the_record_layout_of_the_module_docs() {
        assert_eq!(size_of::<Launch>(), 32);
        assert_eq!(size_of::<(u32, u32)>(), 8);
        assert_eq!(size_of::<Act>(), 24);
        assert_eq!(size_of::<Activity>(), 24);
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
        assert_eq!(c.wide.0.len(), 4, "launches 0 and 2, activities 3 and 5");
        assert_eq!((c.launches[0].dur, c.launches[0].corr), (ESCAPE, 0));
        assert_eq!((c.launches[1].dur, c.launches[1].corr), (10, 3));
        let l = c.finish();
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
        // Sorted by correlation: -7, 3, 2^40.
        let names: Vec<&str> = l
            .activities
            .iter()
            .map(|a| l.names.resolve(a.name))
            .collect();
        assert_eq!(names, ["k_wide", "k", "m"]);
        assert_eq!(l.graph_replays().collect::<Vec<_>>(), vec![2..3]);
    }
}
