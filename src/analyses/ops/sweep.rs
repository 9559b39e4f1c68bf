//! The threads' sweeps (C4–C5): per thread one pass over its ops and its
//! runtime calls giving parents, maximal-of-name instances (O5), launchers
//! (O2), top-level ops (O4), CPU total/self time (O5), first-launch delays
//! (O7) and O3's inclusive sums (answered on a thread of their own for a
//! big thread).

use super::inclusive::{Instance, Instances, Online, Point, Sums, WEIGHTS};
use super::measure::{limits, Call};
use super::rowset::RowSet;
use super::tally::{attribute_call, Attributed};
use crate::hostops::contain::{Sweep, Tag, Visit};
use crate::hostops::launch::{end_of, Launch};
use crate::hostops::store::Formed;
use std::sync::mpsc::{Receiver, SyncSender};

/// What the threads' sweeps give: per row its inclusive sums (O3, O5's
/// sync: launches, activities, GPU ns, sync ns), per thread its ops'
/// [first start, last end) (O9's host window).
pub(super) struct Swept {
    pub(super) sums: Vec<[i128; WEIGHTS]>,
    pub(super) op_spans: Vec<Option<(i64, i64)>>,
}

/// One thread's host ops as the sweep reads them: how many, and the ops
/// in C4's key order (the host store's runs merged, freed as they are
/// read when the store is consumed).
pub(super) struct ThreadOps<'a> {
    pub(super) len: usize,
    pub(super) ops: Box<dyn Iterator<Item = Formed> + Send + 'a>,
}

impl ThreadOps<'_> {
    /// A thread without ops.
    pub(super) fn empty() -> Self {
        ThreadOps {
            len: 0,
            ops: Box::new(std::iter::empty()),
        }
    }
}

/// One thread's sweep state for [`sweep_threads`].
struct ThreadRows<'a> {
    calls: &'a [Call],
    launched: &'a [Launch],
    rows: &'a mut RowSet,
    /// Per row: the latest end of its instances on this thread so far
    /// (`i64::MIN`: none), and the rows met on this thread.
    far: &'a mut Vec<i64>,
    touched: Vec<u32>,
    /// Where the maximal instances go for O3's sums.
    incl: Incl<'a>,
    /// What the calls add up to, as their launchers are found.
    attributed: &'a mut Attributed,
}

/// Where a thread's maximal instances go for O3's sums (the same calls of
/// [`Instances`] in the same order either way).
enum Incl<'a> {
    /// Answered as they are found.
    Here {
        instances: Instances<'a>,
        sums: &'a mut Vec<Sums>,
    },
    /// Sent in blocks to a thread of its own ([`answering`]): for a big
    /// thread, the answers were a third of the sweep's time (`perf`).
    There {
        block: Vec<Instance>,
        tx: SyncSender<Vec<Instance>>,
        back: Receiver<Vec<Instance>>,
    },
}

/// Maximal instances sent at once to the answering thread.
const INSTANCE_BLOCK: usize = 8192;

impl Incl<'_> {
    fn add(&mut self, m: Instance) {
        match self {
            Incl::Here { instances, sums } => instances.add(sums, m),
            Incl::There { block, tx, back } => {
                block.push(m);
                if block.len() >= INSTANCE_BLOCK {
                    Incl::send(block, tx, back);
                }
            }
        }
    }

    fn send(
        block: &mut Vec<Instance>,
        tx: &SyncSender<Vec<Instance>>,
        back: &Receiver<Vec<Instance>>,
    ) {
        let next = back
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(INSTANCE_BLOCK));
        // A send fails only once the answering thread has panicked, which
        // its join reports.
        let _ = tx.send(std::mem::replace(block, next));
    }

    /// The thread's end: the last terms where they are answered here; the
    /// last block sent and the channel closed where they are not.
    fn finish(self) {
        match self {
            Incl::Here { instances, sums } => instances.finish(sums),
            Incl::There {
                mut block,
                tx,
                back,
            } => {
                if !block.is_empty() {
                    Incl::send(&mut block, &tx, &back);
                }
            }
        }
    }
}

/// The thread's calls that weigh in O3's sums, in start order (`cs`).
fn weighed_of(cs: &[u32], point: &dyn Fn(u32) -> Point) -> Vec<u32> {
    cs.iter()
        .copied()
        .filter(|&ci| point(ci).w != [0; WEIGHTS])
        .collect()
}

/// A thread answering one big thread's maximal instances ([`Incl::There`]):
/// it builds the thread's [`Online`] from its calls (`cs`, in start order),
/// answers the blocks as they come, and gives back its sums; `None` when
/// it cannot start.
#[allow(clippy::type_complexity)]
fn answering<'scope, 'env>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    cs: &'env [u32],
    calls: &'env [Call],
    launched: &'env [Launch],
) -> Option<(Incl<'env>, std::thread::ScopedJoinHandle<'scope, Vec<Sums>>)> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Instance>>(2);
    let (back_tx, back) = std::sync::mpsc::sync_channel::<Vec<Instance>>(2);
    let handle = std::thread::Builder::new()
        .name("torchtrace-incl".into())
        .spawn_scoped(s, move || {
            let point = |ci: u32| point_of(ci, calls, launched);
            let weighed = weighed_of(cs, &point);
            let (mut reach, mut sums) = (Vec::new(), Vec::new());
            let mut instances = Instances::new(Online::new(&weighed, &point), &mut reach);
            for mut block in rx {
                for &m in &block {
                    instances.add(&mut sums, m);
                }
                block.clear();
                let _ = back_tx.try_send(block);
            }
            instances.finish(&mut sums);
            sums
        })
        .ok()?;
    let incl = Incl::There {
        block: Vec::with_capacity(INSTANCE_BLOCK),
        tx,
        back,
    };
    Some((incl, handle))
}

impl ThreadRows<'_> {
    /// O5's self CPU time: the row of `parent` loses what its child adds to
    /// the union of its children (improperly nested siblings may overlap;
    /// the sweep keeps each open op's union, [`Sweep::cover_parent`]).
    fn cut(&mut self, parent_row: u32, cut: i64) {
        let r = &mut self.rows.rows[parent_row as usize].row;
        r.cpu_self_ns = r.cpu_self_ns.saturating_sub(cut);
    }
}

impl crate::hostops::contain::Visitor for ThreadRows<'_> {
    fn op(&mut self, at: &Visit, parent: Option<(u32, Tag)>, sweep: &mut Sweep) {
        let (end, row) = (at.end, at.tag.row);
        let dur = end - at.ts;
        let r = &mut self.rows.rows[row as usize].row;
        r.calls += 1;
        r.cpu_self_ns = r.cpu_self_ns.saturating_add(dur);
        if self.far.len() <= row as usize {
            self.far.resize(row as usize + 1, i64::MIN);
        }
        let far = &mut self.far[row as usize];
        if *far == i64::MIN {
            self.touched.push(row);
        }
        if *far < end {
            // Not enclosed by an earlier instance of its name.
            *far = end;
            r.cpu_total_ns = r.cpu_total_ns.saturating_add(dur);
            self.incl.add(Instance {
                row,
                ts: at.ts,
                end,
            });
        }
        if let Some((_, p)) = parent {
            let cut = sweep.cover_parent(at.ts, end);
            self.cut(p.row, cut);
        }
    }

    fn call(&mut self, ci: u32, sweep: &mut Sweep) {
        let c = &self.calls[ci as usize];
        let end = end_of(c.ts, c.dur);
        let inner = sweep.innermost_tagged(end).map(|(_, t)| t.row);
        let top = sweep.outermost_at(end).map(|(_, r)| r).or(inner);
        let launch = &self.launched[ci as usize];
        attribute_call(c, launch, inner, top, self.rows, self.attributed);
        if let Some(l) = inner {
            let cut = sweep.cover_innermost(c.ts, end);
            self.cut(l, cut);
        }
        // O7's first-launch delay: an instance's earliest self launch (the
        // calls come in start order) less the instance's start.
        if self.launched[ci as usize].first().is_some() {
            if let Some(t) = sweep.first_launch(end) {
                let r = &mut self.rows.rows[t.row as usize].row;
                r.first_launch_delay_ns_sum =
                    r.first_launch_delay_ns_sum.saturating_add(c.ts - t.ts);
                r.first_launch_delay_n += 1;
            }
        }
    }
}

/// Per thread, one sweep (contain.rs) over its ops (merged from its runs
/// in C4's key order, each thread freed after its sweep) and its runtime
/// calls (sorted here by start): parents (C5), maximal-of-name instances
/// (O5), launchers (O2), top-level ops (O4), calls, CPU total/self time
/// (O5) and first-launch delays (O7) into the rows.
pub(super) fn sweep_threads(
    threads: Vec<ThreadOps<'_>>,
    form_rows: &[u32],
    calls: &[Call],
    launched: &[Launch],
    calls_by_lane: &mut [Vec<u32>],
    rows: &mut RowSet,
) -> (Swept, Attributed) {
    // One flag per row (hundreds), copied out of the rows the sweep writes.
    let scope = rows.scope.clone();
    let lanes = calls_by_lane.len();
    let mut out = Swept {
        sums: Vec::new(),
        op_spans: vec![None; lanes],
    };
    let (mut far, mut reach): (Vec<i64>, Vec<u32>) = (Vec::new(), Vec::new());
    let mut attributed = Attributed {
        by_kind: Default::default(),
        without_op: 0,
        graph_kernels: 0,
    };
    for (lane, (cs, thread)) in calls_by_lane.iter_mut().zip(threads).enumerate() {
        cs.sort_by_key(|&ci| calls[ci as usize].ts);
        let cs: &[u32] = cs;
        let mut span: Option<(i64, i64)> = None;
        let big = thread.len >= limits().big_min;
        let slot = std::sync::Mutex::new(Some(thread.ops));
        let point = |ci: u32| point_of(ci, calls, launched);
        let remote = std::thread::scope(|s| {
            // A big thread's O3 answers on a thread of their own; inline
            // otherwise, or when that thread cannot start.
            let remote = big.then(|| answering(s, cs, calls, launched)).flatten();
            let weighed = match remote {
                Some(_) => Vec::new(),
                None => weighed_of(cs, &point),
            };
            let (incl, answers) = match remote {
                Some((i, h)) => (i, Some(h)),
                None => {
                    let online = Online::new(&weighed, &point);
                    let instances = Instances::new(online, &mut reach);
                    let sums = &mut out.sums;
                    (Incl::Here { instances, sums }, None)
                }
            };
            let mut t = ThreadRows {
                calls,
                launched,
                rows: &mut *rows,
                far: &mut far,
                touched: Vec::new(),
                incl,
                attributed: &mut attributed,
            };
            let visits = crate::hostops::runs::prefetched(s, &slot, big)
                .enumerate()
                .map(|(q, o)| {
                    let row = form_rows[o.form as usize];
                    let end = end_of(o.ts, o.dur);
                    // Key order: the first op starts first; the last end is a max.
                    span = Some(span.map_or((o.ts, end), |(a, b)| (a, b.max(end))));
                    Visit {
                        pos: q as u32,
                        ts: o.ts,
                        end,
                        scope: scope[row as usize],
                        tag: Tag { row, ts: o.ts },
                    }
                });
            let by_start = cs.iter().map(|&ci| (ci, calls[ci as usize].ts));
            crate::hostops::contain::sweep_thread(visits, by_start, &mut t);
            let ThreadRows {
                far, touched, incl, ..
            } = t;
            for row in touched {
                far[row as usize] = i64::MIN;
            }
            incl.finish();
            answers.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        });
        out.op_spans[lane] = span;
        // A big thread's sums, answered on their own thread: exact sums, so
        // added in any order.
        for (row, got) in remote.unwrap_or_default().into_iter().enumerate() {
            if out.sums.len() <= row {
                out.sums.resize(row + 1, [0; WEIGHTS]);
            }
            for (x, y) in out.sums[row].iter_mut().zip(got) {
                *x += y;
            }
        }
    }
    (out, attributed)
}

/// A runtime call as the weights it adds to each name holding it (O3,
/// O5's sync); a call that launches nothing and does not block adds
/// nothing, and the sweep leaves it out.
fn point_of(ci: u32, calls: &[Call], launched: &[Launch]) -> Point {
    let (c, l) = (&calls[ci as usize], &launched[ci as usize]);
    Point {
        ts: c.ts,
        end: end_of(c.ts, c.dur),
        w: [
            i64::from(l.first().is_some()),
            i64::from(l.acts),
            l.gpu,
            if l.sync { c.dur } else { 0 },
        ],
    }
}
