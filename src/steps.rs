//! vLLM's step annotation grammar: which `user_annotation`s are engine
//! steps, and which of those are pure decode steps.
//!
//! - vLLM 0.14+: `execute_context_<a>(<b>)_generation_<m>(<n>)` — a context
//!   (prefill) requests with b tokens, m generation requests with n tokens
//!   (draft tokens included: 2-token MTP decoding one request is `generation_1(3)`).
//! - vLLM 0.12–0.13: `execute_new_<n>_cached_<m>`.
//! - vLLM 0.28+ detailed: `execute_<t>_context_<a>(…)_generation_<m>(…)`.

use regex::Regex;
use serde::Serialize;
use std::sync::OnceLock;

/// Which grammar a step name follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    ContextGeneration,
    NewCached,
    Detailed,
}

/// A parsed step name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    pub form: Form,
    /// Requests in prefill (context) phase.
    pub context_reqs: u64,
    /// Requests in decode (generation) phase.
    pub generation_reqs: u64,
    /// Generation tokens, draft tokens included (when the name says; not
    /// when past u64).
    pub generation_tokens: Option<u64>,
    /// A request count in the name is past u64 (issue 59): the name is
    /// still a step, its count kept as u64::MAX; its kind, which asks only
    /// whether a count is 0, is exact.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub wide: bool,
}

impl Step {
    /// A step with only decode requests: the steady state the paper measures.
    pub fn is_pure_decode(&self) -> bool {
        self.context_reqs == 0 && self.generation_reqs >= 1
    }

    /// Draft tokens per request (0 = plain autoregressive), when the name
    /// tells: `generation_1(3)` → 2.
    pub fn speculative_depth(&self) -> Option<u64> {
        let toks = self.generation_tokens?;
        if self.generation_reqs == 0 || toks % self.generation_reqs != 0 {
            return None;
        }
        (toks / self.generation_reqs).checked_sub(1)
    }

    pub fn kind(&self) -> &'static str {
        match (self.context_reqs, self.generation_reqs) {
            (0, 0) => "empty",
            (0, _) => "decode",
            (_, 0) => "prefill",
            _ => "mixed",
        }
    }
}

fn regexes() -> &'static [Regex; 3] {
    static R: OnceLock<[Regex; 3]> = OnceLock::new();
    R.get_or_init(|| {
        [
            Regex::new(r"^execute_context_(\d+)\(([^()]*)\)_generation_(\d+)\(([^()]*)\)$")
                .expect("valid regex"),
            Regex::new(r"^execute_new_(\d+)_cached_(\d+)$").expect("valid regex"),
            Regex::new(r"^execute_(\d+)_context_(\d+)\(([^()]*)\)_generation_(\d+)\(([^()]*)\)$")
                .expect("valid regex"),
        ]
    })
}

/// Parses a step name; `None` when the name is not a vLLM step.
pub fn parse(name: &str) -> Option<Step> {
    if !name.starts_with("execute_") {
        return None;
    }
    let [cg, nc, det] = regexes();
    let mut wide = false;
    // A count: its value; past u64 (ASCII digits only: `\d` also takes
    // other scripts' digits, which name no count), u64::MAX and `wide`.
    let mut count = |s: &str| match s.parse::<u64>() {
        Ok(n) => Some(n),
        Err(_) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            wide = true;
            Some(u64::MAX)
        }
        Err(_) => None,
    };
    let step = if let Some(c) = cg.captures(name) {
        let (context_reqs, generation_reqs) = (count(&c[1])?, count(&c[3])?);
        Step {
            form: Form::ContextGeneration,
            context_reqs,
            generation_reqs,
            // Tokens past u64 are unknown, not u64::MAX.
            generation_tokens: c[4].parse::<u64>().ok(),
            wide: false,
        }
    } else if let Some(c) = nc.captures(name) {
        Step {
            form: Form::NewCached,
            context_reqs: count(&c[1])?,
            generation_reqs: count(&c[2])?,
            generation_tokens: None,
            wide: false,
        }
    } else if let Some(c) = det.captures(name) {
        let (context_reqs, generation_reqs) = (count(&c[2])?, count(&c[4])?);
        Step {
            form: Form::Detailed,
            context_reqs,
            generation_reqs,
            // The detailed form lists per-request shapes, not a total.
            generation_tokens: None,
            wide: false,
        }
    } else {
        return None;
    };
    Some(Step { wide, ..step })
}

/// C8's fallback grammar (PyTorch's own step ranges, training and other
/// non-vLLM traces): the whole name is `ProfilerStep#<digits>`.
pub fn is_profiler_step(name: &str) -> bool {
    name.strip_prefix("ProfilerStep#")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_generation_form() {
        let s = parse("execute_context_0(0)_generation_1(3)").unwrap();
        assert!(s.is_pure_decode());
        assert_eq!(s.speculative_depth(), Some(2));
        let ar = parse("execute_context_0(0)_generation_4(4)").unwrap();
        assert_eq!(ar.speculative_depth(), Some(0));
        let pf = parse("execute_context_1(96)_generation_0(0)").unwrap();
        assert!(!pf.is_pure_decode());
        assert_eq!(pf.kind(), "prefill");
        assert_eq!(
            parse("execute_context_1(96)_generation_2(2)")
                .unwrap()
                .kind(),
            "mixed"
        );
    }

    #[test]
    fn older_and_detailed_forms() {
        let s = parse("execute_new_0_cached_8").unwrap();
        assert!(s.is_pure_decode());
        assert_eq!(s.form, Form::NewCached);
        assert!(!parse("execute_new_2_cached_0").unwrap().is_pure_decode());
        let d = parse("execute_9_context_0()_generation_9(sq1sk10)").unwrap();
        assert_eq!(d.form, Form::Detailed);
        assert!(d.is_pure_decode());
    }

    #[test]
    fn not_steps() {
        assert_eq!(parse("ProfilerStep#5"), None);
        assert_eq!(parse("execute_model"), None);
        assert_eq!(parse("execute_context_x(0)_generation_1(1)"), None);
        // Token parts may hold more than digits (seen in a real trace).
        // Issue 59 (a name the grammar accepts, counts past u64): still
        // a step, of the kind its counts say; tokens past u64 unknown.
        let huge = "18446744073709551621";
        let s = parse(&format!("execute_context_0(0)_generation_{huge}({huge})")).unwrap();
        assert_eq!(
            (
                s.kind(),
                s.is_pure_decode(),
                s.generation_reqs,
                s.generation_tokens,
                s.wide
            ),
            ("decode", true, u64::MAX, None, true)
        );
        let s = parse(&format!("execute_new_{huge}_cached_0")).unwrap();
        assert_eq!((s.kind(), s.wide), ("prefill", true));
        let s = parse(&format!("execute_9_context_0()_generation_{huge}(sq1)")).unwrap();
        assert_eq!((s.kind(), s.wide), ("decode", true));
        assert!(!parse("execute_context_0(0)_generation_1(1)").unwrap().wide);
        // Digits of another script are no count.
        assert_eq!(parse("execute_context_0(0)_generation_\u{663}(1)"), None);
        let odd = parse("execute_context_1(888_788544)_generation_0(0)").unwrap();
        assert_eq!(odd.kind(), "prefill");
    }
}
