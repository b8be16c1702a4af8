//! `peer`: measure round trips of packed arrays between two processes, or serve them.
//!
//! Parsing and dispatch only; the work lives in the `peerpipe` library.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use peerpipe::clock;
use peerpipe::frame::DEFAULT_MAX_FRAME_BYTES;
use peerpipe::peer::{DataPath, Options};
use peerpipe::server::{self, ServeOptions};
use peerpipe::transport::{DEFAULT_PIPE_CAPACITY, DEFAULT_SHM_CAPACITY, TransportKind, Wait, tcp};
use peerpipe::units::parse_duration;
use peerpipe::{Error, handlers};
use peerpipe_cli::report::compare::{self, Thresholds};
use peerpipe_cli::report::measure;
use peerpipe_cli::report::plan::PlanRequest;
use peerpipe_cli::report::{Placement, Workload, export, render, sync};

/// Exchange packed f64/f32 arrays with another process over pipes, and see where every
/// microsecond of a round trip goes.
///
/// With no arguments, `peer` runs the round-trip latency report: it spawns servers, measures
/// every combination of dtype, size, path, handler and wait strategy against a raw-bytes
/// floor, and prints first the answer — per size, what a call costs beyond the server's own
/// time (p50, p99, its ratio to the floor, the --budget met or missed at p50 and at p99) —
/// then the table and the verdict.
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
#[command(name = "peer", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compare two `--json` reports. Exit 0 when nothing differs, 1 when something does, 2 on
    /// error, 3 when A and B were measured in different states of the machine: they share no
    /// state (or no row ran in one they share), so nothing can be compared, or — when rows are
    /// not judged per state (--mode absolute, or a report without per-round states) —
    /// something differs while moving 4 KiB between the CPUs took more than 1.5x longer in one
    /// run than in the other for most of it (see the note it prints): the difference may be
    /// the machine's, not the code's; measure both again.
    ///
    /// By default (--mode paired) each row is judged against its own floor from the same run,
    /// so two runs taken while the machine ran at different speeds compare correctly. When
    /// both reports tagged their rounds with the machine's state, each row is judged in a
    /// state both ran in, on the time it adds to its floor there: it differs when that added
    /// time moved by more than --abs and by more than --rel percent of A's round trip in
    /// that state, and the 95 % intervals of the two added times do not overlap (the ratios
    /// are shown as context). Reports without states are judged on the ratio: a row differs
    /// when the 95 % intervals of its two ratios do not overlap, the ratio moved by more than
    /// --rel percent and the change, converted to time at the floors' mean p50, exceeds
    /// --abs. --mode absolute compares p50 round trips instead, allowing for the spread of
    /// each row's per-round p50s.
    Compare(CompareArgs),

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
struct RunArgs {
    /// Which side to play: `client` measures round trips against servers it spawns; `server`
    /// speaks wire format v1 on stdin/stdout.
    #[arg(long, value_enum, default_value_t = Role::Client)]
    role: Role,

    /// Server handler(s): echo (decode + re-encode), echo-raw (bytes untouched), lorenz96 (the
    /// Lorenz-96 derivative of an f64 state of at least 4 elements) or lorenz96-f32 (the same
    /// for f32, computed in f64). As a client, a comma-separated list of the handlers to
    /// measure [default: echo-raw,echo]; rows a handler cannot serve are skipped with a note.
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(handlers::NAMES))]
    handler: Vec<String>,

    /// Largest payload this side accepts, in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_FRAME_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    max_frame_bytes: u64,

    /// Wait strategy: auto (the default: spin while the peer answers within the spin — 50 µs,
    /// up to 500 µs when the peer's wake-ups cost that much — yield the CPU once and sleep once
    /// spinning stops paying — the peer shares this core, or other work holds the cores — and probe now and then to
    /// spin again; a side that keeps handing its core to the other moves to an idle CPU), block (sleep in the kernel: least CPU), spin (never
    /// sleep: burns a core per side), hybrid or hybrid:DUR (spin DUR, 50 µs by default, then
    /// block). As a client, a comma-separated list [default: block, spin and auto up to 65536
    /// elements, auto above].
    #[arg(long, value_delimiter = ',', value_parser = parse_wait)]
    wait: Vec<Wait>,

    /// Transport: pipe, shm-sem (shared slots + semaphores), shm-ring (shared rings + futex
    /// wake-ups) or tcp (the server listens, announces a port and a token on stdout, and the
    /// frames go over TCP; with --spawn "ssh host peer --role server", ssh only starts and
    /// authenticates; with --spawn "srun … peer --role server", the only transport srun can
    /// start: it relays stdio, so pipes and shared memory through it are refused). As a
    /// client, a comma-separated list to measure side by side [default: pipe]. As a server [default: what its stdin is: the shared region a shm-sem or
    /// shm-ring client hands over, else a pipe]: only tcp needs saying. A shared-memory server
    /// must be spawned by its client (it takes the region as its stdin), so it cannot run
    /// over ssh.
    #[arg(long, value_delimiter = ',', value_parser = parse_transport)]
    transport: Vec<TransportKind>,

    /// Server with --transport tcp: where to listen, IP, IP:PORT, INTERFACE or INTERFACE:PORT
    /// (an IPv6 address with a port in brackets; an interface's IPv4 address, else its first
    /// IPv6 address that is not link-local) [default: under Slurm, the local address that routes to
    /// $SLURM_LAUNCH_NODE_IPADDR; else the server-side address of $SSH_CONNECTION; else
    /// 127.0.0.1; a free port]. The server announces the address and a one-time token on
    /// stdout, accepts the one connection that presents the token within --timeout, and
    /// closes the listening socket.
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,

    /// Client: bytes per direction of the shared-memory transports.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_SHM_CAPACITY)]
    shm_size: usize,

    /// Client: measure and print only the synchronisation-cost table (ns per operation of the
    /// primitives the transports use). The table is also part of every report that measures a
    /// shared-memory transport.
    #[arg(long)]
    sync_costs: bool,

    /// Client: operations per entry of the synchronisation-cost table.
    #[arg(long, value_name = "N", default_value_t = sync::DEFAULT_OPERATIONS, value_parser = clap::value_parser!(u64).range(1..))]
    sync_ops: u64,

    /// Server: act as the raw-bytes baseline instead: echo messages of exactly BYTES bytes with
    /// plain read/write, no framing.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    raw_echo: Option<u64>,

    /// Client: the server command, run with `sh -c`, e.g. "ssh host peer --role server"
    /// [default: this binary as --role server --handler H]. When CMD starts `peer --role
    /// server` (it contains "--role server"), the raw floors run through it too, as `CMD
    /// --raw-echo BYTES`, so each ratio is against what the route itself costs; otherwise they
    /// run locally (see --spawn-floor). For a transport other than pipe, `--transport KIND`
    /// is appended to such a CMD. The server's CPU time is not measured (`-`): the spawned process
    /// may be an ssh client.
    #[arg(long, value_name = "CMD")]
    spawn: Option<String>,

    /// Client: the command the raw floors run through, with `--raw-echo BYTES` appended: a
    /// command that starts `peer --role server`, e.g. "ssh host peer --role server" beside
    /// --spawn "ssh host python3 model.py" [default: --spawn's CMD when it contains "--role
    /// server", else this binary locally].
    #[arg(long, value_name = "CMD")]
    spawn_floor: Option<String>,

    /// Busy-wait DUR before answering each request, counted in server time: a known
    /// difference for checking the report's sensitivity on your machine (run once without,
    /// once with, then `peer compare`). As a client, passed to every handler server it spawns
    /// (not to the raw floors); with --spawn, give it to the server command instead.
    #[arg(long, value_name = "DUR", value_parser = parse_timeout)]
    server_delay: Option<Duration>,

    /// Server: sleep DUR before answering each request, holding no CPU: a server whose work
    /// runs elsewhere (another core, an accelerator), for measuring many servers called
    /// together on a machine with fewer cores than servers. Unlike --server-delay it is not
    /// exact: the sleep ends after DUR plus the kernel's timer slack and a wake-up.
    #[arg(long, value_name = "DUR", value_parser = parse_timeout)]
    server_sleep: Option<Duration>,

    /// Server with --handler lorenz96: the forcing constant F [default: 8.0], so that the
    /// members of an ensemble can each have their own.
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    forcing: Option<f64>,

    /// Client: element counts per request [default: 1,8,500,1000,65536,1048576].
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    sizes: Vec<usize>,

    /// Client: what to send: f64, f32, f64-as-f32 (f64 narrowed to f32 on the wire; always
    /// through the codec) [default: all three].
    #[arg(long, value_delimiter = ',', value_parser = parse_workload)]
    dtype: Vec<Workload>,

    /// Client: zero-copy (send from and receive into the slice) and/or codec (explicit LE codec)
    /// [default: both].
    #[arg(long, value_delimiter = ',', value_parser = parse_path)]
    path: Vec<DataPath>,

    /// Client: placement, a comma-separated list: free (the scheduler decides), same (both
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

    /// Client: timed round trips per row, over all its rounds (instead of --duration).
    #[arg(long, conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..))]
    iters: Option<u64>,

    /// Client: how long each row is timed, over all its rounds [default: 150ms; 30ms with
    /// --quick].
    #[arg(long, value_parser = parse_nonzero_duration)]
    duration: Option<Duration>,

    /// Client: warm-up time per row before its first round (at least 3 round trips).
    #[arg(long, default_value = "20ms", value_parser = parse_timeout)]
    warmup: Duration,

    /// Client: rounds per group. Each round gives every floor and row of the same bytes,
    /// transport and placement — at every wait measured there — one burst (--duration / N) in
    /// a random order; a row's ratio is the median of its per-round ratios to the floor at its
    /// own wait, with a 95 % interval (needs 6 rounds or more) [default: 40; 10 with --quick].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(measure::MAX_ROUNDS)))]
    rounds: Option<u32>,

    /// Client: sets of fresh server processes per group: the rounds are split between N
    /// generations, each with newly spawned floor and handler servers and newly allocated
    /// buffers, so that what differs from one process to the next (a few percent here) is
    /// sampled within a run and shows in its interval instead of between runs; the 95% CI is
    /// computed by generation too [default: 10; 5 with --quick; at most one per round].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(measure::MAX_ROUNDS)))]
    generations: Option<u32>,

    /// Client: seed of the order of bursts within each round [default: from the clock]; it is
    /// recorded in the JSON as config.order_seed.
    #[arg(long)]
    seed: Option<u64>,

    /// Client: a quick run: f64 only, sizes 1,500,65536,1048576, the auto wait only, 30ms
    /// per row in 10 rounds: the answer and a short table in a few seconds.
    #[arg(long)]
    quick: bool,

    /// Client: run N busy threads beside the client and servers for the whole run, allowed on
    /// every CPU this process may use, to see what each wait costs on a machine whose cores are
    /// not idle (a simulation using its cores, a laptop, a shared node). Recorded in the JSON
    /// as config.load.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=i64::from(peerpipe_cli::report::load::MAX_LOAD)))]
    load: u32,

    /// Client: the budget per call, judged on its overhead (round trip - server time) at p50
    /// and at p99, by the answer and the verdict alike; 0 sets none.
    #[arg(long, default_value = "150us", value_parser = parse_timeout)]
    budget: Duration,

    /// Client: deadline for the handshake and for each reply, e.g. 250ms, 2s, 500us. Server
    /// with --transport tcp: how long the listening socket waits for the client.
    #[arg(long, default_value = "10s", value_parser = parse_timeout)]
    timeout: Duration,

    /// Client: pipe capacity to request, in bytes.
    #[arg(long, default_value_t = DEFAULT_PIPE_CAPACITY)]
    pipe_size: usize,

    /// Client: also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Client: also write the rows as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,

    /// Client: also plot p50 round trip against bytes (log-log) as SVG to FILE.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Role {
    Client,
    Server,
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
    let cli = Cli::parse();
    if let Ok(value) = std::env::var(clock::CLOCK_ENV)
        && let Err(reason) = clock::check_env_value(&value)
    {
        eprintln!("peer: error: {reason}");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        Some(Command::Compare(args)) => run_compare(&args),
        Some(Command::Soak(args)) => run_soak(&args),
        Some(Command::Fmu(args)) => Ok(peerpipe_fmu::cli::run(args)),
        None => match cli.run.role {
            Role::Server => run_server(&cli.run).map(|()| ExitCode::SUCCESS),
            Role::Client => run_report(&cli.run).map(|()| ExitCode::SUCCESS),
        },
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

fn run_server(args: &RunArgs) -> peerpipe::Result<()> {
    let wait = match args.wait.as_slice() {
        [] => Wait::default(),
        [wait] => *wait,
        more => return Err(one_value_error("--wait", more.len())),
    };
    let transport = match args.transport.as_slice() {
        // Untold, serve what the client chose (StdioOptions::transport).
        [] => None,
        [kind] => Some(*kind),
        more => return Err(one_value_error("--transport", more.len())),
    };
    let stdio = server::StdioOptions {
        transport,
        wait,
        listen: args.listen.as_deref().map(tcp::parse_listen).transpose()?,
        connect_timeout: Some(args.timeout),
        serve: ServeOptions {
            max_frame_bytes: args.max_frame_bytes,
            delay: args.server_delay.unwrap_or_default(),
            ..ServeOptions::default()
        },
    };
    // The handler first: a bad --handler or --forcing fails before stdio is taken.
    let handler = match args.raw_echo {
        Some(_) => None,
        None => Some(server_handler(args)?),
    };
    let (_, mut transport) = server::stdio_transport_with(&stdio)?;
    let Some(mut handler) = handler else {
        peerpipe_cli::baseline::serve_raw_echo(
            &mut transport,
            args.raw_echo.unwrap_or_default() as usize,
        )?;
        return Ok(());
    };
    match args.server_sleep {
        Some(sleep) => {
            let mut sleeping = handlers::Sleeping::new(handler, sleep);
            server::serve(&mut transport, &mut sleeping, &stdio.serve)?
        }
        None => server::serve(&mut transport, &mut handler, &stdio.serve)?,
    };
    Ok(())
}

/// The handler `--handler` names (echo by default), with `--forcing` for lorenz96.
fn server_handler(args: &RunArgs) -> peerpipe::Result<Box<dyn server::Handler + Send>> {
    let name = match args.handler.as_slice() {
        [] => "echo",
        [name] => name.as_str(),
        more => return Err(one_value_error("--handler", more.len())),
    };
    match (args.forcing, name) {
        (None, _) => handlers::by_name(name).ok_or_else(|| Error::InvalidArgument {
            what: "handler",
            reason: format!("unknown handler {name:?}"),
        }),
        (Some(forcing), "lorenz96") if forcing.is_finite() => {
            Ok(Box::new(handlers::Lorenz96::with_forcing(forcing)))
        }
        (Some(forcing), "lorenz96") => Err(Error::InvalidArgument {
            what: "--forcing",
            reason: format!("must be a finite number, found {forcing}"),
        }),
        (Some(_), other) => Err(Error::InvalidArgument {
            what: "--forcing",
            reason: format!("applies to --handler lorenz96, not {other:?}"),
        }),
    }
}

fn one_value_error(flag: &'static str, found: usize) -> Error {
    Error::InvalidArgument {
        what: flag,
        reason: format!("a server takes one value, found {found}"),
    }
}

fn run_report(args: &RunArgs) -> peerpipe::Result<()> {
    if args.server_sleep.is_some() {
        return Err(Error::InvalidArgument {
            what: "--server-sleep",
            reason: "applies to a server (--role server); the report's own servers busy-wait \
                     with --server-delay"
                .into(),
        });
    }
    if args.forcing.is_some() {
        return Err(Error::InvalidArgument {
            what: "--forcing",
            reason: "applies to a server (--role server --handler lorenz96)".into(),
        });
    }
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
    render::answer(&report, &mut out)?;
    writeln!(out)?;
    render::table(&report, &mut out)?;
    render::skipped(&report, &mut out)?;
    writeln!(out)?;
    render::verdict(&report, &mut out)?;
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
