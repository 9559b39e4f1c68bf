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

use super::intervals::{length, subtract, union, Iv};
use super::ledger::{Kind, Ledger};
use serde::Serialize;

/// Timeline figures in ms (from exact ns).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
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
pub fn of(ledger: &Ledger) -> Option<TimelineNs> {
    let (mut all, mut comp, mut comm, mut mem): (Vec<Iv>, Vec<Iv>, Vec<Iv>, Vec<Iv>) =
        Default::default();
    for a in &ledger.activities {
        let iv = (a.start, a.end);
        all.push(iv);
        match a.kind {
            Kind::Memcpy => mem.push(iv),
            _ if is_communication(ledger.names.resolve(a.name)) => comm.push(iv),
            _ => comp.push(iv),
        }
    }
    let all = union(all);
    let first = all.first()?.0;
    let last = all.last()?.1;
    let (comp, comm, mem) = (union(comp), union(comm), union(mem));
    let mem_minus_comp = subtract(&comp, &mem);
    Some(TimelineNs {
        total: i128::from(last.0) - i128::from(first.0),
        busy: length(&all),
        compute: length(&comp),
        exposed_comm: length(&subtract(&comp, &comm)),
        exposed_memcpy: length(&subtract(&comm, &mem_minus_comp)),
    })
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
