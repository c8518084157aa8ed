//! SVG line charts for the experiments (plotters, SVG backend only: no fonts or
//! bitmaps to install).
//!
//! Owns: the chart layout every experiment shares (size, margins, legend,
//! palette). Callers describe a chart as a [`LineChart`] and call
//! [`draw_line_chart`], or [`draw_line_chart_with`] for a log-scale x axis and
//! dashed series; any thread.
//!
//! Contract:
//! 1. A drawing error (an unwritable path, a range plotters refuses) is returned
//!    as `Error::InvalidInput` prefixed `chart:`, never a panic.
//! 2. Series are coloured from one palette in order, so the same node keeps its
//!    colour across an experiment's charts when passed in the same order;
//!    dashed series take the colour of the solid series of the same index,
//!    and series on the right axis continue the palette after the solid ones.
//! 3. The legend sits to the right of the plot, never over the data: the SVG
//!    is `width` plus the legend's own width wide.
//! 4. One unit per axis: a quantity in another unit goes on the right axis
//!    ([`ChartExtras::right`]), with its own range and description.

use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::path::PathBuf;
use strata::{Error, Result};

fn chart_err<E: std::fmt::Display>(e: E) -> Error {
    Error::InvalidInput(format!("chart: {e}"))
}

const PALETTE: [RGBColor; 6] = [
    RGBColor(200, 30, 30),
    RGBColor(30, 90, 200),
    RGBColor(20, 150, 60),
    RGBColor(150, 60, 170),
    RGBColor(230, 140, 0),
    RGBColor(0, 0, 0),
];

/// One SVG line chart, 500 pixels high; charts differ only in these fields.
pub struct LineChart<'a> {
    pub path: PathBuf,
    pub width: u32,
    pub caption: String,
    pub x: std::ops::Range<f64>,
    pub y: std::ops::Range<f64>,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    /// Tick labels for x (plotters' default when `None`).
    pub x_label: Option<&'a dyn Fn(&f64) -> String>,
    /// (legend, points), coloured from [`PALETTE`] in order.
    pub series: Vec<(String, Vec<(f64, f64)>)>,
}

/// What [`draw_line_chart_with`] adds to a [`LineChart`].
#[derive(Default)]
pub struct ChartExtras {
    /// Logarithmic x axis (`x` must then be positive): for quantities swept
    /// over decades, such as data sizes from 10 GiB to 10 TiB.
    pub log_x: bool,
    /// (legend, points) drawn dashed, the `i`-th in the colour of the `i`-th
    /// solid series: a prediction beside what it predicts.
    pub dashed: Vec<(String, Vec<(f64, f64)>)>,
    /// A dot at every point of the solid series: a sweep has few points, and
    /// a series of one point draws no line at all.
    pub markers: bool,
    /// Series in another unit, on a right-hand axis (contract 4); not with
    /// `log_x`.
    pub right: Option<RightAxis>,
}

/// The right-hand y axis of a chart: its range, its description (the unit)
/// and its series.
pub struct RightAxis {
    pub y: std::ops::Range<f64>,
    pub y_desc: String,
    pub series: Vec<(String, Vec<(f64, f64)>)>,
}

/// A tick label as a person writes it: whole numbers without ".0", large
/// ones in thousands or millions (`250k`, `1.5M`), small ones to the
/// precision they need, so no label is wider than its axis's label area.
pub fn tick_label(v: &f64) -> String {
    let v = *v;
    let a = v.abs();
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if a >= 1e7 {
        trim(format!("{:.2}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else if a >= 10.0 || v == v.round() {
        trim(format!("{v:.1}"))
    } else {
        trim(format!("{v:.3}"))
    }
}

/// One legend entry: its label, colour and whether its line is dashed.
struct LegendEntry {
    label: String,
    color: RGBColor,
    dashed: bool,
}

const LEGEND_FONT_PX: u32 = 13;

/// The legend column's width: room for the longest label (sans-serif at 13
/// px averages under 7 px a character) beside its sample line.
fn legend_width(entries: &[LegendEntry]) -> u32 {
    let longest = entries
        .iter()
        .map(|e| e.label.chars().count())
        .max()
        .unwrap_or(0) as u32;
    (longest * 7 + 50).clamp(120, 420)
}

pub fn draw_line_chart(c: LineChart<'_>) -> Result<()> {
    draw_line_chart_with(c, ChartExtras::default())
}

/// [`draw_line_chart`] with a log-scale x axis and dashed series as asked.
pub fn draw_line_chart_with(c: LineChart<'_>, extras: ChartExtras) -> Result<()> {
    // Drawn to memory, then written by the one writer that never follows a
    // link (plotters' own file backend would write through one).
    let svg = line_chart_svg(&c, extras)?;
    crate::workdir::write_new_or_regular(&c.path, svg.as_bytes())
}

/// The chart [`draw_line_chart_with`] writes, as SVG text (`c.path` unused):
/// for a page that holds the chart inline.
pub fn line_chart_svg(c: &LineChart<'_>, extras: ChartExtras) -> Result<String> {
    if extras.log_x && extras.right.is_some() {
        return Err(chart_err("a right-hand axis needs a linear x axis"));
    }
    if extras.log_x && !(c.x.start > 0.0 && c.x.end > c.x.start) {
        return Err(chart_err(format!(
            "log-scale x range {:?} must be positive and increasing",
            c.x
        )));
    }
    let mut svg = String::new();
    draw_to(&mut svg, c, extras)?;
    Ok(svg)
}

fn draw_to(svg: &mut String, c: &LineChart<'_>, extras: ChartExtras) -> Result<()> {
    let mut entries = Vec::new();
    for (i, (label, _)) in c.series.iter().enumerate() {
        entries.push(LegendEntry {
            label: label.clone(),
            color: PALETTE[i % PALETTE.len()],
            dashed: false,
        });
    }
    for (i, (label, _)) in extras.dashed.iter().enumerate() {
        entries.push(LegendEntry {
            label: label.clone(),
            color: PALETTE[i % PALETTE.len()],
            dashed: true,
        });
    }
    if let Some(r) = &extras.right {
        for (i, (label, _)) in r.series.iter().enumerate() {
            entries.push(LegendEntry {
                label: format!("{label} (right axis)"),
                color: PALETTE[(c.series.len() + i) % PALETTE.len()],
                dashed: false,
            });
        }
    }
    let legend_w = legend_width(&entries);
    let root = SVGBackend::with_string(svg, (c.width + legend_w, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(chart_err)?;
    let (plot, legend) = root.split_horizontally(c.width);
    let mut builder = ChartBuilder::on(&plot);
    builder
        .caption(&c.caption, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60);
    if extras.right.is_some() {
        builder.right_y_label_area_size(60);
    }
    // The two axes are different types to plotters, hence one generic body.
    if extras.log_x {
        let chart = builder
            .build_cartesian_2d(c.x.clone().log_scale(), c.y.clone())
            .map_err(chart_err)?;
        draw_series(chart, c, extras)?;
    } else {
        let chart = builder
            .build_cartesian_2d(c.x.clone(), c.y.clone())
            .map_err(chart_err)?;
        draw_series(chart, c, extras)?;
    }
    draw_legend(&legend, &entries)?;
    root.present().map_err(chart_err)
}

/// The legend column (contract 3): a sample line and the label per entry,
/// from the height of the plot's top edge down.
fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    entries: &[LegendEntry],
) -> Result<()> {
    let font = ("sans-serif", LEGEND_FONT_PX).into_font().color(&BLACK);
    for (i, e) in entries.iter().enumerate() {
        let y = 55 + 22 * i as i32;
        if e.dashed {
            for x in [4, 14, 24] {
                area.draw(&PathElement::new(
                    vec![(x, y), (x + 6, y)],
                    e.color.stroke_width(2),
                ))
                .map_err(chart_err)?;
            }
        } else {
            area.draw(&PathElement::new(
                vec![(4, y), (30, y)],
                e.color.stroke_width(2),
            ))
            .map_err(chart_err)?;
        }
        area.draw(&Text::new(e.label.clone(), (38, y - 7), font.clone()))
            .map_err(chart_err)?;
    }
    Ok(())
}

fn draw_series<'b, X>(
    chart: ChartContext<'b, SVGBackend<'b>, Cartesian2d<X, RangedCoordf64>>,
    c: &LineChart<'_>,
    extras: ChartExtras,
) -> Result<()>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let ChartExtras {
        dashed,
        markers,
        right,
        ..
    } = extras;
    let Some(axis) = right else {
        let mut chart = chart;
        return draw_primary(&mut chart, c, dashed, markers);
    };
    // Contract 4: the right axis has its own range and unit over the same x.
    // The secondary coordinates come first, so that the primary axis draws
    // its labels on the left only.
    let mut chart = chart.set_secondary_coord(c.x.clone(), axis.y.clone());
    draw_primary(&mut chart, c, dashed, markers)?;
    chart
        .configure_secondary_axes()
        .y_desc(axis.y_desc.as_str())
        .y_label_formatter(&tick_label)
        .draw()
        .map_err(chart_err)?;
    for (i, (_, pts)) in axis.series.iter().enumerate() {
        let color = PALETTE[(c.series.len() + i) % PALETTE.len()];
        chart
            .draw_secondary_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(chart_err)?;
    }
    Ok(())
}

/// The mesh, the solid series (with markers if asked) and the dashed ones.
fn draw_primary<'b, X>(
    chart: &mut ChartContext<'b, SVGBackend<'b>, Cartesian2d<X, RangedCoordf64>>,
    c: &LineChart<'_>,
    dashed: Vec<(String, Vec<(f64, f64)>)>,
    markers: bool,
) -> Result<()>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(c.x_desc)
        .y_desc(c.y_desc)
        .y_label_formatter(&tick_label);
    match c.x_label {
        Some(f) => mesh.x_label_formatter(f),
        None => mesh.x_label_formatter(&tick_label),
    };
    mesh.draw().map_err(chart_err)?;
    for (i, (_, pts)) in c.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(chart_err)?;
        if markers {
            chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))
                .map_err(chart_err)?;
        }
    }
    for (i, (_, pts)) in dashed.into_iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(DashedLineSeries::new(pts, 6, 4, color.stroke_width(2)))
            .map_err(chart_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick_label(&250_000.0), "250k");
        assert_eq!(tick_label(&12_500.0), "12.5k");
        assert_eq!(tick_label(&15_000_000.0), "15M");
        assert_eq!(tick_label(&2.0), "2");
        assert_eq!(tick_label(&2.5), "2.5");
        assert_eq!(tick_label(&0.125), "0.125");
        assert_eq!(tick_label(&350.0), "350");
        assert_eq!(tick_label(&-1500.0), "-1500");
    }
}
