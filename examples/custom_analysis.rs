//! A user-defined analysis, written only against torchtrace's public API:
//! events per category (count, complete events, Σ duration in exact ns),
//! and per step context the GPU activities it launched, by kind — the
//! latter from the driver's launch→activity ledger, which this analysis
//! asks for and never builds itself.
//!
//! ```text
//! cargo run --release --example custom_analysis -- TRACE [--format table|json|csv|markdown]
//! ```
//!
//! This is the whole recipe of docs/ARCHITECTURE.md, "How to add an
//! analysis": a state that receives events ([`Analysis::push`]), figures
//! made at the end ([`Analysis::finish`]), run by the library's driver
//! ([`Plan`], [`analyze_path`]) and printed by its report writers
//! ([`report::render`]). An analysis of torchtrace itself is the same code
//! in `src/analyses/<name>/` plus one line in the registry.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use torchtrace::ledger::attribution::{attribute, context_queries, LaunchScope};
use torchtrace::ledger::Kind;
use torchtrace::report::{self, Cell, Format, Table};
use torchtrace::trace::{Event, EventPos, Prefilter};
use torchtrace::{analyze_path, Analysis, Finished, Need, Plan, Selector};

/// One category's events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CategoryRow {
    pub category: String,
    pub events: u64,
    /// Complete (`ph: X`) events with a start time.
    pub complete: u64,
    /// Σ `dur` of the complete events, exact ns.
    pub total_ns: i128,
}

/// The figures of one trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Categories {
    pub path: String,
    pub categories: Vec<CategoryRow>,
    /// Selected step contexts, and the kernels, memcpys and memsets their
    /// launches caused (by correlation, graph replays included).
    pub contexts: u64,
    pub context_kernels: u64,
    pub context_memcpys: u64,
    pub context_memsets: u64,
}

/// The streaming state: counts by category, nothing else kept.
#[derive(Default)]
pub struct EventsPerCategory {
    by_category: BTreeMap<String, CategoryRow>,
}

impl Analysis for EventsPerCategory {
    const NAME: &'static str = "categories";
    const KEY: &'static str = "categories";
    /// No options.
    type Config = ();
    type Output = Categories;

    fn start(_: &()) -> Self {
        EventsPerCategory::default()
    }

    /// The per-context GPU work comes from the driver's ledger.
    fn ledger(_: &()) -> Need {
        Need::Yes
    }

    /// Every event counts.
    fn prefilter(&self) -> Prefilter {
        Prefilter::all()
    }

    fn push(&mut self, ev: &Event<'_>, _at: EventPos) {
        let row = self
            .by_category
            .entry(ev.cat.to_string())
            .or_insert_with(|| CategoryRow {
                category: ev.cat.to_string(),
                ..CategoryRow::default()
            });
        row.events += 1;
        if ev.is_complete() {
            row.complete += 1;
            row.total_ns += i128::from(ev.dur_or_zero().0);
        }
    }

    fn finish(self, trace: &Finished<'_>) -> Categories {
        let mut out = Categories {
            path: trace.path.to_string(),
            categories: self.by_category.into_values().collect(),
            contexts: trace.contexts.len() as u64,
            ..Categories::default()
        };
        let Some(ledger) = trace.ledger else {
            return out;
        };
        // Each launch call in the innermost context holding it, as
        // `kernels` attributes them (launch scope resolved per context).
        let queries = context_queries(trace.steps, trace.contexts, ledger, LaunchScope::Auto);
        for work in attribute(ledger, &queries).works {
            for a in work.activities(ledger) {
                match a.kind {
                    Kind::Kernel => out.context_kernels += 1,
                    Kind::Memcpy => out.context_memcpys += 1,
                    Kind::Memset => out.context_memsets += 1,
                }
            }
        }
        out
    }
}

/// Reads `trace` once through the library's driver and returns the
/// figures with the report in `format`.
pub fn analyze(trace: &Path, format: Format) -> Result<(Categories, String), String> {
    let plan = Plan::new(Selector::Auto).with_analysis::<EventsPerCategory>(());
    let mut result = analyze_path(trace, Default::default(), &plan);
    if let Some(e) = &result.error {
        return Err(e.to_string());
    }
    let figures = result
        .take::<EventsPerCategory>()
        .ok_or("the analysis did not run")?;
    let mut table = Table::new(
        format!("{}: events per category", figures.path),
        &["category", "events", "complete", "total_ms"],
    );
    for r in &figures.categories {
        table.row(vec![
            Cell::text(r.category.clone()),
            r.events.into(),
            r.complete.into(),
            Cell::opt_f(Some(r.total_ns as f64 / 1e6), 3),
        ]);
    }
    let mut work = Table::new(
        format!(
            "{}: GPU work of the {} step contexts",
            figures.path, figures.contexts
        ),
        &["kernels", "memcpys", "memsets"],
    );
    work.row(vec![
        figures.context_kernels.into(),
        figures.context_memcpys.into(),
        figures.context_memsets.into(),
    ]);
    let tables = [table, work];
    let mut text = Vec::new();
    report::render(&mut text, format, &figures, &tables, &tables).map_err(|e| e.to_string())?;
    let text = String::from_utf8(text).map_err(|e| e.to_string())?;
    Ok((figures, text))
}

/// `TRACE [--format F]`.
fn parse(args: &[String]) -> Result<(String, Format), String> {
    let usage = "usage: custom_analysis TRACE [--format table|json|csv|markdown]";
    let mut trace = None;
    let mut format = Format::Table;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--format" | "-f" => {
                format = match it.next().map(String::as_str) {
                    Some("table") => Format::Table,
                    Some("json") => Format::Json,
                    Some("csv") => Format::Csv,
                    Some("markdown") => Format::Markdown,
                    _ => return Err(usage.into()),
                }
            }
            "-h" | "--help" => return Err(usage.into()),
            _ if trace.is_none() => trace = Some(a.clone()),
            _ => return Err(usage.into()),
        }
    }
    Ok((trace.ok_or(usage)?, format))
}

#[allow(dead_code)] // the test includes this file for `analyze`
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let run = parse(&args).and_then(|(trace, format)| analyze(Path::new(&trace), format));
    match run {
        Ok((_, text)) => print!("{text}"),
        Err(e) => {
            eprintln!("custom_analysis: {e}");
            std::process::exit(2);
        }
    }
}
