//! `peer serve` (also spelled `peer --role server`): one server speaking wire format v1.

use std::ffi::OsString;
use std::time::Duration;

use clap::Args;
use peerpipe::frame::DEFAULT_MAX_FRAME_BYTES;
use peerpipe::server::{self, ServeOptions};
use peerpipe::transport::{TransportKind, Wait, tcp};
use peerpipe::{Error, handlers};

use super::{parse_timeout, parse_transport, parse_wait};

/// The server's flags, whichever way it was spelled.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The handler: echo (decode + re-encode), echo-raw (bytes untouched), lorenz96 (the
    /// Lorenz-96 derivative of an f64 state of at least 4 elements) or lorenz96-f32 (the same
    /// for f32, computed in f64).
    #[arg(long, default_value = "echo", value_parser = clap::builder::PossibleValuesParser::new(handlers::NAMES))]
    handler: String,

    /// Largest payload this side accepts, in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_FRAME_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    max_frame_bytes: u64,

    /// Wait strategy: auto (spin while the client answers within the spin, sleep once
    /// spinning stops paying), block (sleep in the kernel: least CPU), spin (never sleep:
    /// burns a core), hybrid or hybrid:DUR (spin DUR, 50 µs by default, then block)
    /// [default: auto].
    #[arg(long, value_parser = parse_wait)]
    wait: Option<Wait>,

    /// Transport: pipe, shm-sem, shm-ring or tcp [default: what its stdin is: the shared
    /// region a shm-sem or shm-ring client hands over, else a pipe]: only tcp needs saying.
    /// With tcp the server listens, announces a port and a one-time token on stdout, and the
    /// frames go over TCP. A shared-memory server must be spawned by its client (it takes the
    /// region as its stdin), so it cannot run over ssh.
    #[arg(long, value_parser = parse_transport)]
    transport: Option<TransportKind>,

    /// With --transport tcp: where to listen, IP, IP:PORT, INTERFACE or INTERFACE:PORT (an
    /// IPv6 address with a port in brackets; an interface's IPv4 address, else its first IPv6
    /// address that is not link-local) [default: under Slurm, the local address that routes to
    /// $SLURM_LAUNCH_NODE_IPADDR; else the server-side address of $SSH_CONNECTION; else
    /// 127.0.0.1; a free port]. The server announces the address and a one-time token on
    /// stdout, accepts the one connection that presents the token within --timeout, and
    /// closes the listening socket.
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,

    /// With --transport tcp: how long the listening socket waits for the client.
    #[arg(long, default_value = "10s", value_parser = parse_timeout)]
    timeout: Duration,

    /// Act as the raw-bytes baseline instead: echo messages of exactly BYTES bytes with plain
    /// read/write, no framing.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    raw_echo: Option<u64>,

    /// Busy-wait DUR before answering each request, counted in server time: a known
    /// difference for checking the report's sensitivity.
    #[arg(long, value_name = "DUR", value_parser = parse_timeout)]
    server_delay: Option<Duration>,

    /// Sleep DUR before answering each request, holding no CPU: a server whose work runs
    /// elsewhere (another core, an accelerator), for measuring many servers called together on
    /// a machine with fewer cores than servers. Unlike --server-delay it is not exact: the
    /// sleep ends after DUR plus the kernel's timer slack and a wake-up.
    #[arg(long, value_name = "DUR", value_parser = parse_timeout)]
    server_sleep: Option<Duration>,

    /// With --handler lorenz96: the forcing constant F [default: 8.0], so that the members of
    /// an ensemble can each have their own.
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    forcing: Option<f64>,
}

/// `peer --role server ARGS` as `peer serve ARGS`, and `peer --role client ARGS` as `peer
/// ARGS`: `--role` (or `--role=VALUE`) anywhere in the report's arguments is read here, so
/// that both spellings of a server parse into the one [`ServeArgs`]. Arguments that start with
/// one of `subcommands` are left as they are.
pub fn role_as_subcommand(
    mut args: Vec<OsString>,
    subcommands: &[&str],
) -> Result<Vec<OsString>, String> {
    if args.get(1).is_some_and(|first| subcommands.iter().any(|name| first == *name)) {
        return Ok(args);
    }
    let Some(at) = args.iter().skip(1).position(|arg| {
        arg == "--role" || arg.to_str().is_some_and(|arg| arg.starts_with("--role="))
    }) else {
        return Ok(args);
    };
    let at = at + 1;
    let flag = args.remove(at);
    let value = match flag.to_str().and_then(|flag| flag.strip_prefix("--role=")) {
        Some(value) => value.to_owned(),
        None if at < args.len() => args.remove(at).to_string_lossy().into_owned(),
        None => return Err("--role needs a value: client or server".to_owned()),
    };
    match value.as_str() {
        "server" => args.insert(1, "serve".into()),
        "client" => {}
        other => return Err(format!("invalid --role: expected client or server, found {other:?}")),
    }
    Ok(args)
}

pub fn run(args: &ServeArgs) -> peerpipe::Result<()> {
    let stdio = server::StdioOptions {
        // Untold, serve what the client chose (StdioOptions::transport).
        transport: args.transport,
        wait: args.wait.unwrap_or_default(),
        listen: args.listen.as_deref().map(tcp::parse_listen).transpose()?,
        connect_timeout: Some(args.timeout),
        serve: ServeOptions {
            max_frame_bytes: args.max_frame_bytes,
            delay: args.server_delay.unwrap_or_default(),
            ..ServeOptions::default()
        },
    };
    // The handler first: a bad --forcing fails before stdio is taken.
    let handler = match args.raw_echo {
        Some(_) => None,
        None => Some(handler(args)?),
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

/// The handler `--handler` names, with `--forcing` for lorenz96.
fn handler(args: &ServeArgs) -> peerpipe::Result<Box<dyn server::Handler + Send>> {
    let name = args.handler.as_str();
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
