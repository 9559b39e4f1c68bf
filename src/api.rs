//! The per-trace subcommands as library calls: [`run`]`::<A>` reads one or
//! more traces in parallel and returns the report that analysis `A`'s
//! subcommand prints, with the problems that make it exit 1 and the notes
//! it prints on stderr; [`run_named`] does the same by the analysis's name
//! with its options as JSON. The command line and the Python package are
//! both thin callers of these, so the figures cannot drift apart. The
//! options are the analysis's own (`PairSpec`, `KernelsSpec`, …: defined
//! once, in its folder); [`Common`] holds what every subcommand takes.
//!
//! This module is the facade: the contract and the generic body live
//! below the analyses in [`crate::command`], the lookup by name in the
//! registry ([`crate::registry::run_named`]); both are re-exported here at
//! their public paths.
//!
//! ```
//! use std::path::PathBuf;
//! use torchtrace::api::{self, Common, Document};
//! use torchtrace::analyses::pair::{Pair, PairSpec};
//!
//! let ar = PathBuf::from(
//!     "sample_traces/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz",
//! );
//! let out = api::run::<Pair>(&[ar], &Common::default(), &PairSpec::default()).unwrap();
//! assert!(out.problems.is_empty() && out.incomplete.is_none());
//! assert_eq!(out.report.traces[0].contexts, 64);
//! // The document `torchtrace pair -f json` prints.
//! let doc = out.report.json_value(false).unwrap();
//! assert_eq!(doc["traces"][0]["completion_tokens"], 68);
//! ```

pub use crate::command::{
    add_json, context_problem, expand_directories, json_of, path_notes, read_all, read_all_keeping,
    refuse_directories, run, run_json, worker_traces, AnyOutcome, ApiError, Command, Common,
    Document, Message, Outcome, Said, TraceOutcome,
};
pub use crate::registry::run_named;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contexts::Selector;
    use crate::runinfo::Given;
    use std::path::PathBuf;

    /// `pair` with its default options, found by name in the registry as
    /// the Python package finds it.
    fn pair(paths: &[PathBuf], common: &Common) -> Result<AnyOutcome, ApiError> {
        run_named("pair", paths, common, &serde_json::json!({}))
    }

    const HTA: &str = "tests/data/hta_step_based_trace.json.gz";

    #[test]
    fn wrong_calls_are_argument_errors() {
        let p = PathBuf::from(HTA);
        let three = [p.clone(), p.clone(), p.clone()];
        let quiet = Common {
            quiet: true,
            ..Default::default()
        };
        // diff compares two traces; pair takes any number (no comparison
        // past two).
        assert!(matches!(
            run_named("diff", &three, &quiet, &serde_json::json!({})),
            Err(ApiError::Arguments(_))
        ));
        let many = pair(&three, &quiet)
            .unwrap()
            .report
            .json_value(false)
            .unwrap();
        assert_eq!(many["traces"].as_array().map(Vec::len), Some(3));
        assert!(many["comparison"].is_null());
        assert!(matches!(
            run_named("kernels", &[], &quiet, &serde_json::json!({})),
            Err(ApiError::Arguments(_))
        ));
        let opts = Common {
            given: vec![Given::default(); 2],
            ..Default::default()
        };
        assert!(matches!(pair(&[p], &opts), Err(ApiError::Arguments(_))));
    }

    /// Tokens for one of two traces: the second would take its summary's
    /// tokens silently (issue 38); a directory: `batch` is suggested.
    #[test]
    fn partial_tokens_and_directories_are_argument_errors() {
        let p = PathBuf::from(HTA);
        let one = Common {
            given: vec![Given {
                tokens: Some(5),
                ..Default::default()
            }],
            quiet: true,
            ..Default::default()
        };
        for name in ["pair", "kernels", "iterations", "diff"] {
            let two = [p.clone(), p.clone()];
            match run_named(name, &two, &one, &serde_json::json!({})) {
                Err(ApiError::Arguments(why)) => assert!(why.contains("1 of 2"), "{why}"),
                Err(e) => panic!("{name}: {e:?}"),
                Ok(_) => panic!("{name}: tokens for one of two traces were taken"),
            }
        }
        match pair(&[PathBuf::from("tests/data")], &Common::default()) {
            Err(ApiError::Arguments(why)) => {
                assert!(why.contains("is a directory"), "{why}");
                assert!(
                    why.contains("torchtrace batch tests/data -o OUTDIR"),
                    "{why}"
                );
            }
            Err(e) => panic!("{e:?}"),
            Ok(_) => panic!("a directory was read as a trace"),
        }
    }

    #[test]
    fn unreadable_trace_is_a_read_error_naming_it() {
        let missing = PathBuf::from("tests/data/no such trace.json.gz");
        match pair(&[missing], &Common::default()) {
            Err(ApiError::Read(e)) => {
                assert_eq!(e.path, "tests/data/no such trace.json.gz");
                assert_eq!((e.kind.offset(), e.kind.events_read()), (None, 0));
            }
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("a missing trace was read"),
        }
    }

    #[test]
    fn missing_context_is_a_problem_and_json_matches_the_text() {
        let opts = Common {
            selector: Selector::Exact("no such step".into()),
            quiet: true,
            ..Default::default()
        };
        let out = pair(&[PathBuf::from(HTA)], &opts).unwrap();
        assert_eq!(out.problems.len(), 1);
        assert!(out.problems[0].text.contains("no such step"));
        let text: serde_json::Value =
            serde_json::from_str(&out.report.json_text(false).unwrap()).unwrap();
        assert_eq!(text, out.report.json_value(false).unwrap());
    }
}
