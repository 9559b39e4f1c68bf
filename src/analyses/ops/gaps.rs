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
    /// Exact in i128: the sum of a trace's gaps can pass i64.
    pub idle_ns: i128,
    pub host_wait_ns: i128,
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
            let gap = (i128::from(a.start) - i128::from(prev_end)).max(0);
            if gap > 0 {
                out.idle_ns += gap;
                out.gaps += 1;
                if a.call_ts > prev_end {
                    out.host_wait_ns += gap;
                    out.host_wait_gaps += 1;
                }
            }
            prev_end = prev_end.max(a.end);
        }
    }
    out
}

/// [`idle_grouped`] without grouping or sorting, for activities that come
/// in file order with their streams interleaved: each stream's gaps are
/// summed as its activities come, while they come sorted by (ts, end).
/// A stream whose activities are out of that order is handed back for the
/// caller to group and sort ([`idle_grouped`]): the sort is stable, so a
/// stream already in order is its own sort and both ways are exact. Kineto
/// writes each stream's activities in order (the vLLM samples: every
/// stream), so the finish needs no 24 B per activity for them.
///
/// The sums are of gaps ≥ 0 in i128, so summing per stream and adding the
/// streams up is what [`idle_grouped`]'s running sum gives, exactly.
#[derive(Debug, Default)]
pub struct InOrder {
    streams: Vec<Running>,
}

/// One stream's state in [`InOrder`].
#[derive(Debug, Clone, Copy, Default)]
struct Running {
    /// The last activity's (ts, end) and the running end (`None`: none yet).
    last: Option<((i64, i64), i64)>,
    out_of_order: bool,
    idle: i128,
    wait: i128,
    gaps: u64,
    waits: u64,
}

impl InOrder {
    /// The next activity of `stream` in file order.
    pub fn push(&mut self, stream: u32, a: Timed) {
        let s = stream as usize;
        if self.streams.len() <= s {
            self.streams.resize(s + 1, Running::default());
        }
        let r = &mut self.streams[s];
        let key = (a.start, a.end);
        let Some((last, prev_end)) = r.last else {
            r.last = Some((key, a.end));
            return;
        };
        if key < last {
            r.out_of_order = true;
        }
        // One gap alone can pass i64 (−5·10¹⁸ to 5·10¹⁸ ns).
        let gap = (i128::from(a.start) - i128::from(prev_end)).max(0);
        if gap > 0 {
            r.idle += gap;
            r.gaps += 1;
            if a.call_ts > prev_end {
                r.wait += gap;
                r.waits += 1;
            }
        }
        r.last = Some((key, prev_end.max(a.end)));
    }

    /// The streams out of order (for [`idle_grouped`]), and the sums of
    /// the others; `with` then gives the total with theirs.
    pub fn finish(self) -> (Vec<u32>, Sums) {
        let mut out = Sums::default();
        let mut redo = Vec::new();
        for (s, r) in self.streams.iter().enumerate() {
            if r.out_of_order {
                redo.push(s as u32);
                continue;
            }
            out.idle += r.idle;
            out.wait += r.wait;
            out.gaps += r.gaps;
            out.waits += r.waits;
        }
        (redo, out)
    }
}

/// [`Idle`]'s sums as they are kept while streams come in order.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sums {
    idle: i128,
    wait: i128,
    gaps: u64,
    waits: u64,
}

impl Sums {
    /// These and `other` (from [`idle_grouped`]), exact.
    pub fn with(self, other: Idle) -> Idle {
        Idle {
            idle_ns: self.idle + other.idle_ns,
            host_wait_ns: self.wait + other.host_wait_ns,
            gaps: self.gaps + other.gaps,
            host_wait_gaps: self.waits + other.host_wait_gaps,
        }
    }
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

    /// [`InOrder`] equals [`idle_grouped`] on streams in order, hands back
    /// those out of order, and both stay exact past i64.
    #[test]
    fn in_order_equals_grouped() {
        let t = |start: i64, end: i64, call_ts: i64| Timed {
            start,
            end,
            call_ts,
        };
        // Stream 0: the drawing's k0 k1 k2 in order; stream 1: out of order.
        let s0 = [t(0, 80, -5), t(100, 130, 90), t(150, 200, 120)];
        let s1 = [t(50, 60, i64::MIN), t(0, 10, i64::MIN)];
        let mut o = InOrder::default();
        for (a, b) in s0.iter().zip(&s1) {
            o.push(0, *a);
            o.push(1, *b);
        }
        o.push(0, s0[2]);
        let (redo, sums) = o.finish();
        assert_eq!(redo, vec![1]);
        let mut rest = s1.to_vec();
        let got = sums.with(idle_grouped(&mut rest, &[0, 2]));
        let mut all: Vec<Timed> = s0.iter().chain(&s1).copied().collect();
        assert_eq!(got, idle_grouped(&mut all, &[0, 3, 5]));
        assert_eq!(
            (got.idle_ns, got.host_wait_ns, got.gaps),
            (20 + 20 + 40, 20, 3)
        );
        // Gaps summing past i64::MAX clamp, as the running sum does.
        let far = [
            t(i64::MIN + 1, i64::MIN + 2, i64::MIN),
            t(i64::MAX - 10, i64::MAX - 9, i64::MIN),
            t(i64::MAX - 5, i64::MAX - 4, i64::MIN),
        ];
        let mut o = InOrder::default();
        for a in far {
            o.push(0, a);
        }
        let (_, sums) = o.finish();
        let got = sums.with(Idle::default());
        assert_eq!(got, idle_grouped(&mut far.to_vec(), &[0, 3]));
        // Exact past i64 (it was clamped to i64::MAX without a word): the
        // gaps (MAX − 10) − (MIN + 2) and (MAX − 5) − (MAX − 9) = 4.
        let want = (i128::from(i64::MAX) - 10) - (i128::from(i64::MIN) + 2) + 4;
        assert_eq!((got.idle_ns, got.gaps), (want, 2));
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
