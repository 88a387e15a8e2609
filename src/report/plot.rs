//! Plots as inline SVG, drawn by plotters' SVG backend. The legend is HTML (see
//! `html.rs`), so every element in a series colour inside the SVG is a data mark:
//! the report test counts them.

use std::ops::Range;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::figure::{short_number, Axis, Plot, PlotKind};

pub const WIDTH: u32 = 600;
pub const HEIGHT: u32 = 340;

/// Series colours (Tableau 10), none of them the axes' and grid's greys.
pub const PALETTE: [(u8, u8, u8); 10] = [
    (78, 121, 167),
    (242, 142, 43),
    (225, 87, 89),
    (118, 183, 178),
    (89, 161, 79),
    (237, 201, 72),
    (176, 122, 161),
    (255, 157, 167),
    (156, 117, 95),
    (186, 176, 172),
];

pub fn colour(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

const GRID: RGBColor = RGBColor(228, 228, 228);
const INK: RGBColor = RGBColor(60, 60, 60);

/// The plot as an SVG document.
pub fn svg(plot: &Plot) -> anyhow::Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let xs = plot
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0));
        let ys = plot
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1));
        let (x, y) = match &plot.kind {
            PlotKind::CategoryBars(c) => (-0.5..c.len() as f64 - 0.5, bar_range(ys, &plot.y)),
            PlotKind::Bars(w) => {
                let x = span(xs, &plot.x, false);
                (x.start - w / 2.0..x.end + w / 2.0, bar_range(ys, &plot.y))
            }
            _ => (span(xs, &plot.x, false), span(ys, &plot.y, true)),
        };
        match (plot.x.log, plot.y.log) {
            (false, false) => draw(&root, plot, x, y),
            (true, false) => draw(&root, plot, x.log_scale(), y),
            (false, true) => draw(&root, plot, x, y.log_scale()),
            (true, true) => draw(&root, plot, x.log_scale(), y.log_scale()),
        }?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("plotting failed: {e:?}")
}

/// The axis range holding `values`, padded; linear ranges of non-negative
/// values start at 0 when `zero` asks for it.
fn span(values: impl Iterator<Item = f64>, axis: &Axis, zero: bool) -> Range<f64> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!axis.log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        return if axis.log { 1.0..10.0 } else { 0.0..1.0 };
    }
    if axis.log {
        if lo == hi {
            return lo / 2.0..hi * 2.0;
        }
        return lo / 1.3..hi * 1.3;
    }
    if zero && lo >= 0.0 {
        lo = 0.0;
    }
    if lo == hi {
        return lo - 1.0..hi + 1.0;
    }
    let pad = (hi - lo) * 0.04;
    (if zero && lo == 0.0 { 0.0 } else { lo - pad })..hi + pad
}

/// Bars rise from 0 (linear) or from just under the smallest bar (log).
fn bar_range(values: impl Iterator<Item = f64>, axis: &Axis) -> Range<f64> {
    let r = span(values, axis, true);
    if axis.log {
        r.start / 2.0..r.end
    } else {
        0.0..r.end.max(f64::MIN_POSITIVE)
    }
}

fn draw<X, Y>(root: &DrawingArea<SVGBackend, Shift>, plot: &Plot, x: X, y: Y) -> anyhow::Result<()>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let categories = match &plot.kind {
        PlotKind::CategoryBars(c) => Some(c.as_slice()),
        _ => None,
    };
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .margin_right(20)
        .x_label_area_size(if categories.is_some() { 44 } else { 40 })
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)
        .map_err(err)?;
    let x_range = chart.x_range();
    let y_range = chart.y_range();
    let label = |v: &f64| short_number(*v);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(plot.x.label.as_str())
        .y_desc(plot.y.label.as_str())
        .axis_desc_style(("sans-serif", 14).into_font().color(&INK))
        .label_style(("sans-serif", 12).into_font().color(&INK))
        .axis_style(INK)
        .bold_line_style(GRID)
        .light_line_style(WHITE)
        .x_label_formatter(&label)
        .y_label_formatter(&label)
        .y_labels(6);
    if categories.is_some() {
        // Category names are drawn below, one under each group of bars.
        mesh.x_labels(0).disable_x_mesh();
    } else {
        mesh.x_labels(7);
    }
    mesh.draw().map_err(err)?;

    let n = plot.series.len().max(1) as f64;
    let base = if plot.y.log { y_range.start } else { 0.0 };
    for (i, s) in plot.series.iter().enumerate() {
        let c = colour(i);
        let visible: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|&(x, y)| (!plot.x.log || x > 0.0) && (!plot.y.log || y > 0.0))
            .collect();
        match &plot.kind {
            PlotKind::Lines => {
                chart
                    .draw_series(LineSeries::new(visible.clone(), c.stroke_width(2)))
                    .map_err(err)?;
                if visible.len() <= 60 {
                    chart
                        .draw_series(visible.iter().map(|p| Circle::new(*p, 3, c.filled())))
                        .map_err(err)?;
                }
            }
            PlotKind::Points => {
                chart
                    .draw_series(visible.iter().map(|p| Circle::new(*p, 2, c.filled())))
                    .map_err(err)?;
            }
            PlotKind::Bars(_) | PlotKind::CategoryBars(_) => {
                // Side by side within a slot of 80% of the bar width around x.
                let slot = match &plot.kind {
                    PlotKind::Bars(w) => 0.8 * w,
                    _ => 0.8,
                };
                let w = slot / n;
                let left = -slot / 2.0 + i as f64 * w;
                chart
                    .draw_series(visible.iter().map(|&(x, y)| {
                        Rectangle::new([(x + left, base), (x + left + w, y)], c.filled())
                    }))
                    .map_err(err)?;
            }
        }
    }
    if let Some((level, text)) = &plot.rule {
        chart
            .draw_series(LineSeries::new(
                [(x_range.start, *level), (x_range.end, *level)],
                RGBColor(150, 150, 150).stroke_width(1),
            ))
            .map_err(err)?;
        let (px, py) = chart.backend_coord(&(x_range.start, *level));
        root.draw(&Text::new(
            text.clone(),
            (px + 6, py - 4),
            ("sans-serif", 12)
                .into_font()
                .color(&INK)
                .pos(Pos::new(HPos::Left, VPos::Bottom)),
        ))
        .map_err(err)?;
    }
    if let Some(names) = categories {
        for (i, (_, name)) in names.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64, y_range.start));
            root.draw(&Text::new(
                name.clone(),
                (px, py + 6),
                ("sans-serif", 12)
                    .into_font()
                    .color(&INK)
                    .pos(Pos::new(HPos::Center, VPos::Top)),
            ))
            .map_err(err)?;
        }
    }
    Ok(())
}
