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

/// One device's roofs: its peak TB/s and a peak TFLOP/s per precision
/// its traces' points are held against.
#[derive(Debug, Clone, PartialEq)]
struct DeviceRoofs {
    name: String,
    tbps: f64,
    roofs: Vec<(String, f64)>,
}

/// The figure's data, taken from the campaign.
pub(crate) struct RoofFigure {
    points: Vec<Point>,
    /// The roofs of every device whose traces give points, in the order
    /// the campaign lists them: a campaign of H200 and H100 traces draws
    /// both (the memory roofs differ: 4.8 against 3.35 TB/s).
    devices: Vec<DeviceRoofs>,
}

impl RoofFigure {
    pub(crate) fn of(c: &Campaign<'_>) -> RoofFigure {
        let mut f = RoofFigure {
            points: Vec::new(),
            devices: Vec::new(),
        };
        for t in &c.traces {
            let Some(r) = t.get::<Roofline>() else {
                continue;
            };
            f.add(r, t.run.mode.as_ref().map(|m| m.value.clone()));
        }
        for d in &mut f.devices {
            d.roofs
                .sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        }
        f
    }

    fn add(&mut self, t: &TraceRoofline, mode: Option<String>) {
        let name = t.device.matched.clone().or_else(|| t.device.name.clone());
        // A device is drawn when its peak bandwidth is known (the memory
        // roof needs it) and its trace gives points.
        let device = match (name, t.device.peak_tbps) {
            (Some(n), Some(b)) if !t.rows.is_empty() => {
                let k = match self.devices.iter().position(|d| d.name == n) {
                    Some(k) => k,
                    None => {
                        self.devices.push(DeviceRoofs {
                            name: n,
                            tbps: b,
                            roofs: Vec::new(),
                        });
                        self.devices.len() - 1
                    }
                };
                Some(k)
            }
            _ => None,
        };
        let dom = dominant_of(t).map(|r| (&r.name, &r.input_dims));
        for r in &t.rows {
            let (Some(i), Some(y)) = (r.intensity, r.tflops_per_s) else {
                continue;
            };
            if !(i > 0.0 && y > 0.0 && i.is_finite() && y.is_finite()) {
                continue;
            }
            if let (Some(k), Some(p), Some(peak)) = (device, &r.precision, r.peak_tflops) {
                let roofs = &mut self.devices[k].roofs;
                if !roofs.iter().any(|x| &x.0 == p) {
                    roofs.push((p.clone(), peak));
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

    /// The flat roofs, one per (precision, peak) over every device (H100
    /// and H200 SXM share their compute peaks), lowest first.
    fn flat_roofs(&self) -> Vec<(String, f64)> {
        let mut v: Vec<(String, f64)> = self
            .devices
            .iter()
            .flat_map(|d| d.roofs.iter().cloned())
            .collect();
        v.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        v.dedup();
        v
    }

    /// Whether a point's mode is neither AR nor MTP (the legend's grey
    /// entry is shown only then).
    fn has_other_mode(&self) -> bool {
        use crate::runinfo::Mode;
        self.points
            .iter()
            .any(|p| Mode::of_opt(p.mode.as_deref()) == Mode::Other)
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

/// The roof line colours, one per device in order (neutral: the points
/// carry the modes' blue and orange).
const ROOF_COLORS: [RGBColor; 3] = [MUTED, RGBColor(150, 150, 150), RGBColor(120, 90, 160)];

fn roof_color(k: usize) -> RGBColor {
    ROOF_COLORS[k % ROOF_COLORS.len()]
}

/// The modes, the ring, and one roof entry per device.
fn legend(f: &RoofFigure) -> Vec<LegendItem> {
    let mut legend = vec![
        LegendItem::new(Mark::Dot(AR_BLUE), "AR"),
        LegendItem::new(Mark::Dot(MTP_ORANGE), "MTP"),
    ];
    if f.has_other_mode() {
        legend.push(LegendItem::new(Mark::Dot(OTHER_GREY), "other mode"));
    }
    legend.push(LegendItem::new(Mark::Ring(INK), "a trace's dominant op"));
    for (k, d) in f.devices.iter().enumerate() {
        legend.push(LegendItem::new(
            Mark::Dashed(roof_color(k)),
            format!("roof of {} ({} TB/s)", d.name, d.tbps),
        ));
    }
    legend
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, f: &RoofFigure) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = Theme::new(root.dim_in_pixel());
    let area = frame(
        root,
        &th,
        "How close to the roof: achieved TFLOP/s against arithmetic intensity",
        "one point per trace and op+shape, area ∝ its GPU time, overlapping points outlined \
         · roof = min(peak TFLOP/s, intensity × peak TB/s) of each trace's device",
        &legend(f),
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
    ys.extend(f.flat_roofs().iter().map(|r| r.1));
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
    draw_roofs(&mut chart, f, &th, (x0, x1))?;
    draw_points(&mut chart, f, &th)
}

type LogChart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<
        plotters::coord::combinators::LogCoord<f64>,
        plotters::coord::combinators::LogCoord<f64>,
    >,
>;

/// Each device's roof, intensity × TB/s up to its ridge and flat after,
/// and one label per flat roof (precision and peak) at the right edge.
fn draw_roofs<DB: DrawingBackend>(
    chart: &mut LogChart<'_, DB>,
    f: &RoofFigure,
    th: &Theme,
    (x0, x1): (f64, f64),
) -> FigResult
where
    DB::ErrorType: 'static,
{
    for (k, d) in f.devices.iter().enumerate() {
        for (_, peak) in &d.roofs {
            let ridge = peak / d.tbps;
            let pts: Vec<(f64, f64)> = [x0, ridge.clamp(x0, x1), x1]
                .iter()
                .map(|&x| (x, (x * d.tbps).min(*peak)))
                .collect();
            chart.draw_series(DashedLineSeries::new(
                pts,
                th.px(6.0 + 2.0 * k as f64) as u32,
                th.px(4.0) as u32,
                roof_color(k).stroke_width(th.upx(1.5)),
            ))?;
        }
    }
    // Under its line, so the dashes never run through the text.
    for (name, peak) in f.flat_roofs() {
        chart.draw_series(std::iter::once(Text::new(
            format!("{name} {peak} TFLOP/s"),
            (x1 / 1.05, peak / 1.3),
            th.small()
                .color(&MUTED)
                .pos(Pos::new(HPos::Right, VPos::Top)),
        )))?;
    }
    Ok(())
}

/// One circle per op and shape, its area following its GPU time, big
/// ones first so that small ones stay visible; a light fill and a solid
/// outline in the mode's colour, so that an AR and an MTP point on the
/// same spot read as two rings, not as a third colour; dominant ops
/// ringed.
fn draw_points<DB: DrawingBackend>(
    chart: &mut LogChart<'_, DB>,
    f: &RoofFigure,
    th: &Theme,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let max_ns = f.points.iter().map(|p| p.gpu_ns).max().unwrap_or(1).max(1) as f64;
    let radius = |ns: i64| {
        (th.px(2.0) as f64 + th.px(16.0) as f64 * (ns.max(0) as f64 / max_ns).sqrt()) as u32
    };
    let mut order: Vec<&Point> = f.points.iter().collect();
    order.sort_by_key(|p| std::cmp::Reverse(p.gpu_ns));
    for p in &order {
        let col = mode_color(p.mode.as_deref());
        let at = (p.intensity, p.tflops);
        chart.draw_series([
            Circle::new(at, radius(p.gpu_ns), col.mix(0.35).filled()),
            Circle::new(at, radius(p.gpu_ns), col.stroke_width(th.upx(1.0))),
        ])?;
    }
    chart.draw_series(order.iter().filter(|p| p.dominant).map(|p| {
        Circle::new(
            (p.intensity, p.tflops),
            radius(p.gpu_ns) + th.upx(3.0),
            INK.stroke_width(th.upx(2.0)),
        )
    }))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{analyze_path, Plan};
    use crate::contexts::Selector;

    fn trace(rel: &str) -> TraceRoofline {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
        let plan = Plan::new(Selector::Auto).with(super::super::RooflineSpec::default());
        let mut r = analyze_path(&path, Default::default(), &plan);
        r.results.take::<Roofline>().expect("roofline result")
    }

    /// An H100 trace beside an H200 one: both devices' roofs, each with its
    /// own bandwidth; the shared compute peaks labelled once; no grey
    /// "other mode" entry when every point is AR or MTP.
    #[test]
    fn one_roof_per_device() {
        let mut f = RoofFigure {
            points: Vec::new(),
            devices: Vec::new(),
        };
        let h100 = trace("tests/data/tracelens_h100_bert_small.json.gz");
        f.add(&h100, Some("ar".into()));
        let mut h200 = h100.clone();
        h200.device.matched = Some("H200 SXM".into());
        h200.device.peak_tbps = Some(4.8);
        f.add(&h200, Some("mtp".into()));
        let names: Vec<(&str, f64)> = f
            .devices
            .iter()
            .map(|d| (d.name.as_str(), d.tbps))
            .collect();
        assert_eq!(names, [("H100 SXM", 3.35), ("H200 SXM", 4.8)]);
        assert_eq!(f.devices[0].roofs, f.devices[1].roofs);
        assert_eq!(f.flat_roofs().len(), f.devices[0].roofs.len());
        assert!(!f.devices[0].roofs.is_empty());
        // The same rows twice: every point of the first trace again.
        assert!(!f.points.is_empty() && f.points.len() % 2 == 0);
        assert!(!f.has_other_mode());
        let labels: Vec<String> = legend(&f).into_iter().map(|l| l.label).collect();
        assert!(
            labels.contains(&"roof of H100 SXM (3.35 TB/s)".to_string()),
            "{labels:?}"
        );
        assert!(
            labels.contains(&"roof of H200 SXM (4.8 TB/s)".to_string()),
            "{labels:?}"
        );
        assert!(!labels.iter().any(|l| l == "other mode"));
        f.add(&h100, Some("beam".into()));
        assert!(f.has_other_mode());
    }
}
