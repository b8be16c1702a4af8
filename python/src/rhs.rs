//! `peerpipe.RemoteRhs`: an integrator's right-hand side evaluated by a server process.

use std::sync::Mutex;

use numpy::{PyArray1, PyArrayMethods, PyUntypedArrayMethods};
use peerpipe::rhs::{self, Exchange};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::array::{Array, array, borrow_error, contiguous, one_d};
use crate::errors::{IntoPy, to_py};
use crate::exit_after;
use crate::peer::PyCallTiming;
use crate::spawn::{command, options, spawn_interruptibly};

/// An integrator's right-hand side evaluated by a server process: `fun(t, y)`.
#[pyclass(module = "peerpipe", name = "RemoteRhs")]
pub(crate) struct PyRemoteRhs {
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
        let y = match array(y, "y", one_d::STATE)? {
            Array::F64(y) => y,
            Array::F32(_) => {
                return Err(PyTypeError::new_err("y must have dtype float64, got float32"));
            }
        };
        let y = y.try_readonly().map_err(|e| borrow_error("y", e))?;
        let mut copy = Vec::new();
        let state = contiguous(&y, &mut copy);
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
        let target = match array(out, "out", one_d::OUT)? {
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
        d.set_item("wait_kept_asleep", counts.kept_asleep)?;
        d.set_item("wait_dear_yields", counts.dear_yields)?;
        d.set_item("wait_spinning", auto.is_spinning())?;
        d.set_item("wait_moves", rhs.peer().moves())?;
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
