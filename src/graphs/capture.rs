//! One capture trace read into capture regions (issue 57).
//!
//! The trace is read by the ordinary reader (`trace::read_stream`), each
//! event through `HostLinks::keep` (C1–C2: the same classes, skips and
//! clamps as `ops` and `export`); beside it, per host op its shapes
//! (`Input Dims`, `Input type`, `Input Strides`) and per runtime call the
//! kernel name ROCm writes (`args.kernel`). At the end, per thread:
//!
//! ```text
//! thread   [capture_32_DECODE (user_annotation) ===================================)
//!            [nn.Module: Qwen3Model [aten::mm ) [aten::add )                      )
//!          B   L0        L1          L2          L3          E      B L0 …  (E missing)
//!          │   └─ region 0: L0 L1 L2 L3 in start order ──────┘      └─ truncated: a note
//! B = *StreamBeginCapture, E = *StreamEndCapture, L = a launch call (kernel, memcpy,
//! memset; not a graph launch)
//! ```
//!
//! Each captured launch gets its launcher (the innermost enclosing op,
//! C4/O2) and its top-level op (the outermost enclosing RecordFunction
//! scope, O4) from the containment sweep `hostops::contain`, and its
//! module path from its launcher's parents (C5): the `nn.Module: X`
//! python frames, outermost first. Cost: a sort per thread and one sweep,
//! O(n log n); memory: the events of the capture trace (small: a few MB),
//! then [`Captured`] per captured launch.

use super::{CapOp, Captured, Captures, Detail, Region};
use crate::hostops::contain::{sweep_thread, Sweep, Tag, Visit, Visitor};
use crate::hostops::launch::end_of;
use crate::hostops::{HostLinks, HostOp, Kept};
use crate::trace::{Event, EventPos, Meta};
use std::path::Path;

/// A runtime call's role in a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Begin,
    End,
    /// A captured launch of this activity kind (0 kernel, 1 memcpy, 2 memset).
    Launch(u8),
    Other,
}

/// What a runtime call's name makes it (CUDA and HIP spellings:
/// `cudaStreamBeginCapture`, `hipStreamBeginCapture`; `cudaLaunchKernel`,
/// `cuLaunchKernelEx`, `hipLaunchKernel`, `hipModuleLaunchKernel`,
/// `hipExtModuleLaunchKernel`; `*Memcpy*`, `*Memset*`; graph launches are
/// not captured launches).
fn role(name: &str) -> Role {
    if name.contains("StreamBeginCapture") {
        Role::Begin
    } else if name.contains("StreamEndCapture") {
        Role::End
    } else if name.contains("GraphLaunch") {
        Role::Other
    } else if name.contains("Launch") && name.contains("Kernel") {
        Role::Launch(0)
    } else if name.contains("Memcpy") {
        Role::Launch(1)
    } else if name.contains("Memset") {
        Role::Launch(2)
    } else {
        Role::Other
    }
}

/// A host op as kept here: its op id (name and shapes) beside C4's key.
#[derive(Debug, Clone, Copy)]
struct Op {
    ts: i64,
    end: i64,
    index: u64,
    op: u32,
    scope: bool,
    python: bool,
}

/// A runtime call as kept here.
#[derive(Debug, Clone, Copy)]
struct Call {
    ts: i64,
    end: i64,
    index: u64,
    role: Role,
    kernel: Option<u32>,
}

/// The streaming state while a capture trace is read.
struct Reading<'c> {
    links: HostLinks,
    caps: &'c mut Captures,
    ops: Vec<Vec<Op>>,
    calls: Vec<Vec<Call>>,
    /// `capture_<bs>_<MODE>` annotations: (lane, ts, end, text id).
    notes_of: Vec<(u32, i64, i64, u32)>,
}

impl Reading<'_> {
    fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        let kept = self.links.keep(ev, at);
        let (lane, ts, dur) = match kept {
            Some(Kept::Host(HostOp { lane, ts, dur, .. })) => (lane, ts, dur),
            Some(Kept::Runtime) => {
                let lane = self.links.lanes.intern(ev.lane());
                (lane, ev.ts.map_or(0, |t| t.0), ev.dur_or_zero().0)
            }
            _ => return,
        };
        let l = lane as usize;
        if self.ops.len() <= l {
            self.ops.resize_with(l + 1, Vec::new);
            self.calls.resize_with(l + 1, Vec::new);
        }
        let end = end_of(ts, dur);
        match kept {
            Some(Kept::Host(o)) => {
                let caps = &mut *self.caps;
                let text = |t: &Option<std::borrow::Cow<'_, str>>, c: &mut Captures| {
                    t.as_deref().map(|s| c.text(s))
                };
                let name = caps.text(&ev.name);
                let op = CapOp {
                    cat: o.cat,
                    name,
                    dims: text(&ev.args.input_dims, caps),
                    types: text(&ev.args.input_type, caps),
                    strides: text(&ev.args.input_strides, caps),
                    concrete: text(&ev.args.concrete_inputs, caps),
                };
                let id = caps.op(op);
                if o.cat == 1 && ev.name.starts_with("capture_") {
                    self.notes_of.push((lane, ts, end, name));
                }
                self.ops[l].push(Op {
                    ts,
                    end,
                    index: at.index,
                    op: id,
                    scope: o.cat != 2,
                    python: o.cat == 2,
                });
            }
            _ => {
                let role = role(&ev.name);
                if role == Role::Other {
                    return;
                }
                // ROCm's `args.kernel` is a JSON string: its text decoded.
                let kernel = ev
                    .args
                    .kernel
                    .as_deref()
                    .and_then(|k| serde_json::from_str::<String>(k).ok())
                    .map(|k| self.caps.text(&k));
                self.calls[l].push(Call {
                    ts,
                    end,
                    index: at.index,
                    role,
                    kernel,
                });
            }
        }
    }
}

/// The sweep's visitor: parents of ops (C5), launcher and top of the
/// captured launches.
struct Answers<'a> {
    calls: &'a [Call],
    parent: Vec<u32>,
    /// Per call: (launcher position, top position), `u32::MAX` for none.
    found: Vec<(u32, u32)>,
}

impl Visitor for Answers<'_> {
    fn op(&mut self, at: &Visit, parent: Option<(u32, Tag)>, _: &mut Sweep) {
        self.parent[at.pos as usize] = parent.map_or(u32::MAX, |p| p.0);
    }

    fn call(&mut self, id: u32, sweep: &mut Sweep) {
        let c = &self.calls[id as usize];
        if let Role::Launch(_) = c.role {
            let inner = sweep.innermost(c.end).unwrap_or(u32::MAX);
            let top = sweep.outermost_scope(c.end).unwrap_or(inner);
            self.found[id as usize] = (inner, top);
        }
    }
}

/// `bs` and `MODE` of a `capture_<bs>_<MODE>` annotation.
pub(super) fn parse_annotation(name: &str) -> Option<(u64, String)> {
    let rest = name.strip_prefix("capture_")?;
    let (bs, mode) = rest.split_once('_')?;
    Some((bs.parse().ok()?, mode.to_string()))
}

/// `bs` of SGLang's `bs_<bs>_rank<r>.json.gz`.
pub(super) fn sglang_batch(file: &str) -> Option<u64> {
    let rest = file.strip_prefix("bs_")?;
    rest.split('_').next()?.parse().ok()
}

/// The subsystem a capture belongs to from its file and annotation names:
/// `speculator` when either names a drafter (`spec`, `draft`, `eagle`,
/// `mtp`), `encoder` when either names one (`encoder`, `vision`), else
/// `decoder` (the model's forward graphs).
pub(super) fn subsystem(file: &str, annotation: Option<&str>) -> &'static str {
    let has = |k: &str| {
        file.to_ascii_lowercase().contains(k)
            || annotation.is_some_and(|a| a.to_ascii_lowercase().contains(k))
    };
    if ["spec", "draft", "eagle", "mtp"].iter().any(|k| has(k)) {
        "speculator"
    } else if ["encoder", "vision"].iter().any(|k| has(k)) {
        "encoder"
    } else {
        "decoder"
    }
}

/// Reads one capture file into `caps` (its regions appended); an
/// unreadable file is an error (the caller notes it and goes on).
pub(super) fn read_file(
    path: &Path,
    detail: Option<&Detail>,
    caps: &mut Captures,
) -> Result<usize, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut r = Reading {
        links: HostLinks::default(),
        caps,
        ops: Vec::new(),
        calls: Vec::new(),
        notes_of: Vec::new(),
    };
    let filter = r.links.prefilter();
    let mut meta = Meta::default();
    let read = crate::trace::read_stream(file, &filter, &mut meta, &mut |ev, at| r.push(ev, at));
    let Reading {
        caps,
        ops,
        calls,
        notes_of,
        ..
    } = r;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Err(e) = &read {
        // Nothing of it read: unreadable (the caller notes it).
        if ops.iter().all(Vec::is_empty) && calls.iter().all(Vec::is_empty) {
            return Err(e.to_string());
        }
    }
    let file = FileFacts {
        no: caps.files.len() as u32,
        name: &name,
        detail,
        annotations: &notes_of,
    };
    caps.files.push(path.display().to_string());
    let before = caps.regions.len();
    let mut open_at_end = 0u64;
    for (lane, (mut ops, mut calls)) in ops.into_iter().zip(calls).enumerate() {
        // C4's key for ops; calls in start order (file order on ties).
        ops.sort_by_key(|o| (o.ts, std::cmp::Reverse(o.end), o.index));
        calls.sort_by_key(|c| (c.ts, c.index));
        let (parent, found) = enclosing(&ops, &calls);
        let thread = Thread {
            lane: lane as u32,
            ops: &ops,
            calls: &calls,
            parent: &parent,
            found: &found,
        };
        open_at_end += u64::from(thread.regions(&file, caps));
    }
    if open_at_end > 0 {
        caps.notes.push(format!(
            "{name}: {open_at_end} capture(s) never ended (truncated trace): not used"
        ));
    }
    if let Err(e) = read {
        // What was read before the error stays: its complete regions are
        // exact (each ends with its end-capture call).
        caps.notes.push(format!(
            "{name}: read stopped early ({e}): {} complete region(s) kept",
            caps.regions.len() - before
        ));
    }
    Ok(caps.regions.len() - before)
}

/// What a capture file says of all its regions.
struct FileFacts<'a> {
    /// Its number among the files read.
    no: u32,
    name: &'a str,
    /// Its entry in `execution_details.json`.
    detail: Option<&'a Detail>,
    /// Its `capture_<bs>_<MODE>` annotations: (lane, ts, end, text id).
    annotations: &'a [(u32, i64, i64, u32)],
}

/// One thread's ops (C4's key order) and calls (start order), with each
/// op's parent and each call's (innermost, top-level) enclosing op.
struct Thread<'a> {
    lane: u32,
    ops: &'a [Op],
    calls: &'a [Call],
    parent: &'a [u32],
    found: &'a [(u32, u32)],
}

/// Each op's parent and each call's (innermost, top-level) enclosing op on
/// one thread (`u32::MAX`: none), by hostops' containment sweep (C4–C5).
fn enclosing(ops: &[Op], calls: &[Call]) -> (Vec<u32>, Vec<(u32, u32)>) {
    let mut ans = Answers {
        calls,
        parent: vec![u32::MAX; ops.len()],
        found: vec![(u32::MAX, u32::MAX); calls.len()],
    };
    let visits: Vec<Visit> = ops
        .iter()
        .enumerate()
        .map(|(p, o)| Visit {
            pos: p as u32,
            ts: o.ts,
            end: o.end,
            scope: o.scope,
            tag: Tag {
                row: p as u32,
                ts: o.ts,
            },
        })
        .collect();
    sweep_thread(
        visits,
        calls.iter().enumerate().map(|(i, c)| (i as u32, c.ts)),
        &mut ans,
    );
    (ans.parent, ans.found)
}

impl Thread<'_> {
    /// Its regions, each begin-capture to end-capture call, into `caps`;
    /// whether a capture was still open at the end of the thread.
    fn regions(&self, file: &FileFacts<'_>, caps: &mut Captures) -> bool {
        let name = file.name;
        let mut open: Option<(usize, Vec<Captured>)> = None;
        // Per op position: its instance in `caps.instances` (made once).
        let mut inst = vec![u32::MAX; self.ops.len()];
        for (i, c) in self.calls.iter().enumerate() {
            match c.role {
                Role::Begin => {
                    if open.is_some() {
                        caps.notes.push(format!(
                            "{name}: a capture began inside another on one thread: the first dropped (truncated)"
                        ));
                    }
                    open = Some((i, Vec::new()));
                }
                Role::Launch(kind) => {
                    if let Some((_, v)) = open.as_mut() {
                        v.push(self.captured(i, kind, &mut inst, caps));
                    }
                }
                Role::End => {
                    let Some((b, launches)) = open.take() else {
                        caps.notes.push(format!(
                            "{name}: a capture ended that did not begin on its thread: ignored"
                        ));
                        continue;
                    };
                    let region = self.region(file, (self.calls[b].ts, c.end), launches, caps);
                    caps.regions.push(region);
                }
                Role::Other => {}
            }
        }
        open.is_some()
    }

    /// Call `i`, a launch inside a region: its kind, kernel, launcher,
    /// top-level op and module path.
    fn captured(&self, i: usize, kind: u8, inst: &mut [u32], caps: &mut Captures) -> Captured {
        let (inner, top) = self.found[i];
        let instance = (inner != u32::MAX).then(|| self.instance(inner, inst, caps));
        let at = |p: u32| (p != u32::MAX).then(|| self.ops[p as usize].op);
        let module = (inner != u32::MAX)
            .then(|| self.module_of(inner, caps))
            .flatten();
        Captured {
            kind,
            kernel: self.calls[i].kernel,
            launcher: at(inner),
            top: at(top),
            module,
            instance,
        }
    }

    /// The instance of op position `p` in `caps.instances`, made with its
    /// enclosers' (C5) when new.
    fn instance(&self, p: u32, inst: &mut [u32], caps: &mut Captures) -> u32 {
        // The positions up to the first made one (or the root).
        let mut chain = Vec::new();
        let mut q = p;
        while q != u32::MAX && inst[q as usize] == u32::MAX {
            chain.push(q);
            q = self.parent[q as usize];
        }
        let mut parent = (q != u32::MAX).then(|| inst[q as usize]);
        for &q in chain.iter().rev() {
            let id = caps.instances.len() as u32;
            caps.instances.push(super::Instance {
                op: self.ops[q as usize].op,
                parent,
            });
            inst[q as usize] = id;
            parent = Some(id);
        }
        inst[p as usize]
    }

    /// The `nn.Module` path of op `p`: the module frames among its python
    /// ancestors, outermost first, joined by `/`.
    fn module_of(&self, mut p: u32, caps: &mut Captures) -> Option<u32> {
        let mut names = Vec::new();
        while p != u32::MAX {
            let o = &self.ops[p as usize];
            if o.python {
                names.push(caps.ops[o.op as usize].name);
            }
            p = self.parent[p as usize];
        }
        let path: Vec<String> = names
            .iter()
            .rev()
            .filter_map(|n| caps.texts[*n as usize].strip_prefix("nn.Module: "))
            .map(String::from)
            .collect();
        (!path.is_empty()).then(|| {
            let s = path.join("/");
            caps.text(&s)
        })
    }

    /// The region over `(begin, end)` with its launches: its annotation
    /// (the innermost enclosing `capture_<bs>_<MODE>` on the thread), batch
    /// size, mode and subsystem.
    fn region(
        &self,
        file: &FileFacts<'_>,
        (begin, end): (i64, i64),
        launches: Vec<Captured>,
        caps: &Captures,
    ) -> Region {
        let ann = file
            .annotations
            .iter()
            .filter(|a| a.0 == self.lane && a.1 <= begin && a.2 >= end)
            .max_by_key(|a| a.1)
            .map(|a| caps.texts[a.3 as usize].clone());
        let parsed = ann.as_deref().and_then(parse_annotation);
        let batch = parsed
            .as_ref()
            .map(|p| p.0)
            .or(file.detail.and_then(|d| d.batch_size))
            .or_else(|| sglang_batch(file.name));
        let mode = parsed
            .map(|p| p.1)
            .or_else(|| file.detail.and_then(|d| d.mode.clone()));
        Region {
            file: file.no,
            batch,
            mode,
            subsystem: subsystem(file.name, ann.as_deref()).to_string(),
            annotation: ann,
            launches,
        }
    }
}
