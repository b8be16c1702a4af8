//! numpy arrays' memory lent to the crate as slices for one call, and the checks that make
//! that sound; and new arrays left unfilled for a call to write whole. The binding's one
//! `unsafe`.
//!
//! A call reads its inputs and writes its `out` arrays in place, with the GIL released. What
//! must hold while it does: every slice stays within a live array (the slices borrow the
//! arrays' `Bound` references, which keep them alive), is aligned and C-contiguous, and no
//! slice that is written overlaps another slice lent at the same time — by this call (an `out`
//! that is also an input) or by another call in flight on another thread. [`Loans`] checks
//! the first two per array and keeps the third in one process-wide list of the ranges lent,
//! each call's ranges removed when its `Loans` is dropped.
//!
//! rust-numpy's own borrow registry (`try_readonly`, `try_readwrite`) checks the same, but
//! keeps a hash map per array that is allocated and freed at every borrow: about 2,400
//! instructions of a three-array call (docs/experiments/parts.md). This list costs a lock per
//! array. Neither can stop Python code on another thread from writing an array while a call
//! has it (numpy's own functions behave the same), nor `ndarray.resize(refcheck=False)`, which
//! numpy documents as unsafe.

use std::borrow::Cow;
use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use numpy::ndarray::{Dimension, IntoDimension};
use numpy::npyffi::{
    _PyArray_GET_ITEM_DATA, NPY_ARRAY_WRITEABLE, NpyTypes, PY_ARRAY_API, get_type_object, npy_intp,
};
use numpy::{Element, PyArray, PyArrayDescrMethods, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi::PyTypeObject;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use smallvec::SmallVec;

/// One range lent: its first byte, one past its last, whether it is written, and the
/// [`Loans`] that lent it.
struct Lent {
    start: usize,
    end: usize,
    writes: bool,
    call: u64,
}

impl Lent {
    /// Whether this range shares a byte with `start..end`.
    fn overlaps(&self, start: usize, end: usize) -> bool {
        self.start < end && start < self.end
    }
}

/// Every range lent by a [`Loans`] not yet dropped, in the whole process.
static IN_FLIGHT: Mutex<Vec<Lent>> = Mutex::new(Vec::new());
/// The id of the next [`Loans`].
static NEXT_CALL: AtomicU64 = AtomicU64::new(0);

/// The arrays lent to one call. Slices borrow it, so its ranges are given back (when it is
/// dropped) only after the last slice is gone.
pub(crate) struct Loans {
    call: u64,
    lent: Cell<bool>,
}

/// Why an array cannot be lent.
enum Refusal {
    Masked,
    Layout,
    ReadOnly,
    InUse,
}

impl Loans {
    /// Nothing lent yet.
    pub(crate) fn new() -> Loans {
        Loans { call: NEXT_CALL.fetch_add(1, Ordering::Relaxed), lent: Cell::new(false) }
    }

    /// `array`'s elements in row-major order, to read; `None` when it is not C-contiguous and
    /// aligned (the caller copies it). A `ValueError` naming `what` when an `out` lent before,
    /// by this call or another in flight, shares its memory.
    pub(crate) fn read<'a, T: Element, D: Dimension>(
        &'a self,
        array: &'a Bound<'_, PyArray<T, D>>,
        what: &dyn Fn() -> String,
    ) -> PyResult<Option<&'a [T]>> {
        match self.lend(array, false) {
            Ok(()) => {}
            Err(Refusal::Layout) => return Ok(None),
            Err(refusal) => return Err(refused(refusal, what)),
        }
        // SAFETY: `lend` checked that the array is C-contiguous and aligned, and recorded its
        // range, refusing it if a range lent to be written overlaps it; every range lent to
        // be written later is refused if it overlaps this one, until `self`, which the slice
        // borrows, is dropped. The slice also borrows `array`, which keeps the memory alive.
        Ok(unsafe { array.as_slice() }.ok())
    }

    /// `array`'s elements in row-major order: lent in place as [`Loans::read`] lends them, or,
    /// when it is not C-contiguous and aligned, copied once ([`copy_unwritten`]).
    pub(crate) fn read_or_copy<'a, T: Plain, D: Dimension>(
        &'a self,
        array: &'a Bound<'_, PyArray<T, D>>,
        what: &dyn Fn() -> String,
    ) -> PyResult<Cow<'a, [T]>> {
        Ok(match self.read(array, what)? {
            Some(values) => Cow::Borrowed(values),
            None => Cow::Owned(copy_unwritten(array, what)?),
        })
    }

    /// `array`'s elements in row-major order, to write in place. A `ValueError` naming `what`
    /// when it is not C-contiguous and aligned, is read-only, or shares its memory with an
    /// array lent before, by this call or another in flight.
    // A `&mut` from `&self`: unique all the same, as the ranges lent are checked (`lend`).
    #[allow(clippy::mut_from_ref)]
    pub(crate) fn write<'a, T: Element, D: Dimension>(
        &'a self,
        array: &'a Bound<'_, PyArray<T, D>>,
        what: &dyn Fn() -> String,
    ) -> PyResult<&'a mut [T]> {
        self.lend(array, true).map_err(|refusal| refused(refusal, what))?;
        // SAFETY: as in `read`, and no range lent before, to be read or written, overlaps
        // this one, nor may one lent later until `self` is dropped: this slice is the only
        // one of this memory lent.
        let slice = unsafe { array.as_slice_mut() };
        slice.map_err(|_| refused(Refusal::Layout, what))
    }

    /// Checks `array` and records its range.
    fn lend<T: Element, D: Dimension>(
        &self,
        array: &Bound<'_, PyArray<T, D>>,
        writes: bool,
    ) -> Result<(), Refusal> {
        if has_masked_values(array.as_any()) {
            return Err(Refusal::Masked);
        }
        if !array.is_c_contiguous() || !array.is_aligned() {
            return Err(Refusal::Layout);
        }
        // SAFETY: the pointer is the live array's own object (`array` holds a reference),
        // and its fields are read with the GIL held, as numpy's accessor requires.
        let flags = unsafe { (*_PyArray_GET_ITEM_DATA(array.as_array_ptr())).flags };
        if writes && flags & NPY_ARRAY_WRITEABLE == 0 {
            return Err(Refusal::ReadOnly);
        }
        let start = array.data() as usize;
        let end = start + array.len() * std::mem::size_of::<T>();
        if start == end {
            return Ok(());
        }
        let mut in_flight = IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner);
        if in_flight.iter().any(|other| (writes || other.writes) && other.overlaps(start, end)) {
            return Err(Refusal::InUse);
        }
        in_flight.push(Lent { start, end, writes, call: self.call });
        self.lent.set(true);
        Ok(())
    }
}

/// The element types of a [`Fresh`] array: plain numbers, of which every bit pattern is a
/// value.
pub(crate) trait Plain: Element + Copy {}
impl Plain for u8 {}
impl Plain for f32 {}
impl Plain for f64 {}
impl Plain for i64 {}

/// A new C-ordered array that no Python code has seen yet, its elements not initialised (as
/// `numpy.empty` makes them), for a call to write whole before [`Fresh::into_array`] hands it
/// to Python; dropped unseen when the call fails. Zeroing memory about to be overwritten cost
/// a pass over it per call (70 ns of a 500-f64 derivative's array, more the larger it is), and
/// memory no one else can reach needs no entry in the list of ranges lent.
pub(crate) struct Fresh<'py, T: Plain, D: Dimension> {
    array: Bound<'py, PyArray<T, D>>,
}

impl<'py, T: Plain, D: Dimension> Fresh<'py, T, D> {
    /// A new array of `dims`; numpy's `ValueError` or `MemoryError` when it cannot make one
    /// so large.
    pub(crate) fn new(py: Python<'py>, dims: impl IntoDimension<Dim = D>) -> PyResult<Self> {
        let dims = dims.into_dimension();
        let shape: SmallVec<[npy_intp; 4]> = (dims.slice().iter())
            .map(|&d| npy_intp::try_from(d))
            .collect::<Result<_, _>>()
            .map_err(|_| {
                PyValueError::new_err(format!("an array of shape {dims:?} is too large"))
            })?;
        let ndim = c_int::try_from(shape.len())
            .map_err(|_| PyValueError::new_err("an array of too many dimensions"))?;
        // SAFETY: numpy's own array type and `T`'s dtype (a new reference, which the call
        // takes over); `shape` holds `ndim` dimensions and outlives the call; no strides and
        // no data ask numpy for a new C-ordered array of its own, whose elements it leaves as
        // its allocator returned them. `T` is a plain number (`Plain`): no element is a
        // Python object to count, and every bit pattern is a value, so an element not yet
        // written holds an unspecified number, not an invalid one.
        let made = unsafe {
            PY_ARRAY_API.PyArray_NewFromDescr(
                py,
                get_type_object(py, NpyTypes::PyArray_Type),
                T::get_dtype(py).into_dtype_ptr(),
                ndim,
                shape.as_ptr().cast_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
            )
        };
        // SAFETY: `made` is a new reference, or null with numpy's exception set.
        let array = unsafe { Bound::from_owned_ptr_or_err(py, made) }?;
        // SAFETY: numpy made it an array of `T`'s dtype with `D`'s number of dimensions.
        Ok(Fresh { array: unsafe { array.cast_into_unchecked() } })
    }

    /// Its elements in row-major order, to write whole.
    pub(crate) fn elements(&mut self) -> PyResult<&mut [T]> {
        // SAFETY: numpy made the array C-contiguous and aligned for `T`, and no reference to
        // it has left this `Fresh` (the field is private; `into_array` consumes `self`), so
        // no Python code and no other slice can reach its memory while this slice, which
        // borrows `self` mutably, lives.
        unsafe { self.array.as_slice_mut() }
            .map_err(|_| PyValueError::new_err("a new array is not contiguous"))
    }

    /// The array, for Python (or for [`Loans::write`], which then checks it like any other).
    pub(crate) fn into_array(self) -> Bound<'py, PyArray<T, D>> {
        self.array
    }
}

/// The elements of `array`, which [`Loans::read`] does not lend (not C-contiguous, or
/// unaligned), copied in row-major order; a `ValueError` naming `what` while a call in flight
/// writes any of its memory. The copy is made with the GIL held, so no call can start writing
/// it meanwhile. It follows the strides in bytes, element by element, so any layout numpy
/// allows is read right: reversed, Fortran-ordered, unaligned, or strides that are not a
/// multiple of the element's size (a field of a structured array).
pub(crate) fn copy_unwritten<T: Plain, D: Dimension>(
    array: &Bound<'_, PyArray<T, D>>,
    what: &dyn Fn() -> String,
) -> PyResult<Vec<T>> {
    if has_masked_values(array.as_any()) {
        return Err(refused(Refusal::Masked, what));
    }
    let (shape, strides) = (array.shape(), array.strides());
    if array.len() > 0 {
        // The lowest and highest element's byte offsets from the data pointer, strides
        // either way.
        let (mut low, mut high) = (0isize, 0isize);
        for (&len, &stride) in shape.iter().zip(strides) {
            let far = (len as isize - 1) * stride;
            if far < 0 { low += far } else { high += far }
        }
        let data = array.data() as isize;
        let start = (data + low) as usize;
        let end = (data + high) as usize + std::mem::size_of::<T>();
        let in_flight = IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner);
        if in_flight.iter().any(|lent| lent.writes && lent.overlaps(start, end)) {
            return Err(refused(Refusal::InUse, what));
        }
    }
    let data = array.data().cast::<u8>().cast_const();
    let mut values = Vec::with_capacity(array.len());
    // Row by row (a row: the last axis; a 0-D array is one row of one), the outer axes'
    // index and the row's byte offset stepped in row-major order.
    let (row_len, row_stride) = match (shape.last(), strides.last()) {
        (Some(&len), Some(&stride)) => (len, stride),
        _ => (1, 0),
    };
    let outer = shape.len().saturating_sub(1);
    let mut index: SmallVec<[usize; 4]> = SmallVec::from_elem(0, outer);
    let mut offset = 0isize;
    for _ in 0..array.len().checked_div(row_len).unwrap_or(0) {
        values.extend((0..row_len as isize).map(|j| {
            // SAFETY: `offset + j * row_stride` is the byte offset of an element within the
            // array's shape, so within its memory, which `array` keeps alive; the read is
            // unaligned, as the element may be. No call writes that memory (checked above,
            // and none can start while this thread holds the GIL).
            unsafe { data.offset(offset + j * row_stride).cast::<T>().read_unaligned() }
        }));
        for axis in (0..outer).rev() {
            index[axis] += 1;
            offset += strides[axis];
            if index[axis] < shape[axis] {
                break;
            }
            offset -= strides[axis] * shape[axis] as isize;
            index[axis] = 0;
        }
    }
    Ok(values)
}

impl Drop for Loans {
    fn drop(&mut self) {
        if self.lent.get() {
            let mut in_flight = IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner);
            in_flight.retain(|lent| lent.call != self.call);
        }
    }
}

/// Whether `array` is a `numpy.ma.MaskedArray` with an element masked, which a call could not
/// carry (one with none masked, as netCDF4 returns, is sent as its values); an exact
/// `ndarray` (nearly every array) is told by its type alone, in a few instructions.
#[inline]
pub(crate) fn has_masked_values(array: &Bound<'_, PyAny>) -> bool {
    static NDARRAY: AtomicPtr<PyTypeObject> = AtomicPtr::new(std::ptr::null_mut());
    let mut ndarray = NDARRAY.load(Ordering::Relaxed);
    if ndarray.is_null() {
        // SAFETY: reads numpy's type object for `ndarray` from its C API table, with the GIL
        // held; the type object lives as long as numpy, which is never unloaded.
        ndarray = unsafe { get_type_object(array.py(), NpyTypes::PyArray_Type) };
        NDARRAY.store(ndarray, Ordering::Relaxed);
    }
    array.get_type_ptr() != ndarray && is_masked_subclass(array)
}

/// [`has_masked_values`] of an array that is not an exact `ndarray`: `numpy.ma.is_masked`.
#[cold]
fn is_masked_subclass(array: &Bound<'_, PyAny>) -> bool {
    static IS_MASKED: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let is_masked = IS_MASKED.import(array.py(), "numpy.ma", "is_masked");
    is_masked
        .is_ok_and(|f| f.call1((array,)).is_ok_and(|masked| masked.is_truthy().unwrap_or(true)))
}

fn refused(refusal: Refusal, what: &dyn Fn() -> String) -> PyErr {
    let what = what();
    match refusal {
        Refusal::Masked => PyTypeError::new_err(format!(
            "{what} is a masked array with masked values, whose mask cannot be sent: pass \
             numpy.ma.filled(a, fill_value) to send fill_value in their place, or a.data to \
             send the values under the mask"
        )),
        Refusal::Layout => PyValueError::new_err(format!(
            "{what} must be contiguous, in C order and aligned (it is written in place)"
        )),
        Refusal::ReadOnly => {
            PyValueError::new_err(format!("{what} cannot be used: it is read-only"))
        }
        Refusal::InUse => PyValueError::new_err(format!(
            "{what} cannot be used: its memory is in use by this call or another in flight \
             (is out also an input?)"
        )),
    }
}
