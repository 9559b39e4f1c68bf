//! The end of the read: launch links (C3), the graph replays (issue 57),
//! containment (C4–C5, `sweep`), the rows (O1–O8, `rowset`, `tally`), the
//! GPU gaps (I2–I3) and the summary (O9, `summary`). Integer ns
//! throughout; ratios are exact fractions rounded half to even to 6
//! decimals, means and medians to a whole ns (C1, `exact`).

use super::acts::act_facts;
use super::rowset::{inclusive_totals, sort_rows};
use super::summary::{summarize, Facts};
use super::sweep::{sweep_threads, Swept};
use super::threads::Thread;
use super::{OpRow, Ops, Thresholds, TraceOps};
use crate::hostops::launch::{launches, owners};
use crate::hostops::{HostLinks, Linked};
use crate::model::Sym;

/// A runtime call as the finish keeps it (24 B; the kept record decodes to
/// 56 B with its correlation and file index, which the links need once).
#[derive(Debug, Clone, Copy)]
pub(super) struct Call {
    pub ts: i64,
    pub(super) dur: i64,
    pub lane: u32,
    pub(super) name: Sym,
}

/// The kept runtime calls, in file order, and their correlations (C3),
/// the records freed as they are decoded.
fn decode_calls(kept: crate::store::pack::Records<Linked>) -> (Vec<Call>, Vec<Option<i128>>) {
    let mut corrs = Vec::with_capacity(kept.len());
    let mut calls = Vec::with_capacity(kept.len());
    for c in kept.drain() {
        corrs.push(c.corr);
        calls.push(Call {
            ts: c.ts,
            dur: c.dur,
            lane: c.lane,
            name: c.name,
        });
    }
    (calls, corrs)
}

/// The figures of one trace from what was kept.
pub(super) fn measure(st: Ops, caps: &crate::graphs::Captures) -> TraceOps {
    // Rows of every op (O1) and threads as sorted runs (C4), made while
    // reading.
    let Ops {
        links,
        mut threads,
        mut rows,
        mut contexts,
        ..
    } = st;
    let HostLinks {
        mut names,
        lanes,
        calls,
        acts,
        mut counts,
    } = links;
    threads.resize_with(lanes.len(), Thread::default);
    let (calls, corrs) = decode_calls(calls);
    // The activities stay packed (≈ 10 B each), decoded as each pass needs them.
    let (own, dup) = owners(|| corrs.iter().copied(), acts.iter());
    drop(corrs);
    counts.duplicate_runtime_correlation = dup;
    counts.unlinked_activities = own.unowned();
    // The activities' own figures (`acts.rs`) need no sweep: a thread of
    // their own computes them beside the launches' figures (inline when it
    // cannot start or there are few activities). Both read the packed
    // activities and their owners, which are then dropped before the
    // sweeps: at 1.28 GB they were 10 MB of the finish's peak.
    let (launched, act_facts) = std::thread::scope(|s| {
        let side = (acts.len() >= limits().side_min)
            .then(|| {
                std::thread::Builder::new()
                    .name("torchtrace-acts".into())
                    .spawn_scoped(s, || act_facts(&acts, &own, &calls))
                    .ok()
            })
            .flatten();
        let launched = launches(calls.iter().map(|c| c.name), acts.iter(), &own, &names);
        let facts = match side {
            Some(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            None => act_facts(&acts, &own, &calls),
        };
        (launched, facts)
    });
    // The graph replays to their captures (issue 57), while the packed
    // activities and their owners are here.
    let replayed =
        super::graphs::replays(caps, &acts, &own, &launched, &names, &calls, &mut contexts);
    drop(acts);
    drop(own);
    let host_ops = threads.iter().map(|t| t.len() as u64).sum();
    // Each thread's call indices, allocated to size (no growth slack).
    let mut per_lane = vec![0usize; lanes.len()];
    for c in &calls {
        per_lane[c.lane as usize] += 1;
    }
    let mut calls_by_lane: Vec<Vec<u32>> = per_lane.into_iter().map(Vec::with_capacity).collect();
    for (i, c) in calls.iter().enumerate() {
        calls_by_lane[c.lane as usize].push(i as u32);
    }
    let (swept, attributed) =
        sweep_threads(threads, &calls, &launched, &mut calls_by_lane, &mut rows);

    let Swept { sums, op_spans, .. } = swept;
    inclusive_totals(&sums, &mut rows);
    let graphs = replayed.into_rows(caps, &mut rows, &mut names);
    let mut out_rows: Vec<OpRow> = rows.rows.into_iter().map(|a| a.row).collect();
    sort_rows(&mut out_rows);

    let summary = summarize(Facts {
        host_ops,
        op_spans: &op_spans,
        calls: &calls,
        acts: act_facts,
        launched: &launched,
        by_kind: attributed.by_kind,
        rows: &out_rows,
        lanes: lanes.len(),
        without_op: attributed.without_op,
        graph_kernels: attributed.graph_kernels,
    });
    TraceOps {
        path: String::new(),
        complete: true,
        error: None,
        units: "ns".into(),
        completion_tokens: None,
        tokens_source: None,
        thresholds: Thresholds::default(),
        input: counts,
        summary,
        ops: out_rows,
        graphs,
        names_cut: names.cut() as u64,
        reader_notes: Vec::new(),
    }
}

/// The fewest activities, and the fewest ops on one thread, for which the
/// finish gives that work threads of its own ([`ActFacts`] beside the
/// launches' figures; a big thread's merge and its O3 answers beside its
/// sweep).
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub side_min: usize,
    pub big_min: usize,
}

impl Limits {
    const DEFAULT: Limits = Limits {
        side_min: 1 << 16,
        big_min: super::threads::PREFETCH_MIN,
    };
    /// One core to use (`-j 1`): everything on the finishing thread.
    const NONE: Limits = Limits {
        side_min: usize::MAX,
        big_min: usize::MAX,
    };
}

#[cfg(test)]
thread_local! {
    /// Tests: the limits [`measure`] uses on this thread, when set.
    pub(super) static LIMITS: std::cell::Cell<Option<Limits>> = const { std::cell::Cell::new(None) };
}

/// The limits of this run: none with one core to use (`-j 1`).
pub(super) fn limits() -> Limits {
    let run = if rayon::current_num_threads() > 1 {
        Limits::DEFAULT
    } else {
        Limits::NONE
    };
    #[cfg(test)]
    return LIMITS.with(|l| l.get()).unwrap_or(run);
    #[cfg(not(test))]
    run
}
