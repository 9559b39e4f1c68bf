//! Per-op performance models: FLOPs and bytes moved of one call of an op,
//! from its recorded arguments ([`OpArgs`]), as exact integers (u128).
//!
//! The formulas are TraceLens's (`TraceLens/PerfModel/perf_model.py`,
//! AMD-AGI/TraceLens) where they are right, so that the figures equal its
//! reports; where they differ, docs/COMMANDS.md ("torchtrace roofline",
//! "Against TraceLens") says why. In short:
//!
//! ```text
//! GEMM   A[M,K]·B[K,N] (+C)       flops 2·M·N·K (+ M·N with a bias)
//!                                 bytes (M·K + K·N + M·N + bias elems) · bpe(A)
//! bmm    batch b                  b × the above (baddbmm: bias M·N flops a batch)
//! SDPA   Q[B,Hq,Nq,d] K,V[B,Hkv,Nkv,d|dv]
//!                                 flops B·Hq·2·Nq·Nkv·(d + dv)  (causal, Nq = Nkv: ½)
//!                                 bytes (Q + K + V + O elems) · bpe(Q)
//! conv   x, w[Cout,Cin/g,k…]      flops 2·|out|·|w[1:]| (+ |out| with a bias)
//!                                 bytes (|x| + |w| + |out| (+ Cout)) · bpe(x)
//! unary  n elements               flops n, bytes n·bpe(in) + n·bpe(out)
//! upsample_nearest / replication_pad  x → out (spatial sizes from the arguments)
//!                                 flops |out|, bytes (|x| + |out|)·bpe(x)
//! binary a ⊕ b → broadcast n      flops n, bytes |a|·bpe(a) + |b|·bpe(b) + n·bpe(out)
//! reduce n in → m out             flops n, bytes n·bpe(in) + m·bpe(out)
//! softmax n                       flops 3n, bytes n·bpe(in) + n·bpe(out)
//! layer_norm n, C channels        flops 5n + 6C, bytes 2n·bpe + 6C·bpe (TraceLens: training, affine)
//! rms_norm n, C                   flops (n/C)(2C + 2) + n(2 affine | 1), bytes 2n·bpe (+ C·bpe)
//! topk n in, k per row            flops n, bytes n·bpe + rows·k·(bpe + 8)
//! cat    parts → out              flops 0, bytes 2·Σ|part|·bpe (TensorList dtype: see `cat`)
//! gather/scatter/index_select/embedding: bytes of what is read and written, flops 0
//! ```

use super::args::{bytes_per_element, numel, Dims, OpArgs, Precision};
use super::resize::{replication_pad, resize_op, upsample, Resize};
use serde::{Deserialize, Serialize};

/// What kind of op a model is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Gemm,
    Sdpa,
    Conv,
    UnaryElementwise,
    BinaryElementwise,
    Reduce,
    Softmax,
    Normalization,
    Topk,
    Cat,
    Index,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Gemm => "gemm",
            Category::Sdpa => "sdpa",
            Category::Conv => "conv",
            Category::UnaryElementwise => "unary_elementwise",
            Category::BinaryElementwise => "binary_elementwise",
            Category::Reduce => "reduce",
            Category::Softmax => "softmax",
            Category::Normalization => "normalization",
            Category::Topk => "topk",
            Category::Cat => "cat",
            Category::Index => "index",
        }
    }

    /// Attention and convolution: one model for the whole op, the helper
    /// kernels it launches included.
    pub fn composite(self) -> bool {
        matches!(self, Category::Sdpa | Category::Conv)
    }

    /// Matrix ops run on the tensor cores (the dtype's matrix peak); the
    /// others on the vector units (the fp32 peak).
    pub fn matrix(self) -> bool {
        matches!(self, Category::Gemm | Category::Sdpa | Category::Conv)
    }
}

/// One call's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Model {
    pub category: Category,
    pub flops: u128,
    pub bytes: u128,
    /// The peak column it computes in (`None`: dtype without a peak).
    pub precision: Option<Precision>,
}

/// Why a modelled op's call got no figures (each a counted note).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfit {
    /// An argument the model needs is missing or not a tensor of the
    /// rank it expects.
    Shape,
    /// A dtype whose size is unknown.
    Dtype,
    /// A figure past u128 (never on real shapes).
    Overflow,
}

impl Unfit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unfit::Shape => "shapes not as the model expects",
            Unfit::Dtype => "unknown dtype",
            Unfit::Overflow => "figures past u128",
        }
    }
}

pub(super) type Fit = Result<Model, Unfit>;

const UNARY: &[&str] = &[
    "aten::copy_",
    "aten::copy",
    "aten::clamp_min",
    "aten::clamp_min_",
    "aten::clamp_max",
    "aten::clamp_max_",
    "aten::clamp",
    "aten::clamp_",
    "aten::sigmoid",
    "aten::sigmoid_",
    "aten::rsqrt",
    "aten::sqrt",
    "aten::silu",
    "aten::silu_",
    "aten::neg",
    "aten::pow",
    "aten::exp",
    "aten::exp_",
    "aten::log",
    "aten::tanh",
    "aten::relu",
    "aten::relu_",
    "aten::gelu",
    "aten::abs",
    "aten::reciprocal",
    "aten::sin",
    "aten::cos",
    "aten::erf",
    "aten::fill_",
    "aten::zero_",
    "aten::_to_copy",
    "aten::to",
    "aten::clone",
    "aten::contiguous",
];

const BINARY: &[&str] = &[
    "aten::add",
    "aten::add_",
    "aten::sub",
    "aten::sub_",
    "aten::rsub",
    "aten::mul",
    "aten::mul_",
    "aten::div",
    "aten::div_",
    "aten::sigmoid_backward",
    "aten::threshold_backward",
    "aten::maximum",
    "aten::minimum",
    "aten::eq",
    "aten::ne",
    "aten::lt",
    "aten::le",
    "aten::gt",
    "aten::ge",
];

const REDUCE: &[&str] = &[
    "aten::sum",
    "aten::mean",
    "aten::max",
    "aten::min",
    "aten::amax",
    "aten::amin",
    "aten::norm",
    "aten::linalg_norm",
    "aten::linalg_vector_norm",
    "aten::std",
    "aten::var",
    "aten::logsumexp",
    "aten::cumsum",
    "aten::cumprod",
    "aten::argmax",
    "aten::argmin",
    "aten::prod",
    "aten::any",
    "aten::all",
];

/// The model of op `name`, if it has one.
pub fn category_of(name: &str) -> Option<Category> {
    Some(match name {
        "aten::mm" | "aten::addmm" | "aten::bmm" | "aten::baddbmm" | "aten::matmul"
        | "aten::linear" | "aten::_scaled_mm" => Category::Gemm,
        "aten::_scaled_dot_product_flash_attention"
        | "aten::_scaled_dot_product_efficient_attention"
        | "aten::_scaled_dot_product_cudnn_attention"
        | "aten::scaled_dot_product_attention" => Category::Sdpa,
        "aten::convolution" => Category::Conv,
        "aten::softmax" | "aten::_softmax" | "aten::log_softmax" | "aten::_log_softmax" => {
            Category::Softmax
        }
        "aten::layer_norm"
        | "aten::native_layer_norm"
        | "aten::rms_norm"
        | "aten::_fused_rms_norm" => Category::Normalization,
        "aten::topk" => Category::Topk,
        "aten::cat" => Category::Cat,
        "aten::gather" | "aten::scatter" | "aten::scatter_" | "aten::scatter_add"
        | "aten::scatter_add_" | "aten::index_select" | "aten::embedding" => Category::Index,
        _ if UNARY.contains(&name) || resize_op(name).is_some() => Category::UnaryElementwise,
        _ if BINARY.contains(&name) => Category::BinaryElementwise,
        _ if REDUCE.contains(&name) => Category::Reduce,
        _ => return None,
    })
}

/// Checked arithmetic on u128 (shapes come from input: a product may be
/// huge, never a panic).
pub(super) fn mul(xs: &[u128]) -> Result<u128, Unfit> {
    xs.iter()
        .try_fold(1u128, |a, &x| a.checked_mul(x))
        .ok_or(Unfit::Overflow)
}

pub(super) fn add(xs: &[u128]) -> Result<u128, Unfit> {
    xs.iter()
        .try_fold(0u128, |a, &x| a.checked_add(x))
        .ok_or(Unfit::Overflow)
}

pub(super) fn n(dims: &[u64]) -> Result<u128, Unfit> {
    numel(dims).ok_or(Unfit::Overflow)
}

pub(super) fn bpe(ty: &str) -> Result<u128, Unfit> {
    bytes_per_element(ty).ok_or(Unfit::Dtype)
}

fn u(x: u64) -> u128 {
    u128::from(x)
}

/// One call of `name` with `a`'s arguments.
pub fn model(name: &str, a: &OpArgs) -> Option<Fit> {
    let cat = category_of(name)?;
    let fit = match cat {
        Category::Gemm => gemm(name, a),
        Category::Sdpa => sdpa(name, a),
        Category::Conv => conv(a),
        Category::UnaryElementwise => match resize_op(name) {
            Some(Resize::Upsample) => upsample(a),
            Some(Resize::Pad) => replication_pad(a),
            None => unary(a),
        },
        Category::BinaryElementwise => binary(a),
        Category::Reduce => {
            // max/min of two tensors is elementwise (`max.other`).
            if matches!(name, "aten::max" | "aten::min") && a.shaped(1).is_some() {
                binary(a)
            } else {
                reduce(name, a)
            }
        }
        Category::Softmax => softmax(a),
        Category::Normalization => norm(name, a),
        Category::Topk => topk(a),
        Category::Cat => cat_model(a),
        Category::Index => index(name, a),
    };
    Some(fit)
}

pub(super) fn vector(category: Category, flops: u128, bytes: u128) -> Fit {
    Ok(Model {
        category,
        flops,
        bytes,
        precision: Some(Precision::Fp32),
    })
}

/// (M, K) of a matrix operand: its last two dims.
fn mk(d: &[u64]) -> Option<(u64, u64)> {
    match d {
        [.., m, k] => Some((*m, *k)),
        _ => None,
    }
}

fn gemm(name: &str, a: &OpArgs) -> Fit {
    let s = Unfit::Shape;
    // (batch, M, N, K, bias elements, flops of the bias per batch, operand type index)
    let (batch, m, nn, k, bias, bias_flops, ti): (u128, u64, u64, u64, u128, bool, usize) =
        match name {
            "aten::mm" | "aten::_scaled_mm" => {
                let (m, k) = mk(a.shaped(0).ok_or(s)?).ok_or(s)?;
                let (_, nn) = mk(a.shaped(1).ok_or(s)?).ok_or(s)?;
                // _scaled_mm(a, b, scale_a, scale_b, bias, …): bias is arg 4.
                let bias = match (name, a.shaped(4)) {
                    ("aten::_scaled_mm", Some(b)) => n(b)?,
                    _ => 0,
                };
                (1, m, nn, k, bias, bias > 0, 0)
            }
            "aten::addmm" => {
                let (m, k) = mk(a.shaped(1).ok_or(s)?).ok_or(s)?;
                let (_, nn) = mk(a.shaped(2).ok_or(s)?).ok_or(s)?;
                (1, m, nn, k, n(a.shaped(0).ok_or(s)?)?, true, 1)
            }
            "aten::bmm" | "aten::baddbmm" => {
                let off = usize::from(name == "aten::baddbmm");
                let (b, m, k) = match a.shaped(off).ok_or(s)? {
                    [b, m, k] => (*b, *m, *k),
                    _ => return Err(s),
                };
                let nn = match a.shaped(off + 1).ok_or(s)? {
                    [_, _, nn] => *nn,
                    _ => return Err(s),
                };
                let bias = if off == 1 {
                    n(a.shaped(0).ok_or(s)?)?
                } else {
                    0
                };
                (u(b), m, nn, k, bias, off == 1, off)
            }
            "aten::linear" => {
                // linear(input[…, K], weight[N, K], bias[N]?)
                let x = a.shaped(0).ok_or(s)?;
                let k = *x.last().ok_or(s)?;
                let m = numel(&x[..x.len() - 1]).ok_or(Unfit::Overflow)?;
                let m = u64::try_from(m).map_err(|_| Unfit::Overflow)?;
                let (nn, _) = mk(a.shaped(1).ok_or(s)?).ok_or(s)?;
                let bias = a.shaped(2).map_or(Ok(0), n)?;
                (1, m, nn, k, bias, bias > 0, 0)
            }
            _ => {
                // matmul(A, B): 1-D operands are a row / a column; the
                // leading dims broadcast to the batch.
                let x = a.shaped(0).ok_or(s)?;
                let y = a.shaped(1).ok_or(s)?;
                let (xm, k) = if x.len() == 1 {
                    (1, x[0])
                } else {
                    mk(x).ok_or(s)?
                };
                let nn = if y.len() == 1 { 1 } else { *y.last().ok_or(s)? };
                let lead = |d: &[u64]| d.len().saturating_sub(2).min(d.len());
                let (bx, by) = (&x[..lead(x)], &y[..lead(y)]);
                let rank = bx.len().max(by.len());
                let mut batch = 1u128;
                for i in 0..rank {
                    let dx = bx.len().checked_sub(rank - i).map_or(1, |j| bx[j]);
                    let dy = by.len().checked_sub(rank - i).map_or(1, |j| by[j]);
                    batch = batch.checked_mul(u(dx.max(dy))).ok_or(Unfit::Overflow)?;
                }
                (batch, xm, nn, k, 0, false, 0)
            }
        };
    let (m, nn, k) = (u(m), u(nn), u(k));
    let ty = a.ty(ti);
    let b_in = bpe(ty)?;
    // _scaled_mm: TraceLens's assumption, fp8 in → fp16/bf16 out.
    let b_out = if name == "aten::_scaled_mm" && b_in == 1 {
        2
    } else {
        b_in
    };
    let flops = mul(&[
        batch,
        add(&[mul(&[2, m, nn, k])?, if bias_flops { m * nn } else { 0 }])?,
    ])?;
    let per = add(&[
        mul(&[m, k, b_in])?,
        mul(&[k, nn, b_in])?,
        mul(&[m, nn, b_out])?,
    ])?;
    // The bias as recorded (TraceLens assumes N elements, B·N for
    // baddbmm: equal on every 1×N bias).
    let bytes = add(&[mul(&[batch, per])?, mul(&[bias, b_in])?])?;
    Ok(Model {
        category: Category::Gemm,
        flops,
        bytes,
        precision: Precision::of_matrix(ty),
    })
}

/// (B, H, N, d) of a [B, H, N, d] attention operand.
fn bhnd(d: &[u64]) -> Option<[u128; 4]> {
    match d {
        [b, h, nn, dd] => Some([u(*b), u(*h), u(*nn), u(*dd)]),
        _ => None,
    }
}

/// Pairs (i, j) a top-left causal mask keeps for `nq` queries and `nkv`
/// keys: Σᵢ min(i + 1, nkv) (PyTorch's `is_causal`: `tril` of an nq×nkv
/// matrix of ones).
fn causal_pairs(nq: u128, nkv: u128) -> u128 {
    let full = nq.min(nkv);
    // rows 0..full keep 1..=full; the rest keep nkv each.
    full * (full + 1) / 2 + (nq - full) * nkv
}

fn sdpa(name: &str, a: &OpArgs) -> Fit {
    let s = Unfit::Shape;
    let [b, hq, nq, d] = bhnd(a.shaped(0).ok_or(s)?).ok_or(s)?;
    let [_, hkv, nkv, dk] = bhnd(a.shaped(1).ok_or(s)?).ok_or(s)?;
    let [_, _, _, dv] = bhnd(a.shaped(2).ok_or(s)?).ok_or(s)?;
    if dk != d {
        return Err(s);
    }
    // is_causal's position: flash (q, k, v, dropout_p, is_causal, …);
    // efficient / cudnn (q, k, v, attn_bias, compute_lse, dropout_p,
    // is_causal, …); the public op (q, k, v, attn_mask, dropout_p,
    // is_causal, …).
    let at = match name {
        "aten::_scaled_dot_product_flash_attention" => 4,
        "aten::scaled_dot_product_attention" => 5,
        _ => 6,
    };
    let causal = a.flag(at).unwrap_or(false);
    let flops = if causal && nq == nkv {
        // TraceLens halves the full count (N²/2 pairs, not N(N+1)/2):
        // matched. The full count is even (its factor 2), so exact.
        mul(&[b, hq, 2, nq, nkv, add(&[d, dv])?])? / 2
    } else {
        let pairs = if causal {
            causal_pairs(nq, nkv)
        } else {
            mul(&[nq, nkv])?
        };
        mul(&[b, hq, 2, pairs, add(&[d, dv])?])?
    };
    let ty = a.ty(0);
    let elems = add(&[
        mul(&[b, nq, hq, d])?,
        mul(&[b, nkv, hkv, d])?,
        mul(&[b, nkv, hkv, dv])?,
        mul(&[b, nq, hq, dv])?,
    ])?;
    Ok(Model {
        category: Category::Sdpa,
        flops,
        bytes: mul(&[elems, bpe(ty)?])?,
        precision: Precision::of_matrix(ty),
    })
}

fn conv(a: &OpArgs) -> Fit {
    // convolution(input, weight, bias, stride, padding, dilation,
    // transposed, output_padding, groups)
    let s = Unfit::Shape;
    let x = a.shaped(0).ok_or(s)?;
    let w = a.shaped(1).ok_or(s)?;
    let sp = x
        .len()
        .checked_sub(2)
        .filter(|&k| k > 0 && w.len() == x.len())
        .ok_or(s)?;
    let pick = |i: usize, default: i64| -> Vec<i64> {
        match a.ints(i) {
            Some(v) if v.len() == sp => v,
            Some(v) if v.len() == 1 => vec![v[0]; sp],
            _ => vec![default; sp],
        }
    };
    let (stride, pad, dil) = (pick(3, 1), pick(4, 0), pick(5, 1));
    let transposed = a.flag(6).unwrap_or(false);
    let opad = pick(7, 0);
    let groups = a
        .ints(8)
        .and_then(|g| g.first().copied())
        .unwrap_or(1)
        .max(1);
    let mut out = vec![x[0]];
    out.push(if transposed {
        w[1].checked_mul(u64::try_from(groups).map_err(|_| s)?)
            .ok_or(Unfit::Overflow)?
    } else {
        w[0]
    });
    for i in 0..sp {
        let (xi, ki) = (x[2 + i] as i128, w[2 + i] as i128);
        let (st, p, dl, op) = (
            i128::from(stride[i]),
            i128::from(pad[i]),
            i128::from(dil[i]),
            i128::from(opad[i]),
        );
        let o = if transposed {
            (xi - 1) * st - 2 * p + dl * (ki - 1) + op + 1
        } else {
            if st <= 0 {
                return Err(s);
            }
            (xi + 2 * p - dl * (ki - 1) - 1).div_euclid(st) + 1
        };
        out.push(u64::try_from(o).map_err(|_| s)?);
    }
    let per = mul(&[2, n(&w[1..])?])?;
    let bias = a.shaped(2).map_or(Ok(0), n)?;
    let conv_flops = if transposed {
        mul(&[n(x)?, per])?
    } else {
        mul(&[n(&out)?, per])?
    };
    let flops = add(&[conv_flops, if bias > 0 { n(&out)? } else { 0 }])?;
    let ty = a.ty(0);
    let elems = add(&[n(x)?, n(w)?, bias, n(&out)?])?;
    Ok(Model {
        category: Category::Conv,
        flops,
        bytes: mul(&[elems, bpe(ty)?])?,
        precision: Precision::of_matrix(ty),
    })
}

fn unary(a: &OpArgs) -> Fit {
    let x = a.tensor(0).ok_or(Unfit::Shape)?;
    let ne = n(x)?;
    let b_in = bpe(a.ty(0))?;
    // A second tensor argument (copy_'s source, an out=) gives the output
    // dtype; otherwise the output is the input's.
    let b_out = match a.shaped(1) {
        Some(_) => bpe(a.ty(1))?,
        None => b_in,
    };
    vector(
        Category::UnaryElementwise,
        ne,
        add(&[mul(&[ne, b_in])?, mul(&[ne, b_out])?])?,
    )
}

/// Numpy broadcasting of two shapes; `None` when they do not broadcast.
pub fn broadcast(x: &[u64], y: &[u64]) -> Option<Vec<u64>> {
    let r = x.len().max(y.len());
    (0..r)
        .map(|i| {
            let dx = x.len().checked_sub(r - i).map_or(1, |j| x[j]);
            let dy = y.len().checked_sub(r - i).map_or(1, |j| y[j]);
            match (dx, dy) {
                _ if dx == dy => Some(dx),
                (1, d) | (d, 1) => Some(d),
                _ => None,
            }
        })
        .collect()
}

fn binary(a: &OpArgs) -> Fit {
    let s = Unfit::Shape;
    let x = a.tensor(0).ok_or(s)?;
    let y = a.tensor(1).ok_or(s)?;
    let out = broadcast(x, y).ok_or(s)?;
    let (b1, b2) = (bpe(a.ty(0))?, bpe(a.ty(1))?);
    let b_out = match a.shaped(2) {
        Some(_) => bpe(a.ty(2))?,
        // TraceLens: two tensors promote to the wider; a scalar keeps the
        // tensor's (its Scalar / double type is no tensor's).
        None if !x.is_empty() && !y.is_empty() => b1.max(b2),
        None => b1,
    };
    let no = n(&out)?;
    vector(
        Category::BinaryElementwise,
        no,
        add(&[mul(&[n(x)?, b1])?, mul(&[n(y)?, b2])?, mul(&[no, b_out])?])?,
    )
}

/// Elements left after reducing `x` over `dims` (negative from the end),
/// with `keepdim`; every dim when `dims` is empty.
fn reduced(x: &[u64], dims: &[i64]) -> Option<u128> {
    if dims.is_empty() {
        return Some(1);
    }
    let r = x.len() as i64;
    let mut keep = vec![true; x.len()];
    for &d in dims {
        let d = if d < 0 { d + r } else { d };
        let i = usize::try_from(d).ok().filter(|&i| i < x.len())?;
        keep[i] = false;
    }
    x.iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .try_fold(1u128, |acc, (&d, _)| acc.checked_mul(u128::from(d)))
}

fn reduce(name: &str, a: &OpArgs) -> Fit {
    let x = a.tensor(0).ok_or(Unfit::Shape)?;
    let ni = n(x)?;
    let b_in = bpe(a.ty(0))?;
    // Where `dim` is: norm(self, p, dim, keepdim), linalg_*norm(self, ord,
    // dim, keepdim, dtype); every other op of the list (self, dim, …).
    let dim_at = match name {
        "aten::norm" | "aten::linalg_norm" | "aten::linalg_vector_norm" => 2,
        _ => 1,
    };
    let no = if matches!(name, "aten::cumsum" | "aten::cumprod") {
        ni
    } else {
        let dims = a.ints(dim_at).unwrap_or_default();
        reduced(x, &dims).ok_or(Unfit::Shape)?
    };
    // argmax / argmin write int64 indices.
    let b_out = if matches!(name, "aten::argmax" | "aten::argmin") {
        8
    } else {
        b_in
    };
    vector(
        Category::Reduce,
        ni,
        add(&[mul(&[ni, b_in])?, mul(&[no, b_out])?])?,
    )
}

fn softmax(a: &OpArgs) -> Fit {
    // _softmax(self, dim, half_to_float): the output is float when set.
    let x = a.tensor(0).ok_or(Unfit::Shape)?;
    let ne = n(x)?;
    let b_in = bpe(a.ty(0))?;
    let b_out = if a.ty(2) == "Scalar" && a.flag(2) == Some(true) {
        4
    } else {
        b_in
    };
    vector(
        Category::Softmax,
        mul(&[3, ne])?,
        add(&[mul(&[ne, b_in])?, mul(&[ne, b_out])?])?,
    )
}

fn norm(name: &str, a: &OpArgs) -> Fit {
    let x = a.shaped(0).ok_or(Unfit::Shape)?;
    let ne = n(x)?;
    let b = bpe(a.ty(0))?;
    // normalized_shape (arg 1, a concrete list), else the weight's
    // elements, else the last dim.
    let c = match a.ints(1) {
        Some(v) if !v.is_empty() && v.iter().all(|&d| d > 0) => {
            mul(&v.iter().map(|&d| d as u128).collect::<Vec<_>>())?
        }
        _ => match a.shaped(2) {
            Some(w) => n(w)?,
            None => u(*x.last().ok_or(Unfit::Shape)?),
        },
    };
    if c == 0 || ne % c != 0 {
        return Err(Unfit::Shape);
    }
    let (flops, bytes) = if name.contains("rms_norm") {
        let affine = a.shaped(2).is_some();
        let f = add(&[
            mul(&[ne / c, add(&[mul(&[2, c])?, 2])?])?,
            mul(&[ne, if affine { 2 } else { 1 }])?,
        ])?;
        let by = add(&[mul(&[2, ne, b])?, if affine { mul(&[c, b])? } else { 0 }])?;
        (f, by)
    } else {
        // TraceLens's LayerNorm: training, affine with bias (6 C-vectors:
        // weight, bias, mean, rstd, and the stats written).
        let f = add(&[mul(&[5, ne])?, mul(&[6, c])?])?;
        let by = add(&[mul(&[2, ne, b])?, mul(&[6, c, b])?])?;
        (f, by)
    };
    vector(Category::Normalization, flops, bytes)
}

fn topk(a: &OpArgs) -> Fit {
    // topk(self, k, dim=-1, largest, sorted) → values, int64 indices.
    let s = Unfit::Shape;
    let x = a.shaped(0).ok_or(s)?;
    let k = a.ints(1).and_then(|v| v.first().copied()).ok_or(s)?;
    let dim = a.ints(2).and_then(|v| v.first().copied()).unwrap_or(-1);
    let r = x.len() as i64;
    let d = usize::try_from(if dim < 0 { dim + r } else { dim })
        .ok()
        .filter(|&i| i < x.len())
        .ok_or(s)?;
    let k = u128::try_from(k).map_err(|_| s)?;
    let ni = n(x)?;
    let rows = ni.checked_div(u(x[d])).ok_or(s)?;
    let b = bpe(a.ty(0))?;
    vector(
        Category::Topk,
        ni,
        add(&[mul(&[ni, b])?, mul(&[rows, k, add(&[b, 8])?])?])?,
    )
}

fn cat_model(a: &OpArgs) -> Fit {
    // cat(tensors, dim): Kineto records the list's sizes but types it
    // `TensorList`, no dtype: the dtype is read off a tensor argument
    // (an out=), else unknown (a counted note).
    let parts = match a.dims.first() {
        Some(Dims::List(l)) => l,
        _ => return Err(Unfit::Shape),
    };
    let b = a
        .types
        .iter()
        .find_map(|t| bytes_per_element(t).filter(|_| t != "Scalar"))
        .ok_or(Unfit::Dtype)?;
    let total = add(&parts.iter().map(|p| n(p)).collect::<Result<Vec<_>, _>>()?)?;
    Ok(Model {
        category: Category::Cat,
        flops: 0,
        bytes: mul(&[2, total, b])?,
        precision: Some(Precision::Fp32),
    })
}

fn index(name: &str, a: &OpArgs) -> Fit {
    let s = Unfit::Shape;
    let bytes = match name {
        // gather(self, dim, index): read index and the gathered values,
        // write the output (index's shape).
        "aten::gather" => {
            let i = n(a.tensor(2).ok_or(s)?)?;
            mul(&[i, add(&[mul(&[2, bpe(a.ty(0))?])?, bpe(a.ty(2))?])?])?
        }
        // scatter(self, dim, index, src): read index and src, write self's
        // scattered elements (scatter_add reads them too).
        "aten::scatter" | "aten::scatter_" | "aten::scatter_add" | "aten::scatter_add_" => {
            let i = n(a.tensor(2).ok_or(s)?)?;
            let b_self = bpe(a.ty(0))?;
            let b_src = if a.shaped(3).is_some() {
                bpe(a.ty(3))?
            } else {
                b_self
            };
            let rw = if name.contains("add") { 2 } else { 1 };
            mul(&[i, add(&[bpe(a.ty(2))?, b_src, mul(&[rw, b_self])?])?])?
        }
        // index_select(self, dim, index): |self| / self[dim] · |index| out.
        "aten::index_select" => {
            let x = a.shaped(0).ok_or(s)?;
            let dim = a.ints(1).and_then(|v| v.first().copied()).ok_or(s)?;
            let r = x.len() as i64;
            let d = usize::try_from(if dim < 0 { dim + r } else { dim })
                .ok()
                .filter(|&i| i < x.len())
                .ok_or(s)?;
            let i = n(a.tensor(2).ok_or(s)?)?;
            let out = mul(&[n(x)?.checked_div(u(x[d])).ok_or(s)?, i])?;
            add(&[mul(&[2, out, bpe(a.ty(0))?])?, mul(&[i, bpe(a.ty(2))?])?])?
        }
        // embedding(weight[V, D], indices): |indices| rows of D read and
        // written, and the indices.
        _ => {
            let w = a.shaped(0).ok_or(s)?;
            let row = u(*w.last().ok_or(s)?);
            let i = n(a.tensor(1).ok_or(s)?)?;
            add(&[mul(&[2, i, row, bpe(a.ty(0))?])?, mul(&[i, bpe(a.ty(1))?])?])?
        }
    };
    vector(Category::Index, 0, bytes)
}
