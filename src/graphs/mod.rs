//! Inside the graphs (issue 57): every kernel a CUDA/HIP graph replays,
//! attributed to the op, module, shapes and subsystem that captured it,
//! from capture traces. A neutral module below the analyses (like
//! `hostops/`, which it builds on): `ops` uses it, and any analysis that
//! attributes GPU work may.
//!
//! ```text
//! capture trace (vLLM capture_traces/, SGLang bs_<bs>_rank<r>)     replay trace (the worker's)
//!   region r: BeginCapture … L0 L1 … Ln−1 … EndCapture on a thread    hipGraphLaunch c=7
//!             Lk: launcher op, top op, module path, shapes            GPU: a0 a1 … an−1 (corr 7)
//!                                                   match: n equal, ak ≡ Lk for every k
//!   ak ≡ Lk: same kind (kernel/memcpy/memset) and, where the capture
//!   records a kernel name (ROCm's args.kernel), the same name.
//! ```
//!
//! - `find`: which capture files belong to a trace (`--capture PATH`, a
//!   file or a folder; else `capture_traces/` beside the trace), with
//!   `execution_details.json`'s batch size and mode.
//! - `capture`: one capture trace read into [`Region`]s by the ordinary
//!   reader and `hostops` (C1–C5).
//! - `matching`: each replay to its region, exactly, or `ambiguous` or
//!   `unmatched` with the reason; never a skip, never a guess.
//! - `place`: where a graph launch was made (a step's scheduled tokens,
//!   `proposer.propose`) and the tally of outcomes into a [`GraphsSummary`].
//! - `replay`: the replays of the driver's ledger matched, and the split of
//!   their GPU time by module class and launcher op (`kernels`,
//!   `iterations`, `diff`); `linked`: the same from the host side's links
//!   (`ops`, `export`). `tracefile::capture::CaptureSpec` is the one `--capture` flag, the
//!   plan's; the regions are read once per trace, in its shared slots.
//!
//! Memory: the regions' [`Captured`] launches (`size_of::<Captured>()`,
//! 44 B each), the ops' names and shapes once per distinct op, the op
//! instances that enclose a captured launch (8 B each), and the texts
//! once each; a capture trace's events only while it is read. Per replay
//! of a trace 56 B (`replay::Replay`; an aligned replay, G2, 4 B more
//! per activity for its map), per attributed activity 24 B where the host
//! side keeps them (`linked::Given`).

pub(crate) mod align;
pub(crate) mod capture;
pub mod find;
pub(crate) mod linked;
pub mod matching;
pub mod place;
pub mod replay;

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// A captured op (launcher or top-level op): category (position in
/// `hostops::HOST_CATEGORIES`), name and shapes as text ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CapOp {
    pub cat: u8,
    pub name: u32,
    pub dims: Option<u32>,
    pub types: Option<u32>,
    pub strides: Option<u32>,
    /// `Concrete Inputs` (a scalar argument's value: `roofline`'s models
    /// read some).
    pub concrete: Option<u32>,
}

/// One op instance of a capture trace that encloses a captured launch:
/// its op ([`Captures::ops`]) and the instance enclosing it (C5), so a
/// caller can walk a launch's enclosers innermost first (`roofline` takes
/// the innermost one with a model, as it does in a replay trace).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instance {
    pub op: u32,
    pub parent: Option<u32>,
}

/// One captured launch (44 B): its activity kind (0 kernel, 1 memcpy,
/// 2 memset), the kernel name the capture records (ROCm), its launcher
/// and top-level op ([`Captures::ops`]), its module path (a text id), and
/// its launcher's instance ([`Captures::instances`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Captured {
    pub kind: u8,
    pub kernel: Option<u32>,
    pub launcher: Option<u32>,
    pub top: Option<u32>,
    pub module: Option<u32>,
    pub instance: Option<u32>,
}

/// One capture region: the launches between a begin-capture and its
/// end-capture call on one thread, in start order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// Position in [`Captures::files`].
    pub file: u32,
    pub batch: Option<u64>,
    pub mode: Option<String>,
    /// `decoder`, `speculator` or `encoder`.
    pub subsystem: String,
    /// The `capture_<bs>_<MODE>` annotation around it, when there is one.
    pub annotation: Option<String>,
    pub launches: Vec<Captured>,
}

/// A region's content, for [`Captures::dedupe`]: batch, mode, subsystem,
/// annotation and its launches as numbers.
type RegionKey = (
    Option<u64>,
    Option<String>,
    String,
    Option<String>,
    Vec<u64>,
);

/// What one capture file's entry of `execution_details.json` says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Detail {
    pub file: String,
    #[serde(default)]
    pub batch_size: Option<u64>,
    #[serde(default)]
    pub mode: Option<String>,
}

/// Every capture region of a trace, with the texts and ops they name.
#[derive(Debug, Default)]
pub struct Captures {
    /// The files read, in order.
    pub files: Vec<String>,
    pub regions: Vec<Region>,
    pub ops: Vec<CapOp>,
    /// The op instances enclosing captured launches, with their parents.
    pub instances: Vec<Instance>,
    pub texts: Vec<String>,
    /// Bad input met (unreadable files, truncated captures, …).
    pub notes: Vec<String>,
    text_ids: HashMap<String, u32>,
    op_ids: HashMap<CapOp, u32>,
}

impl Captures {
    /// The id of a text, made when new.
    pub(crate) fn text(&mut self, s: &str) -> u32 {
        if let Some(&k) = self.text_ids.get(s) {
            return k;
        }
        let k = self.texts.len() as u32;
        self.texts.push(s.to_string());
        self.text_ids.insert(s.to_string(), k);
        k
    }

    /// The id of an op, made when new.
    pub(crate) fn op(&mut self, o: CapOp) -> u32 {
        let next = self.ops.len() as u32;
        let k = *self.op_ids.entry(o).or_insert(next);
        if k == next {
            self.ops.push(o);
        }
        k
    }

    /// Drops every region equal to one read before it from another file
    /// (the same launches, ops, modules, enclosing op chains, batch, mode
    /// and subsystem): a capture copied into two files counts once (G3).
    /// Equal regions of one file stay: vLLM's PIECEWISE pieces are
    /// separate graphs of equal content. A note per file that lost
    /// regions.
    fn dedupe(&mut self) {
        let mut seen: HashMap<RegionKey, u32> = HashMap::new();
        let mut lost: BTreeMap<u32, usize> = BTreeMap::new();
        let regions = std::mem::take(&mut self.regions);
        for reg in regions {
            let first = *seen.entry(self.content(&reg)).or_insert(reg.file);
            if first != reg.file {
                *lost.entry(reg.file).or_default() += 1;
            } else {
                self.regions.push(reg);
            }
        }
        for (file, n) in lost {
            let name = self.files.get(file as usize).cloned().unwrap_or_default();
            self.notes.push(format!(
                "capture trace {name}: {n} region(s) equal to regions of another capture file: counted once"
            ));
        }
    }

    /// What makes a region the same capture (ids are interned over all
    /// files, so equal content gives equal ids; an op instance counts by
    /// its chain of ops, innermost first).
    fn content(&self, reg: &Region) -> RegionKey {
        let opt = |x: Option<u32>| x.map_or(u64::MAX, u64::from);
        let mut launches = Vec::with_capacity(reg.launches.len() * 6);
        for c in &reg.launches {
            launches.extend([
                u64::from(c.kind),
                opt(c.kernel),
                opt(c.launcher),
                opt(c.top),
                opt(c.module),
            ]);
            let mut inst = c.instance;
            while let Some(i) = inst.and_then(|i| self.instances.get(i as usize)) {
                launches.push(u64::from(i.op));
                inst = i.parent;
            }
            launches.push(u64::MAX - 1);
        }
        (
            reg.batch,
            reg.mode.clone(),
            reg.subsystem.clone(),
            reg.annotation.clone(),
            launches,
        )
    }

    /// A text by id.
    pub fn resolve(&self, id: u32) -> &str {
        self.texts.get(id as usize).map_or("", String::as_str)
    }

    /// Reads the capture files of a trace: `explicit` (`--capture`, files
    /// or folders) when given, else `capture_traces/` beside `trace`. A
    /// file that cannot be read is a note, never an error.
    pub fn load(explicit: &[PathBuf], trace: &Path) -> Captures {
        let mut caps = Captures::default();
        let (files, notes) = find::capture_files(explicit, trace);
        caps.notes.extend(notes);
        for (path, detail) in files {
            if let Err(e) = capture::read_file(&path, detail.as_ref(), &mut caps) {
                caps.notes.push(format!(
                    "capture trace {} unreadable ({e}): skipped",
                    path.display()
                ));
            }
        }
        // A capture beside the trace is named from the trace's folder
        // (`capture_traces/…`): the same text however the trace's path was
        // given (relative on the command line, absolute from Python or a
        // Dask worker), so campaigns give the same bytes.
        if let Some(base) = trace.parent().filter(|b| !b.as_os_str().is_empty()) {
            for f in &mut caps.files {
                if let Ok(rel) = Path::new(f.as_str()).strip_prefix(base) {
                    *f = rel.display().to_string();
                }
            }
        }
        caps.dedupe();
        caps
    }
}

/// `--capture`'s options, defined below the engine (the plan holds them);
/// here for the library's users, with what reads the files.
pub use crate::tracefile::capture::CaptureSpec;

/// The captures of a finished trace (the plan's `--capture`, else
/// `capture_traces/` beside the trace file), read once per trace however
/// many finishes ask ([`crate::analysis::Finished::shared`]): a `batch`
/// opens each capture file once per trace.
pub fn captures_of(trace: &crate::analysis::Finished<'_>) -> std::sync::Arc<Captures> {
    let spec = trace.capture;
    trace.shared(spec.clone(), || load(spec, trace.path, trace.file))
}

/// The captures of the trace labelled `path`, read from `file` (the file
/// on disk: `capture_traces/` is looked for beside it). Without a file
/// (stdin, an archive member: `batch`'s label is not a path on disk) only
/// `--capture`'s.
pub fn load(spec: &CaptureSpec, path: &str, file: Option<&Path>) -> Captures {
    match file {
        Some(f) => Captures::load(&spec.capture, f),
        None if spec.is_empty() => Captures::default(),
        None => Captures::load(&spec.capture, Path::new(path)),
    }
}

/// One replay that was not matched, with the reason (`ops`' JSON lists
/// the first few).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unmatched {
    /// The graph launch's start (ns).
    pub ts: i64,
    pub activities: u64,
    /// `unmatched` or `ambiguous`.
    pub status: String,
    pub reason: String,
}

/// What a trace's graphs came to (`ops` JSON's `graphs`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphsSummary {
    /// The capture files read.
    pub captures: Vec<String>,
    pub regions: u64,
    /// Graph launches with activities.
    pub replays: u64,
    pub replays_matched: u64,
    /// Several regions equal; attributed only when they all name the same
    /// launcher sequence (`replays_ambiguous_attributed`).
    pub replays_ambiguous: u64,
    pub replays_ambiguous_attributed: u64,
    pub replays_unmatched: u64,
    /// Matched replays that differ from their region (G2: aligned on ≥ 99 %
    /// of the longer side; also counted in `replays_matched`).
    #[serde(default)]
    pub replays_with_differences: u64,
    /// Every replayed activity (attributed or not) and its GPU ns: the
    /// coverage is `graph_activities` / `replayed_activities` and
    /// `gpu_graph_ns` / `replayed_gpu_ns`.
    #[serde(default)]
    pub replayed_activities: u64,
    #[serde(default)]
    pub replayed_gpu_ns: i64,
    /// Activities of the attributed replays and their GPU ns (= Σ the
    /// rows' `graph_activities` and `gpu_graph_ns`).
    pub graph_activities: u64,
    pub gpu_graph_ns: i64,
    /// The attributed replays by their region's subsystem (`decoder`,
    /// `speculator`, …): Σ over them = the totals above.
    #[serde(default)]
    pub by_subsystem: BTreeMap<String, SubsystemShare>,
    /// The attributed activities by (subsystem, module path, launcher op),
    /// by GPU ns (desc): Σ over them = the totals above. `ops --by module`
    /// and `batch`'s "Inside the graphs" read them.
    #[serde(default)]
    pub by_module: Vec<ModuleOp>,
    /// What the replays matched with differences differ by: captured
    /// launches that ran no activity and activities no captured launch
    /// accounts for, by kind and name, with how often.
    #[serde(default)]
    pub differences: Vec<DifferenceCount>,
    /// The first [`UNMATCHED_LISTED`] replays not matched exactly.
    pub unmatched: Vec<Unmatched>,
    /// Bad input met in the capture files.
    pub notes: Vec<String>,
}

/// [`DifferenceCount::side`] of a captured launch that ran no activity.
pub const CAPTURED_NOT_REPLAYED: &str = "captured, not replayed";
/// [`DifferenceCount::side`] of an activity no captured launch accounts for.
pub const REPLAYED_NOT_CAPTURED: &str = "replayed, not captured";

/// One kind of difference between aligned replays and their regions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DifferenceCount {
    /// `captured, not replayed` (a launch of the capture that ran no
    /// activity) or `replayed, not captured`.
    pub side: String,
    /// `kernel`, `memcpy`, `memset`.
    pub kind: String,
    pub name: String,
    /// How many times, over all replays.
    pub count: u64,
}

/// One subsystem's attributed replays, activities and GPU ns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubsystemShare {
    pub replays: u64,
    /// Replays by the captured batch size of their region (`"none"`
    /// when the capture does not say it).
    pub replays_by_batch: BTreeMap<String, u64>,
    pub activities: u64,
    pub gpu_graph_ns: i64,
}

/// The replayed activities of one subsystem's captured launches that had
/// one module path and one launcher op at capture time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleOp {
    pub subsystem: String,
    /// The captured launch's `nn.Module` path, outermost first (`A/B/C`,
    /// from its launcher's python frames); empty when no module frame
    /// enclosed it.
    pub module: String,
    /// Its launcher's category and name (`null`: no op enclosed the
    /// captured launch).
    pub cat: Option<String>,
    pub op: Option<String>,
    pub activities: u64,
    pub gpu_graph_ns: i64,
}

impl GraphsSummary {
    /// `" (N with differences)"` after a count of matched replays, when
    /// some matched with differences; else empty.
    pub fn with_differences_said(&self) -> String {
        match self.replays_with_differences {
            0 => String::new(),
            n => format!(" ({n} with differences)"),
        }
    }

    /// The share of replayed activities and of their GPU time attributed
    /// to captured ops, as a sentence, when below 100 %.
    pub fn coverage(&self) -> Option<String> {
        if self.graph_activities >= self.replayed_activities {
            return None;
        }
        let pct = |a: i128, b: i128| {
            if b > 0 {
                format!("{:.1} %", a as f64 * 100.0 / b as f64)
            } else {
                "0 %".to_string()
            }
        };
        Some(format!(
            "graphs: {} of {} replayed activities attributed to captured ops ({} of their GPU time)",
            self.graph_activities,
            self.replayed_activities,
            pct(
                i128::from(self.gpu_graph_ns),
                i128::from(self.replayed_gpu_ns)
            )
        ))
    }
}

/// How many unmatched or ambiguous replays the summary lists.
pub const UNMATCHED_LISTED: usize = 5;

impl GraphsSummary {
    /// Its notes for stderr: the capture files' bad input, and a line for
    /// replays not attributed.
    pub fn said(&self) -> Vec<String> {
        let mut v: Vec<String> = self.notes.iter().map(|n| format!("graphs: {n}")).collect();
        if self.replays_unmatched > 0 && self.captures.is_empty() && self.regions == 0 {
            // No capture trace at all: one short line saying how to give one.
            v.push(format!(
                "graphs: {} graph replays counted under their graph launch (no capture traces: \
                 give --capture, or put capture_traces/ beside the trace, to see the ops inside)",
                self.replays_unmatched
            ));
        } else if self.replays_unmatched > 0 {
            let first = self.unmatched.iter().find(|u| u.status == "unmatched");
            v.push(format!(
                "graphs: {} of {} graph replays unmatched: kept under their graph launch{}",
                self.replays_unmatched,
                self.replays,
                first.map_or(String::new(), |u| format!(" (first: {})", u.reason))
            ));
        }
        if self.replays_with_differences > 0 {
            let (mut captured, mut replayed) = (0u64, 0u64);
            for d in &self.differences {
                if d.side == CAPTURED_NOT_REPLAYED {
                    captured += d.count;
                } else {
                    replayed += d.count;
                }
            }
            v.push(format!(
                "graphs: {} of {} graph replays matched with differences ({captured} captured \
                 launches not replayed, {replayed} replayed activities not captured: listed \
                 under graphs.differences)",
                self.replays_with_differences, self.replays
            ));
        }
        if let Some(line) = self.coverage().filter(|_| self.regions > 0) {
            v.push(line);
        }
        let left = self.replays_ambiguous - self.replays_ambiguous_attributed;
        if left > 0 {
            v.push(format!(
                "graphs: {left} graph replays ambiguous (several captures equal, naming different ops): not attributed"
            ));
        }
        v
    }
}

#[cfg(test)]
mod tests;
