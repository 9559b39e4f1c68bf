//! The view of `critical`'s results: the parts table (each part's Σ over
//! the closed iterations, its share of the window, its mean per decode
//! iteration and per token), the activities on the paths, every
//! iteration's row, and with two traces (AR first) the comparison part by
//! part; [`CriticalReport`] is the document it prints (JSON keys as
//! VIEWS.md P1–P6).

use super::{Critical, CriticalSpec, PartSums, TraceCritical, PART_NAMES};
use crate::command::{self, ApiError, Command, Document, Said, TraceOutcome};
use crate::contexts::{Contexts, Selector};
use crate::report::{self, Cell, Format, Table};
use crate::stats::ratios::{mean6, pct};
use serde::{Deserialize, Serialize};
use std::io::{self, Write};

/// The document `critical` prints (`-f json`: every row).
#[derive(Debug, Serialize)]
pub struct CriticalReport {
    pub traces: Vec<TraceCritical>,
    /// With two traces (baseline AR first, candidate MTP).
    pub comparison: Option<Comparison>,
}

/// Two traces' parts side by side, over their decode iterations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub baseline: String,
    pub candidate: String,
    /// One per part, window first.
    pub parts: Vec<PartComparison>,
}

/// One part of a comparison: per decode iteration and per token, each
/// side and candidate − baseline (null unless both are known).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PartComparison {
    pub part: String,
    pub baseline_per_iteration_ns: Option<f64>,
    pub candidate_per_iteration_ns: Option<f64>,
    pub delta_per_iteration_ns: Option<f64>,
    pub baseline_per_token_ns: Option<f64>,
    pub candidate_per_token_ns: Option<f64>,
    pub delta_per_token_ns: Option<f64>,
}

/// An exact fraction `num / den` (den > 0).
type Frac = Option<(i128, i128)>;

/// The mean of each part over the closed decode iterations, exact.
fn per_iteration_frac(s: &PartSums) -> [Frac; 5] {
    let n = i128::from(s.iterations);
    s.values().map(|v| (n > 0).then_some((v, n)))
}

/// Each part per token (P6), exact: Σ × decode iterations ÷ (closed
/// decode iterations × tokens).
fn per_token_frac(t: &TraceCritical) -> [Frac; 5] {
    let d = &t.decode;
    let den = t
        .completion_tokens
        .and_then(|tok| i128::from(tok).checked_mul(i128::from(d.iterations)))
        .filter(|&den| den > 0);
    let n = i128::from(t.decode_iterations);
    d.values()
        .map(|v| den.and_then(|den| Some((v.checked_mul(n)?, den))))
}

/// A fraction rounded to 6 decimals (half to even).
fn round(f: Frac) -> Option<f64> {
    f.and_then(|(n, d)| mean6(n, d))
}

/// candidate − baseline of two fractions, exact before the one rounding;
/// null when a side is unknown or the cross products pass i128.
fn delta(b: Frac, c: Frac) -> Option<f64> {
    let ((bn, bd), (cn, cd)) = (b?, c?);
    let num = cn.checked_mul(bd)?.checked_sub(bn.checked_mul(cd)?)?;
    mean6(num, bd.checked_mul(cd)?)
}

/// The mean of each part over the closed decode iterations (6 decimals).
fn per_iteration(s: &PartSums) -> [Option<f64>; 5] {
    per_iteration_frac(s).map(round)
}

/// The comparison of a baseline and a candidate, part by part.
pub fn compare(b: &TraceCritical, c: &TraceCritical) -> Comparison {
    let (bi, ci) = (per_iteration_frac(&b.decode), per_iteration_frac(&c.decode));
    let (bt, ct) = (per_token_frac(b), per_token_frac(c));
    let parts = (0..5)
        .map(|k| PartComparison {
            part: PART_NAMES[k].to_string(),
            baseline_per_iteration_ns: round(bi[k]),
            candidate_per_iteration_ns: round(ci[k]),
            delta_per_iteration_ns: delta(bi[k], ci[k]),
            baseline_per_token_ns: b.per_token.values()[k],
            candidate_per_token_ns: c.per_token.values()[k],
            delta_per_token_ns: delta(bt[k], ct[k]),
        })
        .collect();
    Comparison {
        baseline: b.path.clone(),
        candidate: c.path.clone(),
        parts,
    }
}

impl CriticalReport {
    pub fn new(traces: Vec<TraceCritical>) -> Self {
        let comparison = (traces.len() == 2).then(|| compare(&traces[0], &traces[1]));
        CriticalReport { traces, comparison }
    }

    /// `rows`: the table lists every iteration (`--per-iteration`).
    pub fn write<W: Write>(&self, out: &mut W, format: Format, rows: bool) -> io::Result<()> {
        match format {
            Format::Json => report::json::write(out, self),
            Format::Csv => report::render(out, format, &(), &[], &tables(self, true, false)),
            Format::Table | Format::Markdown => {
                report::render(out, format, &(), &tables(self, rows, true), &[])
            }
        }
    }
}

command::trace_outcome!(TraceCritical);

impl Document for CriticalReport {
    fn write_to(&self, out: &mut dyn Write, format: Format, rows: bool) -> io::Result<()> {
        let mut out = out;
        self.write(&mut out, format, rows)
    }
    fn json_value(&self, _rows: bool) -> Result<serde_json::Value, ApiError> {
        // Through the text: a sum past u64 has no `Value` of its own.
        let text = serde_json::to_string(self).map_err(|e| ApiError::Json(io::Error::other(e)))?;
        serde_json::from_str(&text).map_err(|e| ApiError::Json(io::Error::other(e)))
    }
    fn outcomes(&self) -> Vec<&dyn TraceOutcome> {
        command::outcomes(&self.traces)
    }
}

/// `torchtrace critical`: one or more traces (two: AR first, compared).
impl Command for Critical {
    type Options = CriticalSpec;
    type Report = CriticalReport;

    fn configure(options: &CriticalSpec, _: &Selector) -> Result<CriticalSpec, ApiError> {
        Ok(options.clone())
    }

    /// A trace without a closed iteration has no path (exit 1).
    fn said(t: &TraceCritical, _contexts: &Contexts) -> Said {
        let mut problems = Vec::new();
        let mut notes = command::path_notes(&t.path, &t.notes);
        if t.complete && t.closed.iterations == 0 {
            notes.retain(|n| {
                !n.contains("no step annotations") && !n.contains("no closed iteration")
            });
            problems.push(format!(
                "{}: no closed iteration (step annotations, each up to the next on its thread): no path to walk",
                t.path
            ));
        }
        Said { problems, notes }
    }

    fn report(outputs: Vec<TraceCritical>, _: &Self::Config) -> CriticalReport {
        CriticalReport::new(outputs)
    }
}

/// Every table: parts, on the path, rows (`rows`), comparison. `human`:
/// short paths.
fn tables(r: &CriticalReport, rows: bool, human: bool) -> Vec<Table> {
    let label = |p: &str| {
        if human {
            crate::views::short(p)
        } else {
            p.to_string()
        }
    };
    let mut parts = Table::new(
        "critical: what set each iteration's length (P2–P6; ns)",
        &[
            "trace",
            "part",
            "closed iterations Σ",
            "% of window",
            "per decode iteration",
            "per token",
        ],
    );
    let mut on = Table::new(
        "critical: activities on the paths (own time; P4)",
        &[
            "trace",
            "kind",
            "name",
            "ns",
            "% of gpu part",
            "times on a path",
        ],
    );
    let mut each = Table::new(
        "critical: per iteration (P6; the open last iteration is null)",
        &[
            "trace",
            "step",
            "name",
            "decode",
            "start_ns",
            "window_ns",
            "host_ns",
            "launch_ns",
            "gpu_ns",
            "sync_ns",
            "activities",
            "launches",
            "syncs",
        ],
    );
    for t in &r.traces {
        let path = label(&t.path);
        let sums = t.closed.values();
        let mean = per_iteration(&t.decode);
        let tok = t.per_token.values();
        for k in 0..5 {
            parts.row(vec![
                Cell::text(path.clone()),
                Cell::text(PART_NAMES[k]),
                Cell::wide(sums[k]),
                Cell::opt_f(pct(sums[k], t.closed.window_ns), 2),
                Cell::opt_f(mean[k], 1),
                Cell::opt_f(tok[k], 1),
            ]);
        }
        for o in &t.on_path {
            on.row(vec![
                Cell::text(path.clone()),
                Cell::text(o.kind.clone()),
                Cell::text(if human {
                    crate::text::ellipsize_end(&o.name, 90)
                } else {
                    o.name.clone()
                }),
                Cell::wide(o.ns),
                Cell::opt_f(pct(o.ns, t.closed.gpu_ns), 2),
                o.count.into(),
            ]);
        }
        if rows {
            iteration_rows(&mut each, &path, t);
        }
    }
    let mut out = vec![parts, on];
    if rows {
        out.push(each);
    }
    if let Some(c) = &r.comparison {
        out.push(comparison_table(c, &label));
    }
    out
}

/// The comparison of two traces, part by part.
fn comparison_table(c: &Comparison, label: &dyn Fn(&str) -> String) -> Table {
    let mut t = Table::new(
        format!(
            "critical: {} (baseline) vs {} (candidate), decode iterations (ns)",
            label(&c.baseline),
            label(&c.candidate)
        ),
        &[
            "part",
            "baseline per iteration",
            "candidate per iteration",
            "Δ per iteration",
            "baseline per token",
            "candidate per token",
            "Δ per token",
        ],
    );
    for p in &c.parts {
        t.row(vec![
            Cell::text(p.part.clone()),
            Cell::opt_f(p.baseline_per_iteration_ns, 1),
            Cell::opt_f(p.candidate_per_iteration_ns, 1),
            Cell::opt_f(p.delta_per_iteration_ns, 1),
            Cell::opt_f(p.baseline_per_token_ns, 1),
            Cell::opt_f(p.candidate_per_token_ns, 1),
            Cell::opt_f(p.delta_per_token_ns, 1),
        ]);
    }
    t
}

/// Every iteration's row of trace `t` (`--per-iteration`, CSV).
fn iteration_rows(each: &mut Table, path: &str, t: &TraceCritical) {
    for w in &t.rows {
        let opt = |v: Option<i64>| v.map_or(Cell::Null, Cell::Int);
        each.row(vec![
            Cell::text(path.to_string()),
            w.index.into(),
            Cell::text(w.name.clone()),
            Cell::text(if w.decode { "yes" } else { "no" }),
            Cell::Int(w.start_ns),
            opt(w.window_ns),
            opt(w.host_ns),
            opt(w.launch_ns),
            opt(w.gpu_ns),
            opt(w.sync_ns),
            w.activities.into(),
            w.launches.into(),
            w.syncs.into(),
        ]);
    }
}
