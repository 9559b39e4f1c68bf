//! The prefilter: a cheap test on an event's raw bytes, before any parsing.
//! Format-neutral: it sees bytes, whatever format they come from.

use aho_corasick::packed;
use memchr::memmem;

/// A cheap test on an event's raw bytes: could it be one the analysis needs?
///
/// It must never reject a needed event. An event passes when it contains
/// one of the needles, or a backslash (an escape could spell a needle
/// differently), or when there are no needles at all.
#[derive(Debug, Clone, Default)]
pub struct Prefilter {
    pub(crate) finders: Vec<memmem::Finder<'static>>,
    /// All the needles in one SIMD searcher (Teddy), when there are
    /// several: one pass over the text finds the leftmost of any, where
    /// the finders take one pass each (seven for a full-parse analysis).
    pub(crate) set: Option<packed::Searcher>,
}

impl Prefilter {
    /// Admits every event.
    pub fn all() -> Self {
        Prefilter::default()
    }

    /// Admits events whose raw text contains any of `needles`.
    pub fn any_of<S: AsRef<str>>(needles: &[S]) -> Self {
        Prefilter::of_finders(
            needles
                .iter()
                .map(|n| memmem::Finder::new(n.as_ref().as_bytes()).into_owned())
                .collect(),
        )
    }

    fn of_finders(finders: Vec<memmem::Finder<'static>>) -> Self {
        let finders = without_redundant(finders);
        // An empty needle matches everywhere: the finders handle it.
        let set = (finders.len() > 1 && finders.iter().all(|f| !f.needle().is_empty()))
            .then(|| {
                let mut b = packed::Config::new()
                    .match_kind(packed::MatchKind::LeftmostFirst)
                    .builder();
                for f in &finders {
                    b.add(f.needle());
                }
                b.build()
            })
            .flatten();
        Prefilter { finders, set }
    }

    /// Admits what either filter admits (all, when either admits all).
    pub fn union(&self, other: &Prefilter) -> Prefilter {
        if self.finders.is_empty() || other.finders.is_empty() {
            return Prefilter::all();
        }
        let mut finders = self.finders.clone();
        for f in &other.finders {
            if !finders.iter().any(|g| g.needle() == f.needle()) {
                finders.push(f.clone());
            }
        }
        Prefilter::of_finders(finders)
    }

    pub fn admits(&self, raw: &[u8]) -> bool {
        self.finders.is_empty()
            || self.finders.iter().any(|f| f.find(raw).is_some())
            || memchr::memchr(b'\\', raw).is_some()
    }
}

/// `finders` less every needle that contains another one (the first of
/// equal ones is kept): text holding the longer holds the shorter, so the
/// filter admits the same events with fewer needles to look for
/// (`gpu_model_runner: sample_tokens` goes when `sample_tokens` is there).
fn without_redundant(finders: Vec<memmem::Finder<'static>>) -> Vec<memmem::Finder<'static>> {
    let needles: Vec<&[u8]> = finders.iter().map(|f| f.needle()).collect();
    let redundant: Vec<bool> = needles
        .iter()
        .enumerate()
        .map(|(i, n)| {
            needles.iter().enumerate().any(|(j, m)| {
                j != i && (m.len() < n.len() || (m == n && j < i)) && memmem::find(n, m).is_some()
            })
        })
        .collect();
    finders
        .into_iter()
        .zip(redundant)
        .filter(|(_, r)| !r)
        .map(|(f, _)| f)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefilter_never_rejects_escaped_text() {
        let f = Prefilter::any_of(&["user_annotation\""]);
        assert!(f.admits(br#"{"cat": "gpu_user_annotation", "name": "x"}"#));
        assert!(f.admits(br#"{"cat": "user_annotation"}"#));
        assert!(!f.admits(br#"{"cat": "python_function", "name": "x"}"#));
        assert!(f.admits(br#"{"cat": "user\u005fannotation"}"#));
        assert!(Prefilter::all().admits(b"{}"));
    }

    #[test]
    fn a_needle_holding_another_goes_and_the_filter_admits_the_same() {
        let f = Prefilter::any_of(&[
            "gpu_model_runner: sample_tokens",
            "sample_tokens",
            "\"kernel\"",
            "\"kernel\"",
            "proposer.propose",
        ]);
        let kept: Vec<&[u8]> = f.finders.iter().map(|f| f.needle()).collect();
        assert_eq!(
            kept,
            [&b"sample_tokens"[..], b"\"kernel\"", b"proposer.propose"]
        );
        assert!(f.admits(b"{\"name\": \"gpu_model_runner: sample_tokens\"}"));
        assert!(f.admits(b"{\"cat\": \"kernel\"}"));
        assert!(!f.admits(b"{\"name\": \"gpu_model_runner: sample\"}"));
        // An empty needle admits everything, alone.
        let all = Prefilter::any_of(&["", "x"]);
        assert_eq!(all.finders.len(), 1);
        assert!(all.admits(b"{}"));
    }
}
