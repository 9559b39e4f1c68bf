//! The frame of the paper's figures for the RQ4 analysis (AR vs MTP): what
//! they are drawn from ([`PlotInput`]: the traces, labelled, grouped by
//! workload and compared, each with its analyses' [`Results`]), how an
//! analysis contributes figures ([`Draws`], [`Drawing`], [`PaperFigure`])
//! and how they are written ([`render_all`]). It names no analysis.
//!
//! Each figure is drawn in the folder of the analysis whose figures it
//! shows, on the drawing kit (`crate::plot`), and reaches `plot` and
//! `batch` through that analysis's registry line
//! (`crate::registry::paper_figures`):
//!
//! | file stem                    | drawn by    | what it shows                                            |
//! |------------------------------|-------------|----------------------------------------------------------|
//! | `fig1_span_distributions`    | `pair`      | CPU- and GPU-context spans per trace: box plots, every context, medians |
//! | `fig2_gpu_span_timeline`     | `pair`      | GPU span against context index, per workload: warm-up, outliers |
//! | `fig3_tokens_and_span_per_token` | `pair`  | P (tokens/context) and GPU span per token; S_context     |
//! | `fig4_hierarchy_medians`     | `hierarchy` | median inclusive duration of each chain function (Table 9) |
//! | `fig5_cpu_vs_gpu_span`       | `pair`      | per-context CPU span against GPU span: GPU-bound vs launch-bound |
//! | `fig6_gpu_busy_per_token`    | `kernels`   | GPU busy and idle per token, stacked (launch correlation); kernels per token |
//!
//! ```text
//!  plot (cli) ─┐  registry::plot_plan ─► one read per trace ─► Results (tokens set)
//!  batch ──────┴► PlotInput { traces (label, mode, workload, &Results), comparisons }
//!                     │ Prepared: theme, workload groups (AR first), positions
//!                     ▼
//!   registry::paper_figures() ─► each PaperFigure's render (its analysis's Drawing)
//!                     ▼
//!        render_all: DIR/<stem>.png|svg, side by side, in figure order
//! ```
//!
//! The same input gives the same bytes: text is drawn with an embedded
//! DejaVu Sans (`assets/fonts`), and each figure into its own file.
//! Every other figure of an analysis (`batch`'s `fig7_…`, `fig8_…`,
//! `ranks`' heatmaps) is a [`crate::plot::Picture`] of its batch section.

pub(crate) mod common;
mod input;
mod prepared;

use crate::analysis::{Analysis, Results};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

pub use crate::plot::{create_dir, ImageFormat, PlotError};
pub use input::{resolve, Measured, Pairing};
pub use prepared::{mode_name, short_label, trace_axis_labels, Group, Prepared};

/// One trace as the figures see it.
#[derive(Debug, Clone)]
pub struct PlotTrace<'a> {
    /// Short name shown in the figures (e.g. `text AR`).
    pub label: String,
    /// `ar`, `mtp`, ... (colour: AR blue, MTP orange, other grey).
    pub mode: Option<String>,
    /// Traces of one workload are drawn as one group.
    pub workload: Option<String>,
    /// The label its results are reported under (the trace's path).
    pub path: String,
    /// Every analysis's figures of it, tokens set.
    pub results: &'a Results,
}

impl<'a> PlotTrace<'a> {
    /// Analysis `A`'s figures of this trace, if it ran.
    pub fn get<A: Analysis>(&self) -> Option<&'a A::Output> {
        self.results.get::<A>()
    }
}

/// A baseline trace compared with a candidate (indices into
/// [`PlotInput::traces`]), under the workload's or the pair's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compared {
    pub name: String,
    pub baseline: usize,
    pub candidate: usize,
}

/// Everything the figures draw.
#[derive(Debug, Clone, Default)]
pub struct PlotInput<'a> {
    pub traces: Vec<PlotTrace<'a>>,
    /// Baseline-vs-candidate comparisons, in the order they were made.
    pub comparisons: Vec<Compared>,
}

/// One figure, drawn the same way into either backend.
pub trait Drawing {
    /// Its number: the figures are written in this order.
    const NUMBER: u32;
    /// The file name without extension (`fig1_span_distributions`).
    const STEM: &'static str;
    /// Its title (also written into the SVG).
    const TITLE: &'static str;

    fn draw<DB: DrawingBackend>(
        root: &DrawingArea<DB, Shift>,
        data: &Prepared,
    ) -> common::FigResult
    where
        DB::ErrorType: 'static;
}

/// Draws one figure into the file `path` at `size` (the extension, `png`
/// or `svg`, picks the backend).
pub type Render = fn(&Path, (u32, u32), &Prepared) -> Result<(), PlotError>;

/// A figure as the registry lists it: what [`Drawing`] says of it, type-erased.
#[derive(Clone, Copy)]
pub struct PaperFigure {
    pub number: u32,
    pub stem: &'static str,
    pub title: &'static str,
    render: Render,
}

impl PaperFigure {
    /// Figure `D`.
    pub const fn of<D: Drawing>() -> PaperFigure {
        PaperFigure {
            number: D::NUMBER,
            stem: D::STEM,
            title: D::TITLE,
            render: render_with::<D>,
        }
    }
}

impl std::fmt::Debug for PaperFigure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaperFigure")
            .field("number", &self.number)
            .field("stem", &self.stem)
            .finish()
    }
}

fn render_with<D: Drawing>(
    path: &Path,
    size: (u32, u32),
    data: &Prepared,
) -> Result<(), PlotError> {
    crate::plot::render_file(path, size, |r| D::draw(r, data), |r| D::draw(r, data))
}

/// What an analysis gives the paper's figures, through its registry line:
/// the figures it draws, its options in `plot`'s one pass, and what `plot`
/// says of its results.
pub trait Draws: Analysis {
    /// Its figures.
    const FIGURES: &'static [PaperFigure];

    /// Its options in `plot`'s plan, as its subcommand takes them in JSON;
    /// `chains`: `plot --chain` (empty: not given).
    fn plot_options(_chains: &[String]) -> serde_json::Value {
        serde_json::json!({})
    }

    /// What `plot` notes of one trace's figures.
    fn plot_notes(_out: &Self::Output) -> Vec<String> {
        Vec::new()
    }

    /// What `plot` notes of the whole input (a figure left empty, say).
    fn input_note(_input: &PlotInput<'_>) -> Option<String> {
        None
    }
}

/// Draws one figure into a file; the extension (`png` or `svg`) picks the
/// backend.
pub fn render_figure(
    fig: &PaperFigure,
    input: &PlotInput,
    path: &Path,
    size: (u32, u32),
) -> Result<(), PlotError> {
    (fig.render)(path, size, &Prepared::new(input, size))
}

/// Draws `figures` (in the order given) into `dir` (created if needed) and
/// returns the files written, in order.
pub fn render_all(
    input: &PlotInput,
    figures: &[&PaperFigure],
    dir: &Path,
    fmt: ImageFormat,
    size: (u32, u32),
) -> Result<Vec<PathBuf>, PlotError> {
    create_dir(dir)?;
    let jobs: Vec<(&PaperFigure, PathBuf)> = figures
        .iter()
        .flat_map(|fig| {
            fmt.extensions()
                .iter()
                .map(move |ext| (*fig, dir.join(format!("{}.{ext}", fig.stem))))
        })
        .collect();
    // Side by side; the first failure in the figures' order is the error.
    let drawn =
        crate::plot::in_parallel(&jobs, |(fig, path)| render_figure(fig, input, path, size));
    let mut out = Vec::new();
    for ((_, path), r) in jobs.into_iter().zip(drawn) {
        r?;
        out.push(path);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
