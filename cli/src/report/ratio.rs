//! Whether a row's paired ratio to its floor is a result or not yet: the one rule the summary
//! and the table apply before they print a ratio ([`RatioVerdict::of`]).
//!
//! A ratio is **resolved** when its 95 % interval lies within ±[`RESOLVED_WITHIN`] of its
//! median and does not straddle 1.0× (the floor itself: such a row is neither faster nor
//! slower than the bare bytes as far as the run can tell). Otherwise — and when the run
//! recorded no interval (no floor of its bytes) — it is
//! **unresolved**, and printed as `unresolved [lo-hi]` rather than as a figure. More rounds
//! (`--rounds`) narrow the interval.

use super::format;
use super::model::Row;

/// How far either end of the 95 % interval may lie from the median, as a fraction of it, for
/// the ratio to be resolved: 0.25, i.e. the interval within [0.75 × median, 1.25 × median].
pub const RESOLVED_WITHIN: f64 = 0.25;

/// What a row's paired ratio says (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RatioVerdict {
    /// The row has no ratio (no floor was measured for it).
    Missing,
    /// A result: the median, within [`RESOLVED_WITHIN`] of both ends of its interval, which
    /// does not straddle 1.0.
    Resolved {
        /// Median over rounds of row p50 ÷ floor p50.
        median: f64,
        /// The 95 % interval.
        ci: [f64; 2],
    },
    /// Not a result: its interval is too wide, straddles 1.0, or is unknown (`None`).
    Unresolved {
        /// The median, not to be quoted as a result.
        median: f64,
        /// The 95 % interval, when the run recorded one.
        ci: Option<[f64; 2]>,
    },
}

impl RatioVerdict {
    /// The verdict on `row.ratio_to_baseline` with `row.ratio_ci`: [`RatioVerdict::judge`].
    pub fn of(row: &Row) -> RatioVerdict {
        RatioVerdict::judge(row.ratio_to_baseline, row.ratio_ci)
    }

    /// The verdict on a median and its interval. Unresolved when the interval is missing; when
    /// the median or a bound is not finite, or the median is not positive or lies outside its
    /// interval; when the lower bound is below (1 − [`RESOLVED_WITHIN`]) × median or the upper
    /// bound above (1 + [`RESOLVED_WITHIN`]) × median; or when the interval straddles 1.0
    /// (lo < 1 < hi). Never panics.
    ///
    /// # Examples
    /// ```
    /// use peerpipe_cli::report::ratio::RatioVerdict;
    /// assert!(RatioVerdict::judge(Some(1.25), Some([1.2, 1.3])).is_resolved());
    /// // Too wide: 1.64 is far above 1.25 × 0.21 (and the interval straddles 1.0).
    /// assert!(!RatioVerdict::judge(Some(0.21), Some([0.19, 1.64])).is_resolved());
    /// // Narrow, but neither side of the floor: 0.98 < 1 < 1.04.
    /// assert!(!RatioVerdict::judge(Some(1.01), Some([0.98, 1.04])).is_resolved());
    /// assert!(!RatioVerdict::judge(Some(1.5), None).is_resolved());
    /// assert_eq!(RatioVerdict::judge(None, None), RatioVerdict::Missing);
    /// ```
    pub fn judge(median: Option<f64>, ci: Option<[f64; 2]>) -> RatioVerdict {
        let Some(median) = median else { return RatioVerdict::Missing };
        let resolved = ci.filter(|&[lo, hi]| {
            let finite = median.is_finite() && lo.is_finite() && hi.is_finite() && median > 0.0;
            finite
                && lo <= median
                && median <= hi
                && lo >= (1.0 - RESOLVED_WITHIN) * median
                && hi <= (1.0 + RESOLVED_WITHIN) * median
                && !(lo < 1.0 && 1.0 < hi)
        });
        match resolved {
            Some(ci) => RatioVerdict::Resolved { median, ci },
            None => RatioVerdict::Unresolved { median, ci },
        }
    }

    /// True for [`RatioVerdict::Resolved`].
    pub fn is_resolved(&self) -> bool {
        matches!(self, RatioVerdict::Resolved { .. })
    }

    /// True for [`RatioVerdict::Unresolved`].
    pub fn is_unresolved(&self) -> bool {
        matches!(self, RatioVerdict::Unresolved { .. })
    }

    /// The interval as the report prints it, `0.19-1.64`; `None` without one.
    pub fn interval_text(&self) -> Option<String> {
        match *self {
            RatioVerdict::Resolved { ci: [lo, hi], .. }
            | RatioVerdict::Unresolved { ci: Some([lo, hi]), .. } => {
                Some(format!("{}-{}", format::ratio_or_dash(lo), format::ratio_or_dash(hi)))
            }
            _ => None,
        }
    }

    /// The ratio as the summary prints it: `1.25x [1.20-1.30]`,
    /// `unresolved [0.19-1.64]`, `unresolved (no interval)`, or `-` without a ratio.
    ///
    /// # Examples
    /// ```
    /// use peerpipe_cli::report::ratio::RatioVerdict;
    /// assert_eq!(RatioVerdict::judge(Some(1.25), Some([1.2, 1.3])).text(), "1.25x [1.20-1.30]");
    /// assert_eq!(RatioVerdict::judge(Some(0.21), Some([0.19, 1.64])).text(), "unresolved [0.19-1.64]");
    /// ```
    pub fn text(&self) -> String {
        match self {
            RatioVerdict::Missing => "-".to_owned(),
            RatioVerdict::Resolved { median, .. } => format!(
                "{}x [{}]",
                format::ratio_or_dash(*median),
                self.interval_text().unwrap_or_default()
            ),
            RatioVerdict::Unresolved { .. } => match self.interval_text() {
                Some(interval) => format!("unresolved [{interval}]"),
                None => "unresolved (no interval)".to_owned(),
            },
        }
    }
}

/// Two lines that say what an unresolved ratio is, under a table or list that prints one as
/// `label`: `unresolved: a 95% interval wider than +-25% of the ratio, …`, and what narrows it.
pub fn unresolved_note(label: &str) -> String {
    format!(
        "{label}: a 95% interval wider than +-{:.0}% of the ratio, across 1.00x, or unknown;\n  \
         a longer run narrows it: --duration, --rounds and --generations 4x about halve it.",
        RESOLVED_WITHIN * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_must_lie_within_a_quarter_of_the_median_on_both_sides() {
        let judge = |lo, hi| RatioVerdict::judge(Some(2.0), Some([lo, hi])).is_resolved();
        assert!(judge(1.5, 2.5), "exactly 0.75x and 1.25x the median");
        assert!(!judge(1.49, 2.0), "too low");
        assert!(!judge(2.0, 2.51), "too high");
    }

    #[test]
    fn an_interval_across_the_floor_is_unresolved_however_narrow() {
        assert!(!RatioVerdict::judge(Some(1.0), Some([0.99, 1.01])).is_resolved());
        // Touching 1.0 is on one side.
        assert!(RatioVerdict::judge(Some(1.02), Some([1.0, 1.04])).is_resolved());
        assert!(RatioVerdict::judge(Some(0.93), Some([0.90, 0.97])).is_resolved());
    }

    #[test]
    fn odd_values_are_unresolved_not_a_panic() {
        for (median, ci) in [
            (f64::NAN, Some([1.0, 1.1])),
            (1.05, Some([f64::NAN, 1.1])),
            (1.05, Some([1.0, f64::INFINITY])),
            (0.0, Some([0.0, 0.0])),
            (-1.0, Some([-1.1, -0.9])),
            (1.05, Some([1.1, 1.0])),  // reversed
            (1.05, Some([1.06, 1.1])), // the median outside its own interval
        ] {
            let judged = RatioVerdict::judge(Some(median), ci);
            assert!(judged.is_unresolved(), "{median} {ci:?}: {judged:?}");
        }
        assert_eq!(RatioVerdict::judge(Some(1.5), None).text(), "unresolved (no interval)");
        assert!(
            unresolved_note("unresolved")
                .contains("unresolved: a 95% interval wider than +-25% of the ratio")
        );
    }
}
