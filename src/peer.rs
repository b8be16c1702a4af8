//! The client side: a [`Peer`] is a conversation with a server process (or thread) that
//! answers arrays with arrays.
//!
//! A peer is spawned from any command with its stdin and stdout on two anonymous pipes (or,
//! with [`Options::transport`] set to a shared-memory kind, with a shared region as its stdin),
//! greets it with HELLO, and then offers typed calls that send from the caller's slice and
//! receive into the caller's buffer. Once buffers are warm a call allocates nothing.
//!
//! Lifecycle: [`Peer::close`] (or dropping the peer) sends BYE, waits briefly for the server to
//! answer and exit, and reaps it. On any error other than an ERROR reply the server is
//! terminated (SIGTERM, then SIGKILL after a grace period) and reaped, so no orphan or zombie
//! is left behind; if it had already died, the error says how.
//!
//! ```
//! use std::thread;
//! use peerpipe::handlers::Echo;
//! use peerpipe::peer::{Options, Peer};
//! use peerpipe::server::{serve, ServeOptions};
//! use peerpipe::transport::{Transport, Wait};
//!
//! // A server on a thread; across processes use Peer::spawn or Peer::spawn_server.
//! let (client_end, mut server_end) = Transport::pipe_pair(Wait::Block)?;
//! let server = thread::spawn(move || serve(&mut server_end, &mut Echo::default(), &ServeOptions::default()));
//!
//! let mut peer = Peer::connect(client_end, Options::default())?;
//! let state = [1.0, 2.0, f64::NAN];
//! let mut reply = [0.0; 3];
//! let timing = peer.call_f64(&state, &mut reply)?;
//! assert_eq!(reply.map(f64::to_bits), state.map(f64::to_bits));
//! assert!(timing.round_trip_ns >= timing.server_ns);
//! peer.close()?;
//! server.join().unwrap()?;
//! # Ok::<(), peerpipe::Error>(())
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::clock::{self, Stamp};
use crate::codec::{self, Values, ValuesMut};
use crate::error::{Error, Result};
use crate::frame::{self, DEFAULT_MAX_FRAME_BYTES, HEADER_LEN, Header, Hello, Kind};
pub use crate::process::describe_status;
use crate::process::{ChildGuard, Spawn, spawn_with_transport};
pub use crate::transport::INTERRUPT_CHECK;
use crate::transport::{
    DEFAULT_PIPE_CAPACITY, DEFAULT_SHM_CAPACITY, Deadline, Received, Transport, TransportKind, Wait,
};
use crate::zerocopy;

mod stderr_tail;
mod words;
use stderr_tail::StderrTail;
use words::LastWords;

/// Default timeout for the handshake and for each reply: 10 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
pub use crate::transport::LEND_MIN_BYTES;
/// The environment variable naming the `peer` binary, looked at by [`find_peer_binary`].
pub const PEER_ENV: &str = "PEERPIPE_PEER";

/// Finds this crate's `peer` binary.
///
/// - `explicit` a path (it has a `/`): that path, when it is an executable file; otherwise
///   the error says why it cannot be started. A path is never replaced by another binary.
///   A relative path is relative to the current directory, as for [`std::process::Command`]:
///   `target/release/peer` exists only in a peerpipe checkout.
/// - `explicit` a bare name (such as `peer`), or `None`: the path in the environment
///   variable `PEERPIPE_PEER` ([`PEER_ENV`]), then each directory of `PATH`, for that name or
///   `peer` — where `cargo install --path .` (in a peerpipe clone) puts it.
///
/// # Errors
/// [`Error::CannotStart`] naming an explicit path that does not exist (`NotFound`) or is not
/// an executable file (`PermissionDenied`); [`Error::PeerNotFound`] naming every place looked
/// at, in order, and what was wrong there, when a name is found nowhere.
///
/// # Examples
/// ```
/// use std::path::Path;
/// use peerpipe::ErrorKind;
/// let err = peerpipe::peer::find_peer_binary(Some(Path::new("/nonexistent/peer"))).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::NotFound);
/// assert_eq!(
///     err.to_string(),
///     "cannot start \"/nonexistent/peer\": No such file or directory (os error 2)"
/// );
/// ```
pub fn find_peer_binary(explicit: Option<&Path>) -> Result<PathBuf> {
    let mut looked = Vec::new();
    let bare = explicit.is_some_and(|p| p.components().count() == 1 && !p.is_absolute());
    if let Some(path) = explicit.filter(|_| !bare) {
        return match executable(path) {
            Ok(()) => Ok(path.to_path_buf()),
            Err(why) => Err(cannot_start(path.as_os_str(), why)),
        };
    }
    match std::env::var_os(PEER_ENV).filter(|v| !v.is_empty()) {
        Some(value) => {
            let path = PathBuf::from(value);
            match executable(&path) {
                Ok(()) => return Ok(path),
                Err(why) => looked.push(format!("{PEER_ENV}={} ({why})", path.display())),
            }
        }
        None => looked.push(format!("{PEER_ENV} (not set)")),
    }
    let name = match explicit {
        Some(path) if bare => path.as_os_str().to_owned(),
        Some(path) => path.file_name().map_or_else(|| "peer".into(), ToOwned::to_owned),
        None => "peer".into(),
    };
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path_var).collect();
    for dir in &dirs {
        let candidate = dir.join(&name);
        if executable(&candidate).is_ok() {
            return Ok(candidate);
        }
    }
    let shown = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(":");
    looked.push(format!(
        "{} on PATH ({})",
        Path::new(&name).display(),
        if dirs.is_empty() { "PATH is empty".to_owned() } else { format!("not in {shown}") }
    ));
    Err(Error::PeerNotFound { looked: looked.join(", "), env: PEER_ENV })
}

/// `sh -c COMMAND_LINE`, as [`Peer::spawn_shell`] and `peer --spawn` run a server command.
///
/// A simple command — words only, no shell operators, redirections, substitutions or
/// assignments, and not a shell builtin — runs as `exec COMMAND_LINE`, so the shell replaces
/// itself with the server: the spawned pid is the server's (its CPU time is what the report's
/// `srv cpu` reads, and `SIGSTOP` stops the server itself), not that of a waiting `sh`.
///
/// # Examples
/// ```
/// use peerpipe::peer::shell_command;
/// let args = |c: std::process::Command| c.get_args().map(|a| a.to_str().unwrap().to_owned()).collect::<Vec<_>>();
/// assert_eq!(args(shell_command("peer --role server")), ["-c", "exec peer --role server"]);
/// assert_eq!(args(shell_command("cd /tmp && peer --role server")), ["-c", "cd /tmp && peer --role server"]);
/// ```
pub fn shell_command(command_line: &str) -> Command {
    let mut command = Command::new("sh");
    command.arg("-c");
    if is_simple_command(command_line) {
        command.arg(format!("exec {}", command_line.trim_start()));
    } else {
        command.arg(command_line);
    }
    command
}

/// [`shell_command`], after making sure the program of a simple command can be started: a
/// program that is not there is an error naming it here, instead of a shell that exits with
/// status 127 after the spawn. A command line that is not simple (or whose program is quoted
/// or a pattern) is left to the shell.
///
/// # Errors
/// [`Error::CannotStart`] naming the program: `NotFound` when a path does not exist or a name
/// is on no directory of `PATH`, `PermissionDenied` when it is not an executable file.
///
/// # Examples
/// ```
/// use peerpipe::ErrorKind;
/// let err = peerpipe::peer::checked_shell_command("target/release/pear --role server").unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::NotFound);
/// assert!(err.to_string().starts_with("cannot start \"target/release/pear\": "), "{err}");
/// assert!(peerpipe::peer::checked_shell_command("exit 3").is_ok()); // the shell's business
/// ```
pub fn checked_shell_command(command_line: &str) -> Result<Command> {
    const LEFT_TO_THE_SHELL: &[char] = &['\'', '"', '\\', '*', '?', '[', '~'];
    if is_simple_command(command_line)
        && let Some(program) = command_line.split_whitespace().next()
        && !program.contains(LEFT_TO_THE_SHELL)
    {
        if program.contains('/') {
            executable(Path::new(program))
                .map_err(|why| cannot_start(std::ffi::OsStr::new(program), why))?;
        } else if let Some(path_var) = std::env::var_os("PATH") {
            let found =
                std::env::split_paths(&path_var).any(|dir| executable(&dir.join(program)).is_ok());
            if !found {
                return Err(cannot_start(std::ffi::OsStr::new(program), "no such file"));
            }
        }
    }
    Ok(shell_command(command_line))
}

/// The command for `argv`: the program `argv[0]` (looked up on `PATH` when it has no `/`)
/// with the arguments `argv[1..]`, run without a shell.
///
/// # Errors
/// [`Error::InvalidArgument`] when `argv` is empty.
pub fn argv_command<S: AsRef<std::ffi::OsStr>>(argv: &[S]) -> Result<Command> {
    let Some((program, args)) = argv.split_first() else {
        return Err(Error::InvalidArgument {
            what: "command",
            reason: "the argument list is empty; its first element must name the program".into(),
        });
    };
    let mut command = Command::new(program);
    command.args(args);
    Ok(command)
}

/// Words only: no operator, redirection, substitution, glob-free quoting aside; the first word
/// is not an assignment, a keyword or a builtin that `exec` cannot run.
fn is_simple_command(line: &str) -> bool {
    const SPECIAL: &[char] = &[';', '&', '|', '<', '>', '(', ')', '$', '`', '\n', '{', '}', '#'];
    const NOT_EXECUTABLE: &[&str] = &[
        "cd", "export", "set", "unset", "eval", "exec", "source", ".", "alias", "if", "for",
        "while", "until", "case", "!", "time", "local", "readonly", "shift", "trap", "ulimit",
        "umask", "wait", "return", "exit", "break", "continue",
    ];
    let Some(first) = line.split_whitespace().next() else { return false };
    !line.contains(SPECIAL) && !first.contains('=') && !NOT_EXECUTABLE.contains(&first)
}

/// True when process `pid`'s chain of parents (read from `/proc`) reaches `ancestor`.
fn is_descendant(pid: u32, ancestor: u32) -> bool {
    let mut current = pid;
    for _ in 0..32 {
        let Some(parent) = parent_of(current) else { return false };
        if parent == ancestor {
            return true;
        }
        if parent <= 1 {
            return false;
        }
        current = parent;
    }
    false
}

/// The parent pid from `/proc/PID/stat` (the field after the state, after the `)` that ends
/// the command name, which may itself contain spaces and parentheses).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// [`Error::CannotStart`] for `program`, for the reason [`executable`] gave.
fn cannot_start(program: &std::ffi::OsStr, why: &str) -> Error {
    let errno = match why {
        "no such file" => nix::errno::Errno::ENOENT,
        _ => nix::errno::Errno::EACCES,
    };
    Error::CannotStart {
        program: program.to_string_lossy().into_owned(),
        source: std::io::Error::from_raw_os_error(errno as i32),
    }
}

/// Ok when `path` is a file with an execute bit; otherwise what is wrong with it.
fn executable(path: &Path) -> std::result::Result<(), &'static str> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Err(_) => Err("no such file"),
        Ok(meta) if !meta.is_file() => Err("not a file"),
        Ok(meta) if meta.permissions().mode() & 0o111 == 0 => Err("not executable"),
        Ok(_) => Ok(()),
    }
}

/// Why a handshake fails when the peer's HELLO is byte for byte the one this side sent.
pub const OWN_HELLO_ECHOED: &str =
    "the peer sent back our own HELLO: is the command echoing its input, like cat?";
/// How long [`Peer::close`] waits for the server to exit after BYE before terminating it.
pub const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// How payloads get from the caller's slice onto the wire and back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DataPath {
    /// Send straight from the caller's slice and receive straight into the caller's buffer
    /// (on little-endian targets; conversions such as f64→f32 always use the codec).
    #[default]
    ZeroCopy,
    /// Encode into and decode from a scratch buffer with the explicit little-endian codec.
    Codec,
}

impl DataPath {
    /// `zero-copy` or `codec`.
    pub fn name(&self) -> &'static str {
        match self {
            DataPath::ZeroCopy => "zero-copy",
            DataPath::Codec => "codec",
        }
    }
}

impl fmt::Display for DataPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DataPath {
    type Err = Error;
    fn from_str(text: &str) -> Result<DataPath> {
        match text {
            "zero-copy" => Ok(DataPath::ZeroCopy),
            "codec" => Ok(DataPath::Codec),
            _ => Err(Error::InvalidArgument {
                what: "path",
                reason: format!("expected zero-copy or codec, found {text:?}"),
            }),
        }
    }
}

/// Settings of a [`Peer`].
#[derive(Clone, Debug)]
pub struct Options {
    /// How to wait for replies and for room in the pipe. Default: [`Wait::Auto`].
    pub wait: Wait,
    /// Deadline for the handshake and for each reply; `None` waits forever. Default: 10 s.
    pub timeout: Option<Duration>,
    /// Largest reply payload accepted, announced in HELLO. Default: 64 MiB.
    pub max_frame_bytes: u64,
    /// Pipe capacity to ask for when spawning; `None` keeps the system default. Default: 1 MiB.
    pub pipe_capacity: Option<usize>,
    /// Transport to spawn servers on. Default: pipe. A shared-memory transport hands the
    /// server the region as its stdin, so the server must be started with the same
    /// `--transport` (as [`Peer::spawn_server`] does); it cannot cross machines.
    pub transport: TransportKind,
    /// Bytes per direction of a shared-memory transport. Default: 1 MiB
    /// ([`DEFAULT_SHM_CAPACITY`]).
    pub shm_capacity: usize,
    /// Zero-copy or codec. Default: zero-copy.
    pub path: DataPath,
    /// Give a spawned server's stderr a pipe that this process drains — forwarding every byte
    /// to its own stderr and keeping the last 4 KiB — so that an error about a server that
    /// exited (during the handshake or later) ends with what the server said. Default: true.
    /// Its cost: a thread per server, and a server that outlives this process loses its
    /// stderr (`peer soak` turns it off for that reason).
    pub capture_stderr: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            wait: Wait::default(),
            timeout: Some(DEFAULT_TIMEOUT),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            pipe_capacity: Some(DEFAULT_PIPE_CAPACITY),
            transport: TransportKind::Pipe,
            shm_capacity: DEFAULT_SHM_CAPACITY,
            path: DataPath::default(),
            capture_stderr: true,
        }
    }
}

/// Where the time of one round trip went, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallTiming {
    /// Client: converting the request into wire bytes; 0 on the zero-copy path, which converts
    /// nothing (and is not timed, so that no clock read sits on its critical path).
    pub encode_ns: u64,
    /// Client: converting the reply from wire bytes; 0 on the zero-copy path of a
    /// little-endian machine (a big-endian one swaps the bytes in place, and that is timed).
    pub decode_ns: u64,
    /// Server: from reading the request header to writing the reply (the reply's `aux`).
    pub server_ns: u64,
    /// The whole call, from before encoding to after decoding.
    pub round_trip_ns: u64,
}

impl CallTiming {
    /// Moving bytes and waiting: round trip − encode − decode − server time (never negative).
    pub fn transfer_ns(&self) -> u64 {
        self.round_trip_ns.saturating_sub(self.encode_ns + self.decode_ns + self.server_ns)
    }
}

/// A received reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The seq of the request it answers.
    pub seq: u64,
    /// Where the time went.
    pub timing: CallTiming,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    seq: u64,
    started: Stamp,
    encode_ns: u64,
    /// The deadline of [`Peer::recv_for`]'s waits for this reply, from the first of them.
    reply_deadline: Option<Deadline>,
}

/// A conversation with a server.
#[derive(Debug)]
pub struct Peer {
    transport: Transport,
    child: Option<ChildGuard>,
    /// The spawned server's stderr, when captured ([`Options::capture_stderr`]).
    stderr: Option<StderrTail>,
    options: Options,
    server_hello: Hello,
    next_seq: u64,
    pending: VecDeque<Pending>,
    scratch: Vec<u8>,
    state: State,
    /// The server's last ERROR reply, appended to the error that ends the conversation.
    said: LastWords,
}

#[derive(Debug, PartialEq, Eq)]
enum State {
    Open,
    /// Ended by an error, whose message every later call repeats.
    Failed(String),
    Closed,
}

impl Peer {
    /// Spawns `command` with its stdin and stdout on two new pipes (its stderr is inherited)
    /// and exchanges HELLOs. The pipes are created `O_CLOEXEC`, so no other child inherits
    /// them and the server's death is seen as end of stream.
    ///
    /// With a shared-memory [`Options::transport`] the server's stdin is the memfd of the
    /// region instead, and its stdout pipe stays open only so each side can tell when the
    /// other dies; `command` must then start a server on the same transport.
    ///
    /// # Errors
    /// [`Error::CannotStart`] naming the program when the command cannot be started; any
    /// handshake error (the server is
    /// then terminated and reaped, and [`Error::PeerExited`] says how it ended if it died).
    pub fn spawn(command: Command, options: Options) -> Result<Peer> {
        Peer::spawn_with(command, options, None)
    }

    /// [`Peer::spawn`] for a caller that must react to an interrupt (Ctrl-C) while a server
    /// starts: the waits for a tcp server's announcement and for the server's HELLO are cut
    /// into slices of [`INTERRUPT_CHECK`], and `interrupted()` is asked between them. Once it
    /// says yes, the server is terminated and reaped, and [`Error::Interrupted`] returned.
    ///
    /// ```
    /// # use std::process::Command;
    /// # use std::time::{Duration, Instant};
    /// # use peerpipe::{Error, Options, Peer};
    /// let started = Instant::now();
    /// let mut silent = Command::new("sleep"); // a "server" that never says HELLO
    /// silent.arg("30");
    /// let give_up = || started.elapsed() > Duration::from_millis(200);
    /// let err = Peer::spawn_interruptible(silent, Options::default(), &give_up).unwrap_err();
    /// assert!(matches!(err, Error::Interrupted { .. }), "{err}");
    /// assert!(started.elapsed() < Duration::from_secs(5)); // not the 10 s handshake timeout
    /// ```
    ///
    /// # Errors
    /// As [`Peer::spawn`], and [`Error::Interrupted`].
    pub fn spawn_interruptible(
        command: Command,
        options: Options,
        interrupted: &dyn Fn() -> bool,
    ) -> Result<Peer> {
        Peer::spawn_with(command, options, Some(interrupted))
    }

    fn spawn_with(
        mut command: Command,
        options: Options,
        interrupted: Option<&dyn Fn() -> bool>,
    ) -> Result<Peer> {
        let stderr = match options.capture_stderr {
            true => StderrTail::start().map(|(stdio, tail)| {
                command.stderr(stdio);
                tail
            }),
            false => None,
        };
        let spawn = Spawn::from_options(&options);
        let (transport, child) = spawn_with_transport(command, &spawn, interrupted)?;
        let mut peer = Peer::new(transport, Some(child), options);
        peer.stderr = stderr;
        peer.handshake(interrupted)?;
        Ok(peer)
    }

    /// Spawns `sh -c COMMAND_LINE` as the server, e.g. `ssh host peer --role server` (see
    /// [`shell_command`]: a simple command replaces the shell, so the spawned process is the
    /// server).
    ///
    /// # Errors
    /// [`Error::CannotStart`] when the program of a simple command is not there (see
    /// [`checked_shell_command`]); otherwise as [`Peer::spawn`].
    pub fn spawn_shell(command_line: &str, options: Options) -> Result<Peer> {
        Peer::spawn(checked_shell_command(command_line)?, options)
    }

    /// Spawns the program `argv[0]` with the arguments `argv[1..]` as the server, without a
    /// shell (see [`argv_command`]), as [`Peer::spawn`] does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `argv` is empty; otherwise as [`Peer::spawn`].
    pub fn spawn_argv<S: AsRef<std::ffi::OsStr>>(argv: &[S], options: Options) -> Result<Peer> {
        Peer::spawn(argv_command(argv)?, options)
    }

    /// Spawns this crate's `peer` binary as `peer --role server --handler HANDLER`, with the
    /// same wait strategy, frame limit and transport as `options`. `peer_exe` is found as
    /// [`find_peer_binary`] says: a path is used as it is, a bare name is looked for in
    /// `$PEERPIPE_PEER`, then on `PATH` (so a bare `"peer"` works once
    /// `cargo install --path .` has put it there).
    ///
    /// # Errors
    /// [`Error::CannotStart`] when a path is not an executable file; [`Error::PeerNotFound`]
    /// naming every place looked at for a name; otherwise as [`Peer::spawn`].
    pub fn spawn_server(
        peer_exe: impl AsRef<Path>,
        handler: &str,
        options: Options,
    ) -> Result<Peer> {
        let exe = find_peer_binary(Some(peer_exe.as_ref()))?;
        let command = Peer::server_command(exe, handler, &options);
        Peer::spawn(command, options)
    }

    /// [`Peer::spawn_server`] with the `peer` binary found by [`find_peer_binary`]`(None)`:
    /// `$PEERPIPE_PEER`, then `peer` on `PATH`.
    ///
    /// # Errors
    /// As [`Peer::spawn_server`].
    pub fn spawn_handler(handler: &str, options: Options) -> Result<Peer> {
        let exe = find_peer_binary(None)?;
        Peer::spawn_server(exe, handler, options)
    }

    /// The command [`Peer::spawn_server`] runs: `peer_exe --role server --handler HANDLER`
    /// with the wait strategy, frame limit and transport of `options`, for a caller that adds
    /// server flags of its own (such as `--server-delay`) before [`Peer::spawn`].
    ///
    /// # Examples
    /// ```
    /// use peerpipe::{Options, Peer};
    /// let command = Peer::server_command("peer", "echo", &Options::default());
    /// let args: Vec<_> = command.get_args().map(|a| a.to_str().unwrap()).collect();
    /// assert_eq!(args[..4], ["--role", "server", "--handler", "echo"]);
    /// assert!(args.contains(&"--transport"));
    /// ```
    pub fn server_command(peer_exe: impl AsRef<Path>, handler: &str, options: &Options) -> Command {
        let mut command = Command::new(peer_exe.as_ref());
        command
            .args(["--role", "server", "--handler", handler])
            .arg("--wait")
            .arg(options.wait.to_string())
            .arg("--max-frame-bytes")
            .arg(options.max_frame_bytes.to_string())
            .arg("--transport")
            .arg(options.transport.name());
        command
    }

    /// Talks to a server over an existing transport (e.g. one end of [`Transport::pair`]),
    /// exchanging HELLOs first.
    ///
    /// # Errors
    /// Any handshake error.
    pub fn connect(transport: Transport, options: Options) -> Result<Peer> {
        let mut peer = Peer::new(transport, None, options);
        peer.handshake(None)?;
        Ok(peer)
    }

    fn new(transport: Transport, child: Option<ChildGuard>, options: Options) -> Peer {
        Peer {
            transport,
            child,
            stderr: None,
            options,
            server_hello: Hello::default(),
            next_seq: 1,
            pending: VecDeque::new(),
            scratch: Vec::new(),
            state: State::Open,
            said: LastWords::default(),
        }
    }

    fn handshake(&mut self, interrupted: Option<&dyn Fn() -> bool>) -> Result<()> {
        let result = self.exchange_hellos(interrupted);
        result.map_err(|e| self.fail(e, "during the handshake"))
    }

    /// The header of the server's HELLO by `deadline`; with `interrupted`, waited for in
    /// slices of [`INTERRUPT_CHECK`] (a slice that ends with nothing read has consumed
    /// nothing), asking `interrupted` between them.
    fn recv_hello_header(
        &mut self,
        deadline: Deadline,
        interrupted: Option<&dyn Fn() -> bool>,
    ) -> Result<Option<[u8; HEADER_LEN]>> {
        let Some(interrupted) = interrupted else { return self.transport.recv_header(deadline) };
        loop {
            let slice = deadline.or_idle_until(Instant::now() + INTERRUPT_CHECK);
            match self.transport.recv_header(slice) {
                Err(Error::Timeout { .. }) if !deadline.passed(Instant::now()) => {
                    if interrupted() {
                        return Err(Error::Interrupted { during: "while waiting for HELLO" });
                    }
                }
                other => return other,
            }
        }
    }

    fn exchange_hellos(&mut self, interrupted: Option<&dyn Fn() -> bool>) -> Result<()> {
        let hello = Hello {
            max_frame_bytes: self.options.max_frame_bytes,
            implementation: Some(frame::implementation_name()),
            ..Hello::default()
        };
        let ours = hello.to_payload();
        let payload = &ours;
        let header = Header::control(Kind::Hello, 0, payload.len() as u64).to_bytes();
        let deadline = Deadline::after(self.options.timeout);
        self.transport.send_frame(&header, payload, deadline)?;
        // The clock of the calls' split is chosen (and calibrated) while the server answers,
        // not in the first call.
        clock::init();
        let raw = self
            .recv_hello_header(deadline, interrupted)
            .map_err(|e| retarget(e, "the server's HELLO"))?
            .ok_or(Error::PeerClosed { context: "before sending HELLO" })?;
        let header = Header::parse(&raw, self.options.max_frame_bytes)?;
        let payload = self.recv_control_payload(&header, deadline)?;
        match header.kind {
            Kind::Hello => {}
            Kind::Error => {
                return Err(Error::Remote {
                    seq: header.seq,
                    message: String::from_utf8_lossy(payload).into_owned(),
                });
            }
            found => return Err(Error::UnexpectedKind { expected: "HELLO", found }),
        }
        if payload == ours.as_slice() {
            return Err(Error::BadHello { reason: OWN_HELLO_ECHOED.to_owned() });
        }
        let hello = Hello::parse(payload)?;
        if !hello.is_server() {
            let found = match &hello.role {
                None => "no role".to_owned(),
                Some(role) => format!("role={role:?}"),
            };
            return Err(Error::BadHello {
                reason: format!(
                    "expected role=server in the server's HELLO, found {found}: is the command \
                     a peerpipe server? (docs/PROTOCOL.md §4)"
                ),
            });
        }
        self.server_hello = hello;
        Ok(())
    }

    /// Reads a control payload (bounded by [`frame::MAX_CONTROL_PAYLOAD`] in `Header::parse`)
    /// into the scratch buffer.
    fn recv_control_payload(&mut self, header: &Header, deadline: Deadline) -> Result<&[u8]> {
        let len = header.payload_bytes()? as usize;
        if header.kind == Kind::Data {
            return Ok(&[]);
        }
        grow(&mut self.scratch, len);
        self.transport.recv_payload(&mut self.scratch[..len], deadline)?;
        Ok(&self.scratch[..len])
    }

    /// The server's HELLO: its frame limit, handler and implementation.
    pub fn server_hello(&self) -> &Hello {
        &self.server_hello
    }

    /// Bytes that can be in flight in each direction: the smaller pipe's capacity, or the
    /// shared ring or slot size; `None` when unknown.
    pub fn capacity(&self) -> Option<usize> {
        self.transport.capacity()
    }

    /// Most requests that may be in flight at once, when the transport bounds it by count
    /// (`shm-sem`: 3, each at most [`Peer::capacity`] bytes); `None` when only bytes bound it.
    pub fn max_in_flight(&self) -> Option<usize> {
        self.transport.max_frames_in_flight()
    }

    /// What this side's [`Wait::Auto`] has learned of the connection, and what its waits saw
    /// (unused with another wait strategy).
    pub fn auto_wait(&self) -> &crate::transport::AutoWait {
        self.transport.auto_wait()
    }

    /// Which transport this peer talks over.
    pub fn transport_kind(&self) -> TransportKind {
        self.transport.kind()
    }

    /// The id of the process this peer spawned — the server itself, or what stands between
    /// (`sh -c`, an ssh client) — until it is reaped; `None` for a peer that connected to an
    /// existing transport.
    pub fn spawned_pid(&self) -> Option<u32> {
        self.child.as_ref().map(|child| child.id())
    }

    /// The id of the local process that serves, when this peer spawned the server and it can
    /// be known: the spawned process when its HELLO's `pid=` names it (or names none), a
    /// descendant of it when the HELLO names that (a server behind `sh -c "cd dir && peer
    /// …"`), and `None` when the HELLO names a process that is not ours — a server on another
    /// machine (`ssh host peer …`), whose CPU time cannot be read here.
    pub fn server_pid(&self) -> Option<u32> {
        let spawned = self.child.as_ref()?.id();
        match self.server_hello.pid {
            None => Some(spawned),
            Some(pid) if pid == spawned || is_descendant(pid, spawned) => Some(pid),
            Some(_) => None,
        }
    }

    /// Switches between the zero-copy and codec paths for the following calls.
    pub fn set_path(&mut self, path: DataPath) {
        self.options.path = path;
    }

    /// Changes the deadline of each following reply (and of `close`); `None` waits forever.
    /// A call already under way keeps the deadline it started with.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.options.timeout = timeout;
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Number of requests sent whose replies have not been received yet.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Sends one DATA request and returns its seq, without waiting for the reply. Several
    /// requests may be in flight; receive their replies in order with [`Peer::recv`]. The
    /// replies of all requests in flight must fit in the pipe or ring (see
    /// [`Peer::capacity`]), because the server stops reading while its reply pipe is full;
    /// over `shm-sem` at most [`Peer::max_in_flight`] requests may be in flight.
    ///
    /// # Errors
    /// [`Error::FrameTooLarge`] when the payload exceeds the server's `max_frame_bytes`, and
    /// [`Error::InvalidArgument`] when the transport's limit of requests in flight is reached
    /// (nothing is sent, the peer stays usable); [`Error::Timeout`] or [`Error::PeerClosed`] /
    /// [`Error::PeerExited`] when the frame cannot be written (the server is then terminated).
    pub fn send(&mut self, values: Values<'_>) -> Result<u64> {
        self.send_with(values, false)
    }

    /// [`Peer::send`]; with `lend`, a large zero-copy payload may be lent to the transport
    /// instead of copied (`vmsplice` on a pipe). Only [`Peer::call`] lends: it returns after
    /// the reply, and a server replies only after reading the whole request, so the caller's
    /// slice is not referred to by the pipe any more when the caller gets it back.
    fn send_with(&mut self, values: Values<'_>, lend: bool) -> Result<u64> {
        self.check_open()?;
        let started = Stamp::now();
        let wire_len = values.wire_len();
        if wire_len as u64 > self.server_hello.max_frame_bytes {
            return Err(Error::FrameTooLarge {
                payload_bytes: wire_len as u64,
                max_frame_bytes: self.server_hello.max_frame_bytes,
            });
        }
        if let Some(max) = self.transport.max_frames_in_flight()
            && self.pending.len() >= max
        {
            return Err(Error::InvalidArgument {
                what: "pipelining",
                reason: format!(
                    "{} allows at most {max} requests in flight and {} are; receive a reply \
                     first",
                    self.transport.kind(),
                    self.pending.len()
                ),
            });
        }
        let seq = self.next_seq;
        let header = Header::data(seq, values.wire_dtype(), values.len() as u64).to_bytes();
        // The payload goes out from the caller's memory (one writev of header + slice), or the
        // codec writes the whole frame, laid out as on the wire, into the scratch buffer, which
        // goes out with one plain write.
        let zero_copy = match self.options.path {
            DataPath::ZeroCopy => zerocopy::wire_bytes(values),
            DataPath::Codec => None,
        };
        if zero_copy.is_none() && self.codec_in_place() {
            // Over shm-ring the codec encodes straight into the ring, piece by piece as room
            // appears; encode_ns is the time spent inside the encoder (see
            // docs/experiments/conversion.md).
            let deadline = Deadline::from_first_wait(self.options.timeout);
            let mut encode_ns = 0;
            let mut fill = |at: usize, dst: &mut [u8]| {
                let t = Stamp::now();
                let result = codec::encode_at(values, at, dst);
                encode_ns += t.elapsed_nanos();
                result
            };
            let sent = self.transport.send_frame_filled(&header, wire_len, &mut fill, deadline);
            if let Err(e) = sent {
                let context = format!("while sending seq {seq}");
                return Err(self.fail(retarget(e, &format!("room to send seq {seq}")), &context));
            }
            self.pending.push_back(Pending { seq, started, encode_ns, reply_deadline: None });
            self.next_seq += 1;
            return Ok(seq);
        }
        let frame_len = HEADER_LEN + wire_len + frame::padding_len(wire_len);
        if zero_copy.is_none() {
            grow(&mut self.scratch, frame_len);
            let frame = &mut self.scratch[..frame_len];
            frame[..HEADER_LEN].copy_from_slice(&header);
            codec::encode_into(values, &mut frame[HEADER_LEN..HEADER_LEN + wire_len])?;
            frame[HEADER_LEN + wire_len..].fill(0);
        }
        // Zero-copy converts nothing: no clock read (on the critical path) for an encode that
        // does not happen; its encode_ns is 0 and the header's few ns count as transfer.
        let encode_ns = if zero_copy.is_some() { 0 } else { started.elapsed_nanos() };
        let deadline = Deadline::from_first_wait(self.options.timeout);
        let sent = match zero_copy {
            Some(payload) if lend && payload.len() >= LEND_MIN_BYTES => {
                self.transport.send_frame_lent(&header, payload, deadline)
            }
            Some(payload) => self.transport.send_frame(&header, payload, deadline),
            None => self.transport.send_bytes(&self.scratch[..frame_len], deadline),
        };
        if let Err(e) = sent {
            let context = format!("while sending seq {seq}");
            return Err(self.fail(retarget(e, &format!("room to send seq {seq}")), &context));
        }
        self.pending.push_back(Pending { seq, started, encode_ns, reply_deadline: None });
        self.next_seq += 1;
        Ok(seq)
    }

    /// Receives the reply to the oldest request in flight into `dst`, which fixes the dtype
    /// and count the reply must have.
    ///
    /// # Errors
    /// [`Error::Remote`] when the server answered ERROR (the peer stays usable); otherwise
    /// [`Error::Timeout`], [`Error::SeqMismatch`], [`Error::DtypeMismatch`],
    /// [`Error::CountMismatch`], a frame error, or [`Error::PeerExited`] /
    /// [`Error::PeerClosed`], after which the server is terminated. On error the contents of
    /// `dst` are unspecified.
    pub fn recv(&mut self, dst: ValuesMut<'_>) -> Result<Reply> {
        let deadline = Deadline::after(self.options.timeout);
        let reply = self.recv_until(dst, deadline, None)?;
        Ok(reply.expect("a wait without an idle limit returns a reply or an error"))
    }

    /// Like [`Peer::recv`], but returns `Ok(None)` when no byte of the reply has arrived
    /// within `patience`: the request stays in flight and the peer untouched, so the caller
    /// can wait again — in slices, checking for an interrupt in between, as the Python binding
    /// does for Ctrl-C. A reply that has started arriving is read to its end. The timeout of
    /// [`Options::timeout`] counts from the first of these waits for the reply, as a
    /// [`Peer::recv`]'s counts from its start; once it has passed, the error (and the server's
    /// termination) are those of [`Peer::recv`].
    ///
    /// # Errors
    /// As [`Peer::recv`].
    pub fn recv_for(&mut self, dst: ValuesMut<'_>, patience: Duration) -> Result<Option<Reply>> {
        let timeout = self.options.timeout;
        let Some(pending) = self.pending.front_mut() else {
            return self.recv(dst).map(Some); // the error for nothing in flight
        };
        let overall = *pending.reply_deadline.get_or_insert_with(|| Deadline::after(timeout));
        let deadline = overall.or_idle_until(Instant::now() + patience);
        self.recv_until(dst, deadline, Some(overall))
    }

    /// The reply to the oldest request, by `deadline`; `Ok(None)` when `deadline` has an idle
    /// limit that passed with nothing read while `overall` has not passed.
    fn recv_until(
        &mut self,
        dst: ValuesMut<'_>,
        deadline: Deadline,
        overall: Option<Deadline>,
    ) -> Result<Option<Reply>> {
        self.check_open()?;
        let Some(pending) = self.pending.front().copied() else {
            return Err(Error::InvalidArgument {
                what: "recv",
                reason: "no request is in flight".into(),
            });
        };
        match self.recv_reply(pending, dst, deadline) {
            Ok(reply) => {
                self.pending.pop_front();
                Ok(Some(reply))
            }
            // Once a byte has arrived the idle limit is gone, so a timeout before the overall
            // deadline can only be the idle limit, with nothing consumed.
            Err(Error::Timeout { .. })
                if overall.is_some_and(|overall| !overall.passed(Instant::now())) =>
            {
                Ok(None)
            }
            Err(e) if e.is_recoverable() => {
                self.pending.pop_front();
                self.said.heard(&e);
                Err(e)
            }
            Err(e) => {
                let context = format!("while waiting for the reply to seq {}", pending.seq);
                Err(self.fail(retarget(e, &format!("the reply to seq {}", pending.seq)), &context))
            }
        }
    }

    fn recv_reply(
        &mut self,
        pending: Pending,
        mut dst: ValuesMut<'_>,
        deadline: Deadline,
    ) -> Result<Reply> {
        // Header and payload in one read when the reply has the expected length: the payload
        // lands in the caller's buffer (zero-copy, readv) or, for the codec, the whole frame in
        // the scratch buffer (one plain read), payload at `payload`.
        let len = dst.wire_len();
        let payload = HEADER_LEN..HEADER_LEN + len;
        let shm_codec = self.codec_in_place();
        let (received, in_dst) = match (self.options.path, zerocopy::wire_bytes_mut(&mut dst)) {
            (DataPath::ZeroCopy, Some(bytes)) => {
                (self.transport.recv_frame(bytes, deadline)?, true)
            }
            // Over shm-ring the codec decodes straight out of the ring: the header first, the
            // payload once the header says it is the expected reply.
            _ if shm_codec => match self.transport.recv_header(deadline)? {
                Some(raw) => (Received::Header(raw), false),
                None => (Received::End, false),
            },
            _ => {
                grow(&mut self.scratch, payload.end + frame::padding_len(len));
                (self.transport.recv_frame_contiguous(&mut self.scratch, len, deadline)?, false)
            }
        };
        // From here on the reply has started: it must be read to its end.
        let deadline = deadline.data_arrived();
        let (header, payload_read) = match received {
            Received::End => return Err(Error::PeerClosed { context: "before replying" }),
            Received::Header(raw) => (Header::parse(&raw, self.options.max_frame_bytes)?, false),
            Received::Whole(raw) => (Header::parse(&raw, self.options.max_frame_bytes)?, true),
            Received::Broken(_, error) => return Err(error),
        };
        let seq = header.seq;
        if seq != pending.seq {
            return Err(Error::SeqMismatch { expected: pending.seq, found: seq });
        }
        match header.kind {
            Kind::Data => {}
            Kind::Error => {
                let message = match (payload_read, in_dst) {
                    (true, true) => zerocopy::wire_bytes_mut(&mut dst).map(|b| &*b).unwrap_or(&[]),
                    (true, false) => &self.scratch[payload.clone()],
                    (false, _) => self.recv_control_payload(&header, deadline)?,
                };
                let message = String::from_utf8_lossy(message).into_owned();
                return Err(Error::Remote { seq, message });
            }
            found => {
                return Err(Error::UnexpectedKind { expected: "a DATA or ERROR reply", found });
            }
        }
        if header.dtype != dst.wire_dtype() {
            return Err(Error::DtypeMismatch {
                seq,
                expected: dst.wire_dtype(),
                found: header.dtype,
            });
        }
        if header.count != dst.len() as u64 {
            return Err(Error::CountMismatch {
                seq,
                expected: dst.len() as u64,
                found: header.count,
            });
        }
        if shm_codec && !in_dst {
            // decode_ns is the time spent inside the decoder, as the pieces arrive.
            let mut decode_ns = 0;
            let mut decoder = codec::PieceDecoder::new(dst);
            let mut drain = |src: &[u8]| {
                let t = Stamp::now();
                let result = decoder.push(src);
                decode_ns += t.elapsed_nanos();
                result
            };
            self.transport.recv_payload_drained(len, &mut drain, deadline)?;
            return Ok(Reply {
                seq,
                timing: CallTiming {
                    encode_ns: pending.encode_ns,
                    decode_ns,
                    server_ns: header.aux,
                    round_trip_ns: pending.started.elapsed_nanos(),
                },
            });
        }
        if !payload_read {
            // Only when bytes were read ahead earlier: the payload is still in the pipe.
            match zerocopy::wire_bytes_mut(&mut dst).filter(|_| in_dst) {
                Some(bytes) => self.transport.recv_payload(bytes, deadline)?,
                None => {
                    self.transport.recv_payload(&mut self.scratch[payload.clone()], deadline)?
                }
            }
        }
        let (decode_ns, done) = if in_dst && zerocopy::NATIVE_IS_WIRE {
            // Received in place, already in native order: nothing to decode, nothing to time.
            (0, Stamp::now())
        } else {
            let decode_started = Stamp::now();
            if in_dst {
                zerocopy::finish_receive(&mut dst);
            } else {
                codec::decode_into(&self.scratch[payload], dst)?;
            }
            let done = Stamp::now();
            (done.nanos_since(decode_started), done)
        };
        Ok(Reply {
            seq,
            timing: CallTiming {
                encode_ns: pending.encode_ns,
                decode_ns,
                server_ns: header.aux,
                round_trip_ns: done.nanos_since(pending.started),
            },
        })
    }

    /// Sends `values` and receives the reply into `dst`: one round trip. The reply must have
    /// the request's length and wire dtype, as every built-in handler's does; `dst` is checked
    /// before anything is sent. A server whose replies differ in shape from its requests is
    /// called with [`Peer::send`] and [`Peer::recv`].
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when `dst` is not as long as `values`, and
    /// [`Error::InvalidArgument`] when it would take another dtype off the wire than `values`
    /// put on it: nothing is sent and the peer stays usable. Otherwise those of
    /// [`Peer::send`] and [`Peer::recv`].
    ///
    /// # Examples
    /// ```
    /// # use std::thread;
    /// # use peerpipe::handlers::Echo;
    /// # use peerpipe::server::{serve, ServeOptions};
    /// # use peerpipe::transport::{Transport, Wait};
    /// # use peerpipe::{Error, Options, Peer};
    /// # let (client_end, mut server_end) = Transport::pipe_pair(Wait::Block)?;
    /// # let server = thread::spawn(move || serve(&mut server_end, &mut Echo::default(), &ServeOptions::default()));
    /// let mut peer = Peer::connect(client_end, Options::default())?;
    /// let state = vec![1.0; 500];
    /// let mut short = vec![0.0; 499];
    /// let err = peer.call_f64(&state, &mut short).unwrap_err(); // refused: nothing was sent
    /// assert!(matches!(err, Error::LengthMismatch { expected: 500, found: 499, .. }));
    /// let mut reply = vec![0.0; 500];
    /// peer.call_f64(&state, &mut reply)?; // the peer is still usable
    /// # peer.close()?;
    /// # server.join().unwrap()?;
    /// # Ok::<(), peerpipe::Error>(())
    /// ```
    pub fn call(&mut self, values: Values<'_>, dst: ValuesMut<'_>) -> Result<CallTiming> {
        self.check_open()?;
        check_reply_buffer(&values, &dst)?;
        if !self.pending.is_empty() {
            return Err(Error::InvalidArgument {
                what: "call",
                reason: format!(
                    "{} pipelined replies are still in flight; recv them first",
                    self.pending.len()
                ),
            });
        }
        self.send_with(values, true)?;
        Ok(self.recv(dst)?.timing)
    }

    /// Sends f64 values as f64 and receives an f64 reply of `reply.len()` elements.
    ///
    /// # Errors
    /// As [`Peer::call`].
    pub fn call_f64(&mut self, values: &[f64], reply: &mut [f64]) -> Result<CallTiming> {
        self.call(Values::F64(values), ValuesMut::F64(reply))
    }

    /// Ends the conversation: receives and discards replies still in flight, sends BYE, waits
    /// for the server's BYE and for the server process to exit (terminating it after
    /// [`CLOSE_GRACE`]), and returns its exit status when this peer spawned it.
    ///
    /// # Errors
    /// Any error of the exchange; the server is terminated and reaped all the same.
    pub fn close(mut self) -> Result<Option<ExitStatus>> {
        self.shutdown()
    }

    /// Ends the conversation without BYE: drops any request in flight, terminates the server
    /// (SIGTERM, then SIGKILL after [`crate::process::TERM_GRACE`]) and reaps it, returning
    /// its exit status when this peer spawned it. For abandoning a call in progress — on
    /// Ctrl-C, say — where [`Peer::close`] would first wait for the reply.
    ///
    /// # Errors
    /// [`Error::Io`] when the server cannot be reaped.
    pub fn terminate(mut self) -> Result<Option<ExitStatus>> {
        self.state = State::Closed;
        self.pending.clear();
        match self.child.as_mut() {
            Some(child) => Ok(Some(child.terminate()?)),
            None => Ok(None),
        }
    }

    fn shutdown(&mut self) -> Result<Option<ExitStatus>> {
        if self.state == State::Open {
            self.state = State::Closed;
            if let Err(e) = self.say_bye() {
                return Err(self.fail(e, "while closing"));
            }
        }
        self.state = State::Closed;
        let Some(child) = self.child.as_mut() else { return Ok(None) };
        if let Some(status) = child.wait_timeout(CLOSE_GRACE)? {
            return Ok(Some(status));
        }
        let status = child.terminate()?;
        Err(crate::process::exited(
            status,
            format!("after not exiting within {CLOSE_GRACE:?} of BYE"),
        ))
    }

    fn say_bye(&mut self) -> Result<()> {
        let deadline = Deadline::after(self.options.timeout);
        while let Some(pending) = self.pending.pop_front() {
            self.discard_reply(pending.seq, deadline)?;
        }
        let seq = self.next_seq;
        let header = Header::control(Kind::Bye, seq, 0).to_bytes();
        self.transport.send_frame(&header, &[], deadline)?;
        let raw = self
            .transport
            .recv_header(deadline)
            .map_err(|e| retarget(e, "the server's BYE"))?
            .ok_or(Error::PeerClosed { context: "before answering BYE" })?;
        let header = Header::parse(&raw, self.options.max_frame_bytes)?;
        if header.kind != Kind::Bye {
            return Err(Error::UnexpectedKind { expected: "BYE", found: header.kind });
        }
        if header.seq != seq {
            return Err(Error::SeqMismatch { expected: seq, found: header.seq });
        }
        Ok(())
    }

    fn discard_reply(&mut self, seq: u64, deadline: Deadline) -> Result<()> {
        let raw = self
            .transport
            .recv_header(deadline)?
            .ok_or(Error::PeerClosed { context: "before replying" })?;
        let header = Header::parse(&raw, self.options.max_frame_bytes)?;
        if header.seq != seq {
            return Err(Error::SeqMismatch { expected: seq, found: header.seq });
        }
        let len = header.payload_bytes()? as usize;
        grow(&mut self.scratch, len);
        self.transport.recv_payload(&mut self.scratch[..len], deadline)
    }

    fn check_open(&self) -> Result<()> {
        match &self.state {
            State::Open => Ok(()),
            State::Failed(cause) => Err(Error::ClosedAfter { cause: cause.clone() }),
            State::Closed => Err(Error::PeerClosed { context: "already (closed by this side)" }),
        }
    }

    /// Marks the peer failed (every later call repeats why), terminates and reaps the server,
    /// and names its exit in the error when it had died by itself.
    fn fail(&mut self, error: Error, context: &str) -> Error {
        let error = self.end_after(error, context);
        let error = self.said.attach(error);
        self.state = State::Failed(error.to_string());
        error
    }

    /// Terminates and reaps the server after `error`, and names its exit in the error when it
    /// had died by itself.
    fn end_after(&mut self, error: Error, context: &str) -> Error {
        self.pending.clear();
        let Some(child) = self.child.as_mut() else { return error };
        // A dead server shows up as end of stream slightly before its exit status is
        // available; give it a moment so the error can say how it ended.
        let died_on_its_own = match error {
            Error::PeerClosed { .. } | Error::Truncated { .. } => {
                child.wait_timeout(Duration::from_millis(100)).ok().flatten()
            }
            _ => child.try_wait().ok().flatten(),
        };
        match died_on_its_own {
            Some(status) => {
                let said = self
                    .stderr
                    .as_ref()
                    .map(|tail| tail.text(Duration::from_millis(200)))
                    .filter(|text| !text.is_empty())
                    .map_or_else(String::new, |text| format!("; its stderr ended with: {text}"));
                crate::process::exited(status, format!("{context} ({error}){said}"))
            }
            None => {
                let _ = child.terminate();
                error
            }
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if self.state == State::Open {
            let _ = self.shutdown();
        } else if let Some(child) = self.child.as_mut() {
            let _ = child.terminate();
        }
        // The server is reaped: its stderr ends now (unless a process it started holds it),
        // and the draining thread closes its end, so no descriptor outlives the peer.
        if let Some(tail) = &self.stderr {
            tail.wait_ended(STDERR_GRACE);
        }
    }
}

/// How long dropping a peer waits for its server's stderr to end after reaping the server.
const STDERR_GRACE: Duration = Duration::from_millis(100);

/// The reply buffer of a [`Peer::call`] must take the request's shape back: the same length
/// and the same dtype on the wire.
fn check_reply_buffer(values: &Values<'_>, dst: &ValuesMut<'_>) -> Result<()> {
    if dst.len() != values.len() {
        return Err(Error::LengthMismatch {
            what: "the reply buffer (a call's reply has the request's length)",
            expected: values.len() as u64,
            found: dst.len() as u64,
        });
    }
    if dst.wire_dtype() != values.wire_dtype() {
        return Err(Error::InvalidArgument {
            what: "reply buffer",
            reason: format!(
                "expected one that takes {} off the wire, as the request puts on it, found one \
                 that takes {}",
                values.wire_dtype(),
                dst.wire_dtype()
            ),
        });
    }
    Ok(())
}

impl Spawn {
    /// The connection settings of `options`. (Defined here rather than in
    /// [`crate::process`], which is below `peer` and does not import it.)
    ///
    /// ```
    /// use peerpipe::Options;
    /// use peerpipe::process::Spawn;
    /// let (ours, default) = (Spawn::from_options(&Options::default()), Spawn::default());
    /// assert_eq!(format!("{ours:?}"), format!("{default:?}"));
    /// ```
    pub fn from_options(options: &Options) -> Spawn {
        Spawn {
            wait: options.wait,
            transport: options.transport,
            pipe_capacity: options.pipe_capacity,
            shm_capacity: options.shm_capacity,
        }
    }
}

impl Peer {
    /// Whether the codec path encodes into and decodes out of the transport in place
    /// (`shm-ring`, whose ring lends its memory) rather than through the scratch buffer. Not
    /// pipes (one `write` of the whole frame beats many small ones), nor `shm-sem`, where a
    /// frame must travel as one chunk of the slot for three to be in flight (see
    /// `Link::max_frames_in_flight`).
    fn codec_in_place(&self) -> bool {
        self.transport.kind() == TransportKind::ShmRing
    }
}

/// Replaces the "what were we waiting for" of a timeout with something the caller recognises.
fn retarget(error: Error, waiting_for: &str) -> Error {
    match error {
        Error::Timeout { after, .. } => {
            Error::Timeout { waiting_for: format!("waiting for {waiting_for}"), after }
        }
        other => other,
    }
}

fn grow(buf: &mut Vec<u8>, len: usize) {
    if buf.len() < len {
        zerocopy::resize_exact(buf, len, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fourth_request_in_flight_over_shm_sem_is_refused_and_the_peer_stays_usable() {
        use crate::handlers::Echo;
        use crate::server::{ServeOptions, serve};
        let (client, mut server) = Transport::pair(TransportKind::ShmSem, Wait::Block).unwrap();
        let thread = std::thread::spawn(move || {
            serve(&mut server, &mut Echo::default(), &ServeOptions::default())
        });
        let mut peer = Peer::connect(client, Options::default()).unwrap();
        assert_eq!(peer.max_in_flight(), Some(3));
        for i in 0..3 {
            peer.send(Values::F64(&[f64::from(i)])).unwrap();
        }
        let err = peer.send(Values::F64(&[3.0])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid pipelining: shm-sem allows at most 3 requests in flight and 3 are; receive \
             a reply first"
        );
        let mut reply = [0.0];
        for i in 0..3 {
            peer.recv(ValuesMut::F64(&mut reply)).unwrap();
            assert_eq!(reply[0], f64::from(i));
        }
        peer.send(Values::F64(&[4.0])).unwrap();
        peer.recv(ValuesMut::F64(&mut reply)).unwrap();
        assert_eq!(reply[0], 4.0);
        peer.close().unwrap();
        thread.join().unwrap().unwrap();
    }

    #[test]
    fn transfer_is_what_remains_of_the_round_trip() {
        let t = CallTiming { encode_ns: 10, decode_ns: 20, server_ns: 30, round_trip_ns: 100 };
        assert_eq!(t.transfer_ns(), 40);
        let skewed =
            CallTiming { encode_ns: 10, decode_ns: 20, server_ns: 300, round_trip_ns: 100 };
        assert_eq!(skewed.transfer_ns(), 0);
    }

    /// A fake server on a thread: answers HELLO, then answers the first request with an ERROR
    /// whose message is exactly as long as the expected reply (so the speculative read puts it
    /// in the caller's buffer), then echoes the second request.
    fn fake_server(mut end: Transport, message: &'static [u8]) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let hello = Hello::server(1 << 20, "fake");
            let payload = hello.to_payload();
            let header = Header::control(Kind::Hello, 0, payload.len() as u64).to_bytes();
            end.send_frame(&header, &payload, Deadline::NEVER).unwrap();
            let mut buf = vec![0u8; 4096];
            let mut replies = 0;
            while replies < 2 {
                let raw = end.recv_header(Deadline::NEVER).unwrap().unwrap();
                let header = Header::parse(&raw, 1 << 20).unwrap();
                let len = header.payload_bytes().unwrap() as usize;
                end.recv_payload(&mut buf[..len], Deadline::NEVER).unwrap();
                if header.kind != Kind::Data {
                    continue; // the client's HELLO
                }
                replies += 1;
                if replies == 1 {
                    let error = Header::control(Kind::Error, header.seq, message.len() as u64);
                    end.send_frame(&error.to_bytes(), message, Deadline::NEVER).unwrap();
                } else {
                    end.send_frame(&raw, &buf[..len], Deadline::NEVER).unwrap();
                }
            }
        })
    }

    #[test]
    fn an_error_reply_as_long_as_the_expected_reply_keeps_its_message_and_the_peer() {
        for path in [DataPath::ZeroCopy, DataPath::Codec] {
            let (client, server) = Transport::pipe_pair(Wait::Block).unwrap();
            let server = fake_server(server, b"no, sir!");
            let options = Options { path, ..Options::default() };
            let mut peer = Peer::connect(client, options).unwrap();
            let mut out = [0.0f64; 1];
            match peer.call_f64(&[1.5], &mut out) {
                Err(Error::Remote { seq: 1, message }) => assert_eq!(message, "no, sir!"),
                other => panic!("{path}: expected Remote, got {other:?}"),
            }
            peer.call_f64(&[2.5], &mut out).unwrap();
            assert_eq!(out, [2.5], "{path}");
            drop(peer);
            server.join().unwrap();
        }
    }

    /// A fake server on a thread that answers HELLO, then echoes one request after
    /// `before_header`, sending the reply's header and, `before_payload` later, its payload;
    /// then waits for `release` (so the client sees no end of stream meanwhile).
    fn slow_echo_server(
        mut end: Transport,
        before_header: Duration,
        before_payload: Duration,
        release: std::sync::mpsc::Receiver<()>,
    ) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let hello = Hello::server(1 << 20, "slow");
            let payload = hello.to_payload();
            let header = Header::control(Kind::Hello, 0, payload.len() as u64).to_bytes();
            end.send_frame(&header, &payload, Deadline::NEVER).unwrap();
            let mut buf = vec![0u8; 4096];
            loop {
                let raw = end.recv_header(Deadline::NEVER).unwrap().unwrap();
                let header = Header::parse(&raw, 1 << 20).unwrap();
                let len = header.payload_bytes().unwrap() as usize;
                end.recv_payload(&mut buf[..len], Deadline::NEVER).unwrap();
                if header.kind == Kind::Data {
                    // Released early: the client gave up, stop without replying.
                    if release.recv_timeout(before_header).is_ok() {
                        return;
                    }
                    end.send_bytes(&raw, Deadline::NEVER).unwrap();
                    std::thread::sleep(before_payload);
                    end.send_bytes(&buf[..len], Deadline::NEVER).unwrap(); // 8-byte multiple
                    break;
                }
            }
            let _ = release.recv();
        })
    }

    #[test]
    fn recv_for_gives_up_untouched_while_nothing_arrives_and_finishes_a_started_reply() {
        let (client, server) = Transport::pipe_pair(Wait::Block).unwrap();
        let (release, released) = std::sync::mpsc::channel();
        let server = slow_echo_server(
            server,
            Duration::from_millis(150),
            Duration::from_millis(100),
            released,
        );
        let mut peer = Peer::connect(client, Options::default()).unwrap();
        let state = [1.5, -0.0, f64::NAN, 4.0];
        peer.send(Values::F64(&state)).unwrap();
        let mut reply = [0.0; 4];
        let mut idle_slices = 0;
        let started = Instant::now();
        let got = loop {
            match peer.recv_for(ValuesMut::F64(&mut reply), Duration::from_millis(20)).unwrap() {
                Some(got) => break got,
                None => idle_slices += 1,
            }
        };
        // ~150 ms of silence in 20 ms slices; the 100 ms between header and payload is waited
        // out inside one call, not returned as an idle slice in the middle of the frame.
        assert!((4..=8).contains(&idle_slices), "{idle_slices} idle slices");
        assert!(started.elapsed() >= Duration::from_millis(250));
        assert_eq!(got.seq, 1);
        assert_eq!(reply.map(f64::to_bits), state.map(f64::to_bits));
        release.send(()).unwrap();
        drop(peer);
        server.join().unwrap();
    }

    #[test]
    fn recv_for_past_the_timeout_since_its_first_wait_is_the_timeout_of_recv() {
        let (client, server) = Transport::pipe_pair(Wait::Block).unwrap();
        let (release, released) = std::sync::mpsc::channel();
        let server = slow_echo_server(server, Duration::from_secs(5), Duration::ZERO, released);
        let options = Options { timeout: Some(Duration::from_millis(100)), ..Options::default() };
        let mut peer = Peer::connect(client, options).unwrap();
        // The timeout counts from the first wait for the reply (as `recv`'s from its start),
        // not from the send: a caller busy for 60 ms before waiting still gets its 100 ms.
        peer.send(Values::F64(&[1.0])).unwrap();
        std::thread::sleep(Duration::from_millis(60));
        let mut reply = [0.0];
        let waited = Instant::now();
        let err = loop {
            match peer.recv_for(ValuesMut::F64(&mut reply), Duration::from_millis(30)) {
                Ok(None) => continue,
                Ok(Some(reply)) => panic!("unexpected reply {reply:?}"),
                Err(e) => break e,
            }
        };
        assert!(waited.elapsed() >= Duration::from_millis(100), "{:?}", waited.elapsed());
        assert!(waited.elapsed() < Duration::from_secs(2));
        match err {
            Error::Timeout { waiting_for, .. } => {
                assert_eq!(waiting_for, "waiting for the reply to seq 1")
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
        let after = peer.recv_for(ValuesMut::F64(&mut reply), Duration::from_millis(1));
        assert!(matches!(after, Err(Error::ClosedAfter { .. })), "{after:?}");
        release.send(()).unwrap();
        drop(peer);
        server.join().unwrap();
    }

    #[test]
    fn a_timeout_set_after_the_handshake_bounds_the_next_reply() {
        let (client, mut server) = Transport::pipe_pair(Wait::Block).unwrap();
        // A server that greets and then never answers.
        let silent = std::thread::spawn(move || {
            let hello = Hello::server(1 << 20, "silent");
            let payload = hello.to_payload();
            let header = Header::control(Kind::Hello, 0, payload.len() as u64).to_bytes();
            server.send_frame(&header, &payload, Deadline::NEVER).unwrap();
            let _ = server.recv_header(Deadline::NEVER);
            server
        });
        let mut peer = Peer::connect(client, Options::default()).unwrap();
        peer.set_timeout(Some(Duration::from_millis(20)));
        assert_eq!(peer.options().timeout, Some(Duration::from_millis(20)));
        let started = Instant::now();
        let err = peer.call_f64(&[1.0], &mut [0.0]).unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err}");
        assert!(started.elapsed() < DEFAULT_TIMEOUT / 2, "took {:?}", started.elapsed());
        drop(peer);
        drop(silent.join().unwrap());
    }

    #[test]
    fn data_paths_parse() {
        assert_eq!("codec".parse::<DataPath>().unwrap(), DataPath::Codec);
        assert!("copy".parse::<DataPath>().is_err());
    }
}
