//! Spawning a server from Python: the options every constructor takes, `cmd` as a command,
//! and a handshake that Ctrl-C interrupts.

use std::process::Command;

use peerpipe::{DataPath, Options, TransportKind, Wait};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors::IntoPy;
use crate::{REAP_WAIT, SLICE};

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
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc::{RecvTimeoutError, channel};
    let (sender, receiver) = channel();
    let give_up = Arc::new(AtomicBool::new(false));
    let asked = Arc::clone(&give_up);
    std::thread::Builder::new()
        .name("peerpipe spawn".into())
        .spawn(move || {
            let interrupted = || asked.load(Ordering::Relaxed);
            let spawned = peerpipe::Peer::spawn_interruptible(command, options, &interrupted);
            // Nobody left to receive it (interrupted, and tired of waiting): dropping the
            // peer reaps the server.
            let _ = sender.send(spawned);
        })
        .map_err(|e| PyOSError::new_err(format!("could not start the spawning thread: {e}")))?;
    let mut receiver = receiver;
    loop {
        // The receiver travels into the GIL-free closure and back (it is Send, not Sync).
        let (got, back) = py.detach(move || (receiver.recv_timeout(SLICE), receiver));
        receiver = back;
        match got {
            Ok(result) => return result.py_err(py),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(interrupt) = py.check_signals() {
                    give_up.store(true, Ordering::Relaxed);
                    // The spawn sees it within INTERRUPT_CHECK and reaps its server; a peer
                    // made meanwhile is dropped here, without the GIL (closing it says BYE
                    // and waits for the server to exit), which reaps it as well.
                    py.detach(move || drop(receiver.recv_timeout(REAP_WAIT)));
                    return Err(interrupt);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err("the spawning thread ended without a result"));
            }
        }
    }
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
    let timeout = crate::seconds(timeout, "timeout")?;
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
