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
//!
//!   When both reports found the machine's states ([`super::states`]), like is compared with
//!   like: a row is judged on its figures in a state both reports ran in
//!   ([`states::shared_states`]) — of those, the one where the row has most rounds in both —
//!   and a row that ran in no such state is not judged ([`Outcome::OtherState`]). Reports
//!   that share no state at all have nothing to compare ([`Comparison::no_state_in_common`]).
//!   Reports from before states are judged on their rows' overall figures, as they always
//!   were.
//! - [`Mode::Absolute`]: p50 round trips are compared, rows and floors alike; a pair differs
//!   when its p50 moved by more than both thresholds and more than the noise, the larger
//!   spread (max − min) of the per-round p50s in either file.

use std::time::Duration;

use peerpipe::pairing::PairedDifference;

use super::states::{self, MachineState, StateFigures};
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
    /// Paired mode, both reports with machine states: the row ran in no state both reports
    /// share, so its figures are not comparable; not judged.
    OtherState,
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
    /// The time A's row adds to its floor, over the same rounds as its ratio
    /// ([`StateFigures::added_ns`]), when known.
    pub a_added: Option<PairedDifference>,
    /// The time B's row adds to its floor, when known.
    pub b_added: Option<PairedDifference>,
    /// The machine states of A and of B whose rounds the figures are from, when both reports
    /// have states.
    pub states: Option<(u32, u32)>,
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

    /// B's added time − A's, in ns, with every difference the two 95 % intervals allow
    /// (`[B lo − A hi, B hi − A lo]`); `None` unless both are known. Where a floor and its row
    /// pay the same for the machine's state, this reads a change of the row's own cost at its
    /// own size: a server made 500 ns slower reads +500 ns.
    pub fn added_change_ns(&self) -> Option<(f64, [f64; 2])> {
        let (a, b) = (self.a_added?, self.b_added?);
        let interval = [b.ci_ns[0] - a.ci_ns[1], b.ci_ns[1] - a.ci_ns[0]];
        Some((b.median_ns - a.median_ns, interval))
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
    /// Paired mode with machine states in both reports: their states and which they share,
    /// the states rows were judged in. `None` otherwise (absolute mode, a report from before
    /// states), when rows are judged on their overall figures and `states_differ` may say the
    /// machine was in different states.
    pub states: Option<StatesCompared>,
}

/// The machine states of two reports, and which they share.
#[derive(Clone, Debug, PartialEq)]
pub struct StatesCompared {
    /// A's states ([`super::Machine::states`]).
    pub a: Vec<MachineState>,
    /// B's states.
    pub b: Vec<MachineState>,
    /// The states both ran in, as (A's id, B's id) ([`states::shared_states`]).
    pub shared: Vec<(u32, u32)>,
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

    /// True when the two reports have nothing comparable because of the machine's states:
    /// they share no state, or no matched row ran in a state both share (`peer compare` exits
    /// 3 then, whatever else it found).
    pub fn no_state_in_common(&self) -> bool {
        let Some(states) = &self.states else { return false };
        states.shared.is_empty()
            || (!self.rows.is_empty() && self.rows.iter().all(|p| p.outcome == Outcome::OtherState))
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
    let (states_a, states_b) = (&a.machine.states, &b.machine.states);
    let states =
        (mode == Mode::Paired && !states_a.is_empty() && !states_b.is_empty()).then(|| {
            StatesCompared {
                a: states_a.clone(),
                b: states_b.clone(),
                shared: states::shared_states(states_a, states_b),
            }
        });
    let shared = states.as_ref().map(|s| s.shared.as_slice());
    let (rows, mut only_in_a, mut only_in_b) =
        match_up(&a.rows, &b.rows, Row::key, row_label, |x, y| match mode {
            Mode::Paired => match paired_view(a, x, b, y, shared) {
                View::Paired(change) => paired_pair(x, y, change, thresholds),
                View::OtherState => {
                    let mut judged = pair(x, y, thresholds);
                    judged.outcome = Outcome::OtherState;
                    judged
                }
                View::Unpaired => pair(x, y, thresholds),
            },
            Mode::Absolute => pair(x, y, thresholds),
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
        // Judged state by state: what differs between the states is not in the figures.
        _ if states.is_some() => None,
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
        states,
    }
}

/// How a matched row is judged in paired mode.
enum View {
    /// By these paired figures.
    Paired(PairedChange),
    /// Not at all: it ran in no state both reports share.
    OtherState,
    /// By its p50s: no paired ratio in one of the files.
    Unpaired,
}

/// The paired view of rows `x` of `a` and `y` of `b`. With `shared` states (both reports have
/// states), their figures in the shared state where both have most rounds (the faster state
/// on a tie); else their overall figures.
fn paired_view(a: &Report, x: &Row, b: &Report, y: &Row, shared: Option<&[(u32, u32)]>) -> View {
    let (in_x, in_y) = (x.state_figures(), y.state_figures());
    let Some(shared) = shared.filter(|_| !in_x.is_empty() && !in_y.is_empty()) else {
        return paired_change(a, x, b, y).map_or(View::Unpaired, View::Paired);
    };
    let figures = |all: &[StateFigures], state: u32| all.iter().find(|f| f.state == state).copied();
    let best = shared
        .iter()
        .filter_map(|&(sa, sb)| Some((figures(&in_x, sa)?, figures(&in_y, sb)?)))
        .max_by_key(|(p, q)| (p.rounds.min(q.rounds), std::cmp::Reverse(p.state)));
    match best {
        Some((p, q)) => state_change(&p, &q).map_or(View::Unpaired, View::Paired),
        None => View::OtherState,
    }
}

/// The paired view of a row's figures `p` in a state of A and `q` in the same state of B.
fn state_change(p: &StateFigures, q: &StateFigures) -> Option<PairedChange> {
    Some(PairedChange {
        a_ratio: p.ratio.filter(|r| *r > 0.0)?,
        a_ci: p.ratio_ci?,
        b_ratio: q.ratio.filter(|r| *r > 0.0)?,
        b_ci: q.ratio_ci?,
        floor_ns: (p.floor_ns? + q.floor_ns?) as f64 / 2.0,
        a_added: added(p),
        b_added: added(q),
        states: Some((p.state, q.state)),
    })
}

/// The added time of `figures`, when known.
fn added(figures: &StateFigures) -> Option<PairedDifference> {
    Some(PairedDifference { median_ns: figures.added_ns?, ci_ns: figures.added_ci_ns? })
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
        a_added: x.headline_figures().as_ref().and_then(added),
        b_added: y.headline_figures().as_ref().and_then(added),
        states: None,
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
    use crate::report::states;

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
        PairedChange {
            a_ratio: a,
            a_ci,
            b_ratio: b,
            b_ci,
            floor_ns: 2_000.0,
            a_added: None,
            b_added: None,
            states: None,
        }
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

    /// A report of one row and its floor in 20 rounds of the given states: each round's
    /// (probe, floor p50, ratio) comes from `state_of(i)`, `added_ns` more on the row.
    fn run(state_of: impl Fn(usize) -> (u64, u64, f64), added_ns: u64) -> Report {
        let rounds: Vec<(Option<u64>, u64, u64)> = (0..20)
            .map(|i| {
                let (probe, floor, ratio) = state_of(i);
                // A little scatter, so that intervals have a width.
                let jitter = [0.995, 1.0, 1.005][i % 3];
                let floor = floor + (i as u64 % 4) * 10;
                let row = (floor as f64 * ratio * jitter) as u64 + added_ns;
                (Some(probe + (i as u64 % 5) * 10), floor, row)
            })
            .collect();
        let mut report = states::testing::one_row(&rounds);
        states::assign(&mut report);
        report
    }

    const FAST: (u64, u64, f64) = (900, 2_100, 1.30);
    const SLOW: (u64, u64, f64) = (3_500, 6_000, 1.05);
    const T: Thresholds = Thresholds { abs: Duration::from_nanos(100), rel_pct: 5.0 };

    fn text(comparison: &Comparison) -> String {
        let mut out = Vec::new();
        render(comparison, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn rows_are_judged_in_the_state_both_reports_ran_in() {
        let a = run(|_| FAST, 0);
        // B: half its rounds in the slow state, where the ratio is 1.05.
        let b = run(|i| if i < 10 { FAST } else { SLOW }, 0);
        let c = compare(&a, &b, T, Mode::Paired);
        let states = c.states.as_ref().unwrap();
        assert_eq!((states.a.len(), states.b.len(), &states.shared), (1, 2, &vec![(0, 0)]));
        let change = c.rows[0].paired.unwrap();
        assert_eq!(change.states, Some((0, 0)));
        assert!((change.b_ratio - 1.30).abs() < 0.01, "{change:?}");
        assert!(!c.differs() && !c.no_state_in_common(), "{}", text(&c));
        assert_eq!(c.states_differ, None);
        let words = text(&c);
        assert!(words.contains("judged in the state both reports ran in"), "{words}");
        assert!(words.contains("left out (0 of 20 in A, 10 of 20 in B)"), "{words}");
        // Over all of B's rounds, as before states, its ratio says neither state.
        let all = states::stratum(0, b.rows[0].rounds.iter()).unwrap();
        assert!(all.ratio_ci.unwrap()[0] < 1.10, "{all:?}");
    }

    #[test]
    fn a_known_server_delay_reads_as_its_own_size() {
        let a = run(|i| if i % 2 == 0 { FAST } else { SLOW }, 0);
        let b = run(|i| if i % 3 == 0 { SLOW } else { FAST }, 500);
        let c = compare(&a, &b, T, Mode::Paired);
        assert!(c.differs(), "{}", text(&c));
        let change = c.rows[0].paired.unwrap();
        // Judged in the state where both have most rounds: the fast one (10 and 13).
        assert_eq!(change.states, Some((0, 0)));
        let (added, [lo, hi]) = change.added_change_ns().unwrap();
        assert!((added - 500.0).abs() < 20.0 && lo <= 500.0 && 500.0 <= hi, "{change:?}");
        let words = text(&c);
        assert!(words.contains("added B-A") && words.contains("+5"), "{words}");
    }

    #[test]
    fn reports_that_share_no_state_have_nothing_to_compare() {
        let a = run(|_| SLOW, 0);
        let b = run(|_| FAST, 0);
        let c = compare(&a, &b, T, Mode::Paired);
        assert!(c.states.as_ref().unwrap().shared.is_empty());
        assert!(c.no_state_in_common() && !c.differs());
        assert_eq!(c.rows[0].outcome, Outcome::OtherState);
        let words = text(&c);
        assert!(
            words.contains(
                "A ran in a state where moving 4 KiB across CPUs took 3.52us, B in one where it \
                 took 920ns: no state in common, nothing to compare"
            ),
            "{words}"
        );
        assert!(!words.contains("nothing differs"), "{words}");
        // By absolute times the states are not matched: the p50s are compared as ever.
        assert!(compare(&a, &b, T, Mode::Absolute).states.is_none());
    }

    #[test]
    fn reports_from_before_states_compare_as_before() {
        let a = run(|_| FAST, 0);
        let mut old = run(|_| FAST, 500);
        old.machine.states.clear();
        for round in old.baseline[0].rounds.iter_mut().chain(&mut old.rows[0].rounds) {
            (round.probe_ns, round.state) = (None, None);
        }
        let c = compare(&a, &old, T, Mode::Paired);
        assert!(c.states.is_none() && !c.no_state_in_common());
        let change = c.rows[0].paired.unwrap();
        assert_eq!(change.states, None);
        assert_eq!(change.b_ratio, old.rows[0].ratio_to_baseline.unwrap());
        assert!(c.differs());
    }
}
