//! Writing a report as JSON, CSV and an SVG plot, and reading the JSON back.
//!
//! The JSON document is the contract (`peer compare` reads it, the README documents it); CSV
//! and SVG are for people and spreadsheets. Every error names the file it concerns.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use serde::Serialize;

use peerpipe::peer::DataPath;
use peerpipe::transport::{TransportKind, Wait};

use super::columns;
use super::key::{Handler, Placement, RowKey, Workload};
use super::model::{BaselineRow, Report, Row};
use super::summary::{self, AnswerRecord};
use peerpipe::error::{Error, Result};
use peerpipe::units::format_nanos;

/// The version of the JSON document: `format` in it. A change to what a field means, or to
/// which fields there are, is a new version; [`read_json`] reads this one only.
pub const FORMAT: u64 = 1;

/// What `--json` writes: its [`FORMAT`], the report's own fields, then `answer` — the answer of
/// every measured size as the report printed it ([`summary::records`]: its row, overhead and
/// budget judgement). The answer is derived from the rows, so [`read_json`] ignores it.
#[derive(Serialize)]
struct Document<'a> {
    format: u64,
    #[serde(flatten)]
    report: &'a Report,
    answer: Vec<AnswerRecord>,
}

/// Writes the report as pretty-printed JSON (the shape documented in docs/REPORT.md), with the
/// answer of every size as `answer` ([`summary::records`]), ending in a newline. CPU times that
/// could not be measured (NaN) are written as `null`; [`read_json`] reads them back as NaN.
///
/// # Errors
/// [`Error::Io`] naming the file when it cannot be written; the file may then be partly
/// written.
pub fn write_json(report: &Report, path: &Path) -> Result<()> {
    let document = Document { format: FORMAT, report, answer: summary::records(report) };
    let text = serde_json::to_string_pretty(&document).map_err(|e| {
        io::Error::other(format!("serialising the report for {}: {e}", path.display()))
    })?;
    fs::write(path, text + "\n").map_err(|e| in_file(e, "writing", path))?;
    Ok(())
}

/// Reads a report written by [`write_json`] of this [`FORMAT`]. `null` CPU times and rates
/// read as NaN; the `answer` is not read (it is derived from the rows: [`summary::records`]
/// gives it again).
///
/// # Errors
/// - [`Error::Io`] naming the file when it cannot be read;
/// - [`Error::InvalidArgument`] (`what: "report"`) naming the file and what was wrong: with
///   the line and column when it is not JSON; the format found and the one read when its
///   `format` is another or missing; the field when it is not a report (a missing or mistyped
///   field).
///
/// # Examples
/// ```
/// use std::path::Path;
/// use peerpipe_cli::report::export::read_json;
/// let err = read_json(Path::new("/nonexistent/run.json")).unwrap_err().to_string();
/// assert!(err.contains("/nonexistent/run.json"), "{err}");
/// ```
pub fn read_json(path: &Path) -> Result<Report> {
    let text = fs::read_to_string(path).map_err(|e| in_file(e, "reading", path))?;
    let refused = |reason: String| Error::InvalidArgument {
        what: "report",
        reason: format!("{} {reason}", path.display()),
    };
    let not_a_report =
        |e: serde_json::Error| refused(format!("is not a peerpipe JSON report: {e}"));
    // The format first, so that a report of another version is refused as that, not by the
    // first field it lacks; then the report, whose errors carry their line and column.
    let document: serde_json::Value = serde_json::from_str(&text).map_err(not_a_report)?;
    let found = match document.get("format") {
        Some(found) if found.as_u64() == Some(FORMAT) => {
            return serde_json::from_str::<Report>(&text).map_err(not_a_report);
        }
        Some(found) => format!("is a report of format {found}"),
        None => "has no `format`: a report from before format 1, or not a report".to_owned(),
    };
    Err(refused(format!(
        "{found}; this peer reads format {FORMAT} only: measure again with this peer, or \
         compare with the peer that wrote it"
    )))
}

/// The CSV header: identity columns, then `{phase}_{percentile}_ns` for the phases `rtt`,
/// `transfer`, `encode`, `decode`, `server` and the percentiles `min`, `p50`, `p90`, `p99`,
/// `p999`, `max`, then the per-row figures.
///
/// # Examples
/// ```
/// let header = peerpipe_cli::report::export::csv_header();
/// assert!(header.starts_with("dtype,elements,bytes,transport,path,handler,wait,pin,iterations,"));
/// assert!(header.contains(",rtt_min_ns,rtt_p50_ns,") && header.ends_with(",round_states"));
/// ```
pub fn csv_header() -> String {
    columns::csv_names().collect::<Vec<_>>().join(",")
}

/// Writes the report as CSV: the header line of [`csv_header`], then one line per baseline,
/// then one line per row, in report order.
///
/// Baselines are lines of the same table, so one filter separates them: `handler` is
/// `baseline`, `path` is `raw`, `dtype` and `elements` are empty (a baseline moves bytes, not
/// values), only the `rtt_*` phase is filled, the CPU columns and the interval are empty and
/// `ratio_to_baseline` is 1. Empty fields also stand for NaN CPU times and missing ratios.
/// `mb_per_s` is payload megabytes (10^6) per second both ways at the p50; `ratio_ci_lo` and
/// `ratio_ci_hi` bound the paired ratio's 95 % interval; `added_ns` is the time the row adds
/// to its floor (median over rounds of row p50 − floor p50) and `added_ci_lo_ns` and
/// `added_ci_hi_ns` bound its interval, both in the row's `main_state` when its rounds carry
/// machine states (see [`super::states`]); `state_ratios` and `state_added_ns` give the row's
/// ratio and added time in each state it ran in, as `state:value` separated by spaces;
/// `shared_core_share` is the share of rounds in which client and server ran on one CPU;
/// `p50_spread_ns` is the spread of the per-round p50s, and `round_p50s_ns`,
/// `round_probes_ns` and `round_states` list the per-round p50s, machine-state probes and
/// states, separated by spaces (`-` for unknown). Fields holding a comma or a quote are quoted
/// (RFC 4180).
///
/// # Errors
/// [`Error::Io`] naming the file when it cannot be written.
pub fn write_csv(report: &Report, path: &Path) -> Result<()> {
    let mut text = csv_header();
    text.push('\n');
    for base in &report.baseline {
        text.push_str(&columns::csv_floor(base));
        text.push('\n');
    }
    for row in &report.rows {
        text.push_str(&columns::csv_row(row));
        text.push('\n');
    }
    fs::write(path, text).map_err(|e| in_file(e, "writing", path))?;
    Ok(())
}

/// Width of one panel of the plot, in pixels.
const PANEL_WIDTH: u32 = 560;
/// Height of one panel of the plot, in pixels.
const PANEL_HEIGHT: u32 = 500;
/// Width of the legend column on the right.
const LEGEND_WIDTH: u32 = 270;
/// Height of the title strip.
const TITLE_HEIGHT: u32 = 40;
/// Most panels side by side.
const MAX_COLUMNS: usize = 3;

/// Plots p50 round trip against payload bytes, log–log, as SVG.
///
/// One panel per wait strategy (and per placement, when several were measured), all on the
/// same axes so panels compare directly. In each panel, one line per handler × path (× dtype
/// when several): the colour names the handler and path, the dash the dtype (solid, dashed,
/// dotted in the order of the configuration). The raw read/write baseline of that wait is the
/// thick black line. Hollow circles of the same colour mark each point's p99. A legend column
/// on the right names every line.
///
/// # Errors
/// [`Error::Io`] naming the file when drawing fails or the file cannot be written.
pub fn write_svg(report: &Report, path: &Path) -> Result<()> {
    let svg = svg_string(report)
        .map_err(|e| io::Error::other(format!("plotting {}: {e}", path.display())))?;
    fs::write(path, svg).map_err(|e| in_file(e, "writing", path))?;
    Ok(())
}

/// One line of the plot: rows sharing dtype, path, handler and transport (a [`RowKey`]
/// without elements, wait and placement).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SeriesKey<'a> {
    dtype: Workload,
    path: DataPath,
    handler: &'a Handler,
    transport: TransportKind,
}

impl<'a> SeriesKey<'a> {
    fn of(row: &'a Row) -> SeriesKey<'a> {
        let RowKey { dtype, path, handler, transport, .. } = row.key();
        SeriesKey { dtype, path, handler, transport }
    }

    fn matches(&self, row: &Row) -> bool {
        SeriesKey::of(row) == *self
    }
}

/// How one series is drawn.
struct SeriesStyle {
    label: String,
    color: RGBColor,
    /// 0 solid, 1 dashed, 2 dotted, then solid again.
    dash: usize,
}

/// The colour of a handler × path: blues for zero-copy, oranges for the codec, light when the
/// server converts nothing; other combinations take the next free colour.
fn series_color(handler: &Handler, path: DataPath, others: &mut usize) -> RGBColor {
    const OTHERS: [RGBColor; 5] = [
        RGBColor(0, 158, 115),
        RGBColor(204, 121, 167),
        RGBColor(120, 80, 40),
        RGBColor(110, 110, 110),
        RGBColor(160, 160, 0),
    ];
    match (handler, path) {
        (Handler::EchoRaw, DataPath::ZeroCopy) => RGBColor(86, 180, 233),
        (Handler::Echo, DataPath::ZeroCopy) => RGBColor(0, 90, 181),
        (Handler::EchoRaw, DataPath::Codec) => RGBColor(240, 170, 0),
        (Handler::Echo, DataPath::Codec) => RGBColor(200, 70, 0),
        _ => {
            let color = OTHERS[*others % OTHERS.len()];
            *others += 1;
            color
        }
    }
}

type PlotResult<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn svg_string(report: &Report) -> PlotResult<String> {
    // Panels: (pin, wait) in order of first appearance.
    let mut panels: Vec<(Placement, Wait)> = Vec::new();
    let settings = report
        .rows
        .iter()
        .map(|r| (r.id.pin, r.id.wait))
        .chain(report.baseline.iter().map(|b| (b.pin, b.wait)));
    for setting in settings {
        if !panels.contains(&setting) {
            panels.push(setting);
        }
    }
    let several_pins = panels.iter().any(|p| p.0 != panels[0].0);

    // Series, in table order, with their styles.
    let mut keys: Vec<SeriesKey> = Vec::new();
    for row in &report.rows {
        let key = SeriesKey::of(row);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let mut dtypes: Vec<Workload> = Vec::new();
    for key in &keys {
        if !dtypes.contains(&key.dtype) {
            dtypes.push(key.dtype);
        }
    }
    dtypes.sort_by_key(|&d| Workload::ALL.iter().position(|&w| w == d).unwrap_or(9));
    // Known handlers and paths first, in their order; then by name.
    let rank = |key: &SeriesKey<'_>| {
        let handler =
            [Handler::EchoRaw, Handler::Echo].iter().position(|h| h == key.handler).unwrap_or(2);
        let path =
            [DataPath::ZeroCopy, DataPath::Codec].iter().position(|&p| p == key.path).unwrap_or(2);
        let dtype = dtypes.iter().position(|&d| d == key.dtype).unwrap_or(9);
        (handler, key.handler.name().to_owned(), path, key.path.name(), dtype, key.transport.name())
    };
    keys.sort_by(|a, b| rank(a).cmp(&rank(b)));
    let mut others = 0;
    let mut colors: Vec<((&Handler, DataPath), RGBColor)> = Vec::new();
    let styles: Vec<SeriesStyle> = keys
        .iter()
        .map(|key| {
            let pair = (key.handler, key.path);
            let color = match colors.iter().find(|(p, _)| *p == pair) {
                Some((_, c)) => *c,
                None => {
                    let c = series_color(key.handler, key.path, &mut others);
                    colors.push((pair, c));
                    c
                }
            };
            let mut label = format!("{} {}", key.handler, key.path);
            if dtypes.len() > 1 {
                label = format!("{label} {}", key.dtype);
            }
            if key.transport != TransportKind::Pipe {
                label = format!("{label} ({})", key.transport);
            }
            let dash = dtypes.iter().position(|&d| d == key.dtype).unwrap_or(0);
            SeriesStyle { label, color, dash }
        })
        .collect();

    // Shared axes.
    let xs = report.rows.iter().map(|r| r.id.bytes).chain(report.baseline.iter().map(|b| b.bytes));
    let ys = report
        .rows
        .iter()
        .flat_map(|r| [r.rtt_ns.p50, r.rtt_ns.p99])
        .chain(report.baseline.iter().flat_map(|b| [b.rtt_ns.p50, b.rtt_ns.p99]));
    let (x_lo, x_hi) = log_bounds(xs, 1.0, 1e7);
    let (y_lo, y_hi) = log_bounds(ys, 1e3, 1e6);

    let columns = panels.len().clamp(1, MAX_COLUMNS);
    let grid_rows = panels.len().div_ceil(columns).max(1);
    let width = PANEL_WIDTH * columns as u32 + LEGEND_WIDTH;
    let height = TITLE_HEIGHT + PANEL_HEIGHT * grid_rows as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let (title, body) = root.split_vertically(TITLE_HEIGHT);
        let mut heading = format!(
            "peerpipe {}: p50 round trip vs payload bytes per message (log-log)",
            report.peerpipe
        );
        if !report.machine.cpu.is_empty() {
            let _ = write!(heading, " - {}, {} cores", report.machine.cpu, report.machine.cores);
        }
        title.draw_text(
            &heading,
            &TextStyle::from(("sans-serif", 20).into_font()).color(&BLACK),
            (12, 10),
        )?;
        let (plots, legend) = body.split_horizontally(PANEL_WIDTH * columns as u32);
        let areas = plots.split_evenly((grid_rows, columns));
        if panels.is_empty() {
            areas[0].draw_text(
                "no rows or baselines were measured",
                &TextStyle::from(("sans-serif", 16).into_font()).color(&BLACK),
                (40, 40),
            )?;
        }
        for (area, &(pin, wait)) in areas.iter().zip(&panels) {
            let caption = if several_pins {
                format!("wait {wait}, pin {pin}")
            } else {
                format!("wait {wait}")
            };
            let mut chart = ChartBuilder::on(area)
                .caption(caption, ("sans-serif", 17))
                .margin(12)
                .x_label_area_size(44)
                .y_label_area_size(64)
                .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())?;
            chart
                .configure_mesh()
                .x_desc("payload bytes per message")
                .y_desc("round trip")
                .x_label_formatter(&|v| format_axis_bytes(*v))
                .y_label_formatter(&|v| format_nanos(*v))
                .light_line_style(RGBColor(238, 238, 238))
                .bold_line_style(RGBColor(200, 200, 200))
                .label_style(("sans-serif", 13))
                .axis_desc_style(("sans-serif", 14))
                .draw()?;

            // The plot's floor is the raw pipe: the line every series is read against.
            let mut bases: Vec<&BaselineRow> = report
                .baseline
                .iter()
                .filter(|b| b.pin == pin && b.wait == wait && b.transport == TransportKind::Pipe)
                .collect();
            bases.sort_by_key(|b| b.bytes);
            let black = BLACK.stroke_width(4);
            chart.draw_series(LineSeries::new(
                bases.iter().map(|b| (b.bytes as f64, clamp(b.rtt_ns.p50))),
                black,
            ))?;
            chart.draw_series(
                bases
                    .iter()
                    .map(|b| Circle::new((b.bytes as f64, clamp(b.rtt_ns.p50)), 3, BLACK.filled())),
            )?;
            chart.draw_series(
                bases.iter().map(|b| Circle::new((b.bytes as f64, clamp(b.rtt_ns.p99)), 4, BLACK)),
            )?;

            for (key, style) in keys.iter().zip(&styles) {
                let mut rows: Vec<&Row> = report
                    .rows
                    .iter()
                    .filter(|r| r.id.pin == pin && r.id.wait == wait && key.matches(r))
                    .collect();
                if rows.is_empty() {
                    continue;
                }
                rows.sort_by_key(|r| r.id.bytes);
                let points: Vec<(f64, f64)> =
                    rows.iter().map(|r| (r.id.bytes as f64, clamp(r.rtt_ns.p50))).collect();
                let line = style.color.stroke_width(2);
                match style.dash % 3 {
                    0 => {
                        chart.draw_series(LineSeries::new(points.clone(), line))?;
                    }
                    1 => {
                        chart.draw_series(DashedLineSeries::new(points.clone(), 9, 5, line))?;
                    }
                    _ => {
                        chart.draw_series(DashedLineSeries::new(points.clone(), 2, 4, line))?;
                    }
                }
                chart
                    .draw_series(points.iter().map(|&p| Circle::new(p, 2, style.color.filled())))?;
                chart.draw_series(rows.iter().map(|r| {
                    Circle::new(
                        (r.id.bytes as f64, clamp(r.rtt_ns.p99)),
                        4,
                        style.color.stroke_width(1),
                    )
                }))?;
            }
        }
        draw_legend(&legend, &styles)?;
        root.present()?;
    }
    Ok(svg)
}

/// The legend column: one entry per series, then the baseline and the p99 marker.
fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    styles: &[SeriesStyle],
) -> PlotResult<()> {
    let font = TextStyle::from(("sans-serif", 14).into_font()).color(&BLACK);
    let x = 12;
    let mut y = 46;
    area.draw_text("p50 round trip of", &font, (x, y - 24))?;
    let entry = |y: i32, label: &str| area.draw_text(label, &font, (x + 46, y - 8));
    area.draw(&PathElement::new(vec![(x, y), (x + 36, y)], BLACK.stroke_width(4)))?;
    area.draw(&Circle::new((x + 18, y), 3, BLACK.filled()))?;
    entry(y, "baseline: raw read/write")?;
    for style in styles {
        y += 24;
        let line = style.color.stroke_width(2);
        let points = vec![(x, y), (x + 36, y)];
        match style.dash % 3 {
            0 => area.draw(&PathElement::new(points, line))?,
            1 => area.draw(&DashedPathElement::new(points, 9, 5, line))?,
            _ => area.draw(&DashedPathElement::new(points, 2, 4, line))?,
        }
        area.draw(&Circle::new((x + 18, y), 2, style.color.filled()))?;
        entry(y, &style.label)?;
    }
    y += 34;
    area.draw(&Circle::new((x + 18, y), 4, BLACK.stroke_width(1)))?;
    entry(y, "p99 (colour of its line)")?;
    Ok(())
}

/// Bounds for a log axis a little wider than the data; `default` when there is none.
fn log_bounds(values: impl Iterator<Item = u64>, lo: f64, hi: f64) -> (f64, f64) {
    let (min, max) =
        values.filter(|&v| v > 0).fold((u64::MAX, 0), |(min, max), v| (min.min(v), max.max(v)));
    if max == 0 {
        return (lo, hi);
    }
    let (min, max) = (min as f64, max as f64);
    if max / min < 100.0 {
        // Under two decades plotters crowds the axis with in-between ticks: show 2.6 decades.
        let middle = (min * max).sqrt();
        (middle / 20.0, middle * 20.0)
    } else {
        (min / 1.6, max * 1.6)
    }
}

/// A value on a log axis must be positive.
fn clamp(ns: u64) -> f64 {
    ns.max(1) as f64
}

/// `1 B`, `10 kB`, `1 MB`: decimal units, as the ticks of a log axis fall on powers of ten.
fn format_axis_bytes(bytes: f64) -> String {
    let (value, unit) = if bytes >= 1e6 {
        (bytes / 1e6, "MB")
    } else if bytes >= 1e3 {
        (bytes / 1e3, "kB")
    } else {
        (bytes, "B")
    };
    if value.fract().abs() < 1e-9 {
        format!("{value:.0} {unit}")
    } else {
        format!("{value:.1} {unit}")
    }
}

/// The error with the file and what was being done to it, keeping its kind.
fn in_file(error: io::Error, doing: &str, path: &Path) -> io::Error {
    io::Error::new(error.kind(), format!("{doing} {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_bounds_widen_the_data_and_survive_no_data() {
        assert_eq!(log_bounds([].into_iter(), 1.0, 1e7), (1.0, 1e7));
        let (lo, hi) = log_bounds([8, 8_388_608].into_iter(), 1.0, 1e7);
        assert!(lo < 8.0 && hi > 8_388_608.0);
        let (lo, hi) = log_bounds([0, 64].into_iter(), 1.0, 1e7);
        assert!(lo < 64.0 && hi > 64.0 && lo > 0.0);
    }

    #[test]
    fn axis_bytes_use_decimal_units() {
        assert_eq!(format_axis_bytes(10.0), "10 B");
        assert_eq!(format_axis_bytes(1e4), "10 kB");
        assert_eq!(format_axis_bytes(1e6), "1 MB");
    }
}
