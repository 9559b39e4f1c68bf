//! The trace-level figures of `iterations` from its rows: sums over the
//! closed iterations, means per iteration, the repeating CUDA graph and its
//! cadence, the notes, and the per-token figures once the tokens are known.

use super::sweep::GraphAcc;
use super::{
    Graphs, IterationRow, PerIteration, PerToken, Phase, PhaseToken, Phases, Repeating, Sums,
    TraceIterations,
};
use crate::analysis::Finished;
use crate::ledger::Ledger;
use crate::rows::Rows;
use crate::stats::{median_sorted, Exact};
use std::cmp::Reverse;
use std::collections::BTreeMap;

/// Sums over the closed iterations and the per-iteration means.
pub(super) fn figures(trace: &Finished<'_>, rows: Rows<IterationRow>) -> TraceIterations {
    let mut s = Sums::default();
    let mut closed = 0u64;
    for r in &rows {
        s.context_span_ns += r.context_span_ns.unwrap_or(0);
        if !r.closed {
            continue;
        }
        closed += 1;
        s.wall_ns += r.wall_ns.unwrap_or(0);
        s.busy_ns += r.gpu_busy_ns;
        s.idle_ns += r.gpu_idle_ns.unwrap_or(0);
        s.kernels += i128::from(r.kernels);
        s.memcpys += i128::from(r.memcpys);
        s.memsets += i128::from(r.memsets);
        s.launches += i128::from(r.launches);
        s.graph_launches += i128::from(r.graph_launches);
        for p in Phase::ALL {
            let w = r.phases.get(p);
            s.phase_busy_ns[p as usize] += w.gpu_busy_ns;
            s.phase_kernels[p as usize] += i128::from(w.kernels);
            s.phase_launches[p as usize] += i128::from(w.launches);
        }
    }
    let c = i128::from(closed);
    let mean = |num: i128| (c > 0).then_some(Exact { num, den: c });
    let per_iteration = PerIteration {
        wall_ms: mean(s.wall_ns).map(Exact::ms),
        gpu_busy_ms: mean(s.busy_ns).map(Exact::ms),
        kernels: mean(s.kernels).map(Exact::ns),
        launches: mean(s.launches).map(Exact::ns),
        graph_launches: mean(s.graph_launches).map(Exact::ns),
        phases: Phases::default().map(|p, _: &()| PhaseToken {
            gpu_busy_ms: mean(s.phase_busy_ns[p as usize]).map(Exact::ms),
            kernels: mean(s.phase_kernels[p as usize]).map(Exact::ns),
            launches: mean(s.phase_launches[p as usize]).map(Exact::ns),
        }),
    };
    TraceIterations {
        path: trace.path.to_string(),
        context: trace.contexts.name.clone(),
        contexts: rows.len() as u64,
        iterations_closed: closed,
        completion_tokens: None,
        tokens_source: None,
        tokens_per_iteration: None,
        per_iteration,
        per_token: PerToken::default(),
        graphs: Graphs::default(),
        inside_graphs: None,
        notes: Vec::new(),
        complete: true,
        error: None,
        rows,
        sums: s,
        cadence_ns: Vec::new(),
    }
}

/// Numbers the graphs by first appearance, picks the repeating one and
/// its cadence.
pub(super) fn graph_figures(out: &mut TraceIterations, graphs: Vec<GraphAcc>, pick: Option<u64>) {
    let mut order: Vec<usize> = (0..graphs.len()).collect();
    order.sort_unstable_by_key(|&k| graphs[k].first);
    let mut number = vec![0u64; graphs.len()];
    for (n, &k) in order.iter().enumerate() {
        number[k] = n as u64;
    }
    // The graphs replayed in a closed iteration, by number.
    let mut per: BTreeMap<u64, GraphAcc> = graphs
        .into_iter()
        .zip(number)
        .filter(|(g, _)| g.replays > 0)
        .map(|(g, n)| (n, g))
        .collect();
    out.graphs.replays = per.values().map(|g| g.replays).sum();
    out.graphs.distinct = per.len() as u64;
    let chosen = match pick {
        Some(g) => per.contains_key(&g).then_some((g, "option".to_string())),
        None => per
            .iter()
            .max_by_key(|&(&n, g)| (g.iterations, g.total_ns, Reverse(n)))
            .map(|(&g, _)| {
                (
                    g,
                    "most closed iterations, then GPU time, then number".into(),
                )
            }),
    };
    let Some((g, why, acc)) = chosen.and_then(|(g, why)| per.remove(&g).map(|acc| (g, why, acc)))
    else {
        if let Some(g) = pick {
            out.notes
                .push(format!("graph {g} is not replayed in a closed iteration"));
        }
        return;
    };
    let mut starts = acc.starts;
    starts.sort_unstable();
    let mut gaps: Vec<i64> = starts
        .windows(2)
        .filter_map(|w| w[1].checked_sub(w[0]))
        .collect();
    gaps.sort_unstable();
    out.sums.repeating_replays = i128::from(acc.replays);
    out.cadence_ns.clone_from(&gaps);
    out.graphs.repeating = Some(Repeating {
        graph: g,
        iterations: acc.iterations,
        replays: acc.replays,
        replays_per_token: None,
        kernels_per_replay: acc.first_closed.map_or(0, |(_, k)| k),
        cadence_ms_median: (!gaps.is_empty()).then(|| median_sorted(&gaps).ms()),
        chosen_by: why,
    });
}

pub(super) fn notes(trace: &Finished<'_>, ledger: &Ledger, out: &TraceIterations) -> Vec<String> {
    let mut n = trace.meta.notes.clone();
    n.extend(out.notes.iter().cloned());
    let open = out.contexts - out.iterations_closed;
    if open > 0 {
        n.push(format!(
            "{open} iteration(s) have no following step annotation on their thread (open): reported, not in the means"
        ));
    }
    if out.contexts > 0 && out.iterations_closed == 0 {
        n.push("no closed iteration: per-iteration and per-token figures are empty".into());
    }
    if ledger.launch_calls() == 0 {
        n.push("no launch calls with a correlation: no GPU work can be attributed".into());
    }
    if out.graphs.replays == 0 {
        n.push("no CUDA-graph replay in a closed iteration: graph figures are null".into());
    }
    n
}

impl TraceIterations {
    /// Fills the per-token figures: mean over closed iterations × n / T.
    pub fn set_tokens(&mut self, tokens: Option<u64>, source: Option<String>) {
        self.completion_tokens = tokens;
        self.tokens_source = source;
        let s = &self.sums;
        let (n, c) = (
            i128::from(self.contexts),
            i128::from(self.iterations_closed),
        );
        let t = tokens.filter(|&t| t > 0).map(i128::from);
        self.tokens_per_iteration = t.filter(|_| n > 0).map(|t| Exact { num: t, den: n }.ns());
        let per = |x: i128| -> Option<Exact> {
            let den = c.checked_mul(t?)?;
            (den > 0).then_some(Exact {
                num: x.checked_mul(n)?,
                den,
            })
        };
        let ms = |x: i128| per(x).map(Exact::ms);
        let cnt = |x: i128| per(x).map(Exact::ns);
        self.per_token = PerToken {
            wall_ms: ms(s.wall_ns),
            gpu_busy_ms: ms(s.busy_ns),
            gpu_idle_ms: ms(s.idle_ns),
            kernels: cnt(s.kernels),
            memcpys: cnt(s.memcpys),
            memsets: cnt(s.memsets),
            launches: cnt(s.launches),
            graph_launches: cnt(s.graph_launches),
            phases: Phases::default().map(|p, _: &()| PhaseToken {
                gpu_busy_ms: ms(s.phase_busy_ns[p as usize]),
                kernels: cnt(s.phase_kernels[p as usize]),
                launches: cnt(s.phase_launches[p as usize]),
            }),
        };
        let any = self.graphs.replays > 0;
        self.graphs.replays_per_token = cnt(i128::from(self.graphs.replays)).filter(|_| any);
        let rr = s.repeating_replays;
        if let Some(r) = self.graphs.repeating.as_mut() {
            r.replays_per_token = cnt(rr);
        }
        if let Some(g) = self.inside_graphs.as_mut() {
            let scale = t.and_then(|t| Some((n, c.checked_mul(t)?)));
            crate::graphs::replay::per_token(&mut g.split, scale);
        }
    }

    /// An exact per-token figure: x × n / (closed × T).
    pub fn per_token_exact(&self, x: i128) -> Option<Exact> {
        let t = i128::from(self.completion_tokens.filter(|&t| t > 0)?);
        let den = i128::from(self.iterations_closed).checked_mul(t)?;
        (den > 0).then_some(Exact {
            num: x.checked_mul(i128::from(self.contexts))?,
            den,
        })
    }
}
