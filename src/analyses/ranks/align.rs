//! One run's ranks side by side: step alignment, clock offsets, waits,
//! last arrivers and stragglers.
//!
//! ```text
//!  decode steps by ordinal:  rank 0: d_0 d_1 d_2 …    names must agree; alignment
//!                            rank 1: d_0 d_1 d_2 …    stops at the first that differs
//!  collective k of step i, start s_r (offset applied), end e_r:
//!     wait_r    = max_r' s_r' − s_r           (≥ 0: time r waited for the last)
//!     arrival_r = s_r − min_r' s_r'           (≥ 0: how late r came)
//!     last arriver L = argmax s_r (ties: lowest rank); it imposed max s − min s
//!  step i:   wait_{r,i} = Σ_k wait_r,  arrival_{r,i} = Σ_k arrival_r
//!            straggler = the rank with the largest Σ imposed (ties: lowest)
//!            delay_i   = max over the other ranks of wait_{r,i}
//!  flagged when delay_i > threshold = max(floor, pct·median step span, median + k·MAD)
//! ```
//!
//! Every time is integer ns; medians of even counts are exact rationals
//! (the threshold) or, for clock offsets, the lower median (an integer,
//! so aligned times stay integers).

use super::runs::{Group, Identity, RankSource};
use super::{Align, RankStep, RankTrace, RanksConfig};
use crate::stats::{median_sorted, Exact};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// At least this many matched collectives make an offset credible.
pub const MIN_MATCHED: u64 = 8;
/// At most this spread (median absolute deviation of the end differences,
/// ns) makes an offset credible: blocking collectives end within a few µs
/// of each other on every rank.
pub const MAX_SPREAD_NS: i64 = 20_000;

/// A rank's clock offset against the run's lowest rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offset {
    pub rank: u32,
    /// Lower median over the matched collectives of end_r − end_ref (ns).
    pub offset_ns: i64,
    /// Lower median of |difference − offset| (ns); null without matches.
    pub spread_ns: Option<i64>,
    /// Collectives matched with the reference rank.
    pub matched: u64,
    pub credible: bool,
    /// Subtracted from every time of the rank.
    pub applied: bool,
}

/// One rank at one aligned step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankAtStep {
    pub rank: u32,
    /// The step annotation's start, offset applied.
    pub cpu_start_ns: i64,
    /// cpu_start − the earliest rank's cpu_start.
    pub cpu_skew_ns: i64,
    pub gpu_span_ns: Option<i64>,
    /// Its own collectives in the step (a truncated rank may have fewer).
    #[serde(default)]
    pub collectives: u64,
    /// Σ duration of its matched collectives.
    pub in_collectives_ns: i64,
    pub wait_ns: i64,
    pub arrival_ns: i64,
}

/// One aligned step of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRow {
    /// Ordinal among the run's decode (or boundary) steps, from 0.
    pub step: u64,
    pub name: String,
    /// Collectives matched across the ranks (the fewest any rank has).
    pub collectives: u64,
    pub straggler: Option<u32>,
    pub delay_ns: i64,
    pub flagged: bool,
    pub per_rank: Vec<RankAtStep>,
}

/// A flagged step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Straggler {
    pub step: u64,
    pub name: String,
    pub rank: u32,
    pub delay_ns: i64,
}

/// How the straggler threshold was set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Threshold {
    pub ns: Exact,
    /// `fixed` (given), or the binding part of the derived rule: `mad`,
    /// `floor`, `step`.
    pub rule: String,
    pub median_delay_ns: Option<Exact>,
    pub mad_delay_ns: Option<Exact>,
    pub median_step_span_ns: Option<Exact>,
    pub mad_k: u32,
    pub floor_us: u64,
    pub floor_step_pct: u32,
}

impl Threshold {
    pub fn ms(&self) -> f64 {
        self.ns.ms()
    }
}

/// Where step alignment stopped short of the shortest rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlignStop {
    pub step: u64,
    /// Each rank's step name there.
    pub names: Vec<(u32, String)>,
}

/// One rank of a run: where it came from and its totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankRow {
    pub rank: u32,
    pub path: String,
    pub rank_source: Option<RankSource>,
    pub complete: bool,
    pub error: Option<String>,
    pub decode_steps: u64,
    pub boundary_steps: u64,
    /// Its own collectives in the aligned decode steps (what the rank's
    /// trace says, also when another rank's is cut short).
    pub collectives: u64,
    /// Of them matched with every rank's (per step, the fewest any rank
    /// has): the ones its wait is measured over.
    #[serde(default)]
    pub collectives_matched: u64,
    pub collectives_outside_steps: u64,
    /// Σ wait over the aligned decode steps.
    pub wait_ns: i64,
    /// Σ GPU span of its aligned decode steps.
    pub gpu_span_ns: i64,
    pub wait_per_token_ms: Option<f64>,
    /// wait / GPU span of the aligned decode steps.
    pub wait_share: Option<f64>,
    /// Flagged steps it was the straggler of.
    pub straggler_steps: u64,
    /// Σ delay of those steps.
    pub imposed_ns: i64,
}

/// One run's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub run: String,
    pub world_size: Option<u32>,
    /// The first missing ranks (at most `runs::missing_cap` of the ranks
    /// found); `missing_count` says how many there are in all.
    pub missing_ranks: Vec<u32>,
    #[serde(default)]
    pub missing_count: u64,
    pub context: String,
    pub completion_tokens: Option<u64>,
    pub ranks: Vec<RankRow>,
    pub aligned_steps: u64,
    /// Where alignment stopped short of the shortest rank.
    pub alignment_stop: Option<AlignStop>,
    /// Aligned steps whose ranks launched different numbers of collectives.
    pub collective_count_mismatches: u64,
    pub align: Align,
    pub offsets: Vec<Offset>,
    pub threshold: Threshold,
    pub stragglers: Vec<Straggler>,
    /// Σ wait over ranks / Σ GPU span over ranks, aligned decode steps.
    pub wait_share: Option<f64>,
    pub steps: Vec<StepRow>,
    /// Prefill and mixed steps, aligned apart (start-up skew lands here).
    pub boundary: Vec<StepRow>,
    pub notes: Vec<String>,
}

/// The run's figures from its ranks' traces (`traces[i]` for each member).
pub fn run_report(group: &Group, traces: &[&RankTrace], cfg: &RanksConfig) -> RunReport {
    let ranks: Vec<u32> = group.members.iter().map(|&(r, _)| r).collect();
    let mut notes = group.notes.clone();
    let decode: Vec<&[RankStep]> = traces.iter().map(|t| t.decode.as_slice()).collect();
    let boundary: Vec<&[RankStep]> = traces.iter().map(|t| t.boundary.as_slice()).collect();
    let (n, stop) = aligned(traces, &decode, &ranks, &group.label, &mut notes);
    let offsets = offsets(&decode, n, &ranks, cfg.spec.align);
    for o in offsets.iter().filter(|o| !o.credible && o.matched > 0) {
        notes.push(format!(
            "{}: rank {}'s clock offset ({} ns, spread {} ns over {} collectives) is not credible: not applied",
            group.label,
            o.rank,
            o.offset_ns,
            o.spread_ns.unwrap_or_default(),
            o.matched
        ));
    }
    let shift: Vec<i64> = offsets
        .iter()
        .map(|o| if o.applied { o.offset_ns } else { 0 })
        .collect();
    let mut mismatches = 0;
    let mut steps: Vec<StepRow> = (0..n)
        .map(|i| step_row(traces, &decode, i, &ranks, &shift, &mut mismatches))
        .collect();
    let (nb, _) = aligned(traces, &boundary, &ranks, "", &mut Vec::new());
    let mut unused = 0;
    let bsteps = (0..nb)
        .map(|i| step_row(traces, &boundary, i, &ranks, &shift, &mut unused))
        .collect();
    if mismatches > 0 {
        notes.push(format!(
            "{}: in {mismatches} aligned step(s) the ranks launched different numbers of collectives: the first k of each are matched",
            group.label
        ));
    }
    let threshold = threshold(&steps, cfg);
    for s in steps.iter_mut() {
        s.flagged = s.straggler.is_some() && exceeds(s.delay_ns, &threshold.ns);
    }
    let tokens = cfg
        .spec
        .tokens
        .or_else(|| tokens(traces, &group.label, &mut notes));
    let rows = rank_rows(group, traces, &steps, tokens);
    if ranks.len() < 2 {
        notes.push(format!(
            "{}: one rank: nothing to compare (give every rank's trace)",
            group.label
        ));
    }
    let waits: i128 = rows.iter().map(|r| i128::from(r.wait_ns)).sum();
    let spans: i128 = rows.iter().map(|r| i128::from(r.gpu_span_ns)).sum();
    RunReport {
        run: group.label.clone(),
        world_size: group.world_size,
        missing_ranks: group.missing.clone(),
        missing_count: group.missing_count,
        context: traces
            .first()
            .map(|t| t.context.clone())
            .unwrap_or_default(),
        completion_tokens: tokens,
        ranks: rows,
        aligned_steps: n as u64,
        alignment_stop: stop,
        collective_count_mismatches: mismatches,
        align: cfg.spec.align,
        offsets,
        stragglers: steps
            .iter()
            .filter(|s| s.flagged)
            .map(|s| Straggler {
                step: s.step,
                name: s.name.clone(),
                rank: s.straggler.unwrap_or_default(),
                delay_ns: s.delay_ns,
            })
            .collect(),
        threshold,
        wait_share: (spans > 0).then(|| waits as f64 / spans as f64),
        steps,
        boundary: bsteps,
        notes,
    }
}

fn step_name<'a>(t: &'a RankTrace, s: &RankStep) -> &'a str {
    t.step_names.get(s.name as usize).map_or("", String::as_str)
}

/// Steps aligned by ordinal while their names agree; where it stopped
/// short of the shortest rank, and a note when step counts differ.
fn aligned(
    traces: &[&RankTrace],
    steps: &[&[RankStep]],
    ranks: &[u32],
    label: &str,
    notes: &mut Vec<String>,
) -> (usize, Option<AlignStop>) {
    let n = steps.iter().map(|s| s.len()).min().unwrap_or(0);
    let longest = steps.iter().map(|s| s.len()).max().unwrap_or(0);
    if !label.is_empty() && longest > n {
        let counts: Vec<String> = ranks
            .iter()
            .zip(steps)
            .map(|(r, s)| format!("rank {r}: {}", s.len()))
            .collect();
        notes.push(format!(
            "{label}: the ranks have different numbers of decode steps ({}): the first {n} are aligned",
            counts.join(", ")
        ));
    }
    for i in 0..n {
        let first = step_name(traces[0], &steps[0][i]);
        if (1..steps.len()).any(|r| step_name(traces[r], &steps[r][i]) != first) {
            let names = ranks
                .iter()
                .zip(traces.iter().zip(steps))
                .map(|(&r, (t, s))| (r, step_name(t, &s[i]).to_string()))
                .collect();
            if !label.is_empty() {
                notes.push(format!(
                    "{label}: decode step {i} has different names on the ranks (the scheduler outputs differ): alignment stops there, {i} steps aligned"
                ));
            }
            return (
                i,
                Some(AlignStop {
                    step: i as u64,
                    names,
                }),
            );
        }
    }
    (n, None)
}

/// The lower median of a non-empty list.
fn lower_median(v: &mut [i64]) -> i64 {
    v.sort_unstable();
    v[(v.len() - 1) / 2]
}

/// Each rank's clock offset against the first (lowest) rank.
fn offsets(steps: &[&[RankStep]], n: usize, ranks: &[u32], align: Align) -> Vec<Offset> {
    ranks
        .iter()
        .enumerate()
        .map(|(r, &rank)| {
            let mut d: Vec<i64> = Vec::new();
            for i in 0..n {
                let (mine, refs) = (&steps[r][i].collectives, &steps[0][i].collectives);
                let m = steps
                    .iter()
                    .map(|s| s[i].collectives.len())
                    .min()
                    .unwrap_or(0);
                d.extend((0..m).map(|k| mine[k].end_ns.saturating_sub(refs[k].end_ns)));
            }
            let matched = d.len() as u64;
            if d.is_empty() {
                return Offset {
                    rank,
                    offset_ns: 0,
                    spread_ns: None,
                    matched,
                    credible: r == 0,
                    applied: false,
                };
            }
            let off = lower_median(&mut d);
            let mut dev: Vec<i64> = d
                .iter()
                .map(|x| x.saturating_sub(off).saturating_abs())
                .collect();
            let spread = lower_median(&mut dev);
            let credible = r == 0 || (matched >= MIN_MATCHED && spread <= MAX_SPREAD_NS);
            Offset {
                rank,
                offset_ns: off,
                spread_ns: Some(spread),
                matched,
                credible,
                applied: r > 0 && credible && align == Align::Auto,
            }
        })
        .collect()
}

/// The figures of aligned step `i`.
fn step_row(
    traces: &[&RankTrace],
    steps: &[&[RankStep]],
    i: usize,
    ranks: &[u32],
    shift: &[i64],
    mismatches: &mut u64,
) -> StepRow {
    let nr = ranks.len();
    let counts: Vec<usize> = steps.iter().map(|s| s[i].collectives.len()).collect();
    let m = counts.iter().copied().min().unwrap_or(0);
    if counts.iter().any(|&c| c != m) {
        *mismatches += 1;
    }
    let (mut wait, mut late, mut imposed) = (vec![0i64; nr], vec![0i64; nr], vec![0i64; nr]);
    for k in 0..m {
        let s: Vec<i64> = (0..nr)
            .map(|r| steps[r][i].collectives[k].start_ns.saturating_sub(shift[r]))
            .collect();
        let hi = s.iter().copied().max().unwrap_or(0);
        let lo = s.iter().copied().min().unwrap_or(0);
        let last = s.iter().position(|&x| x == hi).unwrap_or(0);
        imposed[last] = imposed[last].saturating_add(hi.saturating_sub(lo));
        for r in 0..nr {
            wait[r] = wait[r].saturating_add(hi.saturating_sub(s[r]));
            late[r] = late[r].saturating_add(s[r].saturating_sub(lo));
        }
    }
    let straggler = (m > 0 && nr > 1).then(|| {
        (0..nr)
            .max_by(|&a, &b| imposed[a].cmp(&imposed[b]).then(b.cmp(&a)))
            .unwrap_or(0)
    });
    let delay = straggler.map_or(0, |s| {
        (0..nr)
            .filter(|&r| r != s)
            .map(|r| wait[r])
            .max()
            .unwrap_or(0)
    });
    let starts: Vec<i64> = (0..nr)
        .map(|r| steps[r][i].cpu_start_ns.saturating_sub(shift[r]))
        .collect();
    let first = starts.iter().copied().min().unwrap_or(0);
    let per_rank = (0..nr)
        .map(|r| {
            let st = &steps[r][i];
            RankAtStep {
                rank: ranks[r],
                cpu_start_ns: starts[r],
                cpu_skew_ns: starts[r].saturating_sub(first),
                gpu_span_ns: st.gpu_span(),
                collectives: st.collectives.len() as u64,
                in_collectives_ns: st.collectives[..m]
                    .iter()
                    .map(|c| c.end_ns.saturating_sub(c.start_ns))
                    .fold(0i64, i64::saturating_add),
                wait_ns: wait[r],
                arrival_ns: late[r],
            }
        })
        .collect();
    StepRow {
        step: i as u64,
        name: step_name(traces[0], &steps[0][i]).to_string(),
        collectives: m as u64,
        straggler: straggler.map(|s| ranks[s]),
        delay_ns: delay,
        flagged: false,
        per_rank,
    }
}

/// Whether `v` ns is strictly above the exact threshold.
fn exceeds(v: i64, t: &Exact) -> bool {
    i128::from(v) * t.den > t.num
}

fn cmp_exact(a: &Exact, b: &Exact) -> Ordering {
    (a.num * b.den).cmp(&(b.num * a.den))
}

/// The straggler threshold: given, or max(floor, pct × median step span,
/// median + k·MAD of the step delays).
fn threshold(steps: &[StepRow], cfg: &RanksConfig) -> Threshold {
    let spec = &cfg.spec;
    let mut delays: Vec<i64> = steps
        .iter()
        .filter(|s| s.straggler.is_some())
        .map(|s| s.delay_ns)
        .collect();
    delays.sort_unstable();
    let mut spans: Vec<i64> = steps
        .iter()
        .flat_map(|s| s.per_rank.iter().filter_map(|r| r.gpu_span_ns))
        .collect();
    spans.sort_unstable();
    let median = (!delays.is_empty()).then(|| median_sorted(&delays));
    let mad = median.map(|m| {
        // |d − m| with m = num/den: exact as |d·den − num| / den.
        let mut dev: Vec<i128> = delays
            .iter()
            .map(|&d| (i128::from(d) * m.den - m.num).abs())
            .collect();
        dev.sort_unstable();
        let n = dev.len();
        let (num, den) = match n % 2 {
            1 => (dev[n / 2], m.den),
            _ => (dev[n / 2 - 1] + dev[n / 2], m.den * 2),
        };
        Exact { num, den }
    });
    let span_median = (!spans.is_empty()).then(|| median_sorted(&spans));
    let base = Threshold {
        ns: Exact::int(0),
        rule: String::new(),
        median_delay_ns: median,
        mad_delay_ns: mad,
        median_step_span_ns: span_median,
        mad_k: spec.mad_k,
        floor_us: spec.floor_us,
        floor_step_pct: spec.floor_step_pct,
    };
    let us = |v: u64| Exact::int(i64::try_from(v.saturating_mul(1000)).unwrap_or(i64::MAX));
    if let Some(t) = spec.threshold_us {
        return Threshold {
            ns: us(t),
            rule: "fixed".into(),
            ..base
        };
    }
    let floor = us(spec.floor_us);
    let mut cands = vec![("floor", floor)];
    if let Some(s) = span_median {
        cands.push((
            "step",
            Exact {
                num: s.num * i128::from(spec.floor_step_pct),
                den: s.den * 100,
            },
        ));
    }
    if let (Some(m), Some(d)) = (median, mad) {
        // m + k·d over the common denominator m.den · d.den.
        cands.push((
            "mad",
            Exact {
                num: m.num * d.den + i128::from(spec.mad_k) * d.num * m.den,
                den: m.den * d.den,
            },
        ));
    }
    let (rule, ns) = cands
        .into_iter()
        .max_by(|a, b| cmp_exact(&a.1, &b.1))
        .unwrap_or(("floor", floor));
    Threshold {
        ns,
        rule: rule.into(),
        ..base
    }
}

/// The run's completion tokens: the first rank's that knows them (vLLM's
/// TP ranks generate the same tokens); a note when ranks disagree.
fn tokens(traces: &[&RankTrace], label: &str, notes: &mut Vec<String>) -> Option<u64> {
    let known: Vec<u64> = traces.iter().filter_map(|t| t.completion_tokens).collect();
    if known.windows(2).any(|w| w[0] != w[1]) {
        notes.push(format!(
            "{label}: the ranks' run information disagrees on the completion tokens ({known:?}): the lowest rank's is taken"
        ));
    }
    known.first().copied()
}

fn rank_rows(
    group: &Group,
    traces: &[&RankTrace],
    steps: &[StepRow],
    tokens: Option<u64>,
) -> Vec<RankRow> {
    group
        .members
        .iter()
        .zip(traces.iter().zip(&group.identities))
        .enumerate()
        .map(|(r, (&(rank, _), (t, id)))| rank_row(r, rank, t, id, steps, tokens))
        .collect()
}

fn rank_row(
    r: usize,
    rank: u32,
    t: &RankTrace,
    id: &Identity,
    steps: &[StepRow],
    tokens: Option<u64>,
) -> RankRow {
    let wait = steps
        .iter()
        .map(|s| s.per_rank[r].wait_ns)
        .fold(0i64, i64::saturating_add);
    let span = steps
        .iter()
        .filter_map(|s| s.per_rank[r].gpu_span_ns)
        .fold(0i64, i64::saturating_add);
    let mine = steps
        .iter()
        .filter(|s| s.flagged && s.straggler == Some(rank));
    RankRow {
        rank,
        path: t.path.clone(),
        rank_source: id.source,
        complete: t.complete,
        error: t.error.clone(),
        decode_steps: t.decode.len() as u64,
        boundary_steps: t.boundary.len() as u64,
        collectives: steps.iter().map(|s| s.per_rank[r].collectives).sum(),
        collectives_matched: steps.iter().map(|s| s.collectives).sum(),
        collectives_outside_steps: t.collectives_outside_steps,
        wait_ns: wait,
        gpu_span_ns: span,
        wait_per_token_ms: tokens.filter(|&n| n > 0).map(|n| {
            Exact {
                num: wait.into(),
                den: n.into(),
            }
            .ms()
        }),
        wait_share: (span > 0).then(|| wait as f64 / span as f64),
        straggler_steps: mine.clone().count() as u64,
        imposed_ns: mine.map(|s| s.delay_ns).fold(0i64, i64::saturating_add),
    }
}
