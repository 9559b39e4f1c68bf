//! Where things go: value axes and their ranges, number formats, panel
//! grids, and what a legend lists (drawn by [`super::marks`]). The paper
//! figures' grouping of traces lives with them (`crate::figures`).

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
    /// A square on its corner (fig5's fourth workload shape).
    Diamond(RGBColor),
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
/// The lowest baseline (pixel y, growing downwards) at or above `bottom`
/// for a label `height` pixels tall that no dot covers: `dots` are the
/// pixel y of the dots in the label's column, highest value last (pixel y
/// decreasing), `reach` their radius plus a gap. A label over a box's
/// whisker goes up past the dots in its way.
pub fn clear_of(bottom: i32, height: i32, dots: &[i32], reach: i32) -> i32 {
    let mut bottom = bottom;
    for &d in dots {
        if d - reach < bottom && d + reach > bottom - height {
            bottom = d - reach;
        }
    }
    bottom
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

#[cfg(test)]
mod tests {
    use super::clear_of;

    #[test]
    fn a_label_goes_up_past_the_dots_in_its_way() {
        // A 14 px label whose baseline is at y = 100: a dot at 95 (radius
        // and gap 4) is in its way, then one at 80 is too; one at 40 is not.
        assert_eq!(clear_of(100, 14, &[95, 80, 40], 4), 76);
        // No dot in the way: it stays.
        assert_eq!(clear_of(100, 14, &[130, 40], 4), 100);
        assert_eq!(clear_of(100, 14, &[], 4), 100);
    }
}
