//! The pipelined read (scanner on its own thread, parsing on the caller's
//! or on 1, 2 or 4 workers) delivers exactly what the serial read
//! delivers — the same events at the same positions, the same outcome
//! (errors by message), the same metadata — on every real and damaged
//! trace, with the ledger's prefilter and with every event admitted; and
//! the analyses' figures are the same with it on or off, for any number
//! of threads and parse workers.

use crate::common;

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use torchtrace::trace::{self, kineto::pipelined, open, Event, EventPos, Meta, Prefilter};

fn traces() -> Vec<PathBuf> {
    common::fixture_files(|n| n.ends_with(".gz") || n.ends_with(".json"))
}

/// Everything a read shows: each event with its position, the outcome,
/// the metadata.
fn record(
    read: impl FnOnce(
        &mut Meta,
        &mut dyn FnMut(&Event<'_>, EventPos),
    ) -> Result<trace::ReadStats, trace::ReadError>,
) -> String {
    let mut meta = Meta::default();
    let mut out = String::new();
    let res = read(&mut meta, &mut |ev, at| {
        out.push_str(&format!("{at:?} {ev:?}\n"));
    });
    let res = res.map_err(|e| e.to_string());
    format!("{out}{res:?}\n{meta:?}")
}

/// Parse workers the pipelined read is tried with (0: the caller parses).
const WORKERS: [usize; 4] = [0, 1, 2, 4];

fn filters() -> Vec<Prefilter> {
    vec![
        Prefilter::all(),
        torchtrace::ledger::prefilter().union(&Prefilter::any_of(&["user_annotation\""])),
    ]
}

#[test]
fn same_events_outcome_and_metadata_on_every_trace() {
    let files = traces();
    assert!(files.len() >= 20, "{files:?}");
    for path in &files {
        for filter in filters() {
            let opts = trace::ReadOptions::default();
            let Ok(src) = open::open_decoded(path, Arc::default()) else {
                continue;
            };
            let serial = record(|m, f| trace::read_decoded_with(src, &opts, &filter, m, f));
            for w in WORKERS {
                let src = open::open_decoded(path, Arc::default()).unwrap();
                let piped =
                    record(|m, f| pipelined::read_with_workers(src, &opts, &filter, m, f, w));
                assert!(
                    serial == piped,
                    "{}, {w} workers: the two reads differ",
                    path.display()
                );
            }
        }
    }
}

/// A source that gives `data` then fails (a corrupt gzip stream).
struct FailsAfter {
    data: io::Cursor<Vec<u8>>,
}

impl Read for FailsAfter {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = out.len().min(4096);
        match self.data.read(&mut out[..n])? {
            0 => Err(io::Error::other("corrupt deflate stream")),
            n => Ok(n),
        }
    }
}

/// Many events, one bad near the end of the data, the source failing
/// after it: which error wins depends on where the scanner was when the
/// source failed, and both reads must agree on it.
#[test]
fn bad_events_and_failing_sources_agree() {
    // (events, the bad one, every how many events one of 1.5 MB: a batch
    // the scanner waits for).
    for (events, bad_at, big_every) in [
        (10usize, 8usize, 0usize),
        (3000, 2990, 0),
        (3000, 100, 0),
        (40_000, 39_999, 0),
        (40_000, 20_000, 0),
        (60, 40, 7),
        (60, 59, 3),
        (60, 1000, 2),
    ] {
        let mut doc = String::from("{\"traceEvents\": [\n");
        let pad = "x".repeat(1_500_000);
        for i in 0..events {
            let ts = if i == bad_at {
                "\"soon\"".to_string()
            } else {
                format!("{i}.5")
            };
            let extra = if big_every > 0 && i % big_every == 0 {
                pad.as_str()
            } else {
                ""
            };
            doc.push_str(&format!(
                "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k{i}\", \"pid\": 0, \"tid\": 7, \"ts\": {ts}, \"dur\": 1, \"args\": {{\"correlation\": {i}, \"pad\": \"{extra}\"}}}},\n"
            ));
        }
        // Cut: the source fails before the document ends.
        let cut = doc.into_bytes();
        for tail in [0usize, 50, 5000] {
            let data = cut[..cut.len() - tail.min(cut.len())].to_vec();
            let opts = trace::ReadOptions::default();
            for filter in filters() {
                let src = FailsAfter {
                    data: io::Cursor::new(data.clone()),
                };
                let serial = record(|m, f| trace::read_decoded_with(src, &opts, &filter, m, f));
                for w in WORKERS {
                    let src = FailsAfter {
                        data: io::Cursor::new(data.clone()),
                    };
                    let piped =
                        record(|m, f| pipelined::read_with_workers(src, &opts, &filter, m, f, w));
                    assert!(
                        serial == piped,
                        "{events} events, bad {bad_at}, big every {big_every}, cut {tail}, {w} workers:\n{}\n---\n{}",
                        serial.lines().last().unwrap_or(""),
                        piped.lines().last().unwrap_or("")
                    );
                }
            }
        }
    }
}

/// The CLI's figures with the pipelined read on and off, and for several
/// thread counts, on the sample traces.
#[test]
fn analyses_are_the_same_with_the_pipeline_on_or_off() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let samples: Vec<PathBuf> = ["text_ar", "text_mtp"]
        .iter()
        .filter_map(|d| {
            std::fs::read_dir(root.join("sample_traces").join(d))
                .ok()?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
        })
        .collect();
    assert_eq!(samples.len(), 2);
    let run = |args: &[&str], pipeline: &str| {
        let out = assert_cmd::Command::cargo_bin("torchtrace")
            .unwrap()
            .env("TORCHTRACE_PIPELINE", pipeline)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.code().unwrap_or(9) <= 1, "{args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let (a, b) = (samples[0].to_str().unwrap(), samples[1].to_str().unwrap());
    for cmd in [
        vec!["kernels", "-f", "json", a, b],
        vec!["hierarchy", "-f", "json", a, b],
        vec!["iterations", "-f", "json", a, b],
        vec!["diff", "-f", "json", a, b],
        vec!["pair", "-f", "json", a, b],
    ] {
        let off = run(&cmd, "0");
        assert!(off.len() > 100, "{cmd:?}");
        for j in ["1", "2", "4"] {
            let mut with_j = cmd.clone();
            with_j.extend(["-j", j]);
            assert_eq!(run(&with_j, "1"), off, "{cmd:?} -j {j}");
        }
        assert_eq!(run(&cmd, "1"), off, "{cmd:?}");
    }
}

/// One real trace, read alone (so it gets every worker its `-j` allows):
/// the figures of the full-parse analyses are the same for `-j 1` (the
/// caller parses) and `-j 4` (two parse workers), and with the workers
/// set outright.
#[test]
fn full_parse_figures_are_the_same_for_any_j() {
    let trace = common::sample("text_mtp");
    let run = |args: &[&str], workers: Option<&str>| {
        let mut cmd = common::bin();
        cmd.env_remove(pipelined::PARSE_WORKERS_ENV)
            .env_remove(trace::PIPELINE_ENV);
        if let Some(w) = workers {
            cmd.env(pipelined::PARSE_WORKERS_ENV, w);
        }
        let out = cmd.args(args).output().unwrap();
        assert!(out.status.code().unwrap_or(9) <= 1, "{args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for analysis in ["kernels", "iterations", "hierarchy"] {
        let one = run(&[analysis, "-f", "json", "-j", "1", &trace], None);
        assert!(one.len() > 100, "{analysis}");
        let four = run(&[analysis, "-f", "json", "-j", "4", &trace], None);
        assert!(one == four, "{analysis}: -j 1 and -j 4 differ");
        for w in ["1", "3", "8"] {
            let set = run(&[analysis, "-f", "json", "-j", "1", &trace], Some(w));
            assert!(one == set, "{analysis}: {w} parse workers differ");
        }
    }
}
