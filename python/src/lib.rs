//! `torchtrace._native`: the Python bindings of [`torchtrace::api`]. Each
//! function runs one subcommand (`pair`, `kernels`, `hierarchy`) and hands
//! back the JSON text `--format json` prints, with the problems and notes
//! the command line prints on stderr; the package `torchtrace` (Python)
//! parses it and turns problems into warnings.
//!
//! Reading runs on a thread of its own, without the GIL: the calling
//! thread wakes every 100 ms, takes the GIL and checks for signals, so
//! Ctrl-C raises `KeyboardInterrupt` at once. The reader has no
//! cancellation point, so the abandoned thread finishes its files in the
//! background and its result is dropped.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;
use torchtrace::api::{self, ApiError, Document, Outcome};
use torchtrace::pair::GpuSpanSource;
use torchtrace::runinfo::Given;
use torchtrace::summary::SummaryError;
use torchtrace::{HierarchyOptions, Selector};

create_exception!(
    torchtrace,
    TraceError,
    PyException,
    "A trace could not be read (to its end): `path`, `offset` (byte offset in the \
     decompressed JSON text, or None), `events_read` and `message` say what and where."
);

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

/// A [`torchtrace::trace::TraceError`] as a Python `TraceError`, with its
/// fields as attributes.
fn trace_error(py: Python<'_>, e: &torchtrace::trace::TraceError) -> PyErr {
    let err = TraceError::new_err(e.to_string());
    let set = || -> PyResult<()> {
        let v = err.value(py);
        v.setattr("path", &e.path)?;
        v.setattr("offset", e.kind.offset())?;
        v.setattr("events_read", e.kind.events_read())?;
        v.setattr("message", e.kind.to_string())?;
        v.setattr("document", py.None())
    };
    match set() {
        Ok(()) => err,
        Err(other) => other,
    }
}

/// A library error as the Python exception that fits it.
fn to_py(py: Python<'_>, e: ApiError) -> PyErr {
    match &e {
        ApiError::Read(t) => trace_error(py, t),
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

fn gpu_span_source(text: &str) -> PyResult<GpuSpanSource> {
    match text {
        "auto" => Ok(GpuSpanSource::Auto),
        "annotation" => Ok(GpuSpanSource::Annotation),
        "correlation" => Ok(GpuSpanSource::Correlation),
        other => Err(PyValueError::new_err(format!(
            "gpu_span must be \"auto\", \"annotation\" or \"correlation\", not {other:?}"
        ))),
    }
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
        let err = trace_error(py, e);
        let doc = py.import("json")?.call_method1("loads", (text,))?;
        err.value(py).setattr("document", doc)?;
        return Err(err);
    }
    let texts = |m: Vec<api::Message>| m.into_iter().map(|m| m.text).collect();
    Ok((text, texts(out.problems), texts(out.notes)))
}

/// `torchtrace pair -f json` on one or two traces (baseline first).
#[pyfunction]
#[pyo3(signature = (paths, context=None, context_regex=None, tokens=None, summaries=None,
                    gpu_span="auto", per_context=false, progress=false))]
#[allow(clippy::too_many_arguments)]
fn pair(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    context: Option<String>,
    context_regex: Option<String>,
    tokens: Option<Vec<Option<u64>>>,
    summaries: Option<Vec<Option<PathBuf>>>,
    gpu_span: &str,
    per_context: bool,
    progress: bool,
) -> PyResult<Answer> {
    let opts = api::PairOptions {
        selector: selector(context.as_deref(), context_regex.as_deref())?,
        given: given(tokens, summaries),
        gpu_span: gpu_span_source(gpu_span)?,
        quiet: !progress,
    };
    let outcome = run_detached(py, move || api::pair(&paths, &opts))?;
    answer(py, outcome, per_context)
}

/// `torchtrace kernels -f json` on one or two traces (baseline first).
#[pyfunction]
#[pyo3(signature = (paths, context=None, context_regex=None, tokens=None, summaries=None,
                    top=10, per_context=false, progress=false))]
#[allow(clippy::too_many_arguments)]
fn kernels(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    context: Option<String>,
    context_regex: Option<String>,
    tokens: Option<Vec<Option<u64>>>,
    summaries: Option<Vec<Option<PathBuf>>>,
    top: usize,
    per_context: bool,
    progress: bool,
) -> PyResult<Answer> {
    let opts = api::KernelsOptions {
        selector: selector(context.as_deref(), context_regex.as_deref())?,
        given: given(tokens, summaries),
        top,
        quiet: !progress,
    };
    let outcome = run_detached(py, move || api::kernels(&paths, &opts))?;
    answer(py, outcome, per_context)
}

/// `torchtrace hierarchy -f json` on any number of traces.
#[pyfunction]
#[pyo3(signature = (paths, chains=None, categories=None, any_thread=false, examples=5,
                    context=None, context_regex=None, tokens=None, gpu_work=true, progress=false))]
#[allow(clippy::too_many_arguments)]
fn hierarchy(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    chains: Option<Vec<String>>,
    categories: Option<Vec<String>>,
    any_thread: bool,
    examples: usize,
    context: Option<String>,
    context_regex: Option<String>,
    tokens: Option<Vec<Option<u64>>>,
    gpu_work: bool,
    progress: bool,
) -> PyResult<Answer> {
    let chains = HierarchyOptions::new(
        &chains.unwrap_or_default(),
        &categories.unwrap_or_default(),
        any_thread,
        examples,
        selector(context.as_deref(), context_regex.as_deref())?,
    )
    .map_err(|e| PyValueError::new_err(format!("bad chains: {e}")))?;
    let opts = api::ChainsOptions {
        chains,
        given: given(tokens, None),
        gpu_work,
        quiet: !progress,
    };
    let outcome = run_detached(py, move || api::hierarchy(&paths, &opts))?;
    answer(py, outcome, false)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TraceError", m.py().get_type::<TraceError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(pair, m)?)?;
    m.add_function(wrap_pyfunction!(kernels, m)?)?;
    m.add_function(wrap_pyfunction!(hierarchy, m)?)?;
    Ok(())
}
