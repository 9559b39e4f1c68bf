//! `torchtrace idle`: why the GPU waits — idle breakdown, launch queue,
//! comm/compute overlap, per device, stream and step.

use super::{Idle, IdleSpec};
use crate::cli_kit::{PerTraceArgs, TracesArg};
use clap::Args;

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # Why the GPU waits: idle by cause, queue, overlap\n  torchtrace idle sample_traces/text_ar/dp0*.gz\n\n  # One row per step, AR vs MTP per token\n  torchtrace idle --per-step sample_traces/text_ar/dp0*.gz sample_traces/text_mtp/dp0*.gz\n\n  # The TP=2 rank: the all-reduce as comm, its overlap\n  torchtrace idle tests/data/tp2/ar_plain/dp0*rank0*.gz";

/// Explain each GPU's idle time: per device the timeline (compute, comm,
/// memory, comm/compute overlap), per stream the gaps split into host wait,
/// kernel wait and other, the launch queue, and the same per step; with two
/// traces (AR first, then MTP) compare them per token.
///
/// Definitions (docs/VIEWS.md C1–C8, I1–I6; integer ns, no rounding):
///   activity        a kernel, memcpy or memset event (cuda_sync and
///                   gpu_user_annotation are not); device = args.device
///                   (else pid), stream = args.stream (else tid), C2
///   launch link     the runtime call with the same args.correlation (the
///                   first in file order); none: unlinked
///   classes (C6)    memory = memcpy/memset and kernels named Memcpy*/Memset*;
///                   comm = kernels matching (case-insensitive)
///                   ^(nccl|rccl)|cross_device_reduce|all_?reduce|all_?gather|
///                   reduce_?scatter|all_?to_?all; compute = every other kernel
///   device (I4)     span = last end − first start; busy = |∪ activities|;
///                   idle = span − busy; compute/comm/memory = |∪ of the class|;
///                   non-compute = span − compute − idle; overlap =
///                   |∪comm ∩ ∪compute|, overlap % = overlap / comm (null
///                   without comm)
///   gap (I2)        per stream, activities by (ts, end, file index):
///                   gap_k = max(0, ts_k − max_{j<k} end_j); Σ gaps = span − busy
///   host wait (I3)  a gap > 0 whose activity's runtime call started after the
///                   stream went idle (call.ts > max_{j<k} end_j); graph
///                   kernels use their cudaGraphLaunch; unlinked: never
///   kernel wait     not host wait and gap < --kernel-wait-ns (30 000 ns)
///   other           the rest
///   queue (I5)      in flight: +1 at the call's start per linked activity on
///                   the stream, −1 at its end; pending: −1 at its start. A
///                   step function (changes at one instant together), over
///                   [first change, last change): max, min, ∫ (ns), mean =
///                   ∫ / window, time at 0, time at ≥ 1024
///   step (I6, C8)   vLLM step annotations (else ProfilerStep#N); window
///                   [S_i.ts, S_{i+1}.ts) of the next step on the same thread
///                   (the last open); an activity belongs to the step whose
///                   window holds its runtime call's start on that thread;
///                   before the first step: pre; unlinked or from other
///                   threads: unattributed. A step's idle = Σ gaps before its
///                   activities; rows + pre + unattributed = the streams' sums
///   per token       whole-trace sums / completion tokens (busy: Σ devices)
///
/// JSON (-f json) always holds every step row; the table shows them with
/// --per-step.
///
/// Exit status: 0 ok; 1 when a trace has no GPU activity; 2 on unreadable input.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, after_help = EXAMPLES)]
pub struct IdleArgs {
    /// Also list every step in the table.
    #[arg(long)]
    pub per_step: bool,
    #[command(flatten)]
    pub options: IdleSpec,
}

impl PerTraceArgs for IdleArgs {
    type Command = Idle;
    const TRACES: TracesArg = TracesArg {
        help: "Traces: one, or two (baseline AR, then candidate MTP: compared per token), or more (side by side, e.g. the ranks of a run). `-` reads stdin",
        value_names: &["TRACE"],
        exactly: None,
    };
    const CONTEXTS: bool = false;

    fn options(&self) -> &IdleSpec {
        &self.options
    }

    fn detail(&self) -> bool {
        self.per_step
    }
}
