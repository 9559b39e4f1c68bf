//! GPU idle and host wait (VIEWS.md I2–I3), self-contained so that the
//! `idle` analysis can share it: per (device, stream), activities sorted by
//! (ts, end, file index); the gap before activity k > 0 is
//! `max(0, ts_k − max_{j<k} end_j)` (a running maximum, so overlapping
//! activities never give negative idle); a gap is a **host wait** when the
//! activity's runtime call started after that running end (`call.ts >
//! prev_end`: the host had not begun to issue the work when the stream
//! went idle). Graph kernels carry their graph launch's ts; unlinked
//! activities (no call) are never host waits.
//!
//! ```text
//! stream 7   [k0=====)      [k1==)  [k2=====)
//!                  [k3)                          k3 inside k0: running end stays k0's
//!            |        |gap1 |    |g2|
//! host       L0   L1 L3        L2(ts > k0.end, so gap1 is a host wait)
//!                               k2's call L2' ran before k1 ended: gap 2 is not
//! ```

/// One device activity as the gap rules see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamAct {
    /// The (device, stream) it ran on, as an id.
    pub stream: u32,
    pub start: i64,
    pub end: i64,
    /// Its place in the file (the last tie-break of the order).
    pub index: u64,
    /// When its runtime call started (`None`: unlinked).
    pub call_ts: Option<i64>,
}

/// Σ over every stream of the gaps (I2) and of the host-wait gaps (I3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Idle {
    pub idle_ns: i64,
    pub host_wait_ns: i64,
    /// Gaps > 0.
    pub gaps: u64,
    pub host_wait_gaps: u64,
}

/// One activity of a stream as [`idle_grouped`] sees it (24 B).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timed {
    pub start: i64,
    pub end: i64,
    /// When its runtime call started; `i64::MIN` when unlinked (never
    /// after any end, so never a host wait, I3).
    pub call_ts: i64,
}

/// Σ gaps over streams laid one after another: `acts[seg[s]..seg[s + 1]]`
/// is stream `s` in file order. Each is sorted here by (ts, end), stably,
/// so file order breaks the ties (I1).
pub fn idle_grouped(acts: &mut [Timed], seg: &[usize]) -> Idle {
    let mut out = Idle::default();
    for w in seg.windows(2) {
        let run = &mut acts[w[0]..w[1]];
        run.sort_by_key(|a| (a.start, a.end));
        let mut it = run.iter();
        let Some(first) = it.next() else { continue };
        let mut prev_end = first.end;
        for a in it {
            let gap = a.start.saturating_sub(prev_end).max(0);
            if gap > 0 {
                out.idle_ns = out.idle_ns.saturating_add(gap);
                out.gaps += 1;
                if a.call_ts > prev_end {
                    out.host_wait_ns = out.host_wait_ns.saturating_add(gap);
                    out.host_wait_gaps += 1;
                }
            }
            prev_end = prev_end.max(a.end);
        }
    }
    out
}

/// [`idle_grouped`] of activities in any order.
pub fn idle(acts: &mut [StreamAct]) -> Idle {
    acts.sort_unstable_by_key(|a| (a.stream, a.index));
    let mut seg = vec![0];
    let mut timed = Vec::with_capacity(acts.len());
    for (i, a) in acts.iter().enumerate() {
        if i > 0 && acts[i - 1].stream != a.stream {
            seg.push(i);
        }
        timed.push(Timed {
            start: a.start,
            end: a.end,
            call_ts: a.call_ts.unwrap_or(i64::MIN),
        });
    }
    seg.push(acts.len());
    idle_grouped(&mut timed, &seg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn act(stream: u32, start: i64, end: i64, call_ts: Option<i64>) -> StreamAct {
        StreamAct {
            stream,
            start,
            end,
            index: start as u64,
            call_ts,
        }
    }

    /// The drawing of the module docs (I2's running maximum, I3's rule).
    #[test]
    fn the_drawing_of_the_module_docs() {
        let mut v = vec![
            act(7, 0, 80, Some(-5)),     // k0
            act(7, 100, 130, Some(90)),  // k1: call after k0's end → host wait 20
            act(7, 150, 200, Some(120)), // k2: call before k1's end → not
            act(7, 20, 40, Some(10)),    // k3 inside k0
        ];
        let got = idle(&mut v);
        assert_eq!(
            got,
            Idle {
                idle_ns: 20 + 20,
                host_wait_ns: 20,
                gaps: 2,
                host_wait_gaps: 1
            }
        );
    }

    /// Streams are apart; unlinked activities are never host waits;
    /// overlaps never give negative idle (I2).
    #[test]
    fn streams_apart_and_unlinked_never_wait() {
        let mut v = vec![
            act(1, 0, 10, None),
            act(1, 50, 60, None),
            act(2, 0, 100, Some(0)),
            act(2, 50, 70, Some(60)),
            act(2, 90, 95, Some(99)),
        ];
        let got = idle(&mut v);
        assert_eq!((got.idle_ns, got.host_wait_ns, got.gaps), (40, 0, 1));
    }
}
