//! The backward walk of one iteration (docs/VIEWS.md P2–P5): from the
//! window's end on the step's host thread back to its start, every
//! nanosecond given to one part — host, launch, GPU or sync — so the parts
//! add up to the window exactly.
//!
//! ```text
//!  host T  [S_i ...L1..........L2...........[cudaStreamSynchronize]...)S_{i+1}
//!                  |            \                |            |
//!  stream 7        |   [k1 ======]  [k2 ========]|            |
//!                  |              ^ k2 queued:   |            |
//!                  |              L2 ended before k1's end    |
//!  walk ◄──────────┴──────────────────────────────┴────────────┴──────── from the window's end
//!  parts   host   | launch | gpu k1 | gpu gap+k2  | sync        | host
//!          S_i→L1   L1→k1    k1       k1.end→k2.end k2.end→sync  sync.end→S_{i+1}
//! ```
//!
//! P3: at the host, the walk looks for the latest blocking sync (C7) on the
//! thread ending at or before its cursor: host until the sync's end, then
//! `sync` until the end of the activity it waited for (the last activity
//! ending at or before the sync's end; a sync whose activity had ended by
//! the time the call started did not block: its time stays host). P4: on
//! the GPU, an activity's own time is `gpu`; it was *queued* when its
//! launch was submitted (an asynchronous call's end, a synchronous call's
//! start) at or before its stream predecessor's end: the gap down to the
//! predecessor is `gpu` and the walk goes on there; otherwise `launch`
//! from the launch call's start to the activity's start, and the walk goes
//! back to the host at that call. P5: a segment crossing the window's
//! start is cut there, and the walk stops.

use std::collections::HashMap;

/// An activity with no owning runtime call (C3).
pub(super) const NO_CALL: u32 = u32::MAX;

/// A device activity as the walk reads it (32 B).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Act {
    pub start: i64,
    pub end: i64,
    /// Its owning runtime call, or [`NO_CALL`].
    pub call: u32,
    /// Its name, for the names on the path.
    pub name: crate::model::Sym,
    /// Its place among its stream's activities in file order (I1's last
    /// key).
    pub pos: u32,
    /// 0 kernel, 1 memcpy, 2 memset.
    pub code: u8,
}

/// A runtime call as the walk reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Call {
    pub start: i64,
    pub end: i64,
    /// Its host thread (an index the caller chose).
    pub thread: u32,
    /// C7: sync-like (it blocks the host; a synchronous memcpy submits its
    /// copy at its start).
    pub sync: bool,
}

/// The trace as the walk reads it: activities stream after stream, each
/// stream in I1's order; the activities by end; each thread's sync-like
/// calls by end.
#[derive(Debug, Default)]
pub(super) struct Timeline {
    pub acts: Vec<Act>,
    /// Each stream's first activity, then the activities' count.
    pub seg: Vec<u32>,
    /// Activity indices by (end, start, index).
    pub by_end: Vec<u32>,
    pub calls: Vec<Call>,
    /// Per thread, its sync-like calls' indices by (end, index).
    pub syncs: Vec<Vec<u32>>,
}

impl Timeline {
    /// The lookups' orders, once the activities and calls are in place
    /// (activities already grouped by stream and sorted in each).
    pub fn index(&mut self, threads: usize) {
        let mut by_end: Vec<u32> = (0..self.acts.len() as u32).collect();
        by_end.sort_unstable_by_key(|&i| {
            let a = &self.acts[i as usize];
            (a.end, a.start, i)
        });
        self.by_end = by_end;
        let mut syncs = vec![Vec::new(); threads];
        for (i, c) in self.calls.iter().enumerate() {
            if c.sync {
                if let Some(s) = syncs.get_mut(c.thread as usize) {
                    s.push(i as u32);
                }
            }
        }
        for s in &mut syncs {
            s.sort_unstable_by_key(|&i| (self.calls[i as usize].end, i));
        }
        self.syncs = syncs;
    }
}

/// The four parts of a window (P2); they add up to its length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Parts {
    pub host: i64,
    pub launch: i64,
    pub gpu: i64,
    pub sync: i64,
}

impl Parts {
    pub fn total(&self) -> i64 {
        self.host + self.launch + self.gpu + self.sync
    }
}

/// What one walk met besides its parts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Met {
    /// Sync-like calls passed over: their activity had ended before they
    /// started (P3).
    pub syncs_not_blocking: u64,
    /// Blocking syncs the path went through.
    pub syncs_blocking: u64,
    /// Activities on the path.
    pub activities: u64,
    /// Launch calls the path went back to the host through.
    pub launches: u64,
    /// The walk stopped at its step bound (never on a well-formed trace):
    /// the rest of the window was given to the host.
    pub capped: bool,
}

/// Where the walk stands.
enum At {
    /// On host thread `thread` at time `t`.
    Host { t: i64, thread: u32 },
    /// On activity `act`, the path having come down to `cursor` (its end,
    /// or the start of the activity it queued behind).
    Gpu { act: u32, cursor: i64 },
}

/// Walks window `[w0, w1)` back from `w1` on host thread `thread`; `on_act`
/// gets each activity on the path with the ns of its own time on it.
pub(super) fn walk(
    tl: &Timeline,
    thread: u32,
    w0: i64,
    w1: i64,
    mut on_act: impl FnMut(u32, i64),
) -> (Parts, Met) {
    let mut p = Parts::default();
    let mut met = Met::default();
    if w1 <= w0 {
        return (p, met);
    }
    // Each thread's syncs not yet passed: a sync is met once per walk.
    let mut limit: HashMap<u32, usize> = HashMap::new();
    let mut at = At::Host { t: w1, thread };
    // Every step passes a sync or goes to an earlier activity; the bound
    // only guards against a cycle of zero-length events.
    let bound = 2 * (tl.acts.len() + tl.calls.len()) + 8;
    for _ in 0..bound {
        match at {
            At::Host { t, thread } => match host_step(tl, &mut limit, thread, t, w0) {
                HostStep::Start => {
                    p.host += t - w0;
                    return (p, met);
                }
                HostStep::NotBlocking => met.syncs_not_blocking += 1,
                HostStep::Sync { end, act } => {
                    met.syncs_blocking += 1;
                    p.host += t - end;
                    let a_end = tl.acts[act as usize].end;
                    p.sync += end - a_end.max(w0);
                    if a_end <= w0 {
                        return (p, met);
                    }
                    at = At::Gpu { act, cursor: a_end };
                }
            },
            At::Gpu { act, cursor } => {
                let x = tl.acts[act as usize];
                let lo = x.start.max(w0);
                p.gpu += cursor - lo;
                met.activities += 1;
                on_act(act, (cursor.min(x.end) - lo).max(0));
                if x.start <= w0 {
                    return (p, met);
                }
                at = match gpu_step(tl, act) {
                    GpuStep::Queued(pred) => At::Gpu {
                        act: pred,
                        cursor: x.start,
                    },
                    GpuStep::Launched(c) => {
                        let call = tl.calls[c as usize];
                        let from = call.start.min(x.start);
                        met.launches += 1;
                        p.launch += x.start - from.max(w0);
                        if from <= w0 {
                            return (p, met);
                        }
                        At::Host {
                            t: from,
                            thread: call.thread,
                        }
                    }
                    GpuStep::Host => At::Host { t: x.start, thread },
                };
            }
        }
    }
    // Never on a well-formed trace: the rest is the host's.
    met.capped = true;
    let t = match at {
        At::Host { t, .. } => t,
        At::Gpu { act, cursor } => cursor.min(tl.acts[act as usize].end).max(w0),
    };
    p.host += t - w0;
    (p, met)
}

/// What the host side of the walk found (P3).
enum HostStep {
    /// No blocking sync ends in the window before the cursor.
    Start,
    /// A sync that did not block: passed over, its time stays host.
    NotBlocking,
    /// A blocking sync ending at `end`, waiting for activity `act`.
    Sync { end: i64, act: u32 },
}

fn host_step(
    tl: &Timeline,
    limit: &mut HashMap<u32, usize>,
    thread: u32,
    t: i64,
    w0: i64,
) -> HostStep {
    let syncs = tl.syncs.get(thread as usize).map_or(&[][..], |s| &s[..]);
    let lim = *limit.get(&thread).unwrap_or(&syncs.len());
    let k = syncs[..lim].partition_point(|&c| tl.calls[c as usize].end <= t);
    let Some(k) = k.checked_sub(1) else {
        return HostStep::Start;
    };
    limit.insert(thread, k);
    let call = tl.calls[syncs[k] as usize];
    if call.end <= w0 {
        return HostStep::Start;
    }
    // The activity it waited for: the last ending at or before its end.
    let j = tl
        .by_end
        .partition_point(|&a| tl.acts[a as usize].end <= call.end);
    match j.checked_sub(1).map(|j| tl.by_end[j]) {
        Some(a) if tl.acts[a as usize].end > call.start => HostStep::Sync {
            end: call.end,
            act: a,
        },
        _ => HostStep::NotBlocking,
    }
}

/// What the GPU side of the walk found (P4).
enum GpuStep {
    /// Queued behind its stream predecessor.
    Queued(u32),
    /// Waited for its launch call.
    Launched(u32),
    /// Neither a predecessor nor a call (an unlinked first activity):
    /// back to the host at its start.
    Host,
}

fn gpu_step(tl: &Timeline, act: u32) -> GpuStep {
    let x = tl.acts[act as usize];
    // The stream's first activity: the last segment start at or before it.
    let first = tl.seg[tl.seg.partition_point(|&s| s <= act) - 1];
    let pred = (act > first).then(|| act - 1);
    let call = (x.call != NO_CALL).then(|| tl.calls[x.call as usize]);
    match (pred, call) {
        (Some(p), Some(c)) => {
            let submitted = if c.sync { c.start } else { c.end };
            if submitted <= tl.acts[p as usize].end {
                GpuStep::Queued(p)
            } else {
                GpuStep::Launched(x.call)
            }
        }
        (Some(p), None) => GpuStep::Queued(p),
        (None, Some(_)) => GpuStep::Launched(x.call),
        (None, None) => GpuStep::Host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(start: i64, end: i64, sync: bool) -> Call {
        Call {
            start,
            end,
            thread: 0,
            sync,
        }
    }

    fn act(start: i64, end: i64, call: u32) -> Act {
        Act {
            start,
            end,
            call,
            name: crate::model::Sym(call),
            pos: 0,
            code: 0,
        }
    }

    /// One stream; `calls` on thread 0.
    fn timeline(acts: Vec<Act>, calls: Vec<Call>) -> Timeline {
        let mut tl = Timeline {
            seg: vec![0, acts.len() as u32],
            acts,
            calls,
            ..Timeline::default()
        };
        tl.index(1);
        tl
    }

    fn parts(tl: &Timeline, w0: i64, w1: i64) -> (Parts, Vec<(u32, i64)>) {
        let mut on = Vec::new();
        let (p, _) = walk(tl, 0, w0, w1, |a, ns| on.push((a, ns)));
        assert_eq!(p.total(), w1 - w0);
        (p, on)
    }

    /// The module drawing: L1 at 10 (ends 12) launches k1 [20, 40); L2 at
    /// 30 (ends 32) launches k2 [45, 70), queued (32 ≤ 40); the sync
    /// [50, 80) waits for k2; the window is [0, 100).
    #[test]
    fn the_drawing() {
        let tl = timeline(
            vec![act(20, 40, 0), act(45, 70, 1)],
            vec![call(10, 12, false), call(30, 32, false), call(50, 80, true)],
        );
        let (p, on) = parts(&tl, 0, 100);
        // host: 80→100 and 0→10; sync 70→80; gpu 45→70 + gap 40→45 + 20→40;
        // launch 10→20.
        assert_eq!(
            p,
            Parts {
                host: 30,
                launch: 10,
                gpu: 50,
                sync: 10
            }
        );
        assert_eq!(on, vec![(1, 25), (0, 20)]);
    }

    /// A host-bound window: the kernel ended before the sync started.
    #[test]
    fn a_sync_that_did_not_block_is_host() {
        let tl = timeline(
            vec![act(20, 30, 0)],
            vec![call(10, 12, false), call(50, 60, true)],
        );
        let (p, _) = parts(&tl, 0, 100);
        assert_eq!(p.host, 100);
    }

    /// A GPU-bound window: kernels launched long before their turn.
    #[test]
    fn queued_kernels_are_gpu() {
        let tl = timeline(
            vec![act(5, 50, 0), act(50, 90, 1)],
            vec![call(1, 2, false), call(3, 4, false), call(4, 95, true)],
        );
        let (p, _) = parts(&tl, 0, 100);
        // host 95→100 and 0→1, sync 90→95, gpu 5→90, launch 1→5.
        assert_eq!(
            p,
            Parts {
                host: 6,
                launch: 4,
                gpu: 85,
                sync: 5
            }
        );
    }

    /// A synchronous copy submits at its start: queued when the stream
    /// was still busy then.
    #[test]
    fn a_synchronous_copy_submits_at_its_start() {
        let tl = timeline(
            vec![act(10, 40, 0), act(40, 45, 1)],
            vec![call(5, 6, false), call(20, 50, true)],
        );
        let (p, _) = parts(&tl, 0, 60);
        // host 50→60 and 0→5, sync 45→50, gpu 10→45, launch 5→10.
        assert_eq!(
            p,
            Parts {
                host: 15,
                launch: 5,
                gpu: 35,
                sync: 5
            }
        );
    }

    /// Segments crossing the window's start are cut there.
    #[test]
    fn the_window_start_cuts() {
        let tl = timeline(
            vec![act(0, 30, 0)],
            vec![call(-10, -5, false), call(1, 35, true)],
        );
        let (p, on) = parts(&tl, 10, 50);
        assert_eq!(
            p,
            Parts {
                host: 15,
                launch: 0,
                gpu: 20,
                sync: 5
            }
        );
        assert_eq!(on, vec![(0, 20)]);
    }

    /// Zero-length events never loop: every sync is met once.
    #[test]
    fn zero_length_events_end() {
        let tl = timeline(vec![act(5, 5, 0)], vec![call(5, 5, true)]);
        let (p, met) = walk(&tl, 0, 0, 10, |_, _| {});
        assert_eq!(p.total(), 10);
        assert!(!met.capped);
    }
}
