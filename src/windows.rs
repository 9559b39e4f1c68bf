//! Step windows (`docs/VIEWS.md` C8, the window of I6): which step
//! annotations are the steps, and which step a launch on a thread belongs
//! to. `idle` (its per-step rows) and `export` (the `step` column) both
//! take them from here, neither from the other.
//!
//! ```text
//! thread T  [== S_0 ==)        [== S_1 ==)          [== S_2 ==) …
//!           |<- window 0 ----->|<- window 1 -------->|<- window 2 (open)
//!   a launch on T at ts belongs to the last S_i with S_i.ts ≤ ts;
//!   before S_0 → pre; a thread without steps → unattributed
//! ```

use crate::contexts::Steps;
use crate::model::{Interner, LaneTable, Sym};
use crate::trace::{Event, EventPos};
use std::collections::HashMap;

/// One step annotation (C8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StepWindow {
    pub name: String,
    /// (pid, tid) as `ThreadPart`'s display writes them.
    pub lane: (String, String),
    pub start: i64,
    /// The annotation's own end (`ts + dur`).
    pub ann_end: i64,
    /// Its index in `traceEvents`.
    pub index: u64,
}

/// C8's fallback grammar: the whole name is `ProfilerStep#<digits>`.
pub use crate::steps::is_profiler_step;

/// C8: vLLM step annotations; if none, `ProfilerStep#<n>` (user
/// annotations, and the CPU ops `op_steps` gives); if none, no steps.
/// Sorted by (start, index); the grammar used (`vllm`, `ProfilerStep`),
/// `None` without steps.
pub(crate) fn step_windows(
    st: &Steps,
    op_steps: impl FnOnce() -> Vec<StepWindow>,
) -> (Option<String>, Vec<StepWindow>) {
    let of_steps = |pick: &dyn Fn(&str) -> bool| -> Vec<StepWindow> {
        st.cpu
            .iter()
            .filter(|a| pick(st.names.resolve(a.name)))
            .map(|a| StepWindow {
                name: st.names.resolve(a.name).to_string(),
                lane: (
                    st.names.resolve(a.lane.0).to_string(),
                    st.names.resolve(a.lane.1).to_string(),
                ),
                start: a.start.0,
                ann_end: a.end().0,
                index: a.index,
            })
            .collect()
    };
    let mut wins = of_steps(&|n| crate::steps::parse(n).is_some());
    let mut grammar = "vllm";
    if wins.is_empty() {
        grammar = "ProfilerStep";
        wins = of_steps(&is_profiler_step);
        wins.extend(op_steps());
    }
    wins.sort_by_key(|w| (w.start, w.index));
    let grammar = (!wins.is_empty()).then(|| grammar.to_string());
    (grammar, wins)
}

/// C8's fallback steps kept while reading: the `ProfilerStep#<n>` CPU ops
/// (a user annotation of that name is in the step index already), with
/// their names and threads. `idle` and `memory` keep one each.
#[derive(Debug, Default)]
pub(crate) struct OpSteps {
    steps: Vec<OpStep>,
    names: Interner,
    lanes: LaneTable,
}

/// One `ProfilerStep#<n>` CPU op.
#[derive(Debug, Clone, Copy)]
struct OpStep {
    start: i64,
    end: i64,
    index: u64,
    lane: u32,
    name: Sym,
}

impl OpSteps {
    /// Keeps `ev` when it is a `ProfilerStep#<n>` CPU op with a start.
    pub fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        if ev.ph != "X" || !matches!(&*ev.cat, "cpu_op" | "Operator") || !is_profiler_step(&ev.name)
        {
            return;
        }
        let Some(ts) = ev.ts else { return };
        self.steps.push(OpStep {
            start: ts.0,
            end: ts.0.saturating_add(ev.dur_or_zero().0),
            index: at.index,
            lane: self.lanes.intern(ev.lane()),
            name: self.names.intern(&ev.name),
        });
    }

    /// The ops as step windows, for [`step_windows`].
    pub fn windows(&self) -> Vec<StepWindow> {
        self.steps
            .iter()
            .map(|o| {
                let l = self.lanes.resolve(o.lane);
                StepWindow {
                    name: self.names.resolve(o.name).to_string(),
                    lane: (l.pid.to_string(), l.tid.to_string()),
                    start: o.start,
                    ann_end: o.end,
                    index: o.index,
                }
            })
            .collect()
    }
}

/// The windows of each thread, in start order.
pub(crate) fn by_lane(wins: &[StepWindow]) -> HashMap<&(String, String), Vec<usize>> {
    let mut by: HashMap<&(String, String), Vec<usize>> = HashMap::new();
    for (i, w) in wins.iter().enumerate() {
        by.entry(&w.lane).or_default().push(i);
    }
    by
}

/// Where a launch on thread `key` starting at `ts` goes: `None` when the
/// thread has no step (unattributed), `Some(None)` before its first step
/// (pre), `Some(Some(i))` in step i's window.
pub(crate) fn window_at(
    by_lane: &HashMap<&(String, String), Vec<usize>>,
    wins: &[StepWindow],
    key: &(String, String),
    ts: i64,
) -> Option<Option<usize>> {
    let ids = by_lane.get(key)?;
    let k = ids.partition_point(|&i| wins[i].start <= ts).checked_sub(1);
    Some(k.map(|k| ids[k]))
}

/// Each window's end: the next step's start on the same thread (C8);
/// `None` for a thread's last (open) window.
pub(crate) fn window_ends(wins: &[StepWindow]) -> Vec<Option<i64>> {
    let mut next: Vec<Option<i64>> = vec![None; wins.len()];
    let mut last_on: HashMap<&(String, String), usize> = HashMap::new();
    for (i, w) in wins.iter().enumerate() {
        if let Some(&p) = last_on.get(&w.lane) {
            next[p] = Some(w.start);
        }
        last_on.insert(&w.lane, i);
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    fn win(lane: &str, start: i64, index: u64) -> StepWindow {
        StepWindow {
            name: format!("s{index}"),
            lane: ("1".into(), lane.into()),
            start,
            ann_end: start + 1,
            index,
        }
    }

    /// The drawing: windows per thread, pre, unattributed, open last.
    #[test]
    fn windows_per_thread() {
        let wins = vec![win("7", 10, 0), win("8", 15, 1), win("7", 20, 2)];
        let by = by_lane(&wins);
        let t7 = ("1".to_string(), "7".to_string());
        assert_eq!(window_at(&by, &wins, &t7, 5), Some(None));
        assert_eq!(window_at(&by, &wins, &t7, 10), Some(Some(0)));
        assert_eq!(window_at(&by, &wins, &t7, 19), Some(Some(0)));
        assert_eq!(window_at(&by, &wins, &t7, 99), Some(Some(2)));
        let t9 = ("1".to_string(), "9".to_string());
        assert_eq!(window_at(&by, &wins, &t9, 99), None);
        assert_eq!(window_ends(&wins), vec![Some(20), None, None]);
        assert!(is_profiler_step("ProfilerStep#3") && !is_profiler_step("ProfilerStep#"));
    }
}
