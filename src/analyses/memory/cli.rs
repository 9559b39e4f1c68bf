//! `torchtrace memory`: the allocator timeline — per device the peak and
//! what holds it, per step the high-water mark and churn.

use super::{Memory, MemorySpec};
use crate::cli_kit::{PerTraceArgs, TracesArg};
use clap::Args;

/// `--help`'s examples (real runs, as in README).
const EXAMPLES: &str = "Examples:\n  # The peak per device and the host ops holding it\n  torchtrace memory tests/data/memory/hf_greedy_memory.pt.trace.json.gz\n\n  # Greedy vs assisted decoding: peaks, churn per token, top holders\n  torchtrace memory tests/data/memory/hf_greedy_memory.pt.trace.json.gz tests/data/memory/hf_assisted_memory.pt.trace.json.gz\n\n  # Every step's high-water mark, as CSV\n  torchtrace memory --per-step -f csv tests/data/memory/hf_greedy_memory.pt.trace.json.gz";

/// Read the allocator's `[memory]` events (a trace recorded with
/// profile_memory=True) and say, per device, how high allocated memory
/// went, when, and which host ops hold it at the peak; what the trace
/// never freed; per step the high-water mark and the churn; with two
/// traces (AR first, then MTP) compare them.
///
/// Definitions (docs/VIEWS.md M1–M6; integer bytes and ns, no rounding):
///   event (M1)      an event named [memory] with ts, an integer Bytes
///                   (> 0 allocation, < 0 free), Device Type and Device Id;
///                   ordered by (ts, file order) per device (Device Type 0
///                   cpu, 1 cuda:<id>, 6 hip:<id>, others type<t>:<id>)
///   level (M2)      allocated bytes after each event: Total Allocated as
///                   written when every event of the device has it, else
///                   the running Σ Bytes from 0; baseline = first event's
///                   Total Allocated − its Bytes; peak = the largest level,
///                   peak at = the first event reaching it; final = the
///                   last; peak reserved = the largest Total Reserved
///   life (M3)       an allocation at Addr lives until the next free of
///                   that Addr on its device; a free with none frees memory
///                   allocated before the trace
///   holders (M4)    the allocations live at the peak event, grouped by the
///                   innermost host op enclosing the event on its thread
///                   (C4–C5), bytes descending; by module: the innermost
///                   "nn.Module: …" frame; peak held from before = peak −
///                   Σ the trace's live bytes; never freed: live at the end
///   step (M5, C8)   vLLM step annotations (else ProfilerStep#N); window
///                   [S_i.ts, S_{i+1}.ts) (the last open): the device's
///                   events in it, the level at its start, its high-water
///                   mark, end − start (net)
///   per token       bytes allocated and allocations / completion tokens
///
/// JSON (-f json) always holds every step row; the table shows them with
/// --per-step.
///
/// Exit status: 0 ok; 1 when a trace has no [memory] events; 2 on
/// unreadable input.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, after_help = EXAMPLES)]
pub struct MemoryCli {
    /// Also list every step in the table.
    #[arg(long)]
    pub per_step: bool,
    #[command(flatten)]
    pub options: MemorySpec,
}

impl PerTraceArgs for MemoryCli {
    type Command = Memory;
    const TRACES: TracesArg = TracesArg {
        help: "Traces: one, or two (baseline AR, then candidate MTP: compared), or more (side by side). `-` reads stdin",
        value_names: &["TRACE"],
        exactly: None,
    };
    const CONTEXTS: bool = false;

    fn options(&self) -> &MemorySpec {
        &self.options
    }

    fn detail(&self) -> bool {
        self.per_step
    }
}
