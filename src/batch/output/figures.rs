//! `figures/`: the figures of every trace read without error, labelled
//! "workload MODE", grouped and compared as the workload comparisons say.

use crate::batch::{BatchResult, Status};
use crate::figures::{self, CampaignTrace, ImageFormat, PlotInput};
use std::path::{Path, PathBuf};

/// Figure size in pixels.
pub const FIGURE_SIZE: (u32, u32) = (1280, 800);

/// The figures' input, built as `plot` builds it, from every trace's
/// results and the workload comparisons.
pub fn plot_input(res: &BatchResult) -> PlotInput {
    let traces: Vec<CampaignTrace<'_>> = res
        .records
        .iter()
        .map(|r| CampaignTrace {
            ok: r.file.status == Status::Ok,
            results: &r.file.results,
            run: &r.run,
        })
        .collect();
    let matches: Vec<(String, usize, usize)> = res
        .comparisons
        .iter()
        .map(|c| (c.workload.clone(), c.baseline_index, c.candidate_index))
        .collect();
    PlotInput::from_campaign(&traces, &matches)
}

/// Draws the figures into `dir`.
pub fn render_figures(
    res: &BatchResult,
    dir: &Path,
    fmt: ImageFormat,
) -> Result<Vec<PathBuf>, figures::PlotError> {
    figures::render_all(&plot_input(res), dir, fmt, FIGURE_SIZE)
}
