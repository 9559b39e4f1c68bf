//! The `torchtrace` binary: parse arguments, run, map the outcome to an
//! exit status. This is the only place that prints fatal errors. The
//! command line (`cli/`) is private to the binary: the library has no clap.

mod cli;

use clap::Parser;
use cli::{run, Cli};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(exit) => ExitCode::from(exit.code() as u8),
        Err(err) => {
            // A closed stdout (e.g. `| head`) is not an error worth a message.
            if let Some(io) = err.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
            }
            eprintln!("torchtrace: {err:#}");
            ExitCode::from(2)
        }
    }
}
