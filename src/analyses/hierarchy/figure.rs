//! Figure 4 of the paper: the median inclusive duration of each call-chain
//! function per trace (the paper's Table 9 as bars), one panel per
//! function so that each has its own scale; and what `plot` runs
//! `hierarchy` with (its chains, [`DEFAULT_PLOT_CHAINS`] unless `--chain`).

use super::{Hierarchy, TraceHierarchy, DEFAULT_PLOT_CHAINS};
use crate::figures::common::*;
use crate::figures::{Drawing, Draws, PaperFigure, PlotInput};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

impl Draws for Hierarchy {
    const FIGURES: &'static [PaperFigure] = &[PaperFigure::of::<HierarchyMedians>()];

    /// `plot --chain`, else [`DEFAULT_PLOT_CHAINS`] (as `batch`'s Table 9);
    /// no examples of uncontained children.
    fn plot_options(chains: &[String]) -> serde_json::Value {
        let chains: Vec<String> = match chains.is_empty() {
            true => DEFAULT_PLOT_CHAINS.iter().map(|s| s.to_string()).collect(),
            false => chains.to_vec(),
        };
        serde_json::json!({ "chains": chains, "examples": 0 })
    }

    /// When no chain function was measured in any trace (figure 4's
    /// empty state).
    fn input_note(input: &PlotInput<'_>) -> Option<String> {
        let mut traces = input.traces.iter().filter_map(|t| t.get::<Hierarchy>());
        let measured = traces.any(|h| function_medians(h).iter().any(|f| f.median_ms.is_some()));
        (!measured).then(|| "no hierarchy data: figure 4 shows an empty state".to_string())
    }
}

/// The median inclusive duration of one chain function in one trace.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionMedian {
    pub name: String,
    pub median_ms: Option<f64>,
    pub calls: u64,
}

/// The figure's medians from a hierarchy result (each function once, in
/// chain order).
pub fn function_medians(h: &TraceHierarchy) -> Vec<FunctionMedian> {
    let mut out: Vec<FunctionMedian> = Vec::new();
    for f in h.chains.iter().flat_map(|c| &c.functions) {
        if out.iter().any(|o| o.name == f.name) {
            continue;
        }
        out.push(FunctionMedian {
            name: f.name.clone(),
            median_ms: f.median_ms,
            calls: f.outermost_calls,
        });
    }
    out
}

/// The functions present in any trace, in order of first appearance.
fn function_names(functions: &[Vec<FunctionMedian>]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for f in functions.iter().flatten() {
        if !names.contains(&f.name) {
            names.push(f.name.clone());
        }
    }
    names
}

/// Figure 4.
pub struct HierarchyMedians;

impl Drawing for HierarchyMedians {
    const NUMBER: u32 = 4;
    const STEM: &'static str = "fig4_hierarchy_medians";
    const TITLE: &'static str = "Median inclusive duration of the call-chain functions";

    fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &Prepared) -> FigResult
    where
        DB::ErrorType: 'static,
    {
        let traces = data.input.traces.iter();
        let functions: Vec<Vec<FunctionMedian>> = traces
            .map(|t| {
                t.get::<Hierarchy>()
                    .map(function_medians)
                    .unwrap_or_default()
            })
            .collect();
        draw(root, data, &functions)
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &Prepared,
    functions: &[Vec<FunctionMedian>],
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = data.theme;
    let names = function_names(functions);
    let has_values = functions.iter().flatten().any(|f| f.median_ms.is_some());
    let legend = if has_values {
        data.mode_legend()
    } else {
        Vec::new()
    };
    let body = frame(
        root,
        &th,
        HierarchyMedians::TITLE,
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
        let vals: Vec<Option<(f64, u64)>> = functions
            .iter()
            .map(|fs| {
                fs.iter()
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
