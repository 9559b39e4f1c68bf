//! The finish of `critical`: the timeline of `walk.rs` from the per-trace
//! host store (each runtime call with its thread and C7's sync flag, each
//! activity grouped by stream in I1's order and linked to its call by
//! C3), then one walk per closed iteration (C8), the rows, the decode
//! sums and the activity names on the paths. O(events log events) to
//! build; each walk is as long as its path.

use super::walk::{self, Act, Call, Timeline, NO_CALL};
use super::{Counts, Critical, OnPath, PartSums, PathRow, TraceCritical};
use crate::analysis::Finished;
use crate::hostops::launch::{end_of, owners, sync_flags};
use crate::hostops::store::HostStore;
use crate::hostops::HostLinks;
use crate::model::Sym;
use crate::windows::StepWindow;
use std::collections::HashMap;

/// C3 and C7: the calls with their threads and sync flags (24 B a call);
/// the activities grouped by stream (streams in lane order, each counted
/// first so every activity lands in place as the records are decoded),
/// each stream in I1's order (ts, end, file order), with their owners
/// (32 B an activity).
fn build(links: &HostLinks, counts: &mut Counts) -> Timeline {
    let (own, _dup) = owners(|| links.calls.iter().map(|c| c.corr), links.acts.iter());
    let sync = sync_flags(
        links.calls.iter().map(|c| c.name),
        links.acts.iter(),
        &own,
        &links.names,
    );
    let calls: Vec<Call> = links
        .calls
        .iter()
        .zip(sync)
        .map(|(c, sync)| Call {
            start: c.ts,
            end: end_of(c.ts, c.dur),
            thread: c.lane,
            sync,
        })
        .collect();
    let mut per_lane = vec![0u32; links.lanes.len()];
    for a in links.acts.iter() {
        per_lane[a.lane as usize] += 1;
    }
    // Each stream's first slot, streams in lane order (empty lanes skipped).
    let mut start_of = vec![0u32; per_lane.len()];
    let mut seg = Vec::new();
    let mut n = 0u32;
    for (l, &k) in per_lane.iter().enumerate() {
        start_of[l] = n;
        if k > 0 {
            seg.push(n);
        }
        n += k;
    }
    seg.push(n);
    let mut next = start_of.clone();
    let blank = Act {
        start: 0,
        end: 0,
        call: NO_CALL,
        name: Sym(0),
        pos: 0,
        code: 0,
    };
    let mut acts = vec![blank; n as usize];
    for (a, o) in links.acts.iter().zip(own.iter()) {
        let l = a.lane as usize;
        let at = next[l];
        next[l] += 1;
        let call = o.unwrap_or(NO_CALL);
        counts.unlinked += u64::from(call == NO_CALL);
        acts[at as usize] = Act {
            start: a.ts,
            end: end_of(a.ts, a.dur),
            call,
            name: a.name,
            pos: at - start_of[l],
            code: a.code,
        };
    }
    for w in seg.windows(2) {
        acts[w[0] as usize..w[1] as usize].sort_unstable_by_key(|a| (a.start, a.end, a.pos));
    }
    let mut tl = Timeline {
        acts,
        seg,
        calls,
        ..Timeline::default()
    };
    tl.index(links.lanes.len());
    tl
}

/// P6: a decode iteration — a vLLM step with no context request and a
/// generation request; every `ProfilerStep#` step and `--window` region.
fn is_decode(name: &str, grammar: Option<&str>) -> bool {
    match crate::steps::parse(name) {
        Some(s) if grammar == Some("vllm") => s.context_reqs == 0 && s.generation_reqs > 0,
        _ => grammar.is_some_and(|g| g != "vllm"),
    }
}

/// P1 with `--window NAME`: each CPU user annotation named `name`, over
/// its own interval; sorted by (start, index).
fn named_windows(st: &crate::contexts::Steps, name: &str) -> (Vec<StepWindow>, Vec<Option<i64>>) {
    let mut wins: Vec<StepWindow> = st
        .cpu
        .iter()
        .filter(|a| st.names.resolve(a.name) == name)
        .map(|a| StepWindow {
            name: name.to_string(),
            lane: (
                st.names.resolve(a.lane.0).to_string(),
                st.names.resolve(a.lane.1).to_string(),
            ),
            start: a.start.0,
            ann_end: a.end().0,
            index: a.index,
        })
        .collect();
    wins.sort_by_key(|w| (w.start, w.index));
    let ends = wins.iter().map(|w| Some(w.ann_end)).collect();
    (wins, ends)
}

/// Each step's host thread as a lane of the store (`u32::MAX`: a thread
/// with no runtime call).
fn step_threads(links: &HostLinks, wins: &[StepWindow]) -> Vec<u32> {
    let by_name: HashMap<(String, String), u32> = (0..links.lanes.len() as u32)
        .map(|l| {
            let lane = links.lanes.resolve(l);
            ((lane.pid.to_string(), lane.tid.to_string()), l)
        })
        .collect();
    wins.iter()
        .map(|w| by_name.get(&w.lane).copied().unwrap_or(u32::MAX))
        .collect()
}

pub(super) fn measure(c: Critical, trace: &Finished<'_>) -> TraceCritical {
    let store = trace.collected::<HostStore>().unwrap_or_default();
    let links = &store.links;
    let mut counts = Counts::default();
    let (grammar, wins, ends) = match &c.spec.window {
        Some(name) => {
            let (wins, ends) = named_windows(trace.steps, name);
            let grammar = (!wins.is_empty()).then(|| "annotation".to_string());
            (grammar, wins, ends)
        }
        None => {
            let (grammar, wins) =
                crate::windows::step_windows(trace.steps, || c.op_steps.windows());
            let ends = crate::windows::window_ends(&wins);
            (grammar, wins, ends)
        }
    };
    let tl = build(links, &mut counts);
    let threads = step_threads(links, &wins);
    let (mut closed, mut decode) = (PartSums::default(), PartSums::default());
    let mut decode_iterations = 0;
    // Per (name, code): own ns on the paths and times on a path.
    let mut on: HashMap<(Sym, u8), (i128, u64)> = HashMap::new();
    let mut rows = Vec::with_capacity(wins.len());
    for ((w, end), &thread) in wins.iter().zip(&ends).zip(&threads) {
        let is_decode = is_decode(&w.name, grammar.as_deref());
        decode_iterations += u64::from(is_decode);
        counts.steps_without_calls += u64::from(thread == u32::MAX);
        let mut row = PathRow {
            index: w.index,
            name: w.name.clone(),
            decode: is_decode,
            start_ns: w.start,
            ..PathRow::default()
        };
        if let Some(end) = *end {
            let (p, met) = walk::walk(&tl, thread, w.start, end, |a, ns| {
                let k = (tl.acts[a as usize].name, tl.acts[a as usize].code);
                let e = on.entry(k).or_default();
                e.0 += i128::from(ns);
                e.1 += 1;
            });
            counts.syncs_not_blocking += met.syncs_not_blocking;
            counts.capped_walks += u64::from(met.capped);
            closed.add(&p);
            if is_decode {
                decode.add(&p);
            }
            row.window_ns = Some(p.total());
            row.host_ns = Some(p.host);
            row.launch_ns = Some(p.launch);
            row.gpu_ns = Some(p.gpu);
            row.sync_ns = Some(p.sync);
            row.activities = met.activities;
            row.launches = met.launches;
            row.syncs = met.syncs_blocking;
        }
        rows.push(row);
    }
    let (on_path, others) = top(on, links, c.spec.top);
    let mut out = TraceCritical {
        path: trace.path.to_string(),
        units: "ns".into(),
        step_grammar: grammar,
        iterations: rows.len() as u64,
        closed,
        decode,
        decode_iterations,
        on_path,
        on_path_others_ns: others,
        rows,
        counts,
        complete: true,
        ..TraceCritical::default()
    };
    out.notes = notes(&out);
    out
}

/// The activity names on the paths, largest time first (ties: kind, then
/// name), the first `top` (0: all) and the rest's sum.
fn top(on: HashMap<(Sym, u8), (i128, u64)>, links: &HostLinks, top: u32) -> (Vec<OnPath>, i128) {
    let mut v: Vec<OnPath> = on
        .into_iter()
        .map(|((name, code), (ns, count))| OnPath {
            kind: match code {
                1 => "memcpy",
                2 => "memset",
                _ => "kernel",
            }
            .to_string(),
            name: links.names.resolve(name).to_string(),
            ns,
            count,
        })
        .collect();
    v.sort_by(|a, b| {
        b.ns.cmp(&a.ns)
            .then_with(|| a.kind.cmp(&b.kind))
            .then_with(|| a.name.cmp(&b.name))
    });
    let keep = if top == 0 {
        v.len()
    } else {
        (top as usize).min(v.len())
    };
    let others = v[keep..].iter().map(|o| o.ns).sum();
    v.truncate(keep);
    (v, others)
}

/// The notes: each non-zero count, and a trace without steps.
fn notes(t: &TraceCritical) -> Vec<String> {
    let mut n = Vec::new();
    if t.step_grammar.is_none() {
        n.push("no step annotations (vLLM steps or ProfilerStep#N; --window NAME walks a named annotation): no iteration to walk".into());
    } else if t.closed.iterations == 0 {
        n.push("no closed iteration (a window ends at the next step on its thread)".into());
    }
    let c = &t.counts;
    let said = [
        (c.unlinked, "activities have no runtime call with their correlation (C3): on a path they queue behind their stream predecessor"),
        (c.capped_walks, "walks stopped at their step bound; the rest of their window is host"),
        (c.steps_without_calls, "step annotations are on a thread with no runtime call: their windows are host"),
    ];
    for (k, what) in said {
        if k > 0 {
            n.push(format!("{k} {what}"));
        }
    }
    n
}
