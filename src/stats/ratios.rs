//! Exact ratios of integer sums (ns, bytes): rounded half to even from
//! i128 sums (C1), as `idle`'s and `memory`'s figures and the campaign's
//! tables print them.

/// `num / den` rounded half to even to `decimals` places (C1), as f64;
/// null when `den` is 0.
pub fn round_ratio(num: i128, den: i128, decimals: u32) -> f64 {
    let scale = 10i128.pow(decimals);
    let (n, d) = if den < 0 { (-num, -den) } else { (num, den) };
    let scaled = n.saturating_mul(scale);
    let q = scaled.div_euclid(d);
    let r = scaled.rem_euclid(d);
    // Half to even: up when the remainder is over half, or exactly half
    // and q is odd.
    let twice = r.saturating_mul(2);
    let up = twice > d || (twice == d && q % 2 != 0);
    let q = q + i128::from(up);
    q as f64 / scale as f64
}

/// 100 × num / den, 4 decimals (C1); null when den is 0.
pub fn pct(num: i128, den: i128) -> Option<f64> {
    (den != 0).then(|| round_ratio(num.saturating_mul(100), den, 4))
}

/// A mean (other ratio, 6 decimals); null when den is 0.
pub fn mean6(num: i128, den: i128) -> Option<f64> {
    (den != 0).then(|| round_ratio(num, den, 6))
}
