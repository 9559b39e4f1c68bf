//! Figure 12, `batch`'s roofline: arithmetic intensity (FLOP/B) against
//! achieved TFLOP/s on log axes, the device's roofs drawn (min(peak
//! TFLOP/s, intensity × peak TB/s) for each precision the points are held
//! against), one point per trace and op+shape, its area following its GPU
//! time, coloured by the trace's mode (AR blue, MTP orange); each trace's
//! dominant op ringed.
//!
//! ```text
//!  TFLOP/s (log)          ______________ bf16 roof
//!     │                 /
//!     │               /   ● ◉ (ringed: a trace's dominant op)
//!     │  ●  ●       /  ●
//!     │   ●       / memory roof (slope = peak TB/s)
//!     └──────────────────────── FLOP/B (log)
//! ```

use super::view::dominant_of;
use super::{Roofline, TraceRoofline};
use crate::campaign::Campaign;
use crate::plot::common::*;
use crate::plot::{Picture, PlotError};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// One op and shape of one trace.
#[derive(Debug, Clone)]
struct Point {
    intensity: f64,
    tflops: f64,
    gpu_ns: i64,
    mode: Option<String>,
    dominant: bool,
}

/// The figure's data, taken from the campaign.
pub(crate) struct RoofFigure {
    points: Vec<Point>,
    /// The device's name, peak TB/s and its roofs (precision, TFLOP/s).
    device: Option<String>,
    tbps: Option<f64>,
    roofs: Vec<(String, f64)>,
    /// The other devices whose traces give points (their roofs are not
    /// drawn: one roof per figure).
    others: Vec<String>,
}

impl RoofFigure {
    pub(crate) fn of(c: &Campaign<'_>) -> RoofFigure {
        let mut f = RoofFigure {
            points: Vec::new(),
            device: None,
            tbps: None,
            roofs: Vec::new(),
            others: Vec::new(),
        };
        for t in &c.traces {
            let Some(r) = t.get::<Roofline>() else {
                continue;
            };
            f.add(r, t.run.mode.as_ref().map(|m| m.value.clone()));
        }
        f.roofs
            .sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        f.roofs.dedup();
        f
    }

    fn add(&mut self, t: &TraceRoofline, mode: Option<String>) {
        if self.tbps.is_none() && t.device.peak_tbps.is_some() {
            self.tbps = t.device.peak_tbps;
            self.device = t.device.matched.clone().or_else(|| t.device.name.clone());
        }
        let name = t.device.matched.clone().or_else(|| t.device.name.clone());
        if let Some(n) = name.filter(|n| Some(n) != self.device.as_ref() && !t.rows.is_empty()) {
            if !self.others.contains(&n) {
                self.others.push(n);
            }
        }
        let dom = dominant_of(t).map(|r| (&r.name, &r.input_dims));
        for r in &t.rows {
            let (Some(i), Some(y)) = (r.intensity, r.tflops_per_s) else {
                continue;
            };
            if !(i > 0.0 && y > 0.0 && i.is_finite() && y.is_finite()) {
                continue;
            }
            if let (Some(p), Some(peak)) = (&r.precision, r.peak_tflops) {
                if !self.roofs.iter().any(|x| &x.0 == p) {
                    self.roofs.push((p.clone(), peak));
                }
            }
            self.points.push(Point {
                intensity: i,
                tflops: y,
                gpu_ns: r.gpu_ns,
                mode: mode.clone(),
                dominant: dom == Some((&r.name, &r.input_dims)),
            });
        }
    }
}

impl Picture for RoofFigure {
    fn stem(&self) -> &str {
        super::batch::FIGURE
    }
    fn render(&self, path: &Path, size: (u32, u32)) -> Result<(), PlotError> {
        crate::plot::render_file(path, size, |a| draw(a, self), |a| draw(a, self))
    }
}

/// The decades around `lo..hi` (log axes need positive ends).
fn decades(lo: f64, hi: f64) -> (f64, f64) {
    let lo = 10f64.powf(lo.log10().floor());
    let hi = 10f64.powf(hi.log10().ceil());
    if hi <= lo {
        (lo, lo * 10.0)
    } else {
        (lo, hi)
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, f: &RoofFigure) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = Theme::new(root.dim_in_pixel());
    let legend = vec![
        LegendItem::new(Mark::Dot(AR_BLUE), "AR"),
        LegendItem::new(Mark::Dot(MTP_ORANGE), "MTP"),
        LegendItem::new(Mark::Dot(OTHER_GREY), "other mode"),
        LegendItem::new(Mark::Ring(INK), "a trace's dominant op"),
        LegendItem::new(Mark::Dashed(MUTED), "roof"),
    ];
    let subtitle = format!(
        "one point per trace and op+shape, area ∝ its GPU time; roof = min(peak TFLOP/s, intensity × {}){}",
        f.tbps.map_or("peak TB/s".into(), |b| format!("{b} TB/s")),
        f.device
            .as_ref()
            .map_or(String::new(), |d| format!(" of {d}")),
    );
    // Traces of other devices are plotted against this one roof: say so.
    let subtitle = match f.others.is_empty() {
        true => subtitle,
        false => format!(
            "{subtitle}; also traces of {} (their roofs differ)",
            f.others.join(", ")
        ),
    };
    let area = frame(
        root,
        &th,
        "How close to the roof: achieved TFLOP/s against arithmetic intensity",
        &subtitle,
        &legend,
    )?;
    if f.points.is_empty() {
        return empty_state(
            &area,
            &th,
            "no op with recorded shapes and GPU time",
            "record with record_shapes=True (see `torchtrace roofline`)",
        );
    }
    let xs: Vec<f64> = f.points.iter().map(|p| p.intensity).collect();
    let mut ys: Vec<f64> = f.points.iter().map(|p| p.tflops).collect();
    ys.extend(f.roofs.iter().map(|r| r.1));
    let (x0, x1) = decades(
        xs.iter().copied().fold(f64::MAX, f64::min),
        xs.iter().copied().fold(0.0, f64::max),
    );
    let (y0, y1) = decades(
        ys.iter().copied().fold(f64::MAX, f64::min),
        ys.iter().copied().fold(0.0, f64::max) * 1.5,
    );
    let mut chart = ChartBuilder::on(&area)
        .margin(th.px(14.0))
        .x_label_area_size(th.px(46.0))
        .y_label_area_size(th.px(70.0))
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("arithmetic intensity (FLOP/B, log)")
        .y_desc("achieved TFLOP/s (log)")
        .x_label_formatter(&|v| sig(*v))
        .y_label_formatter(&|v| sig(*v))
        .house(&th)
        .draw()?;
    // The roofs: intensity × TB/s up to the ridge, then flat.
    if let Some(b) = f.tbps {
        for (k, (name, peak)) in f.roofs.iter().enumerate() {
            let ridge = peak / b;
            let pts: Vec<(f64, f64)> = [x0, ridge.clamp(x0, x1), x1]
                .iter()
                .map(|&x| (x, (x * b).min(*peak)))
                .collect();
            chart.draw_series(DashedLineSeries::new(
                pts,
                th.px(6.0) as u32,
                th.px(4.0) as u32,
                MUTED.stroke_width(th.upx(1.5)),
            ))?;
            let at = (x1 / 1.05, *peak);
            chart.draw_series(std::iter::once(Text::new(
                format!("{name} {peak} TFLOP/s"),
                at,
                th.small().color(&MUTED).pos(Pos::new(
                    HPos::Right,
                    if k % 2 == 0 { VPos::Bottom } else { VPos::Top },
                )),
            )))?;
        }
    }
    let max_ns = f.points.iter().map(|p| p.gpu_ns).max().unwrap_or(1).max(1) as f64;
    let radius =
        |ns: i64| th.px(2.0) as f64 + th.px(16.0) as f64 * (ns.max(0) as f64 / max_ns).sqrt();
    // Big points first, so small ones stay visible on top.
    let mut order: Vec<&Point> = f.points.iter().collect();
    order.sort_by_key(|p| std::cmp::Reverse(p.gpu_ns));
    chart.draw_series(order.iter().map(|p| {
        Circle::new(
            (p.intensity, p.tflops),
            radius(p.gpu_ns) as u32,
            mode_color(p.mode.as_deref()).mix(0.55).filled(),
        )
    }))?;
    chart.draw_series(order.iter().filter(|p| p.dominant).map(|p| {
        Circle::new(
            (p.intensity, p.tflops),
            radius(p.gpu_ns) as u32 + th.upx(3.0),
            INK.stroke_width(th.upx(2.0)),
        )
    }))?;
    Ok(())
}
