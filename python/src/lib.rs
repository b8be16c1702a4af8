//! `peerpipe._peerpipe`: the Python binding of the `peerpipe` crate.
//!
//! A thin layer over the crate, never a second implementation: it converts arguments, calls the crate, and converts results
//! and errors — nothing else. Arrays come in as numpy arrays and are lent to the crate as
//! slices; replies land in the caller's `out` array without allocation. Every wait runs
//! inside `Python::detach` so other threads run; a call's wait for its reply is cut into
//! slices of at most [`boundary::SLICE`] (`Peer::recv_reply_for`), with
//! `Python::check_signals` between them,
//! so Ctrl-C is seen within ~100 ms; a spawn's handshake runs on a thread of its own, waited
//! for the same way (`spawn::spawn_interruptibly`). Rust errors become the exceptions created
//! once in `errors`, chosen by the error's kind, with the crate's message unchanged. Nothing
//! here panics across the boundary (pyo3 turns a panic into `PanicException` all the same).
//!
//! - `boundary`: what every class shares — how long a wait runs with the GIL released,
//!   seconds as a `Duration`, what `__exit__` returns;
//! - `errors`: the exceptions and the one table from `peerpipe::ErrorKind` to them;
//! - `loans`: numpy arrays' memory lent to a call as slices, and the checks that make that
//!   sound (the binding's one `unsafe`);
//! - `array`: numpy arrays at the boundary, and `Element` (f64, f32), over which every path
//!   that moves arrays is written once;
//! - `spawn`: constructor options, `cmd` as a command (the crate's spawn rule), and a
//!   handshake that Ctrl-C interrupts;
//! - `parts`: Python values as PARTS parts and received parts as numpy arrays, one table for
//!   both sides;
//! - `peer`: `Peer` (`call`, `call_parts`) and `CallTiming`; `rhs`: `RemoteRhs`, SciPy's
//!   `fun(t, y, *args)` and `jac(t, y, *args)` over the crate's `RemoteRhs`;
//! - `serve`: `serve`, Python callables as the handler and the functions by name of the
//!   crate's stdio server; `ode`: `serve_ode`, SciPy's `fun` and `jac` served as `rhs`, `jac`;
//! - `warm`: what a server's first request would pay beyond its second, paid before its HELLO.

#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

use pyo3::prelude::*;

mod array;
mod boundary;
mod errors;
mod fanout;
#[allow(unsafe_code)]
mod loans;
mod ode;
mod parts;
mod peer;
mod rhs;
mod serve;
mod session;
mod spawn;
mod warm;

use errors::{
    Error, Interrupted, PeerExited, ProtocolError, RemoteError, ShapeError, TooLarge, Unsupported,
    timeout_type,
};

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
