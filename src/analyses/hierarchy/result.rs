//! `hierarchy`'s results: per chain its links and functions
//! ([`TraceHierarchy`]), the GPU work of a function's calls
//! ([`FunctionGpu`]), and the comparison of two traces ([`compare`]).

use super::*;

/// The GPU work a function's calls launched (with a kernels analysis in
/// the plan): for `proposer.propose`, the draft model's GPU cost.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionGpu {
    /// Outermost calls that launched GPU work.
    pub calls_with_gpu_work: u64,
    pub kernels: u64,
    /// kernels / outermost calls.
    pub kernels_per_call: Option<f64>,
    /// Median over the outermost calls of their GPU busy time.
    pub gpu_busy_median_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub gpu_busy_sum_ns: i128,
    /// Σ GPU busy of the outermost calls / completion tokens.
    pub gpu_busy_per_token_ms: Option<f64>,
    /// Outermost calls overlapping another partially (never written by
    /// PyTorch): a launch call in both is counted in the later one. Shown
    /// only when not 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub partially_overlapping_calls: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl TraceHierarchy {
    /// Adds GPU busy per token to every function with GPU work figures.
    pub fn set_tokens(&mut self, tokens: Option<u64>) {
        let t = tokens.filter(|&t| t > 0).map(i128::from);
        for f in self.chains.iter_mut().flat_map(|c| c.functions.iter_mut()) {
            if let Some(g) = &mut f.gpu {
                g.gpu_busy_per_token_ms = t.map(|den| {
                    Exact {
                        num: g.gpu_busy_sum_ns,
                        den,
                    }
                    .ms()
                });
            }
        }
    }
}

/// An uncontained child, for the report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Example {
    /// The event's full name.
    pub name: String,
    /// Start, µs as Kineto writes it.
    pub ts: String,
    /// Duration, µs.
    pub dur: String,
    /// "pid/tid".
    pub lane: String,
    /// Index in `traceEvents`.
    pub event_index: u64,
    /// Parent-element events sharing at least one instant with it
    /// ("name [ts +dur]", by start; at most [`MAX_OVERLAP_NAMES`]).
    pub overlapping: Vec<String>,
    pub overlapping_total: u64,
}

/// One link of a chain.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Link {
    pub parent: String,
    pub child: String,
    pub children: u64,
    pub contained: u64,
    pub uncontained: u64,
    pub parents_without_child: u64,
    /// `uncontained == 0`.
    pub holds: bool,
    pub examples: Vec<Example>,
}

/// Calls and inclusive durations of one element.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionStats {
    pub name: String,
    pub calls: u64,
    pub outermost_calls: u64,
    pub median_ms: Option<f64>,
    pub mean_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub min_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub total_ms: Option<f64>,
    /// outermost_calls / step contexts; null without contexts.
    pub calls_per_context: Option<f64>,
    /// GPU work by launch correlation (when the plan has the kernels
    /// analysis).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<FunctionGpu>,
    #[serde(default, skip_serializing_if = "crate::record::public")]
    pub exact: Option<ExactSummary>,
}

/// One chain's figures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ChainResult {
    pub chain: Vec<String>,
    pub links: Vec<Link>,
    pub functions: Vec<FunctionStats>,
}

impl ChainResult {
    pub fn holds(&self) -> bool {
        self.links.iter().all(|l| l.holds)
    }
}

/// The figures of one trace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceHierarchy {
    pub path: String,
    /// Selected step-context name, when there are contexts.
    pub context: Option<String>,
    pub contexts: Option<u64>,
    pub any_thread: bool,
    pub categories: Vec<String>,
    pub chains: Vec<ChainResult>,
    pub events: u64,
    pub meta: Meta,
    /// False when the file could not be read to its end (figures cover
    /// the events before the problem; `error` says what it was).
    pub complete: bool,
    pub error: Option<String>,
}

impl TraceHierarchy {
    /// Every link of every chain holds.
    pub fn holds(&self) -> bool {
        self.chains.iter().all(ChainResult::holds)
    }
}

/// Median ratio of one function, candidate / baseline.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FunctionRatio {
    pub name: String,
    pub median_ratio: Option<f64>,
    pub baseline_median_ms: Option<f64>,
    pub candidate_median_ms: Option<f64>,
}

/// Two traces: baseline (first, AR) against candidate (second, MTP).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Comparison {
    pub baseline: String,
    pub candidate: String,
    pub functions: Vec<FunctionRatio>,
}

/// Median ratios per function (each distinct element once, in chain order).
pub fn compare(base: &TraceHierarchy, cand: &TraceHierarchy) -> Comparison {
    let find = |t: &TraceHierarchy, name: &str| -> Option<FunctionStats> {
        t.chains
            .iter()
            .flat_map(|c| &c.functions)
            .find(|f| f.name == name)
            .cloned()
    };
    let mut functions: Vec<FunctionRatio> = Vec::new();
    for f in base.chains.iter().flat_map(|c| &c.functions) {
        if functions.iter().any(|r| r.name == f.name) {
            continue;
        }
        let c = find(cand, &f.name);
        let median =
            |s: &Option<FunctionStats>| s.as_ref().and_then(|s| s.exact.as_ref()).map(|e| e.median);
        functions.push(FunctionRatio {
            name: f.name.clone(),
            median_ratio: ratio(median(&c), f.exact.as_ref().map(|e| e.median)),
            baseline_median_ms: f.median_ms,
            candidate_median_ms: c.as_ref().and_then(|c| c.median_ms),
        });
    }
    Comparison {
        baseline: base.path.clone(),
        candidate: cand.path.clone(),
        functions,
    }
}
