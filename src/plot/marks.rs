//! What is drawn (the legend's marks as [`super::layout`] lists them), the frame (title, subtitle, legend), the
//! labels of the trace axis, the house grid, bars and empty states.

use super::layout::{decimals, Chart2d, LegendItem, Mark};
use super::theme::*;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Draws a legend mark centred at `c`.
pub fn draw_mark<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    mark: &Mark,
    c: (i32, i32),
    th: &Theme,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let r = th.px(6.0).max(3);
    let (x, y) = c;
    match mark {
        Mark::Box(col) => {
            area.draw(&Rectangle::new(
                [(x - r - 3, y - r), (x + r + 3, y + r)],
                col.mix(0.55).filled(),
            ))?;
            area.draw(&Rectangle::new(
                [(x - r - 3, y - r), (x + r + 3, y + r)],
                darker(*col).stroke_width(1),
            ))?;
        }
        Mark::Dot(col) => area.draw(&Circle::new((x, y), r.max(3) as u32 - 1, col.filled()))?,
        Mark::Ring(col) => area.draw(&Circle::new(
            (x, y),
            r as u32 + 1,
            col.stroke_width(th.upx(2.0)),
        ))?,
        Mark::Dashed(col) => {
            for k in 0..3 {
                let x0 = x - 2 * r + k * (4 * r / 3);
                area.draw(&PathElement::new(
                    vec![(x0, y), (x0 + r / 2 + 1, y)],
                    col.stroke_width(th.upx(2.0)),
                ))?;
            }
        }
        Mark::Median => area.draw(&PathElement::new(
            vec![(x - 2 * r, y), (x + 2 * r, y)],
            INK.stroke_width(th.upx(3.0)),
        ))?,
        Mark::Triangle(col) => {
            area.draw(&TriangleMarker::new((x, y), r as u32 + 1, col.filled()))?
        }
        Mark::Square(col) => area.draw(&Rectangle::new(
            [(x - r + 1, y - r + 1), (x + r - 1, y + r - 1)],
            col.filled(),
        ))?,
        Mark::Diamond(col) => area.draw(&Polygon::new(
            vec![
                (x, y - r - 1),
                (x + r + 1, y),
                (x, y + r + 1),
                (x - r - 1, y),
            ],
            col.filled(),
        ))?,
    }
    Ok(())
}

/// Title, subtitle and a legend strip; returns the area left for panels.
pub fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    th: &Theme,
    title: &str,
    subtitle: &str,
    legend: &[LegendItem],
) -> Result<DrawingArea<DB, Shift>, Box<dyn std::error::Error + Send + Sync>>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let (w, _) = root.dim_in_pixel();
    let w = w as i32;
    let mut y = th.px(12.0);
    root.draw_text(
        title,
        &th.title().pos(Pos::new(HPos::Center, VPos::Top)),
        (w / 2, y),
    )?;
    y += th.px(32.0);
    if !subtitle.is_empty() {
        let style = th.text(13.5).color(&MUTED);
        let width = |s: &str| {
            root.estimate_text_size(s, &style)
                .map_or(0, |(tw, _)| tw as i32)
        };
        let lines = wrap_at_dots(subtitle, w - th.px(40.0), width);
        for line in &lines {
            root.draw_text(
                line,
                &style.pos(Pos::new(HPos::Center, VPos::Top)),
                (w / 2, y),
            )?;
            y += th.px(18.0);
        }
        y += th.px(4.0);
    }
    if !legend.is_empty() {
        y += th.px(4.0);
        let style = th.text(13.5);
        let mark_w = th.px(26.0);
        let gap = th.px(22.0);
        let widths: Vec<i32> = legend
            .iter()
            .map(|it| {
                let (tw, _) = root.estimate_text_size(&it.label, &style).unwrap_or((0, 0));
                mark_w + th.px(6.0) + tw as i32
            })
            .collect();
        // Greedy rows that fit the width.
        let max_row = w - th.px(40.0);
        let mut rows: Vec<Vec<usize>> = vec![Vec::new()];
        let mut used = 0;
        for (i, &iw) in widths.iter().enumerate() {
            let add = if used == 0 { iw } else { used + gap + iw };
            if add > max_row && used > 0 {
                rows.push(vec![i]);
                used = iw;
            } else {
                rows.last_mut().unwrap().push(i);
                used = add;
            }
        }
        let row_h = th.px(22.0);
        for row in &rows {
            let total: i32 =
                row.iter().map(|&i| widths[i]).sum::<i32>() + gap * (row.len() as i32 - 1);
            let mut x = (w - total) / 2;
            for &i in row {
                let cy = y + row_h / 2;
                draw_mark(root, &legend[i].mark, (x + mark_w / 2, cy), th)?;
                root.draw_text(
                    &legend[i].label,
                    &style.pos(Pos::new(HPos::Left, VPos::Center)),
                    (x + mark_w + th.px(6.0), cy),
                )?;
                x += widths[i] + gap;
            }
            y += row_h;
        }
        y += th.px(4.0);
    }
    Ok(root.split_vertically(y).1)
}

/// A subtitle cut into lines no wider than `max` (px, as `width` measures
/// them) at its " · " separators, greedily; a part wider than `max` on its
/// own is a line of its own (never cut mid-phrase). fig7b's subtitle ran
/// past both edges of the figure (issue 60).
fn wrap_at_dots(text: &str, max: i32, width: impl Fn(&str) -> i32) -> Vec<String> {
    const SEP: &str = " · ";
    let mut lines: Vec<String> = Vec::new();
    for part in text.split(SEP) {
        match lines.last_mut() {
            Some(line) if width(&format!("{line}{SEP}{part}")) <= max => {
                line.push_str(SEP);
                line.push_str(part);
            }
            _ => lines.push(part.to_string()),
        }
    }
    lines
}

/// The grid and text styling every figure's axes share.
pub trait HouseGrid {
    fn house(&mut self, th: &Theme) -> &mut Self;
}

impl<'a, 'b, X, Y, DB> HouseGrid for plotters::chart::MeshStyle<'a, 'b, X, Y, DB>
where
    X: plotters::coord::ranged1d::Ranged<ValueType: std::fmt::Debug>,
    Y: plotters::coord::ranged1d::Ranged<ValueType: std::fmt::Debug>,
    DB: DrawingBackend,
{
    fn house(&mut self, th: &Theme) -> &mut Self {
        self.label_style(th.tick())
            .axis_desc_style(th.axis())
            .light_line_style(RGBColor(242, 242, 242))
            .bold_line_style(RGBColor(222, 222, 222))
            .max_light_lines(1)
    }
}

/// The axes of a bar or box chart: a categorical trace axis over `x`
/// without tick labels (the traces' labels are drawn under it by
/// `crate::figures`' trace axis labels) and a value axis from 0 to `y1`, in the house
/// style. Sizes are in the theme's unscaled pixels.
pub struct ValueAxes<'s> {
    pub caption: Option<&'s str>,
    pub margin: f64,
    pub x_label_area: f64,
    pub x: (f64, f64),
    pub y1: f64,
    pub y_labels: usize,
    pub y_desc: &'s str,
    pub x_desc: Option<&'s str>,
}

/// A chart on `area` with [`ValueAxes`], its mesh drawn: what figures 3,
/// 5, 6 and the sections' stacked bars and box plots draw their marks on.
pub fn value_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    th: &Theme,
    axes: &ValueAxes<'_>,
) -> Result<Chart2d<'a, DB>, Box<dyn std::error::Error + Send + Sync>>
where
    DB::ErrorType: 'static,
{
    let mut builder = ChartBuilder::on(area);
    if let Some(caption) = axes.caption {
        builder.caption(caption, th.caption());
    }
    let mut chart = builder
        .margin(th.px(axes.margin))
        .x_label_area_size(th.px(axes.x_label_area))
        .y_label_area_size(th.px(72.0))
        .build_cartesian_2d(axes.x.0..axes.x.1, 0.0..axes.y1)?;
    let prec = decimals(axes.y1);
    let yfmt = |v: &f64| format!("{v:.prec$}");
    let mut mesh = chart.configure_mesh();
    mesh.x_labels(0)
        .disable_x_mesh()
        .y_labels(axes.y_labels)
        .y_label_formatter(&yfmt)
        .y_desc(axes.y_desc);
    if let Some(x_desc) = axes.x_desc {
        mesh.x_desc(x_desc);
    }
    mesh.house(th).draw()?;
    Ok(chart)
}

/// Half the width of a bar, in units of the x axis (one unit per trace).
pub const BAR_HALF: f64 = 0.32;

/// One filled, outlined bar from 0 to `v`, centred on `x`.
pub fn bar<DB: DrawingBackend>(
    chart: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    x: f64,
    v: f64,
    col: RGBColor,
    th: &Theme,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let corners = [(x - BAR_HALF, 0.0), (x + BAR_HALF, v)];
    chart.draw_series(std::iter::once(Rectangle::new(
        corners,
        col.mix(0.85).filled(),
    )))?;
    chart.draw_series(std::iter::once(Rectangle::new(
        corners,
        darker(col).stroke_width(th.upx(1.2)),
    )))?;
    Ok(())
}
/// A bracket over a workload's bars, from pixel column `a` to `z`, above
/// the pixel row `top` of its tallest bar, with `text` written over it.
pub fn group_bracket<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    th: &Theme,
    (a, z): (i32, i32),
    top: i32,
    text: &str,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let y = top - th.px(26.0);
    root.draw(&PathElement::new(
        vec![(a, y + th.px(6.0)), (a, y), (z, y), (z, y + th.px(6.0))],
        INK.stroke_width(1),
    ))?;
    let above = Pos::new(HPos::Center, VPos::Bottom);
    root.draw_text(
        text,
        &th.bold(13.0).pos(above),
        ((a + z) / 2, y - th.px(4.0)),
    )?;
    Ok(())
}

/// The empty state of the span figures: no trace has a paired context.
pub fn no_paired_contexts<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    th: &Theme,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    empty_state(
        area,
        th,
        "no paired step contexts",
        "none of the traces has a CPU step annotation with a GPU twin (see `torchtrace pair`)",
    )
}

/// A centred message for a figure (or panel) with nothing to draw.
pub fn empty_state<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    th: &Theme,
    headline: &str,
    detail: &str,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let (w, h) = area.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    area.draw(&Rectangle::new(
        [
            (th.px(40.0), th.px(20.0)),
            (w - th.px(40.0), h - th.px(30.0)),
        ],
        RGBColor(245, 245, 245).filled(),
    ))?;
    area.draw(&Rectangle::new(
        [
            (th.px(40.0), th.px(20.0)),
            (w - th.px(40.0), h - th.px(30.0)),
        ],
        RGBColor(200, 200, 200).stroke_width(1),
    ))?;
    let c = Pos::new(HPos::Center, VPos::Center);
    area.draw_text(
        headline,
        &th.bold(20.0).pos(c),
        (w / 2, h / 2 - th.px(14.0)),
    )?;
    area.draw_text(
        detail,
        &th.text(14.0).color(&MUTED).pos(c),
        (w / 2, h / 2 + th.px(16.0)),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::wrap_at_dots;

    /// One character, one pixel.
    fn chars(s: &str) -> i32 {
        s.chars().count() as i32
    }

    #[test]
    fn a_subtitle_that_fits_is_one_line() {
        assert_eq!(wrap_at_dots("a · b", 10, chars), ["a · b"]);
    }

    #[test]
    fn a_long_subtitle_breaks_at_its_dots() {
        let got = wrap_at_dots("aaaa · bbbb · cc · dddddddddddd", 11, chars);
        assert_eq!(got, ["aaaa · bbbb", "cc", "dddddddddddd"]);
    }
}
