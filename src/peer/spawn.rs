//! Spawning a server: the one rule for argument lists and shell command lines, and the
//! `Peer::spawn*` constructors.

use std::path::Path;
use std::process::Command;

use super::Peer;
use super::locate::{cannot_start, executable, find_peer_binary};
use super::options::Options;
use super::stderr_tail::StderrTail;
use crate::error::{Error, Result};
use crate::process::{Spawn, spawn_with_transport};

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
    pub(super) const LEFT_TO_THE_SHELL: &[char] = &['\'', '"', '\\', '*', '?', '[', '~'];
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
pub(super) fn is_simple_command(line: &str) -> bool {
    pub(super) const SPECIAL: &[char] =
        &[';', '&', '|', '<', '>', '(', ')', '$', '`', '\n', '{', '}', '#'];
    pub(super) const NOT_EXECUTABLE: &[&str] = &[
        "cd", "export", "set", "unset", "eval", "exec", "source", ".", "alias", "if", "for",
        "while", "until", "case", "!", "time", "local", "readonly", "shift", "trap", "ulimit",
        "umask", "wait", "return", "exit", "break", "continue",
    ];
    let Some(first) = line.split_whitespace().next() else { return false };
    !line.contains(SPECIAL) && !first.contains('=') && !NOT_EXECUTABLE.contains(&first)
}

/// True when process `pid`'s chain of parents (read from `/proc`) reaches `ancestor`.
pub(super) fn is_descendant(pid: u32, ancestor: u32) -> bool {
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
pub(super) fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
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
    /// into slices of [`INTERRUPT_CHECK`](crate::transport::INTERRUPT_CHECK), and
    /// `interrupted()` is asked between them. Once it says yes, the server is terminated and
    /// reaped, and [`Error::Interrupted`] returned.
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

    pub(super) fn spawn_with(
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
    /// `cargo install --path cli` has put it there).
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
