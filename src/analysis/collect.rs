//! What several analyses of a plan keep in common, collected once during
//! the one read: a [`Collector`] that an analysis asks for with a [`Use`]
//! ([`crate::analysis::Analysis::collects`]), made once per read from the
//! options of every analysis that uses it, fed every event its prefilter
//! admits, and handed sealed to their finishes ([`Collected`]). The engine
//! names no collector: the host store (`crate::hostops::store`, the
//! runtime calls, activities and host ops that `ops`, `roofline` and
//! `idle` read) is one, found by its type.
//!
//! ```text
//!  plan ─ uses (kind, options) ─► one collector per kind ─ push(event) … ─ seal
//!  finishes ─ Collected::take (each user once) ─┬─ readers: Arc (shared)
//!                                               └─ the last: the share's own Arc,
//!                                                  unique once the readers are done
//! ```

use crate::trace::{Event, EventPos, Prefilter};
use std::any::{Any, TypeId};
use std::sync::{Arc, Mutex};

/// A store several analyses read, filled during the read.
pub trait Collector: Send + 'static {
    /// The events it keeps (it must never reject one `push` needs).
    fn prefilter(&self) -> Prefilter;
    /// One event some analysis of the plan admitted.
    fn push(&mut self, ev: &Event<'_>, at: EventPos);
    /// The end of the read: what the finishes share.
    fn seal(self: Box<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// A collector made from the options of the analyses that use it.
pub trait Collects: Collector + Sized {
    /// What one analysis asks of it.
    type Options: Any + Send + Sync;
    /// The collector for a read whose analyses ask `uses`.
    fn make(uses: &[&Self::Options]) -> Self;
}

/// An analysis's use of a collector.
#[derive(Clone, Copy)]
pub struct Use {
    kind: TypeId,
    make: fn(&[Use]) -> Box<dyn Collector>,
    options: &'static (dyn Any + Send + Sync),
    /// It frees the collector's contents as it goes when it is the last
    /// to hold them: its finish runs after every other user's.
    pub consumes: bool,
}

impl std::fmt::Debug for Use {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Use")
            .field("kind", &self.kind)
            .field("consumes", &self.consumes)
            .finish()
    }
}

impl Use {
    /// A use of collector `C` with `options`.
    pub fn of<C: Collects>(options: &'static C::Options, consumes: bool) -> Use {
        Use {
            kind: TypeId::of::<C>(),
            make: make_erased::<C>,
            options,
            consumes,
        }
    }
}

fn make_erased<C: Collects>(uses: &[Use]) -> Box<dyn Collector> {
    let options: Vec<&C::Options> = uses
        .iter()
        .filter_map(|u| u.options.downcast_ref::<C::Options>())
        .collect();
    Box::new(C::make(&options))
}

/// The collectors of one read, one per kind that `uses` name.
pub(super) fn start(uses: &[Use]) -> Vec<(TypeId, usize, Box<dyn Collector>)> {
    let mut kinds: Vec<TypeId> = Vec::new();
    for u in uses {
        if !kinds.contains(&u.kind) {
            kinds.push(u.kind);
        }
    }
    kinds
        .into_iter()
        .map(|k| {
            let of_kind: Vec<Use> = uses.iter().filter(|u| u.kind == k).copied().collect();
            (k, of_kind.len(), (of_kind[0].make)(&of_kind))
        })
        .collect()
}

/// The sealed collectors of one read, as the finishes share them: each
/// user takes its kind's once ([`Collected::take`]); the last to take it
/// is given the share's own reference, so once the others are done it
/// holds the only one and may consume the contents (`Arc::try_unwrap`).
#[derive(Default)]
pub struct Collected {
    held: Mutex<Vec<Share>>,
}

struct Share {
    users: usize,
    value: Option<Arc<dyn Any + Send + Sync>>,
}

impl Collected {
    /// The sealed collectors, each with its count of users.
    pub(super) fn of(collectors: Vec<(TypeId, usize, Box<dyn Collector>)>) -> Collected {
        let held = collectors
            .into_iter()
            .map(|(_, users, c)| Share {
                users,
                value: Some(c.seal()),
            })
            .collect();
        Collected {
            held: Mutex::new(held),
        }
    }

    /// The collected `T` (what a collector sealed into), for one finish
    /// (`None`: not collected, or the last user took it).
    pub fn take<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        // Found by what it sealed into (the collector's kind may differ).
        let share = held
            .iter_mut()
            .find(|s| s.value.as_ref().is_some_and(|v| (**v).is::<T>()))?;
        share.users = share.users.saturating_sub(1);
        let value = if share.users == 0 {
            share.value.take()
        } else {
            share.value.clone()
        };
        value?.downcast::<T>().ok()
    }
}

/// The read's prefilter: the union of the step annotations', the
/// ledger's (when kept), each collector's and each analysis's.
pub(super) fn read_filter(
    with_ledger: bool,
    collectors: &[(TypeId, usize, Box<dyn Collector>)],
    stages: &[(Box<dyn super::Stage>, Option<Use>)],
) -> Prefilter {
    let base = if with_ledger {
        crate::contexts::annotation_prefilter().union(&crate::ledger::prefilter())
    } else {
        crate::contexts::annotation_prefilter()
    };
    let base = collectors
        .iter()
        .fold(base, |f, c| f.union(&c.2.prefilter()));
    stages.iter().fold(base, |f, a| f.union(&a.0.prefilter()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A collector of the events' names, its options a prefix.
    #[derive(Default)]
    struct Names(Vec<String>, Vec<&'static str>);

    impl Collector for Names {
        fn prefilter(&self) -> Prefilter {
            Prefilter::all()
        }
        fn push(&mut self, ev: &Event<'_>, _: EventPos) {
            if self.1.iter().any(|p| ev.name.starts_with(p)) {
                self.0.push(ev.name.to_string());
            }
        }
        fn seal(self: Box<Self>) -> Arc<dyn Any + Send + Sync> {
            Arc::new(self.0)
        }
    }

    impl Collects for Names {
        type Options = &'static str;
        fn make(uses: &[&&'static str]) -> Names {
            Names(Vec::new(), uses.iter().map(|u| **u).collect())
        }
    }

    static A: &str = "a";
    static B: &str = "b";

    /// One collector for two uses, made from both options; the last
    /// taker holds the only reference once the first dropped its own.
    #[test]
    fn one_collector_per_kind_the_last_taker_may_own_it() {
        let uses = [Use::of::<Names>(&A, false), Use::of::<Names>(&B, true)];
        let mut started = start(&uses);
        assert_eq!(started.len(), 1);
        assert_eq!(started[0].1, 2);
        for name in ["ab", "ba", "ca"] {
            let mut ev = Event::empty();
            ev.name = name.into();
            started[0].2.push(
                &ev,
                EventPos {
                    index: 0,
                    offset: 0,
                },
            );
        }
        let shared = Collected::of(started);
        let first = shared.take::<Vec<String>>().expect("the first user's");
        let last = shared.take::<Vec<String>>().expect("the last user's");
        assert!(shared.take::<Vec<String>>().is_none());
        assert_eq!(*last, vec!["ab".to_string(), "ba".to_string()]);
        drop(first);
        assert!(Arc::try_unwrap(last).is_ok());
        assert!(Collected::default().take::<Vec<String>>().is_none());
    }
}
