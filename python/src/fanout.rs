//! `peerpipe.Fanout`: one client calling many servers together, over the crate's
//! [`Fanout`](peerpipe::fanout::Fanout).

use std::sync::Mutex;

use numpy::{PyArrayDyn, PyUntypedArrayMethods};
use peerpipe::codec::{Values, ValuesMut};
use peerpipe::fanout::{Fanout, ServerError};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::errors::to_py;
use crate::loans::{Fresh, Loans};
use crate::spawn::{command, options, spawn_all_interruptibly};

/// Many servers called together (see `peerpipe.Fanout`).
#[pyclass(name = "Fanout", module = "peerpipe")]
pub(crate) struct PyFanout {
    fanout: Mutex<Option<Fanout>>,
    /// How long the last gather took, from its first send to its last reply or failure.
    last_gather_ns: Option<u64>,
}

impl PyFanout {
    fn open(&mut self) -> PyResult<&mut Fanout> {
        let slot = self.fanout.get_mut().map_err(|_| PyValueError::new_err("fan-out is closed"))?;
        slot.as_mut().ok_or_else(|| PyValueError::new_err("fan-out is closed"))
    }
}

/// The exception of a server that failed, its class that of the crate's error, its message
/// naming the server, with `server_index` and `server` set.
fn server_failure(py: Python<'_>, failure: ServerError) -> PyErr {
    let ServerError { index, server, error } = failure;
    name_server(py, to_py(py, error), index, server)
}

/// `err` about server `index` (command `server`): `server_index` and `server` set, and its
/// message led by `server INDEX (`SERVER`): ` — unless it is an OSError, whose arguments are
/// its errno and text. Setting attributes on a fresh exception cannot fail in practice; if it
/// did, the exception of the right class is still raised.
fn name_server(py: Python<'_>, err: PyErr, index: usize, server: String) -> PyErr {
    let value = err.value(py);
    if value.getattr("errno").is_err() {
        let _ = value.setattr("args", (format!("server {index} (`{server}`): {value}"),));
    }
    let _ = value.setattr("server_index", index);
    let _ = value.setattr("server", server);
    err
}

/// `out` as N writable, C-contiguous float64 buffers of `len` values: a 2-D (N, len) array,
/// or a list or tuple of N 1-D arrays.
fn reply_buffers<'py>(
    out: &Bound<'py, PyAny>,
    n: usize,
) -> PyResult<Vec<Bound<'py, PyArrayDyn<f64>>>> {
    let wrong = || {
        PyTypeError::new_err(format!(
            "out must be a float64 array of shape (N, len) or a list of N float64 arrays, N = {n}"
        ))
    };
    let arrays: Vec<Bound<'py, PyArrayDyn<f64>>> = if let Ok(array) = out.cast::<PyArrayDyn<f64>>()
    {
        if array.ndim() != 2 || array.shape()[0] != n {
            return Err(PyValueError::new_err(format!(
                "out must have shape (N, len) with N = {n}, got {:?}",
                array.shape()
            )));
        }
        (0..n)
            .map(|i| array.get_item(i).and_then(|row| Ok(row.cast_into::<PyArrayDyn<f64>>()?)))
            .collect::<PyResult<_>>()?
    } else if out.cast::<PyList>().is_ok() || out.cast::<PyTuple>().is_ok() {
        out.try_iter()?
            .map(|item| {
                item.and_then(|item| item.cast_into::<PyArrayDyn<f64>>().map_err(|_| wrong()))
            })
            .collect::<PyResult<_>>()?
    } else {
        return Err(wrong());
    };
    if arrays.len() != n {
        return Err(PyValueError::new_err(format!(
            "out must hold {n} arrays, got {}",
            arrays.len()
        )));
    }
    for (i, a) in arrays.iter().enumerate() {
        if !a.is_c_contiguous() {
            return Err(PyValueError::new_err(format!("out[{i}] must be C-contiguous")));
        }
    }
    Ok(arrays)
}

/// A gather's own checks and loans (`call_each`'s, nothing sent), run once on a throw-away
/// `x` and `out` of `n` rows before `Fanout.spawn` returns: the first gather then finds them
/// warm, as the next do (see `warm::client_call`).
fn warm_call_each(py: Python<'_>, n: usize) -> PyResult<()> {
    let mut x = Fresh::<f64, _>::new(py, [2].as_slice())?;
    x.elements()?.fill(0.0);
    let mut out = Fresh::<f64, _>::new(py, [n, 2].as_slice())?;
    out.elements()?.fill(0.0);
    let (x, out) = (x.into_array(), out.into_array().into_any());
    let outputs = reply_buffers(&out, n)?;
    let loans = Loans::new();
    let what = || "the warm-up array".to_owned();
    let x = x.as_any().cast::<PyArrayDyn<f64>>()?;
    let held = loans.read_or_copy(x, &what)?;
    for a in &outputs {
        let _ = (held.len(), loans.write(a, &what)?.len());
    }
    Ok(())
}

#[pymethods]
impl PyFanout {
    /// Spawns one server per command of `cmds` (each as `Peer.spawn` takes it), all at once,
    /// and exchanges HELLOs with each; a failure terminates those started and names the first
    /// server that failed.
    #[staticmethod]
    #[pyo3(signature = (cmds, *, transport="pipe", wait="auto", timeout=Some(10.0), max_frame_bytes=None))]
    fn spawn(
        py: Python<'_>,
        cmds: &Bound<'_, PyAny>,
        transport: &str,
        wait: &str,
        timeout: Option<f64>,
        max_frame_bytes: Option<u64>,
    ) -> PyResult<PyFanout> {
        if cmds.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err("cmds must be a list of commands, one per server"));
        }
        let options = options(transport, wait, timeout, max_frame_bytes, "zero-copy")?;
        let (mut names, mut commands) = (Vec::new(), Vec::new());
        for (index, cmd) in cmds.try_iter()?.enumerate() {
            let cmd = cmd?;
            let name = match cmd.extract::<String>() {
                Ok(line) => line,
                Err(_) => {
                    cmd.extract::<Vec<String>>().map(|argv| argv.join(" ")).unwrap_or_default()
                }
            };
            commands.push(command(py, &cmd).map_err(|e| name_server(py, e, index, name.clone()))?);
            names.push(name);
        }
        // All at once, so that slow starts (`srun`, `ssh`) overlap.
        let spawned = spawn_all_interruptibly(py, commands, options.clone())?;
        let mut peers = Vec::with_capacity(spawned.len());
        let mut first_error = None;
        for (index, (name, peer)) in names.into_iter().zip(spawned).enumerate() {
            match peer {
                Ok(peer) => peers.push((name, peer)),
                Err(e) if first_error.is_none() => first_error = Some((index, name, e)),
                Err(_) => {}
            }
        }
        if let Some((index, name, e)) = first_error {
            // Dropping the peers started says BYE to each and reaps it.
            py.detach(move || drop(peers));
            return Err(name_server(py, e, index, name));
        }
        if peers.is_empty() {
            return Err(PyValueError::new_err("cmds holds no command: a fan-out needs a server"));
        }
        let timeout = options.timeout;
        warm_call_each(py, peers.len())?;
        Ok(PyFanout { fanout: Mutex::new(Some(Fanout::new(peers, timeout))), last_gather_ns: None })
    }

    /// Nanoseconds the last `scatter` or `call_each` took, from its first send to its last
    /// reply (or failure); `None` before the first.
    #[getter]
    fn last_gather_ns(&self) -> Option<u64> {
        self.last_gather_ns
    }

    fn __len__(&mut self) -> PyResult<usize> {
        Ok(self.open()?.len())
    }

    /// Sends `x` (1-D float64) to every server and gathers the replies into `out`.
    fn scatter<'py>(
        &mut self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        out: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = self.open()?.len();
        let xs = PyList::new(py, std::iter::repeat_n(x, n))?;
        self.call_each(py, xs.as_any(), out)
    }

    /// Sends `xs[i]` to server i, all before any reply is read, and gathers the replies into
    /// `out[i]`.
    fn call_each<'py>(
        &mut self,
        py: Python<'py>,
        xs: &Bound<'py, PyAny>,
        out: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = self.open()?.len();
        let inputs = xs
            .try_iter()?
            .enumerate()
            .map(|(i, x)| {
                let x = x?;
                let array = x.cast::<PyArrayDyn<f64>>().map_err(|_| {
                    PyTypeError::new_err(format!("xs[{i}] must be a float64 numpy array"))
                })?;
                if array.ndim() != 1 {
                    return Err(PyValueError::new_err(format!("xs[{i}] must be 1-D")));
                }
                Ok(array.clone())
            })
            .collect::<PyResult<Vec<_>>>()?;
        if inputs.len() != n {
            return Err(PyValueError::new_err(format!(
                "xs must hold {n} arrays, got {}",
                inputs.len()
            )));
        }
        let outputs = reply_buffers(out, n)?;
        let loans = Loans::new();
        // Each x lent in place, or copied once when it is not C-contiguous and aligned; an
        // array given again right after itself (as `scatter` gives x) is read or copied once.
        let mut held = Vec::with_capacity(n);
        let mut which = Vec::with_capacity(n);
        for (i, a) in inputs.iter().enumerate() {
            if i == 0 || !a.is(&inputs[i - 1]) {
                held.push(loans.read_or_copy(a, &|| format!("xs[{i}]"))?);
            }
            which.push(held.len() - 1);
        }
        let requests = which.iter().map(|&k| Values::F64(&held[k])).collect::<Vec<_>>();
        let mut replies = (outputs.iter().enumerate())
            .map(|(i, a)| Ok(ValuesMut::F64(loans.write(a, &|| format!("out[{i}]"))?)))
            .collect::<PyResult<Vec<_>>>()?;
        let fanout = self.open()?;
        let gathered = py.detach(|| fanout.call_each(&requests, &mut replies));
        let gathered = gathered.map_err(|e| to_py(py, e))?;
        self.last_gather_ns = Some(gathered.elapsed_ns);
        let mut failures = gathered.results.into_iter().filter_map(Result::err).collect::<Vec<_>>();
        if failures.is_empty() {
            return Ok(out.clone());
        }
        let all: Vec<(usize, String, String)> =
            failures.iter().map(|f| (f.index, f.server.clone(), f.error.to_string())).collect();
        let err = server_failure(py, failures.remove(0));
        let _ = err.value(py).setattr("failures", all);
        Err(err)
    }

    /// Says BYE to every server and reaps it; the first failure is raised, naming its server.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let taken = self.fanout.get_mut().ok().and_then(Option::take);
        match taken {
            None => Ok(()),
            Some(fanout) => py.detach(|| fanout.close()).map_err(|f| server_failure(py, f)),
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*exc))]
    fn __exit__(&mut self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        let closed = self.close(py);
        crate::boundary::exit_after(closed, exc.get_item(0).ok().as_ref())
    }
}
