//! The graph replays of a trace read from the driver's ledger, matched to
//! its captures (issue 57), and the split of their GPU time by module and
//! by op: what `kernels`, `iterations` and `diff` show inside the graphs.
//!
//! ```text
//! ledger: cudaGraphLaunch (lane, ts) ─ its activities in GPU order (start, end)
//!            │ place: step annotation (tokens → batch) or proposer.propose (speculator)
//!            ▼
//!         match_replay ─► region r ─► activity k ↔ r.launches[k]
//!                                      (launcher op, module path, shapes, subsystem)
//! split:  Σ dur of the attributed activities by (subsystem, module class) and
//!         by (subsystem, launcher op)
//! ```
//!
//! The same rules as `ops` (`matching`, `place`): the activities of one
//! graph launch in the order the GPU ran them (start, then end: every
//! stream of the graph in one sequence); a replay that equals no region
//! may be aligned to one (G2: matched with differences, its activities
//! mapped to their launches); else it is counted unmatched with its reason
//! and attributed to nothing. Memory: 56 B per graph replay (its launch's
//! lane, start and activity range, its region, the map of an aligned
//! replay: 4 B per activity, only for those), nothing per activity.

use super::matching::{match_replay, Act, Index, Outcome};
use super::place::{Place, Spans};
use super::{Captured, Captures, GraphsSummary};
use crate::contexts::Steps;
use crate::ledger::{Kind, Ledger};
use crate::stats::Exact;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::Range;

/// A replay as kept: its graph launch and what it matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    pub lane: u32,
    /// The graph launch call's start (ns).
    pub ts: i64,
    /// Its activities' positions in the ledger's activities (GPU order).
    pub positions: Range<usize>,
    /// The region whose launches its activities get: matched, or
    /// ambiguous with candidates naming the same launchers.
    pub region: Option<u32>,
    /// Matched to one region (its shapes known); false for an attributed
    /// ambiguous replay.
    pub exact: bool,
    /// An aligned replay's map (G2): activity j ran captured launch
    /// `map[j]` ([`super::matching::UNPAIRED`]: none); `None` when
    /// activity j ran launch j.
    pub map: Option<Box<[u32]>>,
}

impl Replay {
    /// The captured launch (position in its region) of the replay's
    /// activity `j`.
    pub fn launch_of(&self, j: usize) -> Option<u32> {
        match &self.map {
            Some(m) => m
                .get(j)
                .copied()
                .filter(|&k| k != super::matching::UNPAIRED),
            None => Some(j as u32),
        }
    }
}

/// The replays of a trace and their summary.
#[derive(Debug, Default)]
pub struct Replays {
    pub summary: GraphsSummary,
    pub replays: Vec<Replay>,
}

/// The activity kind code of `matching::Act`.
fn code(k: Kind) -> u8 {
    match k {
        Kind::Kernel => 0,
        Kind::Memcpy => 1,
        Kind::Memset => 2,
    }
}

/// The captures of a finished trace (`spec`) and the driver's ledger's
/// graph launches matched to them: each made once per trace, however many
/// finishes ask (`kernels`, `iterations` and `diff` in one `batch`).
pub fn of_trace(
    trace: &crate::analysis::Finished<'_>,
    ledger: &Ledger,
) -> (std::sync::Arc<Captures>, std::sync::Arc<Replays>) {
    let caps = super::captures_of(trace);
    // The driver's ledger, or an empty one where the plan kept none.
    let key = (trace.capture.clone(), trace.ledger.is_some());
    let replays = trace.shared(key, || of_ledger(ledger, trace.steps, &caps));
    (caps, replays)
}

/// Matches every graph launch of `ledger` to `caps`; `steps`: the trace's
/// annotations (the step and `proposer.propose` spans that tell a
/// replay's batch and subsystem).
pub fn of_ledger(ledger: &Ledger, steps: &Steps, caps: &Captures) -> Replays {
    let mut out = Replays {
        summary: GraphsSummary::of_captures(caps),
        replays: Vec::new(),
    };
    let mut launches = ledger.graph_launch_calls().peekable();
    if launches.peek().is_none() {
        return out;
    }
    let mut spans = Spans::of_steps(steps, |p, t| ledger.lane_of(p, t));
    let ix = Index::new(caps);
    let mut seq: Vec<Act<'_>> = Vec::new();
    for (lane, call) in launches {
        seq.clear();
        seq.extend(call.activities.iter().map(|a| Act {
            kind: code(a.kind),
            name: ledger.names.resolve(a.name),
        }));
        let place: Place = spans.place(lane, call.ts.0);
        let (sub, batch) = place.hints();
        let outcome = match_replay(caps, &ix, &seq, batch, sub);
        let dur = |a: &crate::ledger::Activity| a.end.0.saturating_sub(a.start.0);
        let total = call
            .activities
            .iter()
            .fold(0i64, |t, a| t.saturating_add(dur(&a)));
        out.summary
            .count(&outcome, place, call.ts.0, call.activities.len(), total);
        let region = outcome.region();
        if let Some(r) = region {
            let durs = call
                .activities
                .iter()
                .enumerate()
                .filter(|(j, _)| outcome.launch_of(*j).is_some())
                .map(|(_, a)| dur(&a));
            out.summary.attribute(&caps.regions[r as usize], durs);
        }
        let exact = outcome.exact();
        let map = match outcome {
            Outcome::Aligned { map, .. } => Some(map.into_boxed_slice()),
            _ => None,
        };
        out.replays.push(Replay {
            lane,
            ts: call.ts.0,
            positions: call.activities.positions(),
            region,
            exact,
            map,
        });
    }
    out
}

/// The name of a captured launch's module class: the last frame of its
/// module path less Kineto's instance suffix (`…/DecoderLayer_2/Linear_9`
/// → `Linear`), [`NO_MODULE`] when no `nn.Module` frame encloses it.
pub fn module_class<'c>(caps: &'c Captures, c: &Captured) -> &'c str {
    let Some(m) = c.module else {
        return NO_MODULE;
    };
    let path = caps.resolve(m);
    let leaf = path.rsplit('/').next().unwrap_or(path);
    match leaf.rsplit_once('_') {
        Some((class, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => class,
        _ => leaf,
    }
}

/// A captured launch's launcher op name, [`NO_OP`] when no op encloses it.
pub fn launcher_name<'c>(caps: &'c Captures, c: &Captured) -> &'c str {
    c.launcher
        .and_then(|o| caps.ops.get(o as usize))
        .map_or(NO_OP, |o| caps.resolve(o.name))
}

/// The module class of a launch outside every `nn.Module` frame.
pub const NO_MODULE: &str = "(no module)";
/// The launcher of a launch outside every op.
pub const NO_OP: &str = "(no op)";

/// One row of a graph split: a subsystem's attributed activities of one
/// module class (`by` = `module`) or one launcher op (`by` = `op`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SplitRow {
    /// `decoder`, `speculator`, `encoder`.
    pub subsystem: String,
    /// `module` or `op`.
    pub by: String,
    pub name: String,
    /// Replayed activities launched, at capture time, from it.
    pub activities: u64,
    /// Σ their durations (exact ns).
    pub gpu_ns: i64,
    /// Its share of its subsystem's attributed GPU ns (0–1).
    pub share: f64,
    /// GPU ms per completion token (as the analysis defines per token);
    /// none without a token count.
    pub gpu_ms_per_token: Option<f64>,
}

/// The split being summed: (subsystem, by, name) → (activities, ns).
#[derive(Debug, Default)]
pub struct Split {
    sums: BTreeMap<(String, &'static str, String), (u64, i64)>,
}

impl Split {
    /// Adds replay `rep`'s activities (if attributed) of `ledger`.
    pub fn add(&mut self, caps: &Captures, ledger: &Ledger, rep: &Replay) {
        let Some(region) = rep.region.and_then(|r| caps.regions.get(r as usize)) else {
            return;
        };
        for (j, pos) in rep.positions.clone().enumerate() {
            let Some(c) = rep
                .launch_of(j)
                .and_then(|k| region.launches.get(k as usize))
            else {
                continue;
            };
            let a = ledger.activities.get(pos);
            let dur = a.end.0.saturating_sub(a.start.0);
            self.put(&region.subsystem, "module", module_class(caps, c), dur);
            self.put(&region.subsystem, "op", launcher_name(caps, c), dur);
        }
    }

    fn put(&mut self, sub: &str, by: &'static str, name: &str, dur: i64) {
        let e = self
            .sums
            .entry((sub.to_string(), by, name.to_string()))
            .or_default();
        e.0 += 1;
        e.1 = e.1.saturating_add(dur);
    }

    /// Its rows: by subsystem, then `module` before `op`, then GPU ns
    /// (largest first), then name; per token left to [`per_token`].
    pub fn rows(self) -> Vec<SplitRow> {
        let mut totals: BTreeMap<(String, &'static str), i128> = BTreeMap::new();
        for ((sub, by, _), (_, ns)) in &self.sums {
            *totals.entry((sub.clone(), by)).or_default() += i128::from(*ns);
        }
        let mut rows: Vec<SplitRow> = self
            .sums
            .into_iter()
            .map(|((subsystem, by, name), (activities, gpu_ns))| {
                let total = totals.get(&(subsystem.clone(), by)).copied().unwrap_or(0);
                SplitRow {
                    share: if total > 0 {
                        gpu_ns as f64 / total as f64
                    } else {
                        0.0
                    },
                    subsystem,
                    by: by.to_string(),
                    name,
                    activities,
                    gpu_ns,
                    gpu_ms_per_token: None,
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            (
                &a.subsystem,
                a.by != "module",
                std::cmp::Reverse(a.gpu_ns),
                &a.name,
            )
                .cmp(&(
                    &b.subsystem,
                    b.by != "module",
                    std::cmp::Reverse(b.gpu_ns),
                    &b.name,
                ))
        });
        rows
    }
}

/// Sets each row's GPU ms per token to gpu_ns × `scale.num` / `scale.den`
/// / 10⁶ (`kernels`: 1 / tokens; `iterations`: n / (closed × tokens)),
/// none when `scale` is none or its denominator 0.
pub fn per_token(rows: &mut [SplitRow], scale: Option<(i128, i128)>) {
    for r in rows {
        r.gpu_ms_per_token = scale.filter(|s| s.1 != 0).map(|(num, den)| {
            Exact {
                num: i128::from(r.gpu_ns) * num,
                den,
            }
            .ms()
        });
    }
}

/// What `kernels` and `iterations` report of a trace's graphs: the
/// replays' summary (as `ops`' `graphs`) and the split of the attributed
/// replays' GPU time by module class and by launcher op.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GraphView {
    pub summary: GraphsSummary,
    pub split: Vec<SplitRow>,
}

impl GraphView {
    /// The view of the replays `keep` admits (every attributed replay is
    /// counted in the summary; only the kept ones in the split); none when
    /// the trace has no graph replay and no capture.
    pub fn of(
        caps: &Captures,
        ledger: &Ledger,
        replays: &Replays,
        keep: impl Fn(&Replay) -> bool,
    ) -> Option<GraphView> {
        if replays.summary.replays == 0 && caps.files.is_empty() && caps.notes.is_empty() {
            return None;
        }
        let mut split = Split::default();
        for r in replays.replays.iter().filter(|r| keep(r)) {
            split.add(caps, ledger, r);
        }
        Some(GraphView {
            summary: replays.summary.clone(),
            split: split.rows(),
        })
    }
}

/// The tables of the traces' [`GraphView`]s (`kernels`, `iterations`):
/// the human one (per trace and subsystem: its replays, then its `top`
/// module classes and `top` launcher ops by GPU time) and the CSV one
/// (every row). None when no trace has a capture read.
pub fn tables(
    traces: &[(&str, Option<&GraphView>)],
    top: usize,
) -> Option<(crate::report::Table, crate::report::Table)> {
    use crate::report::{Cell, Table};
    // Without a capture read (or a note about one) nothing can be split:
    // the JSON keeps the replays' summary, the tables stay quiet.
    let captured = |v: &GraphView| !v.summary.captures.is_empty() || !v.summary.notes.is_empty();
    if !traces.iter().any(|t| t.1.is_some_and(captured)) {
        return None;
    }
    let mut human = Table::new(
        "Inside the graphs: replayed GPU time by module class and by the op that captured it",
        &[
            "trace",
            "subsystem",
            "by",
            "name",
            "activities",
            "GPU (ms)",
            "share (%)",
            "GPU ms/token",
        ],
    );
    let mut csv = Table::new(
        "inside_graphs",
        &[
            "path",
            "subsystem",
            "by",
            "name",
            "activities",
            "gpu_ns",
            "share",
            "gpu_ms_per_token",
        ],
    );
    for (label, view) in traces {
        let Some(g) = view else { continue };
        let s = &g.summary;
        human.notes.push(format!(
            "{label}: {} replays, {} matched{}, {} ambiguous ({} attributed), {} unmatched; {} regions from {} capture file(s)",
            s.replays,
            s.replays_matched,
            s.with_differences_said(),
            s.replays_ambiguous,
            s.replays_ambiguous_attributed,
            s.replays_unmatched,
            s.regions,
            s.captures.len()
        ));
        let mut shown: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for r in &g.split {
            csv.row(vec![
                label.to_string().into(),
                r.subsystem.clone().into(),
                r.by.clone().into(),
                r.name.clone().into(),
                r.activities.into(),
                Cell::Int(r.gpu_ns),
                Cell::Float(r.share, 6),
                Cell::opt_f(r.gpu_ms_per_token, 6),
            ]);
            let n = shown.entry((&r.subsystem, &r.by)).or_default();
            *n += 1;
            if *n > top {
                continue;
            }
            human.row(vec![
                label.to_string().into(),
                r.subsystem.clone().into(),
                r.by.clone().into(),
                crate::text::ellipsize_middle(&r.name, 50).into(),
                r.activities.into(),
                Cell::Float(r.gpu_ns as f64 / 1e6, 3),
                Cell::Float(r.share * 100.0, 1),
                Cell::opt_f(r.gpu_ms_per_token, 4),
            ]);
        }
    }
    Some((human, csv))
}
