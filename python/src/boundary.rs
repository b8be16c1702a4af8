//! What every class of the binding shares at the boundary: how long a wait runs with the GIL
//! released before it looks for signals, seconds as a `Duration`, and what `__exit__` returns.

use std::time::Duration;

use pyo3::prelude::*;

/// Longest a call waits with the GIL released before it checks for signals (Ctrl-C).
pub(crate) const SLICE: Duration = Duration::from_millis(100);

/// Longest an interrupted spawn waits for its server to be terminated and reaped before
/// `KeyboardInterrupt` goes on regardless: the give-up check (`INTERRUPT_CHECK`, 50 ms) plus
/// a server's grace to exit after SIGTERM (`TERM_GRACE`, 200 ms), with room to spare.
pub(crate) const REAP_WAIT: Duration = Duration::from_secs(2);

/// `seconds` as a `Duration` (`None`: none), or a `ValueError` naming `what` when it is
/// negative, not a number or too large.
pub(crate) fn seconds(seconds: Option<f64>, what: &str) -> PyResult<Option<Duration>> {
    seconds
        .map(|secs| {
            Duration::try_from_secs_f64(secs).map_err(|_| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "{what} must be a non-negative number of seconds or None, got {secs}"
                ))
            })
        })
        .transpose()
}

/// What `__exit__` returns after closing: `False` (the exception, if any, goes on), or the
/// failure to close when no exception is on its way out (one that is wins over it).
pub(crate) fn exit_after<T>(
    closed: PyResult<T>,
    exc_type: Option<&Bound<'_, PyAny>>,
) -> PyResult<bool> {
    if exc_type.is_none_or(|t| t.is_none()) {
        closed?;
    }
    Ok(false)
}
