//! Rendering a report as an aligned table and a verdict in plain words.
//!
//! The table is grouped by placement and wait strategy, then by dtype and element count; inside
//! each group the raw-bytes baseline comes first, then `echo-raw` (the server converts nothing)
//! and `echo` (both sides convert) on each path, so the cost of every extra conversion reads
//! straight down a column. The verdict splits each size's p50 round trip into converting,
//! moving bytes and waiting ([`breakdown`]), names the fastest configuration and holds it
//! against the budget.

use std::cmp::Ordering;
use std::io::{self, Write};

use super::{BaselineRow, Report, Row, Workload, crosscore, format};
use peerpipe::transport::TransportKind;

/// Column widths of the table: label (`echo-raw zero-copy`, or `echo-raw zero-copy ring`
/// when shared-memory rows are present), round trips and MB/s; at most 120 columns either way.
#[derive(Clone, Copy)]
struct Widths {
    label: usize,
    trips: usize,
    rate: usize,
}

impl Widths {
    fn of(report: &Report) -> Widths {
        if report.rows.iter().any(|r| r.transport != "pipe") {
            Widths { label: 23, trips: 6, rate: 6 }
        } else {
            Widths { label: 18, trips: 7, rate: 8 }
        }
    }
}

/// A floor whose per-round p50 varied by more than this factor (max ÷ min) within its group
/// is reported as a change of the machine's speed during the run.
pub const SPEED_CHANGE_FACTOR: f64 = 1.5;

/// Writes the rows as an aligned table, at most 120 columns wide.
///
/// Rows are grouped by placement and wait strategy (one section each, with its own column
/// header), then by dtype and element count. Each group starts with the raw-bytes baseline of
/// the same byte count, wait and placement, followed by the rows of each handler × path:
/// `echo-raw` first, then `echo`, then any other handler; `zero-copy` before `codec`. Times are
/// p50 unless the column says otherwise, with units chosen per magnitude; CPU time that could
/// not be measured (NaN) shows as `-`, and so does a ratio without a baseline. Baselines that no
/// row uses are listed at the end.
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
        "floor's p50 in the same round (same bytes, transport, wait, pin), with its 95% interval."
    )?;
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
    let mut groups: Vec<(&str, &str, &str, u64)> = Vec::new();
    for row in &report.rows {
        let key = (row.pin.as_str(), row.wait.as_str(), row.dtype.as_str(), row.elements);
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
    let mut section: Option<(&str, &str)> = None;
    // When the machine changed state during the run, each group says which it was in.
    let changed =
        matches!(crosscore::block_spread(&report.cross_core_probes()), Some((_, _, Some(_))));
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
                r.pin == pin && r.wait == wait && r.dtype == dtype && r.elements == elements
            })
            .collect();
        rows.sort_by(|a, b| order.compare_within_group(a, b));
        let bytes = rows.first().map_or(0, |r| r.bytes);
        let notes: String = rows
            .first()
            .and_then(|row| report.baseline_for(row))
            .map(|floor| {
                let mut notes = floor_notes(floor, rows.iter().copied());
                if let Some(probe) = floor.cross_core.filter(|_| changed) {
                    notes.push_str(&format!("; cross-core 4 KiB {}", format::ns(probe.block_ns)));
                }
                notes
            })
            .unwrap_or_default();
        writeln!(out, "{dtype} x {elements} ({}){notes}", format::bytes(bytes))?;
        // The raw floor of each transport in the group, in the rows' transport order.
        let mut floors: Vec<&Row> = Vec::new();
        for row in &rows {
            if !floors.iter().any(|f| f.transport == row.transport) {
                floors.push(row);
            }
        }
        floors.sort_by_key(|r| transport_rank(&r.transport));
        for row in floors {
            match report.baseline_for(row) {
                Some(base) => baseline_line(out, base, widths)?,
                None => writeln!(
                    out,
                    "  {:<w$} (not measured)",
                    baseline_label(&row.transport, false),
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
    let Widths { label: l, trips: r, rate: m } = widths;
    writeln!(
        out,
        "  {:<l$} {:>r$} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>m$} {:>6} {:>9}",
        "handler  path",
        "trips",
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
    let Widths { label: l, trips: r, rate: m } = widths;
    let dash = "-";
    writeln!(
        out,
        "  {:<l$} {:>r$} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>m$} {:>6} {:>9}",
        baseline_label(&base.transport, base.lent),
        base.iterations,
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
    let Widths { label: l, trips: r, rate: m } = widths;
    // The label names the transport when it is not a pipe: `sem`, `ring` or `tcp`.
    let label = match transport_tag(&row.transport) {
        None => format!("{:<8} {}", row.handler, row.path),
        Some(kind) => format!("{:<8} {:<9} {kind}", row.handler, row.path),
    };
    writeln!(
        out,
        "  {:<l$} {:>r$} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>m$} {:>6} {:>9}",
        label,
        row.iterations,
        format::ns(row.rtt_ns.p50),
        format::ns(row.rtt_ns.p99),
        format::ns(row.encode_ns.p50),
        format::ns(row.decode_ns.p50),
        format::ns(row.server_ns.p50),
        format::ns(row.transfer_ns.p50),
        format::cpu_ns(row.client_cpu_ns),
        format::cpu_ns(row.server_cpu_ns),
        format::rate(row.mb_per_s),
        row.ratio_to_baseline
            .filter(|r| r.is_finite())
            .map_or("-".to_owned(), |r| format!("{}x", format::ratio(r))),
        row.ratio_ci.filter(|ci| ci.iter().all(|c| c.is_finite())).map_or(
            "-".to_owned(),
            |[lo, hi]| format!("{}-{}", format::ratio(lo), format::ratio(hi))
        ),
    )
}

/// `baseline raw r/w` for pipes (`baseline raw lent` when the client lends its pages with
/// `vmsplice`), `baseline raw sem` / `baseline raw ring` for shared memory, `baseline raw tcp`.
fn baseline_label(transport: &str, lent: bool) -> String {
    match transport_tag(transport) {
        Some(kind) => format!("baseline raw {kind}"),
        None if lent => "baseline raw lent".to_owned(),
        None => "baseline raw r/w".to_owned(),
    }
}

/// How a row or floor label names a transport other than a pipe: `sem`, `ring`, `tcp`.
fn transport_tag(transport: &str) -> Option<&str> {
    match transport {
        "pipe" => None,
        other => Some(other.strip_prefix("shm-").unwrap_or(other)),
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
    if floor.pin == "free" {
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

/// Share of contended rounds (see [`super::contended_share`]) above which the table says so.
pub const CONTENDED_NOTE_SHARE: f64 = 0.25;

/// One line when more than [`CONTENDED_NOTE_SHARE`] of all rounds (floors and rows) were
/// contended: another task kept taking a CPU from the client or a server, which adds about the
/// same wait to a floor and its rows and so lowers ratios — a busy machine, not a slow one.
pub fn contention(report: &Report) -> Option<String> {
    let rounds: Vec<super::Round> = report
        .baseline
        .iter()
        .flat_map(|b| b.rounds.iter().copied())
        .chain(report.rows.iter().flat_map(|r| r.rounds.iter().copied()))
        .collect();
    let share = super::contended_share(&rounds)?;
    (share > CONTENDED_NOTE_SHARE).then(|| {
        format!(
            "note: in {:.0}% of the rounds another task took a CPU from the client or a server \
             ({}+ preemptions in a burst):\nthe machine was busy; contention adds about the same \
             wait to a floor and its rows, so ratios read lower than on a quiet machine.",
            share * 100.0,
            super::CONTENDED_PREEMPTIONS
        )
    })
}

/// The machine's state as the cross-core probe saw it before each group (see
/// [`super::crosscore`]): one line with the round trips between the client's CPU and the
/// server's, and a note when the 4 KiB figure varied by more than
/// [`super::crosscore::STATE_CHANGE_FACTOR`] across groups — groups measured in different
/// states have different ratios. `None` when no group was probed (no `split` placement).
pub fn machine_state(report: &Report) -> Option<String> {
    let probes = report.cross_core_probes();
    let (lo, hi, changed) = crosscore::block_spread(&probes)?;
    let range = |lo: u64, hi: u64| {
        if lo == hi { format::ns(lo) } else { format!("{}..{}", format::ns(lo), format::ns(hi)) }
    };
    let line_lo = probes.iter().map(|c| c.line_ns).min().unwrap_or(0);
    let line_hi = probes.iter().map(|c| c.line_ns).max().unwrap_or(0);
    let mut out = format!(
        "machine state: a cache line between the first two CPUs {}, 4 KiB {} (round trips, \
         probed before each group).",
        range(line_lo, line_hi),
        range(lo, hi)
    );
    if let Some(factor) = changed {
        out.push('\n');
        out.push_str(&crosscore::state_change_note(factor));
    }
    Some(out)
}

/// One line when some floor's per-round p50 varied by more than [`SPEED_CHANGE_FACTOR`]: the
/// machine changed speed during the run, which paired ratios survive and absolute times do
/// not.
pub fn speed_change(report: &Report) -> Option<String> {
    let spread = |b: &BaselineRow| {
        b.round_p50_range_ns().map(|(lo, hi)| (hi as f64 / lo.max(1) as f64, lo, hi))
    };
    let changed: Vec<(f64, u64, u64, &BaselineRow)> = report
        .baseline
        .iter()
        .filter_map(|b| spread(b).map(|(f, lo, hi)| (f, lo, hi, b)))
        .filter(|&(f, ..)| f > SPEED_CHANGE_FACTOR)
        .collect();
    let &(factor, lo, hi, worst) = changed.iter().max_by(|a, b| a.0.total_cmp(&b.0))?;
    let others = match changed.len() {
        1 => String::new(),
        n => format!(" (and {} other floors)", n - 1),
    };
    Some(format!(
        "note: the {} B floor ({}, {}, {}) ranged {}..{} ({}x) across rounds{others}: the \
         machine changed speed during the run; ratios are paired and hold, absolute times do not.",
        worst.bytes,
        worst.transport,
        worst.wait,
        worst.pin,
        format::ns(lo),
        format::ns(hi),
        format::ratio(factor)
    ))
}

fn transport_rank(transport: &str) -> usize {
    TransportKind::EVERY.iter().position(|t| t.name() == transport).unwrap_or(usize::MAX)
}

/// Where the p50 round trip of one row goes, in nanoseconds; the three parts add up to
/// `round_trip_ns`.
///
/// - `converting`: p50 client encode + p50 client decode + p50 server time, at most the round
///   trip;
/// - `transfer` (`moving + waiting`): the rest of the p50 round trip;
/// - `waiting`: the p50 round trip of the smallest raw baseline with the same wait strategy and
///   placement (the cost of a wake-up with next to no data), at most the transfer;
/// - `moving`: the transfer minus the waiting.
///
/// Without such a baseline, moving and waiting cannot be told apart: `waiting_ns` is `None` and
/// `moving_ns` holds the whole transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Breakdown {
    /// The row's p50 round trip.
    pub round_trip_ns: u64,
    /// Client encode + client decode + server time (p50s), capped at the round trip.
    pub converting_ns: u64,
    /// Transfer minus waiting; the whole transfer when `waiting_ns` is `None`.
    pub moving_ns: u64,
    /// The wake-up cost, capped at the transfer; `None` without a baseline at this wait and pin.
    pub waiting_ns: Option<u64>,
}

impl Breakdown {
    /// Percent of the round trip for (converting, moving, waiting); all zero for a zero round
    /// trip, waiting zero when unknown.
    pub fn shares_pct(&self) -> (f64, f64, f64) {
        if self.round_trip_ns == 0 {
            return (0.0, 0.0, 0.0);
        }
        let pct = |v: u64| v as f64 * 100.0 / self.round_trip_ns as f64;
        (pct(self.converting_ns), pct(self.moving_ns), pct(self.waiting_ns.unwrap_or(0)))
    }
}

/// Splits the p50 round trip of `row` into converting, moving bytes and waiting; see
/// [`Breakdown`] for the definitions.
///
/// # Examples
/// ```
/// use peerpipe_cli::report::{BaselineRow, Percentiles, Report, Row, render};
/// # let p = |p50| Percentiles { p50, ..Percentiles::default() };
/// # let row = Row { dtype: "f64".into(), elements: 500, bytes: 4000, transport: "pipe".into(),
/// #     path: "codec".into(), handler: "echo".into(), wait: "block".into(), pin: "free".into(),
/// #     iterations: 1, rtt_ns: p(100_000), transfer_ns: p(90_000), encode_ns: p(4_000),
/// #     decode_ns: p(3_000), server_ns: p(3_000), client_cpu_ns: f64::NAN,
/// #     server_cpu_ns: f64::NAN, mb_per_s: 80.0, ratio_to_baseline: None, ratio_ci: None,
/// #     rounds: vec![], shared_core_share: None };
/// # let base = BaselineRow { bytes: 8, transport: "pipe".into(), wait: "block".into(),
/// #     pin: "free".into(), lent: false, iterations: 1,
/// #     rtt_ns: p(60_000), rounds: vec![], shared_core_share: None, route: None,
/// #     cross_core: None };
/// # let report = Report { peerpipe: "0".into(), machine: Default::default(),
/// #     config: Default::default(), baseline: vec![base], rows: vec![row.clone()],
/// #     sync_costs: vec![], skipped: vec![] };
/// // A 100 µs round trip of which 10 µs is conversion, with a 60 µs wake-up at this wait:
/// let b = render::breakdown(&report, &row);
/// assert_eq!((b.converting_ns, b.moving_ns, b.waiting_ns), (10_000, 30_000, Some(60_000)));
/// ```
pub fn breakdown(report: &Report, row: &Row) -> Breakdown {
    let round_trip = row.rtt_ns.p50;
    let converting = row
        .encode_ns
        .p50
        .saturating_add(row.decode_ns.p50)
        .saturating_add(row.server_ns.p50)
        .min(round_trip);
    let transfer = round_trip - converting;
    let waiting = wake_up_ns(report, &row.transport, &row.wait, &row.pin).map(|w| w.min(transfer));
    Breakdown {
        round_trip_ns: round_trip,
        converting_ns: converting,
        moving_ns: transfer - waiting.unwrap_or(0),
        waiting_ns: waiting,
    }
}

/// The p50 of the smallest-bytes baseline of this transport at this wait and placement.
fn wake_up_ns(report: &Report, transport: &str, wait: &str, pin: &str) -> Option<u64> {
    report
        .baseline
        .iter()
        .filter(|b| b.transport == transport && b.wait == wait && b.pin == pin)
        .min_by_key(|b| b.bytes)
        .map(|b| b.rtt_ns.p50)
}

/// Writes the verdict in plain words.
///
/// For each size (dtype × elements): for each wait strategy and placement, the fastest handler
/// and path and where its p50 round trip goes (see [`Breakdown`], whose definitions are
/// printed in one line under the heading); then the fastest configuration of the size and
/// whether its p50 meets `config.budget_ns`, by how much. A last line counts the sizes that
/// meet the budget. A budget of zero means none was set.
///
/// # Errors
/// Errors of `out`.
pub fn verdict(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let order = Order::of(report);
    let budget = report.config.budget_ns;
    writeln!(
        out,
        "verdict: where the p50 round trip goes, per size and wait (fastest handler, path)"
    )?;
    writeln!(
        out,
        "(converting = encode+decode+server p50s; waiting = smallest raw baseline p50, same wait+pin, \
         capped; moving = the rest)"
    )?;
    let mut sizes: Vec<(&str, u64, u64)> = Vec::new();
    for row in &report.rows {
        let key = (row.dtype.as_str(), row.elements, row.bytes);
        if !sizes.contains(&key) {
            sizes.push(key);
        }
    }
    if sizes.is_empty() {
        writeln!(out, "no rows were measured, so there is nothing to judge.")?;
        return Ok(());
    }
    sizes.sort_by_key(|a| (dtype_rank(a.0), a.1, a.2));
    let several_pins = order.pins.len() > 1;
    let setting_name = |pin: &str, wait: &str| {
        if several_pins { format!("{wait}, {pin}") } else { wait.to_owned() }
    };
    let setting_width = report
        .rows
        .iter()
        .map(|r| setting_name(&r.pin, &r.wait).chars().count())
        .max()
        .unwrap_or(0);
    let mut met = Vec::new();
    let mut missed = Vec::new();
    for &(dtype, elements, bytes) in &sizes {
        let size_name = format!("{dtype} x {elements}");
        writeln!(out)?;
        writeln!(out, "{size_name} ({}):", format::bytes(bytes))?;
        let rows: Vec<&Row> =
            report.rows.iter().filter(|r| r.dtype == dtype && r.elements == elements).collect();
        let mut settings: Vec<(&str, &str)> = Vec::new();
        for row in &rows {
            let key = (row.pin.as_str(), row.wait.as_str());
            if !settings.contains(&key) {
                settings.push(key);
            }
        }
        settings.sort_by_key(|&(pin, wait)| (order.pin(pin), order.wait(wait)));
        for (pin, wait) in settings {
            let Some(best) =
                fastest(rows.iter().copied().filter(|r| r.pin == pin && r.wait == wait))
            else {
                continue;
            };
            let setting = setting_name(pin, wait);
            let b = breakdown(report, best);
            let (conv, moving, waiting) = b.shares_pct();
            let parts = match b.waiting_ns {
                Some(w) => format!(
                    "converting {conv:4.1}% ({}), moving {moving:4.1}% ({}), waiting {waiting:4.1}% ({})",
                    format::ns(b.converting_ns),
                    format::ns(b.moving_ns),
                    format::ns(w)
                ),
                None => format!(
                    "converting {conv:4.1}% ({}), transfer {moving:4.1}% ({}; no baseline to \
                     split moving from waiting)",
                    format::ns(b.converting_ns),
                    format::ns(b.moving_ns)
                ),
            };
            let transport = if best.transport == "pipe" {
                String::new()
            } else {
                format!(" {}", best.transport)
            };
            writeln!(
                out,
                "  {setting:<setting_width$} {:>7} = {parts} [{} {}{transport}]",
                format::ns(b.round_trip_ns),
                best.handler,
                best.path
            )?;
        }
        let Some(best) = fastest(rows.iter().copied()) else { continue };
        let placement = if several_pins { format!(", {}", best.pin) } else { String::new() };
        let judged = judge(best.rtt_ns.p50, budget);
        let transport = if best.transport == "pipe" {
            String::new()
        } else {
            format!(" over {}", best.transport)
        };
        writeln!(
            out,
            "  fastest: {} {}{transport}, {}{placement}: p50 {}, p99 {}{judged}",
            best.handler,
            best.path,
            best.wait,
            format::ns(best.rtt_ns.p50),
            format::ns(best.rtt_ns.p99),
        )?;
        super::answer::verdict_lines(report, dtype, elements, out)?;
        if best.rtt_ns.p50 <= budget {
            met.push(size_name);
        } else {
            missed.push(size_name);
        }
    }
    below_floor_notes(report, out)?;
    let crossings = crossovers(report);
    if !crossings.is_empty() {
        writeln!(out)?;
        // Shared memory, tcp or both: name what is compared with the pipe.
        let mut others: Vec<&str> = Vec::new();
        for crossing in &crossings {
            let kind = if crossing.transport.starts_with("shm-") {
                "shared memory"
            } else {
                crossing.transport.as_str()
            };
            if !others.contains(&kind) {
                others.push(kind);
            }
        }
        let others = others.join(" and ");
        writeln!(out, "{others} against pipes (p50 round trip, {others} vs pipe):")?;
        for crossing in &crossings {
            let pin = if several_pins { format!(", {}", crossing.pin) } else { String::new() };
            writeln!(
                out,
                "  {} {}{pin} ({} {} {}): {}",
                crossing.transport,
                crossing.wait,
                crossing.dtype,
                crossing.handler,
                crossing.path,
                crossing.describe()
            )?;
        }
    }
    writeln!(out)?;
    if budget == 0 {
        writeln!(out, "no budget was set (--budget).")?;
    } else if missed.is_empty() {
        writeln!(
            out,
            "budget {}: every size meets it ({} of {}).",
            format::ns(budget),
            met.len(),
            sizes.len()
        )?;
    } else {
        writeln!(
            out,
            "budget {}: met by {} of {} sizes; missed by:",
            format::ns(budget),
            met.len(),
            sizes.len()
        )?;
        let mut line = String::from(" ");
        for (i, name) in missed.iter().enumerate() {
            let piece =
                if i + 1 < missed.len() { format!(" {name},") } else { format!(" {name}.") };
            if line.len() + piece.len() > 100 {
                writeln!(out, "{line}")?;
                line = String::from(" ");
            }
            line.push_str(&piece);
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// A ratio below this is explained in the verdict: a row should not beat the raw floor of
/// its own bytes.
pub const BELOW_FLOOR: f64 = 0.95;

/// Lists every row whose paired ratio is below [`BELOW_FLOOR`], with its interval and what the
/// interval says: noise when it reaches the threshold, a row that really beat its floor when
/// it does not (docs/PERFORMANCE.md, "Ratios below the floor", says what is known of why).
fn below_floor_notes(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let below: Vec<&Row> = report
        .rows
        .iter()
        .filter(|r| r.ratio_to_baseline.is_some_and(|ratio| ratio < BELOW_FLOOR))
        .collect();
    if below.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "ratios below {BELOW_FLOOR:.2} (a row faster than the raw floor of its own bytes):"
    )?;
    for row in below {
        let ratio = row.ratio_to_baseline.unwrap_or(f64::NAN);
        let transport =
            if row.transport == "pipe" { String::new() } else { format!(" {}", row.transport) };
        let why = match row.ratio_ci {
            Some([lo, hi]) if hi >= BELOW_FLOOR => format!(
                "[{}-{}]: its interval reaches {BELOW_FLOOR:.2}, so this is the noise of the run",
                format::ratio(lo),
                format::ratio(hi)
            ),
            Some([lo, hi]) => format!(
                "[{}-{}]: beyond the noise; see docs/PERFORMANCE.md, \"Ratios below the floor\"",
                format::ratio(lo),
                format::ratio(hi)
            ),
            None => "no interval (too few rounds)".to_owned(),
        };
        writeln!(
            out,
            "  {} x {} {} {}{transport}, {}, {}: {}x {why}",
            row.dtype,
            row.elements,
            row.handler,
            row.path,
            row.wait,
            row.pin,
            format::ratio(ratio)
        )?;
    }
    Ok(())
}

/// Where another transport (shared memory, tcp) starts to beat the pipe, for one wait
/// strategy and placement, measured on one representative kind of row (see [`crossovers`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crossover {
    /// `shm-sem`, `shm-ring` or `tcp`.
    pub transport: String,
    /// Wait strategy of both.
    pub wait: String,
    /// Placement of both.
    pub pin: String,
    /// The rows compared: dtype, handler and path.
    pub dtype: String,
    /// Handler of the rows compared.
    pub handler: String,
    /// Path of the rows compared.
    pub path: String,
    /// Per measured size, ascending: (elements, shared-memory p50, pipe p50) in ns.
    pub points: Vec<(u64, u64, u64)>,
    /// The smallest size from which shared memory is faster at every larger measured size;
    /// `None` when it is not faster at the largest.
    pub wins_from: Option<u64>,
}

impl Crossover {
    /// `wins from 500 elements, the smallest measured (...)`, in words, with every point.
    pub fn describe(&self) -> String {
        let points: Vec<String> = self
            .points
            .iter()
            .map(|&(elements, shm, pipe)| {
                format!(
                    "{elements}: {} vs {} ({:.2}x)",
                    format::ns(shm),
                    format::ns(pipe),
                    shm as f64 / pipe.max(1) as f64
                )
            })
            .collect();
        let smallest = self.points.first().map_or(0, |p| p.0);
        let verdict = match self.wins_from {
            Some(from) if from == smallest => {
                format!("wins at every measured size, from {from} elements")
            }
            Some(from) => format!("crossover: wins from {from} elements, loses below"),
            None if self.points.iter().all(|p| p.1 >= p.2) => {
                "loses at every measured size".to_owned()
            }
            None => "loses at the largest measured size".to_owned(),
        };
        format!("{verdict}; {}", points.join(", "))
    }
}

/// For each shared-memory transport, wait strategy and placement measured beside pipes: the
/// crossover size from which shared memory is faster, comparing rows of one kind — f64 if
/// measured, `echo-raw` if measured, `zero-copy` if measured (else the first of each) — at
/// every size both have. Empty when the report has no shared-memory rows.
pub fn crossovers(report: &Report) -> Vec<Crossover> {
    let prefer = |wanted: &str, values: Vec<&str>| -> Option<String> {
        values.iter().find(|v| **v == wanted).or(values.first()).map(|v| (*v).to_owned())
    };
    let distinct = |f: fn(&Row) -> &str| -> Vec<&str> {
        let mut values: Vec<&str> = Vec::new();
        for row in &report.rows {
            if !values.contains(&f(row)) {
                values.push(f(row));
            }
        }
        values
    };
    let (Some(dtype), Some(handler), Some(path)) = (
        prefer("f64", distinct(|r| &r.dtype)),
        prefer("echo-raw", distinct(|r| &r.handler)),
        prefer("zero-copy", distinct(|r| &r.path)),
    ) else {
        return Vec::new();
    };
    let of_kind = |r: &&Row| r.dtype == dtype && r.handler == handler && r.path == path;
    let mut groups: Vec<(&str, &str, &str)> = Vec::new();
    for row in report.rows.iter().filter(of_kind).filter(|r| r.transport != "pipe") {
        let key = (row.transport.as_str(), row.wait.as_str(), row.pin.as_str());
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    let order = Order::of(report);
    groups.sort_by_key(|&(transport, wait, pin)| (transport, order.pin(pin), order.wait(wait)));
    let mut out = Vec::new();
    for (transport, wait, pin) in groups {
        let find = |t: &str, elements: u64| {
            report.rows.iter().filter(of_kind).find(|r| {
                r.transport == t && r.wait == wait && r.pin == pin && r.elements == elements
            })
        };
        let mut points: Vec<(u64, u64, u64)> = report
            .rows
            .iter()
            .filter(of_kind)
            .filter(|r| r.transport == transport && r.wait == wait && r.pin == pin)
            .filter_map(|shm| {
                find("pipe", shm.elements).map(|p| (shm.elements, shm.rtt_ns.p50, p.rtt_ns.p50))
            })
            .collect();
        points.sort_unstable();
        points.dedup_by_key(|p| p.0);
        if points.is_empty() {
            continue;
        }
        let mut wins_from = None;
        for &(elements, shm, pipe) in points.iter().rev() {
            if shm < pipe {
                wins_from = Some(elements);
            } else {
                break;
            }
        }
        out.push(Crossover {
            transport: transport.to_owned(),
            wait: wait.to_owned(),
            pin: pin.to_owned(),
            dtype: dtype.clone(),
            handler: handler.clone(),
            path: path.clone(),
            points,
            wins_from,
        });
    }
    out
}

/// The row with the lowest p50 round trip (the first of equals).
fn fastest<'a>(rows: impl Iterator<Item = &'a Row>) -> Option<&'a Row> {
    rows.fold(None, |best: Option<&Row>, row| match best {
        Some(b) if b.rtt_ns.p50 <= row.rtt_ns.p50 => Some(b),
        _ => Some(row),
    })
}

/// `: meets the 150us budget with 148us to spare` or `: misses … by …`.
fn judge(p50: u64, budget: u64) -> String {
    if budget == 0 {
        String::new()
    } else if p50 <= budget {
        format!(
            "; meets the {} budget with {} to spare",
            format::ns(budget),
            format::ns(budget - p50)
        )
    } else {
        format!(
            "; misses the {} budget by {} ({:.2}x)",
            format::ns(budget),
            format::ns(p50 - budget),
            p50 as f64 / budget as f64
        )
    }
}

/// Ranks for sorting: known names in their natural order, others in order of first appearance.
struct Order<'a> {
    pins: Vec<&'a str>,
    waits: Vec<&'a str>,
}

impl<'a> Order<'a> {
    fn of(report: &'a Report) -> Order<'a> {
        let mut pins = Vec::new();
        let mut waits = Vec::new();
        let settings = report
            .rows
            .iter()
            .map(|r| (r.pin.as_str(), r.wait.as_str()))
            .chain(report.baseline.iter().map(|b| (b.pin.as_str(), b.wait.as_str())));
        for (pin, wait) in settings {
            if !pins.contains(&pin) {
                pins.push(pin);
            }
            if !waits.contains(&wait) {
                waits.push(wait);
            }
        }
        Order { pins, waits }
    }

    fn pin(&self, pin: &str) -> usize {
        self.pins.iter().position(|&p| p == pin).unwrap_or(usize::MAX)
    }

    fn wait(&self, wait: &str) -> usize {
        self.waits.iter().position(|&w| w == wait).unwrap_or(usize::MAX)
    }

    fn compare_within_group(&self, a: &'a Row, b: &'a Row) -> Ordering {
        let key = |r: &'a Row| {
            let transport = TransportKind::EVERY.iter().position(|t| t.name() == r.transport);
            (
                handler_rank(&r.handler),
                &r.handler,
                path_rank(&r.path),
                &r.path,
                transport,
                &r.transport,
            )
        };
        key(a).cmp(&key(b))
    }
}

fn dtype_rank(dtype: &str) -> usize {
    Workload::ALL.iter().position(|w| w.name() == dtype).unwrap_or(Workload::ALL.len())
}

fn handler_rank(handler: &str) -> usize {
    match handler {
        "echo-raw" => 0,
        "echo" => 1,
        _ => 2,
    }
}

fn path_rank(path: &str) -> usize {
    match path {
        "zero-copy" => 0,
        "codec" => 1,
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(transport: &str, wait: &str, elements: u64, p50: u64) -> Row {
        let p = super::super::Percentiles { p50, ..Default::default() };
        Row {
            dtype: "f64".into(),
            elements,
            bytes: elements * 8,
            transport: transport.into(),
            path: "zero-copy".into(),
            handler: "echo-raw".into(),
            wait: wait.into(),
            pin: "split".into(),
            iterations: 1,
            rtt_ns: p,
            transfer_ns: p,
            encode_ns: Default::default(),
            decode_ns: Default::default(),
            server_ns: Default::default(),
            client_cpu_ns: f64::NAN,
            server_cpu_ns: f64::NAN,
            mb_per_s: 0.0,
            ratio_to_baseline: None,
            ratio_ci: None,
            rounds: vec![],
            shared_core_share: None,
        }
    }

    fn report_of(rows: Vec<Row>) -> Report {
        Report {
            peerpipe: "0".into(),
            machine: Default::default(),
            config: Default::default(),
            baseline: vec![],
            rows,
            sync_costs: vec![],
            skipped: vec![],
        }
    }

    #[test]
    fn the_crossover_is_the_smallest_size_from_which_shared_memory_always_wins() {
        let report = report_of(vec![
            row("pipe", "block", 1, 40_000),
            row("pipe", "block", 500, 42_000),
            row("pipe", "block", 65_536, 300_000),
            row("pipe", "block", 1_048_576, 6_000_000),
            // Loses at 1, wins at 500, loses at 65536, wins at 1 Mi: the crossover is 1 Mi.
            row("shm-ring", "block", 1, 45_000),
            row("shm-ring", "block", 500, 41_000),
            row("shm-ring", "block", 65_536, 310_000),
            row("shm-ring", "block", 1_048_576, 1_200_000),
            row("pipe", "spin", 500, 2_000),
            row("shm-ring", "spin", 500, 1_000),
            row("shm-sem", "spin", 500, 2_500),
        ]);
        let found = crossovers(&report);
        let summary: Vec<(&str, &str, Option<u64>)> =
            found.iter().map(|c| (c.transport.as_str(), c.wait.as_str(), c.wins_from)).collect();
        assert_eq!(
            summary,
            [
                ("shm-ring", "block", Some(1_048_576)),
                ("shm-ring", "spin", Some(500)),
                ("shm-sem", "spin", None)
            ]
        );
        assert!(found[0].describe().starts_with("crossover: wins from 1048576 elements"));
        assert!(found[1].describe().starts_with("wins at every measured size, from 500"));
        assert!(found[2].describe().starts_with("loses at every measured size; 500: 2.50us"));
        let mut out = Vec::new();
        verdict(&report, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("shared memory against pipes"), "{text}");
        assert!(text.contains("shm-ring block (f64 echo-raw zero-copy): crossover"), "{text}");
    }

    #[test]
    fn a_report_without_shared_memory_has_no_crossover() {
        let report = report_of(vec![row("pipe", "block", 500, 40_000)]);
        assert!(crossovers(&report).is_empty());
    }

    #[test]
    fn every_ratio_below_the_floor_is_listed_with_what_its_interval_says() {
        let mut noisy = row("pipe", "hybrid", 500, 2_000);
        (noisy.ratio_to_baseline, noisy.ratio_ci) = (Some(0.93), Some([0.90, 0.97]));
        let mut faster = row("pipe", "hybrid", 1_048_576, 4_000_000);
        (faster.ratio_to_baseline, faster.ratio_ci) = (Some(0.85), Some([0.82, 0.89]));
        let mut fine = row("pipe", "hybrid", 8, 2_000);
        (fine.ratio_to_baseline, fine.ratio_ci) = (Some(1.02), Some([1.0, 1.04]));
        let mut out = Vec::new();
        verdict(&report_of(vec![noisy, faster, fine]), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("ratios below 0.95"), "{text}");
        assert!(
            text.contains("f64 x 500 echo-raw zero-copy, hybrid, split: 0.93x [0.90-0.97]: its interval reaches 0.95"),
            "{text}"
        );
        assert!(text.contains("f64 x 1048576 echo-raw zero-copy, hybrid, split: 0.85x [0.82-0.89]: beyond the noise"), "{text}");
        assert!(!text.contains("f64 x 8 echo-raw zero-copy, hybrid"), "{text}");
        let mut quiet = Vec::new();
        verdict(&report_of(vec![row("pipe", "hybrid", 8, 2_000)]), &mut quiet).unwrap();
        assert!(!String::from_utf8(quiet).unwrap().contains("ratios below"));
    }

    #[test]
    fn judging_the_budget_says_by_how_much() {
        assert_eq!(judge(100_000, 150_000), "; meets the 150us budget with 50us to spare");
        assert_eq!(judge(300_000, 150_000), "; misses the 150us budget by 150us (2.00x)");
        assert_eq!(judge(5, 0), "");
    }
}
