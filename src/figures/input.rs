//! The figures' input, built once from the traces' results for `plot` and
//! `batch` alike: labels ([`crate::runinfo::label`], made distinct),
//! modes, workload groups and comparisons. Each figure reads its own
//! analysis's figures out of a trace's [`Results`].

use super::{Compared, PlotInput, PlotTrace};
use crate::analysis::{Results, TraceResult};
use crate::campaign::Campaign;
use crate::runinfo::{self, Given, Mode, RunInfo, Source};
use crate::summary::SummaryError;
use std::path::Path;

/// One analysed trace, as the figures need it.
#[derive(Debug, Clone)]
pub struct Measured<'a> {
    /// The label its results are reported under.
    pub path: String,
    /// Its analyses' figures, tokens set ([`resolve`]).
    pub results: &'a Results,
    pub run: RunInfo,
}

/// A trace's run information, resolved from `given` and the summary beside
/// `path`, and its tokens set on every figure of `res` (`plot`: once per
/// trace, before its [`Measured`] borrows the results).
pub fn resolve(res: &mut TraceResult, path: &Path, given: &Given) -> Result<RunInfo, SummaryError> {
    let run = RunInfo::for_trace(path, given, &res.contexts.step_names)?;
    let t = run.tokens.as_ref();
    let source = t.map(|t| t.source.describe());
    res.results
        .set_tokens(t.map(|t| t.value), source.as_deref());
    Ok(run)
}

/// How traces are grouped and compared.
#[derive(Debug, Clone)]
pub enum Pairing {
    /// Comparisons made already (`batch`: AR against each candidate of a
    /// workload, rank by rank), indices into the measured traces.
    Given(Vec<Compared>),
    /// When every trace has a mode and a workload (not guessed from its
    /// directory), traces are grouped by workload and the first AR trace of
    /// each is compared with its first other trace; otherwise consecutive
    /// traces pair up as baseline, candidate (modes by position where
    /// unknown).
    Infer,
}

impl<'a> PlotInput<'a> {
    /// The figures' input of a campaign (`batch`): every trace read without
    /// error, grouped and compared as batch matched them.
    pub fn from_campaign(campaign: &Campaign<'a>) -> Self {
        let mut at = vec![None; campaign.traces.len()];
        let mut measured = Vec::new();
        for (i, t) in campaign.traces.iter().enumerate().filter(|(_, t)| t.ok) {
            at[i] = Some(measured.len());
            measured.push(Measured {
                path: t.path.to_string(),
                results: t.results,
                run: t.run.clone(),
            });
        }
        let comparisons = campaign
            .matches
            .iter()
            .filter_map(|m| {
                Some(Compared {
                    name: m.workload.clone(),
                    baseline: (*at.get(m.baseline)?)?,
                    candidate: (*at.get(m.candidate)?)?,
                })
            })
            .collect();
        PlotInput::build(measured, Pairing::Given(comparisons))
    }

    /// Builds the figures' input from measured traces.
    pub fn build(measured: Vec<Measured<'a>>, pairing: Pairing) -> PlotInput<'a> {
        let n = measured.len();
        let grouped = match pairing {
            Pairing::Given(_) => true,
            Pairing::Infer => measured.iter().all(|m| {
                m.run.mode.is_some()
                    && m.run
                        .workload
                        .as_ref()
                        .is_some_and(|w| w.source != Source::Directory)
            }),
        };
        let mut traces: Vec<PlotTrace> = measured
            .into_iter()
            .enumerate()
            .map(|(i, m)| {
                let mode = m.run.mode().map(str::to_string).or_else(|| {
                    // Consecutive pairs: baseline, candidate (an odd last trace has no role).
                    (!grouped && (i % 2 == 1 || i + 1 < n))
                        .then(|| if i % 2 == 0 { "baseline" } else { "candidate" }.to_string())
                });
                let workload = grouped.then(|| m.run.workload().map(str::to_string));
                let workload = workload.flatten();
                PlotTrace {
                    label: runinfo::label(&m.path, mode.as_deref(), workload.as_deref()),
                    mode,
                    workload,
                    path: m.path,
                    results: m.results,
                }
            })
            .collect();
        let mut labels: Vec<String> = traces.iter().map(|t| t.label.clone()).collect();
        runinfo::distinct(&mut labels);
        for (t, l) in traces.iter_mut().zip(labels) {
            t.label = l;
        }
        let comparisons = match pairing {
            Pairing::Given(c) => c,
            Pairing::Infer if grouped => by_workload(&traces),
            Pairing::Infer => consecutive(&traces),
        };
        PlotInput {
            traces,
            comparisons,
        }
    }
}

/// Per workload, its first AR trace against its first other trace.
fn by_workload(traces: &[PlotTrace]) -> Vec<Compared> {
    let mut workloads: Vec<String> = Vec::new();
    for t in traces {
        let w = t.workload.clone().unwrap_or_default();
        if !workloads.contains(&w) {
            workloads.push(w);
        }
    }
    let mut out = Vec::new();
    for w in workloads {
        let of = |ar: bool| {
            traces.iter().position(|t| {
                t.workload.as_deref() == Some(w.as_str())
                    && (Mode::of_opt(t.mode.as_deref()) == Mode::Ar) == ar
            })
        };
        if let (Some(baseline), Some(candidate)) = (of(true), of(false)) {
            out.push(Compared {
                name: w.clone(),
                baseline,
                candidate,
            });
        }
    }
    out
}

/// Consecutive traces as baseline, candidate.
fn consecutive(traces: &[PlotTrace]) -> Vec<Compared> {
    let mut out = Vec::new();
    for (k, ch) in traces.chunks(2).enumerate() {
        if let [b, c] = ch {
            let name = if traces.len() > 2 {
                format!("pair {}", k + 1)
            } else {
                format!("{} vs {}", b.label, c.label)
            };
            out.push(Compared {
                name,
                baseline: 2 * k,
                candidate: 2 * k + 1,
            });
        }
    }
    out
}
