//! The per-trace subcommands as library calls: [`pair`], [`kernels`] and
//! [`hierarchy`] read one or more traces in parallel and return the report
//! the subcommand prints, with the problems that make it exit 1 and the
//! notes it prints on stderr. The command line and the Python package are
//! both thin callers of these, so the figures cannot drift apart.
//!
//! ```
//! use std::path::PathBuf;
//! use torchtrace::api::{self, Document, PairOptions};
//!
//! let ar = PathBuf::from(
//!     "sample_traces/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz",
//! );
//! let out = api::pair(&[ar], &PairOptions::default()).unwrap();
//! assert!(out.problems.is_empty() && out.incomplete.is_none());
//! assert_eq!(out.report.traces[0].contexts, 64);
//! // The document `torchtrace pair -f json` prints.
//! let doc = out.report.json_value(false).unwrap();
//! assert_eq!(doc["traces"][0]["completion_tokens"], 68);
//! ```

use crate::analyses::hierarchy::HierarchyOptions;
use crate::analyses::kernels::attribution::LaunchScope;
use crate::analyses::kernels::{KernelsSpec, DEFAULT_TOP};
use crate::analyses::pair::GpuSpanSource;
use crate::analysis::{self, Plan, TraceResult};
use crate::contexts::Selector;
use crate::progress::FileProgress;
use crate::report::Format;
use crate::runinfo::{Given, RunInfo};
use crate::summary::SummaryError;
use crate::trace::TraceError;
use crate::views::json_with_rows;
use crate::{HierarchyReport, KernelsReport, PairReport};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Why a call produced no report at all. (A trace read only in part is
/// not one: its figures cover the events before the problem, and the
/// error is [`Outcome::incomplete`].)
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A trace could not be read at all (no event read intact).
    #[error(transparent)]
    Read(#[from] TraceError),
    /// A run summary (given, or beside a trace) could not be read.
    #[error(transparent)]
    Summary(#[from] SummaryError),
    /// The call itself is wrong: no trace, too many, more run information
    /// than traces.
    #[error("{0}")]
    Arguments(String),
    /// An analysis the plan asked for produced nothing: a bug.
    #[error("internal error: the {0} analysis did not run")]
    NotRun(&'static str),
    /// The report could not be turned into JSON.
    #[error("cannot write the JSON document: {0}")]
    Json(#[from] std::io::Error),
}

/// Options of [`pair`]: the flags of `torchtrace pair`.
#[derive(Debug, Clone, Default)]
pub struct PairOptions {
    /// Which `user_annotation`s are the step contexts.
    pub selector: Selector,
    /// What is known about each trace's run (tokens, summary), in trace
    /// order; missing entries are empty.
    pub given: Vec<Given>,
    /// Where a context's GPU span comes from.
    pub gpu_span: GpuSpanSource,
    /// No progress bars.
    pub quiet: bool,
}

/// Options of [`kernels`]: the flags of `torchtrace kernels`.
#[derive(Debug, Clone)]
pub struct KernelsOptions {
    pub selector: Selector,
    pub given: Vec<Given>,
    /// How many kernels to list per trace.
    pub top: usize,
    /// Which launch calls a context holds (`--launch-scope`).
    pub launch_scope: LaunchScope,
    pub quiet: bool,
}

impl Default for KernelsOptions {
    fn default() -> Self {
        KernelsOptions {
            selector: Selector::Auto,
            given: Vec::new(),
            top: DEFAULT_TOP,
            launch_scope: LaunchScope::Auto,
            quiet: false,
        }
    }
}

/// Options of [`hierarchy`]: the flags of `torchtrace hierarchy`.
#[derive(Debug, Clone)]
pub struct ChainsOptions {
    /// The chains, categories and step-context selector.
    pub chains: HierarchyOptions,
    pub given: Vec<Given>,
    /// Also join each function's calls to the GPU work they launched
    /// (off: containment and durations only, several times faster).
    pub gpu_work: bool,
    pub quiet: bool,
}

/// A message about one trace (its index in the call's paths); the text
/// names the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub trace: usize,
    pub text: String,
}

/// What a call found: the report, and what the subcommand says on stderr.
#[derive(Debug)]
pub struct Outcome<R> {
    pub report: R,
    /// What makes the subcommand exit 1 (a context missing, nothing
    /// measured, a containment link broken).
    pub problems: Vec<Message>,
    /// Informational notes (`torchtrace: note: …`).
    pub notes: Vec<Message>,
    /// The read error of the first trace not read to its end; the report
    /// covers the events before it (the subcommand exits 2 after printing).
    pub incomplete: Option<TraceError>,
}

impl<R> Outcome<R> {
    /// No problem found and every trace read to its end.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty() && self.incomplete.is_none()
    }
}

/// A report that `--format json` prints.
pub trait Document {
    /// The JSON text `--format json` prints, byte for byte (`per_context`:
    /// with every context's row, where the report has them).
    fn json_text(&self, per_context: bool) -> Result<String, ApiError>;
    /// The same document as a value (numbers exact: no text round trip).
    fn json_value(&self, per_context: bool) -> Result<serde_json::Value, ApiError>;
}

/// Writes the JSON document into a string.
fn render(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> Result<String, ApiError> {
    let mut buf = Vec::new();
    write(&mut buf)?;
    String::from_utf8(buf).map_err(|e| ApiError::Json(std::io::Error::other(e)))
}

fn to_value(v: &impl serde::Serialize) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(v).map_err(|e| ApiError::Json(std::io::Error::other(e)))
}

impl Document for PairReport {
    fn json_text(&self, per_context: bool) -> Result<String, ApiError> {
        render(|b| self.write(b, Format::Json, per_context))
    }
    fn json_value(&self, per_context: bool) -> Result<serde_json::Value, ApiError> {
        if per_context {
            Ok(json_with_rows(self, self.traces.iter().map(|t| &t.rows)))
        } else {
            to_value(self)
        }
    }
}

impl Document for KernelsReport {
    fn json_text(&self, per_context: bool) -> Result<String, ApiError> {
        render(|b| self.write(b, Format::Json, per_context))
    }
    fn json_value(&self, per_context: bool) -> Result<serde_json::Value, ApiError> {
        if per_context {
            Ok(json_with_rows(self, self.traces.iter().map(|t| &t.rows)))
        } else {
            to_value(self)
        }
    }
}

/// `hierarchy` has no per-context rows: `per_context` is ignored.
impl Document for HierarchyReport {
    fn json_text(&self, _per_context: bool) -> Result<String, ApiError> {
        render(|b| self.write(b, Format::Json))
    }
    fn json_value(&self, _per_context: bool) -> Result<serde_json::Value, ApiError> {
        to_value(self)
    }
}

/// Reads each trace once with `read`, in parallel, with a progress bar per
/// file unless `quiet`. A trace of which no event could be read is an
/// error (the first one, in path order); one read in part keeps its error
/// in [`TraceResult::error`].
pub fn read_all<F>(paths: &[PathBuf], quiet: bool, read: F) -> Result<Vec<TraceResult>, ApiError>
where
    F: Fn(&Path, Arc<AtomicU64>) -> TraceResult + Sync,
{
    use rayon::prelude::*;
    let results: Vec<TraceResult> = paths
        .par_iter()
        .map(|path| {
            let progress = FileProgress::new(path, quiet);
            let res = read(path, progress.counter());
            progress.finish();
            res
        })
        .collect();
    results
        .into_iter()
        .map(|mut r| match r.error.take() {
            Some(e) if r.events == 0 => Err(e.into()),
            e => {
                r.error = e;
                Ok(r)
            }
        })
        .collect()
}

/// Checks the number of traces (`at_most`: the subcommand's limit) and
/// returns one [`Given`] per trace.
fn given_per_trace(
    paths: &[PathBuf],
    given: &[Given],
    at_most: Option<usize>,
) -> Result<Vec<Given>, ApiError> {
    let n = paths.len();
    if n == 0 {
        return Err(ApiError::Arguments("no trace given".into()));
    }
    if let Some(max) = at_most.filter(|&m| n > m) {
        return Err(ApiError::Arguments(format!(
            "{n} traces given, at most {max} allowed"
        )));
    }
    if given.len() > n {
        return Err(ApiError::Arguments(format!(
            "run information given for {} traces, but there are {n}",
            given.len()
        )));
    }
    Ok((0..n)
        .map(|i| given.get(i).cloned().unwrap_or_default())
        .collect())
}

/// Takes each result's partial-read error out, keeping the first: the
/// outcome's [`Outcome::incomplete`].
fn first_incomplete(results: &mut [TraceResult]) -> Option<TraceError> {
    results.iter_mut().find_map(|r| r.error.take())
}

/// `torchtrace pair`: pairs each step's CPU annotation with its GPU
/// annotation(s) in one or two traces (baseline first) and compares them.
pub fn pair(paths: &[PathBuf], opts: &PairOptions) -> Result<Outcome<PairReport>, ApiError> {
    let given = given_per_trace(paths, &opts.given, Some(2))?;
    let mut results = read_all(paths, opts.quiet, |path, counter| {
        crate::analyses::pair::analyze_path(path, counter, &opts.selector, opts.gpu_span)
    })?;
    let incomplete = first_incomplete(&mut results);
    let (mut problems, mut notes, mut traces) = (Vec::new(), Vec::new(), Vec::new());
    for (i, ((res, path), given)) in results.into_iter().zip(paths).zip(&given).enumerate() {
        let mut r = res.pairs.ok_or(ApiError::NotRun("pair"))?;
        let run = RunInfo::for_trace(path, given, &r.step_names)?;
        let t = run.tokens.as_ref();
        r.set_tokens(t.map(|t| t.value), t.map(|t| t.source.describe()));
        let problem = match res.contexts.problem {
            Some(p) => Some(p.to_string()),
            // A trace cut short is reported as such, not as unmeasured.
            None if r.measured == 0 && r.complete => Some(format!(
                "{}: none of the {} contexts got a GPU span (--gpu-span {})",
                r.path,
                r.contexts,
                r.gpu_span_mode.as_str()
            )),
            None => None,
        };
        problems.extend(problem.map(|text| Message { trace: i, text }));
        notes.extend(trace_notes(i, &r.path, &r.notes));
        traces.push(r);
    }
    Ok(Outcome {
        report: PairReport::new(traces),
        problems,
        notes,
        incomplete,
    })
}

/// A trace's notes, each prefixed with its path.
fn trace_notes<'a>(
    trace: usize,
    path: &'a str,
    notes: &'a [String],
) -> impl Iterator<Item = Message> + 'a {
    notes.iter().map(move |n| Message {
        trace,
        text: format!("{path}: {n}"),
    })
}

/// `torchtrace kernels`: each step context's GPU work by launch
/// correlation in one or two traces (baseline first), top kernels and the
/// whole-trace timeline.
pub fn kernels(
    paths: &[PathBuf],
    opts: &KernelsOptions,
) -> Result<Outcome<KernelsReport>, ApiError> {
    let given = given_per_trace(paths, &opts.given, Some(2))?;
    let plan = Plan::new(opts.selector.clone()).with(KernelsSpec {
        top: opts.top,
        launch_scope: opts.launch_scope,
    });
    let mut results = read_all(paths, opts.quiet, |path, counter| {
        analysis::analyze_path(path, counter, &plan)
    })?;
    let incomplete = first_incomplete(&mut results);
    let (mut problems, mut notes, mut traces) = (Vec::new(), Vec::new(), Vec::new());
    for (i, ((res, path), given)) in results.into_iter().zip(paths).zip(&given).enumerate() {
        let mut k = res.kernels.ok_or(ApiError::NotRun("kernels"))?;
        let run = RunInfo::for_trace(path, given, &res.contexts.step_names)?;
        let t = run.tokens.as_ref();
        k.set_tokens(t.map(|t| t.value), t.map(|t| t.source.describe()));
        let problem = match &res.contexts.problem {
            Some(p) => Some(p.to_string()),
            None if k.contexts_with_gpu_work == 0 && k.complete => Some(format!(
                "{}: none of the {} contexts launched GPU work that the trace recorded",
                k.path, k.contexts
            )),
            None => None,
        };
        problems.extend(problem.map(|text| Message { trace: i, text }));
        notes.extend(trace_notes(i, &k.path, &k.notes));
        traces.push(k);
    }
    Ok(Outcome {
        report: KernelsReport::new(traces),
        problems,
        notes,
        incomplete,
    })
}

/// `torchtrace hierarchy`: verifies containment chains and reports the
/// inclusive durations (and GPU work) of their functions. Its problems
/// are the broken links; its notes the traces without step contexts.
pub fn hierarchy(
    paths: &[PathBuf],
    opts: &ChainsOptions,
) -> Result<Outcome<HierarchyReport>, ApiError> {
    let given = given_per_trace(paths, &opts.given, None)?;
    let mut plan = Plan::new(opts.chains.selector.clone());
    if opts.gpu_work {
        plan = plan.with(KernelsSpec::default());
    }
    let plan = plan.with(opts.chains.clone());
    let mut results = read_all(paths, opts.quiet, |path, counter| {
        analysis::analyze_path(path, counter, &plan)
    })?;
    let incomplete = first_incomplete(&mut results);
    let mut traces = Vec::new();
    for ((r, path), given) in results.into_iter().zip(paths).zip(&given) {
        let mut h = r.hierarchy.ok_or(ApiError::NotRun("hierarchy"))?;
        let run = RunInfo::for_trace(path, given, &r.contexts.step_names)?;
        h.set_tokens(run.tokens.map(|t| t.value));
        traces.push(h);
    }
    let report = HierarchyReport::new(traces);
    let mut notes = Vec::new();
    let mut problems = Vec::new();
    for (i, t) in report.traces.iter().enumerate() {
        if t.contexts.is_none() {
            let text = format!(
                "{}: no step contexts found: calls per context are null",
                t.path
            );
            notes.push(Message { trace: i, text });
        }
        for l in t.chains.iter().flat_map(|c| &c.links).filter(|l| !l.holds) {
            let text = format!(
                "{}: {} of {} {} not inside {}",
                t.path, l.uncontained, l.children, l.child, l.parent
            );
            problems.push(Message { trace: i, text });
        }
    }
    Ok(Outcome {
        report,
        problems,
        notes,
        incomplete,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HTA: &str = "tests/data/hta_step_based_trace.json.gz";

    #[test]
    fn wrong_calls_are_argument_errors() {
        let p = PathBuf::from(HTA);
        let three = [p.clone(), p.clone(), p.clone()];
        assert!(matches!(
            pair(&three, &PairOptions::default()),
            Err(ApiError::Arguments(_))
        ));
        assert!(matches!(
            kernels(&[], &KernelsOptions::default()),
            Err(ApiError::Arguments(_))
        ));
        let opts = PairOptions {
            given: vec![Given::default(); 2],
            ..Default::default()
        };
        assert!(matches!(pair(&[p], &opts), Err(ApiError::Arguments(_))));
    }

    #[test]
    fn unreadable_trace_is_a_read_error_naming_it() {
        let missing = PathBuf::from("tests/data/no such trace.json.gz");
        match pair(&[missing], &PairOptions::default()) {
            Err(ApiError::Read(e)) => {
                assert_eq!(e.path, "tests/data/no such trace.json.gz");
                assert_eq!((e.kind.offset(), e.kind.events_read()), (None, 0));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_context_is_a_problem_and_json_matches_the_text() {
        let opts = PairOptions {
            selector: Selector::Exact("no such step".into()),
            quiet: true,
            ..Default::default()
        };
        let out = pair(&[PathBuf::from(HTA)], &opts).unwrap();
        assert_eq!(out.problems.len(), 1);
        assert!(out.problems[0].text.contains("no such step"));
        let text: serde_json::Value =
            serde_json::from_str(&out.report.json_text(false).unwrap()).unwrap();
        assert_eq!(text, out.report.json_value(false).unwrap());
    }
}
