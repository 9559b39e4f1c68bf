//! The host side's links, shared by `ops` and `export` (a neutral module
//! below the analyses, so neither names the other): what is kept while
//! reading — every runtime call with its correlation, every device
//! activity with its (device, stream) and correlation, as [`Records`]
//! varint streams (≈ 10 B an event), and each host op (`cpu_op`,
//! `user_annotation`, `python_function`, `Operator`) handed to the caller,
//! which keeps it per thread (`HostLinks::keep`) — with the rules of
//! `docs/VIEWS.md` C1–C2 applied, the bad input counted
//! ([`InputCounts`]); then the links made at the end: each activity's
//! owning runtime call by correlation and what each call launched (C3, O6:
//! `launch`), and the containment sweep that finds each call's and each
//! op's enclosers (C4–C5: `contain`); and the store each keeps a
//! thread's host ops in, as runs sorted in C4's order (`runs`).

pub(crate) mod contain;
pub(crate) mod launch;
pub(crate) mod runs;
pub mod spans;
pub mod store;

use crate::model::{Interner, LaneTable, Sym};
use crate::store::pack::{Fields, Packed, Record, Records};
use crate::trace::{Event, EventPos, Prefilter};
use serde::{Deserialize, Serialize};

/// Host op categories (C2), in code order.
pub const HOST_CATEGORIES: [&str; 4] = ["cpu_op", "user_annotation", "python_function", "Operator"];

/// Runtime call categories (C2).
pub const RUNTIME_CATEGORIES: [&str; 3] = ["cuda_runtime", "cuda_driver", "Runtime"];

/// A host op as kept: lane, Δts, dur, Δindex, name, category.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostOp {
    pub lane: u32,
    pub ts: i64,
    pub dur: i64,
    pub index: u64,
    pub name: Sym,
    /// Position in [`HOST_CATEGORIES`].
    pub cat: u8,
}

impl Record for HostOp {
    type Prev = (i64, i64);

    fn write(&self, prev: &mut (i64, i64), p: &mut Packed) {
        p.delta(self.ts, prev.0);
        p.delta(self.dur, 0);
        p.delta(self.index as i64, prev.1);
        p.u(u64::from(self.lane));
        p.u(u64::from(self.name.0) * 4 + u64::from(self.cat & 3));
        *prev = (self.ts, self.index as i64);
    }

    fn read(prev: &mut (i64, i64), f: &mut impl Fields) -> HostOp {
        let ts = f.delta(prev.0);
        let dur = f.delta(0);
        let index = f.delta(prev.1);
        let lane = f.u() as u32;
        let nc = f.u();
        *prev = (ts, index);
        HostOp {
            lane,
            ts,
            dur,
            index: index as u64,
            name: Sym((nc / 4) as u32),
            cat: (nc % 4) as u8,
        }
    }
}

/// A runtime call or a device activity as kept: lane (for an activity its
/// stream), Δts, dur, Δindex, name, a code (an activity's kind), and its
/// correlation when it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Linked {
    pub lane: u32,
    pub ts: i64,
    pub dur: i64,
    pub index: u64,
    pub name: Sym,
    /// An activity's kind: 0 kernel, 1 memcpy, 2 memset.
    pub code: u8,
    /// Exact past i64 (issue 59).
    pub corr: Option<i128>,
}

impl Record for Linked {
    type Prev = (i64, i64, i128);

    fn write(&self, prev: &mut (i64, i64, i128), p: &mut Packed) {
        p.delta(self.ts, prev.0);
        p.delta(self.dur, 0);
        p.delta(self.index as i64, prev.1);
        p.u(u64::from(self.lane));
        let has = u64::from(self.corr.is_some());
        p.u(u64::from(self.name.0) * 8 + u64::from(self.code & 3) * 2 + has);
        if let Some(c) = self.corr {
            p.delta_wide(c, prev.2);
            prev.2 = c;
        }
        (prev.0, prev.1) = (self.ts, self.index as i64);
    }

    fn read(prev: &mut (i64, i64, i128), f: &mut impl Fields) -> Linked {
        let ts = f.delta(prev.0);
        let dur = f.delta(0);
        let index = f.delta(prev.1);
        let lane = f.u() as u32;
        let m = f.u();
        let corr = (m & 1 == 1).then(|| {
            let c = f.delta_wide(prev.2);
            prev.2 = c;
            c
        });
        (prev.0, prev.1) = (ts, index);
        Linked {
            lane,
            ts,
            dur,
            index: index as u64,
            name: Sym((m / 8) as u32),
            code: ((m / 2) % 4) as u8,
            corr,
        }
    }
}

/// Bad-input counts (each a note, O10 / C1 / C3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputCounts {
    /// Complete events of the three classes without `ts`: skipped (C1).
    pub no_ts: u64,
    /// `dur < 0`, clamped to 0 (C1).
    pub negative_dur_clamped: u64,
    /// Runtime calls whose correlation an earlier call owns (C3).
    pub duplicate_runtime_correlation: u64,
    /// Activities whose `args.device`/`args.stream` name another device or
    /// stream than their pid/tid: placed by the args (C2, issue 59).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lane_from_args: u64,
    /// Activities with no owning runtime call (C3).
    pub unlinked_activities: u64,
    /// Host ops that never end inside the trace (`"finished": false`, or
    /// no `dur`): kept with the duration written (0 without one).
    pub unfinished_host_ops: u64,
}

impl InputCounts {
    /// The notes its counts make (each counted, never a panic), and one
    /// for the `names_cut` names shown cut.
    pub fn notes(&self, names_cut: u64) -> Vec<String> {
        let c = self;

        let mut v = Vec::new();
        let mut say = |n: u64, what: &str| {
            if n > 0 {
                v.push(format!("{n} {what}"));
            }
        };
        say(c.no_ts, "events without ts skipped (no_ts, C1)");
        say(
            c.negative_dur_clamped,
            "events with dur < 0 clamped to 0 (negative_dur_clamped, C1)",
        );
        say(
            c.duplicate_runtime_correlation,
            "runtime calls carry a correlation an earlier call owns: the first owns it (duplicate_runtime_correlation, C3)",
        );
        say(
            c.unlinked_activities,
            "device activities have no runtime call with their correlation: GPU timeline only, never attributed (unlinked, C3)",
        );
        say(
            c.lane_from_args,
            "device activities name another device or stream in args.device/args.stream than their pid/tid: placed by the args (lane_from_args, C2)",
        );
        say(
            c.unfinished_host_ops,
            "host ops never end inside the trace (finished: false or no dur): kept with the duration written (O10)",
        );
        say(
            names_cut,
            "names longer than 4096 bytes are shown cut with a marker",
        );
        v
    }
}

/// A count left out of the JSON when 0 (a count added after the goldens).
fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// The streaming state of one trace: what is kept while reading (C1–C2).
#[derive(Debug, Default)]
pub struct HostLinks {
    pub(crate) names: Interner,
    pub(crate) lanes: LaneTable,
    pub(crate) calls: Records<Linked>,
    pub(crate) acts: Records<Linked>,
    pub(crate) counts: InputCounts,
    /// C1's counts of the device activities alone (`idle`'s).
    pub(crate) act_counts: ActCounts,
}

/// C1's counts among the device activities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ActCounts {
    /// Without `ts`: skipped.
    pub no_ts: u64,
    /// `dur < 0`: clamped to 0.
    pub negative_dur_clamped: u64,
}

/// What [`HostLinks::keep`] found an event to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    /// A host op, for the caller to keep.
    Host(HostOp),
    /// A runtime call, kept.
    Runtime,
    /// A device activity, kept.
    Activity,
}

/// The category class of an event (C2).
enum Class {
    Host(u8),
    Runtime,
    Activity(u8),
}

fn class_of(cat: &str) -> Option<Class> {
    if let Some(k) = HOST_CATEGORIES.iter().position(|c| *c == cat) {
        return Some(Class::Host(k as u8));
    }
    if RUNTIME_CATEGORIES.contains(&cat) {
        return Some(Class::Runtime);
    }
    crate::ledger::Kind::of_category(cat).map(|k| {
        Class::Activity(match k {
            crate::ledger::Kind::Kernel => 0,
            crate::ledger::Kind::Memcpy => 1,
            crate::ledger::Kind::Memset => 2,
        })
    })
}

impl HostLinks {
    /// The categories of C2 (`"gpu_mem` stands for `gpu_memcpy` and
    /// `gpu_memset`).
    pub fn prefilter(&self) -> Prefilter {
        Prefilter::any_of(&[
            "\"cpu_op\"",
            "\"user_annotation\"",
            "\"python_function\"",
            "\"Operator\"",
            "\"cuda_runtime\"",
            "\"cuda_driver\"",
            "\"Runtime\"",
            "\"kernel\"",
            "\"Kernel\"",
            "\"gpu_mem",
            "\"Memcpy\"",
            "\"Memset\"",
        ])
    }

    /// C1–C2 for one event: counts its bad input, keeps a runtime call or
    /// an activity, and hands back what it was; a host op is the caller's
    /// to keep (`ops` as its threads' sorted runs, `export` per thread with
    /// its External id).
    pub(crate) fn keep(&mut self, ev: &Event<'_>, at: EventPos) -> Option<Kept> {
        if ev.ph != "X" {
            return None;
        }
        let class = class_of(&ev.cat)?;
        // C1: an event without ts is skipped; dur < 0 is clamped to 0.
        let act = matches!(class, Class::Activity(_));
        let Some(ts) = ev.ts else {
            self.counts.no_ts += 1;
            self.act_counts.no_ts += u64::from(act);
            return None;
        };
        if ev.dur.is_some_and(|d| d.0 < 0) {
            self.counts.negative_dur_clamped += 1;
            self.act_counts.negative_dur_clamped += u64::from(act);
        }
        let dur = ev.dur_or_zero().0;
        // C2: an activity's device and stream are its args' (else pid/tid).
        let lane = if let Class::Activity(_) = class {
            self.counts.lane_from_args += u64::from(ev.lane_differs());
            self.lanes.intern(ev.activity_lane())
        } else {
            self.lanes.intern(ev.lane())
        };
        let name = self.names.intern(&ev.name);
        match class {
            Class::Host(cat) => {
                if ev.args.finished == Some(false) || ev.dur.is_none() {
                    self.counts.unfinished_host_ops += 1;
                }
                Some(Kept::Host(HostOp {
                    lane,
                    ts: ts.0,
                    dur,
                    index: at.index,
                    name,
                    cat,
                }))
            }
            Class::Runtime | Class::Activity(_) => {
                let (code, to, kept) = match class {
                    Class::Activity(k) => (k, &mut self.acts, Kept::Activity),
                    _ => (0, &mut self.calls, Kept::Runtime),
                };
                to.push(&Linked {
                    lane,
                    ts: ts.0,
                    dur,
                    index: at.index,
                    name,
                    code,
                    corr: ev.args.correlation,
                });
                Some(kept)
            }
        }
    }
}
