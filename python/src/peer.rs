//! `peerpipe.Peer` and `peerpipe.CallTiming`: a conversation with a server process.

use std::process::ExitStatus;
use std::sync::Mutex;

use numpy::{PyArray1, PyUntypedArrayMethods};
use peerpipe::peer::{PartsReply, ReplyInto, Request};
use peerpipe::{CallTiming, TransportKind};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::array::{Array, Element, array, one_d};
use crate::boundary::{SLICE, exit_after};
use crate::errors::{IntoPy, to_py};
use crate::loans::{Fresh, Loans};
use crate::parts::{Few, hold_all, hold_out, parts_of, to_numpy};
use crate::spawn::{command, options, spawn_interruptibly};

/// `subprocess`'s convention: the exit code, or minus the signal that killed it.
pub(crate) fn returncode(status: ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| -s))
}

/// Where the time of one round trip went, in nanoseconds.
#[pyclass(module = "peerpipe", name = "CallTiming", frozen, get_all)]
#[derive(Clone, Copy)]
pub(crate) struct PyCallTiming {
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

/// A conversation with a server process.
#[pyclass(module = "peerpipe", name = "Peer")]
pub(crate) struct PyPeer {
    /// `None` once closed; a `Mutex` only so the class is `Sync` (`&mut self` methods use
    /// `get_mut`, which never locks).
    peer: Mutex<Option<peerpipe::Peer>>,
    /// Why it is closed, for the message of a call on a closed peer.
    closed_because: &'static str,
    last: CallTiming,
    hello: peerpipe::frame::Hello,
    transport: TransportKind,
    pid: Option<u32>,
    /// A reply of any shape (`call_parts` without `out`), kept from call to call.
    reply: PartsReply,
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
            reply: PartsReply::new(),
        }
    }

    fn open(&mut self) -> PyResult<&mut peerpipe::Peer> {
        let because = self.closed_because;
        let slot = self.peer.get_mut().map_err(|_| PyRuntimeError::new_err("peer poisoned"))?;
        slot.as_mut().ok_or_else(|| PyValueError::new_err(format!("peer is closed{because}")))
    }

    /// After an error: drops the crate peer when the error ended the conversation (the crate
    /// already terminated and reaped the server), so later calls say so. One that left it in
    /// step — refused before sending, an ERROR reply, a reply of another shape — keeps it.
    fn closed_by_error(&mut self) {
        if let Ok(slot) = self.peer.get_mut()
            && slot.as_ref().is_some_and(|peer| !peer.is_open())
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
        crate::warm::client_call(py)?;
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
        crate::warm::client_call(py)?;
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
        let x = array(x, "x", one_d::REQUEST)?;
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
                let checked = array(out, "out", one_d::OUT)?;
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
                Array::F64(_) => Array::F64(Fresh::new(py, n)?.into_array()),
                Array::F32(_) => Array::F32(Fresh::new(py, n)?.into_array()),
            },
        };
        match (&x, &out) {
            (Array::F64(x), Array::F64(o)) => self.call_typed(py, x, o, narrow)?,
            (Array::F32(x), Array::F32(o)) => self.call_typed(py, x, o, narrow)?,
            _ => return Err(PyTypeError::new_err("out's dtype must be x's")),
        }
        Ok(match out {
            Array::F64(o) => o.into_any(),
            Array::F32(o) => o.into_any(),
        })
    }

    /// Calls `function` with `parts` (a PARTS request) and returns the reply's parts.
    #[pyo3(signature = (function, *parts, out=None))]
    fn call_parts<'py>(
        &mut self,
        py: Python<'py>,
        function: &str,
        parts: &Bound<'py, PyTuple>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        self.open()?;
        let loans = Loans::new();
        let mut held = Few::new();
        hold_all(parts, &|i| format!("part {i}"), &mut held)?;
        let mut inputs = Few::new();
        parts_of(&held, &loans, &|i| format!("part {i}"), &mut inputs)?;
        let Some(out) = out else {
            let mut reply = std::mem::take(&mut self.reply);
            let request = Request::Call { function, parts: &inputs };
            let called = self.converse(py, request, ReplyInto::Any(&mut reply));
            let arrays = called.and_then(|()| {
                let parts = reply.parts();
                let arrays = parts.iter().map(|part| to_numpy(py, &part));
                PyTuple::new(py, arrays.collect::<PyResult<Vec<_>>>()?)
            });
            self.reply = reply;
            return arrays;
        };
        let out = match out.cast::<PyTuple>() {
            Ok(tuple) => tuple.clone(),
            Err(_) if out.cast::<PyList>().is_ok() => out.cast::<PyList>()?.to_tuple(),
            Err(_) => {
                return Err(PyTypeError::new_err(format!(
                    "out must be a tuple of arrays, one per part of the reply (out=(a,) for \
                     one), got {}",
                    out.get_type().name()?
                )));
            }
        };
        let mut held_out = Few::new();
        for (i, one) in out.iter().enumerate() {
            held_out.push(hold_out(&one, &|| format!("out[{i}]"))?);
        }
        let mut targets = Few::new();
        for (i, held) in held_out.iter().enumerate() {
            targets.push(held.part_mut(&loans, &|| format!("out[{i}]"))?);
        }
        let request = Request::Call { function, parts: &inputs };
        self.converse(py, request, ReplyInto::Parts(&mut targets))?;
        Ok(out)
    }

    /// True when the server reads PARTS requests (its HELLO says `parts=1`).
    #[getter]
    fn speaks_parts(&self) -> bool {
        self.hello.parts
    }

    /// The functions the server serves by name, as its HELLO announced them.
    #[getter]
    fn functions(&self) -> Vec<String> {
        self.hello.functions.clone()
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
        hello.set_item("pid", self.hello.pid)?;
        hello.set_item("parts", self.hello.parts)?;
        hello.set_item("functions", self.hello.functions.clone())?;
        Ok(hello)
    }

    /// The id of the local process that serves (see `Peer::server_pid`); `None` for a server
    /// on another machine, whose own pid is its HELLO's `pid`.
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
    /// One call with `x` and `out` of one element type: lends `x` (copied once when it is not
    /// contiguous) and the contiguous `out` to [`PyPeer::exchange`].
    fn call_typed<T: Element>(
        &mut self,
        py: Python<'_>,
        x: &Bound<'_, PyArray1<T>>,
        out: &Bound<'_, PyArray1<T>>,
        narrow: bool,
    ) -> PyResult<()> {
        let loans = Loans::new();
        let values = loans.read_or_copy(x, &|| "x".to_owned())?;
        let dst = loans.write(out, &|| "out".to_owned())?;
        let request = Request::Array(T::values(&values, narrow));
        self.converse(py, request, ReplyInto::Array(T::values_mut(dst, narrow)))
    }

    /// The one round trip of every call, with the GIL released: sends `request`, then waits
    /// for its reply into `into` at most [`SLICE`] at a time, with signal checks in between,
    /// until it is in. On Ctrl-C (any error from a signal handler) the server is terminated
    /// and reaped and the peer closed, and the handler's exception is raised.
    fn converse(
        &mut self,
        py: Python<'_>,
        request: Request<'_, '_>,
        mut into: ReplyInto<'_, '_>,
    ) -> PyResult<()> {
        let peer = self.open()?;
        let mut got = py.detach(|| {
            peer.send_request(request)?;
            peer.recv_reply_for(&mut into, SLICE)
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
                    got = py.detach(|| peer.recv_reply_for(&mut into, SLICE));
                }
                Err(e) => {
                    self.closed_by_error();
                    return Err(to_py(py, e));
                }
            }
        }
    }
}
