//! Exact time parsing: a JSON number's text → integer nanoseconds.
//!
//! Kineto writes `ts`/`dur` as microseconds with exactly three decimals
//! (`5106297913320.790`), older traces as integer microseconds. At these
//! magnitudes an `f64` is spaced ≈1 ns apart, so `ts + dur` computed in floating
//! point lands one ULP off for a large share of events and breaks exact nesting
//! (see `docs/TRACE_FORMAT.md`). We therefore never go through `f64`: the decimal
//! digits are read into an integer, shifted by the exponent, and rounded to the
//! nearest nanosecond (ties to even) only when the text carries sub-ns digits.

use super::message::clip_str;
use crate::model::Ns;
use std::fmt;

/// Why a number's text could not be read as a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeError {
    /// Not a JSON number (or a string holding one); the text as a message
    /// shows it (cut and escaped).
    NotANumber(String),
    /// A valid number, but its value in ns does not fit an `i64` (±292 years).
    OutOfRange(String),
}

impl fmt::Display for TimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeError::NotANumber(t) => write!(f, "`{t}` is not a number"),
            TimeError::OutOfRange(t) => {
                write!(f, "`{t}` µs is out of the range of i64 nanoseconds")
            }
        }
    }
}

impl std::error::Error for TimeError {}

/// Parses a JSON number given in microseconds (its exact text) into [`Ns`].
///
/// Accepts the full JSON number grammar (sign, fraction, exponent); a
/// surrounding pair of quotes is tolerated because some writers quote numbers.
pub fn parse_us(text: &str) -> Result<Ns, TimeError> {
    if let Some(ns) = plain_us(text.as_bytes()) {
        return Ok(Ns(ns));
    }
    let t = text.trim();
    let t = t
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(t);
    parse_decimal(t.as_bytes(), 3).map(Ns).map_err(|e| match e {
        // The text can be any JSON value, of any size: keep what a
        // message shows of it.
        DecErr::Syntax => TimeError::NotANumber(clip_str(text)),
        DecErr::Range => TimeError::OutOfRange(clip_str(text)),
    })
}

/// The shape Kineto writes nearly every time in, `<digits>[.<1–3 digits>]`
/// with at most 16 integer digits (and no leading zero), read in one `u64`
/// pass; `None` for anything else (and for values past `i64::MAX` ns), which [`parse_decimal`] then reads (it
/// gives the same value for these: no rounding, no sign, no exponent).
/// About an eighth of the ledger's extraction time went to the general
/// path's `u128` digits.
#[inline]
fn plain_us(b: &[u8]) -> Option<i64> {
    plain_us_prefix(b).and_then(|(ns, len)| (len == b.len()).then_some(ns))
}

/// [`plain_us`]'s shape at the start of `b`: its value in ns and its
/// length in bytes. `None` when `b` does not start with it, or when
/// more digits follow it (a 17th integer digit, a 4th decimal), or past
/// `i64::MAX` ns. What follows is the caller's to judge (the extractor
/// reads a time while passing over it, and leaves an exponent to the
/// general path).
#[inline(always)]
pub(crate) fn plain_us_prefix(b: &[u8]) -> Option<(i64, usize)> {
    const MAX_INT: usize = 16; // < 10^16 µs × 1000 + 999 fits a u64
    let mut at = 0;
    let mut int: u64 = 0;
    while let Some(&c @ b'0'..=b'9') = b.get(at) {
        (at < MAX_INT).then_some(())?;
        int = int * 10 + u64::from(c - b'0');
        at += 1;
    }
    if at == 0 || (at > 1 && b[0] == b'0') {
        return None;
    }
    let mut frac: u64 = 0;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let from = at;
        while let Some(&c @ b'0'..=b'9') = b.get(at) {
            (at - from < 3).then_some(())?;
            frac = frac * 10 + u64::from(c - b'0');
            at += 1;
        }
        (at > from).then_some(())?;
        frac *= [0, 100, 10, 1][at - from];
    }
    let ns = i64::try_from(int * 1000 + frac).ok()?;
    Some((ns, at))
}

enum DecErr {
    Syntax,
    Range,
}

/// Parses a decimal number and returns `value × 10^scale` rounded to an
/// integer (half to even). Fast path: plain `<int>.<3 digits>` never leaves
/// integer arithmetic and never divides.
fn parse_decimal(b: &[u8], scale: i32) -> Result<i64, DecErr> {
    let (neg, mut i) = match b.first() {
        Some(b'-') => (true, 1),
        Some(_) => (false, 0),
        None => return Err(DecErr::Syntax),
    };
    // Significant digits accumulate in a u128; digits beyond its precision can
    // only matter for rounding, which we track with `sticky`.
    let mut mant: u128 = 0;
    let mut mant_digits = 0u32;
    let mut dropped_exp: i32 = 0; // integer digits dropped for precision
    let mut sticky = false; // any non-zero digit dropped
    let mut frac_len: i32 = 0;
    let start_int = i;
    while i < b.len() && b[i].is_ascii_digit() {
        push_digit(
            &mut mant,
            &mut mant_digits,
            b[i],
            &mut dropped_exp,
            &mut sticky,
            false,
        );
        i += 1;
    }
    let int_len = i - start_int;
    if int_len == 0 || (int_len > 1 && b[start_int] == b'0') {
        return Err(DecErr::Syntax);
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let fs = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if push_digit(
                &mut mant,
                &mut mant_digits,
                b[i],
                &mut dropped_exp,
                &mut sticky,
                true,
            ) {
                frac_len += 1;
            }
            i += 1;
        }
        if i == fs {
            return Err(DecErr::Syntax);
        }
    }
    let mut exp: i64 = 0;
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        let eneg = match b.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let es = i;
        while i < b.len() && b[i].is_ascii_digit() {
            exp = (exp * 10 + i64::from(b[i] - b'0')).min(1_000_000);
            i += 1;
        }
        if i == es {
            return Err(DecErr::Syntax);
        }
        if eneg {
            exp = -exp;
        }
    }
    if i != b.len() {
        return Err(DecErr::Syntax);
    }
    // value = mant × 10^(shift)
    let shift = exp + i64::from(scale) - i64::from(frac_len) + i64::from(dropped_exp);
    let mag = scale_round(mant, shift, sticky)?;
    if neg {
        // i64::MIN's magnitude is one more than i64::MAX's.
        if mag > (i64::MAX as u128) + 1 {
            return Err(DecErr::Range);
        }
        Ok((mag as i128).wrapping_neg() as i64)
    } else {
        i64::try_from(mag).map_err(|_| DecErr::Range)
    }
}

/// Appends one digit to the mantissa. Returns whether the digit was kept
/// (a fraction digit that is dropped must not count towards `frac_len`).
fn push_digit(
    mant: &mut u128,
    digits: &mut u32,
    d: u8,
    dropped_exp: &mut i32,
    sticky: &mut bool,
    is_frac: bool,
) -> bool {
    let d = u128::from(d - b'0');
    if *mant == 0 && d == 0 && !is_frac {
        return true; // leading zero of the integer part
    }
    if *digits < 36 {
        *mant = *mant * 10 + d;
        if *mant != 0 {
            *digits += 1;
        }
        true
    } else {
        // Out of precision: an integer digit still scales the value; a
        // fraction digit only affects rounding.
        *sticky |= d != 0;
        if !is_frac {
            *dropped_exp += 1;
        }
        false
    }
}

/// Computes `mant × 10^shift` rounded half-to-even; `sticky` says whether
/// non-zero digits were already dropped below `mant`.
fn scale_round(mant: u128, shift: i64, sticky: bool) -> Result<u128, DecErr> {
    const LIMIT: u128 = (i64::MAX as u128) + 1;
    if mant == 0 {
        return Ok(0);
    }
    if shift >= 0 {
        let mut v = mant;
        for _ in 0..shift {
            v = v.checked_mul(10).ok_or(DecErr::Range)?;
            if v > LIMIT {
                return Err(DecErr::Range);
            }
        }
        return if v > LIMIT { Err(DecErr::Range) } else { Ok(v) };
    }
    let down = -shift;
    if down > 38 {
        return Ok(0); // far below 0.5 ns
    }
    let p = 10u128.pow(down as u32);
    let q = mant / p;
    let r = mant % p;
    let half = p / 2;
    let round_up = r > half || (r == half && (sticky || q % 2 == 1));
    let v = q + u128::from(round_up);
    if v > LIMIT {
        Err(DecErr::Range)
    } else {
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(t: &str) -> i64 {
        parse_us(t).unwrap().0
    }

    /// The one-pass reading agrees with the general one wherever it
    /// answers, and answers for Kineto's shapes.
    #[test]
    fn plain_shapes_read_as_the_general_path() {
        let general = |t: &str| parse_decimal(t.as_bytes(), 3).ok();
        for t in [
            "0",
            "7",
            "0.5",
            "0.05",
            "0.005",
            "12.345",
            "5106297913320.790",
            "999999999999999",
            "999999999999999.999",
            "100.1",
            "1623143089861123",
            "9223372036854775.807",
        ] {
            let plain = plain_us(t.as_bytes());
            assert!(plain.is_some(), "{t}");
            assert_eq!(plain.or(general(t)), general(t), "{t}");
        }
        for t in [
            "",
            "-1",
            "01",
            "00.5",
            "1.",
            ".5",
            "1.0004",
            "1e3",
            " 1",
            "1 ",
            "\"1\"",
            "1.5e3",
            "10000000000000000",
            "9223372036854775.808",
            "1x",
            "1.2.3",
            "1.-5",
        ] {
            assert_eq!(plain_us(t.as_bytes()), None, "{t}");
        }
        // Random digits and dots, against the general path.
        let mut next = crate::trace::xorshift(7);
        for _ in 0..20_000 {
            let s = next();
            let len = 1 + (s % 20) as usize;
            let t: String = (0..len)
                .map(|k| b"0123456789.-e"[((s >> (3 * k % 60)) % 13) as usize] as char)
                .collect();
            if let Some(v) = plain_us(t.as_bytes()) {
                assert_eq!(Some(v), general(&t), "{t}");
            }
        }
    }

    #[test]
    fn kineto_three_decimals() {
        assert_eq!(ns("5106297913320.790"), 5_106_297_913_320_790);
        assert_eq!(ns("0.000"), 0);
        assert_eq!(ns("0.001"), 1);
        assert_eq!(ns("12.345"), 12_345);
    }

    #[test]
    fn integer_microseconds() {
        assert_eq!(ns("0"), 0);
        assert_eq!(ns("1623143089861123"), 1_623_143_089_861_123_000);
        assert_eq!(ns("-7"), -7_000);
    }

    #[test]
    fn unpadded_and_short_fractions() {
        assert_eq!(ns("1.5"), 1_500);
        assert_eq!(ns("1.05"), 1_050);
    }

    #[test]
    fn more_decimals_round_half_even() {
        assert_eq!(ns("1.0004"), 1_000);
        assert_eq!(ns("1.0006"), 1_001);
        assert_eq!(ns("1.0005"), 1_000); // tie → even
        assert_eq!(ns("1.0015"), 1_002); // tie → even
        assert_eq!(ns("1.00050000001"), 1_001); // above the tie
        assert_eq!(ns("-1.0006"), -1_001);
    }

    #[test]
    fn exponent_forms() {
        assert_eq!(ns("1e3"), 1_000_000);
        assert_eq!(ns("1.5E+3"), 1_500_000);
        assert_eq!(ns("2.5e-3"), 2); // 2.5 ns → 2 (even)
        assert_eq!(ns("3.5e-3"), 4);
        assert_eq!(ns("1e-30"), 0);
        assert_eq!(ns("0e400"), 0);
    }

    #[test]
    fn nineteen_digits_and_boundaries() {
        // i64::MAX ns = 9223372036854775.807 µs (16 integer digits + 3).
        assert_eq!(ns("9223372036854775.807"), i64::MAX);
        assert_eq!(ns("-9223372036854775.808"), i64::MIN);
        assert!(matches!(
            parse_us("9223372036854775.808"),
            Err(TimeError::OutOfRange(_))
        ));
        // 19-digit integer µs: too large for ns in i64.
        assert!(matches!(
            parse_us("1711964646000000000"),
            Err(TimeError::OutOfRange(_))
        ));
        // 19 significant digits with a fraction fit.
        assert_eq!(ns("1711964646000000.123"), 1_711_964_646_000_000_123);
        // Many digits beyond the mantissa's precision only affect rounding.
        assert_eq!(ns("1.000499999999999999999999999999999999999999999"), 1_000);
        assert_eq!(ns("1.000500000000000000000000000000000000000000001"), 1_001);
    }

    #[test]
    fn quoted_numbers_and_garbage() {
        assert_eq!(ns("\"1.5\""), 1_500);
        assert!(parse_us("").is_err());
        assert!(parse_us("abc").is_err());
        assert!(parse_us("1.").is_err());
        assert!(parse_us(".5").is_err());
        assert!(parse_us("01").is_err());
        assert!(parse_us("1e").is_err());
        assert!(parse_us("null").is_err());
    }
}
