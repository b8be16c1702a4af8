//! Spawning a server process on two pipes, and never leaving it behind.
//!
//! A server whose client is gone ends by itself: the kernel closes the client's ends of the
//! pipes (or of the liveness pipe beside a shared region, or of a tcp server's control
//! channel), and the server sees the end of its stream. A server stopped with `SIGSTOP`
//! sees nothing until it runs again, so the code that stops servers makes sure they do:
//!
//! - on every way out that runs code (return, error, panic, and the signals that the `peer`
//!   command turns into a flag) the owner continues the servers it stopped and closes them;
//! - on the ways out that run none (SIGKILL, a crash), the kernel does: the servers of a run
//!   of the report are spawned while a `TiedSpawns` guard lives on the spawning thread, so
//!   they get `SIGKILL` when that thread ends (`prctl(PR_SET_PDEATHSIG)`); and every local
//!   server that may be stopped (the `peer` command's raw floor and the report's handler
//!   servers) runs in a process group
//!   of its own, which the kernel continues and hangs up (`SIGCONT`, `SIGHUP`) once its
//!   client is gone and it is orphaned — and which keeps stopped processes out of the
//!   client's own group, which the kernel would otherwise hang up whole once orphaned.

use std::cell::Cell;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::error::{Error, Result};

/// What a server is, said when a spawned program sends no HELLO or no tcp announcement: the
/// literal behind [`SPEAK_PEERPIPE`], for the `&'static` contexts it ends.
macro_rules! speak_peerpipe {
    () => {
        "the spawned program must speak peerpipe: `peer --role server`, a Python script \
         calling `peerpipe.serve`, or a C program calling `pp_serve_stdio_f64`"
    };
}
pub(crate) use speak_peerpipe;

/// Why a spawn fails when the program printed something that is not a HELLO (or a tcp
/// announcement), or ended before sending one: what a server is, and how to make one.
pub const SPEAK_PEERPIPE: &str = speak_peerpipe!();

/// Why a handshake fails when the peer's HELLO is byte for byte the one this side sent: the
/// spawned program echoes its input instead of serving.
pub const OWN_HELLO_ECHOED: &str =
    "the peer sent back our own HELLO: is the command echoing its input, like cat?";

/// The context of [`Error::PeerClosed`] when a tcp server ends before its announcement.
const BEFORE_ANNOUNCING: &str = "before announcing its tcp address";
use crate::transport::{
    DEFAULT_PIPE_CAPACITY, DEFAULT_SHM_CAPACITY, Deadline, ShmLink, Transport, TransportKind, Wait,
    tcp,
};

/// How long a client waits for a `tcp` server to announce its address and for the
/// connection (an ssh login takes most of it): 10 s.
pub const TCP_SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a terminated server gets between SIGTERM and SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_millis(200);

/// How to connect a spawned server: the transport, its capacity and the wait strategy.
#[derive(Clone, Copy, Debug)]
pub struct Spawn {
    /// How this side waits.
    pub wait: Wait,
    /// Pipe or shared memory.
    pub transport: TransportKind,
    /// Pipe capacity to ask for (pipes only); `None` keeps the system default.
    pub pipe_capacity: Option<usize>,
    /// Bytes per direction (shared memory only).
    pub shm_capacity: usize,
}

impl Default for Spawn {
    /// As `Options::default()` of [`crate::peer`]: auto wait, pipes of 1 MiB, 1 MiB of
    /// shared memory. (`Spawn::from_options`, the conversion from a peer's options, lives in
    /// `peer`, so that this module, below `peer`, does not import it back.)
    fn default() -> Spawn {
        Spawn {
            wait: Wait::default(),
            transport: TransportKind::Pipe,
            pipe_capacity: Some(DEFAULT_PIPE_CAPACITY),
            shm_capacity: DEFAULT_SHM_CAPACITY,
        }
    }
}

/// Spawns `command` (stderr inherited) connected by a transport, and returns this side's
/// transport and the child, with no handshake: for callers that speak the protocol (or raw
/// bytes) themselves, such as tests and baselines. The caller must reap the child.
///
/// - pipe: the child's stdin and stdout are two new `O_CLOEXEC` pipes, with `pipe_capacity`
///   asked for on both;
/// - shared memory: a new region's memfd becomes the child's stdin, and its stdout is a pipe
///   that nobody writes to: it only tells each side when the other is gone.
/// - tcp: stdin and stdout are two pipes, the control channel: the child announces a port
///   and a token on its stdout, this side connects and presents the token
///   ([`tcp::connect_announced`], within [`TCP_SETUP_TIMEOUT`]); the pipes then stay open
///   as the liveness channel. When that fails the child is terminated and reaped, and the
///   error says how it ended if it had exited.
///
/// A pipe or shared-memory server through `srun`, which relays stdio, is refused before
/// anything starts ([`crate::launcher::refuse_relayed_spawn`]).
///
/// # Errors
/// [`Error::Sys`] when the pipes or the region cannot be made;
/// [`Error::CannotStart`] naming the program when the command cannot be started;
/// [`Error::InvalidArgument`] for a transport other than tcp through `srun`.
pub fn spawn_connected(command: Command, spawn: &Spawn) -> Result<(Transport, Child)> {
    spawn_connected_unless(command, spawn, None)
}

/// [`spawn_connected`]; with `interrupted`, the wait for a tcp server's announcement asks it
/// every [`crate::transport::INTERRUPT_CHECK`] and ends in [`Error::Interrupted`] (the
/// child terminated and reaped) once it says yes.
fn spawn_connected_unless(
    mut command: Command,
    spawn: &Spawn,
    interrupted: Option<&dyn Fn() -> bool>,
) -> Result<(Transport, Child)> {
    crate::launcher::refuse_relayed_spawn(&command, spawn.transport)?;
    if TIED.with(Cell::get) > 0 {
        crate::sys::die_with_spawning_thread(&mut command);
    }
    let (our_rx, child_stdout) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    if spawn.transport == TransportKind::Tcp {
        let (child_stdin, our_tx) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        command.stdin(Stdio::from(child_stdin)).stdout(Stdio::from(child_stdout));
        let child = start(&mut command)?;
        drop(command);
        let deadline = Deadline::after(Some(TCP_SETUP_TIMEOUT));
        return match tcp::connect_announced_unless(our_rx, our_tx, deadline, interrupted) {
            Ok(link) => {
                let mut transport = Transport::new(link, spawn.wait);
                transport.watch_peer(child.id());
                Ok((transport, child))
            }
            Err(error) => Err(ChildGuard { child }.fail_setup(error)),
        };
    }
    let (transport, child_stdin) = match spawn.transport {
        TransportKind::Pipe => {
            let (child_stdin, our_tx) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
            let mut transport = Transport::pipe(our_rx, our_tx, spawn.wait)?;
            if let Some(bytes) = spawn.pipe_capacity {
                transport.set_capacity(bytes)?;
            }
            (transport, child_stdin)
        }
        shm => {
            let (link, memfd) = ShmLink::create(shm, spawn.shm_capacity, our_rx)?;
            (Transport::new(link, spawn.wait), memfd)
        }
    };
    command.stdin(Stdio::from(child_stdin)).stdout(Stdio::from(child_stdout));
    let child = start(&mut command)?;
    // The command holds the child's ends; drop it so only the child keeps them, and the
    // child's death shows up here as end of stream (or a hung-up liveness pipe).
    drop(command);
    let mut transport = transport;
    transport.watch_peer(child.id());
    Ok((transport, child))
}

/// Starts `command`, or says which program could not be started and why
/// ([`Error::CannotStart`]).
pub(crate) fn start(command: &mut Command) -> Result<Child> {
    command.spawn().map_err(|source| Error::CannotStart {
        program: command.get_program().to_string_lossy().into_owned(),
        source,
    })
}

/// [`spawn_connected`], with the child in a guard that terminates and reaps it; with
/// `interrupted`, the wait for a tcp server's announcement asks it every
/// [`crate::transport::INTERRUPT_CHECK`] and ends in [`Error::Interrupted`] once it says yes.
///
/// # Errors
/// As [`spawn_connected`], and [`Error::Interrupted`].
pub fn spawn_with_transport(
    command: Command,
    spawn: &Spawn,
    interrupted: Option<&dyn Fn() -> bool>,
) -> Result<(Transport, ChildGuard)> {
    let (transport, child) = spawn_connected_unless(command, spawn, interrupted)?;
    Ok((transport, ChildGuard { child }))
}

thread_local! {
    /// How many [`TiedSpawns`] guards live on this thread.
    static TIED: Cell<u32> = const { Cell::new(0) };
}

/// While a guard lives, every server spawned on this thread ([`spawn_connected`], and so
/// `Peer::spawn*` and [`spawn_with_transport`]) gets `SIGKILL` from the kernel when this thread
/// ends — with the process, however it ends (`PR_SET_PDEATHSIG`). For runs whose servers all
/// live and die inside one call on this thread, as the report's do: a server
/// that must outlive its spawning thread (a library caller's, spawned from a short-lived
/// thread) must not be spawned under a guard.
#[derive(Debug)]
pub struct TiedSpawns {
    /// Not `Send`: the guard counts for the thread that made it.
    _thread: std::marker::PhantomData<*const ()>,
}

impl TiedSpawns {
    /// Ties this thread's spawns until the guard is dropped (guards nest: spawns stay tied
    /// while any lives).
    #[must_use = "spawns are tied only while the guard lives"]
    pub fn tie() -> TiedSpawns {
        TIED.with(|tied| tied.set(tied.get() + 1));
        TiedSpawns { _thread: std::marker::PhantomData }
    }
}

impl Drop for TiedSpawns {
    fn drop(&mut self) {
        TIED.with(|tied| tied.set(tied.get().saturating_sub(1)));
    }
}

/// Stops process `pid` (`SIGSTOP`) so that it takes no CPU while another pair is measured; a
/// process that is already gone is no error (its absence shows at its next round trip).
pub fn pause(pid: u32) {
    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGSTOP);
}

/// Continues a process stopped by [`pause`] (`SIGCONT`); harmless for one that runs.
pub fn resume(pid: u32) {
    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGCONT);
}

/// [`Error::PeerExited`] for a process that ended with `status`, noticed while doing
/// `context`: the status in words and as a number.
pub fn exited(status: ExitStatus, context: String) -> Error {
    Error::PeerExited {
        status: describe_status(status),
        context,
        code: status.code(),
        signal: status.signal(),
    }
}

/// `error` with `server` (which process it was about) added where the error has room for
/// it: after what a [`Error::Timeout`] waited for, or after the context of a
/// [`Error::PeerExited`]; other errors are returned as they are.
pub fn naming(error: Error, server: &str) -> Error {
    match error {
        Error::Timeout { waiting_for, after } => {
            Error::Timeout { waiting_for: format!("{waiting_for} from {server}"), after }
        }
        Error::PeerExited { status, context, code, signal } => {
            Error::PeerExited { status, context: format!("{context}; {server}"), code, signal }
        }
        other => other,
    }
}

/// `error`, from reading a tcp announcement, with what a server is appended when the program
/// printed something else first or nothing at all (a pipe server, which sends a frame
/// instead, is already told apart, and told how to start for tcp).
fn told_what_a_server_is(error: Error) -> Error {
    match error {
        Error::Corrupted { what: "tcp announcement", detail } if detail.starts_with("expected") => {
            Error::Corrupted {
                what: "tcp announcement",
                detail: format!("{detail}; {SPEAK_PEERPIPE}"),
            }
        }
        Error::PeerClosed { context: BEFORE_ANNOUNCING } => Error::PeerClosed {
            context: concat!("before announcing its tcp address; ", speak_peerpipe!()),
        },
        other => other,
    }
}

/// `exited with status 3` or `was killed by signal 9 (SIGKILL)`.
pub fn describe_status(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        format!("exited with status {code}")
    } else if let Some(signal) = status.signal() {
        match Signal::try_from(signal) {
            Ok(name) => format!("was killed by signal {signal} ({name})"),
            Err(_) => format!("was killed by signal {signal}"),
        }
    } else {
        format!("ended ({status})")
    }
}

/// Owns a spawned server process and never lets it outlive the owner unreaped: dropping it
/// terminates (SIGTERM, then SIGKILL after [`TERM_GRACE`]) and reaps the process. What
/// [`spawn_with_transport`] returns, for a caller that speaks to its server by itself (the
/// `peer` command's raw floor, say) and wants it reaped as a [`crate::Peer`]'s is.
#[derive(Debug)]
pub struct ChildGuard {
    child: Child,
}

impl ChildGuard {
    /// The exit status, if the process has exited (reaping it), without waiting.
    ///
    /// # Errors
    /// As [`Child::try_wait`].
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Waits up to `limit` for the process to exit.
    ///
    /// # Errors
    /// As [`Child::try_wait`].
    pub fn wait_timeout(&mut self, limit: Duration) -> std::io::Result<Option<ExitStatus>> {
        let until = Instant::now() + limit;
        let mut pause = Duration::from_micros(50);
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(Some(status));
            }
            let now = Instant::now();
            if now >= until {
                return Ok(None);
            }
            thread::sleep(pause.min(until - now));
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }

    /// The error of a failed tcp set-up: [`Error::PeerExited`] naming `error` when
    /// the process had exited by itself (within a moment, as its end of stream may arrive
    /// first), else `error` after terminating it. An interrupt or a timeout is the caller's
    /// own end of the set-up, said as such even when the server, its stdin closed by then,
    /// has exited already. Always reaps.
    fn fail_setup(&mut self, error: Error) -> Error {
        let error = told_what_a_server_is(error);
        let patience = match error {
            Error::Interrupted { .. } | Error::Timeout { .. } => {
                let _ = self.terminate();
                return error;
            }
            Error::PeerClosed { .. } => Duration::from_millis(100),
            _ => Duration::ZERO,
        };
        match self.wait_timeout(patience) {
            Ok(Some(status)) => exited(status, format!("during the tcp set-up ({error})")),
            _ => {
                let _ = self.terminate();
                error
            }
        }
    }

    /// SIGTERM, then SIGKILL after [`TERM_GRACE`]; always reaps.
    ///
    /// # Errors
    /// As [`Child::wait`].
    pub fn terminate(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(status) = self.child.try_wait()? {
            return Ok(status);
        }
        let pid = Pid::from_raw(self.child.id() as i32);
        let _ = kill(pid, Signal::SIGTERM);
        // A stopped process (SIGSTOP) keeps SIGTERM pending until it runs again: continue it,
        // as a shell's `kill` does for stopped jobs, so it can act on the SIGTERM now.
        let _ = kill(pid, Signal::SIGCONT);
        if let Some(status) = self.wait_timeout(TERM_GRACE)? {
            return Ok(status);
        }
        let _ = self.child.kill();
        self.child.wait()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.terminate();
    }
}

impl ChildGuard {
    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_are_described_in_words() {
        assert_eq!(describe_status(ExitStatus::from_raw(3 << 8)), "exited with status 3");
        assert_eq!(describe_status(ExitStatus::from_raw(9)), "was killed by signal 9 (SIGKILL)");
    }
}
