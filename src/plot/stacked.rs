//! A grouped, stacked bar chart drawn from plain numbers ([`StackedBars`]):
//! what an analysis's batch section draws without knowing the figures'
//! `crate::figures::PlotInput` (figures 7 and 8: `iterations` and `diff`).
//!
//! ```text
//!        S_wall = 1.14×            ← the group's note, over a bracket
//!      ┌──┐ 0.69 ms                ← a bar's top text
//!      │▒▒│ segment 3     ┌──┐
//!      │░░│ segment 2     │▒▒│     ← segments stacked from 0, in order;
//!      │██│ segment 1     │██│       the outline is the mode's colour
//!       AR               MTP       ← the bar's label
//!     cad. 0.67        cad. 0.38   ← its second line (optional)
//!      ────── text ──────          ← the group's name
//! ```

use super::common::*;
use super::{Picture, PlotError};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// One stacked quantity: its legend label and colour.
#[derive(Debug, Clone)]
pub struct Segment {
    pub name: String,
    pub color: RGBColor,
}

/// One bar.
#[derive(Debug, Clone, Default)]
pub struct StackedBar {
    /// Under the bar (`AR`, `MTP`).
    pub label: String,
    /// Its outline's colour (AR blue, MTP orange, other grey).
    pub mode: Option<String>,
    /// One value per segment, in the segments' order; `None`: nothing
    /// measured ("n/a" is drawn). Negative values are drawn as 0.
    pub values: Option<Vec<f64>>,
    /// Above the bar.
    pub top: String,
    /// Muted lines under the label, one per `\n` (may be empty).
    pub below: String,
}

/// Bars drawn side by side (a workload: AR, then MTP).
#[derive(Debug, Clone, Default)]
pub struct BarGroup {
    pub name: String,
    pub bars: Vec<StackedBar>,
    /// Written over the group (`S_wall = 1.14×`).
    pub note: Option<String>,
}

/// A whole figure of grouped stacked bars.
#[derive(Debug, Clone, Default)]
pub struct StackedBars {
    /// File name without extension (`fig7_iterations_per_token`).
    pub stem: String,
    pub title: String,
    pub subtitle: String,
    pub y_desc: String,
    pub segments: Vec<Segment>,
    pub groups: Vec<BarGroup>,
    /// The empty state's headline and detail, when no bar has values.
    pub empty: (String, String),
}

impl Picture for StackedBars {
    fn stem(&self) -> &str {
        &self.stem
    }

    fn render(&self, path: &Path, size: (u32, u32)) -> Result<(), PlotError> {
        let th = Theme::new(size);
        super::render_file(path, size, |r| self.draw(r, th), |r| self.draw(r, th))
    }
}

/// Heights of a bar's segments as drawn (negative and non-finite as 0).
fn heights(values: &[f64]) -> Vec<f64> {
    values
        .iter()
        .map(|v| if v.is_finite() { v.max(0.0) } else { 0.0 })
        .collect()
}

impl StackedBars {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, th: Theme) -> FigResult
    where
        DB::ErrorType: 'static,
    {
        let legend: Vec<LegendItem> = self
            .segments
            .iter()
            .map(|s| LegendItem::new(Mark::Box(s.color), s.name.clone()))
            .collect();
        let body = frame(root, &th, &self.title, &self.subtitle, &legend)?;
        let any = self.groups.iter().flat_map(|g| &g.bars);
        if any.clone().all(|b| b.values.is_none()) {
            return empty_state(&body, &th, &self.empty.0, &self.empty.1);
        }
        self.bars(root, &body, th)
    }

    /// x of every bar (one unit each, groups 0.6 apart) and the axis range.
    fn positions(&self) -> (Vec<Vec<f64>>, (f64, f64)) {
        let mut x: f64 = 0.0;
        let mut out = Vec::new();
        for (gi, g) in self.groups.iter().enumerate() {
            if gi > 0 {
                x += 0.6;
            }
            let mut xs = Vec::new();
            for _ in &g.bars {
                xs.push(x);
                x += 1.0;
            }
            out.push(xs);
        }
        (out, (-0.6, (x - 1.0).max(0.0) + 0.6))
    }

    fn total(b: &StackedBar) -> Option<f64> {
        b.values.as_deref().map(|v| heights(v).iter().sum())
    }

    fn bars<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        area: &DrawingArea<DB, Shift>,
        th: Theme,
    ) -> FigResult
    where
        DB::ErrorType: 'static,
    {
        let (xs, (x0, x1)) = self.positions();
        let bars = self.groups.iter().flat_map(|g| &g.bars);
        let top = bars.filter_map(Self::total).fold(0.0, f64::max);
        let y1 = if top > 0.0 { top * 1.32 } else { 1.0 };
        let axes = ValueAxes {
            caption: None,
            margin: 12.0,
            x_label_area: 86.0,
            x: (x0, x1),
            y1,
            y_labels: 10,
            y_desc: self.y_desc.as_str(),
            x_desc: None,
        };
        let mut chart = value_chart(area, &th, &axes)?;
        let above = Pos::new(HPos::Center, VPos::Bottom);
        let under = Pos::new(HPos::Center, VPos::Top);
        for (g, gx) in self.groups.iter().zip(&xs) {
            for (b, &x) in g.bars.iter().zip(gx) {
                let (px, py) = chart.backend_coord(&(x, 0.0));
                self.tag(root, &chart, (x, py), b, &th)?;
                // One line per `\n`: two bars' one-line labels ran into
                // each other (fig11, issue 60).
                for (k, line) in b.below.lines().enumerate() {
                    let style = th.small().color(&MUTED).pos(under);
                    let dy = th.px(25.0 + 13.0 * k as f64);
                    root.draw_text(line, &style, (px, py + dy))?;
                }
                let Some(values) = &b.values else {
                    let style = th.small().color(&MUTED).pos(above);
                    root.draw_text("n/a", &style, (px, py - th.px(4.0)))?;
                    continue;
                };
                let total = self.stack(&mut chart, x, &heights(values), b, &th)?;
                let (tx, ty) = chart.backend_coord(&(x, total));
                root.draw_text(&b.top, &th.text(12.0).pos(above), (tx, ty - th.px(4.0)))?;
            }
            self.group_labels(root, &chart, g, gx, &th)?;
        }
        Ok(())
    }

    /// The bar's label under it: on a tag filled with the mode's colour
    /// when it has one (issue 60: AR and MTP told apart by fill, not only
    /// by the outline), plain otherwise.
    fn tag<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        chart: &Chart2d<'_, DB>,
        (x, py): (f64, i32),
        b: &StackedBar,
        th: &Theme,
    ) -> FigResult
    where
        DB::ErrorType: 'static,
    {
        let under = Pos::new(HPos::Center, VPos::Top);
        let (px, _) = chart.backend_coord(&(x, 0.0));
        if b.mode.is_none() {
            root.draw_text(&b.label, &th.tick().pos(under), (px, py + th.px(6.0)))?;
            return Ok(());
        }
        let (l, _) = chart.backend_coord(&(x - BAR_HALF, 0.0));
        let (r, _) = chart.backend_coord(&(x + BAR_HALF, 0.0));
        let col = darker(mode_color(b.mode.as_deref()));
        root.draw(&Rectangle::new(
            [(l, py + th.px(3.0)), (r, py + th.px(21.0))],
            col.filled(),
        ))?;
        // The tag is the bar's width: a label wider than it ("MTP host" on
        // fig10's four bars a group) steps down in size until it fits.
        let fits = |size: f64| {
            let style = th.bold(size);
            root.estimate_text_size(&b.label, &style)
                .map_or(true, |(w, _)| w as i32 <= r - l - th.px(4.0))
        };
        let size = [11.0, 10.0, 9.0, 8.0]
            .into_iter()
            .find(|&s| fits(s))
            .unwrap_or(8.0);
        let style = th.bold(size).color(&WHITE).pos(under);
        root.draw_text(
            &b.label,
            &style,
            (px, py + th.px(5.0 + (11.0 - size) / 2.0)),
        )?;
        Ok(())
    }

    /// Draws one bar's segments from 0 up and its outline; returns its height.
    fn stack<DB: DrawingBackend>(
        &self,
        chart: &mut Chart2d<'_, DB>,
        x: f64,
        hs: &[f64],
        b: &StackedBar,
        th: &Theme,
    ) -> Result<f64, Box<dyn std::error::Error + Send + Sync>>
    where
        DB::ErrorType: 'static,
    {
        let mut lo = 0.0;
        for (h, s) in hs.iter().zip(&self.segments) {
            if *h > 0.0 {
                let corners = [(x - BAR_HALF, lo), (x + BAR_HALF, lo + h)];
                chart.draw_series(std::iter::once(Rectangle::new(
                    corners,
                    s.color.mix(0.85).filled(),
                )))?;
            }
            lo += h;
        }
        let outline = [(x - BAR_HALF, 0.0), (x + BAR_HALF, lo)];
        let col = darker(mode_color(b.mode.as_deref()));
        chart.draw_series(std::iter::once(Rectangle::new(
            outline,
            col.stroke_width(th.upx(2.0)),
        )))?;
        Ok(lo)
    }

    /// The group's name under its bars, and its note over them.
    fn group_labels<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        chart: &Chart2d<'_, DB>,
        g: &BarGroup,
        gx: &[f64],
        th: &Theme,
    ) -> FigResult
    where
        DB::ErrorType: 'static,
    {
        let (Some(&first), Some(&last)) = (gx.first(), gx.last()) else {
            return Ok(());
        };
        let (a, py) = chart.backend_coord(&(first, 0.0));
        let (z, _) = chart.backend_coord(&(last, 0.0));
        // Below the bars' `below` lines (one, or two as fig11's).
        let lines = g
            .bars
            .iter()
            .map(|b| b.below.lines().count())
            .max()
            .unwrap_or(0);
        let y = py + th.px(44.0 + 13.0 * lines.saturating_sub(1) as f64);
        root.draw(&PathElement::new(
            vec![(a - th.px(10.0), y), (z + th.px(10.0), y)],
            MUTED.stroke_width(1),
        ))?;
        let under = Pos::new(HPos::Center, VPos::Top);
        root.draw_text(
            &ellipsize(&g.name, 28),
            &th.bold(12.5).pos(under),
            ((a + z) / 2, y + th.px(3.0)),
        )?;
        if let Some(note) = &g.note {
            let gtop = g.bars.iter().filter_map(Self::total).fold(0.0, f64::max);
            let (_, ty) = chart.backend_coord(&(first, gtop));
            group_bracket(root, th, (a, z), ty, note)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(values: Option<Vec<f64>>) -> StackedBars {
        StackedBars {
            stem: "t".into(),
            title: "T".into(),
            y_desc: "ms".into(),
            segments: vec![
                Segment {
                    name: "a".into(),
                    color: SERIES[0],
                },
                Segment {
                    name: "b".into(),
                    color: SERIES[1],
                },
            ],
            groups: vec![BarGroup {
                name: "w".into(),
                bars: vec![StackedBar {
                    label: "AR".into(),
                    mode: Some("ar".into()),
                    values,
                    top: "1".into(),
                    below: "x".into(),
                }],
                note: Some("S = 2×".into()),
            }],
            empty: ("nothing".into(), "detail".into()),
            ..Default::default()
        }
    }

    #[test]
    fn draws_bars_and_the_empty_state_deterministically() {
        let dir = tempfile::tempdir().unwrap();
        for (name, v) in [
            ("bars", Some(vec![1.0, -2.0])),
            ("nan", Some(vec![f64::NAN, 1.0])),
            ("empty", None),
        ] {
            let (p, q) = (dir.path().join(name), dir.path().join("again"));
            for ext in ["png", "svg"] {
                let (p, q) = (p.with_extension(ext), q.with_extension(ext));
                chart(v.clone()).render(&p, (640, 400)).unwrap();
                chart(v.clone()).render(&q, (640, 400)).unwrap();
                assert_eq!(std::fs::read(&p).unwrap(), std::fs::read(&q).unwrap());
            }
        }
        assert_eq!(heights(&[1.0, -1.0, f64::INFINITY]), vec![1.0, 0.0, 0.0]);
    }
}
