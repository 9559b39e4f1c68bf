//! One pass, many analyses: the [`Analysis`] trait and the driver that
//! feeds every analysis of a [`Plan`] from a single read of a trace.
//!
//! ```text
//!  source ─ trace::read_* (union of the prefilters) ─┬─ Steps (CPU user annotations, always)
//!                                                    ├─ analysis 1 .push(event, pos)
//!                                                    └─ analysis 2 .push(event, pos)
//!  end of read ─ Contexts::select (once) ─ analysis 1 .finish ─ analysis 2 .finish ─ TraceResult
//! ```
//!
//! Every subcommand and `batch` go through [`analyze_path`] or
//! [`analyze_reader`]: this is the one place outside `trace/` where traces
//! are read. A new analysis is a new module implementing [`Analysis`] and
//! [`Spec`], a field in [`TraceResult`], and one `.with(…)` in the plan.

use crate::analyses::hierarchy::TraceHierarchy;
use crate::analyses::kernels::{ledger::Ledger, TraceKernels};
use crate::analyses::pair::TracePairs;
use crate::contexts::{annotation_prefilter, Contexts, Selector, Steps};
use crate::trace::{self, Event, EventPos, Meta, Prefilter, ReadError, TraceError};
use std::io::Read;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// One analysis of one trace: it names the events it needs, receives them
/// in file order, and finishes into its part of the [`TraceResult`].
pub trait Analysis: Send {
    /// The raw-bytes test for the events [`Analysis::push`] needs; it must
    /// never reject one of them.
    fn prefilter(&self) -> Prefilter;
    /// One parsed event that some analysis of the plan admitted.
    fn push(&mut self, ev: &Event<'_>, at: EventPos);
    /// Turns what was kept into figures, written into `out`. Analyses
    /// finish in plan order, so one may read an earlier one's result.
    fn finish(self: Box<Self>, trace: &Finished<'_>, out: &mut TraceResult);
}

/// Makes a fresh [`Analysis`] for each trace (options live here).
pub trait Spec: Send + Sync {
    fn start(&self) -> Box<dyn Analysis>;
}

/// What every analysis may consult when it finishes.
pub struct Finished<'a> {
    /// The label the trace is reported under.
    pub path: &'a str,
    pub steps: &'a Steps,
    pub contexts: &'a Contexts,
    pub meta: &'a Meta,
    /// Elements of `traceEvents` read (intact ones, on a read error).
    pub events: u64,
    /// The read error, if the trace could not be read to its end.
    pub error: Option<&'a ReadError>,
}

impl Finished<'_> {
    /// Whether the trace was read to its end.
    pub fn complete(&self) -> bool {
        self.error.is_none()
    }

    /// The read error as text, for results' `error` fields.
    pub fn error_text(&self) -> Option<String> {
        self.error.map(ToString::to_string)
    }
}

/// The analyses to run over each trace, and how step contexts are chosen.
pub struct Plan {
    pub selector: Selector,
    specs: Vec<Box<dyn Spec>>,
}

impl Plan {
    pub fn new(selector: Selector) -> Plan {
        Plan {
            selector,
            specs: Vec::new(),
        }
    }

    /// Adds an analysis; it finishes after those added before it.
    pub fn with(mut self, spec: impl Spec + 'static) -> Plan {
        self.specs.push(Box::new(spec));
        self
    }

    fn start(&self) -> Vec<Box<dyn Analysis>> {
        self.specs.iter().map(|s| s.start()).collect()
    }
}

/// Everything the analyses of a plan found in one trace.
#[derive(Debug)]
pub struct TraceResult {
    pub path: String,
    pub meta: Meta,
    pub events: u64,
    /// The read error, when the trace could not be read to its end (the
    /// figures then cover the events before it).
    pub error: Option<TraceError>,
    /// The selected step contexts.
    pub contexts: Contexts,
    pub pairs: Option<TracePairs>,
    pub hierarchy: Option<TraceHierarchy>,
    pub kernels: Option<TraceKernels>,
    /// The indexed launch calls and GPU activities, when the plan has the
    /// kernels analysis: later analyses query it for their own ranges.
    pub ledger: Option<Ledger>,
}

impl TraceResult {
    /// The trace could not be read at all: no event before the error.
    pub fn unreadable(&self) -> bool {
        self.events == 0 && self.error.is_some()
    }
}

/// Reads a trace file (or `-` for stdin) once and runs every analysis of
/// `plan` over it. `progress` counts the bytes read from the file.
pub fn analyze_path(path: &Path, progress: Arc<AtomicU64>, plan: &Plan) -> TraceResult {
    analyze_file(&path.display().to_string(), path, progress, plan)
}

/// [`analyze_path`], reporting the trace under `label` (batch rows name
/// files relative to their input).
pub fn analyze_file(
    label: &str,
    path: &Path,
    progress: Arc<AtomicU64>,
    plan: &Plan,
) -> TraceResult {
    drive(label, plan, |filter, meta, on_event| {
        trace::read_path(path, filter, progress, meta, on_event).map_err(|e| e.kind)
    })
}

/// Reads a trace from any byte source (an archive member, say), labelled
/// `label`, and runs every analysis of `plan` over it.
pub fn analyze_reader<R: Read>(label: &str, src: R, plan: &Plan) -> TraceResult {
    drive(label, plan, |filter, meta, on_event| {
        trace::read_stream(src, filter, meta, on_event)
    })
}

type OnEvent<'a> = dyn FnMut(&Event<'_>, EventPos) + 'a;

/// The driver: one read with the union of the prefilters, then selection
/// and the analyses' finishes in plan order.
fn drive<F>(label: &str, plan: &Plan, read: F) -> TraceResult
where
    F: FnOnce(&Prefilter, &mut Meta, &mut OnEvent<'_>) -> Result<trace::ReadStats, ReadError>,
{
    let mut analyses = plan.start();
    let filter = analyses
        .iter()
        .fold(annotation_prefilter(), |f, a| f.union(&a.prefilter()));
    let mut steps = Steps::default();
    let mut meta = Meta::default();
    let read = read(&filter, &mut meta, &mut |ev, at| {
        steps.push(ev, at);
        for a in analyses.iter_mut() {
            a.push(ev, at);
        }
    });
    let (events, error) = match read {
        Ok(st) => (st.events, None),
        Err(e) => (e.events_read(), Some(e)),
    };
    let contexts = Contexts::select(label, &steps, &plan.selector);
    let mut out = TraceResult {
        path: label.to_string(),
        meta: meta.clone(),
        events,
        error: None,
        contexts: contexts.clone(),
        pairs: None,
        hierarchy: None,
        kernels: None,
        ledger: None,
    };
    let finished = Finished {
        path: label,
        steps: &steps,
        contexts: &contexts,
        meta: &meta,
        events,
        error: error.as_ref(),
    };
    for a in analyses {
        a.finish(&finished, &mut out);
    }
    out.error = error.map(|kind| TraceError {
        path: label.to_string(),
        kind,
    });
    out
}
