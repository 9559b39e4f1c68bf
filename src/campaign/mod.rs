//! The campaign contract: what `batch` gives an analysis and what the
//! analysis gives back, known to `batch`, the registry, the analyses and
//! the drawing kit alike, above the engine and below all of them — the
//! options that travel with a campaign ([`CampaignOptions`]), the
//! campaign as a section sees it ([`Campaign`]), the sections, figures
//! ([`Picture`]) and comparisons an analysis adds.
//!
//! The hooks an analysis implements for a campaign, one trait ([`InBatch`],
//! in the analysis's `batch.rs`). Its section of `batch`'s outputs
//! ([`InBatch::batch_section`]) — Markdown for `report.md`,
//! files beside it (CSV) and figures — from its own folder, with no edit
//! in `src/batch/`.
//!
//! ```text
//!  BatchResult ─ batch::output::sections ─ Campaign { traces, matches }
//!      │            (every registry entry with a section, in registry order)
//!      │                         ▼
//!      │          A::batch_section(&Campaign) → Option<Section>
//!      │                         │  markdown  → report.md, after its opening
//!      │                         │  files     → OUTDIR/<name> (fixed names)
//!      │                         │  figures   → OUTDIR/figures/<stem>.png|svg
//!      ▼                         ▼
//!   the fixed outputs (results.json, traces.csv' fixed columns,
//!   figures 1–6, the report's opening and closing) unchanged
//! ```
//!
//! More hooks: [`InBatch::BATCH_LISTED`] (its files' entry in report.md's
//! opening `Files:` line), [`InBatch::batch_stdout`] (what `batch` prints,
//! [`Headline`]), [`InBatch::batch_answer`] (what it prints first: the
//! answer per workload), [`InBatch::trace_columns`] (its `traces.csv` columns) and
//! [`InBatch::report_columns`] (report.md's), [`InBatch::trace_facts`]
//! (matching), [`InBatch::batch_compare`] / [`InBatch::batch_pool`]
//! (`results.json`'s comparisons), [`InBatch::batch_defaults`] (options
//! from the campaign's flags).
//!
//! A section sees the campaign as batch grouped it, not as files: every
//! worker trace with figures ([`CampaignTrace`]: read in full or in part,
//! its results, run information — mode, workload — and rank), and the
//! AR/candidate matches of each workload that Table 8 compares
//! ([`Match`], rank by rank). An analysis over groups of traces (the
//! ranks of one run, say) uses [`Campaign::groups`] instead.

mod hooks;
mod options;
mod picture;

pub use hooks::InBatch;
pub use options::CampaignOptions;
pub use picture::{Picture, PlotError};

use crate::analysis::{Analysis, Results};
use crate::runinfo::RunInfo;
use serde::ser::{Serialize, SerializeMap, Serializer};

/// One worker trace of the campaign with figures.
#[derive(Debug, Clone, Copy)]
pub struct CampaignTrace<'a> {
    /// Read without error (status ok). `false`: read in part (status
    /// error), its figures cover the events before the error; such a
    /// trace is in no match and no group.
    pub ok: bool,
    /// Its label (as `traces.csv` and `results.json` name it).
    pub path: &'a str,
    pub results: &'a Results,
    /// Mode, workload, tokens, and where each came from.
    pub run: &'a RunInfo,
    /// `rank<N>` in the vLLM file name, else the trace metadata's rank.
    pub rank: Option<i64>,
}

impl CampaignTrace<'_> {
    /// Analysis `A`'s figures of this trace (tokens set), if it ran.
    pub fn get<A: Analysis>(&self) -> Option<&A::Output> {
        self.results.get::<A>()
    }
}

/// An AR trace (baseline) matched with a trace of another mode
/// (candidate) of the same workload: Table 8's rows, one per match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    pub workload: String,
    /// The candidate's mode (`mtp`, …).
    pub candidate_mode: String,
    /// Indices into [`Campaign::traces`].
    pub baseline: usize,
    pub candidate: usize,
}

/// The traces of one (workload, mode), in path order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub workload: String,
    pub mode: String,
    /// Indices into [`Campaign::traces`].
    pub traces: Vec<usize>,
}

/// A campaign as a batch section sees it.
#[derive(Debug, Clone, Default)]
pub struct Campaign<'a> {
    /// Every worker trace with figures (read without error, or in part:
    /// [`CampaignTrace::ok`]), in path order.
    pub traces: Vec<CampaignTrace<'a>>,
    /// The AR/candidate matches, in Table 8's order.
    pub matches: Vec<Match>,
    /// What batch remarked while matching (a workload without an AR or a
    /// candidate trace, pooled figures, an unusable run summary), in the
    /// order it found them: Table 8 lists them under its rows.
    pub notes: &'a [String],
}

/// A match with both sides' figures of analysis `A`.
pub type Matched<'c, 'a, A> = (
    &'c Match,
    &'c <A as Analysis>::Output,
    &'c <A as Analysis>::Output,
);

impl<'a> Campaign<'a> {
    /// The matches whose two traces both have figures of analysis `A`:
    /// (match, baseline's, candidate's).
    pub fn matched<A: Analysis>(&self) -> Vec<Matched<'_, 'a, A>> {
        self.matches
            .iter()
            .filter_map(|m| {
                let b = self.traces.get(m.baseline)?.get::<A>()?;
                let c = self.traces.get(m.candidate)?.get::<A>()?;
                Some((m, b, c))
            })
            .collect()
    }

    /// The traces read without error that have a workload and a mode,
    /// grouped by (workload, mode) in that order.
    pub fn groups(&self) -> Vec<Group> {
        let mut by: std::collections::BTreeMap<(&str, &str), Vec<usize>> = Default::default();
        for (i, t) in self.traces.iter().enumerate().filter(|(_, t)| t.ok) {
            if let (Some(w), Some(m)) = (t.run.workload(), t.run.mode()) {
                by.entry((w, m)).or_default().push(i);
            }
        }
        by.into_iter()
            .map(|((w, m), traces)| Group {
                workload: w.to_string(),
                mode: m.to_string(),
                traces,
            })
            .collect()
    }
}

/// A file a section writes beside `report.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionFile {
    /// A fixed name (ASCII letters, digits, `_`, `-`, one `.`): never
    /// derived from an input; batch refuses other names and the names of
    /// its own files.
    pub name: String,
    pub text: String,
    /// What it holds, for the report's link (`AR vs MTP per workload`).
    pub what: String,
}

/// What an analysis adds to a campaign's outputs.
#[derive(Default)]
pub struct Section {
    /// For `report.md`: one or more `## ` sections (links to its files and
    /// figures included, so the fixed parts of the report stay as they are),
    /// placed after the report's opening in registry order.
    pub markdown: String,
    pub files: Vec<SectionFile>,
    /// Drawn into `figures/` when figures are asked for, listed with the
    /// report's other figures.
    pub figures: Vec<Box<dyn Picture>>,
    /// For report.md's opening "The answer" (issue 60: the report opens
    /// with the result): Markdown lines stating the section's main result
    /// with a link to its definitions; empty for none.
    pub lead: String,
}

impl std::fmt::Debug for Section {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stems: Vec<&str> = self.figures.iter().map(|p| p.stem()).collect();
        f.debug_struct("Section")
            .field("markdown", &self.markdown)
            .field("files", &self.files)
            .field("figures", &stems)
            .field("lead", &self.lead)
            .finish()
    }
}

/// What `batch` prints on stdout for a campaign (besides its counts and
/// failures): the first registry entry that gives one
/// ([`InBatch::batch_stdout`]) — `pair`'s Table 8.
#[derive(Debug, Clone)]
pub struct Headline {
    /// For Markdown and terminal tables.
    pub human: crate::report::Table,
    /// For CSV.
    pub machine: crate::report::Table,
}

/// What a trace's figures say of its run, for `batch`'s matching
/// ([`InBatch::trace_facts`]): the names of its step contexts
/// (its mode is read from them when nothing else gives it) and its rank.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceFacts<'a> {
    pub step_names: &'a [crate::contexts::StepName],
    /// The trace metadata's rank (a `rank<N>` file name comes first).
    pub rank: Option<i64>,
}

/// An analysis's figures of one comparison of `results.json` (an
/// AR/candidate match, [`InBatch::batch_compare`], or a
/// workload's pooled runs, [`InBatch::batch_pool`]), written
/// into the comparison's object as a trace entry has them.
#[derive(Clone)]
pub enum Compared {
    /// Under the analysis's key (`"kernels": {…}`, or `null`).
    Nested(std::sync::Arc<dyn erased_serde::Serialize + Send + Sync>),
    /// Among the comparison's own keys (`pair`'s `s_context`, …, older
    /// than the keys): a struct or map, its fields in its order.
    Flattened(std::sync::Arc<dyn erased_serde::Serialize + Send + Sync>),
}

impl Compared {
    /// `value` under the analysis's key.
    pub fn nested(value: impl Serialize + Send + Sync + 'static) -> Compared {
        Compared::Nested(std::sync::Arc::new(value))
    }

    /// `value`'s fields among the comparison's own.
    pub fn flattened(value: impl Serialize + Send + Sync + 'static) -> Compared {
        Compared::Flattened(std::sync::Arc::new(value))
    }
}

/// An analysis's figures over every run of each side of a workload
/// ([`InBatch::batch_pool`]): `results.json`'s `pooled`.
#[derive(Clone, Debug)]
pub struct Pooled {
    pub figures: Compared,
    /// What the campaign's notes say of them when a side has several runs,
    /// after "workload W: pooled over N AR and M MODE traces "
    /// (`(Σ GPU spans / Σ tokens per mode): S_context 2.450, …`).
    pub note: Option<String>,
}

/// Each analysis's figures of one comparison, in registry order, with its
/// key: written into the comparison's object (`#[serde(flatten)]`), every
/// field in its order, so the document keeps its layout.
#[derive(Clone, Default)]
pub struct Figures(pub Vec<(&'static str, Compared)>);

impl Figures {
    /// Whether no analysis gave figures.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Figures {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for (key, figures) in &self.0 {
            match figures {
                Compared::Nested(v) => m.serialize_entry(key, &**v)?,
                Compared::Flattened(v) => v.serialize(fields::Fields(&mut m))?,
            }
        }
        m.end()
    }
}

impl std::fmt::Debug for Compared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (what, v) = match self {
            Compared::Nested(v) => ("Nested", v),
            Compared::Flattened(v) => ("Flattened", v),
        };
        let json = serde_json::to_string(&**v).unwrap_or_else(|e| e.to_string());
        write!(f, "{what}({json})")
    }
}

impl std::fmt::Debug for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

mod fields {
    //! A serializer that writes a struct's (or map's) fields into a map
    //! being written — what `#[serde(flatten)]` does, for values known only
    //! at run time ([`super::Compared::Flattened`]). Anything but a struct
    //! or a map is an error.

    use serde::ser::{self, Impossible, Serialize, SerializeMap, SerializeStruct};

    pub struct Fields<'m, M>(pub &'m mut M);

    fn not_fields<E: ser::Error>() -> E {
        E::custom("flattened figures must be a struct or a map")
    }

    macro_rules! refuse {
        ($($name:ident($($t:ty),*)),* $(,)?) => {
            $(fn $name(self, $(_: $t),*) -> Result<(), M::Error> {
                Err(not_fields())
            })*
        };
    }

    impl<'m, M: SerializeMap> ser::Serializer for Fields<'m, M> {
        type Ok = ();
        type Error = M::Error;
        type SerializeSeq = Impossible<(), M::Error>;
        type SerializeTuple = Impossible<(), M::Error>;
        type SerializeTupleStruct = Impossible<(), M::Error>;
        type SerializeTupleVariant = Impossible<(), M::Error>;
        type SerializeMap = Self;
        type SerializeStruct = Self;
        type SerializeStructVariant = Impossible<(), M::Error>;

        refuse!(
            serialize_bool(bool),
            serialize_i8(i8),
            serialize_i16(i16),
            serialize_i32(i32),
            serialize_i64(i64),
            serialize_u8(u8),
            serialize_u16(u16),
            serialize_u32(u32),
            serialize_u64(u64),
            serialize_f32(f32),
            serialize_f64(f64),
            serialize_char(char),
            serialize_str(&str),
            serialize_bytes(&[u8]),
            serialize_none(),
            serialize_unit(),
            serialize_unit_struct(&'static str),
            serialize_unit_variant(&'static str, u32, &'static str),
        );

        fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> Result<(), M::Error> {
            v.serialize(self)
        }
        fn serialize_newtype_struct<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            v: &T,
        ) -> Result<(), M::Error> {
            v.serialize(self)
        }
        fn serialize_newtype_variant<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<(), M::Error> {
            Err(not_fields())
        }
        fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, M::Error> {
            Err(not_fields())
        }
        fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, M::Error> {
            Err(not_fields())
        }
        fn serialize_tuple_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleStruct, M::Error> {
            Err(not_fields())
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant, M::Error> {
            Err(not_fields())
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Self, M::Error> {
            Ok(self)
        }
        fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, M::Error> {
            Ok(self)
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant, M::Error> {
            Err(not_fields())
        }
    }

    impl<M: SerializeMap> SerializeStruct for Fields<'_, M> {
        type Ok = ();
        type Error = M::Error;
        fn serialize_field<T: ?Sized + Serialize>(
            &mut self,
            key: &'static str,
            v: &T,
        ) -> Result<(), M::Error> {
            self.0.serialize_entry(key, v)
        }
        fn end(self) -> Result<(), M::Error> {
            Ok(())
        }
    }

    impl<M: SerializeMap> SerializeMap for Fields<'_, M> {
        type Ok = ();
        type Error = M::Error;
        fn serialize_key<T: ?Sized + Serialize>(&mut self, k: &T) -> Result<(), M::Error> {
            self.0.serialize_key(k)
        }
        fn serialize_value<T: ?Sized + Serialize>(&mut self, v: &T) -> Result<(), M::Error> {
            self.0.serialize_value(v)
        }
        fn end(self) -> Result<(), M::Error> {
            Ok(())
        }
    }
}

/// Whether `name` is a name a section may write: ASCII letters, digits,
/// `_` and `-`, with at most one `.` that is neither first nor last.
pub fn safe_name(name: &str) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let (stem, ext) = name.split_once('.').unwrap_or((name, "x"));
    !stem.is_empty() && !ext.is_empty() && stem.chars().all(ok) && ext.chars().all(ok)
}

#[cfg(test)]
mod tests {
    use super::{safe_name, Compared, Figures};

    /// Nested figures go under their key, flattened ones among the
    /// object's own, in the order given and in their own field order.
    #[test]
    fn figures_are_written_nested_or_flattened_in_order() {
        #[derive(serde::Serialize)]
        struct Cmp {
            z: f64,
            a: &'static str,
        }
        #[derive(serde::Serialize)]
        struct Doc {
            workload: &'static str,
            #[serde(flatten)]
            figures: Figures,
        }
        let f = Figures(vec![
            ("pairs", Compared::flattened(Cmp { z: 2.5, a: "x" })),
            ("kernels", Compared::nested(None::<u8>)),
            ("more", Compared::nested(Cmp { z: 1.0, a: "y" })),
        ]);
        let doc = Doc {
            workload: "text",
            figures: f,
        };
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"workload":"text","z":2.5,"a":"x","kernels":null,"more":{"z":1.0,"a":"y"}}"#
        );
        let none = Doc {
            workload: "w",
            figures: Figures::default(),
        };
        assert_eq!(serde_json::to_string(&none).unwrap(), r#"{"workload":"w"}"#);
        let scalar = Figures(vec![("x", Compared::flattened(3u8))]);
        let err = serde_json::to_string(&scalar).unwrap_err().to_string();
        assert!(err.contains("must be a struct or a map"), "{err}");
    }

    #[test]
    fn only_plain_fixed_names_are_safe() {
        for ok in ["iterations.csv", "fig7_x", "a-b.md"] {
            assert!(safe_name(ok), "{ok}");
        }
        for bad in [
            "", ".csv", "a.", "../x.csv", "a/b.csv", "a.b.c", "é.csv", "a b",
        ] {
            assert!(!safe_name(bad), "{bad}");
        }
    }
}
