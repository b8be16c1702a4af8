//! What every exported function does first: the instance found, panics caught, pointers
//! turned into slices.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use peerpipe_fmu::fmi2::{self, Status};

use crate::instance::Instance;

/// What an instance pointer points at.
pub type Cell = Mutex<Instance>;

/// Runs `body` on the instance `c`: `fmi2Error` for a null instance, `fmi2Fatal` when the
/// body panics.
pub fn with(c: *mut std::ffi::c_void, body: impl FnOnce(&mut Instance) -> Status) -> Status {
    if c.is_null() {
        return fmi2::ERROR;
    }
    // SAFETY: a non-null component is one `fmi2Instantiate` returned (a leaked `Box<Cell>`),
    // not yet freed: FMI forbids calls on a freed instance.
    let cell = unsafe { &*(c as *const Cell) };
    catch_unwind(AssertUnwindSafe(|| {
        let mut instance = cell.lock().unwrap_or_else(|e| e.into_inner());
        body(&mut instance)
    }))
    .unwrap_or(fmi2::FATAL)
}

/// A slice of `n` elements at `p` (empty when `n` is 0, whatever `p`).
///
/// # Safety
/// When `n > 0`, `p` points at `n` readable elements that live through the call.
pub unsafe fn slice<'a, T>(p: *const T, n: usize) -> Option<&'a [T]> {
    match (n, p.is_null()) {
        (0, _) => Some(&[]),
        (_, true) => None,
        // SAFETY: the caller promises `n` elements at `p`.
        _ => Some(unsafe { std::slice::from_raw_parts(p, n) }),
    }
}

/// A mutable slice of `n` elements at `p`.
///
/// # Safety
/// As [`slice`], writable.
pub unsafe fn slice_mut<'a, T>(p: *mut T, n: usize) -> Option<&'a mut [T]> {
    match (n, p.is_null()) {
        (0, _) => Some(&mut []),
        (_, true) => None,
        // SAFETY: the caller promises `n` writable elements at `p`.
        _ => Some(unsafe { std::slice::from_raw_parts_mut(p, n) }),
    }
}
