//! The finish of `memory`: the records in (device, ts, file) order (M1),
//! each device's levels (M2), the lives of its allocations (M3), what
//! holds its peak and what is never freed (M4, through one containment
//! sweep per thread over the host store's ops), its step rows (M5) and
//! its timeline (M6).

use super::{DeviceMemory, Holder, Memory, Point, StepMemory, TraceMemory, MEMORY_EVENT};
use crate::allocator::{absolute, device_label, levels, start_level, AllocEvent};

/// A kept `[memory]` event.
type Rec = AllocEvent;
use crate::analysis::Finished;
use crate::hostops::contain::{sweep_thread, Sweep, Tag, Visit, Visitor};
use crate::hostops::launch::end_of;
use crate::hostops::store::HostStore;
use crate::hostops::HOST_CATEGORIES;
use crate::windows::{step_windows, window_ends, StepWindow};
use std::collections::HashMap;

/// What the figures are in.
const UNITS: &str = "bytes; times in ns (absolute trace time, C1)";

/// The module frames Kineto writes with `with_modules`/`with_stack` (M4).
const MODULE_PREFIX: &str = "nn.Module: ";

/// The holder of bytes that no host op encloses (M4).
pub const NO_HOST_OP: &str = "(no host op)";
/// The holder of bytes that no module frame encloses (M4).
pub const NO_MODULE: &str = "(no module)";
/// The row that sums the holders past `--top`.
pub const OTHERS: &str = "(others)";

/// M3: an allocation the trace followed: its record, and the record that
/// freed it (`None`: live at the end).
#[derive(Debug, Clone, Copy)]
struct Life {
    at: usize,
    end: Option<usize>,
}

/// One device's records, sweeps and what M4 asks of the host ops.
struct DeviceSweep {
    figures: DeviceMemory,
    /// The allocations live at the peak, and never freed (records' indices
    /// into the trace's sorted records).
    at_peak: Vec<usize>,
    never_freed: Vec<usize>,
}

pub(super) fn measure(m: Memory, trace: &Finished<'_>) -> TraceMemory {
    let Memory {
        spec,
        mut events,
        lanes,
        op_steps,
    } = m;
    let mut out = TraceMemory {
        path: trace.path.to_string(),
        units: UNITS.to_string(),
        counts: super::Counts {
            memory_events: events.events.len() as u64,
            malformed: events.malformed,
        },
        complete: true,
        ..TraceMemory::default()
    };
    // Taken first, whatever follows: the store's last user (`ops`) owns it
    // only once every user has taken its share.
    let store = trace.collected::<HostStore>();
    let first_malformed = events.first_malformed;
    if let Some((index, why)) = first_malformed {
        out.notes.push(format!(
            "{} {MEMORY_EVENT} events skipped (M1: {why} at event index {index}, the first)",
            out.counts.malformed
        ));
    }
    // Step windows (C8), as `idle` takes them.
    let (grammar, wins) = step_windows(trace.steps, || op_steps.windows());
    out.step_grammar = grammar;
    if events.events.is_empty() {
        out.notes.push(format!(
            "no {MEMORY_EVENT} events: the trace was recorded without profile_memory=True; nothing to report"
        ));
        return out;
    }
    events.sort();
    let ends = window_ends(&wins);
    let mut sweeps = Vec::new();
    for (lo, recs) in events.by_device() {
        let (t, id) = events.devices[recs[0].device as usize];
        let mut s = device(recs, lo, t, id);
        s.figures.steps = steps(recs, &s, &wins, &ends);
        s.figures.timeline = timeline(recs, spec.timeline);
        sweeps.push(s);
    }
    let recs = &events.events;
    // M4: the holders, one sweep per thread.
    let holders = Holders::of(recs, &sweeps, &lanes, store.as_deref());
    for s in &mut sweeps {
        let f = &mut s.figures;
        f.at_peak = holders.rows(&s.at_peak, recs, false, spec.top);
        f.at_peak_by_module = if holders.any_module {
            holders.rows(&s.at_peak, recs, true, spec.top)
        } else {
            Vec::new()
        };
        f.never_freed = holders.rows(&s.never_freed, recs, false, spec.top);
    }
    out.devices = sweeps.into_iter().map(|s| s.figures).collect();
    out.devices.sort_by_key(|d| (d.device_type, d.device_id));
    for d in &out.devices {
        device_notes(d, &mut out.notes);
    }
    out
}

/// M2–M4 of one device's records (`recs`, sorted; `base`: the first's
/// index among all records).
fn device(recs: &[Rec], base: usize, device_type: i64, device_id: i64) -> DeviceSweep {
    let absolute = absolute(recs);
    let mut f = figures_of(recs, absolute, device_type, device_id);
    let start = start_level(recs, absolute);
    f.baseline_bytes = absolute.then_some(start);
    let mut level = start;
    let mut peak: Option<(usize, i128)> = None;
    let mut lives: Vec<Life> = Vec::new();
    let mut live_at: HashMap<i128, usize> = HashMap::new();
    for (i, r) in recs.iter().enumerate() {
        let bytes = i128::from(r.bytes);
        // M2: the level after the event.
        let next = match r.total_allocated() {
            Some(t) if absolute => i128::from(t),
            _ => level + bytes,
        };
        if absolute && i > 0 && next != level + bytes {
            f.total_mismatches += 1;
        }
        level = next;
        if peak.is_none_or(|(_, p)| level > p) {
            peak = Some((i, level));
        }
        if let Some(tr) = r.total_reserved() {
            f.peak_reserved_bytes = f.peak_reserved_bytes.max(Some(tr));
        }
        match r.bytes.signum() {
            1 => {
                f.allocations += 1;
                f.bytes_allocated += bytes;
                let Some(addr) = r.addr else {
                    f.allocations_without_addr += 1;
                    continue;
                };
                // M3: an allocation at a live address ends the earlier one.
                if let Some(prev) = live_at.insert(addr, lives.len()) {
                    lives[prev].end = Some(i);
                    f.reused_live_addresses += 1;
                }
                lives.push(Life { at: i, end: None });
            }
            -1 => {
                f.frees += 1;
                f.bytes_freed -= bytes;
                let Some(addr) = r.addr else {
                    f.frees_without_addr += 1;
                    continue;
                };
                match live_at.remove(&addr) {
                    Some(k) => {
                        lives[k].end = Some(i);
                        if recs[lives[k].at].bytes != -r.bytes {
                            f.free_size_mismatches += 1;
                        }
                    }
                    None => {
                        f.frees_of_earlier_allocations += 1;
                        f.bytes_freed_of_earlier_allocations -= bytes;
                    }
                }
            }
            _ => {}
        }
    }
    let (p, peak_level) = peak.unwrap_or((0, start));
    f.peak_allocated_bytes = peak_level;
    f.peak_ts_ns = recs.get(p).map_or(0, |r| r.ts);
    f.final_allocated_bytes = level;
    if let Some(tr) = recs.get(p).and_then(AllocEvent::total_reserved) {
        f.reserved_at_peak_bytes = Some(tr);
        f.reserved_minus_allocated_at_peak_bytes = Some(i128::from(tr) - peak_level);
    }
    let (at_peak, never_freed) = held(&mut f, &lives, recs, p, base);
    f.before_trace_bytes = absolute.then(|| peak_level - f.held_at_peak_bytes);
    DeviceSweep {
        figures: f,
        at_peak,
        never_freed,
    }
}

/// A device's figures before its sweep: its name, level source, event
/// count and time range.
fn figures_of(recs: &[Rec], absolute: bool, device_type: i64, device_id: i64) -> DeviceMemory {
    DeviceMemory {
        device: device_label(device_type, device_id),
        device_type,
        device_id,
        levels: if absolute {
            "total_allocated"
        } else {
            "running_sum"
        }
        .to_string(),
        events: recs.len() as u64,
        first_ts_ns: recs.first().map_or(0, |r| r.ts),
        last_ts_ns: recs.last().map_or(0, |r| r.ts),
        ..DeviceMemory::default()
    }
}

/// M4: the allocations live at the peak event `p` and those never freed
/// (their positions + `base`), counted into `f`.
fn held(
    f: &mut DeviceMemory,
    lives: &[Life],
    recs: &[Rec],
    p: usize,
    base: usize,
) -> (Vec<usize>, Vec<usize>) {
    let mut at_peak = Vec::new();
    let mut never_freed = Vec::new();
    for l in lives {
        let bytes = i128::from(recs[l.at].bytes);
        if l.at <= p && l.end.is_none_or(|e| e > p) {
            f.held_at_peak_bytes += bytes;
            f.held_at_peak_allocations += 1;
            at_peak.push(base + l.at);
        }
        if l.end.is_none() {
            f.never_freed_bytes += bytes;
            f.never_freed_allocations += 1;
            never_freed.push(base + l.at);
        }
    }
    (at_peak, never_freed)
}

/// M5: each step window's events of the device.
fn steps(
    recs: &[Rec],
    s: &DeviceSweep,
    wins: &[StepWindow],
    ends: &[Option<i64>],
) -> Vec<StepMemory> {
    let absolute = s.figures.levels == "total_allocated";
    let lv = levels(recs, absolute);
    let start = start_level(recs, absolute);
    wins.iter()
        .zip(ends)
        .enumerate()
        .map(|(k, (w, &end))| {
            let lo = recs.partition_point(|r| r.ts < w.start);
            let hi = end.map_or(recs.len(), |e| recs.partition_point(|r| r.ts < e));
            let hi = hi.max(lo);
            let start_bytes = lo.checked_sub(1).map_or(start, |i| lv[i]);
            let mut row = StepMemory {
                index: k as u64,
                name: w.name.clone(),
                start_ns: w.start,
                end_ns: end,
                tokens: crate::steps::parse(&w.name).and_then(|s| s.generation_tokens),
                events: (hi - lo) as u64,
                start_bytes,
                high_water_bytes: start_bytes,
                end_bytes: hi
                    .checked_sub(1)
                    .filter(|&i| i >= lo)
                    .map_or(start_bytes, |i| lv[i]),
                ..StepMemory::default()
            };
            for (r, &l) in recs[lo..hi].iter().zip(&lv[lo..hi]) {
                row.high_water_bytes = row.high_water_bytes.max(l);
                match r.bytes.signum() {
                    1 => {
                        row.allocations += 1;
                        row.bytes_allocated += i128::from(r.bytes);
                    }
                    -1 => {
                        row.frees += 1;
                        row.bytes_freed -= i128::from(r.bytes);
                    }
                    _ => {}
                }
            }
            row.net_bytes = row.end_bytes - row.start_bytes;
            row
        })
        .collect()
}

/// M6: at most `n` points: the span [first, last] cut in `n` equal slices,
/// each slice with events giving its start and its largest levels.
fn timeline(recs: &[Rec], n: u32) -> Vec<Point> {
    let (Some(first), Some(last)) = (recs.first(), recs.last()) else {
        return Vec::new();
    };
    if n == 0 {
        return Vec::new();
    }
    let lv = levels(recs, absolute(recs));
    let width = i128::from(last.ts) - i128::from(first.ts) + 1;
    let n = i128::from(n);
    let mut points: Vec<Point> = Vec::new();
    let mut slice = -1i128;
    for (r, &l) in recs.iter().zip(&lv) {
        let k = (i128::from(r.ts) - i128::from(first.ts)) * n / width;
        let reserved = r.total_reserved();
        if k != slice {
            slice = k;
            let ts = i128::from(first.ts) + k * width / n;
            points.push(Point {
                ts_ns: i64::try_from(ts).unwrap_or(r.ts),
                allocated_bytes: l,
                reserved_bytes: reserved,
            });
        } else if let Some(p) = points.last_mut() {
            p.allocated_bytes = p.allocated_bytes.max(l);
            p.reserved_bytes = p.reserved_bytes.max(reserved);
        }
    }
    points
}

/// M3–M4's notes of one device.
fn device_notes(d: &DeviceMemory, notes: &mut Vec<String>) {
    let at = &d.device;
    if d.levels == "running_sum" {
        notes.push(format!(
            "{at}: some events carry no Total Allocated: levels are running sums of Bytes from 0 (M2); baseline unknown"
        ));
    }
    let counted = [
        (d.total_mismatches, "events whose Total Allocated differs from the previous one plus their Bytes (events missing from the trace, M2)"),
        (d.frees_of_earlier_allocations, "frees of memory allocated before the trace (M3)"),
        (d.allocations_without_addr, "allocations without Addr, not followed (M3)"),
        (d.frees_without_addr, "frees without Addr, not matched (M3)"),
        (d.reused_live_addresses, "allocations at an address still live, ending the earlier one (M3)"),
        (d.free_size_mismatches, "frees whose size differs from their allocation's (M3)"),
    ];
    for (n, what) in counted {
        if n > 0 {
            notes.push(format!("{at}: {n} {what}"));
        }
    }
}

/// M4: each followed allocation's innermost enclosing host op and module
/// frame, as the host store's form ids.
struct Holders<'s> {
    /// By record index: (host op form, module form).
    of: HashMap<usize, (Option<u32>, Option<u32>)>,
    store: Option<&'s HostStore>,
    any_module: bool,
}

/// One thread's queries: (record index, ts), in ts order.
struct Found<'a> {
    queries: &'a [(usize, i64)],
    found: Vec<Option<u32>>,
}

impl Visitor for Found<'_> {
    fn op(&mut self, _at: &Visit, _parent: Option<(u32, Tag)>, _sweep: &mut Sweep) {}
    fn call(&mut self, id: u32, sweep: &mut Sweep) {
        let ts = self.queries[id as usize].1;
        // C4 with Y = [ts, ts]: the latest op starting no later and ending
        // at or after ts (C5's innermost).
        self.found[id as usize] = sweep.innermost_tagged(ts).map(|(_, tag)| tag.row);
    }
}

impl<'s> Holders<'s> {
    fn of(
        recs: &[Rec],
        sweeps: &[DeviceSweep],
        lanes: &crate::model::LaneTable,
        store: Option<&'s HostStore>,
    ) -> Holders<'s> {
        let mut by_lane: HashMap<u32, Vec<(usize, i64)>> = HashMap::new();
        for s in sweeps {
            for &i in s.at_peak.iter().chain(&s.never_freed) {
                by_lane
                    .entry(recs[i].lane)
                    .or_default()
                    .push((i, recs[i].ts));
            }
        }
        let is_module: Vec<bool> = store.map_or_else(Vec::new, |st| {
            st.forms
                .iter()
                .map(|f| st.links.names.resolve(f.name).starts_with(MODULE_PREFIX))
                .collect()
        });
        let any_module = is_module.iter().any(|&m| m);
        let mut of = HashMap::new();
        for (lane, mut queries) in by_lane {
            queries.sort_unstable_by_key(|&(i, ts)| (ts, i));
            queries.dedup();
            let thread = store.and_then(|st| {
                let l = st.links.lanes.get(lanes.resolve(lane))?;
                st.threads.get(l as usize)
            });
            let sweep = |modules: bool| -> Vec<Option<u32>> {
                let mut v = Found {
                    queries: &queries,
                    found: vec![None; queries.len()],
                };
                let calls = queries
                    .iter()
                    .enumerate()
                    .map(|(k, &(_, ts))| (k as u32, ts));
                match thread {
                    Some(t) => {
                        let ops = t
                            .in_key_order()
                            .filter(|f| !modules || is_module[f.form as usize])
                            .map(|f| Visit {
                                pos: f.pos,
                                ts: f.ts,
                                end: end_of(f.ts, f.dur),
                                scope: false,
                                tag: Tag {
                                    row: f.form,
                                    ts: f.ts,
                                },
                            });
                        sweep_thread(ops, calls, &mut v);
                    }
                    None => sweep_thread(std::iter::empty(), calls, &mut v),
                }
                v.found
            };
            let ops = sweep(false);
            let modules = if any_module {
                sweep(true)
            } else {
                vec![None; queries.len()]
            };
            for (k, &(i, _)) in queries.iter().enumerate() {
                of.insert(i, (ops[k], modules[k]));
            }
        }
        Holders {
            of,
            store,
            any_module,
        }
    }

    /// The (category, name) of a form; `None`: no enclosing op.
    fn name(&self, form: Option<u32>, module: bool) -> (String, String) {
        let none = if module { NO_MODULE } else { NO_HOST_OP };
        match (form, self.store) {
            (Some(f), Some(st)) => match st.forms.get(f as usize) {
                Some(f) => (
                    HOST_CATEGORIES
                        .get(f.cat as usize)
                        .copied()
                        .unwrap_or_default()
                        .to_string(),
                    st.links.names.resolve(f.name).to_string(),
                ),
                None => (String::new(), none.to_string()),
            },
            _ => (String::new(), none.to_string()),
        }
    }

    /// The rows of the allocations `at` (record indices), by holder: bytes
    /// descending, then allocations descending, category, name; past
    /// `top` (0: all) one `(others)` row.
    fn rows(&self, at: &[usize], recs: &[Rec], module: bool, top: u32) -> Vec<Holder> {
        // By (category, name): one name may have several forms (shapes
        // another analysis asked the store for).
        let mut names: HashMap<Option<u32>, (String, String)> = HashMap::new();
        let mut by: HashMap<(String, String), Holder> = HashMap::new();
        for &i in at {
            let found = self.of.get(&i).copied().unwrap_or_default();
            let form = if module { found.1 } else { found.0 };
            let key = names
                .entry(form)
                .or_insert_with(|| self.name(form, module))
                .clone();
            let row = by.entry(key).or_insert_with_key(|(cat, name)| Holder {
                cat: cat.clone(),
                name: name.clone(),
                ..Holder::default()
            });
            row.bytes += i128::from(recs[i].bytes);
            row.allocations += 1;
        }
        let mut rows: Vec<Holder> = by.into_values().collect();
        rows.sort_by(|a, b| {
            (b.bytes, b.allocations, &a.cat, &a.name).cmp(&(
                a.bytes,
                a.allocations,
                &b.cat,
                &b.name,
            ))
        });
        let top = top as usize;
        if top > 0 && rows.len() > top {
            let rest = rows.split_off(top);
            rows.push(Holder {
                cat: String::new(),
                name: format!("{OTHERS} {} holders", rest.len()),
                bytes: rest.iter().map(|h| h.bytes).sum(),
                allocations: rest.iter().map(|h| h.allocations).sum(),
            });
        }
        rows
    }
}
