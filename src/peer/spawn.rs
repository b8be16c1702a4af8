//! Spawning a server: the `Peer::spawn*` constructors, which follow the one rule of
//! `command` for argument lists and shell command lines.

use std::path::Path;
use std::process::Command;

use super::Peer;
use super::command::{argv_command, checked_shell_command};
use super::locate::find_peer_binary;
use super::options::Options;
use super::stderr_tail::StderrTail;
use crate::error::Result;
use crate::process::{Spawn, spawn_with_transport};

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
    /// [`Error::CannotStart`](crate::Error::CannotStart) naming the program when the command cannot
    /// be started; any handshake error (the server is then terminated and reaped, and
    /// [`Error::PeerExited`](crate::Error::PeerExited) says how it ended if it died).
    pub fn spawn(command: Command, options: Options) -> Result<Peer> {
        Peer::spawn_with(command, options, None)
    }

    /// [`Peer::spawn`] for a caller that must react to an interrupt (Ctrl-C) while a server
    /// starts: the waits for a tcp server's announcement and for the server's HELLO are cut
    /// into slices of [`INTERRUPT_CHECK`](crate::transport::INTERRUPT_CHECK), and
    /// `interrupted()` is asked between them. Once it says yes, the server is terminated and
    /// reaped, and [`Error::Interrupted`](crate::Error::Interrupted) returned.
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
    /// As [`Peer::spawn`], and [`Error::Interrupted`](crate::Error::Interrupted).
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
    /// [`shell_command`](super::shell_command): a simple command replaces the shell, so the spawned
    /// process is the server).
    ///
    /// # Errors
    /// [`Error::CannotStart`](crate::Error::CannotStart) when the program of a simple command is
    /// not there (see [`checked_shell_command`]); otherwise as [`Peer::spawn`].
    pub fn spawn_shell(command_line: &str, options: Options) -> Result<Peer> {
        Peer::spawn(checked_shell_command(command_line)?, options)
    }

    /// Spawns the program `argv[0]` with the arguments `argv[1..]` as the server, without a
    /// shell (see [`argv_command`]), as [`Peer::spawn`] does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when `argv` is empty; otherwise as
    /// [`Peer::spawn`].
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
    /// [`Error::CannotStart`](crate::Error::CannotStart) when a path is not an executable file;
    /// [`Error::PeerNotFound`](crate::Error::PeerNotFound) naming every place looked at for a name;
    /// otherwise as [`Peer::spawn`].
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
