//! The 64-byte block classifier behind the fast event scanner: which bytes
//! of a block are quotes, backslashes, openers (`{` `[`) and closers
//! (`}` `]`), as bit masks, plus the two bit tricks that turn those into
//! "inside a string" masks (simdjson's first stage).
//!
//! It knows nothing about traces; the JSON scanner
//! ([`super::kineto::scan`]) drives it. Kept apart so that the unsafe SIMD
//! code is small, separately tested against a portable version, and
//! reusable by another text format.

/// Bit masks of one 64-byte block: bit `k` is byte `k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Block {
    pub quote: u64,
    pub backslash: u64,
    /// `{` or `[`.
    pub open: u64,
    /// `}` or `]`.
    pub close: u64,
}

pub(crate) const BLOCK: usize = 64;

/// Classifies 64 bytes, portably.
#[allow(dead_code)]
#[inline(always)]
pub(crate) fn classify_scalar(b: &[u8; BLOCK]) -> Block {
    let mut m = Block {
        quote: 0,
        backslash: 0,
        open: 0,
        close: 0,
    };
    for (k, &c) in b.iter().enumerate() {
        let bit = 1u64 << k;
        match c {
            b'"' => m.quote |= bit,
            b'\\' => m.backslash |= bit,
            b'{' | b'[' => m.open |= bit,
            b'}' | b']' => m.close |= bit,
            _ => {}
        }
    }
    m
}

/// Classifies 64 bytes with SSE2 (part of every x86_64 CPU).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn classify(b: &[u8; BLOCK]) -> Block {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is in the x86_64 baseline; the loads are unaligned
    // reads of 16 bytes each within the 64-byte array.
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let bs = _mm_set1_epi8(b'\\' as i8);
        // `{` 0x7b and `[` 0x5b differ only in bit 0x20, as do `}` and `]`.
        let case = _mm_set1_epi8(0x20);
        let open = _mm_set1_epi8(b'{' as i8);
        let close = _mm_set1_epi8(b'}' as i8);
        let mut m = Block {
            quote: 0,
            backslash: 0,
            open: 0,
            close: 0,
        };
        for lane in 0..4 {
            let v = _mm_loadu_si128(b.as_ptr().add(lane * 16) as *const __m128i);
            let folded = _mm_or_si128(v, case);
            let sh = lane * 16;
            m.quote |= (_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)) as u16 as u64) << sh;
            m.backslash |= (_mm_movemask_epi8(_mm_cmpeq_epi8(v, bs)) as u16 as u64) << sh;
            m.open |= (_mm_movemask_epi8(_mm_cmpeq_epi8(folded, open)) as u16 as u64) << sh;
            m.close |= (_mm_movemask_epi8(_mm_cmpeq_epi8(folded, close)) as u16 as u64) << sh;
        }
        m
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn classify(b: &[u8; BLOCK]) -> Block {
    classify_scalar(b)
}

/// Whether this CPU has what [`classify_avx2`] and [`prefix_xor_clmul`]
/// need (std caches the answer).
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("pclmulqdq")
}

/// [`classify`] with AVX2: two 32-byte halves instead of four 16-byte
/// quarters (the block scanner's loop is compiled a second time with
/// AVX2 on, see `scan/fast.rs`, so this inlines there).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn classify_avx2(b: &[u8; BLOCK]) -> Block {
    use std::arch::x86_64::*;
    let quote = _mm256_set1_epi8(b'"' as i8);
    let bs = _mm256_set1_epi8(b'\\' as i8);
    let case = _mm256_set1_epi8(0x20);
    let open = _mm256_set1_epi8(b'{' as i8);
    let close = _mm256_set1_epi8(b'}' as i8);
    let mut m = Block {
        quote: 0,
        backslash: 0,
        open: 0,
        close: 0,
    };
    for half in 0..2 {
        // SAFETY: an unaligned read of 32 bytes within the 64-byte array.
        let v = unsafe { _mm256_loadu_si256(b.as_ptr().add(half * 32) as *const __m256i) };
        let folded = _mm256_or_si256(v, case);
        let sh = half * 32;
        let bits = |x: __m256i| (_mm256_movemask_epi8(x) as u32 as u64) << sh;
        m.quote |= bits(_mm256_cmpeq_epi8(v, quote));
        m.backslash |= bits(_mm256_cmpeq_epi8(v, bs));
        m.open |= bits(_mm256_cmpeq_epi8(folded, open));
        m.close |= bits(_mm256_cmpeq_epi8(folded, close));
    }
    m
}

/// [`prefix_xor`] in one carry-less multiply by all ones (simdjson's way).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq")]
#[inline]
pub(crate) fn prefix_xor_clmul(x: u64) -> u64 {
    use std::arch::x86_64::*;
    let v = _mm_set_epi64x(0, x as i64);
    let ones = _mm_set1_epi8(-1);
    _mm_cvtsi128_si64(_mm_clmulepi64_si128::<0>(v, ones)) as u64
}

/// Which bytes of a block are escaped by a backslash (simdjson's
/// branchless odd-run detection). `carry` is 1 when the block's first byte
/// is escaped by a backslash that ended the previous block.
#[inline(always)]
pub(crate) fn escaped(backslash: u64, carry: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let backslash = backslash & !*carry;
    let follows = (backslash << 1) | *carry;
    let odd_starts = backslash & !EVEN & !follows;
    let (seq_even, overflow) = odd_starts.overflowing_add(backslash);
    *carry = overflow as u64;
    let invert = seq_even << 1;
    (EVEN ^ invert) & follows
}

/// Bit `k` set when an odd number of bits at or below `k` are set.
#[inline(always)]
pub(crate) fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::trace::xorshift;

    /// A block of random bytes, one in four a structural character.
    fn random_block(next: &mut impl FnMut() -> u64) -> [u8; BLOCK] {
        let mut b = [0u8; BLOCK];
        for x in b.iter_mut() {
            *x = match next() % 4 {
                0 => b"\"\\{}[]"[(next() % 6) as usize],
                _ => next() as u8,
            };
        }
        b
    }

    #[test]
    fn classify_matches_scalar() {
        let mut next = xorshift(42);
        for _ in 0..2000 {
            let b = random_block(&mut next);
            assert_eq!(classify(&b), classify_scalar(&b));
        }
    }

    /// The AVX2 classifier and the carry-less prefix xor agree with the
    /// portable ones (where the CPU has them).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_and_clmul_match_scalar() {
        if !has_avx2() {
            return;
        }
        let mut next = xorshift(43);
        for _ in 0..2000 {
            let b = random_block(&mut next);
            let x = next();
            // SAFETY: the features were detected above.
            let (m, p) = unsafe { (classify_avx2(&b), prefix_xor_clmul(x)) };
            assert_eq!(m, classify_scalar(&b));
            assert_eq!(p, prefix_xor(x), "{x:#x}");
        }
        for x in [0u64, 1, 0b1001, u64::MAX, 1 << 63, 0xdead_beef_f00d_cafe] {
            // SAFETY: as above.
            assert_eq!(unsafe { prefix_xor_clmul(x) }, prefix_xor(x), "{x:#x}");
        }
    }

    #[test]
    fn escapes_and_strings() {
        // `a\"b"` : the first quote is escaped, the second is not.
        let mut carry = 0;
        let bs = 0b10;
        let esc = escaped(bs, &mut carry);
        assert_eq!(esc & 0b100, 0b100);
        assert_eq!(carry, 0);
        assert_eq!(prefix_xor(0b1001), 0b0111);
    }
}
