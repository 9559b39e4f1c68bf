//! What `ops`' finish reads off the activities alone: O9's counts and GPU
//! sums, and I2–I3's gaps over every stream. They need no sweep, so the
//! finish computes them on a thread of their own beside the launches'
//! figures, before the sweeps (`measure.rs`), in one pass over the packed
//! activities, which are then dropped.

use super::gaps::{self, Timed};
use super::measure::Call;
use crate::hostops::launch::{end_of, Owners};
use crate::hostops::Linked;
use crate::store::pack::Records;

/// What the finish reads off the activities alone: O9's counts and GPU
/// sums, I2–I3's gaps. They need no sweep, so they are computed beside the
/// launches' figures.
#[derive(Debug, Default)]
pub(super) struct ActFacts {
    pub kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    pub linked: u64,
    pub gpu: i128,
    pub gpu_linked: i128,
    pub idle: gaps::Idle,
}

/// [`ActFacts`] in one pass over the packed activities: I2–I3 per stream
/// as they come ([`gaps::InOrder`]), then any stream out of order grouped
/// and sorted.
pub(super) fn act_facts(acts: &Records<Linked>, own: &Owners, calls: &[Call]) -> ActFacts {
    let mut f = ActFacts::default();
    let mut in_order = gaps::InOrder::default();
    for (a, o) in acts.iter().zip(own.iter()) {
        match a.code {
            1 => f.memcpys += 1,
            2 => f.memsets += 1,
            _ => f.kernels += 1,
        }
        f.gpu += i128::from(a.dur);
        if o.is_some() {
            f.linked += 1;
            f.gpu_linked += i128::from(a.dur);
        }
        in_order.push(a.lane, timed(&a, o, calls));
    }
    let (redo, sums) = in_order.finish();
    f.idle = sums.with(out_of_order_gaps(acts, own, calls, &redo));
    f
}

/// An activity as I2–I3 see it: unlinked, its call's start is `i64::MIN`
/// (never after any end, so never a host wait).
fn timed(a: &Linked, o: Option<u32>, calls: &[Call]) -> Timed {
    Timed {
        start: a.ts,
        end: end_of(a.ts, a.dur),
        call_ts: o.map_or(i64::MIN, |o| calls[o as usize].ts),
    }
}

/// I2–I3 over the `streams` whose activities are out of order: grouped by
/// stream (24 B an activity of theirs), for [`gaps::idle_grouped`].
fn out_of_order_gaps(
    acts: &Records<Linked>,
    own: &Owners,
    calls: &[Call],
    streams: &[u32],
) -> gaps::Idle {
    let Some(&top) = streams.iter().max() else {
        return gaps::Idle::default();
    };
    // Each stream's place among `streams` (u32::MAX: not redone).
    let mut slot = vec![u32::MAX; top as usize + 1];
    for (k, &s) in streams.iter().enumerate() {
        slot[s as usize] = k as u32;
    }
    let slot_of = |a: &Linked| {
        slot.get(a.lane as usize)
            .copied()
            .filter(|&k| k != u32::MAX)
    };
    let mut seg = vec![0usize; streams.len() + 1];
    for a in acts.iter() {
        if let Some(k) = slot_of(&a) {
            seg[k as usize + 1] += 1;
        }
    }
    for k in 0..streams.len() {
        seg[k + 1] += seg[k];
    }
    let mut next = seg.clone();
    let empty = Timed {
        start: 0,
        end: 0,
        call_ts: i64::MIN,
    };
    let mut grouped = vec![empty; seg[streams.len()]];
    for (a, o) in acts.iter().zip(own.iter()) {
        if let Some(k) = slot_of(&a) {
            let at = &mut next[k as usize];
            grouped[*at] = timed(&a, o, calls);
            *at += 1;
        }
    }
    gaps::idle_grouped(&mut grouped, &seg)
}
