//! Per-context result rows kept as varint records ([`Rows`]).
//!
//! `kernels` and `iterations` give one row per step context (`--per-context`,
//! `--per-iteration`, batch's CSV files and figures). As structs those rows
//! are 160 B and 304 B, mostly small counts and nanosecond values in i64 and
//! u64 fields; a batch holds them for every trace until it writes its
//! outputs. Kept in the ledger's varint stream ([`crate::ledger::pack`]),
//! each field takes what its value needs:
//!
//! ```text
//! IterationRow  304 B  →  [Δstart flags wall busy idle counts… span | 4 × phase] ≈ 45 B
//! KernelRow     160 B  →  [Δstart cpu counts… span busy latency·2 start·2 scope] ≈ 30 B
//!   (800 sample copies, 24,000 contexts: 7.3 + 3.8 MB → 1.1 + 0.7 MB)
//! ```
//!
//! A [`Rows`] reads back exactly the rows put in (each kind's round trip is
//! tested beside it), serializes as the JSON array of the rows, and is read
//! row by row: [`Rows::iter`] decodes as it goes.

use crate::ledger::pack::{Fields, Iter, Packed, Record, Records};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Rows kept as varint records (see the module docs).
pub struct Rows<T: Record> {
    records: Records<T>,
}

impl<T: Record> Rows<T> {
    /// The rows in order, each decoded as it is reached.
    pub fn iter(&self) -> Iter<'_, T> {
        self.records.iter()
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.len() == 0
    }

    /// Row `i` (decodes the rows before it).
    pub fn get(&self, i: usize) -> Option<T> {
        self.iter().nth(i)
    }

    /// The last row.
    pub fn last(&self) -> Option<T> {
        self.iter().last()
    }

    /// Appends a row.
    pub fn push(&mut self, row: &T) {
        self.records.push(row);
    }

    /// The bytes its records hold (what the rows cost in memory).
    pub fn bytes(&self) -> usize {
        self.records.bytes()
    }

    /// Gives back the room no row will take.
    pub fn shrink(&mut self) {
        self.records.shrink();
    }
}

impl<'a, T: Record> IntoIterator for &'a Rows<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T: Record> Default for Rows<T> {
    fn default() -> Self {
        Rows {
            records: Records::default(),
        }
    }
}

impl<T: Record> Clone for Rows<T> {
    fn clone(&self) -> Self {
        Rows {
            records: self.records.clone(),
        }
    }
}

impl<T: Record + std::fmt::Debug> std::fmt::Debug for Rows<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Record + PartialEq> PartialEq for Rows<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<T: Record> FromIterator<T> for Rows<T> {
    fn from_iter<I: IntoIterator<Item = T>>(rows: I) -> Self {
        let mut out = Rows::default();
        for r in rows {
            out.push(&r);
        }
        out.shrink();
        out
    }
}

impl<T: Record> From<Vec<T>> for Rows<T> {
    fn from(rows: Vec<T>) -> Self {
        rows.into_iter().collect()
    }
}

/// As the JSON array of the rows (what a `Vec` of them gave).
impl<T: Record + Serialize> Serialize for Rows<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de, T: Record + DeserializeOwned> Deserialize<'de> for Rows<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<T>::deserialize(d).map(Rows::from)
    }
}

/// Writes unsigned counts, one varint each.
pub(crate) fn write_counts(p: &mut Packed, counts: &[u64]) {
    for &n in counts {
        p.u(n);
    }
}

/// Reads what [`write_counts`] wrote for `N` counts.
pub(crate) fn read_counts<const N: usize>(f: &mut impl Fields) -> [u64; N] {
    [(); N].map(|_| f.u())
}

/// Writes `Option<i64>`s as one presence mask (bit k: the k-th is there)
/// followed by the values present, each a delta from 0.
pub(crate) fn write_opts(p: &mut Packed, vals: &[Option<i64>]) {
    let mask = vals
        .iter()
        .enumerate()
        .fold(0u64, |m, (k, v)| m | u64::from(v.is_some()) << k);
    p.u(mask);
    for v in vals.iter().flatten() {
        p.delta(*v, 0);
    }
}

/// [`write_opts`] for i128 values (exact sums and spans past i64, issue
/// 59): the same bytes for values that fit i64.
pub(crate) fn write_wide_opts(p: &mut Packed, vals: &[Option<i128>]) {
    let mask = vals
        .iter()
        .enumerate()
        .fold(0u64, |m, (k, v)| m | u64::from(v.is_some()) << k);
    p.u(mask);
    for v in vals.iter().flatten() {
        p.delta_wide(*v, 0);
    }
}

/// Reads what [`write_wide_opts`] wrote for `N` values.
pub(crate) fn read_wide_opts<const N: usize>(f: &mut impl Fields) -> [Option<i128>; N] {
    let mask = f.u();
    std::array::from_fn(|k| (mask >> k & 1 == 1).then(|| f.delta_wide(0)))
}

/// Reads what [`write_opts`] wrote for `N` values.
pub(crate) fn read_opts<const N: usize>(f: &mut impl Fields) -> [Option<i64>; N] {
    let mask = f.u();
    std::array::from_fn(|k| (mask >> k & 1 == 1).then(|| f.delta(0)))
}

/// Writes an `Option<f64>` exactly: a half-integer (a median of integer
/// nanoseconds, what these are) as twice its value, anything else as its
/// bits.
pub(crate) fn write_f64(p: &mut Packed, v: Option<f64>) {
    match v {
        None => p.u(0),
        Some(x) => match half_integer(x) {
            Some(twice) => {
                p.u(1);
                p.delta(twice, 0);
            }
            None => {
                p.u(2);
                p.u(x.to_bits());
            }
        },
    }
}

/// Reads what [`write_f64`] wrote.
pub(crate) fn read_f64(f: &mut impl Fields) -> Option<f64> {
    match f.u() {
        0 => None,
        1 => Some(f.delta(0) as f64 / 2.0),
        _ => Some(f64::from_bits(f.u())),
    }
}

/// `2x` when it gives `x` back bit for bit (not −0.0, not beyond 2^53).
fn half_integer(x: f64) -> Option<i64> {
    const EXACT: f64 = (1u64 << 53) as f64;
    let twice = x * 2.0;
    if !(twice.is_finite() && twice.fract() == 0.0 && twice.abs() <= EXACT) {
        return None;
    }
    let t = twice as i64;
    ((t as f64 / 2.0).to_bits() == x.to_bits()).then_some(t)
}

/// Writes a string: its length, then its bytes.
pub(crate) fn write_str(p: &mut Packed, s: &str) {
    p.u(s.len() as u64);
    for b in s.bytes() {
        p.u(u64::from(b));
    }
}

/// Reads what [`write_str`] wrote (lossy only on a stream it did not write).
pub(crate) fn read_str(f: &mut impl Fields) -> String {
    let n = f.u() as usize;
    let bytes: Vec<u8> = (0..n).map(|_| f.u() as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Writes an i128 exactly: its low 64 bits as a signed delta from 0, then
/// the rest (0 for any value that fits i64: one byte).
pub(crate) fn write_i128(p: &mut Packed, v: i128) {
    let lo = v as i64;
    p.delta(lo, 0);
    p.delta((v.wrapping_sub(i128::from(lo)) >> 64) as i64, 0);
}

/// Reads what [`write_i128`] wrote.
pub(crate) fn read_i128(f: &mut impl Fields) -> i128 {
    let lo = f.delta(0);
    let hi = f.delta(0);
    (i128::from(hi) << 64).wrapping_add(i128::from(lo))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Row {
        start: i64,
        n: u64,
        opt: [Option<i64>; 3],
        med: Option<f64>,
        label: String,
    }

    impl Record for Row {
        type Prev = i64;
        const MAX_BYTES: usize = 128;

        fn write(&self, prev: &mut i64, p: &mut Packed) {
            p.delta(self.start, *prev);
            *prev = self.start;
            p.u(self.n);
            write_opts(p, &self.opt);
            write_f64(p, self.med);
            write_str(p, &self.label);
        }

        fn read(prev: &mut i64, f: &mut impl Fields) -> Row {
            let start = f.delta(*prev);
            *prev = start;
            Row {
                start,
                n: f.u(),
                opt: read_opts(f),
                med: read_f64(f),
                label: read_str(f),
            }
        }
    }

    fn f64s() -> impl Strategy<Value = Option<f64>> {
        prop_oneof![
            Just(None),
            (-1_000_000i64..1_000_000).prop_map(|t| Some(t as f64 / 2.0)),
            any::<f64>().prop_map(Some),
            Just(Some(-0.0)),
            Just(Some(f64::NAN)),
            Just(Some(1e300)),
        ]
    }

    proptest! {
        /// Any rows come back bit for bit, one by one and as JSON.
        #[test]
        fn rows_round_trip(
            rows in prop::collection::vec(
                (any::<i64>(), any::<u64>(), prop::array::uniform3(prop::option::of(any::<i64>())),
                 f64s(), "[a-zé]{0,300}"),
                0..200),
        ) {
            let rows: Vec<Row> = rows
                .into_iter()
                .map(|(start, n, opt, med, label)| Row { start, n, opt, med, label })
                .collect();
            let packed: Rows<Row> = rows.iter().cloned().collect();
            prop_assert_eq!(packed.len(), rows.len());
            let back: Vec<Row> = packed.iter().collect();
            prop_assert_eq!(back.len(), rows.len());
            for (a, b) in back.iter().zip(&rows) {
                prop_assert_eq!(a.med.map(f64::to_bits), b.med.map(f64::to_bits));
                prop_assert_eq!((a.start, a.n, a.opt, &a.label), (b.start, b.n, b.opt, &b.label));
            }
            let json = serde_json::to_string(&packed).unwrap();
            let want = serde_json::to_string(&rows).unwrap();
            prop_assert_eq!(&json, &want);
        }
    }

    proptest! {
        /// Every i128 comes back exactly; one that fits i64 in its own
        /// varint and a one-byte 0.
        #[test]
        fn i128_round_trip(v in any::<i128>(), w in any::<i64>()) {
            let mut p = Packed::default();
            p.begin(64);
            for x in [v, i128::from(w), i128::MAX, i128::MIN, 0, -1] {
                write_i128(&mut p, x);
            }
            let mut r = p.reader();
            prop_assert!(r.next_record());
            for x in [v, i128::from(w), i128::MAX, i128::MIN, 0, -1] {
                prop_assert_eq!(read_i128(&mut r), x);
            }
        }
    }

    #[test]
    fn a_median_is_kept_as_twice_its_value() {
        for x in [0.0, 0.5, -0.5, 1234.5, 4.5e15] {
            assert_eq!(half_integer(x).map(|t| t as f64 / 2.0), Some(x));
        }
        for x in [-0.0, 0.25, f64::NAN, f64::INFINITY, 1e300] {
            assert_eq!(half_integer(x), None, "{x}");
        }
    }

    #[test]
    fn json_reads_back_into_rows() {
        let rows = vec![Row {
            start: 5,
            n: 2,
            opt: [None, Some(-3), None],
            med: Some(1.5),
            label: "thread".into(),
        }];
        let json = serde_json::to_string(&rows).unwrap();
        let back: Rows<Row> = serde_json::from_str(&json).unwrap();
        assert_eq!(back.iter().collect::<Vec<_>>(), rows);
        assert_eq!(back.get(0), rows.first().cloned());
        assert_eq!(back.get(1), None);
    }
}
