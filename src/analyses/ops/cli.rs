//! `torchtrace ops`: which CPU operator launched which GPU work, and is
//! the run launch-bound (docs/VIEWS.md C1–C7, O1–O10).

use super::{Ops, OpsSpec};
use crate::cli_kit::{PerTraceArgs, TracesArg};
use clap::Args;

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # Who launched the GPU work, and is the run launch-bound\n  torchtrace ops --top 5 sample_traces/text_ar/dp0*.gz\n\n  # AR vs MTP, top-level ops per token\n  torchtrace ops sample_traces/text_ar/dp0*.gz sample_traces/text_mtp/dp0*.gz\n\n  # Every op row as JSON\n  torchtrace ops -f json TRACE > ops.json";

/// Which CPU operator launched which GPU work, and is the run launch-bound.
///
/// For every host op name (cat + exact name, python frames included): calls,
/// CPU and host time, the launches it made itself and the GPU work they ran,
/// inclusive and top-level GPU time, launch latency and queue delay; a
/// summary with launch statistics, host busy time per GPU ns, GPU idle and
/// the share of it spent waiting for the host, and a verdict. With two traces
/// (AR, then MTP): their top-level ops side by side, per token when known.
///
/// Definitions (integer ns from the decimal text; VIEWS.md rule ids):
///   host op         cpu_op, user_annotation, python_function, Operator (C2)
///   launch          a runtime call (cuda_runtime/cuda_driver/Runtime) owning
///                   ≥ 1 kernel/memcpy/memset by args.correlation; the first
///                   call in file order owns a correlation (C3). A graph launch
///                   (name matches GraphLaunch) owns all its replay's kernels.
///   encloses        same thread, X.ts ≤ Y.ts and Y.end ≤ X.end; between ops,
///                   X first in the order (ts, −end, file index) (C4). Not a
///                   stack: improperly nested ranges are fine.
///   self (O2)       the launcher of a call = its innermost enclosing op (latest
///                   start, then earliest end, then later in file); it gets
///                   every activity of the launch.
///   total (O3)      everything launched inside any instance of the name, once
///                   per name.
///   top (O4)        the outermost enclosing cpu_op/user_annotation, else the
///                   launcher: Σ gpu_self = Σ gpu_top = GPU linked time.
///   cpu_total       Σ dur of instances not inside another of the same name;
///   cpu_self        Σ (dur − |∪ children|) (child ops and launched calls);
///   sync            Σ dur of sync-like calls inside it (Synchronize, a
///                   synchronous memcpy API, a pageable memcpy) (C7);
///   host            cpu_total − sync (O5).
///   per launch      latency = first activity start − call start; queue delay
///                   = first activity start − call end (not clipped);
///                   short GPU: cpu ≤ 50 µs and gpu < cpu; long runtime: cpu >
///                   50 µs; long launch delay: queue delay > 100 µs (O6).
///   launch_bound    gpu_total < host, per op (O8).
///   host busy       Σ over launching threads of (last end − first start of its
///                   ops and calls) − the union of their sync-like calls.
///   GPU idle        per stream, gaps to the running max end; host wait = gaps
///                   whose activity's call started after that end (I2–I3).
///   verdict         launch-bound iff host busy > GPU linked time and host wait
///                   > half of the GPU idle time (O9).
///
/// Exit status: 0 ok; 1 when a trace has no GPU work at all; 2 on unreadable
/// input.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, after_help = EXAMPLES)]
pub struct OpsArgs {
    #[command(flatten)]
    pub options: OpsSpec,
}

impl PerTraceArgs for OpsArgs {
    type Command = Ops;
    const CAPTURES: bool = true;
    const TRACES: TracesArg = TracesArg {
        help: "Traces: one, or two (baseline AR, then candidate MTP: compared), or more (side by side). `-` reads stdin",
        value_names: &["TRACE"],
        exactly: None,
    };
    const CONTEXTS: bool = false;

    fn options(&self) -> &OpsSpec {
        &self.options
    }
}
