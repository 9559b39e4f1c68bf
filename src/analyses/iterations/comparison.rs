//! AR against MTP for `iterations`: the token progress ratio, the speedups
//! per token and the decomposition of P − S_busy into each phase's share.

use super::{Phase, TraceIterations};
use crate::stats::{ratio, Exact};
use serde::Serialize;

/// AR (baseline) against MTP (candidate).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Comparison {
    pub baseline: String,
    pub candidate: String,
    /// P_MTP / P_AR, P = completion tokens per iteration (T / n).
    pub token_progress_ratio: Option<f64>,
    /// Wall per token, AR / MTP.
    pub s_wall: Option<f64>,
    /// GPU busy per token, AR / MTP.
    pub s_busy: Option<f64>,
    /// GPU span per token of the step contexts' own launches, AR / MTP:
    /// Eq. 17 with spans by launch correlation (= `kernels`'
    /// `s_context_correlation`, `pair --gpu-span correlation`'s S_context).
    /// `pair`'s `s_context` takes a context's GPU annotations when it has
    /// them, so it is a different figure (issue 37) and keeps that name.
    pub s_context_correlation: Option<f64>,
    /// Mean wall per iteration, MTP / AR.
    pub iteration_cost_ratio: Option<f64>,
    /// Mean GPU busy per iteration, MTP / AR (C).
    pub busy_cost_ratio: Option<f64>,
    /// Per phase: how much of the token progress ratio its extra GPU busy
    /// per iteration gives back; the four add up to P − S_busy.
    pub decomposition: Vec<PhaseShare>,
}

/// One phase of the AR-vs-MTP decomposition.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PhaseShare {
    pub phase: String,
    pub baseline_busy_per_token_ms: Option<f64>,
    pub candidate_busy_per_token_ms: Option<f64>,
    pub baseline_busy_per_iteration_ms: Option<f64>,
    pub candidate_busy_per_iteration_ms: Option<f64>,
    /// Δ_p = (B_MTP,p − B_AR,p) / B_AR: its extra busy per iteration,
    /// relative to AR's whole busy per iteration.
    pub delta: Option<f64>,
    /// g_p = P · Δ_p / C.
    pub gives_back: Option<f64>,
}

/// Compares two traces (first = baseline/AR). Decomposition, exactly:
/// with P = P_MTP/P_AR, B = mean GPU busy per iteration and
/// C = B_MTP/B_AR = 1 + Σ_p Δ_p, S_busy = P / C, so
/// P − S_busy = P(C − 1)/C = Σ_p P·Δ_p/C = Σ_p g_p.
pub fn compare(a: &TraceIterations, m: &TraceIterations) -> Comparison {
    let tpi = |t: &TraceIterations| -> Option<Exact> {
        let tokens = i128::from(t.completion_tokens.filter(|&x| x > 0)?);
        (t.contexts > 0).then_some(Exact {
            num: tokens,
            den: i128::from(t.contexts),
        })
    };
    let mean = |t: &TraceIterations, x: i128| -> Option<Exact> {
        (t.iterations_closed > 0).then_some(Exact {
            num: x,
            den: i128::from(t.iterations_closed),
        })
    };
    let span = |t: &TraceIterations| -> Option<Exact> {
        let tokens = i128::from(t.completion_tokens.filter(|&x| x > 0)?);
        Some(Exact {
            num: t.sums.context_span_ns,
            den: tokens,
        })
    };
    let p = ratio(tpi(m), tpi(a));
    let ba = mean(a, a.sums.busy_ns);
    let bm = mean(m, m.sums.busy_ns);
    let c = ratio(bm, ba);
    let decomposition = Phase::ALL
        .iter()
        .map(|&ph| {
            let k = ph as usize;
            let pa = mean(a, a.sums.phase_busy_ns[k]);
            let pm = mean(m, m.sums.phase_busy_ns[k]);
            // Δ = (pm − pa) / ba, exact.
            let delta = (|| {
                let (pa, pm, ba) = (pa?, pm?, ba?);
                let num = pm.num.checked_mul(pa.den)? - pa.num.checked_mul(pm.den)?;
                let den = pm.den.checked_mul(pa.den)?;
                ratio(Some(Exact { num, den }), Some(ba))
            })();
            PhaseShare {
                phase: ph.as_str().into(),
                baseline_busy_per_token_ms: a.per_token.phases.get(ph).gpu_busy_ms,
                candidate_busy_per_token_ms: m.per_token.phases.get(ph).gpu_busy_ms,
                baseline_busy_per_iteration_ms: pa.map(Exact::ms),
                candidate_busy_per_iteration_ms: pm.map(Exact::ms),
                delta,
                gives_back: match (p, delta, c) {
                    (Some(p), Some(d), Some(c)) if c != 0.0 => Some(p * d / c),
                    _ => None,
                },
            }
        })
        .collect();
    Comparison {
        baseline: a.path.clone(),
        candidate: m.path.clone(),
        token_progress_ratio: p,
        s_wall: ratio(
            a.per_token_exact(a.sums.wall_ns),
            m.per_token_exact(m.sums.wall_ns),
        ),
        s_busy: ratio(
            a.per_token_exact(a.sums.busy_ns),
            m.per_token_exact(m.sums.busy_ns),
        ),
        s_context_correlation: ratio(span(a), span(m)),
        iteration_cost_ratio: ratio(mean(m, m.sums.wall_ns), mean(a, a.sums.wall_ns)),
        busy_cost_ratio: c,
        decomposition,
    }
}
