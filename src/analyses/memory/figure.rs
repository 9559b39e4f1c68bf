//! Figure 13, `batch`'s memory timeline: one panel per (trace, device),
//! allocated bytes (solid, the mode's colour) and reserved bytes (dashed)
//! over the time since the device's first `[memory]` event, each step's
//! start as a faint tick at the bottom, the peak marked and labelled.
//!
//! ```text
//!  MiB │        ● peak 96.6 MiB
//!      │   ┌────┘└──┐    ┌──┐        reserved - - - - - - - -
//!      │───┘        └────┘  └───     allocated ───
//!      └─┴────┴────┴────┴────┴──── ms since the first event
//!        step starts (ticks)
//! ```

use super::{DeviceMemory, TraceMemory};
use crate::plot::common::*;
use crate::plot::{Picture, PlotError};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// The most panels drawn (the CSV has every device).
const MAX_PANELS: usize = 12;

/// One panel's data.
#[derive(Debug, Clone)]
struct Panel {
    title: String,
    mode: Option<String>,
    /// (ms since the first event, allocated bytes, reserved bytes).
    points: Vec<(f64, f64, Option<f64>)>,
    steps: Vec<f64>,
    peak: (f64, f64),
}

/// The figure's data, taken from the campaign's traces.
pub(crate) struct MemoryFigure {
    panels: Vec<Panel>,
}

/// The unit a panel's axis is drawn in: the largest of B, KiB, MiB, GiB
/// that its largest value reaches.
fn unit(max_bytes: f64) -> (f64, &'static str) {
    [
        (1_073_741_824.0, "GiB"),
        (1_048_576.0, "MiB"),
        (1024.0, "KiB"),
    ]
    .into_iter()
    .find(|&(u, _)| max_bytes >= u)
    .unwrap_or((1.0, "B"))
}

impl MemoryFigure {
    /// GPU devices first, then the others, in trace order; at most
    /// [`MAX_PANELS`].
    pub(crate) fn of(traces: &[(&str, Option<String>, &TraceMemory)]) -> MemoryFigure {
        let mut all: Vec<(bool, Panel)> = Vec::new();
        for (path, mode, m) in traces {
            for d in &m.devices {
                if d.timeline.is_empty() {
                    continue;
                }
                all.push((d.device_type == 0, panel(path, mode.clone(), d)));
            }
        }
        all.sort_by_key(|(cpu, _)| *cpu);
        MemoryFigure {
            panels: all.into_iter().map(|(_, p)| p).take(MAX_PANELS).collect(),
        }
    }
}

fn panel(path: &str, mode: Option<String>, d: &DeviceMemory) -> Panel {
    let t0 = d.first_ts_ns;
    let ms = |ts: i64| (i128::from(ts) - i128::from(t0)) as f64 / 1e6;
    Panel {
        title: format!("{} · {}", crate::views::short(path), d.device),
        mode,
        points: d
            .timeline
            .iter()
            .map(|p| {
                (
                    ms(p.ts_ns),
                    p.allocated_bytes as f64,
                    p.reserved_bytes.map(|r| r as f64),
                )
            })
            .collect(),
        steps: d
            .steps
            .iter()
            .map(|s| ms(s.start_ns))
            .filter(|&x| x >= 0.0)
            .collect(),
        peak: (ms(d.peak_ts_ns), d.peak_allocated_bytes as f64),
    }
}

/// A level holds until the next point: each point's value drawn flat to
/// the next point's time, then up or down (a step line, never a slope that
/// would show levels the allocator never had).
fn stepped(points: impl IntoIterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (x, y) in points {
        if let Some(&(_, prev)) = out.last() {
            out.push((x, prev));
        }
        out.push((x, y));
    }
    out
}

impl Picture for MemoryFigure {
    fn stem(&self) -> &str {
        super::batch::FIGURE
    }
    fn render(&self, path: &Path, size: (u32, u32)) -> Result<(), PlotError> {
        crate::plot::render_file(path, size, |a| draw(a, self), |a| draw(a, self))
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, f: &MemoryFigure) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = Theme::new(root.dim_in_pixel());
    let legend = vec![
        LegendItem::new(Mark::Dot(AR_BLUE), "AR: allocated"),
        LegendItem::new(Mark::Dot(MTP_ORANGE), "MTP: allocated"),
        LegendItem::new(Mark::Dashed(MUTED), "reserved"),
        LegendItem::new(Mark::Dot(INK), "peak"),
    ];
    let area = frame(
        root,
        &th,
        "Memory over time: allocated and reserved bytes per device",
        "from the [memory] events (profile_memory=True) · each point the largest level of its time slice · \
         ticks at the bottom: step starts",
        &legend,
    )?;
    if f.panels.is_empty() {
        return empty_state(
            &area,
            &th,
            "no [memory] events",
            "record with profile_memory=True (see `torchtrace memory`)",
        );
    }
    let n = f.panels.len();
    let cols = if n <= 1 {
        1
    } else if n <= 4 {
        2
    } else {
        3
    };
    let rows = n.div_ceil(cols);
    let cells = area.split_evenly((rows, cols));
    for (p, cell) in f.panels.iter().zip(&cells) {
        draw_panel(cell, p, &th)?;
    }
    Ok(())
}

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &Panel, th: &Theme) -> FigResult
where
    DB::ErrorType: 'static,
{
    let top = p
        .points
        .iter()
        .map(|q| q.1.max(q.2.unwrap_or(0.0)))
        .fold(0.0, f64::max);
    let (scale, name) = unit(top);
    let x1 = p.points.iter().map(|q| q.0).fold(0.0, f64::max).max(1e-3);
    let y1 = (top / scale).max(1e-3) * 1.15;
    let col = mode_color(p.mode.as_deref());
    let mut chart = ChartBuilder::on(area)
        .margin(th.px(10.0))
        .caption(&p.title, th.small())
        .x_label_area_size(th.px(34.0))
        .y_label_area_size(th.px(56.0))
        .build_cartesian_2d(0.0..x1 * 1.02, 0.0..y1)?;
    chart
        .configure_mesh()
        .x_desc("ms since the first event")
        .y_desc(name)
        .x_label_formatter(&|v| sig(*v))
        .y_label_formatter(&|v| sig(*v))
        .house(th)
        .draw()?;
    chart.draw_series(p.steps.iter().map(|&x| {
        PathElement::new(
            vec![(x, 0.0), (x, y1 * 0.04)],
            RGBColor(170, 170, 170).stroke_width(th.upx(1.0)),
        )
    }))?;
    let reserved: Vec<(f64, f64)> = stepped(
        p.points
            .iter()
            .filter_map(|q| q.2.map(|r| (q.0, r / scale))),
    );
    if !reserved.is_empty() {
        chart.draw_series(DashedLineSeries::new(
            reserved,
            th.px(6.0) as u32,
            th.px(4.0) as u32,
            MUTED.stroke_width(th.upx(1.2)),
        ))?;
    }
    chart.draw_series(LineSeries::new(
        stepped(p.points.iter().map(|q| (q.0, q.1 / scale))),
        col.stroke_width(th.upx(1.8)),
    ))?;
    let peak = (p.peak.0, p.peak.1 / scale);
    chart.draw_series(std::iter::once(Circle::new(
        peak,
        th.upx(4.0),
        INK.filled(),
    )))?;
    // Right of the mark, or left of it in the panel's last third.
    let h = if peak.0 > x1 * 0.66 {
        HPos::Right
    } else {
        HPos::Left
    };
    chart.draw_series(std::iter::once(Text::new(
        format!("peak {} {name}", sig(peak.1)),
        (peak.0, peak.1 * 1.04),
        th.small().pos(Pos::new(h, VPos::Bottom)),
    )))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyses::memory::{Point, StepMemory};

    /// A device's timeline, steps and peak become one panel in ms and bytes;
    /// CPU panels come after GPU ones.
    #[test]
    fn panels_in_ms_and_mib_gpu_first() {
        let d = DeviceMemory {
            device: "cuda:0".into(),
            device_type: 1,
            first_ts_ns: 1_000_000,
            peak_ts_ns: 3_000_000,
            peak_allocated_bytes: 2 * 1_048_576,
            timeline: vec![
                Point {
                    ts_ns: 1_000_000,
                    allocated_bytes: 1_048_576,
                    reserved_bytes: Some(4 * 1_048_576),
                },
                Point {
                    ts_ns: 3_000_000,
                    allocated_bytes: 2 * 1_048_576,
                    reserved_bytes: None,
                },
            ],
            steps: vec![StepMemory {
                start_ns: 2_000_000,
                ..StepMemory::default()
            }],
            ..DeviceMemory::default()
        };
        let cpu = DeviceMemory {
            device: "cpu".into(),
            device_type: 0,
            timeline: d.timeline.clone(),
            ..DeviceMemory::default()
        };
        let t = TraceMemory {
            devices: vec![cpu, d],
            ..TraceMemory::default()
        };
        let f = MemoryFigure::of(&[("a/b.json.gz", Some("ar".into()), &t)]);
        assert_eq!(f.panels.len(), 2);
        let p = &f.panels[0];
        assert!(p.title.ends_with("cuda:0"), "{}", p.title);
        let m = 1_048_576.0;
        assert_eq!(
            p.points,
            vec![(0.0, m, Some(4.0 * m)), (2.0, 2.0 * m, None)]
        );
        assert_eq!((p.steps.clone(), p.peak), (vec![1.0], (2.0, 2.0 * m)));
        assert_eq!(unit(4.0 * m), (m, "MiB"));
        assert_eq!(unit(16.0), (1.0, "B"));
        assert_eq!(
            stepped([(0.0, 1.0), (2.0, 3.0)]),
            vec![(0.0, 1.0), (2.0, 1.0), (2.0, 3.0)]
        );
    }
}
