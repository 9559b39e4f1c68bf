//! The whole-trace GPU timeline, with AMD TraceLens's definitions
//! (`GPUEventAnalyser`, its `gpu_timeline` sheet), on exact integer ns.
//!
//! ```text
//! compute  [=====)      [==)        computation: kernels and memsets without "nccl"
//! comm        [=====)               communication: kernels and memsets with "nccl"
//! memcpy   [-)     [---)            memcpy: gpu_memcpy
//!          |<--------- total -------->|   busy = |∪ all|, idle = total − busy
//! exposed comm = |∪comm − ∪compute| (the part after the compute ends);
//! exposed memcpy = |∪memcpy − ∪compute − ∪comm|.
//! compute + exposed comm + exposed memcpy + idle = total.
//! ```

use crate::ledger::intervals::Iv;
use crate::ledger::{Kind, Ledger};
use serde::{Deserialize, Serialize};

/// Timeline figures in ms (from exact ns).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    pub total_ms: Option<f64>,
    pub busy_ms: Option<f64>,
    pub idle_ms: Option<f64>,
    pub compute_ms: Option<f64>,
    pub exposed_comm_ms: Option<f64>,
    pub exposed_memcpy_ms: Option<f64>,
    /// GPU activities in the trace (all of them count here).
    pub activities: u64,
}

/// The same figures in exact ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimelineNs {
    pub total: i128,
    pub busy: i128,
    pub compute: i128,
    pub exposed_comm: i128,
    pub exposed_memcpy: i128,
}

/// A communication kernel, by TraceLens's rule (case-sensitive).
pub fn is_communication(name: &str) -> bool {
    name.contains("nccl")
}

/// Computes the timeline over every activity of the ledger; `None` when
/// the trace has no GPU activity.
///
/// Every figure is the length of a union, so one sweep over the activities
/// in start order computes them all without building interval lists:
/// |A − B| = |A ∪ B| − |B|, hence exposed comm = |comp ∪ comm| − |comp| and
/// exposed memcpy = |all| − |comp ∪ comm|. Memory: one heap entry per run
/// of the ledger's nearly sorted store ([`crate::ledger::Activities::by_start`]).
pub fn of(ledger: &Ledger) -> Option<TimelineNs> {
    let mut acts = ledger.activities.by_start().peekable();
    let first = acts.peek()?.start;
    // Union lengths of: all, computation, computation ∪ communication.
    let mut all = Sweep::default();
    let mut comp = Sweep::default();
    let mut kernels = Sweep::default();
    for a in acts {
        let iv = (a.start, a.end);
        all.add(iv);
        if a.kind == Kind::Memcpy {
            continue;
        }
        kernels.add(iv);
        if !is_communication(ledger.names.resolve(a.name)) {
            comp.add(iv);
        }
    }
    let (all_len, comp_len, kernels_len) = (all.length(), comp.length(), kernels.length());
    Some(TimelineNs {
        total: i128::from(all.max_end?.0) - i128::from(first.0),
        busy: all_len,
        compute: comp_len,
        exposed_comm: kernels_len - comp_len,
        exposed_memcpy: all_len - kernels_len,
    })
}

/// The running union of intervals fed in start order.
#[derive(Debug, Default)]
struct Sweep {
    open: Option<Iv>,
    done: i128,
    max_end: Option<crate::model::Ns>,
}

impl Sweep {
    fn add(&mut self, (s, e): Iv) {
        self.max_end = Some(self.max_end.map_or(e, |m| m.max(e)));
        match &mut self.open {
            Some(cur) if s <= cur.1 => cur.1 = cur.1.max(e),
            Some(cur) => {
                self.done += i128::from(cur.1 .0) - i128::from(cur.0 .0);
                *cur = (s, e);
            }
            None => self.open = Some((s, e)),
        }
    }

    fn length(&self) -> i128 {
        self.done
            + self
                .open
                .map_or(0, |(s, e)| i128::from(e.0) - i128::from(s.0))
    }
}

impl TimelineNs {
    pub fn idle(&self) -> i128 {
        self.total - self.busy
    }

    pub fn to_ms(self, activities: u64) -> Timeline {
        let ms = |v: i128| Some(crate::stats::Exact { num: v, den: 1 }.ms());
        Timeline {
            total_ms: ms(self.total),
            busy_ms: ms(self.busy),
            idle_ms: ms(self.idle()),
            compute_ms: ms(self.compute),
            exposed_comm_ms: ms(self.exposed_comm),
            exposed_memcpy_ms: ms(self.exposed_memcpy),
            activities,
        }
    }
}
