//! The figures of every analysis of one trace, keyed by analysis: typed
//! access for the code that knows an analysis ([`Results::get`]), and a
//! serde form for the code that does not (records, `merge`, Python), in
//! the plan's [`Order`] (the registry's, for torchtrace's plans: the
//! engine knows no list of analyses), so documents keep one key order
//! whatever order the analyses were added in.
//!
//! ```text
//!  Results [ (rank 0, "pairs", TracePairs) (rank 1, "hierarchy", TraceHierarchy) … ]
//!    get::<Pair>()      → Option<&TracePairs>       (by the analysis's type)
//!    serialize          → {"pairs": {…}, "hierarchy": {…}}   (in order)
//!    Results::seed(order) → each key decoded by its Kind (exact: no detour
//!                         through serde_json::Value, so i128 sums survive)
//! ```

use super::{Analysis, Output};
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserializer, Serialize, Serializer};
use std::any::{Any, TypeId};
use std::fmt;

/// A result of some analysis, behind a pointer.
pub trait AnyOutput: Any + fmt::Debug + Send + Sync + erased_serde::Serialize {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    fn clone_box(&self) -> Box<dyn AnyOutput>;
    fn eq_dyn(&self, other: &dyn AnyOutput) -> bool;
}

impl<T: Output> AnyOutput for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
    fn clone_box(&self) -> Box<dyn AnyOutput> {
        Box::new(self.clone())
    }
    fn eq_dyn(&self, other: &dyn AnyOutput) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

erased_serde::serialize_trait_object!(AnyOutput);

type Decode =
    fn(&mut dyn erased_serde::Deserializer<'_>) -> Result<Box<dyn AnyOutput>, erased_serde::Error>;
type SetTokens = fn(&mut dyn AnyOutput, Option<u64>, Option<&str>);
type InResultsFn = fn(&dyn AnyOutput) -> Option<super::InResults>;

/// What the engine knows of an analysis whose results it holds, without
/// its type: its name and key, and how to decode, fill and show its
/// results. An order of them ([`Plan::in_order`](super::Plan::in_order))
/// is the order of results in records and documents: the registry's, for
/// torchtrace's own plans.
#[derive(Clone, Copy)]
pub struct Kind {
    /// [`Analysis::NAME`].
    pub name: &'static str,
    /// [`Analysis::KEY`].
    pub key: &'static str,
    analysis: fn() -> TypeId,
    decode: Decode,
    set_tokens: SetTokens,
    in_results: InResultsFn,
}

impl Kind {
    /// Analysis `A`'s kind.
    pub const fn of<A: Analysis>() -> Kind {
        Kind {
            name: A::NAME,
            key: A::KEY,
            analysis: TypeId::of::<A>,
            decode: decode::<A>,
            set_tokens: set_tokens::<A>,
            in_results: in_results::<A>,
        }
    }

    /// Whether this is analysis `A`'s kind.
    pub fn is<A: Analysis>(&self) -> bool {
        (self.analysis)() == TypeId::of::<A>()
    }
}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kind")
            .field("name", &self.name)
            .field("key", &self.key)
            .finish()
    }
}

fn decode<A: Analysis>(
    d: &mut dyn erased_serde::Deserializer<'_>,
) -> Result<Box<dyn AnyOutput>, erased_serde::Error> {
    let out: A::Output = erased_serde::deserialize(d)?;
    Ok(Box::new(out))
}

fn set_tokens<A: Analysis>(out: &mut dyn AnyOutput, tokens: Option<u64>, source: Option<&str>) {
    if let Some(out) = out.as_any_mut().downcast_mut::<A::Output>() {
        A::set_tokens(out, tokens, source);
    }
}

fn in_results<A: Analysis>(out: &dyn AnyOutput) -> Option<super::InResults> {
    out.as_any().downcast_ref::<A::Output>().map(A::in_results)
}

/// An order of analyses: where each one's results sort. Analyses outside
/// it (a library user's) sort after, in the order they were added.
pub type Order = &'static [Kind];

/// One analysis's result and where it sorts.
struct Slot {
    /// Position in the order; `usize::MAX` outside it.
    rank: usize,
    kind: Kind,
    value: Box<dyn AnyOutput>,
}

impl Slot {
    fn is<A: Analysis>(&self) -> bool {
        self.kind.is::<A>()
    }
}

impl Clone for Slot {
    fn clone(&self) -> Self {
        Slot {
            rank: self.rank,
            kind: self.kind,
            value: self.value.clone_box(),
        }
    }
}

/// The results of the analyses of one trace, in the order of the plan
/// that made them ([`Plan::in_order`](super::Plan::in_order)).
#[derive(Clone, Default)]
pub struct Results {
    order: Order,
    slots: Vec<Slot>,
}

impl Results {
    /// No results yet; those put in sort in `order`.
    pub fn in_order(order: Order) -> Results {
        Results {
            order,
            slots: Vec::new(),
        }
    }

    /// Decodes results written in `order` (each key by its [`Kind`]):
    /// what `Results`' `Deserialize` does with the registry's order.
    pub fn seed(order: Order) -> ResultsSeed {
        ResultsSeed(order)
    }

    /// Puts analysis `A`'s result in (replacing an earlier one).
    pub fn insert<A: Analysis>(&mut self, out: A::Output) {
        self.slots.retain(|s| !s.is::<A>());
        let rank = self
            .order
            .iter()
            .position(Kind::is::<A>)
            .unwrap_or(usize::MAX);
        let at = self.slots.partition_point(|s| s.rank <= rank);
        let slot = Slot {
            rank,
            kind: Kind::of::<A>(),
            value: Box::new(out),
        };
        self.slots.insert(at, slot);
    }

    /// Moves `other`'s results in (replacing this one's of the same
    /// analyses), each where its order puts it; analyses outside the
    /// order after, in the order they came.
    pub fn absorb(&mut self, other: Results) {
        for slot in other.slots {
            let analysis = (slot.kind.analysis)();
            self.slots.retain(|s| (s.kind.analysis)() != analysis);
            let at = self.slots.partition_point(|s| s.rank <= slot.rank);
            self.slots.insert(at, slot);
        }
    }

    /// Analysis `A`'s result, if it ran.
    pub fn get<A: Analysis>(&self) -> Option<&A::Output> {
        self.slot::<A>()
            .and_then(|s| s.value.as_any().downcast_ref::<A::Output>())
    }

    /// Analysis `A`'s result, to change it.
    pub fn get_mut<A: Analysis>(&mut self) -> Option<&mut A::Output> {
        self.slots
            .iter_mut()
            .find(|s| s.is::<A>())
            .and_then(|s| s.value.as_any_mut().downcast_mut::<A::Output>())
    }

    /// Takes analysis `A`'s result out.
    pub fn take<A: Analysis>(&mut self) -> Option<A::Output> {
        let at = self.slots.iter().position(|s| s.is::<A>())?;
        let slot = self.slots.remove(at);
        slot.value
            .into_any()
            .downcast::<A::Output>()
            .ok()
            .map(|b| *b)
    }

    fn slot<A: Analysis>(&self) -> Option<&Slot> {
        self.slots.iter().find(|s| s.is::<A>())
    }

    /// The results as (key, result), in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &dyn AnyOutput)> {
        self.slots.iter().map(|s| (s.kind.key, &*s.value))
    }

    /// The run's completion tokens became known: every result fills its
    /// per-token figures ([`Analysis::set_tokens`]).
    pub fn set_tokens(&mut self, tokens: Option<u64>, source: Option<&str>) {
        for s in &mut self.slots {
            (s.kind.set_tokens)(&mut *s.value, tokens, source);
        }
    }

    /// Each result as a trace entry of `results.json` shows it
    /// ([`Analysis::in_results`]), with its key, in order.
    pub fn in_results(&self) -> Vec<(&'static str, super::InResults)> {
        self.each_in_results().collect()
    }

    /// [`Results::in_results`], each made only when the iterator reaches
    /// it: a writer holds one analysis's JSON value at a time (a trace of
    /// 400 k steps: 1.7 GB of values for 382 MB of text, all at once).
    pub fn each_in_results(&self) -> impl Iterator<Item = (&'static str, super::InResults)> + '_ {
        self.slots
            .iter()
            .filter_map(|s| (s.kind.in_results)(&*s.value).map(|j| (s.kind.key, j)))
    }

    /// Whether the results of the analysis with this key are here.
    pub fn contains_key(&self, key: &str) -> bool {
        self.slots.iter().any(|s| s.kind.key == key)
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// One result as a JSON value, by key (as documents and Python see it).
    pub fn json(&self, key: &str) -> Option<serde_json::Value> {
        let slot = self.slots.iter().find(|s| s.kind.key == key)?;
        serde_json::to_value(&*slot.value).ok()
    }
}

impl fmt::Debug for Results {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.slots.iter().map(|s| (s.kind.key, &s.value)))
            .finish()
    }
}

impl PartialEq for Results {
    fn eq(&self, other: &Self) -> bool {
        self.slots.len() == other.slots.len()
            && self.slots.iter().zip(&other.slots).all(|(a, b)| {
                a.rank == b.rank && a.kind.key == b.kind.key && a.value.eq_dyn(&*b.value)
            })
    }
}

impl Serialize for Results {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.slots.len()))?;
        for slot in &self.slots {
            map.serialize_entry(slot.kind.key, &*slot.value)?;
        }
        map.end()
    }
}

/// Decodes [`Results`] written in an order: each key by its [`Kind`]
/// (exact: no detour through `serde_json::Value`); a key outside the
/// order is an error. [`Results::seed`].
#[derive(Clone, Copy)]
pub struct ResultsSeed(Order);

impl<'de> DeserializeSeed<'de> for ResultsSeed {
    type Value = Results;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Results, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ResultsSeed {
    type Value = Results;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map from analysis key to its results")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Results, M::Error> {
        let order = self.0;
        let mut slots: Vec<Slot> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let Some((rank, kind)) = order.iter().enumerate().find(|(_, k)| k.key == key) else {
                let known: Vec<&str> = order.iter().map(|k| k.key).collect();
                return Err(de::Error::custom(format!(
                    "results of an unknown analysis {key:?} (this torchtrace knows {})",
                    known.join(", ")
                )));
            };
            if slots.iter().any(|s| s.rank == rank) {
                return Err(de::Error::custom(format!("results of {key:?} twice")));
            }
            let value = map.next_value_seed(Seed(kind))?;
            slots.push(Slot {
                rank,
                kind: *kind,
                value,
            });
        }
        slots.sort_by_key(|s| s.rank);
        Ok(Results { order, slots })
    }
}

/// Decodes one analysis's result with its kind.
struct Seed<'a>(&'a Kind);

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Box<dyn AnyOutput>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let mut erased = <dyn erased_serde::Deserializer>::erase(d);
        (self.0.decode)(&mut erased).map_err(de::Error::custom)
    }
}
