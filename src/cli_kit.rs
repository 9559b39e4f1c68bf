//! The command line's kit (feature `cli`): the argument groups every
//! subcommand shares — global options, traces' run information (`--tokens`,
//! `--summary`, declared once here), step-context selection, `--format` —
//! the one per-trace subcommand ([`PerTrace`]`<A>`: its traces, shared
//! flags and body, around an analysis's own flags), exit statuses, and
//! [`PerTraceArgs`], the trait an analysis's own `cli.rs` implements so
//! that the binary builds its subcommand from the registry
//! (`crate::registry::Entry::cli`). It names no analysis: each analysis's
//! flags, help text and examples live in `src/analyses/<name>/cli.rs`.

use crate::command;
use crate::trace::ReadOptions;
use crate::{Format, ImageFormat, Selector};
use anyhow::Context;
use clap::{Args, FromArgMatches, ValueEnum};

/// Options every subcommand takes, listed under their own heading in each
/// subcommand's help (not among its own options).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = GLOBAL_HEADING)]
pub struct GlobalArgs {
    /// Worker threads for files processed in parallel, at most 1024
    /// (default, or 0: all cores).
    #[arg(long, short = 'j', global = true, value_name = "N", help_heading = GLOBAL_HEADING,
          value_parser = clap::value_parser!(u16).range(0..=MAX_THREADS as i64))]
    pub threads: Option<u16>,
    /// No progress bars or notes on stderr (errors are still printed).
    #[arg(long, short = 'q', global = true, help_heading = GLOBAL_HEADING)]
    pub quiet: bool,
    /// The largest single event (or top-level value) read, e.g. 64M, 1G;
    /// past it a trace is an error naming the byte offset, so memory stays
    /// bounded on any input [default: 64M, or $TORCHTRACE_MAX_EVENT_SIZE]
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_size,
          help_heading = GLOBAL_HEADING)]
    pub max_event_size: Option<u64>,
}

/// The help heading of [`GlobalArgs`].
pub const GLOBAL_HEADING: &str = "Global options (any subcommand)";

impl GlobalArgs {
    /// What every per-trace subcommand takes besides its own options.
    pub fn common(&self, selector: Selector, given: Vec<crate::runinfo::Given>) -> command::Common {
        command::Common {
            selector,
            given,
            quiet: self.quiet,
            read: self.read_options(),
            capture: crate::tracefile::capture::CaptureSpec::default(),
        }
    }

    /// [`Self::common`] from the shared flags of a subcommand over `n`
    /// traces: its contexts and its run information.
    pub fn common_for(
        &self,
        n: usize,
        contexts: &ContextArgs,
        run: &RunArgs,
    ) -> anyhow::Result<command::Common> {
        let given = given(n, &run.tokens.tokens, &run.summary)?;
        Ok(self.common(contexts.selector()?, given))
    }

    /// How traces and records are read: `--max-event-size`, else the
    /// environment's limit or the default.
    pub fn read_options(&self) -> ReadOptions {
        self.max_event_size
            .map_or_else(ReadOptions::default, ReadOptions::with_max_event_bytes)
    }
}

/// A byte size such as `64M`, `1G` or `1048576`.
fn parse_size(text: &str) -> Result<u64, String> {
    crate::trace::parse_size(text)
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{text:?} is not a size (e.g. 64M, 1G, 1048576)"))
}

/// What is known about each trace's run; the same flags on `pair`,
/// `kernels`, `iterations` and `diff`.
#[derive(Debug, Args, Clone, Default)]
pub struct RunArgs {
    #[command(flatten)]
    pub tokens: TokensArgs,
    /// Run summary JSON ({"completion_tokens": N, ...}), once per trace in order.
    #[arg(long, value_name = "FILE")]
    pub summary: Vec<std::path::PathBuf>,
}

/// `--tokens`, declared once: flattened into [`RunArgs`] and into the
/// subcommands that take no `--summary` (`hierarchy`, `plot`).
#[derive(Debug, Args, Clone, Default)]
pub struct TokensArgs {
    /// Completion tokens, once per trace in order (else the run summary
    /// beside the trace).
    #[arg(long, value_name = "N")]
    pub tokens: Vec<u64>,
}

/// How step contexts are chosen; the same flags on every subcommand.
// Its doc comments are --help text: not rustdoc markup.
#[allow(rustdoc::invalid_html_tags)]
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
    /// The selector `--context` / `--context-regex` ask for.
    pub fn selector(&self) -> anyhow::Result<Selector> {
        let re = self.context_regex.as_deref();
        Selector::from_flags(self.context.as_deref(), re)
            .with_context(|| format!("invalid --context-regex {:?}", re.unwrap_or_default()))
    }
}

/// `--format` values (the library's [`Format`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Aligned text for the terminal.
    Table,
    /// Everything, full precision.
    Json,
    /// Comma-separated values (tables separated by a blank line).
    Csv,
    /// GitHub-flavoured Markdown tables.
    Markdown,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Table => Format::Table,
            FormatArg::Json => Format::Json,
            FormatArg::Csv => Format::Csv,
            FormatArg::Markdown => Format::Markdown,
        }
    }
}

/// Image formats of the figures (the library's [`ImageFormat`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImageFormatArg {
    Png,
    Svg,
    Both,
}

impl From<ImageFormatArg> for ImageFormat {
    fn from(f: ImageFormatArg) -> ImageFormat {
        match f {
            ImageFormatArg::Png => ImageFormat::Png,
            ImageFormatArg::Svg => ImageFormat::Svg,
            ImageFormatArg::Both => ImageFormat::Both,
        }
    }
}

/// Reads each trace once through the plan, in parallel, with a progress
/// bar per file; an unreadable trace is an error.
pub fn analyze_all(
    traces: &[std::path::PathBuf],
    plan: &crate::Plan,
    global: &GlobalArgs,
) -> anyhow::Result<Vec<crate::TraceResult>> {
    Ok(crate::command::read_all(
        traces,
        global.quiet,
        |path, counter| crate::analyze_path(path, counter, plan),
    )?)
}

/// Runs analysis `A` as its subcommand over `traces` and prints what it
/// found: problems (never silenced by -q) and notes on stderr, trace by
/// trace, then the report in `format` on stdout. The one body of every
/// per-trace subcommand.
pub fn run_command<A: crate::command::Command>(
    traces: &[std::path::PathBuf],
    common: crate::command::Common,
    options: &A::Options,
    how: (FormatArg, bool),
    global: &GlobalArgs,
) -> anyhow::Result<Exit> {
    run_command_then::<A>(traces, common, options, how, global, |_| Ok(()))
}

/// [`run_command`], then `after` with the report once it is printed (to
/// draw its figures, say).
pub fn run_command_then<A: crate::command::Command>(
    traces: &[std::path::PathBuf],
    common: crate::command::Common,
    options: &A::Options,
    (format, per_context): (FormatArg, bool),
    global: &GlobalArgs,
    after: impl FnOnce(&A::Report) -> anyhow::Result<()>,
) -> anyhow::Result<Exit> {
    use crate::command::Document;
    use std::io::Write;
    let out = crate::command::run::<A>(traces, &common, options)?;
    // Messages of the report as a whole (runs of ranks) carry the index
    // past the last trace; a directory may stand for several traces.
    let last = out
        .problems
        .iter()
        .chain(&out.notes)
        .map(|m| m.trace)
        .max()
        .unwrap_or(0);
    for i in 0..=last.max(traces.len()) {
        if !A::PROBLEMS_AFTER_REPORT {
            for p in out.problems.iter().filter(|p| p.trace == i) {
                eprintln!("torchtrace: {}", p.text);
            }
        }
        for n in out.notes.iter().filter(|n| n.trace == i) {
            note(global, &n.text);
        }
    }
    let mut stdout = stdout();
    out.report
        .write_to(&mut stdout, format.into(), per_context)?;
    stdout.flush()?;
    after(&out.report)?;
    incomplete(out.report.completeness(), "figures above")?;
    if A::PROBLEMS_AFTER_REPORT {
        for p in &out.problems {
            note(global, &p.text);
        }
    }
    Ok(Exit::of(&out))
}

/// What the command line says about each of `n` traces' runs: `--tokens`
/// and `--summary`, each given at most once per trace, in order.
pub fn given(
    n: usize,
    tokens: &[u64],
    summaries: &[std::path::PathBuf],
) -> anyhow::Result<Vec<crate::runinfo::Given>> {
    for (flag, count) in [("--tokens", tokens.len()), ("--summary", summaries.len())] {
        if count > n {
            anyhow::bail!("{flag} given {count} times for {n} trace(s)");
        }
    }
    Ok((0..n)
        .map(|i| crate::runinfo::Given {
            tokens: tokens.get(i).copied(),
            mode: None,
            summary: summaries.get(i).cloned(),
        })
        .collect())
}

/// The error for the first trace that could not be read to its end
/// (`(path, complete, error)` of each), after its figures were printed.
pub fn incomplete<'a>(
    traces: impl IntoIterator<Item = (&'a str, bool, Option<&'a str>)>,
    what: &str,
) -> anyhow::Result<()> {
    match traces.into_iter().find(|(_, complete, _)| !complete) {
        Some((path, _, error)) => anyhow::bail!(
            "{path}: {} ({what} cover the events before it)",
            error.unwrap_or("incomplete")
        ),
        None => Ok(()),
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
    /// Problems found by a library call make exit status 1.
    pub fn of<R>(outcome: &crate::command::Outcome<R>) -> Exit {
        if outcome.problems.is_empty() {
            Exit::Ok
        } else {
            Exit::Problems
        }
    }

    pub fn code(self) -> i32 {
        match self {
            Exit::Ok => 0,
            Exit::Problems => 1,
        }
    }
}

/// The most worker threads `-j` accepts: more only costs memory and
/// start-up time (each thread reserves a stack), never speed.
pub const MAX_THREADS: u16 = 1024;

/// Refuses `-` (stdin) given more than once: two readers would each get an
/// arbitrary part of one stream (issue 17: `pair - -`).
pub fn one_stdin(inputs: Vec<&std::path::PathBuf>) -> anyhow::Result<()> {
    let n = inputs.iter().filter(|p| p.as_os_str() == "-").count();
    if n > 1 {
        anyhow::bail!(
            "`-` (stdin) is given {n} times: stdin can be read only once; give at most one input as `-` and the others as files"
        );
    }
    Ok(())
}

/// Standard output for results: a write error says that it is stdout's
/// (`cannot write to stdout: No space left on device (os error 28)`), with
/// its kind kept (a closed pipe stays [`std::io::ErrorKind::BrokenPipe`]).
pub fn stdout() -> Stdout {
    Stdout(std::io::stdout().lock())
}

/// See [`stdout`].
pub struct Stdout(std::io::StdoutLock<'static>);

impl Stdout {
    /// The error of a failed write, naming stdout.
    fn named(e: std::io::Error) -> std::io::Error {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return e;
        }
        std::io::Error::new(e.kind(), format!("cannot write to stdout: {e}"))
    }
}

impl std::io::Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).map_err(Stdout::named)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.write_all(buf).map_err(Stdout::named)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().map_err(Stdout::named)
    }
}

/// Prints a note on stderr unless `--quiet`.
pub fn note(global: &GlobalArgs, msg: &str) {
    if !global.quiet {
        eprintln!("torchtrace: note: {msg}");
    }
}

/// How a per-trace subcommand takes its traces (the positional argument,
/// its help and value names); the kit declares the argument.
#[derive(Debug, Clone, Copy)]
pub struct TracesArg {
    /// Its help text (verbatim: line breaks kept).
    pub help: &'static str,
    /// Its value name(s): one (`TRACE`), or one per trace when `exactly`.
    pub value_names: &'static [&'static str],
    /// Exactly this many (`diff`: 2), else one or more.
    pub exactly: Option<usize>,
}

impl TracesArg {
    /// One or more trace files, `-` for stdin.
    pub const fn many(help: &'static str) -> TracesArg {
        TracesArg {
            help,
            value_names: &["TRACE"],
            exactly: None,
        }
    }

    fn arg(&self) -> clap::Arg {
        let arg = clap::Arg::new(TRACES_ID)
            .help(self.help)
            .required(true)
            .action(clap::ArgAction::Append)
            .value_parser(clap::value_parser!(std::path::PathBuf))
            .value_names(self.value_names.iter().copied());
        // Too many parse (`<BASELINE> <CANDIDATE>...`): [`traces_counted`]
        // refuses them naming the traces that are not worker traces (a
        // shell glob over a vLLM run takes its frontend trace too).
        match self.exactly {
            Some(n) => arg.num_args(n..),
            None => arg.num_args(1..),
        }
    }
}

/// `traces` when they are `n` (a subcommand over exactly `n` traces),
/// else the error saying how many it takes and, of those given, which are
/// not worker traces (frontend, capture, summary files by their names).
fn traces_counted(name: &str, n: usize, traces: &[std::path::PathBuf]) -> anyhow::Result<()> {
    use crate::tracefile::inputs::{classify, Kind};
    if traces.len() == n {
        return Ok(());
    }
    let others: Vec<String> = traces
        .iter()
        .filter_map(|p| {
            let kind = classify(&p.to_string_lossy().replace('\\', "/"), true);
            (kind != Kind::Worker).then(|| format!("{} (a {} file)", p.display(), kind.as_str()))
        })
        .collect();
    let hint = match others.is_empty() {
        true => String::new(),
        false => format!(
            "; not worker traces: {} — leave them out (a run's worker traces are its \
             *.pt.trace.json[.gz] files outside capture_traces/, not *.async_llm.*)",
            others.join(", ")
        ),
    };
    let given = match traces.len() {
        1 => "1 was given".to_string(),
        k => format!("{k} were given"),
    };
    anyhow::bail!("{name} takes exactly {n} traces (baseline, then candidate); {given}{hint}")
}

/// What the command line tells of each trace's run, besides the traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunFlags {
    /// `--tokens` and `--summary` ([`RunArgs`]).
    TokensAndSummary,
    /// `--tokens` only ([`TokensArgs`]).
    Tokens,
    /// Neither (the run information comes from beside each trace).
    None,
}

/// An analysis's own flags and help: what its `cli.rs` declares. The kit
/// adds the rest — the traces, `--context`/`--context-regex` (when
/// [`Self::CONTEXTS`]), the run flags ([`Self::RUN`]), `--format` — and
/// runs it ([`PerTrace`]): one body for every per-trace subcommand. The
/// struct's doc comment is the subcommand's help.
pub trait PerTraceArgs: clap::Args + clap::FromArgMatches + Sized + 'static {
    /// The analysis it runs.
    type Command: command::Command;
    /// Its traces.
    const TRACES: TracesArg;
    /// It takes `--context` / `--context-regex`.
    const CONTEXTS: bool = true;
    /// Its run flags.
    const RUN: RunFlags = RunFlags::TokensAndSummary;
    /// It takes `--capture` (its analysis attributes GPU work inside the
    /// CUDA/HIP graphs: the capture traces are an input of the read).
    const CAPTURES: bool = false;
    /// The analysis's options (its `Spec`, flattened into the flags).
    fn options(&self) -> &<Self::Command as command::Command>::Options;
    /// Whether the table lists every context / step / iteration.
    fn detail(&self) -> bool {
        false
    }
    /// Runs after the report is printed (to draw its figures, say).
    fn after(
        &self,
        _report: &<Self::Command as command::Command>::Report,
        _global: &GlobalArgs,
    ) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The argument id of the traces.
const TRACES_ID: &str = "traces";

/// A per-trace subcommand: the kit's flags around analysis `A`'s own.
#[derive(Debug)]
pub struct PerTrace<A> {
    pub traces: Vec<std::path::PathBuf>,
    pub contexts: ContextArgs,
    pub run: RunArgs,
    pub capture: crate::tracefile::capture::CaptureSpec,
    pub own: A,
    pub format: FormatArg,
}

// `--format`, declared once for every per-trace subcommand. (No doc
// comment: on an `Args` struct it would become the subcommand's about.)
#[derive(Debug, Args)]
struct FormatFlag {
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = FormatArg::Table)]
    format: FormatArg,
}

impl<A: PerTraceArgs> PerTrace<A> {
    /// The subcommand's name (its analysis's).
    pub fn name() -> &'static str {
        <A::Command as crate::analysis::Analysis>::NAME
    }

    /// Its clap definition: traces, the shared groups, its own flags and
    /// help, `--format` — in that order in `--help`.
    pub fn command() -> clap::Command {
        let mut cmd = clap::Command::new(Self::name()).arg(A::TRACES.arg());
        if A::CONTEXTS {
            cmd = ContextArgs::augment_args(cmd);
        }
        cmd = match A::RUN {
            RunFlags::TokensAndSummary => RunArgs::augment_args(cmd),
            RunFlags::Tokens => TokensArgs::augment_args(cmd),
            RunFlags::None => cmd,
        };
        if A::CAPTURES {
            cmd = crate::tracefile::capture::CaptureSpec::augment_args(cmd);
        }
        FormatFlag::augment_args(A::augment_args(cmd))
    }

    /// Its flags from parsed matches.
    pub fn from_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let traces = m
            .get_many::<std::path::PathBuf>(TRACES_ID)
            .map(|v| v.cloned().collect())
            .unwrap_or_default();
        let contexts = match A::CONTEXTS {
            true => ContextArgs::from_arg_matches(m)?,
            false => ContextArgs::default(),
        };
        let run = match A::RUN {
            RunFlags::TokensAndSummary => RunArgs::from_arg_matches(m)?,
            RunFlags::Tokens => RunArgs {
                tokens: TokensArgs::from_arg_matches(m)?,
                summary: Vec::new(),
            },
            RunFlags::None => RunArgs::default(),
        };
        let capture = match A::CAPTURES {
            true => crate::tracefile::capture::CaptureSpec::from_arg_matches(m)?,
            false => crate::tracefile::capture::CaptureSpec::default(),
        };
        Ok(PerTrace {
            traces,
            contexts,
            run,
            capture,
            own: A::from_arg_matches(m)?,
            format: FormatFlag::from_arg_matches(m)?.format,
        })
    }

    /// Everything it reads: its traces, the run summaries and the
    /// capture traces given.
    pub fn inputs(&self) -> Vec<&std::path::PathBuf> {
        let caps = &self.capture.capture;
        self.traces
            .iter()
            .chain(&self.run.summary)
            .chain(caps)
            .collect()
    }

    /// Runs the subcommand: the analysis over the traces, the report on
    /// stdout, problems and notes on stderr.
    pub fn run(self, global: &GlobalArgs) -> anyhow::Result<Exit> {
        let given = match A::RUN {
            RunFlags::None => Vec::new(),
            _ => given(
                self.traces.len(),
                &self.run.tokens.tokens,
                &self.run.summary,
            )?,
        };
        let mut common = global.common(self.contexts.selector()?, given);
        common.capture = self.capture.clone();
        let how = (self.format, self.own.detail());
        let own = &self.own;
        run_command_then::<A::Command>(&self.traces, common, own.options(), how, global, |r| {
            own.after(r, global)
        })
    }
}

/// A subcommand, type-erased, as the registry holds it.
#[derive(Clone, Copy)]
pub struct CliLine {
    /// The subcommand's name.
    pub name: &'static str,
    /// Its clap definition (flags and help).
    pub command: fn() -> clap::Command,
    /// Parses its matches and runs it, refusing `-` given twice.
    pub run: fn(&clap::ArgMatches, &GlobalArgs) -> anyhow::Result<Exit>,
    /// Its options when no flag is given, as JSON (for the test that the
    /// flags' defaults are the options' `Default`).
    pub parsed_defaults: fn() -> Result<serde_json::Value, String>,
    /// Its options' `Default`, as JSON.
    pub default_options: fn() -> serde_json::Value,
}

impl CliLine {
    /// The line of analysis `A`'s per-trace subcommand.
    pub const fn of<A: PerTraceArgs>() -> CliLine {
        CliLine {
            name: <A::Command as crate::analysis::Analysis>::NAME,
            command: PerTrace::<A>::command,
            run: run_of::<A>,
            parsed_defaults: parsed_defaults::<A>,
            default_options: default_options::<A::Command>,
        }
    }
}

fn run_of<A: PerTraceArgs>(m: &clap::ArgMatches, global: &GlobalArgs) -> anyhow::Result<Exit> {
    let args =
        PerTrace::<A>::from_matches(m).map_err(|e| e.format(&mut PerTrace::<A>::command()))?;
    if let Some(n) = A::TRACES.exactly {
        traces_counted(PerTrace::<A>::name(), n, &args.traces)?;
    }
    one_stdin(args.inputs())?;
    args.run(global)
}

/// The options parsed from a command line with a trace and no flag;
/// with [`command::Command::Options`]' `Default`, the two must agree.
fn parsed_defaults<A: PerTraceArgs>() -> Result<serde_json::Value, String> {
    let traces: Vec<&str> = match A::TRACES.exactly {
        Some(n) => vec!["t.json"; n],
        None => vec!["t.json"],
    };
    let m = PerTrace::<A>::command()
        .try_get_matches_from(std::iter::once(PerTrace::<A>::name()).chain(traces))
        .map_err(|e| e.to_string())?;
    let args = PerTrace::<A>::from_matches(&m).map_err(|e| e.to_string())?;
    serde_json::to_value(args.own.options()).map_err(|e| e.to_string())
}

/// The options' `Default` of analysis `A`, as JSON.
pub fn default_options<A: command::Command>() -> serde_json::Value {
    serde_json::to_value(A::Options::default()).unwrap_or_default()
}
