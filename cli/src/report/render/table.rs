//! The aligned table: one section per placement and wait strategy, each group led by its
//! raw-bytes floor, then the rows of each handler and path.

use std::io::{self, Write};

use peerpipe::transport::{TransportKind, Wait};

use crate::report::ratio::{self, RatioVerdict};
use crate::report::{BaselineRow, Placement, Report, Row, Workload, format, states};

use super::notes::{contention, machine_state, speed_change};
use super::order::{Order, dtype_rank, transport_rank};

/// Column widths of the table: label (`echo-raw zero-copy`, or `echo-raw zero-copy ring`
/// when shared-memory rows are present), added time and MB/s; at most 120 columns either way.
#[derive(Clone, Copy)]
struct Widths {
    label: usize,
    added: usize,
    rate: usize,
}

impl Widths {
    fn of(report: &Report) -> Widths {
        if report.rows.iter().any(|r| r.id.transport != TransportKind::Pipe) {
            Widths { label: 23, added: 6, rate: 6 }
        } else {
            Widths { label: 18, added: 8, rate: 8 }
        }
    }
}

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
    let widths = Widths::of(report);
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
            header(out, widths)?;
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
                Some(base) => baseline_line(out, base, widths)?,
                None => writeln!(
                    out,
                    "  {:<w$} (not measured)",
                    baseline_label(row.id.transport, false),
                    w = widths.label
                )?,
            }
        }
        for row in rows {
            row_line(out, row, widths)?;
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
        header(out, widths)?;
        for base in unused {
            writeln!(
                out,
                "{} B, {}, wait {}, pin {}",
                base.bytes, base.transport, base.wait, base.pin
            )?;
            baseline_line(out, base, widths)?;
        }
    }
    Ok(())
}

fn header(out: &mut dyn Write, widths: Widths) -> io::Result<()> {
    let Widths { label: l, added: r, rate: m } = widths;
    writeln!(
        out,
        "  {:<l$} {:>r$} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>m$} {:>6} {:>9}",
        "handler  path",
        "added",
        "p50",
        "p99",
        "encode",
        "decode",
        "server",
        "transfer",
        "cli cpu",
        "srv cpu",
        "MB/s",
        "ratio",
        "95% CI"
    )
}

fn baseline_line(out: &mut dyn Write, base: &BaselineRow, widths: Widths) -> io::Result<()> {
    let Widths { label: l, added: r, rate: m } = widths;
    let dash = "-";
    writeln!(
        out,
        "  {:<l$} {:>r$} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>m$} {:>6} {:>9}",
        baseline_label(base.transport, base.lent),
        "-",
        format::ns(base.rtt_ns.p50),
        format::ns(base.rtt_ns.p99),
        dash,
        dash,
        dash,
        dash,
        dash,
        dash,
        format::rate(format::mb_per_s(base.bytes, base.rtt_ns.p50)),
        "1.00x",
        ""
    )
}

fn row_line(out: &mut dyn Write, row: &Row, widths: Widths) -> io::Result<()> {
    let Widths { label: l, added: r, rate: m } = widths;
    // The label names the transport when it is not a pipe: `sem`, `ring` or `tcp`.
    let label = match transport_tag(row.id.transport) {
        None => format!("{:<8} {}", row.id.handler.name(), row.id.path.name()),
        Some(kind) => format!("{:<8} {:<9} {kind}", row.id.handler.name(), row.id.path.name()),
    };
    writeln!(
        out,
        "  {:<l$} {:>r$} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>m$} {:>6} {:>9}",
        label,
        added_cell(row),
        format::ns(row.rtt_ns.p50),
        format::ns(row.rtt_ns.p99),
        format::ns(row.encode_ns.p50),
        format::ns(row.decode_ns.p50),
        format::ns(row.server_ns.p50),
        format::ns(row.transfer_ns.p50),
        format::cpu_ns(row.client_cpu_ns),
        format::cpu_ns(row.server_cpu_ns),
        format::rate(row.mb_per_s),
        ratio_cell(row),
        row.ratio_ci.filter(|ci| ci.iter().all(|c| c.is_finite())).map_or(
            "-".to_owned(),
            |[lo, hi]| format!("{}-{}", format::ratio(lo), format::ratio(hi))
        ),
    )
}

/// The added-time column of a row: its round trip's p50 minus its floor's, the median over
/// the rounds of its main machine state (`Row::headline_figures`); `-` without a floor.
fn added_cell(row: &Row) -> String {
    format::added_ns(row.headline_figures().and_then(|f| f.added_ns))
}

/// The ratio column of a row: `1.25x`, `unres.` when the ratio is not a result (the interval
/// column beside it still shows the interval), `-` without one.
fn ratio_cell(row: &Row) -> String {
    match RatioVerdict::of(row) {
        RatioVerdict::Resolved { median, .. } => format!("{}x", format::ratio(median)),
        RatioVerdict::Unresolved { .. } => "unres.".to_owned(),
        RatioVerdict::Missing => "-".to_owned(),
    }
}

/// `baseline raw r/w` for pipes (`baseline raw lent` when the client lends its pages with
/// `vmsplice`), `baseline raw sem` / `baseline raw ring` for shared memory, `baseline raw tcp`.
fn baseline_label(transport: TransportKind, lent: bool) -> String {
    match transport_tag(transport) {
        Some(kind) => format!("baseline raw {kind}"),
        None if lent => "baseline raw lent".to_owned(),
        None => "baseline raw r/w".to_owned(),
    }
}

/// How a row or floor label names a transport other than a pipe: `sem`, `ring`, `tcp`.
fn transport_tag(transport: TransportKind) -> Option<&'static str> {
    match transport {
        TransportKind::Pipe => None,
        other => Some(other.name().strip_prefix("shm-").unwrap_or(other.name())),
    }
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
    let main = states::main_state(&row.state_figures())?.state;
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
