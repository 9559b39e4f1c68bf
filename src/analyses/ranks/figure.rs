//! The figure of `ranks`: for one run, a rank × decode-step heatmap of the
//! arrival delay (how late each rank came to the step's collectives, Σ
//! over them) with the flagged stragglers marked, and the wait per
//! generated token of each rank beneath it.
//!
//! ```text
//!  rank 1 │  ░  █ ░ ░  █  ░ ░    ▲ = flagged step (delay > threshold),
//!  rank 0 │ ░ ░ ░  ░ ░ ░ ░  ░      ○ = its straggler's cell
//!         └──────────────────── decode step
//!  wait per token (ms) │ ▇ rank 0   ▁ rank 1
//! ```
//!
//! The colour scale is linear from 0 to the run's largest arrival delay,
//! so one injected 5 ms stall stands out against µs-scale jitter.

use super::align::RunReport;
use crate::plot::common::*;
use crate::plot::{ImageFormat, PlotError};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// The heatmap's colour for an arrival delay `v` of at most `max`.
fn heat(v: i64, max: i64) -> RGBColor {
    let t = match max {
        m if m <= 0 => 0.0,
        m => (v.max(0) as f64 / m as f64).min(1.0),
    };
    // White → the outlier red of every figure.
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * t) as u8;
    RGBColor(
        mix(255, OUTLIER_RED.0),
        mix(255, OUTLIER_RED.1),
        mix(255, OUTLIER_RED.2),
    )
}

/// An axis tick at an integer position `v` names the rank drawn there;
/// other ticks stay blank.
fn rank_label(v: f64, ranks: &[u32]) -> String {
    let r = v.round();
    match (v - r).abs() < 1e-9 && r >= 0.0 && (r as usize) < ranks.len() {
        true => format!("rank {}", ranks[r as usize]),
        false => String::new(),
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, run: &RunReport) -> FigResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let (_, h) = root.dim_in_pixel();
    let title = format!(
        "Run {}: arrival delay per rank and decode step ({} flagged)",
        run.run,
        run.stragglers.len()
    );
    let root = root.titled(&title, (FAMILY, 18).into_font().color(&INK))?;
    let (top, bottom) = root.split_vertically(h * 62 / 100);
    let n = run.steps.len().max(1) as f64;
    let nr = run.ranks.len().max(1);
    let max = run
        .steps
        .iter()
        .flat_map(|s| s.per_rank.iter().map(|p| p.arrival_ns))
        .max()
        .unwrap_or(0);
    let ranks: Vec<u32> = run.ranks.iter().map(|r| r.rank).collect();
    let mut chart = ChartBuilder::on(&top)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .caption(
            format!(
                "colour: arrival delay, white = 0 → red = {:.3} ms; ▲ flagged (delay > {:.3} ms), ○ its straggler",
                max as f64 / 1e6,
                run.threshold.ms()
            ),
            (FAMILY, 13).into_font().color(&MUTED),
        )
        .build_cartesian_2d(0f64..n, -0.5f64..(nr as f64 + 0.3))?;
    let label = |y: &f64| rank_label(*y, &ranks);
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(format!("step: {} (aligned ordinal)", run.context))
        .x_labels((run.steps.len() + 1).min(12))
        .x_label_formatter(&|x| match (x - x.round()).abs() < 1e-9 {
            true => format!("{x:.0}"),
            false => String::new(),
        })
        .y_labels(nr * 2 + 1)
        .y_label_formatter(&label)
        .label_style((FAMILY, 13).into_font().color(&INK))
        .draw()?;
    chart.draw_series(run.steps.iter().flat_map(|s| {
        s.per_rank.iter().enumerate().map(move |(r, p)| {
            let (x, y) = (s.step as f64, r as f64);
            Rectangle::new(
                [(x, y - 0.5), (x + 1.0, y + 0.5)],
                heat(p.arrival_ns, max).filled(),
            )
        })
    }))?;
    let flagged: Vec<_> = run.steps.iter().filter(|s| s.flagged).collect();
    chart.draw_series(flagged.iter().map(|s| {
        TriangleMarker::new(
            (s.step as f64 + 0.5, nr as f64 - 0.3),
            5,
            OUTLIER_RED.filled(),
        )
    }))?;
    chart.draw_series(flagged.iter().filter_map(|s| {
        let r = ranks.iter().position(|&k| Some(k) == s.straggler)?;
        Some(Circle::new(
            (s.step as f64 + 0.5, r as f64),
            4,
            INK.stroke_width(1),
        ))
    }))?;
    draw_waits(&bottom, run)
}

/// Wait per generated token of each rank (total wait without tokens).
fn draw_waits<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, run: &RunReport) -> FigResult
where
    DB::ErrorType: 'static,
{
    let per_token = run.completion_tokens.is_some_and(|t| t > 0);
    let vals: Vec<f64> = run
        .ranks
        .iter()
        .map(|r| match per_token {
            true => r.wait_per_token_ms.unwrap_or(0.0),
            false => r.wait_ns as f64 / 1e6,
        })
        .collect();
    let top = vals.iter().copied().fold(0.0f64, f64::max).max(1e-6) * 1.15;
    let nr = vals.len().max(1);
    let desc = match per_token {
        true => "wait per generated token (ms)",
        false => "wait, Σ over decode steps (ms)",
    };
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(nr as f64 - 0.5), 0f64..top)?;
    let ranks: Vec<u32> = run.ranks.iter().map(|r| r.rank).collect();
    let label = |x: &f64| rank_label(*x, &ranks);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .x_labels(nr * 2 + 1)
        .x_label_formatter(&label)
        .y_desc(desc)
        .label_style((FAMILY, 13).into_font().color(&INK))
        .draw()?;
    chart.draw_series(vals.iter().enumerate().map(|(i, &v)| {
        let x = i as f64;
        Rectangle::new([(x - 0.3, 0.0), (x + 0.3, v)], AR_BLUE.filled())
    }))?;
    chart.draw_series(vals.iter().enumerate().map(|(i, &v)| {
        Text::new(
            format!("{v:.4}"),
            (i as f64 - 0.05, v + top * 0.06),
            (FAMILY, 12).into_font().color(&INK),
        )
    }))?;
    Ok(())
}

/// Draws one run's figure into `path` (`png` or `svg` by extension).
pub fn render_run(run: &RunReport, path: &Path, size: (u32, u32)) -> Result<(), PlotError> {
    crate::plot::render_file(path, size, |root| draw(root, run), |root| draw(root, run))
}

/// A file stem for each run: `ranks_<last part of its label>`, made
/// distinct (`_2`, `_3`, …) and safe as a file name.
pub fn stems(runs: &[RunReport]) -> Vec<String> {
    let mut seen = std::collections::HashMap::<String, usize>::new();
    runs.iter()
        .map(|r| {
            let last = Path::new(&r.run)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| r.run.clone());
            let safe: String = last
                .chars()
                .map(
                    |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        true => c,
                        false => '_',
                    },
                )
                .collect();
            let k = seen.entry(safe.clone()).or_default();
            *k += 1;
            match *k {
                1 => format!("ranks_{safe}"),
                k => format!("ranks_{safe}_{k}"),
            }
        })
        .collect()
}

/// Draws every run's figure into `dir` (created if needed); the files
/// written, in run order.
pub fn render_runs(
    runs: &[RunReport],
    dir: &Path,
    fmt: ImageFormat,
    size: (u32, u32),
) -> Result<Vec<PathBuf>, PlotError> {
    crate::plot::create_dir(dir)?;
    let mut out = Vec::new();
    for (run, stem) in runs.iter().zip(stems(runs)) {
        for ext in fmt.extensions() {
            let path = dir.join(format!("{stem}.{ext}"));
            render_run(run, &path, size)?;
            out.push(path);
        }
    }
    Ok(out)
}
