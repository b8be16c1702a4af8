//! A server process's stdin and stdout taken over as its transport: moved onto private
//! descriptors, for any transport kind, as [`StdioOptions`] say.

use std::net::SocketAddr;
use std::time::Duration;

use super::options::{DEFAULT_FRAME_TIMEOUT, ServeOptions};
use crate::error::{Error, Result};
use crate::transport::{Deadline, ShmLink, Transport, TransportKind, tcp};

/// Moves the protocol off stdin and stdout onto private descriptors and returns a pipe
/// transport over them, then points fd 1 at stderr and fd 0 at `/dev/null`, so a stray print
/// from a handler or a library lands in the log instead of corrupting the stream.
///
/// Call it once, at the start of a server process whose stdin and stdout are the client's
/// pipes. The private descriptors are `O_CLOEXEC`.
///
/// # Errors
/// [`Error::Io`] or [`Error::Sys`] when a descriptor cannot be duplicated or `/dev/null`
/// cannot be opened.
pub fn stdio_transport(wait: crate::transport::Wait) -> Result<Transport> {
    stdio_transport_of(TransportKind::Pipe, wait)
}

/// [`stdio_transport`] for any transport kind. For a shared-memory kind the stdin is the
/// region's memfd, handed over by a client that spawned this process with that transport
/// (`Peer::spawn` with `Options::transport`); it is mapped and closed. The stdout pipe is
/// kept (privately) only to tell the client's death from a slow client.
///
/// # Errors
/// As [`stdio_transport`]; [`Error::BadRegion`] when stdin is not a region of `kind` (a
/// pipe, say, because the client did not use shared memory).
pub fn stdio_transport_of(kind: TransportKind, wait: crate::transport::Wait) -> Result<Transport> {
    use std::io;
    use std::os::fd::AsFd;
    // try_clone_to_owned duplicates with F_DUPFD_CLOEXEC.
    let rx = io::stdin().as_fd().try_clone_to_owned()?;
    let tx = io::stdout().as_fd().try_clone_to_owned()?;
    nix::unistd::dup2_stdout(io::stderr())?;
    nix::unistd::dup2_stdin(std::fs::File::open("/dev/null")?)?;
    let mut transport = match kind {
        TransportKind::Pipe => Transport::pipe(rx, tx, wait)?,
        TransportKind::Tcp => {
            let listen = SocketAddr::new(tcp::default_listen_ip()?, 0);
            let deadline = Deadline::after(Some(DEFAULT_FRAME_TIMEOUT));
            Transport::new(tcp::listen_announce_accept(listen, rx, tx, deadline)?, wait)
        }
        shm => Transport::new(ShmLink::attach(shm, rx, tx)?, wait),
    };
    watch_parent(&mut transport);
    Ok(transport)
}

/// A server started on stdio is usually its client's child: [`Transport::watch_peer`] looks
/// where the parent runs, and moves off its core when the two hand it to each other. Under ssh
/// the parent is the ssh server, which forwards the client's bytes: a spin on its CPU, or with
/// it confined to one, would delay them too.
fn watch_parent(transport: &mut Transport) {
    let parent = std::os::unix::process::parent_id();
    transport.watch_peer(parent);
}

/// The server's side of `--transport tcp`: takes stdin and stdout as the control channel
/// (as [`stdio_transport`] takes them), listens on `listen` (default:
/// [`tcp::default_listen_ip`] — under Slurm the local address that routes to the launch
/// node, else the server-side address of `$SSH_CONNECTION`, else 127.0.0.1; port 0 picks a
/// free one), announces the
/// address and a fresh token on the channel, and accepts the one connection that presents
/// the token before `timeout` (docs/PROTOCOL.md §14). Other connections are refused and
/// reported on stderr; the listening socket is closed once the client is in, or at the
/// deadline.
///
/// # Errors
/// Those of [`stdio_transport`] and [`tcp::listen_announce_accept`].
pub fn stdio_tcp_transport(
    wait: crate::transport::Wait,
    listen: Option<SocketAddr>,
    timeout: Option<Duration>,
) -> Result<Transport> {
    use std::io;
    use std::os::fd::AsFd;
    let rx = io::stdin().as_fd().try_clone_to_owned()?;
    let tx = io::stdout().as_fd().try_clone_to_owned()?;
    nix::unistd::dup2_stdout(io::stderr())?;
    nix::unistd::dup2_stdin(std::fs::File::open("/dev/null")?)?;
    let listen = match listen {
        Some(listen) => listen,
        None => SocketAddr::new(tcp::default_listen_ip()?, 0),
    };
    let link = tcp::listen_announce_accept(listen, rx, tx, Deadline::after(timeout))?;
    let mut transport = Transport::new(link, wait);
    watch_parent(&mut transport);
    Ok(transport)
}

/// How a server process serves its stdin and stdout: the settings of
/// [`serve_stdio`](super::serve_stdio) and [`stdio_transport_with`], with the one set of
/// defaults that `peer --role server`, the C ABI's `pp_serve_stdio_*` and Python's
/// `peerpipe.serve` share.
///
/// The default serves the transport the client chose, waits with [`Wait::Auto`](crate::Wait),
/// accepts requests up to 64 MiB and gives a frame 10 s ([`ServeOptions::default`]).
///
/// ```
/// use peerpipe::server::{DEFAULT_FRAME_TIMEOUT, StdioOptions};
/// let defaults = StdioOptions::default();
/// assert_eq!(defaults.transport, None); // the client's choice
/// assert_eq!(defaults.wait, peerpipe::Wait::default());
/// assert_eq!(defaults.serve.max_frame_bytes, 64 << 20);
/// assert_eq!(defaults.serve.frame_timeout, Some(DEFAULT_FRAME_TIMEOUT));
/// ```
#[derive(Clone, Debug, Default)]
pub struct StdioOptions {
    /// The transport; `None` (the default): the one the client chose — the kind of the shared
    /// region handed over as stdin, else a pipe ([`TransportKind::of_stdin`]).
    pub transport: Option<TransportKind>,
    /// How this side waits.
    pub wait: crate::transport::Wait,
    /// tcp only: the address to listen on; `None`: [`tcp::default_listen_ip`] (under Slurm
    /// the local address that routes to the launch node, else the server side of
    /// `$SSH_CONNECTION`, else 127.0.0.1), on a free port.
    pub listen: Option<SocketAddr>,
    /// tcp only: how long the client has to connect; `None`: the frame timeout, or
    /// [`DEFAULT_FRAME_TIMEOUT`] when that is `None` (nothing listens without a deadline).
    pub connect_timeout: Option<Duration>,
    /// The conversation's settings.
    pub serve: ServeOptions,
}

impl StdioOptions {
    /// The transport these options serve: the chosen one, or the one the client chose.
    /// Reads stdin's kind, so ask before stdin is taken.
    pub fn transport_kind(&self) -> TransportKind {
        self.transport.unwrap_or_else(|| TransportKind::of_stdin().unwrap_or(TransportKind::Pipe))
    }
}

/// Takes this process's stdin and stdout as the transport `options` say (see
/// [`stdio_transport_of`] and [`stdio_tcp_transport`]) and returns its kind with it. Call it
/// once, at the start of a server process spawned by a peerpipe client.
///
/// # Errors
/// [`Error::InvalidArgument`] when a listen address is given for another transport than tcp,
/// or when this process is a Slurm task (whose stdio srun relays) and the transport is not
/// tcp ([`crate::launcher::refuse_relayed_stdio`]), both checked before stdio is touched;
/// otherwise those of [`stdio_transport_of`] and
/// [`stdio_tcp_transport`].
pub fn stdio_transport_with(options: &StdioOptions) -> Result<(TransportKind, Transport)> {
    let kind = options.transport_kind();
    if options.listen.is_some() && kind != TransportKind::Tcp {
        return Err(Error::InvalidArgument {
            what: "listen address",
            reason: format!("only a tcp server listens, and this one serves {kind}"),
        });
    }
    crate::launcher::refuse_relayed_stdio(kind)?;
    let transport = match kind {
        TransportKind::Tcp => {
            let timeout = options
                .connect_timeout
                .or(options.serve.frame_timeout)
                .unwrap_or(DEFAULT_FRAME_TIMEOUT);
            stdio_tcp_transport(options.wait, options.listen, Some(timeout))?
        }
        _ => stdio_transport_of(kind, options.wait)?,
    };
    Ok((kind, transport))
}
