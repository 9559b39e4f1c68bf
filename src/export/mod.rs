//! `torchtrace export` (issue 36): every linked event of a trace as Apache
//! Parquet tables — `activities`, `launches`, `ops`, `steps` — with exact
//! int64 ns times, for notebooks, DuckDB and polars.
//!
//! Not an analysis of the registry: it writes files, not a report. It is a
//! library call, [`run`], that the command line and the Python package
//! wrap. The read is the engine's (`analysis::drive` through a [`Plan`]
//! holding the streaming state [`Export`], an [`Analysis`]); the rules are
//! the `ops` analysis's own (`hostops::HostLinks::keep`, the neutral module
//! both build on: the same events, the same C1/C2 rules and links, so the
//! counts agree with `ops` by construction). The host ops are kept per
//! thread with their External ids and input texts (`lanes`), each
//! activity's launch configuration as an id of the distinct ones
//! (`Configs`).
//!
//! ```text
//! TRACE… ─ read_all (traces side by side, -j) ─► Export::push (calls, activities: ops' records;
//!            host ops: lanes.rs, per thread; launch configurations: Configs)
//!            finish, per trace (link.rs): step windows C8/I6, one containment sweep per thread
//!            (C4–C5, O2, O4) ─► ops table, host ops dropped ─► owners C3, launch figures O6
//!            ─► activities, launches, steps tables (write.rs: DIR/.torchtrace-export-<pid>-<nonce>/<n>.<table>.parquet)
//! run, in trace order: one trace → rename each part to DIR/<table>.parquet;
//!            several → the parts copied batch by batch into <that folder>/<table>.parquet.partial,
//!            renamed to DIR/<table>.parquet; the temporary folder removed
//! ```
//!
//! A file under its final name is always complete: an unwritable DIR or a
//! full disk is an [`ExportError`] naming the file, and the partial files
//! are removed. Issue 59: the temporary folder is made exclusively under a
//! fresh name (never an existing one, never through a planted symbolic
//! link) and every file in it is created new (`O_EXCL`); DIR is locked
//! for the run ([`LOCK_FILE`]), so a second export into it at once fails
//! clearly; the same trace given twice is exported once, with a note.

pub mod campaign;
mod lanes;
mod link;
pub mod report;
mod write;

#[cfg(test)]
mod tests;

use crate::allocator::{AllocEvents, MEMORY_EVENT};
use crate::analysis::{Analysis, Finished, Plan};
use crate::command::{self, ApiError, Common, Message, Outcome};
use crate::hostops::{HostLinks, Kept};
use crate::model::LaneTable;
use crate::store::pack::{Fields, Packed, Record, Records};
use crate::trace::{Event, EventPos, Prefilter};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub use campaign::{CampaignPart, CampaignTables};
pub use report::{ExportReport, TableFile, TracePart};

/// The tables, in the order they are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Table {
    /// One row per GPU activity (kernel, memcpy, memset).
    Activities,
    /// One row per runtime/driver call.
    Launches,
    /// One row per host op.
    Ops,
    /// One row per step annotation (C8).
    Steps,
    /// One row per `[memory]` event (VIEWS.md M1–M2, M5).
    Memory,
}

impl Table {
    pub const ALL: [Table; 5] = [
        Table::Activities,
        Table::Launches,
        Table::Ops,
        Table::Steps,
        Table::Memory,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Table::Activities => "activities",
            Table::Launches => "launches",
            Table::Ops => "ops",
            Table::Steps => "steps",
            Table::Memory => "memory",
        }
    }

    /// The file name under the output directory.
    pub fn file_name(self) -> String {
        format!("{}.parquet", self.as_str())
    }
}

/// The Parquet compression (`--compression`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    #[default]
    Zstd,
    Snappy,
    None,
}

/// What to write, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExportOptions {
    /// The output directory (created if missing).
    pub out: PathBuf,
    /// The tables to write (default: all four).
    pub tables: Vec<Table>,
    pub compression: Compression,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            out: PathBuf::new(),
            tables: Table::ALL.to_vec(),
            compression: Compression::Zstd,
        }
    }
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The call or a trace (as every subcommand says it).
    #[error(transparent)]
    Api(#[from] ApiError),
    /// A file or directory could not be written.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Another export (or `batch --tables`) is writing into the directory
    /// (it holds the lock on [`LOCK_FILE`] there).
    #[error("{dir}: another torchtrace export is writing into this directory (it holds the lock on {lock}); wait for it to end, or write elsewhere", lock = LOCK_FILE)]
    Busy { dir: String },
    /// The Parquet writer refused (the text names the file).
    #[error("{path}: cannot write Parquet: {message}")]
    Parquet { path: String, message: String },
}

impl ExportError {
    fn io(path: &Path, source: std::io::Error) -> ExportError {
        ExportError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

/// What a plan holds: the tables, the codec, the temporary folder and the
/// next part's number.
#[derive(Debug, Clone)]
pub struct ExportConfig {
    tables: Vec<Table>,
    compression: Compression,
    parts: PathBuf,
    next: Arc<AtomicU64>,
}

/// A host op's External id and its `Input Dims` / `Input type` texts (ids
/// in [`Texts`]), kept in its record ([`lanes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ext {
    pub external_id: Option<i64>,
    pub input_dims: Option<u32>,
    pub input_type: Option<u32>,
}

/// The distinct `Input Dims` / `Input type` texts of a trace, each kept
/// once, whole (never cut: the column holds them exactly as written).
#[derive(Debug, Default)]
pub(crate) struct Texts {
    ids: std::collections::HashMap<Box<str>, u32>,
    pub texts: Vec<Box<str>>,
}

impl Texts {
    fn id(&mut self, t: &str) -> u32 {
        if let Some(&i) = self.ids.get(t) {
            return i;
        }
        let i = self.texts.len() as u32;
        self.texts.push(t.into());
        self.ids.insert(t.into(), i);
        i
    }

    pub fn resolve(&self, id: Option<u32>) -> Option<&str> {
        id.and_then(|i| self.texts.get(i as usize)).map(|t| &**t)
    }
}

/// A kernel's launch configuration, kept beside ops' record of the
/// activity (`None` where the trace does not write it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub(crate) struct Config3 {
    pub grid: Option<[i64; 3]>,
    pub block: Option<[i64; 3]>,
    pub registers: Option<i64>,
    pub shared_memory: Option<i64>,
}

impl Record for Config3 {
    type Prev = ();

    fn write(&self, _: &mut (), p: &mut Packed) {
        let flags = u64::from(self.grid.is_some())
            | u64::from(self.block.is_some()) << 1
            | u64::from(self.registers.is_some()) << 2
            | u64::from(self.shared_memory.is_some()) << 3;
        p.u(flags);
        for v in self.grid.iter().chain(&self.block).flatten() {
            p.delta(*v, 0);
        }
        for v in self.registers.iter().chain(&self.shared_memory) {
            p.delta(*v, 0);
        }
    }

    fn read(_: &mut (), f: &mut impl Fields) -> Config3 {
        let flags = f.u();
        let mut dims = |on: bool| on.then(|| [f.delta(0), f.delta(0), f.delta(0)]);
        let grid = dims(flags & 1 != 0);
        let block = dims(flags & 2 != 0);
        let registers = (flags & 4 != 0).then(|| f.delta(0));
        let shared_memory = (flags & 8 != 0).then(|| f.delta(0));
        Config3 {
            grid,
            block,
            registers,
            shared_memory,
        }
    }
}

/// The most distinct launch configurations [`Configs`] keeps once each;
/// later new ones are kept whole in their activity's record, so a trace of
/// all-different configurations costs its records, not a table as large.
const CONFIGS_KEPT: usize = 1 << 16;

/// An activity's launch configuration: its id in [`Configs::list`], or
/// itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConfigRef {
    Id(u32),
    Whole(Config3),
}

impl Record for ConfigRef {
    type Prev = ();
    /// A tag and a whole configuration: nine varints.
    const MAX_BYTES: usize = 96;

    fn write(&self, prev: &mut (), p: &mut Packed) {
        match self {
            ConfigRef::Id(i) => p.u(u64::from(*i) + 1),
            ConfigRef::Whole(c) => {
                p.u(0);
                c.write(prev, p);
            }
        }
    }

    fn read(prev: &mut (), f: &mut impl Fields) -> ConfigRef {
        match f.u() {
            0 => ConfigRef::Whole(Config3::read(prev, f)),
            i => ConfigRef::Id((i - 1) as u32),
        }
    }
}

/// Every activity's launch configuration, in file order: a trace's
/// kernels repeat few configurations (58 in the 702 k activities of the
/// benchmark trace), so each distinct one is kept once and an activity
/// keeps its id (≈ 1 B, where a whole one was ≈ 10 B).
#[derive(Debug, Default)]
pub(crate) struct Configs {
    ids: std::collections::HashMap<Config3, u32>,
    list: Vec<Config3>,
    refs: Records<ConfigRef>,
}

impl Configs {
    fn push(&mut self, c: Config3) {
        let r = match self.ids.get(&c) {
            Some(&i) => ConfigRef::Id(i),
            None if self.list.len() < CONFIGS_KEPT => {
                let i = self.list.len() as u32;
                self.list.push(c);
                self.ids.insert(c, i);
                ConfigRef::Id(i)
            }
            None => ConfigRef::Whole(c),
        };
        self.refs.push(&r);
    }

    /// The configurations in file order, decoded one by one.
    pub fn iter(&self) -> impl Iterator<Item = Config3> + '_ {
        self.refs.iter().map(|r| match r {
            ConfigRef::Id(i) => self.list.get(i as usize).copied().unwrap_or_default(),
            ConfigRef::Whole(c) => c,
        })
    }
}

/// The streaming state of one trace.
pub struct Export {
    config: ExportConfig,
    /// `ops`'s runtime calls and activities (its host ops are kept here,
    /// per thread, in [`lanes::LaneOps`]).
    links: HostLinks,
    ops: lanes::LaneOps,
    texts: Texts,
    launch: Configs,
    /// The `[memory]` events (the memory table) and their threads.
    memory: AllocEvents,
    memory_lanes: LaneTable,
}

impl Analysis for Export {
    const NAME: &'static str = "export";
    const KEY: &'static str = "export";
    type Config = ExportConfig;
    type Output = TracePart;

    fn start(config: &ExportConfig) -> Self {
        Export {
            config: config.clone(),
            links: HostLinks::default(),
            ops: lanes::LaneOps::default(),
            texts: Texts::default(),
            launch: Configs::default(),
            memory: AllocEvents::default(),
            memory_lanes: LaneTable::default(),
        }
    }

    fn prefilter(&self) -> Prefilter {
        self.links
            .prefilter()
            .union(&Prefilter::any_of(&[MEMORY_EVENT]))
    }

    /// `ops`'s rules (C1–C2); a host op is kept with its External id and
    /// input texts, an activity with its launch configuration.
    fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        if ev.name == MEMORY_EVENT {
            let lane = self.memory_lanes.intern(ev.lane());
            return self.memory.keep(ev, at, lane);
        }
        let a = &ev.args;
        match self.links.keep(ev, at) {
            Some(Kept::Host(o)) => {
                let input_dims = a.input_dims.as_deref().map(|t| self.texts.id(t));
                let input_type = a.input_type.as_deref().map(|t| self.texts.id(t));
                self.ops.push(lanes::Op {
                    lane: o.lane,
                    pos: 0,
                    ts: o.ts,
                    dur: o.dur,
                    index: o.index,
                    name: o.name,
                    cat: o.cat,
                    ext: Ext {
                        external_id: a.external_id,
                        input_dims,
                        input_type,
                    },
                });
            }
            Some(Kept::Activity) => self.launch.push(Config3 {
                grid: a.grid,
                block: a.block,
                registers: a.registers,
                shared_memory: a.shared_memory,
            }),
            _ => {}
        }
    }

    fn finish(self, trace: &Finished<'_>) -> TracePart {
        let n = self.config.next.fetch_add(1, Ordering::Relaxed);
        let config = self.config.clone();
        let mut part = link::export_trace(self, trace, n, &config);
        if let Some(e) = trace.error_text() {
            part.complete = false;
            part.error = Some(e);
        }
        part
    }
}

/// The name of the lock file in an output directory: an export (or
/// `batch --tables`) holds an exclusive lock on it while it writes there.
pub const LOCK_FILE: &str = ".torchtrace-export.lock";

/// A fresh temporary folder for this run's parts under `out`, created
/// exclusively (issue 59): `mkdir` of a name no one has used, never an
/// existing folder and never through a symbolic link planted at the name
/// (mkdir does not follow one: it fails and the next name is tried).
/// Owner-only on Unix. The name is `.torchtrace-export-<pid>-<nonce>`;
/// the nonce mixes the clock and a counter, so it is not predictable from
/// the process id alone.
fn parts_dir(out: &Path) -> Result<PathBuf, ExportError> {
    use std::hash::{BuildHasher, Hasher};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let mut last = None;
    for _ in 0..64 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(SEQ.fetch_add(1, Ordering::Relaxed));
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        let dir = out.join(format!(
            ".torchtrace-export-{}-{:016x}",
            std::process::id(),
            h.finish()
        ));
        let mut b = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        match b.create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(ExportError::io(&dir, e)),
        }
    }
    Err(ExportError::io(
        out,
        last.unwrap_or_else(|| std::io::Error::other("no fresh temporary folder name")),
    ))
}

/// `out`'s lock, held for the whole run (issue 59): a second export (or
/// `batch --tables`) into the same directory at the same time fails at
/// once with [`ExportError::Busy`] instead of interleaving its tables with
/// this one's. The lock is the operating system's (`flock` on
/// [`LOCK_FILE`]), so a crashed export leaves no stale lock; the file is
/// opened without following a symbolic link, never written, and removed
/// when the run ends (while still locked). A lock taken on a file that
/// was removed meanwhile is dropped and taken again on the new one.
#[derive(Debug)]
pub(crate) struct DirLock {
    path: PathBuf,
    _file: std::fs::File,
}

impl DirLock {
    fn take(out: &Path) -> Result<DirLock, ExportError> {
        let path = out.join(LOCK_FILE);
        for _ in 0..16 {
            let mut o = std::fs::OpenOptions::new();
            o.read(true).write(true).create(true).truncate(false);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::custom_flags(&mut o, libc::O_NOFOLLOW);
            let f = o.open(&path).map_err(|e| ExportError::io(&path, e))?;
            match f.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(ExportError::Busy {
                        dir: out.display().to_string(),
                    })
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(ExportError::io(&path, e)),
            }
            if same_file(&f, &path) {
                return Ok(DirLock { path, _file: f });
            }
        }
        Err(ExportError::Busy {
            dir: out.display().to_string(),
        })
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Removed while locked; the lock goes with the file handle after.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether the open file `f` is still the one at `path` (not removed and
/// replaced since it was opened).
#[cfg(unix)]
fn same_file(f: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (f.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::File, path: &Path) -> bool {
    path.exists()
}

/// The output directory made ready: created if missing, locked, and a
/// fresh folder for the parts in it.
fn prepare(out: &Path) -> Result<(DirLock, PathBuf), ExportError> {
    std::fs::create_dir_all(out).map_err(|e| ExportError::io(out, e))?;
    let lock = DirLock::take(out)?;
    let parts = parts_dir(out)?;
    Ok((lock, parts))
}

/// The paths with every later occurrence of the same trace left out (the
/// same file, a link to it, or identical content: `tracefile::same`, the
/// rule `batch` uses), and a note for each one left out. Rows of one trace
/// twice would share one `trace` label and break the join key
/// `(trace, id)`.
fn dedup(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<String>) {
    let files: Vec<(usize, &Path, u64)> = paths
        .iter()
        .enumerate()
        .filter(|(_, p)| p.as_os_str() != "-")
        .filter_map(|(i, p)| std::fs::metadata(p).ok().map(|m| (i, p.as_path(), m.len())))
        .collect();
    let pairs: Vec<(&Path, u64)> = files.iter().map(|&(_, p, n)| (p, n)).collect();
    let mut drop = vec![false; paths.len()];
    let mut notes = Vec::new();
    for (k, first) in crate::tracefile::same::duplicates(&pairs) {
        drop[files[k].0] = true;
        notes.push(format!(
            "{} is the same trace as {} (same file, link or identical content): exported once",
            crate::trace::message::clip_str(&files[k].1.display().to_string()),
            crate::trace::message::clip_str(&files[first].1.display().to_string()),
        ));
    }
    let kept = paths
        .iter()
        .zip(&drop)
        .filter(|(_, &d)| !d)
        .map(|(p, _)| p.clone())
        .collect();
    (kept, notes)
}

/// Exports every trace of `paths` into `options.out`: one file per table,
/// the traces' rows one after another in the order given (a `trace`
/// column tells them apart). Reads the traces side by side (`-j`); the
/// files are the same whatever the thread count.
pub fn run(
    paths: &[PathBuf],
    common: &Common,
    options: &ExportOptions,
) -> Result<Outcome<ExportReport>, ExportError> {
    if paths.is_empty() {
        return Err(ApiError::Arguments("no trace given".into()).into());
    }
    if options.tables.is_empty() {
        return Err(ApiError::Arguments("export: no table asked for (--tables)".into()).into());
    }
    command::refuse_directories(paths, "export")?;
    let mut tables = options.tables.clone();
    tables.sort_unstable();
    tables.dedup();
    let (paths, dup_notes) = dedup(paths);
    let (_lock, parts) = prepare(&options.out)?;
    let config = ExportConfig {
        tables: tables.clone(),
        compression: options.compression,
        parts: parts.clone(),
        next: Arc::new(AtomicU64::new(0)),
    };
    let result = read_and_write(&paths, common, &config, &options.out);
    // The parts are gone whatever happened (renamed, copied, or partial).
    let _ = std::fs::remove_dir_all(&parts);
    result.map(|mut o| {
        let notes = dup_notes.into_iter().map(|text| Message { trace: 0, text });
        o.notes.splice(0..0, notes);
        o
    })
}

fn read_and_write(
    paths: &[PathBuf],
    common: &Common,
    config: &ExportConfig,
    out: &Path,
) -> Result<Outcome<ExportReport>, ExportError> {
    let plan = Plan::new(common.selector.clone())
        .reading(common.read)
        .capturing(common.capture.clone())
        .with_analysis::<Export>(config.clone());
    let mut results = command::read_all(paths, common.quiet, |path, counter| {
        crate::analysis::analyze_path(path, counter, &plan)
    })?;
    let incomplete = results.iter_mut().find_map(|r| r.error.take());
    let mut traces = Vec::with_capacity(results.len());
    for mut r in results {
        traces.push(r.take::<Export>().ok_or(ApiError::NotRun("export"))?);
    }
    if let Some(e) = traces.iter().find_map(|t| t.write_error.clone()) {
        return Err(e.into_error());
    }
    let files = write::finalize(
        &traces,
        &config.tables,
        out,
        &config.parts,
        config.compression,
    )?;
    let mut notes = Vec::new();
    for (i, t) in traces.iter().enumerate() {
        notes.extend(
            command::path_notes(&t.path, &t.notes)
                .into_iter()
                .map(|text| Message { trace: i, text }),
        );
    }
    Ok(Outcome {
        report: ExportReport {
            out: out.display().to_string(),
            traces,
            files,
        },
        problems: Vec::new(),
        notes,
        incomplete,
    })
}
