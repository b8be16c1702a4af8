//! `peer`: measure round trips of packed arrays between two processes, or serve them.
//!
//! Parsing and dispatch only; the work lives in the `peerpipe` library.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use peerpipe::clock;
use peerpipe::frame::DEFAULT_MAX_FRAME_BYTES;
use peerpipe::peer::{DataPath, Options};
use peerpipe::transport::{DEFAULT_PIPE_CAPACITY, DEFAULT_SHM_CAPACITY, TransportKind, Wait};
use peerpipe::units::parse_duration;
use peerpipe::{Error, handlers};
use peerpipe_cli::report::compare::{self, Thresholds};
use peerpipe_cli::report::measure;
use peerpipe_cli::report::plan::PlanRequest;
use peerpipe_cli::report::{Placement, Workload, export, render, sync};

#[path = "peer/serve.rs"]
mod serve;

use serve::ServeArgs;

/// Exchange packed f64/f32 arrays with another process over pipes, and see where every
/// microsecond of a round trip goes.
///
/// With no arguments, `peer` runs the round-trip latency report: it spawns servers, measures
/// every combination of dtype, size, path, handler and wait strategy against a raw-bytes
/// floor, and prints first its summary — per size, what a call costs beyond the server's own
/// time (p50, p99, its ratio to the floor, the --budget met or missed at p50 and at p99), then
/// where each size's round trip goes — and then the table.
///
/// Ratios are paired: a floor and the rows that move the same bytes are measured in rounds
/// (--rounds), each round one short burst of each in a random order, and a row's ratio is the
/// median over rounds of its p50 over the floor's p50 in the same round, with a 95 %
/// confidence interval. A machine that changes speed during the run moves both sides of a
/// round together, so the ratios hold still even when absolute times do not. The waits of one
/// placement share the rounds, so two waits are compared over bursts taken moments apart. A ratio whose
/// interval reaches beyond +-25 % of it or straddles 1.0 is printed as unresolved.
///
/// Every call is timed with the CPU's time-stamp counter where the kernel keeps time with it
/// (a cheap read that does not wait for the copy before it), else with clock_gettime; the
/// report's `clock:` line says which. PEERPIPE_CLOCK=monotonic always uses clock_gettime.
#[derive(Debug, Parser)]
#[command(name = "peer", version, propagate_version = true, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    #[command(flatten)]
    report: ReportArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve: speak wire format v1 on stdin/stdout (or over TCP), one handler, until the
    /// client says BYE or closes. `peer --role server …` is the same command, spelled as the
    /// library, its bindings and other programs spawn it.
    ///
    /// The server serves the transport its stdin is (a pipe, or the shared region a shm-sem or
    /// shm-ring client hands over) unless told --transport tcp. Exit 0 when the client ended
    /// the conversation, 2 on an error (reported to the client as an ERROR frame when it can
    /// be, and on stderr).
    Serve(ServeArgs),

    /// Compare two `--json` reports. Exit 0 when nothing differs, 1 when something does, 2 on
    /// error (a file that is not a report of the format this peer writes among them), 3 when A
    /// and B were measured in different states of the machine: they share no state (or no row
    /// ran in one they share), so nothing can be compared, or — with --mode absolute, where
    /// rows are not judged per state — something differs while moving 4 KiB between the CPUs
    /// took more than 1.5x longer in one run than in the other for most of it (see the note it
    /// prints): the difference may be the machine's, not the code's; measure both again.
    ///
    /// By default (--mode paired) each row is judged against its own floor from the same run,
    /// so two runs taken while the machine ran at different speeds compare correctly. When
    /// both reports tagged their rounds with the machine's state, each row is judged in a
    /// state both ran in, on the time it adds to its floor there: it differs when that added
    /// time moved by more than --abs and by more than --rel percent of A's round trip in
    /// that state, and the 95 % interval of that change leaves out 0 (the ratios are shown as
    /// context). Reports without states (no round probed) are judged on the ratio: a row
    /// differs when the 95 % interval of its change leaves out 0, the ratio moved by more than
    /// --rel percent and the change, converted to time at the floors' mean p50, exceeds
    /// --abs. --mode absolute compares p50 round trips instead, allowing for the spread of
    /// each row's per-round p50s.
    Compare(CompareArgs),

    /// Repeat a report N times and check that each run's interval holds what the others say.
    ///
    /// Runs `peer REPORT_ARGS --json DIR/runI.json` N times, one after another, then prints
    /// for every row each run's ratio to its floor with its 95 % interval, the 4 KiB probe of
    /// its main machine state, the row's server p50, the median ratio of the other runs in
    /// that state, and whether the run's interval held it (`held`, `MISSED`, or `unresolved`
    /// when the run said it could not bound its ratio), and the tally. With --from, judges reports already written
    /// instead of running any (their figures recomputed from their rounds). Exit 0 when every
    /// row held (or said unresolved) in at least 9 of 10 runs that had others in their state,
    /// 1 when not, 2 on error.
    Repeat(RepeatArgs),

    /// Soak: client–server pairs exchange random arrays, every reply verified bit for bit.
    ///
    /// K pairs exchange arrays of random sizes, dtypes and bit patterns (NaN payloads,
    /// signalling NaNs, -0.0, subnormals, ±inf), pipelined and not, for --duration; the RSS and
    /// open descriptors of every process are compared after warm-up and at the end. Exit 0
    /// when nothing was lost, reordered or corrupted, no error occurred and resources stayed
    /// flat; 1 when not; 2 on other errors.
    Soak(SoakArgs),

    /// FMUs out of process: `peer fmu wrap` writes a proxy FMU, `peer fmu serve` serves one.
    Fmu(peerpipe_fmu::cli::FmuArgs),
}

#[derive(Debug, Args)]
struct RepeatArgs {
    /// How many times to run the report (at least 2).
    #[arg(value_name = "N", required_unless_present = "from")]
    runs: Option<usize>,
    /// Where the runs' reports are written [default: a new directory under the system's
    /// temporary directory, printed].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Judge these reports (`--json` files of runs of one configuration) instead of running.
    #[arg(long, value_name = "JSON", num_args = 2.., conflicts_with_all = ["runs", "report_args"])]
    from: Vec<PathBuf>,
    /// The report's arguments, after `--` (`peer repeat 10 -- --sizes 500 --wait hybrid`).
    #[arg(last = true, value_name = "REPORT_ARGS")]
    report_args: Vec<String>,
}

#[derive(Debug, Args)]
struct SoakArgs {
    /// How long the pairs exchange, after warm-up.
    #[arg(long, default_value = "60s", value_parser = parse_nonzero_duration)]
    duration: Duration,
    /// Client–server pairs, each client on its own thread; servers alternate echo and
    /// echo-raw.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    peers: u16,
    /// Largest request, in elements; sizes are drawn from 0..=N, mostly small.
    #[arg(long, value_name = "N", default_value_t = peerpipe_cli::soak::DEFAULT_MAX_ELEMENTS)]
    max_elements: usize,
    /// Seed of everything random [default: from the clock]. It is printed; the same seed
    /// replays the same arrays.
    #[arg(long)]
    seed: Option<u64>,
    /// Deadline for the handshake and for each reply.
    #[arg(long, default_value = "10s", value_parser = parse_nonzero_duration)]
    timeout: Duration,
    /// Wait strategy of both sides: auto, block, spin, hybrid or hybrid:DUR.
    #[arg(long, default_value = "auto", value_parser = parse_wait)]
    wait: Wait,
    /// Transport of every pair: pipe, shm-sem, shm-ring or tcp.
    #[arg(long, default_value = "pipe", value_parser = parse_transport)]
    transport: TransportKind,
    /// A server command line each pair spawns instead of `peer --role server` (a server of
    /// another implementation, as the report's --spawn); its default handler must echo.
    #[arg(long, value_name = "CMD")]
    spawn: Option<String>,
}

fn parse_transport(text: &str) -> Result<TransportKind, String> {
    text.parse().map_err(|e: Error| e.to_string())
}

#[derive(Debug, Args)]
struct CompareArgs {
    /// The earlier report.
    a: PathBuf,
    /// The later report.
    b: PathBuf,
    /// Absolute threshold: differences smaller than this are not reported.
    #[arg(long, default_value = "10us", value_parser = parse_timeout)]
    abs: Duration,
    /// Relative threshold in percent: of A's round trip in the shared machine state (added
    /// time judged, paired reports with states), of A's ratio (paired, without states), or of
    /// A's p50 (absolute).
    #[arg(long, default_value_t = 10.0, value_parser = parse_percent)]
    rel: f64,
    /// paired: judge each row against its same-run floor (its added time in a machine state
    /// both reports ran in, or its ratio for reports without states); absolute: judge p50
    /// round trips.
    #[arg(long, value_enum, default_value_t = CompareMode::Paired)]
    mode: CompareMode,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum CompareMode {
    Paired,
    Absolute,
}

#[derive(Debug, Args)]
struct ReportArgs {
    /// The handlers to measure, a comma-separated list: echo (decode + re-encode), echo-raw
    /// (bytes untouched), lorenz96 (the Lorenz-96 derivative of an f64 state of at least 4
    /// elements) or lorenz96-f32 (the same for f32, computed in f64) [default:
    /// echo-raw,echo]; rows a handler cannot serve are skipped with a note.
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(handlers::NAMES))]
    handler: Vec<String>,

    /// Largest payload this side accepts, in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_FRAME_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    max_frame_bytes: u64,

    /// Wait strategies, a comma-separated list: auto (spin while the peer answers within the
    /// spin (50 µs) — yield the CPU once
    /// and sleep once spinning stops paying — the peer shares this core, or other work holds
    /// the cores — probe now and then to spin again, and move a side's thread to an idle CPU
    /// when it keeps handing its core to the other), auto:stay (auto, leaving the threads where
    /// the scheduler puts them), block (sleep in the
    /// kernel: least CPU), spin (never
    /// sleep: burns a core per side), hybrid or hybrid:DUR (spin DUR, 50 µs by default, then
    /// block) [default: block, spin and auto up to 65536 elements, auto above].
    #[arg(long, value_delimiter = ',', value_parser = parse_wait)]
    wait: Vec<Wait>,

    /// Transports to measure side by side, a comma-separated list: pipe, shm-sem (shared
    /// slots and semaphores), shm-ring (shared rings + futex wake-ups) or tcp (the server listens,
    /// announces a port and a token on stdout, and the frames go over TCP; with --spawn "ssh
    /// host peer --role server", ssh only starts and authenticates; with --spawn "srun … peer
    /// --role server", the only transport srun can start: it relays stdio, so pipes and shared
    /// memory through it are refused) [default: pipe]. A shared-memory server must be spawned
    /// by its client (it takes the region as its stdin), so it cannot run over ssh.
    #[arg(long, value_delimiter = ',', value_parser = parse_transport)]
    transport: Vec<TransportKind>,

    /// Bytes per direction of the shared-memory transports.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_SHM_CAPACITY)]
    shm_size: usize,

    /// Measure and print only the synchronisation-cost table (ns per operation of the
    /// primitives the transports use). The table is also part of every report that measures a
    /// shared-memory transport.
    #[arg(long)]
    sync_costs: bool,

    /// Operations per entry of the synchronisation-cost table.
    #[arg(long, value_name = "N", default_value_t = sync::DEFAULT_OPERATIONS, value_parser = clap::value_parser!(u64).range(1..))]
    sync_ops: u64,

    /// The server command, run with `sh -c`, e.g. "ssh host peer serve" [default: this binary
    /// as --role server --handler H]. When CMD starts peer's server (it contains "--role
    /// server", or "peer serve"), the raw floors run through it too, as `CMD --raw-echo
    /// BYTES`, so each ratio is against what the route itself costs; otherwise they run
    /// locally (see --spawn-floor). For a transport other than pipe, `--transport KIND` is
    /// appended to such a CMD. The server's CPU time is not measured (`-`): the spawned
    /// process may be an ssh client.
    #[arg(long, value_name = "CMD")]
    spawn: Option<String>,

    /// The command the raw floors run through, with `--raw-echo BYTES` appended: a command
    /// that starts peer's server, e.g. "ssh host peer serve" beside --spawn "ssh host python3
    /// model.py" [default: --spawn's CMD when it starts peer's server, else this binary
    /// locally].
    #[arg(long, value_name = "CMD")]
    spawn_floor: Option<String>,

    /// Have every handler server busy-wait DUR before answering each request, counted in
    /// server time: a known difference for checking the report's sensitivity on your machine
    /// (run once without, once with, then `peer compare`). Not passed to the raw floors; with
    /// --spawn, give it to the server command instead.
    #[arg(long, value_name = "DUR", value_parser = parse_timeout)]
    server_delay: Option<Duration>,

    /// Element counts per request [default: 1,8,500,1000,65536,1048576].
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    sizes: Vec<usize>,

    /// What to send: f64, f32, f64-as-f32 (f64 narrowed to f32 on the wire; always
    /// through the codec) [default: all three].
    #[arg(long, value_delimiter = ',', value_parser = parse_workload)]
    dtype: Vec<Workload>,

    /// Zero-copy (send from and receive into the slice) and/or codec (explicit LE codec)
    /// [default: both].
    #[arg(long, value_delimiter = ',', value_parser = parse_path)]
    path: Vec<DataPath>,

    /// Placement, a comma-separated list: free (the scheduler decides), same (both
    /// processes on one core), split (client and server on two different cores) [default: the
    /// default wait (auto) free, as a program gets it, which the answer reports; the other
    /// waits split on a machine with two or more cores, else free]. split suits comparing
    /// waits because with free the scheduler sometimes keeps client and server on one core
    /// for a whole process lifetime, differently for each server process, so a floor and a
    /// row could be measured on one core and on two: the per-round CPUs in the JSON show it.
    /// The answer says when placement changes it by more than 1.5x. Whatever the placement,
    /// every round starts with a short probe of the machine's state (4 KiB between the first
    /// two CPUs: each round's probe_ns, the table's `machine state:` line), which says when
    /// the machine changed state during a run.
    #[arg(long, value_delimiter = ',', value_parser = parse_pin)]
    pin: Vec<Placement>,

    /// Timed round trips per row, over all its rounds (instead of --duration).
    #[arg(long, conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..))]
    iters: Option<u64>,

    /// How long each row is timed, over all its rounds [default: 150ms; 30ms with
    /// --quick].
    #[arg(long, value_parser = parse_nonzero_duration)]
    duration: Option<Duration>,

    /// Warm-up time per row before its first round (at least 3 round trips).
    #[arg(long, default_value = "20ms", value_parser = parse_timeout)]
    warmup: Duration,

    /// Rounds per group. Each round gives every floor and row of the same bytes,
    /// transport and placement — at every wait measured there — one burst (--duration / N) in
    /// a random order; a row's ratio is the median of its per-round ratios to the floor at its
    /// own wait, with a 95 % interval (needs 6 rounds or more) [default: 40; 10 with --quick].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(measure::MAX_ROUNDS)))]
    rounds: Option<u32>,

    /// Sets of fresh server processes per group: the rounds are split between N
    /// generations, each with newly spawned floor and handler servers and newly allocated
    /// buffers, so that what differs from one process to the next (a few percent here) is
    /// sampled within a run and shows in its interval instead of between runs; the 95% CI is
    /// computed by generation too [default: 10; 5 with --quick; at most one per round].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(measure::MAX_ROUNDS)))]
    generations: Option<u32>,

    /// Seed of the order of bursts within each round [default: from the clock]; it is
    /// recorded in the JSON as config.order_seed.
    #[arg(long)]
    seed: Option<u64>,

    /// A quick run: f64 only, sizes 1,500,65536,1048576, the auto wait only, 30ms
    /// per row in 10 rounds: the answer and a short table in a few seconds.
    #[arg(long)]
    quick: bool,

    /// Run N busy threads beside the client and servers for the whole run, allowed on
    /// every CPU this process may use, to see what each wait costs on a machine whose cores are
    /// not idle (a simulation using its cores, a laptop, a shared node). Recorded in the JSON
    /// as config.load.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=i64::from(peerpipe_cli::report::load::MAX_LOAD)))]
    load: u32,

    /// The budget per call, judged once per size on its overhead (round trip - server time)
    /// at p50 and at p99; 0 sets none.
    #[arg(long, default_value = "150us", value_parser = parse_timeout)]
    budget: Duration,

    /// Deadline for the handshake and for each reply, e.g. 250ms, 2s, 500us.
    #[arg(long, default_value = "10s", value_parser = parse_timeout)]
    timeout: Duration,

    /// Pipe capacity to request, in bytes.
    #[arg(long, default_value_t = DEFAULT_PIPE_CAPACITY)]
    pipe_size: usize,

    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Also write the rows as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,

    /// Also plot p50 round trip against bytes (log-log) as SVG to FILE.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

fn parse_wait(text: &str) -> Result<Wait, String> {
    text.parse().map_err(|e: Error| e.to_string())
}

fn parse_workload(text: &str) -> Result<Workload, String> {
    text.parse().map_err(|e: Error| e.to_string())
}

fn parse_path(text: &str) -> Result<DataPath, String> {
    text.parse().map_err(|e: Error| e.to_string())
}

fn parse_pin(text: &str) -> Result<Placement, String> {
    text.parse().map_err(|e: Error| e.to_string())
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

fn parse_nonzero_duration(text: &str) -> Result<Duration, String> {
    match parse_duration(text).map_err(|e| e.to_string())? {
        Duration::ZERO => Err("must be greater than zero".to_owned()),
        d => Ok(d),
    }
}

fn parse_size(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) | Err(_) => Err(format!("expected a positive element count, found {text:?}")),
        Ok(n) => Ok(n),
    }
}

fn parse_percent(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("expected a percentage, found {text:?}"))?;
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(format!("expected a non-negative percentage, found {text:?}"))
    }
}

fn main() -> ExitCode {
    let cli = match parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    if let Ok(value) = std::env::var(clock::CLOCK_ENV)
        && let Err(reason) = clock::check_env_value(&value)
    {
        eprintln!("peer: error: {reason}");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        Some(Command::Serve(args)) => serve::run(&args).map(|()| ExitCode::SUCCESS),
        Some(Command::Compare(args)) => run_compare(&args),
        Some(Command::Repeat(args)) => run_repeat(&args),
        Some(Command::Soak(args)) => run_soak(&args),
        Some(Command::Fmu(args)) => Ok(peerpipe_fmu::cli::run(args)),
        None => run_report(&cli.report).map(|()| ExitCode::SUCCESS),
    };
    // Ended by SIGINT, SIGTERM or SIGHUP: 128 + the signal, as a shell reports it, after
    // whatever was measured has been printed and written.
    if let Some(signal) = peerpipe_cli::interrupt::requested() {
        if let Err(e) = &result
            && !matches!(e, Error::Io(io) if io.kind() == io::ErrorKind::BrokenPipe)
        {
            eprintln!("peer: error: {e}");
        }
        return ExitCode::from(peerpipe_cli::interrupt::exit_code(signal));
    }
    match result {
        Ok(code) => code,
        Err(Error::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("peer: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run_report(args: &ReportArgs) -> peerpipe::Result<()> {
    let plan = PlanRequest {
        quick: args.quick,
        sizes: args.sizes.clone(),
        workloads: args.dtype.clone(),
        paths: args.path.clone(),
        handlers: args.handler.clone(),
        waits: args.wait.clone(),
        pins: args.pin.clone(),
        transports: args.transport.clone(),
        iterations: args.iters,
        duration: args.duration,
        warmup: args.warmup,
        rounds: args.rounds,
        generations: args.generations,
        seed: args.seed,
        spawn: args.spawn.clone(),
        spawn_floor: args.spawn_floor.clone(),
        server_delay: args.server_delay,
        options: Options {
            timeout: Some(args.timeout),
            max_frame_bytes: args.max_frame_bytes,
            pipe_capacity: Some(args.pipe_size),
            shm_capacity: args.shm_size,
            ..Options::default()
        },
        sync_operations: args.sync_ops,
        budget: args.budget,
        load: args.load,
    }
    .plan(std::env::current_exe()?)?;
    peerpipe_cli::interrupt::install()?;
    if args.sync_costs {
        let costs = measure::measure_sync_costs(&plan)?;
        sync::render(&costs, &mut io::stdout().lock())?;
        return Ok(());
    }
    let progress = measure::progress_bar(&plan);
    // Whatever was measured is written and printed, even when an error ended the run or a
    // group; the error comes last (exit 2).
    let measure::Outcome { report, error } = measure::run_partial(&plan, &progress)?;
    // With no row measured and none skipped (a server command that fails its handshake, say)
    // the floors alone answer nothing: the error is the whole story. A skipped row's reason
    // (the server's own words, say) is part of it.
    if report.rows.is_empty()
        && report.skipped.is_empty()
        && let Some(e) = error
    {
        return Err(e);
    }
    if let Some(path) = &args.json {
        export::write_json(&report, path)?;
    }
    if let Some(path) = &args.csv {
        export::write_csv(&report, path)?;
    }
    if let Some(path) = &args.plot {
        export::write_svg(&report, path)?;
    }
    let mut out = io::stdout().lock();
    render::summary(&report, &mut out)?;
    writeln!(out)?;
    render::table(&report, &mut out)?;
    render::skipped(&report, &mut out)?;
    if !report.sync_costs.is_empty() {
        writeln!(out)?;
        sync::render(&report.sync_costs, &mut out)?;
    }
    out.flush()?;
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The command line, `--role server` read as `serve`; on an error, what it printed and the
/// exit code. A flag that belongs to the server given to the report, or the other way round,
/// is refused naming the command it belongs to.
fn parse(args: Vec<OsString>) -> Result<Cli, ExitCode> {
    let cli = Cli::command();
    let mut subcommands: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
    subcommands.push("help");
    let args = match serve::role_as_subcommand(args, &subcommands) {
        Ok(args) => args,
        Err(reason) => {
            eprintln!("peer: error: {reason}");
            return Err(ExitCode::from(2));
        }
    };
    let err = match Cli::try_parse_from(&args) {
        Ok(cli) => return Ok(cli),
        Err(err) => err,
    };
    let flag = match (err.kind(), err.get(ContextKind::InvalidArg)) {
        (ErrorKind::UnknownArgument, Some(ContextValue::String(flag))) => flag.clone(),
        _ => err.exit(),
    };
    let flag = flag.split('=').next().unwrap_or_default();
    let first = args.get(1).and_then(|first| first.to_str());
    let (elsewhere, belongs_to) = match cli.find_subcommand("serve") {
        Some(serve) if first != Some("serve") => {
            (serve, "a server (`peer serve`, or `peer --role server`)")
        }
        _ => (&cli, "the report (`peer`), not to a server"),
    };
    let mut known = elsewhere.get_arguments().filter_map(|arg| arg.get_long());
    if matches!(first, Some("compare" | "soak" | "repeat"))
        || !known.any(|long| flag.strip_prefix("--") == Some(long))
    {
        err.exit()
    }
    eprintln!("peer: error: invalid {flag}: applies to {belongs_to}");
    Err(ExitCode::from(2))
}

fn run_compare(args: &CompareArgs) -> peerpipe::Result<ExitCode> {
    let a = export::read_json(&args.a)?;
    let b = export::read_json(&args.b)?;
    let mode = match args.mode {
        CompareMode::Paired => compare::Mode::Paired,
        CompareMode::Absolute => compare::Mode::Absolute,
    };
    let comparison =
        compare::compare(&a, &b, Thresholds { abs: args.abs, rel_pct: args.rel }, mode);
    compare::render(&comparison, &mut io::stdout().lock())?;
    if comparison.no_state_in_common() {
        // Not a verdict either way: the reports hold no figures of one state of the machine.
        return Ok(ExitCode::from(3));
    }
    Ok(match (comparison.differs(), comparison.states_differ) {
        (false, _) => ExitCode::SUCCESS,
        (true, None) => ExitCode::from(1),
        // A change of the machine's state moves ratios too: not a verdict on the code.
        (true, Some(_)) => ExitCode::from(3),
    })
}

fn run_repeat(args: &RepeatArgs) -> peerpipe::Result<ExitCode> {
    use peerpipe_cli::report::repeat;
    let paths = if args.from.is_empty() {
        let dir = args.dir.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!("peer-repeat-{}", std::process::id()))
        });
        let exe = std::env::current_exe()?;
        repeat::run_series(&exe, &args.report_args, args.runs.unwrap_or(0), &dir)?
    } else {
        args.from.clone()
    };
    let reports =
        paths.iter().map(|p| export::read_json(p)).collect::<peerpipe::Result<Vec<_>>>()?;
    let holds = repeat::render(&repeat::figures(&reports), &mut io::stdout().lock())?;
    Ok(if holds { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn run_soak(args: &SoakArgs) -> peerpipe::Result<ExitCode> {
    use peerpipe_cli::soak;
    let mut config = soak::Config::new(
        std::env::current_exe()?,
        args.seed.unwrap_or_else(soak::seed_from_clock),
    );
    config.duration = args.duration;
    config.peers = usize::from(args.peers);
    config.max_elements = args.max_elements;
    config.transport = args.transport;
    config.spawn = args.spawn.clone();
    config.options.timeout = Some(args.timeout);
    config.options.wait = args.wait;
    config.validate()?;
    peerpipe_cli::interrupt::install()?;
    soak::render_plan(&config, &mut io::stdout().lock())?;
    io::stdout().flush()?;
    let report = soak::run(&config)?;
    let rendered = report.render(&mut io::stdout().lock());
    let failures = report.failures();
    if failures.is_empty() {
        rendered?;
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("peer: error: soak failed: {}", failures.join("; "));
    Ok(ExitCode::from(1))
}
