//! The owners of the activities: the first launch call in file order with
//! each correlation id, found in two passes over the launch stream and
//! written lane by lane into 16 B records (`launches.rs`).

use super::collector::{launches_of, RawLaunch};
use super::corr::CorrIndex;
use super::groups::RankEnds;
use super::launches::{Call, Launches};
use crate::model::Sym;
use crate::store::bits::Bits;
use crate::store::pack::Packed;

/// The first launch call in file order with each correlation (its owner),
/// and whether launch calls of several processes share it.
pub(super) struct Owners {
    pub(super) first: FirstSeen,
    /// Per rank: counted in `shared`.
    pub(super) shared_bits: Bits,
    pub(super) shared: u64,
}

/// Per rank, whether a launch call was seen, and of which process: a bit
/// when the trace has one process (vLLM's worker traces; 5 MB less at 800
/// sample copies than 4 B per id), the first pid id otherwise.
pub(super) enum FirstSeen {
    OneProcess(Bits),
    /// The pid id of its first launch call, or [`Owners::UNSEEN`].
    Pids(Vec<u32>),
}

impl Owners {
    const UNSEEN: u32 = u32::MAX;

    pub(super) fn new(ranks: usize, pids: usize) -> Self {
        Owners {
            first: match pids {
                0 | 1 => FirstSeen::OneProcess(Bits::new(ranks)),
                _ => FirstSeen::Pids(vec![Self::UNSEEN; ranks]),
            },
            shared_bits: Bits::new(ranks),
            shared: 0,
        }
    }

    /// Sees launch call `rank`, `pid` (in file order): whether it owns.
    pub(super) fn see(&mut self, rank: u32, pid: u32) -> bool {
        let r = rank as usize;
        let slot = match &mut self.first {
            FirstSeen::OneProcess(seen) => return seen.insert(r),
            FirstSeen::Pids(first) => match first.get_mut(r) {
                Some(slot) => slot,
                None => return false,
            },
        };
        if *slot == Self::UNSEEN {
            *slot = pid;
            return true;
        }
        if *slot != pid && self.shared_bits.insert(r) {
            self.shared += 1;
        }
        false
    }
}

/// The launch stream in file order, decoded: as stored, or sorted by file
/// index when the reader was not in file order (`sorted`).
pub(super) fn in_file_order<'a>(
    stream: Option<Packed>,
    sorted: &'a [RawLaunch],
) -> Box<dyn Iterator<Item = RawLaunch> + 'a> {
    match stream {
        Some(p) => Box::new(launches_of(p.drain())),
        None => Box::new(sorted.iter().copied()),
    }
}

/// The launch calls that own activities (one per correlation with
/// activities), sorted by (lane, ts, index), with each lane's first
/// position; their wide (index, dur); how many correlations launch calls
/// of several processes share. Two passes over the launch stream in file
/// order: the first decides (a bit per launch call: it owns), counts per
/// lane and frees its per-id table; the second, which frees the stream,
/// places the owners by those bits.
pub(super) fn owners(
    c: LaunchSide,
    index: &CorrIndex,
    groups: &RankEnds,
    lane_pid: &[u32],
) -> OwnersOut {
    let LaunchSide {
        stream,
        unordered,
        lanes,
        n,
    } = c;
    let sorted: Vec<RawLaunch> = match unordered {
        true => {
            let mut v: Vec<RawLaunch> = launches_of(stream.reader()).collect();
            v.sort_unstable_by_key(|l| l.index);
            v
        }
        false => Vec::new(),
    };
    let pid = |l: &RawLaunch| lane_pid.get(l.lane as usize).copied().unwrap_or(0);
    // Pass 1 (without freeing): which launch calls own, and how many per
    // lane. The per-id table (4 B per id) is dropped before pass 2, whose
    // owners Vec is the build's peak: a bit per launch call replays its
    // decisions.
    let mut lane_starts = vec![0u32; lanes + 1];
    let mut owns = Bits::new(n);
    let shared = {
        let pids = lane_pid.iter().max().map_or(0, |&p| p as usize + 1);
        let mut o = Owners::new(index.len(), pids);
        let first: Box<dyn Iterator<Item = RawLaunch>> = match unordered {
            true => Box::new(sorted.iter().copied()),
            false => Box::new(launches_of(stream.reader())),
        };
        for (k, l) in first.enumerate() {
            let Some(r) = index.rank(l.corr) else {
                continue;
            };
            if o.see(r, pid(&l)) && !groups.range(r).is_empty() {
                owns.insert(k);
                if let Some(c) = lane_starts.get_mut(l.lane as usize + 1) {
                    *c += 1;
                }
            }
        }
        o.shared
    };
    for i in 1..lane_starts.len() {
        lane_starts[i] += lane_starts[i - 1];
    }
    // Pass 2, freeing the stream as it goes: each owner written at its
    // lane's cursor, into zeroed memory whose pages come as they are
    // written (a Vec filled at the cursors touched it whole while the
    // stream was still there: 12 MB more at 800 sample copies).
    let mut next = lane_starts.clone();
    let total = lane_starts.last().copied().unwrap_or(0) as usize;
    let mut launches = Launches::zeroed(total);
    for (k, l) in in_file_order((!unordered).then_some(stream), &sorted).enumerate() {
        if !owns.get(k) {
            continue;
        }
        let (Some(rank), Some(at)) = (index.rank(l.corr), next.get_mut(l.lane as usize)) else {
            continue;
        };
        let call = Call {
            ts: l.ts,
            index: l.index,
            dur: l.dur,
            name: Sym(l.name),
            group: groups.range(rank).start as u32,
        };
        launches.set(*at as usize, &call);
        *at += 1;
    }
    for lane in 0..lanes {
        launches.sort_range(lane_starts[lane] as usize..lane_starts[lane + 1] as usize);
    }
    OwnersOut {
        launches,
        lane_starts,
        shared,
    }
}

/// What [`owners`] reads: the launch stream and its shape.
pub(super) struct LaunchSide {
    pub(super) stream: Packed,
    pub(super) unordered: bool,
    pub(super) lanes: usize,
    /// Launch calls in the stream.
    pub(super) n: usize,
}

pub(super) struct OwnersOut {
    pub(super) launches: Launches,
    pub(super) lane_starts: Vec<u32>,
    pub(super) shared: u64,
}
