//! The block scanner: the fast path of [`super`] (the byte-wise scanner) for long runs of
//! well-formed events. 64 bytes at a time, bit masks from
//! [`crate::trace::classify`] tell where strings and brackets are, and the
//! [`Prefilter`](crate::trace::Prefilter)'s needles are searched over the
//! whole buffer once rather than per event.
//!
//! It only ever delivers what the byte-wise scanner would (tests compare
//! the two on generated and real traces) and hands anything unusual back
//! to it, so errors are always reported by one piece of code.

use super::{OnEvent, Scanner};
use crate::trace::classify::{self, escaped, Block, BLOCK};
use crate::trace::error::ReadError;
use crate::trace::event::EventPos;
use std::io::Read;

/// The longest run between two events that the block scanner crosses.
pub(super) const MAX_GAP: usize = 4096;

/// What a search for one needle found, in absolute offsets of the decoded
/// stream: no occurrence starts in `from..at`, and one starts at `at`; or,
/// when `at == u64::MAX`, none lies wholly inside `from..to`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hit {
    from: u64,
    at: u64,
    to: u64,
}

impl Default for Hit {
    fn default() -> Self {
        // Covers nothing: the first query searches.
        Hit {
            from: u64::MAX,
            at: u64::MAX,
            to: 0,
        }
    }
}

/// A block's masks, with AVX2 when `AVX2` (set only where the CPU has it).
#[inline(always)]
fn block_masks<const AVX2: bool>(chunk: &[u8; BLOCK]) -> Block {
    #[cfg(target_arch = "x86_64")]
    if AVX2 {
        // SAFETY: `AVX2` is true only in the loop that
        // `fast_events_avx2` runs, after the CPU was checked.
        return unsafe { classify::classify_avx2(chunk) };
    }
    classify::classify(chunk)
}

/// Bit k set when an odd number of quotes lie at or below k.
#[inline(always)]
fn string_mask<const AVX2: bool>(quotes: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if AVX2 {
        // SAFETY: as in `block_masks`.
        return unsafe { classify::prefix_xor_clmul(quotes) };
    }
    classify::prefix_xor(quotes)
}

/// Whether the bytes between two events are a valid separator:
/// whitespace, one comma, whitespace.
#[inline(always)]
fn is_separator(gap: &[u8]) -> bool {
    let mut comma = false;
    for &c in gap {
        match c {
            b' ' | b'\n' | b'\r' | b'\t' => {}
            b',' if !comma => comma = true,
            _ => return false,
        }
    }
    comma
}

impl<R: Read> Scanner<'_, R> {
    /// Slices events 64 bytes at a time with bit masks (quotes, escapes,
    /// brackets), the way simdjson's first stage does. Starts just after an
    /// event, between two elements of the events array; returns with
    /// `self.pos` just after the last event it delivered, leaving whatever
    /// it does not handle (the end of the array, bad separators, the end of
    /// the input) to the byte-wise scanner, which then reports exactly what
    /// it would have reported alone. The slices it delivers are those the
    /// byte-wise scanner would: brackets and braces counted together, and
    /// strings with their escapes skipped.
    pub(super) fn fast_events(&mut self, on_event: &mut OnEvent<'_>) -> Result<(), ReadError> {
        #[cfg(target_arch = "x86_64")]
        if classify::has_avx2() {
            // SAFETY: the CPU has AVX2 and PCLMULQDQ (checked just now).
            return unsafe { self.fast_events_avx2(on_event) };
        }
        self.blocks::<false>(on_event)
    }

    /// The loop compiled with AVX2 on: [`classify::classify_avx2`] and
    /// [`classify::prefix_xor_clmul`] inline into it (about a fifth fewer
    /// instructions per block than SSE2).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,pclmulqdq")]
    unsafe fn fast_events_avx2(&mut self, on_event: &mut OnEvent<'_>) -> Result<(), ReadError> {
        self.blocks::<true>(on_event)
    }

    /// The block loop; `AVX2`: classify with AVX2 (only ever true when
    /// the CPU has it, from [`Scanner::fast_events_avx2`]).
    #[inline(always)]
    fn blocks<const AVX2: bool>(&mut self, on_event: &mut OnEvent<'_>) -> Result<(), ReadError> {
        let all = self.filter.finders.is_empty();
        // Nesting depth inside the current event (0: between events).
        let mut depth = 0usize;
        // All ones when the next block starts inside a string.
        let mut in_string = 0u64;
        let mut esc_carry = 0u64;
        let mut ev_start = 0usize;
        // Index of the last backslash in the blocks before `p`.
        let mut last_bs: Option<usize> = None;
        let mut p = self.pos;
        loop {
            if p + BLOCK > self.end {
                // `self.pos` (after the last event delivered) is at or before
                // everything still needed; only the event in progress, if
                // any, counts against the limit, up to `p` (the bytes after
                // it are not scanned yet, and may lie past the event's end).
                if depth > 0 && p - ev_start > self.limit {
                    return Err(self.too_large(ev_start));
                }
                let r = self.refill_holding(self.pos, None)?;
                if !r.more {
                    // The byte-wise scanner finishes from `self.pos`.
                    return Ok(());
                }
                p -= r.shift;
                ev_start = ev_start.wrapping_sub(r.shift);
                last_bs = last_bs.and_then(|b| b.checked_sub(r.shift));
                continue;
            }
            let chunk: &[u8; BLOCK] = self.buf[p..p + BLOCK].try_into().expect("64 bytes");
            let m = block_masks::<AVX2>(chunk);
            let esc = if m.backslash | esc_carry == 0 {
                0
            } else {
                escaped(m.backslash, &mut esc_carry)
            };
            let inside = string_mask::<AVX2>(m.quote & !esc) ^ in_string;
            in_string = ((inside as i64) >> 63) as u64;
            let mut structural = (m.open | m.close) & !inside;
            // A backslash outside a string (invalid JSON) escapes nothing
            // for the byte-wise scanner: hand over from there on.
            let stray = m.backslash & !inside;
            if stray != 0 {
                structural &= (1u64 << stray.trailing_zeros()) - 1;
            }
            while structural != 0 {
                let k = structural.trailing_zeros() as usize;
                structural &= structural - 1;
                let at = p + k;
                if (m.open >> k) & 1 == 1 {
                    if depth == 0 {
                        // An array where an event belongs, or a bad separator.
                        if self.buf[at] != b'{' || !is_separator(&self.buf[self.pos..at]) {
                            return Ok(());
                        }
                        ev_start = at;
                    }
                    depth += 1;
                } else {
                    if depth == 0 {
                        return Ok(());
                    }
                    depth -= 1;
                    if depth == 0 {
                        // The last backslash before the close: an event
                        // with one may spell a needle with an escape.
                        let bs = if all {
                            None
                        } else {
                            let below = m.backslash & ((1u64 << k) - 1);
                            if below != 0 {
                                Some(p + 63 - below.leading_zeros() as usize)
                            } else {
                                last_bs
                            }
                        };
                        self.close_event(ev_start, at + 1, all, bs, on_event)?;
                    }
                }
            }
            if stray != 0 {
                return Ok(());
            }
            if m.backslash != 0 {
                last_bs = Some(p + 63 - m.backslash.leading_zeros() as usize);
            }
            p += BLOCK;
            // Between events only a separator is expected; a long stretch
            // (a stray string, say) is the byte-wise scanner's to report,
            // before the buffer grows to hold it.
            if depth == 0 && p - self.pos > MAX_GAP {
                return Ok(());
            }
        }
    }

    /// An event `buf[s..e]` is complete: check its size, deliver it if the
    /// filter admits it (`bs`: the last backslash before `e`), count it.
    #[inline(always)]
    fn close_event(
        &mut self,
        s: usize,
        e: usize,
        all: bool,
        bs: Option<usize>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<(), ReadError> {
        if e - s > self.limit {
            return Err(self.too_large(s));
        }
        if all || bs.is_some_and(|b| b >= s) || self.has_needle(s, e) {
            let pos = EventPos {
                index: self.events,
                offset: self.offset(s),
            };
            on_event(&self.buf[s..e], pos)?;
        }
        self.events += 1;
        self.pos = e;
        Ok(())
    }

    /// What the one searcher of all needles says about `buf[s..e]`: the
    /// leftmost occurrence of any needle at or after `s` starts past the
    /// event (no), or lies inside it (yes); `None` when there is no such
    /// searcher, or when that occurrence starts inside the event but runs
    /// past its end (another, shorter needle may still lie inside: the
    /// finders decide).
    #[inline(always)]
    fn set_says(&mut self, s: usize, e: usize) -> Option<bool> {
        let set = self.filter.set.as_ref()?;
        let (abs_s, abs_e) = (self.offset(s), self.offset(e));
        let (mut h, mut len) = self.set_hit;
        let covered = h.from <= abs_s
            && if h.at == u64::MAX {
                abs_e <= h.to
            } else {
                abs_s <= h.at
            };
        if !covered {
            (h, len) = match set.find(&self.buf[s..self.end]) {
                Some(m) => (
                    Hit {
                        from: abs_s,
                        at: abs_s + m.start() as u64,
                        to: 0,
                    },
                    m.len() as u64,
                ),
                None => (
                    Hit {
                        from: abs_s,
                        at: u64::MAX,
                        to: self.offset(self.end),
                    },
                    0,
                ),
            };
            self.set_hit = (h, len);
        }
        if h.at == u64::MAX || h.at >= abs_e {
            return Some(false);
        }
        (h.at + len <= abs_e).then_some(true)
    }

    /// Whether `buf[s..e]` contains one of the filter's needles, from a
    /// search over the rest of the buffer that later events reuse.
    fn has_needle(&mut self, s: usize, e: usize) -> bool {
        if let Some(decided) = self.set_says(s, e) {
            return decided;
        }
        let (abs_s, abs_e) = (self.offset(s), self.offset(e));
        for (i, f) in self.filter.finders.iter().enumerate() {
            let len = f.needle().len() as u64;
            let mut h = self.hits[i];
            let covered = h.from <= abs_s
                && if h.at == u64::MAX {
                    abs_e <= h.to
                } else {
                    abs_s <= h.at
                };
            if !covered {
                h = match f.find(&self.buf[s..self.end]) {
                    Some(k) => Hit {
                        from: abs_s,
                        at: abs_s + k as u64,
                        to: 0,
                    },
                    None => Hit {
                        from: abs_s,
                        at: u64::MAX,
                        to: self.offset(self.end),
                    },
                };
                self.hits[i] = h;
            }
            if h.at != u64::MAX && h.at + len <= abs_e {
                return true;
            }
        }
        false
    }
}
