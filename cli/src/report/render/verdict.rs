//! The verdict in plain words: where each size's p50 round trip goes ([`breakdown`]), the
//! fastest configuration, the answer's row with the budget judged on its overhead at p50 and
//! p99 (the answer's own judgement, [`crate::report::budget`]), ratios below the floor, and
//! from which size another transport wins ([`crossovers`]).

use std::io::{self, Write};

use peerpipe::peer::DataPath;
use peerpipe::transport::{TransportKind, Wait};

use crate::report::answer;
use crate::report::budget::Judgement;
use crate::report::format;
use crate::report::key::{Handler, Placement, Workload};
use crate::report::model::{Report, Row};
use crate::report::ratio::RatioVerdict;

use super::order::{Order, dtype_rank};

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
/// use peerpipe::{DataPath, TransportKind, Wait};
/// use peerpipe_cli::report::key::{Handler, RowId};
/// use peerpipe_cli::report::{BaselineRow, Percentiles, Placement, Report, Row, Workload, render};
/// # let p = |p50| Percentiles { p50, ..Percentiles::default() };
/// # let row = Row { id: RowId { dtype: Workload::F64, elements: 500, bytes: 4000,
/// #     transport: TransportKind::Pipe, path: DataPath::Codec, handler: Handler::Echo,
/// #     wait: Wait::Block, pin: Placement::Free }, iterations: 1, rtt_ns: p(100_000), transfer_ns: p(90_000), encode_ns: p(4_000),
/// #     decode_ns: p(3_000), server_ns: p(3_000), client_cpu_ns: f64::NAN,
/// #     server_cpu_ns: f64::NAN, mb_per_s: 80.0, ratio_to_baseline: None, ratio_ci: None,
/// #     rounds: vec![], shared_core_share: None, client_waits: None };
/// # let base = BaselineRow { bytes: 8, transport: TransportKind::Pipe, wait: Wait::Block,
/// #     pin: Placement::Free, lent: false, iterations: 1,
/// #     rtt_ns: p(60_000), rounds: vec![], shared_core_share: None, route: None };
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
    let waiting =
        wake_up_ns(report, row.id.transport, row.id.wait, row.id.pin).map(|w| w.min(transfer));
    Breakdown {
        round_trip_ns: round_trip,
        converting_ns: converting,
        moving_ns: transfer - waiting.unwrap_or(0),
        waiting_ns: waiting,
    }
}

/// The p50 of the smallest-bytes baseline of this transport at this wait and placement.
fn wake_up_ns(
    report: &Report,
    transport: TransportKind,
    wait: Wait,
    pin: Placement,
) -> Option<u64> {
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
/// printed in one line under the heading); then the fastest configuration of the size, and the
/// answer's row ([`answer::realistic`]) with `config.budget_ns` judged on its overhead at
/// p50 and p99 — the same figure, judgement and words as the answer's. A last line counts the
/// sizes that meet the budget at both and names those that miss it, and where. A budget of
/// zero means none was set.
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
    let mut sizes: Vec<(Workload, u64, u64)> = Vec::new();
    for row in &report.rows {
        let key = (row.id.dtype, row.id.elements, row.id.bytes);
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
    let setting_name = |pin: Placement, wait: Wait| {
        if several_pins { format!("{wait}, {pin}") } else { wait.to_string() }
    };
    let setting_width = report
        .rows
        .iter()
        .map(|r| setting_name(r.id.pin, r.id.wait).chars().count())
        .max()
        .unwrap_or(0);
    // The sizes judged (every size with a row, when a budget was set), by outcome.
    let mut met = Vec::new();
    let mut missed = Vec::new();
    for &(dtype, elements, bytes) in &sizes {
        let size_name = format!("{dtype} x {elements}");
        writeln!(out)?;
        writeln!(out, "{size_name} ({}):", format::bytes(bytes))?;
        let rows: Vec<&Row> = report
            .rows
            .iter()
            .filter(|r| r.id.dtype == dtype && r.id.elements == elements)
            .collect();
        let mut settings: Vec<(Placement, Wait)> = Vec::new();
        for row in &rows {
            let key = (row.id.pin, row.id.wait);
            if !settings.contains(&key) {
                settings.push(key);
            }
        }
        settings.sort_by_key(|&(pin, wait)| (order.pin(pin), order.wait(wait)));
        for (pin, wait) in settings {
            let Some(best) =
                fastest(rows.iter().copied().filter(|r| r.id.pin == pin && r.id.wait == wait))
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
            let transport = if best.id.transport == TransportKind::Pipe {
                String::new()
            } else {
                format!(" {}", best.id.transport)
            };
            writeln!(
                out,
                "  {setting:<setting_width$} {:>7} = {parts} [{} {}{transport}]",
                format::ns(b.round_trip_ns),
                best.id.handler,
                best.id.path
            )?;
        }
        let Some(best) = fastest(rows.iter().copied()) else { continue };
        let placement = if several_pins { format!(", {}", best.id.pin) } else { String::new() };
        let transport = if best.id.transport == TransportKind::Pipe {
            String::new()
        } else {
            format!(" over {}", best.id.transport)
        };
        writeln!(
            out,
            "  fastest: {} {}{transport}, {}{placement}: p50 {}, p99 {}",
            best.id.handler,
            best.id.path,
            best.id.wait,
            format::ns(best.rtt_ns.p50),
            format::ns(best.rtt_ns.p99),
        )?;
        // The budget is judged where the answer judges it, on its row's overhead (no
        // judgement when no budget was set).
        if let Some(judged) = your_case_lines(report, dtype, elements, out)? {
            match judged.missed_at() {
                None => met.push(size_name),
                Some(at) => missed.push(format!("{size_name} ({at})")),
            }
        }
    }
    below_floor_notes(report, out)?;
    let crossings = crossovers(report);
    if !crossings.is_empty() {
        writeln!(out)?;
        // Shared memory, tcp or both: name what is compared with the pipe.
        let mut others: Vec<&str> = Vec::new();
        for crossing in &crossings {
            let kind = if crossing.transport.is_shared_memory() {
                "shared memory"
            } else {
                crossing.transport.name()
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
    let judged = met.len() + missed.len();
    if budget == 0 {
        writeln!(out, "no budget was set (--budget).")?;
    } else if missed.is_empty() {
        writeln!(
            out,
            "budget {} on the overhead at p50 and p99: every size meets it ({} of {judged}).",
            format::ns(budget),
            met.len(),
        )?;
    } else {
        writeln!(
            out,
            "budget {} on the overhead at p50 and p99: met by {} of {judged} sizes; missed by:",
            format::ns(budget),
            met.len(),
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

/// The verdict's lines for one size: the realistic row ([`answer::realistic`]) by name with its
/// overhead, the budget judged on that overhead ([`Answer::judge`](answer::Answer::judge): the same
/// figure and words as the answer's), then what the raw floor and `echo-raw` show, apart. Nothing
/// when the size has no row.
///
/// Returns the judgement, for the verdict to count; `None` when the size has no row or no
/// budget was set.
///
/// # Errors
/// Errors of `out`.
fn your_case_lines(
    report: &Report,
    dtype: Workload,
    elements: u64,
    out: &mut dyn Write,
) -> io::Result<Option<Judgement>> {
    let Some(a) = answer::realistic(report, dtype, elements) else { return Ok(None) };
    let row = a.row;
    let transport = if row.id.transport == TransportKind::Pipe {
        String::new()
    } else {
        format!(" over {}", row.id.transport)
    };
    writeln!(
        out,
        "  your case: {} {}{transport}, {} (both sides convert): overhead p50 {}, p99 {} (round \
         trip {})",
        row.id.handler,
        row.id.path,
        row.id.wait,
        format::ns(a.overhead.p50_ns),
        format::ns(a.overhead.p99_ns),
        format::ns(row.rtt_ns.p50)
    )?;
    let judged = a.judge(report.config.budget_ns);
    if let Some(j) = judged {
        writeln!(
            out,
            "  budget {} on your case's overhead: {}",
            format::ns(j.budget_ns),
            j.describe()
        )?;
    }
    let floor = report.baseline_for(row).map(|b| b.rtt_ns.p50);
    let raw = report
        .rows
        .iter()
        .filter(|r| {
            r.id.dtype == dtype
                && r.id.elements == elements
                && r.id.handler == answer::RAW_HANDLER
                && r.id.wait == row.id.wait
                && r.id.pin == row.id.pin
                && r.id.transport == row.id.transport
        })
        .min_by_key(|r| r.rtt_ns.p50);
    let mut parts = Vec::new();
    if let Some(floor) = floor {
        parts.push(format!("raw floor p50 {} (bytes only)", format::ns(floor)));
    }
    if let Some(raw) = raw.filter(|r| r.id.handler != row.id.handler) {
        parts.push(format!(
            "echo-raw p50 {} (server converts nothing, {})",
            format::ns(raw.rtt_ns.p50),
            raw.id.path
        ));
    }
    if !parts.is_empty() {
        writeln!(out, "  not your case: {}", parts.join("; "))?;
    }
    Ok(judged)
}

/// A ratio below this is explained in the verdict: a row should not beat the raw floor of
/// its own bytes.
pub const BELOW_FLOOR: f64 = 0.95;

/// Lists every row whose paired ratio is below [`BELOW_FLOOR`], with its interval and what the
/// interval says: noise when it reaches the threshold, a row that really beat its floor when
/// it does not (docs/PERFORMANCE.md, "Ratios below the floor", says what is known of why). An
/// unresolved ratio ([`RatioVerdict`]) is listed as such, not as a figure: its interval is too
/// wide, or missing, to say either.
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
        let transport = if row.id.transport == TransportKind::Pipe {
            String::new()
        } else {
            format!(" {}", row.id.transport)
        };
        let ratio = RatioVerdict::of(row);
        let why = match ratio {
            RatioVerdict::Resolved { ci: [_, hi], .. } if hi >= BELOW_FLOOR => {
                format!("its interval reaches {BELOW_FLOOR:.2}, so this is the noise of the run")
            }
            RatioVerdict::Resolved { .. } => {
                "beyond the noise; see docs/PERFORMANCE.md, \"Ratios below the floor\"".to_owned()
            }
            RatioVerdict::Unresolved { ci: Some(_), .. } => {
                "too wide to say whether it beat its floor".to_owned()
            }
            RatioVerdict::Unresolved { ci: None, .. } | RatioVerdict::Missing => {
                "too few rounds to say".to_owned()
            }
        };
        writeln!(
            out,
            "  {} x {} {} {}{transport}, {}, {}: {}: {why}",
            row.id.dtype,
            row.id.elements,
            row.id.handler,
            row.id.path,
            row.id.wait,
            row.id.pin,
            ratio.text()
        )?;
    }
    Ok(())
}

/// Where another transport (shared memory, tcp) starts to beat the pipe, for one wait
/// strategy and placement, measured on one representative kind of row (see [`crossovers`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crossover {
    /// `shm-sem`, `shm-ring` or `tcp`.
    pub transport: TransportKind,
    /// Wait strategy of both.
    pub wait: Wait,
    /// Placement of both.
    pub pin: Placement,
    /// The rows compared: dtype, handler and path.
    pub dtype: Workload,
    /// Handler of the rows compared.
    pub handler: Handler,
    /// Path of the rows compared.
    pub path: DataPath,
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
    /// `wanted` when some row has it, else the first row's value.
    fn prefer<T: PartialEq + Clone>(
        wanted: T,
        values: impl Fn(&Row) -> T,
        rows: &[Row],
    ) -> Option<T> {
        let first = values(rows.first()?);
        Some(if rows.iter().any(|r| values(r) == wanted) { wanted } else { first })
    }
    let rows = &report.rows;
    let (Some(dtype), Some(handler), Some(path)) = (
        prefer(Workload::F64, |r| r.id.dtype, rows),
        prefer(Handler::EchoRaw, |r| r.id.handler.clone(), rows),
        prefer(DataPath::ZeroCopy, |r| r.id.path, rows),
    ) else {
        return Vec::new();
    };
    let of_kind = |r: &&Row| r.id.dtype == dtype && r.id.handler == handler && r.id.path == path;
    let mut groups: Vec<(TransportKind, Wait, Placement)> = Vec::new();
    for row in report.rows.iter().filter(of_kind).filter(|r| r.id.transport != TransportKind::Pipe)
    {
        let key = (row.id.transport, row.id.wait, row.id.pin);
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    let order = Order::of(report);
    // Transports by name, as the report has always listed them.
    groups.sort_by_key(|&(transport, wait, pin)| {
        (transport.name(), order.pin(pin), order.wait(wait))
    });
    let mut out = Vec::new();
    for (transport, wait, pin) in groups {
        let find = |t: TransportKind, elements: u64| {
            report.rows.iter().filter(of_kind).find(|r| {
                r.id.transport == t
                    && r.id.wait == wait
                    && r.id.pin == pin
                    && r.id.elements == elements
            })
        };
        let mut points: Vec<(u64, u64, u64)> = report
            .rows
            .iter()
            .filter(of_kind)
            .filter(|r| r.id.transport == transport && r.id.wait == wait && r.id.pin == pin)
            .filter_map(|shm| {
                find(TransportKind::Pipe, shm.id.elements)
                    .map(|p| (shm.id.elements, shm.rtt_ns.p50, p.rtt_ns.p50))
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
            transport,
            wait,
            pin,
            dtype,
            handler: handler.clone(),
            path,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::key::RowId;

    fn row(transport: &str, wait: &str, elements: u64, p50: u64) -> Row {
        let p = crate::report::model::Percentiles { p50, ..Default::default() };
        Row {
            id: RowId {
                dtype: Workload::F64,
                elements,
                bytes: elements * 8,
                transport: transport.parse().unwrap(),
                path: DataPath::ZeroCopy,
                handler: Handler::EchoRaw,
                wait: wait.parse().unwrap(),
                pin: Placement::Split,
            },
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
            client_waits: None,
        }
    }

    fn report_of(rows: Vec<Row>) -> Report {
        Report::of(vec![], rows)
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
            found.iter().map(|c| (c.transport.name(), c.wait.name(), c.wins_from)).collect();
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
}
