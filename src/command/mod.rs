//! The per-trace command contract, below the analyses: what an analysis
//! that is also a subcommand (and a Python function) implements
//! ([`Command`]), the report it prints ([`Document`]), what every
//! subcommand takes besides its own options ([`Common`]), what its figures
//! make it say ([`Said`], [`Outcome`], [`Message`]) and its errors
//! ([`ApiError`]); and the one generic body that runs any of them
//! ([`run`]`::<A>`, in `run.rs`).
//!
//! ```text
//!  cli, api (facade), python ─► registry (lookup by name: run_named)
//!                                   │
//!                          analyses/<name>/view.rs  (impl Command, Document)
//!                                   │
//!                               command  ◄── cli_kit (the subcommands' one body)
//!                                   │
//!              analysis (engine) · tracefile · runinfo · report · trace
//! ```
//!
//! It names no analysis, nor the registry, `api`, `batch` or the command
//! line: the arrows point down only (`tests/it/structure.rs` checks it).
//! `crate::api` re-exports all of it at its old paths.

use crate::analysis::Analysis;
use crate::contexts::Selector;
use crate::report::Format;
use crate::runinfo::Given;
use crate::summary::SummaryError;
use crate::trace::TraceError;

mod run;

pub use run::{
    add_json, expand_directories, read_all, read_all_keeping, refuse_directories, run, run_json,
    worker_traces,
};

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
    /// The report's traces, in the call's order: what
    /// [`Document::completeness`] reads (each report's one accessor;
    /// [`outcomes`] makes it of a list of traces).
    fn outcomes(&self) -> Vec<&dyn TraceOutcome>;
    /// `(path, complete, error)` of each trace, for the exit status: one
    /// body for every report, over [`Document::outcomes`].
    fn completeness(&self) -> Vec<(&str, bool, Option<&str>)> {
        self.outcomes()
            .into_iter()
            .map(|t| (t.path(), t.complete(), t.error()))
            .collect()
    }
}

/// One trace of a report as the exit status reads it: its path, whether
/// it was read to its end, its read error. A per-trace result with the
/// three fields `path`, `complete` and `error` implements it with
/// [`trace_outcome!`].
pub trait TraceOutcome {
    fn path(&self) -> &str;
    fn complete(&self) -> bool;
    fn error(&self) -> Option<&str>;
}

/// `impl TraceOutcome` for per-trace results with the fields `path:
/// String`, `complete: bool` and `error: Option<String>`.
macro_rules! trace_outcome {
    ($($t:ty),+ $(,)?) => {$(
        impl $crate::command::TraceOutcome for $t {
            fn path(&self) -> &str {
                &self.path
            }
            fn complete(&self) -> bool {
                self.complete
            }
            fn error(&self) -> Option<&str> {
                self.error.as_deref()
            }
        }
    )+};
}
pub(crate) use trace_outcome;

/// A trace kept as `(path, complete, error)`.
impl TraceOutcome for (String, bool, Option<String>) {
    fn path(&self) -> &str {
        &self.0
    }
    fn complete(&self) -> bool {
        self.1
    }
    fn error(&self) -> Option<&str> {
        self.2.as_deref()
    }
}

/// [`Document::outcomes`] of a report's list of traces.
pub fn outcomes<T: TraceOutcome>(traces: &[T]) -> Vec<&dyn TraceOutcome> {
    traces.iter().map(|t| t as &dyn TraceOutcome).collect()
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
    fn outcomes(&self) -> Vec<&dyn TraceOutcome> {
        (**self).outcomes()
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
    /// The capture traces of the CUDA/HIP graphs (`--capture`), read with
    /// each trace by the analyses that attribute GPU work.
    pub capture: crate::tracefile::capture::CaptureSpec,
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

/// A subcommand's outcome whatever its analysis: what [`run_named`] gives.
pub type AnyOutcome = Outcome<Box<dyn Document>>;

/// The problem of a trace whose selected contexts are missing.
pub fn context_problem(contexts: &crate::contexts::Contexts) -> Option<String> {
    contexts.problem.as_ref().map(ToString::to_string)
}

/// The note of a trace whose step contexts fell back to `ProfilerStep#<n>`
/// (no vLLM step annotation in it).
pub fn context_note(contexts: &crate::contexts::Contexts) -> Option<String> {
    contexts.fallback.clone()
}

/// A trace's notes, each prefixed with its path.
pub fn path_notes(path: &str, notes: &[String]) -> Vec<String> {
    notes.iter().map(|n| format!("{path}: {n}")).collect()
}
