//! The roofline models of the ops that copy their input into an output of
//! another shape — nearest upsampling and replication padding
//! (TraceLens's `aten_upsample_nearest` and `aten_replication_pad`): one
//! FLOP per output element, the input read and the output written at the
//! input's element size. The output shape comes from the op's arguments.

use super::args::OpArgs;
use super::models::{add, bpe, mul, n, vector, Category, Fit, Unfit};

/// Ops that copy their input into an output of another shape: every
/// output element written once from an input element (TraceLens's
/// `aten_upsample_nearest` and `aten_replication_pad`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resize {
    /// Nearest-neighbour upsampling (`F.interpolate(mode="nearest")`).
    Upsample,
    /// Replication padding (`F.pad(mode="replicate")`).
    Pad,
}

/// Which resizing op `name` is, if any.
pub(super) fn resize_op(name: &str) -> Option<Resize> {
    match name {
        "aten::upsample_nearest1d"
        | "aten::upsample_nearest2d"
        | "aten::upsample_nearest3d"
        | "aten::_upsample_nearest_exact1d"
        | "aten::_upsample_nearest_exact2d"
        | "aten::_upsample_nearest_exact3d" => Some(Resize::Upsample),
        "aten::replication_pad1d" | "aten::replication_pad2d" | "aten::replication_pad3d" => {
            Some(Resize::Pad)
        }
        _ => None,
    }
}

/// A resizing op's figures: `x` read, `out` written, one FLOP an output
/// element (TraceLens's unary model on the output's shape).
fn resized(a: &OpArgs, x: &[u64], out: &[u64]) -> Fit {
    let b = bpe(a.ty(0))?;
    let (ni, no) = (n(x)?, n(out)?);
    vector(
        Category::UnaryElementwise,
        no,
        add(&[mul(&[ni, b])?, mul(&[no, b])?])?,
    )
}

/// A list of floats as Kineto writes a `float[]?` (`[2., 2.]`); `None`
/// when absent or not numbers.
fn floats(text: &str) -> Option<Vec<f64>> {
    let t = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    t.split(',').map(|x| x.trim().parse::<f64>().ok()).collect()
}

/// upsample_nearest{1,2,3}d: the output is [N, C, *size], `size` from
/// `output_size` (argument 1, both overloads), else from the `.vec`
/// overload's `scale_factors` (argument 2): ⌊in · scale⌋ per spatial dim,
/// as PyTorch sizes it.
pub(super) fn upsample(a: &OpArgs) -> Fit {
    let s = Unfit::Shape;
    let x = a.shaped(0).ok_or(s)?;
    let sp = x.len().checked_sub(2).filter(|&k| k > 0).ok_or(s)?;
    let size: Vec<u64> = match a.ints(1) {
        Some(v) if v.len() == sp => v
            .iter()
            .map(|&d| u64::try_from(d).map_err(|_| s))
            .collect::<Result<_, _>>()?,
        _ => {
            let f = floats(a.value(2)).filter(|f| f.len() == sp).ok_or(s)?;
            x[2..]
                .iter()
                .zip(&f)
                .map(|(&d, &k)| {
                    let o = (d as f64 * k).floor();
                    // A size past 2⁵³, negative or NaN: not a real shape.
                    (0.0..9_007_199_254_740_992.0)
                        .contains(&o)
                        .then_some(o as u64)
                        .ok_or(s)
                })
                .collect::<Result<_, _>>()?
        }
    };
    let out: Vec<u64> = x[..2].iter().copied().chain(size).collect();
    resized(a, x, &out)
}

/// replication_pad{1,2,3}d(self, padding): `padding` (argument 1) holds
/// (before, after) pairs from the last dim backwards, as `F.pad`.
pub(super) fn replication_pad(a: &OpArgs) -> Fit {
    let s = Unfit::Shape;
    let x = a.shaped(0).ok_or(s)?;
    let pad = a.ints(1).ok_or(s)?;
    if pad.len() % 2 != 0 || pad.len() / 2 > x.len() {
        return Err(s);
    }
    let mut out = x.to_vec();
    for (i, p) in pad.chunks_exact(2).enumerate() {
        let &[before, after] = p else {
            return Err(s);
        };
        let d = x.len() - 1 - i;
        let o = i128::from(x[d]) + i128::from(before) + i128::from(after);
        out[d] = u64::try_from(o).map_err(|_| s)?;
    }
    resized(a, x, &out)
}
