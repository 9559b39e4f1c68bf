//! PNG text with each glyph where the font puts it.
//!
//! plotters 0.3.7 draws a glyph's outline from the pen position, but the
//! outline's pixels are numbered from its own bounding box, whose left edge
//! sits one *left side bearing* right of the pen: every glyph is drawn
//! `bearing` pixels too far left. Letters with a wide bearing (M, P, N, H)
//! move left and the gap before them shrinks while the gap after them
//! grows, so "MTP" read "M TP" (issue 60):
//!
//! ```text
//!   pen:      |M·······|T·····|P······|     advances + kerning (both agree)
//!   font:     | ▐███▌  | ███  | ▐██▌  |     outline from pen + bearing
//!   plotters: |▐███▌   | ███  |▐██▌   |     bearing dropped: "M TP"
//! ```
//!
//! [`Kerned`] wraps the bitmap backend and draws text itself with the same
//! layout plotters uses (advances plus kerning for the width and anchor,
//! its vertical placement, rotation) and the outline placed at pen +
//! bearing; every other drawing call goes to the wrapped backend. SVG
//! needs none of this: its text is `<text>` that the viewer lays out.

use super::theme::{font_bytes, FAMILY};
use ab_glyph::{point, Font, FontRef, ScaleFont};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
};

/// A drawing backend whose text keeps each glyph's left side bearing.
pub struct Kerned<B>(pub B);

impl<B: DrawingBackend> Kerned<B> {
    /// Draws `text` with the embedded font of `style`: `Ok(false)` when the
    /// style names another family (the wrapped backend draws it then).
    fn draw_embedded<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<bool, DrawingErrorKind<B::ErrorType>> {
        if style.family().as_str() != FAMILY {
            return Ok(false);
        }
        let font = FontRef::try_from_slice(font_bytes(style.style()))
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(true);
        }
        let size = style.size() as f32;
        let glyphs = layout(&font, size, text);
        let width = glyphs.last().map_or(0.0, |g| g.end) as i32;
        // plotters' layout box is (width, size / 1.24) tall; the same
        // anchor arithmetic as its default `draw_text`.
        let height = (f64::from(size) / 1.24) as i32;
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let trans = style.transform();
        let (w, h) = self.0.get_size();
        for g in &glyphs {
            let Some(q) = font.outline_glyph(g.glyph.clone()) else {
                continue;
            };
            let rect = q.px_bounds();
            // plotters' vertical rule, kept so that PNG and SVG text sit
            // where they did.
            let (x0, y0) = (rect.min.x as i32, (size / 2.0 + rect.min.y) as i32);
            let mut result = Ok(());
            q.draw(|x, y, a| {
                if result.is_err() {
                    return;
                }
                let (x, y) = trans.transform(x0 + x as i32 + dx, y0 + y as i32 + dy);
                let (x, y) = (pos.0 + x, pos.1 + y);
                if x >= 0 && x < w as i32 && y >= 0 && y < h as i32 {
                    let c = BackendColor {
                        alpha: color.alpha * f64::from(a),
                        rgb: color.rgb,
                    };
                    result = self.0.draw_pixel((x, y), c);
                }
            });
            result?;
        }
        Ok(true)
    }
}

/// One glyph positioned on the line, and where the pen is after it.
struct Placed {
    glyph: ab_glyph::Glyph,
    /// Pen position after this glyph (px): the text's width after the last.
    end: f32,
}

/// The glyphs of `text` at `size` px: advances plus kerning, as plotters'
/// `estimate_layout` measures the line.
fn layout(font: &FontRef<'_>, size: f32, text: &str) -> Vec<Placed> {
    let scaled = font.as_scaled(size);
    let mut pen = 0f32;
    let mut prev = None;
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(p) = prev {
            pen += scaled.kern(p, id);
        }
        prev = Some(id);
        let glyph = id.with_scale_and_position(scaled.scale(), point(pen, 0.0));
        pen += scaled.h_advance(id);
        out.push(Placed { glyph, end: pen });
    }
    out
}

impl<B: DrawingBackend> DrawingBackend for Kerned<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.fill_polygon(vert, style)
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        if self.draw_embedded(text, style, pos)? {
            Ok(())
        } else {
            self.0.draw_text(text, style, pos)
        }
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        self.0.estimate_text_size(text, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.blit_bitmap(pos, size, src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::prelude::*;

    const W: u32 = 300;
    const H: u32 = 80;

    /// "MTP" drawn at 48 px from x = 20 into an RGB buffer, by `Kerned` or
    /// by plotters alone.
    fn draw(kerned: bool) -> Vec<u8> {
        super::super::theme::register_fonts().unwrap();
        let mut buf = vec![255u8; (W * H * 3) as usize];
        {
            let style = TextStyle::from((FAMILY, 48.0).into_font()).color(&BLACK);
            let bitmap = BitMapBackend::with_buffer(&mut buf, (W, H));
            if kerned {
                let mut b = Kerned(bitmap);
                b.draw_text("MTP", &style, (20, 10)).unwrap();
                b.present().unwrap();
            } else {
                let mut b = bitmap;
                b.draw_text("MTP", &style, (20, 10)).unwrap();
                b.present().unwrap();
            }
        }
        buf
    }

    /// The runs of columns holding ink (any channel below 128): one per
    /// letter of "MTP", as (first, last) column.
    fn letters(buf: &[u8]) -> Vec<(u32, u32)> {
        let inked = |x: u32| (0..H).any(|y| buf[((y * W + x) * 3) as usize] < 128);
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for x in 0..W {
            if inked(x) {
                match runs.last_mut() {
                    Some(r) if r.1 + 1 == x => r.1 = x,
                    _ => runs.push((x, x)),
                }
            }
        }
        runs
    }

    /// Each letter's ink starts where the font's metrics put it: pen
    /// position (advances + kerning) plus the outline's left edge,
    /// computed here from the font's own numbers.
    #[test]
    fn glyphs_sit_at_pen_plus_bearing() {
        let font = FontRef::try_from_slice(font_bytes(FontStyle::Normal)).unwrap();
        let want: Vec<u32> = layout(&font, 48.0, "MTP")
            .iter()
            .map(|g| {
                let b = font.outline_glyph(g.glyph.clone()).unwrap().px_bounds();
                20 + b.min.x as u32
            })
            .collect();
        let got: Vec<u32> = letters(&draw(true)).iter().map(|r| r.0).collect();
        assert_eq!(got.len(), 3, "{got:?}");
        for (g, w) in got.iter().zip(&want) {
            assert!(g.abs_diff(*w) <= 1, "ink at {got:?}, metrics {want:?}");
        }
    }

    /// The gaps M→T and T→P: kept bearings give three letters with
    /// gaps that differ by what the letter shapes give (≤ 2 px at 48 px);
    /// plotters alone moves P left by its bearing until it touches T
    /// (two runs of ink: "M TP").
    #[test]
    fn mtp_reads_as_one_word() {
        let kerned = letters(&draw(true));
        assert_eq!(kerned.len(), 3, "{kerned:?}");
        let (mt, tp) = (kerned[1].0 - kerned[0].1, kerned[2].0 - kerned[1].1);
        assert!(mt.abs_diff(tp) <= 2, "kerned gaps {mt} and {tp}");
        let plain = letters(&draw(false));
        assert!(
            plain.len() < 3 || {
                let (pmt, ptp) = (plain[1].0 - plain[0].1, plain[2].0 - plain[1].1);
                pmt.abs_diff(ptp) > 2
            },
            "plotters alone: {plain:?}"
        );
    }
}
