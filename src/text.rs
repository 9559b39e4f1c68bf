//! Shortening text for narrow places: table cells, column labels, figure
//! captions and axis labels. Two ways, one function each: cut at the end
//! (`head…`) where the start says most (kernel names, captions), cut in the
//! middle (`head…tail`) where both ends matter (file stems with a rank
//! before a suffix). Both count characters, never split one, and keep at
//! most `max` of them, the `…` included.

/// `s` cut to at most `max` characters, the last of them `…`.
/// `("flash_fwd_kernel", 8)` → `flash_f…`; `("short", 8)` → `short`
/// (`tests::the_doc_examples`).
pub fn ellipsize_end(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some(_) => {
            let keep = max.saturating_sub(1);
            let end = s.char_indices().nth(keep).map_or(s.len(), |(i, _)| i);
            format!("{}…", &s[..end])
        }
    }
}

/// `s` shortened in the middle to `head…tail`, at most `max` characters
/// (head and tail of equal length).
/// `("dp0_pp0_tp0_rank0", 9)` → `dp0_…ank0`.
pub fn ellipsize_middle(s: &str, max: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= max {
        return s.to_string();
    }
    let keep = max.saturating_sub(1) / 2;
    let head: String = chars[..keep].iter().collect();
    let tail: String = chars[chars.len() - keep..].iter().collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_doc_examples() {
        use super::{ellipsize_end, ellipsize_middle};
        assert_eq!(ellipsize_end("flash_fwd_kernel", 8), "flash_f…");
        assert_eq!(ellipsize_end("short", 8), "short");
        assert_eq!(ellipsize_middle("dp0_pp0_tp0_rank0", 9), "dp0_…ank0");
    }

    use super::*;

    #[test]
    fn both_keep_at_most_max_characters_and_never_split_one() {
        for s in ["", "a", "ab", "αβγδεζηθ", "kernel<float, 128>::run"] {
            for max in 0..12 {
                for cut in [ellipsize_end(s, max), ellipsize_middle(s, max)] {
                    let n = cut.chars().count();
                    assert!(n <= max.max(1) || cut == s, "{s:?} {max} → {cut:?}");
                    if s.chars().count() <= max {
                        assert_eq!(cut, s);
                    }
                }
            }
        }
        assert_eq!(ellipsize_end("αβγδεζηθ", 4), "αβγ…");
        assert_eq!(ellipsize_middle("αβγδεζηθ", 5), "αβ…ηθ");
        assert_eq!(ellipsize_middle("abcdef", 4), "a…f");
    }
}
