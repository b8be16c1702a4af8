//! Matching two reports' rows and floors, and judging each matched pair by the rules of the
//! [module documentation](super): what [`compare`] finds, as a [`Comparison`].

use std::time::Duration;

use crate::pairing::PairedDifference;

use crate::report::across_runs;
use crate::report::model::{BaselineRow, MachineState, Report, Row};
use crate::report::states::{self, StateFigures};
use peerpipe::transport::TransportKind;

/// Thresholds a difference must exceed (both) to be reported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// Absolute.
    pub abs: Duration,
    /// Relative, in percent: of A's p50 (absolute mode), of A's round trip in the shared
    /// state (paired mode with states), or of A's ratio (paired mode without states).
    pub rel_pct: f64,
}

impl Thresholds {
    /// The relative threshold as an amount of `of` (`of` × `rel_pct` / 100).
    pub fn rel_of(&self, of: f64) -> f64 {
        of * self.rel_pct / 100.0
    }
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
    /// Paired mode: the change's 95 % interval holds 0 — of the added time when judged in a
    /// shared state ([`PairedChange::on_added_time`]), else of the ratio
    /// ([`difference_interval`]).
    WithinInterval,
    /// A floor in paired mode: shown, not judged.
    NotJudged,
    /// Paired mode, both reports with machine states: the row ran in no state both reports
    /// share, or in none long enough for its figures there to be bounded (its rounds there all
    /// in one generation: `unresolved`), so its figures are not comparable; not judged.
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
    /// A's floor p50 over the same rounds as its ratio, ns.
    pub a_floor_ns: f64,
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
    /// Whether the change is judged on added time: the figures are from a state both reports
    /// ran in and both added times are known. Otherwise it is judged on the ratios.
    pub fn on_added_time(&self) -> bool {
        self.states.is_some() && self.added_change_ns().is_some()
    }

    /// B − A in ns: of the added times when [`on_added_time`](Self::on_added_time), else
    /// (B ratio − A ratio) × the mean floor.
    pub fn difference_ns(&self) -> f64 {
        match self.added_change_ns().filter(|_| self.on_added_time()) {
            Some((median, _)) => median,
            None => (self.b_ratio - self.a_ratio) * self.floor_ns,
        }
    }

    /// B − A in percent: of A's round trip ([`a_round_trip_ns`](Self::a_round_trip_ns)) when
    /// judged on added time, else of A's ratio.
    pub fn change_pct(&self) -> f64 {
        if self.on_added_time() {
            self.difference_ns() * 100.0 / self.a_round_trip_ns()
        } else {
            (self.b_ratio - self.a_ratio) * 100.0 / self.a_ratio
        }
    }

    /// A's round trip over the rounds of its figures, ns: its floor's p50 plus the time it
    /// adds (its floor × its ratio when the added time is unknown). The relative threshold is
    /// a share of this when judging added time.
    pub fn a_round_trip_ns(&self) -> f64 {
        match self.a_added {
            Some(added) => self.a_floor_ns + added.median_ns,
            None => self.a_floor_ns * self.a_ratio,
        }
    }

    /// B's ratio − A's with its 95 % interval ([`difference_interval`]).
    pub fn ratio_change(&self) -> (f64, [f64; 2]) {
        difference_interval((self.a_ratio, self.a_ci), (self.b_ratio, self.b_ci))
    }

    /// How far the ratio's change lies from 0 beyond its 95 % interval, in ratio units:
    /// positive when the interval leaves 0 out ([`clearance`]).
    pub fn gap(&self) -> f64 {
        clearance(self.ratio_change())
    }

    /// How far the added time's change lies from 0 beyond its 95 % interval, in ns ([`clearance`]);
    /// `None` unless both added times are known.
    pub fn added_gap_ns(&self) -> Option<f64> {
        self.added_change_ns().map(clearance)
    }

    /// The smallest change of added time, in ns, that these two runs could tell from their
    /// noise and `thresholds`: the widest side of the change's 95 % interval, or the absolute
    /// threshold, or the relative one of A's round trip, whichever is largest; `None` unless
    /// judged on added time.
    pub fn smallest_found_ns(&self, thresholds: Thresholds) -> Option<f64> {
        let (change, [lo, hi]) = self.added_change_ns().filter(|_| self.on_added_time())?;
        let noise = (change - lo).max(hi - change);
        let rel = thresholds.rel_of(self.a_round_trip_ns());
        Some(noise.max(thresholds.abs.as_nanos() as f64).max(rel))
    }

    /// B's added time − A's, in ns, with its 95 % interval ([`difference_interval`]); `None`
    /// unless both are known. Where a floor and its row pay the same for the machine's state,
    /// this reads a change of the row's own cost at its own size: a server made 500 ns slower
    /// reads +500 ns.
    pub fn added_change_ns(&self) -> Option<(f64, [f64; 2])> {
        let (a, b) = (self.a_added?, self.b_added?);
        Some(difference_interval((a.median_ns, a.ci_ns), (b.median_ns, b.ci_ns)))
    }
}

/// `b − a` for two runs' figures, each given with its 95 % interval for a repeat of its run
/// (a run's intervals cover what running it again gives: [`crate::pairing::repeat_interval`]),
/// and the 95 % interval of that difference. Each side of it combines the two runs' spreads
/// in quadrature, each the side of its interval that faces the other run (the MOVER method for
/// a difference of two independent estimates), divided by √2: an interval for a repeat holds
/// the spread of two runs (this one's and the next's), of which the difference of two runs
/// carries each run's once. So two runs differ when the difference leaves out 0, which it does
/// at about √2 times less separation than it takes for the two intervals not to overlap
/// (docs/REPORT.md, "Comparing two runs", has what each rule found).
///
/// ```
/// use peerpipe_cli::report::compare::difference_interval;
/// // 600 ± 100 ns against 900 ± 100 ns: +300 ns, ± 100 ns.
/// let (change, [lo, hi]) = difference_interval((600.0, [500.0, 700.0]), (900.0, [800.0, 1000.0]));
/// assert_eq!(change, 300.0);
/// assert!((lo - 200.0).abs() < 1e-9 && (hi - 400.0).abs() < 1e-9);
/// ```
pub fn difference_interval(
    (a, a_ci): (f64, [f64; 2]),
    (b, b_ci): (f64, [f64; 2]),
) -> (f64, [f64; 2]) {
    let change = b - a;
    let below = (((b - b_ci[0]).powi(2) + (a_ci[1] - a).powi(2)) / 2.0).sqrt();
    let above = (((b_ci[1] - b).powi(2) + (a - a_ci[0]).powi(2)) / 2.0).sqrt();
    (change, [change - below, change + above])
}

/// How far an interval `[lo, hi]` lies from 0: `lo` when above it, `−hi` when below it, and
/// zero or less when it holds 0.
pub fn clearance((_, [lo, hi]): (f64, [f64; 2])) -> f64 {
    lo.max(-hi)
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
    /// B − A in nanoseconds: the paired difference when paired
    /// ([`PairedChange::difference_ns`]: of the added times or the ratios), else of the p50s.
    pub fn difference_ns(&self) -> i128 {
        match &self.paired {
            Some(p) => p.difference_ns().round() as i128,
            None => self.b_p50_ns as i128 - self.a_p50_ns as i128,
        }
    }

    /// B − A in percent of A (when paired, [`PairedChange::change_pct`]); `None` when A is
    /// zero.
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
    /// In absolute mode (rows not judged per machine state): the 4 KiB round
    /// trip between the first two CPUs for most of A's run and of B's ([`usual_probe_ns`]),
    /// when they are two states ([`across_runs::same_state_ns`] is false): the machine was in
    /// different states, and the times and ratios of transfer-bound rows move with that.
    pub states_differ: Option<(u64, u64)>,
    /// The clocks A and B were timed with ([`Machine::clock`](crate::report::Machine::clock)) when
    /// they are of different kinds: the split's spans can move by tens of ns between the two.
    pub clocks_differ: Option<(String, String)>,
    /// Paired mode with machine states in both reports: their states and which they share,
    /// the states rows were judged in. `None` otherwise (absolute mode, a report without
    /// states), when rows are judged on their overall figures; in absolute mode
    /// `states_differ` may say the machine was in different states.
    pub states: Option<StatesCompared>,
}

/// The machine states of two reports, and which they share.
#[derive(Clone, Debug, PartialEq)]
pub struct StatesCompared {
    /// A's states ([`Machine::states`](crate::report::Machine::states)).
    pub a: Vec<MachineState>,
    /// B's states.
    pub b: Vec<MachineState>,
    /// The states both ran in, as (A's id, B's id) ([`across_runs::shared_states`]).
    pub shared: Vec<(u32, u32)>,
}

/// The kind of clock a report was timed with: `tsc`, `monotonic`, or `not recorded`.
fn clock_kind(report: &Report) -> &str {
    match report.machine.clock.split_whitespace().next() {
        Some(kind) => kind,
        None => "not recorded",
    }
}

/// The 4 KiB round trip between the first two CPUs for most of a run: the probe of its main
/// state ([`states::run_main_state`]). `None` when no round was probed.
pub fn usual_probe_ns(report: &Report) -> Option<u64> {
    states::run_main_state(&report.machine.states).map(|main| main.probe_ns)
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
                shared: across_runs::shared_states(states_a, states_b),
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
    let states_differ = match (usual_probe_ns(a), usual_probe_ns(b)) {
        // Judged state by state: what differs between the states is not in the figures.
        _ if states.is_some() => None,
        (Some(x), Some(y)) if !across_runs::same_state_ns(x, y) => Some((x, y)),
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
    /// Not at all: it ran in no state both reports share long enough to be judged there.
    OtherState,
    /// By its p50s: no paired ratio in one of the files.
    Unpaired,
}

/// The paired view of rows `x` of `a` and `y` of `b`. With `shared` states (both reports have
/// states), their figures in the shared state where the change of added time is known most
/// surely: the narrowest 95 % interval of that change (each run's interval comes from its own
/// rounds, not from the other run's figure), then most rounds in both, then the faster state,
/// among the shared states where both have a ratio with its interval (none: not judged); else
/// their overall figures.
fn paired_view(a: &Report, x: &Row, b: &Report, y: &Row, shared: Option<&[(u32, u32)]>) -> View {
    let (in_x, in_y) = (states::figures(&x.rounds), states::figures(&y.rounds));
    let Some(shared) = shared.filter(|_| !in_x.is_empty() && !in_y.is_empty()) else {
        return paired_change(a, x, b, y).map_or(View::Unpaired, View::Paired);
    };
    let figures = |all: &[StateFigures], state: u32| all.iter().find(|f| f.state == state).copied();
    // The width of the change's interval, unknown (last) when an added time is.
    let width = |change: &PairedChange| {
        change.added_change_ns().map_or(f64::INFINITY, |(_, [lo, hi])| hi - lo)
    };
    // Only states where both runs' figures are bounded (an interval each): a row that ran in
    // the shared states too briefly (all its rounds there in one generation) cannot be judged
    // there, and its figures over all its rounds would mix the states.
    let best = shared
        .iter()
        .filter_map(|&(sa, sb)| {
            let (p, q) = (figures(&in_x, sa)?, figures(&in_y, sb)?);
            Some((p, q, state_change(&p, &q)?))
        })
        .min_by(|one, other| {
            width(&one.2)
                .total_cmp(&width(&other.2))
                .then(other.0.rounds.min(other.1.rounds).cmp(&one.0.rounds.min(one.1.rounds)))
                .then(one.0.state.cmp(&other.0.state))
        });
    best.map_or(View::OtherState, |(_, _, change)| View::Paired(change))
}

/// The paired view of a row's figures `p` in a state of A and `q` in the same state of B.
fn state_change(p: &StateFigures, q: &StateFigures) -> Option<PairedChange> {
    Some(PairedChange {
        a_ratio: p.ratio.filter(|r| *r > 0.0)?,
        a_ci: p.ratio_ci?,
        b_ratio: q.ratio.filter(|r| *r > 0.0)?,
        b_ci: q.ratio_ci?,
        floor_ns: (p.floor_ns? + q.floor_ns?) as f64 / 2.0,
        a_floor_ns: p.floor_ns? as f64,
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
        a_floor_ns: fa as f64,
        a_added: states::headline_figures(&x.rounds).as_ref().and_then(added),
        b_added: states::headline_figures(&y.rounds).as_ref().and_then(added),
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

/// The outcome of a paired change. Judged on added time
/// ([`PairedChange::on_added_time`]): the change of the added time must exceed the absolute
/// threshold and the relative one of A's round trip, and its 95 % interval must leave out 0.
/// Else, on the ratios: the time the change of ratio amounts to must exceed the absolute
/// threshold, the ratio must move by more than the relative one, and the change's 95 %
/// interval must leave out 0 ([`difference_interval`]).
fn judge_paired(change: &PairedChange, thresholds: Thresholds) -> Outcome {
    // In ns either way: the added times' change, or the ratios' at the mean floor.
    let time = change.difference_ns().abs();
    // What must move by more than the relative threshold, of what, and how far apart the
    // intervals are.
    let (moved, of, gap) = match change.added_gap_ns().filter(|_| change.on_added_time()) {
        Some(gap) => (time, change.a_round_trip_ns(), gap),
        None => ((change.b_ratio - change.a_ratio).abs(), change.a_ratio, change.gap()),
    };
    if time <= thresholds.abs.as_nanos() as f64 {
        Outcome::WithinAbs
    } else if moved <= thresholds.rel_of(of) {
        Outcome::WithinRel
    } else if gap <= 0.0 {
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
    } else if difference as f64 <= thresholds.rel_of(a as f64) {
        Outcome::WithinRel
    } else if difference <= noise {
        Outcome::WithinNoise
    } else {
        Outcome::Differs
    }
}

// The rules' tests stand beside this file, in `tests.rs`, and see its private helpers.
#[cfg(test)]
#[path = "tests.rs"]
mod tests;
