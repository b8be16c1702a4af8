//! The budget (`--budget`): the one figure it is judged on and the one judgement, which the
//! summary ([`summary`](super::summary)) prints once per size and the JSON's answer carries.
//!
//! The figure is the **overhead** of a call ([`Overhead`]): the round trip minus the server's
//! own time — what going to another process costs, whatever the server computes. The budget
//! is judged at the p50 *and* at the p99 of it ([`judge`]): a call that is cheap in the median
//! but often slow still misses a per-callback budget, and the report says so.

use serde::{Deserialize, Serialize};

use super::format;
use super::model::Row;

/// The definition of [`Overhead`] as the report prints it, once, under the answer's heading.
pub const DEFINITION: &str = "overhead = round trip - server time (p99: p99 round trip - p50 \
                              server, an upper estimate); the budget is judged on both.";

/// What a call of one row costs beyond the server's own time, in nanoseconds.
///
/// - `p50_ns` = p50 round trip − p50 server time;
/// - `p99_ns` = p99 round trip − p50 server time: an upper estimate of the overhead's p99
///   (the report keeps percentiles of each phase, not of their difference, and the server's
///   own p99 would be a lower one).
///
/// Both saturate at zero. For a row whose percentiles are ordered (p50 ≤ p99, as a histogram
/// gives them), `p50_ns <= p99_ns`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overhead {
    /// p50 round trip − p50 server time (`p50` in JSON).
    #[serde(rename = "p50")]
    pub p50_ns: u64,
    /// p99 round trip − p50 server time, an upper estimate (`p99` in JSON).
    #[serde(rename = "p99")]
    pub p99_ns: u64,
}

impl Overhead {
    /// The overhead of `row` (see [`Overhead`]).
    ///
    /// # Examples
    /// ```
    /// use peerpipe::{DataPath, TransportKind, Wait};
    /// use peerpipe_cli::report::budget::Overhead;
    /// use peerpipe_cli::report::key::{Handler, RowId};
    /// use peerpipe_cli::report::{Percentiles, Placement, Row, Workload};
    /// let p = |p50, p99| Percentiles { p50, p99, ..Percentiles::default() };
    /// let row = Row { id: RowId { dtype: Workload::F64, elements: 500, bytes: 4000,
    ///     transport: TransportKind::Pipe, path: DataPath::ZeroCopy, handler: Handler::Echo,
    ///     wait: Wait::auto(), pin: Placement::Free }, iterations: 100, rtt_ns: p(12_000, 30_000),
    ///     transfer_ns: p(9_000, 20_000), encode_ns: p(0, 0), decode_ns: p(0, 0),
    ///     server_ns: p(2_000, 3_000), client_cpu_ns: f64::NAN, server_cpu_ns: f64::NAN,
    ///     mb_per_s: 0.0, ratio_to_baseline: None, ratio_ci: None, rounds: vec![],
    ///     shared_core_share: None, client_waits: None };
    /// // 12 us - 2 us at p50; 30 us - 2 us (the server's p50, not its p99) at p99.
    /// assert_eq!(Overhead::of(&row), Overhead { p50_ns: 10_000, p99_ns: 28_000 });
    /// ```
    pub fn of(row: &Row) -> Overhead {
        Overhead {
            p50_ns: row.rtt_ns.p50.saturating_sub(row.server_ns.p50),
            p99_ns: row.rtt_ns.p99.saturating_sub(row.server_ns.p50),
        }
    }
}

/// The budget held against one percentile of an [`Overhead`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    /// The overhead is at most the budget.
    pub met: bool,
    /// Budget − overhead when met, overhead − budget when missed: what is left to spare, or
    /// by how much it is missed.
    pub margin_ns: u64,
}

impl Mark {
    fn of(overhead_ns: u64, budget_ns: u64) -> Mark {
        if overhead_ns <= budget_ns {
            Mark { met: true, margin_ns: budget_ns - overhead_ns }
        } else {
            Mark { met: false, margin_ns: overhead_ns - budget_ns }
        }
    }
}

/// An [`Overhead`] judged against a budget at p50 and at p99; in the JSON report, each answer's
/// `budget` object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judgement {
    /// The budget per call, in nanoseconds (never 0: a zero budget is none, see [`judge`]).
    pub budget_ns: u64,
    /// The budget against the overhead's p50.
    pub p50: Mark,
    /// The budget against the overhead's p99 (its upper estimate).
    pub p99: Mark,
}

impl Judgement {
    /// True when the overhead meets the budget at p50 and at p99: what the summary counts as
    /// a size that meets it.
    pub fn met(&self) -> bool {
        self.p50.met && self.p99.met
    }

    /// The judgement in words, as the summary prints it:
    /// `met at p50 and p99`, `met at p50, MISSED at p99 by 5.41ms`, `MISSED at p50 by 43.6us`
    /// (the p99 then misses too, by more). For the unordered overheads of a hand-edited report
    /// (p99 below p50), `MISSED at p50 by 43.6us, met at p99`.
    ///
    /// # Examples
    /// ```
    /// use peerpipe_cli::report::budget::{Overhead, judge};
    /// let tail = judge(Overhead { p50_ns: 97_400, p99_ns: 5_560_000 }, 150_000).unwrap();
    /// assert_eq!(tail.describe(), "met at p50, MISSED at p99 by 5.41ms");
    /// assert!(!tail.met());
    /// ```
    pub fn describe(&self) -> String {
        let by = |mark: Mark| format::ns(mark.margin_ns);
        match (self.p50.met, self.p99.met) {
            (true, true) => "met at p50 and p99".to_owned(),
            (true, false) => format!("met at p50, MISSED at p99 by {}", by(self.p99)),
            (false, false) => format!("MISSED at p50 by {}", by(self.p50)),
            (false, true) => format!("MISSED at p50 by {}, met at p99", by(self.p50)),
        }
    }

    /// Where a size that does not meet the budget misses it: `at p50`, or `at p99` when only
    /// the tail does; `None` when it meets it.
    pub fn missed_at(&self) -> Option<&'static str> {
        match (self.p50.met, self.p99.met) {
            (true, true) => None,
            (true, false) => Some("at p99"),
            (false, _) => Some("at p50"),
        }
    }
}

/// Judges `overhead` against `budget_ns` at p50 and at p99; `None` when `budget_ns` is 0 (no
/// budget was set).
///
/// # Examples
/// ```
/// use peerpipe_cli::report::budget::{Overhead, judge};
/// let cheap = Overhead { p50_ns: 3_500, p99_ns: 16_800 };
/// assert_eq!(judge(cheap, 150_000).unwrap().describe(), "met at p50 and p99");
/// assert_eq!(judge(cheap, 1_000).unwrap().describe(), "MISSED at p50 by 2.50us");
/// assert_eq!(judge(cheap, 0), None);
/// ```
pub fn judge(overhead: Overhead, budget_ns: u64) -> Option<Judgement> {
    (budget_ns > 0).then(|| Judgement {
        budget_ns,
        p50: Mark::of(overhead.p50_ns, budget_ns),
        p99: Mark::of(overhead.p99_ns, budget_ns),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_met_up_to_and_including_its_value() {
        let at = judge(Overhead { p50_ns: 150_000, p99_ns: 150_000 }, 150_000).unwrap();
        assert!(at.met());
        assert_eq!((at.p50.margin_ns, at.p99.margin_ns), (0, 0));
        let over = judge(Overhead { p50_ns: 150_000, p99_ns: 150_001 }, 150_000).unwrap();
        assert!(!over.met());
        assert_eq!(over.p99, Mark { met: false, margin_ns: 1 });
        assert_eq!(over.missed_at(), Some("at p99"));
    }

    #[test]
    fn every_combination_is_said_in_words() {
        let words = |p50_ns, p99_ns| {
            let j = judge(Overhead { p50_ns, p99_ns }, 150_000).unwrap();
            (j.describe(), j.missed_at())
        };
        assert_eq!(words(52_600, 97_000), ("met at p50 and p99".to_owned(), None));
        assert_eq!(
            words(97_400, 5_560_000),
            ("met at p50, MISSED at p99 by 5.41ms".to_owned(), Some("at p99"))
        );
        assert_eq!(words(193_600, 400_000), ("MISSED at p50 by 43.6us".to_owned(), Some("at p50")));
        assert_eq!(
            words(193_600, 100_000),
            ("MISSED at p50 by 43.6us, met at p99".to_owned(), Some("at p50"))
        );
    }
}
