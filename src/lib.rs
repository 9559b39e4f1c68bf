//! torchtrace: exact, streaming analysis of PyTorch Profiler (Kineto)
//! Chrome-trace JSON, starting with the worker traces vLLM writes.
//!
//! Data flows `trace` (open, inflate, stream events) → `model` (exact
//! integer times, interned names) → analyses (`pair`, `hierarchy`) →
//! `stats` → `report` (table, JSON, CSV, Markdown) and `plot`; `batch`
//! runs it all over directories and archives.

pub mod batch;
pub mod cli;
pub mod hierarchy;
pub mod model;
pub mod pair;
pub mod plot;
pub mod progress;
pub mod report;
pub mod stats;
pub mod steps;
pub mod summary;
pub mod trace;
