//! `peerpipe.RemoteRhs`: an integrator's right-hand side `fun(t, y, *args)` and its Jacobian
//! `jac(t, y, *args)` evaluated by a server process, called exactly as SciPy's `solve_ivp`
//! calls them. `t`, `y` and `args` all go to the server's function `rhs` (the crate's
//! [`rhs::RemoteRhs::eval_at`]); nothing is dropped: a server that does not serve `rhs` is
//! refused at construction unless the caller says the model is autonomous.

use std::sync::Mutex;

use numpy::{PyArrayDyn, PyUntypedArray, PyUntypedArrayMethods};
use peerpipe::frame::Hello;
use peerpipe::rhs::{self, Exchange, RHS_FUNCTION};
use peerpipe::transport::AutoCounts;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyTuple, PyType};

use crate::boundary::exit_after;
use crate::errors::{IntoPy, to_py, unsupported};
use crate::loans::{Fresh, Loans};
use crate::parts::{Elements, shape_text};
use crate::peer::PyCallTiming;
use crate::spawn::{command, options, spawn_interruptibly};

/// An integrator's right-hand side evaluated by a server process: `fun(t, y, *args)`.
#[pyclass(module = "peerpipe", name = "RemoteRhs")]
pub(crate) struct PyRemoteRhs {
    rhs: Mutex<Option<rhs::RemoteRhs>>,
    /// Why it is closed, for the message of a call on a closed `RemoteRhs`.
    closed_because: &'static str,
    /// Calls send the state alone, as DATA (the server serves no `rhs`).
    autonomous: bool,
    /// `y` may be (n, k): k states in one call.
    vectorized: bool,
    /// The server's functions, as its HELLO announced them.
    functions: Vec<String>,
    /// The parameters of the call under way (reused).
    args: Vec<f64>,
    /// The auto wait's counts and the moves when `reset_stats` was last called (zero before):
    /// `stats()` reports what came after.
    waits_before: AutoCounts,
    moves_before: u64,
}

/// `numbers.Real`, which numpy's float and integer scalars are registered as.
fn numbers_real(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static REAL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    REAL.import(py, "numbers", "Real")
}

/// `value` as a float when it is a real number — a `float`, an `int` (not a `bool`), a numpy
/// float or integer scalar — else a `TypeError` naming `what`.
fn real(value: &Bound<'_, PyAny>, what: &dyn Fn() -> String) -> PyResult<f64> {
    if let Ok(float) = value.cast::<PyFloat>() {
        return Ok(float.value());
    }
    let py = value.py();
    if !value.is_instance_of::<PyBool>() && value.is_instance(numbers_real(py)?)? {
        return value.extract::<f64>().or_else(|_| value.call_method0("__float__")?.extract());
    }
    let shown = value.repr().map(|r| r.to_string()).unwrap_or_default();
    let shown: String = shown.chars().take(60).collect();
    Err(PyTypeError::new_err(format!(
        "{} must be a real number (a float or an int), got {} {shown}",
        what(),
        value.get_type().name()?
    )))
}

/// How the server describes itself, for a refusal: `peerpipe 0.1.0, handler echo, which
/// serves no functions by name`.
fn describe(hello: &Hello) -> String {
    let implementation = hello.implementation.as_deref().unwrap_or("an unnamed implementation");
    let handler = hello.handler.as_deref().unwrap_or("unnamed");
    let serves = if !hello.parts {
        "whose HELLO does not announce parts=1 (it takes DATA requests only)".to_owned()
    } else if hello.functions.is_empty() {
        "which serves no functions by name".to_owned()
    } else {
        format!("which serves {}", hello.functions.join(", "))
    };
    format!("{implementation}, handler {handler}, {serves}")
}

impl PyRemoteRhs {
    fn open(&mut self) -> PyResult<&mut rhs::RemoteRhs> {
        let because = self.closed_because;
        let slot = self.rhs.get_mut().map_err(|_| PyRuntimeError::new_err("rhs poisoned"))?;
        slot.as_mut().ok_or_else(|| PyValueError::new_err(format!("RemoteRhs is closed{because}")))
    }

    /// After an error: drops the crate's `RemoteRhs` when the error ended the conversation.
    fn closed_by_error(&mut self) {
        if let Ok(slot) = self.rhs.get_mut()
            && slot.as_ref().is_some_and(|rhs| !rhs.peer().is_open())
        {
            *slot = None;
            self.closed_because = " (after an earlier error)";
        }
    }

    /// `t` and `args` checked, the parameters into `self.args`; `t` as a float.
    fn time_and_args(&mut self, t: &Bound<'_, PyAny>, args: &Bound<'_, PyTuple>) -> PyResult<f64> {
        let t = real(t, &|| "t".to_owned())?;
        self.args.clear();
        for (i, arg) in args.iter().enumerate() {
            self.args.push(real(&arg, &|| format!("args[{i}]"))?);
        }
        Ok(t)
    }

    /// Refuses `args` on a `RemoteRhs` that sends the state alone.
    fn check_no_args_when_autonomous(&self) -> PyResult<()> {
        if self.autonomous && !self.args.is_empty() {
            return Err(PyTypeError::new_err(format!(
                "this RemoteRhs was made with autonomous=True: it sends the state alone and \
                 takes no args, got {} (serve rhs(t, y, *args) to pass them)",
                self.args.len()
            )));
        }
        Ok(())
    }

    /// A call's own checks, loans and reply array, run once on a throw-away `t` and `y` before
    /// the constructor returns (nothing sent): the first call then finds them warm, as the
    /// next do (see `warm::client_call`).
    fn warm_call(&mut self, py: Python<'_>) -> PyResult<()> {
        let t = PyFloat::new(py, 0.0).into_any();
        let t = self.time_and_args(&t, &PyTuple::empty(py))?;
        let mut y = Fresh::<f64, _>::new(py, [2].as_slice())?;
        y.elements()?.fill(t);
        let y = y.into_array().into_any();
        let state = self.state(&y)?;
        let mut out = Fresh::<f64, _>::new(py, state.array_shape())?;
        let loans = Loans::new();
        let n = state.values(&loans, &|| "y".to_owned())?.len();
        out.elements()?[..n].fill(t);
        drop(out.into_array());
        Ok(())
    }

    /// `y` checked: a float64 array, 1-D, or 2-D (n, k) when vectorized; copied once when it
    /// is not C-contiguous.
    fn state<'py>(&self, y: &Bound<'py, PyAny>) -> PyResult<Elements<'py, f64>> {
        let untyped = y.cast::<PyUntypedArray>().map_err(|_| {
            PyTypeError::new_err(format!(
                "y must be a numpy array of float64, got {}",
                y.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })?;
        match (untyped.ndim(), self.vectorized) {
            (1, _) | (2, true) => {}
            (2, false) => {
                return Err(PyValueError::new_err(format!(
                    "y must be 1-D, got shape {}: for solve_ivp(..., vectorized=True), make the \
                     RemoteRhs with vectorized=True, and y of shape (n, k) goes in one call",
                    shape_text(untyped.shape())
                )));
            }
            (ndim, _) => {
                let allowed = if self.vectorized { "1-D or 2-D (n, k)" } else { "1-D" };
                return Err(PyValueError::new_err(format!(
                    "y must be {allowed}, got a {ndim}-D array of shape {}",
                    shape_text(untyped.shape())
                )));
            }
        }
        let y = untyped.cast::<PyArrayDyn<f64>>().map_err(|_| {
            PyTypeError::new_err(format!("y must have dtype float64, got {}", untyped.dtype()))
        })?;
        Elements::new(y, &|| "y".to_owned())
    }

    /// The derivative at `(t, y)` into `dst` (y's elements, `cols` columns of them when
    /// vectorized): one round trip, the GIL released.
    fn eval_into(
        &mut self,
        py: Python<'_>,
        t: f64,
        state: &[f64],
        cols: Option<usize>,
        dst: &mut [f64],
    ) -> PyResult<()> {
        let autonomous = self.autonomous;
        let args = std::mem::take(&mut self.args);
        let rhs = self.open()?;
        let result = py.detach(|| match cols {
            Some(columns) => rhs.eval_columns_at(t, state, columns, &args, dst),
            // t was checked; the server's default handler is given the state alone.
            None if autonomous => rhs.eval(state, dst),
            None => rhs.eval_at(t, state, &args, dst),
        });
        self.args = args;
        result.map(drop).map_err(|e| {
            self.closed_by_error();
            to_py(py, e)
        })
    }
}

#[pymethods]
impl PyRemoteRhs {
    /// Spawns `cmd` as the derivative server (see `peerpipe.RemoteRhs`).
    #[new]
    #[pyo3(signature = (cmd, *, transport="pipe", wait="auto", timeout=Some(10.0), max_frame_bytes=None, wire="f64", autonomous=false, vectorized=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        cmd: &Bound<'_, PyAny>,
        transport: &str,
        wait: &str,
        timeout: Option<f64>,
        max_frame_bytes: Option<u64>,
        wire: &str,
        autonomous: bool,
        vectorized: bool,
    ) -> PyResult<PyRemoteRhs> {
        let exchange = match wire {
            "f64" => Exchange::F64,
            "f32" if autonomous => Exchange::F64AsF32,
            "f32" => {
                return Err(PyValueError::new_err(
                    "wire='f32' narrows the state of DATA calls, made with autonomous=True only; \
                     rhs(t, y, *args) travels as f64",
                ));
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "wire must be 'f64' or 'f32', got {other:?}"
                )));
            }
        };
        if autonomous && vectorized {
            return Err(PyValueError::new_err(
                "vectorized=True needs the server's rhs function; autonomous=True sends one 1-D \
                 state per call as DATA",
            ));
        }
        let options = options(transport, wait, timeout, max_frame_bytes, "zero-copy")?;
        let command = command(py, cmd)?;
        let peer = spawn_interruptibly(py, command, options)?;
        let hello = peer.server_hello().clone();
        if !autonomous && !hello.functions.iter().any(|f| f == RHS_FUNCTION) {
            // Said goodbye to before refusing: no server outlives the refusal.
            py.detach(|| peer.close()).py_err(py)?;
            return Err(unsupported(
                py,
                format!(
                    "the server ({}) does not serve a function \"{RHS_FUNCTION}\", so it cannot \
                     be given t and args, and RemoteRhs drops neither. Serve rhs(t, y, *args) \
                     (peerpipe.serve_ode(fun) in Python, peerpipe::server::Functions in Rust), \
                     or, if the derivative depends on y alone and takes no args, pass \
                     autonomous=True to send the state alone as DATA",
                    describe(&hello)
                ),
            ));
        }
        let rhs = rhs::RemoteRhs::new(peer).with_exchange(exchange);
        let mut made = PyRemoteRhs {
            rhs: Mutex::new(Some(rhs)),
            closed_because: "",
            autonomous,
            vectorized,
            functions: hello.functions,
            args: Vec::new(),
            waits_before: AutoCounts::default(),
            moves_before: 0,
        };
        made.warm_call(py)?;
        Ok(made)
    }

    /// `fun(t, y, *args)`: the derivative at `(t, y)` as a new float64 array of y's shape.
    #[pyo3(signature = (t, y, *args))]
    fn __call__<'py>(
        &mut self,
        py: Python<'py>,
        t: &Bound<'py, PyAny>,
        y: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        self.open()?;
        let t = self.time_and_args(t, args)?;
        self.check_no_args_when_autonomous()?;
        let state = self.state(y)?;
        let mut out = Fresh::new(py, state.array_shape())?;
        let loans = Loans::new();
        let values = state.values(&loans, &|| "y".to_owned())?;
        self.eval_into(py, t, values, state.cols(), out.elements()?)?;
        Ok(out.into_array())
    }

    /// `fun(t, y, *args)` written into `out` (float64, y's shape): no allocation.
    #[pyo3(signature = (t, y, *args, out))]
    fn eval<'py>(
        &mut self,
        py: Python<'py>,
        t: &Bound<'py, PyAny>,
        y: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        out: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.open()?;
        let t = self.time_and_args(t, args)?;
        self.check_no_args_when_autonomous()?;
        let state = self.state(y)?;
        let target = out.cast::<PyArrayDyn<f64>>().map_err(|_| {
            PyTypeError::new_err(format!(
                "out must be a float64 numpy array of y's shape, got {}",
                out.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })?;
        if target.shape() != state.array_shape() {
            return Err(PyValueError::new_err(format!(
                "out must have y's shape {}, got {}",
                shape_text(state.array_shape()),
                shape_text(target.shape())
            )));
        }
        let loans = Loans::new();
        let values = state.values(&loans, &|| "y".to_owned())?;
        let dst = loans.write(target, &|| "out".to_owned())?;
        self.eval_into(py, t, values, state.cols(), dst)?;
        Ok(out.clone())
    }

    /// `jac(t, y, *args)`: the server's Jacobian at `(t, y)` as a new (n, n) float64 array.
    #[pyo3(signature = (t, y, *args))]
    fn jac<'py>(
        &mut self,
        py: Python<'py>,
        t: &Bound<'py, PyAny>,
        y: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        self.open()?;
        let t = self.time_and_args(t, args)?;
        let state = self.state(y)?;
        if state.cols().is_some() {
            return Err(PyValueError::new_err(format!(
                "jac takes y of shape (n,), got {}",
                shape_text(state.array_shape())
            )));
        }
        let loans = Loans::new();
        let values = state.values(&loans, &|| "y".to_owned())?;
        let n = values.len();
        let mut out = Fresh::new(py, &[n, n][..])?;
        let dst = out.elements()?;
        let args = std::mem::take(&mut self.args);
        let rhs = self.open()?;
        let result = py.detach(|| rhs.jac_at(t, values, &args, dst));
        self.args = args;
        match result {
            Ok(_) => Ok(out.into_array()),
            Err(e) => {
                self.closed_by_error();
                Err(to_py(py, e))
            }
        }
    }

    /// The functions the server serves by name, as its HELLO announced them.
    #[getter]
    fn functions(&self) -> Vec<String> {
        self.functions.clone()
    }

    /// True when calls send the state alone as DATA (made with `autonomous=True`).
    #[getter]
    fn autonomous(&self) -> bool {
        self.autonomous
    }

    /// True when `y` may be (n, k), k states in one call (made with `vectorized=True`).
    #[getter]
    fn vectorized(&self) -> bool {
        self.vectorized
    }

    /// Timing of the calls since the `RemoteRhs` was made or `reset_stats()` last ran: calls,
    /// sums in ns, and percentiles of the round trip and of the overhead (round trip − server
    /// time) per call; and what this side's waits did under the auto wait. Every key is
    /// described in docs/USAGE.md ("What `RemoteRhs.stats()` says").
    fn stats<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (waits_before, moves_before) = (self.waits_before, self.moves_before);
        let rhs = self.open()?;
        let auto = rhs.peer().auto_wait();
        let mut counts = AutoCounts::default();
        counts.add_between(&waits_before, &auto.counts());
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
        for (name, value) in counts.fields() {
            d.set_item(format!("wait_{name}"), value)?;
        }
        d.set_item("wait_spinning", auto.is_spinning())?;
        d.set_item("wait_moves", rhs.peer().moves().saturating_sub(moves_before))?;
        Ok(d)
    }

    /// Starts `stats()` afresh, e.g. between two solves: the calls, sums, percentiles and
    /// wait counts it reports are then those of the calls made after this one.
    /// `wait_spinning` stays what it is (a state, not a count), and so does `last_timing`.
    fn reset_stats(&mut self) -> PyResult<()> {
        let rhs = self.open()?;
        rhs.reset_stats();
        let (waits, moves) = (rhs.peer().auto_wait().counts(), rhs.peer().moves());
        (self.waits_before, self.moves_before) = (waits, moves);
        Ok(())
    }

    /// Timing of the most recent successful call.
    #[getter]
    fn last_timing(&mut self) -> PyResult<PyCallTiming> {
        Ok(self.open()?.last_timing().into())
    }

    /// Says BYE and reaps the server; does nothing when already closed.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let slot = self.rhs.get_mut().map_err(|_| PyRuntimeError::new_err("rhs poisoned"))?;
        self.closed_because = "";
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
