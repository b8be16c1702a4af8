//! Return codes, their fixed messages, and this thread's last error message.
//!
//! A crate error becomes a code by its kind ([`peerpipe::Error::kind`]), by one table
//! (`code_of_kind`):
//!
//! | `ErrorKind`       | code              |
//! |-------------------|-------------------|
//! | `InvalidArgument` | `PP_EINVAL`       |
//! | `Timeout`         | `PP_ETIMEDOUT`    |
//! | `PeerExited`      | `PP_EEXITED`      |
//! | `Closed`          | `PP_ECLOSED`      |
//! | `Protocol`        | `PP_EPROTO`       |
//! | `Io`              | `PP_EIO`          |
//! | `Remote`          | `PP_EREMOTE`      |
//! | `TooLarge`        | `PP_ETOOLARGE`    |
//! | `NotFound`        | `PP_ENOTFOUND`    |
//! | `Interrupted`     | `PP_EINTR`        |
//! | `Shape`           | `PP_ESHAPE`       |
//! | `Unsupported`     | `PP_EUNSUPPORTED` |
//!
//! `PP_EPANIC` is no kind: it is a caught panic.

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int};

use peerpipe::{Error, ErrorKind};

/// Success.
pub const PP_OK: c_int = 0;
/// An argument is not valid: a NULL pointer where one is required, a buffer that is
/// misaligned, overlaps another or is too long to address, an `argc` of 0, a string that is
/// not a valid option value, a length that does not match, a part of an unknown dtype or
/// whose count is not whole rows of its columns, more than 64 parts, a function name that
/// is not one. A call refused so sends nothing: the peer stays usable.
pub const PP_EINVAL: c_int = -1;
/// A deadline passed: the server did not answer (or take the request) within the timeout.
/// The server has been terminated and reaped; the peer only accepts `pp_close`.
pub const PP_ETIMEDOUT: c_int = -2;
/// The server process ended; `pp_last_error()` says how ("exited with status 3", "was
/// killed by signal 9 (SIGKILL)"). The peer only accepts `pp_close`.
pub const PP_EEXITED: c_int = -3;
/// The other side closed the connection (end of stream, `EPIPE`), or the peer was already
/// closed by an earlier error. The peer only accepts `pp_close`.
pub const PP_ECLOSED: c_int = -4;
/// The other side broke wire format v1, or a shared-memory region is not valid: bad magic,
/// version, kind, dtype, flags or padding; a truncated frame; a reply with the wrong seq; a
/// PARTS frame whose part table breaks the rules. The server has been terminated; the peer
/// only accepts `pp_close`.
pub const PP_EPROTO: c_int = -5;
/// An operating-system call failed: a program could not be started for another reason than
/// not being found (e.g. it is not executable), a pipe or region could not be made, a
/// descriptor could not be read or written.
pub const PP_EIO: c_int = -6;
/// The server answered this request with an ERROR frame (its message is in
/// `pp_last_error()`). The conversation goes on: the peer stays usable.
pub const PP_EREMOTE: c_int = -7;
/// The request is larger than the server accepts (its `max_frame_bytes`). Nothing was sent:
/// the peer stays usable.
pub const PP_ETOOLARGE: c_int = -8;
/// A bug in peerpipe: a Rust panic was caught at the boundary. Treat the handle as unusable
/// apart from `pp_close`.
pub const PP_EPANIC: c_int = -9;
/// The program to start was not found: no such file, or not on `PATH`. `pp_last_error()`
/// names the program and the reason (`cannot start "pear": No such file or directory (os
/// error 2)`). No process is left behind.
pub const PP_ENOTFOUND: c_int = -10;
/// The caller asked to stop waiting; the server was terminated and reaped. (No function of
/// this library is interruptible yet; the code completes the table of error kinds.)
pub const PP_EINTR: c_int = -11;
/// The reply has another shape than the caller's buffers: another dtype or element count
/// than `out_len` (`pp_call_f64`, `pp_call_f32`), or other parts, dtypes, counts or columns
/// than `out` (`pp_call_parts`); `pp_last_error()` names the expected and the found shapes
/// (`reply to seq 4 has another shape than expected: expected 1 part: f64[500], found 1
/// part: f64[3]`). The reply was read to its end: the peer stays usable. The contents of the
/// caller's reply buffers are unspecified.
pub const PP_ESHAPE: c_int = -12;
/// The server does not speak what the call needs: `pp_call_parts` to a server whose HELLO
/// does not announce PARTS (`parts=1`); `pp_last_error()` names the server. Nothing was
/// sent: the peer stays usable for the calls the server does speak (`pp_call_f64`).
pub const PP_EUNSUPPORTED: c_int = -13;

/// Every code.
#[cfg(test)]
pub(crate) const ALL: [c_int; 14] = [
    PP_OK,
    PP_EINVAL,
    PP_ETIMEDOUT,
    PP_EEXITED,
    PP_ECLOSED,
    PP_EPROTO,
    PP_EIO,
    PP_EREMOTE,
    PP_ETOOLARGE,
    PP_EPANIC,
    PP_ENOTFOUND,
    PP_EINTR,
    PP_ESHAPE,
    PP_EUNSUPPORTED,
];

fn describe(code: c_int) -> &'static CStr {
    match code {
        PP_OK => c"success",
        PP_EINVAL => c"invalid argument",
        PP_ETIMEDOUT => c"timed out",
        PP_EEXITED => c"peer exited",
        PP_ECLOSED => c"connection closed",
        PP_EPROTO => c"protocol error",
        PP_EIO => c"I/O error",
        PP_EREMOTE => c"the server answered with an error",
        PP_ETOOLARGE => c"request too large for the server",
        PP_EPANIC => c"internal error (panic) in peerpipe",
        PP_ENOTFOUND => c"program not found",
        PP_EINTR => c"interrupted",
        PP_ESHAPE => c"reply of another shape than expected",
        PP_EUNSUPPORTED => c"not supported by the server",
        _ => c"unknown peerpipe error code",
    }
}

/// The code a crate error becomes at the boundary: the code of its kind.
pub(crate) fn code_of(error: &Error) -> c_int {
    // A kind added to the crate later is a protocol error until it gets its own line in
    // `code_of_kind` (the test `every_error_kind_has_its_own_code` fails until then).
    code_of_kind(error.kind()).unwrap_or(PP_EPROTO)
}

/// The one table from error kind to return code; `None` for a kind it does not know.
pub(crate) fn code_of_kind(kind: ErrorKind) -> Option<c_int> {
    Some(match kind {
        ErrorKind::InvalidArgument => PP_EINVAL,
        ErrorKind::Timeout => PP_ETIMEDOUT,
        ErrorKind::PeerExited => PP_EEXITED,
        ErrorKind::Closed => PP_ECLOSED,
        ErrorKind::Protocol => PP_EPROTO,
        ErrorKind::Io => PP_EIO,
        ErrorKind::Remote => PP_EREMOTE,
        ErrorKind::TooLarge => PP_ETOOLARGE,
        ErrorKind::NotFound => PP_ENOTFOUND,
        ErrorKind::Interrupted => PP_EINTR,
        ErrorKind::Shape => PP_ESHAPE,
        ErrorKind::Unsupported => PP_EUNSUPPORTED,
        _ => return None,
    })
}

/// A failed call: its code and the message `pp_last_error` will return.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: c_int,
    pub(crate) message: String,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure { code: code_of(&error), message: error.to_string() }
    }
}

/// `PP_EINVAL` with a message naming the argument and what was wrong.
pub(crate) fn invalid(argument: impl std::fmt::Display, reason: &str) -> Failure {
    Failure { code: PP_EINVAL, message: format!("invalid argument {argument}: {reason}") }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Stores `failure`'s message as this thread's last error and returns its code.
pub(crate) fn record(failure: Failure) -> c_int {
    let text = failure.message.replace('\0', "\\0");
    let message = CString::new(text).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|last| *last.borrow_mut() = message);
    failure.code
}

/// Empties this thread's last error (a call succeeded).
pub(crate) fn clear() {
    let _ = LAST_ERROR.try_with(|last| {
        if !last.borrow().is_empty() {
            *last.borrow_mut() = CString::default();
        }
    });
}

/// The message of the failure of the most recent `pp_*` call on this thread, as the Rust
/// library worded it (e.g. "peer exited with status 3 during the handshake (...)"), or ""
/// when that call succeeded or no call was made yet.
///
/// Never NULL. The string belongs to the library: do not free it. It stays valid until the
/// next `pp_*` call on the same thread (other than `pp_last_error` and `pp_strerror`), or
/// until the thread exits; copy it to keep it. Each thread has its own.
#[unsafe(no_mangle)]
pub extern "C" fn pp_last_error() -> *const c_char {
    // Cannot panic: `try_with` fails only while the thread is being torn down, and the cell
    // is borrowed mutably only inside `record`/`clear`, which call nothing back.
    LAST_ERROR.try_with(|last| last.borrow().as_ptr()).unwrap_or(c"".as_ptr())
}

/// A fixed, static description of a return code ("timed out" for `PP_ETIMEDOUT`), or
/// "unknown peerpipe error code" for a value that is not one.
///
/// Never NULL, never to be freed, valid for the life of the process; thread-safe.
#[unsafe(no_mangle)]
pub extern "C" fn pp_strerror(code: c_int) -> *const c_char {
    describe(code).as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_code_has_its_own_description_and_unknown_codes_say_so() {
        let texts: Vec<_> = ALL.iter().map(|&c| describe(c)).collect();
        for (i, text) in texts.iter().enumerate() {
            assert!(!texts[..i].contains(text), "{text:?} twice");
            assert_ne!(*text, describe(12345));
        }
        assert_eq!(describe(1), c"unknown peerpipe error code");
    }

    #[test]
    fn every_error_kind_has_its_own_code() {
        let mut seen = Vec::new();
        for kind in ErrorKind::ALL {
            let code = code_of_kind(kind).unwrap_or_else(|| panic!("no code for {kind}"));
            assert!(code < PP_OK && code != PP_EPANIC, "{kind}: {code}");
            assert!(ALL.contains(&code), "{kind}: {code} is not in ALL");
            assert!(!seen.contains(&code), "{kind}: {code} is another kind's code");
            seen.push(code);
        }
        // Every code but success and a caught panic is some kind's.
        assert_eq!(seen.len(), ALL.len() - 2);
    }

    #[test]
    fn crate_errors_keep_their_message_verbatim_and_get_their_code() {
        let cases = [
            (
                Error::Timeout { waiting_for: "x".into(), after: Duration::from_millis(5) },
                PP_ETIMEDOUT,
            ),
            (
                Error::PeerExited {
                    status: "exited with status 3".into(),
                    context: "c".into(),
                    code: Some(3),
                    signal: None,
                },
                PP_EEXITED,
            ),
            (Error::PeerClosed { context: "before replying" }, PP_ECLOSED),
            (Error::BadMagic { found: *b"garb" }, PP_EPROTO),
            (Error::Remote { seq: 1, message: "no".into() }, PP_EREMOTE),
            (
                Error::FrameTooLarge {
                    payload_bytes: 9,
                    max_frame_bytes: 8,
                    refused_by: peerpipe::error::RefusedBy::Client,
                },
                PP_ETOOLARGE,
            ),
            (Error::InvalidArgument { what: "wait strategy", reason: "r".into() }, PP_EINVAL),
            (Error::Io(std::io::Error::from(std::io::ErrorKind::NotFound)), PP_EIO),
            (
                Error::CannotStart {
                    program: "pear".into(),
                    source: std::io::Error::from_raw_os_error(libc::ENOENT),
                },
                PP_ENOTFOUND,
            ),
            (
                Error::CannotStart {
                    program: "/etc/passwd".into(),
                    source: std::io::Error::from_raw_os_error(libc::EACCES),
                },
                PP_EIO,
            ),
            (Error::Interrupted { during: "the handshake" }, PP_EINTR),
            (
                Error::ShapeMismatch {
                    seq: 4,
                    expected: "1 part: f64[500]".into(),
                    found: "1 part: f64[3]".into(),
                },
                PP_ESHAPE,
            ),
            (Error::CountMismatch { seq: 2, expected: 5, found: 4 }, PP_ESHAPE),
            (
                Error::Unsupported {
                    what: "PARTS requests",
                    server: "v1 0.1".into(),
                    hint: "it serves DATA requests only",
                },
                PP_EUNSUPPORTED,
            ),
        ];
        for (error, code) in cases {
            let text = error.to_string();
            let failure = Failure::from(error);
            assert_eq!((failure.code, failure.message.as_str()), (code, text.as_str()));
        }
    }

    #[test]
    fn the_last_error_is_per_thread_and_cleared_by_success() {
        record(invalid("peer", "is NULL"));
        // SAFETY: pp_last_error never returns NULL and the string lives until the next call.
        let here = unsafe { CStr::from_ptr(pp_last_error()) }.to_str().unwrap().to_owned();
        assert_eq!(here, "invalid argument peer: is NULL");
        let other = std::thread::spawn(|| {
            // SAFETY: as above, on this thread.
            unsafe { CStr::from_ptr(pp_last_error()) }.to_bytes().len()
        });
        assert_eq!(other.join().unwrap(), 0);
        clear();
        // SAFETY: as above.
        assert_eq!(unsafe { CStr::from_ptr(pp_last_error()) }.to_bytes(), b"");
    }

    #[test]
    fn a_message_with_a_nul_byte_is_kept_with_the_nul_spelled_out() {
        record(Failure { code: PP_EREMOTE, message: "a\0b".into() });
        // SAFETY: as in the test above.
        assert_eq!(unsafe { CStr::from_ptr(pp_last_error()) }.to_bytes(), b"a\\0b");
    }
}
