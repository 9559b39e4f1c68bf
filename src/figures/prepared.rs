//! The paper figures' view of their input: traces grouped into workloads
//! (AR first), the categorical trace axis and the labels under it.

use super::{Compared, PlotInput, PlotTrace};
use crate::plot::common::*;
use crate::runinfo::Mode;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Traces of one workload (or one pair), drawn side by side.
#[derive(Debug, Clone)]
pub struct Group<'a> {
    pub name: String,
    /// Trace indices, AR first.
    pub members: Vec<usize>,
    /// Its comparison (baseline and candidate among its members).
    pub comparison: Option<&'a Compared>,
}

/// The input, grouped once for every figure.
pub struct Prepared<'a> {
    pub input: &'a PlotInput<'a>,
    pub theme: Theme,
    pub groups: Vec<Group<'a>>,
}

impl<'a> Prepared<'a> {
    pub fn new(input: &'a PlotInput<'a>, size: (u32, u32)) -> Self {
        Prepared {
            input,
            theme: Theme::new(size),
            groups: groups(input),
        }
    }

    pub fn trace(&self, i: usize) -> &'a PlotTrace<'a> {
        &self.input.traces[i]
    }

    /// The modes present, AR first, for legends.
    pub fn mode_legend(&self) -> Vec<LegendItem> {
        let mut seen: Vec<(Mode, String)> = Vec::new();
        for t in &self.input.traces {
            let c = Mode::of_opt(t.mode.as_deref());
            let name = mode_name(t);
            if !seen
                .iter()
                .any(|(sc, n)| *sc == c && (c != Mode::Other || *n == name))
            {
                seen.push((c, name));
            }
        }
        seen.sort_by_key(|a| a.0);
        seen.into_iter()
            .map(|(c, name)| LegendItem {
                mark: Mark::Box(class_color(c)),
                label: name,
            })
            .collect()
    }

    /// Positions of the traces on a categorical axis: one unit per trace,
    /// groups separated by a gap. Returns (x per trace, axis range).
    pub fn positions(&self) -> (Vec<f64>, (f64, f64)) {
        let mut xs = vec![0.0; self.input.traces.len()];
        let mut x: f64 = 0.0;
        for (gi, g) in self.groups.iter().enumerate() {
            if gi > 0 {
                x += 0.6;
            }
            for &m in &g.members {
                xs[m] = x;
                x += 1.0;
            }
        }
        let last = (x - 1.0).max(0.0);
        (xs, (-0.6, last + 0.6))
    }
}

/// The mode as shown in legends and under bars: AR, MTP, or the raw mode.
pub fn mode_name(t: &PlotTrace) -> String {
    t.mode
        .as_deref()
        .map_or_else(|| "trace".to_string(), Mode::display)
}

/// The label under a trace's box or bar: its mode when it has one, else
/// its label.
pub fn short_label(t: &PlotTrace) -> String {
    if t.mode.is_some() {
        mode_name(t)
    } else {
        ellipsize(&t.label, 22)
    }
}

fn groups<'a>(input: &'a PlotInput<'a>) -> Vec<Group<'a>> {
    let key = |i: usize, t: &PlotTrace| -> String {
        if let Some(w) = &t.workload {
            return w.clone();
        }
        input
            .comparisons
            .iter()
            .find(|c| c.baseline == i || c.candidate == i)
            .map(|c| c.name.clone())
            .unwrap_or_else(|| t.label.clone())
    };
    let mut out: Vec<Group> = Vec::new();
    for (i, t) in input.traces.iter().enumerate() {
        let k = key(i, t);
        match out.iter_mut().find(|g| g.name == k) {
            Some(g) => g.members.push(i),
            None => out.push(Group {
                name: k,
                members: vec![i],
                comparison: None,
            }),
        }
    }
    for g in &mut out {
        g.members
            .sort_by_key(|&i| Mode::of_opt(input.traces[i].mode.as_deref()));
        g.comparison = input
            .comparisons
            .iter()
            .find(|c| c.name == g.name)
            .or_else(|| {
                let has = |i: usize| g.members.contains(&i);
                input
                    .comparisons
                    .iter()
                    .find(|c| has(c.baseline) && has(c.candidate))
            });
    }
    out
}
/// Writes labels under a categorical trace axis: the trace's mode (or
/// label) under each position, and the group name under each group.
/// `y_base` is the axis' lower value; positions come from the chart.
#[allow(clippy::too_many_arguments)]
pub fn trace_axis_labels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &Prepared,
    xs: &[f64],
    to_px: &dyn Fn(f64) -> (i32, i32),
    style: &TextStyle,
    group_style: &TextStyle,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = &data.theme;
    let top = Pos::new(HPos::Center, VPos::Top);
    let line_h = th.px(17.0);
    for (i, t) in data.input.traces.iter().enumerate() {
        let (px, py) = to_px(xs[i]);
        root.draw_text(&short_label(t), &style.pos(top), (px, py + th.px(6.0)))?;
    }
    for g in &data.groups {
        let show = g.members.len() > 1
            || g.members
                .iter()
                .any(|&i| short_label(data.trace(i)) != g.name);
        if !show {
            continue;
        }
        let (a, _) = to_px(xs[*g.members.first().unwrap()]);
        let (b, py) = to_px(xs[*g.members.last().unwrap()]);
        let cx = (a + b) / 2;
        let y = py + th.px(6.0) + line_h + th.px(2.0);
        if g.members.len() > 1 {
            let half = th.px(10.0);
            root.draw(&PathElement::new(
                vec![(a - half, y), (b + half, y)],
                MUTED.stroke_width(1),
            ))?;
        }
        root.draw_text(
            &ellipsize(&g.name, 28),
            &group_style.pos(top),
            (cx, y + th.px(3.0)),
        )?;
    }
    Ok(())
}
