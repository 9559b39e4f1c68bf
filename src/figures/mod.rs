//! The paper's figures for the RQ4 analysis (AR vs MTP), drawn on the
//! drawing kit (`crate::plot`) with plotters into PNG and/or SVG.
//!
//! The figures take already-computed results ([`PlotInput`]), so `plot`
//! and `batch` draw the same pictures from the same numbers that `pair`
//! and `hierarchy` print:
//!
//! | file stem                    | what it shows                                                   |
//! |------------------------------|-----------------------------------------------------------------|
//! | `fig1_span_distributions`    | CPU- and GPU-context spans per trace: box plots, every context, medians |
//! | `fig2_gpu_span_timeline`     | GPU span against context index, per workload: warm-up, outliers |
//! | `fig3_tokens_and_span_per_token` | P (tokens/context) and GPU span per token; S_context        |
//! | `fig4_hierarchy_medians`     | median inclusive duration of each chain function (Table 9)      |
//! | `fig5_cpu_vs_gpu_span`       | per-context CPU span against GPU span: GPU-bound vs launch-bound |
//! | `fig6_gpu_busy_per_token`    | GPU busy and idle per token, stacked (launch correlation); kernels per token |
//!
//! These six are the paper's figures, drawn from three analyses together
//! (`pair`, `hierarchy`, `kernels`): this module, above the analyses and
//! the kit, is the one place besides the registry and the CLI that names
//! them; `plot` (the CLI) and `batch` only wrap [`render_all`]. Every other figure is drawn
//! in its analysis's folder — `batch`'s `fig7_…`, `fig8_…` through
//! [`crate::plot::Picture`], most simply as a [`crate::plot::StackedBars`] or
//! [`crate::plot::BoxPlots`] built from
//! its figures (see `crate::campaign::Section`), and `ranks`' heatmap
//! (`ranks_<run>`, `crate::analyses::ranks::figure`) on the kit's
//! theme, layout and marks.
//!
//! Text is drawn with an embedded DejaVu Sans (`assets/fonts`, Bitstream
//! Vera licence) registered through plotters' `ab_glyph` support, so no
//! system font or fontconfig is needed. Drawing is deterministic: the
//! same input gives the same bytes.

mod common;
mod distributions;
mod gpu_work;
mod hierarchy;
mod input;
mod prepared;
mod scatter;
mod summary;
mod timeline;

use crate::analyses::pair::{Comparison, TracePairs};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Figure 4's default chains are `hierarchy`'s (re-exported at their old path).
pub use crate::analyses::hierarchy::DEFAULT_PLOT_CHAINS;
pub use crate::plot::{create_dir, ImageFormat, PlotError};
pub use input::{function_medians, plan, CampaignTrace, Measured, Pairing};

/// One trace as the figures see it.
#[derive(Debug, Clone)]
pub struct PlotTrace {
    /// Short name shown in the figures (e.g. `text AR`).
    pub label: String,
    /// `ar`, `mtp`, ... (colour: AR blue, MTP orange, other grey).
    pub mode: Option<String>,
    /// Traces of one workload are drawn as one group.
    pub workload: Option<String>,
    pub pairs: TracePairs,
    /// GPU work by launch correlation, when it was measured.
    pub kernels: Option<crate::analyses::kernels::TraceKernels>,
    /// Hierarchy results: median inclusive duration per chain function.
    pub functions: Vec<FunctionMedian>,
}

/// The median inclusive duration of one chain function in one trace.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionMedian {
    pub name: String,
    pub median_ms: Option<f64>,
    pub calls: u64,
}

/// Everything the figures draw.
#[derive(Debug, Clone, Default)]
pub struct PlotInput {
    pub traces: Vec<PlotTrace>,
    /// (workload or pair label, baseline-vs-candidate comparison).
    pub comparisons: Vec<(String, Comparison)>,
}

/// The figures, in the order they are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    SpanDistributions,
    GpuSpanTimeline,
    TokensAndSpanPerToken,
    HierarchyMedians,
    CpuVsGpuSpan,
    GpuBusyPerToken,
}

impl Figure {
    pub const ALL: [Figure; 6] = [
        Figure::SpanDistributions,
        Figure::GpuSpanTimeline,
        Figure::TokensAndSpanPerToken,
        Figure::HierarchyMedians,
        Figure::CpuVsGpuSpan,
        Figure::GpuBusyPerToken,
    ];

    /// The file name without extension.
    pub fn file_stem(self) -> &'static str {
        match self {
            Figure::SpanDistributions => "fig1_span_distributions",
            Figure::GpuSpanTimeline => "fig2_gpu_span_timeline",
            Figure::TokensAndSpanPerToken => "fig3_tokens_and_span_per_token",
            Figure::HierarchyMedians => "fig4_hierarchy_medians",
            Figure::CpuVsGpuSpan => "fig5_cpu_vs_gpu_span",
            Figure::GpuBusyPerToken => "fig6_gpu_busy_per_token",
        }
    }

    /// The figure's title (also written into the SVG).
    pub fn title(self) -> &'static str {
        match self {
            Figure::SpanDistributions => "Step-context spans per trace",
            Figure::GpuSpanTimeline => "GPU span of each step context",
            Figure::TokensAndSpanPerToken => "Tokens per context and GPU span per token",
            Figure::HierarchyMedians => "Median inclusive duration of the call-chain functions",
            Figure::CpuVsGpuSpan => "CPU span against GPU span, per step context",
            Figure::GpuBusyPerToken => "GPU busy and idle time per generated token",
        }
    }

    fn draw<DB: DrawingBackend>(
        self,
        root: &DrawingArea<DB, Shift>,
        data: &common::Prepared,
    ) -> common::FigResult
    where
        DB::ErrorType: 'static,
    {
        match self {
            Figure::SpanDistributions => distributions::draw(root, data),
            Figure::GpuSpanTimeline => timeline::draw(root, data),
            Figure::TokensAndSpanPerToken => summary::draw(root, data),
            Figure::HierarchyMedians => hierarchy::draw(root, data),
            Figure::CpuVsGpuSpan => scatter::draw(root, data),
            Figure::GpuBusyPerToken => gpu_work::draw(root, data),
        }
    }
}

/// Draws one figure into a file; the extension (`png` or `svg`) picks the
/// backend.
pub fn render_figure(
    fig: Figure,
    input: &PlotInput,
    path: &Path,
    size: (u32, u32),
) -> Result<(), PlotError> {
    let data = common::Prepared::new(input, size);
    crate::plot::render_file(path, size, |r| fig.draw(r, &data), |r| fig.draw(r, &data))
}

/// Draws every figure into `dir` (created if needed) and returns the files
/// written, in order.
pub fn render_all(
    input: &PlotInput,
    dir: &Path,
    fmt: ImageFormat,
    size: (u32, u32),
) -> Result<Vec<PathBuf>, PlotError> {
    create_dir(dir)?;
    let jobs: Vec<(Figure, PathBuf)> = Figure::ALL
        .into_iter()
        .flat_map(|fig| {
            fmt.extensions()
                .iter()
                .map(move |ext| (fig, dir.join(format!("{}.{ext}", fig.file_stem()))))
        })
        .collect();
    // Side by side; the first failure in the figures' order is the error.
    let drawn =
        crate::plot::in_parallel(&jobs, |(fig, path)| render_figure(*fig, input, path, size));
    let mut out = Vec::new();
    for ((_, path), r) in jobs.into_iter().zip(drawn) {
        r?;
        out.push(path);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
