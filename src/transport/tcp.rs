//! The tcp link: frames over one TCP connection, set up through a control channel.
//!
//! A server started with `--transport tcp` (typically through `ssh host peer --role server
//! --transport tcp`) does not speak frames on its stdin and stdout. It listens on an
//! ephemeral port, writes one line announcing the address and a fresh 128-bit token on
//! stdout — the control channel, which `ssh` carries back to the client — accepts the one
//! connection that presents the token, closes the listening socket, and then exchanges
//! frames over TCP. The control channel stays open as the liveness channel: each side sees
//! the other's end of it close when the other side (or `ssh` between them) is gone. The
//! handshake is specified in docs/PROTOCOL.md §14.
//!
//! - [`listen_announce_accept`] is the server's half; [`connect_announced`] the client's.
//! - `listen` (re-exported here) chooses the address the server listens on and announces:
//!   `--listen` (an address or an interface), else the local address that routes to Slurm's
//!   launch node, else the server side of ssh's connection, else loopback
//!   ([`default_listen_ip`]).
//! - [`TcpLink`] moves the bytes: non-blocking, `TCP_NODELAY`, vectored reads and writes,
//!   `ppoll` on the socket and the control channel, so the wait strategies and nanosecond
//!   deadlines of [`super::Transport`] apply unchanged.
//!
//! The token only proves that a connection comes from whoever read the control channel; it
//! does not encrypt or authenticate the frames that follow (docs/GUARANTEES.md).

use std::fmt::Write as _;
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, ppoll};

use super::deadline::{Deadline, INTERRUPT_CHECK, timespec_for};
use super::kind::TransportKind;
use super::link::{Direction, Link};
use crate::error::{Error, Result};
use crate::frame::MAGIC;

mod listen;
pub use listen::{
    LaunchEnv, ListenSource, ListenSpec, SLURM_LAUNCH_VAR, SSH_CONNECTION_VAR, choose_listen_ip,
    default_listen_ip, interface_address, local_address_towards, local_interface_addresses,
    parse_listen,
};

/// Bytes of the token a client presents before its first frame.
pub const TOKEN_LEN: usize = 16;

/// The first word of the announcement line.
pub const ANNOUNCE_MAGIC: &str = "peerpipe-tcp";

/// Version of the set-up handshake (the second word of the announcement line).
pub const ANNOUNCE_VERSION: u32 = 1;

/// Longest announcement line accepted, newline included.
pub const MAX_ANNOUNCE_LEN: usize = 256;

/// How long one connection may take to present its token before it is closed (the
/// listening socket's own deadline bounds it too).
pub const TOKEN_TIMEOUT: Duration = Duration::from_secs(2);

/// Connections waiting to present their token at once; one more closes the oldest.
pub const MAX_PENDING: usize = 16;

/// How many empty reads a spinning side makes between two looks at the control channel.
const LIVENESS_POLLS: u32 = 1024;

/// Bytes over one TCP connection, with the control channel as liveness.
#[derive(Debug)]
pub struct TcpLink {
    stream: TcpStream,
    /// Read end of the control channel: its end of stream means the other side is gone.
    liveness: Option<OwnedFd>,
    /// Write end of the control channel, held open for the life of the link (closing it is
    /// how the other side learns this one is gone).
    _control: Option<OwnedFd>,
    liveness_closed: bool,
    empty_polls: u32,
    write_shut: bool,
}

impl TcpLink {
    /// Wraps a connected stream: non-blocking, `TCP_NODELAY`. `liveness` is a descriptor
    /// whose end of stream (or hang-up) means the peer is gone; `control` is kept open for
    /// the link's life.
    ///
    /// # Errors
    /// [`Error::Io`] when the socket options cannot be set; [`Error::Sys`] for `fcntl`.
    pub fn new(
        stream: TcpStream,
        liveness: Option<OwnedFd>,
        control: Option<OwnedFd>,
    ) -> Result<TcpLink> {
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        if let Some(fd) = &liveness {
            set_nonblocking(fd.as_fd())?;
        }
        Ok(TcpLink {
            stream,
            liveness,
            _control: control,
            liveness_closed: false,
            empty_polls: 0,
            write_shut: false,
        })
    }

    /// Two connected links over loopback, with no control channel (tests, threads).
    ///
    /// # Errors
    /// [`Error::Io`] when loopback cannot be listened on or connected to.
    pub fn pair() -> Result<(TcpLink, TcpLink)> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let client = TcpStream::connect(listener.local_addr()?)?;
        let (server, _) = listener.accept()?;
        Ok((TcpLink::new(client, None, None)?, TcpLink::new(server, None, None)?))
    }

    /// Reads what the control channel holds, without waiting; marks it closed at its end.
    fn check_liveness(&mut self) {
        let Some(fd) = &self.liveness else { return };
        let mut scratch = [0u8; 64];
        loop {
            match nix::unistd::read(fd.as_fd(), &mut scratch) {
                Ok(0) => {
                    self.liveness_closed = true;
                    return;
                }
                Ok(_) => continue, // nothing is sent there after set-up: ignore it
                Err(Errno::EINTR) => continue,
                Err(Errno::EAGAIN) => return,
                Err(_) => {
                    self.liveness_closed = true;
                    return;
                }
            }
        }
    }
}

impl Link for TcpLink {
    fn kind(&self) -> TransportKind {
        TransportKind::Tcp
    }

    fn try_read(&mut self, bufs: &mut [IoSliceMut<'_>]) -> Result<Option<usize>> {
        loop {
            return match (&self.stream).read_vectored(bufs) {
                Ok(n) => {
                    self.empty_polls = 0;
                    Ok(Some(n))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.empty_polls += 1;
                    if self.empty_polls >= LIVENESS_POLLS {
                        self.empty_polls = 0;
                        self.check_liveness();
                    }
                    // The control channel closed: the peer (or ssh between us) is gone.
                    Ok(if self.liveness_closed { Some(0) } else { None })
                }
                // A reset is how a peer that died with unread bytes ends the stream.
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => Ok(Some(0)),
                Err(e) => Err(e.into()),
            };
        }
    }

    fn try_write(&mut self, bufs: &[IoSlice<'_>]) -> Result<Option<usize>> {
        if self.write_shut {
            return Err(Error::PeerClosed { context: "after shutdown_write" });
        }
        if self.liveness_closed {
            return Err(Error::PeerClosed { context: "(its control channel closed)" });
        }
        loop {
            return match (&self.stream).write_vectored(bufs) {
                Ok(n) => Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
                    ) =>
                {
                    Err(Error::PeerClosed { context: "while sending" })
                }
                Err(e) => Err(e.into()),
            };
        }
    }

    fn sleep(&mut self, direction: Direction, until: Option<Instant>) -> Result<()> {
        let events = match direction {
            Direction::Read => PollFlags::POLLIN,
            Direction::Write if self.write_shut => return Ok(()),
            Direction::Write => PollFlags::POLLOUT,
        };
        let timeout = until.map(|at| timespec_for(at.saturating_duration_since(Instant::now())));
        let watch_liveness = !self.liveness_closed;
        let result = match (&self.liveness, watch_liveness) {
            (Some(liveness), true) => {
                let mut fds = [
                    PollFd::new(self.stream.as_fd(), events),
                    PollFd::new(liveness.as_fd(), PollFlags::POLLIN),
                ];
                let result = ppoll(&mut fds, timeout, None);
                let control_ready = fds[1].revents().is_some_and(|r| !r.is_empty());
                result.map(|n| (n, control_ready))
            }
            _ => {
                let mut fds = [PollFd::new(self.stream.as_fd(), events)];
                ppoll(&mut fds, timeout, None).map(|n| (n, false))
            }
        };
        match result {
            Ok((_, true)) => {
                self.check_liveness();
                Ok(())
            }
            Ok(_) | Err(Errno::EINTR) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn shutdown_write(&mut self) -> Result<()> {
        if !self.write_shut {
            self.write_shut = true;
            match self.stream.shutdown(Shutdown::Write) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotConnected => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Unknown: a socket's buffers grow and shrink with the connection (TCP autotuning).
    fn capacity(&self) -> Option<usize> {
        None
    }

    fn set_capacity(&mut self, _bytes: usize) -> Result<usize> {
        Ok(0)
    }
}

/// A fresh random token from the kernel (`/dev/urandom`).
///
/// # Errors
/// [`Error::Io`] when `/dev/urandom` cannot be read.
pub fn fresh_token() -> Result<[u8; TOKEN_LEN]> {
    let mut token = [0u8; TOKEN_LEN];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut token)?;
    Ok(token)
}

/// `peerpipe-tcp 1 IP PORT TOKEN` and a newline: the announcement line, the token in 32
/// lowercase hex digits.
///
/// ```
/// use peerpipe::transport::tcp::announcement;
/// let line = announcement(&"127.0.0.1:4242".parse().unwrap(), &[0xab; 16]);
/// assert_eq!(line, format!("peerpipe-tcp 1 127.0.0.1 4242 {}\n", "ab".repeat(16)));
/// ```
pub fn announcement(addr: &SocketAddr, token: &[u8; TOKEN_LEN]) -> String {
    let mut hex = String::with_capacity(2 * TOKEN_LEN);
    for byte in token {
        let _ = write!(hex, "{byte:02x}");
    }
    format!("{ANNOUNCE_MAGIC} {ANNOUNCE_VERSION} {} {} {hex}\n", addr.ip(), addr.port())
}

/// Parses an announcement line (without its newline) into the address and the token.
///
/// # Errors
/// [`Error::Corrupted`] naming the expected form and what was found.
pub fn parse_announcement(line: &str) -> Result<(SocketAddr, [u8; TOKEN_LEN])> {
    let bad = || Error::Corrupted {
        what: "tcp announcement",
        detail: format!(
            "expected \"{ANNOUNCE_MAGIC} {ANNOUNCE_VERSION} IP PORT TOKEN\" (TOKEN: 32 hex \
             digits), found {line:?}"
        ),
    };
    let words: Vec<&str> = line.split(' ').collect();
    let [magic, version, ip, port, hex] = words[..] else { return Err(bad()) };
    if magic != ANNOUNCE_MAGIC || version != ANNOUNCE_VERSION.to_string() {
        return Err(bad());
    }
    let ip: IpAddr = ip.parse().map_err(|_| bad())?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    if hex.len() != 2 * TOKEN_LEN || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let mut token = [0u8; TOKEN_LEN];
    for (i, byte) in token.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok((SocketAddr::new(ip, port), token))
}

/// A connection that has not yet presented the whole token.
struct Candidate {
    stream: TcpStream,
    from: SocketAddr,
    got: [u8; TOKEN_LEN],
    filled: usize,
    until: Instant,
}

/// The server's half of the set-up: listens on `listen` (see [`default_listen_ip`]),
/// writes the announcement line to `control_out`, and accepts connections until one
/// presents the token, or `deadline` passes, or `control_in` ends (the client is gone).
///
/// Every other connection is closed after at most [`TOKEN_LEN`] bytes have been read from
/// it — a wrong token, a connection that ends or stalls ([`TOKEN_TIMEOUT`]) before the whole
/// token — and reported on stderr, and the server goes on waiting. Up to [`MAX_PENDING`]
/// connections may be presenting their token at once. The listening socket is closed as soon
/// as the right client is accepted, and when this function returns in any other way:
/// nothing listens past `deadline`. The returned link watches `control_in` for liveness and
/// holds `control_out` open.
///
/// # Errors
/// [`Error::Timeout`] when no connection presented the token by `deadline`;
/// [`Error::PeerClosed`] when `control_in` ended first; [`Error::Io`] when the address
/// cannot be listened on or the line cannot be written.
pub fn listen_announce_accept(
    listen: SocketAddr,
    control_in: OwnedFd,
    control_out: OwnedFd,
    deadline: Deadline,
) -> Result<TcpLink> {
    let listener = TcpListener::bind(listen)?;
    listener.set_nonblocking(true)?;
    let token = fresh_token()?;
    let mut out = std::fs::File::from(control_out);
    out.write_all(announcement(&listener.local_addr()?, &token).as_bytes())?;
    out.flush()?;
    let control_out = OwnedFd::from(out);
    set_nonblocking(control_in.as_fd())?;
    let mut candidates: Vec<Candidate> = Vec::new();
    loop {
        // New connections.
        loop {
            match listener.accept() {
                Ok((stream, from)) => {
                    stream.set_nonblocking(true)?;
                    if candidates.len() >= MAX_PENDING {
                        let oldest = candidates.remove(0);
                        refuse(&oldest, "too many connections presenting a token at once");
                    }
                    let until = Instant::now() + TOKEN_TIMEOUT;
                    candidates.push(Candidate {
                        stream,
                        from,
                        got: [0; TOKEN_LEN],
                        filled: 0,
                        until,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // A connection that went away before accept(2) took it: nothing to do.
                Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => continue,
                Err(e) => return Err(e.into()),
            }
        }
        // Tokens arriving.
        let now = Instant::now();
        let mut i = 0;
        while i < candidates.len() {
            match read_token(&mut candidates[i]) {
                Progress::Waiting if now >= candidates[i].until => {
                    let c = candidates.remove(i);
                    let why = format!(
                        "no whole token within {TOKEN_TIMEOUT:?} ({} of {TOKEN_LEN} bytes)",
                        c.filled
                    );
                    refuse(&c, &why);
                }
                Progress::Waiting => i += 1,
                Progress::Ended => {
                    let c = candidates.remove(i);
                    let why = format!("closed after {} of {TOKEN_LEN} token bytes", c.filled);
                    refuse(&c, &why);
                }
                Progress::Complete if same_token(&candidates[i].got, &token) => {
                    let chosen = candidates.remove(i);
                    drop(listener); // nothing listens once the client is in
                    for other in &candidates {
                        refuse(other, "another client presented the token first");
                    }
                    return TcpLink::new(chosen.stream, Some(control_in), Some(control_out));
                }
                Progress::Complete => {
                    let c = candidates.remove(i);
                    refuse(&c, "wrong token");
                }
            }
        }
        // The client gone (its end of the control channel closed), or out of time.
        let mut scratch = [0u8; 64];
        match nix::unistd::read(control_in.as_fd(), &mut scratch) {
            Ok(0) => {
                return Err(Error::PeerClosed {
                    context: "(the control channel closed before a client presented the token)",
                });
            }
            Ok(_) | Err(Errno::EAGAIN) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
        let now = Instant::now();
        if deadline.passed(now) {
            for c in &candidates {
                refuse(c, "the listening deadline passed");
            }
            return Err(deadline.error(format!(
                "waiting for a client with the token on {}",
                listener.local_addr()?
            )));
        }
        // Sleep until something happens, the next candidate's limit, or the deadline.
        let mut wake = deadline.instant();
        for c in &candidates {
            wake = Some(wake.map_or(c.until, |w| w.min(c.until)));
        }
        let timeout = wake.map(|at| timespec_for(at.saturating_duration_since(now)));
        let mut fds = vec![
            PollFd::new(listener.as_fd(), PollFlags::POLLIN),
            PollFd::new(control_in.as_fd(), PollFlags::POLLIN),
        ];
        fds.extend(candidates.iter().map(|c| PollFd::new(c.stream.as_fd(), PollFlags::POLLIN)));
        match ppoll(&mut fds, timeout, None) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

enum Progress {
    Waiting,
    Ended,
    Complete,
}

/// Reads what is available of a candidate's token, never past its end.
fn read_token(c: &mut Candidate) -> Progress {
    while c.filled < TOKEN_LEN {
        match (&c.stream).read(&mut c.got[c.filled..]) {
            Ok(0) => return Progress::Ended,
            Ok(n) => c.filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Progress::Waiting,
            Err(_) => return Progress::Ended,
        }
    }
    Progress::Complete
}

/// Compares in time independent of where the tokens differ.
fn same_token(a: &[u8; TOKEN_LEN], b: &[u8; TOKEN_LEN]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Closes a connection that did not present the token, and says so on stderr.
fn refuse(c: &Candidate, why: &str) {
    let _ = c.stream.shutdown(Shutdown::Both);
    eprintln!("peer: tcp: refused the connection from {}: {why}", c.from);
}

/// The client's half of the set-up: reads the announcement line from `announce` (the
/// server's stdout) by `deadline`, connects to the address it names, presents the token,
/// and returns the link, which watches `announce` for liveness and holds `control` (the
/// server's stdin) open.
///
/// # Errors
/// [`Error::PeerClosed`] when `announce` ends before a whole line; [`Error::Timeout`] at
/// the deadline; [`Error::Corrupted`] for a line that is not an announcement;
/// [`Error::Io`] when the connection fails.
pub fn connect_announced(
    announce: OwnedFd,
    control: OwnedFd,
    deadline: Deadline,
) -> Result<TcpLink> {
    connect_announced_unless(announce, control, deadline, None)
}

/// [`connect_announced`]; with `interrupted`, asked every [`super::INTERRUPT_CHECK`] while
/// no announcement has come, and [`Error::Interrupted`] once it says yes.
///
/// # Errors
/// As [`connect_announced`], and [`Error::Interrupted`].
pub(crate) fn connect_announced_unless(
    announce: OwnedFd,
    control: OwnedFd,
    deadline: Deadline,
    interrupted: Option<&dyn Fn() -> bool>,
) -> Result<TcpLink> {
    set_nonblocking(announce.as_fd())?;
    let mut line = Vec::with_capacity(MAX_ANNOUNCE_LEN);
    let mut byte = [0u8; 1];
    // One byte at a time, so nothing after the line is consumed.
    while line.last() != Some(&b'\n') {
        if line.len() >= MAX_ANNOUNCE_LEN {
            let found = String::from_utf8_lossy(&line).into_owned();
            return Err(Error::Corrupted {
                what: "tcp announcement",
                detail: format!(
                    "expected a line of at most {MAX_ANNOUNCE_LEN} bytes, found {found:?}…"
                ),
            });
        }
        match nix::unistd::read(announce.as_fd(), &mut byte) {
            Ok(0) => {
                return Err(Error::PeerClosed { context: "before announcing its tcp address" });
            }
            Ok(_) => {
                line.push(byte[0]);
                if line == MAGIC {
                    return Err(not_a_tcp_server());
                }
            }
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let now = Instant::now();
                if deadline.passed(now) {
                    return Err(deadline.error("waiting for the server's tcp announcement"));
                }
                if interrupted.is_some_and(|interrupted| interrupted()) {
                    return Err(Error::Interrupted {
                        during: "while waiting for the tcp announcement",
                    });
                }
                // With `interrupted`, wake at least every INTERRUPT_CHECK to ask it again.
                let wake = match interrupted {
                    Some(_) => deadline.or_idle_until(now + INTERRUPT_CHECK),
                    None => deadline,
                };
                let timeout =
                    wake.instant().map(|at| timespec_for(at.saturating_duration_since(now)));
                let mut fds = [PollFd::new(announce.as_fd(), PollFlags::POLLIN)];
                match ppoll(&mut fds, timeout, None) {
                    Ok(_) | Err(Errno::EINTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    line.pop();
    let text = String::from_utf8_lossy(&line).into_owned();
    let (addr, token) = parse_announcement(&text)?;
    let remaining = deadline.remaining().unwrap_or(Duration::from_secs(3600));
    if remaining.is_zero() {
        return Err(deadline.error(format!("connecting to {addr}")));
    }
    let mut stream = TcpStream::connect_timeout(&addr, remaining).map_err(|e| {
        let hint = if addr.ip().is_loopback() {
            " (a server announces loopback when it was started neither by srun nor by ssh and \
             no --listen was given: on another machine, give it --listen ADDRESS or INTERFACE)"
        } else {
            ""
        };
        Error::Io(io::Error::new(
            e.kind(),
            format!("connecting to the announced {addr}: {e}{hint}"),
        ))
    })?;
    stream.set_nodelay(true)?;
    stream.write_all(&token)?;
    TcpLink::new(stream, Some(announce), Some(control))
}

/// What a server that serves its stdin and stdout (a pipe server) looks like to a tcp client:
/// its first bytes are a frame's magic where the announcement belongs.
fn not_a_tcp_server() -> Error {
    Error::Corrupted {
        what: "tcp announcement",
        detail: "the server sent a frame (\"PEER\"...) instead: it serves its stdin and stdout, \
                 not tcp. Start it for tcp (`peer --role server --transport tcp`, \
                 `peerpipe.serve(handler, transport=\"tcp\")`), or connect over a pipe"
            .to_owned(),
    }
}

fn set_nonblocking(fd: BorrowedFd<'_>) -> Result<()> {
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announcements_parse_back_and_bad_ones_name_the_expected_form() {
        let addr: SocketAddr = "10.1.2.3:5555".parse().unwrap();
        let token = [7u8; TOKEN_LEN];
        let line = announcement(&addr, &token);
        let (a, t) = parse_announcement(line.trim_end()).unwrap();
        assert_eq!((a, t), (addr, token));
        let v6 = announcement(&"[::1]:9".parse().unwrap(), &token);
        assert_eq!(parse_announcement(v6.trim_end()).unwrap().0.to_string(), "[::1]:9");
        for bad in ["", "peerpipe-tcp 2 1.2.3.4 5 00", "hello", "peerpipe-tcp 1 x 5 00"] {
            let err = parse_announcement(bad).unwrap_err().to_string();
            assert!(err.contains("expected \"peerpipe-tcp 1 IP PORT TOKEN\""), "{err}");
        }
    }

    #[test]
    fn a_pipe_server_s_hello_where_the_announcement_belongs_says_how_to_start_it_for_tcp() {
        use crate::frame::{Header, Kind};
        let (announce, mut server_stdout) = std::io::pipe().unwrap();
        let (_server_stdin, control) = std::io::pipe().unwrap();
        // What `peer --role server` without `--transport tcp` writes first: its HELLO, whose
        // payload ("version=1\n...") holds a newline a line reader would stop at.
        server_stdout.write_all(&Header::control(Kind::Hello, 0, 10).to_bytes()).unwrap();
        server_stdout.write_all(b"version=1\n").unwrap();
        let deadline = Deadline::after(Some(Duration::from_secs(5)));
        let err = connect_announced(announce.into(), control.into(), deadline).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::Corrupted { what: "tcp announcement", .. }), "{text}");
        assert!(text.contains("serves its stdin and stdout, not tcp"), "{text}");
        assert!(text.contains("--transport tcp") && text.contains("transport=\"tcp\""), "{text}");
    }

    #[test]
    fn a_refused_loopback_announcement_says_to_give_the_server_listen() {
        // A port that was free a moment ago: nothing listens there now.
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap();
        let (announce, mut server_stdout) = std::io::pipe().unwrap();
        let (_server_stdin, control) = std::io::pipe().unwrap();
        server_stdout.write_all(announcement(&port, &[1; TOKEN_LEN]).as_bytes()).unwrap();
        let deadline = Deadline::after(Some(Duration::from_secs(5)));
        let err = connect_announced(announce.into(), control.into(), deadline).unwrap_err();
        let text = err.to_string();
        assert!(text.contains(&format!("connecting to the announced {port}")), "{text}");
        assert!(text.contains("give it --listen ADDRESS or INTERFACE"), "{text}");
    }

    #[test]
    fn tokens_compare_whole() {
        let a = [1u8; TOKEN_LEN];
        let mut b = a;
        assert!(same_token(&a, &b));
        b[15] = 2;
        assert!(!same_token(&a, &b));
        assert_ne!(fresh_token().unwrap(), fresh_token().unwrap());
    }
}
