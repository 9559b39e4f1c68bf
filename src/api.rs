//! The per-trace subcommands as library calls: [`run`]`::<A>` reads one or
//! more traces in parallel and returns the report that analysis `A`'s
//! subcommand prints, with the problems that make it exit 1 and the notes
//! it prints on stderr; [`run_named`] does the same by the analysis's name
//! with its options as JSON. The command line and the Python package are
//! both thin callers of these, so the figures cannot drift apart. The
//! options are the analysis's own (`PairSpec`, `KernelsSpec`, …: defined
//! once, in its folder); [`Common`] holds what every subcommand takes.
//!
//! ```
//! use std::path::PathBuf;
//! use torchtrace::api::{self, Common, Document};
//! use torchtrace::analyses::pair::{Pair, PairSpec};
//!
//! let ar = PathBuf::from(
//!     "sample_traces/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz",
//! );
//! let out = api::run::<Pair>(&[ar], &Common::default(), &PairSpec::default()).unwrap();
//! assert!(out.problems.is_empty() && out.incomplete.is_none());
//! assert_eq!(out.report.traces[0].contexts, 64);
//! // The document `torchtrace pair -f json` prints.
//! let doc = out.report.json_value(false).unwrap();
//! assert_eq!(doc["traces"][0]["completion_tokens"], 68);
//! ```

use crate::analysis::{self, Analysis, Plan, TraceResult};
use crate::contexts::Selector;
use crate::progress::FileProgress;
use crate::report::Format;
use crate::runinfo::{Given, RunInfo};
use crate::summary::SummaryError;
use crate::trace::TraceError;
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

/// A report that a per-trace subcommand prints, in every format.
pub trait Document: Send {
    /// Writes the report in `format` (`per_context`: with every context's
    /// row, where the report has them).
    fn write_to(
        &self,
        out: &mut dyn std::io::Write,
        format: Format,
        per_context: bool,
    ) -> std::io::Result<()>;
    /// The JSON text `--format json` prints, byte for byte.
    fn json_text(&self, per_context: bool) -> Result<String, ApiError> {
        let mut buf = Vec::new();
        self.write_to(&mut buf, Format::Json, per_context)?;
        String::from_utf8(buf).map_err(|e| ApiError::Json(std::io::Error::other(e)))
    }
    /// The same document as a value (numbers exact: no text round trip).
    fn json_value(&self, per_context: bool) -> Result<serde_json::Value, ApiError>;
    /// `(path, complete, error)` of each trace, for the exit status.
    fn completeness(&self) -> Vec<(&str, bool, Option<&str>)>;
}

impl Document for Box<dyn Document> {
    fn write_to(
        &self,
        out: &mut dyn std::io::Write,
        format: Format,
        per_context: bool,
    ) -> std::io::Result<()> {
        (**self).write_to(out, format, per_context)
    }
    fn json_text(&self, per_context: bool) -> Result<String, ApiError> {
        (**self).json_text(per_context)
    }
    fn json_value(&self, per_context: bool) -> Result<serde_json::Value, ApiError> {
        (**self).json_value(per_context)
    }
    fn completeness(&self) -> Vec<(&str, bool, Option<&str>)> {
        (**self).completeness()
    }
}

/// A report's serde form as a JSON value (what every
/// [`Document::json_value`] without per-context rows returns).
pub fn json_of(report: &impl serde::Serialize) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(report).map_err(|e| ApiError::Json(std::io::Error::other(e)))
}

/// What a subcommand takes besides its analysis's own options.
#[derive(Debug, Clone, Default)]
pub struct Common {
    /// Which `user_annotation`s are the step contexts.
    pub selector: Selector,
    /// What is known about each trace's run (tokens, summary), in trace
    /// order; missing entries are empty.
    pub given: Vec<Given>,
    /// No progress bars.
    pub quiet: bool,
    /// How the traces are read (the limit on one event).
    pub read: crate::trace::ReadOptions,
}

/// What one trace's figures make the subcommand say.
#[derive(Debug, Default)]
pub struct Said {
    /// Each makes the subcommand exit 1.
    pub problems: Vec<String>,
    pub notes: Vec<String>,
}

/// An analysis that is also a per-trace subcommand (and a Python
/// function): its options as users write them, how many traces it takes,
/// what its figures make it say, and the report it prints. The generic
/// [`run`] does the rest, the same for every analysis. What it gives a
/// `batch` campaign is another trait, [`crate::campaign::InBatch`].
pub trait Command: Analysis {
    /// The options as users write them: flags, Python keywords, records.
    /// Defined once, with their defaults (`#[serde(default)]`) and docs.
    type Options: serde::Serialize
        + serde::de::DeserializeOwned
        + Default
        + Clone
        + std::fmt::Debug
        + Send
        + Sync;
    /// The report it prints.
    type Report: Document + 'static;
    /// At most this many traces (a baseline and a candidate, say).
    const MAX_TRACES: Option<usize> = None;
    /// Its problems are printed after the report, as notes (the report
    /// shows them already, e.g. hierarchy's broken links).
    const PROBLEMS_AFTER_REPORT: bool = false;
    /// A directory among the paths stands for the worker traces under it
    /// (`ranks` reads a run's directory).
    const TAKES_DIRECTORIES: bool = false;
    /// A trace of which nothing could be read is reported (with its
    /// error) rather than stopping the call: one rank's bad file must not
    /// hide the others.
    const KEEPS_UNREADABLE: bool = false;
    /// Its traces are read one after another instead of side by side. A
    /// read's peak memory is its ledger's build, at the end of its
    /// stream, and side by side same-sized traces reach it together: the
    /// peaks add up (`diff` of two 4.60 GB traces: 105 MB side by side,
    /// 59 in turn). Each read still gets every worker thread (`-j`). The
    /// cost: two reads take the time of two, not of one on many cores,
    /// and about 20 % more on two cores, where one read leaves its
    /// inflate thread half idle. A command over many traces (`batch`,
    /// `ranks`) reads them side by side: there, the throughput is the
    /// point.
    const READS_IN_TURN: bool = false;
    /// Checks the options and builds what the plan holds.
    fn configure(options: &Self::Options, selector: &Selector) -> Result<Self::Config, ApiError>;
    /// What one trace's figures (tokens set) make the subcommand say.
    fn said(output: &Self::Output, contexts: &crate::contexts::Contexts) -> Said;
    /// The report over every trace's figures, in trace order.
    fn report(outputs: Vec<Self::Output>, config: &Self::Config) -> Self::Report;
    /// What the report as a whole makes the subcommand say (an analysis
    /// over groups of traces, such as `ranks`' runs); messages carry the
    /// trace index `paths.len()`.
    fn report_said(_report: &Self::Report) -> Said {
        Said::default()
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
    read_all_keeping(paths, quiet, false, read)
}

/// [`read_all`]; with `keep_unreadable`, a trace of which nothing could
/// be read is returned with its error like one read in part.
pub fn read_all_keeping<F>(
    paths: &[PathBuf],
    quiet: bool,
    keep_unreadable: bool,
    read: F,
) -> Result<Vec<TraceResult>, ApiError>
where
    F: Fn(&Path, Arc<AtomicU64>) -> TraceResult + Sync,
{
    read_all_in(paths, quiet, (keep_unreadable, false), read)
}

/// [`read_all_keeping`], the traces read side by side or, `in_turn`, one
/// after another ([`Command::READS_IN_TURN`]).
fn read_all_in<F>(
    paths: &[PathBuf],
    quiet: bool,
    (keep_unreadable, in_turn): (bool, bool),
    read: F,
) -> Result<Vec<TraceResult>, ApiError>
where
    F: Fn(&Path, Arc<AtomicU64>) -> TraceResult + Sync,
{
    use rayon::prelude::*;
    let one = |path: &PathBuf| {
        let progress = FileProgress::new(path, quiet);
        let res = read(path, progress.counter());
        progress.finish();
        res
    };
    let results: Vec<TraceResult> = match in_turn {
        true => paths.iter().map(one).collect(),
        false => paths.par_iter().map(one).collect(),
    };
    results
        .into_iter()
        .map(|mut r| match r.error.take() {
            Some(e) if r.events == 0 && !keep_unreadable => Err(e.into()),
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
    if let Some(why) = crate::runinfo::partial_tokens(given, n) {
        return Err(ApiError::Arguments(why));
    }
    Ok((0..n)
        .map(|i| given.get(i).cloned().unwrap_or_default())
        .collect())
}

/// Refuses a directory among the traces of a subcommand that reads trace
/// files: the system's "Is a directory (os error 21)" says nothing of what
/// to do instead (issue 38), so the error names the two ways.
pub fn refuse_directories(paths: &[PathBuf], name: &str) -> Result<(), ApiError> {
    match paths.iter().find(|p| p.is_dir()) {
        Some(dir) => {
            let d = dir.display();
            Err(ApiError::Arguments(format!(
                "{d}: is a directory, and `{name}` reads trace files: name the traces (e.g. {d}/*.pt.trace.json.gz), or run `torchtrace batch {d} -o OUTDIR` to analyse every trace under it"
            )))
        }
        None => Ok(()),
    }
}

/// Takes each result's partial-read error out, keeping the first: the
/// outcome's [`Outcome::incomplete`].
fn first_incomplete(results: &mut [TraceResult]) -> Option<TraceError> {
    results.iter_mut().find_map(|r| r.error.take())
}

/// Runs analysis `A` as its subcommand: checks the call, reads every
/// trace once (in parallel), resolves each trace's run information, fills
/// the per-token figures, and collects the report, problems and notes.
pub fn run<A: Command>(
    paths: &[PathBuf],
    common: &Common,
    options: &A::Options,
) -> Result<Outcome<A::Report>, ApiError> {
    let expanded;
    let paths = match A::TAKES_DIRECTORIES {
        true => {
            expanded = expand_directories(paths)?;
            &expanded[..]
        }
        false => paths,
    };
    if !A::TAKES_DIRECTORIES {
        refuse_directories(paths, A::NAME)?;
    }
    let given = given_per_trace(paths, &common.given, A::MAX_TRACES)?;
    let config = A::configure(options, &common.selector)?;
    let plan = Plan::new(common.selector.clone())
        .reading(common.read)
        .with_analysis::<A>(config.clone());
    let mut results = read_all_in(
        paths,
        common.quiet,
        (A::KEEPS_UNREADABLE, A::READS_IN_TURN),
        |path, counter| analysis::analyze_path(path, counter, &plan),
    )?;
    let incomplete = first_incomplete(&mut results);
    let (mut problems, mut notes, mut outputs) = (Vec::new(), Vec::new(), Vec::new());
    for (i, ((mut res, path), given)) in results.into_iter().zip(paths).zip(&given).enumerate() {
        let mut out = res.take::<A>().ok_or(ApiError::NotRun(A::NAME))?;
        let run = RunInfo::for_trace(path, given, &res.contexts.step_names)?;
        let t = run.tokens.as_ref();
        let source = t.map(|t| t.source.describe());
        A::set_tokens(&mut out, t.map(|t| t.value), source.as_deref());
        let said = A::said(&out, &res.contexts);
        let message = |text| Message { trace: i, text };
        problems.extend(said.problems.into_iter().map(message));
        notes.extend(said.notes.into_iter().map(message));
        outputs.push(out);
    }
    let report = A::report(outputs, &config);
    let said = A::report_said(&report);
    let message = |text| Message {
        trace: paths.len(),
        text,
    };
    problems.extend(said.problems.into_iter().map(message));
    notes.extend(said.notes.into_iter().map(message));
    Ok(Outcome {
        report,
        problems,
        notes,
        incomplete,
    })
}

/// Each directory among `paths` replaced by the worker traces under it
/// (recursively, sorted by relative name; frontend and capture traces
/// left out); files are kept as given.
pub fn expand_directories(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ApiError> {
    use crate::batch::inputs::{walk, Kind};
    let mut out = Vec::new();
    for p in paths {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        let (files, _) = walk(p, None).map_err(|e| {
            ApiError::Arguments(format!("{}: cannot list the directory: {e}", p.display()))
        })?;
        let before = out.len();
        out.extend(
            files
                .into_iter()
                .filter(|f| f.kind() == Kind::Worker)
                .map(|f| f.path),
        );
        if out.len() == before {
            return Err(ApiError::Arguments(format!(
                "{}: no worker trace (*.pt.trace.json[.gz]) under the directory",
                p.display()
            )));
        }
    }
    Ok(out)
}

/// The files named that are worker traces, and the others with what they
/// are (`frontend`, `capture`, `summary`, `profiler_out`), classified by
/// name as `batch` classifies the files named on its command line: a name
/// that says nothing (`-`, `x.json`) is a worker trace (issue 60: `export
/// sample_traces/text_mtp/*.pt.trace.json.gz` exported the frontend's
/// `…async_llm…` trace, which `batch` skips).
pub fn worker_traces(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<(PathBuf, &'static str)>) {
    use crate::batch::inputs::{classify, Kind};
    let mut workers = Vec::new();
    let mut others = Vec::new();
    for p in paths {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match classify(&name, true) {
            Kind::Worker => workers.push(p.clone()),
            k => others.push((p.clone(), k.as_str())),
        }
    }
    (workers, others)
}

/// A subcommand's outcome whatever its analysis: what [`run_named`] gives.
pub type AnyOutcome = Outcome<Box<dyn Document>>;

/// [`run`] for the analysis named `name` (its [`Analysis::NAME`]), with
/// its options as a JSON object (keys as in the analysis's `Options`; a
/// missing key takes its default, an unknown one is an error): the one
/// generic entry the Python package's `torchtrace.run` calls.
pub fn run_named(
    name: &str,
    paths: &[PathBuf],
    common: &Common,
    options: &serde_json::Value,
) -> Result<AnyOutcome, ApiError> {
    let entry = crate::registry::REGISTRY
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| {
            let known: Vec<&str> = crate::registry::REGISTRY.iter().map(|e| e.name).collect();
            ApiError::Arguments(format!(
                "no analysis {name:?} (there are: {})",
                known.join(", ")
            ))
        })?;
    let run = entry
        .command_fn()
        .ok_or_else(|| ApiError::Arguments(format!("the {name} analysis is not a subcommand")))?;
    run(paths, common, options)
}

/// [`run`] with options as JSON and the report boxed: what a registry
/// entry of a [`Command`] holds.
pub(crate) fn run_json<A: Command>(
    paths: &[PathBuf],
    common: &Common,
    options: &serde_json::Value,
) -> Result<AnyOutcome, ApiError> {
    let options: A::Options = serde_json::from_value(options.clone())
        .map_err(|e| ApiError::Arguments(format!("{} options: {e}", A::NAME)))?;
    let out = run::<A>(paths, common, &options)?;
    Ok(Outcome {
        report: Box::new(out.report),
        problems: out.problems,
        notes: out.notes,
        incomplete: out.incomplete,
    })
}

/// Adds analysis `A` to `plan` with its options as JSON (missing keys take
/// their defaults; unknown ones are errors).
pub(crate) fn add_json<A: Command>(
    plan: Plan,
    options: &serde_json::Value,
    selector: &Selector,
) -> Result<Plan, ApiError> {
    let options: A::Options = serde_json::from_value(options.clone())
        .map_err(|e| ApiError::Arguments(format!("{} options: {e}", A::NAME)))?;
    Ok(plan.with_analysis::<A>(A::configure(&options, selector)?))
}

/// The problem of a trace whose selected contexts are missing.
pub fn context_problem(contexts: &crate::contexts::Contexts) -> Option<String> {
    contexts.problem.as_ref().map(ToString::to_string)
}

/// A trace's notes, each prefixed with its path.
pub fn path_notes(path: &str, notes: &[String]) -> Vec<String> {
    notes.iter().map(|n| format!("{path}: {n}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pair` with its default options, found by name in the registry as
    /// the Python package finds it.
    fn pair(paths: &[PathBuf], common: &Common) -> Result<AnyOutcome, ApiError> {
        run_named("pair", paths, common, &serde_json::json!({}))
    }

    const HTA: &str = "tests/data/hta_step_based_trace.json.gz";

    #[test]
    fn wrong_calls_are_argument_errors() {
        let p = PathBuf::from(HTA);
        let three = [p.clone(), p.clone(), p.clone()];
        let quiet = Common {
            quiet: true,
            ..Default::default()
        };
        // diff compares two traces; pair takes any number (no comparison
        // past two).
        assert!(matches!(
            run_named("diff", &three, &quiet, &serde_json::json!({})),
            Err(ApiError::Arguments(_))
        ));
        let many = pair(&three, &quiet)
            .unwrap()
            .report
            .json_value(false)
            .unwrap();
        assert_eq!(many["traces"].as_array().map(Vec::len), Some(3));
        assert!(many["comparison"].is_null());
        assert!(matches!(
            run_named("kernels", &[], &quiet, &serde_json::json!({})),
            Err(ApiError::Arguments(_))
        ));
        let opts = Common {
            given: vec![Given::default(); 2],
            ..Default::default()
        };
        assert!(matches!(pair(&[p], &opts), Err(ApiError::Arguments(_))));
    }

    /// Tokens for one of two traces: the second would take its summary's
    /// tokens silently (issue 38); a directory: `batch` is suggested.
    #[test]
    fn partial_tokens_and_directories_are_argument_errors() {
        let p = PathBuf::from(HTA);
        let one = Common {
            given: vec![Given {
                tokens: Some(5),
                ..Default::default()
            }],
            quiet: true,
            ..Default::default()
        };
        for name in ["pair", "kernels", "iterations", "diff"] {
            let two = [p.clone(), p.clone()];
            match run_named(name, &two, &one, &serde_json::json!({})) {
                Err(ApiError::Arguments(why)) => assert!(why.contains("1 of 2"), "{why}"),
                Err(e) => panic!("{name}: {e:?}"),
                Ok(_) => panic!("{name}: tokens for one of two traces were taken"),
            }
        }
        match pair(&[PathBuf::from("tests/data")], &Common::default()) {
            Err(ApiError::Arguments(why)) => {
                assert!(why.contains("is a directory"), "{why}");
                assert!(
                    why.contains("torchtrace batch tests/data -o OUTDIR"),
                    "{why}"
                );
            }
            Err(e) => panic!("{e:?}"),
            Ok(_) => panic!("a directory was read as a trace"),
        }
    }

    #[test]
    fn unreadable_trace_is_a_read_error_naming_it() {
        let missing = PathBuf::from("tests/data/no such trace.json.gz");
        match pair(&[missing], &Common::default()) {
            Err(ApiError::Read(e)) => {
                assert_eq!(e.path, "tests/data/no such trace.json.gz");
                assert_eq!((e.kind.offset(), e.kind.events_read()), (None, 0));
            }
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("a missing trace was read"),
        }
    }

    #[test]
    fn missing_context_is_a_problem_and_json_matches_the_text() {
        let opts = Common {
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
