//! The machine's states, found in the data: which rounds ran while moving data between two CPUs
//! cost what, and each row's figures in each state.
//!
//! A virtual machine can have states, each lasting minutes, in which every transfer between
//! CPUs costs more: on a 2-core KVM guest, 4 KiB moved between the CPUs and back in ~0.9 µs in
//! one state and ~3.5 µs in another, a 500-double floor took ~2.1 µs in the first and ~6 µs in
//! the second, and a row's ratio to it read 1.28–1.31 in the first and 1.04–1.07 in the second.
//! No single ratio holds across that, and a run that straddles a change of state gives an
//! interval covering both, which says nothing. So every round is probed
//! ([`crosscore::RoundProbe`](super::crosscore::RoundProbe)), [`find`] finds the states in the
//! probes of a whole run, [`assign`] tags every round with its state, and [`figures`] gives a
//! row's ratio and the time it adds to its floor in each state separately.
//!
//! # Finding the states
//!
//! States are told apart by the data, not by a threshold of one machine. The probe figures are
//! taken in log space (a state is a factor, not a number of nanoseconds) and sorted. A cut
//! between two neighbouring values splits them into a faster and a slower part; it separates
//! two states only when both
//!
//! - the empty stretch between the two parts exceeds [`SEPARATION`] times the larger spread of
//!   the two (their median absolute deviation, at least [`MIN_SPREAD`]): one state's probes
//!   scatter around their median without leaving such a hole, so a noisy state does not
//!   split. Up to one probe in [`MID_CHANGE_SHARE`] nearest the cut is set aside when the
//!   stretch is measured: a round probed just as the machine changed state lands between two
//!   states and must not hide them; and
//! - the medians of the two parts differ by at least [`STATE_FACTOR`] (1.5x): the states seen
//!   differ by 2x and more, while a group of outliers less than 1.5x away is a state's own
//!   tail, not another state.
//!
//! A run is cut into as many states as pass — every two neighbouring parts passing both tests,
//! each part's spread its own — up to [`MAX_STATES`]; among cuts into as many states, the one
//! whose narrowest gap is widest relative to the spreads is taken. Each state is numbered from
//! 0, the fastest.
//!
//! On the 2-core KVM guest above, one run's 119 probes sat at ~0.65 µs, ~1.4 µs and ~3.5–4.5
//! µs, at times changing every few rounds; within a state they varied by up to 1.6x (max ÷
//! min), and 2 of them fell between two states.
//!
//! # Rounds and states
//!
//! A round with a probe is in the state whose range holds its figure. A round whose probe got
//! no answer in time takes the state of the nearest probed round of the same floor or row (the
//! likeliest to share its state); when none of them was probed its state is unknown and it
//! counts in no state's figures.
//!
//! Whether two reports' states are one state is [`across_runs`](super::across_runs)' question.

use serde::{Deserialize, Serialize};

use super::model::{MachineState, Report, Round};
use crate::pairing::{self, paired_difference_by_generation, paired_ratio_by_generation};

/// Two groups of probes are two states only when their medians differ by at least this
/// factor (see the [module documentation](self)).
pub const STATE_FACTOR: f64 = 1.5;

/// The empty stretch between two states, in log space, must exceed this many times the larger
/// of their spreads (median absolute deviations): about 2.7 standard deviations of a normal
/// spread.
///
/// Chosen on simulated runs (500 each) of log-normal probes: one state split falsely in at
/// most 1 of 500 runs of 60 probes or more however noisy (spread up to 30 %), and in 2–3 % of
/// runs of 20 probes 20–30 % noisy; two states 2x apart with 10 % spread were found in 75 % of
/// runs, three states 2.2x and 2.6x apart in 88–99 %. At 3.0 the same states are found in
/// 89–100 % of runs, and one state splits in up to 3 % of long runs and 8 % of short ones:
/// splitting a state that is not there costs more (a row's figures from part of its rounds, a
/// comparison that finds no state in common) than missing one (figures over both, as before
/// states were found).
pub const SEPARATION: f64 = 4.0;

/// The smallest spread (median absolute deviation of the logs) a group of probes is credited
/// with: a 2 % scatter, so that a state of one or two rounds (spread 0) does not make every
/// small gap look wide.
pub const MIN_SPREAD: f64 = 0.02;

/// One probe in this many (none in runs of fewer) may lie between two states without hiding
/// them: a probe taken as the machine changed state measures some of each.
pub const MID_CHANGE_SHARE: usize = 50;

/// The most states a run is split into.
pub const MAX_STATES: usize = 3;

/// Finds the states in `probes`, the probe figures (ns) of every round of a run in any order
/// (zeros are left out), by the rule of the [module documentation](self). Empty for no probe;
/// one state when the probes do not separate.
///
/// # Examples
/// ```
/// use peerpipe_cli::report::states::find;
/// // Rounds in the fast state (~0.9 us) and in the slow one (~3.5 us), interleaved.
/// let probes = [900, 3_500, 950, 3_450, 920, 3_600, 910, 880, 3_550];
/// let states = find(&probes);
/// assert_eq!(states.len(), 2);
/// assert_eq!((states[0].id, states[0].probe_ns, states[0].rounds), (0, 910, 5));
/// assert_eq!((states[1].id, states[1].min_ns, states[1].max_ns), (1, 3_450, 3_600));
/// // A noisy machine in one state stays one state.
/// assert_eq!(find(&[900, 1_000, 1_100, 1_050, 950, 1_150]).len(), 1);
/// ```
pub fn find(probes: &[u64]) -> Vec<MachineState> {
    let mut sorted: Vec<u64> = probes.iter().copied().filter(|&p| p > 0).collect();
    sorted.sort_unstable();
    if sorted.is_empty() {
        return Vec::new();
    }
    let logs: Vec<f64> = sorted.iter().map(|&p| (p as f64).ln()).collect();
    let cuts = best_cuts(&logs);
    let bounds: Vec<usize> = std::iter::once(0).chain(cuts).chain([sorted.len()]).collect();
    (0u32..)
        .zip(bounds.windows(2))
        .map(|(id, bounds)| {
            let members = &sorted[bounds[0]..bounds[1]];
            MachineState {
                id,
                probe_ns: members[(members.len() - 1) / 2],
                min_ns: members[0],
                max_ns: members[members.len() - 1],
                rounds: members.len() as u64,
                compute_ns: None,
            }
        })
        .collect()
}

/// The widest gaps considered as cuts between states: more than enough for [`MAX_STATES`],
/// and few enough that every set of them can be tried.
const CANDIDATE_CUTS: usize = 16;

/// The cuts of sorted `logs` into states (each the index of a slower part's first value, in
/// order): the most parts, at most [`MAX_STATES`], such that every two neighbouring parts pass
/// both tests of the [module documentation](self); among as many, those whose weakest cut has
/// the widest gap relative to its spread. Empty for one state.
fn best_cuts(logs: &[f64]) -> Vec<usize> {
    let gap = |at: usize| logs[at] - logs[at - 1];
    // A cut is tried at every gap between neighbours that is not tiny; the widest first.
    let mut candidates: Vec<usize> = (1..logs.len()).filter(|&at| gap(at) > MIN_SPREAD).collect();
    candidates.sort_by(|&a, &b| gap(b).total_cmp(&gap(a)));
    candidates.truncate(CANDIDATE_CUTS);
    candidates.sort_unstable();
    let mut best: (Vec<usize>, f64) = (Vec::new(), 0.0);
    each_set(&candidates, MAX_STATES - 1, &mut Vec::new(), &mut |cuts| {
        if let Some(score) = weakest_cut(logs, cuts)
            && (cuts.len(), score) > (best.0.len(), best.1)
        {
            best = (cuts.to_vec(), score);
        }
    });
    best.0
}

/// Calls `visit` with every non-empty set of at most `most` of `candidates` (each in order).
fn each_set(
    candidates: &[usize],
    most: usize,
    chosen: &mut Vec<usize>,
    visit: &mut impl FnMut(&[usize]),
) {
    for (i, &candidate) in candidates.iter().enumerate() {
        chosen.push(candidate);
        visit(chosen);
        if chosen.len() < most {
            each_set(&candidates[i + 1..], most, chosen, visit);
        }
        chosen.pop();
    }
}

/// For `cuts` of sorted `logs`: the smallest ratio of gap to spread over its cuts, when every
/// two neighbouring parts pass both tests; `None` when some do not. The stretch tested sets
/// aside up to one in [`MID_CHANGE_SHARE`] of the probes, those nearest the cut (at most half
/// of either part): probes caught as the machine changed state.
fn weakest_cut(logs: &[f64], cuts: &[usize]) -> Option<f64> {
    let aside = logs.len() / MID_CHANGE_SHARE;
    let bounds: Vec<usize> =
        std::iter::once(0).chain(cuts.iter().copied()).chain([logs.len()]).collect();
    let parts: Vec<&[f64]> = bounds.windows(2).map(|b| &logs[b[0]..b[1]]).collect();
    let mut weakest = f64::INFINITY;
    for pair in parts.windows(2) {
        let (faster, slower) = (pair[0], pair[1]);
        let stretch = (0..=aside)
            .flat_map(|i| (0..=aside - i).map(move |j| (i, j)))
            .filter(|&(i, j)| i < faster.len().div_ceil(2) && j < slower.len().div_ceil(2))
            .map(|(i, j)| slower[j] - faster[faster.len() - 1 - i])
            .fold(f64::NEG_INFINITY, f64::max);
        let spread = spread(faster).max(spread(slower)).max(MIN_SPREAD);
        let apart = pairing::median(slower) - pairing::median(faster);
        if stretch <= SEPARATION * spread || apart < STATE_FACTOR.ln() {
            return None;
        }
        weakest = weakest.min((slower[0] - faster[faster.len() - 1]) / spread);
    }
    Some(weakest)
}

/// The median absolute deviation of sorted values.
fn spread(sorted: &[f64]) -> f64 {
    let middle = pairing::median(sorted);
    let mut deviations: Vec<f64> = sorted.iter().map(|x| (x - middle).abs()).collect();
    deviations.sort_unstable_by(f64::total_cmp);
    pairing::median(&deviations)
}

/// The state of a round whose probe read `probe_ns`: the one whose range holds it, else the
/// nearest in log space; `None` without states.
pub fn state_of(states: &[MachineState], probe_ns: u64) -> Option<u32> {
    let distance = |s: &MachineState| {
        let x = (probe_ns.max(1) as f64).ln();
        let (lo, hi) = ((s.min_ns.max(1) as f64).ln(), (s.max_ns.max(1) as f64).ln());
        (lo - x).max(x - hi).max(0.0)
    };
    states.iter().min_by(|a, b| distance(a).total_cmp(&distance(b))).map(|s| s.id)
}

/// Tags `rounds` (one floor's or one row's, in order) with their states: by their own probe,
/// or, without one, by the nearest probed round (the earlier on a tie); unknown when no round
/// was probed.
fn tag(rounds: &mut [Round], states: &[MachineState]) {
    let probed: Vec<(usize, u32)> = rounds
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((i, state_of(states, r.probe_ns.filter(|&p| p > 0)?)?)))
        .collect();
    for (i, round) in rounds.iter_mut().enumerate() {
        round.state = probed.iter().min_by_key(|&&(j, _)| i.abs_diff(j)).map(|&(_, state)| state);
    }
}

/// Finds the states of a whole run in the probes of its floors' rounds (one per round of
/// every group: a row's rounds carry the same figures), records them in
/// [`Machine::states`](super::model::Machine::states), tags every round of every floor and row with
/// its state, and makes each row's `ratio_to_baseline` and `ratio_ci` those of its main state
/// (see [`main_state`]) — the figures the answer quotes. A report with no probe (one CPU, or
/// no probe answered) is left as it is.
pub fn assign(report: &mut Report) {
    let probes: Vec<u64> = report
        .baseline
        .iter()
        .flat_map(|floor| floor.rounds.iter().filter_map(|r| r.probe_ns))
        .collect();
    let mut states = find(&probes);
    if states.is_empty() {
        return;
    }
    for floor in &mut report.baseline {
        tag(&mut floor.rounds, &states);
    }
    for state in &mut states {
        let computed = report
            .baseline
            .iter()
            .flat_map(|floor| &floor.rounds)
            .filter(|r| r.state == Some(state.id))
            .filter_map(|r| r.compute_ns);
        state.compute_ns = pairing::median_ns(computed.collect());
    }
    for row in &mut report.rows {
        tag(&mut row.rounds, &states);
        if let Some(main) = main_state(&figures(&row.rounds)) {
            row.ratio_to_baseline = main.ratio;
            row.ratio_ci = main.ratio_ci;
        }
    }
    report.machine.states = states;
}

/// A row's figures in one state of the machine: its rounds in that state only, paired with
/// the floor's in the same rounds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateFigures {
    /// The state ([`MachineState::id`]).
    pub state: u32,
    /// The row's rounds in that state.
    pub rounds: u64,
    /// Median over those rounds of (row p50 ÷ floor p50 of the same round).
    pub ratio: Option<f64>,
    /// Its 95 % interval, by rounds and by generation
    /// ([`pairing::paired_ratio_by_generation`]).
    pub ratio_ci: Option<[f64; 2]>,
    /// Median over those rounds of (row p50 − floor p50 of the same round), in nanoseconds:
    /// the time the row adds to moving the same bytes raw.
    pub added_ns: Option<f64>,
    /// Its 95 % interval ([`pairing::paired_difference_by_generation`]).
    pub added_ci_ns: Option<[f64; 2]>,
    /// The floor's median p50 over those rounds, in nanoseconds.
    pub floor_ns: Option<u64>,
    /// How fast the second CPU computed in those rounds: the median of their
    /// [`Round::compute_ns`]. The rounds' own, not the state's over all groups
    /// ([`MachineState::compute_ns`]): those of other groups were taken at other moments, and
    /// the CPU's speed can change within a state. `None` when none of them has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_ns: Option<u64>,
}

/// A row's figures in each state it has rounds in (see [`StateFigures`]), by state id. Rounds
/// of unknown state, and rounds without a floor p50, count in none; empty for rounds that
/// carry no state (no probe).
///
/// # Examples
/// ```
/// use peerpipe_cli::report::Round;
/// use peerpipe_cli::report::states::figures;
/// let round = |p50_ns, floor, state| Round { p50_ns, p99_ns: None, floor_p50_ns: Some(floor),
///     client_cpu: None, server_cpu: None, preemptions: None, generation: 0,
///     probe_ns: None, compute_ns: None, state: Some(state) };
/// let rounds = [round(2_600, 2_000, 0), round(6_300, 6_000, 1), round(2_620, 2_000, 0)];
/// let by_state = figures(&rounds);
/// assert_eq!(by_state.len(), 2);
/// assert_eq!((by_state[0].state, by_state[0].rounds, by_state[0].added_ns), (0, 2, Some(610.0)));
/// assert_eq!(by_state[1].ratio, Some(1.05));
/// ```
pub fn figures(rounds: &[Round]) -> Vec<StateFigures> {
    let mut ids: Vec<u32> = rounds.iter().filter_map(|r| r.state).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .filter_map(|id| stratum(id, rounds.iter().filter(|r| r.state == Some(id))))
        .collect()
}

/// The figures of `rounds` (a row's, of one state) as [`StateFigures`] labelled `state`;
/// `None` when none has a floor p50.
pub(crate) fn stratum<'a>(
    state: u32,
    rounds: impl Iterator<Item = &'a Round>,
) -> Option<StateFigures> {
    let (mut row, mut floor, mut compute, mut generations) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::<(u32, usize)>::new());
    for round in rounds {
        let Some(floor_p50) = round.floor_p50_ns else { continue };
        row.push(round.p50_ns);
        floor.push(floor_p50);
        compute.extend(round.compute_ns);
        // Rounds are in order, so a generation's rounds are contiguous.
        match generations.last_mut() {
            Some((generation, len)) if *generation == round.generation => *len += 1,
            _ => generations.push((round.generation, 1)),
        }
    }
    if row.is_empty() {
        return None;
    }
    let lengths: Vec<usize> = generations.iter().map(|&(_, len)| len).collect();
    let ratio = paired_ratio_by_generation(&row, &floor, &lengths);
    let added = paired_difference_by_generation(&row, &floor, &lengths);
    Some(StateFigures {
        state,
        rounds: row.len() as u64,
        ratio: ratio.map(|r| r.median),
        ratio_ci: ratio.map(|r| r.ci).filter(|ci| ci.iter().all(|x| x.is_finite())),
        added_ns: added.map(|a| a.median_ns),
        added_ci_ns: added.map(|a| a.ci_ns).filter(|ci| ci.iter().all(|x| x.is_finite())),
        // `row` is not empty, and `floor` as long.
        floor_ns: pairing::median_ns(floor),
        compute_ns: pairing::median_ns(compute),
    })
}

/// The state a row spent most rounds in (the faster one on a tie): its main state, whose
/// figures stand for the row (`ratio_to_baseline`, `added_ns`). `None` for no figures.
pub fn main_state(figures: &[StateFigures]) -> Option<&StateFigures> {
    figures.iter().max_by(|a, b| a.rounds.cmp(&b.rounds).then(b.state.cmp(&a.state)))
}

/// The figures that stand for a row's `rounds`: those of their main state ([`main_state`]),
/// or, when they carry no state, of all of them that have a floor (with `state` 0 and no
/// meaning to it); `None` when no round has a floor. A row's `added_ns` in the JSON, its
/// `added` in the table.
pub fn headline_figures(rounds: &[Round]) -> Option<StateFigures> {
    match main_state(&figures(rounds)) {
        Some(main) => Some(*main),
        None => stratum(0, rounds.iter()),
    }
}

/// The state of the run with the most rounds (the faster on a tie): its main state, the one
/// the report's figures mostly come from. `None` for no state.
pub fn run_main_state(all: &[MachineState]) -> Option<&MachineState> {
    all.iter().max_by(|a, b| a.rounds.cmp(&b.rounds).then(b.id.cmp(&a.id)))
}

/// Hand-built reports for the tests of states and of what uses them.
#[cfg(test)]
pub(crate) mod testing {
    use crate::report::key::RowId;
    use crate::report::model::{BaselineRow, Percentiles, Report, Round, Row};

    /// A report of one row of 500 doubles and its floor, measured in `rounds` (probe, floor
    /// p50, row p50), two per generation; no state is assigned yet.
    pub(crate) fn one_row(rounds: &[(Option<u64>, u64, u64)]) -> Report {
        let (mut floor_rounds, mut row_rounds) = (Vec::new(), Vec::new());
        for (i, &(probe, floor_ns, row_ns)) in rounds.iter().enumerate() {
            let generation = (i / 2) as u32;
            floor_rounds.push(round(floor_ns, None, generation, probe));
            row_rounds.push(round(row_ns, Some(floor_ns), generation, probe));
        }
        let p50 = |rounds: &[Round]| {
            let mut p50s: Vec<u64> = rounds.iter().map(|r| r.p50_ns).collect();
            p50s.sort_unstable();
            Percentiles {
                p50: p50s.get(p50s.len() / 2).copied().unwrap_or(0),
                ..Default::default()
            }
        };
        let (mut floor, mut row) = (floor(floor_rounds), row(row_rounds, None));
        (floor.rtt_ns, row.rtt_ns) = (p50(&floor.rounds), p50(&row.rounds));
        Report::of(vec![floor], vec![row])
    }

    fn floor(rounds: Vec<Round>) -> BaselineRow {
        BaselineRow {
            bytes: 4000,
            transport: "pipe".parse().unwrap(),
            wait: "spin".parse().unwrap(),
            pin: "split".parse().unwrap(),
            lent: false,
            iterations: 1,
            rtt_ns: Percentiles::default(),
            rounds,
            shared_core_share: None,
            route: None,
        }
    }

    fn row(rounds: Vec<Round>, ratio: Option<f64>) -> Row {
        Row {
            id: RowId {
                dtype: "f64".parse().unwrap(),
                elements: 500,
                bytes: 4000,
                transport: "pipe".parse().unwrap(),
                path: "codec".parse().unwrap(),
                handler: "echo".parse().unwrap(),
                wait: "spin".parse().unwrap(),
                pin: "split".parse().unwrap(),
            },
            iterations: 1,
            rtt_ns: Percentiles::default(),
            transfer_ns: Percentiles::default(),
            encode_ns: Percentiles::default(),
            decode_ns: Percentiles::default(),
            server_ns: Percentiles::default(),
            // Finite, so that reports compare equal.
            client_cpu_ns: 0.0,
            server_cpu_ns: 0.0,
            mb_per_s: 0.0,
            ratio_to_baseline: ratio,
            ratio_ci: None,
            rounds,
            shared_core_share: None,
            client_waits: None,
        }
    }

    pub(crate) fn round(
        p50_ns: u64,
        floor_p50_ns: Option<u64>,
        generation: u32,
        probe: Option<u64>,
    ) -> Round {
        Round {
            p50_ns,
            p99_ns: None,
            floor_p50_ns,
            client_cpu: None,
            server_cpu: None,
            preemptions: None,
            generation,
            probe_ns: probe,
            compute_ns: None,
            state: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::round;
    use super::*;

    /// Deterministic noise: a xorshift generator of normal deviates (Box–Muller).
    struct Noise(u64);

    impl Noise {
        fn new(seed: u64) -> Noise {
            // Spread the seed's bits, so that the first draws are not tiny.
            let mut noise = Noise(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            for _ in 0..8 {
                noise.uniform();
            }
            noise
        }
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }
        /// `median` scattered log-normally by `sigma` (in log space).
        fn around(&mut self, median: f64, sigma: f64) -> u64 {
            (median * (sigma * self.normal()).exp()).round() as u64
        }
    }

    #[test]
    fn one_state_when_the_probes_do_not_separate() {
        let mut noise = Noise::new(1);
        let probes: Vec<u64> = (0..40).map(|_| noise.around(900.0, 0.05)).collect();
        let states = find(&probes);
        assert_eq!(states.len(), 1, "{states:?}");
        assert_eq!((states[0].id, states[0].rounds), (0, 40));
        assert!(states[0].min_ns <= states[0].probe_ns && states[0].probe_ns <= states[0].max_ns);
        assert!(find(&[]).is_empty() && find(&[0, 0]).is_empty());
        assert_eq!(find(&[900]).len(), 1);
    }

    #[test]
    fn a_noisy_single_state_does_not_split() {
        // Far noisier than a state of the machine measured (±20 %): 30 % log-normal scatter,
        // and a tail of rounds 1.3x slow, over many seeds and sizes.
        for seed in 1..=50 {
            let mut noise = Noise::new(seed);
            let n = 10 + 20 * (seed as usize % 10);
            let mut probes: Vec<u64> = (0..n).map(|_| noise.around(1_000.0, 0.3)).collect();
            probes.extend((0..n / 10).map(|_| noise.around(1_300.0, 0.02)));
            let states = find(&probes);
            assert_eq!(states.len(), 1, "seed {seed}, {n} probes: {states:?}");
        }
    }

    #[test]
    fn two_interleaved_states_are_found() {
        let mut noise = Noise::new(7);
        let probes: Vec<u64> =
            (0..40)
                .map(|i| {
                    if i % 3 == 0 { noise.around(3_500.0, 0.04) } else { noise.around(900.0, 0.06) }
                })
                .collect();
        let states = find(&probes);
        assert_eq!(states.len(), 2, "{states:?}");
        assert_eq!(states.iter().map(|s| s.id).collect::<Vec<_>>(), [0, 1]);
        assert_eq!((states[0].rounds, states[1].rounds), (26, 14));
        assert!((800..1_000).contains(&states[0].probe_ns), "{states:?}");
        assert!((3_200..3_800).contains(&states[1].probe_ns), "{states:?}");
        // Every probe is tagged with the state it came from.
        for (i, &p) in probes.iter().enumerate() {
            assert_eq!(state_of(&states, p), Some(u32::from(i % 3 == 0)), "probe {i}: {p}");
        }
        // A figure outside every range goes to the nearest state, in log space.
        assert_eq!(state_of(&states, 1_700), Some(0));
        assert_eq!(state_of(&states, 2_000), Some(1));
        assert_eq!(state_of(&[], 900), None);
    }

    #[test]
    fn three_states_are_found_fastest_first() {
        let mut noise = Noise::new(3);
        let mut probes = Vec::new();
        for i in 0..60 {
            let median = [900.0, 3_500.0, 400.0][i % 3];
            probes.push(noise.around(median, 0.05));
        }
        // Two outliers of the slow state do not make a fourth.
        probes.extend([4_400, 2_900]);
        let states = find(&probes);
        assert_eq!(states.len(), 3, "{states:?}");
        let medians: Vec<u64> = states.iter().map(|s| s.probe_ns).collect();
        assert!(medians[0] < 450 && (800..1_000).contains(&medians[1]) && medians[2] > 3_000);
        assert_eq!(states.iter().map(|s| s.rounds).sum::<u64>(), 62);
        assert_eq!(states[2].rounds, 22);
    }

    /// The 119 probes of one real run of `peer --sizes 500 --dtype f64 --path codec --handler
    /// echo` on a 2-core KVM guest, in order: three states, changing every few rounds, and two
    /// probes (2154, 2 of them near 3000) taken as the state changed.
    const REAL_RUN: [u64; 119] = [
        681, 671, 681, 651, 651, 3377, 1122, 1173, 1423, 1313, 1352, 1373, 1393, 1273, 1483, 1553,
        1603, 4068, 1463, 1483, 3797, 1042, 1182, 641, 671, 671, 1412, 1402, 1422, 1392, 652, 641,
        662, 1342, 1333, 671, 661, 641, 661, 1322, 1152, 1292, 1102, 1442, 671, 661, 672, 671,
        3416, 3417, 3306, 3516, 4358, 3917, 3256, 1392, 1202, 1192, 672, 681, 661, 641, 3186, 3126,
        1422, 1423, 3376, 3817, 3446, 3987, 671, 671, 3366, 3356, 3236, 3006, 651, 651, 651, 651,
        3557, 1663, 1362, 1523, 3998, 3947, 4137, 4107, 1653, 1733, 4278, 4288, 4379, 4508, 1483,
        2154, 4248, 4228, 1453, 1463, 3687, 3657, 1112, 1433, 4358, 4088, 651, 642, 1532, 1423,
        651, 1562, 1383, 1593, 1593, 1593, 1593, 1563, 1653,
    ];

    #[test]
    fn a_real_run_of_three_states_changing_every_few_rounds() {
        let states = find(&REAL_RUN);
        assert_eq!(states.len(), 3, "{states:?}");
        let medians: Vec<u64> = states.iter().map(|s| s.probe_ns).collect();
        assert!((640..700).contains(&medians[0]), "{states:?}");
        assert!((1_300..1_500).contains(&medians[1]), "{states:?}");
        assert!((3_300..4_200).contains(&medians[2]), "{states:?}");
        // The probe caught between states goes with one of its neighbours, not a state of its own.
        assert!(states.iter().any(|s| s.min_ns <= 2_154 && 2_154 <= s.max_ns));
    }

    #[test]
    fn a_probe_caught_mid_change_does_not_hide_two_states() {
        let mut noise = Noise::new(5);
        let mut probes: Vec<u64> = (0..30).map(|_| noise.around(1_400.0, 0.12)).collect();
        probes.extend((0..30).map(|_| noise.around(3_800.0, 0.1)));
        probes.extend([2_100, 2_400]);
        assert_eq!(find(&probes).len(), 2, "{:?}", find(&probes));
    }

    #[test]
    fn a_gap_without_a_factor_is_not_a_state() {
        // Two tight groups 1.3x apart: a clear gap, but within what one state spans.
        let probes = [1_000, 1_005, 1_010, 995, 1_300, 1_305, 1_310, 1_295];
        assert_eq!(find(&probes).len(), 1);
        // 1.6x apart: two states.
        let probes = [1_000, 1_005, 1_010, 995, 1_600, 1_605, 1_610, 1_595];
        assert_eq!(find(&probes).len(), 2);
    }

    /// A report of one group measured in 20 rounds (two per generation): round `i` ran in the
    /// fast state (probe ~0.9 us, floor ~2.1 us, ratio `fast`) or the slow one (~3.5 us, ~6 us,
    /// ratio `slow`), as `slow_round(i)` says.
    fn run(fast: f64, slow: f64, slow_round: impl Fn(usize) -> bool) -> Report {
        let mut noise = Noise::new(11);
        let rounds: Vec<(Option<u64>, u64, u64)> = (0..20)
            .map(|i| {
                let (probe, floor_ns, ratio) = if slow_round(i) {
                    (noise.around(3_500.0, 0.03), noise.around(6_000.0, 0.02), slow)
                } else {
                    (noise.around(900.0, 0.05), noise.around(2_100.0, 0.02), fast)
                };
                let row_ns = floor_ns as f64 * ratio * (0.01 * noise.normal()).exp();
                (Some(probe), floor_ns, row_ns.round() as u64)
            })
            .collect();
        testing::one_row(&rounds)
    }

    #[test]
    fn a_change_of_state_mid_run_gives_each_state_its_own_ratio() {
        let mut report = run(1.30, 1.05, |i| i >= 10);
        // Over all rounds, as without states: one interval covering both, which says nothing.
        let rows = &report.rows[0].rounds;
        let all = stratum(0, rows.iter()).unwrap();
        let ci = all.ratio_ci.unwrap();
        assert!(ci[0] < 1.10 && ci[1] > 1.25, "{all:?}");

        assign(&mut report);
        let states = &report.machine.states;
        assert_eq!(states.len(), 2, "{states:?}");
        assert_eq!((states[0].rounds, states[1].rounds), (10, 10));
        let rounds = &report.rows[0].rounds;
        assert!(rounds[..10].iter().all(|r| r.state == Some(0)));
        assert!(rounds[10..].iter().all(|r| r.state == Some(1)));
        assert!(report.baseline[0].rounds.iter().zip(rounds).all(|(f, r)| f.state == r.state));

        let by_state = figures(&report.rows[0].rounds);
        assert_eq!(by_state.len(), 2);
        let (fast, slow) = (by_state[0], by_state[1]);
        let (fast_ci, slow_ci) = (fast.ratio_ci.unwrap(), slow.ratio_ci.unwrap());
        assert!((fast.ratio.unwrap() - 1.30).abs() < 0.01, "{fast:?}");
        assert!((slow.ratio.unwrap() - 1.05).abs() < 0.01, "{slow:?}");
        assert!(fast_ci[0] > 1.05 && slow_ci[1] < 1.30, "neither covers both: {by_state:?}");
        assert!(fast_ci[0] <= 1.30 && 1.30 <= fast_ci[1], "{fast:?}");
        assert!(slow_ci[0] <= 1.05 && 1.05 <= slow_ci[1], "{slow:?}");
        // What the row adds: ~0.3 x 2.1 us in the fast state, ~0.05 x 6 us in the slow.
        assert!((fast.added_ns.unwrap() - 630.0).abs() < 40.0, "{fast:?}");
        assert!((slow.added_ns.unwrap() - 300.0).abs() < 80.0, "{slow:?}");
        assert!((fast.floor_ns.unwrap() as f64 / 2_100.0 - 1.0).abs() < 0.05, "{fast:?}");
        // Ten rounds each: the faster state is the main one, and the row's ratio is its.
        let row = &report.rows[0];
        assert_eq!(main_state(&by_state).map(|m| m.state), Some(0));
        assert_eq!((row.ratio_to_baseline, row.ratio_ci), (fast.ratio, fast.ratio_ci));
    }

    #[test]
    fn each_state_carries_the_median_compute_figure_of_its_rounds() {
        let mut report = run(1.30, 1.05, |i| i >= 10);
        // The second CPU copies in ~2.2 us in the fast state's rounds, ~3.5 us in the slow
        // one's, with one round of each unmeasured.
        for (i, round) in report.baseline[0].rounds.iter_mut().enumerate() {
            round.compute_ns = match i {
                0 | 10 => None,
                _ if i < 10 => Some(2_190 + i as u64),
                _ => Some(3_500 + i as u64),
            };
        }
        assign(&mut report);
        let computed: Vec<Option<u64>> =
            report.machine.states.iter().map(|s| s.compute_ns).collect();
        assert_eq!(computed, [Some(2_195), Some(3_515)]);
        // A run without the figure (a report of an earlier build) has none in its states.
        let mut unmeasured = run(1.30, 1.05, |i| i >= 10);
        assign(&mut unmeasured);
        assert!(unmeasured.machine.states.iter().all(|s| s.compute_ns.is_none()));
    }

    #[test]
    fn a_rows_figures_carry_the_copy_time_of_their_own_rounds() {
        let mut report = run(1.30, 1.05, |i| i >= 10);
        // The floor group's rounds saw the second CPU copy in 571 ns; the row's rounds of the
        // fast state saw it slow in most of them, and one round carries no figure.
        for round in &mut report.baseline[0].rounds {
            round.compute_ns = Some(571);
        }
        for (i, round) in report.rows[0].rounds.iter_mut().enumerate() {
            round.compute_ns = match i {
                0 => None,
                1..=3 => Some(571),
                _ => Some(930 + i as u64),
            };
        }
        assign(&mut report);
        let by_state = figures(&report.rows[0].rounds);
        // Fast state: 571 x3 and 934..=939: the median of the nine measured is 935.
        assert_eq!(by_state[0].compute_ns, Some(935));
        assert_eq!(by_state[1].compute_ns, Some(944));
        let unmeasured = run(1.30, 1.05, |i| i >= 10);
        assert!(figures(&unmeasured.rows[0].rounds).iter().all(|f| f.compute_ns.is_none()));
    }

    #[test]
    fn the_main_state_is_the_one_with_most_rounds() {
        let mut report = run(1.30, 1.05, |i| i % 4 != 0);
        assign(&mut report);
        let by_state = figures(&report.rows[0].rounds);
        assert_eq!(by_state.iter().map(|f| f.rounds).collect::<Vec<_>>(), [5, 15]);
        let main = main_state(&by_state).unwrap();
        assert_eq!(main.state, 1);
        assert!((report.rows[0].ratio_to_baseline.unwrap() - 1.05).abs() < 0.01);
        // Interleaved states: each state's generations are what is left of them.
        assert!(by_state.iter().all(|f| f.ratio_ci.is_some() && f.added_ci_ns.is_some()));
    }

    #[test]
    fn a_round_without_a_probe_takes_the_nearest_probed_rounds_state() {
        let states = find(&[900, 910, 3_500, 3_510]);
        let mut rounds: Vec<Round> = [Some(900), None, None, Some(3_500), None]
            .into_iter()
            .map(|probe| round(1, Some(1), 0, probe))
            .collect();
        tag(&mut rounds, &states);
        let tags: Vec<Option<u32>> = rounds.iter().map(|r| r.state).collect();
        // Round 1 is nearest probed round 0, rounds 2 and 4 nearest probed round 3.
        assert_eq!(tags, [Some(0), Some(0), Some(1), Some(1), Some(1)]);
        let mut unprobed = vec![round(1, Some(1), 0, None); 3];
        tag(&mut unprobed, &states);
        assert!(unprobed.iter().all(|r| r.state.is_none()));
    }

    #[test]
    fn a_report_without_probes_is_left_as_it_was() {
        let mut report = run(1.30, 1.05, |_| false);
        for round in report.baseline[0].rounds.iter_mut().chain(&mut report.rows[0].rounds) {
            round.probe_ns = None;
        }
        report.rows[0].ratio_to_baseline = Some(1.5);
        let before = report.clone();
        assign(&mut report);
        assert_eq!(report, before);
        assert!(report.machine.states.is_empty() && figures(&report.rows[0].rounds).is_empty());
        // Its headline figures are those of all its rounds.
        let all = headline_figures(&report.rows[0].rounds).unwrap();
        assert_eq!(all.rounds, 20);
        assert!((all.ratio.unwrap() - 1.30).abs() < 0.01);
    }
}
