//! `workloads.csv` and `workloads.md`: Table 8 of the paper, AR against
//! MTP per workload.

use crate::analyses::pair::TracePairs;
use crate::batch::BatchResult;
use crate::report::{Cell, Table};

/// Table 8 of the paper, one row per (workload, AR trace, MTP trace).
/// `machine` gives snake_case headers and the trace paths (for CSV).
pub fn workloads_table(res: &BatchResult, machine: bool) -> Table {
    let heads: &[&str] = if machine {
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
            "Mode",
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
    };
    let mut t = Table::new(
        "Table 8: AR vs MTP per workload (decode step contexts)",
        heads,
    );
    for c in &res.comparisons {
        let (Some(a), Some(m)) = (
            res.records[c.baseline_index].file.pairs(),
            res.records[c.candidate_index].file.pairs(),
        ) else {
            continue;
        };
        let both = |f: &dyn Fn(&TracePairs) -> Cell| [f(a), f(m)];
        let mut row = vec![Cell::text(c.workload.clone())];
        if machine {
            row.push(Cell::text(c.comparison.baseline.clone()));
            row.push(Cell::text(c.comparison.candidate.clone()));
        }
        row.push(Cell::text(c.candidate_mode.clone()));
        row.extend(both(&|p| Cell::opt_i(p.completion_tokens)));
        // The contexts measured (P's denominator): with annotations, the pairs.
        row.extend(both(&|p| p.measured.into()));
        row.extend(both(&|p| Cell::opt_f(p.tokens_per_context, 3)));
        row.extend(both(&|p| Cell::opt_f(p.cpu_span_ms.median, 3)));
        row.extend(both(&|p| Cell::opt_f(p.gpu_span_ms.median, 3)));
        row.extend(both(&|p| Cell::opt_f(p.gpu_span_per_token_ms, 4)));
        row.push(Cell::opt_f(c.comparison.s_context, 3));
        row.push(Cell::opt_f(c.comparison.context_reduction_pct, 1));
        if machine {
            row.push(Cell::opt_f(c.comparison.gpu_span_median_ratio, 3));
            row.push(Cell::opt_f(c.comparison.cpu_span_median_ratio, 3));
        }
        t.row(row);
    }
    if !machine {
        t.notes.extend(res.notes.iter().cloned());
    }
    t
}
