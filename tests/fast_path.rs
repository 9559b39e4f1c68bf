//! The fast path gives exactly what the plain path gives, on every real
//! trace we have (tests/data fixtures and sample_traces):
//!
//! - the block scanner slices the same events as the byte-wise scanner;
//! - the prefilter evaluated inside the scanner admits exactly the events
//!   `Prefilter::admits` admits one by one;
//! - `pair`'s collection with its prefilter equals the collection with
//!   `Prefilter::all()` (every event parsed), annotations and figures;
//! - the same for `hierarchy` with its default chain.
//!
//! No timing here: see bench/run.sh.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use torchtrace::hierarchy::{Collector, HierarchyOptions};
use torchtrace::pair::{self, Annotations, Selector};
use torchtrace::trace::{self, open, stream, EventPos, Meta, Prefilter};

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

/// An annotation with its names resolved: gpu, name, start, dur, External
/// id, pid, tid, event index.
type Row = (bool, String, i64, i64, Option<i64>, String, String, u64);

fn resolved(ann: &Annotations) -> Vec<Row> {
    let r = |gpu: bool, a: &pair::Annotation| {
        (
            gpu,
            ann.names.resolve(a.name).to_string(),
            a.start.0,
            a.dur.0,
            a.external_id,
            ann.names.resolve(a.lane.0).to_string(),
            ann.names.resolve(a.lane.1).to_string(),
            a.index,
        )
    };
    let mut v: Vec<_> = ann.cpu.iter().map(|a| r(false, a)).collect();
    v.extend(ann.gpu.iter().map(|a| r(true, a)));
    v
}

#[test]
fn pair_prefilter_changes_nothing() {
    for path in traces() {
        let label = path.display().to_string();
        let fast = pair::collect(&path, Arc::default());
        let mut plain = pair::Collected::default();
        let ann = &mut plain.annotations;
        let st = trace::read_path(
            &path,
            &Prefilter::all(),
            Arc::default(),
            &mut plain.meta,
            &mut |e, at| ann.push(e, at.index),
        );
        match st {
            Ok(st) => plain.events = st.events,
            Err(e) => {
                plain.events = e.kind.events_read();
                plain.error = Some(e);
            }
        }
        assert_eq!(fast.events, plain.events, "{label}");
        assert_eq!(
            fast.error.as_ref().map(ToString::to_string),
            plain.error.as_ref().map(ToString::to_string),
            "{label}"
        );
        assert_eq!(
            resolved(&fast.annotations),
            resolved(&plain.annotations),
            "{label}"
        );
        let a = fast.analyze(&label, &Selector::Auto);
        let b = plain.analyze(&label, &Selector::Auto);
        assert_eq!(a, b, "{label}");
    }
}

#[test]
fn hierarchy_prefilter_changes_nothing() {
    let opts = HierarchyOptions::new(&[], &[], false, 5, Selector::Auto).unwrap();
    for path in traces() {
        let label = path.display().to_string();
        let run = |filter: Option<Prefilter>| {
            let mut c = Collector::new(&opts);
            let filter = filter.unwrap_or_else(|| c.prefilter());
            let mut meta = Meta::default();
            let st = trace::read_path(&path, &filter, Arc::default(), &mut meta, &mut |e, at| {
                c.push(e, at)
            });
            let contexts = c.contexts(&opts.selector);
            let r = c.analyze(&label, &opts, contexts);
            (r, st.map(|s| s.events).map_err(|e| e.to_string()))
        };
        let fast = run(None);
        let plain = run(Some(Prefilter::all()));
        assert_eq!(fast, plain, "{label}");
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
