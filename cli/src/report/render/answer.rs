//! The answer as `peer` prints it first, one line per size, with the notes under it, and
//! the rows a run could not measure. The rows and figures are
//! [`answer`](crate::report::answer)'s; this file only
//! writes them.

use std::io::{self, Write};

use peerpipe::transport::TransportKind;

use crate::report::answer::{
    Answer, DEFAULT_WAIT, UNPINNED, converting_handlers, placement_spread, placements_of,
    realistic, sizes,
};
use crate::report::budget;
use crate::report::format;
use crate::report::key::Placement;
use crate::report::model::{ClientWaits, Report, Row, Skipped};
use crate::report::ratio;
use crate::report::states;
use crate::report::waits;

use super::states::row_states_note;

/// Writes the answer, one line per size (dtype × elements, f64 first, smallest first): overhead p50
/// and p99 of the realistic row ([`realistic`]), its paired ratio to the raw floor with the 95 %
/// interval — `unresolved [lo-hi]` when that is not a result (see [`ratio`](crate::report::ratio))
/// — the budget judged at p50 and p99 ([`Answer::judge`], in the words the verdict uses too), and
/// which row that is. The definition of the overhead ([`budget::DEFINITION`]) is printed once,
/// under the heading. A size with no measured row but skipped ones says why; the sizes answered
/// with an unresolved ratio (no candidate row had a resolved one) are named under the rows. At most
/// 120 columns with the usual labels; a column widens for a longer cell.
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
/// render::answer(&report, &mut out).unwrap();
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.contains("f64 x 500"), "{text}");
/// assert!(text.contains("10us"), "{text}"); // 12 us round trip - 2 us server time
/// assert!(text.contains("28us"), "{text}"); // 30 us p99 round trip - 2 us p50 server time
/// assert!(text.contains("1.50x [1.40-1.60]"), "{text}");
/// assert!(text.contains("met at p50 and p99"), "{text}");
/// ```
pub fn answer(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let sizes = sizes(report);
    if sizes.is_empty() {
        return Ok(());
    }
    let waits = &report.config.waits;
    let default_unpinned =
        report.rows.iter().any(|r| r.id.wait == DEFAULT_WAIT && r.id.pin == UNPINNED);
    let mut wait_phrase = match waits.as_slice() {
        [one] => format!("at wait {one}"),
        _ if default_unpinned => "at the default wait, unpinned, as a program gets it".to_owned(),
        _ => "at the best measured wait".to_owned(),
    };
    if report.config.load > 0 {
        wait_phrase.push_str(&format!(", beside {} busy threads", report.config.load));
    }
    let handlers = converting_handlers(report);
    writeln!(
        out,
        "answer: what a call costs beyond the server's own time ({}; {wait_phrase})",
        if handlers.is_empty() {
            "no converting handler measured: echo-raw".to_owned()
        } else {
            format!(
                "both sides converting: {}",
                handlers.iter().map(|h| h.name()).collect::<Vec<_>>().join(", ")
            )
        }
    )?;
    writeln!(out, "{}", budget::DEFINITION)?;
    writeln!(
        out,
        "x floor = paired ratio of the round trip to the raw read/write of the same bytes [95% \
         interval];"
    )?;
    writeln!(
        out,
        "added = round trip - that floor, paired; both over the rounds of the state the machine was in \
         most."
    )?;
    writeln!(out, "Details: the table and verdict below; docs/PERFORMANCE.md.")?;
    let budget = report.config.budget_ns;
    // Each size's line: its label, and its answer with the ratio and budget cells.
    let lines: Vec<(String, Option<Cells<'_>>)> = sizes
        .iter()
        .map(|&(dtype, elements)| {
            let cells = realistic(report, dtype, elements).map(|a| Cells {
                answer: a,
                ratio: a.ratio.text(),
                judged: a.judge(budget).map_or_else(|| "-".to_owned(), |j| j.describe()),
            });
            (format!("{dtype} x {elements}"), cells)
        })
        .collect();
    let budget_header =
        if budget == 0 { "budget".to_owned() } else { format!("budget {}", format::ns(budget)) };
    // Each column is as wide as its longest cell ("f64-as-f32 x 1048576" is 20 characters),
    // and no narrower than 17, 20 and 26 characters, so that the usual lines keep one layout.
    let cells = || lines.iter().filter_map(|(_, cells)| cells.as_ref());
    let w = lines.iter().map(|(size, _)| size.len()).max().unwrap_or(0).max(17);
    let rw = cells().map(|c| c.ratio.len()).max().unwrap_or(0).max(20);
    let bw = cells().map(|c| c.judged.len()).max().unwrap_or(0).max(26);
    writeln!(
        out,
        "  {:<w$} {:>9} {:>9} {:>rw$} {:>8} {budget_header:<bw$} row",
        "size", "overhead", "p99", "x floor [95% CI]", "added",
    )?;
    let mut unresolved = Vec::new();
    for (&(dtype, elements), (size, cells)) in sizes.iter().zip(&lines) {
        let Some(Cells { answer: a, ratio, judged }) = cells else {
            let why = report
                .skipped
                .iter()
                .find(|s| s.id.dtype == dtype && s.id.elements == elements)
                .map_or_else(|| "no row".to_owned(), |s| s.reason.clone());
            writeln!(out, "  {size:<w$} not measured: {}", clip(&why, 96))?;
            continue;
        };
        let row = a.row;
        if a.ratio.is_unresolved() {
            unresolved.push(size.as_str());
        }
        let transport = if row.id.transport == TransportKind::Pipe {
            String::new()
        } else {
            format!(" {}", row.id.transport)
        };
        let added =
            format::added_ns(states::headline_figures(&row.rounds).and_then(|f| f.added_ns));
        writeln!(
            out,
            "  {size:<w$} {:>9} {:>9} {ratio:>rw$} {added:>8} {judged:<bw$} {} {}{transport}, {}",
            format::ns(a.overhead.p50_ns),
            format::ns(a.overhead.p99_ns),
            row.id.handler,
            row.id.path,
            row.id.wait
        )?;
    }
    if !unresolved.is_empty() {
        // No candidate row of these sizes had a resolved ratio: the answer fell back to the
        // lowest overhead, and says that its ratio is no result.
        writeln!(out, "{}", ratio::unresolved_note("unresolved"))?;
        writeln!(
            out,
            "no row of {} at the answer's wait and placement has a resolved ratio: shown is the \
             lowest overhead.",
            unresolved.join(", ")
        )?;
    }
    placement_notes(report, out)?;
    wait_notes(report, &lines, out)?;
    // What the answer's `auto` waits did, so that its figure comes with its reason.
    for (size, cells) in &lines {
        let Some(cells) = cells else { continue };
        let row = cells.answer.row;
        if let Some(waits) = &row.client_waits {
            let text = client_waits_text(waits, row.iterations);
            writeln!(out, "client waits, {size} {}: {text}.", placement_words(row.id.pin))?;
        }
    }
    // Each answer's figures are those of the machine state most of its rounds ran in; say
    // what the others showed, so that no figure of another state is taken for this one.
    for (size, cells) in &lines {
        let Some(cells) = cells else { continue };
        if let Some(note) = row_states_note(&report.machine.states, cells.answer.row) {
            writeln!(out, "state, {size}: {note}")?;
        }
    }
    Ok(())
}

/// One size's answer with its ratio and budget cells as the answer prints them.
struct Cells<'a> {
    answer: Answer<'a>,
    ratio: String,
    judged: String,
}

/// One line per size whose answer changes by more than [`PLACEMENT_MATTERS`] with where the
/// processes run (among the placements measured); when only one placement was measured, a
/// line that says how to see it.
fn placement_notes(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let answers: Vec<Answer<'_>> =
        sizes(report).iter().filter_map(|&(d, e)| realistic(report, d, e)).collect();
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
fn wait_notes(
    report: &Report,
    lines: &[(String, Option<Cells<'_>>)],
    out: &mut dyn Write,
) -> io::Result<()> {
    let cpu = |row: &Row| {
        let sum = row.client_cpu_ns + row.server_cpu_ns;
        if sum.is_finite() { format::ns(sum.round() as u64) } else { "-".to_owned() }
    };
    for (size, cells) in lines {
        let Some(cells) = cells else { continue };
        let row = cells.answer.row;
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
            "waits, {size} {}, round by round over {} round{}: {} {}; cpu per round trip (client \
             + server): {}.",
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

/// A placement as a reader understands it.
fn placement_words(pin: Placement) -> &'static str {
    match pin {
        Placement::Free => "unpinned",
        Placement::Same => "on one core",
        Placement::Split => "on two cores",
    }
}

/// What the client's waits did over a row of `round_trips` timed round trips, as the answer
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

/// Lists the rows not measured under a heading, one line per size, handler and reason (the
/// paths and waits it applies to named on the line); nothing when none was skipped.
///
/// # Errors
/// Errors of `out`.
pub fn skipped(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    if report.skipped.is_empty() {
        return Ok(());
    }
    for failed in [false, true] {
        let entries: Vec<&Skipped> = report.skipped.iter().filter(|s| s.failed == failed).collect();
        if entries.is_empty() {
            continue;
        }
        writeln!(out)?;
        if failed {
            writeln!(out, "failed: {} rows, whose group ended in an error:", entries.len())?;
        } else {
            writeln!(out, "skipped: {} rows the handler cannot serve:", entries.len())?;
        }
        // (size and handler, reason) -> the settings it applies to, in order of appearance.
        let mut lines: Vec<(String, &str, Vec<String>)> = Vec::new();
        for s in entries {
            let what = format!("{} x {} {}", s.id.dtype, s.id.elements, s.id.handler);
            let setting = format!("{} {} {} {}", s.id.path, s.id.transport, s.id.wait, s.id.pin);
            match lines.iter_mut().find(|(w, r, _)| *w == what && *r == s.reason) {
                Some((_, _, settings)) => settings.push(setting),
                None => lines.push((what, &s.reason, vec![setting])),
            }
        }
        for (what, reason, settings) in lines {
            let settings = match settings.as_slice() {
                [one] => one.clone(),
                more => format!("{} settings", more.len()),
            };
            writeln!(out, "  {what} ({settings}): {}", clip(reason, 90))?;
        }
    }
    Ok(())
}

/// At most `max` characters of `text` on one line.
fn clip(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= max {
        line.to_owned()
    } else {
        let cut: String = line.chars().take(max.saturating_sub(3)).collect();
        format!("{cut}...")
    }
}

#[cfg(test)]
mod tests {
    use peerpipe::transport::AutoCounts;

    use super::*;

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
