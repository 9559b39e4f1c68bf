//! `--capture PATH`: which capture traces of the CUDA/HIP graphs are read
//! with each trace. Plain data, below the engine, so that the capture
//! traces are an input of the read as the trace is: the plan holds it
//! (`analysis::Plan::capturing`), the finished trace hands it to the
//! analyses, and `graphs` reads the files (`graphs::captures_of`).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `--capture PATH`: capture traces of the CUDA/HIP graphs, a file or a
/// folder, repeatable; without it, `capture_traces/` beside each trace.
/// One flag for every subcommand whose analyses attribute GPU work
/// (`ops`, `kernels`, `iterations`, `diff`, `roofline`, `export`,
/// `batch`), one `capture=` in Python's `run()`. As JSON, the list of
/// paths.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(transparent)]
pub struct CaptureSpec {
    /// Capture traces of the CUDA/HIP graphs (a file or a folder,
    /// repeatable); without it, capture_traces/ beside each trace (graph
    /// replays attributed to the ops, modules and shapes that captured
    /// them).
    #[cfg_attr(feature = "cli", arg(long, value_name = "PATH"))]
    pub capture: Vec<PathBuf>,
}

impl CaptureSpec {
    /// No capture trace given: `capture_traces/` beside each trace.
    pub fn is_empty(&self) -> bool {
        self.capture.is_empty()
    }
}
