//! `ops`' record in the per-thread run store ([`crate::hostops::runs`]):
//! each host op as its start, duration and row (O1), ≈ 6–8 B an op, its
//! place among its thread's ops being the one it is read at. The store
//! keeps a thread's ops between the end of the read and the thread's
//! sweep, and reads them back in C4's key order `(ts, −end, file order)`.

use crate::hostops::runs::{self, RunRecord};
use crate::store::pack::{push_varint, unzigzag, varint, zigzag};

pub(super) use crate::hostops::runs::{prefetched, PREFETCH_MIN};

/// One thread's ops (see the module docs).
pub(super) type Thread = runs::Runs<Op>;

/// An op as the sweep reads it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Op {
    pub ts: i64,
    pub dur: i64,
    /// Its row (O1).
    pub row: u32,
    /// Its place among its thread's ops in file order (C4's last key):
    /// given on reading (ignored when kept).
    pub pos: u32,
}

/// Varints: Δts from the run's previous op, dur, row.
impl RunRecord for Op {
    type Prev = i64;
    /// Three varints.
    const MAX_BYTES: usize = 30;
    const FIRST_CHUNK: usize = 64;

    fn ts(&self) -> i64 {
        self.ts
    }

    fn dur(&self) -> i64 {
        self.dur
    }

    fn pos(&self) -> u32 {
        self.pos
    }

    #[inline]
    fn write(&self, prev: &mut i64, out: &mut Vec<u8>) {
        push_varint(out, zigzag(self.ts.wrapping_sub(*prev)));
        push_varint(out, zigzag(self.dur));
        push_varint(out, u64::from(self.row));
        *prev = self.ts;
    }

    #[inline]
    fn read(prev: &mut i64, bytes: &[u8], at: &mut usize, pos: u32) -> Op {
        let ts = prev.wrapping_add(unzigzag(varint(bytes, at)));
        let dur = unzigzag(varint(bytes, at));
        let row = varint(bytes, at) as u32;
        *prev = ts;
        Op { ts, dur, row, pos }
    }
}

impl Op {
    /// An op to keep: its place is given when it is read back.
    pub(super) fn kept(ts: i64, dur: i64, row: u32) -> Op {
        Op {
            ts,
            dur,
            row,
            pos: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The drawing of `hostops::runs`: three runs, merged in key order;
    /// equal keys keep file order; an enclosing op (earlier start or same
    /// start, later end) first.
    #[test]
    fn runs_merge_in_key_order() {
        let mut t = Thread::default();
        for (ts, dur, row) in [
            (0, 5, 0),
            (3, 1, 1),
            (7, 2, 2),
            (1, 9, 3),
            (4, 0, 4),
            (2, 1, 5),
        ] {
            t.push(&Op::kept(ts, dur, row));
        }
        assert_eq!(t.run_count(), 3);
        let rows: Vec<u32> = t.into_merged().map(|o| o.row).collect();
        assert_eq!(rows, vec![0, 3, 5, 1, 4, 2]);
        let mut t = Thread::default();
        // Same start: the longer encloses, so it comes first even when
        // written later; identical ranges keep file order.
        for (ts, dur, row) in [(5, 1, 0), (5, 3, 1), (5, 3, 2)] {
            t.push(&Op::kept(ts, dur, row));
        }
        let got: Vec<(u32, u32)> = t.into_merged().map(|o| (o.row, o.pos)).collect();
        assert_eq!(got, vec![(1, 1), (2, 2), (0, 0)]);
    }

    /// Extreme values round-trip through the record's varints.
    #[test]
    fn extremes_round_trip() {
        let mut t = Thread::default();
        let kept = [
            Op::kept(i64::MIN, i64::MAX, u32::MAX),
            Op::kept(i64::MAX, 0, 0),
            Op::kept(-1, -1, 7),
        ];
        for o in &kept {
            t.push(o);
        }
        let back: Vec<Op> = t.in_file_order().collect();
        for (p, (b, k)) in back.iter().zip(&kept).enumerate() {
            assert_eq!(
                *b,
                Op {
                    pos: p as u32,
                    ..*k
                }
            );
        }
    }
}
