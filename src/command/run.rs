//! The one body of every per-trace subcommand: [`run`]`::<A>` checks the
//! call, reads every trace once (in parallel, or in turn), resolves each
//! trace's run information, fills the per-token figures and collects the
//! report, problems and notes. `run_json` / `add_json` are the same with
//! options as JSON, what a registry line holds.

use super::{AnyOutcome, ApiError, Command, Common, Message, Outcome};
use crate::analysis::{self, Plan, TraceResult};
use crate::contexts::Selector;
use crate::progress::FileProgress;
use crate::runinfo::{Given, RunInfo};
use crate::trace::TraceError;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

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
    // One analysis: the order its results are kept in does not matter
    // (the registry's order is for plans of several, `batch`'s).
    let plan = Plan::in_order(common.selector.clone(), &[])
        .reading(common.read)
        .capturing(common.capture.clone())
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
    use crate::tracefile::inputs::{walk, Kind};
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
    use crate::tracefile::inputs::{classify, Kind};
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

/// [`run`] with options as JSON and the report boxed: what a registry
/// entry of a [`Command`] holds.
pub fn run_json<A: Command>(
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
pub fn add_json<A: Command>(
    plan: Plan,
    options: &serde_json::Value,
    selector: &Selector,
) -> Result<Plan, ApiError> {
    let options: A::Options = serde_json::from_value(options.clone())
        .map_err(|e| ApiError::Arguments(format!("{} options: {e}", A::NAME)))?;
    Ok(plan.with_analysis::<A>(A::configure(&options, selector)?))
}
