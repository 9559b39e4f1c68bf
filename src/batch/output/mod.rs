//! What a batch writes, one file per output: `results.json`
//! ([`results_json()`]), `traces.csv` ([`traces_csv`]), `figures/`
//! (`figures`: figures 1–6) and `report.md` (`report_md`) tying them
//! together; plus stdout ([`stdout`]). Besides these fixed outputs, each
//! analysis's own section ([`sections`], in registry order: Table 8's
//! `workloads.csv`/`.md` of `pair`, Table 9's `hierarchy.csv`/`.md`,
//! `gpu_work.csv`/`.md` of `kernels`, `iterations.csv`, `diff*.csv`,
//! `ranks*.csv`, figures 7–9, their report sections), which this module
//! writes without naming the analyses.
//!
//! Only fixed file names are written under OUTDIR (and figure names that
//! the plot module derives from sanitized labels); no input name is ever
//! used as a path.

pub(crate) mod figures;
pub(crate) mod report_md;
pub mod results_json;
pub mod sections;
pub mod stdout;
pub mod traces_csv;

pub use figures::FIGURE_SIZE;
pub use report_md::problems_table;
pub use results_json::{results_json, ResultsDoc};
pub use stdout::{stdout_markdown, write_stdout};
pub use traces_csv::traces_table;

use super::BatchResult;
use crate::plot::ImageFormat;
use crate::report;
use std::path::{Path, PathBuf};

/// Why the outputs could not be written. Each message names the path; no
/// error has a `source` (the OS's reason is in the message), so `{:#}`
/// prints it alone.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{path}: cannot create: {error}")]
    Create { path: String, error: std::io::Error },
    #[error("{path}: cannot write: {error}")]
    Write { path: String, error: std::io::Error },
    #[error("{path}: cannot move into place: {error}")]
    Move { path: String, error: std::io::Error },
    /// An earlier run's output that this run does not write.
    #[error("{path}: cannot remove an earlier run's output: {error}")]
    Remove { path: String, error: std::io::Error },
    /// Another process holds OUTDIR's lock.
    #[error("{path}: another torchtrace batch or merge is writing this output directory: wait for it to finish, or use another -o")]
    Locked { path: String },
    /// A target to replace is a directory (`dir`: OUTDIR, left unchanged).
    #[error("{path}: is a directory, cannot replace it (nothing in {dir} was changed)")]
    IsDirectory { path: String, dir: String },
    /// `figures` exists and is not a directory.
    #[error("{path}: not a directory, cannot replace it (nothing in {dir} was changed)")]
    NotDirectory { path: String, dir: String },
    /// `-o` names something that is not a directory.
    #[error("{path}: OUTDIR (-o) is a file, not a directory: give a directory to write the outputs into (created if needed)")]
    OutdirIsFile { path: String },
    #[error("{0}")]
    Json(serde_json::Error),
}

impl OutputError {
    /// The same error naming `dir`'s file where it named the temporary
    /// directory's (`write_all_atomic` writes there first): a user is told
    /// of the output, not of a folder that is gone when they look.
    fn under(self, tmp: &Path, dir: &Path) -> OutputError {
        let moved = |path: String| match Path::new(&path).strip_prefix(tmp) {
            Ok(rest) => dir.join(rest).display().to_string(),
            Err(_) => path,
        };
        match self {
            OutputError::Create { path, error } => OutputError::Create {
                path: moved(path),
                error,
            },
            OutputError::Write { path, error } => OutputError::Write {
                path: moved(path),
                error,
            },
            other => other,
        }
    }
}

/// `path: cannot create: …` for [`OutputError::Create`].
fn cannot_create(path: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
    move |error| OutputError::Create {
        path: path.display().to_string(),
        error,
    }
}

/// `n thing` or `n things`: "1 files" read as a mistake (issue 38).
pub fn count(n: usize, thing: &str) -> String {
    match n {
        1 => format!("1 {thing}"),
        _ => format!("{n} {thing}s"),
    }
}

/// Creates OUTDIR, saying so when it names a file: the system's "File
/// exists" does not say which file, nor that -o wants a directory.
fn create_outdir(dir: &Path) -> Result<(), OutputError> {
    if dir.exists() && !dir.is_dir() {
        return Err(OutputError::OutdirIsFile {
            path: dir.display().to_string(),
        });
    }
    std::fs::create_dir_all(dir).map_err(cannot_create(dir))
}

/// What `write_all` produced besides the fixed files.
#[derive(Debug, Default)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub figures: Vec<PathBuf>,
    pub warnings: Vec<String>,
}

fn write(dir: &Path, name: &str, text: &str, w: &mut Written) -> Result<(), OutputError> {
    let p = dir.join(name);
    std::fs::write(&p, text).map_err(|error| OutputError::Write {
        path: p.display().to_string(),
        error,
    })?;
    w.files.push(p);
    Ok(())
}

/// Writes every output file under `dir` (created if needed).
pub fn write_all(
    res: &BatchResult,
    dir: &Path,
    context: &str,
    figures: Option<ImageFormat>,
) -> Result<Written, OutputError> {
    std::fs::create_dir_all(dir).map_err(cannot_create(dir))?;
    let mut w = Written::default();
    // Written as it is made (issue 59: the whole text was held first, as
    // large as the document).
    let p = dir.join("results.json");
    let io_error = |error| OutputError::Write {
        path: p.display().to_string(),
        error,
    };
    let mut file = std::io::BufWriter::new(std::fs::File::create(&p).map_err(io_error)?);
    // A failed write (a full disk, the file-size limit) names the file:
    // serde_json's error alone says "File too large (os error 27)".
    serde_json::to_writer_pretty(&mut file, &results_json(res, context))
        .map_err(|e| io_error(std::io::Error::from(e)))?;
    std::io::Write::write_all(&mut file, b"\n")
        .and_then(|()| std::io::Write::flush(&mut file))
        .map_err(io_error)?;
    w.files.push(p.clone());
    write(
        dir,
        "traces.csv",
        &report::csv::to_string(&traces_table(res)),
        &mut w,
    )?;
    let sections = sections::sections(res, &mut w.warnings);
    for f in sections.iter().flat_map(|s| &s.files) {
        write(dir, &f.name, &f.text, &mut w)?;
    }
    if let Some(fmt) = figures {
        let fig_dir = dir.join("figures");
        match figures::render_figures(res, &fig_dir, fmt) {
            Ok(f) => w.figures = f,
            Err(e) => w.warnings.push(format!("figures: {}", chain(&e))),
        }
        section_figures(&sections, &fig_dir, fmt, &mut w);
    }
    let report = report_md::report_md(res, context, &w, dir, &sections);
    write(dir, "report.md", &report, &mut w)?;
    Ok(w)
}

/// An error and its sources, `: `-joined (as figure warnings have always
/// read: the error's message, then each cause's).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(&format!(": {c}"));
        cause = c.source();
    }
    s
}

/// Draws the sections' figures into `fig_dir` (after the fixed ones); a
/// figure that cannot be drawn is a warning, as the fixed ones are.
fn section_figures(
    sections: &[crate::campaign::Section],
    fig_dir: &Path,
    fmt: ImageFormat,
    w: &mut Written,
) {
    if let Err(e) = std::fs::create_dir_all(fig_dir) {
        w.warnings.push(format!(
            "figures: {}: cannot create: {e}",
            fig_dir.display()
        ));
        return;
    }
    let jobs: Vec<(&dyn crate::campaign::Picture, PathBuf)> = sections
        .iter()
        .flat_map(|s| &s.figures)
        .flat_map(|p| {
            fmt.extensions()
                .iter()
                .map(move |ext| (&**p, fig_dir.join(format!("{}.{ext}", p.stem()))))
        })
        .collect();
    let drawn = crate::plot::in_parallel(&jobs, |(p, path)| p.render(path, FIGURE_SIZE));
    for ((_, path), r) in jobs.into_iter().zip(drawn) {
        match r {
            Ok(()) => w.figures.push(path),
            Err(e) => w.warnings.push(format!("figures: {e:#}")),
        }
    }
}

/// Prefix of the temporary directory [`write_all_atomic`] writes into,
/// inside OUTDIR (so that renames stay on one file system).
pub const TEMP_PREFIX: &str = ".torchtrace-tmp.";

/// An exclusive lock on an output directory, held while it lives: a
/// second `batch` or `merge` on the same OUTDIR is refused instead of
/// interleaving its files with this one's.
#[derive(Debug)]
pub struct OutLock {
    _file: std::fs::File,
    /// Set when the file system does not support locks: the run goes on
    /// unlocked, and this says so (for a warning).
    pub unlocked: Option<String>,
}

/// Creates OUTDIR if needed and locks it (an advisory `flock` on the
/// directory itself, so no file is added to it; where a directory cannot
/// be opened, as on Windows, on a `.torchtrace.lock` file in it); fails at
/// once, without waiting, when another process holds the lock. Temporary
/// directories that a killed run left behind are removed (the lock says
/// nobody is writing them).
pub fn lock_outdir(dir: &Path) -> Result<OutLock, OutputError> {
    create_outdir(dir)?;
    let f = match std::fs::File::open(dir) {
        Ok(f) => f,
        Err(_) => {
            let p = dir.join(".torchtrace.lock");
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&p)
                .map_err(cannot_create(&p))?
        }
    };
    let unlocked = match f.try_lock() {
        Ok(()) => None,
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(OutputError::Locked {
                path: dir.display().to_string(),
            })
        }
        Err(std::fs::TryLockError::Error(e)) => Some(format!(
            "{}: cannot be locked ({e}): a second run on it at the same time would not be stopped",
            dir.display()
        )),
    };
    remove_stale_temps(dir);
    Ok(OutLock { _file: f, unlocked })
}

/// Removes `TEMP_PREFIX*` directories directly under `dir`.
fn remove_stale_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let stale = e.file_name().to_string_lossy().starts_with(TEMP_PREFIX)
            && e.file_type().is_ok_and(|t| t.is_dir());
        if stale {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// [`write_all`] without ever leaving a mix of two runs' outputs: every
/// file is written into a temporary directory inside `dir` first, and only
/// when all of them are written (and every target is checked to be
/// replaceable) are they renamed into place, `figures/` as a whole,
/// `results.json` last. A run killed or failing before that leaves the
/// previous outputs as they were (and at most a temporary directory, which
/// the next run removes); each rename is atomic, so no file is ever seen
/// half written. The paths in the result are the final ones.
pub fn write_all_atomic(
    res: &BatchResult,
    dir: &Path,
    context: &str,
    figures: Option<ImageFormat>,
) -> Result<Written, OutputError> {
    create_outdir(dir)?;
    let tmp = dir.join(format!("{TEMP_PREFIX}{}", std::process::id()));
    if tmp.exists() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    let written = write_all(res, &tmp, context, figures)
        .map_err(|e| e.under(&tmp, dir))
        .and_then(|w| commit(&tmp, dir, w));
    let _ = std::fs::remove_dir_all(&tmp);
    written
}

/// Moves what [`write_all`] wrote into `tmp` to `dir`.
fn commit(tmp: &Path, dir: &Path, w: Written) -> Result<Written, OutputError> {
    let name = |p: &Path| p.strip_prefix(tmp).map(Path::to_path_buf).ok();
    let mut files: Vec<PathBuf> = w.files.iter().filter_map(|p| name(p)).collect();
    // results.json last: once it is new, everything is.
    files.sort_by_key(|f| f == Path::new("results.json"));
    let has_figures = tmp.join("figures").is_dir();
    for f in &files {
        let to = dir.join(f);
        if to.is_dir() {
            return Err(OutputError::IsDirectory {
                path: to.display().to_string(),
                dir: dir.display().to_string(),
            });
        }
    }
    let figs = dir.join("figures");
    if has_figures && figs.exists() && !figs.is_dir() {
        return Err(OutputError::NotDirectory {
            path: figs.display().to_string(),
            dir: dir.display().to_string(),
        });
    }
    let mv = |from: &Path, to: &Path| -> Result<(), OutputError> {
        std::fs::rename(from, to).map_err(|error| OutputError::Move {
            path: to.display().to_string(),
            error,
        })
    };
    // An earlier run's outputs that this run does not write (a campaign
    // without graphs writes no graphs.csv): gone before the new ones come,
    // so OUTDIR never holds two runs' files side by side.
    for stale in sections::all_files() {
        let p = dir.join(stale);
        if p.is_file() && !files.iter().any(|f| f == Path::new(stale)) {
            std::fs::remove_file(&p).map_err(|error| OutputError::Remove {
                path: p.display().to_string(),
                error,
            })?;
        }
    }
    if has_figures {
        let old = tmp.join("figures.old");
        let moved = figs.is_dir();
        if moved {
            mv(&figs, &old)?;
        }
        if let Err(e) = mv(&tmp.join("figures"), &figs) {
            if moved {
                // Put the old figures back: nothing was changed.
                let _ = std::fs::rename(&old, &figs);
            }
            return Err(e);
        }
    }
    for f in &files {
        mv(&tmp.join(f), &dir.join(f))?;
    }
    let fix = |v: Vec<PathBuf>| -> Vec<PathBuf> {
        v.into_iter()
            .map(|p| name(&p).map_or(p, |n| dir.join(n)))
            .collect()
    };
    Ok(Written {
        files: fix(w.files),
        figures: fix(w.figures),
        warnings: w.warnings,
    })
}
