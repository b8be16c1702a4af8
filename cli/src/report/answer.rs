//! The answer first: what a round trip will cost the user, per size, before the table.
//!
//! A new user asks one question — "what overhead will my callback of N doubles cost?" — and
//! the table, which puts every handler, path and wait side by side, answers it only to someone
//! who knows which row is theirs. [`answer`] picks that row for each size and says it in one
//! line: the realistic case, where both sides convert (`echo`, or the user's own handler; not
//! `echo-raw`, whose server converts nothing, and not the raw floor), at the default wait
//! (`auto`) unpinned — what a program that leaves both to the library gets — when the run
//! measured it, and at the best measured wait and placement otherwise; among those, a row
//! whose paired ratio is resolved ([`ratio`]) when there is one. Its overhead ([`Overhead`])
//! is the round trip minus the server's own time: what going to another process costs,
//! whatever the server computes; the budget is judged on it at p50 and p99 ([`budget`]). When
//! the run measured the default wait at several placements and they disagree by more than
//! [`PLACEMENT_MATTERS`], the answer says so under its table. [`verdict_lines`] gives the
//! verdict the same row and the same judgement, and says apart what the floor and `echo-raw`
//! show; [`records`] is the answer as the JSON report writes it; [`skipped`] lists the rows a
//! run could not measure.

use std::io::{self, Write};

use peerpipe::transport::{TransportKind, Wait};
use serde::{Deserialize, Serialize};

use super::budget::{self, Judgement, Overhead};
use super::key::{Handler, RowId};
use super::ratio::{self, RatioVerdict};
use super::{Placement, Report, Row, Skipped, Workload, format, render, waits};

/// The handler whose server converts nothing: a lower bound, not the user's case.
const RAW_HANDLER: Handler = Handler::EchoRaw;

/// The default wait.
const DEFAULT_WAIT: Wait = Wait::Auto;

/// The placement a program gets when it pins nothing.
const UNPINNED: Placement = Placement::Free;

/// How far apart (max ÷ min overhead p50) the default wait's placements must be for the answer
/// to say that placement changes it: 1.5×.
pub const PLACEMENT_MATTERS: f64 = 1.5;

/// The realistic row of one size: its overhead (round trip − server time, see [`Overhead`])
/// and its paired ratio, at the user's wait or the best one.
#[derive(Clone, Copy, Debug)]
pub struct Answer<'a> {
    /// The row the answer is about.
    pub row: &'a Row,
    /// Its overhead: what the budget is judged on.
    pub overhead: Overhead,
    /// Its paired ratio to the floor, resolved or not.
    pub ratio: RatioVerdict,
}

impl<'a> Answer<'a> {
    fn of(row: &'a Row) -> Answer<'a> {
        Answer { row, overhead: Overhead::of(row), ratio: RatioVerdict::of(row) }
    }

    /// The overhead judged against `budget_ns` at p50 and p99 ([`budget::judge`]); `None`
    /// when `budget_ns` is 0 (no budget set). The answer and the verdict both print this.
    pub fn judge(&self, budget_ns: u64) -> Option<Judgement> {
        budget::judge(self.overhead, budget_ns)
    }
}

/// The realistic row for `dtype` × `elements`: among the rows of a handler other than
/// `echo-raw` (any handler when only `echo-raw` was measured), those of the default wait when
/// it was measured, of them those unpinned when measured so, of them those whose paired ratio
/// is resolved when one is, and of what is left the one with the lowest overhead p50 — so with
/// a single `--wait` and `--pin` it is at the user's own. The answer's ratio is then
/// unresolved only when no row of the last preference had a resolved one.
pub fn realistic<'a>(report: &'a Report, dtype: Workload, elements: u64) -> Option<Answer<'a>> {
    let of_size =
        || report.rows.iter().filter(move |r| r.id.dtype == dtype && r.id.elements == elements);
    let converting: Vec<&Row> = of_size().filter(|r| r.id.handler != RAW_HANDLER).collect();
    let candidates = if converting.is_empty() { of_size().collect() } else { converting };
    let candidates = prefer(candidates, |r| r.id.wait == DEFAULT_WAIT);
    let candidates = prefer(candidates, |r| r.id.pin == UNPINNED);
    let candidates = prefer(candidates, |r| RatioVerdict::of(r).is_resolved());
    candidates.into_iter().map(Answer::of).min_by_key(|a| (a.overhead.p50_ns, a.row.rtt_ns.p50))
}

/// The rows that pass `test`, or all of them when none does.
fn prefer(rows: Vec<&Row>, test: impl Fn(&Row) -> bool) -> Vec<&Row> {
    if rows.iter().any(|r| test(r)) { rows.into_iter().filter(|r| test(r)).collect() } else { rows }
}

/// The answer's row at every placement measured with the same handler, path, transport and
/// wait, by placement name, when their overhead p50s differ by more than
/// [`PLACEMENT_MATTERS`]: `None` when placement does not change the answer that much (or only
/// one placement was measured).
pub fn placement_spread<'a>(report: &'a Report, answer: &Answer<'a>) -> Option<Vec<Answer<'a>>> {
    let mut same = placements_of(report, answer);
    let min = same.iter().map(|a| a.overhead.p50_ns).min()?.max(1);
    let max = same.iter().map(|a| a.overhead.p50_ns).max()?;
    if same.len() < 2 || (max as f64) <= PLACEMENT_MATTERS * min as f64 {
        return None;
    }
    same.sort_by_key(|a| a.row.id.pin != answer.row.id.pin);
    Some(same)
}

/// The rows of `answer`'s size, handler, path, transport and wait, at every placement measured.
fn placements_of<'a>(report: &'a Report, answer: &Answer<'a>) -> Vec<Answer<'a>> {
    let row = answer.row;
    report
        .rows
        .iter()
        .filter(|r| {
            r.id.dtype == row.id.dtype
                && r.id.elements == row.id.elements
                && r.id.handler == row.id.handler
                && r.id.path == row.id.path
                && r.id.transport == row.id.transport
                && r.id.wait == row.id.wait
        })
        .map(Answer::of)
        .collect()
}

/// Writes the answer, one line per size (dtype × elements, f64 first, smallest first):
/// overhead p50 and p99 of the realistic row ([`realistic`]), its paired ratio to the raw
/// floor with the 95 % interval — `unresolved [lo-hi]` when that is not a result (see
/// [`ratio`]) — the budget judged at p50 and p99 ([`Answer::judge`], in the words the verdict
/// uses too), and which row that is. The definition of the overhead ([`budget::DEFINITION`])
/// is printed once, under the heading. A size with no measured row but skipped ones says why;
/// the sizes answered with an unresolved ratio (no candidate row had a resolved one) are named
/// under the rows. At most 120 columns with the usual labels; a column widens for a longer
/// cell.
///
/// # Errors
/// Errors of `out`.
///
/// # Examples
/// ```
/// use peerpipe::{DataPath, TransportKind, Wait};
/// use peerpipe_cli::report::key::{Handler, RowId};
/// use peerpipe_cli::report::{Percentiles, Placement, Report, Row, Workload, answer};
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
/// answer::answer(&report, &mut out).unwrap();
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
        let added = format::added_ns(row.headline_figures().and_then(|f| f.added_ns));
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
            let text = waits.text(row.iterations);
            writeln!(out, "client waits, {size} {}: {text}.", placement_words(row.id.pin))?;
        }
    }
    // Each answer's figures are those of the machine state most of its rounds ran in; say
    // what the others showed, so that no figure of another state is taken for this one.
    for (size, cells) in &lines {
        let Some(cells) = cells else { continue };
        if let Some(note) = render::row_states_note(&report.machine.states, cells.answer.row) {
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

/// The answer for one size as the JSON report writes it: one entry of its `answer` array.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnswerRecord {
    /// The row the answer is about ([`realistic`]); in JSON its fields stand in the entry's own
    /// object (`dtype`, `elements`, `bytes`, `transport`, `path`, `handler`, `wait`, `pin`), as
    /// in a row's.
    #[serde(flatten)]
    pub id: RowId,
    /// Its overhead, `{"p50", "p99"}` in nanoseconds (see [`Overhead`]).
    pub overhead_ns: Overhead,
    /// The budget judged on that overhead at p50 and p99, as the answer and the verdict print
    /// it; `null` when no budget was set.
    #[serde(default)]
    pub budget: Option<Judgement>,
    /// True when the row's paired ratio is resolved ([`RatioVerdict`]); false when no row the
    /// answer could pick had a resolved ratio.
    #[serde(default)]
    pub ratio_resolved: bool,
}

/// The answer of every measured size, in the answer's order ([`answer`]): what `--json`
/// writes as `answer`. Sizes with no measured row have no entry.
pub fn records(report: &Report) -> Vec<AnswerRecord> {
    sizes(report)
        .into_iter()
        .filter_map(|(dtype, elements)| realistic(report, dtype, elements))
        .map(|a| AnswerRecord {
            id: a.row.id.clone(),
            overhead_ns: a.overhead,
            budget: a.judge(report.config.budget_ns),
            ratio_resolved: a.ratio.is_resolved(),
        })
        .collect()
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
/// ([`waits::compare`]): its p50 ÷ each other wait's, round by round, with the CPU time per
/// round trip of each (client + server), so that a wait that wins latency by burning CPU
/// shows it.
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

/// The verdict's lines for one size: the realistic row ([`realistic`]) by name with its
/// overhead, the budget judged on that overhead ([`Answer::judge`]: the same figure and words
/// as the answer's), then what the raw floor and `echo-raw` show, apart. Nothing when the size
/// has no row.
///
/// Returns the judgement, for the verdict to count; `None` when the size has no row or no
/// budget was set.
///
/// # Errors
/// Errors of `out`.
pub fn verdict_lines(
    report: &Report,
    dtype: Workload,
    elements: u64,
    out: &mut dyn Write,
) -> io::Result<Option<Judgement>> {
    let Some(a) = realistic(report, dtype, elements) else { return Ok(None) };
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
                && r.id.handler == RAW_HANDLER
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

/// The handlers other than `echo-raw`, in order of first appearance.
fn converting_handlers(report: &Report) -> Vec<&Handler> {
    let mut handlers: Vec<&Handler> = Vec::new();
    for row in report.rows.iter().filter(|r| r.id.handler != RAW_HANDLER) {
        if !handlers.contains(&&row.id.handler) {
            handlers.push(&row.id.handler);
        }
    }
    handlers
}

/// Every (dtype, elements) measured or skipped, f64 first, then by elements.
fn sizes(report: &Report) -> Vec<(Workload, u64)> {
    let mut sizes: Vec<(Workload, u64)> = Vec::new();
    let keys = report
        .rows
        .iter()
        .map(|r| (r.id.dtype, r.id.elements))
        .chain(report.skipped.iter().map(|s| (s.id.dtype, s.id.elements)));
    for key in keys {
        if !sizes.contains(&key) {
            sizes.push(key);
        }
    }
    let rank = |d: Workload| Workload::ALL.iter().position(|&w| w == d).unwrap_or(usize::MAX);
    sizes.sort_by_key(|&(dtype, elements)| (rank(dtype), elements));
    sizes
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
