//! `peerpipe.serve_ode`: SciPy's `fun(t, y, *args)` and `jac(t, y, *args)` served as the
//! functions `rhs` and `jac` ([`peerpipe::ode::RHS_FUNCTION`], [`peerpipe::ode::JAC_FUNCTION`])
//! that `RemoteRhs` (Python or Rust) calls. The parts are read by the crate
//! ([`peerpipe::ode::ode_parts`]); this module turns them into SciPy's arguments and checks
//! the shape of what comes back.

use numpy::{PyArrayDyn, PyUntypedArrayMethods};
use peerpipe::ode::{JAC_FUNCTION, RHS_FUNCTION, ode_parts};
use peerpipe::parts::PartsOut;
use peerpipe::server::{Functions, Request};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyTuple};

use crate::errors::IntoPy;
use crate::loans::{Fresh, Loans, has_masked_values};
use crate::parts::shape_text;
use crate::serve::{run, stdio_options};

/// Serves `fun` as `rhs` (and `jac` as `jac`) on stdin/stdout (see `peerpipe.serve_ode`).
#[pyfunction]
#[pyo3(signature = (fun, jac=None, *, name=None, transport=None, wait="auto", max_frame_bytes=None, frame_timeout=Some(10.0), listen=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn serve_ode<'py>(
    py: Python<'py>,
    fun: Py<PyAny>,
    jac: Option<Py<PyAny>>,
    name: Option<String>,
    transport: Option<&str>,
    wait: &str,
    max_frame_bytes: Option<u64>,
    frame_timeout: Option<f64>,
    listen: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    for (what, callable) in [("fun", Some(&fun)), ("jac", jac.as_ref())] {
        if let Some(callable) = callable
            && !callable.bind(py).is_callable()
        {
            return Err(PyTypeError::new_err(format!(
                "{what} must be callable as {what}(t, y, *args), got {}",
                callable.bind(py).get_type().name()?
            )));
        }
    }
    let name = match name {
        Some(name) => name,
        None => fun
            .bind(py)
            .getattr(intern!(py, "__name__"))
            .and_then(|n| n.extract::<String>())
            .unwrap_or_else(|_| "python-ode".to_owned()),
    };
    let stdio = stdio_options(py, transport, wait, max_frame_bytes, frame_timeout, listen)?;
    let mut functions = Functions::new(&name);
    functions.add(RHS_FUNCTION, ode_function(fun, Returns::SameAsY)).py_err(py)?;
    if let Some(jac) = jac {
        functions.add(JAC_FUNCTION, ode_function(jac, Returns::Square)).py_err(py)?;
    }
    run(py, &mut functions, &stdio)
}

/// The shape an ODE function's result must have.
#[derive(Clone, Copy)]
enum Returns {
    /// `rhs`: y's shape, (n,) or, vectorized, (n, k).
    SameAsY,
    /// `jac`: (n, n), for a y of shape (n,).
    Square,
}

/// `callable(t, y, *args)` as a function of a [`Functions`] server: `t` a float, `y` a new
/// float64 array of shape (n,) — or (n, k) when the request's y is an n × k matrix (`rhs`
/// only) — and the parameters floats; its result, converted to float64 as SciPy converts it,
/// must have the shape `returns` says.
fn ode_function(
    callable: Py<PyAny>,
    returns: Returns,
) -> impl FnMut(Request<'_>, &mut PartsOut) -> Result<(), String> + Send + 'static {
    move |call, reply| {
        let (t, y, params) = ode_parts(&call)?;
        let y_shape = call.parts.get(1).map(|part| part.shape()).ok_or("no y")?;
        let dims = match y_shape.rows() {
            Some(rows) => vec![rows as usize, y_shape.cols as usize],
            None => vec![y.len()],
        };
        let expected = match returns {
            Returns::SameAsY => dims.clone(),
            Returns::Square if dims.len() == 1 => vec![dims[0], dims[0]],
            Returns::Square => {
                return Err(format!(
                    "{}: expected y as a vector of n values, found {y_shape}",
                    call.function
                ));
            }
        };
        Python::attach(|py| {
            let mut array = Fresh::<f64, _>::new(py, dims.as_slice())?;
            array.elements()?.copy_from_slice(y);
            let mut args = vec![PyFloat::new(py, t).into_any(), array.into_array().into_any()];
            args.extend(params.iter().map(|p| PyFloat::new(py, *p).into_any()));
            let result = callable.call1(py, PyTuple::new(py, args)?)?;
            let what = match returns {
                Returns::SameAsY => "the shape of y",
                Returns::Square => "n x n, n the length of y",
            };
            let result = real_array(result.bind(py), &expected, what)?;
            let loans = Loans::new();
            let values = loans.read_or_copy(&result, &|| "the result".to_owned())?;
            let out = match expected[..] {
                [n] => reply.f64_to_overwrite(n),
                // The Jacobian of no variables: no matrix part has 0 columns; a vector of none.
                [_, 0] => reply.f64_to_overwrite(0),
                [rows, cols] => reply.f64_matrix_to_overwrite(rows, cols),
                _ => unreachable!("1-D or 2-D"),
            };
            out.map_err(PyValueError::new_err)?.copy_from_slice(&values);
            Ok(())
        })
        .map_err(|e: PyErr| format!("{}: {e}", call.function))
    }
}

/// `result` as SciPy reads it (`np.asarray(result, dtype=float)`), refusing what is not real
/// numbers (complex, bool, objects) and masked values (whose mask `np.asarray` would drop), as
/// a C-contiguous float64 array of shape `expected`. A
/// float64 array of that shape in C order, aligned (what a model's function usually returns),
/// is taken as it is, as `np.asarray` takes it, without a call into numpy.
fn real_array<'py>(
    result: &Bound<'py, PyAny>,
    expected: &[usize],
    what: &str,
) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    if has_masked_values(result) {
        return Err(PyTypeError::new_err(
            "returned a masked array with masked values, whose mask cannot be sent: return \
             numpy.ma.filled(result, fill_value)",
        ));
    }
    if let Ok(array) = result.cast::<PyArrayDyn<f64>>()
        && array.shape() == expected
        && array.is_c_contiguous()
        && array.is_aligned()
    {
        return Ok(array.clone());
    }
    let py = result.py();
    let numpy = py.import(intern!(py, "numpy"))?;
    let array = numpy.call_method1(intern!(py, "ascontiguousarray"), (result,))?;
    let dtype = array.getattr(intern!(py, "dtype"))?;
    let kind: String = dtype.getattr(intern!(py, "kind"))?.extract()?;
    if !matches!(kind.as_str(), "f" | "i" | "u") {
        return Err(PyTypeError::new_err(format!(
            "returned {} values, expected real numbers (float64)",
            dtype
        )));
    }
    let array = array.call_method1(intern!(py, "astype"), (intern!(py, "float64"),))?;
    let array = array.cast_into::<PyArrayDyn<f64>>()?;
    if array.shape() != expected {
        return Err(PyValueError::new_err(format!(
            "returned an array of shape {}, expected {} ({what})",
            shape_text(array.shape()),
            shape_text(expected),
        )));
    }
    Ok(array)
}
