//! Running the matrix: spawning servers, then measuring each group — a raw floor and every
//! row that moves the same bytes with the same transport, wait and placement — in
//! interleaved rounds, so that every ratio is taken against a floor measured moments apart
//! ([`peerpipe::pairing`]).

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use super::crosscore::{self, CrossCore};
use super::group::{LiveGroup, Processes, RowSetup};
use super::load::{Load, MAX_LOAD};
use super::placement::Placer;
use super::sync::{self, SyncCost};
use super::{
    BaselineRow, ConfigRecord, Expectation, Placement, Report, Row, Skipped, Workload, machine,
};
use peerpipe::baseline::{RawEcho, route_line};
use peerpipe::error::{Error, Result};
use peerpipe::pairing::Group;
use peerpipe::pairing::{self, Burst, Schedule};
use peerpipe::peer::{DataPath, Options, Peer};
use peerpipe::process::Spawn;
use peerpipe::transport::{DEFAULT_SPIN_BUDGET, TransportKind, Wait};

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
/// is a twentieth of the row's time (7.5 ms by default), and the median of 20 per-round ratios
/// has a 95 % interval between the 6th and the 15th of them.
pub const DEFAULT_ROUNDS: u32 = 20;
/// Rounds per group with `--quick` (3 ms bursts; the interval spans the 2nd to the 9th ratio).
pub const QUICK_ROUNDS: u32 = 10;
/// Most rounds accepted: beyond this, bursts get too short to hold a p50.
pub const MAX_ROUNDS: u32 = 1000;
/// Generations per group by default: every 2 of the 20 rounds run on freshly spawned servers.
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

/// What marks a `--spawn` command as one that starts `peer --role server`, which takes the
/// server flags the report appends (`--raw-echo`, `--transport`).
const PEER_SERVER: &str = "--role server";

/// The route `peer` measures its floors through: `spawn_floor` when given, else the `--spawn`
/// command itself when it starts `peer --role server` (it contains `--role server`, as
/// `ssh host peer --role server` does), so that the floor crosses the same route as the rows
/// and a ratio means framing and conversion over what the route itself costs; else `None`,
/// floors on this machine (a `--spawn` command that is not `peer` cannot echo raw bytes).
///
/// ```
/// use peerpipe_cli::report::measure::floor_route;
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
        (Some(spawn), None) if spawn.contains(PEER_SERVER) => Some(spawn.to_owned()),
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

/// Everything a report run needs.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The `peer` binary, used for servers and baselines.
    pub peer_exe: PathBuf,
    /// A server command for `sh -c` instead of `peer_exe --role server`; for a transport
    /// other than a pipe, `--transport KIND` is appended (see [`route_line`]) when it starts
    /// `peer --role server` (it contains `--role server`).
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
    /// Rounds per group (see [`peerpipe::pairing`]).
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
    /// Busy threads run beside the client and servers for the whole run ([`Load`]).
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
                (Some(pins), Wait::Auto) => at(pins),
                _ => at(&self.pins),
            })
            .collect()
    }

    /// Every wait strategy used by some size, in a stable order.
    fn all_waits(&self) -> Vec<Wait> {
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
    fn workload_paths(&self) -> Vec<(Workload, DataPath)> {
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

    fn handler_count(&self) -> usize {
        if self.spawn.is_some() { 1 } else { self.handlers.len() }
    }

    /// The (workload, path, elements) of every row that moves `bytes` bytes at `wait`, for
    /// each handler, in report order.
    fn row_shapes(&self, bytes: usize, wait: Wait) -> Vec<(Workload, DataPath, usize)> {
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
    fn baseline_bytes(&self, wait: Wait) -> BTreeSet<usize> {
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
    fn members(&self) -> u64 {
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
    fn schedule(&self, seed: u64, generation: u32, generations: u32) -> Schedule {
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

    fn record(&self) -> ConfigRecord {
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
        }
    }
}

/// A progress bar on stderr for runs estimated to take over a second, hidden when stderr is not
/// a terminal (indicatif draws nothing then).
pub fn progress_bar(plan: &Plan) -> ProgressBar {
    if plan.estimated_duration() < Duration::from_secs(1) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(plan.steps());
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} ({eta} left)") {
        bar.set_style(style);
    }
    bar
}

/// What [`run_partial`] measured, and the error that ended or marred the run.
#[derive(Debug)]
pub struct Outcome {
    /// Everything measured, with the rows not measured in [`Report::skipped`].
    pub report: Report,
    /// The first error: one that ended the run (spawning or the handshake failed), or one
    /// that ended a group mid-run (its rows are in `skipped` with `failed` set and the run
    /// went on). `None` when every row was measured or skipped because its handler cannot
    /// serve it.
    pub error: Option<Error>,
}

/// Runs the whole plan; see [`run_partial`], which this is with any error returned instead
/// of the report.
///
/// # Errors
/// [`Error::InvalidArgument`] for an empty plan, zero iterations or rounds out of range; any
/// error of spawning, calling or verifying (the servers are continued, terminated and
/// reaped).
pub fn run(plan: &Plan, progress: &ProgressBar) -> Result<Report> {
    let outcome = run_partial(plan, progress)?;
    match outcome.error {
        Some(error) => Err(error),
        None => Ok(outcome.report),
    }
}

/// Runs the whole plan. For each placement, wait strategy and transport, then for each byte
/// count (smallest first), a raw floor and one server per handler are spawned and measured in
/// rounds with every row of that byte count ([`pairing::run`]); each row's
/// `ratio_to_baseline` is the median of its per-round ratios.
///
/// A run survives what it cannot measure. Before a group starts, each of its rows is probed
/// with one call: a row its handler answers with ERROR (`lorenz96` given f32), or that cannot
/// be set up (`lorenz96` with fewer than 4 elements), is left out and listed in
/// [`Report::skipped`] with the reason. An error in the middle of a group ends that group
/// (its rows are listed as `failed`), not the run. An error spawning servers or in a handshake
/// ends the run; what was measured until then is kept. Every error is in
/// [`Outcome::error`] (the first one).
///
/// # Errors
/// [`Error::InvalidArgument`] for an empty plan, zero iterations or rounds out of range.
pub fn run_partial(plan: &Plan, progress: &ProgressBar) -> Result<Outcome> {
    if plan.sizes.is_empty()
        || plan.workloads.is_empty()
        || plan.paths.is_empty()
        || plan.transports.is_empty()
        || plan.pins.is_empty()
    {
        return Err(Error::InvalidArgument {
            what: "plan",
            reason: "needs at least one size, dtype, path, transport and placement".into(),
        });
    }
    if let RowLength::Iterations(0) = plan.length {
        return Err(Error::InvalidArgument {
            what: "iterations",
            reason: "must be at least 1".into(),
        });
    }
    if !(1..=MAX_ROUNDS).contains(&plan.rounds) {
        return Err(Error::InvalidArgument {
            what: "rounds",
            reason: format!("expected 1 to {MAX_ROUNDS}, found {}", plan.rounds),
        });
    }
    if plan.generations == 0 {
        return Err(Error::InvalidArgument {
            what: "generations",
            reason: "must be at least 1".into(),
        });
    }
    if plan.load > MAX_LOAD {
        return Err(Error::InvalidArgument {
            what: "load",
            reason: format!("expected at most {MAX_LOAD} busy threads, found {}", plan.load),
        });
    }
    // Started before anything is pinned, so the busy threads may run on every CPU.
    let _load = Load::start(plan.load, Load::process_cpus()?)?;
    // Every server of the run dies with this thread, however the process ends.
    let _tied = peerpipe::process::TiedSpawns::tie();
    let mut measured = Measured::default();
    let mut error = None;
    let mut pipe_size_granted = None;
    let mut group_index = 0u64;
    'run: for pin in plan.all_pins() {
        let placement = match Placer::new(pin) {
            Ok(placement) => placement,
            Err(e) => {
                error = Some(e);
                break 'run;
            }
        };
        for wait in plan.waits_at(pin) {
            for &transport in &plan.transports {
                let mut section = Section::new(plan, &placement, wait, transport);
                for bytes in plan.baseline_bytes(wait) {
                    if peerpipe::interrupt::requested().is_some() {
                        break 'run;
                    }
                    progress.set_message(format!("{bytes} B {transport} {wait} {pin}"));
                    let seed = plan.order_seed.wrapping_add(group_index);
                    group_index += 1;
                    let result = section.measure_group(bytes, pin, seed, progress, &mut measured);
                    if transport == TransportKind::Pipe && section.pipe_capacity.is_some() {
                        pipe_size_granted = section.pipe_capacity;
                    }
                    match result {
                        Ok(()) => {}
                        Err(GroupError::Group(e)) => {
                            error.get_or_insert(e);
                        }
                        Err(GroupError::Run(e)) => {
                            error = Some(e);
                            break 'run;
                        }
                    }
                }
            }
        }
    }
    // A run ended by a signal says so, whatever failed on the way out.
    if let Err(interrupted) = peerpipe::interrupt::check() {
        error = Some(interrupted);
    }
    let sync_costs =
        if error.is_none() && plan.transports.iter().any(TransportKind::is_shared_memory) {
            progress.set_message("synchronisation costs");
            match measure_sync_costs(plan) {
                Ok(costs) => costs,
                Err(e) => {
                    error = Some(e);
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
    progress.finish_and_clear();
    let report = Report {
        peerpipe: env!("CARGO_PKG_VERSION").to_owned(),
        machine: machine::describe(pipe_size_granted),
        config: plan.record(),
        baseline: measured.baseline,
        rows: measured.rows,
        sync_costs,
        skipped: measured.skipped,
    };
    Ok(Outcome { report, error })
}

/// What the groups measured so far.
#[derive(Default)]
struct Measured {
    baseline: Vec<BaselineRow>,
    rows: Vec<Row>,
    skipped: Vec<Skipped>,
}

/// How a group failed: only itself (the run goes on), or the whole run (spawning or a
/// handshake failed, which the next group would repeat).
enum GroupError {
    Group(Error),
    Run(Error),
}

/// How the groups of one placement, wait strategy and transport get their servers: a raw
/// echo of the group's bytes and one server per handler (or the one `spawn` command), spawned
/// afresh for every generation.
struct Section<'p> {
    plan: &'p Plan,
    placement: &'p Placer,
    wait: Wait,
    transport: TransportKind,
    /// The handler each server slot announced in its HELLO, learnt from the first spawn, and
    /// what its replies are checked against.
    handlers: Vec<(String, Expectation)>,
    /// Pipe capacity granted to the last server spawned (pipes only).
    pipe_capacity: Option<u64>,
}

impl<'p> Section<'p> {
    fn new(
        plan: &'p Plan,
        placement: &'p Placer,
        wait: Wait,
        transport: TransportKind,
    ) -> Section<'p> {
        Section { plan, placement, wait, transport, handlers: Vec::new(), pipe_capacity: None }
    }

    /// Measures the floor of `bytes` and every row of that many bytes in the plan's rounds,
    /// split into generations of fresh processes, into `measured`. Rows the handler cannot
    /// serve are probed out first ([`RowSetup::probe`]) and skipped; when the group fails
    /// after that, its rows are skipped as `failed`.
    fn measure_group(
        &mut self,
        bytes: usize,
        pin: Placement,
        seed: u64,
        progress: &ProgressBar,
        measured: &mut Measured,
    ) -> std::result::Result<(), GroupError> {
        let plan = self.plan;
        let cross_core = self.probe_cross_core();
        // A floor with no row of its bytes (the wake-up floor) needs no handler server.
        let with_rows = !plan.row_shapes(bytes, self.wait).is_empty();
        let mut first = self.spawn(bytes, with_rows).map_err(GroupError::Run)?;
        let mut setups = Vec::new();
        for setup in if with_rows { self.rows_of(bytes, pin) } else { Vec::new() } {
            let probed = match first.peers.get_mut(setup.peer).and_then(Option::as_mut) {
                Some(peer) => setup.probe(peer),
                None => Ok(None), // reported by LiveGroup::install
            };
            match probed {
                Ok(None) => setups.push(setup),
                Ok(Some(reason)) => measured.skipped.push(self.skipped(&setup, reason, false)),
                Err(e) => {
                    let reason = e.to_string();
                    measured.skipped.push(self.skipped(&setup, reason.clone(), true));
                    return Err(GroupError::Group(e));
                }
            }
        }
        let with_rows = !setups.is_empty();
        let kept = setups.clone();
        let result = self.measure_rounds(bytes, pin, seed, progress, first, setups, with_rows);
        match result {
            Ok((mut floor, rows)) => {
                floor.cross_core = cross_core;
                measured.baseline.push(floor);
                measured.rows.extend(rows);
                Ok(())
            }
            Err(e) => {
                let reason = e.to_string();
                for setup in &kept {
                    measured.skipped.push(self.skipped(setup, reason.clone(), true));
                }
                Err(GroupError::Group(e))
            }
        }
    }

    /// The machine's state before a group: [`crosscore::probe`] between the client's first
    /// allowed CPU and a thread on its second — where `split` puts client and server, and
    /// what `free` may; with `same` (or one CPU) there is no second CPU to probe: `None`.
    fn probe_cross_core(&self) -> Option<CrossCore> {
        let split;
        let placer = match self.placement.placement() {
            Placement::Split => self.placement,
            // Pinned for the probe only: dropping the placer restores the thread's affinity.
            Placement::Free => {
                split = Placer::new(Placement::Split).ok()?;
                &split
            }
            Placement::Same => return None,
        };
        crosscore::probe(|run| {
            let start = || {
                let thread = std::thread::Builder::new().name("cross-core probe".into());
                thread.spawn(run).map_err(Error::from)
            };
            placer.spawn(start).ok()
        })
    }

    /// The rounds of a group whose rows passed their probe, `first` its first generation.
    #[allow(clippy::too_many_arguments)]
    fn measure_rounds(
        &mut self,
        bytes: usize,
        pin: Placement,
        seed: u64,
        progress: &ProgressBar,
        first: Processes,
        setups: Vec<RowSetup>,
        with_rows: bool,
    ) -> Result<(BaselineRow, Vec<Row>)> {
        let plan = self.plan;
        let mut first = first;
        if !with_rows {
            // Every row was skipped: the floor alone needs no handler server.
            first.peers.iter_mut().for_each(|slot| drop(slot.take()));
        }
        let mut group = LiveGroup::new(self.wait, pin, setups, progress)?;
        group.install(first)?;
        let generations = plan.generations.clamp(1, plan.rounds.max(1));
        let mut rounds = pairing::Rounds::empty(group.members());
        for generation in 0..generations {
            if generation > 0 {
                let processes = self.spawn(bytes, with_rows)?;
                group.install(processes)?;
            }
            let schedule = plan.schedule(seed, generation, generations);
            rounds.append(pairing::run(&mut group, &schedule)?);
        }
        group.finish(&rounds, self.transport)
    }

    /// The entry of [`Report::skipped`] for `setup`.
    fn skipped(&self, setup: &RowSetup, reason: String, failed: bool) -> Skipped {
        Skipped {
            dtype: setup.workload.name().to_owned(),
            elements: setup.elements as u64,
            bytes: setup.workload.wire_bytes(setup.elements) as u64,
            transport: self.transport.name().to_owned(),
            path: setup.path.name().to_owned(),
            handler: setup.handler.clone(),
            wait: setup.wait.to_string(),
            pin: setup.pin.name().to_owned(),
            reason,
            failed,
        }
    }

    /// One generation of servers for a group of `bytes` bytes: the raw echo, and the handler
    /// servers when the group has rows.
    fn spawn(&mut self, bytes: usize, with_rows: bool) -> Result<Processes> {
        let plan = self.plan;
        let options =
            Options { wait: self.wait, transport: self.transport, ..plan.options.clone() };
        let spawn = Spawn {
            wait: self.wait,
            transport: self.transport,
            pipe_capacity: plan.options.pipe_capacity,
            shm_capacity: plan.options.shm_capacity,
        };
        let echo = self.placement.spawn(|| match &plan.spawn_floor {
            Some(route) => RawEcho::spawn_route(route, bytes, &spawn, plan.options.timeout),
            None => RawEcho::spawn_with(&plan.peer_exe, bytes, &spawn, plan.options.timeout),
        })?;
        let commands: Vec<Command> = match &plan.spawn {
            _ if !with_rows => Vec::new(),
            // A command that starts `peer --role server` is told the transport; any other
            // server finds it out itself (`TransportKind::of_stdin`).
            Some(line) if line.contains(PEER_SERVER) => {
                vec![shell_command(&route_line(line, "", self.transport))]
            }
            Some(line) => vec![shell_command(line)],
            None => plan
                .handlers
                .iter()
                .map(|handler| {
                    let mut command = Peer::server_command(&plan.peer_exe, handler, &options);
                    // A group of its own, as a local floor's: a server stopped inside the
                    // report's group would make the kernel hang up that whole group (the report
                    // and its caller's job) once it is orphaned, its launching shell gone.
                    command.process_group(0);
                    if !plan.server_delay.is_zero() {
                        let delay = format!("{}ns", plan.server_delay.as_nanos());
                        command.arg("--server-delay").arg(delay);
                    }
                    command
                })
                .collect(),
        };
        let mut peers = Vec::with_capacity(commands.len());
        let names = commands.iter().map(super::group::command_line).collect();
        for command in commands {
            let peer = self.placement.spawn(|| Peer::spawn(command, options.clone()))?;
            self.pipe_capacity = peer.capacity().map(|c| c as u64).or(self.pipe_capacity);
            peers.push(Some(peer));
        }
        if self.handlers.is_empty() && with_rows {
            self.handlers = peers
                .iter()
                .flatten()
                .map(|peer| {
                    let name = peer.server_hello().handler.clone().unwrap_or_default();
                    let expect = Expectation::for_handler(Some(&name));
                    (name, expect)
                })
                .collect();
        }
        // A `--spawn` server's CPU can be read when its HELLO names its pid and that pid is a
        // local process of ours (`Peer::server_pid`); behind ssh it is not, and the spawned
        // process is only the ssh client.
        let server_cpu_known = plan.spawn.is_none()
            || peers
                .iter()
                .flatten()
                .all(|p| p.server_hello().pid.is_some() && p.server_pid().is_some());
        Ok(Processes { echo, peers, server_cpu_known, commands: names })
    }

    /// Every row of `bytes` bytes at this section's wait: handler × (dtype, path) × size.
    fn rows_of(&self, bytes: usize, pin: Placement) -> Vec<RowSetup> {
        let plan = self.plan;
        let mut setups = Vec::new();
        let shapes = plan.row_shapes(bytes, self.wait);
        for (peer, (handler, expect)) in self.handlers.iter().enumerate() {
            for &(workload, path, elements) in &shapes {
                setups.push(RowSetup {
                    workload,
                    elements,
                    path,
                    wait: self.wait,
                    pin,
                    expect: *expect,
                    peer,
                    handler: handler.clone(),
                });
            }
        }
        setups
    }
}

/// `sh -c COMMAND_LINE`, as [`Peer::spawn_shell`] runs it (with `exec` for a simple command,
/// so that the measured server pid is the server's).
fn shell_command(command_line: &str) -> Command {
    peerpipe::peer::shell_command(command_line)
}

/// The synchronisation-cost table: in-process primitives, then cross-process wake-ups with
/// the server on the other core when there are two (`split`), else wherever it lands.
///
/// # Errors
/// The errors of [`sync::measure_in_process`] and [`sync::measure_cross_process`].
pub fn measure_sync_costs(plan: &Plan) -> Result<Vec<SyncCost>> {
    let _tied = peerpipe::process::TiedSpawns::tie();
    let mut costs = sync::measure_in_process(plan.sync_operations)?;
    let placement = Placer::new(Placement::Split).or_else(|_| Placer::new(Placement::Free))?;
    costs.extend(sync::measure_cross_process(plan.sync_operations, |bytes, wait, transport| {
        placement.spawn(|| {
            RawEcho::spawn(
                &plan.peer_exe,
                bytes,
                wait,
                transport,
                plan.options.pipe_capacity,
                plan.options.timeout,
            )
        })
    })?);
    Ok(costs)
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

    #[test]
    fn steps_count_every_burst() {
        // One row and two floors (4000 B and the 8-byte wake-up), 20 rounds each.
        assert_eq!(plan(RowLength::Iterations(10), 20).steps(), 3 * 20);
    }
}
