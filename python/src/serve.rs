//! `peerpipe.serve`: Python callables as the handler (DATA) and the functions by name (PARTS)
//! of a server process, served by the crate's stdio server; the options every Python server
//! takes.

use numpy::PyArray1;
use peerpipe::Wait;
use peerpipe::codec;
use peerpipe::frame::Dtype;
use peerpipe::parts::PartsOut;
use peerpipe::server::{
    self, Ending, Functions, Handler, Request, Response, ServeOptions, StdioOptions,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::array::{Array, Element, array, one_d};
use crate::errors::IntoPy;
use crate::loans::{Fresh, Loans};
use crate::parts::{Held, hold, to_numpy};
use crate::warm;

/// A Python callable as a crate [`Handler`]: the request is copied into a new numpy array
/// (so the callable may keep it), the reply copied out of the returned (or filled) array.
pub(crate) struct PyHandler {
    callable: Py<PyAny>,
    /// `handler(x, out)` instead of `handler(x) -> array`.
    in_place: bool,
    name: String,
    /// The reply, copied out of the handler's array, of the request's dtype.
    f64s: Vec<f64>,
    f32s: Vec<f32>,
}

/// Which buffer of a [`PyHandler`] holds the reply.
pub(crate) enum Filled {
    F64,
    F32,
}

impl PyHandler {
    /// Calls the Python handler with the request as a new array of `T` (and a zeroed `out`
    /// of `T` when it fills one in place), and returns what it answered.
    fn invoke<'py, T: Element>(
        &self,
        py: Python<'py>,
        request: &server::Array<'_>,
    ) -> Result<Bound<'py, PyAny>, String> {
        let n = request.count as usize;
        let mut x = Fresh::<T, _>::new(py, n).map_err(|e| e.to_string())?;
        let dst = x.elements().map_err(|e| e.to_string())?;
        codec::decode_into(request.payload, T::values_mut(dst, false))
            .map_err(|e| e.to_string())?;
        let x = x.into_array();
        let out = if self.in_place {
            let mut out = Fresh::<T, _>::new(py, n).map_err(|e| e.to_string())?;
            out.elements().map_err(|e| e.to_string())?.fill(T::default());
            Some(out.into_array().into_any())
        } else {
            None
        };
        let called = match &out {
            Some(out) => self.callable.call1(py, (x, out)).map(|_| out.clone().unbind()),
            None => self.callable.call1(py, (x,)),
        };
        Ok(called.map_err(|e| format!("{}: {e}", self.name))?.into_bound(py))
    }

    /// Answers `request`, one array: the handler's reply copied into the buffer of its dtype.
    fn answer(&mut self, py: Python<'_>, request: &server::Array<'_>) -> Result<Filled, String> {
        let reply = match request.dtype {
            Dtype::F64 => self.invoke::<f64>(py, request)?,
            Dtype::F32 => self.invoke::<f32>(py, request)?,
            Dtype::Bytes => return Err(format!("{}: expected f64 or f32, found bytes", self.name)),
        };
        match array(&reply, "the handler's reply", one_d::REPLY)
            .map_err(|e| format!("{}: {e}", self.name))?
        {
            Array::F64(a) => copy_into(&a, &mut self.f64s).map(|()| Filled::F64),
            Array::F32(a) => copy_into(&a, &mut self.f32s).map(|()| Filled::F32),
        }
    }
}

/// Copies the elements of `array` into `buffer`, replacing what it held.
fn copy_into<T: Element>(
    array: &Bound<'_, PyArray1<T>>,
    buffer: &mut Vec<T>,
) -> Result<(), String> {
    let loans = Loans::new();
    let what = || "the handler's reply".to_owned();
    let values = loans.read_or_copy(array, &what).map_err(|e| e.to_string())?;
    buffer.clear();
    buffer.extend_from_slice(&values);
    Ok(())
}

impl Handler for PyHandler {
    fn name(&self) -> &str {
        &self.name
    }

    /// One array (a DATA request, or the same as one part); other requests get ERROR.
    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        _: &mut PartsOut,
    ) -> Result<Response<'a>, String> {
        let array = request.array().map_err(|e| format!("{}: {e}", self.name))?;
        match Python::attach(|py| self.answer(py, &array))? {
            Filled::F64 => Ok(f64::response(&self.f64s)),
            Filled::F32 => Ok(f32::response(&self.f32s)),
        }
    }
}

/// What a Python server serves: a handler (its default function, which a DATA request calls),
/// functions by name, or both.
struct Served {
    name: String,
    data: Option<PyHandler>,
    functions: Functions,
}

impl Handler for Served {
    fn name(&self) -> &str {
        &self.name
    }

    fn functions(&self) -> Vec<String> {
        self.functions.functions()
    }

    /// The default function is the handler, when there is one; named functions are the
    /// functions'.
    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        out: &mut PartsOut,
    ) -> Result<Response<'a>, String> {
        match &mut self.data {
            Some(handler) if request.function.is_empty() => handler.handle(request, out),
            _ => self.functions.handle(request, out),
        }
    }
}

/// Serves requests on stdin/stdout (or the shared region given as stdin) with a Python
/// callable (DATA) and Python functions by name (PARTS) until the client says BYE or closes
/// (see `peerpipe.serve`).
#[pyfunction]
#[pyo3(signature = (handler=None, *, functions=None, transport=None, wait="auto", in_place=None, name=None, max_frame_bytes=None, frame_timeout=Some(10.0), listen=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn serve<'py>(
    py: Python<'py>,
    handler: Option<Py<PyAny>>,
    functions: Option<&Bound<'py, PyAny>>,
    transport: Option<&str>,
    wait: &str,
    in_place: Option<bool>,
    name: Option<String>,
    max_frame_bytes: Option<u64>,
    frame_timeout: Option<f64>,
    listen: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let by_name = match functions {
        None => Functions::new(""),
        Some(given) => named_functions(py, given)?,
    };
    if handler.is_none() && by_name.names().is_empty() {
        return Err(PyTypeError::new_err(
            "serve needs something to serve: a handler (DATA requests), functions={name: f} \
             (PARTS requests by name), or both",
        ));
    }
    let data = match handler {
        None => {
            if in_place.is_some() {
                return Err(PyTypeError::new_err(
                    "in_place is for the handler of DATA requests, and no handler was given",
                ));
            }
            None
        }
        Some(handler) => Some(data_handler(py, handler, in_place)?),
    };
    let name = match (name, &data) {
        (Some(name), _) => name,
        (None, Some(handler)) => handler.name.clone(),
        (None, None) => "python".to_owned(),
    };
    let stdio = stdio_options(py, transport, wait, max_frame_bytes, frame_timeout, listen)?;
    let mut served = Served { name, data, functions: by_name };
    run(py, &mut served, &stdio)
}

/// `functions` as the crate's [`Functions`]: each a Python callable, named by its key.
fn named_functions(py: Python<'_>, given: &Bound<'_, PyAny>) -> PyResult<Functions> {
    let dict = given.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "functions must be a dict of names to callables, got {}",
            given.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    let mut served = Functions::new("python");
    for (key, value) in dict.iter() {
        let name: String = key.extract().map_err(|_| {
            PyTypeError::new_err(format!("functions: a name must be a str, got {key:?}"))
        })?;
        if !value.is_callable() {
            return Err(PyTypeError::new_err(format!(
                "functions[{}] must be callable, got {}",
                key.repr()?,
                value.get_type().name()?
            )));
        }
        served.add(&name, python_function(name.clone(), value.unbind())).py_err(py)?;
    }
    Ok(served)
}

/// A Python callable as a function of a [`Functions`] server: called with the request's
/// parts as new numpy arrays (copies it may keep); what it returns is the reply's parts.
fn python_function(
    name: String,
    callable: Py<PyAny>,
) -> impl FnMut(Request<'_>, &mut PartsOut) -> Result<(), String> + Send + 'static {
    move |call, reply| {
        Python::attach(|py| {
            let args = call.parts.iter().map(|part| to_numpy(py, &part));
            let args = PyTuple::new(py, args.collect::<PyResult<Vec<_>>>()?)?;
            let result = callable.call1(py, args)?;
            push_reply(result.bind(py), reply)
        })
        .map_err(|e| format!("{name}: {e}"))
    }
}

/// What a function returned as the reply's parts: one value (an array, a float, an int,
/// bytes) is one part; a tuple or list is one part per item.
fn push_reply(result: &Bound<'_, PyAny>, reply: &mut PartsOut) -> PyResult<()> {
    let push = |held: Held<'_>, reply: &mut PartsOut, what: &dyn Fn() -> String| {
        let loans = Loans::new();
        reply.push(held.part(&loans, what)?).map_err(PyValueError::new_err)
    };
    if result.is_none() {
        return Err(PyTypeError::new_err(
            "the function returned None: return an array, a number, or a tuple of them (() for \
             a reply of no parts)",
        ));
    }
    if result.cast::<PyTuple>().is_ok() || result.cast::<PyList>().is_ok() {
        for (i, item) in result.try_iter()?.enumerate() {
            let what = || format!("the reply's part {i}");
            push(hold(&item?, &what)?, reply, &what)?;
        }
        return Ok(());
    }
    let what = || "the reply".to_owned();
    push(hold(result, &what)?, reply, &what)
}

/// The handler of DATA requests, `handler(x)` or `handler(x, out)`.
fn data_handler(py: Python<'_>, handler: Py<PyAny>, in_place: Option<bool>) -> PyResult<PyHandler> {
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
    let name = bound
        .getattr(intern!(py, "__name__"))
        .and_then(|n| n.extract::<String>())
        .unwrap_or_else(|_| "python".to_owned());
    Ok(PyHandler { callable: handler, in_place, name, f64s: Vec::new(), f32s: Vec::new() })
}

/// The crate's options of a stdio server from `serve`'s keyword arguments.
pub(crate) fn stdio_options(
    py: Python<'_>,
    transport: Option<&str>,
    wait: &str,
    max_frame_bytes: Option<u64>,
    frame_timeout: Option<f64>,
    listen: Option<&str>,
) -> PyResult<StdioOptions> {
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
    let frame_timeout = crate::boundary::seconds(frame_timeout, "frame_timeout")?;
    let defaults = ServeOptions::default();
    Ok(StdioOptions {
        transport: transport.map(str::parse).transpose().py_err(py)?,
        wait,
        listen,
        connect_timeout: None,
        serve: ServeOptions {
            max_frame_bytes: max_frame_bytes.unwrap_or(defaults.max_frame_bytes),
            frame_timeout,
            ..defaults
        },
    })
}

/// Serves stdio with `handler` until BYE or end of stream, without the GIL (a tcp server
/// waits for its client to connect here), its first request's extra costs paid before the
/// HELLO ([`warm::before_hello`]); returns what `serve` returns.
pub(crate) fn run<'py>(
    py: Python<'py>,
    handler: &mut (impl Handler + Send),
    stdio: &StdioOptions,
) -> PyResult<Bound<'py, PyDict>> {
    warm::before_hello(py)?;
    let (kind, summary) = py.detach(|| server::serve_stdio(handler, stdio)).py_err(py)?;
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
pub(crate) fn positional_parameters(callable: &Bound<'_, PyAny>) -> PyResult<usize> {
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
