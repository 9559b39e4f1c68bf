//! Figure 2: GPU span of each step context against its index, one panel
//! per workload (or pair); dashed line = median, red ring = outlier above
//! the upper Tukey fence (warm-up steps and stalls show up here).

use super::Data;
use crate::figures::common::*;
use crate::figures::Drawing;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Figure 2.
pub struct GpuSpanTimeline;

impl Drawing for GpuSpanTimeline {
    const NUMBER: u32 = 2;
    const STEM: &'static str = "fig2_gpu_span_timeline";
    const TITLE: &'static str = "GPU span of each step context";

    fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &Prepared) -> FigResult
    where
        DB::ErrorType: 'static,
    {
        draw(root, &Data::new(data))
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &Data) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = data.theme;
    let mut legend = data.mode_legend();
    legend.push(LegendItem::new(Mark::Dashed(MUTED), "median of the trace"));
    legend.push(LegendItem::new(
        Mark::Ring(OUTLIER_RED),
        "outlier: above Q3 + 1.5 × IQR",
    ));
    let body = frame(
        root,
        &th,
        GpuSpanTimeline::TITLE,
        "x: index of the step context in the trace (time order) · paired contexts only",
        &legend,
    )?;
    let all = data.span_values(false);
    let Some((lo, hi)) = extent(&all) else {
        return no_paired_contexts(&body, &th);
    };
    // One y range for every panel, so workloads compare at a glance.
    let axis = Axis::for_values(&all);
    let (y0, y1) = axis.range(lo, hi, 0.08, 0.1);
    let y_desc = axis.desc("GPU span (ms)");
    let panels = body.split_evenly(grid(data.groups.len(), false));
    for (g, area) in data.groups.iter().zip(&panels) {
        let n = g
            .members
            .iter()
            .map(|&i| data.pairs(i).map_or(0, |p| p.rows.len()))
            .max()
            .unwrap_or(0)
            .max(2);
        let mut chart = ChartBuilder::on(area)
            .caption(ellipsize(&g.name, 60), th.caption())
            .margin(th.px(10.0))
            .margin_right(th.px(24.0))
            .x_label_area_size(th.px(44.0))
            .y_label_area_size(th.px(72.0))
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), y0..y1)?;
        let yfmt = |v: &f64| axis.label(*v, y1 - y0);
        // Context indices are whole numbers: a tick between two (the axis
        // runs from −0.5 so the first point is not on the frame) has no
        // label, and none reads "-0".
        let xfmt = |v: &f64| index_label(*v);
        chart
            .configure_mesh()
            .x_labels(12)
            .y_labels(axis.ticks(8))
            .x_label_formatter(&xfmt)
            .y_label_formatter(&yfmt)
            .x_desc("step context index")
            .y_desc(y_desc.as_str())
            .house(&th)
            .draw()?;
        for &i in &g.members {
            draw_trace(&mut chart, data, &axis, i, n)?;
        }
        // Per-panel key: which line is which, with n and the median.
        let key = panel_key(data, g);
        for (col, label) in key {
            chart
                .draw_series(std::iter::empty::<Circle<(f64, f64), u32>>())?
                .label(label)
                .legend(move |(x, y)| Circle::new((x + 8, y), 4, col.filled()));
        }
        let pts: Vec<(f64, f64)> = g
            .members
            .iter()
            .flat_map(|&i| data.spans[i].rows.iter().map(|r| (r.0 as f64, axis.f(r.2))))
            .collect();
        chart
            .configure_series_labels()
            .position(key_corner(&pts, (-0.5, n as f64 - 0.5), (y0, y1)))
            .label_font(th.small())
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .margin(th.px(6.0))
            .draw()?;
    }
    Ok(())
}

/// One trace's line, dots, median and outliers in its panel.
fn draw_trace<DB: DrawingBackend>(
    chart: &mut Chart2d<'_, DB>,
    data: &Data,
    axis: &Axis,
    i: usize,
    n: usize,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = data.theme;
    let t = data.trace(i);
    let col = mode_color(t.mode.as_deref());
    let sp = &data.spans[i];
    if sp.rows.is_empty() {
        return Ok(());
    }
    let pts: Vec<(f64, f64)> = sp.rows.iter().map(|r| (r.0 as f64, axis.f(r.2))).collect();
    chart.draw_series(LineSeries::new(
        pts.iter().copied(),
        col.mix(0.8).stroke_width(th.upx(1.6)),
    ))?;
    chart.draw_series(
        pts.iter()
            .map(|&p| Circle::new(p, th.upx(2.8), col.filled())),
    )?;
    if let Some(med) = quantile(&sp.gpu_sorted, 0.5) {
        chart.draw_series(DashedLineSeries::new(
            vec![(-0.5, axis.f(med)), (n as f64 - 0.5, axis.f(med))],
            th.px(8.0).max(2) as u32,
            th.px(5.0).max(2) as u32,
            darker(col).stroke_width(th.upx(1.6)),
        ))?;
    }
    if let Some(fence) = upper_fence(&sp.gpu_sorted) {
        chart.draw_series(
            pts.iter()
                .filter(|p| p.1 > axis.f(fence))
                .map(|&p| Circle::new(p, th.upx(7.0), OUTLIER_RED.stroke_width(th.upx(2.0)))),
        )?;
    }
    Ok(())
}

/// The corner of a panel for its key with the fewest points under it
/// (the first in this order on a tie: upper right, upper left, lower
/// right, lower left): the key is about 45 % of the panel wide and 22 %
/// high. A fixed upper right hid the tallest outlier of tool_calling's AR
/// line (issue 60).
fn key_corner(
    pts: &[(f64, f64)],
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
) -> SeriesLabelPosition {
    let (w, h) = ((x1 - x0) * 0.45, (y1 - y0) * 0.22);
    let under = |right: bool, upper: bool| {
        pts.iter()
            .filter(|(x, y)| {
                let in_x = if right { *x >= x1 - w } else { *x <= x0 + w };
                let in_y = if upper { *y >= y1 - h } else { *y <= y0 + h };
                in_x && in_y
            })
            .count()
    };
    [
        (SeriesLabelPosition::UpperRight, under(true, true)),
        (SeriesLabelPosition::UpperLeft, under(false, true)),
        (SeriesLabelPosition::LowerRight, under(true, false)),
        (SeriesLabelPosition::LowerLeft, under(false, false)),
    ]
    .into_iter()
    .min_by_key(|(_, n)| *n)
    .map_or(SeriesLabelPosition::UpperRight, |(p, _)| p)
}

/// Per-panel key: which line is which, with n and the median.
fn panel_key(data: &Data, g: &Group) -> Vec<(RGBColor, String)> {
    g.members
        .iter()
        .map(|&i| {
            let t = data.trace(i);
            let sp = &data.spans[i];
            let med = quantile(&sp.gpu_sorted, 0.5)
                .map(|m| format!("median {} ms", fmt_ms(m)))
                .unwrap_or_else(|| "no paired contexts".into());
            (
                mode_color(t.mode.as_deref()),
                format!("{} · n = {} · {med}", short_label(t), sp.rows.len()),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corner(pts: &[(f64, f64)]) -> String {
        format!("{:?}", key_corner(pts, (0.0, 10.0), (0.0, 1.0)))
    }

    #[test]
    fn the_key_goes_where_no_point_is() {
        // Low points only: upper right is free.
        assert_eq!(corner(&[(9.0, 0.1), (1.0, 0.2)]), "UpperRight");
        // A spike under the upper right (tool_calling AR's step 35).
        assert_eq!(corner(&[(7.0, 0.95), (1.0, 0.2)]), "UpperLeft");
        // Both upper corners taken: the lower right.
        assert_eq!(corner(&[(7.0, 0.95), (1.0, 0.9), (1.0, 0.1)]), "LowerRight");
    }
}

/// The label of an x tick at `v`: the context index when `v` is a whole
/// number (to within float noise), else none.
fn index_label(v: f64) -> String {
    let r = v.round();
    if (v - r).abs() < 1e-6 && r >= 0.0 {
        format!("{}", r as i64)
    } else {
        String::new()
    }
}

#[cfg(test)]
mod index_tests {
    use super::index_label;

    /// Ticks of a two-context panel (−0.5 to 1.5 in steps of 0.2, as
    /// plotters places them): only 0 and 1 are labelled, never "-0".
    #[test]
    fn only_whole_indices_are_labelled() {
        let labels: Vec<String> = (0..10)
            .map(|k| index_label(-0.4 + 0.2 * f64::from(k)))
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(labels, ["0", "1"]);
        assert_eq!(index_label(-0.0), "0");
        assert_eq!(index_label(-1.0), "");
        assert_eq!(index_label(40.0), "40");
    }
}
