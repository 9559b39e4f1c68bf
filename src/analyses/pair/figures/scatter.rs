//! Figure 5: CPU span against GPU span of every step context. On the
//! diagonal the GPU is busy for as long as the host step lasts; below it
//! the GPU sits idle for part of the step (host/launch-bound, the gap is
//! CPU − GPU span); above it GPU work outlasts the host step (GPU-bound).

use super::Data;
use crate::figures::common::*;
use crate::figures::Drawing;
use plotters::coord::Shift;
use plotters::element::EmptyElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// How many marker shapes tell the workload groups apart (the sample
/// campaign has four workloads: with three, the first and the fourth
/// shared the dot).
const SHAPES: usize = 4;

/// A marker shape per workload group.
fn shape_mark(group: usize, col: RGBColor) -> Mark {
    match group % SHAPES {
        0 => Mark::Dot(col),
        1 => Mark::Triangle(col),
        2 => Mark::Square(col),
        _ => Mark::Diamond(col),
    }
}

/// The diamond's corners around (0, 0), `s` px from the centre.
fn diamond(s: i32) -> Vec<(i32, i32)> {
    vec![(0, -s), (s, 0), (0, s), (-s, 0)]
}

/// Figure 5.
pub struct CpuVsGpuSpan;

impl Drawing for CpuVsGpuSpan {
    const NUMBER: u32 = 5;
    const STEM: &'static str = "fig5_cpu_vs_gpu_span";
    const TITLE: &'static str = "CPU span against GPU span, per step context";

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
    let legend = legend(data);
    let body = frame(
        root,
        &th,
        CpuVsGpuSpan::TITLE,
        "one marker per paired step context · GPU-idle gap = CPU span − GPU span (median per trace in the box)",
        &legend,
    )?;
    let all = data.span_values(true);
    let Some(_) = extent(&all) else {
        return no_paired_contexts(&body, &th);
    };
    // One scale (linear or log) for both, but each axis fitted to its own
    // values (issue 60: the GPU spans at 0.3–0.5 ms ran up an axis to
    // 1.0 that one CPU-span outlier set); headroom above for the box of
    // median gaps. The diagonal is drawn where both ranges overlap.
    let axis = Axis::for_values(&all);
    let cpu: Vec<f64> = data
        .spans
        .iter()
        .flat_map(|s| s.cpu_sorted.iter().copied())
        .collect();
    let gpu: Vec<f64> = data
        .spans
        .iter()
        .flat_map(|s| s.gpu_sorted.iter().copied())
        .collect();
    let ((xlo, xhi), (ylo, yhi)) = match (extent(&cpu), extent(&gpu)) {
        (Some(x), Some(y)) => (x, y),
        _ => return no_paired_contexts(&body, &th),
    };
    let (x0, x1) = axis.range(xlo, xhi, 0.06, 0.06);
    let (y0, y1) = axis.range(ylo, yhi, 0.06, 0.45);
    let mut chart = ChartBuilder::on(&body)
        .margin(th.px(12.0))
        .margin_right(th.px(24.0))
        .x_label_area_size(th.px(48.0))
        .y_label_area_size(th.px(72.0))
        .build_cartesian_2d(x0..x1, y0..y1)?;
    let xfmt = |v: &f64| axis.label(*v, x1 - x0);
    let yfmt = |v: &f64| axis.label(*v, y1 - y0);
    let x_desc = axis.desc("CPU span: user_annotation duration (ms)");
    let y_desc = axis.desc("GPU span (ms)");
    chart
        .configure_mesh()
        .x_labels(axis.ticks(8))
        .y_labels(axis.ticks(8))
        .x_label_formatter(&xfmt)
        .y_label_formatter(&yfmt)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .house(&th)
        .draw()?;
    let (d0, d1) = (x0.max(y0), x1.min(y1));
    if d0 < d1 {
        chart.draw_series(DashedLineSeries::new(
            vec![(d0, d0), (d1, d1)],
            th.px(9.0).max(2) as u32,
            th.px(6.0).max(2) as u32,
            MUTED.stroke_width(th.upx(1.5)),
        ))?;
    }
    draw_points(&mut chart, data, &axis)?;
    gap_box(&mut chart, data)?;
    annotate(root, &chart, &th, ((x0, x1), (y0, y1)))
}

/// Each trace's median GPU-idle gap, in a box in the upper left, marked
/// with its workload's shape in its mode's colour.
fn gap_box<'a, DB: DrawingBackend + 'a>(chart: &mut Chart2d<'a, DB>, data: &Data) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = data.theme;
    for (gi, g) in data.groups.iter().enumerate() {
        for &i in &g.members {
            let t = data.trace(i);
            let Some(label) = gap_label(data, &g.name, i) else {
                continue;
            };
            let col = mode_color(t.mode.as_deref());
            let shape = gi % SHAPES;
            let rr = th.px(5.0).max(3);
            chart
                .draw_series(std::iter::empty::<Circle<(f64, f64), u32>>())?
                .label(label)
                .legend(move |(x, y)| {
                    // One element type for every shape: the unused ones are transparent.
                    let on = |k: usize| {
                        if shape == k {
                            col.filled()
                        } else {
                            TRANSPARENT.filled()
                        }
                    };
                    EmptyElement::at((x + 8, y))
                        + Circle::new((0, 0), rr as u32 - 1, on(0))
                        + TriangleMarker::new((0, 0), rr as u32 + 1, on(1))
                        + Rectangle::new([(-rr + 1, -rr + 1), (rr - 1, rr - 1)], on(2))
                        + Polygon::new(diamond(rr + 1), on(3))
                });
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(th.small())
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(200, 200, 200))
        .margin(th.px(8.0))
        .draw()?;
    Ok(())
}

/// The modes, the workload groups' marker shapes and the diagonal.
fn legend(data: &Data) -> Vec<LegendItem> {
    let mut legend = data.mode_legend();
    if data.groups.len() > 1 {
        for (gi, g) in data.groups.iter().enumerate() {
            legend.push(LegendItem::new(
                shape_mark(gi, MUTED),
                ellipsize(&g.name, 24),
            ));
        }
    }
    legend.push(LegendItem::new(Mark::Dashed(MUTED), "GPU span = CPU span"));
    legend
}

/// One marker per paired context, shaped by workload group.
fn draw_points<DB: DrawingBackend>(
    chart: &mut Chart2d<'_, DB>,
    data: &Data,
    axis: &Axis,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = data.theme;
    let r = th.upx(4.0);
    for (gi, g) in data.groups.iter().enumerate() {
        for &i in &g.members {
            let t = data.trace(i);
            let col = mode_color(t.mode.as_deref());
            let sp = &data.spans[i];
            let style = col.mix(0.65).filled();
            let pts = sp.rows.iter().map(|r| (axis.f(r.1), axis.f(r.2)));
            match gi % SHAPES {
                0 => {
                    chart.draw_series(pts.map(|p| Circle::new(p, r, style)))?;
                }
                1 => {
                    chart.draw_series(pts.map(|p| TriangleMarker::new(p, r + 1, style)))?;
                }
                2 => {
                    let s = r as i32;
                    chart.draw_series(pts.map(|p| {
                        EmptyElement::at(p)
                            + Rectangle::new([(-s + 1, -s + 1), (s - 1, s - 1)], style)
                    }))?;
                }
                _ => {
                    let s = r as i32 + 1;
                    chart.draw_series(
                        pts.map(|p| EmptyElement::at(p) + Polygon::new(diamond(s), style)),
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// A trace's median GPU-idle gap, for the box in the upper left.
fn gap_label(data: &Data, group: &str, i: usize) -> Option<String> {
    let t = data.trace(i);
    let sp = &data.spans[i];
    let mut gaps: Vec<f64> = sp.rows.iter().map(|r| r.1 - r.2).collect();
    gaps.sort_by(f64::total_cmp);
    let gap = quantile(&gaps, 0.5)?;
    let share = quantile(
        &{
            let mut v: Vec<f64> = sp
                .rows
                .iter()
                .filter(|r| r.1 > 0.0)
                .map(|r| (r.1 - r.2) / r.1)
                .collect();
            v.sort_by(f64::total_cmp);
            v
        },
        0.5,
    );
    let who = if data.groups.len() > 1 && t.workload.is_none() {
        format!("{} {}", ellipsize(group, 20), short_label(t))
    } else {
        ellipsize(&t.label, 30)
    };
    Some(match share {
        Some(s) => format!(
            "{who}: gap {} ms ({:.0} % of CPU span)",
            fmt_ms(gap),
            s * 100.0
        ),
        None => format!("{who}: gap {} ms", fmt_ms(gap)),
    })
}

/// The words on either side of the diagonal.
fn annotate<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart2d<'_, DB>,
    th: &Theme,
    ((x0, x1), (y0, y1)): ((f64, f64), (f64, f64)),
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let (px, py) = chart.backend_coord(&(x0 + 0.03 * (x1 - x0), y0 + 0.55 * (y1 - y0)));
    let muted = th
        .small()
        .color(&MUTED)
        .pos(Pos::new(HPos::Left, VPos::Top));
    root.draw_text("above the line: GPU busy longer", &muted, (px, py))?;
    root.draw_text(
        "than the host step (GPU-bound)",
        &muted,
        (px, py + th.px(16.0)),
    )?;
    let (px, py) = chart.backend_coord(&(x1, y0));
    root.draw_text(
        "below the line: GPU idle for part of the step (host/launch-bound)",
        &th.small()
            .color(&MUTED)
            .pos(Pos::new(HPos::Right, VPos::Bottom)),
        (px - th.px(8.0), py - th.px(8.0)),
    )?;
    Ok(())
}
