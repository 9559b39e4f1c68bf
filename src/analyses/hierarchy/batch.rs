//! `hierarchy` in `batch` (its [`crate::campaign::InBatch::batch_section`]):
//! `hierarchy.csv` and `hierarchy.md` — Table 9 of the paper (chain
//! functions, AR against MTP, [`super::compare`]) and the chain
//! containment per trace — and its `traces.csv` columns (whether the
//! chains hold, and calls and medians per chain function of the
//! campaign). (Moved here from `src/batch/output/hierarchy.rs` and
//! `traces_csv.rs` unchanged: the same bytes.)

use super::view::function_columns;
use super::{compare, FunctionStats, Hierarchy, TraceHierarchy};
use crate::campaign::{Campaign, InBatch, Section, SectionFile};
use crate::report::{self, Cell, Table};

/// Its entry in report.md's `Files:` line.
pub const LISTED: &str = "[hierarchy.csv](hierarchy.csv) / [hierarchy.md](hierarchy.md) (Table 9)";
use crate::views::Column;

/// The section: Table 9 and the containment table (empty ones too, as
/// batch has always written them), and their two files.
pub fn section(c: &Campaign<'_>) -> Option<Section> {
    let md = |t: &Table| report::markdown::to_string(t);
    let (table9, containment) = (md(&hierarchy_table(c, false)), md(&containment_table(c)));
    let markdown = format!(
        "## {}\n### {}",
        table9.trim_start_matches("### "),
        containment.trim_start_matches("### ")
    );
    let files = vec![
        SectionFile {
            name: "hierarchy.csv".into(),
            text: report::csv::to_string(&hierarchy_table(c, true)),
            what: "Table 9: chain functions, AR vs MTP".into(),
        },
        SectionFile {
            name: "hierarchy.md".into(),
            text: format!("{table9}\n{containment}"),
            what: "Table 9 and the chain containment per trace".into(),
        },
    ];
    Some(Section {
        markdown,
        files,
        figures: Vec::new(),
        lead: String::new(),
    })
}

/// The distinct chain functions over all traces, in chain order.
pub fn function_names(traces: &[&TraceHierarchy]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for h in traces {
        for f in h.chains.iter().flat_map(|c| &c.functions) {
            if !names.contains(&f.name) {
                names.push(f.name.clone());
            }
        }
    }
    names
}

/// A chain function's figures in a trace.
pub fn function<'a>(h: &'a TraceHierarchy, name: &str) -> Option<&'a FunctionStats> {
    h.chains
        .iter()
        .flat_map(|c| &c.functions)
        .find(|f| f.name == name)
}

/// `traces.csv`'s columns: whether every chain holds, the uncontained
/// children, then `batch`'s function columns for each chain function of
/// the campaign (`calls[NAME]`, …).
pub fn trace_columns(traces: &[&TraceHierarchy]) -> Vec<Column<TraceHierarchy>> {
    type H = TraceHierarchy;
    let mut cols = vec![
        Column::new("hierarchy_holds", "holds", |h: &H| {
            h.holds().to_string().into()
        }),
        Column::new("hierarchy_uncontained", "uncontained", |h: &H| {
            let links = h.chains.iter().flat_map(|c| &c.links);
            links.map(|l| l.uncontained).sum::<u64>().into()
        }),
    ];
    for n in function_names(traces) {
        for fc in function_columns().into_iter().filter(|c| c.batch) {
            let key = format!("{}[{n}]", fc.key);
            let n = n.clone();
            cols.push(Column::new(key.clone(), key, move |h: &H| {
                function(h, &n).map_or(Cell::Null, |f| fc.cell(f))
            }));
        }
    }
    cols
}

/// The headers of Table 9: snake_case with the trace paths (`machine`,
/// for CSV), else as the paper writes them.
fn heads(machine: bool) -> &'static [&'static str] {
    if machine {
        &[
            "workload",
            "baseline",
            "candidate",
            "candidate_mode",
            "function",
            "ar_calls",
            "ar_outermost_calls",
            "ar_calls_per_context",
            "ar_median_ms",
            "mtp_calls",
            "mtp_outermost_calls",
            "mtp_calls_per_context",
            "mtp_median_ms",
            "median_ratio_mtp_ar",
        ]
    } else {
        &[
            "Workload",
            "Function",
            "Calls AR",
            "Calls MTP",
            "Calls/ctx AR",
            "Calls/ctx MTP",
            "Median AR (ms)",
            "Median MTP (ms)",
            "MTP/AR",
        ]
    }
}

/// Table 9 of the paper: per workload comparison and chain function,
/// calls and median inclusive duration in AR and MTP, and MTP/AR.
pub fn hierarchy_table(c: &Campaign<'_>, machine: bool) -> Table {
    let mut t = Table::new(
        "Table 9: chain functions, calls and median inclusive duration (outermost calls)",
        heads(machine),
    );
    for (m, bh, mh) in c.matched::<Hierarchy>() {
        let cmp = compare(bh, mh);
        for fr in &cmp.functions {
            let (fa, fm) = (function(bh, &fr.name), function(mh, &fr.name));
            let mut row = vec![Cell::text(m.workload.clone())];
            if machine {
                row.push(Cell::text(c.traces[m.baseline].path));
                row.push(Cell::text(c.traces[m.candidate].path));
                row.push(Cell::text(m.candidate_mode.clone()));
            }
            row.push(Cell::text(fr.name.clone()));
            if machine {
                for f in [fa, fm] {
                    row.push(Cell::opt_i(f.map(|f| f.calls)));
                    row.push(Cell::opt_i(f.map(|f| f.outermost_calls)));
                    row.push(Cell::opt_f(f.and_then(|f| f.calls_per_context), 3));
                    row.push(Cell::opt_f(f.and_then(|f| f.median_ms), 3));
                }
            } else {
                row.push(Cell::opt_i(fa.map(|f| f.outermost_calls)));
                row.push(Cell::opt_i(fm.map(|f| f.outermost_calls)));
                row.push(Cell::opt_f(fa.and_then(|f| f.calls_per_context), 3));
                row.push(Cell::opt_f(fm.and_then(|f| f.calls_per_context), 3));
                row.push(Cell::opt_f(fa.and_then(|f| f.median_ms), 3));
                row.push(Cell::opt_f(fm.and_then(|f| f.median_ms), 3));
            }
            row.push(Cell::opt_f(fr.median_ratio, 3));
            t.row(row);
        }
    }
    if !machine {
        t.notes.push(
            "Calls are outermost calls (a function nested in itself counts once); calls/ctx per selected step context; \
             durations are inclusive (dur) medians over the outermost calls."
                .into(),
        );
    }
    t
}

/// Per trace and chain link: is every child inside a parent? Every trace
/// with figures counts, one read in part too.
pub fn containment_table(c: &Campaign<'_>) -> Table {
    let mut t = Table::new(
        "Chain containment per trace",
        &[
            "trace",
            "parent > child",
            "children",
            "contained",
            "uncontained",
            "parents without child",
            "holds",
        ],
    );
    for x in &c.traces {
        let Some(h) = x.get::<Hierarchy>() else {
            continue;
        };
        for l in h.chains.iter().flat_map(|c| &c.links) {
            t.row(vec![
                Cell::text(x.path),
                Cell::text(format!("{} > {}", l.parent, l.child)),
                l.children.into(),
                l.contained.into(),
                l.uncontained.into(),
                l.parents_without_child.into(),
                if l.holds { "yes" } else { "NO" }.into(),
            ]);
        }
    }
    t
}

impl InBatch for Hierarchy {
    const BATCH_FILES: &'static [&'static str] = &["hierarchy.csv", "hierarchy.md"];
    const LEGACY_TRACE_KEYS: bool = true;
    const BATCH_LISTED: Option<&'static str> = Some(LISTED);

    fn batch_section(c: &Campaign<'_>) -> Option<Section> {
        section(c)
    }

    /// Table 9's chains: `--chain`, else the figures' (so that Table 9 and
    /// figure 4 agree), unless the hierarchy options name their own.
    fn batch_defaults(
        campaign: &crate::campaign::CampaignOptions,
    ) -> serde_json::Map<String, serde_json::Value> {
        let chains: Vec<String> = if campaign.chains.is_empty() {
            let chains = super::DEFAULT_PLOT_CHAINS.iter();
            chains.map(|s| s.to_string()).collect()
        } else {
            campaign.chains.clone()
        };
        let mut m = serde_json::Map::new();
        m.insert("chains".into(), serde_json::json!(chains));
        m
    }

    /// One set of columns per chain function of the campaign.
    fn trace_columns(outputs: &[&TraceHierarchy]) -> Vec<Column<TraceHierarchy>> {
        trace_columns(outputs)
    }
}
