//! `figures/`: the paper's figures of every trace read without error,
//! labelled "workload MODE", grouped and compared as the workload
//! comparisons say (the campaign the sections see).

use crate::batch::BatchResult;
use crate::figures::{self, ImageFormat, PlotInput};
use std::path::{Path, PathBuf};

/// Figure size in pixels.
pub const FIGURE_SIZE: (u32, u32) = (1280, 800);

/// Draws the paper's figures ([`crate::registry::paper_figures`]) into `dir`.
pub fn render_figures(
    res: &BatchResult,
    dir: &Path,
    fmt: ImageFormat,
) -> Result<Vec<PathBuf>, figures::PlotError> {
    let campaign = super::sections::campaign(res);
    let input = PlotInput::from_campaign(&campaign);
    let all = crate::registry::paper_figures();
    figures::render_all(&input, &all, dir, fmt, FIGURE_SIZE)
}
