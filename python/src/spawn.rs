//! Spawning a server from Python: the options every constructor takes, `cmd` as a command,
//! and a handshake that Ctrl-C interrupts.

use std::process::Command;

use peerpipe::{DataPath, Options, TransportKind, Wait};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::boundary::{REAP_WAIT, SLICE};
use crate::errors::IntoPy;

/// Spawns `command` and exchanges HELLOs ([`peerpipe::Peer::spawn_interruptible`]) on a
/// thread of its own while this thread, with the GIL released, waits for it in slices of
/// [`SLICE`] and checks for signals between them: Ctrl-C during a handshake raises
/// `KeyboardInterrupt` within ~100 ms instead of after the timeout. Before raising it, this
/// thread tells the spawn to give up and waits (at most [`REAP_WAIT`]) while it terminates
/// and reaps the server, so no server outlives the interrupted spawn.
pub(crate) fn spawn_interruptibly(
    py: Python<'_>,
    command: Command,
    options: peerpipe::Options,
) -> PyResult<peerpipe::Peer> {
    let mut spawned = spawn_all_interruptibly(py, vec![command], options)?;
    spawned.pop().expect("one result per command")
}

/// [`spawn_interruptibly`] for several commands at once, each on a thread of its own, so that
/// slow starts (`srun`, `ssh`) overlap: one result per command, in order. Ctrl-C (the `Err`)
/// gives up on all of them, and every server already started is terminated and reaped.
pub(crate) fn spawn_all_interruptibly(
    py: Python<'_>,
    commands: Vec<Command>,
    options: peerpipe::Options,
) -> PyResult<Vec<PyResult<peerpipe::Peer>>> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc::{RecvTimeoutError, channel};
    let (sender, receiver) = channel();
    let give_up = Arc::new(AtomicBool::new(false));
    let n = commands.len();
    for (index, command) in commands.into_iter().enumerate() {
        let (asked, tell, options) = (Arc::clone(&give_up), sender.clone(), options.clone());
        let started = std::thread::Builder::new().name("peerpipe spawn".into()).spawn(move || {
            let interrupted = || asked.load(Ordering::Relaxed);
            let spawned = peerpipe::Peer::spawn_interruptible(command, options, &interrupted);
            // Nobody left to receive it (interrupted, and tired of waiting): dropping the
            // peer reaps the server.
            let _ = tell.send((index, spawned));
        });
        if let Err(e) = started {
            // Those started so far give up and reap what they started.
            give_up.store(true, Ordering::Relaxed);
            drop(sender);
            py.detach(move || while receiver.recv_timeout(REAP_WAIT).is_ok() {});
            return Err(PyOSError::new_err(format!("could not start a spawning thread: {e}")));
        }
    }
    drop(sender);
    let mut results: Vec<Option<peerpipe::Result<peerpipe::Peer>>> = (0..n).map(|_| None).collect();
    let mut receiver = receiver;
    let mut missing = n;
    while missing > 0 {
        // The receiver travels into the GIL-free closure and back (it is Send, not Sync).
        let (got, back) = py.detach(move || (receiver.recv_timeout(SLICE), receiver));
        receiver = back;
        match got {
            Ok((index, result)) => {
                results[index] = Some(result);
                missing -= 1;
            }
            Err(RecvTimeoutError::Timeout) => {
                if let Err(interrupt) = py.check_signals() {
                    give_up.store(true, Ordering::Relaxed);
                    // Each spawn sees it within INTERRUPT_CHECK and reaps its server; the
                    // peers made meanwhile are dropped here, without the GIL (closing one
                    // says BYE and waits for its server to exit), which reaps them as well.
                    py.detach(move || {
                        drop(results);
                        let until = std::time::Instant::now() + REAP_WAIT;
                        while missing > 0 {
                            let left = until.saturating_duration_since(std::time::Instant::now());
                            if receiver.recv_timeout(left).is_err() {
                                break;
                            }
                            missing -= 1;
                        }
                    });
                    return Err(interrupt);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                let ended = "a spawning thread ended without a result";
                return Err(PyRuntimeError::new_err(ended));
            }
        }
    }
    Ok(results.into_iter().map(|result| result.expect("every spawn answered").py_err(py)).collect())
}

/// The crate's options from the keyword arguments every constructor takes.
pub(crate) fn options(
    transport: &str,
    wait: &str,
    timeout: Option<f64>,
    max_frame_bytes: Option<u64>,
    path: &str,
) -> PyResult<Options> {
    let parse = |e: peerpipe::Error| PyValueError::new_err(e.to_string());
    let timeout = crate::boundary::seconds(timeout, "timeout")?;
    let defaults = Options::default();
    Ok(Options {
        transport: transport.parse::<TransportKind>().map_err(parse)?,
        wait: wait.parse::<Wait>().map_err(parse)?,
        timeout,
        max_frame_bytes: max_frame_bytes.unwrap_or(defaults.max_frame_bytes),
        path: path.parse::<DataPath>().map_err(parse)?,
        ..defaults
    })
}

/// `cmd` as `--spawn` takes it: a list of arguments ([`peerpipe::peer::argv_command`]), or
/// one shell command line ([`peerpipe::peer::checked_shell_command`]: a simple command is
/// exec'd, so the spawned process is the server, and a program that is not there is an error
/// naming it).
pub(crate) fn command(py: Python<'_>, cmd: &Bound<'_, PyAny>) -> PyResult<Command> {
    if let Ok(line) = cmd.cast::<PyString>() {
        let line: String = line.extract()?;
        return peerpipe::peer::checked_shell_command(&line).py_err(py);
    }
    let args: Vec<std::ffi::OsString> = cmd.extract().map_err(|_| {
        PyTypeError::new_err("cmd must be a list of strings or a shell command string")
    })?;
    if args.is_empty() {
        return Err(PyValueError::new_err("cmd is an empty list"));
    }
    peerpipe::peer::argv_command(&args).py_err(py)
}
