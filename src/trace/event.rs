//! The event model every input format produces: one trace event with its
//! times resolved to exact nanoseconds, and where it sat in the input.
//!
//! Nothing here knows JSON: the Kineto reader ([`super::kineto`]) fills
//! these from its text, and a second format would fill the same types.

use crate::model::{Lane, Ns, ThreadPart};
use std::borrow::Cow;

/// Where an event sits in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventPos {
    /// 0-based index in `traceEvents`.
    pub index: u64,
    /// Byte offset of its `{` in the decompressed JSON text.
    pub offset: u64,
}

/// The `args` torchtrace reads; other keys are not kept. (Kineto's names:
/// `External id`, `correlation`, `finished`, `grid`, `block`, `registers per
/// thread`, `shared memory`, `Input Dims`, `Input type`, `device`, `stream`.)
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Args<'a> {
    pub external_id: Option<i64>,
    /// Exact for any integer of at most 38 digits (issue 59: an id past
    /// u64, e.g. 2⁶⁴ + 5, is an id, not a missing one); ids are only
    /// compared, never computed with.
    pub correlation: Option<i128>,
    /// A GPU activity's `device` and `stream`: where it ran, which win
    /// over pid/tid (`docs/VIEWS.md` C2; [`Event::activity_lane`]).
    pub device: Option<i64>,
    pub stream: Option<i64>,
    pub finished: Option<bool>,
    /// A kernel's `grid` and `block` (three integers each; anything else
    /// is `None`), `registers per thread` and `shared memory` (bytes), as
    /// Kineto writes them (`export` reads them).
    pub grid: Option<[i64; 3]>,
    pub block: Option<[i64; 3]>,
    pub registers: Option<i64>,
    pub shared_memory: Option<i64>,
    /// A host op's `Input Dims` and `Input type` (written when the profiler
    /// records shapes): the value's JSON text exactly as written, borrowed
    /// from the event (`export`'s ops table); `null` is `None`.
    pub input_dims: Option<Cow<'a, str>>,
    pub input_type: Option<Cow<'a, str>>,
    /// A host op's `Input Strides`, as its JSON text (capture traces:
    /// `graphs`' shapes).
    pub input_strides: Option<Cow<'a, str>>,
    /// A runtime call's `kernel` (ROCm writes the launched kernel's name on
    /// `hipLaunchKernel`): the JSON text of the value, quotes included
    /// (`graphs` matches a capture's launches to a replay's kernels by it).
    pub kernel: Option<Cow<'a, str>>,
    /// Its `Concrete Inputs` (the scalars' values: `roofline`'s causal flag
    /// and reduced dims), the same way.
    pub concrete_inputs: Option<Cow<'a, str>>,
    /// A `[memory]` instant's allocator figures (`memory`, VIEWS.md M1).
    pub memory: MemoryArgs,
}

/// The args of a `[memory]` instant event (Kineto's `profile_memory`):
/// `Addr`, `Bytes` (> 0 an allocation, < 0 a free), `Total Allocated`,
/// `Total Reserved`, `Device Type` (0 CPU, 1 CUDA, …) and `Device Id`.
/// Integers only; anything else is absent.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MemoryArgs {
    /// Exact for any integer of at most 38 digits, as a correlation id.
    pub addr: Option<i128>,
    pub bytes: Option<i64>,
    pub total_allocated: Option<i64>,
    pub total_reserved: Option<i64>,
    pub device_type: Option<i64>,
    pub device_id: Option<i64>,
}

impl MemoryArgs {
    /// Whether any of them is present.
    pub fn any(&self) -> bool {
        *self != MemoryArgs::default()
    }
}

/// An event with its times resolved: what the analyses consume.
#[derive(Debug)]
pub struct Event<'a> {
    pub ph: Cow<'a, str>,
    pub cat: Cow<'a, str>,
    pub name: Cow<'a, str>,
    pub pid: ThreadPart,
    pub tid: ThreadPart,
    pub ts: Option<Ns>,
    /// `dur` as written; `None` when absent (instant, flow, metadata events).
    pub dur: Option<Ns>,
    pub args: Args<'a>,
}

impl<'a> Event<'a> {
    /// No field: empty strings, thread parts 0, no times, no args (what a
    /// reader fills in place, [`Event::reset`] between events).
    pub fn empty() -> Event<'a> {
        Event {
            ph: Cow::Borrowed(""),
            cat: Cow::Borrowed(""),
            name: Cow::Borrowed(""),
            pid: ThreadPart::Num(0),
            tid: ThreadPart::Num(0),
            ts: None,
            dur: None,
            args: Args::default(),
        }
    }

    /// Back to [`Event::empty`], field by field: a reader reuses one event
    /// from event to event rather than move ~340 B out of each parse. The
    /// fields are named without `..`, so a field added to [`Event`] or
    /// [`Args`] must be reset here too (the compiler says so).
    pub fn reset(&mut self) {
        let Event {
            ph,
            cat,
            name,
            pid,
            tid,
            ts,
            dur,
            args,
        } = self;
        *ph = Cow::Borrowed("");
        *cat = Cow::Borrowed("");
        *name = Cow::Borrowed("");
        *pid = ThreadPart::Num(0);
        *tid = ThreadPart::Num(0);
        *ts = None;
        *dur = None;
        let Args {
            external_id,
            correlation,
            finished,
            grid,
            block,
            registers,
            shared_memory,
            input_dims,
            input_type,
            input_strides,
            kernel,
            concrete_inputs,
            device,
            stream,
            memory,
        } = args;
        *external_id = None;
        *correlation = None;
        *device = None;
        *stream = None;
        *finished = None;
        *grid = None;
        *block = None;
        *registers = None;
        *shared_memory = None;
        *input_dims = None;
        *input_type = None;
        *input_strides = None;
        *kernel = None;
        *concrete_inputs = None;
        *memory = MemoryArgs::default();
    }
}

impl Event<'_> {
    /// A complete event (`ph: X`) with a start time.
    pub fn is_complete(&self) -> bool {
        self.ph == "X" && self.ts.is_some()
    }

    pub fn lane(&self) -> Lane {
        Lane {
            pid: self.pid.clone(),
            tid: self.tid.clone(),
        }
    }

    /// A GPU activity's (device, stream) as C2 says: `args.device` (else
    /// pid) and `args.stream` (else tid). Kineto writes both equal to
    /// pid/tid; an event whose args differ is grouped by its args
    /// ([`Event::lane_differs`] tells, for the note).
    pub fn activity_lane(&self) -> Lane {
        Lane {
            pid: self
                .args
                .device
                .map_or_else(|| self.pid.clone(), ThreadPart::Num),
            tid: self
                .args
                .stream
                .map_or_else(|| self.tid.clone(), ThreadPart::Num),
        }
    }

    /// Whether `args.device`/`args.stream` name another device or stream
    /// than pid/tid (C2: the args win; counted for a note).
    pub fn lane_differs(&self) -> bool {
        let differs =
            |arg: Option<i64>, part: &ThreadPart| arg.is_some_and(|a| *part != ThreadPart::Num(a));
        differs(self.args.device, &self.pid) || differs(self.args.stream, &self.tid)
    }

    /// `dur`, or zero when absent. Kineto clamps durations at 0; a negative
    /// one from another writer is clamped the same way.
    pub fn dur_or_zero(&self) -> Ns {
        Ns(self.dur.map_or(0, |d| d.0.max(0)))
    }
}

/// Kineto's JSON form of an event, under its original path.
pub use super::kineto::event::{RawEvent, Text};

#[cfg(test)]
mod tests {
    use super::*;

    /// A reset event is the empty one, whatever it held (owned strings,
    /// named threads, every arg).
    #[test]
    fn a_reset_event_is_empty() {
        let mut ev = Event {
            ph: Cow::Owned("X".into()),
            cat: Cow::Borrowed("kernel"),
            name: Cow::Owned("k".into()),
            pid: ThreadPart::Str("Spans".into()),
            tid: ThreadPart::Num(7),
            ts: Some(Ns(1)),
            dur: Some(Ns(2)),
            args: Args {
                external_id: Some(1),
                correlation: Some(2),
                finished: Some(true),
                grid: Some([1, 2, 3]),
                block: Some([4, 5, 6]),
                registers: Some(32),
                shared_memory: Some(0),
                input_dims: Some(Cow::Borrowed("[[1]]")),
                input_type: Some(Cow::Owned("[\"float\"]".into())),
                input_strides: Some(Cow::Borrowed("[[1]]")),
                kernel: Some(Cow::Borrowed("\"k\"")),
                concrete_inputs: Some(Cow::Borrowed("[\"\"]")),
                device: Some(0),
                stream: Some(7),
                memory: MemoryArgs {
                    addr: Some(1),
                    bytes: Some(-2),
                    total_allocated: Some(3),
                    total_reserved: Some(4),
                    device_type: Some(1),
                    device_id: Some(0),
                },
            },
        };
        ev.reset();
        assert_eq!(format!("{ev:?}"), format!("{:?}", Event::empty()));
    }
}
