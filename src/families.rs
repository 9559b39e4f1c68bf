//! Kernel families: a GPU activity's name to what it does (communication,
//! attention, GEMM, …) by case-insensitive regular expressions, first match
//! wins. `diff` groups its kernels by them and `ranks` finds collectives with
//! the `communication` pattern; both import them from here, neither from the
//! other.

/// The collectives: NCCL (`ncclDevKernel_*`, `ncclKernel_*`), RCCL, vLLM's
/// custom all-reduce (`cross_device_reduce_*`) and the collectives' generic
/// names (the `communication` family).
pub const COMMUNICATION: &str = r"nccl|rccl|cross_device_reduce|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|custom_?ar\b";

/// The kernel families, in match order (first match wins; patterns are
/// case-insensitive regular expressions searched anywhere in the name).
/// `--family NAME=REGEX` puts user patterns before these.
pub const FAMILIES: [(&str, &str); 10] = [
    ("communication", COMMUNICATION),
    (
        "attention",
        r"flash|fmha|sdpa|attention|attn|reshape_and_cache|paged_?kv|\bmla",
    ),
    (
        "GEMM/GEMV",
        r"gemm|gemv|nvjet|cublas|cutlass|xmma|wgmma|matmul|\bbmm|splitkreduce",
    ),
    ("sort/top-k", r"sort|topk|top_k|radix"),
    (
        "normalisation",
        r"(layer|rms|group|batch|instance|l2)_?norm",
    ),
    ("gather/scatter/index", r"gather|scatter|index|embedding"),
    (
        "reduction",
        r"reduce|reduction|argmax|argmin|softmax|cumsum|scan|segmented|triton_red_",
    ),
    ("copy/fill", r"^memcpy|^memset|copy|fill|catarray|concat"),
    (
        "elementwise",
        r"elementwise|triton_poi_|functor|gelu|silu|relu|act_and_mul|rotary|multi_tensor_apply",
    ),
    ("other", r""),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn communication_comes_first_and_other_matches_everything_last() {
        assert_eq!(FAMILIES[0], ("communication", COMMUNICATION));
        assert_eq!(FAMILIES[FAMILIES.len() - 1], ("other", ""));
        let re = |p: &str| {
            regex::RegexBuilder::new(p)
                .case_insensitive(true)
                .build()
                .unwrap()
        };
        let comm = re(COMMUNICATION);
        assert!(comm.is_match("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"));
        assert!(comm.is_match("cross_device_reduce_1stage"));
        assert!(!comm.is_match("flash_fwd_kernel"));
        // The first match wins: an attention kernel is not "other".
        let first = |name: &str| {
            FAMILIES
                .iter()
                .find(|(_, p)| re(p).is_match(name))
                .map(|f| f.0)
        };
        assert_eq!(first("flash_fwd_splitkv_kernel"), Some("attention"));
        assert_eq!(first("nvjet_tst_128x64"), Some("GEMM/GEMV"));
        assert_eq!(first("some_new_kernel"), Some("other"));
    }
}
