//! `pair`'s figures of the paper (1, 2, 3 and 5): the step contexts'
//! spans per trace, their GPU span against context index, tokens per
//! context and GPU span per token with S_context, and CPU against GPU
//! span. Drawn on the paper figures' frame (`crate::figures`) from each
//! trace's [`TracePairs`] (tokens set).

mod distributions;
mod scatter;
mod summary;
mod timeline;

use super::{compare, Comparison, Pair, TracePairs};
use crate::figures::{Compared, Draws, PaperFigure, Prepared};
use std::ops::Deref;

impl Draws for Pair {
    const FIGURES: &'static [PaperFigure] = &[
        PaperFigure::of::<distributions::SpanDistributions>(),
        PaperFigure::of::<timeline::GpuSpanTimeline>(),
        PaperFigure::of::<summary::TokensAndSpanPerToken>(),
        PaperFigure::of::<scatter::CpuVsGpuSpan>(),
    ];

    fn plot_notes(out: &TracePairs) -> Vec<String> {
        out.notes.clone()
    }
}

/// A trace's paired contexts in ms, sorted and in context order.
#[derive(Debug, Clone, Default)]
pub struct Spans {
    /// (context index, CPU span ms, GPU span ms) over paired contexts.
    pub rows: Vec<(usize, f64, f64)>,
    pub cpu_sorted: Vec<f64>,
    pub gpu_sorted: Vec<f64>,
}

impl Spans {
    fn of(p: Option<&TracePairs>) -> Spans {
        let Some(p) = p else {
            return Spans::default();
        };
        let rows: Vec<(usize, f64, f64)> = p
            .rows
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.gpu_ns.map(|g| (i, r.cpu_ns as f64 / 1e6, g as f64 / 1e6)))
            .collect();
        let mut cpu: Vec<f64> = rows.iter().map(|r| r.1).collect();
        let mut gpu: Vec<f64> = rows.iter().map(|r| r.2).collect();
        cpu.sort_by(f64::total_cmp);
        gpu.sort_by(f64::total_cmp);
        Spans {
            rows,
            cpu_sorted: cpu,
            gpu_sorted: gpu,
        }
    }
}

/// The frame's prepared input with each trace's paired spans, measured
/// once per figure.
pub struct Data<'p> {
    prepared: &'p Prepared<'p>,
    pub spans: Vec<Spans>,
}

impl<'p> Data<'p> {
    fn new(prepared: &'p Prepared<'p>) -> Data<'p> {
        let traces = &prepared.input.traces;
        Data {
            prepared,
            spans: traces.iter().map(|t| Spans::of(t.get::<Pair>())).collect(),
        }
    }

    /// Trace `i`'s pairing, if it ran.
    fn pairs(&self, i: usize) -> Option<&'p TracePairs> {
        self.prepared.trace(i).get::<Pair>()
    }

    /// The span values that share one axis: every paired context's GPU
    /// span, and its CPU span too when `with_cpu`.
    pub fn span_values(&self, with_cpu: bool) -> Vec<f64> {
        self.spans
            .iter()
            .flat_map(|s| {
                let cpu: &[f64] = if with_cpu { &s.cpu_sorted } else { &[] };
                cpu.iter().chain(&s.gpu_sorted).copied()
            })
            .collect()
    }

    /// A group's comparison, as `pair` compares its two traces.
    fn comparison(&self, c: &Compared) -> Option<Comparison> {
        Some(compare(self.pairs(c.baseline)?, self.pairs(c.candidate)?))
    }
}

impl<'p> Deref for Data<'p> {
    type Target = Prepared<'p>;

    fn deref(&self) -> &Prepared<'p> {
        self.prepared
    }
}
