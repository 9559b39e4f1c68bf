//! Figure 1: CPU-context and GPU-context span distributions per trace.
//! Box (quartiles), whiskers (1.5 IQR), every context as a dot, median as
//! a black bar with its value.

use super::Data;
use crate::figures::common::*;
use crate::figures::Drawing;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Figure 1.
pub struct SpanDistributions;

impl Drawing for SpanDistributions {
    const NUMBER: u32 = 1;
    const STEM: &'static str = "fig1_span_distributions";
    const TITLE: &'static str = "Step-context spans per trace";

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
    legend.push(LegendItem::new(
        Mark::Median,
        "median (value above the box, ms)",
    ));
    legend.push(LegendItem::new(
        Mark::Dot(OTHER_GREY),
        "one dot = one step context",
    ));
    let body = frame(
        root,
        &th,
        SpanDistributions::TITLE,
        "box: quartiles · whiskers: most extreme context within 1.5 × IQR · over paired contexts only",
        &legend,
    )?;
    let all = data.span_values(true);
    let Some((lo, hi)) = extent(&all) else {
        return no_paired_contexts(&body, &th);
    };
    let axis = Axis::for_values(&all);
    let (y0, y1) = axis.range(lo, hi, 0.08, 0.16);
    let (w, _) = body.dim_in_pixel();
    let (left, right) = body.split_horizontally(w / 2);
    panel(
        root,
        &left,
        data,
        "CPU-context span (user_annotation duration)",
        true,
        (axis, y0, y1),
    )?;
    panel(
        root,
        &right,
        data,
        "GPU-context span (first GPU start → last GPU end)",
        false,
        (axis, y0, y1),
    )?;
    Ok(())
}

fn panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    area: &DrawingArea<DB, Shift>,
    data: &Data,
    caption: &str,
    cpu: bool,
    (axis, y0, y1): (Axis, f64, f64),
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = data.theme;
    let (xs, (x0, x1)) = data.positions();
    let mut chart = ChartBuilder::on(area)
        .caption(caption, th.caption())
        .margin(th.px(12.0))
        .x_label_area_size(th.px(70.0))
        .y_label_area_size(th.px(72.0))
        .build_cartesian_2d(x0..x1, y0..y1)?;
    let yfmt = |v: &f64| axis.label(*v, y1 - y0);
    let y_desc = axis.desc("span per step context (ms)");
    chart
        .configure_mesh()
        .x_labels(0)
        .disable_x_mesh()
        .y_labels(axis.ticks(12))
        .y_label_formatter(&yfmt)
        .y_desc(y_desc)
        .x_desc("trace")
        .house(&th)
        .light_line_style(RGBColor(240, 240, 240))
        .draw()?;
    for (i, t) in data.input.traces.iter().enumerate() {
        let x = xs[i];
        let col = mode_color(t.mode.as_deref());
        let sp = &data.spans[i];
        let sorted = if cpu { &sp.cpu_sorted } else { &sp.gpu_sorted };
        if sorted.is_empty() {
            chart.draw_series(std::iter::once(Text::new(
                "no paired contexts",
                (x, (y0 + y1) / 2.0),
                th.small()
                    .color(&MUTED)
                    .pos(Pos::new(HPos::Center, VPos::Center)),
            )))?;
            continue;
        }
        // Every context, jittered deterministically (golden-ratio sequence).
        let r = th.upx(2.6);
        chart.draw_series(sp.rows.iter().enumerate().map(|(k, row)| {
            let v = if cpu { row.1 } else { row.2 };
            let off = ((k as f64 * 0.618_034).fract() - 0.5) * 0.44;
            Circle::new((x + off, axis.f(v)), r, col.mix(0.45).filled())
        }))?;
        draw_box(root, &mut chart, data, &axis, x, i, sorted)?;
    }
    let to_px = |x: f64| chart.backend_coord(&(x, y0));
    trace_axis_labels(root, data, &xs, &to_px, &th.tick(), &th.bold(12.5))?;
    Ok(())
}

/// Half the width of a box, in units of the x axis.
const HALF: f64 = 0.24;

/// One trace's box, whiskers, median bar and median label at `x`.
fn draw_box<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &mut Chart2d<'_, DB>,
    data: &Data,
    axis: &Axis,
    x: f64,
    i: usize,
    sorted: &[f64],
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = data.theme;
    let half = HALF;
    let col = mode_color(data.trace(i).mode.as_deref());
    let Some((q1r, med, q3r, wlor, whir)) = box_stats(sorted) else {
        return Ok(());
    };
    let (q1, q3, wlo, whi, medf) = (
        axis.f(q1r),
        axis.f(q3r),
        axis.f(wlor),
        axis.f(whir),
        axis.f(med),
    );
    let edge = darker(col);
    chart.draw_series(std::iter::once(Rectangle::new(
        [(x - half, q1), (x + half, q3)],
        col.mix(0.22).filled(),
    )))?;
    chart.draw_series(std::iter::once(Rectangle::new(
        [(x - half, q1), (x + half, q3)],
        edge.stroke_width(th.upx(2.0)),
    )))?;
    let ws = edge.stroke_width(th.upx(1.6));
    for (a, b) in [(q3, whi), (q1, wlo)] {
        chart.draw_series(std::iter::once(PathElement::new(vec![(x, a), (x, b)], ws)))?;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x - half / 2.0, b), (x + half / 2.0, b)],
            ws,
        )))?;
    }
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(x - half, medf), (x + half, medf)],
        INK.stroke_width(th.upx(3.0)),
    )))?;
    // The label sits over the upper whisker, raised past any dot of this
    // trace in its way (issue 60: it covered dots); the trace's dots are
    // jittered within ±0.22 of x, the next trace's are 1 away.
    let (px, py) = chart.backend_coord(&(x, whi));
    let label = fmt_ms(med);
    let style = th.bold(12.5);
    let (_, tht) = root.estimate_text_size(&label, &style)?;
    let dots: Vec<i32> = sorted
        .iter()
        .filter(|&&v| v > whir)
        .map(|&v| chart.backend_coord(&(x, axis.f(v))).1)
        .collect();
    let r = th.upx(2.6) as i32;
    let y = clear_of(py - th.px(6.0), tht as i32, &dots, r + 2) - tht as i32;
    root.draw_text(
        &label,
        &style.pos(Pos::new(HPos::Center, VPos::Top)),
        (px, y),
    )?;
    Ok(())
}
