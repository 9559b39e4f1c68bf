//! Grouped box plots drawn from plain numbers ([`BoxPlots`]): a
//! distribution per trace, traces of a workload side by side, every value
//! a dot over its box (figure 7b: the repeating CUDA graph's cadence).
//! The axis ends a third above the highest upper whisker; values beyond
//! it are counted at the top ("+3 above"), not drawn.
//!
//! ```text
//!        0.688            1.310      ← median, over the upper whisker
//!          ┬                ┬
//!        ┌─┴─┐ ·          ┌─┴─┐      ← box: quartiles (outline: the mode's colour)
//!        ├───┤ ·  ·       ├───┤      ← median
//!        └─┬─┘            └─┬─┘      ← whiskers: 1.5 IQR (crate::stats::box_stats)
//!          ┴                ┴
//!          AR              MTP
//!        ─────── workload ───────
//! ```

use super::common::*;
use super::{Picture, PlotError};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// One distribution.
#[derive(Debug, Clone, Default)]
pub struct BoxSeries {
    /// Under it (`AR`, `MTP`).
    pub label: String,
    /// Its colour (AR blue, MTP orange, other grey).
    pub mode: Option<String>,
    /// The values (any order); none: "n/a" is drawn.
    pub values: Vec<f64>,
    /// A second, muted line under the label (may be empty).
    pub below: String,
}

/// Distributions drawn side by side (a workload).
#[derive(Debug, Clone, Default)]
pub struct BoxGroup {
    pub name: String,
    pub series: Vec<BoxSeries>,
}

/// A whole figure of grouped box plots.
#[derive(Debug, Clone, Default)]
pub struct BoxPlots {
    pub stem: String,
    pub title: String,
    pub subtitle: String,
    pub y_desc: String,
    pub groups: Vec<BoxGroup>,
    /// The empty state's headline and detail, when no series has values.
    pub empty: (String, String),
}

impl Picture for BoxPlots {
    fn stem(&self) -> &str {
        &self.stem
    }

    fn render(&self, path: &Path, size: (u32, u32)) -> Result<(), PlotError> {
        let th = Theme::new(size);
        super::render_file(path, size, |r| self.draw(r, th), |r| self.draw(r, th))
    }
}

/// The finite values, sorted.
fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// A dot's horizontal offset: spread evenly and deterministically.
fn jitter(k: usize) -> f64 {
    ((k as f64 * 0.618_034).fract() - 0.5) * 0.36
}

impl BoxPlots {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, th: Theme) -> FigResult
    where
        DB::ErrorType: 'static,
    {
        let body = frame(root, &th, &self.title, &self.subtitle, &[])?;
        // The axis ends above the highest upper whisker: a few long gaps
        // (between requests) would squash every box; they are counted.
        let whiskers: Vec<f64> = self
            .groups
            .iter()
            .flat_map(|g| &g.series)
            .filter_map(|s| box_stats(&sorted(&s.values)).map(|b| b.4))
            .collect();
        let Some((_, hi)) = extent(&whiskers) else {
            return empty_state(&body, &th, &self.empty.0, &self.empty.1);
        };
        let y1 = if hi > 0.0 { hi * 1.35 } else { 1.0 };
        let mut xs = Vec::new();
        let mut x: f64 = 0.0;
        for (gi, g) in self.groups.iter().enumerate() {
            if gi > 0 {
                x += 0.6;
            }
            xs.push(
                (0..g.series.len())
                    .map(|k| x + k as f64)
                    .collect::<Vec<f64>>(),
            );
            x += g.series.len() as f64;
        }
        let axes = ValueAxes {
            caption: None,
            margin: 12.0,
            x_label_area: 64.0,
            x: (-0.6, (x - 1.0).max(0.0) + 0.6),
            y1,
            y_labels: 10,
            y_desc: self.y_desc.as_str(),
            x_desc: None,
        };
        let mut chart = value_chart(&body, &th, &axes)?;
        for (g, gx) in self.groups.iter().zip(&xs) {
            for (s, &x) in g.series.iter().zip(gx) {
                self.one(root, &mut chart, s, (x, y1), &th)?;
            }
            let (Some(&a), Some(&z)) = (gx.first(), gx.last()) else {
                continue;
            };
            let (pa, py) = chart.backend_coord(&(a, 0.0));
            let (pz, _) = chart.backend_coord(&(z, 0.0));
            // Below the series' labels, and below their `below` line when
            // one has it (fig7b's ms/token ran through the bracket).
            let below = g.series.iter().any(|s| !s.below.is_empty());
            let y = py + th.px(if below { 38.0 } else { 28.0 });
            root.draw(&PathElement::new(
                vec![(pa - th.px(10.0), y), (pz + th.px(10.0), y)],
                MUTED.stroke_width(1),
            ))?;
            root.draw_text(
                &ellipsize(&g.name, 28),
                &th.bold(12.5).pos(Pos::new(HPos::Center, VPos::Top)),
                ((pa + pz) / 2, y + th.px(3.0)),
            )?;
        }
        Ok(())
    }

    /// One series: box, whiskers, median, dots, labels.
    fn one<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        chart: &mut Chart2d<'_, DB>,
        s: &BoxSeries,
        (x, y1): (f64, f64),
        th: &Theme,
    ) -> FigResult
    where
        DB::ErrorType: 'static,
    {
        let (px, py) = chart.backend_coord(&(x, 0.0));
        let under = Pos::new(HPos::Center, VPos::Top);
        root.draw_text(&s.label, &th.tick().pos(under), (px, py + th.px(6.0)))?;
        if !s.below.is_empty() {
            let style = th.small().color(&MUTED).pos(under);
            root.draw_text(&s.below, &style, (px, py + th.px(21.0)))?;
        }
        let v = sorted(&s.values);
        let above = Pos::new(HPos::Center, VPos::Bottom);
        let Some((q1, med, q3, lo, hi)) = box_stats(&v) else {
            let style = th.small().color(&MUTED).pos(above);
            root.draw_text("n/a", &style, (px, py - th.px(4.0)))?;
            return Ok(());
        };
        let col = mode_color(s.mode.as_deref());
        let w = 0.22;
        let boxed = [(x - w, q1), (x + w, q3)];
        chart.draw_series(std::iter::once(Rectangle::new(
            boxed,
            col.mix(0.3).filled(),
        )))?;
        chart.draw_series(std::iter::once(Rectangle::new(
            boxed,
            darker(col).stroke_width(th.upx(1.5)),
        )))?;
        let line = |a: (f64, f64), b: (f64, f64), width: f64| {
            PathElement::new(vec![a, b], darker(col).stroke_width(th.upx(width)))
        };
        chart.draw_series([
            line((x, q3), (x, hi), 1.2),
            line((x, q1), (x, lo), 1.2),
            line((x - w / 2.0, hi), (x + w / 2.0, hi), 1.2),
            line((x - w / 2.0, lo), (x + w / 2.0, lo), 1.2),
        ])?;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x - w, med), (x + w, med)],
            INK.stroke_width(th.upx(3.0)),
        )))?;
        let r = th.upx(2.2);
        chart.draw_series(
            v.iter()
                .enumerate()
                .filter(|(_, &y)| y <= y1)
                .map(|(k, &y)| Circle::new((x + jitter(k), y), r, col.mix(0.55).filled())),
        )?;
        let beyond: Vec<f64> = v.iter().copied().filter(|&y| y > y1).collect();
        if let Some(max) = beyond.last() {
            // Counted, with the largest, rather than drawn (the subtitle
            // says so): a few long gaps would squash every box.
            let (ax, ay) = chart.backend_coord(&(x, y1));
            root.draw_text(
                &format!("+{} above, max {}", beyond.len(), sig(*max)),
                &th.small().color(&MUTED).pos(under),
                (ax, ay + th.px(4.0)),
            )?;
        }
        // The median over the upper whisker, raised past the dots in its
        // way (issue 60: it covered them).
        let (tx, ty) = chart.backend_coord(&(x, hi));
        let style = th.bold(12.0);
        let label = format!("{med:.3}");
        let (_, tht) = root.estimate_text_size(&label, &style)?;
        let dots: Vec<i32> = v
            .iter()
            .filter(|&&y| y > hi && y <= y1)
            .map(|&y| chart.backend_coord(&(x, y)).1)
            .collect();
        let bottom = clear_of(ty - th.px(4.0), tht as i32, &dots, r as i32 + 2);
        root.draw_text(&label, &style.pos(above), (tx, bottom))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_boxes_and_the_empty_state() {
        let dir = tempfile::tempdir().unwrap();
        let plots = |values: Vec<f64>| BoxPlots {
            stem: "b".into(),
            title: "B".into(),
            y_desc: "ms".into(),
            groups: vec![BoxGroup {
                name: "w".into(),
                series: vec![
                    BoxSeries {
                        label: "AR".into(),
                        mode: Some("ar".into()),
                        values: values.clone(),
                        below: "0.1 ms/token".into(),
                    },
                    BoxSeries {
                        label: "MTP".into(),
                        mode: Some("mtp".into()),
                        values: Vec::new(),
                        below: String::new(),
                    },
                ],
            }],
            ..Default::default()
        };
        for (name, v) in [
            ("some", vec![1.0, 2.0, f64::NAN, 3.0, 9.0]),
            ("none", vec![]),
        ] {
            for ext in ["png", "svg"] {
                let p = dir.path().join(format!("{name}.{ext}"));
                plots(v.clone()).render(&p, (640, 400)).unwrap();
                assert!(std::fs::metadata(&p).unwrap().len() > 0);
            }
        }
        assert_eq!(sorted(&[3.0, f64::NAN, 1.0]), vec![1.0, 3.0]);
    }
}
