//! The report of a stress run over time (`strata stress ... --graph FILE`),
//! as cassandra-stress's `-graph` draws one: throughput and latency
//! percentiles per interval.
//!
//! Owns: the chart's layout and the HTML page around it. The caller collects
//! one [`Progress`] per interval while the run goes and hands them over with
//! the run's [`Summary`] once it ends.
//!
//! Contract:
//! 1. `FILE.svg` is the chart alone; `FILE.html` is a page holding the title,
//!    the summary's figures in a table and the same chart inline, readable
//!    offline (no script, no external file). Any other extension is refused
//!    before the run starts ([`ReportKind::of`]).
//! 2. Latency (ms) is on the left axis and operations per second on the
//!    right (one unit per axis), both against seconds since the start.
//! 3. A run too short for one interval line still gets a report: its one
//!    point is the whole run's figures.

use crate::charts::{line_chart_svg, ChartExtras, LineChart, RightAxis};
use crate::stress::{Progress, Summary};
use crate::workdir::write_new_or_regular;
use std::fmt::Write as _;
use std::path::Path;
use strata::{Error, Result};

/// What `--graph` writes, from its file name's extension (contract 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportKind {
    Svg,
    Html,
}

impl ReportKind {
    pub fn of(path: &Path) -> Result<ReportKind> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("svg") => Ok(ReportKind::Svg),
            Some("html") | Some("htm") => Ok(ReportKind::Html),
            _ => Err(Error::InvalidInput(format!(
                "--graph {}: the report is an .svg chart or an .html page",
                path.display()
            ))),
        }
    }
}

/// The points the chart draws: the intervals, or the whole run as one point
/// when no interval ended (contract 3).
fn points(intervals: &[Progress], summary: &Summary) -> Vec<Progress> {
    if !intervals.is_empty() {
        return intervals.to_vec();
    }
    let l = &summary.latency_ms;
    vec![Progress {
        total_ops: summary.total_ops,
        ops_per_second: summary.op_rate,
        rows_per_second: summary.row_rate,
        latency_ms_mean: l.mean,
        latency_ms_p50: l.p50,
        latency_ms_p95: l.p95,
        latency_ms_p99: l.p99,
        latency_ms_p999: l.p999,
        latency_ms_max: l.max,
        elapsed_seconds: summary.duration_seconds,
        failed_ops: summary.failed_ops,
    }]
}

/// The chart as SVG text.
fn chart_svg(title: &str, intervals: &[Progress], summary: &Summary) -> Result<String> {
    let pts = points(intervals, summary);
    let end = pts.iter().map(|p| p.elapsed_seconds).fold(1.0f64, f64::max);
    let latency = |f: fn(&Progress) -> f64| -> Vec<(f64, f64)> {
        pts.iter().map(|p| (p.elapsed_seconds, f(p))).collect()
    };
    let series = vec![
        ("latency p50".to_string(), latency(|p| p.latency_ms_p50)),
        ("latency p95".to_string(), latency(|p| p.latency_ms_p95)),
        ("latency p99".to_string(), latency(|p| p.latency_ms_p99)),
        ("latency p99.9".to_string(), latency(|p| p.latency_ms_p999)),
    ];
    let y_max = series
        .iter()
        .flat_map(|(_, s)| s.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let ops = latency(|p| p.ops_per_second);
    let ops_max = ops.iter().map(|p| p.1).fold(0.0f64, f64::max);
    line_chart_svg(
        &LineChart {
            path: std::path::PathBuf::new(),
            width: 900,
            caption: title.to_string(),
            x: 0.0..end,
            y: 0.0..(y_max * 1.1).max(0.01),
            x_desc: "seconds since the start",
            y_desc: "latency, ms",
            x_label: None,
            series,
        },
        ChartExtras {
            markers: pts.len() < 3,
            right: Some(RightAxis {
                y: 0.0..(ops_max * 1.1).max(1.0),
                y_desc: "operations per second".into(),
                series: vec![("operations per second".into(), ops)],
            }),
            ..ChartExtras::default()
        },
    )
}

/// Writes the report of a run (contract 1). `command` is the command line,
/// shown on the page.
pub fn write_report(
    path: &Path,
    title: &str,
    command: &str,
    intervals: &[Progress],
    summary: &Summary,
) -> Result<()> {
    let kind = ReportKind::of(path)?;
    let svg = chart_svg(title, intervals, summary)?;
    let text = match kind {
        ReportKind::Svg => svg,
        ReportKind::Html => html(title, command, summary, &svg),
    };
    write_new_or_regular(path, text.as_bytes())
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page: title, command, the summary's figures, the chart.
fn html(title: &str, command: &str, s: &Summary, svg: &str) -> String {
    let l = &s.latency_ms;
    let rows: Vec<(&str, String)> = vec![
        ("operations", s.total_ops.to_string()),
        ("operation rate", format!("{:.0} op/s", s.op_rate)),
        ("row rate", format!("{:.0} row/s", s.row_rate)),
        (
            "writes / reads",
            format!("{} / {}", s.write_ops, s.read_ops),
        ),
        ("errors", s.errors.to_string()),
        ("latency mean", format!("{:.3} ms", l.mean)),
        ("latency p50", format!("{:.3} ms", l.p50)),
        ("latency p95", format!("{:.3} ms", l.p95)),
        ("latency p99", format!("{:.3} ms", l.p99)),
        ("latency p99.9", format!("{:.3} ms", l.p999)),
        ("latency max", format!("{:.3} ms", l.max)),
        ("duration", format!("{:.1} s", s.duration_seconds)),
    ];
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title>\n\
         <style>body{{font-family:sans-serif;margin:2em}}td{{padding:2px 12px}}\
         td:last-child{{text-align:right}}</style></head>\n<body>\n<h1>{t}</h1>\n\
         <p><code>{c}</code></p>\n<table>\n",
        t = escape(title),
        c = escape(command)
    );
    for (name, value) in rows {
        let _ = writeln!(page, "<tr><td>{name}</td><td>{}</td></tr>", escape(&value));
    }
    page.push_str("</table>\n");
    // The SVG's own XML declaration does not belong inside HTML.
    let body = svg.find("<svg").map_or(svg, |i| &svg[i..]);
    page.push_str(body);
    page.push_str("\n</body></html>\n");
    page
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stress::LatencyMs;

    fn summary() -> Summary {
        Summary {
            mode: "write".into(),
            total_ops: 300,
            op_rate: 100.0,
            row_rate: 100.0,
            total_rows: 300,
            mib_rate: 0.0,
            errors: 0,
            failed_ops: 0,
            write_ops: 300,
            read_ops: 0,
            wrong_values: 0,
            misses: 0,
            duration_seconds: 3.0,
            latency_ms: LatencyMs {
                mean: 1.0,
                p50: 0.9,
                p95: 2.0,
                p99: 3.0,
                p999: 4.0,
                max: 5.0,
            },
            first_error: None,
        }
    }

    fn interval(t: f64, p99: f64) -> Progress {
        Progress {
            total_ops: (t * 100.0) as u64,
            ops_per_second: 100.0,
            rows_per_second: 100.0,
            latency_ms_mean: 1.0,
            latency_ms_p50: 0.9,
            latency_ms_p95: 2.0,
            latency_ms_p99: p99,
            latency_ms_p999: 4.0,
            latency_ms_max: 5.0,
            elapsed_seconds: t,
            failed_ops: 0,
        }
    }

    #[test]
    fn the_kind_comes_from_the_extension() {
        assert_eq!(ReportKind::of(Path::new("r.svg")).unwrap(), ReportKind::Svg);
        assert_eq!(
            ReportKind::of(Path::new("a/r.HTML")).unwrap(),
            ReportKind::Html
        );
        let e = ReportKind::of(Path::new("r.png")).unwrap_err().to_string();
        assert!(e.contains(".svg chart or an .html page"), "{e}");
        assert!(ReportKind::of(Path::new("report")).is_err());
    }

    #[test]
    fn the_page_holds_the_figures_and_the_chart_inline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.html");
        let intervals = [interval(1.0, 3.0), interval(2.0, 30.0), interval(3.0, 3.0)];
        write_report(
            &path,
            "stress write",
            "strata stress write -n 300 <x>",
            &intervals,
            &summary(),
        )
        .unwrap();
        let page = std::fs::read_to_string(&path).unwrap();
        assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
        assert!(page.contains("<code>strata stress write -n 300 &lt;x&gt;</code>"));
        assert!(page.contains("<td>latency p99</td><td>3.000 ms</td>"));
        assert!(page.contains("<svg") && page.contains("operations per second"));
        assert!(!page.contains("<?xml"));
    }

    #[test]
    fn a_run_shorter_than_an_interval_is_one_point() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.svg");
        write_report(&path, "stress read", "strata stress read", &[], &summary()).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("latency p99") && svg.contains("seconds since the start"));
        // The one point is drawn as a marker.
        assert!(svg.contains("<circle"), "{svg}");
    }
}
