//! numpy arrays at the boundary: the 1-D float64/float32 array a call takes, checked.

use numpy::{PyArray1, PyUntypedArray, PyUntypedArrayMethods};
use peerpipe::codec::{Values, ValuesMut};
use peerpipe::server::Response;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::loans::Plain;

/// An element type that crosses the boundary, float64 or float32: every path that moves
/// arrays (a call, a served request) is written once, generic over it.
pub(crate) trait Element: Plain + Default {
    /// The request that sends `values`; with `narrow` (f64 only), as f32 on the wire.
    fn values(values: &[Self], narrow: bool) -> Values<'_>;
    /// The reply buffer `dst`; with `narrow` (f64 only), widened from f32 on the wire.
    fn values_mut(dst: &mut [Self], narrow: bool) -> ValuesMut<'_>;
    /// A server's reply of `values`.
    fn response(values: &[Self]) -> Response<'_>;
}

impl Element for f64 {
    fn values(values: &[f64], narrow: bool) -> Values<'_> {
        if narrow { Values::F64AsF32(values) } else { Values::F64(values) }
    }
    fn values_mut(dst: &mut [f64], narrow: bool) -> ValuesMut<'_> {
        if narrow { ValuesMut::F64FromF32(dst) } else { ValuesMut::F64(dst) }
    }
    fn response(values: &[f64]) -> Response<'_> {
        Response::F64(values)
    }
}

impl Element for f32 {
    /// `narrow` is refused for a float32 `x` before this is reached; f32 is already narrow.
    fn values(values: &[f32], _narrow: bool) -> Values<'_> {
        Values::F32(values)
    }
    fn values_mut(dst: &mut [f32], _narrow: bool) -> ValuesMut<'_> {
        ValuesMut::F32(dst)
    }
    fn response(values: &[f32]) -> Response<'_> {
        Response::F32(values)
    }
}

/// What to do with an array of more than one dimension, by what the array is for: said after
/// `… must be 1-D, got a 2-D array of shape (2, 3)`.
pub(crate) mod one_d {
    /// `Peer.call`'s `x`.
    pub(crate) const REQUEST: &str = "a call sends one 1-D array: pass x.ravel() to send its \
        values in order (and reshape the reply), or call once per row";
    /// An `out` the reply is written into.
    pub(crate) const OUT: &str = "the reply is written into one 1-D array: pass a 1-D out of \
        the request's length";
    /// What a Python handler returns.
    pub(crate) const REPLY: &str = "return one 1-D array, e.g. result.ravel()";
}

/// The 1-D float64 or float32 numpy array `x`, or the error a user should see.
pub(crate) enum Array<'py> {
    F64(Bound<'py, PyArray1<f64>>),
    F32(Bound<'py, PyArray1<f32>>),
}

/// `x` as an [`Array`]; `not_1d` (one of [`one_d`]) ends the error of an array of more
/// dimensions, saying what to do instead.
pub(crate) fn array<'py>(x: &Bound<'py, PyAny>, what: &str, not_1d: &str) -> PyResult<Array<'py>> {
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
            "{what} must be 1-D, got a {}-D array of shape ({}); {not_1d}",
            untyped.ndim(),
            untyped.shape().iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
        )));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must have dtype float64 or float32 (native byte order), got {}",
        untyped.dtype()
    )))
}
