//! The ledger's streaming half: [`Collector`] keeps every launch call and
//! GPU activity of the read as two varint streams (`store::pack::Packed`),
//! each record a delta from the previous one (the layout is in the ledger's
//! module docs); `launches_of` and `acts_of` decode them again.

use super::{Kind, Ledger, LAUNCH_CATEGORIES};
use crate::model::{Interner, LaneTable};
use crate::store::pack::{self, Fields, Packed};
use crate::trace::{Event, EventPos};

/// A launch call as read (every field exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RawLaunch {
    pub(super) ts: i64,
    pub(super) index: u64,
    pub(super) dur: i64,
    /// Exact past i64 (issue 59); ids are only compared.
    pub(super) corr: i128,
    pub(super) lane: u32,
    pub(super) name: u32,
}

/// A GPU activity as read (every field exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RawAct {
    pub(super) start: i64,
    pub(super) dur: i64,
    pub(super) corr: Option<i128>,
    pub(super) name: u32,
    pub(super) kind: Kind,
}

/// The previous record's values, which the next record's deltas are from.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct LaunchPrev {
    pub(super) ts: i64,
    pub(super) index: i64,
    pub(super) corr: i128,
}

/// Writes and reads the launch stream: Δts, Δindex, dur, Δcorr, lane, name.
impl LaunchPrev {
    pub(super) fn write(&mut self, p: &mut Packed, l: &RawLaunch) {
        p.begin(pack::MAX_RECORD);
        p.delta(l.ts, self.ts);
        p.delta(l.index as i64, self.index);
        p.delta(l.dur, 0);
        p.delta_wide(l.corr, self.corr);
        p.u(u64::from(l.lane));
        p.u(u64::from(l.name));
        *self = LaunchPrev {
            ts: l.ts,
            index: l.index as i64,
            corr: l.corr,
        };
    }

    pub(super) fn read(&mut self, f: &mut impl Fields) -> Option<RawLaunch> {
        if !f.next_record() {
            return None;
        }
        let l = RawLaunch {
            ts: f.delta(self.ts),
            index: f.delta(self.index) as u64,
            dur: f.delta(0),
            corr: f.delta_wide(self.corr),
            lane: f.u() as u32,
            name: f.u() as u32,
        };
        *self = LaunchPrev {
            ts: l.ts,
            index: l.index as i64,
            corr: l.corr,
        };
        Some(l)
    }
}

/// Writes and reads the activity stream: Δstart, dur, name·8 + kind·2 +
/// has_corr, and Δcorr when it has one.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct ActPrev {
    pub(super) start: i64,
    pub(super) corr: i128,
}

impl ActPrev {
    pub(super) fn write(&mut self, p: &mut Packed, a: &RawAct) {
        p.begin(pack::MAX_RECORD);
        p.delta(a.start, self.start);
        p.delta(a.dur, 0);
        let has = u64::from(a.corr.is_some());
        p.u((u64::from(a.name) << 3) | (a.kind.code() << 1) | has);
        if let Some(c) = a.corr {
            p.delta_wide(c, self.corr);
            self.corr = c;
        }
        self.start = a.start;
    }

    pub(super) fn read(&mut self, f: &mut impl Fields) -> Option<RawAct> {
        if !f.next_record() {
            return None;
        }
        let start = f.delta(self.start);
        let dur = f.delta(0);
        let meta = f.u();
        let corr = (meta & 1 == 1).then(|| f.delta_wide(self.corr));
        if let Some(c) = corr {
            self.corr = c;
        }
        self.start = start;
        Some(RawAct {
            start,
            dur,
            corr,
            name: (meta >> 3) as u32,
            kind: Kind::of_code((meta >> 1) & 3),
        })
    }
}

/// The records of a stream, decoded.
pub(super) fn launches_of<F: Fields>(mut f: F) -> impl Iterator<Item = RawLaunch> {
    let mut prev = LaunchPrev::default();
    std::iter::from_fn(move || prev.read(&mut f))
}

pub(super) fn acts_of<F: Fields>(mut f: F) -> impl Iterator<Item = RawAct> {
    let mut prev = ActPrev::default();
    std::iter::from_fn(move || prev.read(&mut f))
}

/// Streaming state: the launch calls and activities seen so far, as
/// varint streams (see the module docs).
#[derive(Debug, Default)]
pub struct Collector {
    pub(super) names: Interner,
    pub(super) lanes: LaneTable,
    pub(super) launches: Packed,
    pub(super) launch_prev: LaunchPrev,
    pub(super) n_launches: usize,
    /// A launch call came at or before the previous one's file index (a
    /// reader out of file order): owners are then found after a sort.
    pub(super) unordered: bool,
    /// (min, max) correlation id of the launch calls.
    pub(super) corr_range: Option<(i128, i128)>,
    pub(super) activities: Packed,
    pub(super) act_prev: ActPrev,
    pub(super) n_activities: usize,
}

impl Collector {
    /// Keeps the event if it is a launch call with a correlation or a GPU
    /// activity.
    pub fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        if !ev.is_complete() {
            return;
        }
        let start = ev.ts.unwrap_or_default().0;
        let dur = ev.dur_or_zero().0;
        if let Some(kind) = Kind::of_category(&ev.cat) {
            let a = RawAct {
                start,
                dur,
                corr: ev.args.correlation,
                name: self.names.intern(&ev.name).0,
                kind,
            };
            self.act_prev.write(&mut self.activities, &a);
            self.n_activities += 1;
        } else if LAUNCH_CATEGORIES.contains(&&*ev.cat) {
            let Some(corr) = ev.args.correlation else {
                return;
            };
            if self.n_launches > 0 && at.index as i64 <= self.launch_prev.index {
                self.unordered = true;
            }
            self.corr_range = Some(match self.corr_range {
                Some((lo, hi)) => (lo.min(corr), hi.max(corr)),
                None => (corr, corr),
            });
            let l = RawLaunch {
                ts: start,
                index: at.index,
                dur,
                corr,
                lane: self.lanes.intern(ev.lane()),
                name: self.names.intern(&ev.name).0,
            };
            self.launch_prev.write(&mut self.launches, &l);
            self.n_launches += 1;
        }
    }

    /// Indexes what was kept.
    pub fn finish(self) -> Ledger {
        Ledger::build(self)
    }
}
