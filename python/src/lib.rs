//! `peerpipe._peerpipe`: the Python binding of the `peerpipe` crate.
//!
//! A thin layer over the crate, never a second implementation: it converts arguments, calls the crate, and converts results
//! and errors — nothing else. Arrays come in as numpy arrays and are lent to the crate as
//! slices; replies land in the caller's `out` array without allocation. Every wait runs
//! inside `Python::detach` so other threads run; a call's wait for its reply is cut into
//! slices of at most [`SLICE`] (`Peer::recv_for`, `Peer::recv_parts_for`), with
//! `Python::check_signals` between them,
//! so Ctrl-C is seen within ~100 ms; a spawn's handshake runs on a thread of its own, waited
//! for the same way (`spawn::spawn_interruptibly`). Rust errors become the exceptions created
//! once in `errors`, chosen by the error's kind, with the crate's message unchanged. Nothing
//! here panics across the boundary (pyo3 turns a panic into `PanicException` all the same).
//!
//! - `errors`: the exceptions and the one table from `peerpipe::ErrorKind` to them;
//! - `array`: numpy arrays at the boundary, and `Element` (f64, f32), over which every path
//!   that moves arrays is written once;
//! - `spawn`: constructor options, `cmd` as a command (the crate's spawn rule), and a
//!   handshake that Ctrl-C interrupts;
//! - `parts`: Python values as PARTS parts and received parts as numpy arrays, one table for
//!   both sides;
//! - `peer`: `Peer` (`call`, `call_parts`) and `CallTiming`; `rhs`: `RemoteRhs`, SciPy's
//!   `fun(t, y, *args)` and `jac(t, y, *args)` over the crate's `RemoteRhs`;
//! - `serve`: `serve`, Python callables as the handler and the functions by name of the
//!   crate's stdio server; `ode`: `serve_ode`, SciPy's `fun` and `jac` served as `rhs`, `jac`.

use std::time::Duration;

use pyo3::prelude::*;

mod array;
mod errors;
mod fanout;
mod ode;
mod parts;
mod peer;
mod rhs;
mod serve;
mod session;
mod spawn;

use errors::{
    Error, Interrupted, PeerExited, ProtocolError, RemoteError, ShapeError, TooLarge, Unsupported,
    timeout_type,
};

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

/// The native part of the `peerpipe` package.
#[pymodule]
fn _peerpipe(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("Error", py.get_type::<Error>())?;
    m.add("ProtocolError", py.get_type::<ProtocolError>())?;
    m.add("TooLarge", py.get_type::<TooLarge>())?;
    m.add("PeerExited", py.get_type::<PeerExited>())?;
    m.add("RemoteError", py.get_type::<RemoteError>())?;
    m.add("Interrupted", py.get_type::<Interrupted>())?;
    m.add("ShapeError", py.get_type::<ShapeError>())?;
    m.add("Unsupported", py.get_type::<Unsupported>())?;
    m.add("Timeout", timeout_type(py)?)?;
    m.add_function(wrap_pyfunction!(errors::_error_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(errors::_exception_for_kind, m)?)?;
    m.add_class::<peer::PyPeer>()?;
    m.add_class::<rhs::PyRemoteRhs>()?;
    m.add_class::<session::PySession>()?;
    m.add_class::<fanout::PyFanout>()?;
    m.add_class::<peer::PyCallTiming>()?;
    m.add_function(wrap_pyfunction!(serve::serve, m)?)?;
    m.add_function(wrap_pyfunction!(ode::serve_ode, m)?)?;
    Ok(())
}
