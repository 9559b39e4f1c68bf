//! Fuzzes what groups traces before any is read (issue 59): `ranks`'
//! runs (`ranks::runs::group`: ranks from file names, `--rank-regex` and
//! `distributedInfo`, profiler cycles, missing ranks) and the labels
//! `batch` and `plot` give traces (`runinfo::label`, `runinfo::distinct`).
//! The input is lines, one trace each: a knob byte, then its path (rank
//! numbers, world sizes and names are all the fuzzer's). It must never
//! panic nor allocate by a number it was given, and:
//!
//! - every trace is in exactly one run, each run's ranks distinct and in
//!   order, one identity per member;
//! - the missing ranks listed are at most `missing_cap(ranks found)`, in
//!   order, none present, and `missing_count` counts at least those;
//! - distinct labels are distinct;
//! - `batch`'s matching of AR and candidate runs of one workload
//!   (`batch::match_ranked`, by the rank in the file name,
//!   `batch::rank_in_name`, else the knob's): each run in at most one
//!   match, each match one AR and one candidate of the same rank (one run
//!   a side: matched whatever the ranks), the k-th AR of a rank with its
//!   k-th candidate, as many matches per rank as its smaller side has, and
//!   the unmatched counted exactly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;
use torchtrace::analyses::ranks::runs::{group, missing_cap, Member};
use torchtrace::batch::{match_ranked, rank_in_name};
use torchtrace::runinfo;

/// A number from the knob's bits and the path's bytes: small, huge, negative.
fn pick(knob: u8, path: &str, salt: u8) -> Option<i64> {
    let h = path.bytes().fold(u64::from(salt), |h, b| {
        h.wrapping_mul(31).wrapping_add(u64::from(b))
    });
    match (knob >> salt) & 3 {
        0 => None,
        1 => Some((h % 8) as i64),
        2 => Some(h as i64),
        _ => Some(i64::from(u32::MAX) + (h % 3) as i64 - 1),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let lines: Vec<(u8, String)> = rest
        .split(|&b| b == b'\n')
        .take(256)
        .filter_map(|l| l.split_first())
        .map(|(&k, p)| (k, String::from_utf8_lossy(p).into_owned()))
        .collect();
    let members: Vec<Member<'_>> = lines
        .iter()
        .map(|(k, p)| Member {
            path: p,
            info_rank: pick(*k, p, 0),
            info_world_size: pick(*k, p, 2),
        })
        .collect();
    let re = regex::Regex::new(r"r(\d+)").expect("a valid regex");
    let groups = group(&members, (flags & 1 == 1).then_some(&re));
    let mut seen = vec![0u32; members.len()];
    for g in &groups {
        assert_eq!(g.identities.len(), g.members.len(), "{g:?}");
        assert!(g.members.windows(2).all(|w| w[0].0 < w[1].0), "{g:?}");
        for &(_, i) in &g.members {
            seen[i] += 1;
        }
        let found = g.members.len();
        assert!(g.missing.len() <= missing_cap(found), "{g:?}");
        assert!(g.missing_count >= g.missing.len() as u64, "{g:?}");
        assert!(g.missing.windows(2).all(|w| w[0] < w[1]), "{g:?}");
        assert!(
            g.missing
                .iter()
                .all(|m| g.members.binary_search_by_key(m, |x| x.0).is_err()),
            "{g:?}"
        );
    }
    assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
    let mut labels: Vec<String> = lines
        .iter()
        .map(|(k, p)| {
            let mode = (k & 16 == 16).then_some(p.as_str());
            let workload = (k & 32 == 32).then_some("w");
            runinfo::label(p, mode, workload)
        })
        .collect();
    runinfo::distinct(&mut labels);
    let mut sorted = labels.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), labels.len(), "{labels:?}");
    check_matching(&lines);
});

/// `batch`'s matching of one workload's runs: bit 64 of a line's knob puts
/// it on the AR side; its rank is its file name's, else (bit 128) the
/// knob's pick, else none.
fn check_matching(lines: &[(u8, String)]) {
    let rank = |i: usize| {
        let (k, p) = &lines[i];
        rank_in_name(p).or_else(|| pick(*k, p, 4).filter(|_| k & 128 == 128))
    };
    let (ar, cand): (Vec<usize>, Vec<usize>) =
        (0..lines.len()).partition(|&i| lines[i].0 & 64 == 64);
    let (matches, unmatched) = match_ranked(&ar, &cand, rank);
    assert!(matches.len() <= ar.len().min(cand.len()), "{matches:?}");
    assert_eq!(unmatched, ar.len() + cand.len() - 2 * matches.len());
    assert!(matches.windows(2).all(|w| w[0] < w[1]), "{matches:?}");
    let mut used = vec![false; lines.len()];
    for &(a, c) in &matches {
        assert!(ar.contains(&a) && cand.contains(&c), "{matches:?}");
        assert!(!used[a] && !used[c], "a run matched twice: {matches:?}");
        used[a] = true;
        used[c] = true;
    }
    if ar.len() == 1 && cand.len() == 1 {
        assert_eq!(matches, [(ar[0], cand[0])]);
        return;
    }
    // The oracle: per rank, the k-th AR with the k-th candidate.
    let mut by_rank: BTreeMap<Option<i64>, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for &i in &ar {
        by_rank.entry(rank(i)).or_default().0.push(i);
    }
    for &i in &cand {
        by_rank.entry(rank(i)).or_default().1.push(i);
    }
    let mut expected: Vec<(usize, usize)> = by_rank
        .values()
        .flat_map(|(a, c)| a.iter().copied().zip(c.iter().copied()))
        .collect();
    expected.sort();
    assert_eq!(matches, expected);
    assert!(
        matches.iter().all(|&(a, c)| rank(a) == rank(c)),
        "{matches:?}"
    );
}
