//! The capture side and the match on the real ROCm pairs of
//! `tests/data/graphs/` (AMD-AGI/TraceLens, MIT), and on damaged copies
//! of them: every figure checked here was worked out from the files with
//! a separate script (Python's json, exact decimals).

use super::matching::{match_replay, Act, Index, Outcome};
use super::*;
use std::io::Write;

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/graphs")
        .join(p)
}

const VLLM_CAPTURE: &str =
    "vllm_piecewise/capture_traces/graph_capture_rank_0.1773709679453551615.pt.trace.json.gz";
const SGLANG_CAPTURE: &str = "sglang_decode/capture_traces/bs_32_rank0.json.gz";

fn op_name(caps: &Captures, op: Option<u32>) -> &str {
    op.map_or("", |o| caps.resolve(caps.ops[o as usize].name))
}

fn region_acts(caps: &Captures, r: usize) -> Vec<Act<'_>> {
    caps.regions[r]
        .launches
        .iter()
        .map(|c| Act {
            kind: c.kind,
            name: c.kernel.map_or("", |k| caps.resolve(k)),
        })
        .collect()
}

#[test]
fn the_record_per_captured_launch_is_44_bytes() {
    assert_eq!(std::mem::size_of::<Captured>(), 44);
}

/// SGLang's one FULL decode graph: 544 launches (399 hipLaunchKernel,
/// 145 hipExtModuleLaunchKernel), batch 32 from `execution_details.json`
/// and the file name, each launch with its launcher, top op and modules.
#[test]
fn sglang_capture_regions() {
    let caps = Captures::load(&[], &data("sglang_decode/sglang_Qwen3-8B_decode.json.gz"));
    assert_eq!(caps.files.len(), 1, "{:?}", caps.notes);
    assert!(caps.notes.is_empty(), "{:?}", caps.notes);
    assert_eq!(caps.regions.len(), 1);
    let r = &caps.regions[0];
    assert_eq!(r.launches.len(), 544);
    assert_eq!(r.batch, Some(32));
    assert_eq!(
        r.mode.as_deref(),
        Some("DECODE"),
        "the annotation capture_32_DECODE"
    );
    assert_eq!(r.subsystem, "decoder");
    assert_eq!(r.annotation.as_deref(), Some("capture_32_DECODE"));
    assert!(r.launches.iter().all(|c| c.kind == 0 && c.kernel.is_some()));
    let first = &r.launches[0];
    assert_eq!(op_name(&caps, first.launcher), "aten::gather");
    let op = caps.ops[first.launcher.unwrap_or(0) as usize];
    assert_eq!(
        op.dims.map(|d| caps.resolve(d)),
        Some("[[151936, 4096], [], [32, 4096], [], [32, 4096]]")
    );
    assert_eq!(op_name(&caps, first.top), "ProfilerStep#134");
    assert_eq!(
        first.module.map(|m| caps.resolve(m)),
        Some("Qwen3Model_0/VocabParallelEmbedding_0")
    );
    assert_eq!(
        r.launches[1].module.map(|m| caps.resolve(m)),
        Some("Qwen3Model_0/Qwen3DecoderLayer_0/RMSNorm_0")
    );
    let last = &r.launches[543];
    assert_eq!(op_name(&caps, last.launcher), "aten::copy_");
    assert_eq!(
        last.module.map(|m| caps.resolve(m)),
        Some("LogitsProcessor_0")
    );
}

/// vLLM's PIECEWISE capture at 8192 tokens: 25 pieces of 4, 15 (×23) and
/// 12 launches; the 23 middle pieces launch the same kernels.
#[test]
fn vllm_piecewise_capture_regions() {
    let caps = Captures::load(&[data(VLLM_CAPTURE)], Path::new("elsewhere.json"));
    assert!(caps.notes.is_empty(), "{:?}", caps.notes);
    let counts: Vec<usize> = caps.regions.iter().map(|r| r.launches.len()).collect();
    let mut want = vec![4];
    want.extend([15; 23]);
    want.push(12);
    assert_eq!(counts, want);
    assert!(caps.regions.iter().all(|r| r.batch == Some(8192)
        && r.mode.as_deref() == Some("PIECEWISE")
        && r.subsystem == "decoder"));
    let l = &caps.regions[1].launches;
    assert_eq!(op_name(&caps, l[0].launcher), "aten::addmm");
    assert_eq!(op_name(&caps, l[0].top), "capture_8192_PIECEWISE");
    assert_eq!(
        l[0].module.map(|m| caps.resolve(m)),
        Some("GptOssForCausalLM_0/GraphModule_0")
    );
    assert_eq!(op_name(&caps, l[14].launcher), "_C::rotary_embedding");
    // Exact match of each region's own sequence; the middle ones equal.
    let ix = Index::new(&caps);
    assert_eq!(
        match_replay(&caps, &ix, &region_acts(&caps, 0), None, None),
        Outcome::Matched(0)
    );
    assert_eq!(
        match_replay(&caps, &ix, &region_acts(&caps, 24), None, None),
        Outcome::Matched(24)
    );
    match match_replay(&caps, &ix, &region_acts(&caps, 5), None, None) {
        Outcome::Ambiguous {
            candidates,
            attributed,
        } => {
            assert_eq!(candidates, (1..=23).collect::<Vec<u32>>());
            assert!(attributed, "the pieces name the same launcher ops");
        }
        o => panic!("{o:?}"),
    }
}

/// The differences of an aligned outcome, as (captured, name).
fn differences(o: &Outcome) -> Vec<(bool, String)> {
    match o {
        Outcome::Aligned { differences, .. } => differences
            .iter()
            .map(|d| (d.captured, d.name.clone()))
            .collect(),
        o => panic!("not aligned: {o:?}"),
    }
}

/// A replay that differs from SGLang's graph (544 named kernels) by a few
/// activities is aligned (G2): the last launch never replayed, one in the
/// middle dropped, one renamed, two swapped; each difference listed, the
/// other activities paired with their own launch.
#[test]
fn a_replay_with_few_differences_is_aligned() {
    let caps = Captures::load(&[data(SGLANG_CAPTURE)], Path::new("x"));
    let ix = Index::new(&caps);
    let all = region_acts(&caps, 0);
    let name = |k: usize| all[k].name.to_string();
    // The last captured launch never replayed (TraceLens's xDiT Flux.1 pair).
    let acts = &all[..543];
    let o = match_replay(&caps, &ix, acts, None, None);
    assert_eq!(differences(&o), vec![(true, name(543))]);
    assert!(o.exact() && o.region() == Some(0));
    assert!((0..543).all(|j| o.launch_of(j) == Some(j as u32)));
    // One dropped in the middle (a kernel unlike its neighbours): the
    // later activities shift by one.
    let k = (100..540)
        .find(|&k| all[k - 1].name != all[k].name && all[k].name != all[k + 1].name)
        .expect("a kernel unlike its neighbours");
    let mut acts = all.clone();
    acts.remove(k);
    let o = match_replay(&caps, &ix, &acts, None, None);
    assert_eq!(differences(&o), vec![(true, name(k))]);
    assert_eq!(o.launch_of(k - 1), Some(k as u32 - 1));
    assert_eq!(o.launch_of(k), Some(k as u32 + 1));
    assert_eq!(o.launch_of(542), Some(543));
    // One renamed: a launch with no activity and an activity with no launch.
    let mut acts = all.clone();
    acts[7].name = "not_this_kernel";
    let o = match_replay(&caps, &ix, &acts, None, None);
    assert_eq!(
        differences(&o),
        vec![(true, name(7)), (false, "not_this_kernel".to_string())]
    );
    assert_eq!(o.launch_of(7), None);
    assert_eq!(o.launch_of(8), Some(8));
    // Two different kernels swapped: one of them paired, the other listed
    // on both sides; no duration goes to the wrong launch.
    let mut acts = all.clone();
    let (i, j) = (0..543)
        .map(|i| (i, i + 1))
        .find(|&(i, j)| all[i].name != all[j].name)
        .expect("two different neighbours");
    acts.swap(i, j);
    let o = match_replay(&caps, &ix, &acts, None, None);
    assert_eq!(differences(&o).len(), 2);
    for (k, a) in acts.iter().enumerate() {
        if let Some(l) = o.launch_of(k) {
            assert_eq!(all[l as usize].name, a.name, "{k}");
        }
    }
}

/// A replay that differs: too much to align (10 renamed kernels: 20 edits
/// where 544 allow 10), too short, none at all.
#[test]
fn mismatches_give_their_reason() {
    let caps = Captures::load(&[data(SGLANG_CAPTURE)], Path::new("x"));
    let ix = Index::new(&caps);
    let mut acts = region_acts(&caps, 0);
    for k in (7..107).step_by(10) {
        acts[k].name = "not_this_kernel";
    }
    match match_replay(&caps, &ix, &acts, None, None) {
        Outcome::Unmatched(why) => {
            assert!(
                why.starts_with("position 7 of 544: region 0 captured kernel "),
                "{why}"
            );
            assert!(why.ends_with("replay ran kernel not_this_kernel"), "{why}");
        }
        o => panic!("{o:?}"),
    }
    acts.truncate(500);
    assert_eq!(
        match_replay(&caps, &ix, &acts, None, None),
        Outcome::Unmatched(
            "count: 500 activities, no capture region has as many (regions have [544])".into()
        )
    );
    let none = Captures::default();
    assert_eq!(
        match_replay(&none, &Index::new(&none), &acts, None, None),
        Outcome::Unmatched("no capture found".into())
    );
}

/// The same capture given twice (by name twice, by name and by its
/// folder, or copied into another file) counts once, with a note (G3).
#[test]
fn a_capture_given_twice_counts_once() {
    let once = Captures::load(&[data(SGLANG_CAPTURE)], Path::new("x"));
    let folder = data(SGLANG_CAPTURE).parent().unwrap().to_path_buf();
    let twice = Captures::load(
        &[data(SGLANG_CAPTURE), folder, data(SGLANG_CAPTURE)],
        Path::new("x"),
    );
    assert_eq!(twice.regions, once.regions);
    assert_eq!(twice.files, once.files);
    assert_eq!(twice.notes.len(), 2, "{:?}", twice.notes);
    assert!(twice.notes[0].ends_with("given more than once: read once"));
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("bs_32_copy.json.gz");
    std::fs::copy(data(SGLANG_CAPTURE), &copy).unwrap();
    let copied = Captures::load(&[data(SGLANG_CAPTURE), copy], Path::new("x"));
    assert_eq!(copied.regions, once.regions);
    assert_eq!(copied.files.len(), 2);
    assert_eq!(
        copied.notes,
        vec![format!(
            "capture trace {}: 1 region(s) equal to regions of another capture file: counted once",
            dir.path().join("bs_32_copy.json.gz").display()
        )]
    );
}

/// Two captures of the same shape (a region and its copy under another
/// batch size field): ambiguous, never a pick; with a batch size that
/// names one, matched.
#[test]
fn two_captures_of_the_same_shape_are_ambiguous() {
    let mut caps = Captures::load(&[data(SGLANG_CAPTURE)], Path::new("x"));
    let copy = caps.regions[0].clone();
    caps.regions.push(copy);
    assert_eq!(caps.regions.len(), 2);
    let acts: Vec<(u8, String)> = region_acts(&caps, 0)
        .iter()
        .map(|a| (a.kind, a.name.to_string()))
        .collect();
    let acts: Vec<Act<'_>> = acts
        .iter()
        .map(|(k, n)| Act { kind: *k, name: n })
        .collect();
    let ix = Index::new(&caps);
    assert_eq!(
        match_replay(&caps, &ix, &acts, None, None),
        Outcome::Ambiguous {
            candidates: vec![0, 1],
            attributed: true
        }
    );
    // Another batch size on the second: the replay's batch 20 picks the
    // smallest captured size ≥ 20.
    caps.regions[1].batch = Some(24);
    assert_eq!(
        match_replay(&caps, &ix, &acts, Some(20), None),
        Outcome::Matched(1)
    );
    assert_eq!(
        match_replay(&caps, &ix, &acts, Some(30), None),
        Outcome::Matched(0)
    );
}

/// A truncated capture (the gzip cut in the middle) keeps its complete
/// regions only, with a note; a folder with an unreadable file notes it
/// and reads the rest; a missing path is a note.
#[test]
fn damaged_captures_are_notes() {
    let bytes = std::fs::read(data(VLLM_CAPTURE)).expect("fixture");
    let dir = std::env::temp_dir().join(format!("torchtrace-graphs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let cut = dir.join("cut.json.gz");
    std::fs::File::create(&cut)
        .and_then(|mut f| f.write_all(&bytes[..bytes.len() / 2]))
        .expect("write");
    std::fs::write(dir.join("junk.json"), b"not json").expect("write");
    let caps = Captures::load(&[dir.clone(), dir.join("missing.json")], Path::new("x"));
    assert_eq!(
        caps.files.len(),
        1,
        "only the cut file read: {:?}",
        caps.notes
    );
    assert!(
        caps.regions.len() < 25 && caps.regions.iter().all(|r| !r.launches.is_empty()),
        "{}",
        caps.regions.len()
    );
    let text = caps.notes.join("\n");
    assert!(text.contains("junk.json unreadable"), "{text}");
    assert!(text.contains("cut.json.gz: read stopped early"), "{text}");
    assert!(text.contains("--capture"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn names_of_captures() {
    assert_eq!(
        capture::parse_annotation("capture_8192_PIECEWISE"),
        Some((8192, "PIECEWISE".into()))
    );
    assert_eq!(capture::parse_annotation("capture_x_FULL"), None);
    assert_eq!(capture::sglang_batch("bs_32_rank0.json.gz"), Some(32));
    assert_eq!(
        capture::subsystem("graph_capture_rank_0.json.gz", Some("capture_8_FULL")),
        "decoder"
    );
    assert_eq!(
        capture::subsystem("x", Some("capture_speculator_8_FULL")),
        "speculator"
    );
    assert_eq!(capture::subsystem("encoder_capture.json", None), "encoder");
}

/// The real CUDA MTP captures (`sample_traces/text_graphs_mtp`, H100,
/// torch 2.11+cu130): decoder bs 4, 2, 1 and speculator bs 4, 2, 1.
fn mtp_captures() -> Captures {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces/text_graphs_mtp/capture_traces");
    Captures::load(&[dir], Path::new("x"))
}

fn region_of(caps: &Captures, sub: &str, bs: u64) -> u32 {
    caps.regions
        .iter()
        .position(|r| r.subsystem == sub && r.batch == Some(bs))
        .expect("region") as u32
}

/// Two captures of the same shape on CUDA (decoder bs 2 and bs 4: 50
/// launches of the same kinds, GRAPHS.md): without a batch, ambiguous,
/// never a pick by position; the step's 3 tokens pick bs 4, 2 tokens bs 2;
/// inside `proposer.propose` (speculator) neither is a candidate.
#[test]
fn cuda_captures_of_the_same_shape_need_the_batch() {
    let caps = mtp_captures();
    assert_eq!(caps.regions.len(), 6, "{:?}", caps.notes);
    let (b4, b2) = (
        region_of(&caps, "decoder", 4),
        region_of(&caps, "decoder", 2),
    );
    let acts = region_acts(&caps, b4 as usize);
    assert_eq!(acts.len(), 50);
    let ix = Index::new(&caps);
    match match_replay(&caps, &ix, &acts, None, None) {
        Outcome::Ambiguous { mut candidates, .. } => {
            candidates.sort_unstable();
            let mut want = vec![b4, b2];
            want.sort_unstable();
            assert_eq!(candidates, want);
        }
        o => panic!("{o:?}"),
    }
    assert_eq!(
        match_replay(&caps, &ix, &acts, Some(3), Some("decoder")),
        Outcome::Matched(b4)
    );
    assert_eq!(
        match_replay(&caps, &ix, &acts, Some(2), Some("decoder")),
        Outcome::Matched(b2)
    );
    // A batch larger than every capture: no smallest ≥ it, still ambiguous.
    assert!(matches!(
        match_replay(&caps, &ix, &acts, Some(8), Some("decoder")),
        Outcome::Ambiguous { .. }
    ));
}

/// Reordered streams: a replay whose memset ran before the kernel the
/// capture put first (the GPU order differs from the captured order) is
/// unmatched at that position with both kinds named, never matched to
/// another region; the speculator's bs 1 graph (17 launches) is matched
/// by count alone.
#[test]
fn reordered_activities_are_unmatched_with_the_position() {
    let caps = mtp_captures();
    let ix = Index::new(&caps);
    let b4 = region_of(&caps, "decoder", 4) as usize;
    let mut acts = region_acts(&caps, b4);
    let m = acts.iter().position(|a| a.kind == 2).expect("a memset");
    assert!(m > 0 && acts[m - 1].kind == 0, "{m}");
    acts.swap(m - 1, m);
    match match_replay(&caps, &ix, &acts, Some(3), Some("decoder")) {
        Outcome::Unmatched(why) => assert_eq!(
            why,
            format!(
                "position {} of 50: region {b4} captured kernel, replay ran memset ",
                m - 1
            )
        ),
        o => panic!("{o:?}"),
    }
    let s1 = region_of(&caps, "speculator", 1);
    let acts = region_acts(&caps, s1 as usize);
    assert_eq!(acts.len(), 17);
    assert_eq!(
        match_replay(&caps, &ix, &acts, None, Some("speculator")),
        Outcome::Matched(s1)
    );
}

/// What the analyses keep per replay (`replay::Replay`, ledger side) and
/// per attributed activity (`linked::Given`, `ops` and `export`).
#[test]
fn the_records_per_replay_and_per_attributed_activity() {
    assert_eq!(std::mem::size_of::<replay::Replay>(), 56);
    assert_eq!(std::mem::size_of::<linked::Given>(), 24);
}

/// A trace without any capture trace gets one short line saying how to
/// give one, not a count of unmatched replays with a reason each.
#[test]
fn no_capture_at_all_is_one_short_note() {
    let s = super::GraphsSummary {
        replays: 64,
        replays_unmatched: 64,
        ..Default::default()
    };
    assert_eq!(
        s.said(),
        vec![
            "graphs: 64 graph replays counted under their graph launch (no capture traces: give --capture, \
             or put capture_traces/ beside the trace, to see the ops inside)"
                .to_string()
        ]
    );
}
