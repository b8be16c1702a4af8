//! The exceptions, created once, and the one table from a crate error's kind
//! ([`peerpipe::Error::kind`]) to the exception raised for it ([`class_of_kind`]):
//!
//! | `ErrorKind`       | exception                                             |
//! |-------------------|-------------------------------------------------------|
//! | `InvalidArgument` | `ValueError`                                          |
//! | `Timeout`         | `peerpipe.Timeout` (also a `TimeoutError`)            |
//! | `PeerExited`      | `peerpipe.PeerExited` (`status`, `exit_code`, `signal`) |
//! | `Closed`          | `peerpipe.PeerExited` (`status` etc. `None`)          |
//! | `Protocol`        | `peerpipe.ProtocolError`                              |
//! | `TooLarge`        | `peerpipe.TooLarge` (a `ProtocolError`)               |
//! | `Remote`          | `peerpipe.RemoteError` (`seq`, `message`)             |
//! | `NotFound`        | `FileNotFoundError` (errno `ENOENT`)                  |
//! | `Interrupted`     | `peerpipe.Interrupted`                                |
//! | `Shape`           | `peerpipe.ShapeError` (a `ProtocolError`; `seq`, `expected`, `found`) |
//! | `Unsupported`     | `peerpipe.Unsupported`                                |
//! | `Io`              | `OSError` with the errno (so its subclass by errno)   |
//!
//! Every exception raised for a crate error has its message unchanged and an attribute
//! `kind`, the kind's name (`"timeout"`, `"not_found"`, ...).

use peerpipe::ErrorKind;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

create_exception!(
    peerpipe,
    Error,
    PyException,
    "Base class of every error peerpipe raises; the message is the Rust crate's."
);
create_exception!(
    peerpipe,
    ProtocolError,
    Error,
    "The other side broke wire format v1 (bad magic, wrong seq/count/dtype, a truncated \
     frame, a bad shared region). The peer is closed and its server reaped."
);
create_exception!(
    peerpipe,
    TooLarge,
    ProtocolError,
    "A frame is larger than its receiver's max_frame_bytes. A request refused before it was \
     sent (larger than the server accepts) leaves the peer usable; a reply too large for this \
     side closes it."
);
create_exception!(
    peerpipe,
    PeerExited,
    Error,
    "The server process ended or closed its end. `status` says how when known ('exited with \
     status 3', 'was killed by signal 9 (SIGKILL)'), else None. The peer is closed."
);
create_exception!(
    peerpipe,
    RemoteError,
    Error,
    "The server answered the request with an ERROR frame (`seq`, `message`). The peer stays \
     usable."
);
create_exception!(
    peerpipe,
    ShapeError,
    ProtocolError,
    "A reply had another shape (number of parts, dtype, length, matrix columns) than the \
     caller expects; the message names both. The reply was read whole: the peer stays usable. \
     A ProtocolError, so `except ProtocolError` catches it too."
);
create_exception!(
    peerpipe,
    Unsupported,
    Error,
    "The server does not speak what the call needs (PARTS requests, a function `rhs`); \
     nothing was sent and the peer stays usable. The message names the server and what to do."
);
create_exception!(
    peerpipe,
    Interrupted,
    Error,
    "The wait was given up on request; the server was terminated and reaped."
);

/// `peerpipe.Timeout`, a subclass of both [`Error`] and the built-in `TimeoutError`: made
/// once with `type(...)`, as `create_exception!` takes a single base.
pub(crate) fn timeout_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static TIMEOUT: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    TIMEOUT
        .get_or_try_init(py, || {
            let bases = PyTuple::new(
                py,
                [py.get_type::<Error>(), py.get_type::<pyo3::exceptions::PyTimeoutError>()],
            )?;
            let dict = PyDict::new(py);
            dict.set_item("__module__", "peerpipe")?;
            dict.set_item(
                "__doc__",
                "A deadline passed: the handshake or a reply took longer than `timeout`. \
                 The peer is closed and its server terminated and reaped. Also a TimeoutError.",
            )?;
            let made = py.get_type::<PyType>().call1(("Timeout", bases, dict))?;
            Ok(made.cast_into::<PyType>()?.unbind())
        })
        .map(|t| t.bind(py))
}

/// The one table from error kind to exception class; `None` for a kind it does not know
/// (a kind added to the crate later: raised as the base [`Error`] until it gets a line here,
/// and the test of the table fails until then).
pub(crate) fn class_of_kind(
    py: Python<'_>,
    kind: ErrorKind,
) -> PyResult<Option<Bound<'_, PyType>>> {
    Ok(Some(match kind {
        ErrorKind::InvalidArgument => py.get_type::<PyValueError>(),
        ErrorKind::Timeout => timeout_type(py)?.clone(),
        ErrorKind::PeerExited | ErrorKind::Closed => py.get_type::<PeerExited>(),
        ErrorKind::Protocol => py.get_type::<ProtocolError>(),
        ErrorKind::TooLarge => py.get_type::<TooLarge>(),
        ErrorKind::Remote => py.get_type::<RemoteError>(),
        ErrorKind::NotFound => py.get_type::<PyFileNotFoundError>(),
        ErrorKind::Interrupted => py.get_type::<Interrupted>(),
        ErrorKind::Shape => py.get_type::<ShapeError>(),
        ErrorKind::Unsupported => py.get_type::<Unsupported>(),
        ErrorKind::Io => py.get_type::<PyOSError>(),
        _ => return Ok(None),
    }))
}

/// The exception for a crate error: the class of its kind, its message unchanged, `kind`,
/// and the attributes its class documents.
pub(crate) fn to_py(py: Python<'_>, error: peerpipe::Error) -> PyErr {
    match build(py, error) {
        Ok(err) | Err(err) => err,
    }
}

fn build(py: Python<'_>, error: peerpipe::Error) -> PyResult<PyErr> {
    use peerpipe::Error as E;
    let kind = error.kind();
    let message = error.to_string();
    let class = class_of_kind(py, kind)?.unwrap_or_else(|| py.get_type::<Error>());
    let err = match (kind, error.raw_os_error()) {
        // OSError(errno, text) picks the subclass by errno (PermissionError, ...).
        (ErrorKind::Io, Some(errno)) => PyErr::from_type(class, (errno, message)),
        (ErrorKind::NotFound, _) => PyErr::from_type(class, (libc_enoent(), message)),
        _ => PyErr::from_type(class, message),
    };
    let value = err.value(py);
    value.setattr("kind", kind.name())?;
    match error {
        E::PeerExited { status, code, signal, .. } => {
            value.setattr("status", Some(status))?;
            value.setattr("exit_code", code)?;
            value.setattr("signal", signal)?;
        }
        E::PeerClosed { .. } | E::ClosedAfter { .. } => {
            value.setattr("status", None::<String>)?;
            value.setattr("exit_code", None::<i32>)?;
            value.setattr("signal", None::<i32>)?;
        }
        E::Remote { seq, message: text } => {
            value.setattr("seq", seq)?;
            value.setattr("message", text)?;
        }
        E::ShapeMismatch { seq, expected, found } => {
            value.setattr("seq", seq)?;
            value.setattr("expected", expected)?;
            value.setattr("found", found)?;
        }
        E::DtypeMismatch { seq, expected, found } => {
            value.setattr("seq", seq)?;
            value.setattr("expected", expected.to_string())?;
            value.setattr("found", found.to_string())?;
        }
        E::CountMismatch { seq, expected, found } => {
            value.setattr("seq", seq)?;
            value.setattr("expected", format!("{expected} elements"))?;
            value.setattr("found", format!("{found} elements"))?;
        }
        _ => {}
    }
    Ok(err)
}

/// `peerpipe.Unsupported` raised by the binding itself (with `kind` as the crate's would
/// have): a server that lacks what a call needs, found before anything was sent.
pub(crate) fn unsupported(py: Python<'_>, message: String) -> PyErr {
    let err = Unsupported::new_err(message);
    // Setting an attribute on a fresh exception cannot fail in practice; if it did, the
    // exception without `kind` is still the right one to raise.
    let _ = err.value(py).setattr("kind", ErrorKind::Unsupported.name());
    err
}

/// `ENOENT`, the errno of a program that is not found (2 on every Linux architecture).
fn libc_enoent() -> i32 {
    std::io::Error::from(std::io::ErrorKind::NotFound).raw_os_error().unwrap_or(2)
}

/// A `Result` of the crate as a `PyResult`.
pub(crate) trait IntoPy<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for peerpipe::Result<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}

/// `_peerpipe._error_kinds()`: the name of every error kind, for the test of the table.
#[pyfunction]
pub(crate) fn _error_kinds() -> Vec<&'static str> {
    ErrorKind::ALL.iter().map(|k| k.name()).collect()
}

/// `_peerpipe._exception_for_kind(name)`: the class [`class_of_kind`] gives the kind named
/// `name`, or `None` when the table has no line for it.
#[pyfunction]
pub(crate) fn _exception_for_kind<'py>(
    py: Python<'py>,
    name: &str,
) -> PyResult<Option<Bound<'py, PyType>>> {
    let kind = ErrorKind::ALL
        .into_iter()
        .find(|k| k.name() == name)
        .ok_or_else(|| PyValueError::new_err(format!("no error kind named {name:?}")))?;
    class_of_kind(py, kind)
}
