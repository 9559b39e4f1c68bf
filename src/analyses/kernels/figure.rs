//! Figure 6 of the paper: GPU busy and idle time per generated token, stacked, per
//! trace and grouped by workload (AR vs MTP), from the step contexts' GPU
//! work by launch correlation; kernels per token is written on each bar and
//! S_context by busy time over each workload.
//!
//! ```text
//!   ┌──┐ 44.2 k/tok        busy/token = Σ GPU busy / completion tokens
//!   │░░│ idle              idle/token = Σ (GPU span − busy) / tokens
//!   │██│ busy   ┌──┐ 20.7  (stack height = GPU span per token)
//!   │██│        │██│
//!    AR          MTP
//! ```

use super::{compare, Kernels, TraceKernels};
use crate::figures::common::*;
use crate::figures::{Drawing, Draws, PaperFigure};
use crate::runinfo::Mode;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// (busy, idle) per token in ms, when the trace has both.
fn stack(k: Option<&TraceKernels>) -> Option<(f64, f64)> {
    let k = k?;
    let busy = k.gpu_busy_per_token_ms?;
    let span = k.gpu_span_per_token_ms?;
    Some((busy, (span - busy).max(0.0)))
}

impl Draws for Kernels {
    const FIGURES: &'static [PaperFigure] = &[PaperFigure::of::<GpuBusyPerToken>()];
}

/// Figure 6.
pub struct GpuBusyPerToken;

impl Drawing for GpuBusyPerToken {
    const NUMBER: u32 = 6;
    const STEM: &'static str = "fig6_gpu_busy_per_token";
    const TITLE: &'static str = "GPU busy and idle time per generated token";

    fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &Prepared) -> FigResult
    where
        DB::ErrorType: 'static,
    {
        let th = data.theme;
        let legend = data.mode_legend();
        let body = frame(
            root,
            &th,
            GpuBusyPerToken::TITLE,
            "by launch correlation · solid: GPU busy per token (union of the step's kernels, memcpys, memsets) · pale: GPU idle inside the step's GPU span · text: kernels per token",
            &legend,
        )?;
        let stacks: Vec<Option<(f64, f64)>> = data
            .input
            .traces
            .iter()
            .map(|t| stack(t.get::<Kernels>()))
            .collect();
        if stacks.iter().all(Option::is_none) {
            return empty_state(
                &body,
                &th,
                "no GPU work per token",
                "needs completion-token counts and launch calls with correlation ids in the traces",
            );
        }
        bars(root, &body, data, &stacks)
    }
}

fn bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    area: &DrawingArea<DB, Shift>,
    data: &Prepared,
    stacks: &[Option<(f64, f64)>],
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = data.theme;
    let (xs, (x0, x1)) = data.positions();
    let top = stacks
        .iter()
        .flatten()
        .map(|(b, i)| b + i)
        .fold(0.0, f64::max);
    let y1 = if top > 0.0 { top * 1.32 } else { 1.0 };
    let axes = ValueAxes {
        caption: None,
        margin: 12.0,
        x_label_area: 70.0,
        x: (x0, x1),
        y1,
        y_labels: 10,
        y_desc: "GPU time per generated token (ms)",
        x_desc: Some("trace"),
    };
    let mut chart = value_chart(area, &th, &axes)?;
    let above = Pos::new(HPos::Center, VPos::Bottom);
    for (i, t) in data.input.traces.iter().enumerate() {
        let x = xs[i];
        let col = mode_color(t.mode.as_deref());
        let Some((busy, idle)) = stacks[i] else {
            let (px, py) = chart.backend_coord(&(x, 0.0));
            root.draw_text(
                "n/a",
                &th.small().color(&MUTED).pos(above),
                (px, py - th.px(4.0)),
            )?;
            continue;
        };
        let corners = [(x - BAR_HALF, busy), (x + BAR_HALF, busy + idle)];
        chart.draw_series(std::iter::once(Rectangle::new(
            corners,
            col.mix(0.25).filled(),
        )))?;
        chart.draw_series(std::iter::once(Rectangle::new(
            corners,
            col.mix(0.9).stroke_width(th.upx(1.0)),
        )))?;
        bar(&mut chart, x, busy, col, &th)?;
        let kpt = t.get::<Kernels>().and_then(|k| k.kernels_per_token);
        let text = kpt.map_or_else(|| fmt_ms(busy + idle), |k| format!("{k:.1} kernels/token"));
        let (px, py) = chart.backend_coord(&(x, busy + idle));
        root.draw_text(&text, &th.text(12.0).pos(above), (px, py - th.px(4.0)))?;
    }
    group_notes(root, &mut chart, data, &xs, stacks)?;
    let to_px = |x: f64| chart.backend_coord(&(x, 0.0));
    trace_axis_labels(root, data, &xs, &to_px, &th.tick(), &th.bold(12.5))?;
    Ok(())
}

/// S_context by GPU busy time over each workload's bars (its first AR trace
/// against its first other trace).
fn group_notes<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    data: &Prepared,
    xs: &[f64],
    stacks: &[Option<(f64, f64)>],
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = data.theme;
    let traces = &data.input.traces;
    for g in &data.groups {
        let is_ar = |i: &&usize| Mode::of_opt(traces[**i].mode.as_deref()) == Mode::Ar;
        let base = g.members.iter().find(is_ar);
        let cand = g.members.iter().find(|i| !is_ar(i));
        let (Some(&b), Some(&c)) = (base, cand) else {
            continue;
        };
        let (Some(bk), Some(ck)) = (traces[b].get::<Kernels>(), traces[c].get::<Kernels>()) else {
            continue;
        };
        let Some(s) = compare(bk, ck).s_context_busy else {
            continue;
        };
        let (Some(first), Some(last)) = (g.members.first(), g.members.last()) else {
            continue;
        };
        let gtop = g
            .members
            .iter()
            .filter_map(|&i| stacks[i].map(|(b, i)| b + i))
            .fold(0.0, f64::max);
        let (a, py) = chart.backend_coord(&(xs[*first], gtop));
        let (z, _) = chart.backend_coord(&(xs[*last], gtop));
        group_bracket(
            root,
            &th,
            (a, z),
            py,
            &format!("S_context (busy) = {s:.2}×"),
        )?;
    }
    Ok(())
}
