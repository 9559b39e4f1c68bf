//! `gpu_work.csv` and `gpu_work.md`: GPU work by launch correlation per
//! workload (AR against MTP: kernels and GPU busy per token, S_context by
//! span and by busy time), and the whole-trace GPU timeline of each trace.

use crate::analyses::kernels::view::TIMELINE;
use crate::analyses::kernels::TraceKernels;
use crate::batch::BatchResult;
use crate::report::{Cell, Table};

/// One row per (workload, AR trace, MTP trace).
pub fn gpu_work_table(res: &BatchResult, machine: bool) -> Table {
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
            "s_context",
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
    for c in &res.comparisons {
        let (Some(a), Some(m), Some(k)) = (
            res.records[c.baseline_index].file.kernels(),
            res.records[c.candidate_index].file.kernels(),
            c.kernels.as_ref(),
        ) else {
            continue;
        };
        let both = |f: &dyn Fn(&TraceKernels) -> Cell| [f(a), f(m)];
        let mut row = vec![Cell::text(c.workload.clone())];
        if machine {
            row.push(Cell::text(k.baseline.clone()));
            row.push(Cell::text(k.candidate.clone()));
        }
        row.push(Cell::text(c.candidate_mode.clone()));
        row.extend(both(&|x| Cell::opt_f(x.kernels_per_token, 2)));
        row.extend(both(&|x| Cell::opt_f(x.gpu_busy_ms.median, 3)));
        row.extend(both(&|x| Cell::opt_f(x.gpu_span_per_token_ms, 4)));
        row.extend(both(&|x| Cell::opt_f(x.gpu_busy_per_token_ms, 4)));
        row.push(Cell::opt_f(k.s_context, 3));
        row.push(Cell::opt_f(k.s_context_busy, 3));
        row.push(Cell::opt_f(k.kernels_per_token_ratio, 3));
        t.row(row);
    }
    t
}

/// The whole-trace GPU timeline of every worker trace (TraceLens's
/// definitions), one row per trace (the figures are in results.json too).
pub fn timeline_table(res: &BatchResult) -> Table {
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
    for r in &res.records {
        let Some(k) = r.file.kernels() else {
            continue;
        };
        let mut row = vec![Cell::text(r.file.path.clone())];
        row.extend(
            TIMELINE
                .iter()
                .map(|(_, get)| Cell::opt_f(get(&k.timeline), 3)),
        );
        t.row(row);
    }
    t
}
