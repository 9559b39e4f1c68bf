//! The end of the read: launch links (C3, `hostops::launch`), each call's
//! innermost modelled encloser (C4, `hostops::contain`), then per row its
//! model, GPU time and rates. Times stay integer ns; only the rates are
//! f64, for display.

use super::args::{ArgsError, OpArgs};
use super::devices::Device;
use super::models::{self, Unfit};
use super::{
    Bound, Key, RoofCounts, RoofRow, RoofSummary, RooflineSpec, TraceRoofline, UnmodelledRow, NONE,
    NO_OP,
};
use crate::graphs::linked::match_replays;
use crate::graphs::place::Place;
use crate::graphs::Captures;
use crate::hostops::contain::{sweep_thread, Sweep, Tag, Visit, Visitor};
use crate::hostops::launch::{end_of, launches, owners, Launch};
use crate::hostops::runs::Runs;
use crate::hostops::store::{Form, Formed, HostStore};
use crate::hostops::Linked;
use crate::model::{Interner, Sym};
use crate::store::pack::Records;
use std::collections::{BTreeMap, HashMap};

/// One activity of an attributed graph replay as roofline reads it: its
/// graph launch (the runtime call's position), its region, its position
/// among the region's captured launches, its dur, and whether the replay
/// matched that region alone (`false`: an ambiguous replay attributed
/// because its candidates name the same launchers; shapes unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Given {
    call: u32,
    region: u32,
    pos: u32,
    dur: i64,
    exact: bool,
}

/// The replays' outcomes and their attributed activities, in replay order
/// (`crate::graphs::linked`, the matching `ops` and `export` use).
struct Replayed {
    summary: crate::graphs::GraphsSummary,
    attributed: Vec<Given>,
}

impl Replayed {
    /// `m`'s activities with their graph launch (their owner, C3).
    fn of(m: crate::graphs::linked::Matched, own: &crate::hostops::launch::Owners) -> Replayed {
        let attributed = m
            .given
            .iter()
            .filter_map(|g| {
                let p = g.pos as usize;
                Some(Given {
                    call: own.range(p, p + 1).next().flatten()?,
                    region: g.region,
                    pos: g.k,
                    dur: g.dur,
                    exact: g.exact,
                })
            })
            .collect();
        Replayed {
            summary: m.summary,
            attributed,
        }
    }
}

/// What a row's calls launched.
#[derive(Debug, Clone, Copy, Default)]
struct Got {
    calls: u64,
    kernels: u64,
    gpu: i64,
    /// … of which replayed by graphs (issue 57).
    graph: i64,
}

/// One thread's runtime call.
#[derive(Debug, Clone, Copy)]
struct Call {
    id: u32,
    end: i64,
}

/// Where a sweep gives each launching call's ns.
struct Give<'a> {
    calls: &'a [Call],
    launched: &'a [Launch],
    got: &'a mut [Got],
    /// Per call: given already (a call is given once: the first sweep
    /// visits the composites only, the second every modelled op, the third
    /// every op, each for the calls left).
    claimed: &'a mut [bool],
    /// The last sweep: a call no op encloses goes to `no_op`.
    rest: bool,
    no_op: &'a mut Got,
}

impl Visitor for Give<'_> {
    fn op(&mut self, _: &Visit, _: Option<(u32, Tag)>, _: &mut Sweep) {}

    fn call(&mut self, k: u32, sweep: &mut Sweep) {
        let c = self.calls[k as usize];
        let l = self.launched[c.id as usize];
        if l.acts == 0 || self.claimed[c.id as usize] {
            return;
        }
        let g = match sweep.innermost_tagged(c.end) {
            Some((_, tag)) => {
                let first = sweep.first_launch(c.end).is_some();
                let g = &mut self.got[tag.row as usize];
                g.calls += u64::from(first);
                g
            }
            None if self.rest => &mut *self.no_op,
            None => return,
        };
        g.kernels += u64::from(l.acts);
        g.gpu = g.gpu.saturating_add(l.gpu);
        self.claimed[c.id as usize] = true;
    }
}

/// A form's row key and class (0 no model, 1 a model, 2 a composite's).
#[derive(Debug, Clone, Copy)]
struct Keyed {
    key: u32,
    class: u8,
}

/// Sweeps one thread: the ops whose class is at least `pass`.
fn sweep(
    ops: Option<&Runs<Formed>>,
    form_keys: &[Keyed],
    call_ts: &[i64],
    give: &mut Give<'_>,
    pass: u8,
) {
    // C4's key order: (ts, −end, file order), merged from the runs.
    let visits = ops
        .into_iter()
        .flat_map(Runs::in_key_order)
        .filter_map(|o| {
            let k = form_keys[o.form as usize];
            (k.class >= pass).then_some(Visit {
                pos: o.pos,
                ts: o.ts,
                end: end_of(o.ts, o.dur),
                scope: true,
                tag: Tag {
                    row: k.key,
                    ts: o.ts,
                },
            })
        });
    let by_start = call_ts.iter().enumerate().map(|(k, &t)| (k as u32, t));
    sweep_thread(visits, by_start, give);
}

fn f(x: u128) -> f64 {
    x as f64
}

/// calls × per-call / ns / 10³: T-units per second (FLOP/ns = GFLOP/s).
fn rate(calls: u64, per: u128, ns: i64) -> Option<f64> {
    (ns > 0).then(|| f(per) * calls as f64 / ns as f64 / 1e3)
}

fn json_of(texts: &Interner, t: u32) -> serde_json::Value {
    if t == NONE {
        return serde_json::Value::Null;
    }
    let s = texts.resolve(Sym(t));
    serde_json::from_str(s).unwrap_or_else(|_| serde_json::Value::String(s.to_string()))
}

fn text(texts: &Interner, t: u32) -> Option<&str> {
    (t != NONE).then(|| texts.resolve(Sym(t)))
}

/// Σ GPU ns of the activities given as (ns, owned by a launch), the
/// unowned part (C3: no runtime call with its correlation), and the
/// zero-length ones counted into `rc`.
fn gpu_totals(acts: impl Iterator<Item = (i64, bool)>, rc: &mut RoofCounts) -> RoofSummary {
    let mut summary = RoofSummary::default();
    for (dur, owned) in acts {
        summary.gpu_ns = summary.gpu_ns.saturating_add(dur);
        if dur == 0 {
            rc.zero_duration_activities += 1;
        }
        if !owned {
            summary.unlinked_activities += 1;
            summary.unlinked_gpu_ns = summary.unlinked_gpu_ns.saturating_add(dur);
        }
    }
    summary.gpu_linked_ns = summary.gpu_ns.saturating_sub(summary.unlinked_gpu_ns);
    summary
}

/// Each thread's runtime calls with their ids and ends, in file order
/// within a thread (the sweep sorts them stably by start).
fn calls_by_lane(calls: &Records<Linked>, lanes: usize) -> Vec<Vec<(i64, Call)>> {
    let mut by_lane: Vec<Vec<(i64, Call)>> = vec![Vec::new(); lanes];
    for (i, c) in calls.iter().enumerate() {
        if let Some(v) = by_lane.get_mut(c.lane as usize) {
            v.push((
                c.ts,
                Call {
                    id: i as u32,
                    end: end_of(c.ts, c.dur),
                },
            ));
        }
    }
    by_lane
}

/// The row keys of the host store's forms, in form order (the order the
/// rows were made in when `roofline` kept its own ops): a modelled op's
/// key holds its shapes, any other's its name alone.
fn keys_of(forms: &[Form], names: &Interner) -> (HashMap<Key, u32>, Vec<Key>, Vec<Keyed>) {
    let mut ids: HashMap<Key, u32> = HashMap::new();
    let mut keys: Vec<Key> = Vec::new();
    let mut classes: HashMap<Sym, u8> = HashMap::new();
    let form_keys = forms
        .iter()
        .map(|f| {
            let class = *classes
                .entry(f.name)
                .or_insert_with(|| class_of(names.resolve(f.name)));
            let k = if class > 0 {
                (f.name, f.dims, f.types, f.concrete)
            } else {
                (f.name, NONE, NONE, NONE)
            };
            let next = keys.len() as u32;
            let key = *ids.entry(k).or_insert(next);
            if key == next {
                keys.push(k);
            }
            Keyed { key, class }
        })
        .collect();
    (ids, keys, form_keys)
}

/// The figures of one trace from the host store.
pub(super) fn measure(
    spec: &RooflineSpec,
    store: &HostStore,
    devices: &[String],
    caps: &Captures,
) -> TraceRoofline {
    let links = &store.links;
    let (calls, acts) = (&links.calls, &links.acts);
    let mut names = links.names.clone();
    let mut texts = store.texts.clone();
    let mut counts = links.counts;
    let mut contexts = store.spans.clone();
    let (mut key_ids, mut keys, form_keys) = keys_of(&store.forms, &names);
    let mut rc = RoofCounts::default();
    // C3: owners by correlation, what each call launched.
    let corrs: Vec<Option<i128>> = calls.iter().map(|c| c.corr).collect();
    let (own, dup) = owners(|| corrs.iter().copied(), acts.iter());
    drop(corrs);
    counts.duplicate_runtime_correlation = dup;
    counts.unlinked_activities = own.unowned();
    let owned = acts
        .iter()
        .zip(own.iter())
        .map(|(a, o)| (a.dur, o.is_some()));
    let mut summary = gpu_totals(owned, &mut rc);
    let launched = launches(calls.iter().map(|c| c.name), acts.iter(), &own, &names);
    // The graph replays to their captures (issue 57), as `ops` matches
    // them, while the packed activities and their owners are here.
    let call_at: Vec<(u32, i64)> = calls.iter().map(|c| (c.lane, c.ts)).collect();
    let matched = match_replays(caps, acts, &own, &launched, &names, |k| {
        call_at
            .get(k as usize)
            .map_or(Place::Outside, |&(lane, ts)| contexts.place(lane, ts))
    });
    drop(call_at);
    let replayed = Replayed::of(matched, &own);
    drop(own);
    // An attributed replay's graph launch is claimed already: its
    // activities go to the captured ops, not to the launch's encloser.
    let mut claimed = vec![false; launched.len()];
    for g in &replayed.attributed {
        if let Some(c) = claimed.get_mut(g.call as usize) {
            *c = true;
        }
    }

    let by_lane = calls_by_lane(calls, links.lanes.len().max(store.threads.len()));
    let (mut got, mut no_op) = claim(
        by_lane,
        (&store.threads, &form_keys),
        &launched,
        claimed,
        keys.len(),
    );
    let mut book = Book {
        names: &mut names,
        texts: &mut texts,
        ids: &mut key_ids,
        keys: &mut keys,
        got: &mut got,
    };
    let ambiguous = book.replayed(caps, &replayed.attributed, &mut no_op);
    let graphs = replayed.summary;

    let device = Device::resolve(devices, spec.peak_tflops, spec.peak_tbps);
    rc.other_devices = devices
        .iter()
        .skip(1)
        .filter(|d| Some(*d) != devices.first())
        .count() as u64;
    let (rows, unmodelled) = model_rows(
        &keys,
        &got,
        (&no_op, &ambiguous),
        (&names, &texts),
        &device,
        &mut rc,
    );
    summary.modelled_gpu_ns = rows.iter().map(|r| r.gpu_ns).fold(0, i64::saturating_add);
    summary.unmodelled_gpu_ns = unmodelled
        .iter()
        .map(|r| r.gpu_ns)
        .fold(0, i64::saturating_add);
    summary.rows = rows.len() as u64;
    summary.gpu_graph_ns = graphs.gpu_graph_ns;
    rc.input = counts;
    TraceRoofline {
        path: String::new(),
        complete: true,
        error: None,
        device,
        summary,
        rows,
        unmodelled,
        counts: rc,
        graphs,
        ..TraceRoofline::default()
    }
}

/// The class of an op name: 0 no model, 1 a model, 2 a composite's.
fn class_of(name: &str) -> u8 {
    match models::category_of(name) {
        None => 0,
        Some(c) if c.composite() => 2,
        Some(_) => 1,
    }
}

/// The row keys and what each got, where the replayed activities are
/// added with keys made for the capture's ops.
struct Book<'a> {
    names: &'a mut Interner,
    texts: &'a mut Interner,
    ids: &'a mut HashMap<Key, u32>,
    keys: &'a mut Vec<Key>,
    got: &'a mut Vec<Got>,
}

impl Book<'_> {
    fn key(&mut self, k: Key) -> usize {
        let next = self.keys.len() as u32;
        let id = *self.ids.entry(k).or_insert(next);
        if id == next {
            self.keys.push(k);
            self.got.push(Got::default());
        }
        id as usize
    }

    /// A capture op's row key: its name and, for a modelled op, its
    /// shapes (the capture trace's texts).
    fn key_of(&mut self, caps: &Captures, op: u32, modelled: bool) -> usize {
        let o = caps.ops[op as usize];
        let name = self.names.intern(caps.resolve(o.name));
        let mut text = |t: Option<u32>| t.map_or(NONE, |t| self.texts.intern(caps.resolve(t)).0);
        let k = if modelled {
            (name, text(o.dims), text(o.types), text(o.concrete))
        } else {
            (name, NONE, NONE, NONE)
        };
        self.key(k)
    }

    /// The replayed activities given to the capture's ops by `measure`'s
    /// rule (the innermost enclosing composite, else the innermost
    /// modelled op, else the launcher, unmodelled), a call counted at its
    /// instance's first activity in each replay; the activities of
    /// ambiguous replays (the launchers known, not their shapes) returned
    /// by launcher name, unmodelled.
    fn replayed(
        &mut self,
        caps: &Captures,
        given: &[Given],
        no_op: &mut Got,
    ) -> Vec<(String, Got)> {
        let mut ambiguous: BTreeMap<String, Got> = BTreeMap::new();
        // (call, position, instance) of the previous activity.
        let mut prev: Option<(u32, u32, u32)> = None;
        for g in given {
            let Some(c) = caps
                .regions
                .get(g.region as usize)
                .and_then(|r| r.launches.get(g.pos as usize))
            else {
                continue;
            };
            let encloser = c.instance.map(|i| encloser(caps, i));
            let (got, inst) = match (g.exact, encloser) {
                (true, Some((i, class))) => {
                    let op = caps.instances[i as usize].op;
                    let k = self.key_of(caps, op, class > 0);
                    (&mut self.got[k], i)
                }
                (false, Some(_)) => {
                    let name = c
                        .launcher
                        .map_or(NO_OP, |o| caps.resolve(caps.ops[o as usize].name));
                    let inst = c.instance.unwrap_or(u32::MAX);
                    (ambiguous.entry(name.to_string()).or_default(), inst)
                }
                (_, None) => (&mut *no_op, u32::MAX),
            };
            let same = prev == Some((g.call, g.pos.wrapping_sub(1), inst));
            got.calls += u64::from(!same);
            got.kernels += 1;
            got.gpu = got.gpu.saturating_add(g.dur);
            got.graph = got.graph.saturating_add(g.dur);
            prev = Some((g.call, g.pos, inst));
        }
        ambiguous.into_iter().collect()
    }
}

/// The instance whose row a captured launch's activity goes to: the
/// innermost enclosing composite, else the innermost modelled op, else
/// the launcher itself (class 0); with its class.
fn encloser(caps: &Captures, launcher: u32) -> (u32, u8) {
    let mut modelled = None;
    let mut at = Some(launcher);
    // Enclosers are few (a dozen); a damaged parent chain cannot loop:
    // a parent is always made before its child.
    while let Some(i) = at {
        let Some(inst) = caps.instances.get(i as usize) else {
            break;
        };
        let class = class_of(caps.resolve(caps.ops[inst.op as usize].name));
        if class == 2 {
            return (i, 2);
        }
        if class == 1 && modelled.is_none() {
            modelled = Some(i);
        }
        at = inst.parent;
    }
    modelled.map_or((launcher, 0), |i| (i, 1))
}

/// Each row key's GPU work, claimed by the ops that launched it on their
/// thread (C4–C5): composites first (attention, convolution take their
/// helper kernels), then every modelled op, then every op; what no op
/// encloses goes to the pseudo-row.
fn claim(
    by_lane: Vec<Vec<(i64, Call)>>,
    (ops, form_keys): (&[Runs<Formed>], &[Keyed]),
    launched: &[Launch],
    mut claimed: Vec<bool>,
    n_keys: usize,
) -> (Vec<Got>, Got) {
    let mut got = vec![Got::default(); n_keys];
    let mut no_op = Got::default();
    for (lane, mut cs) in by_lane.into_iter().enumerate() {
        cs.sort_by_key(|c| c.0);
        let call_ts: Vec<i64> = cs.iter().map(|c| c.0).collect();
        let cs: Vec<Call> = cs.into_iter().map(|c| c.1).collect();
        let lane_ops = ops.get(lane);
        // Composites first, then every modelled op, then every op.
        for (pass, rest) in [(2u8, false), (1, false), (0, true)] {
            let mut give = Give {
                calls: &cs,
                launched,
                got: &mut got,
                claimed: &mut claimed,
                rest,
                no_op: &mut no_op,
            };
            sweep(lane_ops, form_keys, &call_ts, &mut give, pass);
        }
    }
    (got, no_op)
}

/// The modelled rows (GPU time descending) and the unmodelled ones, each
/// with why, counting the bad inputs met in `rc`.
fn model_rows(
    keys: &[Key],
    got: &[Got],
    (no_op, ambiguous): (&Got, &[(String, Got)]),
    (names, texts): (&Interner, &Interner),
    device: &Device,
    rc: &mut RoofCounts,
) -> (Vec<RoofRow>, Vec<UnmodelledRow>) {
    let mut rows = Vec::new();
    let mut unmodelled: BTreeMap<(String, String), UnmodelledRow> = BTreeMap::new();
    let mut miss = |name: &str, reason: &str, g: &Got| {
        let e = unmodelled
            .entry((name.to_string(), reason.to_string()))
            .or_insert_with(|| UnmodelledRow {
                name: name.to_string(),
                reason: reason.to_string(),
                calls: 0,
                kernels: 0,
                gpu_ns: 0,
            });
        e.calls += g.calls;
        e.kernels += g.kernels;
        e.gpu_ns = e.gpu_ns.saturating_add(g.gpu);
    };
    for (name, g) in ambiguous {
        miss(name, "graph replay ambiguous: shapes unknown", g);
    }
    for (k, g) in keys.iter().zip(got) {
        if g.kernels == 0 {
            continue;
        }
        let &(name_sym, d, t, c): &Key = k;
        let name = names.resolve(name_sym);
        if d == NONE && t == NONE && c == NONE && models::category_of(name).is_none() {
            miss(name, "no model", g);
            continue;
        }
        let parsed = OpArgs::parse(text(texts, d), text(texts, t), text(texts, c));
        let a = match parsed {
            Ok(a) => a,
            Err(ArgsError::NoShapes) => {
                rc.no_shapes += 1;
                miss(name, "no Input Dims (shapes not recorded)", g);
                continue;
            }
            Err(ArgsError::Malformed) => {
                rc.malformed_shapes += 1;
                miss(name, "malformed Input Dims / Input type", g);
                continue;
            }
        };
        let m = match models::model(name, &a) {
            Some(Ok(m)) => m,
            Some(Err(u)) => {
                match u {
                    Unfit::Dtype => rc.unknown_dtype += 1,
                    Unfit::Shape | Unfit::Overflow => rc.shape_mismatch += 1,
                }
                miss(name, u.as_str(), g);
                continue;
            }
            None => {
                miss(name, "no model", g);
                continue;
            }
        };
        if g.gpu == 0 {
            rc.zero_duration_rows += 1;
        }
        rows.push(row(name, texts, (d, t, c), m, g, device));
    }
    if no_op.kernels > 0 {
        miss(NO_OP, "no enclosing op", no_op);
    }
    rows.sort_by(|a: &RoofRow, b| b.gpu_ns.cmp(&a.gpu_ns).then_with(|| a.name.cmp(&b.name)));
    let mut unmodelled: Vec<UnmodelledRow> = unmodelled.into_values().collect();
    unmodelled.sort_by(|a, b| b.gpu_ns.cmp(&a.gpu_ns).then_with(|| a.name.cmp(&b.name)));
    (rows, unmodelled)
}

/// A row's figures against the device's roof.
fn row(
    name: &str,
    texts: &Interner,
    (d, t, c): (u32, u32, u32),
    m: models::Model,
    g: &Got,
    device: &Device,
) -> RoofRow {
    let intensity = (m.bytes > 0).then(|| f(m.flops) / f(m.bytes));
    let tflops = rate(g.calls, m.flops, g.gpu);
    let tbps = rate(g.calls, m.bytes, g.gpu);
    let peak = device.tflops(m.precision);
    // Ridge point: peak FLOP/s ÷ peak B/s (both in 10¹² units).
    let ridge = match (peak, device.peak_tbps) {
        (Some(p), Some(b)) if b > 0.0 => Some(p / b),
        _ => None,
    };
    let bound = match (intensity, ridge) {
        (Some(i), Some(r)) if i >= r => Some(Bound::Compute),
        (_, Some(_)) => Some(Bound::Memory),
        _ => None,
    };
    let pct = match bound {
        Some(Bound::Compute) => tflops
            .zip(peak)
            .filter(|p| p.1 > 0.0)
            .map(|(a, p)| a / p * 100.0),
        Some(Bound::Memory) => tbps
            .zip(device.peak_tbps)
            .filter(|p| p.1 > 0.0)
            .map(|(a, p)| a / p * 100.0),
        None => None,
    };
    RoofRow {
        name: name.to_string(),
        input_dims: json_of(texts, d),
        input_types: json_of(texts, t),
        concrete_inputs: json_of(texts, c),
        category: m.category,
        calls: g.calls,
        kernels: g.kernels,
        flops: m.flops,
        bytes: m.bytes,
        intensity,
        gpu_ns: g.gpu,
        gpu_graph_ns: g.graph,
        tflops_per_s: tflops,
        tb_per_s: tbps,
        precision: m.precision.map(|p| p.as_str().to_string()),
        peak_tflops: peak,
        ridge,
        bound,
        pct_of_peak: pct,
    }
}
