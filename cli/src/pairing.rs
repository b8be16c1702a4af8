//! Paired, interleaved measurement: why the report's ratios hold still on a noisy machine.
//!
//! A virtual machine changes speed for seconds at a time, and the scheduler may move a pair of
//! processes onto one core for a while. A row measured for 150 ms and its floor measured a
//! second earlier can then be measured on what amounts to two different machines, and their
//! ratio says more about the machine than about the code.
//!
//! So the members of a group — a raw floor and every row that moves the same bytes the same
//! way — are measured in **rounds**: each round gives every member one short burst of round
//! trips, in a fresh random order, and the ratio of a row is taken **within** each round (the
//! row's p50 in that round ÷ the floor's p50 in the same round). A slow spell that covers a
//! round slows both sides of that round's ratio; the median over rounds ignores the few rounds
//! it cuts in half. [`run`] is the scheduler, generic over a [`Group`] so that it can be driven
//! by real processes or, in tests, by a simulated machine; [`paired_ratio`] and
//! [`median_interval`] turn per-round p50s into a ratio with a distribution-free confidence
//! interval.
//!
//! Rounds are not all alike: the report measures them in **generations**, each with freshly
//! spawned servers and fresh buffers, and on a 2-core KVM guest one generation's ratio differed
//! from the next by up to ±5 % while its own rounds agreed to ±2 % (which processes and which
//! pages a run happened to get). Treating the rounds as independent then gives an interval
//! that is too narrow: 6 of 10 runs' intervals held the median of ten runs.
//! [`paired_ratio_by_generation`] widens the interval to what the generations say, by a
//! two-stage bootstrap (generations, then rounds within each) — see [`generation_interval`].

use crate::rng::Rng;
use peerpipe::error::{Error, Result};

/// How long each burst of a member lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Burst {
    /// Round trips until this many nanoseconds have passed, and at least `min_round_trips`.
    Duration {
        /// Nanoseconds of timed round trips per burst.
        ns: u64,
        /// Fewest timed round trips per burst, however long they take.
        min_round_trips: u64,
    },
    /// Exactly this many timed round trips per burst.
    RoundTrips(u64),
}

/// How a group is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Rounds; every member gets one burst per round.
    pub rounds: u32,
    /// Length of each burst.
    pub burst: Burst,
    /// Untimed round trips at the start of every burst, after the member's server was
    /// resumed: they absorb the wake-up and the caches the previous member left cold.
    pub settle_round_trips: u32,
    /// Untimed warm-up of each member before the first round, in nanoseconds (and at least
    /// `settle_round_trips` round trips).
    pub warmup_ns: u64,
    /// Seed of the order of members within each round.
    pub seed: u64,
}

/// What [`run`] drives: members numbered `0..members()`, each able to do one round trip.
pub trait Group {
    /// Number of members.
    fn members(&self) -> usize;
    /// Called once at the start of each round (`round` counts from 0 in every [`run`]), before
    /// its first burst and after the warm-up: the moment to take a measure of the machine
    /// that every member's burst in this round shares (the report probes the cost of moving
    /// data between CPUs here). No [`Group::enter`] has been called for this round yet; the
    /// member entered last in the previous round (or the warm-up) is still the current one.
    /// What this costs lengthens the round, not any burst: no round trip is timed meanwhile.
    ///
    /// # Errors
    /// Any error of the group; it ends the run.
    fn round_starts(&mut self, round: usize) -> Result<()> {
        let _ = round;
        Ok(())
    }
    /// Called before each burst (and before the warm-up) of `member`: make its server the one
    /// that runs.
    ///
    /// # Errors
    /// Any error of the member; it ends the run.
    fn enter(&mut self, member: usize) -> Result<()>;
    /// One round trip of `member`, returning its nanoseconds; `timed` is false during warm-up
    /// and settling (the member may check the reply then).
    ///
    /// # Errors
    /// Any error of the round trip; it ends the run.
    fn round_trip(&mut self, member: usize, timed: bool) -> Result<u64>;
    /// Called between the untimed and the timed round trips of a burst.
    ///
    /// # Errors
    /// Any error of the member; it ends the run.
    fn timing_starts(&mut self, member: usize) -> Result<()> {
        let _ = member;
        Ok(())
    }
    /// Called after the timed round trips of `member`'s burst in `round`.
    ///
    /// # Errors
    /// Any error of the member; it ends the run.
    fn leave(&mut self, member: usize, round: usize) -> Result<()> {
        let _ = (member, round);
        Ok(())
    }
    /// The clock that [`Burst::Duration`] is measured with, in nanoseconds.
    fn now_ns(&mut self) -> u64;
}

/// What [`run`] measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rounds {
    /// `p50_ns[member][round]`: p50 of the member's timed round trips in that round.
    pub p50_ns: Vec<Vec<u64>>,
    /// `p99_ns[member][round]`: their p99 (nearest rank), where the tail of each burst sits.
    pub p99_ns: Vec<Vec<u64>>,
    /// Timed round trips of each member over all rounds.
    pub round_trips: Vec<u64>,
    /// How many of the rounds, in order, each generation holds (one entry per [`run`], which
    /// measures one set of processes; [`Rounds::append`] adds the later run's).
    pub generations: Vec<usize>,
}

impl Rounds {
    /// Appends the rounds of `later` (the same members, measured afterwards) as further
    /// generations.
    ///
    /// # Panics
    /// When the two have different numbers of members.
    pub fn append(&mut self, later: Rounds) {
        assert_eq!(self.p50_ns.len(), later.p50_ns.len(), "rounds of different groups");
        for (mine, theirs) in self.p50_ns.iter_mut().zip(later.p50_ns) {
            mine.extend(theirs);
        }
        for (mine, theirs) in self.p99_ns.iter_mut().zip(later.p99_ns) {
            mine.extend(theirs);
        }
        for (mine, theirs) in self.round_trips.iter_mut().zip(later.round_trips) {
            *mine += theirs;
        }
        self.generations.extend(later.generations);
    }

    /// No member and no round, to [`Rounds::append`] to.
    pub fn empty(members: usize) -> Rounds {
        Rounds {
            p50_ns: vec![Vec::new(); members],
            p99_ns: vec![Vec::new(); members],
            round_trips: vec![0; members],
            generations: Vec::new(),
        }
    }
}

/// Measures every member of `group` in `schedule.rounds` rounds: first a warm-up of each
/// member, then, per round, [`Group::round_starts`] and one burst of each member in a fresh
/// random order. Returns the p50 of every burst.
///
/// # Errors
/// [`Error::InvalidArgument`] for zero rounds or a burst of zero round trips; otherwise the
/// first error of the group, which ends the run.
///
/// # Examples
/// ```
/// use peerpipe_cli::pairing::{self, Burst, Group, Schedule};
/// // Two members on a simulated machine: the floor costs 100 ns, the row 150 ns.
/// struct Fake { clock: u64 }
/// impl Group for Fake {
///     fn members(&self) -> usize { 2 }
///     fn enter(&mut self, _: usize) -> peerpipe::Result<()> { Ok(()) }
///     fn round_trip(&mut self, m: usize, _: bool) -> peerpipe::Result<u64> {
///         let ns = [100, 150][m];
///         self.clock += ns;
///         Ok(ns)
///     }
///     fn now_ns(&mut self) -> u64 { self.clock }
/// }
/// let schedule = Schedule { rounds: 10, burst: Burst::RoundTrips(5), settle_round_trips: 1,
///     warmup_ns: 0, seed: 1 };
/// let rounds = pairing::run(&mut Fake { clock: 0 }, &schedule)?;
/// let ratio = pairing::paired_ratio(&rounds.p50_ns[1], &rounds.p50_ns[0]).unwrap();
/// assert_eq!(ratio.median, 1.5);
/// # Ok::<(), peerpipe::Error>(())
/// ```
pub fn run(group: &mut impl Group, schedule: &Schedule) -> Result<Rounds> {
    if schedule.rounds == 0 {
        return Err(Error::InvalidArgument { what: "rounds", reason: "must be at least 1".into() });
    }
    if schedule.burst == Burst::RoundTrips(0) {
        return Err(Error::InvalidArgument {
            what: "burst",
            reason: "needs at least 1 round trip".into(),
        });
    }
    let members = group.members();
    let rounds = schedule.rounds as usize;
    let mut p50_ns = vec![Vec::with_capacity(rounds); members];
    let mut p99_ns = vec![Vec::with_capacity(rounds); members];
    let mut round_trips = vec![0; members];
    for member in 0..members {
        group.enter(member)?;
        let until = group.now_ns().saturating_add(schedule.warmup_ns);
        let mut done = 0;
        while done < schedule.settle_round_trips || group.now_ns() < until {
            group.round_trip(member, false)?;
            done += 1;
        }
    }
    let mut rng = Rng::new(schedule.seed);
    let mut order: Vec<usize> = (0..members).collect();
    let mut samples = Vec::new();
    for round in 0..rounds {
        group.round_starts(round)?;
        rng.shuffle(&mut order);
        for &member in &order {
            group.enter(member)?;
            for _ in 0..schedule.settle_round_trips {
                group.round_trip(member, false)?;
            }
            group.timing_starts(member)?;
            samples.clear();
            let started = group.now_ns();
            loop {
                samples.push(group.round_trip(member, true)?);
                let count = samples.len() as u64;
                let done = match schedule.burst {
                    Burst::RoundTrips(n) => count >= n,
                    Burst::Duration { ns, min_round_trips } => {
                        count >= min_round_trips.max(1)
                            && group.now_ns().saturating_sub(started) >= ns
                    }
                };
                if done {
                    break;
                }
            }
            group.leave(member, round)?;
            samples.sort_unstable();
            p50_ns[member].push(peerpipe::stats::nearest_rank(&samples, 0.5));
            p99_ns[member].push(peerpipe::stats::nearest_rank(&samples, 0.99));
            round_trips[member] += samples.len() as u64;
        }
    }
    Ok(Rounds { p50_ns, p99_ns, round_trips, generations: vec![rounds] })
}

/// Confidence level of [`median_interval`] and of every `ratio_ci` in the report.
pub const CONFIDENCE: f64 = 0.95;

/// A ratio taken round by round, with the confidence interval of its median.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairedRatio {
    /// Median over rounds of (row p50 ÷ floor p50 in the same round).
    pub median: f64,
    /// Distribution-free [`CONFIDENCE`] interval of that median (see [`median_interval`]).
    pub ci: [f64; 2],
}

/// The median over rounds of `row[i] / floor[i]`, with its confidence interval. Rounds whose
/// floor p50 is 0 are left out; `None` when no round is left or the lengths differ.
///
/// # Examples
/// ```
/// use peerpipe_cli::pairing::paired_ratio;
/// // The machine is twice as slow in the middle rounds: both sides of those rounds slow down.
/// let floor = [100, 100, 200, 200, 100];
/// let row = [150, 150, 300, 300, 150];
/// assert_eq!(paired_ratio(&row, &floor).unwrap().median, 1.5);
/// ```
pub fn paired_ratio(row: &[u64], floor: &[u64]) -> Option<PairedRatio> {
    if row.len() != floor.len() {
        return None;
    }
    let mut ratios = round_ratios(row, floor);
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_unstable_by(f64::total_cmp);
    Some(PairedRatio { median: median(&ratios), ci: median_interval(&ratios) })
}

/// `row[i] / floor[i]` for every round whose floor p50 is not 0.
fn round_ratios(row: &[u64], floor: &[u64]) -> Vec<f64> {
    row.iter().zip(floor).filter(|&(_, &f)| f > 0).map(|(&r, &f)| r as f64 / f as f64).collect()
}

/// Like [`paired_ratio`], for rounds measured in generations of `generations[i]` rounds each
/// (in order; they must add up to the number of rounds, else `None`): the same median, and an
/// interval that also covers what differs from one generation to the next and what a repeat
/// of the run would give — the hull of [`median_interval`] over all rounds,
/// [`generation_interval`] over the generations and [`repeat_interval`] around the median.
/// With fewer than [`REPEAT_MIN_GENERATIONS`] generations the run cannot bound a repeat and the
/// interval is `[NaN, NaN]` (the report's `unresolved`).
///
/// # Examples
/// ```
/// use peerpipe_cli::pairing::{paired_ratio, paired_ratio_by_generation};
/// // Two generations that disagree (1.2 and 1.4) more than their rounds do.
/// let floor = [100; 12];
/// let row = [119, 120, 121, 120, 119, 121, 139, 140, 141, 140, 139, 141];
/// let rounds_only = paired_ratio(&row, &floor).unwrap();
/// let by_generation = paired_ratio_by_generation(&row, &floor, &[6, 6]).unwrap();
/// assert_eq!(by_generation.median, rounds_only.median);
/// assert!(by_generation.ci[1] - by_generation.ci[0] >= rounds_only.ci[1] - rounds_only.ci[0]);
/// assert!(by_generation.ci[0] <= 1.2 && 1.4 <= by_generation.ci[1]);
/// ```
pub fn paired_ratio_by_generation(
    row: &[u64],
    floor: &[u64],
    generations: &[usize],
) -> Option<PairedRatio> {
    let (median, [lo, hi]) = by_generation(row, floor, generations, |r, f| r as f64 / f as f64)?;
    // No ratio of two times is below 0, however wide the spread of a repeat.
    Some(PairedRatio { median, ci: [if lo.is_nan() { lo } else { lo.max(0.0) }, hi] })
}

/// The time a row adds to its floor, taken round by round, with the confidence interval of its
/// median.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairedDifference {
    /// Median over rounds of (row p50 − floor p50 in the same round), in nanoseconds; negative
    /// when the row was the faster.
    pub median_ns: f64,
    /// Its [`CONFIDENCE`] interval, by rounds and by generation, in nanoseconds.
    pub ci_ns: [f64; 2],
}

/// Like [`paired_ratio_by_generation`], for the difference `row[i] − floor[i]` instead of the
/// ratio: the median over rounds, and the hull of [`median_interval`] over all rounds,
/// [`generation_interval`] over the generations and [`repeat_interval`] (`[NaN, NaN]` with
/// fewer than [`REPEAT_MIN_GENERATIONS`] generations). Rounds whose floor p50 is 0 are left out, as
/// for ratios; `None` when no round is left, the lengths differ or the generations do not add
/// up to the rounds.
///
/// A ratio and a difference answer different questions. Where the machine slows everything
/// alike, the ratio holds and the difference grows; where it adds a cost to every transfer (a
/// machine state in which moving data between CPUs costs more), the floor grows, the ratio
/// falls, and the difference holds. A known delay in the server reads as its own size here.
///
/// # Examples
/// ```
/// use peerpipe_cli::pairing::paired_difference_by_generation;
/// // A row 500 ns over its floor, measured once at 2 us floors and once at 6 us floors.
/// let floor = [2_000, 2_010, 1_990, 6_000, 6_020, 5_980];
/// let row = [2_500, 2_510, 2_480, 6_500, 6_530, 6_490];
/// let added = paired_difference_by_generation(&row, &floor, &[3, 3]).unwrap();
/// assert_eq!(added.median_ns, 500.0);
/// assert!(added.ci_ns[0] <= 490.0 && 510.0 <= added.ci_ns[1]);
/// ```
pub fn paired_difference_by_generation(
    row: &[u64],
    floor: &[u64],
    generations: &[usize],
) -> Option<PairedDifference> {
    let (median_ns, ci_ns) = by_generation(row, floor, generations, |r, f| r as f64 - f as f64)?;
    Some(PairedDifference { median_ns, ci_ns })
}

/// The median over rounds of `per_round(row[i], floor[i])` (rounds whose floor is 0 left out)
/// and its interval by rounds, by generation and for a repeat; `None` as [`paired_difference_by_generation`]
/// says.
fn by_generation(
    row: &[u64],
    floor: &[u64],
    generations: &[usize],
    per_round: fn(u64, u64) -> f64,
) -> Option<(f64, [f64; 2])> {
    if row.len() != floor.len() || generations.iter().sum::<usize>() != row.len() {
        return None;
    }
    let values = |row: &[u64], floor: &[u64]| -> Vec<f64> {
        row.iter().zip(floor).filter(|&(_, &f)| f > 0).map(|(&r, &f)| per_round(r, f)).collect()
    };
    let mut all = values(row, floor);
    if all.is_empty() {
        return None;
    }
    all.sort_unstable_by(f64::total_cmp);
    let ci = median_interval(&all);
    let mut start = 0;
    let mut groups = Vec::with_capacity(generations.len());
    for &len in generations {
        let generation = values(&row[start..start + len], &floor[start..start + len]);
        if !generation.is_empty() {
            groups.push(generation);
        }
        start += len;
    }
    let [lo, hi] = generation_interval(&groups);
    let [again_lo, again_hi] = repeat_interval(&groups, median(&all));
    // NaN when the run cannot bound what a repeat would give: then so is the interval.
    let hull = [ci[0].min(lo).min(again_lo), ci[1].max(hi).max(again_hi)];
    let hull = if again_lo.is_nan() { [f64::NAN, f64::NAN] } else { hull };
    Some((median(&all), hull))
}

/// Fewest generations from which [`repeat_interval`] bounds a repeat: with one there is no
/// spread between generations to go by.
pub const REPEAT_MIN_GENERATIONS: usize = 2;

/// The [`CONFIDENCE`] interval, around `centre`, of what the same measurement gives **when
/// it is run again**: a prediction interval from the medians of the generations (`m_1..m_G`,
/// each a block of consecutive rounds on its own set of processes) treated as independent
/// draws of the run's spread, `centre ± t(G−1) · s · √(2/G)`, where `s` is the standard
/// deviation of those medians and `t(G−1)` Student's 97.5 % quantile. `√(2/G)` is the spread
/// of the difference between two runs' means of `G` generations each — this run's and the
/// next's — so the interval covers the next run's figure, not only this run's own. Each
/// generation is a block of consecutive rounds taken as one, so drift within the run shows
/// in `s`, and `t` for a handful of generations keeps the interval honest about how little
/// the run saw. And a run that drifted — the median of its first half of generations apart
/// from that of its second — gets at least that distance on either side: a repeat a little
/// later can land as far off as the run itself moved.
///
/// `[NaN, NaN]` with fewer than [`REPEAT_MIN_GENERATIONS`] non-empty generations: such a run
/// cannot bound its repeatability, and the report says `unresolved` rather than quote a
/// figure.
///
/// # Examples
/// ```
/// use peerpipe_cli::pairing::repeat_interval;
/// // Ten generations whose medians wander (the machine drifts) against ten that agree, with
/// // the same spread of rounds inside each.
/// let steady: Vec<Vec<f64>> = (0..10).map(|_| vec![1.29, 1.30, 1.31]).collect();
/// let drifting: Vec<Vec<f64>> =
///     (0..10).map(|g| vec![1.25 + 0.01 * g as f64, 1.26 + 0.01 * g as f64]).collect();
/// let [lo, hi] = repeat_interval(&steady, 1.30);
/// let [dlo, dhi] = repeat_interval(&drifting, 1.30);
/// assert!(dhi - dlo > hi - lo);
/// assert!(repeat_interval(&[vec![1.3, 1.4]], 1.3).iter().all(|x| x.is_nan()));
/// ```
pub fn repeat_interval(generations: &[Vec<f64>], centre: f64) -> [f64; 2] {
    let mut medians: Vec<f64> = Vec::with_capacity(generations.len());
    for generation in generations.iter().filter(|g| !g.is_empty()) {
        let mut sorted = generation.clone();
        sorted.sort_unstable_by(f64::total_cmp);
        medians.push(median(&sorted));
    }
    let g = medians.len();
    if g < REPEAT_MIN_GENERATIONS || !centre.is_finite() {
        return [f64::NAN, f64::NAN];
    }
    let mean = medians.iter().sum::<f64>() / g as f64;
    let variance = medians.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (g - 1) as f64;
    let spread = student_t_975(g - 1) * variance.sqrt() * (2.0 / g as f64).sqrt();
    // The halves: the run's first generations against its last, each half's rounds pooled.
    let non_empty: Vec<&Vec<f64>> = generations.iter().filter(|g| !g.is_empty()).collect();
    let half_median = |half: &[&Vec<f64>]| {
        let mut values: Vec<f64> = half.iter().flat_map(|g| g.iter().copied()).collect();
        values.sort_unstable_by(f64::total_cmp);
        median(&values)
    };
    let (first, last) = non_empty.split_at(g / 2);
    let drift = (half_median(first) - half_median(last)).abs();
    let half = spread.max(drift);
    [centre - half, centre + half]
}

/// Student's t distribution's 97.5 % quantile at `df` degrees of freedom (`df` ≥ 1): exact to
/// three decimals from a table up to 30, then the Cornish–Fisher expansion around the normal
/// quantile (within 0.001 of the exact value from 30 on).
pub fn student_t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        _ => {
            let (z, n) = (1.959_964_f64, df as f64);
            z + (z.powi(3) + z) / (4.0 * n)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
        }
    }
}

/// Resamples drawn by [`generation_interval`]; the interval's ends move by well under 1 % of
/// its width from one seed to another at this count.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// The seed of [`generation_interval`]'s resampling: fixed, so that the same rounds always
/// give the same interval.
const BOOTSTRAP_SEED: u64 = 0x7061_6972_6564; // "paired"

/// The [`CONFIDENCE`] interval of the median of values that come in groups (generations)
/// whose members are alike: a two-stage bootstrap — draw as many generations as there are,
/// with replacement, then within each drawn generation as many of its values as it has, with
/// replacement — and the percentiles of the resampled medians. Resampling both stages errs on
/// the wide side, which is the side to err on here. With fewer than two non-empty generations
/// there is nothing between generations to learn: NaN.
///
/// # Examples
/// ```
/// use peerpipe_cli::pairing::generation_interval;
/// let alike = [vec![1.0, 1.1, 0.9], vec![1.0, 1.1, 0.9]];
/// let apart = [vec![1.0, 1.1, 0.9], vec![2.0, 2.1, 1.9]];
/// let [lo, hi] = generation_interval(&alike);
/// let [far_lo, far_hi] = generation_interval(&apart);
/// assert!(far_hi - far_lo > hi - lo);
/// assert!(generation_interval(&[vec![1.0]]).iter().all(|x| x.is_nan()));
/// ```
pub fn generation_interval(generations: &[Vec<f64>]) -> [f64; 2] {
    let generations: Vec<&Vec<f64>> = generations.iter().filter(|g| !g.is_empty()).collect();
    if generations.len() < 2 {
        return [f64::NAN, f64::NAN];
    }
    let mut rng = Rng::new(BOOTSTRAP_SEED);
    let mut medians = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    let mut sample = Vec::new();
    for _ in 0..BOOTSTRAP_RESAMPLES {
        sample.clear();
        for _ in 0..generations.len() {
            let generation = generations[rng.below(generations.len() as u64) as usize];
            for _ in 0..generation.len() {
                sample.push(generation[rng.below(generation.len() as u64) as usize]);
            }
        }
        sample.sort_unstable_by(f64::total_cmp);
        medians.push(median(&sample));
    }
    medians.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    let last = BOOTSTRAP_RESAMPLES - 1;
    let lo = (tail * BOOTSTRAP_RESAMPLES as f64).floor() as usize;
    let hi = ((1.0 - tail) * BOOTSTRAP_RESAMPLES as f64).ceil() as usize - 1;
    [medians[lo.min(last)], medians[hi.min(last)]]
}

/// The nearest-rank median of `values` (sorted here; the lower middle one for an even count),
/// `None` for none: how the report takes the middle of a set of times.
///
/// # Examples
/// ```
/// use peerpipe_cli::pairing::median_ns;
/// assert_eq!(median_ns(vec![930, 571, 940]), Some(930));
/// assert_eq!(median_ns(vec![571, 930, 940, 571]), Some(571));
/// assert_eq!(median_ns(Vec::new()), None);
/// ```
pub fn median_ns(mut values: Vec<u64>) -> Option<u64> {
    values.sort_unstable();
    (!values.is_empty()).then(|| peerpipe::stats::nearest_rank(&values, 0.5))
}

/// The median of sorted values (the mean of the middle two for an even count); NaN for none.
pub fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The distribution-free [`CONFIDENCE`] interval of the median of sorted values: the order
/// statistics `[x(k), x(n+1-k)]` with the largest `k` for which the interval covers the true
/// median with probability at least 95 % whatever the distribution (the binomial argument:
/// each value falls below the median with probability ½). With fewer than 6 values no such
/// `k` exists and the interval is `[min, max]`, which covers it less often (94 % for 5 values,
/// 50 % for 1). `[NaN, NaN]` for no values.
///
/// # Examples
/// ```
/// use peerpipe_cli::pairing::median_interval;
/// let v: Vec<f64> = (1..=20).map(f64::from).collect();
/// assert_eq!(median_interval(&v), [6.0, 15.0]); // P(6 <= rank of median <= 15) = 95.9 %
/// assert_eq!(median_interval(&[1.0, 2.0, 3.0]), [1.0, 3.0]);
/// ```
pub fn median_interval(sorted: &[f64]) -> [f64; 2] {
    let n = sorted.len();
    if n == 0 {
        return [f64::NAN, f64::NAN];
    }
    let k = order_statistic_rank(n, CONFIDENCE);
    [sorted[k - 1], sorted[n - k]]
}

/// The largest `k` (1-based, at least 1) such that `1 - 2 P(Binomial(n, ½) < k) >= level`.
fn order_statistic_rank(n: usize, level: f64) -> usize {
    // P(X = 0) = 2^-n, computed in logs so that large n does not underflow.
    let ln_half = 0.5f64.ln();
    let mut ln_pmf = n as f64 * ln_half;
    let mut below = 0.0; // P(X < k) for the k under test
    let mut best = 1;
    for k in 1..=n.div_ceil(2) {
        below += ln_pmf.exp(); // now P(X <= k - 1) = P(X < k)
        if 1.0 - 2.0 * below >= level {
            best = k;
        } else {
            break;
        }
        // pmf(k) = pmf(k - 1) * (n - k + 1) / k
        ln_pmf += ((n - k + 1) as f64).ln() - (k as f64).ln();
    }
    best
}
