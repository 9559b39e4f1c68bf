//! The launch links (VIEWS.md C3, O6): each device activity's owning
//! runtime call by correlation (the first call in file order with it), and
//! what each call launched — activities, their kinds and GPU ns, its first
//! activity's start, whether it is a graph launch or blocks the host (C7).

use super::Linked;
use crate::ledger::corr::CorrIndex;

/// Sync-like by name (C7): `Synchronize`, or a synchronous memcpy API
/// (`^(cuda|hip|cu)Memcpy` without `Async`).
fn sync_by_name(name: &str) -> bool {
    if name.contains("Synchronize") {
        return true;
    }
    let memcpy_api = ["cuda", "hip", "cu"].iter().any(|p| {
        name.strip_prefix(p)
            .is_some_and(|r| r.starts_with("Memcpy"))
    });
    memcpy_api && !name.contains("Async")
}

/// A graph launch (C3): the name matches `GraphLaunch`.
pub(crate) fn is_graph(name: &str) -> bool {
    name.contains("GraphLaunch")
}

/// What C3 and C7 read off a name (a graph launch, a blocking call, a
/// pageable memcpy), worked out once per interned name: the substring
/// tests per call and per memcpy were an eighth of `ops`' finish (`perf`,
/// 1.14 GB: 321 k calls of a few dozen names).
struct NameFlags<'n> {
    names: &'n crate::model::Interner,
    /// Per symbol: [`NameFlags::KNOWN`] once worked out, with its flags.
    by_sym: Vec<u8>,
}

impl<'n> NameFlags<'n> {
    const KNOWN: u8 = 1;
    const GRAPH: u8 = 2;
    const SYNC: u8 = 4;
    const PAGEABLE: u8 = 8;

    fn new(names: &'n crate::model::Interner) -> Self {
        NameFlags {
            names,
            by_sym: Vec::new(),
        }
    }

    fn of(&mut self, sym: crate::model::Sym) -> u8 {
        let i = sym.0 as usize;
        if self.by_sym.len() <= i {
            self.by_sym.resize(i + 1, 0);
        }
        if self.by_sym[i] == 0 {
            let name = self.names.resolve(sym);
            self.by_sym[i] = Self::KNOWN
                | if is_graph(name) { Self::GRAPH } else { 0 }
                | if sync_by_name(name) { Self::SYNC } else { 0 }
                | if name.contains("Pageable") {
                    Self::PAGEABLE
                } else {
                    0
                };
        }
        self.by_sym[i]
    }
}

/// What one runtime call launched (C3, O6): 32 B (counts in u32: one
/// launch's activities are far fewer than the 2³² a machine could hold;
/// added saturating all the same; its kernels are the activities that are
/// neither memcpys nor memsets).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Launch {
    pub acts: u32,
    pub memcpys: u32,
    pub memsets: u32,
    pub graph: bool,
    pub sync: bool,
    pub gpu: i64,
    /// Its first activity's start, when `acts > 0` (O6: earliest start,
    /// then end, then file order).
    first_ts: i64,
}

/// The kind of a launch (O9): graph by name, else memcpy/memset when all
/// its activities are, else kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LaunchKind {
    Kernel,
    Graph,
    Memcpy,
    Memset,
}

impl Launch {
    /// Its kernels: the activities neither memcpys nor memsets.
    pub fn kernels(&self) -> u32 {
        self.acts
            .saturating_sub(self.memcpys)
            .saturating_sub(self.memsets)
    }

    /// Its first activity's start (O6); `None` when it launched nothing.
    pub fn first(&self) -> Option<i64> {
        (self.acts > 0).then_some(self.first_ts)
    }

    pub fn kind(&self) -> LaunchKind {
        if self.graph {
            LaunchKind::Graph
        } else if self.memcpys == self.acts {
            LaunchKind::Memcpy
        } else if self.memsets == self.acts {
            LaunchKind::Memset
        } else {
            LaunchKind::Kernel
        }
    }
}

/// An event's end, `ts + dur` (saturating: C1's exact ns never wrap).
pub(crate) fn end_of(ts: i64, dur: i64) -> i64 {
    ts.saturating_add(dur)
}

/// Every activity's owning runtime call (C3), 4 B an activity.
#[derive(Debug, Clone, Default)]
pub(crate) struct Owners(Vec<u32>);

impl Owners {
    /// No owner: a call's position is below the calls' count, below this.
    const NONE: u32 = u32::MAX;

    /// The owners in file order.
    pub fn iter(&self) -> impl Iterator<Item = Option<u32>> + '_ {
        self.0.iter().map(|&o| (o != Self::NONE).then_some(o))
    }

    /// Activities `[lo, hi)`'s owners.
    pub fn range(&self, lo: usize, hi: usize) -> impl Iterator<Item = Option<u32>> + '_ {
        self.0
            .get(lo..hi)
            .unwrap_or_default()
            .iter()
            .map(|&o| (o != Self::NONE).then_some(o))
    }

    /// Activities without an owner (C3's unlinked).
    pub fn unowned(&self) -> u64 {
        self.0.iter().filter(|&&o| o == Self::NONE).count() as u64
    }
}

/// C3's link table: each correlation's first runtime call in file order.
///
/// The ids are indexed by the ledger's [`CorrIndex`] (their ranks without a
/// sort: a bitmap when dense, their low bytes in buckets of 256 when about
/// one id in six or fewer is a runtime call's, as on vLLM's workers, a
/// sorted list when sparser still), and each rank keeps its first call:
/// 4 B a distinct id beside the index's ≈ 1 B. A hash map took 16 B an id
/// and a cache miss per lookup; the activities ask in about their launch
/// order, so the buckets they touch are neighbours.
#[derive(Debug)]
pub(crate) struct FirstCall {
    index: CorrIndex,
    /// Per rank, the first call's position in file order.
    first: Vec<u32>,
}

impl FirstCall {
    /// An empty slot (a call's position is below it).
    const NONE: u32 = u32::MAX;

    /// The table of `corrs()` (each runtime call's correlation, in file
    /// order; walked three times) and the calls whose correlation an
    /// earlier call had (C3's duplicates).
    pub fn build<I>(corrs: impl Fn() -> I) -> (FirstCall, u64)
    where
        I: Iterator<Item = Option<i128>>,
    {
        let (mut n, mut range) = (0usize, None::<(i128, i128)>);
        for c in corrs().flatten() {
            n += 1;
            range = Some(range.map_or((c, c), |(lo, hi)| (lo.min(c), hi.max(c))));
        }
        let index = CorrIndex::of_ids(|| corrs().flatten(), range, n);
        let mut first = vec![Self::NONE; index.len()];
        let mut dup = 0;
        for (i, c) in corrs().enumerate() {
            // Every id of `corrs` is in the index; a position past u32
            // (never: 4 G calls) is left unlinked.
            let (Some(r), Ok(i)) = (c.and_then(|c| index.rank(c)), u32::try_from(i)) else {
                continue;
            };
            let slot = &mut first[r as usize];
            if *slot == Self::NONE {
                *slot = i;
            } else {
                dup += 1;
            }
        }
        (FirstCall { index, first }, dup)
    }

    /// The first call (its position in file order) with correlation `c`.
    pub fn get(&self, c: i128) -> Option<u32> {
        let r = self.index.rank(c)?;
        self.first
            .get(r as usize)
            .copied()
            .filter(|&i| i != Self::NONE)
    }
}

/// Every activity's owner (C3: the first runtime call in file order with
/// its correlation) and the duplicate count. `corrs()`: each runtime
/// call's correlation, in file order (walked twice); `acts` in file order,
/// decoded as they come (a slice's `iter().copied()` or the kept records'
/// `iter()`: `ops` keeps no decoded copy).
pub(crate) fn owners<I>(
    corrs: impl Fn() -> I,
    acts: impl IntoIterator<Item = Linked>,
) -> (Owners, u64)
where
    I: Iterator<Item = Option<i128>>,
{
    let (first, dup) = FirstCall::build(corrs);
    let own = acts
        .into_iter()
        .map(|a| a.corr.and_then(|k| first.get(k)).unwrap_or(Owners::NONE))
        .collect();
    (Owners(own), dup)
}

/// Each runtime call's C7 flag (sync-like by name, or a memcpy call of a
/// pageable copy), without the rest of [`launches`]: 1 B a call.
pub(crate) fn sync_flags(
    call_names: impl IntoIterator<Item = crate::model::Sym>,
    acts: impl IntoIterator<Item = Linked>,
    own: &Owners,
    names: &crate::model::Interner,
) -> Vec<bool> {
    let mut flags = NameFlags::new(names);
    let mut out: Vec<bool> = call_names
        .into_iter()
        .map(|n| flags.of(n) & NameFlags::SYNC != 0)
        .collect();
    for (a, o) in acts.into_iter().zip(own.iter()) {
        if let Some(o) = o {
            if a.code == 1 && flags.of(a.name) & NameFlags::PAGEABLE != 0 {
                if let Some(f) = out.get_mut(o as usize) {
                    *f = true;
                }
            }
        }
    }
    out
}

/// What each runtime call launched; `call_names`: each call's name, in
/// file order.
pub(crate) fn launches(
    call_names: impl IntoIterator<Item = crate::model::Sym>,
    acts: impl IntoIterator<Item = Linked>,
    own: &Owners,
    names: &crate::model::Interner,
) -> Vec<Launch> {
    let mut flags = NameFlags::new(names);
    let mut out: Vec<Launch> = call_names
        .into_iter()
        .map(|n| {
            let f = flags.of(n);
            Launch {
                graph: f & NameFlags::GRAPH != 0,
                sync: f & NameFlags::SYNC != 0,
                ..Launch::default()
            }
        })
        .collect();
    for (a, o) in acts.into_iter().zip(own.iter()) {
        let Some(o) = o else { continue };
        let l = &mut out[o as usize];
        l.acts = l.acts.saturating_add(1);
        l.gpu = l.gpu.saturating_add(a.dur);
        match a.code {
            1 => {
                l.memcpys = l.memcpys.saturating_add(1);
                // C7: a memcpy to or from pageable memory blocks the host.
                if flags.of(a.name) & NameFlags::PAGEABLE != 0 {
                    l.sync = true;
                }
            }
            2 => l.memsets = l.memsets.saturating_add(1),
            _ => {}
        }
        // O6's first activity is the earliest by (start, end, file order),
        // but only its start is kept, and that is the least start whatever
        // breaks the ties: no end per launch is needed (it was 8 B a call,
        // 2.9 MB of the finish's peak at 1.28 GB). `acts` counts this one
        // already: the first when it is 1.
        if l.acts == 1 || a.ts < l.first_ts {
            l.first_ts = a.ts;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The table against a plain map, every index form, duplicates included.
    fn check(corrs: &[Option<i128>]) {
        let (t, dup) = FirstCall::build(|| corrs.iter().copied());
        let mut want: HashMap<i128, u32> = HashMap::new();
        let mut want_dup = 0;
        for (i, c) in corrs.iter().enumerate() {
            if let Some(c) = c {
                if want.contains_key(c) {
                    want_dup += 1;
                } else {
                    want.insert(*c, i as u32);
                }
            }
        }
        assert_eq!(dup, want_dup);
        let probes = corrs
            .iter()
            .flatten()
            .flat_map(|&c| [c.saturating_sub(1), c, c.saturating_add(1)])
            .chain([
                i64::MIN.into(),
                i64::MAX.into(),
                0,
                -1,
                i128::MIN,
                i128::MAX,
            ]);
        for c in probes {
            assert_eq!(t.get(c), want.get(&c).copied(), "corr {c}");
        }
    }

    #[test]
    fn first_call_agrees_with_a_map() {
        check(&[]);
        check(&[None, None]);
        check(&[Some(5), Some(7), None, Some(5), Some(6)]);
        let (min, max) = (i128::from(i64::MIN), i128::from(i64::MAX));
        check(&[Some(-3), Some(min), Some(max), Some(-3)]);
        check(&[Some(max), Some(max - 1), Some(max)]);
        check(&[Some(min), Some(min + 2)]);
        // Issue 59: ids past u64 (2⁶⁴ + 5 and its neighbours) and at
        // i128's ends, a span i128 cannot hold.
        let wide = (1i128 << 64) + 5;
        check(&[Some(wide), Some(wide + 1), Some(5), Some(wide)]);
        check(&[Some(i128::MIN), Some(i128::MAX), Some(0), Some(i128::MAX)]);
        // Sparse (a sorted list), one in 18 (buckets, vLLM's spread), dense.
        for step in [100_000, 18, 1] {
            let ids: Vec<Option<i128>> = (0..5000)
                .map(|i| Some(100 + step * ((i * 7919) % 4000)))
                .collect();
            check(&ids);
        }
    }
}
