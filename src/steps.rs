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
    /// Generation tokens, draft tokens included (when the name says).
    pub generation_tokens: Option<u64>,
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
    let num = |s: &str| s.parse::<u64>().ok();
    if let Some(c) = cg.captures(name) {
        return Some(Step {
            form: Form::ContextGeneration,
            context_reqs: num(&c[1])?,
            generation_reqs: num(&c[3])?,
            generation_tokens: num(&c[4]),
        });
    }
    if let Some(c) = nc.captures(name) {
        return Some(Step {
            form: Form::NewCached,
            context_reqs: num(&c[1])?,
            generation_reqs: num(&c[2])?,
            generation_tokens: None,
        });
    }
    if let Some(c) = det.captures(name) {
        return Some(Step {
            form: Form::Detailed,
            context_reqs: num(&c[2])?,
            generation_reqs: num(&c[4])?,
            // The detailed form lists per-request shapes, not a total.
            generation_tokens: None,
        });
    }
    None
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
        let odd = parse("execute_context_1(888_788544)_generation_0(0)").unwrap();
        assert_eq!(odd.kind(), "prefill");
    }
}
