//! The end of the read: launch links (C3), the graph replays (issue 57),
//! containment (C4–C5, `sweep`), the rows (O1–O8, `rowset`, `tally`), the
//! GPU gaps (I2–I3) and the summary (O9, `summary`). Integer ns
//! throughout; ratios are exact fractions rounded half to even to 6
//! decimals, means and medians to a whole ns (C1, `exact`).

use super::acts::act_facts;
use super::rowset::RowSet;
use super::rowset::{inclusive_totals, sort_rows};
use super::summary::{summarize, Facts};
use super::sweep::{sweep_threads, Swept, ThreadOps};
use super::{OpRow, Thresholds, TraceOps};
use crate::hostops::launch::{launches, owners};
use crate::hostops::store::{Form, HostStore};
use crate::hostops::{HostLinks, InputCounts, Linked};
use crate::model::{Interner, Sym};
use crate::store::pack::Records;
use std::sync::Arc;

/// A runtime call as the finish keeps it (24 B; the kept record decodes to
/// 56 B with its correlation and file index, which the links need once).
#[derive(Debug, Clone, Copy)]
pub(super) struct Call {
    pub ts: i64,
    pub(super) dur: i64,
    pub lane: u32,
    pub(super) name: Sym,
}

/// The kept runtime calls, in file order, and their correlations (C3).
fn decode_calls(kept: impl Iterator<Item = Linked>, n: usize) -> (Vec<Call>, Vec<Option<i128>>) {
    let mut corrs = Vec::with_capacity(n);
    let mut calls = Vec::with_capacity(n);
    for c in kept {
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

/// A part of the host store, owned (freed as it is used) or borrowed
/// (another finish holds the store).
enum Held<'a, T> {
    Owned(T),
    Borrowed(&'a T),
}

impl<T> std::ops::Deref for Held<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            Held::Owned(t) => t,
            Held::Borrowed(t) => t,
        }
    }
}

/// What the finish reads of the host store: the names (extended by the
/// capture traces' ops), the lanes' count, the calls decoded, the packed
/// activities, C1–C3's counts, each thread's ops in C4's key order, and
/// the rows of the store's forms (O1).
struct Parts<'a> {
    names: Interner,
    lanes: usize,
    calls: (Vec<Call>, Vec<Option<i128>>),
    acts: Held<'a, Records<Linked>>,
    counts: InputCounts,
    threads: Vec<ThreadOps<'a>>,
    rows: RowSet,
    form_rows: Vec<u32>,
    contexts: super::graphs::Contexts,
}

/// The rows of the forms (O1's (name, category)), made in form order:
/// the order the rows were made in when `ops` kept its own ops.
fn rows_of(forms: &[Form], names: &Interner) -> (RowSet, Vec<u32>) {
    let mut rows = RowSet::default();
    let form_rows = forms
        .iter()
        .map(|f| rows.of_form(f.name, f.cat, names))
        .collect();
    (rows, form_rows)
}

impl<'a> Parts<'a> {
    /// The store consumed: calls freed as decoded, each thread's chunks
    /// as merged.
    fn owned(store: HostStore) -> Parts<'a> {
        let HostStore {
            links,
            threads,
            forms,
            spans,
            ..
        } = store;
        let HostLinks {
            names,
            lanes,
            calls,
            acts,
            counts,
            ..
        } = links;
        let n = calls.len();
        let (rows, form_rows) = rows_of(&forms, &names);
        Parts {
            lanes: lanes.len(),
            calls: decode_calls(calls.drain(), n),
            acts: Held::Owned(acts),
            counts,
            threads: threads
                .into_iter()
                .map(|t| ThreadOps {
                    len: t.len(),
                    ops: Box::new(t.into_merged()),
                })
                .collect(),
            rows,
            form_rows,
            contexts: spans,
            names,
        }
    }

    /// The store read, another finish holding it too.
    fn borrowed(store: &'a HostStore) -> Parts<'a> {
        let links = &store.links;
        let (rows, form_rows) = rows_of(&store.forms, &links.names);
        Parts {
            names: links.names.clone(),
            lanes: links.lanes.len(),
            calls: decode_calls(links.calls.iter(), links.calls.len()),
            acts: Held::Borrowed(&links.acts),
            counts: links.counts,
            threads: store
                .threads
                .iter()
                .map(|t| ThreadOps {
                    len: t.len(),
                    ops: Box::new(t.in_key_order()),
                })
                .collect(),
            rows,
            form_rows,
            contexts: store.spans.clone(),
        }
    }
}

/// The figures of one trace from the host store: consumed when this
/// finish holds the only reference (`ops` alone, or the last of `batch`'s
/// users), read otherwise.
pub(super) fn measure(store: Arc<HostStore>, caps: &crate::graphs::Captures) -> TraceOps {
    match Arc::try_unwrap(store) {
        Ok(store) => measure_parts(Parts::owned(store), caps),
        Err(shared) => measure_parts(Parts::borrowed(&shared), caps),
    }
}

fn measure_parts(parts: Parts<'_>, caps: &crate::graphs::Captures) -> TraceOps {
    let Parts {
        mut names,
        lanes,
        calls: (calls, corrs),
        acts,
        mut counts,
        mut threads,
        mut rows,
        form_rows,
        mut contexts,
    } = parts;
    threads.resize_with(lanes.max(threads.len()), ThreadOps::empty);
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
    let host_ops = threads.iter().map(|t| t.len as u64).sum();
    // Each thread's call indices, allocated to size (no growth slack).
    let mut per_lane = vec![0usize; threads.len()];
    for c in &calls {
        per_lane[c.lane as usize] += 1;
    }
    let mut calls_by_lane: Vec<Vec<u32>> = per_lane.into_iter().map(Vec::with_capacity).collect();
    for (i, c) in calls.iter().enumerate() {
        calls_by_lane[c.lane as usize].push(i as u32);
    }
    let (swept, attributed) = sweep_threads(
        threads,
        &form_rows,
        &calls,
        &launched,
        &mut calls_by_lane,
        &mut rows,
    );

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
        lanes,
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
        big_min: crate::hostops::runs::PREFETCH_MIN,
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
