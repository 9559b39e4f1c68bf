//! Where things go: the grouping of traces into workloads, the
//! categorical trace axis, labels under it, value axes and their ranges,
//! and what a legend lists (drawn by [`super::marks`]).

use super::theme::{class_color, Theme};
use super::{PlotInput, PlotTrace};
use crate::analyses::pair::Comparison;
use crate::runinfo::Mode;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::{Cartesian2d, ChartContext, RGBColor};

pub use crate::text::ellipsize_end as ellipsize;

/// What a legend entry shows.
#[derive(Debug, Clone)]
pub enum Mark {
    Box(RGBColor),
    Dot(RGBColor),
    Ring(RGBColor),
    Dashed(RGBColor),
    /// A black median bar.
    Median,
    Triangle(RGBColor),
    Square(RGBColor),
}

#[derive(Debug, Clone)]
pub struct LegendItem {
    pub mark: Mark,
    pub label: String,
}

impl LegendItem {
    pub fn new(mark: Mark, label: impl Into<String>) -> Self {
        LegendItem {
            mark,
            label: label.into(),
        }
    }
}

/// A chart with two float axes, as most panels are.
pub type Chart2d<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Traces of one workload (or one pair), drawn side by side.
#[derive(Debug, Clone)]
pub struct Group<'a> {
    pub name: String,
    /// Trace indices, AR first.
    pub members: Vec<usize>,
    pub comparison: Option<&'a Comparison>,
}

/// A trace's paired contexts in ms, sorted and in context order.
#[derive(Debug, Clone, Default)]
pub struct Spans {
    /// (context index, CPU span ms, GPU span ms) over paired contexts.
    pub rows: Vec<(usize, f64, f64)>,
    pub cpu_sorted: Vec<f64>,
    pub gpu_sorted: Vec<f64>,
}

/// The input, grouped and measured once for every figure.
pub struct Prepared<'a> {
    pub input: &'a PlotInput,
    pub theme: Theme,
    pub groups: Vec<Group<'a>>,
    pub spans: Vec<Spans>,
}

impl<'a> Prepared<'a> {
    pub fn new(input: &'a PlotInput, size: (u32, u32)) -> Self {
        Prepared {
            input,
            theme: Theme::new(size),
            groups: groups(input),
            spans: input.traces.iter().map(spans_of).collect(),
        }
    }

    /// The span values that share one axis: every paired context's GPU
    /// span, and its CPU span too when `with_cpu`.
    pub fn span_values(&self, with_cpu: bool) -> Vec<f64> {
        self.spans
            .iter()
            .flat_map(|s| {
                let cpu: &[f64] = if with_cpu { &s.cpu_sorted } else { &[] };
                cpu.iter().chain(&s.gpu_sorted).copied()
            })
            .collect()
    }

    pub fn trace(&self, i: usize) -> &'a PlotTrace {
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

fn groups(input: &PlotInput) -> Vec<Group<'_>> {
    let key = |t: &PlotTrace| -> String {
        if let Some(w) = &t.workload {
            return w.clone();
        }
        input
            .comparisons
            .iter()
            .find(|(_, c)| c.baseline == t.pairs.path || c.candidate == t.pairs.path)
            .map(|(n, _)| n.clone())
            .unwrap_or_else(|| t.label.clone())
    };
    let mut out: Vec<Group> = Vec::new();
    for (i, t) in input.traces.iter().enumerate() {
        let k = key(t);
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
            .find(|(n, _)| *n == g.name)
            .or_else(|| {
                input.comparisons.iter().find(|(_, c)| {
                    g.members
                        .iter()
                        .any(|&i| input.traces[i].pairs.path == c.baseline)
                        && g.members
                            .iter()
                            .any(|&i| input.traces[i].pairs.path == c.candidate)
                })
            })
            .map(|(_, c)| c);
    }
    out
}

fn spans_of(t: &PlotTrace) -> Spans {
    let rows: Vec<(usize, f64, f64)> = t
        .pairs
        .rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.gpu_ns.map(|g| (i, r.cpu_ns as f64 / 1e6, g as f64 / 1e6)))
        .collect();
    let mut cpu: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let mut gpu: Vec<f64> = rows.iter().map(|r| r.2).collect();
    cpu.sort_by(f64::total_cmp);
    gpu.sort_by(f64::total_cmp);
    Spans {
        rows,
        cpu_sorted: cpu,
        gpu_sorted: gpu,
    }
}
/// A value range padded for drawing: (lo, hi) with `pad` of the span on
/// each side; never empty.
pub fn padded(lo: f64, hi: f64, pad_lo: f64, pad_hi: f64) -> (f64, f64) {
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    let span = if hi > lo { hi - lo } else { hi.abs().max(1e-3) };
    ((lo - span * pad_lo).max(0.0), hi + span * pad_hi)
}

/// Decimals that make ticks over `range` distinct.
pub fn decimals(range: f64) -> usize {
    if range <= 0.0 || !range.is_finite() {
        return 3;
    }
    let d = (-(range / 8.0).log10()).ceil();
    d.clamp(0.0, 5.0) as usize
}

/// Formats a millisecond value for labels.
pub fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}
/// Smallest and largest of the values; `None` when there are none.
pub fn extent(values: &[f64]) -> Option<(f64, f64)> {
    let lo = values.iter().copied().reduce(f64::min)?;
    let hi = values.iter().copied().reduce(f64::max)?;
    Some((lo, hi))
}
/// Rows × columns for `n` panels.
pub fn grid(n: usize, wide: bool) -> (usize, usize) {
    match n {
        0 | 1 => (1, 1),
        2 if wide => (1, 2),
        2 | 3 => (n, 1),
        4 => (2, 2),
        _ => (n.div_ceil(3), 3),
    }
}

/// A value axis: linear, or log10 when the values span a wide range (a
/// trace with 0.01 ms and 100 ms contexts). Values are drawn as `f(v)`.
#[derive(Debug, Clone, Copy)]
pub struct Axis {
    pub log: bool,
    floor: f64,
}

impl Axis {
    /// Log scale when max / min(positive) exceeds 30.
    pub fn for_values(vals: &[f64]) -> Axis {
        let min_pos = vals
            .iter()
            .copied()
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let log = min_pos.is_finite() && max / min_pos > 30.0;
        Axis {
            log,
            floor: if min_pos.is_finite() {
                min_pos / 2.0
            } else {
                1e-6
            },
        }
    }

    /// The drawn coordinate of a value.
    pub fn f(&self, v: f64) -> f64 {
        if self.log {
            v.max(self.floor).log10()
        } else {
            v
        }
    }

    /// The drawn range for values in [lo, hi], padded.
    pub fn range(&self, lo: f64, hi: f64, pad_lo: f64, pad_hi: f64) -> (f64, f64) {
        if self.log {
            let (a, b) = (self.f(lo), self.f(hi));
            let span = (b - a).max(0.5);
            (a - span * pad_lo, b + span * pad_hi)
        } else {
            padded(lo, hi, pad_lo, pad_hi)
        }
    }

    /// A tick label for drawn coordinate `t`.
    pub fn label(&self, t: f64, range: f64) -> String {
        if self.log {
            sig(10f64.powf(t))
        } else {
            let prec = decimals(range);
            format!("{t:.prec$}")
        }
    }

    /// An axis description with the scale noted.
    pub fn desc(&self, base: &str) -> String {
        if self.log {
            format!("{base}, log scale")
        } else {
            base.to_string()
        }
    }

    /// Tick count: on a log axis, few enough for whole decades.
    pub fn ticks(&self, linear: usize) -> usize {
        if self.log {
            5
        } else {
            linear
        }
    }
}

/// Three significant digits, trailing zeros trimmed.
pub fn sig(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".into();
    }
    let d = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.d$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}
