//! The correlation index: each distinct correlation id of the launch calls
//! and its rank, found without sorting the ids (they are issued in order).
//! `hostops::launch::FirstCall` indexes the runtime calls of `ops`, `idle`
//! and `export` (C3) with it too.

use super::collector::{launches_of, Collector};

/// The distinct correlation ids of the launch calls, each with its rank
/// (0, 1, … in id order), in whichever of three forms is smallest for the
/// ids' spread: a bitmap with a rank directory when the ids are dense, as
/// Kineto issues them; the ids' low bytes in buckets of 256 ids when a
/// trace keeps about one id in six or fewer (vLLM's workers keep one in
/// 18: the runtime calls between the traced ones use ids too); a sorted
/// list when they are scattered wider still.
///
/// ```text
/// ids − lo    3   7   260   300   301   700
/// Bucketed    bucket (id−lo)/256:   0       1            2
///             lows (id−lo)%256:   [3 7] [4 44 45]      [188]
///             starts:             0     2            5      6 (= len)
///             rank(301) = starts[1] + position of 45 in [4 44 45] = 2 + 2 = 4
/// ```
///
/// Sizes, n ids over a span of s: Dense 12 B per 64 of the span (3s/16);
/// Bucketed 1 B per id + 4 B per 256 of the span (n + s/64). At 800
/// copies of the benchmark trace (1.28 M ids, 18 ids of span per id)
/// Bucketed is 1.6 MB where Dense was 4.3.
#[derive(Debug)]
pub(crate) enum CorrIndex {
    /// Bit `c − lo` set for every id `c`; `ranks[w]` = set bits before word `w`.
    Dense {
        lo: i128,
        bits: Vec<u64>,
        ranks: Vec<u32>,
    },
    /// Id `c` is in bucket `(c − lo) >> 8` as the byte `(c − lo) & 255`;
    /// bucket h's bytes are `lows[starts[h]..starts[h + 1]]`, sorted and
    /// distinct.
    Bucketed {
        lo: i128,
        starts: Vec<u32>,
        lows: Vec<u8>,
    },
    /// The ids sorted (16 B each: ids are exact past i64, issue 59).
    Sorted(Vec<i128>),
}

impl CorrIndex {
    pub(super) fn of(c: &Collector) -> CorrIndex {
        let ids = || launches_of(c.launches.reader()).map(|l| l.corr);
        CorrIndex::of_ids(ids, c.corr_range, c.n_launches)
    }

    /// The index of the ids `ids()` yields (`n` of them, repeats allowed,
    /// within `range`); `ids` is called once per pass.
    pub(crate) fn of_ids<I: Iterator<Item = i128>>(
        ids: impl Fn() -> I,
        range: Option<(i128, i128)>,
        n: usize,
    ) -> CorrIndex {
        let Some((lo, hi)) = range else {
            return CorrIndex::Sorted(Vec::new());
        };
        // Wide ids (issue 59): a span past i128 is a sorted list too.
        let span = hi.checked_sub(lo).and_then(|s| s.checked_add(1));
        // At most 64 bits per launch call (plus 8 KiB): else a sorted list.
        let Some(span) = span.filter(|&s| s <= 64 * n as i128 + 65_536) else {
            let mut v: Vec<i128> = ids().collect();
            v.sort_unstable();
            v.dedup();
            return CorrIndex::Sorted(v);
        };
        let span = span as usize;
        if span.div_ceil(256) * 4 + n < span.div_ceil(64) * 12 {
            CorrIndex::bucketed(ids, lo, span, n)
        } else {
            CorrIndex::dense(ids, lo, span)
        }
    }

    /// A bit per id of the span, and the set bits before each word.
    pub(super) fn dense<I: Iterator<Item = i128>>(
        ids: impl Fn() -> I,
        lo: i128,
        span: usize,
    ) -> CorrIndex {
        let mut bits = vec![0u64; span.div_ceil(64)];
        for id in ids() {
            let k = (id - lo) as usize;
            bits[k / 64] |= 1 << (k % 64);
        }
        let mut ranks = Vec::with_capacity(bits.len());
        let mut n = 0u32;
        for w in &bits {
            ranks.push(n);
            n += w.count_ones();
        }
        CorrIndex::Dense { lo, bits, ranks }
    }

    /// Two passes: count per bucket, place each id's low byte at its
    /// bucket's cursor; then each bucket sorted and its repeats dropped,
    /// compacting in place.
    pub(super) fn bucketed<I: Iterator<Item = i128>>(
        ids: impl Fn() -> I,
        lo: i128,
        span: usize,
        n: usize,
    ) -> CorrIndex {
        let buckets = span.div_ceil(256);
        let mut starts = vec![0u32; buckets + 1];
        for id in ids() {
            starts[((id - lo) as usize >> 8) + 1] += 1;
        }
        for h in 1..starts.len() {
            starts[h] += starts[h - 1];
        }
        let mut next = starts.clone();
        let mut lows = vec![0u8; n];
        for id in ids() {
            let k = (id - lo) as usize;
            let at = &mut next[k >> 8];
            lows[*at as usize] = (k & 255) as u8;
            *at += 1;
        }
        drop(next);
        let mut kept = 0usize;
        for h in 0..buckets {
            let (from, to) = (starts[h] as usize, starts[h + 1] as usize);
            let bucket = &mut lows[from..to];
            bucket.sort_unstable();
            starts[h] = kept as u32;
            let mut last = None;
            for k in from..to {
                let b = lows[k];
                if last != Some(b) {
                    lows[kept] = b;
                    kept += 1;
                    last = Some(b);
                }
            }
        }
        starts[buckets] = kept as u32;
        lows.truncate(kept);
        lows.shrink_to_fit();
        CorrIndex::Bucketed { lo, starts, lows }
    }

    /// The rank of `corr`, if a launch call carries it.
    pub(crate) fn rank(&self, corr: i128) -> Option<u32> {
        match self {
            CorrIndex::Dense { lo, bits, ranks } => {
                let k = usize::try_from(corr.checked_sub(*lo)?).ok()?;
                let (w, b) = (*bits.get(k / 64)?, k % 64);
                (w >> b & 1 == 1).then(|| ranks[k / 64] + (w & ((1u64 << b) - 1)).count_ones())
            }
            CorrIndex::Bucketed { lo, starts, lows } => {
                let k = usize::try_from(corr.checked_sub(*lo)?).ok()?;
                let from = *starts.get(k >> 8)?;
                let to = *starts.get((k >> 8) + 1)?;
                let bucket = lows.get(from as usize..to as usize)?;
                // A bucket's lows are sorted and distinct: the id's place
                // is how many are below it, counted without branches (a
                // binary search's mispredicted steps were 45 % of the
                // ledger's build, `perf`; a bucket holds ≤ 256 bytes).
                let x = (k & 255) as u8;
                let at = bucket.iter().map(|&l| u32::from(l < x)).sum::<u32>();
                (bucket.get(at as usize) == Some(&x)).then_some(from + at)
            }
            CorrIndex::Sorted(v) => v.binary_search(&corr).ok().map(|r| r as u32),
        }
    }

    /// How many distinct ids.
    pub(crate) fn len(&self) -> usize {
        match self {
            CorrIndex::Dense { bits, ranks, .. } => ranks
                .last()
                .zip(bits.last())
                .map_or(0, |(r, w)| *r as usize + w.count_ones() as usize),
            CorrIndex::Bucketed { starts, .. } => starts.last().map_or(0, |&n| n as usize),
            CorrIndex::Sorted(v) => v.len(),
        }
    }
}
