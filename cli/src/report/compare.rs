//! Comparing two reports.
//!
//! Rows of A and B are matched by (dtype, elements, path, handler, wait, pin, transport),
//! baselines by (bytes, transport, wait, pin). How a matched pair is judged depends on the
//! [`Mode`]:
//!
//! - [`Mode::Paired`] (the default of `peer compare`): a row is judged by its ratio to its own
//!   floor from the same run ([`peerpipe::pairing`]), so two runs taken while the machine ran at
//!   different speeds compare correctly. It differs when the change of its ratio, converted to
//!   time at the mean p50 of the two floors, exceeds the absolute threshold, the ratio moved
//!   by more than the relative threshold, and the two 95 % intervals do not overlap. Floors
//!   measure the machine and are shown, not judged. A row without a paired ratio in either
//!   file (a report from before pairing) is judged absolutely.
//! - [`Mode::Absolute`]: p50 round trips are compared, rows and floors alike; a pair differs
//!   when its p50 moved by more than both thresholds and more than the noise, the larger
//!   spread (max − min) of the per-round p50s in either file.

use std::time::Duration;

use super::{BaselineRow, Report, Row, crosscore};
use peerpipe::transport::TransportKind;

mod text;
pub use text::render;

/// Thresholds a difference must exceed (both) to be reported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// Absolute.
    pub abs: Duration,
    /// Relative: percent of A's p50, or of A's ratio in paired mode.
    pub rel_pct: f64,
}

impl Default for Thresholds {
    /// 10 µs and 10 %, the defaults of `peer compare`.
    fn default() -> Thresholds {
        Thresholds { abs: Duration::from_micros(10), rel_pct: 10.0 }
    }
}

/// How rows are judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// By each row's ratio to its same-run floor, with confidence intervals.
    #[default]
    Paired,
    /// By p50 round trips.
    Absolute,
}

/// What became of one matched pair, tested in this order: the first test the difference does
/// not pass is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// |B − A| is at most the absolute threshold.
    WithinAbs,
    /// |B − A| is at most the relative threshold of A.
    WithinRel,
    /// Absolute mode: |B − A| is at most the noise (the larger spread of per-round p50s).
    WithinNoise,
    /// Paired mode: the 95 % intervals of the two ratios overlap.
    WithinInterval,
    /// A floor in paired mode: shown, not judged.
    NotJudged,
    /// Beyond every test: reported.
    Differs,
}

/// The paired view of a row present in both reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairedChange {
    /// A's ratio to its floor (median over rounds).
    pub a_ratio: f64,
    /// Its 95 % interval.
    pub a_ci: [f64; 2],
    /// B's ratio to its floor.
    pub b_ratio: f64,
    /// Its 95 % interval.
    pub b_ci: [f64; 2],
    /// Mean of the two floors' p50, ns: the unit that turns a change of ratio into time.
    pub floor_ns: f64,
}

impl PairedChange {
    /// (B ratio − A ratio) × the mean floor, in ns.
    pub fn difference_ns(&self) -> f64 {
        (self.b_ratio - self.a_ratio) * self.floor_ns
    }

    /// B ratio − A ratio in percent of A's ratio.
    pub fn change_pct(&self) -> f64 {
        (self.b_ratio - self.a_ratio) * 100.0 / self.a_ratio
    }

    /// The gap between the two intervals (positive when they do not overlap), in ratio units.
    pub fn gap(&self) -> f64 {
        (self.b_ci[0] - self.a_ci[1]).max(self.a_ci[0] - self.b_ci[1])
    }
}

/// One row (or baseline) present in both reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    /// What was measured, e.g. `f64 x 500 echo zero-copy, wait block, pin free`.
    pub label: String,
    /// A's p50 round trip.
    pub a_p50_ns: u64,
    /// B's p50 round trip.
    pub b_p50_ns: u64,
    /// Spread of A's per-round p50s; `None` when A measured it in one round.
    pub a_noise_ns: Option<u64>,
    /// Spread of B's per-round p50s; `None` when B measured it in one round.
    pub b_noise_ns: Option<u64>,
    /// The ratios, when the pair was judged by them.
    pub paired: Option<PairedChange>,
    /// Whether it differs, or which test it passed.
    pub outcome: Outcome,
}

impl Pair {
    /// B − A in nanoseconds: the paired difference when judged by ratios, else of the p50s.
    pub fn difference_ns(&self) -> i128 {
        match &self.paired {
            Some(p) => p.difference_ns().round() as i128,
            None => self.b_p50_ns as i128 - self.a_p50_ns as i128,
        }
    }

    /// B − A in percent of A (of the ratio when paired); `None` when A is zero.
    pub fn change_pct(&self) -> Option<f64> {
        match &self.paired {
            Some(p) => Some(p.change_pct()),
            None => (self.a_p50_ns > 0)
                .then(|| self.difference_ns() as f64 * 100.0 / self.a_p50_ns as f64),
        }
    }
}

/// The result of [`compare`].
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The thresholds used.
    pub thresholds: Thresholds,
    /// How rows were judged.
    pub mode: Mode,
    /// Matched rows, in A's order.
    pub rows: Vec<Pair>,
    /// Matched baselines, in A's order.
    pub baselines: Vec<Pair>,
    /// Labels of rows and baselines found only in A.
    pub only_in_a: Vec<String>,
    /// Labels of rows and baselines found only in B.
    pub only_in_b: Vec<String>,
    /// The CPU models of A and B when they differ.
    pub machines_differ: Option<(String, String)>,
    /// The median 4 KiB cross-core round trip of A's and of B's probes (see
    /// [`super::crosscore`]) when they differ by more than
    /// [`super::crosscore::STATE_CHANGE_FACTOR`]: the
    /// machine was in different states, and ratios of transfer-bound rows move with that.
    pub states_differ: Option<(u64, u64)>,
    /// The clocks A and B were timed with ([`super::Machine::clock`]) when they are of
    /// different kinds: the split's spans can move by tens of ns between the two.
    pub clocks_differ: Option<(String, String)>,
}

/// The kind of clock a report was timed with: `tsc`, `monotonic`, or `not recorded`.
fn clock_kind(report: &Report) -> &str {
    match report.machine.clock.split_whitespace().next() {
        Some(kind) => kind,
        None => "not recorded",
    }
}

/// The median 4 KiB cross-core round trip over a report's probed floors.
fn median_block_ns(report: &Report) -> Option<u64> {
    crosscore::median_block_ns(&report.cross_core_probes())
}

impl Comparison {
    /// True when any matched row or baseline differs. Rows present in only one file do not
    /// count.
    pub fn differs(&self) -> bool {
        self.differing().next().is_some()
    }

    /// The matched rows and baselines that differ, rows first.
    pub fn differing(&self) -> impl Iterator<Item = &Pair> {
        self.rows.iter().chain(&self.baselines).filter(|p| p.outcome == Outcome::Differs)
    }
}

/// Matches the rows and baselines of `a` and `b` and judges each pair in `mode` against
/// `thresholds`. A key that occurs several times in a file (the same placement listed twice)
/// is matched occurrence by occurrence.
///
/// # Examples
/// ```
/// use peerpipe_cli::report::compare::{Mode, Thresholds, compare};
/// use peerpipe_cli::report::{ConfigRecord, Machine, Report};
/// let empty = Report { peerpipe: "0.1.0".into(), machine: Machine::default(),
///     config: ConfigRecord::default(), baseline: vec![], rows: vec![], sync_costs: vec![], skipped: vec![] };
/// assert!(!compare(&empty, &empty, Thresholds::default(), Mode::Paired).differs());
/// ```
pub fn compare(a: &Report, b: &Report, thresholds: Thresholds, mode: Mode) -> Comparison {
    let (rows, mut only_in_a, mut only_in_b) =
        match_up(&a.rows, &b.rows, Row::key, row_label, |x, y| {
            match (mode, paired_change(a, x, b, y)) {
                (Mode::Paired, Some(change)) => paired_pair(x, y, change, thresholds),
                _ => pair(x, y, thresholds),
            }
        });
    let (baselines, base_a, base_b) =
        match_up(&a.baseline, &b.baseline, BaselineRow::key, baseline_label, |x, y| {
            let mut judged = base_pair(x, y, thresholds);
            if mode == Mode::Paired {
                judged.outcome = Outcome::NotJudged;
            }
            judged
        });
    only_in_a.extend(base_a);
    only_in_b.extend(base_b);
    let machines_differ =
        (a.machine.cpu != b.machine.cpu).then(|| (a.machine.cpu.clone(), b.machine.cpu.clone()));
    let states_differ = match (median_block_ns(a), median_block_ns(b)) {
        (Some(x), Some(y))
            if x.max(y) as f64 > crosscore::STATE_CHANGE_FACTOR * x.min(y).max(1) as f64 =>
        {
            Some((x, y))
        }
        _ => None,
    };
    let clocks_differ = (clock_kind(a) != clock_kind(b))
        .then(|| (clock_kind(a).to_owned(), clock_kind(b).to_owned()));
    Comparison {
        thresholds,
        mode,
        rows,
        baselines,
        only_in_a,
        only_in_b,
        machines_differ,
        states_differ,
        clocks_differ,
    }
}

/// The paired view of rows `x` of `a` and `y` of `b`, when both have a ratio, an interval and
/// a floor.
fn paired_change(a: &Report, x: &Row, b: &Report, y: &Row) -> Option<PairedChange> {
    let floor = |report: &Report, row: &Row| {
        report.baseline_for(row).map(|f| f.rtt_ns.p50).filter(|&p50| p50 > 0)
    };
    let (fa, fb) = (floor(a, x)?, floor(b, y)?);
    Some(PairedChange {
        a_ratio: x.ratio_to_baseline.filter(|r| *r > 0.0)?,
        a_ci: x.ratio_ci?,
        b_ratio: y.ratio_to_baseline.filter(|r| *r > 0.0)?,
        b_ci: y.ratio_ci?,
        floor_ns: (fa + fb) as f64 / 2.0,
    })
}

/// Pairs the k-th occurrence of each key in `a` with the k-th in `b`.
fn match_up<'a, T, K: PartialEq>(
    a: &'a [T],
    b: &'a [T],
    key: impl Fn(&'a T) -> K,
    label: impl Fn(&T) -> String,
    judge: impl Fn(&T, &T) -> Pair,
) -> (Vec<Pair>, Vec<String>, Vec<String>) {
    let mut used = vec![false; b.len()];
    let mut pairs = Vec::new();
    let mut only_in_a = Vec::new();
    for x in a {
        let k = key(x);
        match (0..b.len()).find(|&i| !used[i] && key(&b[i]) == k) {
            Some(i) => {
                used[i] = true;
                pairs.push(judge(x, &b[i]));
            }
            None => only_in_a.push(label(x)),
        }
    }
    let only_in_b = b.iter().zip(&used).filter(|(_, u)| !**u).map(|(y, _)| label(y)).collect();
    (pairs, only_in_a, only_in_b)
}

fn row_label(row: &Row) -> String {
    let transport = if row.id.transport == TransportKind::Pipe {
        String::new()
    } else {
        format!(" ({})", row.id.transport)
    };
    format!(
        "{} x {} {} {}{transport}, wait {}, pin {}",
        row.id.dtype, row.id.elements, row.id.handler, row.id.path, row.id.wait, row.id.pin
    )
}

fn baseline_label(base: &BaselineRow) -> String {
    let transport = if base.transport == TransportKind::Pipe {
        String::new()
    } else {
        format!(" ({})", base.transport)
    };
    format!("baseline {} B{transport}, wait {}, pin {}", base.bytes, base.wait, base.pin)
}

/// A p50 and, when it was measured in more than one round, its noise (the spread of the
/// per-round p50s).
fn measured(p50: u64, rounds: usize, spread: u64) -> (u64, Option<u64>) {
    (p50, (rounds > 1).then_some(spread))
}

fn pair(a: &Row, b: &Row, thresholds: Thresholds) -> Pair {
    judged(
        row_label(a),
        measured(a.rtt_ns.p50, a.rounds.len(), a.p50_spread_ns()),
        measured(b.rtt_ns.p50, b.rounds.len(), b.p50_spread_ns()),
        thresholds,
    )
}

fn base_pair(a: &BaselineRow, b: &BaselineRow, thresholds: Thresholds) -> Pair {
    judged(
        baseline_label(a),
        measured(a.rtt_ns.p50, a.rounds.len(), a.p50_spread_ns()),
        measured(b.rtt_ns.p50, b.rounds.len(), b.p50_spread_ns()),
        thresholds,
    )
}

fn paired_pair(a: &Row, b: &Row, change: PairedChange, thresholds: Thresholds) -> Pair {
    let mut pair = pair(a, b, thresholds);
    pair.outcome = judge_paired(&change, thresholds);
    pair.paired = Some(change);
    pair
}

/// The outcome of a paired change: the time it amounts to must exceed the absolute threshold,
/// the ratio must move by more than the relative one, and the intervals must not overlap.
fn judge_paired(change: &PairedChange, thresholds: Thresholds) -> Outcome {
    let ratio_moved = (change.b_ratio - change.a_ratio).abs();
    if change.difference_ns().abs() <= thresholds.abs.as_nanos() as f64 {
        Outcome::WithinAbs
    } else if ratio_moved <= change.a_ratio * thresholds.rel_pct / 100.0 {
        Outcome::WithinRel
    } else if change.gap() <= 0.0 {
        Outcome::WithinInterval
    } else {
        Outcome::Differs
    }
}

fn judged(
    label: String,
    (a_p50_ns, a_noise_ns): (u64, Option<u64>),
    (b_p50_ns, b_noise_ns): (u64, Option<u64>),
    thresholds: Thresholds,
) -> Pair {
    let noise = a_noise_ns.max(b_noise_ns).unwrap_or(0);
    Pair {
        label,
        a_p50_ns,
        b_p50_ns,
        a_noise_ns,
        b_noise_ns,
        paired: None,
        outcome: judge(a_p50_ns, b_p50_ns, noise, thresholds),
    }
}

/// The outcome for p50s `a` and `b` with `noise`: the difference must exceed the absolute
/// threshold, the relative one and the noise, strictly.
fn judge(a: u64, b: u64, noise: u64, thresholds: Thresholds) -> Outcome {
    let difference = a.abs_diff(b);
    let abs = thresholds.abs.as_nanos();
    if (difference as u128) <= abs {
        Outcome::WithinAbs
    } else if difference as f64 <= a as f64 * thresholds.rel_pct / 100.0 {
        Outcome::WithinRel
    } else if difference <= noise {
        Outcome::WithinNoise
    } else {
        Outcome::Differs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(abs_us: u64, rel_pct: f64) -> Thresholds {
        Thresholds { abs: Duration::from_micros(abs_us), rel_pct }
    }

    #[test]
    fn each_threshold_is_strict_and_checked_in_order() {
        assert_eq!(judge(100_000, 110_000, 0, t(10, 1.0)), Outcome::WithinAbs);
        assert_eq!(judge(100_000, 110_500, 0, t(10, 10.5)), Outcome::WithinRel);
        assert_eq!(judge(100_000, 110_501, 0, t(10, 10.5)), Outcome::Differs);
        assert_eq!(judge(100_000, 111_000, 11_000, t(10, 10.0)), Outcome::WithinNoise);
        assert_eq!(judge(100_000, 111_000, 10_999, t(10, 10.0)), Outcome::Differs);
        // The relative threshold is a share of A: 11 us is within 10 % of 111 us.
        assert_eq!(judge(111_000, 100_000, 0, t(10, 10.0)), Outcome::WithinRel);
    }

    fn change(a: f64, a_ci: [f64; 2], b: f64, b_ci: [f64; 2]) -> PairedChange {
        PairedChange { a_ratio: a, a_ci, b_ratio: b, b_ci, floor_ns: 2_000.0 }
    }

    #[test]
    fn a_paired_change_needs_time_share_and_separate_intervals() {
        let t = Thresholds { abs: Duration::from_nanos(100), rel_pct: 5.0 };
        // 1.40 -> 1.65 at a 2 us floor: +500 ns, +17.9 %, intervals apart.
        let moved = change(1.40, [1.38, 1.42], 1.65, [1.62, 1.68]);
        assert_eq!(moved.difference_ns().round(), 500.0);
        assert!((moved.gap() - 0.20).abs() < 1e-9);
        assert_eq!(judge_paired(&moved, t), Outcome::Differs);
        // The same move with overlapping intervals is not reported.
        let unsure = change(1.40, [1.30, 1.60], 1.65, [1.55, 1.75]);
        assert_eq!(judge_paired(&unsure, t), Outcome::WithinInterval);
        // Under the absolute threshold: 1.40 -> 1.44 at 2 us is 80 ns.
        let small = change(1.40, [1.39, 1.41], 1.44, [1.43, 1.45]);
        assert_eq!(judge_paired(&small, t), Outcome::WithinAbs);
        // Over 100 ns but under 5 % of the ratio: 1.40 -> 1.46 at 2 us is 120 ns, 4.3 %.
        let slight = change(1.40, [1.39, 1.41], 1.46, [1.45, 1.47]);
        assert_eq!(judge_paired(&slight, t), Outcome::WithinRel);
        // Faster counts too.
        let faster = change(1.65, [1.62, 1.68], 1.40, [1.38, 1.42]);
        assert_eq!(judge_paired(&faster, t), Outcome::Differs);
    }
}
