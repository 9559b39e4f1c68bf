//! Shared pieces of the figures: fonts, colours, sizes, the grouping of
//! traces into workloads, the categorical trace axis, legends and titles.

use super::{PlotError, PlotInput, PlotTrace};
use crate::pair::Comparison;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::sync::OnceLock;

pub type FigResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// The family every text of the figures uses; registered with the
/// embedded DejaVu Sans.
pub const FAMILY: &str = "sans-serif";

static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
static DEJAVU_SANS_BOLD: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans-Bold.ttf");

/// Registers the embedded fonts once.
pub fn register_fonts() -> Result<(), PlotError> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE.get_or_init(|| {
        plotters::style::register_font(FAMILY, FontStyle::Normal, DEJAVU_SANS).is_ok()
            && plotters::style::register_font(FAMILY, FontStyle::Bold, DEJAVU_SANS_BOLD).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(PlotError::Font)
    }
}

/// How a trace's mode is coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ModeClass {
    /// Autoregressive decoding (the baseline).
    Ar,
    /// Speculative decoding (MTP, EAGLE, ...; the candidate).
    Mtp,
    Other,
}

/// Classifies a mode string: `ar`/`baseline` → AR; `mtp`, `eagle`, `spec…`,
/// `draft…`, `candidate` → MTP; anything else (or none) → other.
pub fn mode_class(mode: Option<&str>) -> ModeClass {
    let Some(m) = mode else {
        return ModeClass::Other;
    };
    let m = m.to_ascii_lowercase();
    match m.as_str() {
        "ar" | "baseline" | "autoregressive" => ModeClass::Ar,
        _ if m.contains("mtp")
            || m.contains("eagle")
            || m.starts_with("spec")
            || m.contains("draft")
            || m == "candidate" =>
        {
            ModeClass::Mtp
        }
        _ => ModeClass::Other,
    }
}

pub const AR_BLUE: RGBColor = RGBColor(31, 119, 180);
pub const MTP_ORANGE: RGBColor = RGBColor(255, 127, 14);
pub const OTHER_GREY: RGBColor = RGBColor(127, 127, 127);
pub const OUTLIER_RED: RGBColor = RGBColor(214, 39, 40);
pub const INK: RGBColor = RGBColor(30, 30, 30);
pub const MUTED: RGBColor = RGBColor(90, 90, 90);

/// The colour of a mode, the same in every figure.
pub fn mode_color(mode: Option<&str>) -> RGBColor {
    match mode_class(mode) {
        ModeClass::Ar => AR_BLUE,
        ModeClass::Mtp => MTP_ORANGE,
        ModeClass::Other => OTHER_GREY,
    }
}

/// A darker shade for outlines.
pub fn darker(c: RGBColor) -> RGBColor {
    RGBColor(
        (f64::from(c.0) * 0.7) as u8,
        (f64::from(c.1) * 0.7) as u8,
        (f64::from(c.2) * 0.7) as u8,
    )
}

/// Pixel sizes, scaled with the figure size (1280×800 is scale 1).
#[derive(Debug, Clone, Copy)]
pub struct Theme {
    pub s: f64,
}

impl Theme {
    pub fn new((w, h): (u32, u32)) -> Self {
        let s = (f64::from(w) / 1280.0).min(f64::from(h) / 800.0);
        Theme {
            s: s.clamp(0.55, 4.0),
        }
    }
    pub fn px(&self, v: f64) -> i32 {
        (v * self.s).round() as i32
    }
    pub fn upx(&self, v: f64) -> u32 {
        (v * self.s).round().max(1.0) as u32
    }
    pub fn text(&self, size: f64) -> TextStyle<'static> {
        TextStyle::from((FAMILY, size * self.s).into_font()).color(&INK)
    }
    pub fn bold(&self, size: f64) -> TextStyle<'static> {
        TextStyle::from((FAMILY, size * self.s, FontStyle::Bold).into_font()).color(&INK)
    }
    pub fn title(&self) -> TextStyle<'static> {
        self.bold(24.0)
    }
    pub fn caption(&self) -> TextStyle<'static> {
        self.bold(16.0)
    }
    pub fn axis(&self) -> TextStyle<'static> {
        self.text(15.0)
    }
    pub fn tick(&self) -> TextStyle<'static> {
        self.text(13.0)
    }
    pub fn small(&self) -> TextStyle<'static> {
        self.text(12.0)
    }
}

/// Traces of one workload (or one pair), drawn side by side.
#[derive(Debug, Clone)]
pub struct Group<'a> {
    pub name: String,
    /// Trace indices, AR first.
    pub members: Vec<usize>,
    pub comparison: Option<&'a Comparison>,
}

/// A trace's paired contexts in ms, sorted and in context order.
#[derive(Debug, Clone, Default)]
pub struct Spans {
    /// (context index, CPU span ms, GPU span ms) over paired contexts.
    pub rows: Vec<(usize, f64, f64)>,
    pub cpu_sorted: Vec<f64>,
    pub gpu_sorted: Vec<f64>,
}

/// The input, grouped and measured once for every figure.
pub struct Prepared<'a> {
    pub input: &'a PlotInput,
    pub theme: Theme,
    pub groups: Vec<Group<'a>>,
    pub spans: Vec<Spans>,
}

impl<'a> Prepared<'a> {
    pub fn new(input: &'a PlotInput, size: (u32, u32)) -> Self {
        Prepared {
            input,
            theme: Theme::new(size),
            groups: groups(input),
            spans: input.traces.iter().map(spans_of).collect(),
        }
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

    pub fn trace(&self, i: usize) -> &'a PlotTrace {
        &self.input.traces[i]
    }

    /// The modes present, AR first, for legends.
    pub fn mode_legend(&self) -> Vec<LegendItem> {
        let mut seen: Vec<(ModeClass, String)> = Vec::new();
        for t in &self.input.traces {
            let c = mode_class(t.mode.as_deref());
            let name = mode_name(t);
            if !seen
                .iter()
                .any(|(sc, n)| *sc == c && (c != ModeClass::Other || *n == name))
            {
                seen.push((c, name));
            }
        }
        seen.sort_by_key(|a| a.0);
        seen.into_iter()
            .map(|(c, name)| LegendItem {
                mark: Mark::Box(match c {
                    ModeClass::Ar => AR_BLUE,
                    ModeClass::Mtp => MTP_ORANGE,
                    ModeClass::Other => OTHER_GREY,
                }),
                label: name,
            })
            .collect()
    }

    /// Positions of the traces on a categorical axis: one unit per trace,
    /// groups separated by a gap. Returns (x per trace, axis range).
    pub fn positions(&self) -> (Vec<f64>, (f64, f64)) {
        let mut xs = vec![0.0; self.input.traces.len()];
        let mut x: f64 = 0.0;
        for (gi, g) in self.groups.iter().enumerate() {
            if gi > 0 {
                x += 0.6;
            }
            for &m in &g.members {
                xs[m] = x;
                x += 1.0;
            }
        }
        let last = (x - 1.0).max(0.0);
        (xs, (-0.6, last + 0.6))
    }
}

/// The mode as shown in legends and under bars: AR, MTP, or the raw mode.
pub fn mode_name(t: &PlotTrace) -> String {
    match (mode_class(t.mode.as_deref()), t.mode.as_deref()) {
        (ModeClass::Ar, Some(m)) | (ModeClass::Mtp, Some(m))
            if m.eq_ignore_ascii_case("ar") || m.eq_ignore_ascii_case("mtp") =>
        {
            m.to_ascii_uppercase()
        }
        (_, Some(m)) => m.to_string(),
        (_, None) => "trace".to_string(),
    }
}

/// The label under a trace's box or bar: its mode when it has one, else
/// its label.
pub fn short_label(t: &PlotTrace) -> String {
    if t.mode.is_some() {
        mode_name(t)
    } else {
        ellipsize(&t.label, 22)
    }
}

pub fn ellipsize(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

fn groups(input: &PlotInput) -> Vec<Group<'_>> {
    let key = |t: &PlotTrace| -> String {
        if let Some(w) = &t.workload {
            return w.clone();
        }
        input
            .comparisons
            .iter()
            .find(|(_, c)| c.baseline == t.pairs.path || c.candidate == t.pairs.path)
            .map(|(n, _)| n.clone())
            .unwrap_or_else(|| t.label.clone())
    };
    let mut out: Vec<Group> = Vec::new();
    for (i, t) in input.traces.iter().enumerate() {
        let k = key(t);
        match out.iter_mut().find(|g| g.name == k) {
            Some(g) => g.members.push(i),
            None => out.push(Group {
                name: k,
                members: vec![i],
                comparison: None,
            }),
        }
    }
    for g in &mut out {
        g.members
            .sort_by_key(|&i| mode_class(input.traces[i].mode.as_deref()));
        g.comparison = input
            .comparisons
            .iter()
            .find(|(n, _)| *n == g.name)
            .or_else(|| {
                input.comparisons.iter().find(|(_, c)| {
                    g.members
                        .iter()
                        .any(|&i| input.traces[i].pairs.path == c.baseline)
                        && g.members
                            .iter()
                            .any(|&i| input.traces[i].pairs.path == c.candidate)
                })
            })
            .map(|(_, c)| c);
    }
    out
}

fn spans_of(t: &PlotTrace) -> Spans {
    let rows: Vec<(usize, f64, f64)> = t
        .pairs
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

/// Linear-interpolation quantile of sorted values (numpy's default, as in
/// `stats`); the 0.5 quantile is the median `pair` reports.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = q * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * frac)
}

/// Box-plot figures: (q1, median, q3, lower whisker, upper whisker), whiskers
/// at the most extreme values within 1.5 IQR of the box.
pub fn box_stats(sorted: &[f64]) -> Option<(f64, f64, f64, f64, f64)> {
    let q1 = quantile(sorted, 0.25)?;
    let med = quantile(sorted, 0.5)?;
    let q3 = quantile(sorted, 0.75)?;
    let iqr = q3 - q1;
    let lo = sorted
        .iter()
        .copied()
        .find(|&v| v >= q1 - 1.5 * iqr)
        .unwrap_or(q1);
    let hi = sorted
        .iter()
        .rev()
        .copied()
        .find(|&v| v <= q3 + 1.5 * iqr)
        .unwrap_or(q3);
    Some((q1, med, q3, lo, hi))
}

/// Upper Tukey fence: values above it are outliers.
pub fn upper_fence(sorted: &[f64]) -> Option<f64> {
    let q1 = quantile(sorted, 0.25)?;
    let q3 = quantile(sorted, 0.75)?;
    Some(q3 + 1.5 * (q3 - q1))
}

/// A value range padded for drawing: (lo, hi) with `pad` of the span on
/// each side; never empty.
pub fn padded(lo: f64, hi: f64, pad_lo: f64, pad_hi: f64) -> (f64, f64) {
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    let span = if hi > lo { hi - lo } else { hi.abs().max(1e-3) };
    ((lo - span * pad_lo).max(0.0), hi + span * pad_hi)
}

/// Decimals that make ticks over `range` distinct.
pub fn decimals(range: f64) -> usize {
    if range <= 0.0 || !range.is_finite() {
        return 3;
    }
    let d = (-(range / 8.0).log10()).ceil();
    d.clamp(0.0, 5.0) as usize
}

/// Formats a millisecond value for labels.
pub fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// What a legend entry shows.
#[derive(Debug, Clone)]
pub enum Mark {
    Box(RGBColor),
    Dot(RGBColor),
    Ring(RGBColor),
    Dashed(RGBColor),
    /// A black median bar.
    Median,
    Triangle(RGBColor),
    Square(RGBColor),
}

#[derive(Debug, Clone)]
pub struct LegendItem {
    pub mark: Mark,
    pub label: String,
}

impl LegendItem {
    pub fn new(mark: Mark, label: impl Into<String>) -> Self {
        LegendItem {
            mark,
            label: label.into(),
        }
    }
}

/// Draws a legend mark centred at `c`.
pub fn draw_mark<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    mark: &Mark,
    c: (i32, i32),
    th: &Theme,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let r = th.px(6.0).max(3);
    let (x, y) = c;
    match mark {
        Mark::Box(col) => {
            area.draw(&Rectangle::new(
                [(x - r - 3, y - r), (x + r + 3, y + r)],
                col.mix(0.55).filled(),
            ))?;
            area.draw(&Rectangle::new(
                [(x - r - 3, y - r), (x + r + 3, y + r)],
                darker(*col).stroke_width(1),
            ))?;
        }
        Mark::Dot(col) => area.draw(&Circle::new((x, y), r.max(3) as u32 - 1, col.filled()))?,
        Mark::Ring(col) => area.draw(&Circle::new(
            (x, y),
            r as u32 + 1,
            col.stroke_width(th.upx(2.0)),
        ))?,
        Mark::Dashed(col) => {
            for k in 0..3 {
                let x0 = x - 2 * r + k * (4 * r / 3);
                area.draw(&PathElement::new(
                    vec![(x0, y), (x0 + r / 2 + 1, y)],
                    col.stroke_width(th.upx(2.0)),
                ))?;
            }
        }
        Mark::Median => area.draw(&PathElement::new(
            vec![(x - 2 * r, y), (x + 2 * r, y)],
            INK.stroke_width(th.upx(3.0)),
        ))?,
        Mark::Triangle(col) => {
            area.draw(&TriangleMarker::new((x, y), r as u32 + 1, col.filled()))?
        }
        Mark::Square(col) => area.draw(&Rectangle::new(
            [(x - r + 1, y - r + 1), (x + r - 1, y + r - 1)],
            col.filled(),
        ))?,
    }
    Ok(())
}

/// Title, subtitle and a legend strip; returns the area left for panels.
pub fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    th: &Theme,
    title: &str,
    subtitle: &str,
    legend: &[LegendItem],
) -> Result<DrawingArea<DB, Shift>, Box<dyn std::error::Error + Send + Sync>>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let (w, _) = root.dim_in_pixel();
    let w = w as i32;
    let mut y = th.px(12.0);
    root.draw_text(
        title,
        &th.title().pos(Pos::new(HPos::Center, VPos::Top)),
        (w / 2, y),
    )?;
    y += th.px(32.0);
    if !subtitle.is_empty() {
        root.draw_text(
            subtitle,
            &th.text(13.5)
                .color(&MUTED)
                .pos(Pos::new(HPos::Center, VPos::Top)),
            (w / 2, y),
        )?;
        y += th.px(22.0);
    }
    if !legend.is_empty() {
        y += th.px(4.0);
        let style = th.text(13.5);
        let mark_w = th.px(26.0);
        let gap = th.px(22.0);
        let widths: Vec<i32> = legend
            .iter()
            .map(|it| {
                let (tw, _) = root.estimate_text_size(&it.label, &style).unwrap_or((0, 0));
                mark_w + th.px(6.0) + tw as i32
            })
            .collect();
        // Greedy rows that fit the width.
        let max_row = w - th.px(40.0);
        let mut rows: Vec<Vec<usize>> = vec![Vec::new()];
        let mut used = 0;
        for (i, &iw) in widths.iter().enumerate() {
            let add = if used == 0 { iw } else { used + gap + iw };
            if add > max_row && used > 0 {
                rows.push(vec![i]);
                used = iw;
            } else {
                rows.last_mut().unwrap().push(i);
                used = add;
            }
        }
        let row_h = th.px(22.0);
        for row in &rows {
            let total: i32 =
                row.iter().map(|&i| widths[i]).sum::<i32>() + gap * (row.len() as i32 - 1);
            let mut x = (w - total) / 2;
            for &i in row {
                let cy = y + row_h / 2;
                draw_mark(root, &legend[i].mark, (x + mark_w / 2, cy), th)?;
                root.draw_text(
                    &legend[i].label,
                    &style.pos(Pos::new(HPos::Left, VPos::Center)),
                    (x + mark_w + th.px(6.0), cy),
                )?;
                x += widths[i] + gap;
            }
            y += row_h;
        }
        y += th.px(4.0);
    }
    Ok(root.split_vertically(y).1)
}

/// Writes labels under a categorical trace axis: the trace's mode (or
/// label) under each position, and the group name under each group.
/// `y_base` is the axis' lower value; positions come from the chart.
#[allow(clippy::too_many_arguments)]
pub fn trace_axis_labels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &Prepared,
    xs: &[f64],
    to_px: &dyn Fn(f64) -> (i32, i32),
    style: &TextStyle,
    group_style: &TextStyle,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let th = &data.theme;
    let top = Pos::new(HPos::Center, VPos::Top);
    let line_h = th.px(17.0);
    for (i, t) in data.input.traces.iter().enumerate() {
        let (px, py) = to_px(xs[i]);
        root.draw_text(&short_label(t), &style.pos(top), (px, py + th.px(6.0)))?;
    }
    for g in &data.groups {
        let show = g.members.len() > 1
            || g.members
                .iter()
                .any(|&i| short_label(data.trace(i)) != g.name);
        if !show {
            continue;
        }
        let (a, _) = to_px(xs[*g.members.first().unwrap()]);
        let (b, py) = to_px(xs[*g.members.last().unwrap()]);
        let cx = (a + b) / 2;
        let y = py + th.px(6.0) + line_h + th.px(2.0);
        if g.members.len() > 1 {
            let half = th.px(10.0);
            root.draw(&PathElement::new(
                vec![(a - half, y), (b + half, y)],
                MUTED.stroke_width(1),
            ))?;
        }
        root.draw_text(
            &ellipsize(&g.name, 28),
            &group_style.pos(top),
            (cx, y + th.px(3.0)),
        )?;
    }
    Ok(())
}

/// The grid and text styling every figure's axes share.
pub trait HouseGrid {
    fn house(&mut self, th: &Theme) -> &mut Self;
}

impl<'a, 'b, X, Y, DB> HouseGrid for plotters::chart::MeshStyle<'a, 'b, X, Y, DB>
where
    X: plotters::coord::ranged1d::Ranged<ValueType: std::fmt::Debug>,
    Y: plotters::coord::ranged1d::Ranged<ValueType: std::fmt::Debug>,
    DB: DrawingBackend,
{
    fn house(&mut self, th: &Theme) -> &mut Self {
        self.label_style(th.tick())
            .axis_desc_style(th.axis())
            .light_line_style(RGBColor(242, 242, 242))
            .bold_line_style(RGBColor(222, 222, 222))
            .max_light_lines(1)
    }
}

/// Half the width of a bar, in units of the x axis (one unit per trace).
pub const BAR_HALF: f64 = 0.32;

/// One filled, outlined bar from 0 to `v`, centred on `x`.
pub fn bar<DB: DrawingBackend>(
    chart: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    x: f64,
    v: f64,
    col: RGBColor,
    th: &Theme,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let corners = [(x - BAR_HALF, 0.0), (x + BAR_HALF, v)];
    chart.draw_series(std::iter::once(Rectangle::new(
        corners,
        col.mix(0.85).filled(),
    )))?;
    chart.draw_series(std::iter::once(Rectangle::new(
        corners,
        darker(col).stroke_width(th.upx(1.2)),
    )))?;
    Ok(())
}

/// Smallest and largest of the values; `None` when there are none.
pub fn extent(values: &[f64]) -> Option<(f64, f64)> {
    let lo = values.iter().copied().reduce(f64::min)?;
    let hi = values.iter().copied().reduce(f64::max)?;
    Some((lo, hi))
}

/// The empty state of the span figures: no trace has a paired context.
pub fn no_paired_contexts<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    th: &Theme,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    empty_state(
        area,
        th,
        "no paired step contexts",
        "none of the traces has a CPU step annotation with a GPU twin (see `torchtrace pair`)",
    )
}

/// A centred message for a figure (or panel) with nothing to draw.
pub fn empty_state<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    th: &Theme,
    headline: &str,
    detail: &str,
) -> FigResult
where
    DB::ErrorType: 'static,
{
    let (w, h) = area.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    area.draw(&Rectangle::new(
        [
            (th.px(40.0), th.px(20.0)),
            (w - th.px(40.0), h - th.px(30.0)),
        ],
        RGBColor(245, 245, 245).filled(),
    ))?;
    area.draw(&Rectangle::new(
        [
            (th.px(40.0), th.px(20.0)),
            (w - th.px(40.0), h - th.px(30.0)),
        ],
        RGBColor(200, 200, 200).stroke_width(1),
    ))?;
    let c = Pos::new(HPos::Center, VPos::Center);
    area.draw_text(
        headline,
        &th.bold(20.0).pos(c),
        (w / 2, h / 2 - th.px(14.0)),
    )?;
    area.draw_text(
        detail,
        &th.text(14.0).color(&MUTED).pos(c),
        (w / 2, h / 2 + th.px(16.0)),
    )?;
    Ok(())
}

/// Rows × columns for `n` panels.
pub fn grid(n: usize, wide: bool) -> (usize, usize) {
    match n {
        0 | 1 => (1, 1),
        2 if wide => (1, 2),
        2 | 3 => (n, 1),
        4 => (2, 2),
        _ => (n.div_ceil(3), 3),
    }
}

/// A value axis: linear, or log10 when the values span a wide range (a
/// trace with 0.01 ms and 100 ms contexts). Values are drawn as `f(v)`.
#[derive(Debug, Clone, Copy)]
pub struct Axis {
    pub log: bool,
    floor: f64,
}

impl Axis {
    /// Log scale when max / min(positive) exceeds 30.
    pub fn for_values(vals: &[f64]) -> Axis {
        let min_pos = vals
            .iter()
            .copied()
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let log = min_pos.is_finite() && max / min_pos > 30.0;
        Axis {
            log,
            floor: if min_pos.is_finite() {
                min_pos / 2.0
            } else {
                1e-6
            },
        }
    }

    /// The drawn coordinate of a value.
    pub fn f(&self, v: f64) -> f64 {
        if self.log {
            v.max(self.floor).log10()
        } else {
            v
        }
    }

    /// The drawn range for values in [lo, hi], padded.
    pub fn range(&self, lo: f64, hi: f64, pad_lo: f64, pad_hi: f64) -> (f64, f64) {
        if self.log {
            let (a, b) = (self.f(lo), self.f(hi));
            let span = (b - a).max(0.5);
            (a - span * pad_lo, b + span * pad_hi)
        } else {
            padded(lo, hi, pad_lo, pad_hi)
        }
    }

    /// A tick label for drawn coordinate `t`.
    pub fn label(&self, t: f64, range: f64) -> String {
        if self.log {
            sig(10f64.powf(t))
        } else {
            let prec = decimals(range);
            format!("{t:.prec$}")
        }
    }

    /// An axis description with the scale noted.
    pub fn desc(&self, base: &str) -> String {
        if self.log {
            format!("{base}, log scale")
        } else {
            base.to_string()
        }
    }

    /// Tick count: on a log axis, few enough for whole decades.
    pub fn ticks(&self, linear: usize) -> usize {
        if self.log {
            5
        } else {
            linear
        }
    }
}

/// Three significant digits, trailing zeros trimmed.
pub fn sig(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".into();
    }
    let d = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.d$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}
