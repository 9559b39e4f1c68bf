//! Exact summary statistics over integer nanoseconds.
//!
//! Every statistic is computed as an exact rational number of ns (medians
//! of even counts and interpolated percentiles can fall between integers)
//! and converted to milliseconds only at the end.

mod multiset;
pub mod ratios;

pub use multiset::Multiset;

use crate::model::Ns;
use serde::{Deserialize, Serialize};

/// An exact rational number of nanoseconds, `num / den`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exact {
    pub num: i128,
    pub den: i128,
}

impl Exact {
    pub fn int(v: i64) -> Self {
        Exact {
            num: v.into(),
            den: 1,
        }
    }

    /// Milliseconds as the nearest f64 of the exact value.
    pub fn ms(self) -> f64 {
        // Split into integer and remainder parts so large values keep
        // their precision.
        let q = self.num.div_euclid(self.den);
        let r = self.num.rem_euclid(self.den);
        (q as f64 + r as f64 / self.den as f64) / 1e6
    }

    /// Nanoseconds as f64.
    pub fn ns(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

/// Summary of a set of durations, each figure in ms (`None` for an empty set).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: usize,
    pub median: Option<f64>,
    pub mean: Option<f64>,
    pub p10: Option<f64>,
    pub p90: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub sum: Option<f64>,
}

/// The exact figures behind a [`Summary`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExactSummary {
    pub count: usize,
    pub median: Exact,
    pub mean: Exact,
    pub p10: Exact,
    pub p90: Exact,
    pub min: Ns,
    pub max: Ns,
    pub sum: i128,
}

impl ExactSummary {
    /// Computes the statistics; `None` for an empty set.
    pub fn of(values: &[Ns]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let mut v: Vec<i64> = values.iter().map(|n| n.0).collect();
        v.sort_unstable();
        let sum: i128 = v.iter().map(|&x| i128::from(x)).sum();
        let n = v.len();
        Some(ExactSummary {
            count: n,
            median: median_sorted(&v),
            mean: Exact {
                num: sum,
                den: n as i128,
            },
            p10: percentile_sorted(&v, 10),
            p90: percentile_sorted(&v, 90),
            min: Ns(v[0]),
            max: Ns(v[n - 1]),
            sum,
        })
    }

    pub fn to_ms(&self) -> Summary {
        Summary {
            count: self.count,
            median: Some(self.median.ms()),
            mean: Some(self.mean.ms()),
            p10: Some(self.p10.ms()),
            p90: Some(self.p90.ms()),
            min: Some(self.min.as_ms()),
            max: Some(self.max.as_ms()),
            sum: Some(
                Exact {
                    num: self.sum,
                    den: 1,
                }
                .ms(),
            ),
        }
    }
}

/// Reads one figure of a [`Summary`].
pub type Getter = fn(&Summary) -> Option<f64>;

impl Summary {
    /// The figures in report order, with their names (for columns and rows).
    pub const FIELDS: [(&'static str, Getter); 7] = [
        ("median", |s| s.median),
        ("mean", |s| s.mean),
        ("p10", |s| s.p10),
        ("p90", |s| s.p90),
        ("min", |s| s.min),
        ("max", |s| s.max),
        ("sum", |s| s.sum),
    ];

    pub fn of(values: &[Ns]) -> Self {
        ExactSummary::of(values)
            .map(|s| s.to_ms())
            .unwrap_or_default()
    }
}

/// The middle value; for an even count the mean of the two middle values.
pub fn median_sorted(v: &[i64]) -> Exact {
    let n = v.len();
    if n % 2 == 1 {
        Exact::int(v[n / 2])
    } else {
        Exact {
            num: i128::from(v[n / 2 - 1]) + i128::from(v[n / 2]),
            den: 2,
        }
    }
}

/// The median of wide values (sums of ns past i64, issue 59), exact:
/// the middle value, or for an even count the mean of the two middle
/// values as `num / 2`. `None` for none. The two are added in i128, which
/// holds any two sums of ns (a union of i64 times is below 2⁶⁴); should
/// they pass it, their mean is formed halves first (within 1 ns).
pub fn median_wide(values: &mut [i128]) -> Option<Exact> {
    values.sort_unstable();
    let n = values.len();
    let hi = *values.get(n / 2)?;
    if n % 2 == 1 {
        return Some(Exact { num: hi, den: 1 });
    }
    let lo = values[n / 2 - 1];
    Some(match lo.checked_add(hi) {
        Some(num) => Exact { num, den: 2 },
        None => Exact {
            num: lo / 2 + hi / 2 + (lo % 2 + hi % 2) / 2,
            den: 1,
        },
    })
}

/// The mean of wide values, exact (`Σ / n`); `None` for none, or should
/// the sum pass i128.
pub fn mean_wide(values: &[i128]) -> Option<Exact> {
    let sum = values.iter().try_fold(0i128, |s, &v| s.checked_add(v))?;
    (!values.is_empty()).then_some(Exact {
        num: sum,
        den: values.len() as i128,
    })
}

/// The `pct`-th percentile by linear interpolation between closest ranks
/// (numpy's default): rank = pct/100 · (n − 1).
pub fn percentile_sorted(v: &[i64], pct: u32) -> Exact {
    let n = v.len() as i128;
    let scaled = (n - 1) * i128::from(pct); // rank × 100
    let lo = (scaled / 100) as usize;
    let frac = scaled % 100;
    let a = i128::from(v[lo]);
    if frac == 0 || lo + 1 >= v.len() {
        return Exact {
            num: a * 100,
            den: 100,
        };
    }
    let b = i128::from(v[lo + 1]);
    Exact {
        num: a * 100 + (b - a) * frac,
        den: 100,
    }
}

// Box plots of the figures: quantiles of float values (ms).
/// Linear-interpolation quantile of sorted values (numpy's default, as
/// [`percentile_sorted`] on integers); the 0.5 quantile is the median `pair` reports.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = q * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * frac)
}

/// Box-plot figures: (q1, median, q3, lower whisker, upper whisker), whiskers
/// at the most extreme values within 1.5 IQR of the box.
pub fn box_stats(sorted: &[f64]) -> Option<(f64, f64, f64, f64, f64)> {
    let q1 = quantile(sorted, 0.25)?;
    let med = quantile(sorted, 0.5)?;
    let q3 = quantile(sorted, 0.75)?;
    let iqr = q3 - q1;
    let lo = sorted
        .iter()
        .copied()
        .find(|&v| v >= q1 - 1.5 * iqr)
        .unwrap_or(q1);
    let hi = sorted
        .iter()
        .rev()
        .copied()
        .find(|&v| v <= q3 + 1.5 * iqr)
        .unwrap_or(q3);
    Some((q1, med, q3, lo, hi))
}

/// Upper Tukey fence: values above it are outliers.
pub fn upper_fence(sorted: &[f64]) -> Option<f64> {
    let q1 = quantile(sorted, 0.25)?;
    let q3 = quantile(sorted, 0.75)?;
    Some(q3 + 1.5 * (q3 - q1))
}

/// n / d of exact rationals as f64: (a/b) / (c/d) = (a·d) / (b·c), formed
/// from the exact values; `None` when either is missing, d is zero or the
/// products overflow.
pub fn ratio(n: Option<Exact>, d: Option<Exact>) -> Option<f64> {
    let (n, d) = (n?, d?);
    let num = n.num.checked_mul(d.den)?;
    let den = n.den.checked_mul(d.num)?;
    (den != 0).then(|| num as f64 / den as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(v: &[i64]) -> Vec<Ns> {
        v.iter().map(|&x| Ns(x)).collect()
    }

    #[test]
    fn median_odd_and_even() {
        let s = ExactSummary::of(&ns(&[3, 1, 2])).unwrap();
        assert_eq!(s.median, Exact::int(2));
        let s = ExactSummary::of(&ns(&[4, 1, 2, 3])).unwrap();
        assert_eq!(s.median.ns(), 2.5);
        assert_eq!(s.sum, 10);
        assert_eq!(s.mean.ns(), 2.5);
    }

    #[test]
    fn percentiles_match_numpy_linear() {
        // numpy.percentile([10, 20, 30, 40, 50], 10) == 14.0, 90 → 46.0
        let s = ExactSummary::of(&ns(&[50, 10, 40, 20, 30])).unwrap();
        assert_eq!(s.p10.ns(), 14.0);
        assert_eq!(s.p90.ns(), 46.0);
        // One value: every statistic is that value.
        let s = ExactSummary::of(&ns(&[7])).unwrap();
        assert_eq!((s.p10.ns(), s.p90.ns(), s.median.ns()), (7.0, 7.0, 7.0));
    }

    #[test]
    fn milliseconds_are_exact_for_large_values() {
        let e = Exact {
            num: 2 * 5_106_297_913_320_791,
            den: 2,
        };
        assert_eq!(e.ms(), 5_106_297_913.320_791);
        assert_eq!(Summary::of(&[]).median, None);
    }

    /// Wide medians and means are exact past i64 (issue 59: hierarchy's
    /// per-call GPU busy was clamped to i64::MAX before its median).
    #[test]
    fn wide_median_and_mean_are_exact_past_i64() {
        let big = i128::from(i64::MAX);
        let mut v = [big + 5, 3, big + 1];
        assert_eq!(
            median_wide(&mut v),
            Some(Exact {
                num: big + 1,
                den: 1
            })
        );
        let mut v = [big + 4, big + 1, 0, big + 10];
        assert_eq!(
            median_wide(&mut v),
            Some(Exact {
                num: 2 * big + 5,
                den: 2
            })
        );
        assert_eq!(median_wide(&mut []), None);
        // Past i128 when added: the halves first.
        let mut v = [i128::MAX - 1, i128::MAX - 3];
        assert_eq!(
            median_wide(&mut v),
            Some(Exact {
                num: i128::MAX - 2,
                den: 1
            })
        );
        assert_eq!(
            mean_wide(&[big + 1, big + 3]),
            Some(Exact {
                num: 2 * big + 4,
                den: 2
            })
        );
        assert_eq!(mean_wide(&[i128::MAX, 1]), None);
        assert_eq!(mean_wide(&[]), None);
    }
}
