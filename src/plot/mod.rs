//! The drawing kit: plotters with the house theme (embedded DejaVu Sans,
//! AR blue / MTP orange, series colours), layout (axes, ranges, number
//! formats, legends), marks, and two ready charts built from plain figures —
//! [`StackedBars`] and [`BoxPlots`] — that any analysis's [`Picture`] can
//! return. The kit names no analysis: every figure is drawn in its
//! analysis's folder on this kit, the paper's six also on their frame
//! (`crate::figures`: their input, workload groups and trace axis).
//!
//! Text is drawn with an embedded DejaVu Sans (`assets/fonts`, Bitstream
//! Vera licence) registered through plotters' `ab_glyph` support, so no
//! system font or fontconfig is needed; PNG text is laid out by [`Kerned`]
//! (plotters 0.3.7 drops each glyph's left bearing). Drawing is deterministic: the
//! same input gives the same bytes.

mod boxes;
pub(crate) mod common;
pub(crate) mod layout;
pub(crate) mod marks;
mod stacked;
mod text;
pub(crate) mod theme;

use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

pub use crate::campaign::{Picture, PlotError};
pub use boxes::{BoxGroup, BoxPlots, BoxSeries};
pub use stacked::{BarGroup, Segment, StackedBar, StackedBars};
pub use text::Kerned;
pub use theme::{mode_color, series_color, SERIES};

/// `draw` of each job on up to as many threads as the run may use (`-j`:
/// rayon's pool), the answers in the jobs' order
/// (`crate::parallel::in_threads`). Each job is a figure drawn into its
/// own file, so drawing them side by side writes the same bytes as one
/// after another (`batch`'s figures were its last serial step after the
/// read, ≈ 0.2 s for one trace).
pub fn in_parallel<T: Sync, R: Send>(jobs: &[T], draw: impl Fn(&T) -> R + Sync) -> Vec<R> {
    crate::parallel::in_threads(jobs.iter().collect(), rayon::current_num_threads(), draw)
        .into_iter()
        .map(|r| r.expect("every figure is drawn once its threads end"))
        .collect()
}

/// Draws into a file with the backend its extension names (`svg`, else
/// PNG): `png` and `svg` are the same drawing for each backend (a
/// drawing function is generic over the backend, a closure cannot be).
pub fn render_file<P, S>(path: &Path, size: (u32, u32), png: P, svg: S) -> Result<(), PlotError>
where
    P: FnOnce(&DrawingArea<Kerned<BitMapBackend<'_>>, Shift>) -> common::FigResult,
    S: FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> common::FigResult,
{
    if size.0 < 200 || size.1 < 150 {
        return Err(PlotError::Size(size.0, size.1));
    }
    common::register_fonts()?;
    let draw_err = |e: Box<dyn std::error::Error + Send + Sync>| PlotError::Draw {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    if path.extension().and_then(|e| e.to_str()) == Some("svg") {
        let root = SVGBackend::new(path, size).into_drawing_area();
        svg(&root).map_err(draw_err)?;
        root.present().map_err(|e| draw_err(e.into()))?;
    } else {
        let root = Kerned(BitMapBackend::new(path, size)).into_drawing_area();
        png(&root).map_err(draw_err)?;
        root.present().map_err(|e| draw_err(e.into()))?;
    }
    Ok(())
}

/// Which files to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Svg,
    Both,
}

impl ImageFormat {
    /// The file extensions written, in order.
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            ImageFormat::Png => &["png"],
            ImageFormat::Svg => &["svg"],
            ImageFormat::Both => &["png", "svg"],
        }
    }
}

/// Creates `dir` (and its parents) for figures.
pub fn create_dir(dir: &Path) -> Result<(), PlotError> {
    std::fs::create_dir_all(dir).map_err(|source| PlotError::Dir {
        path: dir.display().to_string(),
        source,
    })
}
