//! What a Python server's first request would pay beyond its second, paid before its HELLO:
//! numpy's import (50–110 ms when the model's script had not imported it), rust-numpy's C API
//! and borrow checking, a first array of each dtype made, read and copied as a request and a
//! reply are, and a first ufunc (numpy's dispatch and a Python float's promotion, which a
//! model's first line of arithmetic pays). `serve`, `serve_ode` and `Session` call it before
//! they start serving, so that `Peer.spawn` (or C's `pp_spawn`) returns a server whose first
//! call costs about what a call after a pause does (docs/USAGE.md, "The first call", has the
//! figures and what stays). Nothing of the model is called.

use pyo3::intern;
use pyo3::prelude::*;

use crate::array::{Array, Element, array, one_d};
use crate::loans::{Fresh, Loans};

/// What a client's first call pays on this side beyond its second, paid before `Peer.spawn`,
/// `RemoteRhs(...)` or `Fanout.spawn` returns: a call's own checks and loans run once on a
/// throw-away request and reply of each dtype, nothing sent, so that the first call finds
/// them in the caches (and their memory mapped) like the next.
pub(crate) fn client_call(py: Python<'_>) -> PyResult<()> {
    client_call_of::<f64>(py)?;
    client_call_of::<f32>(py)
}

fn client_call_of<T: Element>(py: Python<'_>) -> PyResult<()> {
    let fresh = |py| -> PyResult<Bound<'_, PyAny>> {
        let mut a = Fresh::<T, _>::new(py, 2)?;
        a.elements()?.fill(T::default());
        Ok(a.into_array().into_any())
    };
    let (x, out) = (fresh(py)?, fresh(py)?);
    let what = || "the warm-up array".to_owned();
    let loans = Loans::new();
    match (array(&x, "x", one_d::REQUEST)?, array(&out, "out", one_d::OUT)?) {
        (Array::F64(x), Array::F64(out)) => {
            let _ = (loans.read_or_copy(&x, &what)?.len(), loans.write(&out, &what)?.len());
        }
        (Array::F32(x), Array::F32(out)) => {
            let _ = (loans.read_or_copy(&x, &what)?.len(), loans.write(&out, &what)?.len());
        }
        _ => unreachable!("two arrays of one dtype"),
    }
    Ok(())
}

/// Imports numpy and runs, on a throw-away array of each dtype, the conversions a request
/// and its reply go through.
pub(crate) fn before_hello(py: Python<'_>) -> PyResult<()> {
    py.import("numpy")?;
    request_and_reply::<f64>(py)?;
    request_and_reply::<f32>(py)
}

/// A request's new array of `T`, taken as a handler's reply would be (checked 1-D, lent or
/// copied through the borrow checker).
fn request_and_reply<T: Element>(py: Python<'_>) -> PyResult<()> {
    let mut x = Fresh::<T, _>::new(py, 2)?;
    x.elements()?.fill(T::default());
    let x = x.into_array().into_any();
    x.call_method1(intern!(py, "__mul__"), (-2.0,))?;
    let loans = Loans::new();
    let what = || "the warm-up array".to_owned();
    match array(&x, "the warm-up array", one_d::REPLY)? {
        Array::F64(a) => drop(loans.read_or_copy(&a, &what)?),
        Array::F32(a) => drop(loans.read_or_copy(&a, &what)?),
    }
    Ok(())
}
