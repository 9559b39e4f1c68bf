//! The allocator's `[memory]` events (docs/VIEWS.md M1–M2), kept the same
//! way by the `memory` analysis and by `export`'s `memory` table: one
//! fixed 80 B record per event, the devices they name, and a device's
//! levels (the allocated bytes after each event).
//!
//! ```text
//! [memory] ts=10 Bytes=+64 Total Allocated=1064  ─► level 1064 (baseline 1064 − 64 = 1000)
//! [memory] ts=20 Bytes=+32 Total Allocated=1096  ─► level 1096
//! [memory] ts=30 Bytes=−64 (no Total Allocated)  ─► the device's levels are running sums: 64, 96, 32
//! ```

use crate::trace::{Event, EventPos};

/// The event name Kineto gives every allocator event (M1).
pub const MEMORY_EVENT: &str = "[memory]";

/// One `[memory]` event as kept (M1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocEvent {
    pub ts: i64,
    /// Its index in `traceEvents`.
    pub index: u64,
    pub bytes: i64,
    /// `Total Allocated` / `Total Reserved`; `i64::MIN`: not written.
    total_allocated: i64,
    total_reserved: i64,
    /// `Addr`; `None`: not written (the allocation cannot be followed).
    pub addr: Option<i128>,
    /// Its device's index in [`AllocEvents::devices`].
    pub device: u32,
    /// Its thread, as the keeper's lane table numbers it.
    pub lane: u32,
}

impl AllocEvent {
    pub fn total_allocated(&self) -> Option<i64> {
        (self.total_allocated != i64::MIN).then_some(self.total_allocated)
    }

    pub fn total_reserved(&self) -> Option<i64> {
        (self.total_reserved != i64::MIN).then_some(self.total_reserved)
    }
}

/// A trace's `[memory]` events, the devices they name, and what M1 left
/// out.
#[derive(Debug, Default)]
pub struct AllocEvents {
    pub events: Vec<AllocEvent>,
    /// (`Device Type`, `Device Id`) by device index.
    pub devices: Vec<(i64, i64)>,
    /// Events without `ts`, an integer `Bytes`, `Device Type` or
    /// `Device Id`, skipped; the first one's index and why.
    pub malformed: u64,
    pub first_malformed: Option<(u64, &'static str)>,
}

impl AllocEvents {
    /// M1: keeps a `[memory]` event (`lane`: its thread's number), or
    /// counts why not.
    pub fn keep(&mut self, ev: &Event<'_>, at: EventPos, lane: u32) {
        let m = &ev.args.memory;
        let why = match (ev.ts, m.bytes, m.device_type, m.device_id) {
            (None, ..) => "no ts",
            (_, None, ..) => "no integer Bytes",
            (_, _, None, _) | (_, _, _, None) => "no Device Type or Device Id",
            (Some(ts), Some(bytes), Some(t), Some(id)) => {
                let device = self.device((t, id));
                self.events.push(AllocEvent {
                    ts: ts.0,
                    index: at.index,
                    bytes,
                    total_allocated: m.total_allocated.unwrap_or(i64::MIN),
                    total_reserved: m.total_reserved.unwrap_or(i64::MIN),
                    addr: m.addr,
                    device,
                    lane,
                });
                return;
            }
        };
        self.malformed += 1;
        self.first_malformed.get_or_insert((at.index, why));
    }

    fn device(&mut self, key: (i64, i64)) -> u32 {
        match self.devices.iter().position(|&d| d == key) {
            Some(i) => i as u32,
            None => {
                self.devices.push(key);
                (self.devices.len() - 1) as u32
            }
        }
    }

    /// M1's order: by device, then `(ts, file index)`.
    pub fn sort(&mut self) {
        self.events
            .sort_unstable_by_key(|r| (r.device, r.ts, r.index));
    }

    /// Each device's events (after [`AllocEvents::sort`]): (index of the
    /// first among all, its events).
    pub fn by_device(&self) -> Vec<(usize, &[AllocEvent])> {
        let mut out = Vec::new();
        let mut lo = 0;
        let e = &self.events;
        while lo < e.len() {
            let dev = e[lo].device;
            let hi = lo + e[lo..].partition_point(|r| r.device == dev);
            out.push((lo, &e[lo..hi]));
            lo = hi;
        }
        out
    }
}

/// M2: whether every event of a device wrote `Total Allocated` (its levels
/// are the allocator's own).
pub fn absolute(recs: &[AllocEvent]) -> bool {
    recs.iter().all(|r| r.total_allocated().is_some())
}

/// M2: the level before the first event: its Total Allocated − its Bytes
/// (absolute), else 0.
pub fn start_level(recs: &[AllocEvent], absolute: bool) -> i128 {
    match recs
        .first()
        .and_then(|r| r.total_allocated().map(|t| (t, r.bytes)))
    {
        Some((t, b)) if absolute => i128::from(t) - i128::from(b),
        _ => 0,
    }
}

/// M2: the level after each event of one device (sorted).
pub fn levels(recs: &[AllocEvent], absolute: bool) -> Vec<i128> {
    let mut level = start_level(recs, absolute);
    recs.iter()
        .map(|r| {
            level = match r.total_allocated() {
                Some(t) if absolute => i128::from(t),
                _ => level + i128::from(r.bytes),
            };
            level
        })
        .collect()
}

/// M1: Kineto's device as a label: `cpu`, `cuda:<id>`, `hip:<id>`, else
/// `type<t>:<id>`.
pub fn device_label(device_type: i64, device_id: i64) -> String {
    match device_type {
        0 => "cpu".to_string(),
        1 => format!("cuda:{device_id}"),
        6 => format!("hip:{device_id}"),
        t => format!("type{t}:{device_id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: i64, bytes: i64, total: Option<i64>) -> AllocEvent {
        AllocEvent {
            ts,
            index: ts as u64,
            bytes,
            total_allocated: total.unwrap_or(i64::MIN),
            total_reserved: i64::MIN,
            addr: None,
            device: 0,
            lane: 0,
        }
    }

    /// The record's size the docs state (80 B an event).
    #[test]
    fn a_record_is_80_bytes() {
        assert_eq!(std::mem::size_of::<AllocEvent>(), 80);
    }

    /// The drawing of the module docs.
    #[test]
    fn the_drawing_of_the_module_docs() {
        let whole = [ev(10, 64, Some(1064)), ev(20, 32, Some(1096))];
        assert!(absolute(&whole));
        assert_eq!(start_level(&whole, true), 1000);
        assert_eq!(levels(&whole, true), vec![1064, 1096]);
        let cut = [whole[0], whole[1], ev(30, -64, None)];
        assert!(!absolute(&cut));
        assert_eq!(levels(&cut, false), vec![64, 96, 32]);
        assert_eq!(device_label(6, 1), "hip:1");
        assert_eq!(device_label(13, 0), "type13:0");
    }
}
