//! `peerpipe.Session`: a server whose loop is the caller's — receive a call, reply, then
//! compute — over the crate's [`Session`], for two models stepping together.

use std::time::Instant;

use peerpipe::server::{Ending, Next, Session};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use crate::boundary::SLICE;
use crate::errors::IntoPy;
use crate::loans::Loans;
use crate::parts::{Few, hold_all, parts_of, to_numpy};
use crate::serve::stdio_options;

/// A server session over this process's stdin and stdout (see `peerpipe.Session`).
#[pyclass(name = "Session", module = "peerpipe")]
pub(crate) struct PySession {
    /// In a mutex only so that the class is `Sync`; `&mut self` methods reach it directly.
    session: std::sync::Mutex<Option<Session>>,
}

impl PySession {
    fn open(&mut self) -> PyResult<&mut Session> {
        let slot =
            self.session.get_mut().map_err(|_| PyValueError::new_err("session is closed"))?;
        slot.as_mut().ok_or_else(|| PyValueError::new_err("session is closed"))
    }
}

#[pymethods]
impl PySession {
    /// Opens the session over stdio: announces `functions` (and `name`) in the HELLO and
    /// reads the client's.
    #[new]
    #[pyo3(signature = (functions, *, name="python", transport=None, wait="auto", max_frame_bytes=None, frame_timeout=Some(10.0), listen=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        functions: &Bound<'_, PyAny>,
        name: &str,
        transport: Option<&str>,
        wait: &str,
        max_frame_bytes: Option<u64>,
        frame_timeout: Option<f64>,
        listen: Option<&str>,
    ) -> PyResult<PySession> {
        if functions.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err(
                "functions must be a list of names, e.g. [\"exchange\", \"state\"], not one string",
            ));
        }
        let names: Vec<String> = functions.extract().map_err(|_| {
            PyTypeError::new_err("functions must be a list of names (str), e.g. [\"exchange\"]")
        })?;
        let stdio = stdio_options(py, transport, wait, max_frame_bytes, frame_timeout, listen)?;
        crate::warm::before_hello(py)?;
        let session = py
            .detach(|| {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                Session::stdio(name, &names, &stdio)
            })
            .py_err(py)?;
        Ok(PySession { session: std::sync::Mutex::new(Some(session)) })
    }

    /// The next call as `(function, parts)` — the function's name and a tuple of new numpy
    /// arrays, one per part — or `None` once the client has said BYE or gone.
    #[pyo3(signature = (timeout=None))]
    fn recv<'py>(
        &mut self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let limit = crate::boundary::seconds(timeout, "timeout")?;
        let until = limit.map(|limit| Instant::now() + limit);
        let session = self.open()?;
        loop {
            let slice_end = Instant::now() + SLICE;
            let idle_until = until.map_or(slice_end, |until| until.min(slice_end));
            let next = py.detach(|| session.next(Some(idle_until))).py_err(py)?;
            match next {
                Next::Call(call) => {
                    let parts = call.parts.iter().map(|part| to_numpy(py, &part));
                    let parts = PyTuple::new(py, parts.collect::<PyResult<Vec<_>>>()?)?;
                    let function = PyString::new(py, call.function);
                    return Ok(Some(PyTuple::new(py, [function.into_any(), parts.into_any()])?));
                }
                Next::End(_) => return Ok(None),
                Next::Idle => {
                    py.check_signals()?;
                    if let (Some(until), Some(limit)) = (until, limit)
                        && Instant::now() >= until
                    {
                        let waited = peerpipe::Error::Timeout {
                            waiting_for: "waiting for a call".into(),
                            after: limit,
                        };
                        return Err(crate::errors::to_py(py, waited));
                    }
                }
            }
        }
    }

    /// Answers the call received last; each argument is one part of the reply (an array, a
    /// float, an int or bytes, as in `Peer.call_parts`).
    #[pyo3(signature = (*parts))]
    fn reply(&mut self, py: Python<'_>, parts: &Bound<'_, PyTuple>) -> PyResult<()> {
        let what = |i| format!("part {i} of the reply");
        let loans = Loans::new();
        let mut held = Few::new();
        hold_all(parts, &what, &mut held)?;
        let mut reply = Few::new();
        parts_of(&held, &loans, &what, &mut reply)?;
        let session = self.open()?;
        py.detach(|| session.reply(&reply)).py_err(py)
    }

    /// Answers the call received last with ERROR carrying `message`; the conversation goes on.
    fn reject(&mut self, py: Python<'_>, message: &str) -> PyResult<()> {
        let session = self.open()?;
        py.detach(|| session.reject(message)).py_err(py)
    }

    /// The functions this session serves, as its HELLO announced them.
    #[getter]
    fn functions(&mut self) -> Vec<String> {
        self.open().map(|s| s.functions().to_vec()).unwrap_or_default()
    }

    /// How the conversation ended: "bye", "end-of-stream", or None while it goes on.
    #[getter]
    fn ending(&mut self) -> Option<&'static str> {
        self.open().ok().and_then(|s| s.ending()).map(|ending| match ending {
            Ending::Bye => "bye",
            Ending::EndOfStream => "end-of-stream",
        })
    }

    /// Closes the session (the client sees the end of the stream). Idempotent.
    fn close(&mut self) {
        if let Ok(slot) = self.session.get_mut() {
            *slot = None;
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, _exc: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }
}
