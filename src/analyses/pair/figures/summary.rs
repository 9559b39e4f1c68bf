//! Figure 3: tokens per context (P, Eq. 15) and GPU span per token
//! (Eq. 16) per trace, grouped by workload, with S_context (Eq. 17) and
//! the context reduction written over each pair.

use super::super::{Comparison, TracePairs};
use super::Data;
use crate::figures::common::*;
use crate::figures::Drawing;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Figure 3.
pub struct TokensAndSpanPerToken;

impl Drawing for TokensAndSpanPerToken {
    const NUMBER: u32 = 3;
    const STEM: &'static str = "fig3_tokens_and_span_per_token";
    const TITLE: &'static str = "Tokens per context and GPU span per token";

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
    let legend = data.mode_legend();
    let body = frame(
        root,
        &th,
        TokensAndSpanPerToken::TITLE,
        "P = completion tokens / paired contexts · GPU span per token = Σ GPU spans / completion tokens · S_context = AR ÷ MTP of the latter",
        &legend,
    )?;
    let traces = 0..data.input.traces.len();
    let any_tokens = traces
        .filter_map(|i| data.pairs(i))
        .any(|p| p.tokens_per_context.is_some());
    if data.input.traces.is_empty() || !any_tokens {
        return empty_state(
            &body,
            &th,
            "no completion-token counts",
            "give --tokens N per trace, or put <trace>.summary.json with completion_tokens beside each trace",
        );
    }
    let (w, _) = body.dim_in_pixel();
    let (left, right) = body.split_horizontally(w / 2);
    panel(
        root,
        &left,
        data,
        "Tokens per step context (P)",
        "tokens per context",
        &|p| p.tokens_per_context,
        &|v| format!("{v:.2}"),
        &|c| {
            c.context_reduction_pct.map(|p| {
                format!(
                    "contexts {}{:.1} %",
                    if p >= 0.0 { "−" } else { "+" },
                    p.abs()
                )
            })
        },
    )?;
    panel(
        root,
        &right,
        data,
        "GPU span per generated token",
        "GPU span per token (ms)",
        &|p| p.gpu_span_per_token_ms,
        &|v| fmt_ms(v),
        &|c| c.s_context.map(|s| format!("S_context = {s:.2}×")),
    )?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    area: &DrawingArea<DB, Shift>,
    data: &Data,
    caption: &str,
    y_desc: &str,
    value: &dyn Fn(&TracePairs) -> Option<f64>,
    fmt: &dyn Fn(f64) -> String,
    note: &dyn Fn(&Comparison) -> Option<String>,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = data.theme;
    let (xs, (x0, x1)) = data.positions();
    let traces = 0..data.input.traces.len();
    let vals: Vec<Option<f64>> = traces.map(|i| data.pairs(i).and_then(value)).collect();
    let top = vals.iter().flatten().copied().fold(0.0, f64::max);
    let y1 = if top > 0.0 { top * 1.32 } else { 1.0 };
    let axes = ValueAxes {
        caption: Some(caption),
        margin: 12.0,
        x_label_area: 70.0,
        x: (x0, x1),
        y1,
        y_labels: 10,
        y_desc,
        x_desc: Some("trace"),
    };
    let mut chart = value_chart(area, &th, &axes)?;
    let above = Pos::new(HPos::Center, VPos::Bottom);
    for (i, t) in data.input.traces.iter().enumerate() {
        let x = xs[i];
        let col = mode_color(t.mode.as_deref());
        match vals[i] {
            Some(v) => {
                bar(&mut chart, x, v, col, &th)?;
                let (px, py) = chart.backend_coord(&(x, v));
                root.draw_text(&fmt(v), &th.text(12.5).pos(above), (px, py - th.px(4.0)))?;
            }
            None => {
                let (px, py) = chart.backend_coord(&(x, 0.0));
                root.draw_text(
                    "n/a",
                    &th.small().color(&MUTED).pos(above),
                    (px, py - th.px(4.0)),
                )?;
            }
        }
    }
    // The comparison over each group's bars.
    for g in &data.groups {
        let compared = g.comparison.and_then(|c| data.comparison(c));
        let Some(text) = compared.as_ref().and_then(note) else {
            continue;
        };
        let first = xs[*g.members.first().unwrap()];
        let last = xs[*g.members.last().unwrap()];
        let gtop = g
            .members
            .iter()
            .filter_map(|&i| vals[i])
            .fold(0.0, f64::max);
        let (a, py) = chart.backend_coord(&(first, gtop));
        let (b, _) = chart.backend_coord(&(last, gtop));
        group_bracket(root, &th, (a, b), py, &text)?;
    }
    let to_px = |x: f64| chart.backend_coord(&(x, 0.0));
    trace_axis_labels(root, data, &xs, &to_px, &th.tick(), &th.bold(12.5))?;
    Ok(())
}
