//! Which traces form a run, and which rank each one is.
//!
//! A trace's rank comes from, in order: `--rank-regex` (its first capture
//! group, or the group named `rank`, over the file name); the name vLLM
//! gives worker traces, `[<prefix>_]dp<d>_pp<p>_tp<t>_dcp<c>_ep<e>_rank<r>`
//! (0.18+) or `<instance>-rank-<r>` (0.12–0.16), then `.<time_ns>`; or the
//! trace's `distributedInfo.rank`. The traces of one run share a directory
//! and a name prefix; every profiler start/stop cycle writes a new set
//! beside the old ones, so the k-th file of each rank (by the time stamp
//! in the name, then by name) belongs to cycle k:
//!
//! ```text
//!  dir/dp0_…_rank0.100.pt.trace.json.gz   rank 0, cycle 0 ┐ run "dir" #0
//!  dir/dp0_…_rank1.101.pt.trace.json.gz   rank 1, cycle 0 ┘
//!  dir/dp0_…_rank0.900.pt.trace.json.gz   rank 0, cycle 1 ┐ run "dir" #1
//!  dir/dp0_…_rank1.905.pt.trace.json.gz   rank 1, cycle 1 ┘
//! ```
//!
//! A trace whose rank cannot be told is a run of its own, with a note.

use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

/// Where a trace's rank came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankSource {
    RankRegex,
    FileName,
    DistributedInfo,
}

/// A trace's place in its run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub rank: Option<u32>,
    pub source: Option<RankSource>,
    /// The name's prefix before the rank part (the run key with the
    /// directory); empty without one.
    pub prefix: String,
    /// The time stamp after the rank part (`.<time_ns>`), if any.
    pub time_ns: Option<u64>,
    /// The name's parallel layout (dp, pp, tp, dcp, ep), when vLLM's.
    pub layout: Option<[u32; 5]>,
}

/// What is known of one trace before grouping.
#[derive(Debug, Clone)]
pub struct Member<'a> {
    pub path: &'a str,
    pub info_rank: Option<i64>,
    pub info_world_size: Option<i64>,
}

/// One run: its traces by rank, and what is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Directory, prefix and cycle, e.g. `ar_plain` or `ar_plain/job#1`.
    pub label: String,
    /// (rank, index into the given traces), by rank.
    pub members: Vec<(u32, usize)>,
    pub identities: Vec<Identity>,
    pub world_size: Option<u32>,
    /// Ranks below the world size (or below the highest rank) without a
    /// trace: the first [`missing_cap`] of them (issue 59: sized by the
    /// ranks found, never by a rank number or a world size).
    pub missing: Vec<u32>,
    /// How many ranks are missing in all (`missing` may list fewer).
    pub missing_count: u64,
    pub notes: Vec<String>,
}

fn vllm_name() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?:(?P<prefix>.*?)_)?dp(?P<dp>\d+)_pp(?P<pp>\d+)_tp(?P<tp>\d+)_dcp(?P<dcp>\d+)_ep(?P<ep>\d+)_rank(?P<rank>\d+)(?:\.(?P<time>\d+))?$",
        )
        .expect("a valid pattern")
    })
}

fn old_vllm_name() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?P<prefix>.+?)-rank-(?P<rank>\d+)(?:\.(?P<time>\d+))?$")
            .expect("a valid pattern")
    })
}

/// The file name of a path or label.
fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}

/// The directory part of a path or label (`.` for none).
fn directory(path: &str) -> String {
    match Path::new(path).parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_string_lossy().into_owned(),
        _ => ".".into(),
    }
}

/// A trace's identity from its name (and regex), else its
/// `distributedInfo`.
pub fn identify(m: &Member<'_>, rank_regex: Option<&Regex>) -> Identity {
    let stem = crate::runinfo::file_stem(m.path);
    let mut id = Identity {
        rank: None,
        source: None,
        prefix: String::new(),
        time_ns: None,
        layout: None,
    };
    if let Some(re) = rank_regex {
        if let Some(c) = re.captures(&file_name(m.path)) {
            let g = c.name("rank").or_else(|| c.get(1));
            if let Some(r) = g.and_then(|g| g.as_str().parse().ok()) {
                id.rank = Some(r);
                id.source = Some(RankSource::RankRegex);
                return id;
            }
        }
    }
    fn num<T: std::str::FromStr>(c: &regex::Captures<'_>, k: &str) -> Option<T> {
        c.name(k).and_then(|g| g.as_str().parse().ok())
    }
    if let Some(c) = vllm_name().captures(&stem) {
        id.rank = num(&c, "rank");
        id.prefix = c.name("prefix").map_or("", |g| g.as_str()).to_string();
        id.time_ns = num(&c, "time");
        let l = ["dp", "pp", "tp", "dcp", "ep"].map(|k| num::<u32>(&c, k).unwrap_or(0));
        id.layout = Some(l);
    } else if let Some(c) = old_vllm_name().captures(&stem) {
        id.rank = num(&c, "rank");
        id.prefix = c.name("prefix").map_or("", |g| g.as_str()).to_string();
        id.time_ns = num(&c, "time");
    }
    if id.rank.is_some() {
        id.source = Some(RankSource::FileName);
    } else if let Some(r) = m.info_rank.and_then(|r| u32::try_from(r).ok()) {
        id.rank = Some(r);
        id.source = Some(RankSource::DistributedInfo);
    }
    id
}

/// Groups the traces into runs (see the module docs), in the order of
/// their first trace.
pub fn group(members: &[Member<'_>], rank_regex: Option<&Regex>) -> Vec<Group> {
    let ids: Vec<Identity> = members.iter().map(|m| identify(m, rank_regex)).collect();
    // (directory, prefix) → rank → traces.
    let mut keyed: BTreeMap<(String, String), BTreeMap<u32, Vec<usize>>> = BTreeMap::new();
    let mut first: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut alone: Vec<usize> = Vec::new();
    for (i, (m, id)) in members.iter().zip(&ids).enumerate() {
        let Some(rank) = id.rank else {
            alone.push(i);
            continue;
        };
        let key = (directory(m.path), id.prefix.clone());
        first.entry(key.clone()).or_insert(i);
        keyed
            .entry(key)
            .or_default()
            .entry(rank)
            .or_default()
            .push(i);
    }
    let mut groups: Vec<(usize, Group)> = Vec::new();
    for (key, by_rank) in keyed {
        let at = first[&key];
        groups.extend(
            cycles(&key, by_rank, members, &ids)
                .into_iter()
                .map(|g| (at, g)),
        );
    }
    for i in alone {
        groups.push((i, alone_group(i, members, &ids)));
    }
    groups.sort_by_key(|(at, _)| *at);
    groups.into_iter().map(|(_, g)| g).collect()
}

/// A trace whose rank is unknown: a run of its own.
fn alone_group(i: usize, members: &[Member<'_>], ids: &[Identity]) -> Group {
    Group {
        label: members[i].path.to_string(),
        members: vec![(0, i)],
        identities: vec![ids[i].clone()],
        world_size: None,
        missing: Vec::new(),
        missing_count: 0,
        notes: vec![format!(
            "{}: the rank is not in the file name (vLLM's dp…_rank<r> or <instance>-rank-<r>) nor in distributedInfo: taken as a run of one rank 0 (give --rank-regex)",
            members[i].path
        )],
    }
}

/// Splits one (directory, prefix)'s traces into profiler cycles.
fn cycles(
    key: &(String, String),
    mut by_rank: BTreeMap<u32, Vec<usize>>,
    members: &[Member<'_>],
    ids: &[Identity],
) -> Vec<Group> {
    for files in by_rank.values_mut() {
        files.sort_by_key(|&i| (ids[i].time_ns, members[i].path));
    }
    let n = by_rank.values().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for k in 0..n {
        let mut label = match key.1.is_empty() {
            true => key.0.clone(),
            false => format!("{}/{}", key.0, key.1),
        };
        if n > 1 {
            label.push_str(&format!("#{k}"));
        }
        let members_k: Vec<(u32, usize)> = by_rank
            .iter()
            .filter_map(|(&r, files)| files.get(k).map(|&i| (r, i)))
            .collect();
        out.push(finish_group(label, members_k, members, ids, n));
    }
    out
}

/// World size, missing ranks and notes of one run.
fn finish_group(
    label: String,
    ranks: Vec<(u32, usize)>,
    members: &[Member<'_>],
    ids: &[Identity],
    cycles: usize,
) -> Group {
    let mut notes = Vec::new();
    let sizes: std::collections::BTreeSet<i64> = ranks
        .iter()
        .filter_map(|&(_, i)| members[i].info_world_size)
        .collect();
    if sizes.len() > 1 {
        notes.push(format!(
            "{label}: the traces disagree on the world size (distributedInfo: {sizes:?}): the largest is taken"
        ));
    }
    let world_size = sizes.last().and_then(|&w| u32::try_from(w).ok());
    for &(r, i) in &ranks {
        let info = members[i].info_rank;
        if ids[i].source != Some(RankSource::DistributedInfo)
            && info.is_some_and(|x| x != i64::from(r))
        {
            notes.push(format!(
                "{}: rank {r} by its name, but distributedInfo says rank {}: the name is taken",
                members[i].path,
                info.unwrap_or_default()
            ));
        }
    }
    let top = ranks
        .iter()
        .map(|&(r, _)| r.saturating_add(1))
        .max()
        .unwrap_or(0);
    let upto = world_size.unwrap_or(top).max(top);
    let present: std::collections::BTreeSet<u32> = ranks.iter().map(|&(r, _)| r).collect();
    let (missing, missing_count) = missing_ranks(&present, upto, missing_cap(present.len()));
    if missing_count > 0 {
        let more = missing_count - missing.len() as u64;
        notes.push(format!(
            "{label}: no trace of rank(s) {}{} (of {upto}){}: the ranks present are analysed",
            join(&missing),
            match more {
                0 => String::new(),
                m => format!(" and {m} more"),
            },
            if cycles > 1 {
                " in this profiler cycle"
            } else {
                ""
            }
        ));
    }
    if let Some(w) = world_size.filter(|&w| top > w) {
        notes.push(format!(
            "{label}: rank {} is not below the world size {w}",
            top - 1
        ));
    }
    Group {
        label,
        identities: ranks.iter().map(|&(_, i)| ids[i].clone()).collect(),
        members: ranks,
        world_size,
        missing,
        missing_count,
        notes,
    }
}

/// The most missing ranks a run lists for `found` ranks present: 4 per
/// rank found, at least 64 (issue 59: two files named `…rank0…` and
/// `…rank4000000000…` once listed four billion).
pub fn missing_cap(found: usize) -> usize {
    found.saturating_mul(4).max(64)
}

/// The ranks in `0..upto` not in `present`, the first `cap` of them, and
/// how many in all: the gaps between present ranks walked, in time and
/// memory O(present + cap) whatever `upto` is.
fn missing_ranks(
    present: &std::collections::BTreeSet<u32>,
    upto: u32,
    cap: usize,
) -> (Vec<u32>, u64) {
    let mut listed = Vec::new();
    let mut count = 0u64;
    let mut from = 0u32;
    let bounds = present.iter().copied().filter(|&r| r < upto).chain([upto]);
    for next in bounds {
        let gap = u64::from(next - from);
        count += gap;
        let room = cap.saturating_sub(listed.len()) as u64;
        listed.extend((from..next).take(gap.min(room) as usize));
        from = next.saturating_add(1);
    }
    (listed, count)
}

fn join(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}
