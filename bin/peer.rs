//! `peer`: measure round trips of packed arrays between two processes, or serve them.
//!
//! Parsing and dispatch only; the work lives in the `peerpipe` library.

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use peerpipe::frame::DEFAULT_MAX_FRAME_BYTES;
use peerpipe::peer::{DataPath, Options, Peer};
use peerpipe::report::{self, Expectation, RunConfig, Workload};
use peerpipe::server::{self, ServeOptions};
use peerpipe::transport::{DEFAULT_PIPE_CAPACITY, Wait};
use peerpipe::units::parse_duration;
use peerpipe::{Error, handlers};

/// Exchange packed f64/f32 arrays with another process over pipes, and see where every
/// microsecond of a round trip goes.
#[derive(Debug, Parser)]
#[command(name = "peer", version)]
struct Cli {
    /// Which side to play: `client` spawns a server and measures round trips; `server` speaks
    /// wire format v1 on stdin/stdout.
    #[arg(long, value_enum, default_value_t = Role::Client)]
    role: Role,

    /// Server handler: echo (decode + re-encode), echo-raw (bytes untouched), lorenz96.
    /// As a client, the handler of the server it spawns.
    #[arg(long, default_value = "echo", value_parser = clap::builder::PossibleValuesParser::new(handlers::NAMES))]
    handler: String,

    /// Largest payload this side accepts, in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_FRAME_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    max_frame_bytes: u64,

    /// How to wait for the other side: block, spin, hybrid or hybrid:DUR (spin DUR, then block).
    #[arg(long, default_value = "hybrid", value_parser = parse_wait)]
    wait: Wait,

    /// Client: the server command, run with `sh -c` (default: this binary as
    /// `--role server --handler H`). E.g. "ssh host peer --role server".
    #[arg(long, value_name = "CMD")]
    spawn: Option<String>,

    /// Client: element counts per request.
    #[arg(long, value_delimiter = ',', default_value = "1,8,500,1000,65536")]
    sizes: Vec<usize>,

    /// Client: what to send: f64, f32, f64-as-f32 (f64 narrowed to f32 on the wire).
    #[arg(long, value_delimiter = ',', default_value = "f64", value_parser = parse_workload)]
    dtype: Vec<Workload>,

    /// Client: timed round trips per dtype and size.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    iters: u64,

    /// Client: untimed round trips before timing.
    #[arg(long, default_value_t = 100)]
    warmup: u64,

    /// Client: deadline for the handshake and for each reply, e.g. 250ms, 2s, 500us
    /// (default: `peerpipe::peer::DEFAULT_TIMEOUT`).
    #[arg(long, default_value = "10s", value_parser = parse_timeout)]
    timeout: Duration,

    /// Client: zero-copy (send from and receive into the slice) or codec (explicit LE codec).
    #[arg(long, default_value = "zero-copy", value_parser = parse_path)]
    path: DataPath,

    /// Client: pipe capacity to request, in bytes.
    #[arg(long, default_value_t = DEFAULT_PIPE_CAPACITY)]
    pipe_size: usize,
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

fn parse_timeout(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match try_main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("peer: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn try_main(cli: Cli) -> peerpipe::Result<()> {
    match cli.role {
        Role::Server => run_server(&cli),
        Role::Client => run_client(&cli),
    }
}

fn run_server(cli: &Cli) -> peerpipe::Result<()> {
    let mut handler = handlers::by_name(&cli.handler).ok_or_else(|| Error::InvalidArgument {
        what: "handler",
        reason: format!("unknown handler {:?}", cli.handler),
    })?;
    let mut transport = server::stdio_transport(cli.wait)?;
    let options = ServeOptions { max_frame_bytes: cli.max_frame_bytes, ..ServeOptions::default() };
    server::serve(&mut transport, &mut handler, &options)?;
    Ok(())
}

fn run_client(cli: &Cli) -> peerpipe::Result<()> {
    let options = Options {
        wait: cli.wait,
        timeout: Some(cli.timeout),
        max_frame_bytes: cli.max_frame_bytes,
        pipe_capacity: Some(cli.pipe_size),
        path: cli.path,
    };
    let mut peer = match &cli.spawn {
        Some(command_line) => Peer::spawn_shell(command_line, options)?,
        None => Peer::spawn_server(std::env::current_exe()?, &cli.handler, options)?,
    };
    let hello = peer.server_hello().clone();
    let config = RunConfig {
        sizes: cli.sizes.clone(),
        workloads: cli.dtype.clone(),
        iterations: cli.iters,
        warmup: cli.warmup,
    };
    let rows = report::run(&mut peer, &config, Expectation::for_handler(hello.handler.as_deref()))?;
    let capacity = peer.pipe_capacity();
    peer.close()?;
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "server: {} handler={} max_frame_bytes={}; pipe capacity {}; wait {}; path {}",
        hello.implementation.as_deref().unwrap_or("(unnamed)"),
        hello.handler.as_deref().unwrap_or("(none)"),
        hello.max_frame_bytes,
        capacity.map_or("unknown".to_owned(), |bytes| format!("{bytes} bytes")),
        cli.wait,
        cli.path,
    )?;
    report::render_summary(&rows, &mut out)?;
    Ok(())
}
