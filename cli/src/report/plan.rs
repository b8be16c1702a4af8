//! What a report run will measure: the [`Plan`] (sizes, dtypes, paths, handlers, waits,
//! placements, transports, row lengths, rounds and generations), built from what the command
//! line asked for ([`PlanRequest`]) with the defaults filled in, what it expands to (the waits
//! at each size, the rows of each group, the steps and the estimated duration) and the
//! configuration it records in the report. [`measure`](super::measure) runs it.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use crate::pairing::{Burst, Schedule};
use crate::rng::seed_from_clock;
use peerpipe::error::{Error, Result};
use peerpipe::peer::{DataPath, Options};
use peerpipe::transport::{DEFAULT_SPIN_BUDGET, TransportKind, Wait};

use super::key::{Placement, Workload};
use super::model::ConfigRecord;
use super::placement::default_placement;

/// Element counts measured by default.
pub const DEFAULT_SIZES: [usize; 6] = [1, 8, 500, 1000, 65_536, 1_048_576];
/// Element counts measured with `--quick`.
pub const QUICK_SIZES: [usize; 4] = [1, 500, 65_536, 1_048_576];
/// Up to this many elements block, spin and auto are measured by default; above it, auto only
/// (spinning on 8 MiB frames only burns the second core).
pub const ALL_WAITS_MAX_ELEMENTS: usize = 65_536;
/// Time per row by default.
pub const DEFAULT_ROW_DURATION: Duration = Duration::from_millis(150);
/// Time per row with `--quick`.
pub const QUICK_ROW_DURATION: Duration = Duration::from_millis(30);
/// Warm-up per row by default: long enough for caches, page faults and the scheduler to settle.
pub const DEFAULT_WARMUP: Duration = Duration::from_millis(20);
/// Rounds per group by default: each floor and row gets one burst per round, so each burst
/// is a fortieth of the row's time (3.75 ms by default), and the median of 40 per-round ratios
/// has a 95 % interval between the 14th and the 27th of them. Forty, not twenty: a machine
/// that changes state every few rounds leaves each state only part of them, and a run's
/// figures are given per state. On a 2-core KVM guest whose states changed that often, ten
/// runs of one row gave intervals within ±1–5 % of their state's ratio with 40 rounds, and
/// up to ±14 % (two runs with an outlier round: far wider) with 20; the whole default run
/// took 92 s instead of 73.
pub const DEFAULT_ROUNDS: u32 = 40;
/// Rounds per group with `--quick` (3 ms bursts; the interval spans the 2nd to the 9th ratio).
pub const QUICK_ROUNDS: u32 = 10;
/// Most rounds accepted: beyond this, bursts get too short to hold a p50.
pub const MAX_ROUNDS: u32 = 1000;
/// Generations per group by default: every 4 of the 40 rounds run on freshly spawned servers.
/// Two runs of one row differ by a few percent from process to process (memory layout,
/// placement of the new processes); sampling ten sets of processes per run makes that part of
/// each run's interval instead of a surprise between runs. Ten, not four: a bootstrap over
/// generations needs enough of them to hold its 95 % (on simulated runs 4 gave 83 %, 10 gave
/// 96 %; `pairing::tests::intervals_by_generation_cover_the_truth_when_generations_differ`),
/// and a run's spawns then cost about 2 s more.
pub const DEFAULT_GENERATIONS: u32 = 10;
/// Generations per group with `--quick`: 2 rounds each, as by default.
pub const QUICK_GENERATIONS: u32 = 5;
/// Fewest timed round trips in a burst, however long they take (an odd count has a true
/// median).
pub const MIN_BURST_ROUND_TRIPS: u64 = 3;
/// Untimed round trips at the start of every burst, after the member's server was continued:
/// they absorb its wake-up and the caches the previous member left cold.
pub const SETTLE_ROUND_TRIPS: u32 = 3;
/// The smallest baseline, measured at every wait strategy and placement: one f64. Its p50 is
/// the cost of a round trip that moves (almost) no data — waking the other side and back.
pub const WAKE_BYTES: usize = 8;
/// Budget per round trip the verdict checks by default: 150 µs.
pub const DEFAULT_BUDGET: Duration = Duration::from_micros(150);

/// True when a `--spawn` command starts `peer`'s server, which takes the server flags the
/// report appends (`--raw-echo`, `--transport`): it contains `--role server`, or a word `serve`
/// right after a program named `peer` (`ssh host peer serve`, `target/release/peer serve`).
///
/// ```
/// use peerpipe_cli::report::plan::starts_peer_server;
/// assert!(starts_peer_server("ssh host peer --role server --handler lorenz96"));
/// assert!(starts_peer_server("ssh host /opt/bin/peer serve --handler echo"));
/// assert!(!starts_peer_server("ssh host python3 serve.py"));
/// assert!(!starts_peer_server("./observer serve"));
/// ```
pub fn starts_peer_server(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    line.contains("--role server")
        || words.windows(2).any(|w| w[1] == "serve" && w[0].rsplit('/').next() == Some("peer"))
}

/// The route `peer` measures its floors through: `spawn_floor` when given, else the `--spawn`
/// command itself when it starts `peer`'s server ([`starts_peer_server`], as `ssh host peer
/// --role server` and `ssh host peer serve` do), so that the floor crosses the same route as the rows
/// and a ratio means framing and conversion over what the route itself costs; else `None`,
/// floors on this machine (a `--spawn` command that is not `peer` cannot echo raw bytes).
///
/// ```
/// use peerpipe_cli::report::plan::floor_route;
/// let ssh = "ssh host peer --role server --handler lorenz96";
/// assert_eq!(floor_route(Some(ssh), None).as_deref(), Some(ssh));
/// assert_eq!(floor_route(Some("python3 model.py"), None), None);
/// let floor = "ssh host peer --role server";
/// assert_eq!(floor_route(Some("ssh host python3 model.py"), Some(floor)).as_deref(), Some(floor));
/// assert_eq!(floor_route(None, None), None);
/// ```
pub fn floor_route(spawn: Option<&str>, spawn_floor: Option<&str>) -> Option<String> {
    match (spawn, spawn_floor) {
        (_, Some(floor)) => Some(floor.to_owned()),
        (Some(spawn), None) if starts_peer_server(spawn) => Some(spawn.to_owned()),
        _ => None,
    }
}

/// How long each row (and floor) is timed in all, over all its rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowLength {
    /// This many timed round trips, split evenly over the rounds (rounded up).
    Iterations(u64),
    /// This much time, split evenly over the rounds; every burst has at least
    /// [`MIN_BURST_ROUND_TRIPS`].
    Duration(Duration),
}

/// What the command line asks of a report run, before the defaults: an empty list or `None`
/// is a flag not given. [`PlanRequest::plan`] fills in the defaults — with `quick`, those of a
/// quick run — and refuses what cannot go together.
#[derive(Clone, Debug)]
pub struct PlanRequest {
    /// A quick run: f64 only, [`QUICK_SIZES`], the default wait only, [`QUICK_ROW_DURATION`]
    /// per row in [`QUICK_ROUNDS`] rounds and [`QUICK_GENERATIONS`] generations, unless given.
    pub quick: bool,
    /// Element counts [default: [`DEFAULT_SIZES`]].
    pub sizes: Vec<usize>,
    /// Dtypes [default: all three].
    pub workloads: Vec<Workload>,
    /// Paths [default: zero-copy and codec].
    pub paths: Vec<DataPath>,
    /// Server handlers [default: echo-raw and echo].
    pub handlers: Vec<String>,
    /// Wait strategies [default: block, spin and auto up to [`ALL_WAITS_MAX_ELEMENTS`], auto
    /// above].
    pub waits: Vec<Wait>,
    /// Placements [default: the default wait unpinned, as a program gets it, the other waits
    /// at [`default_placement`]].
    pub pins: Vec<Placement>,
    /// Transports [default: pipe].
    pub transports: Vec<TransportKind>,
    /// Timed round trips per row (instead of a time per row).
    pub iterations: Option<u64>,
    /// Time per row [default: [`DEFAULT_ROW_DURATION`]].
    pub duration: Option<Duration>,
    /// Warm-up per row.
    pub warmup: Duration,
    /// Rounds per group [default: [`DEFAULT_ROUNDS`]].
    pub rounds: Option<u32>,
    /// Generations per group [default: [`DEFAULT_GENERATIONS`]].
    pub generations: Option<u32>,
    /// Seed of the order of bursts [default: from the clock].
    pub seed: Option<u64>,
    /// The server command ([`Plan::spawn`]).
    pub spawn: Option<String>,
    /// The command the floors run through [default: see [`floor_route`]].
    pub spawn_floor: Option<String>,
    /// Busy-wait of every handler server this run spawns [default: none]; refused with
    /// `spawn`, whose command must pass it itself.
    pub server_delay: Option<Duration>,
    /// Timeout, frame limit, pipe and shared-memory capacity for every peer.
    pub options: Options,
    /// Operations per entry of the synchronisation-cost table.
    pub sync_operations: u64,
    /// Budget per round trip for the verdict.
    pub budget: Duration,
    /// Busy threads beside the client and servers.
    pub load: u32,
}

impl PlanRequest {
    /// The plan, with the defaults filled in, whose servers and floors run `peer_exe`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`--server-delay`) when a server delay is asked for with a
    /// `spawn` command: the delay applies to the servers this binary spawns.
    pub fn plan(self, peer_exe: PathBuf) -> Result<Plan> {
        if self.spawn.is_some() && self.server_delay.is_some() {
            return Err(Error::InvalidArgument {
                what: "--server-delay",
                reason: "applies to the servers this binary spawns; with --spawn, pass \
                         --server-delay to the server command itself"
                    .into(),
            });
        }
        let quick = self.quick;
        let or = |given: Vec<usize>, default: &[usize]| {
            if given.is_empty() { default.to_vec() } else { given }
        };
        let or_else = |given: Option<u32>, default: u32, quick_default: u32| {
            given.unwrap_or(if quick { quick_default } else { default })
        };
        let pinned = !self.pins.is_empty();
        Ok(Plan {
            peer_exe,
            spawn_floor: floor_route(self.spawn.as_deref(), self.spawn_floor.as_deref()),
            spawn: self.spawn,
            server_delay: self.server_delay.unwrap_or_default(),
            sizes: or(self.sizes, if quick { &QUICK_SIZES } else { &DEFAULT_SIZES }),
            workloads: match (self.workloads.is_empty(), quick) {
                (false, _) => self.workloads,
                (true, true) => vec![Workload::F64],
                (true, false) => Workload::ALL.to_vec(),
            },
            paths: if self.paths.is_empty() {
                vec![DataPath::ZeroCopy, DataPath::Codec]
            } else {
                self.paths
            },
            handlers: if self.handlers.is_empty() {
                vec!["echo-raw".to_owned(), "echo".to_owned()]
            } else {
                self.handlers
            },
            waits: match (self.waits.is_empty(), quick) {
                (false, _) => Some(self.waits),
                (true, true) => Some(vec![Wait::default()]),
                (true, false) => None,
            },
            pins: if pinned { self.pins } else { vec![default_placement()] },
            // With no placement given, the default wait is measured as a program gets it:
            // unpinned.
            default_wait_pins: (!pinned).then(|| vec![Placement::Free]),
            length: match (self.iterations, self.duration) {
                (Some(n), _) => RowLength::Iterations(n),
                (None, Some(d)) => RowLength::Duration(d),
                (None, None) if quick => RowLength::Duration(QUICK_ROW_DURATION),
                (None, None) => RowLength::Duration(DEFAULT_ROW_DURATION),
            },
            warmup: self.warmup,
            rounds: or_else(self.rounds, DEFAULT_ROUNDS, QUICK_ROUNDS),
            generations: or_else(self.generations, DEFAULT_GENERATIONS, QUICK_GENERATIONS),
            order_seed: self.seed.unwrap_or_else(seed_from_clock),
            options: self.options,
            transports: if self.transports.is_empty() {
                vec![TransportKind::Pipe]
            } else {
                self.transports
            },
            sync_operations: self.sync_operations,
            budget: self.budget,
            load: self.load,
        })
    }
}

/// Everything a report run needs.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The `peer` binary, used for servers and baselines.
    pub peer_exe: PathBuf,
    /// A server command for `sh -c` instead of `peer_exe --role server`; for a transport other than
    /// a pipe, `--transport KIND` is appended (see [`route_line`](crate::baseline::route_line))
    /// when it starts `peer`'s server ([`starts_peer_server`]).
    pub spawn: Option<String>,
    /// The command the raw floors run through, with `--raw-echo BYTES` appended (and
    /// `--transport KIND` when not a pipe), e.g. `ssh host peer --role server`; `None` runs
    /// them as `peer_exe` on this machine. See [`floor_route`] for what `peer` chooses.
    pub spawn_floor: Option<String>,
    /// Busy-wait of every handler server this run spawns before it answers a request
    /// (`peer --role server --server-delay`); zero for none. Not applied to the raw floors,
    /// nor to a `spawn` command, which must pass it itself.
    pub server_delay: Duration,
    /// Element counts.
    pub sizes: Vec<usize>,
    /// Dtypes.
    pub workloads: Vec<Workload>,
    /// Paths (`f64-as-f32` always converts, so it runs once, as `codec`).
    pub paths: Vec<DataPath>,
    /// Server handlers (ignored with `spawn`, whose HELLO names its handler).
    pub handlers: Vec<String>,
    /// Wait strategies, or `None` for the default rule ([`ALL_WAITS_MAX_ELEMENTS`]).
    pub waits: Option<Vec<Wait>>,
    /// Placements.
    pub pins: Vec<Placement>,
    /// Placements of the default wait ([`Wait::Auto`]) when they differ from `pins`: `peer`
    /// with no `--pin` measures the default wait unpinned, as a program gets it, and the other
    /// waits pinned to two cores, where they compare best.
    pub default_wait_pins: Option<Vec<Placement>>,
    /// How long each row runs.
    pub length: RowLength,
    /// Warm-up per row.
    pub warmup: Duration,
    /// Rounds per group (see [`crate::pairing`]).
    pub rounds: u32,
    /// Generations per group: the rounds are split into this many runs of freshly spawned
    /// servers (and freshly allocated buffers), so that what differs from one process to the
    /// next is sampled within a run and shows in the intervals.
    pub generations: u32,
    /// Seed of the order of bursts within each round (recorded in the report).
    pub order_seed: u64,
    /// Timeout, frame limit, pipe and shared-memory capacity for every peer (its `wait` and
    /// `transport` are set per row).
    pub options: Options,
    /// Transports measured side by side, each against its own raw-bytes baseline.
    pub transports: Vec<TransportKind>,
    /// Operations per entry of the synchronisation-cost table, measured when a shared-memory
    /// transport is in the run.
    pub sync_operations: u64,
    /// Budget per round trip for the verdict.
    pub budget: Duration,
    /// Busy threads run beside the client and servers for the whole run
    /// ([`Load`](super::load::Load)).
    pub load: u32,
}

impl Plan {
    /// The wait strategies measured for `elements`.
    pub fn waits_for(&self, elements: usize) -> Vec<Wait> {
        match &self.waits {
            Some(waits) => waits.clone(),
            None if elements <= ALL_WAITS_MAX_ELEMENTS => {
                vec![Wait::Block, Wait::Spin, Wait::default()]
            }
            None => vec![Wait::default()],
        }
    }

    /// Every placement measured, in order: `pins`, then those only the default wait has.
    pub fn all_pins(&self) -> Vec<Placement> {
        let mut pins = self.pins.clone();
        for &pin in self.default_wait_pins.iter().flatten() {
            if !pins.contains(&pin) {
                pins.push(pin);
            }
        }
        pins
    }

    /// The wait strategies measured at `pin`.
    pub fn waits_at(&self, pin: Placement) -> Vec<Wait> {
        let at = |pins: &[Placement]| pins.contains(&pin);
        self.all_waits()
            .into_iter()
            .filter(|&wait| match (&self.default_wait_pins, wait) {
                (Some(pins), Wait::Auto { .. }) => at(pins),
                _ => at(&self.pins),
            })
            .collect()
    }

    /// Every wait strategy used by some size, in a stable order.
    pub(super) fn all_waits(&self) -> Vec<Wait> {
        let mut waits: Vec<Wait> = Vec::new();
        for &size in &self.sizes {
            for wait in self.waits_for(size) {
                if !waits.contains(&wait) {
                    waits.push(wait);
                }
            }
        }
        waits
    }

    /// The (workload, path) pairs measured.
    pub(super) fn workload_paths(&self) -> Vec<(Workload, DataPath)> {
        let mut pairs = Vec::new();
        for &workload in &self.workloads {
            if workload == Workload::F64AsF32 {
                pairs.push((workload, DataPath::Codec));
            } else {
                pairs.extend(self.paths.iter().map(|&path| (workload, path)));
            }
        }
        pairs
    }

    pub(super) fn handler_count(&self) -> usize {
        if self.spawn.is_some() { 1 } else { self.handlers.len() }
    }

    /// The (workload, path, elements) of every row that moves `bytes` bytes at `wait`, for
    /// each handler, in report order.
    pub(super) fn row_shapes(&self, bytes: usize, wait: Wait) -> Vec<(Workload, DataPath, usize)> {
        let mut shapes = Vec::new();
        for (workload, path) in self.workload_paths() {
            for &elements in &self.sizes {
                if workload.wire_bytes(elements).max(1) == bytes
                    && self.waits_for(elements).contains(&wait)
                {
                    shapes.push((workload, path, elements));
                }
            }
        }
        shapes
    }

    /// Byte counts needing a baseline at `wait`: those of the rows, and [`WAKE_BYTES`] as the
    /// reference for what a wake-up costs with (almost) no data, which the verdict uses.
    pub(super) fn baseline_bytes(&self, wait: Wait) -> BTreeSet<usize> {
        let mut bytes = BTreeSet::from([WAKE_BYTES]);
        for &size in &self.sizes {
            if self.waits_for(size).contains(&wait) {
                for (workload, _) in self.workload_paths() {
                    bytes.insert(workload.wire_bytes(size).max(1));
                }
            }
        }
        bytes
    }

    /// Bursts of the whole run (rows plus baselines, times rounds), for progress.
    pub fn steps(&self) -> u64 {
        self.members() * u64::from(self.rounds.max(1))
    }

    /// Number of rows plus baselines.
    pub(super) fn members(&self) -> u64 {
        let mut steps = 0;
        for pin in self.all_pins() {
            for wait in self.waits_at(pin) {
                let sizes =
                    self.sizes.iter().filter(|&&s| self.waits_for(s).contains(&wait)).count();
                steps += (self.baseline_bytes(wait).len()
                    + sizes * self.workload_paths().len() * self.handler_count())
                    * self.transports.len();
            }
        }
        steps as u64
    }

    /// Rough wall time of the run, for deciding whether to show progress.
    pub fn estimated_duration(&self) -> Duration {
        let per_row = match self.length {
            RowLength::Duration(d) => d,
            RowLength::Iterations(n) => {
                Duration::from_micros(20).saturating_mul(u32::try_from(n).unwrap_or(u32::MAX))
            }
        };
        let members = u32::try_from(self.members()).unwrap_or(u32::MAX);
        per_row.saturating_add(self.warmup).saturating_mul(members)
    }

    /// The schedule of `generation` (of `generations`) of a group: its share of the rounds
    /// (the first ones get one more when they do not divide evenly) and of the warm-up.
    pub(super) fn schedule(&self, seed: u64, generation: u32, generations: u32) -> Schedule {
        let rounds = self.rounds.max(1);
        let generations = generations.clamp(1, rounds);
        let share = rounds / generations + u32::from(generation < rounds % generations);
        let burst = match self.length {
            RowLength::Iterations(n) => Burst::RoundTrips(n.div_ceil(u64::from(rounds)).max(1)),
            RowLength::Duration(d) => Burst::Duration {
                ns: (d / rounds).as_nanos() as u64,
                min_round_trips: MIN_BURST_ROUND_TRIPS,
            },
        };
        Schedule {
            rounds: share,
            burst,
            settle_round_trips: SETTLE_ROUND_TRIPS,
            warmup_ns: (self.warmup / generations).as_nanos() as u64,
            seed: seed.wrapping_add(u64::from(generation) << 32),
        }
    }

    pub(super) fn record(&self) -> ConfigRecord {
        let names = |v: &[String]| v.to_vec();
        ConfigRecord {
            sizes: self.sizes.iter().map(|&s| s as u64).collect(),
            dtypes: self.workloads.iter().map(|w| w.name().to_owned()).collect(),
            paths: self.paths.iter().map(|p| p.name().to_owned()).collect(),
            handlers: names(&self.handlers),
            waits: self.waits.iter().flatten().map(|w| w.to_string()).collect(),
            pins: self.all_pins().iter().map(|p| p.name().to_owned()).collect(),
            iterations: match self.length {
                RowLength::Iterations(n) => Some(n),
                RowLength::Duration(_) => None,
            },
            duration_ns: match self.length {
                RowLength::Duration(d) => Some(d.as_nanos() as u64),
                RowLength::Iterations(_) => None,
            },
            warmup_ns: self.warmup.as_nanos() as u64,
            rounds: self.rounds,
            generations: self.generations,
            order_seed: self.order_seed,
            server_delay_ns: self.server_delay.as_nanos() as u64,
            spawn: self.spawn.clone(),
            budget_ns: self.budget.as_nanos() as u64,
            pipe_size: self.options.pipe_capacity.unwrap_or(0) as u64,
            transports: self.transports.iter().map(|t| t.name().to_owned()).collect(),
            shm_size: self.options.shm_capacity as u64,
            hybrid_spin_ns: self
                .all_waits()
                .iter()
                .find_map(|w| match w {
                    Wait::Hybrid { spin } => Some(spin.as_nanos() as u64),
                    _ => None,
                })
                .unwrap_or(DEFAULT_SPIN_BUDGET.as_nanos() as u64),
            load: self.load,
            waits_share_rounds: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(length: RowLength, rounds: u32) -> Plan {
        Plan {
            peer_exe: PathBuf::from("peer"),
            spawn: None,
            spawn_floor: None,
            server_delay: Duration::ZERO,
            sizes: vec![500],
            workloads: vec![Workload::F64],
            paths: vec![DataPath::Codec],
            handlers: vec!["echo".into()],
            waits: Some(vec![Wait::default()]),
            pins: vec![Placement::Free],
            default_wait_pins: None,
            length,
            warmup: Duration::from_millis(20),
            rounds,
            generations: 1,
            order_seed: 1,
            options: Options::default(),
            transports: vec![TransportKind::Pipe],
            sync_operations: 1,
            budget: DEFAULT_BUDGET,
            load: 0,
        }
    }

    #[test]
    fn a_row_length_is_split_evenly_over_the_rounds() {
        let by_time = plan(RowLength::Duration(Duration::from_millis(150)), 20).schedule(0, 0, 1);
        assert_eq!(
            by_time.burst,
            Burst::Duration { ns: 7_500_000, min_round_trips: MIN_BURST_ROUND_TRIPS }
        );
        assert_eq!(by_time.rounds, 20);
        let by_count = plan(RowLength::Iterations(1001), 20).schedule(0, 0, 1);
        assert_eq!(by_count.burst, Burst::RoundTrips(51));
        let three = plan(RowLength::Iterations(3), 20).schedule(0, 0, 1);
        assert_eq!(three.burst, Burst::RoundTrips(1));
    }

    #[test]
    fn generations_share_the_rounds_and_the_warm_up() {
        let p = plan(RowLength::Duration(Duration::from_millis(150)), 10);
        let shares: Vec<u32> = (0..4).map(|g| p.schedule(0, g, 4).rounds).collect();
        assert_eq!(shares, [3, 3, 2, 2]);
        assert_eq!(p.schedule(0, 0, 4).warmup_ns, 5_000_000);
        // Bursts keep their length whatever the split.
        assert_eq!(p.schedule(0, 3, 4).burst, p.schedule(0, 0, 1).burst);
        // More generations than rounds: one round each.
        assert_eq!(p.schedule(0, 0, 40).rounds, 1);
        assert_ne!(p.schedule(9, 0, 4).seed, p.schedule(9, 1, 4).seed);
    }

    /// A request with no flag given (and the flags with values of their own at theirs).
    fn request() -> PlanRequest {
        PlanRequest {
            quick: false,
            sizes: vec![],
            workloads: vec![],
            paths: vec![],
            handlers: vec![],
            waits: vec![],
            pins: vec![],
            transports: vec![],
            iterations: None,
            duration: None,
            warmup: DEFAULT_WARMUP,
            rounds: None,
            generations: None,
            seed: None,
            spawn: None,
            spawn_floor: None,
            server_delay: None,
            options: Options::default(),
            sync_operations: 1,
            budget: DEFAULT_BUDGET,
            load: 0,
        }
    }

    #[test]
    fn a_request_without_flags_gets_the_defaults() {
        let plan = request().plan(PathBuf::from("peer")).unwrap();
        assert_eq!(plan.sizes, DEFAULT_SIZES);
        assert_eq!(plan.workloads, Workload::ALL);
        assert_eq!(plan.paths, [DataPath::ZeroCopy, DataPath::Codec]);
        assert_eq!(plan.handlers, ["echo-raw", "echo"]);
        assert_eq!(plan.waits, None);
        assert_eq!(plan.pins, [default_placement()]);
        assert_eq!(plan.default_wait_pins, Some(vec![Placement::Free]));
        assert_eq!(plan.length, RowLength::Duration(DEFAULT_ROW_DURATION));
        assert_eq!((plan.rounds, plan.generations), (DEFAULT_ROUNDS, DEFAULT_GENERATIONS));
        assert_eq!(plan.transports, [TransportKind::Pipe]);
        assert_eq!((plan.spawn, plan.spawn_floor, plan.server_delay), (None, None, Duration::ZERO));
        let quick = PlanRequest { quick: true, ..request() }.plan(PathBuf::from("peer")).unwrap();
        assert_eq!(quick.sizes, QUICK_SIZES);
        assert_eq!(quick.workloads, [Workload::F64]);
        assert_eq!(quick.waits, Some(vec![Wait::default()]));
        assert_eq!(quick.length, RowLength::Duration(QUICK_ROW_DURATION));
        assert_eq!((quick.rounds, quick.generations), (QUICK_ROUNDS, QUICK_GENERATIONS));
    }

    #[test]
    fn what_a_request_gives_is_kept_and_a_delay_with_spawn_is_refused() {
        let given = PlanRequest {
            quick: true,
            sizes: vec![7],
            workloads: vec![Workload::F32],
            waits: vec![Wait::Block],
            pins: vec![Placement::Same],
            iterations: Some(99),
            duration: Some(Duration::from_millis(5)),
            rounds: Some(12),
            generations: Some(3),
            seed: Some(42),
            spawn: Some("ssh host peer --role server".into()),
            ..request()
        };
        let plan = given.clone().plan(PathBuf::from("peer")).unwrap();
        assert_eq!((plan.sizes, plan.workloads), (vec![7], vec![Workload::F32]));
        assert_eq!(plan.waits, Some(vec![Wait::Block]));
        assert_eq!((plan.pins, plan.default_wait_pins), (vec![Placement::Same], None));
        assert_eq!(plan.length, RowLength::Iterations(99));
        assert_eq!((plan.rounds, plan.generations, plan.order_seed), (12, 3, 42));
        // The floors cross the route the rows take.
        assert_eq!(plan.spawn_floor.as_deref(), Some("ssh host peer --role server"));
        let delayed = PlanRequest { server_delay: Some(Duration::from_micros(5)), ..given };
        let err = delayed.plan(PathBuf::from("peer")).unwrap_err().to_string();
        assert!(err.contains("--server-delay"), "{err}");
    }

    #[test]
    fn steps_count_every_burst() {
        // One row and two floors (4000 B and the 8-byte wake-up), 20 rounds each.
        assert_eq!(plan(RowLength::Iterations(10), 20).steps(), 3 * 20);
    }
}
