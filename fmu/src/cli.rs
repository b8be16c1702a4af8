//! `peer fmu`: the arguments of `peer fmu wrap` and `peer fmu serve`, and running them.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use peerpipe::server::StdioOptions;
use peerpipe::transport::{TransportKind, Wait, tcp};

use crate::Error;
use crate::config::{ServerConfig, parse_timeout};

/// FMUs out of process: a proxy FMU whose every instance runs the original in a server of
/// its own, locally or on another node (FMI 2.0 and 3.0 co-simulation).
#[derive(Debug, Args)]
pub struct FmuArgs {
    #[command(subcommand)]
    command: FmuCommand,
}

#[derive(Debug, Subcommand)]
enum FmuCommand {
    /// Write a proxy FMU: the same model description (GUID, variables, capabilities; the
    /// model-exchange interface dropped, and any instantiate-once-per-process flag, since each
    /// instance runs in a process of its own), a binary from peerpipe, and the original FMU
    /// inside. At fmi2Instantiate each instance starts `peer fmu serve` on the original; sets
    /// wait for the next call and the step's reply carries the outputs, so a step with its
    /// sets and gets is one round trip.
    Wrap(WrapArgs),
    /// Serve an FMU's functions on stdin and stdout (started by a proxy FMU's instances).
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
struct WrapArgs {
    /// The original FMU (FMI 2.0 or 3.0, co-simulation).
    model: PathBuf,
    /// The proxy FMU to write.
    proxy: PathBuf,
    /// A command line in front of the server's (`ssh host`, `srun -w node -N1 -n1`), run with
    /// `sh -c` [default: the server runs locally]. Through srun, use --transport tcp.
    #[arg(long, value_name = "COMMAND")]
    server: Option<String>,
    /// The transport between proxy and server: pipe or tcp (shared memory too, locally).
    #[arg(long, default_value = "pipe", value_parser = parse_transport)]
    transport: TransportKind,
    /// How long an FMI call waits for its server before it fails with fmi2Error (at run
    /// time, $PEERPIPE_FMU_TIMEOUT overrides it).
    #[arg(long, default_value = "30s", value_parser = parse_timeout)]
    timeout: Duration,
    /// The `peer` program the server runs [default: locally, $PEERPIPE_PEER where the proxy
    /// runs, else this `peer` while it exists, else `peer` on PATH; with --server, `peer` on
    /// the PATH where the server runs].
    #[arg(long, value_name = "PATH")]
    peer: Option<String>,
    /// The original FMU's path where the server runs [default: the copy inside the proxy,
    /// which a remote server sees only on a shared file system].
    #[arg(long, value_name = "PATH")]
    remote_fmu: Option<String>,
    /// The proxy library to use as the binary [default: $PEERPIPE_FMU_PROXY, else
    /// libpeerpipe_fmu_proxy.so beside this program].
    #[arg(long, value_name = "PATH")]
    proxy_library: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The FMU to serve.
    model: PathBuf,
    /// The transport [default: what stdin is: the region a shared-memory client hands over,
    /// else a pipe]; tcp listens and announces its address on stdout.
    #[arg(long, value_parser = parse_transport)]
    transport: Option<TransportKind>,
    /// With --transport tcp: where to listen (as `peer --listen`).
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// How the server waits for requests: auto, auto:stay, block, spin, hybrid or hybrid:DUR.
    #[arg(long, default_value = "auto", value_parser = parse_wait)]
    wait: Wait,
}

fn parse_transport(text: &str) -> Result<TransportKind, String> {
    text.parse().map_err(|e: peerpipe::Error| e.to_string())
}

fn parse_wait(text: &str) -> Result<Wait, String> {
    text.parse().map_err(|e: peerpipe::Error| e.to_string())
}

/// Runs `peer fmu …`: exit 0 on success, 2 with the error on stderr.
pub fn run(args: FmuArgs) -> ExitCode {
    let result = match args.command {
        FmuCommand::Wrap(args) => wrap(args),
        FmuCommand::Serve(args) => serve(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("peer fmu: {e}");
            ExitCode::from(2)
        }
    }
}

fn wrap(args: WrapArgs) -> Result<(), Error> {
    let library = crate::wrap::find_proxy_library(args.proxy_library.as_deref())?;
    // A local server runs the `peer` that made the proxy, unless told otherwise.
    let this_peer = || std::env::current_exe().ok().map(|p| p.display().to_string());
    let peer = match (&args.peer, &args.server) {
        (Some(peer), _) => Some(peer.clone()),
        (None, None) => this_peer(),
        (None, Some(_)) => None,
    };
    let config = ServerConfig {
        peer,
        launcher: args.server,
        transport: args.transport,
        timeout: args.timeout,
        remote_fmu: args.remote_fmu,
    };
    crate::wrap::wrap(&args.model, &args.proxy, &library, &config)
}

fn serve(args: ServeArgs) -> Result<(), Error> {
    let listen = args
        .listen
        .as_deref()
        .map(tcp::parse_listen)
        .transpose()
        .map_err(|e| Error::new(e.to_string()))?;
    let options =
        StdioOptions { transport: args.transport, wait: args.wait, listen, ..Default::default() };
    crate::serve::serve(&args.model, &options)
}
