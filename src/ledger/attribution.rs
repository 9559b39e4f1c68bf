//! Gives every launch call (and so every GPU activity) to at most one CPU
//! range: the innermost of the ranges that hold it.
//!
//! A launch call is held by a range when it starts in the range's window
//! (start ≤ ts < end) on the range's thread (launch scope `thread`) or on
//! any thread of the range's process (scope `process`, for training steps
//! whose GPU work is launched by the autograd thread). When several ranges
//! hold it — a selector matching ranges inside ranges, torch.compile's
//! `## Call CompiledFxGraph ##` inside a step — it goes to the *innermost*:
//! the one that starts last (ties: the one that ends first, then the later
//! in file order). That is the rule CUPTI and Kineto apply to user ranges
//! (a launch carries the External id of the innermost open range, and only
//! that range gets the `gpu_user_annotation`), so `kernels` agrees with the
//! annotations, and per-range rows sum to the totals.
//!
//! ```text
//! thread 7  [=========== step (selected) ===========)
//!               [== forward (selected) ==)
//!             L1      L2        L3             L4
//! L1, L4 → step; L2, L3 → forward (both hold them; forward starts later)
//! ```
//!
//! Cost: one sweep per group (thread or process) over ranges sorted by
//! start and launch calls sorted by ts, with a max-heap of open ranges keyed
//! by start; a range leaves the heap once a launch at or past its end is
//! met, and launch times only grow, so each range is pushed and popped
//! once: O((ranges + launches) log ranges), whatever the ranges' overlap
//! (N identical ranges each holding all N launches were O(N²) when every
//! range listed its own launches).

use super::{Ledger, Work};
use crate::contexts::{Contexts, Steps};
use crate::model::Ns;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

/// Which launch calls a range can hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum LaunchScope {
    /// `process` for `ProfilerStep#N` ranges (training: the autograd thread
    /// launches the backward pass), `thread` for every other range (vLLM
    /// steps launch from the thread that runs them).
    #[default]
    Auto,
    /// Launch calls on the range's own pid and tid.
    Thread,
    /// Launch calls on any thread of the range's pid.
    Process,
}

impl LaunchScope {
    /// The scope a range named `name` gets: `thread` or `process`.
    pub fn resolve(self, name: &str) -> LaunchScope {
        match self {
            LaunchScope::Auto if name.starts_with("ProfilerStep#") => LaunchScope::Process,
            LaunchScope::Auto => LaunchScope::Thread,
            s => s,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LaunchScope::Auto => "auto",
            LaunchScope::Thread => "thread",
            LaunchScope::Process => "process",
        }
    }
}

/// A CPU range asking for its GPU work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Query {
    /// The range's lane id in the ledger (scope `thread`), `None` when no
    /// launch call ran on its thread.
    pub lane: Option<u32>,
    /// The range's pid id in the ledger (scope `process`).
    pub pid: Option<u32>,
    /// `Thread` or `Process` (resolved; `Auto` is taken as `Thread`).
    pub scope: LaunchScope,
    pub start: Ns,
    pub end: Ns,
    /// Index in `traceEvents`: the last tie-break.
    pub index: u64,
}

impl Query {
    /// The group a range sweeps in, under `scope`.
    fn group(&self, scope: LaunchScope) -> Option<u32> {
        match (self.scope, scope) {
            (LaunchScope::Process, LaunchScope::Process) => self.pid,
            (LaunchScope::Process, _) | (_, LaunchScope::Process) => None,
            _ => self.lane,
        }
    }

    /// Larger = more inner: later start, then earlier end, then later in
    /// file order.
    fn depth(&self) -> (Ns, Reverse<Ns>, u64) {
        (self.start, Reverse(self.end), self.index)
    }
}

/// The selected step contexts as queries, each with its launch scope
/// (`Auto` resolved per context by its name).
pub fn context_queries(
    steps: &Steps,
    contexts: &Contexts,
    ledger: &Ledger,
    scope: LaunchScope,
) -> Vec<Query> {
    let names = &steps.names;
    contexts
        .iter(steps)
        .map(|c| {
            let (pid, tid) = (names.resolve(c.lane.0), names.resolve(c.lane.1));
            Query {
                lane: ledger.lane_of(pid, tid),
                pid: ledger.pid_of(pid),
                scope: scope.resolve(names.resolve(c.name)),
                start: c.start,
                end: c.end(),
                index: c.index,
            }
        })
        .collect()
}

/// How the ranges of one attribution overlap (for notes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Overlaps {
    /// Ranges lying inside another range of their group.
    pub nested: u64,
    /// Ranges overlapping another of their group partially (neither holds
    /// the other): vLLM never writes these.
    pub partial: u64,
    /// Launch calls held both by a thread-scope and a process-scope range.
    pub across_scopes: u64,
}

/// Each range's GPU work, each launch call counted in one range at most.
#[derive(Debug, Clone, Default)]
pub struct Attribution {
    /// One per query, same order.
    pub works: Vec<Work>,
    pub overlaps: Overlaps,
}

/// Attributes the ledger's launch calls to `queries` (see the module docs).
/// Memory: the sweeps' answers as runs (about two per query, see
/// `Runs`; a process-scope sweep holds 8 B per launch call while it
/// lasts), the runs' order by query, and the positions of one query at a
/// time.
pub fn attribute(ledger: &Ledger, queries: &[Query]) -> Attribution {
    let mut works = Vec::with_capacity(queries.len());
    let overlaps = attribute_each(ledger, queries, |_, w| works.push(w));
    Attribution { works, overlaps }
}

/// [`attribute`], handing each query's work to `each` (query position,
/// work) in query order instead of keeping them all: for a caller that
/// only folds them (`hierarchy`'s per-function figures), no `Work` per
/// query is held at once.
pub fn attribute_each(
    ledger: &Ledger,
    queries: &[Query],
    each: impl FnMut(usize, Work),
) -> Overlaps {
    let n = ledger.working_launches();
    // An empty answer: no query of that scope, so the other scope's picks
    // stand.
    let by_thread = sweep(ledger, queries, n, LaunchScope::Thread);
    let by_process = sweep(ledger, queries, n, LaunchScope::Process);
    let mut overlaps = overlaps_of(queries, LaunchScope::Thread);
    let p = overlaps_of(queries, LaunchScope::Process);
    overlaps.nested += p.nested;
    overlaps.partial += p.partial;
    let picks = match (by_thread.is_empty(), by_process.is_empty()) {
        (_, true) => by_thread,
        (true, false) => by_process,
        (false, false) => {
            // Each launch call to one query at most: the inner one.
            Runs::merge(&by_thread, &by_process, |t, p, len| match (t, p) {
                (NONE, p) => p,
                (t, NONE) => t,
                (t, p) => {
                    overlaps.across_scopes += len;
                    let inner = queries[t as usize].depth() >= queries[p as usize].depth();
                    if inner {
                        t
                    } else {
                        p
                    }
                }
            })
        }
    };
    works_of(ledger, queries.len(), &picks, each);
    overlaps
}

/// Which query holds each launch position, as runs: `(first position,
/// query)` in position order, each run reaching to the next one's first
/// position (the last to the end), [`NONE`] where no query holds it.
///
/// ```text
/// positions  0 1 2 3 4 5 6 7 8 9        (launch calls with activities, by lane and ts)
/// query      - - 0 0 0 - 1 1 - -
/// runs       (0,-) (2,0) (5,-) (6,1) (8,-)
/// ```
///
/// A context holds consecutive positions of its lane, so the runs are
/// about two per context: at 800 copies of the benchmark trace 48,000 runs
/// (384 KB) where an answer per position took 4 B × 763,000 (3 MB).
#[derive(Debug)]
struct Runs {
    runs: Vec<(u32, u32)>,
    /// The positions covered: `0..calls`.
    calls: u32,
}

impl Runs {
    fn new(calls: usize) -> Runs {
        Runs {
            runs: Vec::new(),
            calls: calls as u32,
        }
    }

    fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Position `k` (the next one) is held by `q`.
    fn push(&mut self, k: u32, q: u32) {
        if self.runs.last().is_none_or(|&(_, last)| last != q) {
            self.runs.push((k, q));
        }
    }

    /// The positions of run `i`.
    fn range(&self, i: usize) -> Range<u32> {
        let end = self.runs.get(i + 1).map_or(self.calls, |r| r.0);
        self.runs[i].0..end
    }

    /// The runs held by a query below `n`: (positions, query).
    fn held(&self, n: usize) -> impl Iterator<Item = (Range<u32>, usize)> + '_ {
        (0..self.runs.len())
            .filter(move |&i| (self.runs[i].1 as usize) < n)
            .map(|i| (self.range(i), self.runs[i].1 as usize))
    }

    /// The runs of `pick(a's query, b's query, positions)` over each
    /// stretch where neither changes (both cover the same positions).
    fn merge(a: &Runs, b: &Runs, mut pick: impl FnMut(u32, u32, u64) -> u32) -> Runs {
        let (mut i, mut j, mut out) = (0, 0, Runs::new(a.calls as usize));
        while i < a.runs.len() && j < b.runs.len() {
            let (ra, rb) = (a.range(i), b.range(j));
            let from = ra.start.max(rb.start);
            let to = ra.end.min(rb.end);
            if to > from {
                out.push(from, pick(a.runs[i].1, b.runs[j].1, u64::from(to - from)));
            }
            i += usize::from(ra.end == to);
            j += usize::from(rb.end == to);
        }
        out
    }
}

/// Per query, the work of the launch calls it owns (`picks`: [`Runs`]):
/// the runs sorted by query (a counting sort, positions ascending within
/// each), then each query's positions handed to [`Ledger::work_of`].
fn works_of(ledger: &Ledger, n: usize, picks: &Runs, mut each: impl FnMut(usize, Work)) {
    let mut starts = vec![0u32; n + 1];
    for (_, q) in picks.held(n) {
        starts[q + 1] += 1;
    }
    for q in 1..starts.len() {
        starts[q] += starts[q - 1];
    }
    let mut next = starts.clone();
    let mut by_query = vec![0u32..0; starts[n] as usize];
    for (r, q) in picks.held(n) {
        by_query[next[q] as usize] = r;
        next[q] += 1;
    }
    drop(next);
    let mut positions = Vec::new();
    for q in 0..n {
        positions.clear();
        for r in &by_query[starts[q] as usize..starts[q + 1] as usize] {
            positions.extend(r.clone());
        }
        each(q, ledger.work_of(&positions));
    }
}

/// A range open in the sweep: max-heap order = innermost first.
type Open = ((Ns, Reverse<Ns>, u64), Ns, u32);

/// No query holds the launch (in [`sweep`]'s answer).
const NONE: u32 = u32::MAX;

/// For each launch position in `0..calls`, the innermost query of `scope`
/// holding it ([`NONE`] if none), as [`Runs`]; empty when no query has
/// that scope. Memory: the runs; with process scope also 4 B per launch
/// for the (pid, ts) order and 4 B for the answer per position, while the
/// sweep lasts (a process's lanes interleave in that order).
fn sweep(ledger: &Ledger, queries: &[Query], calls: usize, scope: LaunchScope) -> Runs {
    let mut qs: Vec<(u32, Ns, u32)> = queries
        .iter()
        .enumerate()
        .filter_map(|(i, q)| Some((q.group(scope)?, q.start, i as u32)))
        .collect();
    if qs.is_empty() {
        return Runs::new(calls);
    }
    qs.sort_unstable();
    // Launches by (group, ts, index); positions are in (lane, ts) order already.
    let key = |k: u32| {
        let (lane, pid, ts, index) = ledger.launch_at(k);
        let g = if scope == LaunchScope::Process {
            pid
        } else {
            lane
        };
        (g, ts, index)
    };
    let mut order: Vec<u32> = Vec::new();
    let mut dense: Vec<u32> = Vec::new();
    if scope == LaunchScope::Process {
        order = (0..calls as u32).collect();
        order.sort_unstable_by_key(|&k| (key(k), k));
        dense = vec![NONE; calls];
    }
    let ks: Box<dyn Iterator<Item = u32>> = match scope {
        LaunchScope::Process => Box::new(order.iter().copied()),
        _ => Box::new(0..calls as u32),
    };
    let mut runs = Runs::new(calls);
    let mut heap: BinaryHeap<Open> = BinaryHeap::new();
    let (mut next, mut group) = (0usize, None);
    for k in ks {
        let (g, ts, _) = key(k);
        if group != Some(g) {
            heap.clear();
            group = Some(g);
            next += qs[next..].partition_point(|q| q.0 < g);
        }
        while let Some(&(qg, start, qi)) = qs.get(next) {
            if qg != g || start > ts {
                break;
            }
            let q = &queries[qi as usize];
            heap.push((q.depth(), q.end, qi));
            next += 1;
        }
        // Launch times only grow within a group: a range ending at or
        // before this one can hold no later launch either.
        while heap.peek().is_some_and(|top| top.1 <= ts) {
            heap.pop();
        }
        let q = heap.peek().map_or(NONE, |top| top.2);
        match scope {
            LaunchScope::Process => dense[k as usize] = q,
            _ => runs.push(k, q),
        }
    }
    drop(order);
    for (k, &q) in dense.iter().enumerate() {
        runs.push(k as u32, q);
    }
    runs
}

/// Counts nested and partially overlapping ranges within each group of
/// `scope`: a sweep by (start, longest first) with a stack of open ranges.
fn overlaps_of(queries: &[Query], scope: LaunchScope) -> Overlaps {
    let mut qs: Vec<(u32, Ns, Reverse<Ns>, u64)> = queries
        .iter()
        .filter_map(|q| Some((q.group(scope)?, q.start, Reverse(q.end), q.index)))
        .collect();
    qs.sort_unstable();
    let mut o = Overlaps::default();
    let mut stack: Vec<(u32, Ns)> = Vec::new();
    for (g, start, Reverse(end), _) in qs {
        while stack
            .last()
            .is_some_and(|&(sg, send)| sg != g || send <= start)
        {
            stack.pop();
        }
        match stack.last() {
            Some(&(_, send)) if end <= send => o.nested += 1,
            Some(_) => o.partial += 1,
            None => {}
        }
        // Zero-length ranges hold nothing and are held by nothing.
        if end > start {
            stack.push((g, end));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(start: i64, end: i64, index: u64) -> Query {
        Query {
            lane: Some(0),
            pid: Some(0),
            scope: LaunchScope::Thread,
            start: Ns(start),
            end: Ns(end),
            index,
        }
    }

    #[test]
    fn auto_scope_is_process_for_profiler_steps_only() {
        assert_eq!(
            LaunchScope::Auto.resolve("ProfilerStep#3"),
            LaunchScope::Process
        );
        assert_eq!(
            LaunchScope::Auto.resolve("execute_context_0(0)_generation_1(1)"),
            LaunchScope::Thread
        );
        assert_eq!(
            LaunchScope::Thread.resolve("ProfilerStep#3"),
            LaunchScope::Thread
        );
    }

    #[test]
    fn overlap_counts_nested_and_partial() {
        // [0,10) holds [2,5); [8,14) overlaps [0,10) partially.
        let o = overlaps_of(&[q(0, 10, 0), q(2, 5, 1), q(8, 14, 2)], LaunchScope::Thread);
        assert_eq!((o.nested, o.partial), (1, 1));
        // Disjoint and touching ranges do not overlap.
        let o = overlaps_of(&[q(0, 10, 0), q(10, 12, 1)], LaunchScope::Thread);
        assert_eq!(o, Overlaps::default());
    }
}
