//! The summary: what the report concludes, said once, before the table.
//!
//! A new user asks one question — "what overhead will my callback of N doubles cost?" — and the
//! table, which puts every handler, path and wait side by side, answers it only to someone who
//! knows which row is theirs. [`realistic`] picks that row for each size: the realistic case, where
//! both sides convert (`echo`, or the user's own handler; not `echo-raw`, whose server converts
//! nothing, and not the raw floor), at the default wait (`auto`) unpinned — what a program that
//! leaves both to the library gets — when the run measured it, and at the best measured wait and
//! placement otherwise; among those, a row whose paired ratio is resolved ([`ratio`](super::ratio))
//! when there is one. Its overhead ([`Overhead`]) is the round trip minus the server's own time:
//! what going to another process costs, whatever the server computes; the budget is judged on it at
//! p50 and p99 ([`budget`]), once per size. When the run measured the default wait at several
//! placements and they disagree by more than [`PLACEMENT_MATTERS`], [`placement_spread`] says so.
//!
//! Beside that answer, a [`SizeSummary`] holds where the p50 round trip of each wait and placement's
//! fastest row goes ([`Breakdown`]), the size's fastest row, and what the raw floor and `echo-raw`
//! cost beside the answer's row; a [`Summary`] adds the rows faster than their floor
//! ([`BELOW_FLOOR`]) and counts the sizes that meet the budget ([`Summary::tally`]).
//! [`records`] is the answer as the JSON report writes it.
//!
//! This file works the summary out; [`render::summary`](super::render::summary) writes it.

use peerpipe::transport::Wait;
use serde::{Deserialize, Serialize};

use super::budget::{self, Judgement, Overhead};
use super::key::{Handler, Placement, RowId, Workload};
use super::model::{Report, Row};
use super::ratio::RatioVerdict;

/// The handler whose server converts nothing: a lower bound, not the user's case.
pub const RAW_HANDLER: Handler = Handler::EchoRaw;

/// The default wait, the one the answer prefers.
pub const DEFAULT_WAIT: Wait = Wait::auto();

/// The placement a program gets when it pins nothing, the one the answer prefers.
pub const UNPINNED: Placement = Placement::Free;

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
    /// when `budget_ns` is 0 (no budget set).
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
pub fn placements_of<'a>(report: &'a Report, answer: &Answer<'a>) -> Vec<Answer<'a>> {
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
    /// The budget judged on that overhead at p50 and p99, as the summary prints it; `null`
    /// when no budget was set.
    pub budget: Option<Judgement>,
    /// True when the row's paired ratio is resolved ([`RatioVerdict`]); false when no row the
    /// answer could pick had a resolved ratio.
    pub ratio_resolved: bool,
}

/// The answer of every measured size, in the summary's order ([`sizes`]): what `--json`
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

/// The handlers other than `echo-raw`, in order of first appearance.
pub fn converting_handlers(report: &Report) -> Vec<&Handler> {
    let mut handlers: Vec<&Handler> = Vec::new();
    for row in report.rows.iter().filter(|r| r.id.handler != RAW_HANDLER) {
        if !handlers.contains(&&row.id.handler) {
            handlers.push(&row.id.handler);
        }
    }
    handlers
}

/// Every (dtype, elements) measured or skipped, f64 first, then by elements.
pub fn sizes(report: &Report) -> Vec<(Workload, u64)> {
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

/// A ratio below this is listed by the summary: a row should not beat the raw floor of its
/// own bytes.
pub const BELOW_FLOOR: f64 = 0.95;

/// Where the p50 round trip of one row goes, in nanoseconds; the three parts add up to
/// `round_trip_ns`.
///
/// - `converting`: p50 client encode + p50 client decode + p50 server time, at most the round
///   trip;
/// - `transfer` (`moving + waiting`): the rest of the p50 round trip;
/// - `waiting`: the p50 round trip of the smallest raw baseline with the same transport, wait
///   strategy and placement (the cost of a wake-up with next to no data), at most the transfer;
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
/// use peerpipe_cli::report::{BaselineRow, Percentiles, Placement, Report, Row, Workload, summary};
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
/// let b = summary::breakdown(&report, &row);
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
    // A wake-up: the p50 of the smallest floor of this transport, wait and placement.
    let waiting = (report.baseline.iter())
        .filter(|b| (b.transport, b.wait, b.pin) == (row.id.transport, row.id.wait, row.id.pin))
        .min_by_key(|b| b.bytes)
        .map(|b| b.rtt_ns.p50.min(transfer));
    Breakdown {
        round_trip_ns: round_trip,
        converting_ns: converting,
        moving_ns: transfer - waiting.unwrap_or(0),
        waiting_ns: waiting,
    }
}

/// One wait and placement of a size: its fastest row and where that row's p50 goes.
#[derive(Clone, Copy, Debug)]
pub struct Setting<'a> {
    /// The row with the lowest p50 round trip at this wait and placement.
    pub fastest: &'a Row,
    /// Where its p50 round trip goes.
    pub breakdown: Breakdown,
}

/// What the summary says of one size (dtype × elements).
#[derive(Clone, Debug)]
pub struct SizeSummary<'a> {
    /// The dtype.
    pub dtype: Workload,
    /// Elements per request.
    pub elements: u64,
    /// The answer: the realistic row ([`realistic`]); `None` when the size has no row.
    pub answer: Option<Answer<'a>>,
    /// Why the size has no row: the reason its first skipped row gives.
    pub not_measured: Option<&'a str>,
    /// Each wait and placement measured, in the table's order.
    pub settings: Vec<Setting<'a>>,
    /// The size's row with the lowest p50 round trip.
    pub fastest: Option<&'a Row>,
    /// The p50 of the raw floor of the answer's row.
    pub floor_p50_ns: Option<u64>,
    /// The fastest `echo-raw` row at the answer's transport, wait and placement, when the
    /// answer is of another handler.
    pub raw: Option<&'a Row>,
}

impl SizeSummary<'_> {
    /// `f64 x 500`.
    pub fn label(&self) -> String {
        format!("{} x {}", self.dtype, self.elements)
    }

    /// The answer's overhead judged against `budget_ns` ([`Answer::judge`]).
    pub fn judged(&self, budget_ns: u64) -> Option<Judgement> {
        self.answer.and_then(|a| a.judge(budget_ns))
    }
}

/// The whole summary of a report: every size in order, and what holds across them.
#[derive(Clone, Debug)]
pub struct Summary<'a> {
    /// Every size measured or skipped ([`sizes`]).
    pub sizes: Vec<SizeSummary<'a>>,
    /// The budget per call, in nanoseconds; 0 for none.
    pub budget_ns: u64,
    /// The rows whose paired ratio is below [`BELOW_FLOOR`], in the report's order.
    pub below_floor: Vec<&'a Row>,
}

impl<'a> Summary<'a> {
    /// The summary of `report`; the order of waits and placements within a size is `order`'s
    /// (the table's).
    pub fn of(report: &'a Report, order: impl Fn(Placement, Wait) -> (usize, usize)) -> Self {
        let sizes = sizes(report)
            .into_iter()
            .map(|(dtype, elements)| size_summary(report, dtype, elements, &order))
            .collect();
        let below_floor = report
            .rows
            .iter()
            .filter(|r| r.ratio_to_baseline.is_some_and(|ratio| ratio < BELOW_FLOOR))
            .collect();
        Summary { sizes, budget_ns: report.config.budget_ns, below_floor }
    }

    /// The sizes judged against the budget, by outcome: those that meet it at p50 and p99,
    /// and those that miss it with where (`at p50`, `at p99`). Both empty without a budget.
    pub fn tally(&self) -> (Vec<&SizeSummary<'a>>, Vec<(&SizeSummary<'a>, &'static str)>) {
        let mut met = Vec::new();
        let mut missed = Vec::new();
        for size in &self.sizes {
            match size.judged(self.budget_ns).map(|j| j.missed_at()) {
                Some(None) => met.push(size),
                Some(Some(at)) => missed.push((size, at)),
                None => {}
            }
        }
        (met, missed)
    }
}

fn size_summary<'a>(
    report: &'a Report,
    dtype: Workload,
    elements: u64,
    order: &impl Fn(Placement, Wait) -> (usize, usize),
) -> SizeSummary<'a> {
    let rows: Vec<&Row> =
        report.rows.iter().filter(|r| r.id.dtype == dtype && r.id.elements == elements).collect();
    let mut keys: Vec<(Placement, Wait)> = Vec::new();
    for row in &rows {
        if !keys.contains(&(row.id.pin, row.id.wait)) {
            keys.push((row.id.pin, row.id.wait));
        }
    }
    keys.sort_by_key(|&(pin, wait)| order(pin, wait));
    let settings = keys
        .into_iter()
        .filter_map(|(pin, wait)| {
            let fastest =
                fastest(rows.iter().copied().filter(|r| r.id.pin == pin && r.id.wait == wait))?;
            Some(Setting { fastest, breakdown: breakdown(report, fastest) })
        })
        .collect();
    let answer = realistic(report, dtype, elements);
    let beside = |r: &&Row| {
        answer.is_some_and(|a| {
            r.id.handler == RAW_HANDLER
                && r.id.handler != a.row.id.handler
                && r.id.wait == a.row.id.wait
                && r.id.pin == a.row.id.pin
                && r.id.transport == a.row.id.transport
        })
    };
    SizeSummary {
        dtype,
        elements,
        answer,
        not_measured: report
            .skipped
            .iter()
            .find(|s| s.id.dtype == dtype && s.id.elements == elements)
            .map(|s| s.reason.as_str()),
        settings,
        fastest: fastest(rows.iter().copied()),
        floor_p50_ns: answer.and_then(|a| report.baseline_for(a.row)).map(|b| b.rtt_ns.p50),
        raw: rows.iter().copied().filter(beside).min_by_key(|r| r.rtt_ns.p50),
    }
}

/// The row with the lowest p50 round trip (the first of equals).
fn fastest<'a>(rows: impl Iterator<Item = &'a Row>) -> Option<&'a Row> {
    rows.fold(None, |best: Option<&Row>, row| match best {
        Some(b) if b.rtt_ns.p50 <= row.rtt_ns.p50 => Some(b),
        _ => Some(row),
    })
}
