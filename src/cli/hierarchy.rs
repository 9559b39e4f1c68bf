//! `torchtrace hierarchy`: containment chains and inclusive-duration tables.

use super::{analyze_all, note, Exit, FormatArg, GlobalArgs};
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use torchtrace::kernels::KernelsSpec;
use torchtrace::runinfo::RunInfo;
use torchtrace::{HierarchyOptions, HierarchyReport, Plan};

/// Verify that events nest along chains `a>b>c` (every b inside some a,
/// every c inside some b) and report call counts and inclusive durations;
/// with two traces, median ratios (second / first, e.g. MTP / AR).
///
/// Matching (a chain element E; default categories cpu_op, user_annotation,
/// python_function, Operator):
///   the event name equals E; or a python_function's function part (after
///   the last "): ", e.g. "gpu_model_runner.py(4270): sample_tokens") equals
///   E; or E is "re:RE" and RE matches somewhere in the name.
///
/// Figures (exact integer-ns arithmetic; ms in output):
///   children               events matching the child element
///   contained              children lying in some parent event: same pid/tid
///                          (unless --any-thread), P.start ≤ C.start and
///                          C.end ≤ P.end, P not C itself
///   uncontained            children − contained (examples listed)
///   parents_without_child  parent events holding no child event
///   calls                  events matching the element
///   outermost_calls        calls not lying in another call of the same element
///                          (identical intervals: the earlier in the file is outer)
///   median/mean/p90/min/max/total
///                          inclusive durations (dur) of the outermost calls
///   calls/context          outermost_calls / step contexts (as `pair` selects them)
///   kernels/call           GPU kernels launched by the outermost calls (launch
///                          calls starting inside a call on its thread, joined to
///                          GPU activities by correlation) / outermost calls
///   GPU busy median        median over outermost calls of the union of the GPU
///                          activities each launched
///   GPU busy/token         Σ GPU busy of the outermost calls / completion tokens
///                          (--tokens, else the run summary beside the trace)
///
/// Exit status: 0 every link holds; 1 some link has uncontained children;
/// 2 on unreadable input or bad arguments.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct HierarchyArgs {
    /// Trace files (`-` reads stdin). With two: baseline (AR) then candidate (MTP).
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// A chain "parent>child>grandchild"; repeat for several
    /// [default: sample_tokens>propose_draft_token_ids>proposer.propose]
    #[arg(long, value_name = "A>B>C")]
    pub chain: Vec<String>,
    /// Event category taking part; repeat for several (replaces the default
    /// list cpu_op, user_annotation, python_function, Operator).
    #[arg(long, value_name = "CAT")]
    pub category: Vec<String>,
    /// Containment across threads: ignore pid/tid.
    #[arg(long)]
    pub any_thread: bool,
    /// Uncontained children listed per link.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub examples: usize,
    #[command(flatten)]
    pub contexts: super::ContextArgs,
    /// Completion tokens, once per trace in order (for GPU busy per token).
    #[arg(long, value_name = "N")]
    pub tokens: Vec<u64>,
    /// Skip the GPU work per function (containment and durations only:
    /// reads only the chain's events, several times faster).
    #[arg(long)]
    pub no_gpu_work: bool,
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = FormatArg::Table)]
    pub format: FormatArg,
}

impl HierarchyArgs {
    pub fn to_options(&self) -> anyhow::Result<HierarchyOptions> {
        let selector = self.contexts.selector()?;
        HierarchyOptions::new(
            &self.chain,
            &self.category,
            self.any_thread,
            self.examples,
            selector,
        )
        .context("bad --chain")
    }
}

pub fn run(args: HierarchyArgs, global: &GlobalArgs) -> anyhow::Result<Exit> {
    let opts = args.to_options()?;
    let given = super::given(args.traces.len(), &args.tokens, &[])?;
    let mut plan = Plan::new(opts.selector.clone());
    if !args.no_gpu_work {
        plan = plan.with(KernelsSpec::default());
    }
    let plan = plan.with(opts.clone());
    let mut traces = Vec::new();
    let results = analyze_all(&args.traces, &plan, global)?;
    for ((r, path), given) in results.into_iter().zip(&args.traces).zip(&given) {
        let mut h = r.hierarchy.context("hierarchy ran")?;
        let run = RunInfo::for_trace(path, given, &r.contexts.step_names)?;
        h.set_tokens(run.tokens.map(|t| t.value));
        traces.push(h);
    }
    for t in traces.iter().filter(|t| t.contexts.is_none()) {
        note(
            global,
            &format!(
                "{}: no step contexts found: calls per context are null",
                t.path
            ),
        );
    }
    let report = HierarchyReport::new(traces);
    let mut stdout = std::io::stdout().lock();
    report.write(&mut stdout, args.format.into())?;
    stdout.flush()?;
    super::incomplete(
        report
            .traces
            .iter()
            .map(|t| (t.path.as_str(), t.complete, t.error.as_deref())),
        "figures above",
    )?;
    for t in &report.traces {
        for c in &t.chains {
            for l in c.links.iter().filter(|l| !l.holds) {
                note(
                    global,
                    &format!(
                        "{}: {} of {} {} not inside {}",
                        t.path, l.uncontained, l.children, l.child, l.parent
                    ),
                );
            }
        }
    }
    Ok(if report.holds() {
        Exit::Ok
    } else {
        Exit::Problems
    })
}
