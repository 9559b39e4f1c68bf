//! The comparison of a baseline's and a candidate's per-name tables:
//! per kernel, per family, graphs, dominant kernels and the summary line
//! whose parts add up to the total exactly.
//!
//! Exactness: with N_b, N_c the two sides' normalisers (completion tokens,
//! else contexts), every per-token difference is an integer number of
//! units u = 1/(N_b·N_c) ns: Δ_k = T_c·N_b − T_b·N_c. The summary's part
//! (a) of a common kernel, (c_c/N_c − c_b/N_b) · T_b/c_b, is rounded (half
//! to even) to a whole u; part (b) is the rest of Δ_k, so a + b + c = Δ
//! exactly, and (a) is within u/2 of its rational value.

use super::{NameRow, TraceDiff};
use crate::stats::Exact;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// One side's totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub path: String,
    pub context: String,
    pub contexts: u64,
    pub contexts_with_gpu_work: u64,
    pub completion_tokens: Option<u64>,
    pub tokens_source: Option<String>,
    /// What the per-token figures divide by (tokens, or contexts).
    pub normaliser: u64,
    /// Kernel activities in scope (memcpys and memsets not counted).
    pub kernels: u64,
    pub kernels_per_token: Option<f64>,
    /// Every GPU activity in scope: kernels, memcpys and memsets (what
    /// `gpu_time_ns` sums).
    pub activities: u64,
    pub activities_per_token: Option<f64>,
    pub gpu_time_ms: f64,
    pub gpu_time_per_token_ms: Option<f64>,
    pub gpu_time_ns: i128,
    pub graph_replays: u64,
    pub complete: bool,
    pub error: Option<String>,
}

/// One side's figures of a kernel name or family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub calls: u64,
    pub calls_per_token: Option<f64>,
    pub time_ms: f64,
    pub time_per_token_ms: Option<f64>,
    /// Share of the side's Σ time, %.
    pub share_pct: Option<f64>,
    /// Median duration, µs (kernel rows; null when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_us: Option<f64>,
    pub time_ns: i128,
}

/// One kernel name (or memcpy/memset kind) on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelDiff {
    pub name: String,
    pub kind: String,
    pub family: String,
    /// `common`, `added` (candidate only) or `removed` (baseline only).
    pub status: String,
    pub baseline: Figures,
    pub candidate: Figures,
    pub delta_calls_per_token: Option<f64>,
    pub delta_time_per_token_ms: Option<f64>,
    /// Candidate time per token / baseline time per token.
    pub ratio: Option<f64>,
}

/// One family on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FamilyDiff {
    pub family: String,
    pub kernels: u64,
    pub baseline: Figures,
    pub candidate: Figures,
    pub delta_time_per_token_ms: Option<f64>,
}

/// A replay signature present on one side only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OneSided {
    pub kernels: u64,
    pub replays: u64,
    pub replays_per_token: Option<f64>,
    pub first: Option<String>,
    pub last: Option<String>,
}

/// One side's graph figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphSide {
    pub replays: u64,
    pub replays_per_token: Option<f64>,
    pub signatures: u64,
    /// Σ activities of the replays / replays.
    pub kernels_per_replay: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Graphs {
    pub baseline: GraphSide,
    pub candidate: GraphSide,
    pub only_baseline: Vec<OneSided>,
    pub only_candidate: Vec<OneSided>,
}

/// A side's top kernel by time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dominant {
    pub name: String,
    pub family: String,
    pub calls: u64,
    pub median_us: f64,
    pub time_per_token_ms: Option<f64>,
}

/// The per-token change split in three (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub total_delta_ms_per_token: Option<f64>,
    /// (a) Σ over common kernels of (c_c/N_c − c_b/N_b) · T_b/c_b.
    pub call_count_change_ms_per_token: Option<f64>,
    /// (b) Σ over common kernels of c_c/N_c · (T_c/c_c − T_b/c_b).
    pub duration_change_ms_per_token: Option<f64>,
    /// (c) Σ added T_c/N_c − Σ removed T_b/N_b.
    pub added_minus_removed_ms_per_token: Option<f64>,
    pub added_ms_per_token: Option<f64>,
    pub removed_ms_per_token: Option<f64>,
    pub common: u64,
    pub added: u64,
    pub removed: u64,
    /// The exact parts: integers of `unit_ns` = 1/`denominator` ns.
    pub denominator: i128,
    pub total_units: i128,
    pub call_count_units: i128,
    pub duration_units: i128,
    pub added_units: i128,
    pub removed_units: i128,
    pub arithmetic: String,
    pub text: String,
}

/// Baseline (first) against candidate (second).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub baseline: Side,
    pub candidate: Side,
    pub scope: String,
    /// `token` (completion tokens of both sides), `context` (tokens of a
    /// side unknown: per selected context instead) or `none`.
    pub normalisation: String,
    /// Every name, by |Δ time per token| descending.
    pub kernels: Vec<KernelDiff>,
    pub families: Vec<FamilyDiff>,
    pub graphs: Graphs,
    pub dominant: DominantPair,
    pub summary: Summary,
    pub family_table: Vec<super::FamilyPattern>,
    pub top: usize,
    /// Inside the graphs (issue 57): graph GPU time per token of each
    /// captured op (subsystem, launcher op at capture time) on either
    /// side, by |Δ| descending; empty when neither side has attributed
    /// replays in scope.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captured_ops: Vec<CapturedOpDiff>,
    pub notes: Vec<String>,
}

/// One captured op's graph GPU time on both sides (`diff`, issue 57).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapturedOpDiff {
    /// `decoder` (the target model's graphs), `speculator` (the drafter's).
    pub subsystem: String,
    /// The launcher op at capture time (`aten::mm`, …).
    pub op: String,
    pub baseline_activities: u64,
    pub candidate_activities: u64,
    pub baseline_gpu_ns: i64,
    pub candidate_gpu_ns: i64,
    pub baseline_ms_per_token: Option<f64>,
    pub candidate_ms_per_token: Option<f64>,
    /// Candidate − baseline per token, from the exact difference.
    pub delta_ms_per_token: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DominantPair {
    pub baseline: Option<Dominant>,
    pub candidate: Option<Dominant>,
}

/// Rounds num/den (den > 0) to the nearest integer, halves to even.
fn round_div(num: i128, den: i128) -> i128 {
    let q = num.div_euclid(den);
    let r = num.rem_euclid(den);
    match (2 * r).cmp(&den) {
        std::cmp::Ordering::Less => q,
        std::cmp::Ordering::Greater => q + 1,
        std::cmp::Ordering::Equal => q + (q & 1),
    }
}

fn ms(num: i128, den: i128) -> f64 {
    Exact { num, den }.ms()
}

/// Per-token helpers of one comparison.
struct Norm {
    nb: i128,
    nc: i128,
    ok: bool,
}

impl Norm {
    fn per(&self, v: i128, n: i128) -> Option<f64> {
        self.ok.then(|| ms(v, n))
    }
    fn count(&self, v: u64, n: i128) -> Option<f64> {
        self.ok.then(|| v as f64 / n as f64)
    }
    /// Δ in units: per-token candidate − baseline, × nb·nc.
    fn units_ms(&self, units: i128) -> Option<f64> {
        self.ok.then(|| ms(units, self.nb * self.nc))
    }
}

fn figures(row: Option<&NameRow>, total: i128, n: i128, norm: &Norm) -> Figures {
    let (calls, t) = row.map_or((0, 0), |r| (r.calls, r.total_ns));
    Figures {
        calls,
        calls_per_token: norm.count(calls, n),
        time_ms: ms(t, 1),
        time_per_token_ms: norm.per(t, n),
        share_pct: (total > 0).then(|| (t * 100) as f64 / total as f64),
        median_us: row.map(|r| r.median_ns / 1e3),
        time_ns: t,
    }
}

fn side(t: &TraceDiff, n: i128, norm: &Norm) -> Side {
    Side {
        path: t.path.clone(),
        context: t.context.clone(),
        contexts: t.contexts,
        contexts_with_gpu_work: t.contexts_with_gpu_work,
        completion_tokens: t.completion_tokens,
        tokens_source: t.tokens_source.clone(),
        normaliser: n as u64,
        kernels: t.kernels,
        kernels_per_token: norm.count(t.kernels, n),
        activities: t.activities,
        activities_per_token: norm.count(t.activities, n),
        gpu_time_ms: ms(t.total_ns, 1),
        gpu_time_per_token_ms: norm.per(t.total_ns, n),
        gpu_time_ns: t.total_ns,
        graph_replays: t.graph_replays,
        complete: t.complete,
        error: t.error.clone(),
    }
}

/// The three parts of the per-token change, in units (module docs), and
/// the name counts behind them.
#[derive(Default)]
struct Parts {
    /// (a) call counts of common kernels at the baseline's mean duration.
    calls: i128,
    /// (b) durations of common kernels at the candidate's calls.
    durations: i128,
    /// (c) added names' time, and removed names' time.
    added: i128,
    removed: i128,
    common_n: u64,
    added_n: u64,
    removed_n: u64,
}

/// Compares the baseline's table with the candidate's.
pub fn compare(b: &TraceDiff, c: &TraceDiff) -> Comparison {
    let mut notes = Vec::new();
    let (normalisation, nb, nc) = normalisation(b, c, &mut notes);
    let norm = Norm {
        nb: i128::from(nb),
        nc: i128::from(nc),
        ok: true,
    };
    let (kernels, parts, names) = kernel_rows(b, c, &norm);
    let families = families(b, c, &norm, &kernels);
    side_notes(b, c, &parts, names, &mut notes);
    let per = match normalisation {
        "token" => "token",
        "context" => "context",
        _ => "trace",
    };
    let total_units = c.total_ns * norm.nb - b.total_ns * norm.nc;
    debug_assert_eq!(
        parts.calls + parts.durations + parts.added - parts.removed,
        total_units
    );
    Comparison {
        baseline: side(b, norm.nb, &norm),
        candidate: side(c, norm.nc, &norm),
        scope: b.scope.clone(),
        normalisation: normalisation.into(),
        kernels,
        families,
        graphs: graphs(b, c, &norm),
        dominant: DominantPair {
            baseline: dominant(b, norm.nb, &norm),
            candidate: dominant(c, norm.nc, &norm),
        },
        summary: summary(&parts, total_units, per, &norm),
        family_table: b.family_table.clone(),
        top: b.top,
        captured_ops: captured_ops(b, c, &norm),
        notes,
    }
}

/// Per captured op (a split row `by` = `op` of either side's
/// `inside_graphs`), both sides' graph GPU time and the per-token change,
/// exact in units of 1/(N_b·N_c) ns before the one conversion to ms.
fn captured_ops(b: &TraceDiff, c: &TraceDiff, norm: &Norm) -> Vec<CapturedOpDiff> {
    let ops = |t: &TraceDiff| -> BTreeMap<(String, String), (u64, i64)> {
        t.inside_graphs
            .iter()
            .flat_map(|g| &g.split)
            .filter(|r| r.by == "op")
            .map(|r| {
                (
                    (r.subsystem.clone(), r.name.clone()),
                    (r.activities, r.gpu_ns),
                )
            })
            .collect()
    };
    let (ob, oc) = (ops(b), ops(c));
    let mut keys: Vec<&(String, String)> = ob.keys().chain(oc.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut rows: Vec<(i128, CapturedOpDiff)> = keys
        .into_iter()
        .map(|k| {
            let (ab, nsb) = ob.get(k).copied().unwrap_or((0, 0));
            let (ac, nsc) = oc.get(k).copied().unwrap_or((0, 0));
            let units = i128::from(nsc) * norm.nb - i128::from(nsb) * norm.nc;
            let row = CapturedOpDiff {
                subsystem: k.0.clone(),
                op: k.1.clone(),
                baseline_activities: ab,
                candidate_activities: ac,
                baseline_gpu_ns: nsb,
                candidate_gpu_ns: nsc,
                baseline_ms_per_token: norm.per(i128::from(nsb), norm.nb),
                candidate_ms_per_token: norm.per(i128::from(nsc), norm.nc),
                delta_ms_per_token: norm.units_ms(units),
            };
            (units, row)
        })
        .collect();
    rows.sort_by(|x, y| {
        y.0.abs()
            .cmp(&x.0.abs())
            .then_with(|| (&x.1.subsystem, &x.1.op).cmp(&(&y.1.subsystem, &y.1.op)))
    });
    rows.into_iter().map(|r| r.1).collect()
}

/// What the per-token figures divide by: `("token", T_b, T_c)` when both
/// sides know their completion tokens, else `("context", …)` with the
/// selected contexts, else `("none", 1, 1)`; a note says which fallback.
fn normalisation(
    b: &TraceDiff,
    c: &TraceDiff,
    notes: &mut Vec<String>,
) -> (&'static str, u64, u64) {
    let tok = |t: &TraceDiff| t.completion_tokens.filter(|&n| n > 0);
    match (tok(b), tok(c)) {
        (Some(x), Some(y)) => ("token", x, y),
        _ if b.contexts > 0 && c.contexts > 0 => {
            notes.push(format!(
                "completion tokens unknown for {}: every per-token figure is per selected context instead ({} and {} contexts)",
                [b, c]
                    .iter()
                    .filter(|t| tok(t).is_none())
                    .map(|t| t.path.as_str())
                    .collect::<Vec<_>>()
                    .join(" and "),
                b.contexts,
                c.contexts
            ));
            ("context", b.contexts, c.contexts)
        }
        _ => {
            notes.push("completion tokens unknown and a side has no contexts: figures are per trace (not normalised)".into());
            ("none", 1, 1)
        }
    }
}

/// Every (kind, name) of either side as a row, by |Δ time per token|
/// descending (then name, kind), with the summary's parts summed over them
/// and the number of distinct names.
fn kernel_rows(b: &TraceDiff, c: &TraceDiff, norm: &Norm) -> (Vec<KernelDiff>, Parts, usize) {
    let key = |r: &NameRow| (r.kind.clone(), r.name.clone());
    let bmap: HashMap<(String, String), &NameRow> = b.names.iter().map(|r| (key(r), r)).collect();
    let cmap: HashMap<(String, String), &NameRow> = c.names.iter().map(|r| (key(r), r)).collect();
    let mut keys: Vec<(String, String)> = bmap.keys().chain(cmap.keys()).cloned().collect();
    keys.sort();
    keys.dedup();
    let mut parts = Parts::default();
    let mut rows: Vec<(i128, KernelDiff)> = keys
        .iter()
        .filter_map(|k| {
            let (rb, rc) = (bmap.get(k).copied(), cmap.get(k).copied());
            kernel_row(rb, rc, b, c, norm, &mut parts)
        })
        .collect();
    rows.sort_by(|x, y| {
        y.0.abs()
            .cmp(&x.0.abs())
            .then_with(|| x.1.name.cmp(&y.1.name))
            .then_with(|| x.1.kind.cmp(&y.1.kind))
    });
    let rows = rows.into_iter().map(|(_, k)| k).collect();
    (rows, parts, keys.len())
}

/// One name's row and its Δ in units (None only when neither side has it,
/// which the caller's keys rule out); adds its share to `parts`. A common
/// name's part (a) is rounded to a whole unit and (b) is the rest of its Δ.
fn kernel_row(
    rb: Option<&NameRow>,
    rc: Option<&NameRow>,
    b: &TraceDiff,
    c: &TraceDiff,
    norm: &Norm,
    parts: &mut Parts,
) -> Option<(i128, KernelDiff)> {
    let any = rb.or(rc)?;
    let (cb, tb) = rb.map_or((0, 0), |r| (i128::from(r.calls), r.total_ns));
    let (cc, tc) = rc.map_or((0, 0), |r| (i128::from(r.calls), r.total_ns));
    let delta = tc * norm.nb - tb * norm.nc;
    let status = match (rb, rc) {
        (Some(_), Some(_)) => {
            parts.common_n += 1;
            let a = round_div((cc * norm.nb - cb * norm.nc) * tb, cb);
            parts.calls += a;
            parts.durations += delta - a;
            "common"
        }
        (None, _) => {
            parts.added_n += 1;
            parts.added += tc * norm.nb;
            "added"
        }
        (_, None) => {
            parts.removed_n += 1;
            parts.removed += tb * norm.nc;
            "removed"
        }
    };
    let ratio = (tb > 0).then(|| (tc * norm.nb) as f64 / (tb * norm.nc) as f64);
    let (nb, nc) = (norm.nb as f64, norm.nc as f64);
    let row = KernelDiff {
        name: any.name.clone(),
        kind: any.kind.clone(),
        family: any.family.clone(),
        status: status.into(),
        baseline: figures(rb, b.total_ns, norm.nb, norm),
        candidate: figures(rc, c.total_ns, norm.nc, norm),
        delta_calls_per_token: Some(cc as f64 / nc - cb as f64 / nb),
        delta_time_per_token_ms: norm.units_ms(delta),
        ratio,
    };
    Some((delta, row))
}

/// Notes on what makes the rows one-sided: no name in common, or a side
/// with no GPU work in scope.
fn side_notes(b: &TraceDiff, c: &TraceDiff, parts: &Parts, names: usize, notes: &mut Vec<String>) {
    if parts.common_n == 0 && names > 0 {
        notes.push(
            "the two sides run no kernel name in common: every row is added or removed".into(),
        );
    }
    for (t, other) in [(b, "added"), (c, "removed")] {
        if t.activities == 0 {
            notes.push(format!(
                "{}: no GPU work in the {} scope: its side is empty (every name of the other side is {other})",
                t.path, t.scope,
            ));
        }
    }
}

/// The summary line and its exact arithmetic, per `per` (token, context
/// or trace).
fn summary(p: &Parts, total_units: i128, per: &str, norm: &Norm) -> Summary {
    let (nb, nc) = (norm.nb, norm.nc);
    let den = nb * nc;
    let u = |v: i128| norm.units_ms(v);
    let (a_units, b_units, added_u, removed_u) = (p.calls, p.durations, p.added, p.removed);
    let (common, added, removed) = (p.common_n, p.added_n, p.removed_n);
    Summary {
        total_delta_ms_per_token: u(total_units),
        call_count_change_ms_per_token: u(a_units),
        duration_change_ms_per_token: u(b_units),
        added_minus_removed_ms_per_token: u(added_u - removed_u),
        added_ms_per_token: u(added_u),
        removed_ms_per_token: u(removed_u),
        common,
        added,
        removed,
        denominator: den,
        total_units,
        call_count_units: a_units,
        duration_units: b_units,
        added_units: added_u,
        removed_units: removed_u,
        arithmetic: format!(
            "Δ per {per} = T_c/{nc} − T_b/{nb}; in units of 1/{den} ns: {total_units} = (a) {a_units} calls of common kernels at the baseline's mean duration + (b) {b_units} durations of common kernels at the candidate's calls + (c) {added_u} added − {removed_u} removed",
        ),
        text: format!(
            "GPU time per {per}: {:+.4} ms = {:+.4} ms (call counts of {common} common kernels) {:+.4} ms (their durations) {:+.4} ms ({added} added − {removed} removed kernels)",
            ms(total_units, den),
            ms(a_units, den),
            ms(b_units, den),
            ms(added_u - removed_u, den),
        ),
    }
}

/// A family's name, kernel count and (calls, ns) per side.
type FamilySums = (String, u64, [(u64, i128); 2]);

/// Per family (table order, user families first), the sums of its names.
fn families(b: &TraceDiff, c: &TraceDiff, norm: &Norm, kernels: &[KernelDiff]) -> Vec<FamilyDiff> {
    let order: Vec<&str> = b.family_table.iter().map(|f| f.family.as_str()).collect();
    let mut by: BTreeMap<usize, FamilySums> = BTreeMap::new();
    for k in kernels {
        let at = order
            .iter()
            .position(|f| *f == k.family)
            .unwrap_or(order.len());
        let e = by
            .entry(at)
            .or_insert_with(|| (k.family.clone(), 0, [(0, 0); 2]));
        e.1 += 1;
        e.2[0].0 += k.baseline.calls;
        e.2[0].1 += k.baseline.time_ns;
        e.2[1].0 += k.candidate.calls;
        e.2[1].1 += k.candidate.time_ns;
    }
    by.into_values()
        .map(|(family, n, [(cb, tb), (cc, tc)])| {
            let fig = |calls: u64, t: i128, total: i128, den: i128| Figures {
                calls,
                calls_per_token: norm.count(calls, den),
                time_ms: ms(t, 1),
                time_per_token_ms: norm.per(t, den),
                share_pct: (total > 0).then(|| (t * 100) as f64 / total as f64),
                median_us: None,
                time_ns: t,
            };
            FamilyDiff {
                family,
                kernels: n,
                baseline: fig(cb, tb, b.total_ns, norm.nb),
                candidate: fig(cc, tc, c.total_ns, norm.nc),
                delta_time_per_token_ms: norm.units_ms(tc * norm.nb - tb * norm.nc),
            }
        })
        .collect()
}

fn signature_names(t: &TraceDiff, s: &super::Signature) -> Vec<(String, String)> {
    s.names
        .iter()
        .map(|&i| {
            let r = &t.names[i as usize];
            (r.kind.clone(), r.name.clone())
        })
        .collect()
}

fn graph_side(t: &TraceDiff, n: i128, norm: &Norm) -> GraphSide {
    let acts: u64 = t
        .signatures
        .iter()
        .map(|s| s.replays * s.names.len() as u64)
        .sum();
    GraphSide {
        replays: t.graph_replays,
        replays_per_token: norm.count(t.graph_replays, n),
        signatures: t.signatures.len() as u64,
        kernels_per_replay: (t.graph_replays > 0).then(|| acts as f64 / t.graph_replays as f64),
    }
}

fn graphs(b: &TraceDiff, c: &TraceDiff, norm: &Norm) -> Graphs {
    let sigs = |t: &TraceDiff| -> Vec<Vec<(String, String)>> {
        t.signatures.iter().map(|s| signature_names(t, s)).collect()
    };
    let (sb, sc) = (sigs(b), sigs(c));
    let only =
        |t: &TraceDiff, mine: &[Vec<(String, String)>], other: &[Vec<(String, String)>], n| {
            t.signatures
                .iter()
                .zip(mine)
                .filter(|(_, names)| !other.contains(names))
                .map(|(s, names)| OneSided {
                    kernels: s.names.len() as u64,
                    replays: s.replays,
                    replays_per_token: norm.count(s.replays, n),
                    first: names.first().map(|x| x.1.clone()),
                    last: names.last().map(|x| x.1.clone()),
                })
                .collect()
        };
    Graphs {
        baseline: graph_side(b, norm.nb, norm),
        candidate: graph_side(c, norm.nc, norm),
        only_baseline: only(b, &sb, &sc, norm.nb),
        only_candidate: only(c, &sc, &sb, norm.nc),
    }
}

fn dominant(t: &TraceDiff, n: i128, norm: &Norm) -> Option<Dominant> {
    let top = t.names.iter().max_by(|x, y| {
        x.total_ns
            .cmp(&y.total_ns)
            .then_with(|| y.name.cmp(&x.name))
    })?;
    Some(Dominant {
        name: top.name.clone(),
        family: top.family.clone(),
        calls: top.calls,
        median_us: top.median_ns / 1e3,
        time_per_token_ms: norm.per(top.total_ns, n),
    })
}

#[cfg(test)]
mod tests {
    use super::round_div;

    #[test]
    fn rounding_is_half_to_even() {
        assert_eq!(round_div(5, 2), 2);
        assert_eq!(round_div(7, 2), 4);
        assert_eq!(round_div(-5, 2), -2);
        assert_eq!(round_div(-7, 3), -2);
        assert_eq!(round_div(10, 5), 2);
    }
}
