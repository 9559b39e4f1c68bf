//! torchtrace: exact, streaming analysis of PyTorch Profiler (Kineto)
//! Chrome-trace JSON, starting with the worker traces vLLM writes.
//!
//! Data flows `trace` (open, inflate, stream events) → `model` (exact
//! integer times, interned names) → the analyses of a [`Plan`] (each in
//! its folder under [`analyses`], listed once in [`registry`], fed by one
//! read in [`analysis`]) → `stats` → `views` (each analysis's columns and
//! tables) → `report` (table, JSON, CSV, Markdown) and figures (each drawn
//! in its analysis's folder on the `figures` frame and the `plot` kit);
//! `runinfo` says which run a trace belongs to; `batch` runs it all over
//! directories and archives. The command line is the binary's.
//!
//! Library users start at the crate root: build a [`Plan`] of analyses
//! (`torchtrace::analyses::<name>`: its options, its analysis, its
//! figures), run it over a trace with [`analyze_path`] (or
//! [`analyze_reader`]), and read the figures off the [`TraceResult`]; each
//! analysis's view turns them into tables (`analyses::pair::view::PairReport`, …)
//! in any [`Format`].
//! [`api`] runs a whole subcommand (`pair`, `kernels`, `hierarchy`) as one
//! call, as the command line and the Python package do.
//! `docs/ARCHITECTURE.md` shows the data flow.
//!
//! ```
//! use std::path::Path;
//! use torchtrace::analyses::hierarchy::{Hierarchy, HierarchyOptions};
//! use torchtrace::analyses::kernels::{Kernels, KernelsSpec};
//! use torchtrace::analyses::pair::{view::PairReport, Pair, PairSpec};
//! use torchtrace::{analyze_path, Format, Plan, Selector};
//!
//! let trace = Path::new("tests/data/hta_step_based_trace.json.gz");
//! let every_annotation = Selector::Regex(regex::Regex::new(".").unwrap());
//! let chains = HierarchyOptions::new(&[], &[], false, 5, every_annotation.clone()).unwrap();
//! // One read of the trace feeds both analyses.
//! let plan = Plan::new(every_annotation).with(PairSpec::default()).with(chains);
//! let result = analyze_path(trace, Default::default(), &plan);
//! assert!(result.contexts.problem.is_none());
//! let figures = result.get::<Pair>().unwrap().clone();
//! assert_eq!((figures.contexts, figures.pairs), (10, 10));
//! assert_eq!(figures.gpu_span_ms.median, Some(0.0635));
//! assert!(result.get::<Hierarchy>().is_some());
//!
//! // GPU work by launch correlation: add the kernels analysis first.
//! let plan = Plan::new(Selector::Auto).with(KernelsSpec::default());
//! let sample = "sample_traces/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz";
//! let k = analyze_path(Path::new(sample), Default::default(), &plan).take::<Kernels>().unwrap();
//! assert_eq!((k.contexts, k.kernels, k.graph_launches), (64, 3008, 64));
//!
//! // The same tables `torchtrace pair -f csv` prints.
//! let mut csv = Vec::new();
//! PairReport::new(vec![figures]).write(&mut csv, Format::Csv, false).unwrap();
//! assert!(String::from_utf8(csv).unwrap().starts_with("path,context,contexts,pairs"));
//! ```
//!
//! Times are exact integer nanoseconds read from the JSON text:
//!
//! ```
//! use torchtrace::{model::Ns, trace::time::parse_us};
//! assert_eq!(parse_us("5106297913320.790"), Ok(Ns(5_106_297_913_320_790)));
//! ```

pub mod allocator;
pub mod analyses;
pub mod analysis;
pub mod api;
pub mod batch;
pub mod campaign;
#[cfg(feature = "cli")]
pub mod cli_kit;
pub mod command;
pub(crate) mod containment;
pub mod contexts;
pub mod export;
pub mod families;
pub mod figures;
pub mod graphs;
pub mod hostops;
pub mod ledger;
pub mod memory;
pub mod model;
pub(crate) mod parallel;
pub mod plot;
pub(crate) mod progress;
pub mod record;
pub mod registry;
pub mod report;
pub mod rows;
pub mod runinfo;
pub mod stats;
pub mod steps;
pub mod store;
pub mod summary;
pub(crate) mod text;
pub mod trace;
pub(crate) mod tracefile;
pub mod views;
pub(crate) mod windows;

pub use analysis::{
    analyze_file, analyze_path, analyze_reader, Analysis, Configures, Finished, Need, Plan,
    Results, TraceResult,
};
pub use batch::{run_batch, BatchOptions, BatchResult, Manifest};
pub use contexts::Selector;
pub use figures::PlotInput;
pub use plot::ImageFormat;
pub use report::{Format, Table};
pub use runinfo::{Mode, RunInfo};
