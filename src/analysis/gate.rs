//! What the driver lets through to the analyses during a read: every
//! event until the plan's [`MemoryBudget`] is spent, or the memory pool
//! asks the read to give way or says it cannot fit.

use super::MemoryBudget;
use crate::trace::ReadError;

/// Why the driver stopped feeding the analyses before the read's end.
enum Stop {
    /// The plan's [`MemoryBudget`] was spent.
    Budget,
    /// The pool asked this read to give way: it is done again alone.
    Yield,
    /// The process held `used` bytes, past the pool's mark, with this
    /// trace read alone.
    Memory {
        used: u64,
        limit: crate::memory::Limit,
    },
}

/// What the driver lets through to the analyses: every event until the
/// plan's [`MemoryBudget`] is spent or the pool (checked every
/// [`crate::memory::CHECK_EVERY`] events) says stop.
pub(super) struct Gate<'m> {
    budget: Option<MemoryBudget>,
    limit: u64,
    member: Option<&'m crate::memory::Member>,
    /// Events offered, and those let through.
    fed: u64,
    kept: u64,
    stop: Option<Stop>,
}

impl<'m> Gate<'m> {
    pub(super) fn new(
        budget: Option<MemoryBudget>,
        member: Option<&'m crate::memory::Member>,
    ) -> Self {
        Gate {
            budget,
            limit: budget.map_or(u64::MAX, |b| b.events()),
            member,
            fed: 0,
            kept: 0,
            stop: None,
        }
    }

    /// Whether the next event goes to the analyses.
    pub(super) fn admit(&mut self) -> bool {
        use crate::memory::{Verdict, CHECK_EVERY};
        self.fed = self.fed.saturating_add(1);
        if self.stop.is_none() && self.kept >= self.limit {
            self.stop = Some(Stop::Budget);
        }
        if self.stop.is_none() && self.kept > 0 && self.kept.is_multiple_of(CHECK_EVERY) {
            if let Some(m) = self.member {
                self.stop = match m.check() {
                    Verdict::Go => None,
                    Verdict::Yield => Some(Stop::Yield),
                    Verdict::Over { used } => Some(Stop::Memory {
                        used,
                        limit: m.limit(),
                    }),
                };
            }
        }
        if self.stop.is_some() {
            return false;
        }
        self.kept += 1;
        true
    }

    /// Whether the read went to its end through the gate with the pool
    /// checked on the way (it is every [`crate::memory::CHECK_EVERY`]
    /// events let through): a trace smaller than that holds too little to
    /// be asked about, and one the gate stopped has its answer.
    pub(super) fn checked(&self) -> bool {
        self.stop.is_none() && self.kept >= crate::memory::CHECK_EVERY
    }

    /// The read's events and error once the gate stopped it, if it did;
    /// `None` when the pool asked the read to yield.
    pub(super) fn outcome(
        self,
        events: u64,
        error: Option<ReadError>,
    ) -> Option<(u64, Option<ReadError>)> {
        let (kept, wanted) = (self.kept, self.fed);
        let over = match self.stop {
            None => return Some((events, error)),
            Some(Stop::Yield) => return None,
            Some(Stop::Budget) => ReadError::OverBudget {
                events: kept,
                budget: self.budget.map_or(0, |b| b.bytes),
                per_event: MemoryBudget::PER_EVENT,
                wanted,
            },
            Some(Stop::Memory { used, limit }) => ReadError::OverMemory {
                events: kept,
                wanted,
                used,
                limit: limit.to_string(),
            },
        };
        Some((events.min(kept), Some(over)))
    }
}

/// The end of a read the pool was checked in is one more check: a member
/// past the mark gives way (`None`) or, alone, is refused before its
/// finishes add their working memory to what it holds (`Some(Some(…))`);
/// `Some(None)`: it finishes.
pub(super) fn at_end_of_read(
    member: Option<&crate::memory::Member>,
    events: u64,
) -> Option<Option<ReadError>> {
    let Some(m) = member else {
        return Some(None);
    };
    match m.check() {
        crate::memory::Verdict::Go => Some(None),
        crate::memory::Verdict::Yield => None,
        crate::memory::Verdict::Over { .. } => Some(Some(over_finishing(m, events))),
    }
}

/// A trace read whole whose finishes met the pool's limit.
pub(super) fn over_finishing(m: &crate::memory::Member, events: u64) -> ReadError {
    ReadError::OverMemoryFinishing {
        events,
        used: m.used(),
        limit: m.limit().to_string(),
    }
}

/// A trace whose finish gave up for memory ([`super::Shared::short`])
/// outside a pool (one command, the library): the limit that bound, as
/// far as it can be read.
pub(super) fn short_of_memory(events: u64) -> ReadError {
    let limit = crate::memory::Limit::detect();
    ReadError::OverMemoryFinishing {
        events,
        used: limit.and_then(|l| l.used()).unwrap_or(0),
        limit: limit.map_or_else(|| "unknown".into(), |l| l.to_string()),
    }
}
