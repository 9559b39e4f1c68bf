//! The summary (O9): launch statistics by kind, the launch-bound share of
//! the top-level GPU time, the host side over the launching threads
//! (window, blocked, busy), GPU idle and host wait, and the verdict.

use super::acts::ActFacts;
use super::exact::ratio6;
use super::measure::Call;
use super::tally::Tally;
use super::{OpRow, OpsSummary};
use crate::hostops::launch::{end_of, Launch};

/// What the summary is computed from.
pub(super) struct Facts<'a> {
    pub(super) host_ops: u64,
    /// Per thread: its ops' first start and last end.
    pub(super) op_spans: &'a [Option<(i64, i64)>],
    pub(super) calls: &'a [Call],
    pub(super) acts: ActFacts,
    pub(super) launched: &'a [Launch],
    pub(super) by_kind: [Tally; 4],
    pub(super) rows: &'a [OpRow],
    pub(super) lanes: usize,
    pub(super) without_op: u64,
    pub(super) graph_kernels: u64,
}

/// O9.
pub(super) fn summarize(mut f: Facts<'_>) -> OpsSummary {
    let mut s = OpsSummary {
        host_ops: f.host_ops,
        runtime_calls: f.calls.len() as u64,
        launches: f.by_kind.iter().map(|t| t.launches).sum(),
        graph_launches: f.by_kind[1].launches,
        activities: f.acts.kernels + f.acts.memcpys + f.acts.memsets,
        kernels: f.acts.kernels,
        memcpys: f.acts.memcpys,
        memsets: f.acts.memsets,
        activities_linked: f.acts.linked,
        graph_kernels: f.graph_kernels,
        launches_without_op: f.without_op,
        ..OpsSummary::default()
    };
    let (gpu, linked) = (f.acts.gpu, f.acts.gpu_linked);
    s.activities_unlinked = s.activities - s.activities_linked;
    s.gpu_ns = gpu;
    s.gpu_linked_ns = linked;
    s.gpu_unlinked_ns = gpu - linked;
    let mut all = Tally::default();
    for t in &f.by_kind {
        all.absorb(t);
    }
    s.launch_stats = all.stats();
    let [kernel, graph, memcpy, memset] = std::mem::take(&mut f.by_kind).map(Tally::stats);
    s.launch_stats_by_kind.kernel = kernel;
    s.launch_stats_by_kind.graph = graph;
    s.launch_stats_by_kind.memcpy = memcpy;
    s.launch_stats_by_kind.memset = memset;

    // Launch-bound share of the top-level GPU time (O8, O9).
    let top_total: i128 = f.rows.iter().map(|r| i128::from(r.gpu_top_ns)).sum();
    let mut bound: Vec<&OpRow> = f
        .rows
        .iter()
        .filter(|r| r.launch_bound == Some(true) && r.gpu_top_ns > 0)
        .collect();
    let bound_gpu: i128 = bound.iter().map(|r| i128::from(r.gpu_top_ns)).sum();
    s.launch_bound_gpu_share = ratio6(bound_gpu, top_total);
    bound.sort_by_key(|r| std::cmp::Reverse(r.gpu_top_ns));
    s.launch_bound_top_ops = bound.iter().take(10).map(|r| r.name.clone()).collect();

    host_side(&f, &mut s);
    let idle = f.acts.idle;
    s.gpu_idle_ns = idle.idle_ns;
    s.gpu_host_wait_ns = idle.host_wait_ns;
    s.host_wait_share_of_idle = ratio6(idle.host_wait_ns, idle.idle_ns);
    s.verdict = (s.activities > 0).then(|| {
        let busy = s.host_busy_ns > s.gpu_linked_ns;
        let waits = 2 * idle.host_wait_ns > idle.idle_ns;
        if busy && waits {
            "launch-bound"
        } else {
            "not launch-bound"
        }
        .to_string()
    });
    s
}

/// O9's host side over the launching threads: window, blocked, busy.
fn host_side(f: &Facts<'_>, s: &mut OpsSummary) {
    let mut launching = vec![false; f.lanes];
    for (c, l) in f.calls.iter().zip(f.launched) {
        if l.first().is_some() {
            launching[c.lane as usize] = true;
        }
    }
    let mut span: Vec<Option<(i64, i64)>> = f.op_spans.to_vec();
    let mut widen = |lane: u32, ts: i64, end: i64| {
        let w = &mut span[lane as usize];
        *w = Some(w.map_or((ts, end), |(a, b)| (a.min(ts), b.max(end))));
    };
    for c in f.calls {
        widen(c.lane, c.ts, end_of(c.ts, c.dur));
    }
    let window: i128 = span
        .iter()
        .zip(&launching)
        .filter(|(_, l)| **l)
        .filter_map(|(w, _)| *w)
        .map(|(a, b)| i128::from(b) - i128::from(a))
        .sum();
    let mut blocked_ivs: Vec<Vec<(crate::model::Ns, crate::model::Ns)>> = vec![Vec::new(); f.lanes];
    for (c, l) in f.calls.iter().zip(f.launched) {
        if l.sync && launching[c.lane as usize] {
            blocked_ivs[c.lane as usize].push((
                crate::model::Ns(c.ts),
                crate::model::Ns(end_of(c.ts, c.dur)),
            ));
        }
    }
    let blocked: i128 = blocked_ivs
        .into_iter()
        .map(|v| crate::ledger::intervals::length(&crate::ledger::intervals::union(v)))
        .sum();
    s.host_window_ns = window;
    s.host_blocked_ns = blocked;
    s.host_busy_ns = window - blocked;
    s.host_busy_per_gpu = ratio6(window - blocked, s.gpu_linked_ns);
}
