//! The spans that place a graph launch (issue 57): a vLLM step
//! annotation around it gives the scheduled tokens (the decoder's graph
//! is the smallest captured batch ≥ them); `proposer.propose` around it
//! makes it the speculator's. Kept by the host store while reading
//! (`super::store`) and from the driver's annotations
//! ([`crate::contexts::Steps`]); `crate::graphs::place` reads them with
//! the capture matching.

/// The annotation around the drafter's work in vLLM (`proposer.propose`):
/// a graph launched inside it is the speculator's.
pub const PROPOSE: &str = "proposer.propose";

/// The tokens a vLLM step schedules: the sum of the numbers in its
/// parentheses (`execute_context_1(96)_generation_2(3)` → 99), for the
/// context/generation form only (the others do not say).
pub fn step_tokens(name: &str) -> Option<u64> {
    let step = crate::steps::parse(name)?;
    if step.form != crate::steps::Form::ContextGeneration {
        return None;
    }
    let mut sum = 0u64;
    for part in name.split('(').skip(1) {
        let inner = part.split(')').next()?;
        if inner.is_empty() {
            continue;
        }
        sum = sum.checked_add(inner.parse::<u64>().ok()?)?;
    }
    Some(sum)
}

/// A step annotation (its scheduled tokens, when the name says) or a
/// `proposer.propose` span (`propose`) on a thread.
#[derive(Debug, Clone, Copy)]
struct Span {
    lane: u32,
    ts: i64,
    end: i64,
    tokens: Option<u64>,
    propose: bool,
}

/// The spans that tell a graph launch's batch and subsystem: vLLM step
/// annotations and `proposer.propose`, as they are read (a few per step).
#[derive(Debug, Default, Clone)]
pub struct Spans {
    spans: Vec<Span>,
    sorted: bool,
}

/// Where a graph launch was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Inside a step annotation, with its scheduled tokens if said.
    Step(Option<u64>),
    /// Inside `proposer.propose` (the speculator's).
    Propose,
    Outside,
}

impl Place {
    /// The subsystem and batch it implies for `crate::graphs::matching::match_replay`.
    pub fn hints(self) -> (Option<&'static str>, Option<u64>) {
        match self {
            Place::Step(t) => (Some("decoder"), t),
            Place::Propose => (Some("speculator"), None),
            Place::Outside => (None, None),
        }
    }
}

impl Spans {
    /// Keeps the range `[ts, end)` named `name` on `lane` when it is a
    /// step or `proposer.propose` annotation.
    pub fn observe(&mut self, lane: u32, ts: i64, end: i64, name: &str) {
        let propose = name == PROPOSE;
        if !propose && (!name.starts_with("execute_") || crate::steps::parse(name).is_none()) {
            return;
        }
        let tokens = if propose { None } else { step_tokens(name) };
        self.spans.push(Span {
            lane,
            ts,
            end,
            tokens,
            propose,
        });
        self.sorted = false;
    }

    /// The spans of the driver's annotations ([`crate::contexts::Steps`]),
    /// on the lanes `lane_of` gives (pid, tid as written) — the ledger's.
    pub fn of_steps(
        steps: &crate::contexts::Steps,
        lane_of: impl Fn(&str, &str) -> Option<u32>,
    ) -> Spans {
        let mut s = Spans::default();
        for a in &steps.cpu {
            let name = steps.names.resolve(a.name);
            if name != PROPOSE && !name.starts_with("execute_") {
                continue;
            }
            let (pid, tid) = (steps.names.resolve(a.lane.0), steps.names.resolve(a.lane.1));
            if let Some(lane) = lane_of(pid, tid) {
                let end = a.start.0.saturating_add(a.dur.0);
                s.observe(lane, a.start.0, end, name);
            }
        }
        s
    }

    /// The innermost kept span enclosing `ts` on `lane` (a propose inside a
    /// step is the propose: the later start wins).
    pub fn place(&mut self, lane: u32, ts: i64) -> Place {
        if !self.sorted {
            self.spans.sort_unstable_by_key(|c| (c.lane, c.ts));
            self.sorted = true;
        }
        let upto = self.spans.partition_point(|c| (c.lane, c.ts) <= (lane, ts));
        // Steps do not nest and a propose holds no step: the last few
        // starts before `ts` are enough.
        for c in self.spans[..upto].iter().rev().take(4) {
            if c.lane != lane {
                break;
            }
            if c.end >= ts {
                return if c.propose {
                    Place::Propose
                } else {
                    Place::Step(c.tokens)
                };
            }
        }
        Place::Outside
    }
}
