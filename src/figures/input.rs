//! The figures' input, built once from the analysis results for `plot`
//! and `batch` alike: labels ([`crate::runinfo::label`], made distinct),
//! modes, workload groups, chain-function medians and comparisons.

use super::{FunctionMedian, PlotInput, PlotTrace};
use crate::analyses::hierarchy::{Hierarchy, TraceHierarchy};
use crate::analyses::hierarchy::{HierarchyOptions, OptionsError, DEFAULT_PLOT_CHAINS};
use crate::analyses::kernels::Kernels;
use crate::analyses::kernels::KernelsSpec;
use crate::analyses::pair::PairSpec;
use crate::analyses::pair::{self, Comparison, Pair, TracePairs};
use crate::analysis::{Plan, Results};
use crate::contexts::Selector;
use crate::runinfo::{self, Given, Mode, RunInfo, Source};
use crate::summary::SummaryError;
use crate::trace::ReadOptions;
use std::path::Path;

/// The one pass that feeds the paper's figures (`plot`): the correlation
/// ledger (`kernels`), pairing (spans by correlation where a step has no
/// GPU annotation) and figure 4's chains (`chains` empty: the defaults,
/// [`DEFAULT_PLOT_CHAINS`]).
pub fn plan(
    selector: Selector,
    read: ReadOptions,
    chains: &[String],
) -> Result<Plan, OptionsError> {
    let default: Vec<String>;
    let chains = if chains.is_empty() {
        default = DEFAULT_PLOT_CHAINS.iter().map(|s| s.to_string()).collect();
        &default[..]
    } else {
        chains
    };
    let hopts = HierarchyOptions::new(chains, &[], false, 0, selector.clone())?;
    Ok(Plan::new(selector)
        .reading(read)
        .with(KernelsSpec::default())
        .with(PairSpec::default())
        .with(hopts))
}

/// One analysed trace, as the figures need it.
#[derive(Debug, Clone)]
pub struct Measured<'a> {
    pub pairs: TracePairs,
    pub hierarchy: Option<&'a TraceHierarchy>,
    /// GPU work by launch correlation (tokens already set).
    pub kernels: Option<crate::analyses::kernels::TraceKernels>,
    pub run: RunInfo,
}

impl<'a> Measured<'a> {
    /// A trace's figures as the figures need them, if it has step contexts
    /// (`pair`'s figures; tokens already set).
    pub fn of(results: &'a Results, run: &RunInfo) -> Option<Measured<'a>> {
        Some(Measured {
            pairs: results.get::<Pair>()?.clone(),
            hierarchy: results.get::<Hierarchy>(),
            kernels: results.get::<Kernels>().cloned(),
            run: run.clone(),
        })
    }

    /// A trace read by [`plan`], its run information resolved from `given`
    /// and the summary beside `path`, tokens set on pairing and kernels.
    /// `Ok(None)` when the plan had no pairing.
    pub fn resolve(
        results: &'a Results,
        path: &Path,
        given: &Given,
    ) -> Result<Option<Measured<'a>>, SummaryError> {
        let Some(pairs) = results.get::<Pair>() else {
            return Ok(None);
        };
        let mut pairs = pairs.clone();
        let run = RunInfo::for_trace(path, given, &pairs.step_names)?;
        let t = run.tokens.as_ref();
        let (tokens, source) = (t.map(|t| t.value), t.map(|t| t.source.describe()));
        pairs.set_tokens(tokens, source.clone());
        let mut kernels = results.get::<Kernels>().cloned();
        if let Some(k) = kernels.as_mut() {
            k.set_tokens(tokens, source);
        }
        Ok(Some(Measured {
            pairs,
            hierarchy: results.get::<Hierarchy>(),
            kernels,
            run,
        }))
    }
}

/// One trace of a campaign, as `batch` gives it to the figures.
#[derive(Debug, Clone, Copy)]
pub struct CampaignTrace<'a> {
    /// Read without error: only such traces are drawn.
    pub ok: bool,
    pub results: &'a Results,
    pub run: &'a RunInfo,
}

/// How traces are grouped and compared.
#[derive(Debug, Clone)]
pub enum Pairing {
    /// Groups and comparisons made already (`batch`: AR against each
    /// candidate of a workload, rank by rank): (workload, comparison).
    Given(Vec<(String, Comparison)>),
    /// When every trace has a mode and a workload (not guessed from its
    /// directory), traces are grouped by workload and the first AR trace of
    /// each is compared with its first other trace; otherwise consecutive
    /// traces pair up as baseline, candidate (modes by position where
    /// unknown).
    Infer,
}

/// The figures' medians from a hierarchy result (each function once, in
/// chain order).
pub fn function_medians(h: &TraceHierarchy) -> Vec<FunctionMedian> {
    let mut out: Vec<FunctionMedian> = Vec::new();
    for f in h.chains.iter().flat_map(|c| &c.functions) {
        if out.iter().any(|o| o.name == f.name) {
            continue;
        }
        out.push(FunctionMedian {
            name: f.name.clone(),
            median_ms: f.median_ms,
            calls: f.outermost_calls,
        });
    }
    out
}

impl PlotInput {
    /// The figures' input of a campaign (`batch`): every trace read without
    /// error that has step contexts, grouped and compared as batch matched
    /// them — `matches` are (workload, baseline, candidate), indices into
    /// `traces`.
    pub fn from_campaign(traces: &[CampaignTrace<'_>], matches: &[(String, usize, usize)]) -> Self {
        let pairs = |i: usize| traces.get(i)?.results.get::<Pair>();
        let comparisons = matches
            .iter()
            .filter_map(|(w, b, c)| Some((w.clone(), pair::compare(pairs(*b)?, pairs(*c)?))))
            .collect();
        let measured = traces
            .iter()
            .filter(|t| t.ok)
            .filter_map(|t| Measured::of(t.results, t.run))
            .collect();
        PlotInput::build(measured, Pairing::Given(comparisons))
    }

    /// Builds the figures' input from measured traces.
    pub fn build(measured: Vec<Measured<'_>>, pairing: Pairing) -> PlotInput {
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
                    label: runinfo::label(&m.pairs.path, mode.as_deref(), workload.as_deref()),
                    mode,
                    workload,
                    functions: m.hierarchy.map(function_medians).unwrap_or_default(),
                    pairs: m.pairs,
                    kernels: m.kernels,
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
fn by_workload(traces: &[PlotTrace]) -> Vec<(String, Comparison)> {
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
            traces.iter().find(|t| {
                t.workload.as_deref() == Some(w.as_str())
                    && (Mode::of_opt(t.mode.as_deref()) == Mode::Ar) == ar
            })
        };
        if let (Some(b), Some(c)) = (of(true), of(false)) {
            out.push((w.clone(), pair::compare(&b.pairs, &c.pairs)));
        }
    }
    out
}

/// Consecutive traces as baseline, candidate.
fn consecutive(traces: &[PlotTrace]) -> Vec<(String, Comparison)> {
    let mut out = Vec::new();
    for (k, ch) in traces.chunks(2).enumerate() {
        if let [b, c] = ch {
            let name = if traces.len() > 2 {
                format!("pair {}", k + 1)
            } else {
                format!("{} vs {}", b.label, c.label)
            };
            out.push((name, pair::compare(&b.pairs, &c.pairs)));
        }
    }
    out
}
