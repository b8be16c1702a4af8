//! Running the matrix: spawning servers, warming up, timing every phase of every round trip.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};

use super::baseline::RawEcho;
use super::cpu::{Pinned, process_cpu_time, thread_cpu_time};
use super::sync::{self, SyncCost};
use super::{
    BaselineRow, ConfigRecord, Expectation, Percentiles, Placement, Report, Row, Workload, machine,
    new_histogram, test_values, verify,
};
use crate::codec::{Values, ValuesMut};
use crate::error::{Error, Result};
use crate::lorenz96;
use crate::peer::{CallTiming, DataPath, Options, Peer};
use crate::process::Spawn;
use crate::transport::{DEFAULT_SPIN_BUDGET, TransportKind, Wait};

/// Element counts measured by default.
pub const DEFAULT_SIZES: [usize; 6] = [1, 8, 500, 1000, 65_536, 1_048_576];
/// Element counts measured with `--quick`.
pub const QUICK_SIZES: [usize; 4] = [1, 500, 65_536, 1_048_576];
/// Up to this many elements every wait strategy is measured by default; above it, hybrid only
/// (spinning on 8 MiB frames only burns the second core).
pub const ALL_WAITS_MAX_ELEMENTS: usize = 65_536;
/// Time per row by default.
pub const DEFAULT_ROW_DURATION: Duration = Duration::from_millis(150);
/// Time per row with `--quick`.
pub const QUICK_ROW_DURATION: Duration = Duration::from_millis(30);
/// Warm-up per row by default: long enough for caches, page faults and the scheduler to settle.
pub const DEFAULT_WARMUP: Duration = Duration::from_millis(20);
/// Fewest timed round trips in a row, however short its duration.
pub const MIN_ITERATIONS: u64 = 5;
/// Fewest warm-up round trips in a row.
pub const MIN_WARMUP_ITERATIONS: u64 = 3;
/// The smallest baseline, measured at every wait strategy and placement: one f64. Its p50 is
/// the cost of a round trip that moves (almost) no data — waking the other side and back.
pub const WAKE_BYTES: usize = 8;
/// Budget per round trip the verdict checks by default: 150 µs.
pub const DEFAULT_BUDGET: Duration = Duration::from_micros(150);

/// How long each row runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowLength {
    /// Exactly this many timed round trips.
    Iterations(u64),
    /// Round trips until this much time has passed (at least [`MIN_ITERATIONS`]).
    Duration(Duration),
}

/// Everything a report run needs.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The `peer` binary, used for servers and baselines.
    pub peer_exe: PathBuf,
    /// A server command for `sh -c` instead of `peer_exe --role server`; baselines still use
    /// `peer_exe`.
    pub spawn: Option<String>,
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
    /// How long each row runs.
    pub length: RowLength,
    /// Warm-up per row.
    pub warmup: Duration,
    /// Repeats per row (the spread of their p50s is the noise `compare` allows for).
    pub repeat: u32,
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

    /// Number of rows plus baselines, for progress.
    pub fn steps(&self) -> u64 {
        let mut steps = 0;
        for wait in self.all_waits() {
            let sizes = self.sizes.iter().filter(|&&s| self.waits_for(s).contains(&wait)).count();
            steps += (self.baseline_bytes(wait).len()
                + sizes * self.workload_paths().len() * self.handler_count())
                * self.transports.len();
        }
        (steps * self.pins.len()) as u64
    }

    /// Rough wall time of the run, for deciding whether to show progress.
    pub fn estimated_duration(&self) -> Duration {
        let per_row = match self.length {
            RowLength::Duration(d) => d,
            RowLength::Iterations(n) => {
                Duration::from_micros(20).saturating_mul(u32::try_from(n).unwrap_or(u32::MAX))
            }
        };
        let rows = u32::try_from(self.steps()).unwrap_or(u32::MAX);
        per_row.saturating_add(self.warmup).saturating_mul(self.repeat.max(1)).saturating_mul(rows)
    }

    fn record(&self) -> ConfigRecord {
        let names = |v: &[String]| v.to_vec();
        ConfigRecord {
            sizes: self.sizes.iter().map(|&s| s as u64).collect(),
            dtypes: self.workloads.iter().map(|w| w.name().to_owned()).collect(),
            paths: self.paths.iter().map(|p| p.name().to_owned()).collect(),
            handlers: names(&self.handlers),
            waits: self.waits.iter().flatten().map(|w| w.to_string()).collect(),
            pins: self.pins.iter().map(|p| p.name().to_owned()).collect(),
            iterations: match self.length {
                RowLength::Iterations(n) => Some(n),
                RowLength::Duration(_) => None,
            },
            duration_ns: match self.length {
                RowLength::Duration(d) => Some(d.as_nanos() as u64),
                RowLength::Iterations(_) => None,
            },
            warmup_ns: self.warmup.as_nanos() as u64,
            repeat: self.repeat.max(1),
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

/// Runs the whole plan: for each placement and wait strategy, the baselines of every byte count
/// needed over every transport, then every handler × transport × workload × path × size row.
///
/// # Errors
/// Any error of spawning, calling or verifying; the servers are terminated and reaped.
pub fn run(plan: &Plan, progress: &ProgressBar) -> Result<Report> {
    if plan.sizes.is_empty()
        || plan.workloads.is_empty()
        || plan.paths.is_empty()
        || plan.transports.is_empty()
    {
        return Err(Error::InvalidArgument {
            what: "plan",
            reason: "needs at least one size, dtype, path and transport".into(),
        });
    }
    if let RowLength::Iterations(0) = plan.length {
        return Err(Error::InvalidArgument {
            what: "iterations",
            reason: "must be at least 1".into(),
        });
    }
    let mut baseline = Vec::new();
    let mut rows = Vec::new();
    let mut pipe_size_granted = None;
    for &pin in &plan.pins {
        let placement = Placer::new(pin)?;
        for wait in plan.all_waits() {
            for bytes in plan.baseline_bytes(wait) {
                for &transport in &plan.transports {
                    progress.set_message(format!("baseline {bytes} B {transport} {wait} {pin}"));
                    baseline.push(measure_baseline(plan, bytes, transport, wait, &placement)?);
                    progress.inc(1);
                }
            }
            let handlers: Vec<Option<&str>> = match plan.spawn {
                Some(_) => vec![None],
                None => plan.handlers.iter().map(|h| Some(h.as_str())).collect(),
            };
            let servers =
                handlers.iter().flat_map(|h| plan.transports.iter().map(move |t| (*h, *t)));
            for (handler, transport) in servers {
                let options = Options { wait, transport, ..plan.options.clone() };
                let mut peer = placement.spawn(|| match (&plan.spawn, handler) {
                    (Some(command), _) => Peer::spawn_shell(command, options),
                    (None, Some(handler)) => Peer::spawn_server(&plan.peer_exe, handler, options),
                    (None, None) => unreachable!("handlers listed above"),
                })?;
                if transport == TransportKind::Pipe {
                    pipe_size_granted = peer.capacity().map(|c| c as u64).or(pipe_size_granted);
                }
                let handler_name = peer.server_hello().handler.clone().unwrap_or_default();
                let expect = Expectation::for_handler(Some(&handler_name));
                for (workload, path) in plan.workload_paths() {
                    for &elements in &plan.sizes {
                        if !plan.waits_for(elements).contains(&wait) {
                            continue;
                        }
                        progress.set_message(format!(
                            "{workload} x{elements} {path} {handler_name} {wait} {pin}"
                        ));
                        let setup = RowSetup { workload, elements, path, wait, pin, expect };
                        let mut row = measure_row(plan, &mut peer, &setup, &handler_name)?;
                        row.ratio_to_baseline = baseline
                            .iter()
                            .find(|b: &&BaselineRow| {
                                b.bytes == row.bytes.max(1)
                                    && b.transport == row.transport
                                    && b.wait == row.wait
                                    && b.pin == row.pin
                            })
                            .filter(|b| b.rtt_ns.p50 > 0)
                            .map(|b| row.rtt_ns.p50 as f64 / b.rtt_ns.p50 as f64);
                        rows.push(row);
                        progress.inc(1);
                    }
                }
                peer.close()?;
            }
        }
    }
    let sync_costs = if plan.transports.iter().any(TransportKind::is_shared_memory) {
        progress.set_message("synchronisation costs");
        measure_sync_costs(plan)?
    } else {
        Vec::new()
    };
    progress.finish_and_clear();
    Ok(Report {
        peerpipe: env!("CARGO_PKG_VERSION").to_owned(),
        machine: machine::describe(pipe_size_granted),
        config: plan.record(),
        baseline,
        rows,
        sync_costs,
    })
}

/// The synchronisation-cost table: in-process primitives, then cross-process wake-ups with
/// the server on the other core when there are two (`split`), else wherever it lands.
///
/// # Errors
/// The errors of [`sync::measure_in_process`] and [`sync::measure_cross_process`].
pub fn measure_sync_costs(plan: &Plan) -> Result<Vec<SyncCost>> {
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

/// Puts this thread and the servers it spawns where a [`Placement`] says. Servers inherit the
/// spawning thread's affinity, so for `split` the thread moves to the second CPU to spawn and
/// back to the first to measure.
struct Placer {
    placement: Placement,
    pinned: Option<Pinned>,
}

impl Placer {
    fn new(placement: Placement) -> Result<Placer> {
        let pinned = match placement {
            Placement::Free => None,
            Placement::Same | Placement::Split => Some(Pinned::to_first_allowed_cpu()?),
        };
        if placement == Placement::Split && pinned.as_ref().is_some_and(|p| p.allowed_cpus() < 2) {
            return Err(Error::InvalidArgument {
                what: "pin",
                reason: "split needs two CPUs, and this process may use only one".into(),
            });
        }
        Ok(Placer { placement, pinned })
    }

    /// Runs `spawn` with the affinity the server must inherit.
    fn spawn<T>(&self, spawn: impl FnOnce() -> Result<T>) -> Result<T> {
        let split = self.pinned.as_ref().filter(|_| self.placement == Placement::Split);
        if let Some(pinned) = split {
            pinned.to_nth_allowed(1)?;
        }
        let spawned = spawn();
        if let Some(pinned) = split {
            pinned.to_nth_allowed(0)?;
        }
        spawned
    }
}

/// One step of a row: a warm-up round trip (numbered) or a timed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Warmup(u64),
    Timed,
}

/// Runs warm-up steps, then timed repeats, until the plan's row length; `step` performs one
/// round trip and returns its nanoseconds. Returns the p50 of each repeat and the number of
/// timed round trips.
fn time_rows(plan: &Plan, mut step: impl FnMut(Step) -> Result<u64>) -> Result<(Vec<u64>, u64)> {
    let warm_until = Instant::now() + plan.warmup;
    let mut i = 0;
    while i < MIN_WARMUP_ITERATIONS || Instant::now() < warm_until {
        step(Step::Warmup(i))?;
        i += 1;
    }
    let mut repeat_p50 = Vec::new();
    let mut iterations = 0;
    for _ in 0..plan.repeat.max(1) {
        let mut rtts = Vec::new();
        let started = Instant::now();
        loop {
            rtts.push(step(Step::Timed)?);
            let done = match plan.length {
                RowLength::Iterations(n) => rtts.len() as u64 >= n,
                RowLength::Duration(d) => {
                    rtts.len() as u64 >= MIN_ITERATIONS && started.elapsed() >= d
                }
            };
            if done {
                break;
            }
        }
        iterations += rtts.len() as u64;
        rtts.sort_unstable();
        repeat_p50.push(super::nearest_rank(&rtts, 0.5));
    }
    Ok((repeat_p50, iterations))
}

fn measure_baseline(
    plan: &Plan,
    bytes: usize,
    transport: TransportKind,
    wait: Wait,
    placement: &Placer,
) -> Result<BaselineRow> {
    let pin = placement.placement;
    let mut echo = placement.spawn(|| {
        RawEcho::spawn_with(
            &plan.peer_exe,
            bytes,
            &Spawn {
                wait,
                transport,
                pipe_capacity: plan.options.pipe_capacity,
                shm_capacity: plan.options.shm_capacity,
            },
            plan.options.timeout,
        )
    })?;
    let mut rtt = new_histogram();
    let (p50_repeats_ns, iterations) = time_rows(plan, |step| {
        let ns = echo.round_trip()?;
        match step {
            Step::Warmup(_) => echo.verify()?,
            Step::Timed => rtt.saturating_record(ns),
        }
        Ok(ns)
    })?;
    echo.verify()?;
    echo.close()?;
    Ok(BaselineRow {
        bytes: bytes as u64,
        transport: transport.name().to_owned(),
        wait: wait.to_string(),
        pin: pin.name().to_owned(),
        iterations,
        rtt_ns: Percentiles::of(&rtt),
        p50_repeats_ns,
    })
}

struct RowSetup {
    workload: Workload,
    elements: usize,
    path: DataPath,
    wait: Wait,
    pin: Placement,
    expect: Expectation,
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

fn measure_row(plan: &Plan, peer: &mut Peer, setup: &RowSetup, handler: &str) -> Result<Row> {
    peer.set_path(setup.path);
    let mut data = RowData::new(setup)?;
    let mut phases = PhaseHistograms::new();
    let server_pid = peer.server_pid();
    let workload = setup.workload;
    let mut cpu_start = None;
    let (p50_repeats_ns, iterations) = time_rows(plan, |step| {
        if step == Step::Timed && cpu_start.is_none() {
            cpu_start = Some(cpu_now(server_pid)?);
        }
        let timing = data.call(peer, workload)?;
        match step {
            Step::Warmup(i) => data.verify(workload, setup.expect, i)?,
            Step::Timed => phases.record(&timing),
        }
        Ok(timing.round_trip_ns)
    })?;
    let (client_cpu_ns, server_cpu_ns) = match cpu_start {
        Some(start) => {
            let end = cpu_now(server_pid)?;
            let per = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
                (Some(a), Some(b)) => b.saturating_sub(a).as_nanos() as f64 / iterations as f64,
                _ => f64::NAN,
            };
            (per(Some(start.0), Some(end.0)), per(start.1, end.1))
        }
        None => (f64::NAN, f64::NAN),
    };
    // The last timed reply is checked too, not only the warm-up ones.
    data.verify(workload, setup.expect, iterations)?;
    let rtt = Percentiles::of(&phases.rtt);
    let bytes = workload.wire_bytes(setup.elements) as u64;
    Ok(Row {
        dtype: workload.name().to_owned(),
        elements: setup.elements as u64,
        bytes,
        transport: peer.transport_kind().name().to_owned(),
        path: setup.path.name().to_owned(),
        handler: handler.to_owned(),
        wait: setup.wait.to_string(),
        pin: setup.pin.name().to_owned(),
        iterations,
        rtt_ns: rtt,
        transfer_ns: Percentiles::of(&phases.transfer),
        encode_ns: Percentiles::of(&phases.encode),
        decode_ns: Percentiles::of(&phases.decode),
        server_ns: Percentiles::of(&phases.server),
        client_cpu_ns,
        server_cpu_ns,
        mb_per_s: if rtt.p50 > 0 { 2.0 * bytes as f64 / rtt.p50 as f64 * 1e3 } else { 0.0 },
        ratio_to_baseline: None,
        p50_repeats_ns,
    })
}

/// This thread's CPU time and the server's, when its pid is known and readable.
fn cpu_now(server_pid: Option<u32>) -> Result<(Duration, Option<Duration>)> {
    Ok((thread_cpu_time()?, server_pid.and_then(|pid| process_cpu_time(pid).ok())))
}
