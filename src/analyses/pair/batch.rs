//! `pair` in `batch` (its [`crate::campaign::InBatch::batch_section`]):
//! `workloads.csv` and `workloads.md`, Table 8 of the paper — per workload,
//! AR against the candidate mode by step contexts ([`super::compare`]) —
//! with the report's definitions before it; the same table is what
//! `batch` prints on stdout ([`crate::campaign::InBatch::batch_stdout`]), and
//! its per-trace figures are `traces.csv`'s pair columns. (Moved here from
//! `src/batch/output/workloads.rs` and `report_md.rs` unchanged: the same
//! bytes.)

use super::{compare, Pair, TracePairs};
use crate::campaign::{Campaign, Headline, InBatch, Section, SectionFile};
use crate::report::{self, Cell, Table};

/// Its entry in report.md's `Files:` line.
pub const LISTED: &str = "[workloads.csv](workloads.csv) / [workloads.md](workloads.md) (Table 8)";

/// What the report's figures mean; opens the sections of `report.md`.
const DEFINITIONS: &str = "## Definitions\n\n\
    - A step context is one CPU `user_annotation` of the selected vLLM decode step name; its GPU span is \
    max(end) − min(start) over the `gpu_user_annotation`s with the same name and External id.\n\
    - P (tokens per context) = completion tokens / paired contexts; GPU span per token = Σ GPU spans / completion tokens.\n\
    - S_context = GPU span per token (AR) / GPU span per token (MTP); context reduction = (1 − P_AR / P_MTP) × 100 %.\n\
    - Completion tokens, mode and workload come from each trace's run summary (`X.summary.json`), else \
    `--manifest`, else the step name (`generation_1(1)` → AR, `generation_1(k+1)` → MTP) for the mode and the \
    directory name for the workload; see docs/DEFINITIONS.md.\n\n";

/// The section: the definitions and Table 8 (empty too, as batch has
/// always written it), and its two files.
pub fn section(c: &Campaign<'_>) -> Option<Section> {
    let md = report::markdown::to_string(&workloads_table(c, false));
    let markdown = format!("{DEFINITIONS}## {}", md.trim_start_matches("### "));
    let files = vec![
        SectionFile {
            name: "workloads.csv".into(),
            text: report::csv::to_string(&workloads_table(c, true)),
            what: "Table 8: AR vs MTP per workload".into(),
        },
        SectionFile {
            name: "workloads.md".into(),
            text: md,
            what: "Table 8: AR vs MTP per workload".into(),
        },
    ];
    Some(Section {
        markdown,
        files,
        figures: Vec::new(),
        lead: String::new(),
    })
}

/// Table 8, for `batch`'s stdout.
pub fn headline(c: &Campaign<'_>) -> Option<Headline> {
    Some(Headline {
        human: workloads_table(c, false),
        machine: workloads_table(c, true),
    })
}

/// The headers of Table 8: snake_case with the trace paths (`machine`,
/// for CSV), else as the paper writes them.
fn heads(machine: bool) -> &'static [&'static str] {
    if machine {
        &[
            "workload",
            "baseline",
            "candidate",
            "candidate_mode",
            "ar_completion_tokens",
            "mtp_completion_tokens",
            "ar_contexts",
            "mtp_contexts",
            "ar_tokens_per_context",
            "mtp_tokens_per_context",
            "ar_cpu_span_median_ms",
            "mtp_cpu_span_median_ms",
            "ar_gpu_span_median_ms",
            "mtp_gpu_span_median_ms",
            "ar_gpu_span_per_token_ms",
            "mtp_gpu_span_per_token_ms",
            "s_context",
            "context_reduction_pct",
            "gpu_span_median_ratio",
            "cpu_span_median_ratio",
        ]
    } else {
        &[
            "Workload",
            // The candidate's mode (the baseline is AR): "Mode" alone read
            // as if each row were one mode's (issue 38).
            "Candidate mode",
            "Tokens AR",
            "Tokens MTP",
            "Contexts AR",
            "Contexts MTP",
            "Tokens/ctx AR",
            "Tokens/ctx MTP",
            "CPU span med. AR (ms)",
            "CPU span med. MTP (ms)",
            "GPU span med. AR (ms)",
            "GPU span med. MTP (ms)",
            "GPU span/token AR (ms)",
            "GPU span/token MTP (ms)",
            "S_context",
            "Context reduction (%)",
        ]
    }
}

/// Table 8 of the paper, one row per (workload, AR trace, MTP trace);
/// the human table lists the campaign's notes under it.
pub fn workloads_table(c: &Campaign<'_>, machine: bool) -> Table {
    let mut t = Table::new(
        "Table 8: AR vs MTP per workload (decode step contexts)",
        heads(machine),
    );
    for (m, a, b) in c.matched::<Pair>() {
        let cmp = compare(a, b);
        let both = |f: &dyn Fn(&TracePairs) -> Cell| [f(a), f(b)];
        let mut row = vec![Cell::text(m.workload.clone())];
        if machine {
            row.push(Cell::text(cmp.baseline.clone()));
            row.push(Cell::text(cmp.candidate.clone()));
        }
        row.push(Cell::text(m.candidate_mode.clone()));
        row.extend(both(&|p| Cell::opt_i(p.completion_tokens)));
        // The contexts measured (P's denominator): with annotations, the pairs.
        row.extend(both(&|p| p.measured.into()));
        row.extend(both(&|p| Cell::opt_f(p.tokens_per_context, 3)));
        row.extend(both(&|p| Cell::opt_f(p.cpu_span_ms.median, 3)));
        row.extend(both(&|p| Cell::opt_f(p.gpu_span_ms.median, 3)));
        row.extend(both(&|p| Cell::opt_f(p.gpu_span_per_token_ms, 4)));
        row.push(Cell::opt_f(cmp.s_context, 3));
        row.push(Cell::opt_f(cmp.context_reduction_pct, 1));
        if machine {
            row.push(Cell::opt_f(cmp.gpu_span_median_ratio, 3));
            row.push(Cell::opt_f(cmp.cpu_span_median_ratio, 3));
        }
        t.row(row);
    }
    if !machine {
        t.drop_column_if_all("Candidate mode", "mtp");
        t.notes.extend(c.notes.iter().cloned());
    }
    t
}

impl InBatch for Pair {
    const BATCH_FILES: &'static [&'static str] = &["workloads.csv", "workloads.md"];
    const LEGACY_TRACE_KEYS: bool = true;
    const BATCH_LISTED: Option<&'static str> = Some(LISTED);

    fn batch_section(c: &Campaign<'_>) -> Option<Section> {
        section(c)
    }

    fn batch_stdout(c: &Campaign<'_>) -> Option<Headline> {
        headline(c)
    }

    /// Its figures per trace, under their own keys (`contexts`, `pairs`, …):
    /// the columns marked for batch.
    fn trace_columns(_: &[&Self::Output]) -> Vec<crate::views::Column<TracePairs>> {
        super::view::columns()
            .into_iter()
            .filter(|c| c.batch)
            .collect()
    }

    /// Step names and rank: batch matches the traces that have step
    /// contexts to compare.
    fn trace_facts(p: &TracePairs) -> Option<crate::campaign::TraceFacts<'_>> {
        Some(crate::campaign::TraceFacts {
            step_names: &p.step_names,
            rank: p.meta.rank,
        })
    }

    /// The match's S_context and ratios, among the comparison's own keys.
    fn batch_compare(
        b: Option<&TracePairs>,
        c: Option<&TracePairs>,
    ) -> Option<crate::campaign::Compared> {
        Some(crate::campaign::Compared::flattened(super::compare(b?, c?)))
    }

    /// Σ GPU spans / Σ tokens of each mode, the pooled context counts and
    /// the medians over every measured context ([`super::pool`]).
    fn batch_pool(
        workload: &str,
        b: &[&TracePairs],
        c: &[&TracePairs],
    ) -> Option<crate::campaign::Pooled> {
        let b = super::pool(&format!("{workload} AR (pooled)"), b)?;
        let c = super::pool(&format!("{workload} candidate (pooled)"), c)?;
        let cmp = super::compare(&b, &c);
        let f = |v: Option<f64>, d: usize| v.map_or("n/a".into(), |x| format!("{x:.d$}"));
        let note = format!(
            "(Σ GPU spans / Σ tokens per mode): S_context {}, context reduction {} %",
            f(cmp.s_context, 3),
            f(cmp.context_reduction_pct, 1),
        );
        Some(crate::campaign::Pooled {
            figures: crate::campaign::Compared::flattened(cmp),
            note: Some(note),
        })
    }

    /// Contexts, pairs, tokens and the span medians.
    fn report_columns() -> Vec<crate::views::Column<TracePairs>> {
        super::view::report_columns()
    }
}
