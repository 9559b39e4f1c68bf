//! Step contexts: the CPU `user_annotation` ranges every analysis measures
//! against, collected once per trace by the driver and selected once.
//!
//! Selection follows vLLM's step grammar ([`crate::steps`]): by default the
//! most frequent pure-decode step name (`execute_context_0(0)_generation_1(1)`
//! under AR, `…_generation_1(3)` under 2-token MTP); `--context NAME` takes an
//! exact name and `--context-regex RE` every annotation whose name matches.

use crate::model::{Interner, Ns, Sym};
use crate::steps;
use crate::store::pack::{Fields, Packed, Record};
use crate::trace::{Event, EventPos, Prefilter};
use regex::Regex;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

/// How the step contexts of a trace are chosen.
#[derive(Debug, Clone, Default)]
pub enum Selector {
    /// The most frequent pure-decode vLLM step name.
    #[default]
    Auto,
    /// Annotations with exactly this name.
    Exact(String),
    /// Annotations whose name the regex matches (anywhere).
    Regex(Regex),
}

impl Selector {
    pub fn kind(&self) -> &'static str {
        match self {
            Selector::Auto => "auto",
            Selector::Exact(_) => "exact",
            Selector::Regex(_) => "regex",
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Selector::Auto => "auto".into(),
            Selector::Exact(n) => n.clone(),
            Selector::Regex(r) => format!("re:{}", r.as_str()),
        }
    }

    /// From `--context` / `--context-regex` (the exact name wins).
    pub fn from_flags(exact: Option<&str>, regex: Option<&str>) -> Result<Selector, regex::Error> {
        Ok(match (exact, regex) {
            (Some(n), _) => Selector::Exact(n.to_string()),
            (None, Some(r)) => Selector::Regex(Regex::new(r)?),
            (None, None) => Selector::Auto,
        })
    }
}

/// An annotation event as kept in memory (CPU `user_annotation` or GPU
/// `gpu_user_annotation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotation {
    pub name: Sym,
    pub start: Ns,
    pub dur: Ns,
    pub external_id: Option<i64>,
    pub lane: (Sym, Sym),
    /// Index in `traceEvents`.
    pub index: u64,
    /// False when Kineto marked the range `"finished": false` (still open
    /// when the profiler stopped: its `dur` is cut short).
    pub finished: bool,
    /// `dur` was missing or negative: taken as 0 (noted by `pair`).
    pub bad_dur: bool,
}

impl Annotation {
    /// The end, saturating at `i64::MAX` (for range queries; figures use
    /// [`Annotation::end_exact`]).
    pub fn end(&self) -> Ns {
        self.start.saturating_add(self.dur)
    }

    /// `start + dur`, exact.
    pub fn end_exact(&self) -> i128 {
        i128::from(self.start.0) + i128::from(self.dur.0)
    }

    /// Keeps a complete event of category `cat`, interning into `names`.
    pub fn of(ev: &Event<'_>, at: EventPos, names: &mut Interner) -> Annotation {
        Annotation {
            name: names.intern(&ev.name),
            start: ev.ts.unwrap_or_default(),
            dur: ev.dur_or_zero(),
            external_id: ev.args.external_id,
            lane: (
                names.intern(&ev.pid.to_string()),
                names.intern(&ev.tid.to_string()),
            ),
            index: at.index,
            finished: ev.args.finished != Some(false),
            bad_dur: ev.dur.is_none_or(|d| d.0 < 0),
        }
    }
}

/// An annotation as kept by [`crate::store::pack::Records`]: name, Δstart, dur, flags (has an
/// External id, finished, bad dur), Δexternal id, pid, tid, Δindex (≈ 12 B of
/// varints instead of 56).
impl Record for Annotation {
    /// (start, External id, index) of the previous record.
    type Prev = (i64, i64, i64);

    fn write(&self, prev: &mut (i64, i64, i64), p: &mut Packed) {
        let flags = u64::from(self.external_id.is_some())
            | u64::from(self.finished) << 1
            | u64::from(self.bad_dur) << 2;
        p.u(u64::from(self.name.0));
        p.delta(self.start.0, prev.0);
        p.delta(self.dur.0, 0);
        p.u(flags);
        if let Some(id) = self.external_id {
            p.delta(id, prev.1);
            prev.1 = id;
        }
        p.u(u64::from(self.lane.0 .0));
        p.u(u64::from(self.lane.1 .0));
        p.delta(self.index as i64, prev.2);
        prev.0 = self.start.0;
        prev.2 = self.index as i64;
    }

    fn read(prev: &mut (i64, i64, i64), f: &mut impl Fields) -> Annotation {
        let name = Sym(f.u() as u32);
        let start = f.delta(prev.0);
        let dur = f.delta(0);
        let flags = f.u();
        let external_id = (flags & 1 != 0).then(|| f.delta(prev.1));
        if let Some(id) = external_id {
            prev.1 = id;
        }
        let lane = (Sym(f.u() as u32), Sym(f.u() as u32));
        let index = f.delta(prev.2);
        *prev = (start, prev.1, index);
        Annotation {
            name,
            start: Ns(start),
            dur: Ns(dur),
            external_id,
            lane,
            index: index as u64,
            finished: flags & 2 != 0,
            bad_dur: flags & 4 != 0,
        }
    }
}

/// The CPU `user_annotation` events of one trace, in file order: what the
/// driver keeps for every plan.
#[derive(Debug, Default)]
pub struct Steps {
    pub names: Interner,
    pub cpu: Vec<Annotation>,
    /// Begin (`ph` "B") CPU user annotations: B/E ranges are not
    /// supported; they are counted for a note.
    pub begin_events: u64,
    /// Complete (`ph` "X") CPU user annotations without a `ts` (missing or
    /// null): not contexts (no start), counted for a note.
    pub no_ts: u64,
}

/// The raw-bytes test admitting both annotation categories (both end in
/// `user_annotation"`).
pub fn annotation_prefilter() -> Prefilter {
    Prefilter::any_of(&["user_annotation\""])
}

impl Steps {
    /// Keeps the event if it is a complete CPU user annotation.
    pub fn push(&mut self, ev: &Event<'_>, at: EventPos) {
        if ev.is_complete() && ev.cat == "user_annotation" {
            let a = Annotation::of(ev, at, &mut self.names);
            self.cpu.push(a);
        } else if ev.ph == "B" && ev.cat == "user_annotation" {
            self.begin_events += 1;
        } else if ev.ph == "X" && ev.ts.is_none() && ev.cat == "user_annotation" {
            self.no_ts += 1;
        }
    }
}

/// A step name found in the trace, with how often it occurs.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct StepName {
    pub name: String,
    pub count: u64,
    /// decode, prefill, mixed.
    pub kind: std::borrow::Cow<'static, str>,
    pub selected: bool,
}

/// A selection that found nothing to measure (exit status 1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairProblem {
    #[error("{path}: no pure-decode vLLM step annotation found; step names present: {names}. Choose one with --context or --context-regex")]
    NoDecodeSteps { path: String, names: String },
    #[error(
        "{path}: no user_annotation matches the context {wanted}; step names present: {names}"
    )]
    NoMatch {
        path: String,
        wanted: String,
        names: String,
    },
}

/// The selected step contexts of one trace.
#[derive(Debug, Clone)]
pub struct Contexts {
    pub selector: Selector,
    /// The selected step name, or the regex/exact name given.
    pub name: String,
    /// Selected CPU annotation names.
    pub selected: HashSet<Sym>,
    /// Indices into [`Steps::cpu`] of the selected contexts, sorted by
    /// (start, event index).
    pub rows: Vec<usize>,
    /// Every recognised step name, most frequent first.
    pub step_names: Vec<StepName>,
    /// Why nothing could be selected, if so.
    pub problem: Option<PairProblem>,
    /// Set when the default selection fell back to C8's `ProfilerStep#<n>`
    /// ranges (a trace without any vLLM step annotation, as `idle` does):
    /// the note that says so.
    pub fallback: Option<String>,
}

impl Contexts {
    /// Applies `selector` to the collected annotations.
    pub fn select(path: &str, steps: &Steps, selector: &Selector) -> Contexts {
        let found = step_names(steps);
        let (selected, name, mut problem) = choose(path, steps, selector, &found);
        let fallback = (matches!(selector, Selector::Auto) && found.is_empty() && !selected.is_empty())
            .then(|| {
                format!(
                    "{path}: no vLLM step annotation: the step contexts are the trace's ProfilerStep#<n> ranges (C8's fallback, as `idle` uses); choose others with --context or --context-regex"
                )
            });
        let mut rows: Vec<usize> = (0..steps.cpu.len())
            .filter(|&i| selected.contains(&steps.cpu[i].name))
            .collect();
        rows.sort_by_key(|&i| (steps.cpu[i].start, steps.cpu[i].index));
        if problem.is_none() && rows.is_empty() {
            problem = Some(PairProblem::NoMatch {
                path: path.into(),
                wanted: selector.describe(),
                names: names_list(steps, &found),
            });
        }
        let mut step_names: Vec<StepName> = found
            .iter()
            .map(|(s, (c, st))| StepName {
                name: steps.names.resolve(*s).to_string(),
                count: *c,
                kind: st.kind().into(),
                selected: selected.contains(s),
            })
            .collect();
        step_names.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
        Contexts {
            selector: selector.clone(),
            name,
            selected,
            rows,
            step_names,
            problem,
            fallback,
        }
    }

    /// Does an annotation of this name (CPU or GPU) belong to the
    /// selection? A regex selects every name it matches, even a GPU name
    /// without a CPU twin.
    pub fn selects(&self, steps: &Steps, name: &str) -> bool {
        match &self.selector {
            Selector::Regex(r) => r.is_match(name),
            Selector::Exact(n) => name == n,
            Selector::Auto => steps
                .names
                .get(name)
                .is_some_and(|s| self.selected.contains(&s)),
        }
    }

    /// The selected annotations, sorted by (start, event index).
    pub fn iter<'a>(&'a self, steps: &'a Steps) -> impl Iterator<Item = &'a Annotation> + 'a {
        self.rows.iter().map(move |&i| &steps.cpu[i])
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// How many selected contexts lie wholly inside another selected
    /// context of their thread (a step annotation whose duration encloses
    /// other steps: nested or huge-duration). One sweep by (lane, start,
    /// longest first) with a stack of open ends: O(n log n). Partial
    /// overlaps are not counted (the attribution's notes name those).
    pub fn nested_on_thread(&self, steps: &Steps) -> u64 {
        let mut by: Vec<((Sym, Sym), Ns, std::cmp::Reverse<Ns>)> = self
            .iter(steps)
            .map(|c| (c.lane, c.start, std::cmp::Reverse(c.end())))
            .collect();
        by.sort_unstable();
        let mut nested = 0u64;
        // (lane, end, the largest end at or below it): an entry left under
        // the top after it closed ends at or before `start`, so it can
        // neither hold the range nor make the maximum say it does.
        let mut open: Vec<((Sym, Sym), Ns, Ns)> = Vec::new();
        for (lane, start, std::cmp::Reverse(end)) in by {
            while open
                .last()
                .is_some_and(|&(l, e, _)| l != lane || e <= start)
            {
                open.pop();
            }
            let max = open.last().map(|&(_, _, m)| m);
            if max.is_some_and(|m| end <= m) {
                nested += 1;
            }
            // Zero-length ranges hold nothing.
            if end > start {
                open.push((lane, end, max.map_or(end, |m| m.max(end))));
            }
        }
        nested
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// Which names are selected, the context label, and a problem if none.
fn choose(
    path: &str,
    steps: &Steps,
    selector: &Selector,
    found: &BTreeMap<Sym, (u64, steps::Step)>,
) -> (HashSet<Sym>, String, Option<PairProblem>) {
    match selector {
        Selector::Auto => match auto_select(steps, found) {
            Some(s) => (HashSet::from([s]), steps.names.resolve(s).to_string(), None),
            None if found.is_empty() && !profiler_steps(steps).is_empty() => {
                (profiler_steps(steps), "ProfilerStep#<n>".into(), None)
            }
            None => (
                HashSet::new(),
                String::new(),
                Some(PairProblem::NoDecodeSteps {
                    path: path.into(),
                    names: names_list(steps, found),
                }),
            ),
        },
        Selector::Exact(n) => (steps.names.get(n).into_iter().collect(), n.clone(), None),
        Selector::Regex(r) => {
            let set = steps
                .cpu
                .iter()
                .map(|a| a.name)
                .collect::<HashSet<_>>()
                .into_iter()
                .filter(|s| r.is_match(steps.names.resolve(*s)))
                .collect();
            (set, r.as_str().to_string(), None)
        }
    }
}

/// The names of the trace's `ProfilerStep#<n>` user annotations (C8's
/// fallback grammar: each step has a name of its own).
fn profiler_steps(steps: &Steps) -> HashSet<Sym> {
    steps
        .cpu
        .iter()
        .map(|a| a.name)
        .filter(|s| steps::is_profiler_step(steps.names.resolve(*s)))
        .collect()
}

/// Counts every recognised step name.
fn step_names(steps: &Steps) -> BTreeMap<Sym, (u64, steps::Step)> {
    let mut out: BTreeMap<Sym, (u64, steps::Step)> = BTreeMap::new();
    let mut not_step: HashSet<Sym> = HashSet::new();
    for a in &steps.cpu {
        if not_step.contains(&a.name) {
            continue;
        }
        if let Some(e) = out.get_mut(&a.name) {
            e.0 += 1;
            continue;
        }
        match steps::parse(steps.names.resolve(a.name)) {
            Some(s) => {
                out.insert(a.name, (1, s));
            }
            None => {
                not_step.insert(a.name);
            }
        }
    }
    out
}

/// The default context: the most frequent pure-decode step name (ties: the
/// name that sorts first).
fn auto_select(steps: &Steps, found: &BTreeMap<Sym, (u64, steps::Step)>) -> Option<Sym> {
    found
        .iter()
        .filter(|(_, (_, s))| s.is_pure_decode())
        .max_by(|(a, (ca, _)), (b, (cb, _))| {
            ca.cmp(cb)
                .then_with(|| steps.names.resolve(**b).cmp(steps.names.resolve(**a)))
        })
        .map(|(sym, _)| *sym)
}

/// The step names present (or, without any, the most frequent annotations),
/// for messages.
fn names_list(steps: &Steps, found: &BTreeMap<Sym, (u64, steps::Step)>) -> String {
    if !found.is_empty() {
        let shown: Vec<String> = found
            .iter()
            .take(LISTED)
            .map(|(s, (c, _))| format!("{} ×{c}", shown_name(steps.names.resolve(*s))))
            .collect();
        return format!("{}{}", shown.join(", "), more(found.len()));
    }
    let mut all: BTreeMap<&str, u64> = BTreeMap::new();
    for a in &steps.cpu {
        *all.entry(steps.names.resolve(a.name)).or_default() += 1;
    }
    if all.is_empty() {
        if steps.begin_events > 0 {
            return format!(
                "none (no complete user_annotation events; {} B/E ranges (ph \"B\"/\"E\"), which are not supported)",
                steps.begin_events
            );
        }
        return "none (no user_annotation events)".into();
    }
    let mut v: Vec<_> = all.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let shown: Vec<String> = v
        .iter()
        .take(LISTED)
        .map(|(n, c)| format!("{} ×{c}", shown_name(n)))
        .collect();
    format!(
        "no vLLM step names; user_annotations: {}{}",
        shown.join(", "),
        more(v.len())
    )
}

/// How many names a message lists.
const LISTED: usize = 12;

/// ` and N more` when `total` names exceed [`LISTED`].
fn more(total: usize) -> String {
    match total.saturating_sub(LISTED) {
        0 => String::new(),
        n => format!(" and {n} more"),
    }
}

/// A name from the trace as a message shows it: control characters
/// escaped and cut to its first 80 bytes (`trace::message::clip_str`).
fn shown_name(name: &str) -> String {
    crate::trace::message::clip_str(name)
}
