//! A batch split into map and merge.
//!
//! ```text
//! PATH… ─ plan ─ Campaign (inputs, plans, options; the same on every machine)
//!                  │ units, assigned to shards (--shard K/N) or tasks
//!                  ▼
//!          map: read each unit's files ─ FileResult rows ─ records (JSON lines)
//!                  │ gathered from every shard or task
//!                  ▼
//!          merge: every unit has rows (else failed rows saying why)
//!                 ─ finalize ─ BatchResult ─ the outputs `batch` writes
//! ```
//!
//! `torchtrace batch` is plan → map → merge in one process; `batch
//! --shard K/N --records F` stops after map, and `torchtrace merge` (or the
//! Python package's `merge`) runs merge over the records of every shard.
//! One code path: the same rows give the same bytes.
//!
//! A records file is JSON lines: a header (schema version, the campaign),
//! one line per file, and an end line that says the shard finished:
//!
//! ```text
//! {"header":{"schema":1,"torchtrace":"0.1.0","campaign":"…","shard":{"index":1,"count":3},…}}
//! {"file":{"path":"text_ar/…pt.trace.json.gz","status":"ok","pairs":{…},…}}
//! {"end":{"files":7}}
//! ```
//!
//! Units are assigned to shards by size, largest first, each to the shard
//! with the fewest bytes so far (ties: the lowest shard), units ordered by
//! (bytes descending, label, input, position): a pure function of the
//! plan, so every machine that plans the same inputs gets the same shards.
//!
//! This file plans and maps; `records/lines.rs` writes and reads the lines,
//! `records/merge.rs` merges them.

mod lines;
mod merge;

pub use lines::{file_line, header_line, parse_lines, read_records, write_records, RecordSet};
pub use merge::{merge, merge_with};

use super::inputs::Input;
use super::run::{self, Plan, Unit};
use super::{BatchOptions, FileResult};
use crate::analysis::Plan as AnalysisPlan;
pub use crate::campaign::CampaignOptions;
use crate::Selector;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The version of the records format; `merge` refuses other versions.
pub const SCHEMA: u32 = 2;

/// Problems with options, shards and records files.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("invalid context regex {regex:?}: {source}")]
    Regex { regex: String, source: regex::Error },
    #[error("{0}")]
    Options(String),
    #[error("{0:?} is not a shard: K/N with 1 ≤ K ≤ N ≤ {MAX_SHARDS} (e.g. 2/8)")]
    Shard(String),
    #[error("{path}: cannot read: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: line {line}: not a torchtrace record: {source}")]
    Json {
        path: String,
        line: usize,
        source: serde_json::Error,
    },
    #[error("{path}: records of schema {found}; this torchtrace reads schema {SCHEMA}")]
    Schema { path: String, found: u32 },
    #[error("{path}: line {line}: {what}")]
    Layout {
        path: String,
        line: usize,
        what: String,
    },
    #[error("{0}")]
    Mismatch(String),
    #[error("no records given")]
    Empty,
}

/// What `batch` makes of a campaign's options (defined with the campaign
/// contract, [`crate::campaign`]).
impl CampaignOptions {
    /// How step contexts are selected.
    pub fn selector(&self) -> Result<Selector, RecordError> {
        let re = self.context_regex.as_deref();
        Selector::from_flags(self.context.as_deref(), re).map_err(|source| RecordError::Regex {
            regex: re.unwrap_or_default().to_string(),
            source,
        })
    }

    /// The options of the map step (and of `finalize`).
    pub fn batch_options(&self, quiet: bool) -> Result<BatchOptions, RecordError> {
        let selector = self.selector()?;
        let mut analyses = self.analyses.clone();
        for name in analyses.keys() {
            if !crate::registry::REGISTRY.iter().any(|e| e.name == name) {
                return Err(RecordError::Mismatch(format!(
                    "options for an unknown analysis {name:?}"
                )));
            }
        }
        // What the campaign's own flags say (`--chain`), unless an
        // analysis's options name it.
        for entry in crate::registry::REGISTRY {
            let Some(defaults) = entry.defaults_fn().map(|f| f(self)) else {
                continue;
            };
            if defaults.is_empty() {
                continue;
            }
            let mine = analyses
                .entry(entry.name.to_string())
                .or_insert_with(|| serde_json::json!({}));
            if let Some(obj) = mine.as_object_mut() {
                for (k, v) in defaults {
                    obj.entry(k).or_insert(v);
                }
            }
        }
        let mut plan = AnalysisPlan::new(selector.clone());
        for entry in crate::registry::REGISTRY {
            let Some(add) = entry.add_to_fn() else {
                continue;
            };
            let none = serde_json::json!({});
            let opts = analyses.get(entry.name).unwrap_or(&none);
            plan = add(plan, opts, &selector).map_err(|e| RecordError::Options(e.to_string()))?;
        }
        // The traces read at once share the memory this process may use
        // (`crate::memory`); `batch --memory` sets another pool.
        let plan = plan
            .pooled(crate::memory::Pool::process())
            .capturing(self.capture.clone());
        Ok(BatchOptions {
            selector,
            plan: std::sync::Arc::new(plan),
            manifest: self.manifest.clone(),
            quiet,
            buffer_limit: run::BUFFER_LIMIT,
            exclude: None,
            campaign: self.clone(),
        })
    }
}

/// The most shards a campaign may be split into. Assigning units costs a
/// word per shard, so N is bounded (issue 17: `--shard 1/4294967297`
/// aborted); a campaign of more units than this is not one to shard finer.
pub const MAX_SHARDS: usize = 65_536;

/// `K/N`: the K-th of N shards, 1 ≤ K ≤ N ≤ [`MAX_SHARDS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "RawShard")]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// A shard as a records header writes it, checked into a [`Shard`].
#[derive(Deserialize)]
struct RawShard {
    index: usize,
    count: usize,
}

impl TryFrom<RawShard> for Shard {
    type Error = RecordError;

    fn try_from(r: RawShard) -> Result<Shard, RecordError> {
        Shard::new(r.index, r.count)
    }
}

impl Shard {
    /// The whole campaign.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// The `index`-th of `count` shards, if 1 ≤ index ≤ count ≤ [`MAX_SHARDS`].
    pub fn new(index: usize, count: usize) -> Result<Shard, RecordError> {
        if index == 0 || index > count || count > MAX_SHARDS {
            return Err(RecordError::Shard(format!("{index}/{count}")));
        }
        Ok(Shard { index, count })
    }
}

impl std::str::FromStr for Shard {
    type Err = RecordError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || RecordError::Shard(s.to_string());
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        Shard::new(index, count).map_err(|_| bad())
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Everything known about a campaign before any trace is read: the first
/// line of every records file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub schema: u32,
    /// The version that wrote it.
    pub torchtrace: String,
    /// A fingerprint of (options, inputs, plans): records of one campaign
    /// share it.
    pub campaign: String,
    pub options: CampaignOptions,
    /// How contexts were selected, as the outputs say it.
    pub context: String,
    /// Which share of the units these records hold.
    pub shard: Shard,
    pub inputs: Vec<Input>,
    /// Every input's whole plan: merge finds the units no row covers.
    pub plans: Vec<Plan>,
    /// Notes of planning (duplicate inputs).
    pub notes: Vec<String>,
}

/// Lists the inputs of a campaign, marks duplicates and fixes the plan of
/// every input: what every shard and worker starts from. `exclude`: a
/// directory left out of walks (the output directory).
pub fn plan_campaign(
    paths: &[PathBuf],
    options: CampaignOptions,
    exclude: Option<&Path>,
) -> Result<Header, RecordError> {
    let selector = options.selector()?;
    // Chains are checked here, before anything is read.
    options.batch_options(true)?;
    let inputs = super::resolve_inputs(paths);
    let mut plans: Vec<Plan> = inputs.iter().map(|i| run::plan(i, exclude)).collect();
    if !options.capture.is_empty() {
        one_run_for_captures(&inputs, &plans)?;
    }
    let notes = super::dedup::mark(&inputs, &mut plans);
    let mut header = Header {
        schema: SCHEMA,
        torchtrace: env!("CARGO_PKG_VERSION").to_string(),
        campaign: String::new(),
        options,
        context: selector.describe(),
        shard: Shard::ALL,
        inputs,
        plans,
        notes,
    };
    header.campaign = header.fingerprint();
    Ok(header)
}

/// `--capture` gives the same capture traces to every trace, so a campaign
/// that takes it must be one run: its worker traces in one folder (the
/// ranks of a run). Across runs, AR's captures would be offered to MTP's
/// replays, and on CUDA, where a capture names no kernel, a replay of as
/// many activities of the same kinds would match them.
fn one_run_for_captures(inputs: &[Input], plans: &[Plan]) -> Result<(), RecordError> {
    use crate::tracefile::inputs::{classify, Kind};
    let mut folders: Vec<String> = Vec::new();
    for (input, plan) in inputs.iter().zip(plans) {
        let found: Vec<String> = match plan {
            Plan::Directory(files, _) => files
                .iter()
                .filter(|f| f.kind() == Kind::Worker)
                .map(|f| {
                    let base = input.path.trim_end_matches('/');
                    let rel = f.rel.rsplit_once('/').map_or("", |(d, _)| d);
                    format!("{base}/{rel}")
                })
                .collect(),
            Plan::File { .. } if classify(&input.path, true) == Kind::Worker => {
                let p = Path::new(&input.path).parent().unwrap_or(Path::new(""));
                vec![format!("{}/", p.display())]
            }
            Plan::Tar { .. } | Plan::Zip(_) => {
                return Err(RecordError::Options(format!(
                    "--capture: {} is an archive; give the capture traces of one run with that run's folder \
                     (or leave capture_traces/ beside the traces)",
                    input.path
                )))
            }
            _ => Vec::new(),
        };
        for f in found {
            if !folders.contains(&f) {
                folders.push(f);
            }
        }
    }
    if folders.len() > 1 {
        folders.sort();
        return Err(RecordError::Options(format!(
            "--capture gives the same capture traces to every trace, so it takes one run (its worker traces in one \
             folder); these inputs hold worker traces in {} folders ({}): leave each run's capture_traces/ beside \
             its traces instead",
            folders.len(),
            folders.join(", ")
        )));
    }
    Ok(())
}

/// One unit of work with everything a worker needs to read it: the task a
/// distributed engine ships (small: no other input's plan travels).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub options: CampaignOptions,
    /// Index of its input in the campaign.
    pub input_index: usize,
    pub input: Input,
    pub unit: Unit,
    /// The shard it belongs to for `count` shards = number of tasks.
    pub shard: usize,
}

impl Task {
    /// The task with every path it opens made absolute (against this
    /// process's working directory), for workers that run elsewhere; the
    /// labels, as given, are kept.
    pub fn absolute(mut self) -> Task {
        let abs = |p: &mut PathBuf| {
            if let Ok(a) = std::path::absolute(&*p) {
                *p = a;
            }
        };
        abs(&mut self.input.fs_path);
        self.options.capture.capture.iter_mut().for_each(abs);
        if let Plan::Directory(files, _) = &mut self.unit.plan {
            files.iter_mut().for_each(|f| abs(&mut f.path));
        }
        self
    }

    /// Reads the unit's files (in parallel where it holds several).
    pub fn run(&self, quiet: bool) -> Result<Vec<FileResult>, RecordError> {
        let opts = self.options.batch_options(quiet)?;
        let progress = run::Progress::new(self.unit.bytes, true);
        let rows = run::process(
            self.input_index,
            &self.input,
            self.unit.plan.clone(),
            &opts,
            &progress,
        );
        progress.finish();
        Ok(rows)
    }

    /// The failed rows of this unit when it could not be read (the worker
    /// died, the task raised): one per file it would have read.
    pub fn failed(&self, why: &str) -> Vec<FileResult> {
        self.unit
            .plan
            .failed_rows(self.input_index, &self.input, why)
    }
}

/// Every unit of the campaign with its input index, in plan order.
fn units(header: &Header) -> Vec<(usize, Unit)> {
    header
        .plans
        .iter()
        .zip(&header.inputs)
        .enumerate()
        .flat_map(|(i, (p, input))| p.units(input).into_iter().map(move |u| (i, u)))
        .collect()
}

/// Every unit of the campaign with its input index and shard (of `count`).
fn assigned_units(header: &Header, count: usize) -> Vec<(usize, Unit, usize)> {
    let mut units = units(header);
    let shards = assign(&units, count.max(1));
    units
        .drain(..)
        .zip(shards)
        .map(|((i, u), s)| (i, u, s))
        .collect()
}

/// Greedy balancing by bytes (see the module docs); shard numbers 1..=n.
fn assign(units: &[(usize, Unit)], n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by(|&a, &b| {
        let (ia, ua) = &units[a];
        let (ib, ub) = &units[b];
        ub.bytes
            .cmp(&ua.bytes)
            .then_with(|| ua.label.cmp(&ub.label))
            .then_with(|| ia.cmp(ib))
            .then_with(|| a.cmp(&b))
    });
    // The lightest shard, ties to the lowest: a min-heap of (load, shard),
    // so assigning is O(units · log n) whatever n is.
    let mut load: std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize)>> =
        (0..n).map(|k| std::cmp::Reverse((0, k))).collect();
    let mut out = vec![0; units.len()];
    for u in order {
        let std::cmp::Reverse((l, k)) = load.pop().unwrap_or(std::cmp::Reverse((0, 0)));
        load.push(std::cmp::Reverse((l.saturating_add(units[u].1.bytes), k)));
        out[u] = k + 1;
    }
    out
}

impl Header {
    /// A stable fingerprint (FNV-1a, 64 bits) of what makes the campaign.
    fn fingerprint(&self) -> String {
        let text = crate::record::with_internals(|| {
            serde_json::to_string(&(&self.options, &self.inputs, &self.plans)).unwrap_or_default()
        });
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in text.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        format!("{h:016x}")
    }

    /// This header for one shard of the campaign.
    pub fn for_shard(&self, shard: Shard) -> Header {
        Header {
            shard,
            ..self.clone()
        }
    }

    /// The plan of each input restricted to the units of `shard`.
    pub fn shard_plans(&self, shard: Shard) -> Vec<Plan> {
        let mut parts: Vec<Vec<Plan>> = vec![Vec::new(); self.inputs.len()];
        for (i, u, s) in assigned_units(self, shard.count) {
            if s == shard.index {
                parts[i].push(u.plan);
            }
        }
        parts.into_iter().map(Plan::join).collect()
    }

    /// One task per unit (shard numbers for as many shards as tasks).
    pub fn tasks(&self) -> Vec<Task> {
        units(self)
            .into_iter()
            .enumerate()
            .map(|(k, (i, unit))| Task {
                options: self.options.clone(),
                input_index: i,
                input: self.inputs[i].clone(),
                unit,
                shard: k + 1,
            })
            .collect()
    }
}

/// Reads the units of one shard (all of them for [`Shard::ALL`]), in
/// parallel, with a progress bar on a terminal.
pub fn map(header: &Header, shard: Shard, opts: &BatchOptions) -> Vec<FileResult> {
    let plans = header.shard_plans(shard);
    let total: u64 = plans
        .iter()
        .zip(&header.inputs)
        .map(|(p, i)| p.bytes(i))
        .sum();
    let progress = run::Progress::new(total, opts.quiet);
    let mut files = Vec::new();
    for (idx, (input, plan)) in header.inputs.iter().zip(plans).enumerate() {
        files.extend(run::process(idx, input, plan, opts, &progress));
    }
    progress.finish();
    files
}

#[cfg(test)]
mod tests;
