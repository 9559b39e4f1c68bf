//! Run information: completion tokens, decoding mode and workload of a
//! trace, each with where it came from, resolved the same way for every
//! subcommand and `batch`; and the trace labels. (Trace-file naming —
//! suffixes, stems, which summary belongs to a trace — is
//! `crate::tracefile`'s, re-exported here.)
//!
//! Precedence (the first source that has the value wins, per value):
//!
//! | # | source                                   | tokens | mode | workload |
//! |---|------------------------------------------|--------|------|----------|
//! | 1 | a flag (`--tokens`, `--mode`)            | ✓      | ✓    |          |
//! | 2 | `--summary FILE`                         | ✓      | ✓    | ✓        |
//! | 3 | the run summary beside the trace         | ✓      | ✓    | ✓        |
//! | 4 | `--manifest CSV` (batch)                 | ✓      | ✓    | ✓        |
//! | 5 | the step grammar of the selected context |        | ✓    |          |
//! | 6 | the trace's directory name (batch)       |        |      | ✓        |
//!
//! A summary is `X.summary.json` beside `X.pt.trace.json[.gz]`
//! ([`crate::summary`]). The step grammar gives `ar` for
//! `generation_1(1)` and `mtp` for `generation_1(k+1)`. The directory name
//! loses a trailing `_<mode>` (`text_ar` → `text`).

use crate::contexts::StepName;
use crate::steps;
use crate::summary::{self, RunSummary, SummaryError};
use serde::Serialize;
use std::path::{Path, PathBuf};

// Trace-file naming has its own home; these names stay here for callers.
pub use crate::tracefile::{file_stem, trace_stem, TRACE_SUFFIXES};

/// A decoding mode's class: what colours a trace and makes it a baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Autoregressive decoding (the baseline).
    Ar,
    /// Speculative decoding (MTP, EAGLE, …; the candidate).
    Mtp,
    /// Anything else.
    Other,
}

impl Mode {
    /// Normalises a mode name: trimmed, lower-cased; `autoregressive`,
    /// `baseline` and `none` become `ar`; others stay as written.
    pub fn normalize(name: &str) -> String {
        let m = name.trim().to_ascii_lowercase();
        match m.as_str() {
            "autoregressive" | "baseline" | "none" => "ar".into(),
            _ => m,
        }
    }

    /// Classifies a mode name: `ar` (and what [`Mode::normalize`] makes
    /// `ar`) → AR; `mtp`, `eagle`, `spec…`, `draft…`, `candidate` → MTP.
    pub fn of(name: &str) -> Mode {
        let m = Mode::normalize(name);
        if m == "ar" {
            Mode::Ar
        } else if m.contains("mtp")
            || m.contains("eagle")
            || m.starts_with("spec")
            || m.contains("draft")
            || m == "candidate"
        {
            Mode::Mtp
        } else {
            Mode::Other
        }
    }

    /// [`Mode::of`] for an optional name (none → other).
    pub fn of_opt(name: Option<&str>) -> Mode {
        name.map_or(Mode::Other, Mode::of)
    }

    /// A mode name as shown: `AR`, `MTP` (any case), else as written.
    pub fn display(name: &str) -> String {
        if name.eq_ignore_ascii_case("ar") || name.eq_ignore_ascii_case("mtp") {
            name.to_ascii_uppercase()
        } else {
            name.to_string()
        }
    }
}

/// Where a value of [`RunInfo`] came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A command-line flag (its spelling, e.g. `--tokens`).
    Flag(&'static str),
    /// `--summary FILE` (its path).
    SummaryFile(String),
    /// The run summary beside the trace (its path or label).
    Summary(String),
    /// `--manifest`.
    Manifest,
    /// The step grammar of the selected step name.
    StepName,
    /// The directory holding the trace.
    Directory,
}

impl Source {
    /// The kind of source, as `results.json`'s `*_source` keys say it.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Flag(_) => "flag",
            Source::SummaryFile(_) | Source::Summary(_) => "summary",
            Source::Manifest => "manifest",
            Source::StepName => "annotation",
            Source::Directory => "directory",
        }
    }

    /// The source in full: the flag, the summary's path, or the kind.
    pub fn describe(&self) -> String {
        match self {
            Source::Flag(f) => f.to_string(),
            Source::SummaryFile(p) | Source::Summary(p) => p.clone(),
            other => other.kind().to_string(),
        }
    }
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

/// What is known about the run a trace belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunInfo {
    pub tokens: Option<Sourced<u64>>,
    /// Normalised ([`Mode::normalize`]).
    pub mode: Option<Sourced<String>>,
    pub workload: Option<Sourced<String>>,
    /// Draft tokens per step of the selected step name (0 under AR).
    pub speculative_depth: Option<u64>,
}

impl RunInfo {
    pub fn mode(&self) -> Option<&str> {
        self.mode.as_ref().map(|m| m.value.as_str())
    }

    pub fn workload(&self) -> Option<&str> {
        self.workload.as_ref().map(|w| w.value.as_str())
    }

    pub fn tokens(&self) -> Option<u64> {
        self.tokens.as_ref().map(|t| t.value)
    }

    /// The mode's class (none → other).
    pub fn mode_class(&self) -> Mode {
        Mode::of_opt(self.mode())
    }
}

/// `--manifest CSV`: path,mode,workload,completion_tokens.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    pub rows: Vec<ManifestRow>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ManifestRow {
    pub path: String,
    #[serde(default, deserialize_with = "empty_none")]
    pub mode: Option<String>,
    #[serde(default, deserialize_with = "empty_none")]
    pub workload: Option<String>,
    #[serde(default, deserialize_with = "empty_none_u64")]
    pub completion_tokens: Option<u64>,
}

fn empty_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s: Option<String> = serde::Deserialize::deserialize(d)?;
    Ok(s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty()))
}

/// A count written as text (CSV: blank → none) or as a number (the
/// manifest inside a record's header, JSON).
fn empty_none_u64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    // Every shape a CSV or JSON value can take, so that a wrong one gets a
    // message naming it (not "did not match any variant of untagged enum").
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Count {
        Number(u64),
        Signed(i64),
        Float(f64),
        Text(String),
        Other(serde::de::IgnoredAny),
    }
    let bad = |shown: &str| {
        serde::de::Error::custom(format!(
            "completion_tokens {shown} is not a token count (a whole number ≥ 0, or blank)"
        ))
    };
    match <Option<Count> as serde::Deserialize>::deserialize(d)? {
        None => Ok(None),
        Some(Count::Number(n)) => Ok(Some(n)),
        Some(Count::Signed(n)) => Err(bad(&n.to_string())),
        Some(Count::Float(x)) => Err(bad(&x.to_string())),
        Some(Count::Other(_)) => Err(bad("(not a number)")),
        Some(Count::Text(s)) => {
            let s = s.trim();
            (!s.is_empty())
                .then(|| {
                    s.parse::<u64>()
                        .map_err(|_| bad(&format!("{:?}", crate::trace::message::clip_str(s))))
                })
                .transpose()
        }
    }
}

/// Why a manifest cannot be used. The messages carry the file (and the
/// row); no error here has a `source`, so `{:#}` prints the message alone.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// It cannot be opened or is not CSV.
    #[error("{path}: {error}")]
    Open { path: String, error: csv::Error },
    /// A row that cannot be read (its line; the header is row 1).
    #[error("{path}: row {row}: {what}")]
    Row {
        path: String,
        row: u64,
        what: String,
    },
    /// Two rows give one path different values.
    #[error(
        "{path}: rows {first} and {second} both give {name:?} with different values: keep one"
    )]
    Conflict {
        path: String,
        first: usize,
        second: usize,
        name: String,
    },
}

/// A manifest row that cannot be read, as one message: the file, the row
/// (its line; the header is row 1) and what is wrong, without the CSV
/// reader's own record and byte counts.
fn row_error(path: &Path, row: usize, e: &csv::Error) -> ManifestError {
    let row = e.position().map_or(row as u64, |p| p.line());
    let what = match e.kind() {
        csv::ErrorKind::Deserialize { err, .. } => match err.kind() {
            csv::DeserializeErrorKind::Message(m) => m.clone(),
            _ => err.to_string(),
        },
        _ => e.to_string(),
    };
    ManifestError::Row {
        path: path.display().to_string(),
        row,
        what,
    }
}

impl Manifest {
    /// Reads a `--manifest` CSV (`path,mode,workload,completion_tokens`).
    pub fn read(path: &Path) -> Result<Manifest, ManifestError> {
        let mut rd = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_path(path)
            .map_err(|error| ManifestError::Open {
                path: path.display().to_string(),
                error,
            })?;
        let mut rows: Vec<ManifestRow> = Vec::new();
        // Line of the first row of each path: a second row with other
        // values is an error (which one is meant?); an identical one is
        // dropped.
        let mut first: std::collections::HashMap<String, (usize, usize)> =
            std::collections::HashMap::new();
        for (i, row) in rd.deserialize::<ManifestRow>().enumerate() {
            let row = row.map_err(|e| row_error(path, i + 2, &e))?;
            match first.get(&row.path) {
                Some(&(_, k)) if rows[k] == row => continue,
                Some(&(line, _)) => {
                    return Err(ManifestError::Conflict {
                        path: path.display().to_string(),
                        first: line,
                        second: i + 2,
                        name: crate::trace::message::clip_str(&row.path),
                    })
                }
                None => {
                    first.insert(row.path.clone(), (i + 2, rows.len()));
                    rows.push(row);
                }
            }
        }
        Ok(Manifest { rows })
    }

    /// The row for a file: its label equals the manifest path, or its
    /// label or location on disk ends with the manifest path (whole path
    /// components). The longest match wins.
    pub fn lookup(&self, label: &str, fs_path: Option<&Path>) -> Option<&ManifestRow> {
        let fs = fs_path.map(|p| p.to_string_lossy().replace('\\', "/"));
        let ends_with = |hay: &str, needle: &str| {
            hay == needle
                || (hay.ends_with(needle) && hay[..hay.len() - needle.len()].ends_with('/'))
        };
        self.rows
            .iter()
            .filter(|r| {
                let want = r.path.trim_start_matches("./").replace('\\', "/");
                !want.is_empty()
                    && (ends_with(label, &want)
                        || fs.as_deref().is_some_and(|f| ends_with(f, &want)))
            })
            .max_by_key(|r| r.path.len())
    }
}

/// Everything that may say something about a trace's run, strongest
/// first; [`Evidence::resolve`] applies the precedence.
#[derive(Debug, Clone, Default)]
pub struct Evidence<'a> {
    pub tokens_flag: Option<u64>,
    pub mode_flag: Option<&'a str>,
    /// `--summary FILE`: (path as shown, contents).
    pub summary_file: Option<(String, RunSummary)>,
    /// The summary beside the trace: (path or label, contents).
    pub summary_beside: Option<(String, RunSummary)>,
    pub manifest: Option<&'a ManifestRow>,
    /// The step names of the trace (the selected one gives the mode).
    pub step_names: &'a [StepName],
    /// The name of the directory holding the trace.
    pub dir_name: Option<&'a str>,
}

impl Evidence<'_> {
    /// Applies the documented precedence to every value.
    pub fn resolve(&self) -> RunInfo {
        let summaries: Vec<(Source, &RunSummary)> = [
            self.summary_file
                .as_ref()
                .map(|(p, s)| (Source::SummaryFile(p.clone()), s)),
            self.summary_beside
                .as_ref()
                .map(|(p, s)| (Source::Summary(p.clone()), s)),
        ]
        .into_iter()
        .flatten()
        .collect();
        let manifest = self.manifest;
        let speculative_depth = speculative_depth(self.step_names);
        let tokens = sourced(self.tokens_flag, Source::Flag("--tokens"))
            .or_else(|| pick(&summaries, |s| s.completion_tokens))
            .or_else(|| sourced(manifest?.completion_tokens, Source::Manifest));
        let mode = sourced(self.mode_flag.map(str::to_string), Source::Flag("--mode"))
            .or_else(|| pick(&summaries, |s| s.mode.clone()))
            .or_else(|| sourced(manifest?.mode.clone(), Source::Manifest))
            .map(|m| Sourced {
                value: Mode::normalize(&m.value),
                source: m.source,
            })
            .or_else(|| {
                let d = speculative_depth?;
                sourced(
                    Some(if d == 0 { "ar" } else { "mtp" }.into()),
                    Source::StepName,
                )
            });
        let workload = pick(&summaries, |s| s.workload.clone())
            .or_else(|| sourced(manifest?.workload.clone(), Source::Manifest))
            .or_else(|| {
                let d = self.dir_name?;
                sourced(Some(workload_of_dir(d, mode.as_ref())), Source::Directory)
            });
        RunInfo {
            tokens,
            mode,
            workload,
            speculative_depth,
        }
    }
}

fn sourced<T>(value: Option<T>, source: Source) -> Option<Sourced<T>> {
    value.map(|value| Sourced { value, source })
}

/// The first summary that has the value.
fn pick<T>(
    summaries: &[(Source, &RunSummary)],
    get: impl Fn(&RunSummary) -> Option<T>,
) -> Option<Sourced<T>> {
    summaries
        .iter()
        .find_map(|(src, s)| sourced(get(s), src.clone()))
}

/// A directory's name less a trailing `_<mode>` or `-<mode>`.
fn workload_of_dir(dir: &str, mode: Option<&Sourced<String>>) -> String {
    mode.and_then(|m| {
        dir.strip_suffix(&format!("_{}", m.value))
            .or_else(|| dir.strip_suffix(&format!("-{}", m.value)))
    })
    .filter(|w| !w.is_empty())
    .unwrap_or(dir)
    .to_string()
}

/// What the command line says about one trace's run.
#[derive(Debug, Clone, Default)]
pub struct Given {
    /// `--tokens N`.
    pub tokens: Option<u64>,
    /// `--mode MODE`.
    pub mode: Option<String>,
    /// `--summary FILE`: read instead of the summary beside the trace.
    pub summary: Option<PathBuf>,
}

/// Why completion tokens given for some of `n` traces but not all are
/// refused (`None`: given for every trace, or for none). The others would
/// take their run summaries' tokens without a word, and a ratio of the
/// two sides (S_context) would mix a number the user typed with one the
/// run counted: `pair --tokens 5 AR MTP` gave S_context 34.08 instead of
/// 2.51 (issue 38). Every subcommand that takes tokens checks it here.
pub fn partial_tokens(given: &[Given], n: usize) -> Option<String> {
    let with = given.iter().take(n).filter(|g| g.tokens.is_some()).count();
    (with > 0 && with < n).then(|| {
        format!(
            "completion tokens (--tokens) given for {with} of {n} traces: give them once for every trace, in order, or for none (each trace's run summary then gives its own)"
        )
    })
}

impl RunInfo {
    /// Resolves a trace file's run information from the command line, its
    /// summary (`--summary`, else the one beside it) and its step names.
    /// An unreadable summary is an error.
    pub fn for_trace(
        trace: &Path,
        given: &Given,
        step_names: &[StepName],
    ) -> Result<RunInfo, SummaryError> {
        let (summary_file, summary_beside) = match &given.summary {
            Some(p) => (Some((p.display().to_string(), summary::read(p)?)), None),
            None => (
                None,
                summary::beside(trace)?.map(|(p, s)| (p.display().to_string(), s)),
            ),
        };
        Ok(Evidence {
            tokens_flag: given.tokens,
            mode_flag: given.mode.as_deref(),
            summary_file,
            summary_beside,
            step_names,
            ..Default::default()
        }
        .resolve())
    }
}

/// Draft tokens per request of the selected (most frequent) pure-decode
/// step name.
pub fn speculative_depth(step_names: &[StepName]) -> Option<u64> {
    step_names
        .iter()
        .filter(|s| s.selected)
        .filter_map(|s| steps::parse(&s.name).map(|p| (s, p)))
        .filter(|(_, p)| p.is_pure_decode())
        .max_by(|(a, _), (b, _)| a.count.cmp(&b.count).then(b.name.cmp(&a.name)))
        .and_then(|(_, p)| p.speculative_depth())
}

/// The one label of a trace in figures and their legends: `workload MODE`
/// (`text MTP`), else the workload, else the file's stem.
pub fn label(path: &str, mode: Option<&str>, workload: Option<&str>) -> String {
    match (workload, mode) {
        (Some(w), Some(m)) => format!("{w} {}", Mode::display(m)),
        (Some(w), None) => w.to_string(),
        _ => file_stem(path),
    }
}

/// Makes labels distinct: a repeated label gets ` #<position>`.
pub fn distinct(labels: &mut [String]) {
    for i in 1..labels.len() {
        if labels[..i].contains(&labels[i]) {
            // `#(i + 1)`, or the next number free: an earlier label may
            // itself be written `x #3` (the `grouping` fuzz target).
            let free = (i + 1..)
                .map(|k| format!("{} #{k}", labels[i]))
                .find(|l| !labels[..i].contains(l));
            if let Some(l) = free {
                labels[i] = l;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_labels() {
        assert_eq!(Mode::normalize(" Autoregressive "), "ar");
        assert_eq!(Mode::of("EAGLE"), Mode::Mtp);
        assert_eq!(Mode::of("baseline"), Mode::Ar);
        assert_eq!(Mode::of("other"), Mode::Other);
        assert_eq!(Mode::display("mtp"), "MTP");
        assert_eq!(label("d/x.json", Some("ar"), Some("text")), "text AR");
        assert_eq!(label("d/x.json", None, None), "x");
        // An earlier label written like a numbered one (issue 59's
        // grouping fuzz target): still distinct.
        let mut l = vec!["a #3".to_string(), "a".into(), "a".into()];
        distinct(&mut l);
        assert_eq!(l, ["a #3", "a", "a #4"]);
    }

    #[test]
    fn tokens_for_some_traces_only_are_refused() {
        let t = |n| Given {
            tokens: n,
            ..Default::default()
        };
        assert_eq!(partial_tokens(&[], 2), None);
        assert_eq!(partial_tokens(&[t(Some(5)), t(Some(9))], 2), None);
        assert_eq!(partial_tokens(&[t(Some(5))], 1), None);
        let why = partial_tokens(&[t(Some(5))], 2).unwrap();
        assert!(why.contains("given for 1 of 2 traces"), "{why}");
        assert!(partial_tokens(&[t(None), t(Some(5))], 2).is_some());
    }

    #[test]
    fn precedence() {
        let s = |m: &str, w: &str, t| RunSummary {
            completion_tokens: t,
            mode: Some(m.into()),
            workload: Some(w.into()),
        };
        let e = Evidence {
            tokens_flag: None,
            summary_file: Some(("f.json".into(), s("MTP", "a", None))),
            summary_beside: Some(("b.json".into(), s("ar", "b", Some(7)))),
            manifest: Some(&ManifestRow {
                path: "x".into(),
                mode: None,
                workload: None,
                completion_tokens: Some(1),
            }),
            dir_name: Some("text_mtp"),
            ..Default::default()
        };
        let r = e.resolve();
        assert_eq!(r.tokens().unwrap(), 7);
        assert_eq!(r.tokens.unwrap().source.describe(), "b.json");
        assert_eq!(r.mode.unwrap().value, "mtp");
        assert_eq!(r.workload.unwrap().value, "a");
        let r = Evidence {
            dir_name: Some("text_mtp"),
            mode_flag: Some("mtp"),
            ..Default::default()
        }
        .resolve();
        assert_eq!(r.workload.unwrap().value, "text");
        assert_eq!(r.mode.unwrap().source.kind(), "flag");
    }
}
