//! The `torchtrace` binary: parse arguments, run, map the outcome to an
//! exit status. This is the only place that prints fatal errors. The
//! top-level parser and the campaign commands (`cli/`) are private to the
//! binary; each analysis's subcommand comes from its registry line (its
//! folder's `cli.rs` on `torchtrace::cli_kit`), and the library has clap
//! only behind the feature `cli`.

mod cli;

/// The system allocator with a reserve for an allocation that fails under
/// an address-space or data limit (`torchtrace::memory::Reserving`): the
/// trace being read is reported as too large instead of the process
/// aborting.
#[global_allocator]
static ALLOCATOR: torchtrace::memory::Reserving = torchtrace::memory::Reserving;

use clap::Parser;
use cli::{run, Cli};
use std::process::ExitCode;

fn main() -> ExitCode {
    return_large_blocks();
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
            eprintln!("torchtrace: {}", message(&err));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes, `: `-separated, leaving out a cause whose
/// text the message already holds (an error that quotes its source would
/// otherwise show it twice: `expected value at line 1 column 1: expected
/// value at line 1 column 1`).
fn message(err: &anyhow::Error) -> String {
    let mut out = err.to_string();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}

/// Large blocks (≥ 256 KiB: the ledger's stream chunks, its record
/// chunks, the read buffers) go straight to and from the system. glibc
/// raises this threshold by itself after the first such block is freed,
/// and then keeps the ledger's drained stream chunks in its heap while the
/// records they became grow beside them: 7 MB more peak RSS at 4.60 GB
/// (BENCHMARKS.md).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn return_large_blocks() {
    if std::env::var_os("TORCHTRACE_MALLOC_DEFAULTS").is_some() {
        return; // glibc's own thresholds, for comparing
    }
    // SAFETY: mallopt only sets an allocator parameter; it is called before
    // any other thread exists, and a refusal (0) leaves glibc's default.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 10);
    }
    // Under an address-space limit (RLIMIT_AS), each of glibc's
    // per-thread arenas reserves 64 MiB of address space that it may never
    // use: with `-j 16` over a GiB before any trace is read. Two arenas
    // keep the address space near what is held (`batch`'s pool measures
    // the address space against that limit).
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given; mallopt as
    // above.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_AS, &mut lim) == 0 && lim.rlim_cur != libc::RLIM_INFINITY {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn return_large_blocks() {}
