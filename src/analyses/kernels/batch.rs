//! `kernels` in `batch` (its [`crate::campaign::InBatch::batch_section`]):
//! `gpu_work.csv` and `gpu_work.md`, and report.md's "GPU work per
//! workload by launch correlation" — per workload, AR against MTP (kernels
//! and GPU busy per token, S_context by correlation, by span and by busy time,
//! [`super::compare`]), and the whole-trace GPU timeline of each trace.
//! (Moved here from `src/batch/output/` unchanged: the same bytes.)

use super::view::TIMELINE;
use super::{compare, Kernels, TraceKernels};
use crate::campaign::{Campaign, InBatch, Section, SectionFile};
use crate::report::{self, Cell, Table};

/// The section: the tables (empty ones too, as batch has always written
/// them) and their two files.
pub fn section(c: &Campaign<'_>) -> Option<Section> {
    let md = |t: &Table| report::markdown::to_string(t);
    let markdown = format!(
        "## {}\nBy launch correlation: every launch call a step context makes (same thread, start inside it) \
         joined by `correlation` to the kernels, memcpys and memsets it caused, CUDA-graph replays included. \
         GPU busy = union of those activities; S_context (span) is Eq. 17 with every context's GPU span by correlation \
         (Table 8's S_context takes a context's GPU annotations when it has them, so the two can differ in the last \
         digits); S_context (busy) uses Σ GPU busy instead of Σ GPU span.\n\n### {}",
        md(&gpu_work_table(c, false)).trim_start_matches("### "),
        md(&timeline_table(c)).trim_start_matches("### ")
    );
    let files = vec![
        SectionFile {
            name: "gpu_work.csv".into(),
            text: report::csv::to_string(&gpu_work_table(c, true)),
            what: "GPU work per workload by launch correlation".into(),
        },
        SectionFile {
            name: "gpu_work.md".into(),
            text: format!(
                "{}\n{}",
                md(&gpu_work_table(c, false)),
                md(&timeline_table(c))
            ),
            what: "GPU work per workload and the whole-trace GPU timeline".into(),
        },
    ];
    Some(Section {
        markdown,
        files,
        figures: Vec::new(),
        lead: String::new(),
    })
}

/// One row per (workload, AR trace, MTP trace).
pub fn gpu_work_table(c: &Campaign<'_>, machine: bool) -> Table {
    let heads: &[&str] = if machine {
        &[
            "workload",
            "baseline",
            "candidate",
            "candidate_mode",
            "ar_kernels_per_token",
            "mtp_kernels_per_token",
            "ar_gpu_busy_median_ms",
            "mtp_gpu_busy_median_ms",
            "ar_gpu_span_per_token_ms",
            "mtp_gpu_span_per_token_ms",
            "ar_gpu_busy_per_token_ms",
            "mtp_gpu_busy_per_token_ms",
            "s_context_correlation",
            "s_context_busy",
            "kernels_per_token_ratio",
        ]
    } else {
        &[
            "Workload",
            "Mode",
            "Kernels/token AR",
            "Kernels/token MTP",
            "GPU busy med. AR (ms)",
            "GPU busy med. MTP (ms)",
            "GPU span/token AR (ms)",
            "GPU span/token MTP (ms)",
            "GPU busy/token AR (ms)",
            "GPU busy/token MTP (ms)",
            "S_context (span)",
            "S_context (busy)",
            "Kernels/token ratio",
        ]
    };
    let mut t = Table::new(
        "GPU work per workload by launch correlation (decode step contexts)",
        heads,
    );
    for (m, a, b) in c.matched::<Kernels>() {
        let k = compare(a, b);
        let both = |f: &dyn Fn(&TraceKernels) -> Cell| [f(a), f(b)];
        let mut row = vec![Cell::text(m.workload.clone())];
        if machine {
            row.push(Cell::text(k.baseline.clone()));
            row.push(Cell::text(k.candidate.clone()));
        }
        row.push(Cell::text(m.candidate_mode.clone()));
        row.extend(both(&|x| Cell::opt_f(x.kernels_per_token, 2)));
        row.extend(both(&|x| Cell::opt_f(x.gpu_busy_ms.median, 3)));
        row.extend(both(&|x| Cell::opt_f(x.gpu_span_per_token_ms, 4)));
        row.extend(both(&|x| Cell::opt_f(x.gpu_busy_per_token_ms, 4)));
        row.push(Cell::opt_f(k.s_context_correlation, 3));
        row.push(Cell::opt_f(k.s_context_busy, 3));
        row.push(Cell::opt_f(k.kernels_per_token_ratio, 3));
        t.row(row);
    }
    if !machine {
        t.drop_column_if_all("Mode", "mtp");
    }
    t
}

/// The whole-trace GPU timeline of every worker trace (TraceLens's
/// definitions), one row per trace (the figures are in results.json too).
/// Every trace with `kernels` figures counts, a trace read in part too.
pub fn timeline_table(c: &Campaign<'_>) -> Table {
    let mut t = Table::new(
        "Whole-trace GPU timeline",
        &[
            "Trace",
            "Total (ms)",
            "Busy (ms)",
            "Idle (ms)",
            "Compute (ms)",
            "Exposed comm. (ms)",
            "Exposed memcpy (ms)",
        ],
    );
    for x in &c.traces {
        let Some(k) = x.get::<Kernels>() else {
            continue;
        };
        let mut row = vec![Cell::text(x.path)];
        row.extend(
            TIMELINE
                .iter()
                .map(|(_, get)| Cell::opt_f(get(&k.timeline), 3)),
        );
        t.row(row);
    }
    t
}

impl InBatch for Kernels {
    const BATCH_FILES: &'static [&'static str] = &["gpu_work.csv", "gpu_work.md"];
    fn batch_section(c: &Campaign<'_>) -> Option<Section> {
        section(c)
    }

    /// The match by launch correlation (S_context by span and by GPU busy
    /// time, kernels per token ratio) under `kernels`; `null` where a side
    /// lacks the figures.
    fn batch_compare(
        b: Option<&TraceKernels>,
        c: Option<&TraceKernels>,
    ) -> Option<crate::campaign::Compared> {
        let cmp = b.zip(c).map(|(b, c)| super::compare(b, c));
        Some(crate::campaign::Compared::nested(cmp))
    }
}
