//! Running the matrix: spawning servers, then measuring each group — for every wait strategy,
//! a raw floor and every row that moves the same bytes with the same transport and placement —
//! in interleaved rounds, so that every ratio is taken against a floor measured moments apart,
//! and two waits are compared over bursts of the same rounds ([`crate::pairing`]).

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use super::crosscore::RoundProbe;
use super::group::{LiveGroup, Processes, RowSetup};
use super::key::Placement;
use super::load::{Load, MAX_LOAD};
use super::machine;
use super::model::{BaselineRow, Report, Row, Skipped};
use super::placement::Placer;
use super::plan::starts_peer_server;
pub use super::plan::{
    ALL_WAITS_MAX_ELEMENTS, DEFAULT_BUDGET, DEFAULT_GENERATIONS, DEFAULT_ROUNDS,
    DEFAULT_ROW_DURATION, DEFAULT_SIZES, DEFAULT_WARMUP, MAX_ROUNDS, MIN_BURST_ROUND_TRIPS, Plan,
    QUICK_GENERATIONS, QUICK_ROUNDS, QUICK_ROW_DURATION, QUICK_SIZES, RowLength,
    SETTLE_ROUND_TRIPS, WAKE_BYTES, floor_route,
};
use super::reply::Expectation;
use super::states;
use super::sync::{self, SyncCost};
use crate::baseline::{RawEcho, route_line};
use crate::pairing;
use crate::pairing::Group;
use peerpipe::error::{Error, Result};
use peerpipe::peer::{Options, Peer, checked_shell_command};
use peerpipe::process::Spawn;
use peerpipe::transport::{TransportKind, Wait};

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

/// Runs the whole plan. For each placement and transport, then for each byte count (smallest
/// first), a raw floor and one server per handler are spawned at every wait strategy measured
/// there, and all are measured in the same rounds with every row of that byte count
/// ([`pairing::run`]); each row's `ratio_to_baseline` is the median of its per-round ratios
/// to the floor at its own wait.
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
        let waits = plan.waits_at(pin);
        for &transport in &plan.transports {
            let mut section = Section::new(plan, &placement, &waits, transport);
            let all_bytes: BTreeSet<usize> =
                waits.iter().flat_map(|&wait| plan.baseline_bytes(wait)).collect();
            for bytes in all_bytes {
                if crate::interrupt::requested().is_some() {
                    break 'run;
                }
                progress.set_message(format!("{bytes} B {transport} {pin}"));
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
    // A run ended by a signal says so, whatever failed on the way out.
    if let Err(interrupted) = crate::interrupt::check() {
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
    let mut report = Report {
        peerpipe: env!("CARGO_PKG_VERSION").to_owned(),
        machine: machine::describe(pipe_size_granted),
        config: plan.record(),
        baseline: measured.baseline,
        rows: measured.rows,
        sync_costs,
        skipped: measured.skipped,
    };
    // States are found over the whole run, so that every group's rounds are told apart by
    // the same rule; each row's ratio then becomes that of its main state.
    states::assign(&mut report);
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

/// How the groups of one placement and transport get their servers: at every wait strategy
/// of the group, a raw echo of the group's bytes and one server per handler (or the one
/// `spawn` command), spawned afresh for every generation.
struct Section<'p> {
    plan: &'p Plan,
    placement: &'p Placer,
    /// The waits measured at this placement, in order.
    waits: &'p [Wait],
    transport: TransportKind,
    /// The handler each server slot announced in its HELLO, learnt from the first spawn, and
    /// what its replies are checked against.
    handlers: Vec<(String, Expectation)>,
    /// Pipe capacity granted to the last server spawned (pipes only).
    pipe_capacity: Option<u64>,
}

/// One wait strategy of a group, whose place among the group's waits is that of its floor
/// among the floors: the wait, and whether it has rows (and so handler servers).
#[derive(Clone, Copy)]
struct WaitSlot {
    wait: Wait,
    with_rows: bool,
}

impl<'p> Section<'p> {
    fn new(
        plan: &'p Plan,
        placement: &'p Placer,
        waits: &'p [Wait],
        transport: TransportKind,
    ) -> Section<'p> {
        Section { plan, placement, waits, transport, handlers: Vec::new(), pipe_capacity: None }
    }

    /// Server slots per wait: one per handler, or the one `spawn` command.
    fn slots(&self) -> usize {
        self.plan.handler_count()
    }

    /// Measures, at every wait of the section that has a floor of `bytes`, that floor and
    /// every row of that many bytes, all in the same rounds, split into generations of fresh
    /// processes, into `measured`. Rows the handler cannot serve are probed out first
    /// ([`RowSetup::probe`]) and skipped; when the group fails after that, its rows are
    /// skipped as `failed`.
    fn measure_group(
        &mut self,
        bytes: usize,
        pin: Placement,
        seed: u64,
        progress: &ProgressBar,
        measured: &mut Measured,
    ) -> std::result::Result<(), GroupError> {
        let plan = self.plan;
        // A floor with no row of its bytes (the wake-up floor) needs no handler server.
        let mut slots: Vec<WaitSlot> = self
            .waits
            .iter()
            .filter(|&&wait| plan.baseline_bytes(wait).contains(&bytes))
            .map(|&wait| WaitSlot { wait, with_rows: !plan.row_shapes(bytes, wait).is_empty() })
            .collect();
        let mut first = self.spawn(bytes, &slots).map_err(GroupError::Run)?;
        let mut setups = Vec::new();
        for setup in self.rows_of(bytes, pin, &slots) {
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
        // A wait whose every row was skipped keeps its floor, which needs no handler server.
        let per_wait = self.slots();
        for (i, slot) in slots.iter_mut().enumerate() {
            slot.with_rows = setups.iter().any(|s| s.floor == i);
            if !slot.with_rows {
                first.peers[i * per_wait..(i + 1) * per_wait]
                    .iter_mut()
                    .for_each(|p| drop(p.take()));
            }
        }
        let kept = setups.clone();
        let result = self.measure_rounds(bytes, pin, seed, progress, first, setups, &slots);
        match result {
            Ok((floors, rows)) => {
                measured.baseline.extend(floors);
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

    /// The probe of the machine's state at the start of every round of a group: a partner
    /// thread on the second allowed CPU, whatever the placement (the probe measures the
    /// machine, not the group); `None` when there is no second CPU or the thread cannot start.
    fn round_probe(&self) -> Option<RoundProbe> {
        RoundProbe::start(|run| {
            let start = || {
                let thread = std::thread::Builder::new().name("round probe".into());
                thread.spawn(run).map_err(Error::from)
            };
            self.placement.spawn_on_second_cpu(start).ok()
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
        slots: &[WaitSlot],
    ) -> Result<(Vec<BaselineRow>, Vec<Row>)> {
        let plan = self.plan;
        let waits: Vec<Wait> = slots.iter().map(|slot| slot.wait).collect();
        let mut group = LiveGroup::new(&waits, pin, setups, self.round_probe(), progress)?;
        group.install(first)?;
        let generations = plan.generations.clamp(1, plan.rounds.max(1));
        let mut rounds = pairing::Rounds::empty(group.members());
        for generation in 0..generations {
            if generation > 0 {
                let processes = self.spawn(bytes, slots)?;
                group.install(processes)?;
            }
            let schedule = plan.schedule(seed, generation, generations);
            rounds.append(pairing::run(&mut group, &schedule)?);
        }
        group.finish(&rounds, self.transport)
    }

    /// The entry of [`Report::skipped`] for `setup`.
    fn skipped(&self, setup: &RowSetup, reason: String, failed: bool) -> Skipped {
        Skipped { id: setup.id(self.transport), reason, failed }
    }

    /// One generation of servers for a group of `bytes` bytes: at each wait of `slots`, in
    /// order, the raw echo, and the handler servers when that wait has rows (else as many
    /// `None` slots).
    fn spawn(&mut self, bytes: usize, slots: &[WaitSlot]) -> Result<Processes> {
        let mut echoes = Vec::with_capacity(slots.len());
        let mut peers = Vec::new();
        let mut commands = Vec::new();
        for slot in slots {
            echoes.push(self.spawn_echo(bytes, slot.wait)?);
            let (wait_peers, wait_commands) = self.spawn_handlers(slot)?;
            peers.extend(wait_peers);
            commands.extend(wait_commands);
        }
        if self.handlers.is_empty() {
            self.handlers = peers
                .iter()
                .flatten()
                .take(self.slots())
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
        let server_cpu_known = self.plan.spawn.is_none()
            || peers
                .iter()
                .flatten()
                .all(|p| p.server_hello().pid.is_some() && p.server_pid().is_some());
        Ok(Processes { echoes, peers, server_cpu_known, commands })
    }

    /// The raw echo of `bytes` bytes at `wait`.
    fn spawn_echo(&self, bytes: usize, wait: Wait) -> Result<RawEcho> {
        let plan = self.plan;
        let spawn = Spawn {
            wait,
            transport: self.transport,
            pipe_capacity: plan.options.pipe_capacity,
            shm_capacity: plan.options.shm_capacity,
        };
        self.placement.spawn(|| match &plan.spawn_floor {
            Some(route) => RawEcho::spawn_route(route, bytes, &spawn, plan.options.timeout),
            None => RawEcho::spawn_with(&plan.peer_exe, bytes, &spawn, plan.options.timeout),
        })
    }

    /// The handler servers of one wait, with their command lines: one per slot, `None` (and
    /// an empty line) in every slot when the wait has no rows.
    fn spawn_handlers(&mut self, slot: &WaitSlot) -> Result<(Vec<Option<Peer>>, Vec<String>)> {
        let plan = self.plan;
        if !slot.with_rows {
            let none = (0..self.slots()).map(|_| (None, String::new()));
            return Ok(none.unzip());
        }
        let options =
            Options { wait: slot.wait, transport: self.transport, ..plan.options.clone() };
        let commands: Vec<Command> = match &plan.spawn {
            // A command that starts `peer`'s server is told the transport; any other
            // server finds it out itself (`TransportKind::of_stdin`).
            Some(line) if starts_peer_server(line) => {
                vec![checked_shell_command(&route_line(line, "", self.transport))?]
            }
            Some(line) => vec![checked_shell_command(line)?],
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
        let names = commands.iter().map(super::group::command_line).collect();
        let mut peers = Vec::with_capacity(commands.len());
        for command in commands {
            let peer = self.placement.spawn(|| Peer::spawn(command, options.clone()))?;
            self.pipe_capacity = peer.capacity().map(|c| c as u64).or(self.pipe_capacity);
            peers.push(Some(peer));
        }
        Ok((peers, names))
    }

    /// Every row of `bytes` bytes at each wait of `slots` that has rows: handler × (dtype,
    /// path) × size, each naming its wait's floor and server.
    fn rows_of(&self, bytes: usize, pin: Placement, slots: &[WaitSlot]) -> Vec<RowSetup> {
        let plan = self.plan;
        let mut setups = Vec::new();
        for (floor, slot) in slots.iter().enumerate().filter(|(_, slot)| slot.with_rows) {
            let shapes = plan.row_shapes(bytes, slot.wait);
            for (handler_slot, (handler, expect)) in self.handlers.iter().enumerate() {
                for &(workload, path, elements) in &shapes {
                    setups.push(RowSetup {
                        workload,
                        elements,
                        path,
                        wait: slot.wait,
                        pin,
                        expect: *expect,
                        floor,
                        peer: floor * self.slots() + handler_slot,
                        handler: handler.clone(),
                    });
                }
            }
        }
        setups
    }
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
