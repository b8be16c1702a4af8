//! The summary as `peer` prints it first: the answer, one line per size, with the budget's tally
//! and the notes under it; then where each size's p50 round trip goes, the ratios below the
//! floor and the crossovers of other transports. What it says is
//! [`summary`](crate::report::summary)'s; this file only writes it.

use std::io::{self, Write};

use peerpipe::transport::TransportKind;

use crate::report::budget;
use crate::report::format;
use crate::report::key::Placement;
use crate::report::model::{ClientWaits, Report, Row};
use crate::report::ratio::{self, RatioVerdict};
use crate::report::states;
use crate::report::summary::{
    Answer, BELOW_FLOOR, DEFAULT_WAIT, Setting, SizeSummary, Summary, UNPINNED,
    converting_handlers, placement_spread, placements_of,
};
use crate::report::waits;

use super::crossover::crossovers_lines;
use super::order::Order;
use super::states::row_states_note;

/// Writes the summary. First the answer, one line per size (dtype × elements, f64 first,
/// smallest first): overhead p50 and p99 of the realistic row
/// ([`realistic`](crate::report::summary::realistic)), its paired ratio to the raw floor with the
/// 95 % interval — `unresolved [lo-hi]` when that is not a result (see
/// [`ratio`](crate::report::ratio)) — the time it adds to the floor, the budget judged at p50 and
/// p99 ([`Answer::judge`]), and which row that is; the definition of the overhead
/// ([`budget::DEFINITION`]) once, under the heading. A size with no measured row says why. Under
/// the lines: how many sizes meet the budget, and the notes (unresolved ratios, placement, waits,
/// the client's waits, the machine's states). Then, per size, where the p50 round trip of each
/// wait and placement's fastest row goes ([`Breakdown`](crate::report::summary::Breakdown), its
/// definitions once under the heading), the fastest row, the answer's round trip and what the
/// raw floor and `echo-raw` show beside it; the ratios below [`BELOW_FLOOR`]; and from which size
/// another transport beats the pipe. At most 120 columns with the usual labels; a column widens
/// for a longer cell.
///
/// # Errors
/// Errors of `out`.
///
/// # Examples
/// ```
/// use peerpipe::{DataPath, TransportKind, Wait};
/// use peerpipe_cli::report::key::{Handler, RowId};
/// use peerpipe_cli::report::{Percentiles, Placement, Report, Row, Workload, render};
/// let p = |p50, p99| Percentiles { p50, p99, ..Percentiles::default() };
/// let row = Row { id: RowId { dtype: Workload::F64, elements: 500, bytes: 4000,
///     transport: TransportKind::Pipe, path: DataPath::ZeroCopy, handler: Handler::Echo,
///     wait: Wait::hybrid(), pin: Placement::Split }, iterations: 100, rtt_ns: p(12_000, 30_000),
///     transfer_ns: p(9_000, 20_000), encode_ns: p(0, 0), decode_ns: p(0, 0),
///     server_ns: p(2_000, 3_000), client_cpu_ns: f64::NAN, server_cpu_ns: f64::NAN,
///     mb_per_s: 0.0, ratio_to_baseline: Some(1.5), ratio_ci: Some([1.4, 1.6]), rounds: vec![],
///     shared_core_share: None, client_waits: None };
/// let mut report = Report { peerpipe: "0.1.0".into(), machine: Default::default(),
///     config: Default::default(), baseline: vec![], rows: vec![row], sync_costs: vec![],
///     skipped: vec![] };
/// report.config.budget_ns = 150_000;
/// let mut out = Vec::new();
/// render::summary(&report, &mut out).unwrap();
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.contains("f64 x 500"), "{text}");
/// assert!(text.contains("10us"), "{text}"); // 12 us round trip - 2 us server time
/// assert!(text.contains("28us"), "{text}"); // 30 us p99 round trip - 2 us p50 server time
/// assert!(text.contains("1.50x [1.40-1.60]"), "{text}");
/// assert!(text.contains("met at p50 and p99"), "{text}");
/// assert!(text.contains("every size meets it (1 of 1)."), "{text}");
/// ```
pub fn summary(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let order = Order::of(report);
    let summary = Summary::of(report, |pin, wait| (order.pin(pin), order.wait(wait)));
    if summary.sizes.is_empty() {
        return writeln!(out, "no rows were measured, so there is nothing to judge.");
    }
    heading(report, out)?;
    answer_lines(&summary, out)?;
    tally(&summary, out)?;
    unresolved_note(&summary, out)?;
    placement_notes(report, &summary, out)?;
    wait_notes(report, &summary, out)?;
    answer_notes(report, &summary, out)?;
    writeln!(out)?;
    where_it_goes(&summary, order.pins.len() > 1, out)?;
    below_floor_notes(&summary, out)?;
    crossovers_lines(report, &order, out)
}

/// The answer's heading: what it is about, and the definitions of its columns.
fn heading(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let default_unpinned =
        report.rows.iter().any(|r| r.id.wait == DEFAULT_WAIT && r.id.pin == UNPINNED);
    let mut wait_phrase = match report.config.waits.as_slice() {
        [one] => format!("at wait {one}"),
        _ if default_unpinned => "at the default wait, unpinned, as a program gets it".to_owned(),
        _ => "at the best measured wait".to_owned(),
    };
    if report.config.load > 0 {
        wait_phrase.push_str(&format!(", beside {} busy threads", report.config.load));
    }
    let handlers = converting_handlers(report);
    let converting = if handlers.is_empty() {
        "no converting handler measured: echo-raw".to_owned()
    } else {
        let names: Vec<&str> = handlers.iter().map(|h| h.name()).collect();
        format!("both sides converting: {}", names.join(", "))
    };
    writeln!(
        out,
        "answer: what a call costs beyond the server's own time ({converting}; {wait_phrase})\n\
         {}\nx floor = paired ratio of the round trip to the raw read/write of the same bytes \
         [95% interval];\nadded = round trip - that floor, paired; both over the rounds of the \
         state the machine was in most.\nDetails: where each size's round trip goes, then the \
         table; docs/PERFORMANCE.md.",
        budget::DEFINITION
    )
}

/// One line per size: its answer's figures, budget and row, or why it has none.
fn answer_lines(summary: &Summary<'_>, out: &mut dyn Write) -> io::Result<()> {
    let budget = summary.budget_ns;
    let ratio_cell = |s: &SizeSummary<'_>| s.answer.map(|a| a.ratio.text());
    let judged_cell = |s: &SizeSummary<'_>| {
        s.answer.map(|_| s.judged(budget).map_or_else(|| "-".to_owned(), |j| j.describe()))
    };
    let budget_header =
        if budget == 0 { "budget".to_owned() } else { format!("budget {}", format::ns(budget)) };
    // Each column is as wide as its longest cell ("f64-as-f32 x 1048576" is 20 characters),
    // and no narrower than 17, 20 and 26 characters, so that the usual lines keep one layout.
    let sizes = &summary.sizes;
    let w = sizes.iter().map(|s| s.label().len()).max().unwrap_or(0).max(17);
    let rw = sizes.iter().filter_map(ratio_cell).map(|c| c.len()).max().unwrap_or(0).max(20);
    let bw = sizes.iter().filter_map(judged_cell).map(|c| c.len()).max().unwrap_or(0).max(26);
    writeln!(
        out,
        "  {:<w$} {:>9} {:>9} {:>rw$} {:>8} {budget_header:<bw$} row",
        "size", "overhead", "p99", "x floor [95% CI]", "added",
    )?;
    for size in sizes {
        let label = size.label();
        let (Some(a), Some(ratio), Some(judged)) =
            (size.answer, ratio_cell(size), judged_cell(size))
        else {
            let why = size.not_measured.unwrap_or("no row");
            writeln!(out, "  {label:<w$} not measured: {}", super::skipped::clip(why, 96))?;
            continue;
        };
        let row = a.row;
        let added =
            format::added_ns(states::headline_figures(&row.rounds).and_then(|f| f.added_ns));
        writeln!(
            out,
            "  {label:<w$} {:>9} {:>9} {ratio:>rw$} {added:>8} {judged:<bw$} {} {}{}, {}",
            format::ns(a.overhead.p50_ns),
            format::ns(a.overhead.p99_ns),
            row.id.handler,
            row.id.path,
            transport_suffix(row, " "),
            row.id.wait
        )?;
    }
    Ok(())
}

/// ` shm-ring` (after `prefix`) for a row over another transport than the pipe; nothing for a
/// pipe.
fn transport_suffix(row: &Row, prefix: &str) -> String {
    if row.id.transport == TransportKind::Pipe {
        String::new()
    } else {
        format!("{prefix}{}", row.id.transport)
    }
}

/// How many sizes meet the budget at p50 and p99, naming those that miss it and where.
fn tally(summary: &Summary<'_>, out: &mut dyn Write) -> io::Result<()> {
    if summary.sizes.iter().all(|s| s.answer.is_none()) {
        return Ok(());
    }
    let budget = summary.budget_ns;
    if budget == 0 {
        return writeln!(out, "no budget was set (--budget).");
    }
    let (met, missed) = summary.tally();
    let (head, judged) = (format::ns(budget), met.len() + missed.len());
    let head = format!("budget {head} on the overhead at p50 and p99:");
    if missed.is_empty() {
        return writeln!(out, "{head} every size meets it ({} of {judged}).", met.len());
    }
    writeln!(out, "{head} met by {} of {judged} sizes; missed by:", met.len())?;
    let mut line = String::from(" ");
    for (i, (size, at)) in missed.iter().enumerate() {
        let end = if i + 1 < missed.len() { "," } else { "." };
        let piece = format!(" {} ({at}){end}", size.label());
        if line.len() + piece.len() > 100 {
            writeln!(out, "{line}")?;
            line = String::from(" ");
        }
        line.push_str(&piece);
    }
    writeln!(out, "{line}")
}

/// The sizes answered with an unresolved ratio (no candidate row had a resolved one): the
/// answer fell back to the lowest overhead, and says that its ratio is no result.
fn unresolved_note(summary: &Summary<'_>, out: &mut dyn Write) -> io::Result<()> {
    let unresolved: Vec<String> = summary
        .sizes
        .iter()
        .filter(|s| s.answer.is_some_and(|a| a.ratio.is_unresolved()))
        .map(SizeSummary::label)
        .collect();
    if unresolved.is_empty() {
        return Ok(());
    }
    writeln!(out, "{}", ratio::unresolved_note("unresolved"))?;
    writeln!(
        out,
        "no row of {} at the answer's wait and placement has a resolved ratio: shown is the \
         lowest overhead.",
        unresolved.join(", ")
    )
}

/// One line per size whose answer changes by more than
/// [`PLACEMENT_MATTERS`](crate::report::summary::PLACEMENT_MATTERS) with where the processes run
/// (among the placements measured); when only one placement was measured, a line that says how
/// to see it.
fn placement_notes(report: &Report, summary: &Summary<'_>, out: &mut dyn Write) -> io::Result<()> {
    let answers: Vec<Answer<'_>> = summary.sizes.iter().filter_map(|s| s.answer).collect();
    if answers.iter().all(|a| placements_of(report, a).len() < 2) {
        if let Some(a) = answers.first() {
            writeln!(
                out,
                "placement: {} measured {} only; --pin same,split,free (one core, two cores, the \
                 scheduler's choice) and --load N show what placement and busy work change.",
                a.row.id.wait,
                placement_words(a.row.id.pin)
            )?;
        }
        return Ok(());
    }
    for answer in &answers {
        let Some(spread) = placement_spread(report, answer) else { continue };
        let row = answer.row;
        let figures: Vec<String> = spread
            .iter()
            .map(|a| format!("{} {}", placement_words(a.row.id.pin), format::ns(a.overhead.p50_ns)))
            .collect();
        let min = spread.iter().map(|a| a.overhead.p50_ns).min().unwrap_or(0).max(1);
        let max = spread.iter().map(|a| a.overhead.p50_ns).max().unwrap_or(0);
        writeln!(
            out,
            "placement changes {} x {} at wait {} by {:.1}x: {}.",
            row.id.dtype,
            row.id.elements,
            row.id.wait,
            max as f64 / min as f64,
            figures.join(", ")
        )?;
    }
    Ok(())
}

/// One line per size whose answer's row was measured at other waits in the same rounds
/// ([`waits::compare`](crate::report::waits::compare)): its p50 ÷ each other wait's, round by
/// round, with the CPU time per round trip of each (client + server), so that a wait that wins
/// latency by burning CPU shows it.
fn wait_notes(report: &Report, summary: &Summary<'_>, out: &mut dyn Write) -> io::Result<()> {
    let cpu = |row: &Row| {
        let sum = row.client_cpu_ns + row.server_cpu_ns;
        if sum.is_finite() { format::ns(sum.round() as u64) } else { "-".to_owned() }
    };
    for size in &summary.sizes {
        let Some(answer) = size.answer else { continue };
        let row = answer.row;
        let compared = waits::compare(report, row);
        let Some(first) = compared.first() else { continue };
        let ratios: Vec<String> =
            compared.iter().map(|c| format!("/ {} {}", c.other.id.wait, c.text())).collect();
        let cpus: Vec<String> = std::iter::once(row)
            .chain(compared.iter().map(|c| c.other))
            .map(|r| format!("{} {}", r.id.wait, cpu(r)))
            .collect();
        writeln!(
            out,
            "waits, {} {}, round by round over {} round{}: {} {}; cpu per round trip (client \
             + server): {}.",
            size.label(),
            placement_words(row.id.pin),
            first.rounds,
            if first.rounds == 1 { "" } else { "s" },
            row.id.wait,
            ratios.join(", "),
            cpus.join(", ")
        )?;
    }
    Ok(())
}

/// What the answer's `auto` waits did, so that its figure comes with its reason; then, since
/// each answer's figures are those of the machine state most of its rounds ran in, what the
/// other states showed, so that no figure of another state is taken for this one.
fn answer_notes(report: &Report, summary: &Summary<'_>, out: &mut dyn Write) -> io::Result<()> {
    let answered = || summary.sizes.iter().filter_map(|s| Some((s.label(), s.answer?.row)));
    for (size, row) in answered() {
        if let Some(waits) = &row.client_waits {
            let text = client_waits_text(waits, row.iterations);
            writeln!(out, "client waits, {size} {}: {text}.", placement_words(row.id.pin))?;
        }
    }
    for (size, row) in answered() {
        if let Some(note) = row_states_note(&report.machine.states, row) {
            writeln!(out, "state, {size}: {note}")?;
        }
    }
    Ok(())
}

/// Per size with rows: where the p50 round trip of the fastest row of each wait and placement
/// goes, the size's fastest row, and the answer's round trip with what the raw floor and
/// `echo-raw` show beside it.
fn where_it_goes(summary: &Summary<'_>, several_pins: bool, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "where the p50 round trip goes, per size and wait (fastest handler, path)")?;
    writeln!(
        out,
        "(converting = encode+decode+server p50s; waiting = smallest raw baseline p50, same wait+pin, \
         capped; moving = the rest)"
    )?;
    let setting_name = |pin: Placement, wait| {
        if several_pins { format!("{wait}, {pin}") } else { format!("{wait}") }
    };
    let measured: Vec<&SizeSummary<'_>> =
        summary.sizes.iter().filter(|s| s.fastest.is_some()).collect();
    if measured.is_empty() {
        return writeln!(out, "no rows were measured, so there is nothing to judge.");
    }
    let setting_width = measured
        .iter()
        .flat_map(|s| &s.settings)
        .map(|s| setting_name(s.fastest.id.pin, s.fastest.id.wait).chars().count())
        .max()
        .unwrap_or(0);
    for size in measured {
        let Some(best) = size.fastest else { continue };
        writeln!(out)?;
        writeln!(out, "{} ({}):", size.label(), format::bytes(best.id.bytes))?;
        for setting in &size.settings {
            let name = setting_name(setting.fastest.id.pin, setting.fastest.id.wait);
            writeln!(out, "  {name:<setting_width$} {}", breakdown_text(setting))?;
        }
        let placement = if several_pins { format!(", {}", best.id.pin) } else { String::new() };
        writeln!(
            out,
            "  fastest: {} {}{}, {}{placement}: p50 {}, p99 {}",
            best.id.handler,
            best.id.path,
            transport_suffix(best, " over "),
            best.id.wait,
            format::ns(best.rtt_ns.p50),
            format::ns(best.rtt_ns.p99),
        )?;
        beside_the_answer(size, out)?;
    }
    Ok(())
}

/// `80us = converting 10.0% (8us), moving 27.5% (22us), waiting 62.5% (50us) [echo-raw
/// zero-copy]`: where the p50 round trip of a setting's fastest row goes.
fn breakdown_text(setting: &Setting<'_>) -> String {
    let (b, row) = (setting.breakdown, setting.fastest);
    let (conv, moving, waiting) = b.shares_pct();
    let (c, m) = (format::ns(b.converting_ns), format::ns(b.moving_ns));
    let parts = match b.waiting_ns {
        Some(w) => format!(
            "converting {conv:4.1}% ({c}), moving {moving:4.1}% ({m}), waiting {waiting:4.1}% ({})",
            format::ns(w)
        ),
        None => format!(
            "converting {conv:4.1}% ({c}), transfer {moving:4.1}% ({m}; no baseline to split \
             moving from waiting)"
        ),
    };
    let (handler, path) = (&row.id.handler, row.id.path);
    let transport = transport_suffix(row, " ");
    format!("{:>7} = {parts} [{handler} {path}{transport}]", format::ns(b.round_trip_ns))
}

/// `your case's round trip p50 27us; not your case: raw floor p50 17us (bytes only); echo-raw
/// p50 22us (server converts nothing, zero-copy)`: the answer's round trip, and apart, what
/// the raw floor and `echo-raw` cost at its transport, wait and placement.
fn beside_the_answer(size: &SizeSummary<'_>, out: &mut dyn Write) -> io::Result<()> {
    let Some(answer) = size.answer else { return Ok(()) };
    let mut parts = Vec::new();
    if let Some(floor) = size.floor_p50_ns {
        parts.push(format!("raw floor p50 {} (bytes only)", format::ns(floor)));
    }
    if let Some(raw) = size.raw {
        parts.push(format!(
            "echo-raw p50 {} (server converts nothing, {})",
            format::ns(raw.rtt_ns.p50),
            raw.id.path
        ));
    }
    let beside = if parts.is_empty() {
        String::new()
    } else {
        format!("; not your case: {}", parts.join("; "))
    };
    writeln!(out, "  your case's round trip p50 {}{beside}", format::ns(answer.row.rtt_ns.p50))
}

/// Lists every row whose paired ratio is below [`BELOW_FLOOR`], with its interval and what the
/// interval says: noise when it reaches the threshold, a row that really beat its floor when
/// it does not (docs/PERFORMANCE.md, "Ratios below the floor", says what is known of why). An
/// unresolved ratio ([`RatioVerdict`]) is listed as such, not as a figure: its interval is too
/// wide, or missing, to say either.
fn below_floor_notes(summary: &Summary<'_>, out: &mut dyn Write) -> io::Result<()> {
    if summary.below_floor.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "ratios below {BELOW_FLOOR:.2} (a row faster than the raw floor of its own bytes):"
    )?;
    for row in &summary.below_floor {
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
            "  {} x {} {} {}{}, {}, {}: {}: {why}",
            row.id.dtype,
            row.id.elements,
            row.id.handler,
            row.id.path,
            transport_suffix(row, " "),
            row.id.wait,
            row.id.pin,
            ratio.text()
        )?;
    }
    Ok(())
}

/// A placement as a reader understands it.
fn placement_words(pin: Placement) -> &'static str {
    match pin {
        Placement::Free => "unpinned",
        Placement::Same => "on one core",
        Placement::Split => "on two cores",
    }
}

/// What the client's waits did over a row of `round_trips` timed round trips, as the summary
/// prints it, e.g. `3900 of 4000 round trips waited for the reply: 10 % spun (95 % of the
/// spins caught it), 90 % did not spin; 0 moves to an idle CPU`.
fn client_waits_text(client: &ClientWaits, round_trips: u64) -> String {
    let waits = client.waits();
    let share = |part: u64, whole: u64| -> String {
        if whole == 0 {
            "-".to_owned()
        } else {
            format!("{:.0} %", 100.0 * part as f64 / whole as f64)
        }
    };
    let moves = match client.moves {
        1 => "1 move".to_owned(),
        n => format!("{n} moves"),
    };
    format!(
        "{} of {} round trips waited for the reply: {} spun ({} of the spins caught it), {} \
         did not spin; {moves} to an idle CPU",
        waits,
        round_trips,
        share(client.counts.spun, waits),
        share(client.counts.hits, client.counts.spun),
        share(client.counts.slept_at_once, waits),
    )
}

#[cfg(test)]
mod tests {
    use peerpipe::peer::DataPath;
    use peerpipe::transport::AutoCounts;

    use super::super::crossover::crossovers;
    use super::*;
    use crate::report::key::{Handler, RowId, Workload};

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
        super::summary(&report, &mut out).unwrap();
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
        summary(&report_of(vec![noisy, faster, fine]), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("ratios below 0.95"), "{text}");
        assert!(
            text.contains("f64 x 500 echo-raw zero-copy, hybrid, split: 0.93x [0.90-0.97]: its interval reaches 0.95"),
            "{text}"
        );
        assert!(text.contains("f64 x 1048576 echo-raw zero-copy, hybrid, split: 0.85x [0.82-0.89]: beyond the noise"), "{text}");
        assert!(!text.contains("f64 x 8 echo-raw zero-copy, hybrid"), "{text}");
        let mut quiet = Vec::new();
        summary(&report_of(vec![row("pipe", "hybrid", 8, 2_000)]), &mut quiet).unwrap();
        assert!(!String::from_utf8(quiet).unwrap().contains("ratios below"));
    }

    #[test]
    fn client_waits_print_shares_of_the_waits() {
        let waits = |counts: AutoCounts, moves| ClientWaits { counts, moves };
        // What two `add_between` of the same counts add up to (see the model's tests).
        let sum = waits(
            AutoCounts {
                spun: 40,
                hits: 36,
                slept_at_once: 120,
                probes: 4,
                ..AutoCounts::default()
            },
            0,
        );
        assert_eq!(
            client_waits_text(&sum, 200),
            "160 of 200 round trips waited for the reply: 25 % spun (90 % of the spins caught \
             it), 75 % did not spin; 0 moves to an idle CPU"
        );
        let moved = waits(AutoCounts { slept_at_once: 3, ..AutoCounts::default() }, 1);
        assert_eq!(
            client_waits_text(&moved, 3),
            "3 of 3 round trips waited for the reply: 0 % spun (- of the spins caught it), 100 % \
             did not spin; 1 move to an idle CPU"
        )
    }
}
