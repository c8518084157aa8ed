//! SVG line charts for the experiments (plotters, SVG backend only: no fonts or
//! bitmaps to install).
//!
//! Owns: the chart layout every experiment shares (size, margins, legend,
//! palette). Callers describe a chart as a [`LineChart`] and call
//! [`draw_line_chart`]; any thread.
//!
//! Contract:
//! 1. A drawing error (an unwritable path, a range plotters refuses) is returned
//!    as `Error::InvalidInput` prefixed `chart:`, never a panic.
//! 2. Series are coloured from one palette in order, so the same node keeps its
//!    colour across an experiment's charts when passed in the same order.

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

pub fn draw_line_chart(c: LineChart<'_>) -> Result<()> {
    let root = SVGBackend::new(&c.path, (c.width, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(chart_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&c.caption, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(c.x, c.y)
        .map_err(chart_err)?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(c.x_desc).y_desc(c.y_desc);
    if let Some(f) = c.x_label {
        mesh.x_label_formatter(f);
    }
    mesh.draw().map_err(chart_err)?;
    for (i, (label, pts)) in c.series.into_iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(chart_err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(chart_err)?;
    root.present().map_err(chart_err)
}
