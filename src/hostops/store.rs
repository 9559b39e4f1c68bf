//! The per-trace host store: the host side of a trace read once and held
//! once for every analysis that needs it (`ops`, `roofline`, `idle`): the
//! engine's [`Collector`] that their [`crate::analysis::Use`]s ask for,
//! filled during the one read ([`HostStore::push`]) and handed to their
//! finishes sealed (`Finished::collected`).
//!
//! What it holds: the host side's links ([`HostLinks`]: every runtime call
//! and device activity as varint records, the names and lanes, C1–C2's
//! counts); every host op on its thread as the sorted runs of
//! [`crate::hostops::runs`], each op a start, a duration and its *form*;
//! the forms (an op's name, category and, for the names an analysis asks
//! shapes of, its `Input Dims`, `Input type` and `Concrete Inputs` as
//! interned texts), numbered in order of first appearance; and the step
//! and `proposer.propose` spans that place a graph launch
//! ([`super::spans::Spans`]).
//!
//! An analysis keeps only its own aggregates: it maps each form to its own
//! row once (`ops`: the (name, category) row of O1; `roofline`: the (name,
//! shapes) key of a modelled op), in form order, which is the order its
//! rows were made in when each analysis kept its own copy — so no figure
//! and no row order changes.
//!
//! ```text
//!  read ─ HostStore::push ─┬─ runtime calls, activities ─► links (≈ 10 B an event)
//!                          └─ host op ─► form id ─► its thread's runs (≈ 7 B an op)
//!  finish ─ Collected ─┬─ roofline, idle: read the store (shared)
//!                      └─ ops (last): owns it when no one else holds it, frees as it sweeps
//! ```
//!
//! Before the store, `batch` kept the host side twice (`ops`' and
//! `roofline`'s copies: 2 × 29 MB at the 1.28 GB benchmark trace) and
//! decoded every event into both.

use super::runs::{RunRecord, Runs};
use super::spans::Spans;
use super::{HostLinks, Kept};
use crate::analysis::{Collector, Collects};
use crate::model::{Interner, Sym};
use crate::store::pack::{push_varint, unzigzag, varint, zigzag};
use crate::trace::{Event, EventPos, Prefilter};
use std::collections::HashMap;
use std::sync::Arc;

/// The events the store keeps (C2's categories): what an analysis that
/// reads only the store admits.
pub fn prefilter() -> Prefilter {
    HostLinks::default().prefilter()
}

/// A text id that stands for "not recorded" in a [`Form`].
pub(crate) const NO_TEXT: u32 = u32::MAX;

/// What the store records of an op besides its times: its name, its
/// category (a position in [`super::HOST_CATEGORIES`]) and, when its
/// name is one an analysis asks shapes of, its shape texts (else
/// [`NO_TEXT`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Form {
    pub name: Sym,
    pub cat: u8,
    pub dims: u32,
    pub types: u32,
    pub concrete: u32,
}

/// A host op as the store keeps it: start, duration, form; its place
/// among its thread's ops is the one it is read at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Formed {
    pub ts: i64,
    pub dur: i64,
    pub form: u32,
    pub pos: u32,
}

/// Varints: Δts from the run's previous op, dur, form.
impl RunRecord for Formed {
    type Prev = i64;
    /// Three varints.
    const MAX_BYTES: usize = 30;
    const FIRST_CHUNK: usize = 64;

    fn ts(&self) -> i64 {
        self.ts
    }

    fn dur(&self) -> i64 {
        self.dur
    }

    fn pos(&self) -> u32 {
        self.pos
    }

    #[inline]
    fn write(&self, prev: &mut i64, out: &mut Vec<u8>) {
        push_varint(out, zigzag(self.ts.wrapping_sub(*prev)));
        push_varint(out, zigzag(self.dur));
        push_varint(out, u64::from(self.form));
        *prev = self.ts;
    }

    #[inline]
    fn read(prev: &mut i64, bytes: &[u8], at: &mut usize, pos: u32) -> Formed {
        let ts = prev.wrapping_add(unzigzag(varint(bytes, at)));
        let dur = unzigzag(varint(bytes, at));
        let form = varint(bytes, at) as u32;
        *prev = ts;
        Formed { ts, dur, form, pos }
    }
}

/// Which op names the store records shapes of (`roofline`'s modelled
/// ops): a name is shaped when any of the tests says so.
pub type ShapesOf = fn(&str) -> bool;

/// What an analysis asks of the host store (the options of its
/// [`crate::analysis::Use`]).
#[derive(Debug, Clone, Copy)]
pub struct HostUse {
    /// It reads the host ops (`idle` reads only the runtime calls and
    /// activities: a store without them is what it kept alone).
    pub host_ops: bool,
    /// The names whose shapes it needs (`None`: none).
    pub shapes: Option<ShapesOf>,
}

/// The host side of one trace (see the module docs).
#[derive(Debug, Default)]
pub struct HostStore {
    pub(crate) links: HostLinks,
    /// Each thread's ops, by lane (`links.lanes`); a lane with no op may
    /// be missing at the end.
    pub(crate) threads: Vec<Runs<Formed>>,
    pub(crate) forms: Vec<Form>,
    /// The shape texts of the forms.
    pub(crate) texts: Interner,
    pub(crate) spans: Spans,
    /// Form ids: of an unshaped op by `name × 4 + cat` (most ops), of a
    /// shaped one by its form.
    plain: Vec<u32>,
    shaped_ids: HashMap<Form, u32>,
    /// Per name: 0 not asked yet, 1 unshaped, 2 shaped.
    shaped: Vec<u8>,
    shapes: Vec<ShapesOf>,
    /// Whether host ops are kept (a user asked for them).
    host_ops: bool,
}

impl HostStore {
    /// The events it keeps (C2's categories; without the host ops' when
    /// none is kept).
    pub fn prefilter(&self) -> Prefilter {
        if self.host_ops {
            self.links.prefilter()
        } else {
            crate::ledger::prefilter()
        }
    }

    /// C1–C2 for one event (`HostLinks::keep`); a host op goes to its
    /// thread's runs under its form.
    pub fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        if !self.host_ops && super::HOST_CATEGORIES.contains(&&*ev.cat) {
            return;
        }
        let Some(Kept::Host(o)) = self.links.keep(ev, at) else {
            return;
        };
        let end = super::launch::end_of(o.ts, o.dur);
        let name = self.links.names.resolve(o.name);
        self.spans.observe(o.lane, o.ts, end, name);
        let form = if self.is_shaped(o.name) {
            let mut text = |t: &Option<std::borrow::Cow<'_, str>>| {
                t.as_deref().map_or(NO_TEXT, |t| self.texts.intern(t).0)
            };
            let a = &ev.args;
            let f = Form {
                name: o.name,
                cat: o.cat,
                dims: text(&a.input_dims),
                types: text(&a.input_type),
                concrete: text(&a.concrete_inputs),
            };
            self.shaped_form(f)
        } else {
            self.plain_form(o.name, o.cat)
        };
        let l = o.lane as usize;
        if self.threads.len() <= l {
            self.threads.resize_with(l + 1, Runs::default);
        }
        self.threads[l].push(&Formed {
            ts: o.ts,
            dur: o.dur,
            form,
            pos: 0,
        });
    }

    fn is_shaped(&mut self, name: Sym) -> bool {
        if self.shapes.is_empty() {
            return false;
        }
        let i = name.0 as usize;
        if self.shaped.len() <= i {
            self.shaped.resize(i + 1, 0);
        }
        if self.shaped[i] == 0 {
            let n = self.links.names.resolve(name);
            self.shaped[i] = if self.shapes.iter().any(|s| s(n)) {
                2
            } else {
                1
            };
        }
        self.shaped[i] == 2
    }

    fn plain_form(&mut self, name: Sym, cat: u8) -> u32 {
        let k = name.0 as usize * 4 + usize::from(cat & 3);
        if self.plain.len() <= k {
            self.plain.resize(k + 1, u32::MAX);
        }
        if self.plain[k] == u32::MAX {
            self.plain[k] = self.add(Form {
                name,
                cat,
                dims: NO_TEXT,
                types: NO_TEXT,
                concrete: NO_TEXT,
            });
        }
        self.plain[k]
    }

    fn shaped_form(&mut self, f: Form) -> u32 {
        if let Some(&id) = self.shaped_ids.get(&f) {
            return id;
        }
        let id = self.add(f);
        self.shaped_ids.insert(f, id);
        id
    }

    fn add(&mut self, f: Form) -> u32 {
        self.forms.push(f);
        (self.forms.len() - 1) as u32
    }

    /// The end of the read: the lookups that only the read needs are
    /// dropped.
    pub(crate) fn sealed(mut self) -> HostStore {
        self.plain = Vec::new();
        self.shaped_ids = HashMap::new();
        self.shaped = Vec::new();
        self
    }
}

/// The engine's view: one store per read, made from every user's
/// [`HostUse`], sealed at the end of the read.
impl Collector for HostStore {
    fn prefilter(&self) -> Prefilter {
        HostStore::prefilter(self)
    }

    fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        HostStore::push(self, ev, at);
    }

    fn seal(self: Box<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        Arc::new(self.sealed())
    }
}

impl Collects for HostStore {
    type Options = HostUse;

    fn make(uses: &[&HostUse]) -> HostStore {
        HostStore {
            shapes: uses.iter().filter_map(|u| u.shapes).collect(),
            host_ops: uses.iter().any(|u| u.host_ops),
            ..HostStore::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn formed(ts: i64, dur: i64, form: u32) -> Formed {
        Formed {
            ts,
            dur,
            form,
            pos: 0,
        }
    }

    /// The drawing of `hostops::runs`: three runs, merged in key order;
    /// equal keys keep file order; an enclosing op (earlier start or same
    /// start, later end) first.
    #[test]
    fn runs_merge_in_key_order() {
        let mut t = Runs::<Formed>::default();
        for (ts, dur, row) in [
            (0, 5, 0),
            (3, 1, 1),
            (7, 2, 2),
            (1, 9, 3),
            (4, 0, 4),
            (2, 1, 5),
        ] {
            t.push(&formed(ts, dur, row));
        }
        assert_eq!(t.run_count(), 3);
        let rows: Vec<u32> = t.into_merged().map(|o| o.form).collect();
        assert_eq!(rows, vec![0, 3, 5, 1, 4, 2]);
        let mut t = Runs::<Formed>::default();
        // Same start: the longer encloses, so it comes first even when
        // written later; identical ranges keep file order.
        for (ts, dur, row) in [(5, 1, 0), (5, 3, 1), (5, 3, 2)] {
            t.push(&formed(ts, dur, row));
        }
        let got: Vec<(u32, u32)> = t.into_merged().map(|o| (o.form, o.pos)).collect();
        assert_eq!(got, vec![(1, 1), (2, 2), (0, 0)]);
    }

    /// Extreme values round-trip through the record's varints.
    #[test]
    fn extremes_round_trip() {
        let mut t = Runs::<Formed>::default();
        let kept = [
            formed(i64::MIN, i64::MAX, u32::MAX),
            formed(i64::MAX, 0, 0),
            formed(-1, -1, 7),
        ];
        for o in &kept {
            t.push(o);
        }
        let back: Vec<Formed> = t.in_file_order().collect();
        for (p, (b, k)) in back.iter().zip(&kept).enumerate() {
            assert_eq!(
                *b,
                Formed {
                    pos: p as u32,
                    ..*k
                }
            );
        }
    }

    /// Forms are numbered in order of first appearance; an unshaped name
    /// gets one form per category, a shaped one one per shape.
    #[test]
    fn forms_in_order_of_first_appearance() {
        let mut s = HostStore::make(&[&HostUse {
            host_ops: true,
            shapes: Some(|n: &str| n == "aten::mm"),
        }]);
        let a = s.links.names.intern("a");
        let mm = s.links.names.intern("aten::mm");
        assert_eq!(s.plain_form(a, 0), 0);
        assert_eq!(s.plain_form(a, 2), 1);
        assert_eq!(s.plain_form(a, 0), 0);
        assert!(s.is_shaped(mm) && !s.is_shaped(a));
        let shape = |d: u32| Form {
            name: mm,
            cat: 0,
            dims: d,
            types: NO_TEXT,
            concrete: NO_TEXT,
        };
        assert_eq!(s.shaped_form(shape(7)), 2);
        assert_eq!(s.shaped_form(shape(8)), 3);
        assert_eq!(s.shaped_form(shape(7)), 2);
        assert_eq!(s.forms.len(), 4);
    }
}
