//! A figure of an analysis's campaign section, as `batch` draws it: the
//! contract between an analysis (which builds one, most simply from the
//! drawing kit's `StackedBars` or `BoxPlots`) and `batch` (which draws it
//! into `figures/`), so neither the campaign contract nor the engine
//! depends on the drawing kit. `crate::plot` re-exports both.

use std::path::Path;

/// A figure drawn outside the drawing kit's fixed list (an analysis's
/// batch section, [`super::Section`]): its file stem, and how to draw it
/// into a file (`.png` or `.svg` by the path's extension).
pub trait Picture: Send + Sync {
    /// The file name without extension; a fixed name of ASCII letters,
    /// digits and `_` (batch refuses others).
    fn stem(&self) -> &str;
    /// Draws it into `path` at `size` pixels.
    fn render(&self, path: &Path, size: (u32, u32)) -> Result<(), PlotError>;
}

/// Errors while drawing or writing figures.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("{path}: cannot create output directory: {source}")]
    Dir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("embedded font could not be registered")]
    Font,
    #[error("{path}: drawing failed: {message}")]
    Draw { path: String, message: String },
    #[error("figure size {0}x{1} is too small (at least 200x150)")]
    Size(u32, u32),
}
