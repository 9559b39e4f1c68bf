//! torchtrace: exact, streaming analysis of PyTorch Profiler (Kineto)
//! Chrome-trace JSON, starting with the worker traces vLLM writes.
//!
//! Data flows `trace` (open, inflate, stream events) → `model` (exact
//! integer times, interned names) → analyses (`pair`, `hierarchy`) →
//! `stats` → `report` (table, JSON, CSV, Markdown) and `plot`; `batch`
//! runs it all over directories and archives.
//!
//! Pairing the step annotations of a trace, as `torchtrace pair` does:
//!
//! ```
//! use std::path::Path;
//! use torchtrace::analysis::{analyze_path, Plan};
//! use torchtrace::pair::{PairSpec, Selector};
//!
//! let trace = Path::new("tests/data/hta_step_based_trace.json.gz");
//! let every_annotation = Selector::Regex(regex::Regex::new(".").unwrap());
//! let plan = Plan::new(every_annotation).with(PairSpec::default());
//! let result = analyze_path(trace, Default::default(), &plan);
//! assert!(result.contexts.problem.is_none());
//! let figures = result.pairs.unwrap();
//! assert_eq!((figures.contexts, figures.pairs), (10, 10));
//! assert_eq!(figures.gpu_span_ms.median, Some(0.0635));
//! ```
//!
//! Times are exact integer nanoseconds read from the JSON text:
//!
//! ```
//! use torchtrace::{model::Ns, trace::time::parse_us};
//! assert_eq!(parse_us("5106297913320.790"), Ok(Ns(5_106_297_913_320_790)));
//! ```

pub mod analysis;
pub mod batch;
pub mod cli;
pub mod contexts;
pub mod hierarchy;
pub mod kernels;
pub mod model;
pub mod pair;
pub mod plot;
pub mod progress;
pub mod report;
pub mod stats;
pub mod steps;
pub mod summary;
pub mod trace;
