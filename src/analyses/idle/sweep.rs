//! The one walk of `idle`'s finish over every device activity: the
//! streams' sorted runs merged by start, so that each stream sees its own
//! activities in I1's order (gaps I2–I3) while the unions that cross
//! streams — a device's timeline (I4), a step's busy time and per-class
//! unions (I6) — grow in start order by their running maximum end, with
//! no interval kept (except communication's, rare, for the overlap).
//!
//! ```text
//! stream a   [1──4)      [6──9)                 union by running max end, in start order:
//! stream b      [3────────8)  [10─12)            start 1: +3 (end 4)   start 3: +4 (end 8)
//! merged     1   3          6    10              start 6: +1 (end 9)   start 10: +2 → busy 10
//! ```

use super::compute::{Calls, Rec, NO_CALL};
use super::{Class, Counts, Part, StreamIdle};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// A half-open interval in ns.
pub(super) type Iv = (i64, i64);

/// A union's length grown in start order: what lies past the running
/// maximum end (any order among equal starts gives the same length).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Union {
    pub reach: Option<i64>,
    pub len: i128,
}

impl Union {
    pub(super) fn add(&mut self, s: i64, e: i64) {
        let from = self.reach.map_or(s, |r| r.max(s));
        self.len += (i128::from(e) - i128::from(from)).max(0);
        self.reach = Some(self.reach.map_or(e, |r| r.max(e)));
    }
}

/// Merged intervals grown in start order (touching intervals merge).
pub(super) fn merge_into(list: &mut Vec<Iv>, s: i64, e: i64) {
    match list.last_mut() {
        Some(last) if s <= last.1 => last.1 = last.1.max(e),
        _ => list.push((s, e)),
    }
}

/// |a ∩ b| of two merged lists (two pointers).
pub(super) fn overlap(a: &[Iv], b: &[Iv]) -> i128 {
    let (mut i, mut j, mut total) = (0, 0, 0i128);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            total += i128::from(hi) - i128::from(lo);
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

/// A device's timeline as the walk grows it (I4).
#[derive(Debug, Default)]
pub(super) struct DevAcc {
    pub activities: u64,
    pub comm_kernels: u64,
    pub first: Option<i64>,
    pub all: Union,
    /// compute, comm, memory (C6).
    pub class: [Union; 3],
    /// Kept only on a device with communication (for the overlap).
    pub compute_list: Vec<Iv>,
    pub comm_list: Vec<Iv>,
    pub has_comm: bool,
}

/// A part's figures (a step row, pre or unattributed) as the walk grows them.
#[derive(Debug, Default)]
pub(super) struct PartAcc {
    pub work: Part,
    pub all: Union,
    /// Its communication activities (device, interval), in start order.
    pub comm: Vec<(u32, Iv)>,
}

/// A stream's gaps as the walk grows them (I2–I3).
#[derive(Debug, Default)]
pub(super) struct StreamAcc {
    pub s: StreamIdle,
    pub busy: i128,
    pub prev_end: Option<i64>,
    pub first: Option<i64>,
}

/// The I3 category of a gap.
#[derive(Clone, Copy)]
enum Cat {
    Host,
    Kernel,
    Other,
}

/// What the walk reads.
pub(super) struct Input<'a> {
    /// Every activity, stream after stream, each stream in I1's order.
    pub recs: &'a [Rec],
    /// Stream `s` is `recs[seg[s]..seg[s + 1]]`.
    pub seg: &'a [usize],
    /// Each stream's device position.
    pub dev_of_stream: &'a [u32],
    pub calls: &'a Calls,
    pub kernel_wait_ns: i64,
}

/// What the walk gives.
pub(super) struct Walked {
    pub streams: Vec<StreamAcc>,
    pub devices: Vec<DevAcc>,
    pub parts: Vec<PartAcc>,
    /// The (part, stream) pairs of the parts' activities, sorted, each
    /// once (8 B a pair: no set per part, issue 59).
    pub used: Vec<(u32, u32)>,
}

/// The walk: the streams' runs merged by (start, stream), each activity
/// into its stream (gaps), its device (timeline) and its part (I6).
/// `None` when its table of parts cannot be allocated (the caller gives
/// up for memory).
pub(super) fn walk(
    inp: &Input<'_>,
    n_parts: usize,
    n_devices: usize,
    counts: &mut Counts,
) -> Option<Walked> {
    let n_streams = inp.seg.len() - 1;
    // The parts' accumulators (a few hundred bytes each: 77 MB at 400 k
    // steps) are taken fallibly, as the table below.
    let mut parts = Vec::new();
    parts.try_reserve_exact(n_parts).ok()?;
    parts.extend((0..n_parts).map(|_| PartAcc::default()));
    let mut out = Walked {
        streams: (0..n_streams).map(|_| StreamAcc::default()).collect(),
        devices: (0..n_devices).map(|_| DevAcc::default()).collect(),
        parts,
        used: Vec::new(),
    };
    // Each stream's last part recorded in `used` (a stream's activities of
    // one part mostly come together: few repeats, removed at the end).
    let mut last_part = vec![u32::MAX; n_streams];
    for (sid, &d) in inp.dev_of_stream.iter().enumerate() {
        let run = &inp.recs[inp.seg[sid]..inp.seg[sid + 1]];
        if run.iter().any(|r| r.class() == Class::Comm) {
            out.devices[d as usize].has_comm = true;
        }
    }
    // Per (part, device): the three class unions of the part there.
    // Sized once for one device per part (the usual case): no table of
    // half the size beside it while it grows (issue 64: 59 MB at 400 k
    // steps, the largest single allocation of `batch` there).
    // `None` where it cannot be had: growing it would abort the process.
    let mut part_class: HashMap<(u32, u32), [Union; 3]> = HashMap::new();
    part_class.try_reserve(n_parts).ok()?;
    let mut cursor: Vec<usize> = inp.seg[..n_streams].to_vec();
    let mut heap: BinaryHeap<Reverse<(i64, usize)>> = (0..n_streams)
        .filter(|&s| inp.seg[s] < inp.seg[s + 1])
        .map(|s| Reverse((inp.recs[inp.seg[s]].start, s)))
        .collect();
    while let Some(Reverse((_, sid))) = heap.pop() {
        let r = inp.recs[cursor[sid]];
        cursor[sid] += 1;
        if cursor[sid] < inp.seg[sid + 1] {
            heap.push(Reverse((inp.recs[cursor[sid]].start, sid)));
        }
        let dev = inp.dev_of_stream[sid];
        let part = inp.calls.part_of(r.call, n_parts);
        let class = r.class();
        on_device(&mut out.devices[dev as usize], &r, class);
        let p = &mut out.parts[part];
        on_part(p, &r, class, dev);
        if last_part[sid] != part as u32 {
            last_part[sid] = part as u32;
            out.used.push((part as u32, sid as u32));
        }
        let pc = part_class.entry((part as u32, dev)).or_default();
        pc[class as usize].add(r.start, r.end);
        on_stream(inp, &mut out.streams[sid], p, &r, counts);
    }
    out.used.sort_unstable();
    out.used.dedup();
    for ((part, _), u) in part_class {
        let w = &mut out.parts[part as usize].work;
        w.compute_ns += u[0].len;
        w.comm_ns += u[1].len;
        w.memory_ns += u[2].len;
    }
    Some(out)
}

fn on_device(d: &mut DevAcc, r: &Rec, class: Class) {
    d.activities += 1;
    d.first = Some(d.first.map_or(r.start, |f| f.min(r.start)));
    d.all.add(r.start, r.end);
    d.class[class as usize].add(r.start, r.end);
    match class {
        Class::Comm => {
            d.comm_kernels += 1;
            merge_into(&mut d.comm_list, r.start, r.end);
        }
        Class::Compute if d.has_comm => merge_into(&mut d.compute_list, r.start, r.end),
        _ => {}
    }
}

fn on_part(p: &mut PartAcc, r: &Rec, class: Class, dev: u32) {
    let w = &mut p.work;
    w.activities += 1;
    w.kernels += u64::from(r.is_kernel());
    w.gpu_first_start_ns = Some(w.gpu_first_start_ns.map_or(r.start, |f| f.min(r.start)));
    w.gpu_last_end_ns = Some(w.gpu_last_end_ns.map_or(r.end, |l| l.max(r.end)));
    w.gpu_ns += i128::from(r.end) - i128::from(r.start);
    p.all.add(r.start, r.end);
    if class == Class::Comm {
        p.comm.push((dev, (r.start, r.end)));
    }
}

/// One activity into its stream: the gap against the running maximum end
/// (I2) and its category (I3), into the stream and the activity's part.
fn on_stream(inp: &Input<'_>, st: &mut StreamAcc, p: &mut PartAcc, r: &Rec, counts: &mut Counts) {
    let s = &mut st.s;
    s.activities += 1;
    st.first = Some(st.first.map_or(r.start, |f| f.min(r.start)));
    let call_ts = (r.call != NO_CALL).then(|| inp.calls.ts[r.call as usize]);
    match call_ts {
        None => s.unlinked += 1,
        Some(c) if r.start < c => s.queue.activities_starting_before_launch += 1,
        Some(_) => {}
    }
    let Some(pe) = st.prev_end else {
        st.busy += i128::from(r.end) - i128::from(r.start);
        st.prev_end = Some(r.end);
        return;
    };
    if r.start < pe {
        counts.overlapping += 1;
    }
    // I2: the union grows by what lies beyond the running max end.
    st.busy += (i128::from(r.end) - i128::from(r.start.max(pe))).max(0);
    // i128: the gap between two i64 times can pass i64 (issue 59).
    let gap = (i128::from(r.start) - i128::from(pe)).max(0);
    st.prev_end = Some(pe.max(r.end));
    if gap == 0 {
        return;
    }
    // I3: host wait iff the call started after the stream went idle.
    let cat = match call_ts {
        Some(c) if c > pe => Cat::Host,
        _ if gap < i128::from(inp.kernel_wait_ns) => Cat::Kernel,
        _ => Cat::Other,
    };
    add_gap(s, &mut p.work, cat, gap);
}

/// A gap into its stream's and its part's figures (I2–I3).
fn add_gap(s: &mut StreamIdle, w: &mut Part, cat: Cat, gap: i128) {
    w.idle_ns += gap;
    s.idle_ns += gap;
    match cat {
        Cat::Host => {
            s.host_wait_ns += gap;
            s.host_wait_gaps += 1;
            w.host_wait_ns += gap;
        }
        Cat::Kernel => {
            s.kernel_wait_ns += gap;
            s.kernel_wait_gaps += 1;
            w.kernel_wait_ns += gap;
        }
        Cat::Other => {
            s.other_ns += gap;
            s.other_gaps += 1;
            w.other_ns += gap;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The drawing of the module docs.
    #[test]
    fn unions_in_start_order() {
        let mut u = Union::default();
        for (s, e) in [(1, 4), (3, 8), (6, 9), (10, 12)] {
            u.add(s, e);
        }
        assert_eq!((u.len, u.reach), (10, Some(12)));
        let mut l = Vec::new();
        for (s, e) in [(1, 4), (3, 8), (6, 9), (10, 12), (12, 12)] {
            merge_into(&mut l, s, e);
        }
        assert_eq!(l, vec![(1, 9), (10, 12)]);
        // Zero-length intervals add nothing; equal starts in any order.
        let mut u = Union::default();
        for (s, e) in [(5, 5), (5, 9), (5, 7), (9, 9)] {
            u.add(s, e);
        }
        assert_eq!(u.len, 4);
    }

    /// A table of parts that cannot be allocated is `None` (the finish
    /// gives up for memory), never an abort.
    #[test]
    fn parts_past_memory_give_up() {
        let calls = Calls {
            ts: Vec::new(),
            part: Vec::new(),
        };
        let inp = Input {
            recs: &[],
            seg: &[0],
            dev_of_stream: &[],
            calls: &calls,
            kernel_wait_ns: 0,
        };
        let mut counts = Counts::default();
        assert!(walk(&inp, usize::MAX / 2, 0, &mut counts).is_none());
        assert!(walk(&inp, 3, 0, &mut counts).is_some_and(|w| w.parts.len() == 3));
    }

    #[test]
    fn overlap_of_merged_lists() {
        // a [0,10) [20,30); b [5,25) → 5 + 5.
        assert_eq!(overlap(&[(0, 10), (20, 30)], &[(5, 25)]), 10);
        assert_eq!(overlap(&[(0, 1)], &[]), 0);
        assert_eq!(overlap(&[(0, 5)], &[(5, 9)]), 0);
    }
}
