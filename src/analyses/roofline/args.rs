//! A host op's recorded arguments as the models read them: `Input Dims`,
//! `Input type` and `Concrete Inputs`, the JSON texts Kineto writes when the
//! profiler records shapes (`record_shapes=True`), parsed once per distinct
//! (name, shapes) row, never per call.
//!
//! ```text
//! "Input Dims": [[768], [788, 768], [768, 768], [], []]      one entry per argument:
//!                 tensor   tensor      tensor   scalar scalar  a tensor's sizes, [] otherwise,
//!                                                              a list of sizes for a TensorList
//! "Input type": ["c10::BFloat16", …, "Scalar", "Scalar"]     the C++ dtype name, or the kind
//! "Concrete Inputs": ["", "", "", "1", "1"]                  a scalar's value as text
//! ```

use serde_json::Value;

/// One argument's `Input Dims` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dims {
    /// A tensor's sizes (`[]`: a 0-dim tensor or a non-tensor argument).
    Tensor(Vec<u64>),
    /// A TensorList: each tensor's sizes.
    List(Vec<Vec<u64>>),
    /// `null` or anything else (a negative or fractional size).
    Other,
}

impl Dims {
    /// The sizes of a tensor argument; `None` for a list or another value.
    pub fn tensor(&self) -> Option<&[u64]> {
        match self {
            Dims::Tensor(v) => Some(v),
            _ => None,
        }
    }
}

/// Elements of a tensor of these sizes (`[]`: 1, a scalar), exact; `None`
/// past u128.
pub fn numel(dims: &[u64]) -> Option<u128> {
    dims.iter()
        .try_fold(1u128, |acc, &d| acc.checked_mul(u128::from(d)))
}

/// An op's recorded arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpArgs {
    pub dims: Vec<Dims>,
    pub types: Vec<String>,
    /// `Concrete Inputs` (empty when not recorded: older traces).
    pub concrete: Vec<String>,
}

/// Why an op's arguments could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgsError {
    /// No `Input Dims` (shapes not recorded).
    NoShapes,
    /// `Input Dims` or `Input type` is not the arrays Kineto writes.
    Malformed,
}

fn sizes(v: &Value) -> Option<Vec<u64>> {
    v.as_array()?.iter().map(Value::as_u64).collect()
}

fn dims_of(v: &Value) -> Dims {
    let Some(a) = v.as_array() else {
        return Dims::Other;
    };
    if a.iter().all(Value::is_array) && !a.is_empty() {
        return match a.iter().map(sizes).collect::<Option<Vec<_>>>() {
            Some(l) => Dims::List(l),
            None => Dims::Other,
        };
    }
    sizes(v).map_or(Dims::Other, Dims::Tensor)
}

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array()?
        .iter()
        .map(|s| match s {
            Value::String(s) => Some(s.clone()),
            Value::Null => Some(String::new()),
            _ => None,
        })
        .collect()
}

impl OpArgs {
    /// The arguments from the three texts as written (`None`: absent).
    pub fn parse(
        dims: Option<&str>,
        types: Option<&str>,
        concrete: Option<&str>,
    ) -> Result<OpArgs, ArgsError> {
        let dims = dims.ok_or(ArgsError::NoShapes)?;
        let dv: Value = serde_json::from_str(dims).map_err(|_| ArgsError::Malformed)?;
        let dims: Vec<Dims> = dv
            .as_array()
            .ok_or(ArgsError::Malformed)?
            .iter()
            .map(dims_of)
            .collect();
        let types = match types {
            Some(t) => serde_json::from_str::<Value>(t)
                .ok()
                .as_ref()
                .and_then(strings)
                .ok_or(ArgsError::Malformed)?,
            None => Vec::new(),
        };
        // Concrete Inputs are optional: a malformed one reads as absent.
        let concrete = concrete
            .and_then(|c| serde_json::from_str::<Value>(c).ok())
            .as_ref()
            .and_then(strings)
            .unwrap_or_default();
        Ok(OpArgs {
            dims,
            types,
            concrete,
        })
    }

    /// Argument `i`'s sizes when it is a tensor (`[]` included).
    pub fn tensor(&self, i: usize) -> Option<&[u64]> {
        self.dims.get(i).and_then(Dims::tensor)
    }

    /// Argument `i`'s sizes when it is a tensor with at least one dim.
    pub fn shaped(&self, i: usize) -> Option<&[u64]> {
        self.tensor(i).filter(|d| !d.is_empty())
    }

    /// Argument `i`'s type name (`""` when absent).
    pub fn ty(&self, i: usize) -> &str {
        self.types.get(i).map_or("", String::as_str)
    }

    /// Argument `i`'s concrete value (`""` when absent).
    pub fn value(&self, i: usize) -> &str {
        self.concrete.get(i).map_or("", String::as_str)
    }

    /// Argument `i`'s concrete value as a boolean (`None`: absent).
    pub fn flag(&self, i: usize) -> Option<bool> {
        match self.value(i) {
            "True" | "true" => Some(true),
            "False" | "false" => Some(false),
            _ => None,
        }
    }

    /// Argument `i`'s concrete value as integers: `-1` → `[-1]`,
    /// `[16, 16]` → `[16, 16]`; `None` when absent or not integers.
    pub fn ints(&self, i: usize) -> Option<Vec<i64>> {
        let v = self.value(i).trim();
        if v.is_empty() {
            return None;
        }
        if let Ok(n) = v.parse::<i64>() {
            return Some(vec![n]);
        }
        let a: Value = serde_json::from_str(v).ok()?;
        a.as_array()?.iter().map(Value::as_i64).collect()
    }
}

/// Bytes per element of a dtype as Kineto names it (its C++ name), `None`
/// when unknown. TraceLens's `name2bpe` (case-insensitive) plus the dtypes
/// it lacks (`bool`, `short int`, `c10::complex<…>`, every float8 spelling).
/// `Scalar` is 4 as in TraceLens (a Python number passed by value).
pub fn bytes_per_element(ty: &str) -> Option<u128> {
    let t = ty.to_ascii_lowercase();
    let n = match t.as_str() {
        "double" | "long int" | "long" | "int64_t" | "c10::complex<float>" => 8,
        "float" | "scalar" | "int" | "unsigned int" => 4,
        "c10::half" | "c10::bfloat16" | "short int" | "short" => 2,
        "bool" | "unsigned char" | "signed char" | "char" | "fp8" | "fp4" => 1,
        "c10::complex<double>" => 16,
        _ if t.starts_with("c10::float8_") || t.starts_with("c10::float4_") => 1,
        _ => return None,
    };
    Some(n)
}

/// The peak column an op computes in, from its operand dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    Fp32,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
}

impl Precision {
    /// A matrix op's precision from its operand dtype (`float`: fp32, as
    /// PyTorch's default `allow_tf32 = False` for matmul runs it); `None`
    /// for integer and unknown dtypes.
    pub fn of_matrix(ty: &str) -> Option<Precision> {
        let t = ty.to_ascii_lowercase();
        Some(match t.as_str() {
            "float" => Precision::Fp32,
            "c10::bfloat16" => Precision::Bf16,
            "c10::half" => Precision::Fp16,
            _ if t.starts_with("c10::float8_") || t == "fp8" => Precision::Fp8,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Tf32 => "tf32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Fp8 => "fp8",
        }
    }
}
