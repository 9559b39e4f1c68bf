//! What an export says on stdout: the files written and their rows, and
//! per trace the figures to check them against the analyses (Σ dur of the
//! activities = `kernels`'s GPU time, launches with activities = `ops`'s
//! launches).

use super::ExportError;
use crate::command::{self, ApiError, Document, TraceOutcome};
use crate::report::{self, Cell, Format, Table as Shown};
use serde::{Deserialize, Serialize};
use std::io::{self, Write};

/// A write that failed inside a trace's finish (carried to [`super::run`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteFailure {
    pub path: String,
    pub message: String,
}

impl WriteFailure {
    pub(crate) fn into_error(self) -> ExportError {
        ExportError::Parquet {
            path: self.path,
            message: self.message,
        }
    }
}

/// One table of one trace, as written to the temporary folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartFile {
    pub table: super::Table,
    /// The temporary file (gone once the export ends).
    #[serde(skip_serializing)]
    pub file: String,
    pub rows: u64,
}

/// One trace's export.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracePart {
    pub path: String,
    pub complete: bool,
    pub error: Option<String>,
    pub activities: u64,
    /// Σ dur_ns of its activities (= `kernels`'s GPU time).
    pub activities_dur_ns: i64,
    pub runtime_calls: u64,
    /// Runtime calls owning at least one activity (= `ops`'s launches).
    pub launches_with_activities: u64,
    pub graph_launches: u64,
    pub host_ops: u64,
    pub steps: u64,
    /// `[memory]` events kept (VIEWS.md M1).
    #[serde(default)]
    pub memory_events: u64,
    /// `vllm`, `ProfilerStep` or null (C8).
    pub step_grammar: Option<String>,
    pub notes: Vec<String>,
    #[serde(skip_serializing)]
    pub parts: Vec<PartFile>,
    #[serde(skip_serializing)]
    pub write_error: Option<WriteFailure>,
}

/// A file written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableFile {
    pub table: String,
    pub path: String,
    pub rows: u64,
}

/// The report of `torchtrace export`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportReport {
    /// The output directory.
    pub out: String,
    pub traces: Vec<TracePart>,
    pub files: Vec<TableFile>,
}

impl ExportReport {
    fn shown(&self) -> Vec<Shown> {
        let mut files = Shown::new(
            format!("Parquet tables in {}", self.out),
            &["table", "file", "rows"],
        );
        for f in &self.files {
            files.row(vec![
                Cell::text(&f.table),
                Cell::text(&f.path),
                Cell::from(f.rows),
            ]);
        }
        let mut traces = Shown::new(
            "Per trace",
            &[
                "trace",
                "activities",
                "activities_dur_ns",
                "runtime_calls",
                "launches_with_activities",
                "graph_launches",
                "host_ops",
                "steps",
                "memory_events",
            ],
        );
        for t in &self.traces {
            traces.row(vec![
                Cell::text(&t.path),
                Cell::from(t.activities),
                Cell::Int(t.activities_dur_ns),
                Cell::from(t.runtime_calls),
                Cell::from(t.launches_with_activities),
                Cell::from(t.graph_launches),
                Cell::from(t.host_ops),
                Cell::from(t.steps),
                Cell::from(t.memory_events),
            ]);
        }
        vec![files, traces]
    }
}

command::trace_outcome!(TracePart);

impl Document for ExportReport {
    fn write_to(&self, out: &mut dyn Write, format: Format, _: bool) -> io::Result<()> {
        let mut out = out;
        let shown = self.shown();
        report::render(&mut out, format, self, &shown, &shown)
    }
    fn json_value(&self, _: bool) -> Result<serde_json::Value, ApiError> {
        command::json_of(self)
    }
    fn outcomes(&self) -> Vec<&dyn TraceOutcome> {
        command::outcomes(&self.traces)
    }
}
