//! `torchtrace._native`: the Python bindings of [`torchtrace::api`] and of
//! the campaigns ([`torchtrace::batch::records`]). `run` runs any analysis
//! of the registry as its subcommand (`export` has its own function) and
//! hands back the JSON text `--format json` prints, with the problems and
//! notes the command line prints on stderr; `plan`, `run_task`,
//! `fail_task`, `analyze` and `merge` are `torchtrace batch`'s steps. The
//! package `torchtrace` (Python) parses the text, turns problems into
//! warnings and holds the public API; a trace that cannot be read raises
//! its `torchtrace.errors.TraceError`, declared in Python, with the fields
//! of the Rust error.
//!
//! Reading runs on a thread of its own, without the GIL: the calling
//! thread wakes every 100 ms, takes the GIL and checks for signals, so
//! Ctrl-C raises `KeyboardInterrupt` at once. The reader has no
//! cancellation point, so the abandoned thread finishes its files in the
//! background and its result is dropped.

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;
use torchtrace::api::{self, ApiError, Document, Outcome};
use torchtrace::batch::{output, records, Manifest};
use torchtrace::runinfo::Given;
use torchtrace::summary::SummaryError;
use torchtrace::{ImageFormat, Selector};

/// What a call returns to Python: the JSON document (text), the problems
/// (exit status 1 on the command line) and the notes.
type Answer = (String, Vec<String>, Vec<String>);

/// How often the waiting thread checks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// Runs `work` on a thread of its own while this one waits without the
/// GIL, waking every [`SIGNAL_POLL`] to let Python handle signals (a
/// `KeyboardInterrupt` is returned at once; the work is abandoned).
fn run_detached<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, mut rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("torchtrace-read".into())
        .spawn(move || {
            // The receiver is gone only after an interrupt: nobody waits.
            let _ = tx.send(work());
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the reading thread: {e}")))?;
    loop {
        // The receiver is moved in and back: a borrow of it is not Send.
        let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_POLL), rx));
        rx = back;
        match got {
            Ok(v) => return Ok(v),
            Err(RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "torchtrace: the reading thread panicked",
                ))
            }
        }
    }
}

/// A [`torchtrace::trace::TraceError`] as the package's `TraceError`
/// (`torchtrace.errors`, a class declared in Python), made with the
/// error's fields; `document`: the figures over the events read, when the
/// trace was read in part.
fn trace_error(
    py: Python<'_>,
    e: &torchtrace::trace::TraceError,
    document: Option<Bound<'_, PyAny>>,
) -> PyErr {
    let make = || -> PyResult<PyErr> {
        let class = py.import("torchtrace.errors")?.getattr("TraceError")?;
        let fields = PyDict::new(py);
        fields.set_item("path", &e.path)?;
        fields.set_item("offset", e.kind.offset())?;
        fields.set_item("events_read", e.kind.events_read())?;
        fields.set_item("message", e.kind.to_string())?;
        fields.set_item("document", document)?;
        Ok(PyErr::from_value(
            class.call((e.to_string(),), Some(&fields))?,
        ))
    };
    make().unwrap_or_else(|other| other)
}

/// A library error as the Python exception that fits it.
fn to_py(py: Python<'_>, e: ApiError) -> PyErr {
    match &e {
        ApiError::Read(t) => trace_error(py, t, None),
        ApiError::Summary(SummaryError::Io { .. }) => PyOSError::new_err(e.to_string()),
        ApiError::Summary(SummaryError::Json { .. }) | ApiError::Arguments(_) => {
            PyValueError::new_err(e.to_string())
        }
        ApiError::NotRun(_) | ApiError::Json(_) => PyRuntimeError::new_err(e.to_string()),
    }
}

/// The step-context selector of `context` / `context_regex`.
fn selector(context: Option<&str>, context_regex: Option<&str>) -> PyResult<Selector> {
    if context.is_some() && context_regex.is_some() {
        return Err(PyValueError::new_err(
            "give context or context_regex, not both",
        ));
    }
    Selector::from_flags(context, context_regex)
        .map_err(|e| PyValueError::new_err(format!("invalid context_regex: {e}")))
}

/// One [`Given`] per entry of `tokens` / `summaries` (None: not known).
fn given(tokens: Option<Vec<Option<u64>>>, summaries: Option<Vec<Option<PathBuf>>>) -> Vec<Given> {
    let (tokens, summaries) = (tokens.unwrap_or_default(), summaries.unwrap_or_default());
    (0..tokens.len().max(summaries.len()))
        .map(|i| Given {
            tokens: tokens.get(i).copied().flatten(),
            mode: None,
            summary: summaries.get(i).cloned().flatten(),
        })
        .collect()
}

/// The outcome as Python sees it: the document, or a `TraceError` (with the
/// partial document as `document`) when a trace was read only in part.
fn answer<R: Document>(
    py: Python<'_>,
    outcome: Result<Outcome<R>, ApiError>,
    per_context: bool,
) -> PyResult<Answer> {
    let out = outcome.map_err(|e| to_py(py, e))?;
    let text = out
        .report
        .json_text(per_context)
        .map_err(|e| to_py(py, e))?;
    if let Some(e) = &out.incomplete {
        let doc = py.import("json")?.call_method1("loads", (text,))?;
        return Err(trace_error(py, e, Some(doc)));
    }
    let texts = |m: Vec<api::Message>| m.into_iter().map(|m| m.text).collect();
    Ok((text, texts(out.problems), texts(out.notes)))
}

/// Any analysis of the registry as its subcommand with `-f json`:
/// `name` (`pair`, `kernels`, `hierarchy`, …), its options as a JSON
/// object (keys as the analysis defines them; missing ones take their
/// defaults), and the options every subcommand takes (`capture`: the
/// capture traces of the CUDA/HIP graphs, files or folders, else
/// `capture_traces/` beside each trace).
#[pyfunction]
#[pyo3(signature = (name, paths, options="{}", context=None, context_regex=None, tokens=None,
                    summaries=None, per_context=false, progress=false, capture=Vec::new()))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    name: String,
    paths: Vec<PathBuf>,
    options: &str,
    context: Option<String>,
    context_regex: Option<String>,
    tokens: Option<Vec<Option<u64>>>,
    summaries: Option<Vec<Option<PathBuf>>>,
    per_context: bool,
    progress: bool,
    capture: Vec<PathBuf>,
) -> PyResult<Answer> {
    let options: serde_json::Value = serde_json::from_str(options)
        .map_err(|e| PyValueError::new_err(format!("options are not a JSON object: {e}")))?;
    let common = api::Common {
        selector: selector(context.as_deref(), context_regex.as_deref())?,
        given: given(tokens, summaries),
        quiet: !progress,
        read: Default::default(),
        capture: torchtrace::graphs::CaptureSpec { capture },
    };
    let outcome = run_detached(py, move || api::run_named(&name, &paths, &common, &options))?;
    answer(py, outcome, per_context)
}

/// `torchtrace export`: the Parquet tables of every trace in `paths`
/// written into `out` (`tables`: names, `compression`: `zstd`, `snappy`
/// or `none`; `capture`: capture traces, files or folders, else
/// `capture_traces/` beside each trace); returns the report as JSON text,
/// with the notes.
#[pyfunction]
#[pyo3(signature = (paths, out, tables, compression="zstd", progress=false, capture=Vec::new()))]
fn export(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    out: PathBuf,
    tables: Vec<String>,
    compression: &str,
    progress: bool,
    capture: Vec<PathBuf>,
) -> PyResult<Answer> {
    use torchtrace::export::{ExportError, ExportOptions};
    let json = serde_json::json!({"out": out, "tables": tables, "compression": compression});
    let options: ExportOptions =
        serde_json::from_value(json).map_err(|e| PyValueError::new_err(format!("export: {e}")))?;
    let common = api::Common {
        quiet: !progress,
        capture: torchtrace::graphs::CaptureSpec { capture },
        ..api::Common::default()
    };
    let outcome = run_detached(py, move || {
        torchtrace::export::run(&paths, &common, &options)
    })?;
    let outcome = outcome.map_err(|e| match e {
        ExportError::Api(e) => Err(to_py(py, e)),
        other => Ok(PyOSError::new_err(other.to_string())),
    });
    match outcome {
        Ok(o) => answer(py, Ok(o), false),
        Err(Err(e)) | Err(Ok(e)) => Err(e),
    }
}

/// The analyses `run` knows: `(name, is_subcommand)` in registry order.
#[pyfunction]
fn analyses() -> Vec<(&'static str, bool)> {
    torchtrace::registry::REGISTRY
        .iter()
        .map(|e| (e.name, e.command_fn().is_some()))
        .collect()
}

// ---- Campaigns: plan, map (tasks), merge (records) -------------------------

/// The options of a campaign, as `batch` takes them.
fn campaign_options(
    context: Option<String>,
    context_regex: Option<String>,
    chains: Option<Vec<String>>,
    manifest: Option<PathBuf>,
    capture: Vec<PathBuf>,
) -> PyResult<records::CampaignOptions> {
    // The same checks (and messages) as the per-trace functions.
    selector(context.as_deref(), context_regex.as_deref())?;
    let manifest = manifest
        .as_deref()
        .map(Manifest::read)
        .transpose()
        .map_err(|e| PyValueError::new_err(format!("manifest: {e:#}")))?;
    let options = records::CampaignOptions {
        context,
        context_regex,
        chains: chains.unwrap_or_default(),
        manifest,
        analyses: Default::default(),
        capture: torchtrace::graphs::CaptureSpec { capture },
    };
    // Bad regexes and chains are argument errors, found before any read.
    options.batch_options(true).map_err(record_error)?;
    Ok(options)
}

fn record_error(e: records::RecordError) -> PyErr {
    match e {
        records::RecordError::Io { .. } => PyOSError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

fn json_error(e: serde_json::Error) -> PyErr {
    PyValueError::new_err(format!("not a torchtrace task or record: {e}"))
}

/// Plans a campaign: `(header_line, tasks)`, the header as a record line
/// and one JSON task per unit of work (a directory file, a zip member, a
/// tar, a file PATH). `exclude`: a directory left out of walks.
#[pyfunction]
#[pyo3(signature = (paths, context=None, context_regex=None, chains=None, manifest=None,
                    exclude=None, capture=Vec::new()))]
#[allow(clippy::too_many_arguments)]
fn plan(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    context: Option<String>,
    context_regex: Option<String>,
    chains: Option<Vec<String>>,
    manifest: Option<PathBuf>,
    exclude: Option<PathBuf>,
    capture: Vec<PathBuf>,
) -> PyResult<(String, Vec<String>)> {
    let options = campaign_options(context, context_regex, chains, manifest, capture)?;
    let exclude = exclude.and_then(|e| e.canonicalize().ok());
    let header = run_detached(py, move || {
        records::plan_campaign(&paths, options, exclude.as_deref())
    })?
    .map_err(record_error)?;
    let tasks = torchtrace::record::with_internals(|| {
        header
            .tasks()
            .into_iter()
            .map(|t| serde_json::to_string(&t.absolute()))
            .collect::<Result<Vec<_>, _>>()
    })
    .map_err(json_error)?;
    Ok((records::header_line(&header), tasks))
}

/// Reads one task's unit (on a worker): its rows as record lines.
#[pyfunction]
fn run_task(py: Python<'_>, task: &str) -> PyResult<Vec<String>> {
    let task: records::Task = serde_json::from_str(task).map_err(json_error)?;
    let rows = run_detached(py, move || task.run(true))?.map_err(record_error)?;
    Ok(rows.iter().map(records::file_line).collect())
}

/// The rows of a task that could not run (its worker died, it raised):
/// one failed row per file it would have read, saying `why`.
#[pyfunction]
fn fail_task(task: &str, why: &str) -> PyResult<Vec<String>> {
    let task: records::Task = serde_json::from_str(task).map_err(json_error)?;
    Ok(task.failed(why).iter().map(records::file_line).collect())
}

/// A whole campaign read in this process (`torchtrace batch` without
/// writing): its records file as lines (header, rows, end line).
#[pyfunction]
#[pyo3(signature = (paths, context=None, context_regex=None, chains=None, manifest=None,
                    exclude=None, progress=false, capture=Vec::new()))]
#[allow(clippy::too_many_arguments)]
fn analyze(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    context: Option<String>,
    context_regex: Option<String>,
    chains: Option<Vec<String>>,
    manifest: Option<PathBuf>,
    exclude: Option<PathBuf>,
    progress: bool,
    capture: Vec<PathBuf>,
) -> PyResult<String> {
    let options = campaign_options(context, context_regex, chains, manifest, capture)?;
    let exclude = exclude.and_then(|e| e.canonicalize().ok());
    let text = run_detached(py, move || -> Result<Vec<u8>, records::RecordError> {
        let opts = options.batch_options(!progress)?;
        let header = records::plan_campaign(&paths, options, exclude.as_deref())?;
        let files = records::map(&header, records::Shard::ALL, &opts);
        let mut out = Vec::new();
        records::write_records(&mut out, &header, &files).map_err(|source| {
            records::RecordError::Io {
                path: "<memory>".into(),
                source,
            }
        })?;
        Ok(out)
    })?
    .map_err(record_error)?;
    String::from_utf8(text).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// What a merge wrote: `(results_json_text, stdout_markdown, failed rows
/// as (path, error), notes)`.
type Merged = (String, String, Vec<(String, String)>, Vec<String>);

/// Merges records (each a records file's text or path) into OUTDIR, as
/// `torchtrace merge` does; `figures`: "png", "svg", "both" or None.
#[pyfunction]
#[pyo3(signature = (texts, paths, out_dir, figures=Some("png")))]
fn merge(
    py: Python<'_>,
    texts: Vec<String>,
    paths: Vec<PathBuf>,
    out_dir: PathBuf,
    figures: Option<&str>,
) -> PyResult<Merged> {
    let figures = match figures {
        None => None,
        Some("png") => Some(ImageFormat::Png),
        Some("svg") => Some(ImageFormat::Svg),
        Some("both") => Some(ImageFormat::Both),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "figures must be \"png\", \"svg\", \"both\" or None, not {other:?}"
            )))
        }
    };
    run_detached(py, move || -> PyResult<Merged> {
        let mut sets = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            let lines = t.lines().map(|l| Ok(l.to_string()));
            sets.push(records::parse_lines(&format!("records[{i}]"), lines).map_err(record_error)?);
        }
        for p in &paths {
            sets.push(records::read_records(p, &Default::default()).map_err(record_error)?);
        }
        let (res, context) = records::merge(sets, true).map_err(record_error)?;
        write_merged(&res, &context, &out_dir, figures)
    })?
}

/// Writes OUTDIR for a merged batch and describes it for Python.
fn write_merged(
    res: &torchtrace::BatchResult,
    context: &str,
    out_dir: &std::path::Path,
    figures: Option<ImageFormat>,
) -> PyResult<Merged> {
    // As the command line does: OUTDIR locked against a second writer,
    // every output written aside and renamed into place.
    let _lock = output::lock_outdir(out_dir).map_err(|e| PyOSError::new_err(format!("{e:#}")))?;
    let written = output::write_all_atomic(res, out_dir, context, figures)
        .map_err(|e| PyOSError::new_err(format!("{e:#}")))?;
    let mut stdout = Vec::new();
    output::write_stdout(&mut stdout, res, context, torchtrace::Format::Markdown)
        .map_err(|e| PyOSError::new_err(e.to_string()))?;
    let results = std::fs::read_to_string(out_dir.join("results.json"))
        .map_err(|e| PyOSError::new_err(e.to_string()))?;
    let failed = res
        .failed()
        .map(|r| {
            (
                r.file.path.clone(),
                r.file.error.clone().unwrap_or_default(),
            )
        })
        .collect();
    let mut notes = res.notes.clone();
    notes.extend(written.warnings.iter().map(|w| format!("warning: {w}")));
    Ok((
        results,
        String::from_utf8_lossy(&stdout).into_owned(),
        failed,
        notes,
    ))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(analyses, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(run_task, m)?)?;
    m.add_function(wrap_pyfunction!(fail_task, m)?)?;
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(export, m)?)?;
    Ok(())
}
