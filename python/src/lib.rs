//! `peerpipe._peerpipe`: the Python binding of the `peerpipe` crate.
//!
//! A thin layer (STYLE.md §7): it converts arguments, calls the crate, and converts results
//! and errors — nothing else. Arrays come in as numpy arrays and are lent to the crate as
//! slices; replies land in the caller's `out` array without allocation. Every wait runs
//! inside `Python::detach` so other threads run; a call's wait for its reply is cut into
//! slices of at most [`SLICE`] (`Peer::recv_for`), with `Python::check_signals` between them,
//! so Ctrl-C is seen within ~100 ms; a spawn's handshake runs on a thread of its own, waited
//! for the same way ([`spawn_interruptibly`]). Rust errors become the exceptions created once below,
//! with the crate's message unchanged. Nothing here panics across the boundary (pyo3 turns a
//! panic into `PanicException` all the same).

use std::process::{Command, ExitStatus};
use std::sync::Mutex;
use std::time::Duration;

use numpy::{PyArray1, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use peerpipe::codec::{self, Values, ValuesMut};
use peerpipe::frame::Dtype;
use peerpipe::rhs::{self, Exchange};
use peerpipe::server::{self, Ending, Handler, Request, Response, ServeOptions};
use peerpipe::{CallTiming, DataPath, Options, TransportKind, Wait};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

mod errors;
use errors::{
    Error, Interrupted, IntoPy, PeerExited, ProtocolError, RemoteError, TooLarge, timeout_type,
    to_py,
};

/// Longest a call waits with the GIL released before it checks for signals (Ctrl-C).
const SLICE: Duration = Duration::from_millis(100);

/// Longest an interrupted spawn waits for its server to be terminated and reaped before
/// `KeyboardInterrupt` goes on regardless: the give-up check (`INTERRUPT_CHECK`, 50 ms) plus
/// a server's grace to exit after SIGTERM (`TERM_GRACE`, 200 ms), with room to spare.
const REAP_WAIT: Duration = Duration::from_secs(2);

/// Spawns `command` and exchanges HELLOs ([`peerpipe::Peer::spawn_interruptible`]) on a
/// thread of its own while this thread, with the GIL released, waits for it in slices of
/// [`SLICE`] and checks for signals between them: Ctrl-C during a handshake raises
/// `KeyboardInterrupt` within ~100 ms instead of after the timeout. Before raising it, this
/// thread tells the spawn to give up and waits (at most [`REAP_WAIT`]) while it terminates
/// and reaps the server, so no server outlives the interrupted spawn.
fn spawn_interruptibly(
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

/// What `__exit__` returns after closing: `False` (the exception, if any, goes on), or the
/// failure to close when no exception is on its way out (one that is wins over it).
fn exit_after<T>(closed: PyResult<T>, exc_type: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    if exc_type.is_none_or(|t| t.is_none()) {
        closed?;
    }
    Ok(false)
}

/// The crate's options from the keyword arguments every constructor takes.
fn options(
    transport: &str,
    wait: &str,
    timeout: Option<f64>,
    max_frame_bytes: Option<u64>,
    path: &str,
) -> PyResult<Options> {
    let parse = |e: peerpipe::Error| PyValueError::new_err(e.to_string());
    let timeout = match timeout {
        None => None,
        Some(secs) => Some(Duration::try_from_secs_f64(secs).map_err(|_| {
            PyValueError::new_err(format!(
                "timeout must be a non-negative number of seconds or None, got {secs}"
            ))
        })?),
    };
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
fn command(py: Python<'_>, cmd: &Bound<'_, PyAny>) -> PyResult<Command> {
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

/// `subprocess`'s convention: the exit code, or minus the signal that killed it.
fn returncode(status: ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| -s))
}

/// Where the time of one round trip went, in nanoseconds.
#[pyclass(module = "peerpipe", name = "CallTiming", frozen, get_all)]
#[derive(Clone, Copy)]
struct PyCallTiming {
    /// The whole call, from before encoding to after decoding.
    round_trip_ns: u64,
    /// Server time: from reading the request header to writing the reply.
    server_ns: u64,
    /// Converting the request into wire bytes (0 on the zero-copy path, which converts nothing).
    encode_ns: u64,
    /// Converting the reply from wire bytes.
    decode_ns: u64,
    /// Moving bytes and waiting: round trip − encode − decode − server.
    transfer_ns: u64,
}

impl From<CallTiming> for PyCallTiming {
    fn from(t: CallTiming) -> Self {
        PyCallTiming {
            round_trip_ns: t.round_trip_ns,
            server_ns: t.server_ns,
            encode_ns: t.encode_ns,
            decode_ns: t.decode_ns,
            transfer_ns: t.transfer_ns(),
        }
    }
}

#[pymethods]
impl PyCallTiming {
    fn __repr__(&self) -> String {
        format!(
            "CallTiming(round_trip_ns={}, server_ns={}, encode_ns={}, decode_ns={}, \
             transfer_ns={})",
            self.round_trip_ns, self.server_ns, self.encode_ns, self.decode_ns, self.transfer_ns
        )
    }
}

/// The 1-D float64 or float32 numpy array `x`, or the error a user should see.
enum Array<'py> {
    F64(Bound<'py, PyArray1<f64>>),
    F32(Bound<'py, PyArray1<f32>>),
}

fn array<'py>(x: &Bound<'py, PyAny>, what: &str) -> PyResult<Array<'py>> {
    if let Ok(a) = x.cast::<PyArray1<f64>>() {
        return Ok(Array::F64(a.clone()));
    }
    if let Ok(a) = x.cast::<PyArray1<f32>>() {
        return Ok(Array::F32(a.clone()));
    }
    let Ok(untyped) = x.cast::<PyUntypedArray>() else {
        let kind = x.get_type().name()?;
        return Err(PyTypeError::new_err(format!(
            "{what} must be a 1-D numpy array of float64 or float32, got {kind}"
        )));
    };
    if untyped.ndim() != 1 {
        return Err(PyValueError::new_err(format!(
            "{what} must be 1-D, got a {}-D array of shape ({})",
            untyped.ndim(),
            untyped.shape().iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
        )));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must have dtype float64 or float32 (native byte order), got {}",
        untyped.dtype()
    )))
}

fn borrow_error(what: &str, e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{what} cannot be used: {e} (is it read-only, or is out x?)"))
}

/// A conversation with a server process.
#[pyclass(module = "peerpipe", name = "Peer")]
struct PyPeer {
    /// `None` once closed; a `Mutex` only so the class is `Sync` (`&mut self` methods use
    /// `get_mut`, which never locks).
    peer: Mutex<Option<peerpipe::Peer>>,
    /// Why it is closed, for the message of a call on a closed peer.
    closed_because: &'static str,
    last: CallTiming,
    hello: peerpipe::frame::Hello,
    transport: TransportKind,
    pid: Option<u32>,
}

impl PyPeer {
    fn new(peer: peerpipe::Peer) -> PyPeer {
        PyPeer {
            hello: peer.server_hello().clone(),
            transport: peer.transport_kind(),
            pid: peer.server_pid(),
            peer: Mutex::new(Some(peer)),
            closed_because: "",
            last: CallTiming::default(),
        }
    }

    fn open(&mut self) -> PyResult<&mut peerpipe::Peer> {
        let because = self.closed_because;
        let slot = self.peer.get_mut().map_err(|_| PyRuntimeError::new_err("peer poisoned"))?;
        slot.as_mut().ok_or_else(|| PyValueError::new_err(format!("peer is closed{because}")))
    }

    /// Drops the crate peer after an error that closed it (the crate already terminated and
    /// reaped the server), so later calls say so.
    fn closed_by(&mut self, error: &peerpipe::Error) {
        if !error.is_recoverable()
            && let Ok(slot) = self.peer.get_mut()
        {
            *slot = None;
            self.closed_because = " (after an earlier error)";
        }
    }
}

#[pymethods]
impl PyPeer {
    /// Spawns `cmd` as the server and exchanges HELLOs (see `peerpipe.Peer.spawn`).
    #[staticmethod]
    #[pyo3(signature = (cmd, *, transport="pipe", wait="auto", timeout=Some(10.0), max_frame_bytes=None, path="zero-copy"))]
    fn spawn(
        py: Python<'_>,
        cmd: &Bound<'_, PyAny>,
        transport: &str,
        wait: &str,
        timeout: Option<f64>,
        max_frame_bytes: Option<u64>,
        path: &str,
    ) -> PyResult<PyPeer> {
        let options = options(transport, wait, timeout, max_frame_bytes, path)?;
        let command = command(py, cmd)?;
        let peer = spawn_interruptibly(py, command, options)?;
        Ok(PyPeer::new(peer))
    }

    /// Spawns `peer_exe --role server --handler HANDLER` with the same transport and wait.
    #[staticmethod]
    #[pyo3(signature = (peer_exe, handler="echo", *, transport="pipe", wait="auto", timeout=Some(10.0), max_frame_bytes=None, path="zero-copy"))]
    #[allow(clippy::too_many_arguments)]
    fn spawn_server(
        py: Python<'_>,
        peer_exe: std::path::PathBuf,
        handler: &str,
        transport: &str,
        wait: &str,
        timeout: Option<f64>,
        max_frame_bytes: Option<u64>,
        path: &str,
    ) -> PyResult<PyPeer> {
        let options = options(transport, wait, timeout, max_frame_bytes, path)?;
        let exe = peerpipe::peer::find_peer_binary(Some(&peer_exe)).py_err(py)?;
        let command = peerpipe::Peer::server_command(exe, handler, &options);
        let peer = spawn_interruptibly(py, command, options)?;
        Ok(PyPeer::new(peer))
    }

    /// Sends `x` and returns the reply, written into `out` when given.
    #[pyo3(signature = (x, out=None, *, wire=None))]
    fn call<'py>(
        &mut self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
        wire: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.open()?;
        let x = array(x, "x")?;
        let narrow = match (wire, &x) {
            (None, _) | (Some("f64"), Array::F64(_)) | (Some("f32"), Array::F32(_)) => false,
            (Some("f32"), Array::F64(_)) => true,
            (Some("f64"), Array::F32(_)) => {
                return Err(PyValueError::new_err(
                    "wire='f64' needs a float64 x; float32 travels as f32",
                ));
            }
            (Some(other), _) => {
                return Err(PyValueError::new_err(format!(
                    "wire must be 'f64', 'f32' or None, got {other:?}"
                )));
            }
        };
        let n = match &x {
            Array::F64(a) => a.len(),
            Array::F32(a) => a.len(),
        };
        // The reply has x's dtype (float64 for a narrowed call: widened back) and length.
        let out = match out {
            Some(out) => {
                let checked = array(out, "out")?;
                let len = match (&checked, &x) {
                    (Array::F64(o), Array::F64(_)) => o.len(),
                    (Array::F32(o), Array::F32(_)) => o.len(),
                    (o, _) => {
                        let (want, got) = match o {
                            Array::F64(_) => ("float32", "float64"),
                            Array::F32(_) => ("float64", "float32"),
                        };
                        return Err(PyTypeError::new_err(format!(
                            "out must have x's dtype {want}, got {got}"
                        )));
                    }
                };
                if len != n {
                    return Err(PyValueError::new_err(format!(
                        "out must have x's length {n}, got {len}"
                    )));
                }
                checked
            }
            None => match &x {
                Array::F64(_) => Array::F64(PyArray1::<f64>::zeros(py, n, false)),
                Array::F32(_) => Array::F32(PyArray1::<f32>::zeros(py, n, false)),
            },
        };
        let result = match (&x, &out) {
            (Array::F64(x), Array::F64(o)) => {
                let x = x.try_readonly().map_err(|e| borrow_error("x", e))?;
                let copied;
                let values = match x.as_slice() {
                    Ok(s) => s,
                    Err(_) => {
                        copied = x.as_array().to_vec(); // non-contiguous: copied once
                        &copied
                    }
                };
                let mut o = o.try_readwrite().map_err(|e| borrow_error("out", e))?;
                let dst = o.as_slice_mut().map_err(|_| {
                    PyValueError::new_err("out must be contiguous (it is written in place)")
                })?;
                if narrow {
                    self.exchange(py, Values::F64AsF32(values), ValuesMut::F64FromF32(dst))
                } else {
                    self.exchange(py, Values::F64(values), ValuesMut::F64(dst))
                }
            }
            (Array::F32(x), Array::F32(o)) => {
                let x = x.try_readonly().map_err(|e| borrow_error("x", e))?;
                let copied;
                let values = match x.as_slice() {
                    Ok(s) => s,
                    Err(_) => {
                        copied = x.as_array().to_vec();
                        &copied
                    }
                };
                let mut o = o.try_readwrite().map_err(|e| borrow_error("out", e))?;
                let dst = o.as_slice_mut().map_err(|_| {
                    PyValueError::new_err("out must be contiguous (it is written in place)")
                })?;
                self.exchange(py, Values::F32(values), ValuesMut::F32(dst))
            }
            _ => unreachable!("out's dtype was checked against x's"),
        };
        result?;
        Ok(match out {
            Array::F64(o) => o.into_any(),
            Array::F32(o) => o.into_any(),
        })
    }

    /// Timing of the most recent successful call.
    #[getter]
    fn last_timing(&self) -> PyCallTiming {
        self.last.into()
    }

    /// The server's HELLO fields.
    #[getter]
    fn server_hello<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let hello = PyDict::new(py);
        hello.set_item("max_frame_bytes", self.hello.max_frame_bytes)?;
        hello.set_item("handler", self.hello.handler.clone())?;
        hello.set_item("implementation", self.hello.implementation.clone())?;
        Ok(hello)
    }

    /// The server's process id.
    #[getter]
    fn server_pid(&self) -> Option<u32> {
        self.pid
    }

    /// "pipe", "shm-sem" or "shm-ring".
    #[getter]
    fn transport(&self) -> &'static str {
        self.transport.name()
    }

    /// True once closed (by `close`, Ctrl-C or an error).
    #[getter]
    fn closed(&mut self) -> bool {
        self.open().is_err()
    }

    /// Says BYE, waits for the server to exit and reaps it; returns its exit code (minus the
    /// signal number if a signal ended it). Does nothing (returns None) when already closed.
    fn close(&mut self, py: Python<'_>) -> PyResult<Option<i32>> {
        let slot = self.peer.get_mut().map_err(|_| PyRuntimeError::new_err("peer poisoned"))?;
        let Some(peer) = slot.take() else { return Ok(None) };
        self.closed_because = "";
        let status = py.detach(|| peer.close()).py_err(py)?;
        Ok(status.and_then(returncode))
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        exit_after(self.close(py), exc_type)
    }

    fn __repr__(&mut self) -> String {
        let state = if self.closed() { "closed" } else { "open" };
        let handler = self.hello.handler.as_deref().unwrap_or("?");
        format!(
            "<peerpipe.Peer {state} transport={} handler={handler} pid={:?}>",
            self.transport.name(),
            self.pid
        )
    }
}

impl PyPeer {
    /// One round trip with the GIL released: send, then wait for the reply in slices with
    /// signal checks in between. On Ctrl-C (any error from a signal handler) the server is
    /// terminated and reaped and the peer closed, and the handler's exception is raised.
    fn exchange(
        &mut self,
        py: Python<'_>,
        values: Values<'_>,
        mut dst: ValuesMut<'_>,
    ) -> PyResult<()> {
        let peer = self.open()?;
        let mut got = py.detach(|| {
            peer.send(values)?;
            peer.recv_for(dst.reborrow(), SLICE)
        });
        loop {
            match got {
                Ok(Some(reply)) => {
                    self.last = reply.timing;
                    return Ok(());
                }
                Ok(None) => {
                    if let Err(interrupted) = py.check_signals() {
                        let slot = self.peer.get_mut().expect("not poisoned");
                        if let Some(peer) = slot.take() {
                            let _ = py.detach(|| peer.terminate());
                        }
                        self.closed_because = " (a call was interrupted)";
                        return Err(interrupted);
                    }
                    let peer = self.open()?;
                    got = py.detach(|| peer.recv_for(dst.reborrow(), SLICE));
                }
                Err(e) => {
                    self.closed_by(&e);
                    return Err(to_py(py, e));
                }
            }
        }
    }
}

/// An integrator's right-hand side evaluated by a server process: `fun(t, y)`.
#[pyclass(module = "peerpipe", name = "RemoteRhs")]
struct PyRemoteRhs {
    rhs: Mutex<Option<rhs::RemoteRhs>>,
}

impl PyRemoteRhs {
    fn open(&mut self) -> PyResult<&mut rhs::RemoteRhs> {
        let slot = self.rhs.get_mut().map_err(|_| PyRuntimeError::new_err("rhs poisoned"))?;
        slot.as_mut().ok_or_else(|| PyValueError::new_err("RemoteRhs is closed"))
    }

    fn eval_into(
        &mut self,
        py: Python<'_>,
        y: &Bound<'_, PyAny>,
        out: &Bound<'_, PyArray1<f64>>,
    ) -> PyResult<()> {
        let rhs = self.open()?;
        let y = match array(y, "y")? {
            Array::F64(y) => y,
            Array::F32(_) => {
                return Err(PyTypeError::new_err("y must have dtype float64, got float32"));
            }
        };
        let y = y.try_readonly().map_err(|e| borrow_error("y", e))?;
        let copied;
        let state = match y.as_slice() {
            Ok(s) => s,
            Err(_) => {
                copied = y.as_array().to_vec();
                &copied
            }
        };
        let mut out = out.try_readwrite().map_err(|e| borrow_error("out", e))?;
        let dst =
            out.as_slice_mut().map_err(|_| PyValueError::new_err("out must be contiguous"))?;
        let result = py.detach(|| rhs.eval(state, dst));
        if let Err(e) = result {
            if !e.is_recoverable() {
                *self.rhs.get_mut().expect("not poisoned") = None;
            }
            return Err(to_py(py, e));
        }
        Ok(())
    }
}

#[pymethods]
impl PyRemoteRhs {
    /// Spawns `cmd` as the derivative server (see `peerpipe.RemoteRhs`).
    #[new]
    #[pyo3(signature = (cmd, *, transport="pipe", wait="auto", timeout=Some(10.0), max_frame_bytes=None, wire="f64"))]
    fn new(
        py: Python<'_>,
        cmd: &Bound<'_, PyAny>,
        transport: &str,
        wait: &str,
        timeout: Option<f64>,
        max_frame_bytes: Option<u64>,
        wire: &str,
    ) -> PyResult<PyRemoteRhs> {
        let exchange = match wire {
            "f64" => Exchange::F64,
            "f32" => Exchange::F64AsF32,
            other => {
                return Err(PyValueError::new_err(format!(
                    "wire must be 'f64' or 'f32', got {other:?}"
                )));
            }
        };
        let options = options(transport, wait, timeout, max_frame_bytes, "zero-copy")?;
        let command = command(py, cmd)?;
        let peer = spawn_interruptibly(py, command, options)?;
        let rhs = rhs::RemoteRhs::new(peer).with_exchange(exchange);
        Ok(PyRemoteRhs { rhs: Mutex::new(Some(rhs)) })
    }

    /// `fun(t, y)`: the derivative of `y` as a new float64 array (`t` is not sent).
    fn __call__<'py>(
        &mut self,
        py: Python<'py>,
        t: &Bound<'py, PyAny>,
        y: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let _ = t;
        let n = y.len()?;
        let out = PyArray1::<f64>::zeros(py, n, false);
        self.eval_into(py, y, &out)?;
        Ok(out)
    }

    /// The derivative of `y` written into `out` (float64, same length): no allocation.
    fn eval<'py>(
        &mut self,
        py: Python<'py>,
        y: &Bound<'py, PyAny>,
        out: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let target = match array(out, "out")? {
            Array::F64(o) => o,
            Array::F32(_) => {
                return Err(PyTypeError::new_err("out must have dtype float64, got float32"));
            }
        };
        if target.len() != y.len()? {
            return Err(PyValueError::new_err(format!(
                "out must have y's length {}, got {}",
                y.len()?,
                target.len()
            )));
        }
        self.eval_into(py, y, &target)?;
        Ok(out.clone())
    }

    /// Cumulative timing: calls, sums in ns, and percentiles of the round trip and of the
    /// overhead (round trip − server time) per call; and what this side's waits did under
    /// the auto wait.
    fn stats<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let rhs = self.open()?;
        let auto = rhs.peer().auto_wait();
        let counts = auto.counts();
        let stats = rhs.stats();
        let d = PyDict::new(py);
        d.set_item("calls", stats.calls)?;
        d.set_item("round_trip_ns_total", stats.round_trip_ns)?;
        d.set_item("server_ns_total", stats.server_ns)?;
        d.set_item("encode_ns_total", stats.encode_ns)?;
        d.set_item("decode_ns_total", stats.decode_ns)?;
        d.set_item("transfer_ns_total", stats.transfer_ns)?;
        d.set_item("mean_round_trip_ns", stats.mean_round_trip_ns())?;
        for (key, quantile) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0)] {
            d.set_item(format!("overhead_{key}_ns"), stats.overhead_quantile_ns(quantile))?;
            d.set_item(format!("round_trip_{key}_ns"), stats.round_trip_quantile_ns(quantile))?;
        }
        d.set_item("wait_spun", counts.spun)?;
        d.set_item("wait_hits", counts.hits)?;
        d.set_item("wait_slept_at_once", counts.slept_at_once)?;
        d.set_item("wait_probes", counts.probes)?;
        d.set_item("wait_stopped_spinning", counts.stopped_spinning)?;
        d.set_item("wait_contended", counts.contended)?;
        d.set_item("wait_spinning", auto.is_spinning())?;
        Ok(d)
    }

    /// Timing of the most recent successful call.
    #[getter]
    fn last_timing(&mut self) -> PyResult<PyCallTiming> {
        Ok(self.open()?.last_timing().into())
    }

    /// Says BYE and reaps the server; does nothing when already closed.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let slot = self.rhs.get_mut().map_err(|_| PyRuntimeError::new_err("rhs poisoned"))?;
        match slot.take() {
            Some(rhs) => py.detach(|| rhs.close()).py_err(py),
            None => Ok(()),
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        exit_after(self.close(py), exc_type)
    }
}

/// A Python callable as a crate [`Handler`]: the request is copied into a new numpy array
/// (so the callable may keep it), the reply copied out of the returned (or filled) array.
struct PyHandler {
    callable: Py<PyAny>,
    /// `handler(x, out)` instead of `handler(x) -> array`.
    in_place: bool,
    name: String,
    f64s: Vec<f64>,
    f32s: Vec<f32>,
}

/// Which buffer of a [`PyHandler`] holds the reply.
enum Filled {
    F64,
    F32,
}

impl PyHandler {
    fn answer(&mut self, py: Python<'_>, request: &Request<'_>) -> Result<Filled, String> {
        let n = request.count as usize;
        let (x, out) = match request.dtype {
            Dtype::F64 => {
                let x = PyArray1::<f64>::zeros(py, n, false);
                let mut w = x.try_readwrite().map_err(|e| e.to_string())?;
                let dst = w.as_slice_mut().map_err(|e| e.to_string())?;
                codec::decode_into(request.payload, ValuesMut::F64(dst))
                    .map_err(|e| e.to_string())?;
                drop(w);
                let out = self.in_place.then(|| PyArray1::<f64>::zeros(py, n, false).into_any());
                (x.into_any(), out)
            }
            Dtype::F32 => {
                let x = PyArray1::<f32>::zeros(py, n, false);
                let mut w = x.try_readwrite().map_err(|e| e.to_string())?;
                let dst = w.as_slice_mut().map_err(|e| e.to_string())?;
                codec::decode_into(request.payload, ValuesMut::F32(dst))
                    .map_err(|e| e.to_string())?;
                drop(w);
                let out = self.in_place.then(|| PyArray1::<f32>::zeros(py, n, false).into_any());
                (x.into_any(), out)
            }
            Dtype::Bytes => return Err(format!("{}: expected f64 or f32, found bytes", self.name)),
        };
        let called = match &out {
            Some(out) => self.callable.call1(py, (x, out)).map(|_| out.clone().unbind()),
            None => self.callable.call1(py, (x,)),
        };
        let reply = called.map_err(|e| format!("{}: {e}", self.name))?;
        let reply = reply.bind(py);
        match array(reply, "the handler's reply").map_err(|e| format!("{}: {e}", self.name))? {
            Array::F64(a) => {
                let r = a.try_readonly().map_err(|e| e.to_string())?;
                self.f64s.clear();
                match r.as_slice() {
                    Ok(s) => self.f64s.extend_from_slice(s),
                    Err(_) => self.f64s.extend(r.as_array().iter().copied()),
                }
                Ok(Filled::F64)
            }
            Array::F32(a) => {
                let r = a.try_readonly().map_err(|e| e.to_string())?;
                self.f32s.clear();
                match r.as_slice() {
                    Ok(s) => self.f32s.extend_from_slice(s),
                    Err(_) => self.f32s.extend(r.as_array().iter().copied()),
                }
                Ok(Filled::F32)
            }
        }
    }
}

impl Handler for PyHandler {
    fn name(&self) -> &str {
        &self.name
    }

    fn handle<'a>(&'a mut self, request: Request<'a>) -> Result<Response<'a>, String> {
        match Python::attach(|py| self.answer(py, &request))? {
            Filled::F64 => Ok(Response::F64(&self.f64s)),
            Filled::F32 => Ok(Response::F32(&self.f32s)),
        }
    }
}

/// Serves requests on stdin/stdout (or the shared region given as stdin) with a Python
/// callable until the client says BYE or closes (see `peerpipe.serve`).
#[pyfunction]
#[pyo3(signature = (handler, *, transport=None, wait="auto", in_place=None, name=None, max_frame_bytes=None, frame_timeout=Some(10.0), listen=None))]
#[allow(clippy::too_many_arguments)]
fn serve<'py>(
    py: Python<'py>,
    handler: Py<PyAny>,
    transport: Option<&str>,
    wait: &str,
    in_place: Option<bool>,
    name: Option<String>,
    max_frame_bytes: Option<u64>,
    frame_timeout: Option<f64>,
    listen: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let bound = handler.bind(py);
    if !bound.is_callable() {
        return Err(PyTypeError::new_err(
            "handler must be callable: handler(x) or handler(x, out)",
        ));
    }
    let in_place = match in_place {
        Some(given) => given,
        None => positional_parameters(bound)? >= 2,
    };
    let name = match name {
        Some(name) => name,
        None => bound
            .getattr(intern!(py, "__name__"))
            .and_then(|n| n.extract::<String>())
            .unwrap_or_else(|_| "python".to_owned()),
    };
    let wait: Wait = wait.parse().py_err(py)?;
    let listen = match (transport, listen) {
        (_, None) => None,
        (Some("tcp"), Some(address)) => {
            Some(peerpipe::transport::tcp::parse_listen(address).py_err(py)?)
        }
        (other, Some(_)) => {
            return Err(PyValueError::new_err(format!(
                "listen is for transport='tcp', found transport={other:?}"
            )));
        }
    };
    let kind = match transport {
        Some(kind) => kind.parse().py_err(py)?,
        None => TransportKind::of_stdin().py_err(py)?,
    };
    let defaults = ServeOptions::default();
    let frame_timeout = match frame_timeout {
        None => None,
        Some(secs) => Some(Duration::try_from_secs_f64(secs).map_err(|_| {
            PyValueError::new_err(format!(
                "frame_timeout must be non-negative seconds or None, got {secs}"
            ))
        })?),
    };
    let options = ServeOptions {
        max_frame_bytes: max_frame_bytes.unwrap_or(defaults.max_frame_bytes),
        frame_timeout,
        ..defaults
    };
    let mut transport = match listen {
        // An address to listen on (tcp only, checked above). Nothing listens without a
        // deadline: the client has the frame timeout to connect, or the default one when
        // frame_timeout=None (as with the default address).
        Some(address) => {
            let deadline = options.frame_timeout.unwrap_or(server::DEFAULT_FRAME_TIMEOUT);
            server::stdio_tcp_transport(wait, Some(address), Some(deadline))
        }
        None => server::stdio_transport_of(kind, wait),
    }
    .py_err(py)?;
    let mut handler =
        PyHandler { callable: handler, in_place, name, f64s: Vec::new(), f32s: Vec::new() };
    let summary = py.detach(|| server::serve(&mut transport, &mut handler, &options)).py_err(py)?;
    let d = PyDict::new(py);
    d.set_item("replies", summary.replies)?;
    d.set_item("rejected", summary.rejected)?;
    d.set_item(
        "ending",
        match summary.ending {
            Ending::Bye => "bye",
            Ending::EndOfStream => "end-of-stream",
        },
    )?;
    d.set_item("transport", kind.name())?;
    Ok(d)
}

/// How many positional parameters `callable` takes (inspect.signature), to tell
/// `handler(x)` from `handler(x, out)`; 1 when it cannot be told.
fn positional_parameters(callable: &Bound<'_, PyAny>) -> PyResult<usize> {
    let py = callable.py();
    let inspect = py.import("inspect")?;
    let Ok(signature) = inspect.call_method1("signature", (callable,)) else { return Ok(1) };
    let parameters = signature.getattr("parameters")?.call_method0("values")?;
    let parameters = PyList::new(py, parameters.try_iter()?.collect::<PyResult<Vec<_>>>()?)?;
    let mut count = 0;
    for p in parameters.iter() {
        let kind: String = p.getattr("kind")?.getattr("name")?.extract()?;
        match kind.as_str() {
            "POSITIONAL_ONLY" | "POSITIONAL_OR_KEYWORD" => count += 1,
            "VAR_POSITIONAL" => return Ok(count.max(1)),
            _ => {}
        }
    }
    Ok(count)
}

/// The native part of the `peerpipe` package.
#[pymodule]
fn _peerpipe(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("Error", py.get_type::<Error>())?;
    m.add("ProtocolError", py.get_type::<ProtocolError>())?;
    m.add("TooLarge", py.get_type::<TooLarge>())?;
    m.add("PeerExited", py.get_type::<PeerExited>())?;
    m.add("RemoteError", py.get_type::<RemoteError>())?;
    m.add("Interrupted", py.get_type::<Interrupted>())?;
    m.add("Timeout", timeout_type(py)?)?;
    m.add_function(wrap_pyfunction!(errors::_error_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(errors::_exception_for_kind, m)?)?;
    m.add_class::<PyPeer>()?;
    m.add_class::<PyRemoteRhs>()?;
    m.add_class::<PyCallTiming>()?;
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    Ok(())
}
