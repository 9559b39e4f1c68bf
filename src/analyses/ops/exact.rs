//! Exact integer arithmetic of the figures (C1): ratios as exact fractions
//! rounded half to even to 6 decimals, means and medians to a whole ns, sums
//! saturated into i64 only at the end.

use super::TimeStats;

/// `num / den` rounded half to even (`den > 0`).
pub(crate) fn div_half_even(num: i128, den: i128) -> i128 {
    let (q, r) = (num.div_euclid(den), num.rem_euclid(den));
    match (2 * r).cmp(&den) {
        std::cmp::Ordering::Less => q,
        std::cmp::Ordering::Greater => q + 1,
        std::cmp::Ordering::Equal => q + (q & 1),
    }
}

/// An exact ratio printed with 6 decimals (C1); `None` when `den` is 0.
pub(crate) fn ratio6(num: i128, den: i128) -> Option<f64> {
    (den > 0).then(|| div_half_even(num * 1_000_000, den) as f64 / 1e6)
}

pub(super) fn sat(v: i128) -> i64 {
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// The median of sorted values, an even count's two middles averaged and
/// rounded half to even (C1).
pub(super) fn median(sorted: &[i64]) -> Option<i64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some(sat(div_half_even(
            i128::from(sorted[n / 2 - 1]) + i128::from(sorted[n / 2]),
            2,
        ))),
    }
}

/// `{sum, mean, median, min, max}` of a per-launch time (sorts `xs`).
pub(super) fn time_stats(xs: &mut [i64]) -> TimeStats {
    xs.sort_unstable();
    let total: i128 = xs.iter().map(|&x| i128::from(x)).sum();
    TimeStats {
        sum: sat(total),
        mean: (!xs.is_empty()).then(|| sat(div_half_even(total, xs.len() as i128))),
        median: median(xs),
        min: xs.first().copied(),
        max: xs.last().copied(),
    }
}
