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
//!    dashed series take the colour of the solid series of the same index.

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
}

pub fn draw_line_chart(c: LineChart<'_>) -> Result<()> {
    draw_line_chart_with(c, ChartExtras::default())
}

/// [`draw_line_chart`] with a log-scale x axis and dashed series as asked.
pub fn draw_line_chart_with(c: LineChart<'_>, extras: ChartExtras) -> Result<()> {
    if extras.log_x && !(c.x.start > 0.0 && c.x.end > c.x.start) {
        return Err(chart_err(format!(
            "log-scale x range {:?} must be positive and increasing",
            c.x
        )));
    }
    // Drawn to memory, then written by the one writer that never follows a
    // link (plotters' own file backend would write through one).
    let mut svg = String::new();
    draw_to(&mut svg, &c, extras)?;
    crate::workdir::write_new_or_regular(&c.path, svg.as_bytes())
}

fn draw_to(svg: &mut String, c: &LineChart<'_>, extras: ChartExtras) -> Result<()> {
    let root = SVGBackend::with_string(svg, (c.width, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(chart_err)?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(&c.caption, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(55);
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
    root.present().map_err(chart_err)
}

fn draw_series<'b, X>(
    mut chart: ChartContext<'b, SVGBackend<'b>, Cartesian2d<X, RangedCoordf64>>,
    c: &LineChart<'_>,
    extras: ChartExtras,
) -> Result<()>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(c.x_desc).y_desc(c.y_desc);
    if let Some(f) = c.x_label {
        mesh.x_label_formatter(f);
    }
    mesh.draw().map_err(chart_err)?;
    for (i, (label, pts)) in c.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(chart_err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        if extras.markers {
            chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))
                .map_err(chart_err)?;
        }
    }
    for (i, (label, pts)) in extras.dashed.into_iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(DashedLineSeries::new(pts, 6, 4, color.stroke_width(2)))
            .map_err(chart_err)?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 8, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(chart_err)
}
