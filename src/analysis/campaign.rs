//! The registry hook for `batch`'s outputs: an analysis that is a
//! subcommand may add its own section to a campaign's outputs
//! ([`crate::api::Command::batch_section`]) — Markdown for `report.md`,
//! files beside it (CSV) and figures — from its own folder, with no edit
//! in `src/batch/`.
//!
//! ```text
//!  BatchResult ─ batch::output::sections ─ Campaign { traces, matches }
//!      │            (every registry entry with a section, in registry order)
//!      │                         ▼
//!      │          A::batch_section(&Campaign) → Option<Section>
//!      │                         │  markdown  → report.md, after its opening
//!      │                         │  files     → OUTDIR/<name> (fixed names)
//!      │                         │  figures   → OUTDIR/figures/<stem>.png|svg
//!      ▼                         ▼
//!   the fixed outputs (results.json, traces.csv' fixed columns,
//!   figures 1–6, the report's opening and closing) unchanged
//! ```
//!
//! More hooks: [`crate::api::Command::BATCH_LISTED`] (its files' entry in
//! report.md's opening `Files:` line), [`crate::api::Command::batch_stdout`]
//! (what `batch` prints, [`Headline`]) and
//! [`crate::api::Command::trace_columns`] /
//! [`crate::api::Command::campaign_trace_columns`] (its `traces.csv`
//! columns).
//!
//! A section sees the campaign as batch grouped it, not as files: every
//! worker trace with figures ([`CampaignTrace`]: read in full or in part,
//! its results, run information — mode, workload — and rank), and the
//! AR/candidate matches of each workload that Table 8 compares
//! ([`Match`], rank by rank). An analysis over groups of traces (the
//! ranks of one run, say) uses [`Campaign::groups`] instead.

use super::{Analysis, Results};
use crate::plot::Picture;
use crate::runinfo::RunInfo;

/// One worker trace of the campaign with figures.
#[derive(Debug, Clone, Copy)]
pub struct CampaignTrace<'a> {
    /// Read without error (status ok). `false`: read in part (status
    /// error), its figures cover the events before the error; such a
    /// trace is in no match and no group.
    pub ok: bool,
    /// Its label (as `traces.csv` and `results.json` name it).
    pub path: &'a str,
    pub results: &'a Results,
    /// Mode, workload, tokens, and where each came from.
    pub run: &'a RunInfo,
    /// `rank<N>` in the vLLM file name, else the trace metadata's rank.
    pub rank: Option<i64>,
}

impl CampaignTrace<'_> {
    /// Analysis `A`'s figures of this trace (tokens set), if it ran.
    pub fn get<A: Analysis>(&self) -> Option<&A::Output> {
        self.results.get::<A>()
    }
}

/// An AR trace (baseline) matched with a trace of another mode
/// (candidate) of the same workload: Table 8's rows, one per match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    pub workload: String,
    /// The candidate's mode (`mtp`, …).
    pub candidate_mode: String,
    /// Indices into [`Campaign::traces`].
    pub baseline: usize,
    pub candidate: usize,
}

/// The traces of one (workload, mode), in path order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub workload: String,
    pub mode: String,
    /// Indices into [`Campaign::traces`].
    pub traces: Vec<usize>,
}

/// A campaign as a batch section sees it.
#[derive(Debug, Clone, Default)]
pub struct Campaign<'a> {
    /// Every worker trace with figures (read without error, or in part:
    /// [`CampaignTrace::ok`]), in path order.
    pub traces: Vec<CampaignTrace<'a>>,
    /// The AR/candidate matches, in Table 8's order.
    pub matches: Vec<Match>,
    /// What batch remarked while matching (a workload without an AR or a
    /// candidate trace, pooled figures, an unusable run summary), in the
    /// order it found them: Table 8 lists them under its rows.
    pub notes: &'a [String],
}

/// A match with both sides' figures of analysis `A`.
pub type Matched<'c, 'a, A> = (
    &'c Match,
    &'c <A as Analysis>::Output,
    &'c <A as Analysis>::Output,
);

impl<'a> Campaign<'a> {
    /// The matches whose two traces both have figures of analysis `A`:
    /// (match, baseline's, candidate's).
    pub fn matched<A: Analysis>(&self) -> Vec<Matched<'_, 'a, A>> {
        self.matches
            .iter()
            .filter_map(|m| {
                let b = self.traces.get(m.baseline)?.get::<A>()?;
                let c = self.traces.get(m.candidate)?.get::<A>()?;
                Some((m, b, c))
            })
            .collect()
    }

    /// The traces read without error that have a workload and a mode,
    /// grouped by (workload, mode) in that order.
    pub fn groups(&self) -> Vec<Group> {
        let mut by: std::collections::BTreeMap<(&str, &str), Vec<usize>> = Default::default();
        for (i, t) in self.traces.iter().enumerate().filter(|(_, t)| t.ok) {
            if let (Some(w), Some(m)) = (t.run.workload(), t.run.mode()) {
                by.entry((w, m)).or_default().push(i);
            }
        }
        by.into_iter()
            .map(|((w, m), traces)| Group {
                workload: w.to_string(),
                mode: m.to_string(),
                traces,
            })
            .collect()
    }
}

/// A file a section writes beside `report.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionFile {
    /// A fixed name (ASCII letters, digits, `_`, `-`, one `.`): never
    /// derived from an input; batch refuses other names and the names of
    /// its own files.
    pub name: String,
    pub text: String,
    /// What it holds, for the report's link (`AR vs MTP per workload`).
    pub what: String,
}

/// What an analysis adds to a campaign's outputs.
#[derive(Default)]
pub struct Section {
    /// For `report.md`: one or more `## ` sections (links to its files and
    /// figures included, so the fixed parts of the report stay as they are),
    /// placed after the report's opening in registry order.
    pub markdown: String,
    pub files: Vec<SectionFile>,
    /// Drawn into `figures/` when figures are asked for, listed with the
    /// report's other figures.
    pub figures: Vec<Box<dyn Picture>>,
}

impl std::fmt::Debug for Section {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stems: Vec<&str> = self.figures.iter().map(|p| p.stem()).collect();
        f.debug_struct("Section")
            .field("markdown", &self.markdown)
            .field("files", &self.files)
            .field("figures", &stems)
            .finish()
    }
}

/// What `batch` prints on stdout for a campaign (besides its counts and
/// failures): the first registry entry that gives one
/// ([`crate::api::Command::batch_stdout`]) — `pair`'s Table 8.
#[derive(Debug, Clone)]
pub struct Headline {
    /// For Markdown and terminal tables.
    pub human: crate::report::Table,
    /// For CSV.
    pub machine: crate::report::Table,
}

/// Whether `name` is a name a section may write: ASCII letters, digits,
/// `_` and `-`, with at most one `.` that is neither first nor last.
pub fn safe_name(name: &str) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let (stem, ext) = name.split_once('.').unwrap_or((name, "x"));
    !stem.is_empty() && !ext.is_empty() && stem.chars().all(ok) && ext.chars().all(ok)
}

#[cfg(test)]
mod tests {
    use super::safe_name;

    #[test]
    fn only_plain_fixed_names_are_safe() {
        for ok in ["iterations.csv", "fig7_x", "a-b.md"] {
            assert!(safe_name(ok), "{ok}");
        }
        for bad in [
            "", ".csv", "a.", "../x.csv", "a/b.csv", "a.b.c", "é.csv", "a b",
        ] {
            assert!(!safe_name(bad), "{bad}");
        }
    }
}
