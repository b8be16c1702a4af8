//! PARTS at the boundary: Python values as the crate's parts ([`Part`], [`PartMut`]) and
//! received parts as new numpy arrays. The one place that says which Python values a part
//! can be, for both sides: `Peer.call_parts`'s inputs and `out`, and the replies of
//! `serve(functions=...)`.
//!
//! | Python value                                   | part                         |
//! |------------------------------------------------|------------------------------|
//! | numpy array, 1-D, float64/float32/int64/uint8  | a vector of its dtype (uint8: bytes) |
//! | numpy array, 2-D, same dtypes                  | a row-major matrix (rows, cols)      |
//! | `float` (numpy float64 included)               | f64, 1 element               |
//! | `int` (not `bool`), within i64                 | i64, 1 element               |
//! | numpy scalar of one of the dtypes above        | 1 element of its dtype       |
//! | `bytes`, `bytearray`                           | bytes                        |
//!
//! Anything else — object, complex, bool or string arrays, 0-D or 3-D arrays, `bool`, `str`,
//! lists — is a `TypeError` or `ValueError` naming the part, before anything is sent. A
//! non-contiguous array (or a Fortran-ordered matrix) is copied once into row-major order.

use numpy::{PyArrayDyn, PyUntypedArray, PyUntypedArrayMethods};
use peerpipe::parts::{Part, PartDtype, PartMut, PartRef};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyFloat, PyInt, PyTuple, PyType};
use smallvec::SmallVec;

use crate::loans::{Fresh, Loans, Plain, copy_unwritten};

/// `numpy.generic`, the base class of numpy's scalars.
fn numpy_generic(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static GENERIC: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    GENERIC.import(py, "numpy", "generic")
}

/// The elements of one array part: lent in place ([`Loans::read`]) when C-contiguous and
/// aligned, else copied once.
pub(crate) struct Elements<'py, T: numpy::Element> {
    array: Bound<'py, PyArrayDyn<T>>,
    copy: Option<Vec<T>>,
    /// The columns of a 2-D array; `None` for a vector.
    cols: Option<usize>,
}

impl<'py, T: Plain> Elements<'py, T> {
    pub(crate) fn new(
        array: &Bound<'py, PyArrayDyn<T>>,
        what: &dyn Fn() -> String,
    ) -> PyResult<Self> {
        let cols = match array.shape() {
            [_] => None,
            [_, cols] => Some(*cols),
            shape => {
                return Err(PyValueError::new_err(format!(
                    "{} must be 1-D or 2-D, got a {}-D array of shape {}",
                    what(),
                    shape.len(),
                    shape_text(shape)
                )));
            }
        };
        if cols == Some(0) {
            return Err(PyValueError::new_err(format!(
                "{} is a matrix of no columns, shape {}: a matrix part has at least one column",
                what(),
                shape_text(array.shape())
            )));
        }
        let in_place = array.is_c_contiguous() && array.is_aligned();
        let copy = if in_place { None } else { Some(copy_unwritten(array, what)?) };
        Ok(Elements { array: array.clone(), copy, cols })
    }

    /// The array's shape.
    pub(crate) fn array_shape(&self) -> &[usize] {
        self.array.shape()
    }

    /// The columns of a 2-D array; `None` for a vector.
    pub(crate) fn cols(&self) -> Option<usize> {
        self.cols
    }

    /// The elements in row-major order, lent by `loans` unless copied; `what` names them in
    /// errors.
    pub(crate) fn values<'a>(
        &'a self,
        loans: &'a Loans,
        what: &dyn Fn() -> String,
    ) -> PyResult<&'a [T]> {
        if let Some(copy) = &self.copy {
            return Ok(copy);
        }
        loans.read(&self.array, what)?.ok_or_else(|| {
            PyValueError::new_err(format!("{} is no longer C-contiguous and aligned", what()))
        })
    }
}

/// One Python value held as a part for as long as the call needs it.
pub(crate) enum Held<'py> {
    Bytes(Elements<'py, u8>),
    F32(Elements<'py, f32>),
    F64(Elements<'py, f64>),
    I64(Elements<'py, i64>),
    Float([f64; 1]),
    Int([i64; 1]),
    PyBytes(Bound<'py, PyBytes>),
    Owned(Vec<u8>),
}

impl Held<'_> {
    /// The part, borrowing from what is held and from `loans`; `what` names it in errors.
    pub(crate) fn part<'a>(
        &'a self,
        loans: &'a Loans,
        what: &dyn Fn() -> String,
    ) -> PyResult<Part<'a>> {
        fn shaped<'a>(part: Part<'a>, cols: Option<usize>) -> PyResult<Part<'a>> {
            match cols {
                None => Ok(part),
                Some(cols) => part.matrix(cols).map_err(|e| PyValueError::new_err(e.to_string())),
            }
        }
        match self {
            Held::Bytes(e) => shaped(Part::bytes(e.values(loans, what)?), e.cols),
            Held::F32(e) => shaped(Part::f32(e.values(loans, what)?), e.cols),
            Held::F64(e) => shaped(Part::f64(e.values(loans, what)?), e.cols),
            Held::I64(e) => shaped(Part::i64(e.values(loans, what)?), e.cols),
            Held::Float(v) => Ok(Part::f64(v)),
            Held::Int(v) => Ok(Part::i64(v)),
            Held::PyBytes(b) => Ok(Part::bytes(b.as_bytes())),
            Held::Owned(v) => Ok(Part::bytes(v)),
        }
    }
}

/// The parts of one call or reply, without an allocation for up to four (a solver's `t`, `y`
/// and parameters).
pub(crate) type Few<T> = SmallVec<[T; 4]>;

/// Every value of `values` held as a part ([`hold`]) in `held`, which starts empty (filled in
/// place: a few parts are large to move); `what(i)` names value `i` in errors.
pub(crate) fn hold_all<'py>(
    values: &Bound<'py, PyTuple>,
    what: &dyn Fn(usize) -> String,
    held: &mut Few<Held<'py>>,
) -> PyResult<()> {
    for (i, value) in values.iter().enumerate() {
        held.push(hold(&value, &|| what(i))?);
    }
    Ok(())
}

/// The parts of `held`, borrowing from it and from `loans`, into `parts` (which starts
/// empty); `what(i)` names part `i` in errors.
pub(crate) fn parts_of<'a>(
    held: &'a [Held<'_>],
    loans: &'a Loans,
    what: &dyn Fn(usize) -> String,
    parts: &mut Few<Part<'a>>,
) -> PyResult<()> {
    for (i, one) in held.iter().enumerate() {
        parts.push(one.part(loans, &|| what(i))?);
    }
    Ok(())
}

/// `value` as a part (see the module's table); `what` names it in errors ("part 2").
pub(crate) fn hold<'py>(
    value: &Bound<'py, PyAny>,
    what: &dyn Fn() -> String,
) -> PyResult<Held<'py>> {
    let py = value.py();
    // A float first: a solver's `t`, the cheapest check.
    if let Ok(float) = value.cast::<PyFloat>() {
        return Ok(Held::Float([float.value()]));
    }
    if let Ok(untyped) = value.cast::<PyUntypedArray>() {
        return hold_array(untyped, what);
    }
    if value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{} is a bool: pass 1.0 or 0.0 (f64), 1 or 0 (i64), or an array",
            what()
        )));
    }
    if value.is_instance_of::<PyInt>() {
        let int = value.extract::<i64>().map_err(|_| {
            PyValueError::new_err(format!("{} is an int beyond the range of i64: {value}", what()))
        })?;
        return Ok(Held::Int([int]));
    }
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(Held::PyBytes(bytes.clone()));
    }
    if let Ok(bytes) = value.cast::<PyByteArray>() {
        // Copied: a bytearray may change size while the GIL is released.
        return Ok(Held::Owned(bytes.to_vec()));
    }
    if value.is_instance(numpy_generic(py)?)? {
        // A numpy scalar: one element of its own dtype.
        let one = py.import("numpy")?.call_method1("atleast_1d", (value,))?;
        return hold(&one, what);
    }
    Err(PyTypeError::new_err(format!(
        "{} must be a numpy array (float64, float32, int64 or uint8), a float, an int or bytes, \
         got {}",
        what(),
        value.get_type().name()?
    )))
}

fn hold_array<'py>(
    untyped: &Bound<'py, PyUntypedArray>,
    what: &dyn Fn() -> String,
) -> PyResult<Held<'py>> {
    if let Ok(a) = untyped.cast::<PyArrayDyn<f64>>() {
        return Ok(Held::F64(Elements::new(a, what)?));
    }
    if let Ok(a) = untyped.cast::<PyArrayDyn<f32>>() {
        return Ok(Held::F32(Elements::new(a, what)?));
    }
    if let Ok(a) = untyped.cast::<PyArrayDyn<i64>>() {
        return Ok(Held::I64(Elements::new(a, what)?));
    }
    if let Ok(a) = untyped.cast::<PyArrayDyn<u8>>() {
        return Ok(Held::Bytes(Elements::new(a, what)?));
    }
    Err(PyTypeError::new_err(format!(
        "{} must have dtype float64, float32, int64 or uint8 (bytes), in native byte order; \
         got {}",
        what(),
        untyped.dtype()
    )))
}

/// A caller's `out` array, to be lent writeable for the call, as the part it must receive.
pub(crate) enum HeldMut<'py> {
    Bytes(Bound<'py, PyArrayDyn<u8>>, Option<usize>),
    F32(Bound<'py, PyArrayDyn<f32>>, Option<usize>),
    F64(Bound<'py, PyArrayDyn<f64>>, Option<usize>),
    I64(Bound<'py, PyArrayDyn<i64>>, Option<usize>),
}

impl HeldMut<'_> {
    /// The buffer lent by `loans` as a [`PartMut`] of its shape; `what` names it in errors.
    pub(crate) fn part_mut<'a>(
        &'a self,
        loans: &'a Loans,
        what: &dyn Fn() -> String,
    ) -> PyResult<PartMut<'a>> {
        fn shaped(part: PartMut<'_>, cols: Option<usize>) -> PyResult<PartMut<'_>> {
            match cols {
                None => Ok(part),
                Some(cols) => part.matrix(cols).map_err(|e| PyValueError::new_err(e.to_string())),
            }
        }
        match self {
            HeldMut::Bytes(a, cols) => shaped(PartMut::bytes(loans.write(a, what)?), *cols),
            HeldMut::F32(a, cols) => shaped(PartMut::f32(loans.write(a, what)?), *cols),
            HeldMut::F64(a, cols) => shaped(PartMut::f64(loans.write(a, what)?), *cols),
            HeldMut::I64(a, cols) => shaped(PartMut::i64(loans.write(a, what)?), *cols),
        }
    }
}

/// `value`, an `out` array for one reply part: 1-D (a vector) or 2-D (a matrix of its
/// columns), C-contiguous and writeable, of a part's dtype.
pub(crate) fn hold_out<'py>(
    value: &Bound<'py, PyAny>,
    what: &dyn Fn() -> String,
) -> PyResult<HeldMut<'py>> {
    let untyped = value.cast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{} must be a numpy array, got {}",
            what(),
            value.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    let cols = match untyped.shape() {
        [_] => None,
        [_, 0] => {
            return Err(PyValueError::new_err(format!(
                "{} is a matrix of no columns, shape {}: a matrix part has at least one column",
                what(),
                shape_text(untyped.shape())
            )));
        }
        [_, cols] => Some(*cols),
        shape => {
            return Err(PyValueError::new_err(format!(
                "{} must be 1-D or 2-D, got a {}-D array of shape {}",
                what(),
                shape.len(),
                shape_text(shape)
            )));
        }
    };
    if !untyped.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "{} must be C-contiguous (it is written in place)",
            what()
        )));
    }
    if let Ok(a) = untyped.cast::<PyArrayDyn<f64>>() {
        return Ok(HeldMut::F64(a.clone(), cols));
    }
    if let Ok(a) = untyped.cast::<PyArrayDyn<f32>>() {
        return Ok(HeldMut::F32(a.clone(), cols));
    }
    if let Ok(a) = untyped.cast::<PyArrayDyn<i64>>() {
        return Ok(HeldMut::I64(a.clone(), cols));
    }
    if let Ok(a) = untyped.cast::<PyArrayDyn<u8>>() {
        return Ok(HeldMut::Bytes(a.clone(), cols));
    }
    Err(PyTypeError::new_err(format!(
        "{} must have dtype float64, float32, int64 or uint8 (bytes), in native byte order; \
         got {}",
        what(),
        untyped.dtype()
    )))
}

/// A received part as a new numpy array of its dtype (uint8 for bytes) and shape: (count,)
/// for a vector, (rows, cols) for a matrix. Copied, so the array outlives the message.
pub(crate) fn to_numpy<'py>(py: Python<'py>, part: &PartRef<'_>) -> PyResult<Bound<'py, PyAny>> {
    let shape = part.shape();
    let count =
        usize::try_from(shape.count).map_err(|_| PyValueError::new_err("part too large"))?;
    let dims: Vec<usize> = match shape.rows() {
        Some(rows) => vec![rows as usize, shape.cols as usize],
        None => vec![count],
    };
    fn filled<'py, T: Plain>(
        py: Python<'py>,
        dims: &[usize],
        part: &PartRef<'_>,
        make: fn(&mut [T]) -> PartMut<'_>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut array = Fresh::<T, _>::new(py, dims)?;
        let slice = array.elements()?;
        let cols = part.shape().cols as usize;
        let target = if cols > 0 { make(slice).matrix(cols) } else { Ok(make(slice)) };
        target
            .and_then(|mut t| t.fill_from(part))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(array.into_array().into_any())
    }
    match shape.dtype {
        PartDtype::Bytes => filled::<u8>(py, &dims, part, |s| PartMut::bytes(s)),
        PartDtype::F32 => filled::<f32>(py, &dims, part, |s| PartMut::f32(s)),
        PartDtype::F64 => filled::<f64>(py, &dims, part, |s| PartMut::f64(s)),
        PartDtype::I64 => filled::<i64>(py, &dims, part, |s| PartMut::i64(s)),
    }
}

/// `(2, 3)`, `(4,)`: a shape as numpy prints it.
pub(crate) fn shape_text(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!("({})", shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    }
}
