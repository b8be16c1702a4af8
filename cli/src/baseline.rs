//! The raw-bytes floor: the same pair of processes moving the same bytes with plain
//! `read`/`write`, no framing, no conversion, with the same wait strategy — and the way the
//! transport moves a frame of that size, so that the floor is not slower than the product:
//!
//! - the echo comes back into a buffer of its own, as a reply does (reading into pages just
//!   lent to the pipe cost 20 % more at 256 KiB here);
//! - from [`LEND_MIN_BYTES`] on a pipe, the client lends its pages with `vmsplice`, as
//!   [`peerpipe::Peer::call`] lends a zero-copy payload, after copying a header's worth of bytes
//!   first: like a frame's header, they wake the server, which starts reading while the rest
//!   is being lent (without it the floor read 5–8 % slower than the product from 512 KiB);
//!   the raw server answers such a message the same way ([`serve_raw_echo`]).
//!
//! [`RawEcho`] is the client side; [`serve_raw_echo`] the server's loop, which `peer --role
//! server --raw-echo BYTES` runs. Both are the `peer` command's measuring tools, built on the
//! library's public transport and process API.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use peerpipe::clock::{self, Stamp};
use peerpipe::error::{Error, Result};
use peerpipe::frame::HEADER_LEN;
use peerpipe::process::{ChildGuard, Spawn, spawn_with_transport};
use peerpipe::transport::{
    DEFAULT_SHM_CAPACITY, Deadline, LEND_MIN_BYTES, Transport, TransportKind, Wait,
};

/// `ROUTE FLAGS`, plus `--transport KIND` when `transport` is not a pipe: how the report
/// extends a `--spawn` command line that starts `peer --role server` with the flags a server
/// needs.
///
/// ```
/// use peerpipe_cli::baseline::route_line;
/// use peerpipe::TransportKind;
/// assert_eq!(
///     route_line("ssh h peer --role server", "--raw-echo 8", TransportKind::Pipe),
///     "ssh h peer --role server --raw-echo 8"
/// );
/// assert_eq!(
///     route_line("ssh h peer --role server", "", TransportKind::ShmRing),
///     "ssh h peer --role server --transport shm-ring"
/// );
/// ```
pub fn route_line(route: &str, flags: &str, transport: TransportKind) -> String {
    let mut line = route.trim_end().to_owned();
    if !flags.is_empty() {
        line.push(' ');
        line.push_str(flags);
    }
    if transport != TransportKind::Pipe {
        line.push_str(" --transport ");
        line.push_str(transport.name());
    }
    line
}

/// How long [`RawEcho::close`] waits for the server to exit after closing its input.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// A `peer --role server --raw-echo BYTES` process and the transport to it.
#[derive(Debug)]
pub struct RawEcho {
    transport: Option<Transport>,
    child: ChildGuard,
    /// What is sent: a recognisable pattern, so a mangled echo would show.
    message: Vec<u8>,
    /// Where the echo is received.
    reply: Vec<u8>,
    timeout: Option<Duration>,
    lend: bool,
    route: Option<String>,
    /// The spawned process is a launcher (`ssh`, `srun`) that started the server elsewhere.
    launched: bool,
}

impl RawEcho {
    /// Spawns `peer_exe --role server --raw-echo BYTES --wait WAIT --transport TRANSPORT`
    /// (shared memory with [`DEFAULT_SHM_CAPACITY`] per direction).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for 0 bytes; [`Error::CannotStart`] naming the binary when it
    /// cannot be started.
    pub fn spawn(
        peer_exe: &Path,
        bytes: usize,
        wait: Wait,
        transport: TransportKind,
        pipe_capacity: Option<usize>,
        timeout: Option<Duration>,
    ) -> Result<RawEcho> {
        let spawn = Spawn { wait, transport, pipe_capacity, shm_capacity: DEFAULT_SHM_CAPACITY };
        RawEcho::spawn_with(peer_exe, bytes, &spawn, timeout)
    }

    /// [`RawEcho::spawn`] with every connection setting given, the shared-memory capacity
    /// included.
    ///
    /// # Errors
    /// As [`RawEcho::spawn`].
    pub fn spawn_with(
        peer_exe: &Path,
        bytes: usize,
        spawn: &Spawn,
        timeout: Option<Duration>,
    ) -> Result<RawEcho> {
        let mut command = Command::new(peer_exe);
        // A process group of its own: the floor is stopped between its bursts, and once its
        // client is gone the kernel continues and hangs up an orphaned group with a stopped
        // member (SIGCONT, SIGHUP), so it cannot stay stopped, whatever thread spawned it.
        command.process_group(0);
        command
            .args(["--role", "server", "--raw-echo"])
            .arg(bytes.to_string())
            .arg("--wait")
            .arg(spawn.wait.to_string())
            .arg("--transport")
            .arg(spawn.transport.name());
        RawEcho::spawn_command(command, None, bytes, spawn, timeout)
    }

    /// The floor through a route: `sh -c "ROUTE --raw-echo BYTES"`, with `--transport KIND`
    /// appended too when the transport is not a pipe. ROUTE is a command line that starts
    /// `peer --role server` somewhere, e.g. `ssh host peer --role server`: the appended flags
    /// reach that `peer`, so the floor moves its bytes through the same route (and the same
    /// server-side wait strategy) as the rows.
    ///
    /// # Errors
    /// [`Error::CannotStart`] naming the route's program when the route is a simple command
    /// whose program is not there ([`peerpipe::peer::checked_shell_command`]); otherwise as
    /// [`RawEcho::spawn`].
    pub fn spawn_route(
        route: &str,
        bytes: usize,
        spawn: &Spawn,
        timeout: Option<Duration>,
    ) -> Result<RawEcho> {
        let line = route_line(route, &format!("--raw-echo {bytes}"), spawn.transport);
        // `exec` for a simple command, as the rows' servers run: the spawned process is then
        // the route's own (the `ssh` client), which is stopped between bursts and reaped,
        // rather than a shell that would keep the route's pipes open after it died.
        let command = peerpipe::peer::checked_shell_command(&line)?;
        let launched = peerpipe::launcher::starts_elsewhere(&command);
        let mut echo = RawEcho::spawn_command(command, Some(line), bytes, spawn, timeout)?;
        echo.launched = launched;
        Ok(echo)
    }

    fn spawn_command(
        command: Command,
        route: Option<String>,
        bytes: usize,
        spawn: &Spawn,
        timeout: Option<Duration>,
    ) -> Result<RawEcho> {
        if bytes == 0 {
            return Err(Error::InvalidArgument {
                what: "baseline size",
                reason: "must be at least 1 byte".into(),
            });
        }
        let (transport, child) = spawn_with_transport(command, spawn, None)?;
        clock::init(); // calibrated now, not in the first timed round trip
        let message = (0..bytes).map(|i| (i % 251) as u8).collect();
        let lend = spawn.transport == TransportKind::Pipe && bytes >= LEND_MIN_BYTES;
        Ok(RawEcho {
            transport: Some(transport),
            child,
            reply: vec![0; bytes],
            message,
            timeout,
            lend,
            route,
            launched: false,
        })
    }

    /// The command line the server ran through, when spawned by [`RawEcho::spawn_route`].
    pub fn route(&self) -> Option<&str> {
        self.route.as_deref()
    }

    /// The spawned process's id: the server's, unless [`RawEcho::behind_launcher`].
    pub fn server_pid(&self) -> u32 {
        self.child.id()
    }

    /// True when the route's program is a launcher that started the server elsewhere (`ssh`,
    /// `srun`: [`peerpipe::launcher::starts_elsewhere`]): the spawned process is then not the
    /// server, and stopping it would not stop the server (`srun` would only log every
    /// `SIGCONT`, and could not answer Slurm while stopped).
    pub fn behind_launcher(&self) -> bool {
        self.launched
    }

    /// The server for error messages: `` `ROUTE` (pid N) `` or
    /// `` `peer --role server --raw-echo BYTES` (pid N) ``.
    pub fn describe(&self) -> String {
        let bytes = self.message.len();
        let line =
            self.route.clone().unwrap_or_else(|| format!("peer --role server --raw-echo {bytes}"));
        format!("the floor `{line}` (pid {})", self.child.id())
    }

    /// `error`, which ended a round trip, naming this floor; when its server had died
    /// (within a moment: its end of stream may come first), [`Error::PeerExited`] saying
    /// how, as [`peerpipe::Peer`] reports a handler server's death.
    pub fn name_error(&mut self, error: Error) -> Error {
        let patience = match error {
            Error::PeerClosed { .. } | Error::Truncated { .. } => Duration::from_millis(100),
            _ => Duration::ZERO,
        };
        let name = self.describe();
        match self.child.wait_timeout(patience) {
            Ok(Some(status)) => peerpipe::process::exited(status, format!("({error}); {name}")),
            _ => peerpipe::process::naming(error, &name),
        }
    }

    /// Bytes moved each way per round trip.
    pub fn bytes(&self) -> usize {
        self.message.len()
    }

    /// True when the message is lent to the pipe (`vmsplice`) rather than copied into it: on
    /// a pipe from [`LEND_MIN_BYTES`], as [`peerpipe::Peer::call`] does with zero-copy payloads.
    pub fn lends(&self) -> bool {
        self.lend
    }

    /// One round trip: writes the message, reads it back; returns the nanoseconds it took.
    ///
    /// # Errors
    /// [`Error::Timeout`], [`Error::PeerClosed`] or [`Error::Truncated`] when the server does
    /// not echo the message in time; [`Error::InvalidArgument`] when the echo differs.
    pub fn round_trip(&mut self) -> Result<u64> {
        // Not `ok_or`: it builds (and drops) an error on every round trip.
        let Some(transport) = self.transport.as_mut() else {
            return Err(Error::PeerClosed { context: "already" });
        };
        // The same clock as the rows' split (`clock`), and no clock read for the deadline
        // before the message is on its way: it starts at the first wait.
        let started = Stamp::now();
        let deadline = Deadline::from_first_wait(self.timeout);
        if self.lend {
            // As Peer::call sends a lent frame: the first bytes (a header's worth) copied, so
            // the server wakes and starts reading while the rest is lent. Sound: the server
            // reads the whole message before it echoes a byte, so once the echo arrives no
            // lent page is referenced by the pipe any more.
            let (first, rest) = self.message.split_at(HEADER_LEN.min(self.message.len()));
            transport.send_bytes(first, deadline)?;
            transport.send_bytes_lent(rest, deadline)?;
        } else {
            transport.send_bytes(&self.message, deadline)?;
        }
        let len = self.message.len();
        let got = transport.recv_exact(&mut self.reply, deadline)?;
        let elapsed = started.elapsed_nanos();
        if got != len {
            return Err(Error::Truncated {
                what: "raw echo",
                expected: len as u64,
                got: got as u64,
            });
        }
        Ok(elapsed)
    }

    /// Checks that the message came back unchanged.
    ///
    /// # Errors
    /// [`Error::Corrupted`] naming the first differing byte.
    pub fn verify(&self) -> Result<()> {
        match self.reply.iter().enumerate().find(|&(i, &b)| b != (i % 251) as u8) {
            None => Ok(()),
            Some((at, &found)) => Err(Error::Corrupted {
                what: "raw echo",
                detail: format!("byte {at}: expected {}, found {found}", at % 251),
            }),
        }
    }

    /// Closes the server's input and reaps it.
    ///
    /// # Errors
    /// [`Error::PeerExited`] when it did not exit cleanly in time.
    pub fn close(mut self) -> Result<()> {
        self.transport = None;
        match self.child.wait_timeout(CLOSE_GRACE)? {
            Some(status) if status.success() => Ok(()),
            Some(status) => Err(peerpipe::process::exited(status, "after the baseline".into())),
            None => {
                let status = self.child.terminate()?;
                let context = "after not exiting at end of stream (baseline)".into();
                Err(peerpipe::process::exited(status, context))
            }
        }
    }
}

/// The raw-bytes baseline server: reads exactly `bytes` bytes, writes them back unchanged, and
/// repeats until end of stream. No framing, no HELLO, no conversion: the floor a framed round
/// trip of the same size is compared with. Returns the number of round trips served.
///
/// # Errors
/// [`Error::InvalidArgument`] when `bytes` is 0; [`Error::Truncated`] when the stream ends
/// inside a message; I/O errors.
pub fn serve_raw_echo(transport: &mut Transport, bytes: usize) -> Result<u64> {
    if bytes == 0 {
        return Err(Error::InvalidArgument {
            what: "raw echo size",
            reason: "must be at least 1 byte".into(),
        });
    }
    let mut buf = vec![0u8; bytes];
    // From the size at which a client lends its payloads, a large echo goes out on a pipe as a
    // frame does: a header's worth of bytes first, which wakes the reader, then the rest
    // (without it the floor read about 5 % slower than the product at 8 MiB).
    let header_first = transport.kind() == TransportKind::Pipe && bytes >= LEND_MIN_BYTES;
    let mut served = 0;
    loop {
        match transport.recv_exact(&mut buf, Deadline::NEVER)? {
            got if got == bytes => {}
            0 => return Ok(served),
            got => {
                return Err(Error::Truncated {
                    what: "raw message",
                    expected: bytes as u64,
                    got: got as u64,
                });
            }
        }
        if header_first {
            let (first, rest) = buf.split_at(HEADER_LEN);
            transport.send_bytes(first, Deadline::NEVER)?;
            transport.send_bytes(rest, Deadline::NEVER)?;
        } else {
            transport.send_bytes(&buf, Deadline::NEVER)?;
        }
        served += 1;
    }
}
