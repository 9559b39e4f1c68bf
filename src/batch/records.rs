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

use super::inputs::Input;
use super::run::{self, Plan, Unit};
use super::{BatchOptions, BatchResult, FileResult, Manifest};
use crate::analysis::Plan as AnalysisPlan;
use crate::trace::ReadOptions;
use crate::Selector;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
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

/// What the analyses of a campaign need, in a form that travels to every
/// shard and worker (the command line's `--context`, `--context-regex`,
/// `--chain`, `--manifest`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CampaignOptions {
    pub context: Option<String>,
    pub context_regex: Option<String>,
    /// Chains for the hierarchy tables, "a>b>c"; empty: the default chains
    /// (the same as `plot`'s, so Table 9 and figure 4 agree).
    pub chains: Vec<String>,
    /// Rows of `--manifest`, applied at merge.
    pub manifest: Option<Manifest>,
    /// Each analysis's own options by its name, as its `Options` type
    /// defines them (a missing analysis or key: its default). Every
    /// analysis of the registry with options runs on every worker trace.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub analyses: BTreeMap<String, serde_json::Value>,
}

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
            if !crate::analyses::REGISTRY.iter().any(|e| e.name == name) {
                return Err(RecordError::Mismatch(format!(
                    "options for an unknown analysis {name:?}"
                )));
            }
        }
        // What the campaign's own flags say (`--chain`), unless an
        // analysis's options name it.
        for entry in crate::analyses::REGISTRY {
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
        for entry in crate::analyses::REGISTRY {
            let Some(add) = entry.add_to_fn() else {
                continue;
            };
            let none = serde_json::json!({});
            let opts = analyses.get(entry.name).unwrap_or(&none);
            plan = add(plan, opts, &selector).map_err(|e| RecordError::Options(e.to_string()))?;
        }
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

/// The records of one shard (or of a whole campaign, or of one task's
/// unit): its header, its rows, and whether it got to its end line.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSet {
    pub header: Header,
    pub files: Vec<FileResult>,
    /// False when the end line is missing: the shard stopped early.
    pub complete: bool,
}

/// One line of a records file, as read.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Line {
    Header(Box<Header>),
    File(Box<FileResult>),
    End { files: usize },
}

/// One line of a records file, as written (the same JSON as [`Line`],
/// borrowing what it writes).
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum LineOut<'a> {
    Header(&'a Header),
    File(&'a FileResult),
    End { files: usize },
}

/// A record line, internals included.
fn to_line(l: &LineOut<'_>) -> String {
    crate::record::with_internals(|| serde_json::to_string(l).unwrap_or_default())
}

/// Writes a records file: header, one line per file, end line.
pub fn write_records<W: Write>(
    mut w: W,
    header: &Header,
    files: &[FileResult],
) -> std::io::Result<()> {
    crate::record::with_internals(|| -> std::io::Result<()> {
        let line = |w: &mut W, l: &LineOut<'_>| -> std::io::Result<()> {
            serde_json::to_writer(&mut *w, l)?;
            w.write_all(b"\n")
        };
        line(&mut w, &LineOut::Header(header))?;
        for f in files {
            line(&mut w, &LineOut::File(f))?;
        }
        line(&mut w, &LineOut::End { files: files.len() })?;
        w.flush()
    })
}

/// One file's row as a JSON record line (`{"file":{…}}`), internals included.
pub fn file_line(f: &FileResult) -> String {
    to_line(&LineOut::File(f))
}

/// A header as a JSON record line (`{"header":{…}}`).
pub fn header_line(h: &Header) -> String {
    to_line(&LineOut::Header(h))
}

/// Reads a records file (`-`: stdin). A file that stops before its end
/// line is kept, marked incomplete (its shard did not finish).
pub fn read_records(path: &Path, read: &ReadOptions) -> Result<RecordSet, RecordError> {
    let shown = path.display().to_string();
    let io = |source| RecordError::Io {
        path: shown.clone(),
        source,
    };
    let reader: Box<dyn BufRead> = if path == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(path).map_err(io)?,
        ))
    };
    parse_lines(
        &shown,
        CappedLines::new(reader, read.max_event_bytes, shown.clone()),
    )
}

/// The lines of a records file, each at most `limit` bytes (the limit on
/// one trace event, `TORCHTRACE_MAX_EVENT_SIZE`): a longer line is an
/// error naming the file and line, read no further than the limit, so a
/// huge line is never held whole. A UTF-8 byte-order mark before the first
/// line is dropped.
struct CappedLines<R> {
    reader: R,
    limit: u64,
    shown: String,
    line: usize,
    done: bool,
}

impl<R: BufRead> CappedLines<R> {
    fn new(reader: R, limit: u64, shown: String) -> Self {
        CappedLines {
            reader,
            limit,
            shown,
            line: 0,
            done: false,
        }
    }

    /// The next line's bytes without its `\n`; `None` at the end.
    fn next_bytes(&mut self) -> Result<Option<Vec<u8>>, RecordError> {
        let mut buf = Vec::new();
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(RecordError::Io {
                        path: self.shown.clone(),
                        source,
                    })
                }
            };
            if chunk.is_empty() {
                return Ok((!buf.is_empty()).then_some(buf));
            }
            let (take, end) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            if (buf.len() + take) as u64 > self.limit {
                return Err(self.too_long());
            }
            buf.extend_from_slice(&chunk[..take]);
            self.reader.consume(take + usize::from(end));
            if end {
                return Ok(Some(buf));
            }
        }
    }

    /// The error for a line over the limit.
    fn too_long(&self) -> RecordError {
        RecordError::Layout {
            path: self.shown.clone(),
            line: self.line,
            what: format!(
                "the line is longer than the {} limit on one record line (set {}, e.g. to 1G, to raise it)",
                crate::trace::message::size(self.limit),
                crate::trace::MAX_EVENT_SIZE_ENV
            ),
        }
    }
}

impl<R: BufRead> Iterator for CappedLines<R> {
    type Item = Result<String, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.line += 1;
        let res = self.next_bytes().and_then(|bytes| {
            let Some(mut bytes) = bytes else {
                return Ok(None);
            };
            if self.line == 1 && bytes.starts_with(b"\xef\xbb\xbf") {
                bytes.drain(..3);
            }
            if bytes.last() == Some(&b'\r') {
                bytes.pop();
            }
            String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| RecordError::Layout {
                    path: self.shown.clone(),
                    line: self.line,
                    what: "not UTF-8 text".into(),
                })
        });
        match res {
            Ok(Some(text)) => Some(Ok(text)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Parses record lines (`{"header":…}`, `{"file":…}`, `{"end":…}`).
pub fn parse_lines<I>(shown: &str, lines: I) -> Result<RecordSet, RecordError>
where
    I: IntoIterator<Item = Result<String, RecordError>>,
{
    let layout = |line: usize, what: &str| RecordError::Layout {
        path: shown.to_string(),
        line,
        what: what.to_string(),
    };
    let mut header: Option<Header> = None;
    let mut files = Vec::new();
    let mut ended: Option<usize> = None;
    let mut lines = lines.into_iter().enumerate().peekable();
    while let Some((n, text)) = lines.next() {
        let (n, text) = (n + 1, text?);
        if text.trim().is_empty() {
            continue;
        }
        if ended.is_some() {
            return Err(layout(n, "a line after the end line"));
        }
        let mut parsed: Result<Line, _> = serde_json::from_str(&text);
        if parsed.is_err() {
            // Results are decoded through their registry entry, which
            // reports a syntax error as a data error: ask the plain parser
            // what is wrong with the text itself.
            if let Err(syntax) = serde_json::from_str::<serde::de::IgnoredAny>(&text) {
                // A writer stopped mid-line: the last line ends early. The
                // shard is incomplete, not unreadable.
                if syntax.is_eof() && header.is_some() && lines.peek().is_none() {
                    break;
                }
                parsed = Err(syntax);
            }
        }
        let parsed: Line = parsed.map_err(|source| {
            schema_of(&text)
                .filter(|&s| s != SCHEMA)
                .map(|found| RecordError::Schema {
                    path: shown.to_string(),
                    found,
                })
                .unwrap_or(RecordError::Json {
                    path: shown.to_string(),
                    line: n,
                    source,
                })
        })?;
        match (parsed, &header) {
            (Line::Header(h), None) if h.schema != SCHEMA => {
                return Err(RecordError::Schema {
                    path: shown.to_string(),
                    found: h.schema,
                })
            }
            (Line::Header(h), None) => header = Some(*h),
            (Line::Header(_), Some(_)) => return Err(layout(n, "a second header")),
            (_, None) => return Err(layout(n, "records must start with a header line")),
            (Line::File(f), Some(_)) => files.push(*f),
            (Line::End { files: count }, Some(_)) if count != files.len() => {
                return Err(layout(
                    n,
                    &format!(
                        "the end line counts {count} files, {} precede it",
                        files.len()
                    ),
                ))
            }
            (Line::End { .. }, Some(_)) => ended = Some(n),
        }
    }
    let header = header.ok_or_else(|| layout(0, "empty: no header line"))?;
    Ok(RecordSet {
        header,
        files,
        complete: ended.is_some(),
    })
}

/// The schema a header line of another version declares, if it does.
fn schema_of(text: &str) -> Option<u32> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    v.get("header")?.get("schema")?.as_u64()?.try_into().ok()
}

/// Merges the records of one or more campaigns into what `batch` finds.
///
/// Records of one campaign (same fingerprint) are its shards: each shard
/// may come once; every unit that no row covers — its shard's records
/// missing or cut short, its task lost — becomes failed rows saying why,
/// so nothing is silently missing. Several campaigns (made with the same
/// options) are combined as if their PATHs had been given together.
pub fn merge(sets: Vec<RecordSet>, quiet: bool) -> Result<(BatchResult, String), RecordError> {
    let first = sets.first().ok_or(RecordError::Empty)?;
    let opts = first.header.options.batch_options(quiet)?;
    merge_with(sets, &opts)
}

/// [`merge`] with the options of the map step.
pub fn merge_with(
    sets: Vec<RecordSet>,
    opts: &BatchOptions,
) -> Result<(BatchResult, String), RecordError> {
    let first = sets.first().ok_or(RecordError::Empty)?;
    let options = first.header.options.clone();
    let context = first.header.context.clone();
    if let Some(other) = sets.iter().find(|s| s.header.options != options) {
        return Err(RecordError::Mismatch(format!(
            "records of campaign {} and {} were made with different options (--context, --chain, --manifest): merge them separately",
            first.header.campaign, other.header.campaign
        )));
    }
    // Campaigns in order of first appearance.
    let mut campaigns: Vec<Vec<RecordSet>> = Vec::new();
    for s in sets {
        match campaigns
            .iter_mut()
            .find(|c| c[0].header.campaign == s.header.campaign)
        {
            Some(c) => c.push(s),
            None => campaigns.push(vec![s]),
        }
    }
    let (mut inputs, mut files, mut notes) = (Vec::new(), Vec::new(), Vec::new());
    let mut campaign_of: Vec<usize> = Vec::new();
    for (c, sets) in campaigns.into_iter().enumerate() {
        let offset = inputs.len();
        let (header, rows) = merge_campaign(sets)?;
        campaign_of.extend(std::iter::repeat_n(c, header.inputs.len()));
        inputs.extend(header.inputs);
        notes.extend(header.notes);
        files.extend(rows.into_iter().map(|mut r| {
            r.input = r.input.saturating_add(offset);
            r
        }));
    }
    notes.extend(shared_traces(&mut files, &campaign_of));
    let mut res = super::finalize(inputs, files, opts);
    res.notes.extend(notes);
    Ok((res, context))
}

/// Worker traces that the records of several campaigns hold (the same
/// trace given to two campaigns): counted once, as `batch` over all their
/// PATHs would. Two rows are the same trace when they agree on size and on
/// every figure (each context's exact times included), labels aside; the
/// later row becomes `skipped`, "duplicate of FIRST", without figures.
fn shared_traces(files: &mut [FileResult], campaign_of: &[usize]) -> Option<String> {
    if campaign_of.last().is_none_or(|&c| c == 0) {
        return None;
    }
    let campaign = |f: &FileResult| campaign_of.get(f.input).copied();
    let mut first: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut dups = 0usize;
    for k in 0..files.len() {
        let f = &files[k];
        if f.kind != super::Kind::Worker || f.status != super::Status::Ok {
            continue;
        }
        let Some(key) = trace_fingerprint(f) else {
            continue;
        };
        match first.get(&key) {
            Some(&j) if campaign(&files[j]) != campaign(&files[k]) => {
                let why = format!(
                    "duplicate of {} (in the records of another campaign)",
                    files[j].path
                );
                let f = &mut files[k];
                f.status = super::Status::Skipped;
                f.error = Some(why);
                f.results = Default::default();
                dups += 1;
            }
            Some(_) => {}
            None => {
                first.insert(key, k);
            }
        }
    }
    (dups > 0).then(|| {
        format!(
            "{dups} worker trace(s) are in the records of more than one campaign (same size and figures): counted once, listed as skipped, \"duplicate of …\""
        )
    })
}

/// What identifies a trace's content in a record: its size and figures,
/// labels blanked.
fn trace_fingerprint(f: &FileResult) -> Option<String> {
    if f.results.is_empty() {
        return None;
    }
    let mut v = crate::record::with_internals(|| serde_json::to_value(&f.results).ok())?;
    for (_, figures) in v.as_object_mut()?.iter_mut() {
        if let Some(obj) = figures.as_object_mut() {
            obj.remove("path");
        }
    }
    serde_json::to_string(&(f.size, &v)).ok()
}

/// Every row must be one the campaign's plans can give: of an input it
/// has, of a file or member its plan lists (a tar's members are not
/// listed: their names must be safe), once; and a worker trace read
/// without error carries its figures.
fn check_rows(header: &Header, files: &[FileResult]) -> Result<(), RecordError> {
    let bad = |f: &FileResult, what: String| {
        RecordError::Mismatch(format!(
            "campaign {}: the record of {:?} {what}: records edited, or of another campaign? (nothing was written)",
            header.campaign,
            crate::trace::message::clip_str(&f.path)
        ))
    };
    let mut labels: Vec<Option<std::collections::HashSet<String>>> =
        vec![None; header.inputs.len()];
    let mut seen: std::collections::HashSet<(usize, &str, u64)> = std::collections::HashSet::new();
    for f in files {
        let (Some(input), Some(plan)) = (header.inputs.get(f.input), header.plans.get(f.input))
        else {
            return Err(bad(
                f,
                format!(
                    "names input {} of a campaign of {} input(s)",
                    f.input,
                    header.inputs.len()
                ),
            ));
        };
        if !seen.insert((f.input, f.path.as_str(), f.ordinal)) {
            return Err(bad(f, "is given twice".into()));
        }
        let whole = f.path == input.path;
        let known = match plan {
            Plan::Directory(dir, issues) => labels[f.input]
                .get_or_insert_with(|| {
                    dir.iter()
                        .map(|d| input.label(&d.rel))
                        .chain(issues.iter().map(|i| input.label(&i.rel)))
                        .collect()
                })
                .contains(&f.path),
            Plan::Zip(members) => {
                whole
                    || members.iter().any(|m| {
                        m.index as u64 == f.ordinal
                            && (f.status != super::Status::Ok
                                || super::inputs::normalize_member(&m.name)
                                    .is_ok_and(|rel| input.label(&rel) == f.path))
                    })
            }
            Plan::Tar { .. } => {
                whole
                    || f.status != super::Status::Ok
                    || f.path
                        .strip_prefix(input.prefix.as_str())
                        .is_some_and(|rel| {
                            super::inputs::normalize_member(rel).is_ok_and(|n| n == rel)
                        })
            }
            Plan::File { .. } | Plan::Broken(_) => whole,
            Plan::Elsewhere => false,
        };
        if !known {
            return Err(bad(
                f,
                format!(
                    "is of a file that input {} ({}) does not hold",
                    f.input,
                    crate::trace::message::clip_str(&input.path)
                ),
            ));
        }
        if f.kind == super::Kind::Worker && f.status == super::Status::Ok {
            // Every analysis of a batch's plan gives figures for a trace
            // read without error.
            let missing = crate::analyses::REGISTRY
                .iter()
                .filter(|e| e.add_to_fn().is_some())
                .find(|e| !f.results.contains_key(e.key));
            if let Some(e) = missing {
                return Err(bad(
                    f,
                    format!(
                        "says the trace was read without error but holds no figures (of {}; records made by a torchtrace without that analysis in batch must be made again)",
                        e.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The shards of one campaign: their rows, and failed rows for every
/// unit none of them covers.
fn merge_campaign(sets: Vec<RecordSet>) -> Result<(Header, Vec<FileResult>), RecordError> {
    let header = sets[0].header.clone();
    let count = header.shard.count;
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    let mut cut_short: BTreeSet<usize> = BTreeSet::new();
    let mut files = Vec::new();
    for s in sets {
        if s.header.shard.count != count {
            return Err(RecordError::Mismatch(format!(
                "campaign {}: shards of {} and of {} given: use the records of one split",
                header.campaign, count, s.header.shard.count
            )));
        }
        if !seen.insert(s.header.shard.index) {
            return Err(RecordError::Mismatch(format!(
                "campaign {}: shard {} given twice",
                header.campaign, s.header.shard
            )));
        }
        if !s.complete {
            cut_short.insert(s.header.shard.index);
        }
        files.extend(s.files);
    }
    check_rows(&header, &files)?;
    let mut by_input: Vec<run::RowsOf> = std::iter::repeat_with(Default::default)
        .take(header.inputs.len())
        .collect();
    for f in &files {
        if let Some(v) = by_input.get_mut(f.input) {
            v.add(f);
        }
    }
    let mut missing = Vec::new();
    for (i, unit, shard) in assigned_units(&header, count) {
        let input = &header.inputs[i];
        if unit.plan.covered_by(input, &by_input[i]) {
            continue;
        }
        let on = Shard {
            index: shard,
            count,
        };
        let why = if !seen.contains(&shard) {
            format!("not analysed: the records of shard {on} were not given")
        } else if cut_short.contains(&shard) {
            format!("not analysed: the records of shard {on} end early (the shard did not finish)")
        } else {
            format!("not analysed: no record in shard {on}")
        };
        missing.extend(unit.plan.failed_rows(i, input, &why));
    }
    files.extend(missing);
    Ok((header, files))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(bytes: u64, label: &str) -> (usize, Unit) {
        (
            0,
            Unit {
                plan: Plan::Elsewhere,
                bytes,
                label: label.into(),
            },
        )
    }

    #[test]
    fn shards_parse() {
        assert_eq!(
            "2/8".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 8 }
        );
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    /// Largest first, each to the least-loaded shard:
    ///
    /// ```text
    /// units, largest first:  e:9  a:5  b:5  c:3  d:1
    /// shard 1  e        9
    /// shard 2  a  c     8     a before b: equal bytes, by label
    /// shard 3  b  d     6
    /// ```
    #[test]
    fn assignment_balances_bytes_and_is_stable() {
        let units = vec![
            unit(5, "a"),
            unit(5, "b"),
            unit(3, "c"),
            unit(1, "d"),
            unit(9, "e"),
        ];
        // e→1 (9); a→2 (5); b→3 (5); c→2 (8); d→3 (6).
        assert_eq!(assign(&units, 3), vec![2, 3, 2, 3, 1]);
        assert_eq!(assign(&units, 1), vec![1; 5]);
        let mut rev = units.clone();
        rev.reverse();
        let mut back = assign(&rev, 3);
        back.reverse();
        assert_eq!(back, assign(&units, 3), "input order does not matter");
    }

    #[test]
    fn records_need_a_header_and_count_their_rows() {
        let lines = |v: &[&str]| -> Vec<Result<String, RecordError>> {
            v.iter().map(|s| Ok(s.to_string())).collect()
        };
        let e = parse_lines("r.jsonl", lines(&[r#"{"end":{"files":0}}"#])).unwrap_err();
        assert!(e.to_string().contains("start with a header"), "{e}");
        let e = parse_lines("r.jsonl", lines(&["{not json"])).unwrap_err();
        assert!(e.to_string().contains("r.jsonl: line 1"), "{e}");
        let e = parse_lines("r.jsonl", lines(&[r#"{"header":{"schema":99}}"#])).unwrap_err();
        assert!(matches!(e, RecordError::Schema { found: 99, .. }), "{e}");
        let e = parse_lines("r.jsonl", lines(&[])).unwrap_err();
        assert!(e.to_string().contains("no header"), "{e}");
    }

    /// A records file cut anywhere, or with any line dropped, is an error
    /// naming its line or an incomplete set: never a panic, never a set
    /// that claims to be complete.
    #[test]
    fn cut_or_damaged_records_never_pass_as_complete() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let options = CampaignOptions::default();
        let opts = options.batch_options(true).unwrap();
        let header = plan_campaign(&[root.join("sample_traces/text_mtp")], options, None).unwrap();
        let files = map(&header, Shard::ALL, &opts);
        let mut text = Vec::new();
        write_records(&mut text, &header, &files).unwrap();
        let text = String::from_utf8(text).unwrap();
        let parse = |t: &str| parse_lines("r", t.split('\n').map(|l| Ok(l.to_string())));
        assert!(parse(&text).unwrap().complete);
        let step = (text.len() / 397).max(1);
        for cut in (0..text.len()).step_by(step) {
            if !text.is_char_boundary(cut) {
                continue;
            }
            if let Ok(set) = parse(&text[..cut]) {
                assert!(!set.complete, "cut at {cut} of {}", text.len());
            }
        }
        let lines: Vec<&str> = text.lines().collect();
        for drop in 1..lines.len() - 1 {
            let mut l = lines.clone();
            l.remove(drop);
            let e = parse(&l.join("\n")).unwrap_err();
            assert!(e.to_string().contains("the end line counts"), "{e}");
        }
    }

    /// Every figure survives the trip through JSON exactly (floats
    /// included), on every kind of file of the sample campaign and on
    /// real traces of other shapes.
    #[test]
    fn records_round_trip_exactly() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let paths = [root.join("sample_traces"), root.join("tests/data")];
        let options = CampaignOptions::default();
        let opts = options.batch_options(true).unwrap();
        let header = plan_campaign(&paths, options, None).unwrap();
        let files = map(&header, Shard::ALL, &opts);
        assert!(files.iter().filter(|f| f.results.facts().is_some()).count() >= 7);
        let mut text = Vec::new();
        write_records(&mut text, &header, &files).unwrap();
        let lines = text
            .split(|&b| b == b'\n')
            .map(|l| Ok(String::from_utf8(l.to_vec()).unwrap()));
        let back = parse_lines("mem", lines).unwrap();
        assert!(back.complete);
        assert_eq!(back.header, header);
        assert_eq!(back.files.len(), files.len());
        for (a, b) in back.files.iter().zip(&files) {
            assert_eq!(a, b, "{}", b.path);
        }
    }
}
