//! The ledger's GPU activities once grouped by correlation: fixed records of
//! 6, 8 or 12 B in 65536-record chunks (with a palette of shapes when they
//! repeat, and exact escapes in `wide`), decoded on access as
//! [`Activity`] values (the layouts are drawn in the ledger's module docs).

use super::collector::RawAct;
use super::Kind;
use crate::model::{Ns, Sym};
use crate::store::pack::Chunked;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

/// A kernel, memcpy or memset.
#[derive(Debug, Clone, Copy)]
pub struct Activity {
    pub start: Ns,
    pub end: Ns,
    pub name: Sym,
    pub kind: Kind,
    pub(super) has_corr: bool,
}

impl Activity {
    /// Whether it carried an integer `args.correlation` (a GPU activity in
    /// the definitions' sense; one without is kept for the timeline only).
    pub fn has_correlation(&self) -> bool {
        self.has_corr
    }
}

/// An activity as stored in the ledger (12 B, see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Rec {
    /// Its start − its chunk's base (the first start written there).
    pub(super) off: i32,
    /// Its duration; 0 when [`REC_WIDE`] (then `wide[meta >> 4]` has it).
    pub(super) dur: u32,
    /// name·16 + wide·8 + kind·2 + has_corr.
    pub(super) meta: u32,
}

pub(super) const REC_HAS_CORR: u32 = 1;
pub(super) const REC_WIDE: u32 = 8;
/// Names and wide positions a [`Rec`] holds in place: 28 bits.
pub(super) const REC_MAX_NAME: u32 = (1 << 28) - 1;

/// An activity that does not fit a [`Rec`]: a start over ±2.1 s from its
/// chunk's base, a duration ≥ 2^32 ns (or negative), a name ≥ 2^28; or a
/// [`Rec8`] or [`Rec6`] start over ±2.1 s from its chunk's base.
#[derive(Debug, Clone, Copy)]
pub(super) struct WideAct {
    pub(super) start: i64,
    pub(super) dur: i64,
    pub(super) name: Sym,
    /// kind·2 + has_corr (read by [`Rec8`]s and [`Rec6`]s; a [`Rec`] keeps its own).
    pub(super) flags: u32,
}

/// An activity as stored when the trace's activities share few shapes
/// (8 B, see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Rec8 {
    /// Its start − its chunk's base (the first start written there).
    pub(super) off: i32,
    /// Its shape's position in `shapes`, or [`REC8_WIDE`] | its position
    /// in `wide`.
    pub(super) code: u32,
}

pub(super) const REC8_WIDE: u32 = 1 << 31;

/// An activity as stored when its trace has fewer than 65,535 shapes
/// (6 B, see the module docs): the offset in two halves keeps the record's
/// alignment at 2.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Rec6 {
    /// Its start − its chunk's base, low and high halves; its position in
    /// `wide` when `code` is [`REC6_WIDE`].
    pub(super) off: [u16; 2],
    /// Its shape's position in `shapes`.
    pub(super) code: u16,
}

pub(super) const REC6_WIDE: u16 = u16::MAX;

impl Rec6 {
    pub(super) fn new(off: u32, code: u16) -> Rec6 {
        Rec6 {
            off: [off as u16, (off >> 16) as u16],
            code,
        }
    }

    pub(super) fn off(&self) -> u32 {
        u32::from(self.off[0]) | u32::from(self.off[1]) << 16
    }
}

/// What activities repeat: duration, name, kind and whether it has a
/// correlation (the vLLM samples: 13–26 % distinct; the TP=2 run: 3 %).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Shape {
    pub(super) dur: i64,
    pub(super) name: u32,
    /// kind·2 + has_corr.
    pub(super) flags: u32,
}

impl Shape {
    pub(super) fn of(a: &RawAct) -> Shape {
        Shape {
            dur: a.dur,
            name: a.name,
            flags: (a.kind.code() as u32) << 1 | u32::from(a.corr.is_some()),
        }
    }
}

/// A multiply-rotate hash of a [`Shape`]'s three integers: the palette is
/// looked up twice per activity on the build's serial path, where SipHash
/// cost ≈ 2 % of `hierarchy` (HashDoS needs chosen keys; a trace's shapes
/// only make lookups slower, never wrong).
#[derive(Default)]
pub(super) struct ShapeHasher(u64);

impl Hasher for ShapeHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }
}

/// The shapes of a store of [`Rec8`]s or [`Rec6`]s, with their positions while it is
/// being built.
#[derive(Debug, Default, Clone)]
pub(super) struct Palette {
    pub(super) shapes: Vec<Shape>,
    pub(super) lookup: HashMap<Shape, u32, BuildHasherDefault<ShapeHasher>>,
}

impl Palette {
    /// `a`'s shape's position, added if new.
    pub(super) fn code(&mut self, a: &RawAct) -> u32 {
        let shape = Shape::of(a);
        let next = self.shapes.len() as u32;
        let at = *self.lookup.entry(shape).or_insert(next);
        if at == next {
            self.shapes.push(shape);
        }
        at
    }
}

impl Palette {
    pub(super) fn bytes(&self) -> usize {
        self.shapes.capacity() * std::mem::size_of::<Shape>()
            + self.lookup.capacity() * (std::mem::size_of::<Shape>() + 4)
    }
}

/// The fields of an activity stored as a shape's code and its start.
pub(super) fn shaped(p: &Palette, code: u32, start: i64) -> (i64, i64, u32, u32) {
    let s = p.shapes.get(code as usize).copied().unwrap_or(Shape {
        dur: 0,
        name: 0,
        flags: 0,
    });
    (start, s.dur, s.name, s.flags)
}

/// A palette is used when activities average at least this many per
/// shape (collected while counting the groups, given up once there are
/// more): 8 B + 16 B / SHAPES_PER (+ the lookup while building) < 12 B.
pub(super) const SHAPES_PER: usize = 4;

/// Keeps `a` in the wide list; its position there (saturating at `max`).
pub(super) fn push_wide(wide: &mut Vec<WideAct>, a: &RawAct, max: u32) -> u32 {
    let at = u32::try_from(wide.len()).map_or(max, |w| w.min(max));
    wide.push(WideAct {
        start: a.start,
        dur: a.dur,
        name: Sym(a.name),
        flags: Shape::of(a).flags,
    });
    at
}

/// The records, in one of two layouts (see the module docs).
#[derive(Debug)]
pub(super) enum Recs {
    /// 12 B per activity.
    Full(Chunked<Rec>),
    /// 8 B per activity and 16 B per shape.
    Shaped(Chunked<Rec8>, Palette),
    /// 6 B per activity and 16 B per shape (fewer than 65,535 shapes).
    Shaped6(Chunked<Rec6>, Palette),
}

impl Default for Recs {
    fn default() -> Self {
        Recs::Full(Chunked::default())
    }
}

/// The ledger's activities, grouped by correlation (see the module docs):
/// read them with [`Activities::get`], [`Activities::iter`] or
/// [`Activities::range`].
#[derive(Debug, Default)]
pub struct Activities {
    pub(super) recs: Recs,
    /// Per chunk of `recs`: the start its offsets are from.
    pub(super) bases: Vec<i64>,
    pub(super) wide: Vec<WideAct>,
}

impl Activities {
    /// `len` activities in 12 B records.
    #[cfg(test)]
    pub(super) fn with_len(len: usize) -> Self {
        Self::of(len, None)
    }

    /// `len` activities, in 6 or 8 B records with `palette` when there is
    /// one (6 when its codes fit 16 bits, the escape left out).
    pub(super) fn of(len: usize, palette: Option<Palette>) -> Self {
        let chunks = Chunked::<Rec>::with_len(len).chunks();
        Activities {
            recs: match palette {
                Some(p) if p.shapes.len() < usize::from(REC6_WIDE) => {
                    Recs::Shaped6(Chunked::with_len(len), p)
                }
                Some(p) => Recs::Shaped(Chunked::with_len(len), p),
                None => Recs::Full(Chunked::with_len(len)),
            },
            bases: vec![0; chunks],
            wide: Vec::new(),
        }
    }

    /// Whether position `i`'s chunk has had a write.
    pub(super) fn is_allocated(&self, i: usize) -> bool {
        match &self.recs {
            Recs::Full(r) => r.is_allocated(i),
            Recs::Shaped(r, _) => r.is_allocated(i),
            Recs::Shaped6(r, _) => r.is_allocated(i),
        }
    }

    /// Stores `a` at position `i`.
    pub(super) fn set(&mut self, i: usize, a: &RawAct) {
        let c = Chunked::<Rec>::chunk_of(i);
        if !self.is_allocated(i) {
            if let Some(b) = self.bases.get_mut(c) {
                *b = a.start;
            }
        }
        let base = self.bases.get(c).copied().unwrap_or(0);
        let off = i32::try_from(i128::from(a.start) - i128::from(base));
        let wide = &mut self.wide;
        match &mut self.recs {
            Recs::Shaped(recs, palette) => {
                let rec = match off {
                    Ok(off) => Rec8 {
                        off,
                        code: palette.code(a),
                    },
                    Err(_) => Rec8 {
                        off: 0,
                        code: REC8_WIDE | push_wide(wide, a, REC8_WIDE - 1),
                    },
                };
                recs.set(i, rec);
            }
            Recs::Shaped6(recs, palette) => {
                // Every shape was coded while the groups were counted, so
                // a code here is always below the escape.
                let rec = match off {
                    Ok(off) => Rec6::new(off as u32, palette.code(a) as u16),
                    Err(_) => Rec6::new(push_wide(wide, a, u32::MAX), REC6_WIDE),
                };
                recs.set(i, rec);
            }
            Recs::Full(recs) => {
                let flags = Shape::of(a).flags;
                let rec = match (off, u32::try_from(a.dur)) {
                    (Ok(off), Ok(dur)) if a.name <= REC_MAX_NAME => Rec {
                        off,
                        dur,
                        meta: (a.name << 4) | flags,
                    },
                    _ => Rec {
                        off: 0,
                        dur: 0,
                        meta: (push_wide(wide, a, REC_MAX_NAME) << 4) | REC_WIDE | flags,
                    },
                };
                recs.set(i, rec);
            }
        }
    }

    /// Drops what only building needed (the palette's lookup).
    pub(super) fn seal(&mut self) {
        if let Recs::Shaped(_, p) | Recs::Shaped6(_, p) = &mut self.recs {
            p.lookup = HashMap::default();
            p.shapes.shrink_to_fit();
        }
        self.wide.shrink_to_fit();
    }

    /// The exact fields of the activity at `i` (its correlation only as
    /// present or not).
    #[inline]
    pub(super) fn raw(&self, i: usize) -> RawAct {
        let base = || {
            self.bases
                .get(Chunked::<Rec>::chunk_of(i))
                .copied()
                .unwrap_or(0)
        };
        let wide = |at: u32| {
            self.wide
                .get(at as usize)
                .map_or((0, 0, 0, 0), |w| (w.start, w.dur, w.name.0, w.flags))
        };
        let (start, dur, name, flags) = match &self.recs {
            Recs::Full(recs) => {
                let r = recs.get(i);
                match r.meta & REC_WIDE {
                    0 => (
                        base().wrapping_add(i64::from(r.off)),
                        i64::from(r.dur),
                        r.meta >> 4,
                        r.meta & 7,
                    ),
                    _ => {
                        let (start, dur, name, _) = wide(r.meta >> 4);
                        (start, dur, name, r.meta & 7)
                    }
                }
            }
            Recs::Shaped(recs, p) => {
                let r = recs.get(i);
                match r.code & REC8_WIDE {
                    0 => shaped(p, r.code, base().wrapping_add(i64::from(r.off))),
                    _ => wide(r.code & !REC8_WIDE),
                }
            }
            Recs::Shaped6(recs, p) => {
                let r = recs.get(i);
                match r.code {
                    REC6_WIDE => wide(r.off()),
                    code => shaped(
                        p,
                        u32::from(code),
                        base().wrapping_add(i64::from(r.off() as i32)),
                    ),
                }
            }
        };
        RawAct {
            start,
            dur,
            corr: (flags & REC_HAS_CORR != 0).then_some(0),
            name,
            kind: Kind::of_code(u64::from((flags >> 1) & 3)),
        }
    }

    /// How many activities the trace has (with or without a correlation).
    pub fn len(&self) -> usize {
        match &self.recs {
            Recs::Full(r) => r.len(),
            Recs::Shaped(r, _) => r.len(),
            Recs::Shaped6(r, _) => r.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The activity at position `i` (a zero-length kernel at 0 out of range).
    #[inline]
    pub fn get(&self, i: usize) -> Activity {
        let a = self.raw(i);
        Activity {
            start: Ns(a.start),
            end: Ns(a.start).saturating_add(Ns(a.dur)),
            name: Sym(a.name),
            kind: a.kind,
            has_corr: a.corr.is_some(),
        }
    }

    /// The start of the activity at position `i` (for sorting by it).
    pub fn start_of(&self, i: usize) -> Ns {
        Ns(self.raw(i).start)
    }

    /// The activities at positions `r`.
    pub fn range(&self, r: Range<usize>) -> ActIter<'_> {
        ActIter {
            store: self,
            at: r.start,
            end: r.end.max(r.start),
        }
    }

    /// Every activity, by position.
    pub fn iter(&self) -> ActIter<'_> {
        self.range(0..self.len())
    }

    /// Bytes held by the store.
    pub fn bytes(&self) -> usize {
        let recs = match &self.recs {
            Recs::Full(r) => r.bytes(),
            Recs::Shaped(r, p) => r.bytes() + p.bytes(),
            Recs::Shaped6(r, p) => r.bytes() + p.bytes(),
        };
        recs + self.bases.capacity() * 8 + self.wide.capacity() * std::mem::size_of::<WideAct>()
    }

    /// Sorts positions `r` by (start, end): decoded, sorted, stored again
    /// (a group is one launch call's activities: small).
    pub(super) fn sort_range(&mut self, r: Range<usize>) {
        let key = |a: &RawAct| (a.start, Ns(a.start).saturating_add(Ns(a.dur)));
        let mut v: Vec<RawAct> = r.clone().map(|i| self.raw(i)).collect();
        if v.is_sorted_by_key(key) {
            return;
        }
        v.sort_unstable_by_key(key);
        for (i, a) in r.zip(&v) {
            self.set(i, a);
        }
    }
}

/// Activities decoded one by one ([`Activities::range`]).
#[derive(Debug, Clone)]
pub struct ActIter<'a> {
    pub(super) store: &'a Activities,
    pub(super) at: usize,
    pub(super) end: usize,
}

impl Iterator for ActIter<'_> {
    type Item = Activity;

    fn next(&mut self) -> Option<Activity> {
        (self.at < self.end).then(|| {
            self.at += 1;
            self.store.get(self.at - 1)
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.at;
        (n, Some(n))
    }
}

impl ExactSizeIterator for ActIter<'_> {}

/// A launch call's activities in [`crate::ledger::Ledger::activities`].
#[derive(Debug, Clone, Copy)]
pub struct Acts<'a> {
    pub(super) store: &'a Activities,
    pub(super) first: usize,
    pub(super) end: usize,
}

impl<'a> Acts<'a> {
    pub fn iter(&self) -> ActIter<'a> {
        self.store.range(self.first..self.end)
    }

    pub fn len(&self) -> usize {
        self.end - self.first
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Their positions in [`crate::ledger::Ledger::activities`].
    pub fn positions(&self) -> Range<usize> {
        self.first..self.end
    }
}

impl<'a> IntoIterator for Acts<'a> {
    type Item = Activity;
    type IntoIter = ActIter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
