//! The aligned table: one section per placement and wait strategy, each group led by its
//! raw-bytes floor, then the rows of each handler and path.

use std::io::{self, Write};

use peerpipe::transport::{TransportKind, Wait};

use crate::report::columns::{self, LABEL, RowView};
use crate::report::format;
use crate::report::key::{Placement, Workload};
use crate::report::model::{BaselineRow, Report, Row};
use crate::report::ratio::{self, RatioVerdict};
use crate::report::states;

use super::notes::{contention, machine_state, speed_change};
use super::order::{Order, dtype_rank, transport_rank};

/// The widest line of the table, in columns (the notes above it aside).
const TABLE_WIDTH: usize = 120;

/// Writes the rows as an aligned table, at most 120 columns wide.
///
/// Rows are grouped by placement and wait strategy (one section each, with its own column
/// header), then by dtype and element count. Each group starts with the raw-bytes baseline of
/// the same byte count, wait and placement, followed by the rows of each handler × path:
/// `echo-raw` first, then `echo`, then any other handler; `zero-copy` before `codec`. Times are
/// p50 unless the column says otherwise, with units chosen per magnitude; CPU time that could
/// not be measured (NaN) shows as `-`, and so does a ratio without a baseline. A ratio that is
/// not a result ([`RatioVerdict`]: its interval too wide, across 1.00x, or unknown) shows as
/// `unres.` beside its interval, and a line under the legend says what that means. When the
/// machine was in several states during the run ([`Machine::states`](crate::report::Machine::states)),
/// each group's line (or, when it has no room left, a line under it) gives the 4 KiB round trip
/// of the state its rows' figures come from: `main state 4 KiB 1.32us`. Baselines that no row
/// uses are listed at the end.
///
/// # Errors
/// Errors of `out`.
///
/// # Examples
/// ```
/// use peerpipe_cli::report::{ConfigRecord, Machine, Report, render};
/// let report = Report {
///     peerpipe: "0.1.0".into(),
///     machine: Machine::default(),
///     config: ConfigRecord::default(),
///     baseline: vec![],
///     rows: vec![],
///     sync_costs: vec![],
///     skipped: vec![],
/// };
/// let mut out = Vec::new();
/// render::table(&report, &mut out).unwrap();
/// assert!(String::from_utf8(out).unwrap().contains("no rows"));
/// ```
pub fn table(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let order = Order::of(report);
    // Rows of another transport than the pipe name it in their label, which widens it.
    let wide = report.rows.iter().any(|r| r.id.transport != TransportKind::Pipe);
    let m = &report.machine;
    let bytes = |b: Option<u64>| b.map_or("unknown".to_owned(), |b| format!("{b} bytes"));
    writeln!(
        out,
        "peerpipe {} on {} ({} cores), kernel {}; pipe capacity granted {} (system max {})",
        report.peerpipe,
        if m.cpu.is_empty() { "unknown CPU" } else { &m.cpu },
        m.cores,
        if m.kernel.is_empty() { "unknown" } else { &m.kernel },
        bytes(m.pipe_size_granted),
        bytes(m.pipe_max_size),
    )?;
    writeln!(
        out,
        "p50, p99: round trip. encode, decode, server, transfer: p50 of each phase (transfer = \
         round trip - the others)."
    )?;
    writeln!(
        out,
        "cpu: CPU time (user + system) per round trip. ratio: paired - the median over {} of \
         the row's p50 / the raw",
        rounds_phrase(report.config.rounds)
    )?;
    writeln!(
        out,
        "floor's p50 in the same round (same bytes, transport, wait, pin), with its 95% interval. \
         added: the median of row p50 -"
    )?;
    writeln!(
        out,
        "floor p50 in the same round: what the row adds to moving its bytes raw. Both over the \
         rounds of the row's main state."
    )?;
    if report.rows.iter().any(|r| RatioVerdict::of(r).is_unresolved()) {
        writeln!(out, "{}", ratio::unresolved_note("unres. = unresolved"))?;
    }
    if !m.clock.is_empty() {
        writeln!(out, "clock: {}; PEERPIPE_CLOCK=monotonic times with clock_gettime.", m.clock)?;
    }
    if report.config.load > 0 {
        writeln!(
            out,
            "load: {} busy thread{} beside the client and servers for the whole run (--load).",
            report.config.load,
            if report.config.load == 1 { "" } else { "s" }
        )?;
    }
    if let Some(route) = report.baseline.iter().find_map(|b| b.route.as_deref()) {
        // The floors crossed the same route as the rows (`--spawn`); say which.
        let route = route.rsplit_once(" --raw-echo").map_or(route, |(prefix, _)| prefix);
        writeln!(out, "raw floors through the route: {route} --raw-echo BYTES")?;
    }
    if let Some(line) = speed_change(report) {
        writeln!(out, "{line}")?;
    }
    if let Some(line) = contention(report) {
        writeln!(out, "{line}")?;
    }
    if let Some(lines) = machine_state(report) {
        writeln!(out, "{lines}")?;
    }
    if report.rows.is_empty() {
        writeln!(out, "(no rows measured)")?;
    }
    let mut groups: Vec<(Placement, Wait, Workload, u64)> = Vec::new();
    for row in &report.rows {
        let key = (row.id.pin, row.id.wait, row.id.dtype, row.id.elements);
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    groups.sort_by(|a, b| {
        (order.pin(a.0), order.wait(a.1), dtype_rank(a.2), a.3).cmp(&(
            order.pin(b.0),
            order.wait(b.1),
            dtype_rank(b.2),
            b.3,
        ))
    });
    let mut section: Option<(Placement, Wait)> = None;
    // When the machine was in several states during the run, each group says which state its
    // rows' figures come from.
    let several_states = report.machine.states.len() >= 2;
    for &(pin, wait, dtype, elements) in &groups {
        if section != Some((pin, wait)) {
            section = Some((pin, wait));
            writeln!(out)?;
            writeln!(out, "wait {wait}, pin {pin}")?;
            header(out, wide)?;
        }
        let mut rows: Vec<&Row> = report
            .rows
            .iter()
            .filter(|r| {
                r.id.pin == pin
                    && r.id.wait == wait
                    && r.id.dtype == dtype
                    && r.id.elements == elements
            })
            .collect();
        rows.sort_by(|a, b| order.compare_within_group(a, b));
        let bytes = rows.first().map_or(0, |r| r.id.bytes);
        let notes: String = rows
            .first()
            .and_then(|row| report.baseline_for(row))
            .map(|floor| floor_notes(floor, rows.iter().copied()))
            .unwrap_or_default();
        let title = format!("{dtype} x {elements} ({}){notes}", format::bytes(bytes));
        let state = rows
            .first()
            .and_then(|row| main_state_probe_ns(report, row))
            .filter(|_| several_states)
            .map(|probe_ns| format!("main state 4 KiB {}", format::ns(probe_ns)));
        match state {
            // On the group's line when it fits in the table's width, else on a line of its own.
            Some(state) if title.chars().count() + 2 + state.len() <= TABLE_WIDTH => {
                writeln!(out, "{title}; {state}")?
            }
            Some(state) => writeln!(out, "{title}\n  {state}")?,
            None => writeln!(out, "{title}")?,
        }
        // The raw floor of each transport in the group, in the rows' transport order.
        let mut floors: Vec<&Row> = Vec::new();
        for row in &rows {
            if !floors.iter().any(|f| f.id.transport == row.id.transport) {
                floors.push(row);
            }
        }
        floors.sort_by_key(|r| transport_rank(r.id.transport));
        for row in floors {
            match report.baseline_for(row) {
                Some(base) => baseline_line(out, base, wide)?,
                None => writeln!(
                    out,
                    "  {:<w$} (not measured)",
                    columns::floor_label(row.id.transport, false),
                    w = LABEL.width(wide)
                )?,
            }
        }
        for row in rows {
            row_line(out, row, wide)?;
        }
    }
    let unused: Vec<&BaselineRow> = report
        .baseline
        .iter()
        .filter(|b| !report.rows.iter().any(|r| report.baseline_for(r) == Some(*b)))
        .collect();
    if !unused.is_empty() {
        writeln!(out)?;
        writeln!(out, "baselines without rows")?;
        header(out, wide)?;
        for base in unused {
            writeln!(
                out,
                "{} B, {}, wait {}, pin {}",
                base.bytes, base.transport, base.wait, base.pin
            )?;
            baseline_line(out, base, wide)?;
        }
    }
    Ok(())
}

/// The column headers of a section (the report's `columns.rs`): at most 120 columns, wider labels
/// in a table with another transport than the pipe (`wide`).
fn header(out: &mut dyn Write, wide: bool) -> io::Result<()> {
    let cells: Vec<String> = columns::table_cells().map(|cell| cell.header(wide)).collect();
    writeln!(out, "  {}", cells.join(" "))
}

fn baseline_line(out: &mut dyn Write, base: &BaselineRow, wide: bool) -> io::Result<()> {
    let cells: Vec<String> = columns::table_cells().map(|cell| cell.of_floor(base, wide)).collect();
    writeln!(out, "  {}", cells.join(" "))
}

fn row_line(out: &mut dyn Write, row: &Row, wide: bool) -> io::Result<()> {
    let view = RowView::of(row);
    let cells: Vec<String> = columns::table_cells().map(|cell| cell.of_row(&view, wide)).collect();
    writeln!(out, "  {}", cells.join(" "))
}

/// `20 rounds`, or `the rounds` for a report that does not say.
fn rounds_phrase(rounds: u32) -> String {
    match rounds {
        0 => "the rounds".to_owned(),
        1 => "1 round".to_owned(),
        n => format!("{n} rounds"),
    }
}

/// The 4 KiB probe of `row`'s main state ([`states::main_state`]), the state its figures come
/// from: the state's `probe_ns` in the report's list; `None` when its rounds carry no state.
fn main_state_probe_ns(report: &Report, row: &Row) -> Option<u64> {
    let main = states::main_state(&states::figures(&row.rounds))?.state;
    report.machine.states.iter().find(|s| s.id == main).map(|s| s.probe_ns)
}

/// What a group's header line adds: the spread of its floor's per-round p50, and how often
/// client and server shared a core when the scheduler placed them.
fn floor_notes<'a>(floor: &BaselineRow, rows: impl Iterator<Item = &'a Row>) -> String {
    let mut notes = String::new();
    if let Some((lo, hi)) = floor.round_p50_range_ns() {
        notes.push_str(&format!(
            "  floor p50 per round {}..{} ({:.2}x)",
            format::ns(lo),
            format::ns(hi),
            hi as f64 / lo.max(1) as f64
        ));
    }
    if floor.pin == Placement::Free {
        let shared: Vec<f64> = std::iter::once(floor.shared_core_share)
            .chain(rows.map(|r| r.shared_core_share))
            .flatten()
            .collect();
        if let Some(most) = shared.iter().copied().reduce(f64::max) {
            notes.push_str(&format!(
                "; client and server on one core in up to {:.0}% of rounds",
                most * 100.0
            ));
        }
    }
    notes
}
