//! The fast path gives exactly what the plain path gives, on every real
//! trace we have (tests/data fixtures and sample_traces):
//!
//! - the block scanner slices the same events as the byte-wise scanner;
//! - the prefilter evaluated inside the scanner admits exactly the events
//!   `Prefilter::admits` admits one by one;
//! - `pair` and `hierarchy` (default chain) give the same figures with
//!   their prefilters as with `Prefilter::all()` (every event parsed).
//!
//! No timing here: see bench/run.sh.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use torchtrace::analyses::hierarchy::HierarchyOptions;
use torchtrace::analyses::pair::{self, PairSpec, Selector};
use torchtrace::analysis::{analyze_path, Analysis, Finished, Plan, TraceResult};
use torchtrace::trace::{self, open, stream, Event, EventPos, Meta, Prefilter};

fn traces() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in ["tests/data", "sample_traces"] {
        let Ok(rd) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                if let Ok(sub) = std::fs::read_dir(&p) {
                    out.extend(sub.flatten().map(|e| e.path()));
                }
            } else {
                out.push(p);
            }
        }
    }
    out.retain(|p| {
        let n = p.to_string_lossy();
        n.ends_with(".json.gz") || n.ends_with(".trace.json")
    });
    out.sort();
    assert!(
        out.len() >= 8,
        "expected the fixture traces in tests/data: {out:?}"
    );
    out
}

fn decoded(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    open::open_decoded(path, Arc::default())
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    out
}

type Slices = Vec<(EventPos, Vec<u8>)>;

/// Event slices and the outcome, as text (errors compared by message).
fn slices(
    text: &[u8],
    how: impl FnOnce(&[u8], &mut Meta, &mut stream::OnEvent<'_>) -> Result<u64, trace::ReadError>,
) -> (Slices, String) {
    let mut out = Vec::new();
    let mut meta = Meta::default();
    let res = how(text, &mut meta, &mut |raw, at| {
        out.push((at, raw.to_vec()));
        Ok(())
    });
    (out, format!("{res:?} {meta:?}"))
}

#[test]
fn block_scanner_slices_like_the_bytewise_scanner() {
    let needles = Prefilter::any_of(&["user_annotation\"", "sample_tokens", "aten::mm"]);
    for path in traces() {
        let text = decoded(&path);
        let plain = slices(&text, |t, m, f| stream::scan_bytewise(t, m, f));
        let fast = slices(&text, |t, m, f| stream::scan(t, m, f));
        assert!(plain.0.len() > 10, "{}", path.display());
        assert_eq!(fast.1, plain.1, "{}", path.display());
        assert!(fast.0 == plain.0, "{}: event slices differ", path.display());
        for filter in [pair::prefilter(), needles.clone()] {
            let (got, end) = slices(&text, |t, m, f| stream::scan_filtered(t, m, &filter, f));
            let want: Slices = plain
                .0
                .iter()
                .filter(|(_, raw)| filter.admits(raw))
                .cloned()
                .collect();
            assert_eq!(end, plain.1, "{}", path.display());
            assert!(
                got == want,
                "{}: {filter:?} admitted {} events, one by one {}",
                path.display(),
                got.len(),
                want.len()
            );
        }
    }
}

/// An analysis that asks for every event and keeps none: added to a plan,
/// it turns every other analysis's prefilter off.
struct AdmitAll;

impl Analysis for AdmitAll {
    const NAME: &'static str = "admit-all";
    const KEY: &'static str = "admit_all";
    type Config = ();
    type Output = ();
    fn start(_: &()) -> Self {
        AdmitAll
    }
    fn prefilter(&self) -> Prefilter {
        Prefilter::all()
    }
    fn push(&mut self, _: &Event<'_>, _: EventPos) {}
    fn finish(self, _: &Finished<'_>) {}
}

/// Pair and hierarchy figures, per-context rows included, as JSON.
fn figures(r: &TraceResult) -> serde_json::Value {
    let p = r.get::<pair::Pair>().unwrap();
    serde_json::json!({
        "pairs": p,
        "rows": p.rows,
        "hierarchy": r.get::<torchtrace::analyses::hierarchy::Hierarchy>(),
        "events": r.events,
        "error": r.error.as_ref().map(ToString::to_string),
    })
}

#[test]
fn prefilters_change_nothing() {
    let opts = HierarchyOptions::new(&[], &[], false, 5, Selector::Auto).unwrap();
    for path in traces() {
        let label = path.display().to_string();
        let plan = || {
            Plan::new(Selector::Auto)
                .with(PairSpec::default())
                .with(opts.clone())
        };
        let fast = analyze_path(&path, Arc::default(), &plan());
        let plain = analyze_path(&path, Arc::default(), &plan().with_analysis::<AdmitAll>(()));
        assert_eq!(figures(&fast), figures(&plain), "{label}");
    }
}

/// The plain reader for files: also what `-` (stdin) and archives use.
#[test]
fn read_stream_equals_read_path() {
    for path in traces() {
        let mut a = Vec::new();
        let mut meta = Meta::default();
        let st_a = trace::read_path(
            &path,
            &pair::prefilter(),
            Arc::default(),
            &mut meta,
            &mut |_, at| a.push(at),
        )
        .map(|s| (s.events, s.parsed))
        .map_err(|e| e.kind.to_string());
        let mut b = Vec::new();
        let mut meta_b = Meta::default();
        let st_b = trace::read_stream(
            File::open(&path).unwrap(),
            &pair::prefilter(),
            &mut meta_b,
            &mut |_, at| b.push(at),
        )
        .map(|s| (s.events, s.parsed))
        .map_err(|e| e.to_string());
        assert_eq!(st_a, st_b, "{}", path.display());
        assert_eq!(a, b, "{}", path.display());
        assert_eq!(meta, meta_b, "{}", path.display());
    }
}

/// The one-pass searcher of all needles hands an event to the per-needle
/// finders when the leftmost needle runs past the event's end: a shorter
/// needle may lie inside it (here `bcd` inside event 0, where `abcd"},{`
/// starts first), and needles of one event found from an earlier one.
#[test]
fn needle_set_defers_when_the_leftmost_needle_overruns_the_event() {
    // Long enough for the block scanner (64-byte blocks) to run.
    let body = vec![r#"{"x": "abcd"},{"y": "ef"},{"z": "zz"},{"w": "bcdx"},{"v": "cd"}"#; 200];
    let doc = format!("{{\"traceEvents\": [{}]}}", body.join(",\n"));
    let doc = doc.as_bytes();
    for needles in [
        vec!["abcd\"},{", "bcd"],
        vec!["abcd\"},{", "zz"],
        vec!["\"},{\"y", "ef"],
        vec!["cd\"}", "xyz", "d\"},{\"z"],
    ] {
        let filter = Prefilter::any_of(&needles);
        let mut all = Vec::new();
        let mut meta = Meta::default();
        stream::scan(doc, &mut meta, &mut |raw, _| {
            all.push(raw.to_vec());
            Ok(())
        })
        .unwrap();
        let want: Vec<Vec<u8>> = all.into_iter().filter(|r| filter.admits(r)).collect();
        let mut got = Vec::new();
        let mut meta = Meta::default();
        stream::scan_filtered(doc, &mut meta, &filter, &mut |raw, _| {
            got.push(raw.to_vec());
            Ok(())
        })
        .unwrap();
        assert!(!want.is_empty() && want.len() < 1000, "{needles:?}");
        assert_eq!(got, want, "{needles:?}");
    }
}
