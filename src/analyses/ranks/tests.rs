//! The timelines of the module docs, as tests: grouping into runs and
//! cycles, step alignment, waits, last arrivers, offsets and thresholds.

use super::align::{run_report, RunReport};
use super::runs::{group, identify, Member, RankSource};
use super::*;

fn cfg(spec: RanksSpec) -> RanksConfig {
    RanksConfig::new(spec).unwrap()
}

/// A step with collectives given as (start, end) in ns.
fn step(name: u32, cpu: i64, colls: &[(i64, i64)]) -> RankStep {
    RankStep {
        name,
        cpu_start_ns: cpu,
        cpu_end_ns: cpu + 100,
        gpu: colls
            .first()
            .map(|c| (c.0, colls.last().map_or(c.1, |l| l.1))),
        collectives: colls
            .iter()
            .map(|&(s, e)| Collective {
                start_ns: s,
                end_ns: e,
                name: 0,
            })
            .collect(),
    }
}

fn trace(path: &str, decode: Vec<RankStep>) -> RankTrace {
    RankTrace {
        path: path.into(),
        complete: true,
        error: None,
        info_rank: None,
        info_world_size: None,
        context: "execute_context_0(0)_generation_1(1)".into(),
        completion_tokens: Some(10),
        tokens_source: None,
        step_names: vec![
            "execute_context_0(0)_generation_1(1)".into(),
            "other".into(),
        ],
        collective_names: vec!["ncclDevKernel_AllReduce".into()],
        decode,
        boundary: Vec::new(),
        collectives_outside_steps: 0,
        notes: Vec::new(),
        options: RanksSpec::default(),
    }
}

fn report(traces: &[RankTrace], spec: RanksSpec) -> RunReport {
    let members: Vec<Member<'_>> = traces
        .iter()
        .map(|t| Member {
            path: &t.path,
            info_rank: t.info_rank,
            info_world_size: t.info_world_size,
        })
        .collect();
    let c = cfg(spec);
    let groups = group(&members, c.rank_regex.as_ref());
    assert_eq!(groups.len(), 1, "{groups:?}");
    let of: Vec<&RankTrace> = groups[0].members.iter().map(|&(_, i)| &traces[i]).collect();
    run_report(&groups[0], &of, &c)
}

const R0: &str = "run/dp0_pp0_tp0_dcp0_ep0_rank0.100.pt.trace.json.gz";
const R1: &str = "run/dp0_pp0_tp1_dcp0_ep0_rank1.101.pt.trace.json.gz";

#[test]
fn vllm_names_give_rank_prefix_and_time() {
    let m = |p| Member {
        path: p,
        info_rank: Some(5),
        info_world_size: None,
    };
    let id = identify(
        &m("d/job_dp0_pp1_tp3_dcp0_ep0_rank7.123.pt.trace.json.gz"),
        None,
    );
    assert_eq!(
        (
            id.rank,
            id.source,
            id.prefix.as_str(),
            id.time_ns,
            id.layout
        ),
        (
            Some(7),
            Some(RankSource::FileName),
            "job",
            Some(123),
            Some([0, 1, 3, 0, 0])
        )
    );
    let id = identify(&m("d/abc-rank-2.99.pt.trace.json.gz"), None);
    assert_eq!((id.rank, id.prefix.as_str()), (Some(2), "abc"));
    // Neither name pattern: distributedInfo.
    let id = identify(&m("d/worker0_step_12.1694.pt.trace.json.gz"), None);
    assert_eq!(
        (id.rank, id.source),
        (Some(5), Some(RankSource::DistributedInfo))
    );
    // The regex wins over both.
    let re = regex::Regex::new(r"worker(\d+)").unwrap();
    let id = identify(&m("d/worker3_step_12.1694.pt.trace.json.gz"), Some(&re));
    assert_eq!((id.rank, id.source), (Some(3), Some(RankSource::RankRegex)));
}

/// The module docs' listing of runs/cycles.
#[test]
fn cycles_split_by_time_stamp_and_missing_ranks_are_noted() {
    let paths = [
        "dir/dp0_pp0_tp0_dcp0_ep0_rank0.900.pt.trace.json.gz",
        "dir/dp0_pp0_tp1_dcp0_ep0_rank1.101.pt.trace.json.gz",
        "dir/dp0_pp0_tp0_dcp0_ep0_rank0.100.pt.trace.json.gz",
        "dir/dp0_pp0_tp1_dcp0_ep0_rank1.905.pt.trace.json.gz",
        "other/dp0_pp0_tp1_dcp0_ep0_rank1.1.pt.trace.json.gz",
    ];
    let members: Vec<Member<'_>> = paths
        .iter()
        .map(|p| Member {
            path: p,
            info_rank: None,
            info_world_size: Some(2),
        })
        .collect();
    let g = group(&members, None);
    assert_eq!(g.len(), 3);
    assert_eq!(g[0].label, "dir#0");
    assert_eq!(g[0].members, vec![(0, 2), (1, 1)]);
    assert_eq!(g[1].label, "dir#1");
    assert_eq!(g[1].members, vec![(0, 0), (1, 3)]);
    assert_eq!(
        (g[2].label.as_str(), g[2].missing.clone()),
        ("other", vec![0])
    );
    assert!(
        g[2].notes[0].contains("no trace of rank(s) 0 (of 2)"),
        "{:?}",
        g[2].notes
    );
}

/// Issue 59: rank numbers from names and distributedInfo size nothing.
/// Two files named rank 0 and rank 4 000 000 000 (and a world size of
/// 2³¹−1 in distributedInfo) list the first `missing_cap(2)` = 64 missing
/// ranks and count the rest, at once and in a few bytes (before: a
/// `Vec<u32>` of four billion entries, 16 GB, built one rank at a time).
#[test]
fn missing_ranks_are_sized_by_the_ranks_found() {
    let paths = [
        "big/dp0_pp0_tp0_dcp0_ep0_rank0.1.pt.trace.json.gz",
        "big/dp0_pp0_tp0_dcp0_ep0_rank4000000000.1.pt.trace.json.gz",
    ];
    let members: Vec<Member<'_>> = paths
        .iter()
        .map(|p| Member {
            path: p,
            info_rank: None,
            info_world_size: Some(i64::from(i32::MAX)),
        })
        .collect();
    let g = group(&members, None);
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].members, vec![(0, 0), (4_000_000_000, 1)]);
    assert_eq!(g[0].missing, (1..65).collect::<Vec<u32>>());
    assert_eq!(g[0].missing_count, 4_000_000_001 - 2);
    assert!(
        g[0].notes
            .iter()
            .any(|n| n.contains("61, 62, 63, 64 and 3999999935 more (of 4000000001)")),
        "{:?}",
        g[0].notes
    );
}

/// The timeline of `align`'s docs: rank 1 sleeps before step 1's first
/// all-reduce; rank 0 waits for it there.
///
/// ```text
///  step 0: r0 AR [1000,1100) [1200,1300)   r1 AR [1010,1100) [1195,1300)
///  step 1: r0 AR [2000,2600) [2700,2800)   r1 AR [2500,2600) [2705,2800)
/// ```
#[test]
fn waits_last_arrivers_and_delay_on_the_doc_timeline() {
    let r0 = trace(
        R0,
        vec![
            step(0, 900, &[(1000, 1100), (1200, 1300)]),
            step(0, 1900, &[(2000, 2600), (2700, 2800)]),
        ],
    );
    let r1 = trace(
        R1,
        vec![
            step(0, 905, &[(1010, 1100), (1195, 1300)]),
            step(0, 2400, &[(2500, 2600), (2705, 2800)]),
        ],
    );
    let r = report(&[r0, r1], RanksSpec::default());
    assert_eq!(r.aligned_steps, 2);
    // Ends are equal: offset 0, credible only with ≥ 8 matches (4 here).
    assert_eq!((r.offsets[1].offset_ns, r.offsets[1].matched), (0, 4));
    assert!(!r.offsets[1].credible && !r.offsets[1].applied);
    let s0 = &r.steps[0];
    // k=0: r1 last by 10 (r0 waits 10); k=1: r0 last by 5 (r1 waits 5).
    assert_eq!(
        s0.per_rank.iter().map(|p| p.wait_ns).collect::<Vec<_>>(),
        [10, 5]
    );
    assert_eq!(
        s0.per_rank.iter().map(|p| p.arrival_ns).collect::<Vec<_>>(),
        [5, 10]
    );
    assert_eq!((s0.straggler, s0.delay_ns), (Some(1), 10));
    let s1 = &r.steps[1];
    assert_eq!(
        s1.per_rank.iter().map(|p| p.wait_ns).collect::<Vec<_>>(),
        [505, 0]
    );
    assert_eq!((s1.straggler, s1.delay_ns), (Some(1), 505));
    assert_eq!(s1.per_rank[1].cpu_skew_ns, 500);
    assert_eq!(s1.per_rank[0].in_collectives_ns, 700);
    // Threshold: max(100 µs floor, 50 % of the median span, median + 10·MAD):
    // delays 10, 505 → median 257.5, MAD 247.5 → 2732.5; the floor binds.
    assert_eq!(r.threshold.rule, "floor");
    assert_eq!(
        r.threshold.median_delay_ns,
        Some(crate::stats::Exact { num: 515, den: 2 })
    );
    assert!(r.stragglers.is_empty());
    // A fixed threshold of 1 µs flags step 1 (delay 5 µs) only.
    let r0 = trace(
        R0,
        vec![
            step(0, 900, &[(1000, 1100)]),
            step(0, 1900, &[(2000, 7100)]),
        ],
    );
    let r1 = trace(
        R1,
        vec![
            step(0, 905, &[(1010, 1100)]),
            step(0, 6900, &[(7000, 7100)]),
        ],
    );
    let spec = RanksSpec {
        threshold_us: Some(1),
        ..Default::default()
    };
    let r = report(&[r0, r1], spec);
    assert_eq!(r.threshold.rule, "fixed");
    assert_eq!(r.stragglers.len(), 1);
    assert_eq!((r.stragglers[0].step, r.stragglers[0].rank), (1, 1));
    assert_eq!(r.ranks[1].straggler_steps, 1);
    assert_eq!(r.ranks[1].imposed_ns, 5000);
    assert_eq!(r.ranks[0].wait_ns, 5010);
    // 5010 ns over 10 tokens = 501 ns = 5.01e-4 ms (display figure).
    let per_token = r.ranks[0].wait_per_token_ms.unwrap();
    assert!((per_token - 5.01e-4).abs() < 1e-15, "{per_token}");
}

/// Rank 1's clock runs 1 ms ahead: its collectives end 1 ms "later". The
/// offset is measured from the ends and, applied, removes the fake wait.
#[test]
fn clock_offset_is_measured_from_ends_and_applied() {
    let shift = 1_000_000;
    let colls = |d: i64| -> Vec<(i64, i64)> {
        (0..4)
            .map(|k| (k * 1000 + d, k * 1000 + 500 + d))
            .collect::<Vec<_>>()
    };
    let steps0: Vec<RankStep> = (0..3).map(|i| step(0, i, &colls(i * 10_000))).collect();
    let steps1: Vec<RankStep> = (0..3)
        .map(|i| step(0, i + shift, &colls(i * 10_000 + shift)))
        .collect();
    let (a, b) = (trace(R0, steps0), trace(R1, steps1));
    let r = report(&[a.clone(), b.clone()], RanksSpec::default());
    let o = &r.offsets[1];
    assert_eq!((o.offset_ns, o.spread_ns, o.matched), (shift, Some(0), 12));
    assert!(o.credible && o.applied);
    assert!(r
        .steps
        .iter()
        .all(|s| s.per_rank.iter().all(|p| p.wait_ns == 0)));
    // Not applied: rank 0 seems to wait 1 ms at every collective.
    let r = report(
        &[a, b],
        RanksSpec {
            align: Align::None,
            ..Default::default()
        },
    );
    assert!(!r.offsets[1].applied);
    assert_eq!(r.steps[0].per_rank[0].wait_ns, 4 * shift);
}

#[test]
fn alignment_stops_at_a_name_mismatch_and_counts_differ() {
    let a = trace(
        R0,
        vec![
            step(0, 0, &[(1, 2)]),
            step(0, 10, &[(11, 12)]),
            step(0, 20, &[]),
        ],
    );
    let mut b = trace(R1, vec![step(0, 0, &[(1, 2)]), step(1, 10, &[(11, 12)])]);
    b.step_names[1] = "execute_context_0(0)_generation_1(2)".into();
    let r = report(&[a, b], RanksSpec::default());
    assert_eq!(r.aligned_steps, 1);
    let stop = r.alignment_stop.clone().unwrap();
    assert_eq!(stop.step, 1);
    assert_eq!(stop.names[1].1, "execute_context_0(0)_generation_1(2)");
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("different numbers of decode steps")));
    assert!(r.notes.iter().any(|n| n.contains("alignment stops there")));
}

#[test]
fn unequal_collective_counts_match_the_first_k() {
    let a = trace(R0, vec![step(0, 0, &[(10, 20), (30, 40)])]);
    let b = trace(R1, vec![step(0, 0, &[(15, 20)])]);
    let r = report(&[a, b], RanksSpec::default());
    assert_eq!(r.collective_count_mismatches, 1);
    assert_eq!(r.steps[0].collectives, 1);
    assert_eq!(r.steps[0].per_rank[0].wait_ns, 5);
}

#[test]
fn a_rank_without_collectives_or_alone_is_no_panic() {
    let a = trace(R0, vec![step(0, 0, &[])]);
    let b = trace(R1, vec![step(0, 0, &[])]);
    let r = report(&[a.clone(), b], RanksSpec::default());
    assert_eq!((r.steps[0].straggler, r.steps[0].delay_ns), (None, 0));
    assert_eq!(r.offsets[1].matched, 0);
    let r = report(&[a], RanksSpec::default());
    assert!(r.notes.iter().any(|n| n.contains("one rank")));
    assert_eq!(r.ranks.len(), 1);
}

#[test]
fn bad_options_are_errors() {
    let bad = |spec: RanksSpec| RanksConfig::new(spec).unwrap_err();
    assert!(bad(RanksSpec {
        rank_regex: Some("rank".into()),
        ..Default::default()
    })
    .contains("capture group"));
    assert!(bad(RanksSpec {
        collectives: vec!["(".into()],
        ..Default::default()
    })
    .contains("--collective"));
    let c = cfg(RanksSpec {
        collectives: vec!["my_allreduce_kernel".into()],
        ..Default::default()
    });
    assert!(c.is_collective("void MY_ALLREDUCE_KERNEL<4>"));
    assert!(c.is_collective("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"));
    assert!(c.is_collective("void vllm::cross_device_reduce_1stage<bf16, 2>"));
    assert!(!c.is_collective("nvjet_sm90_tst_64x8"));
}
