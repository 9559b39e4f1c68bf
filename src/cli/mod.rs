//! Command-line interface, private to the binary: the top-level parser
//! and the dispatch. Every analysis's subcommand comes from the registry
//! (`torchtrace::registry::REGISTRY`, each line's `cli()`: flags, help and
//! run in `src/analyses/<name>/cli.rs`, on the shared argument groups of
//! `torchtrace::cli_kit`); the campaign commands (`plot`, `batch`, `merge`,
//! `export`), which read several analyses, are here. Each subcommand
//! parses its flags, calls the library and prints; tables, run information
//! and figures are the library's.
//!
//! Results go to stdout; diagnostics and progress bars to stderr. Exit
//! status: 0 ok, 1 problems found (a verification failed, a context is
//! missing), 2 error (unreadable input, bad arguments).

pub mod batch;
pub mod export;
pub mod merge;
pub mod plot;

use anyhow::Context;
use clap::{ArgMatches, FromArgMatches, Parser, Subcommand};
use torchtrace::cli_kit::CliLine;
pub use torchtrace::cli_kit::*;

/// Analyze PyTorch Profiler (Kineto) traces from vLLM: pair CPU step
/// annotations with their GPU spans, follow launches to the kernels they ran,
/// verify call hierarchies, plot AR vs MTP.
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

/// A subcommand: an analysis's (from the registry, parsed when it runs)
/// or one of the campaign commands.
pub enum Command {
    Analysis(&'static CliLine, ArgMatches),
    Campaign(CampaignCommand),
}

/// The commands over several analyses at once.
#[derive(Debug, Subcommand)]
pub enum CampaignCommand {
    Plot(plot::PlotArgs),
    Batch(batch::BatchArgs),
    Merge(merge::MergeArgs),
    Export(export::ExportArgs),
}

/// The registry's subcommands, in its order.
fn analysis_lines() -> impl Iterator<Item = &'static CliLine> {
    torchtrace::registry::REGISTRY
        .iter()
        .filter_map(|e| e.cli())
}

fn analysis_line(name: &str) -> Option<&'static CliLine> {
    analysis_lines().find(|l| l.name == name)
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Analysis(line, m) => f.debug_tuple(line.name).field(m).finish(),
            Command::Campaign(c) => c.fmt(f),
        }
    }
}

impl FromArgMatches for Command {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        if let Some((name, sub)) = m.subcommand() {
            if let Some(line) = analysis_line(name) {
                return Ok(Command::Analysis(line, sub.clone()));
            }
        }
        CampaignCommand::from_arg_matches(m).map(Command::Campaign)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Command::from_arg_matches(m)?;
        Ok(())
    }
}

impl Subcommand for Command {
    /// The analyses' subcommands (registry order), then the campaign's.
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        let cmd = analysis_lines().fold(cmd, |c, l| c.subcommand((l.command)()));
        CampaignCommand::augment_subcommands(cmd)
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        Command::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        analysis_line(name).is_some() || CampaignCommand::has_subcommand(name)
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<Exit> {
    if let Some(n) = cli.global.threads {
        // 0: rayon's default, one thread per core. A failure (threads
        // cannot be spawned, e.g. under an address-space limit) is an
        // error, exit 2; a pool that exists already cannot happen here
        // (the binary runs once), but would be reported the same way.
        rayon::ThreadPoolBuilder::new()
            .num_threads(usize::from(n))
            .build_global()
            .with_context(|| format!("-j {n}: cannot start the worker threads"))?;
    }
    let c = match cli.command {
        // Parses its own flags, refuses `-` twice, runs.
        Command::Analysis(line, m) => return (line.run)(&m, &cli.global),
        Command::Campaign(c) => c,
    };
    one_stdin(c.inputs())?;
    match c {
        CampaignCommand::Plot(a) => plot::run(a, &cli.global),
        CampaignCommand::Batch(a) => batch::run(a, &cli.global),
        CampaignCommand::Merge(a) => merge::run(a, &cli.global),
        CampaignCommand::Export(a) => export::run(a, &cli.global),
    }
}

impl CampaignCommand {
    /// The inputs named on the command line (traces, PATHs, records files).
    fn inputs(&self) -> Vec<&std::path::PathBuf> {
        match self {
            CampaignCommand::Plot(a) => a.traces.iter().collect(),
            CampaignCommand::Batch(a) => a.paths.iter().collect(),
            CampaignCommand::Merge(a) => a.records.iter().collect(),
            CampaignCommand::Export(a) => a.traces.iter().collect(),
        }
    }
}
