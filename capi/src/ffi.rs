//! The boundary: the one function every export runs its body through, and checked
//! conversions of C pointers, lengths and strings into Rust values.
//!
//! [`guard`] decides, in one place, what a panic and a failure become for C: a panic is
//! caught (it never unwinds into C) and becomes `PP_EPANIC`; a failure becomes its code, with
//! its message stored for `pp_last_error`; success clears that message. [`guard_or`] does the
//! same for an export that returns a pointer or a count, which is NULL or 0 on failure. A
//! NULL pointer or an impossible length is refused here with `PP_EINVAL` before any Rust
//! reference is made from it.

use std::any::Any;
use std::ffi::{CStr, OsStr, c_char, c_int};
use std::fmt::Display;
use std::os::unix::ffi::OsStrExt;
use std::panic::{self, AssertUnwindSafe};

use crate::error::{self, Failure, PP_EPANIC, PP_OK, invalid};

/// Runs `body`, catching any panic, and turns its outcome into a return code.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Failure>) -> c_int {
    match catch(body) {
        Ok(()) => {
            error::clear();
            PP_OK
        }
        Err(failure) => error::record(failure),
    }
}

/// [`guard`] for an export that returns a value (a pointer, a count) instead of a code:
/// `body`'s value on success, else `on_failure` (NULL, 0), with the failure's message
/// recorded for `pp_last_error` as [`guard`] records it.
pub(crate) fn guard_or<T>(on_failure: T, body: impl FnOnce() -> Result<T, Failure>) -> T {
    match catch(body) {
        Ok(value) => {
            error::clear();
            value
        }
        Err(failure) => {
            error::record(failure);
            on_failure
        }
    }
}

/// `body`'s outcome, a panic caught and turned into a `PP_EPANIC` failure.
fn catch<T>(body: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    panic::catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|payload| Err(panicked(payload.as_ref())))
}

fn panicked(payload: &(dyn Any + Send)) -> Failure {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-string payload");
    Failure {
        code: PP_EPANIC,
        message: format!("panic in peerpipe (a bug, please report it): {what}"),
    }
}

/// `n` elements at `ptr` as a slice; `ptr` may be NULL (or anything) when `n` is 0.
///
/// # Safety
/// When `n > 0` and `ptr` is not NULL, `ptr` must point to `n` initialised `T`s that stay
/// valid, and are not written through another pointer, for the returned lifetime.
pub(crate) unsafe fn slice<'a, T>(
    ptr: *const T,
    n: usize,
    what: impl Display,
) -> Result<&'a [T], Failure> {
    if n == 0 {
        return Ok(&[]);
    }
    check_buffer(ptr, n, what)?;
    // SAFETY: `ptr` is non-NULL, aligned and `n × size_of::<T>()` fits in isize (checked
    // above); the caller guarantees it points to `n` valid, unaliased-for-writes elements.
    Ok(unsafe { std::slice::from_raw_parts(ptr, n) })
}

/// `n` elements at `ptr` as a mutable slice; `ptr` may be NULL (or anything) when `n` is 0.
///
/// # Safety
/// When `n > 0` and `ptr` is not NULL, `ptr` must point to `n` writable `T`s (any bit
/// pattern is a valid `f32`/`f64`) that nothing else reads or writes for the returned
/// lifetime.
pub(crate) unsafe fn slice_mut<'a, T>(
    ptr: *mut T,
    n: usize,
    what: impl Display,
) -> Result<&'a mut [T], Failure> {
    if n == 0 {
        return Ok(&mut []);
    }
    check_buffer(ptr.cast_const(), n, what)?;
    // SAFETY: as in `slice`; the caller guarantees exclusive access to the `n` elements.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, n) })
}

pub(crate) fn check_buffer<T>(ptr: *const T, n: usize, what: impl Display) -> Result<(), Failure> {
    if ptr.is_null() {
        return Err(invalid(what, &format!("is NULL but its length is {n}")));
    }
    if !ptr.is_aligned() {
        return Err(invalid(
            what,
            &format!("{ptr:p} is not aligned to {} bytes", std::mem::align_of::<T>()),
        ));
    }
    match n.checked_mul(std::mem::size_of::<T>()) {
        Some(bytes) if bytes <= isize::MAX as usize => Ok(()),
        _ => Err(invalid(what, &format!("length {n} is too large to address"))),
    }
}

/// Refuses two buffers of `T` whose byte ranges overlap (an in-place call would alias the
/// request and the reply).
pub(crate) fn check_disjoint<T>(
    a: *const T,
    a_len: usize,
    b: *const T,
    b_len: usize,
) -> Result<(), Failure> {
    let size = std::mem::size_of::<T>();
    let (a0, b0) = (a as usize, b as usize);
    let (a1, b1) = (a0.saturating_add(a_len * size), b0.saturating_add(b_len * size));
    if a_len > 0 && b_len > 0 && a0 < b1 && b0 < a1 {
        return Err(invalid("out", "overlaps in; pass a separate buffer for the reply"));
    }
    Ok(())
}

/// `out`, checked non-NULL, after writing NULL to `*out`: what a constructor's `out` holds
/// when it fails.
///
/// # Safety
/// `out` is NULL or points to writable storage for one pointer.
pub(crate) unsafe fn clear_out<T>(out: *mut *mut T) -> Result<*mut *mut T, Failure> {
    if out.is_null() {
        return Err(invalid("out", "is NULL"));
    }
    // SAFETY: non-NULL, and per the caller writable storage for one pointer.
    unsafe { out.write(std::ptr::null_mut()) };
    Ok(out)
}

/// `n` NUL-terminated UTF-8 strings at `ptrs` (an array of C strings), each named
/// `what[i]` in an error.
///
/// # Safety
/// `ptrs` is NULL or points to `n` pointers, each NULL or a NUL-terminated string; all stay
/// valid for `'a`.
pub(crate) unsafe fn c_strs<'a>(
    ptrs: *const *const c_char,
    n: usize,
    what: &str,
) -> Result<Vec<&'a str>, Failure> {
    // SAFETY: the caller guarantees NULL or `n` readable pointers.
    let pointers = unsafe { slice(ptrs, n, what) }?;
    let mut strings = Vec::with_capacity(n);
    for (i, &pointer) in pointers.iter().enumerate() {
        // SAFETY: the caller guarantees each NULL or a NUL-terminated string.
        strings.push(unsafe { c_str(pointer, &format!("{what}[{i}]")) }?);
    }
    Ok(strings)
}

/// A NUL-terminated C string as bytes (any encoding).
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that stays valid for `'a`.
pub(crate) unsafe fn c_bytes<'a>(ptr: *const c_char, what: &str) -> Result<&'a [u8], Failure> {
    if ptr.is_null() {
        return Err(invalid(what, "is NULL"));
    }
    // SAFETY: non-NULL, and the caller guarantees a NUL-terminated string that lives for 'a.
    Ok(unsafe { CStr::from_ptr(ptr) }.to_bytes())
}

/// A NUL-terminated C string as an OS string (program names and arguments).
///
/// # Safety
/// As [`c_bytes`].
pub(crate) unsafe fn c_os_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a OsStr, Failure> {
    // SAFETY: the caller's guarantee is passed on unchanged.
    Ok(OsStr::from_bytes(unsafe { c_bytes(ptr, what) }?))
}

/// A NUL-terminated C string that must be UTF-8 (option values, names).
///
/// # Safety
/// As [`c_bytes`].
pub(crate) unsafe fn c_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Failure> {
    // SAFETY: the caller's guarantee is passed on unchanged.
    let bytes = unsafe { c_bytes(ptr, what) }?;
    std::str::from_utf8(bytes).map_err(|e| invalid(what, &format!("is not UTF-8: {e}")))
}

/// Makes a write to a pipe whose reader is gone fail with `EPIPE` (an error code) instead of
/// killing the process with SIGPIPE — but only while SIGPIPE has its default action: a
/// handler or disposition the host program chose is left alone. Rust programs ignore SIGPIPE
/// from the start; C programs do not.
pub(crate) fn ignore_sigpipe_if_default() {
    // SAFETY: an all-zero `sigaction` is a valid value of the plain C struct.
    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a NULL new action only queries; `current` is a valid, writable sigaction.
    let queried = unsafe { libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut current) };
    if queried == 0 && current.sa_sigaction == libc::SIG_DFL {
        // SAFETY: installing SIG_IGN runs no code in signal context; it replaces only the
        // default action, checked just above.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{PP_EINVAL, pp_last_error};

    fn last_error() -> String {
        // SAFETY: pp_last_error never returns NULL; the string is read before the next call.
        unsafe { CStr::from_ptr(pp_last_error()) }.to_string_lossy().into_owned()
    }

    #[test]
    fn a_panic_in_a_body_becomes_pp_epanic_with_its_message_and_does_not_unwind() {
        let code = guard(|| panic!("boom {}", 42));
        assert_eq!(code, PP_EPANIC);
        assert_eq!(last_error(), "panic in peerpipe (a bug, please report it): boom 42");
        assert_eq!(guard(|| Ok(())), PP_OK);
        assert_eq!(last_error(), "");
    }

    #[test]
    fn a_value_returning_export_gives_its_fallback_on_a_panic_or_a_failure() {
        let null = std::ptr::null::<f64>();
        assert_eq!(guard_or(null, || panic!("boom")), null);
        assert_eq!(last_error(), "panic in peerpipe (a bug, please report it): boom");
        assert_eq!(guard_or(7usize, || Err(invalid("reply", "is NULL"))), 7);
        assert_eq!(last_error(), "invalid argument reply: is NULL");
        assert_eq!(guard_or(0usize, || Ok(3)), 3);
        assert_eq!(last_error(), "");
    }

    #[test]
    fn null_misaligned_and_huge_buffers_are_refused_and_empty_ones_need_no_pointer() {
        let values = [1.0f64, 2.0];
        let cases: [(*const f64, usize, &str); 3] = [
            (std::ptr::null(), 1, "is NULL but its length is 1"),
            (values.as_ptr().cast::<u8>().wrapping_add(1).cast(), 1, "is not aligned to 8 bytes"),
            (values.as_ptr(), usize::MAX / 4, "is too large to address"),
        ];
        for (ptr, n, reason) in cases {
            // SAFETY: every case is refused before a slice is made.
            let failure = unsafe { slice(ptr, n, "in") }.unwrap_err();
            assert_eq!(failure.code, PP_EINVAL);
            assert!(failure.message.ends_with(reason), "{}", failure.message);
        }
        // SAFETY: n = 0 needs no pointer; `values` is valid for 2 elements.
        unsafe {
            assert_eq!(slice::<f64>(std::ptr::null(), 0, "in").unwrap(), &[] as &[f64]);
            assert_eq!(slice(values.as_ptr(), 2, "in").unwrap(), &values);
        }
    }

    #[test]
    fn overlapping_buffers_are_refused_and_adjacent_ones_accepted() {
        let buf = [0.0f64; 8];
        let p = buf.as_ptr();
        assert!(check_disjoint(p, 4, p.wrapping_add(3), 4).is_err());
        assert!(check_disjoint(p.wrapping_add(3), 4, p, 4).is_err());
        assert!(check_disjoint(p, 4, p.wrapping_add(4), 4).is_ok());
        assert!(check_disjoint(p, 0, p, 4).is_ok());
    }
}
