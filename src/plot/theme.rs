//! The look of every figure: the embedded font, the colours (AR blue,
//! MTP orange, other grey) and the pixel sizes scaled with the figure.

use super::PlotError;
use crate::runinfo::Mode;
use plotters::prelude::*;
use std::sync::OnceLock;

pub type FigResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// The family every text of the figures uses; registered with the
/// embedded DejaVu Sans.
pub const FAMILY: &str = "sans-serif";

static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
static DEJAVU_SANS_BOLD: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans-Bold.ttf");

/// The embedded font file of a style (bold, else regular): what
/// [`register_fonts`] gives plotters, and what `super::text` lays PNG
/// text out with.
pub(crate) fn font_bytes(style: FontStyle) -> &'static [u8] {
    match style {
        FontStyle::Bold => DEJAVU_SANS_BOLD,
        _ => DEJAVU_SANS,
    }
}

/// Registers the embedded fonts once.
pub fn register_fonts() -> Result<(), PlotError> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE.get_or_init(|| {
        plotters::style::register_font(FAMILY, FontStyle::Normal, DEJAVU_SANS).is_ok()
            && plotters::style::register_font(FAMILY, FontStyle::Bold, DEJAVU_SANS_BOLD).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(PlotError::Font)
    }
}
pub const AR_BLUE: RGBColor = RGBColor(31, 119, 180);
pub const MTP_ORANGE: RGBColor = RGBColor(255, 127, 14);
pub const OTHER_GREY: RGBColor = RGBColor(127, 127, 127);
pub const OUTLIER_RED: RGBColor = RGBColor(214, 39, 40);
pub const INK: RGBColor = RGBColor(30, 30, 30);
pub const MUTED: RGBColor = RGBColor(90, 90, 90);

/// The colours of stacked series (phases, kernel families), in order;
/// neither the modes' blue nor orange, so a segment is never read as a
/// mode (bars are outlined in their mode's colour instead).
pub const SERIES: [RGBColor; 12] = [
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(214, 39, 40),
    RGBColor(52, 73, 94),
    RGBColor(0, 128, 128),
    RGBColor(204, 170, 0),
    RGBColor(127, 127, 127),
    RGBColor(199, 199, 199),
];

/// The colour of series `i` (cycling).
pub fn series_color(i: usize) -> RGBColor {
    SERIES[i % SERIES.len()]
}

/// The colour of a mode, the same in every figure.
pub fn mode_color(mode: Option<&str>) -> RGBColor {
    class_color(Mode::of_opt(mode))
}

/// The colour of a mode class.
pub fn class_color(class: Mode) -> RGBColor {
    match class {
        Mode::Ar => AR_BLUE,
        Mode::Mtp => MTP_ORANGE,
        Mode::Other => OTHER_GREY,
    }
}

/// A darker shade for outlines.
pub fn darker(c: RGBColor) -> RGBColor {
    RGBColor(
        (f64::from(c.0) * 0.7) as u8,
        (f64::from(c.1) * 0.7) as u8,
        (f64::from(c.2) * 0.7) as u8,
    )
}

/// Pixel sizes, scaled with the figure size (1280×800 is scale 1).
#[derive(Debug, Clone, Copy)]
pub struct Theme {
    pub s: f64,
}

impl Theme {
    pub fn new((w, h): (u32, u32)) -> Self {
        let s = (f64::from(w) / 1280.0).min(f64::from(h) / 800.0);
        Theme {
            s: s.clamp(0.55, 4.0),
        }
    }
    pub fn px(&self, v: f64) -> i32 {
        (v * self.s).round() as i32
    }
    pub fn upx(&self, v: f64) -> u32 {
        (v * self.s).round().max(1.0) as u32
    }
    pub fn text(&self, size: f64) -> TextStyle<'static> {
        TextStyle::from((FAMILY, size * self.s).into_font()).color(&INK)
    }
    pub fn bold(&self, size: f64) -> TextStyle<'static> {
        TextStyle::from((FAMILY, size * self.s, FontStyle::Bold).into_font()).color(&INK)
    }
    pub fn title(&self) -> TextStyle<'static> {
        self.bold(24.0)
    }
    pub fn caption(&self) -> TextStyle<'static> {
        self.bold(16.0)
    }
    pub fn axis(&self) -> TextStyle<'static> {
        self.text(15.0)
    }
    pub fn tick(&self) -> TextStyle<'static> {
        self.text(13.0)
    }
    pub fn small(&self) -> TextStyle<'static> {
        self.text(12.0)
    }
}
