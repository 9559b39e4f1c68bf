//! Figure 4: the median inclusive duration of each call-chain function per
//! trace (the paper's Table 9 as bars), one panel per function so that
//! each has its own scale.

use super::common::*;
use super::Figure;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The functions present in any trace, in order of first appearance.
pub fn function_names(data: &Prepared) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for t in &data.input.traces {
        for f in &t.functions {
            if !names.contains(&f.name) {
                names.push(f.name.clone());
            }
        }
    }
    names
}

pub fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &Prepared) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = data.theme;
    let names = function_names(data);
    let has_values = data
        .input
        .traces
        .iter()
        .flat_map(|t| &t.functions)
        .any(|f| f.median_ms.is_some());
    let legend = if has_values {
        data.mode_legend()
    } else {
        Vec::new()
    };
    let body = frame(
        root,
        &th,
        Figure::HierarchyMedians.title(),
        "inclusive duration over the outermost calls of each function · label: median ms (calls)",
        &legend,
    )?;
    if !has_values {
        return empty_state(
            &body,
            &th,
            "no hierarchy data",
            "no chain function was measured in these traces (run `torchtrace hierarchy`, or check the chain names)",
        );
    }
    let (xs, (x0, x1)) = data.positions();
    let panels = body.split_evenly(grid(names.len(), true));
    for (name, area) in names.iter().zip(&panels) {
        let vals: Vec<Option<(f64, u64)>> = data
            .input
            .traces
            .iter()
            .map(|t| {
                t.functions
                    .iter()
                    .find(|f| &f.name == name)
                    .and_then(|f| f.median_ms.map(|m| (m, f.calls)))
            })
            .collect();
        let top = vals.iter().flatten().map(|v| v.0).fold(0.0, f64::max);
        let y1 = if top > 0.0 { top * 1.3 } else { 1.0 };
        let axes = ValueAxes {
            caption: Some(&ellipsize(name, 60)),
            margin: 10.0,
            x_label_area: 50.0,
            x: (x0, x1),
            y1,
            y_labels: 6,
            y_desc: "median inclusive (ms)",
            x_desc: None,
        };
        let mut chart = value_chart(area, &th, &axes)?;
        let above = Pos::new(HPos::Center, VPos::Bottom);
        for (i, t) in data.input.traces.iter().enumerate() {
            let x = xs[i];
            let col = mode_color(t.mode.as_deref());
            match vals[i] {
                Some((v, calls)) => {
                    bar(&mut chart, x, v, col, &th)?;
                    let (px, py) = chart.backend_coord(&(x, v));
                    root.draw_text(
                        &format!("{} ({calls})", fmt_ms(v)),
                        &th.small().pos(above),
                        (px, py - th.px(3.0)),
                    )?;
                }
                None => {
                    let (px, py) = chart.backend_coord(&(x, 0.0));
                    root.draw_text(
                        "not called",
                        &th.text(11.0).color(&MUTED).pos(above),
                        (px, py - th.px(4.0)),
                    )?;
                }
            }
        }
        let to_px = |x: f64| chart.backend_coord(&(x, 0.0));
        trace_axis_labels(root, data, &xs, &to_px, &th.small(), &th.bold(11.5))?;
    }
    Ok(())
}
