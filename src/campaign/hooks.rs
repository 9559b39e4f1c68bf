//! What an analysis gives a campaign: one trait, [`InBatch`], implemented
//! in the analysis's own `batch.rs`, every hook a default method that
//! gives nothing. The registry line `Entry::in_batch::<A>()` runs the
//! analysis on every worker trace of `batch` and collects these.

use super::{Campaign, CampaignOptions, Compared, Headline, Pooled, Section, TraceFacts};
use crate::analysis::Analysis;
use crate::views::Column;

/// An analysis that runs on every worker trace of a `batch` campaign:
/// its section of the outputs, its `traces.csv` and `report.md` columns,
/// its figures in `results.json`'s comparisons, and what batch needs of it
/// to match traces. Every hook is optional.
pub trait InBatch: Analysis {
    /// Its `traces.csv` keys are written as they are, without the `NAME_`
    /// prefix: `pair`'s and `hierarchy`'s columns, older than the prefix,
    /// keep the names users' scripts read.
    const LEGACY_TRACE_KEYS: bool = false;
    /// Its section's entry in `report.md`'s opening `Files:` line, after
    /// `results.json` and `traces.csv` (`pair`: `[workloads.csv](workloads.csv)
    /// / [workloads.md](workloads.md) (Table 8)`); `None` (the default): its
    /// files are linked from its own section only.
    const BATCH_LISTED: Option<&'static str> = None;
    /// The names of every file its section may write beside `report.md`
    /// (its [`Section`]'s files): `batch` refuses a file not named here,
    /// and removes a file of these names that an earlier run left in
    /// OUTDIR and this run did not write (a campaign without graphs has
    /// no `graphs.csv`), so OUTDIR never mixes two runs' outputs.
    const BATCH_FILES: &'static [&'static str] = &[];
    /// Its section of a campaign's outputs: Markdown for `report.md`, CSV
    /// files and figures, from the campaign's traces as batch grouped and
    /// matched them ([`crate::campaign`]). `None` (the default): nothing
    /// beyond the fixed outputs.
    fn batch_section(_campaign: &Campaign<'_>) -> Option<Section> {
        None
    }
    /// What `batch` prints on stdout for the campaign (the first registry
    /// entry with one is printed); `None` (the default): nothing.
    fn batch_stdout(_campaign: &Campaign<'_>) -> Option<Headline> {
        None
    }
    /// The answer `batch` prints first on stdout, before the headline
    /// table (Markdown: a heading and a line per workload); every registry
    /// entry's, in registry order. `None` (the default): none.
    fn batch_answer(_campaign: &Campaign<'_>) -> Option<String> {
        None
    }
    /// Its columns in `batch`'s `traces.csv` (one row per input file),
    /// after the fixed ones, each key prefixed with `NAME_` (unless
    /// [`InBatch::LEGACY_TRACE_KEYS`]); `outputs` are its figures of every
    /// file, in path order, for columns that depend on the campaign (one
    /// column per chain function any trace has, say). Empty (the default):
    /// none.
    fn trace_columns(_outputs: &[&Self::Output]) -> Vec<Column<Self::Output>> {
        Vec::new()
    }
    /// Its columns in `report.md`'s "Worker traces" table, after the
    /// trace, its status, mode and workload; labels are the headers.
    /// Empty (the default): none.
    fn report_columns() -> Vec<Column<Self::Output>> {
        Vec::new()
    }
    /// What its figures say of a trace's run, for `batch`'s matching: the
    /// step names (the mode is read from them where nothing else gives it)
    /// and the metadata's rank. The first registry entry that gives them
    /// is used, and a worker trace without them is in no match (`pair`'s:
    /// a trace without step contexts has nothing to compare). `None` (the
    /// default): nothing.
    fn trace_facts(_output: &Self::Output) -> Option<TraceFacts<'_>> {
        None
    }
    /// Its figures in `results.json`'s comparison of an AR trace
    /// (baseline) matched with a trace of another mode (candidate), given
    /// each side's figures where it ran. `None` (the default): none.
    fn batch_compare(
        _baseline: Option<&Self::Output>,
        _candidate: Option<&Self::Output>,
    ) -> Option<Compared> {
        None
    }
    /// Its figures over every run of each side of a workload
    /// (`results.json`'s `pooled`; a workload is pooled when an analysis
    /// gives them), and what the notes say of them. `None` (the default).
    fn batch_pool(
        _workload: &str,
        _baseline: &[&Self::Output],
        _candidate: &[&Self::Output],
    ) -> Option<Pooled> {
        None
    }
    /// Options `batch` gives it from the campaign's common flags where its
    /// own options do not name them (`hierarchy`'s chains: `--chain`, else
    /// the figures'). Default: none.
    fn batch_defaults(_campaign: &CampaignOptions) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
}
