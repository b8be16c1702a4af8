//! The answer first: what a round trip will cost the user, per size, before the table.
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
//! p50 and p99 ([`budget`]). When the run measured the default wait at several placements and they
//! disagree by more than [`PLACEMENT_MATTERS`], [`placement_spread`] says so. [`records`] is the
//! answer as the JSON report writes it.
//!
//! This file works the answer out; [`render::answer`](super::render::answer) writes it, one
//! line per size, and the verdict ([`render::verdict`](super::render::verdict)) gives the same
//! row the same judgement.

use peerpipe::transport::Wait;
use serde::{Deserialize, Serialize};

use super::budget::{self, Judgement, Overhead};
use super::key::{Handler, Placement, RowId, Workload};
use super::model::{Report, Row};
use super::ratio::RatioVerdict;

/// The handler whose server converts nothing: a lower bound, not the user's case.
pub const RAW_HANDLER: Handler = Handler::EchoRaw;

/// The default wait, the one the answer prefers.
pub const DEFAULT_WAIT: Wait = Wait::Auto;

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
    /// The budget judged on that overhead at p50 and p99, as the answer and the verdict print
    /// it; `null` when no budget was set.
    pub budget: Option<Judgement>,
    /// True when the row's paired ratio is resolved ([`RatioVerdict`]); false when no row the
    /// answer could pick had a resolved ratio.
    pub ratio_resolved: bool,
}

/// The answer of every measured size, in the answer's order ([`sizes`]): what `--json`
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
