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
//! - distinct labels are distinct.
#![no_main]

use libfuzzer_sys::fuzz_target;
use torchtrace::analyses::ranks::runs::{group, missing_cap, Member};
use torchtrace::runinfo;

/// A number from the knob's bits and the path's bytes: small, huge, negative.
fn pick(knob: u8, path: &str, salt: u8) -> Option<i64> {
    let h = path
        .bytes()
        .fold(u64::from(salt), |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
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
});
