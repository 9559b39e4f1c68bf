//! Device peaks: dense (no structured sparsity) TFLOP/s per dtype and HBM
//! TB/s of the accelerators vLLM and TraceLens traces come from, each from
//! its vendor's datasheet (named beside it), matched from the trace's
//! `deviceProperties` name (TRACE_FORMAT.md: `"NVIDIA H100 80GB HBM3"`,
//! `"AMD Instinct MI300X"`).
//!
//! `fp32` is the vector (CUDA core / SIMD) rate: what elementwise ops and
//! reductions run at, and fp32 matmuls under PyTorch's default
//! `allow_tf32 = False`; `tf32`, `bf16`, `fp16`, `fp8` are the matrix
//! (tensor core / matrix core) rates. `None`: the device has no such unit
//! (the op falls back to the fp32 figure, and the report says so).

use super::args::Precision;
use serde::{Deserialize, Serialize};

/// A device's compute peaks, TFLOP/s: `fp32` the vector rate, the others
/// the matrix units' (`None`: no such unit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Compute {
    pub fp32: f64,
    pub tf32: Option<f64>,
    pub bf16: Option<f64>,
    pub fp16: Option<f64>,
    pub fp8: Option<f64>,
}

/// One device's peaks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Peaks {
    /// Its name in this table.
    pub name: &'static str,
    /// Lower-case substrings that must all occur in the trace's name.
    pub needles: &'static [&'static str],
    /// … and none of these.
    pub not: &'static [&'static str],
    /// TFLOP/s per precision (one [`Compute`] for the devices that share
    /// their silicon and clocks).
    pub compute: Compute,
    /// HBM bandwidth, TB/s (10¹² B/s).
    pub tbps: f64,
    /// Where the figures come from.
    pub source: &'static str,
}

impl Peaks {
    /// The peak TFLOP/s of a precision (the fp32 rate where the device has
    /// no unit for it).
    pub fn tflops(&self, p: Precision) -> f64 {
        let c = &self.compute;
        let m = match p {
            Precision::Fp32 => None,
            Precision::Tf32 => c.tf32,
            Precision::Bf16 => c.bf16,
            Precision::Fp16 => c.fp16,
            Precision::Fp8 => c.fp8,
        };
        m.unwrap_or(c.fp32)
    }
}

/// H100 and H200 NVL: the same GH100 at the NVL clocks.
const HOPPER_NVL: Compute = Compute {
    fp32: 60.0,
    tf32: Some(417.5),
    bf16: Some(835.5),
    fp16: Some(835.5),
    fp8: Some(1670.5),
};

/// H100 and H200 SXM: the same GH100 at the same clocks (the H200 differs in its memory only).
const HOPPER_SXM: Compute = Compute {
    fp32: 67.0,
    tf32: Some(494.5),
    bf16: Some(989.5),
    fp16: Some(989.5),
    fp8: Some(1979.0),
};

/// Every A100 (40 or 80 GB, PCIe or SXM): the same compute; the bandwidth differs.
const A100: Compute = Compute {
    fp32: 19.5,
    tf32: Some(156.0),
    bf16: Some(312.0),
    fp16: Some(312.0),
    fp8: None,
};

/// MI300X and MI325X: the same CDNA 3 compute (the MI325X differs in its memory).
const CDNA3: Compute = Compute {
    fp32: 163.4,
    tf32: Some(653.7),
    bf16: Some(1307.4),
    fp16: Some(1307.4),
    fp8: Some(2614.9),
};

/// The table, most specific names first (the first match wins).
pub const DEVICES: &[Peaks] = &[
    // NVIDIA H100 Tensor Core GPU datasheet (2023): H100 SXM column;
    // tensor figures are "with sparsity", halved here.
    Peaks {
        name: "H100 PCIe",
        needles: &["h100", "pcie"],
        not: &[],
        compute: Compute {
            fp32: 51.0,
            tf32: Some(378.0),
            bf16: Some(756.5),
            fp16: Some(756.5),
            fp8: Some(1513.0),
        },
        tbps: 2.0,
        source: "NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe column (sparse figures halved)",
    },
    Peaks {
        name: "H100 NVL",
        needles: &["h100", "nvl"],
        not: &[],
        compute: HOPPER_NVL,
        tbps: 3.9,
        source: "NVIDIA H100 Tensor Core GPU datasheet, H100 NVL column (sparse figures halved)",
    },
    Peaks {
        name: "H100 SXM",
        needles: &["h100"],
        not: &[],
        compute: HOPPER_SXM,
        tbps: 3.35,
        source: "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (sparse figures halved)",
    },
    Peaks {
        name: "H200 NVL",
        needles: &["h200", "nvl"],
        not: &[],
        compute: HOPPER_NVL,
        tbps: 4.8,
        source: "NVIDIA H200 Tensor Core GPU datasheet, H200 NVL column (sparse figures halved)",
    },
    Peaks {
        name: "H200 SXM",
        needles: &["h200"],
        not: &[],
        compute: HOPPER_SXM,
        tbps: 4.8,
        source: "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column (sparse figures halved)",
    },
    // NVIDIA A100 Tensor Core GPU datasheet (2021): the same compute for
    // every form factor; bandwidth by memory and form factor.
    Peaks {
        name: "A100 80GB PCIe",
        needles: &["a100", "80", "pci"],
        not: &[],
        compute: A100,
        tbps: 1.935,
        source: "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB PCIe column",
    },
    Peaks {
        name: "A100 40GB PCIe",
        needles: &["a100", "pci"],
        not: &[],
        compute: A100,
        tbps: 1.555,
        source: "NVIDIA A100 Tensor Core GPU datasheet, A100 40GB PCIe column",
    },
    Peaks {
        name: "A100 80GB SXM",
        needles: &["a100", "80"],
        not: &[],
        compute: A100,
        tbps: 2.039,
        source: "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column",
    },
    Peaks {
        name: "A100 40GB SXM",
        needles: &["a100"],
        not: &[],
        compute: A100,
        tbps: 1.555,
        source: "NVIDIA A100 Tensor Core GPU datasheet, A100 40GB SXM column (also A100-PG509-200)",
    },
    // AWS publishes no A10G datasheet; NVIDIA A10 datasheet figures (GA102,
    // 24 GB GDDR6, 600 GB/s), the closest published part.
    Peaks {
        name: "A10G",
        needles: &["a10g"],
        not: &[],
        compute: Compute {
            fp32: 31.2,
            tf32: Some(62.5),
            bf16: Some(125.0),
            fp16: Some(125.0),
            fp8: None,
        },
        tbps: 0.6,
        source: "NVIDIA A10 Tensor Core GPU datasheet (AWS publishes none for the A10G)",
    },
    Peaks {
        name: "L40S",
        needles: &["l40s"],
        not: &[],
        compute: Compute {
            fp32: 91.6,
            tf32: Some(183.0),
            bf16: Some(362.05),
            fp16: Some(362.05),
            fp8: Some(733.0),
        },
        tbps: 0.864,
        source: "NVIDIA L40S datasheet (sparse figures halved)",
    },
    Peaks {
        name: "L4",
        needles: &["l4"],
        not: &["l40"],
        compute: Compute {
            fp32: 30.3,
            tf32: Some(60.0),
            bf16: Some(121.0),
            fp16: Some(121.0),
            fp8: Some(242.5),
        },
        tbps: 0.3,
        source: "NVIDIA L4 Tensor Core GPU datasheet (sparse figures halved)",
    },
    // NVIDIA HGX B200 datasheet: 8-GPU totals (FP32 600 TF, TF32 18 PF,
    // BF16/FP16 36 PF, FP8 72 PF with sparsity; 64 TB/s HBM3e) per GPU,
    // sparse figures halved.
    Peaks {
        name: "B200",
        needles: &["b200"],
        not: &[],
        compute: Compute {
            fp32: 75.0,
            tf32: Some(1125.0),
            bf16: Some(2250.0),
            fp16: Some(2250.0),
            fp8: Some(4500.0),
        },
        tbps: 8.0,
        source: "NVIDIA HGX B200 datasheet, per GPU (8-GPU totals / 8, sparse figures halved)",
    },
    // AMD Instinct MI250X datasheet: FP32 vector 47.9, FP32 matrix 95.7,
    // FP16/BF16 383 TFLOPS; 3.2 TB/s HBM2e. No TF32 or FP8 unit.
    Peaks {
        name: "MI250X",
        needles: &["mi250x"],
        not: &[],
        compute: Compute {
            fp32: 47.9,
            tf32: None,
            bf16: Some(383.0),
            fp16: Some(383.0),
            fp8: None,
        },
        tbps: 3.2768,
        source: "AMD Instinct MI250X accelerator datasheet",
    },
    Peaks {
        name: "MI210",
        needles: &["mi210"],
        not: &[],
        compute: Compute {
            fp32: 22.6,
            tf32: None,
            bf16: Some(181.0),
            fp16: Some(181.0),
            fp8: None,
        },
        tbps: 1.6384,
        source: "AMD Instinct MI210 accelerator datasheet",
    },
    // AMD Instinct MI300X datasheet: FP32 vector 163.4, TF32 653.7, FP16 /
    // BF16 1307.4, FP8 2614.9 TFLOPS dense; 5.3 TB/s HBM3.
    Peaks {
        name: "MI300X",
        needles: &["mi300x"],
        not: &[],
        compute: CDNA3,
        tbps: 5.3,
        source: "AMD Instinct MI300X accelerator datasheet",
    },
    Peaks {
        name: "MI325X",
        needles: &["mi325x"],
        not: &[],
        compute: CDNA3,
        tbps: 6.0,
        source: "AMD Instinct MI325X accelerator datasheet",
    },
    // AMD Instinct MI355X datasheet: FP32 157.3, FP16/BF16 2516.6, FP8
    // 5033.2 TFLOPS dense; 8 TB/s HBM3E. CDNA 4 has no TF32 unit.
    Peaks {
        name: "MI355X",
        needles: &["mi355x"],
        not: &[],
        compute: Compute {
            fp32: 157.3,
            tf32: None,
            bf16: Some(2516.6),
            fp16: Some(2516.6),
            fp8: Some(5033.2),
        },
        tbps: 8.0,
        source: "AMD Instinct MI355X accelerator datasheet",
    },
];

/// The table's entry for a trace's device name (case-insensitive).
pub fn lookup(name: &str) -> Option<&'static Peaks> {
    let n = name.to_ascii_lowercase();
    DEVICES
        .iter()
        .find(|d| d.needles.iter().all(|x| n.contains(x)) && !d.not.iter().any(|x| n.contains(x)))
}

/// The device as the report gives it: the trace's name, the entry it
/// matched (or the overrides), and the peaks used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// `deviceProperties[0].name` (`null`: none written).
    pub name: Option<String>,
    /// The table's entry it matched (`null`: none).
    pub matched: Option<String>,
    pub source: Option<String>,
    /// Peak TFLOP/s per precision (`fp32`, `tf32`, `bf16`, `fp16`,
    /// `fp8`), `--peak-tflops` replacing each.
    pub peak_tflops: std::collections::BTreeMap<String, f64>,
    /// Peak TB/s (`--peak-tbps` replaces it).
    pub peak_tbps: Option<f64>,
}

impl Device {
    /// The device of a trace's names with the overrides.
    pub fn resolve(names: &[String], tflops: Option<f64>, tbps: Option<f64>) -> Device {
        let name = names.first().cloned();
        let entry = name.as_deref().and_then(lookup);
        let mut peak_tflops = std::collections::BTreeMap::new();
        for p in [
            Precision::Fp32,
            Precision::Tf32,
            Precision::Bf16,
            Precision::Fp16,
            Precision::Fp8,
        ] {
            if let Some(v) = tflops.or_else(|| entry.map(|e| e.tflops(p))) {
                peak_tflops.insert(p.as_str().to_string(), v);
            }
        }
        Device {
            name,
            matched: entry.map(|e| e.name.to_string()),
            source: entry.map(|e| e.source.to_string()),
            peak_tflops,
            peak_tbps: tbps.or(entry.map(|e| e.tbps)),
        }
    }

    /// The peak TFLOP/s of a precision, if known.
    pub fn tflops(&self, p: Option<Precision>) -> Option<f64> {
        self.peak_tflops.get(p?.as_str()).copied()
    }
}
