//! `figures/`: the figures of every trace read without error, labelled
//! "workload MODE", grouped and compared as the workload comparisons say.

use crate::batch::{BatchResult, Status};
use crate::plot::{self, ImageFormat, Measured, Pairing, PlotInput};
use std::path::{Path, PathBuf};

/// Figure size in pixels.
pub const FIGURE_SIZE: (u32, u32) = (1280, 800);

/// The figures' input, built as `plot` builds it.
pub fn plot_input(res: &BatchResult) -> PlotInput {
    let measured = res
        .records
        .iter()
        .filter(|r| r.file.status == Status::Ok)
        .filter_map(|r| {
            Some(Measured {
                pairs: r.file.pairs().cloned()?,
                hierarchy: r.file.hierarchy(),
                kernels: r.file.kernels().cloned(),
                run: r.run.clone(),
            })
        })
        .collect();
    let comparisons = res
        .comparisons
        .iter()
        .map(|c| (c.workload.clone(), c.comparison.clone()))
        .collect();
    PlotInput::build(measured, Pairing::Given(comparisons))
}

/// Draws the figures into `dir`.
pub fn render_figures(
    res: &BatchResult,
    dir: &Path,
    fmt: ImageFormat,
) -> Result<Vec<PathBuf>, plot::PlotError> {
    plot::render_all(&plot_input(res), dir, fmt, FIGURE_SIZE)
}
