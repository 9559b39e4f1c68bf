//! `torchtrace diff BASELINE CANDIDATE`: what changed between two runs,
//! kernel by kernel and per generated token.

use super::{Diff, DiffSpec};
use crate::cli_kit::{PerTraceArgs, TracesArg};
use clap::Args;

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # What changed per token, AR → MTP, by kernel family\n  torchtrace diff sample_traces/text_ar/dp0*.gz sample_traces/text_mtp/dp0*.gz\n\n  # The whole trace, not only the step contexts\n  torchtrace diff --scope trace sample_traces/text_ar/dp0*.gz sample_traces/text_mtp/dp0*.gz";

/// What changed between two runs (baseline first, e.g. AR; candidate second,
/// e.g. MTP), kernel by kernel and per generated token.
///
/// Scope (--scope): steps (default) = the GPU activities launched from the
/// selected step contexts (the decode steps by default), attributed by launch
/// correlation exactly as `kernels` does (each launch call to the innermost
/// selected context holding it; CUDA/HIP graph replays included); trace =
/// every GPU activity of the trace (kernel, memcpy, memset with an integer
/// args.correlation). The output says which.
///
/// Per kernel name: activities grouped by exact name (memcpys and memsets by
/// kind and name, e.g. `Memcpy DtoD (Device -> Device)`). time = Σ activity
/// durations (exact integer ns). Per side: calls per token = calls / N and
/// time per token = time / N, with N = completion tokens; when a side's tokens
/// are unknown, N = selected contexts of each side instead (said so: per
/// context). Δ = candidate − baseline per token; ratio = candidate / baseline
/// time per token; share = time / the side's Σ time. status: common (both
/// sides), added (candidate only), removed (baseline only). Rows by |Δ time
/// per token| descending; the table shows --top rows and sums the rest (JSON
/// lists every name).
///
/// Families: each name gets the family of the first matching pattern
/// (case-insensitive regex, searched anywhere); --family NAME=REGEX patterns
/// come first, in the order given, then communication (nccl, rccl,
/// cross_device_reduce, all_reduce, allgather, …), attention, GEMM/GEMV,
/// sort/top-k, normalisation, gather/scatter/index, reduction, copy/fill,
/// elementwise, other (the table: docs/COMMANDS.md, docs/DEFINITIONS.md; JSON
/// family_table). Families sum to the totals exactly.
///
/// Graphs: replays = graph launch calls (cudaGraphLaunch, cuGraphLaunch,
/// hipGraphLaunch) in scope owning ≥ 1 activity; a replay's signature = the
/// names of its activities ordered by start (then end, name); activities per
/// replay = Σ activities of the replays / replays; signatures present on one
/// side only are listed.
///
/// Per side: kernels = kernel activities in scope (memcpys and memsets not
/// counted), kernels per token = kernels / N; activities = every activity in
/// scope (kernels, memcpys, memsets: what GPU time sums), activities per
/// token = activities / N.
///
/// Dominant kernel: each side's name with the largest time: calls, median
/// duration, time per token.
///
/// Summary: with T, c a common kernel's time and calls, Δ = Σ T_c/N_c − Σ
/// T_b/N_b = (a) Σ_common (c_c/N_c − c_b/N_b)·T_b/c_b (call counts at the
/// baseline's mean duration) + (b) Σ_common c_c/N_c·(T_c/c_c − T_b/c_b)
/// (durations at the candidate's call count) + (c) Σ_added T_c/N_c −
/// Σ_removed T_b/N_b. Computed in integers of 1/(N_b·N_c) ns: (a) is rounded
/// per kernel to that unit (half to even), (b) is the rest, so the parts add
/// up to the total exactly (JSON summary.*_units).
///
/// The two traces are read one after the other, each with every worker
/// thread (-j): memory is one trace's ledger at a time, not two.
///
/// Exit status: 0 ok; 1 when a trace lacks the selected context (steps
/// scope); 2 on unreadable input or bad arguments.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, after_help = EXAMPLES)]
pub struct DiffArgs {
    #[command(flatten)]
    pub options: DiffSpec,
}

impl PerTraceArgs for DiffArgs {
    type Command = Diff;
    const CAPTURES: bool = true;
    const TRACES: TracesArg = TracesArg {
        help: "BASELINE then CANDIDATE. `-` reads stdin (once)",
        value_names: &["BASELINE", "CANDIDATE"],
        exactly: Some(2),
    };

    fn options(&self) -> &DiffSpec {
        &self.options
    }
}
