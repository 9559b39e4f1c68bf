//! Command-line interface: clap definitions, converted once into library
//! options, and the `run` entry point that `main.rs` calls.
//!
//! Results go to stdout; diagnostics and progress bars to stderr. Exit
//! status: 0 ok, 1 problems found (a verification failed, a context is
//! missing), 2 error (unreadable input, bad arguments).

pub mod batch;
pub mod hierarchy;
pub mod kernels;
pub mod pair;
pub mod plot;

use clap::{Args, Parser, Subcommand};

/// Analyze PyTorch Profiler (Kineto) traces from vLLM: pair CPU step
/// annotations with their GPU spans, verify call hierarchies, plot AR vs MTP.
///
/// Traces may be `.json` or gzip-compressed (`.json.gz`, recognised by
/// content), or `-` for stdin. Times are exact integer nanoseconds parsed
/// from the JSON text.
#[derive(Debug, Parser)]
#[command(
    name = "torchtrace",
    version,
    propagate_version = true,
    max_term_width = 110
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand takes.
#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// Worker threads for files processed in parallel (default: all cores).
    #[arg(long, short = 'j', global = true, value_name = "N")]
    pub threads: Option<usize>,
    /// No progress bars or notes on stderr (errors are still printed).
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Pair(pair::PairArgs),
    Hierarchy(hierarchy::HierarchyArgs),
    Kernels(kernels::KernelsArgs),
    Plot(plot::PlotArgs),
    Batch(batch::BatchArgs),
}

/// How step contexts are chosen; the same flags on every subcommand.
#[derive(Debug, Args, Clone, Default)]
pub struct ContextArgs {
    /// Select step contexts by exact user_annotation name [default: the most
    /// frequent pure-decode vLLM step name of each trace,
    /// execute_context_0(0)_generation_<m>(<n>) with m ≥ 1]
    #[arg(long, value_name = "NAME", conflicts_with = "context_regex")]
    pub context: Option<String>,
    /// Select every user_annotation whose name matches RE (unanchored).
    #[arg(long, value_name = "RE")]
    pub context_regex: Option<String>,
}

impl ContextArgs {
    pub fn selector(&self) -> anyhow::Result<crate::pair::Selector> {
        pair::selector_from(self.context.as_deref(), self.context_regex.as_deref())
    }
}

/// How a successful run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything checked out.
    Ok,
    /// The run completed but found problems (exit status 1).
    Problems,
}

impl Exit {
    pub fn code(self) -> i32 {
        match self {
            Exit::Ok => 0,
            Exit::Problems => 1,
        }
    }

    pub fn worst(self, other: Exit) -> Exit {
        if self == Exit::Problems || other == Exit::Problems {
            Exit::Problems
        } else {
            Exit::Ok
        }
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<Exit> {
    if let Some(n) = cli.global.threads {
        // Fails only if a pool exists already (tests calling run twice).
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build_global();
    }
    match cli.command {
        Command::Pair(a) => pair::run(a, &cli.global),
        Command::Plot(a) => plot::run(a, &cli.global),
        Command::Batch(a) => batch::run(a, &cli.global),
        Command::Hierarchy(a) => hierarchy::run(a, &cli.global),
        Command::Kernels(a) => kernels::run(a, &cli.global),
    }
}

/// Prints a note on stderr unless `--quiet`.
pub fn note(global: &GlobalArgs, msg: &str) {
    if !global.quiet {
        eprintln!("torchtrace: note: {msg}");
    }
}
