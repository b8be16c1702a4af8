//! One group of real processes measured in rounds: for each wait strategy measured, a raw floor
//! and the rows that move the same bytes with the same transport and placement. Every wait of
//! a placement shares the group's rounds, so that two waits are compared over bursts taken
//! moments apart, in the same state of the machine.
//!
//! [`LiveGroup`] is the [`Group`] that [`crate::pairing::run`] drives. Only the member being
//! measured has a running server: every other server of the group is stopped (`SIGSTOP`) for
//! the length of the burst and continued (`SIGCONT`) for its own, so that idle servers — which
//! spin forever with `--wait spin` — never take a core from the pair being timed. Every server
//! is continued again when the group is dropped, whatever happened; and a run ended by a
//! signal ([`crate::interrupt`]) is seen before each burst and each round trip.
//!
//! At the start of every round, with every server stopped, a short probe of the cost of moving
//! data between two CPUs ([`RoundProbe`]) says which state the machine was in for that round.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::ProgressBar;

use super::cpu::{
    Pinned, current_cpu, last_cpu_of, preemptions_of, process_cpu_time, thread_cpu_time,
    thread_preemptions,
};
use super::crosscore::{Reading, RoundProbe};
use super::format;
use super::key::{Handler, Placement, RowId, Workload};
use super::model::{BaselineRow, ClientWaits, Percentiles, Round, Row, shared_core_share};
use super::reply::{Expectation, test_values, verify};
use crate::baseline::RawEcho;
use crate::pairing::{Group, PairedRatio, Rounds, paired_ratio_by_generation};
use peerpipe::codec::{Values, ValuesMut};
use peerpipe::error::Result;
use peerpipe::lorenz96;
use peerpipe::peer::{CallTiming, DataPath, Peer};
use peerpipe::process::{pause, resume};
use peerpipe::stats::new_histogram;
use peerpipe::transport::{TransportKind, Wait};

/// What one row measures, and with which server.
#[derive(Clone, Debug)]
pub(crate) struct RowSetup {
    pub(crate) workload: Workload,
    pub(crate) elements: usize,
    pub(crate) path: DataPath,
    pub(crate) wait: Wait,
    pub(crate) pin: Placement,
    pub(crate) expect: Expectation,
    /// Index of the row's floor (the raw floor at its wait) among the group's floors.
    pub(crate) floor: usize,
    /// Index of the row's server among the group's peers.
    pub(crate) peer: usize,
    /// The handler the server announced.
    pub(crate) handler: String,
}

impl RowSetup {
    /// The combination this setup measures over `transport`, as its row (or its entry of
    /// [`Report::skipped`](super::Report::skipped)) records it.
    pub(crate) fn id(&self, transport: TransportKind) -> RowId {
        RowId {
            dtype: self.workload,
            elements: self.elements as u64,
            bytes: self.workload.wire_bytes(self.elements) as u64,
            transport,
            path: self.path,
            handler: Handler::named(&self.handler),
            wait: self.wait,
            pin: self.pin,
        }
    }

    /// One untimed call of this row on `peer`, before its group starts, to learn whether the
    /// handler can serve it at all: `Ok(Some(reason))` when it cannot — the server answered
    /// ERROR (say `lorenz96` given f32) or the row cannot even be set up (`lorenz96` with
    /// fewer than 4 elements) — and the row is to be skipped; `Ok(None)` when it can.
    ///
    /// # Errors
    /// Any other error of the call (the server died, a timeout): the peer is then unusable.
    pub(crate) fn probe(&self, peer: &mut Peer) -> Result<Option<String>> {
        let mut data = match RowData::new(self) {
            Ok(data) => data,
            Err(e) => return Ok(Some(e.to_string())),
        };
        peer.set_path(self.path);
        match data.call(peer, self.workload) {
            Ok(_) => Ok(None),
            Err(peerpipe::Error::Remote { message, .. }) => Ok(Some(message)),
            Err(e) => Err(or_interrupted(e)),
        }
    }
}

/// One generation of a group's server processes: each floor's raw echo, in the order of the
/// group's floors, and one per handler slot (`None` for a slot with no row in the group).
pub(crate) struct Processes {
    pub(crate) echoes: Vec<RawEcho>,
    pub(crate) peers: Vec<Option<Peer>>,
    /// False when the spawned handler processes are not the servers themselves (`--spawn`:
    /// an `ssh` client, a shell): their CPU time is then not the server's, and stays unknown.
    pub(crate) server_cpu_known: bool,
    /// The command line of each handler slot's server, for naming it in an error.
    pub(crate) commands: Vec<String>,
}

/// A server's command line as a person would type it: the line of `sh -c LINE` (less a
/// leading `exec`), or the program and its arguments.
pub(crate) fn command_line(command: &std::process::Command) -> String {
    let args: Vec<String> =
        command.get_args().map(|arg| arg.to_string_lossy().into_owned()).collect();
    match args.as_slice() {
        [c, line] if c == "-c" && command.get_program() == "sh" => {
            line.strip_prefix("exec ").unwrap_or(line).to_owned()
        }
        _ => std::iter::once(command.get_program().to_string_lossy().into_owned())
            .chain(args)
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// The error that ended a round trip, or the interrupt when one came meanwhile: once a
/// signal asked the run to end, what failed after it (a server killed by the same Ctrl-C, or
/// after [`crate::interrupt::GRACE`]) is not the story.
fn or_interrupted(error: peerpipe::Error) -> peerpipe::Error {
    crate::interrupt::check().err().unwrap_or(error)
}

impl Processes {
    /// The servers that are processes of ours, stopped between their bursts: not a floor
    /// behind a launcher (`ssh`, `srun`), whose spawned process is not its server, nor a
    /// handler server whose HELLO names a pid that is not ours.
    fn pids(&self) -> Vec<u32> {
        let peers = self.peers.iter().flatten().filter_map(Peer::server_pid);
        let echoes = self.echoes.iter().filter(|e| !e.behind_launcher());
        echoes.map(RawEcho::server_pid).chain(peers).collect()
    }

    /// Says BYE to every server and closes the floors, reporting the first error after trying
    /// them all.
    fn close(self) -> Result<()> {
        let mut first_error = Ok(());
        for peer in self.peers.into_iter().flatten() {
            if let Err(e) = peer.close() {
                first_error = first_error.and(Err(e));
            }
        }
        for echo in self.echoes {
            if let Err(e) = echo.close() {
                first_error = first_error.and(Err(e));
            }
        }
        first_error
    }
}

/// The group's floors and rows, and the server processes of the current generation; members
/// `0..floors.len()` are the floors, member `floors.len() + i` is row `i`.
pub(crate) struct LiveGroup<'a> {
    floors: Vec<FloorMember>,
    pin: Placement,
    rows: Vec<RowMember>,
    processes: Option<Processes>,
    /// Every server process of the current generation, continued again when it is replaced
    /// and on drop.
    pids: Vec<u32>,
    running: Option<u32>,
    /// Involuntary context switches of the client thread and of the measured server when the
    /// current burst's timing started.
    preemptions_at_start: (Option<u64>, Option<u64>),
    clock: Instant,
    progress: &'a ProgressBar,
    /// The probe taken at the start of every round; `None` when there is no second CPU.
    probe: Option<RoundProbe>,
    /// What it measured, one entry per round in order (over every generation).
    probes: Vec<Option<Reading>>,
}

/// What was seen of one burst besides its times: where each side ran, and how often another
/// task took a CPU from either of them.
struct Seen {
    client_cpu: Option<u32>,
    server_cpu: Option<u32>,
    preemptions: Option<u64>,
}

/// What a round shared by all its members: its generation and the machine's state.
#[derive(Clone, Copy)]
struct RoundOf {
    generation: u32,
    probe: Option<Reading>,
}

impl Seen {
    fn round(&self, (p50_ns, p99_ns): (u64, u64), floor_p50_ns: Option<u64>, of: RoundOf) -> Round {
        Round {
            generation: of.generation,
            p50_ns,
            p99_ns: Some(p99_ns),
            floor_p50_ns,
            client_cpu: self.client_cpu,
            server_cpu: self.server_cpu,
            preemptions: self.preemptions,
            probe_ns: of.probe.map(|p| p.cross_ns),
            compute_ns: of.probe.and_then(|p| p.compute_ns),
            // Found once the whole run is in (`states::assign`).
            state: None,
        }
    }
}

struct FloorMember {
    wait: Wait,
    rtt: Histogram<u64>,
    seen: Vec<Seen>,
    bytes: usize,
    lent: bool,
    route: Option<String>,
}

struct RowMember {
    setup: RowSetup,
    data: RowData,
    phases: PhaseHistograms,
    cpu: CpuAccount,
    /// What the client's waits did over the timed bursts, and their counts when the current
    /// burst's timing started.
    waits: ClientWaits,
    waits_at_start: Option<ClientWaits>,
    seen: Vec<Seen>,
    checked: u64,
}

impl<'a> LiveGroup<'a> {
    /// A group of a floor at each of `waits` (at `pin`) and the rows of `setups`, with no
    /// server yet: [`LiveGroup::install`] gives it each generation's. `probe` measures the
    /// machine's state at the start of every round (see [`Group::round_starts`]).
    ///
    /// # Errors
    /// [`peerpipe::Error::InvalidArgument`] when a row names a floor the group does not have,
    /// or a row's buffers cannot be set up.
    pub(crate) fn new(
        waits: &[Wait],
        pin: Placement,
        setups: Vec<RowSetup>,
        probe: Option<RoundProbe>,
        progress: &'a ProgressBar,
    ) -> Result<LiveGroup<'a>> {
        let rows = setups
            .into_iter()
            .map(|setup| {
                Ok(RowMember {
                    data: RowData::new(&setup)?,
                    setup,
                    phases: PhaseHistograms::new(),
                    cpu: CpuAccount::default(),
                    waits: ClientWaits::default(),
                    waits_at_start: None,
                    seen: Vec::new(),
                    checked: 0,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if let Some(row) = rows.iter().find(|r| waits.get(r.setup.floor) != Some(&r.setup.wait)) {
            return Err(peerpipe::Error::InvalidArgument {
                what: "group",
                reason: format!("no floor at wait {} for a row", row.setup.wait),
            });
        }
        let floors = waits
            .iter()
            .map(|&wait| FloorMember {
                wait,
                rtt: new_histogram(),
                seen: Vec::new(),
                bytes: 0,
                lent: false,
                route: None,
            })
            .collect();
        Ok(LiveGroup {
            floors,
            pin,
            rows,
            processes: None,
            pids: Vec::new(),
            running: None,
            preemptions_at_start: (None, None),
            clock: Instant::now(),
            progress,
            probe,
            probes: Vec::new(),
        })
    }

    /// Replaces the group's servers with a new generation (the old ones are continued and
    /// closed) and gives every row fresh buffers, so that what differs from one process or
    /// allocation to the next is sampled within the run. Every new server is stopped until
    /// its member's first burst.
    ///
    /// # Errors
    /// [`peerpipe::Error::InvalidArgument`] when a row's handler slot has no server or the
    /// floors are not one per wait; the errors of closing the previous generation.
    pub(crate) fn install(&mut self, processes: Processes) -> Result<()> {
        self.retire()?;
        if let Some(row) =
            self.rows.iter().find(|r| processes.peers.get(r.setup.peer).is_none_or(Option::is_none))
        {
            return Err(peerpipe::Error::InvalidArgument {
                what: "group",
                reason: format!("no server for handler {:?}", row.setup.handler),
            });
        }
        if processes.echoes.len() != self.floors.len() {
            return Err(peerpipe::Error::InvalidArgument {
                what: "group",
                reason: format!(
                    "{} floors spawned for {} waits",
                    processes.echoes.len(),
                    self.floors.len()
                ),
            });
        }
        for (floor, echo) in self.floors.iter_mut().zip(&processes.echoes) {
            floor.bytes = echo.bytes();
            floor.lent = echo.lends();
            floor.route = echo.route().map(str::to_owned);
        }
        for row in &mut self.rows {
            row.data = RowData::new(&row.setup)?;
        }
        self.pids = processes.pids();
        for &pid in &self.pids {
            pause(pid);
        }
        self.running = None;
        self.processes = Some(processes);
        Ok(())
    }

    /// Continues and closes the current generation's servers, if any.
    fn retire(&mut self) -> Result<()> {
        self.continue_all();
        match self.processes.take() {
            Some(processes) => processes.close(),
            None => Ok(()),
        }
    }

    /// What `member` is: a floor (its index among the floors) or a row (among the rows).
    fn member(&self, member: usize) -> Member {
        match member.checked_sub(self.floors.len()) {
            None => Member::Floor(member),
            Some(row) => Member::Row(row),
        }
    }

    fn server_pid(&self, member: usize) -> Option<u32> {
        match self.member(member) {
            Member::Floor(i) => {
                let echo = self.processes.as_ref()?.echoes.get(i)?;
                (!echo.behind_launcher()).then(|| echo.server_pid())
            }
            Member::Row(i) => self.row_peer(i)?.server_pid(),
        }
    }

    /// The floors' and the rows' results, each row's ratios paired round by round with its
    /// own wait's floor; closes the servers.
    ///
    /// # Errors
    /// The errors of closing the last generation's servers.
    pub(crate) fn finish(
        mut self,
        rounds: &Rounds,
        transport: TransportKind,
    ) -> Result<(Vec<BaselineRow>, Vec<Row>)> {
        self.retire()?;
        let round_of: Vec<RoundOf> = (0u32..)
            .zip(&rounds.generations)
            .flat_map(|(generation, &len)| std::iter::repeat_n(generation, len))
            .enumerate()
            .map(|(i, generation)| RoundOf {
                generation,
                probe: self.probes.get(i).copied().flatten(),
            })
            .collect();
        let floors = self.floors.len();
        let mut rows = Vec::with_capacity(self.rows.len());
        for (i, row) in self.rows.iter_mut().enumerate() {
            let floor_p50 = &rounds.p50_ns[row.setup.floor];
            let p50s = &rounds.p50_ns[floors + i];
            let round_records: Vec<Round> = p50s
                .iter()
                .copied()
                .zip(rounds.p99_ns[floors + i].iter().copied())
                .zip(floor_p50)
                .zip(&row.seen)
                .zip(&round_of)
                .map(|(((p50_p99, &floor), seen), &of)| seen.round(p50_p99, Some(floor), of))
                .collect();
            let iterations = rounds.round_trips[floors + i];
            let ratio = paired_ratio_by_generation(p50s, floor_p50, &rounds.generations);
            rows.push(row.finish(iterations, round_records, ratio, transport));
        }
        let baselines = self
            .floors
            .iter()
            .enumerate()
            .map(|(i, floor)| {
                let floor_rounds: Vec<Round> = rounds.p50_ns[i]
                    .iter()
                    .copied()
                    .zip(rounds.p99_ns[i].iter().copied())
                    .zip(&floor.seen)
                    .zip(&round_of)
                    .map(|((p50_p99, seen), &of)| seen.round(p50_p99, None, of))
                    .collect();
                BaselineRow {
                    bytes: floor.bytes as u64,
                    transport,
                    wait: floor.wait,
                    pin: self.pin,
                    lent: floor.lent,
                    iterations: rounds.round_trips[i],
                    rtt_ns: Percentiles::of(&floor.rtt),
                    shared_core_share: shared_core_share(&floor_rounds),
                    rounds: floor_rounds,
                    route: floor.route.clone(),
                }
            })
            .collect();
        Ok((baselines, rows))
    }

    /// The peer that row `i` calls, while its server runs.
    fn row_peer(&self, i: usize) -> Option<&Peer> {
        self.processes.as_ref()?.peers.get(self.rows[i].setup.peer)?.as_ref()
    }

    /// The pid whose CPU time is the server's for `member`, when it can be read.
    fn cpu_pid(&self, member: usize) -> Option<u32> {
        let known = self.processes.as_ref().is_some_and(|p| p.server_cpu_known);
        self.server_pid(member).filter(|_| known)
    }

    fn continue_all(&mut self) {
        for &pid in &self.pids {
            resume(pid);
        }
        self.running = None;
    }
}

/// A member of a [`LiveGroup`], by its index among its kind.
enum Member {
    Floor(usize),
    Row(usize),
}

impl Drop for LiveGroup<'_> {
    fn drop(&mut self) {
        // A stopped server would not hear BYE or end of stream: never leave one stopped.
        self.continue_all();
    }
}

impl Group for LiveGroup<'_> {
    fn members(&self) -> usize {
        self.floors.len() + self.rows.len()
    }

    /// Probes the machine's state for the round, with no server running: the one left running
    /// by the last burst is stopped first (the next [`Group::enter`] continues the member it
    /// needs), so that a spinning server takes no CPU from the probe. With `free` placement
    /// the client is pinned to its first allowed CPU for the probe only, apart from the
    /// partner on the second.
    fn round_starts(&mut self, _round: usize) -> Result<()> {
        crate::interrupt::check()?;
        let Some(probe) = self.probe.as_mut() else {
            self.probes.push(None);
            return Ok(());
        };
        if let Some(running) = self.running.take() {
            pause(running);
        }
        let _pinned = match self.pin {
            Placement::Free => Pinned::to_first_allowed_cpu().ok(),
            Placement::Same | Placement::Split => None,
        };
        self.probes.push(probe.measure());
        Ok(())
    }

    fn enter(&mut self, member: usize) -> Result<()> {
        crate::interrupt::check()?;
        let pid = self.server_pid(member);
        if pid != self.running {
            if let Some(running) = self.running {
                pause(running);
            }
            if let Some(pid) = pid {
                resume(pid);
            }
            self.running = pid;
        }
        if let Member::Row(i) = self.member(member) {
            let (slot, path) = (self.rows[i].setup.peer, self.rows[i].setup.path);
            if let Some(Some(peer)) = self.processes.as_mut().and_then(|p| p.peers.get_mut(slot)) {
                peer.set_path(path);
            }
        }
        Ok(())
    }

    fn round_trip(&mut self, member: usize, timed: bool) -> Result<u64> {
        crate::interrupt::check()?;
        let kind = self.member(member);
        let Some(processes) = self.processes.as_mut() else {
            return Err(peerpipe::Error::PeerClosed {
                context: "before the group's servers started",
            });
        };
        let row = match kind {
            Member::Row(i) => &mut self.rows[i],
            Member::Floor(i) => {
                let (floor, echo) = (&mut self.floors[i], &mut processes.echoes[i]);
                let ns = echo.round_trip().map_err(|e| or_interrupted(echo.name_error(e)))?;
                if timed {
                    floor.rtt.saturating_record(ns);
                }
                return Ok(ns);
            }
        };
        let Some(peer) = processes.peers.get_mut(row.setup.peer).and_then(Option::as_mut) else {
            return Err(peerpipe::Error::PeerClosed { context: "before the row's server started" });
        };
        let timing = row.data.call(peer, row.setup.workload).map_err(|e| {
            let command = processes.commands.get(row.setup.peer).map_or("", String::as_str);
            let pid = peer.spawned_pid().map_or_else(String::new, |pid| format!(" (pid {pid})"));
            let name = format!("the {} server `{command}`{pid}", row.setup.handler);
            or_interrupted(peerpipe::process::naming(e, &name))
        })?;
        if timed {
            row.phases.record(&timing);
        }
        Ok(timing.round_trip_ns)
    }

    fn timing_starts(&mut self, member: usize) -> Result<()> {
        let pid = self.server_pid(member);
        self.preemptions_at_start = (thread_preemptions(), pid.and_then(preemptions_of));
        if let Member::Row(i) = self.member(member) {
            let pid = self.cpu_pid(member);
            self.rows[i].cpu.start(pid)?;
            self.rows[i].waits_at_start = self.row_peer(i).map(ClientWaits::of);
        }
        Ok(())
    }

    fn leave(&mut self, member: usize, _round: usize) -> Result<()> {
        let pid = self.server_pid(member);
        let (client_at, server_at) = self.preemptions_at_start;
        let preemptions =
            match (client_at, server_at, thread_preemptions(), pid.and_then(preemptions_of)) {
                (Some(c0), Some(s0), Some(c1), Some(s1)) => {
                    Some(c1.saturating_sub(c0) + s1.saturating_sub(s0))
                }
                _ => None,
            };
        let seen =
            Seen { client_cpu: current_cpu(), server_cpu: pid.and_then(last_cpu_of), preemptions };
        match self.member(member) {
            Member::Floor(i) => {
                if let Some(echo) = self.processes.as_ref().and_then(|p| p.echoes.get(i)) {
                    echo.verify()?;
                }
                self.floors[i].seen.push(seen);
            }
            Member::Row(i) => {
                let cpu_pid = self.cpu_pid(member);
                let waits_now = self.row_peer(i).map(ClientWaits::of);
                let row = &mut self.rows[i];
                row.cpu.stop(cpu_pid)?;
                if let (Some(before), Some(after)) = (row.waits_at_start.take(), waits_now) {
                    row.waits.add_between(&before, &after);
                }
                row.seen.push(seen);
                // Every burst's last reply is checked bit for bit.
                row.checked += 1;
                row.data.verify(row.setup.workload, row.setup.expect, row.checked)?;
            }
        }
        self.progress.inc(1);
        Ok(())
    }

    fn now_ns(&mut self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }
}

/// CPU time of the client thread and of the server, summed over the timed part of every
/// burst.
#[derive(Default)]
struct CpuAccount {
    start: Option<(Duration, Option<Duration>)>,
    client: Duration,
    /// `None` once any burst could not read the server's clock.
    server: Option<Duration>,
    bursts: u64,
}

impl CpuAccount {
    fn start(&mut self, server_pid: Option<u32>) -> Result<()> {
        self.start = Some((thread_cpu_time()?, server_pid.and_then(|p| process_cpu_time(p).ok())));
        Ok(())
    }

    fn stop(&mut self, server_pid: Option<u32>) -> Result<()> {
        let Some((client, server)) = self.start.take() else { return Ok(()) };
        self.client += thread_cpu_time()?.saturating_sub(client);
        let server_now = server_pid.and_then(|p| process_cpu_time(p).ok());
        self.server = match (self.bursts, self.server, server, server_now) {
            (0, _, Some(a), Some(b)) => Some(b.saturating_sub(a)),
            (_, Some(sum), Some(a), Some(b)) => Some(sum + b.saturating_sub(a)),
            _ => None,
        };
        self.bursts += 1;
        Ok(())
    }

    /// (client, server) CPU nanoseconds per round trip; NaN when unknown.
    fn per_round_trip(&self, round_trips: u64) -> (f64, f64) {
        if round_trips == 0 || self.bursts == 0 {
            return (f64::NAN, f64::NAN);
        }
        let per = |d: Duration| d.as_nanos() as f64 / round_trips as f64;
        (per(self.client), self.server.map_or(f64::NAN, per))
    }
}

impl RowMember {
    fn finish(
        &self,
        iterations: u64,
        rounds: Vec<Round>,
        ratio: Option<PairedRatio>,
        transport: TransportKind,
    ) -> Row {
        let setup = &self.setup;
        let (client_cpu_ns, server_cpu_ns) = self.cpu.per_round_trip(iterations);
        let rtt = Percentiles::of(&self.phases.rtt);
        let id = setup.id(transport);
        let bytes = id.bytes;
        Row {
            id,
            iterations,
            rtt_ns: rtt,
            transfer_ns: Percentiles::of(&self.phases.transfer),
            encode_ns: Percentiles::of(&self.phases.encode),
            decode_ns: Percentiles::of(&self.phases.decode),
            server_ns: Percentiles::of(&self.phases.server),
            client_cpu_ns,
            server_cpu_ns,
            mb_per_s: format::mb_per_s(bytes, rtt.p50),
            ratio_to_baseline: ratio.map(|r| r.median),
            ratio_ci: ratio.map(|r| r.ci).filter(|ci| ci.iter().all(|x| x.is_finite())),
            shared_core_share: shared_core_share(&rounds),
            rounds,
            client_waits: matches!(setup.wait, Wait::Auto { .. }).then_some(self.waits),
        }
    }
}

/// Buffers for one row: the request, the expected reply, and the reply buffers.
struct RowData {
    input: Vec<f64>,
    input32: Vec<f32>,
    expected: Vec<f64>,
    out64: Vec<f64>,
    out32: Vec<f32>,
}

impl RowData {
    fn new(setup: &RowSetup) -> Result<RowData> {
        let n = setup.elements;
        let input = test_values(n, n as u64 + 1, setup.expect == Expectation::Echo);
        let input32: Vec<f32> = input.iter().map(|&x| x as f32).collect();
        let expected = match (setup.expect, setup.workload) {
            (Expectation::Lorenz96, _) => {
                let mut d = vec![0.0; n];
                lorenz96::rhs(&input, lorenz96::FORCING, &mut d)?;
                d
            }
            (_, Workload::F64) => input.clone(),
            (_, Workload::F32 | Workload::F64AsF32) => input32.iter().map(|&x| x as f64).collect(),
        };
        Ok(RowData { input, input32, expected, out64: vec![0.0; n], out32: vec![0.0; n] })
    }

    fn call(&mut self, peer: &mut Peer, workload: Workload) -> Result<CallTiming> {
        match workload {
            Workload::F64 => peer.call(Values::F64(&self.input), ValuesMut::F64(&mut self.out64)),
            Workload::F64AsF32 => {
                peer.call(Values::F64AsF32(&self.input), ValuesMut::F64FromF32(&mut self.out64))
            }
            Workload::F32 => peer.call(Values::F32(&self.input32), ValuesMut::F32(&mut self.out32)),
        }
    }

    fn verify(&mut self, workload: Workload, expect: Expectation, round_trip: u64) -> Result<()> {
        if expect == Expectation::Unchecked {
            return Ok(());
        }
        if workload == Workload::F32 {
            self.out64.iter_mut().zip(&self.out32).for_each(|(d, &s)| *d = s as f64);
        }
        verify(&self.expected, &self.out64, round_trip)
    }
}

struct PhaseHistograms {
    rtt: Histogram<u64>,
    transfer: Histogram<u64>,
    encode: Histogram<u64>,
    decode: Histogram<u64>,
    server: Histogram<u64>,
}

impl PhaseHistograms {
    fn new() -> PhaseHistograms {
        PhaseHistograms {
            rtt: new_histogram(),
            transfer: new_histogram(),
            encode: new_histogram(),
            decode: new_histogram(),
            server: new_histogram(),
        }
    }

    fn record(&mut self, t: &CallTiming) {
        self.rtt.saturating_record(t.round_trip_ns);
        self.transfer.saturating_record(t.transfer_ns());
        self.encode.saturating_record(t.encode_ns);
        self.decode.saturating_record(t.decode_ns);
        self.server.saturating_record(t.server_ns);
    }
}
