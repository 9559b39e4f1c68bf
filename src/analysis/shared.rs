//! The finished trace's shared slots ([`Shared`]): per-trace values built
//! once by whichever finish asks first.

use std::sync::Arc;

/// Per-trace values that several finishes need (a trace's capture
/// regions, its replays matched to them), built at most once per trace by
/// whichever finish asks first and handed to the others — the ledger's
/// pattern for what the engine does not know of, as tracing-subscriber's
/// registry keeps its layers' data. A slot is found by its value's type
/// and a key (the options it was built with); finishes running side by
/// side wait for the one building it.
///
/// ```text
///  finish kernels ─ shared(spec, load) ─┬─ slot empty: load, keep ─► Arc<Captures>
///  finish ops ───── shared(spec, load) ─┴─ slot full (or being filled: wait) ─► same Arc
/// ```
#[derive(Default)]
pub struct Shared {
    slots: std::sync::Mutex<Vec<SharedSlot>>,
    /// A finish could not get the memory it needed ([`Shared::short`]).
    short: std::sync::atomic::AtomicBool,
}

/// One slot: its key and its cell (`Arc<OnceLock<Arc<T>>>`), both typed
/// behind `Any`.
struct SharedSlot {
    key: Box<dyn std::any::Any + Send + Sync>,
    cell: Box<dyn std::any::Any + Send + Sync>,
}

impl Shared {
    /// Marks the trace as short of memory: a finish could not allocate
    /// what it needed (a fallible reservation failed) and gave up, so its
    /// figures are not to be kept. Counted as a failed allocation too,
    /// for the pool ([`crate::memory::Member::allocation_failed`]).
    pub fn short(&self) {
        self.short.store(true, std::sync::atomic::Ordering::Release);
        crate::memory::count_failed_allocation();
    }

    /// Whether a finish gave up for memory ([`Shared::short`]).
    pub fn was_short(&self) -> bool {
        self.short.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The value of type `T` made for `key`, made now by `make` if no
    /// finish made it before.
    pub fn get_or_make<K, T>(&self, key: K, make: impl FnOnce() -> T) -> Arc<T>
    where
        K: PartialEq + Send + Sync + 'static,
        T: Send + Sync + 'static,
    {
        type Cell<T> = Arc<std::sync::OnceLock<Arc<T>>>;
        let cell: Cell<T> = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            let found = slots.iter().find_map(|s| {
                let same = s.key.downcast_ref::<K>() == Some(&key);
                same.then(|| s.cell.downcast_ref::<Cell<T>>().cloned())
                    .flatten()
            });
            match found {
                Some(c) => c,
                None => {
                    let c: Cell<T> = Arc::default();
                    slots.push(SharedSlot {
                        key: Box::new(key),
                        cell: Box::new(c.clone()),
                    });
                    c
                }
            }
        };
        // Outside the lock: a `make` may ask for another slot.
        cell.get_or_init(|| Arc::new(make())).clone()
    }
}
/// What a finish does when memory runs short: on the finished trace,
/// whose slots hold the mark.
impl super::Finished<'_> {
    /// A finish that could not get the memory it needed says so here and
    /// gives up: the trace's figures are then dropped and it is read again
    /// alone or reported as too large ([`Shared::short`]).
    pub fn short_of_memory(&self) {
        self.slots.short();
    }

    /// Whether `bytes` of working memory can be had now: a block of that
    /// size taken and given back at once (never touched: it costs address
    /// space for a moment, no memory). Where it cannot, the trace is short
    /// of memory ([`Finished::short_of_memory`]) and the finish should give
    /// up before it starts rather than meet the limit halfway.
    pub fn probe_memory(&self, bytes: u64) -> bool {
        let ok = usize::try_from(bytes)
            .ok()
            .is_some_and(|n| Vec::<u8>::new().try_reserve_exact(n).is_ok());
        if !ok {
            self.short_of_memory();
        }
        ok
    }
}
