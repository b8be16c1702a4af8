//! A server whose loop is the C program's own — `pp_session_recv`, answer, then compute — for
//! two models stepping together (the crate's `peerpipe::server::Session`).

use std::ffi::{CString, c_char, c_int};

use peerpipe::server::{Next, Session};

use crate::error::invalid;
use crate::ffi::{self, guard, guard_or};
use crate::functions::{pp_call, pp_reply};
use crate::options::pp_options;
use crate::server::stdio_options;

/// A server session over this process's stdin and stdout, driven by the caller: receive a
/// call with `pp_session_recv`, answer it with `pp_session_reply` + `pp_session_send` (or
/// `pp_session_reject`), then compute while the client does. Opaque; made by
/// `pp_session_open`, freed by `pp_session_free`.
///
/// Thread-safety: a `pp_session` may be handed from one thread to another, but must not be
/// used by two threads at once.
pub struct pp_session {
    session: Session,
    /// The call received last, read with the `pp_call_*` accessors until it is answered.
    call: pp_call,
    /// Its reply, made with the `pp_reply_*` functions.
    reply: pp_reply,
    /// The function the call received last names, for `pp_session_function`.
    function: CString,
    /// Whether a call waits for its answer.
    answering: bool,
}

// SAFETY: `call` holds pointers into the session's own request buffer, which moves with the
// session and is read only through it, by one thread at a time (the documented contract).
unsafe impl Send for pp_session {}

impl pp_session {
    /// Refuses an answer, or a look at the call, when no call waits for its answer.
    fn check_answering(&self) -> Result<(), crate::error::Failure> {
        if self.answering {
            Ok(())
        } else {
            Err(invalid("session", "no call waits for its answer: pp_session_recv one"))
        }
    }
}

/// Opens a session over this process's stdin and stdout: sends the HELLO announcing `name`
/// and the `count` functions named in `functions` (`functions=exchange,state`), reads the
/// client's, and stores the session in `*out`. The process must have been started by a
/// peerpipe client; call it once per process (see `pp_serve_stdio_f64` for what it does to
/// stdin, stdout and SIGPIPE). `options` may be NULL (the defaults); otherwise as for
/// `pp_serve_stdio_functions`.
///
/// Ownership: the caller owns `*out` and frees it with `pp_session_free`; the names are
/// copied.
///
/// Returns `PP_OK`; `PP_EINVAL` when `name`, `functions` (with `count` > 0) or `out` is NULL,
/// or a name is not a function name or repeated (checked before stdio is touched); otherwise
/// the codes of the handshake (`PP_ETIMEDOUT`, `PP_EPROTO`, `PP_EIO`, ...).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `functions` is NULL or points to `count`
/// pointers, each NULL or a NUL-terminated string; `options` is NULL or a live `pp_options`;
/// `out` is NULL or points to writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_session_open(
    name: *const c_char,
    functions: *const *const c_char,
    count: usize,
    options: *const pp_options,
    out: *mut *mut pp_session,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a NUL-terminated string.
        let name = unsafe { ffi::c_str(name, "name") }?;
        // SAFETY: the caller guarantees NULL or `count` pointers, each NULL or a string.
        let names = unsafe { ffi::c_strs(functions, count, "functions") }?;
        if out.is_null() {
            return Err(invalid("out", "is NULL"));
        }
        // SAFETY: the caller guarantees NULL or a live pp_options.
        let options = unsafe { pp_options::or_default(options) };
        ffi::ignore_sigpipe_if_default();
        let session = Session::stdio(name, &names, &stdio_options(&options))?;
        let opened = pp_session {
            session,
            call: pp_call::named(""),
            reply: pp_reply::named(""),
            function: CString::default(),
            answering: false,
        };
        // SAFETY: `out` is non-NULL and the caller guarantees it writable.
        unsafe { out.write(Box::into_raw(Box::new(opened))) };
        Ok(())
    })
}

/// Waits for the next call and stores it in `*call` — read it with `pp_call_count`,
/// `pp_call_part` and `pp_call_part_f64`, and `pp_session_function` names it — or NULL once
/// the client has said BYE or closed its end. The call and every pointer read from it are
/// valid until it is answered. Waits without a deadline between calls; the session itself
/// answers DATA requests and calls to functions it does not serve with ERROR.
///
/// Returns `PP_OK`; `PP_EINVAL` when `session` or `call` is NULL, or the call received last
/// has not been answered (nothing is read); otherwise the codes of a broken conversation
/// (`PP_EPROTO`, `PP_ETIMEDOUT` inside a frame, `PP_EIO`), after which every later call
/// fails.
///
/// # Safety
/// `session` is NULL or a live `pp_session` used by no other thread; `call` is NULL or
/// points to writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_session_recv(
    session: *mut pp_session,
    call: *mut *const pp_call,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a live pp_session used by no one else.
        let s = unsafe { session.as_mut() }.ok_or_else(|| invalid("session", "is NULL"))?;
        if call.is_null() {
            return Err(invalid("call", "is NULL"));
        }
        let received = match s.session.next(None)? {
            Next::Call(received) => {
                s.call.load(&received);
                s.reply.start(received.function);
                // A function name is ASCII letters, digits and `_ . : -`: no NUL.
                if s.function.as_bytes() != received.function.as_bytes() {
                    s.function = CString::new(received.function).unwrap_or_default();
                }
                s.answering = true;
                &s.call as *const pp_call
            }
            Next::End(_) | Next::Idle => std::ptr::null(),
        };
        // SAFETY: non-NULL, and the caller guarantees it writable.
        unsafe { call.write(received) };
        Ok(())
    })
}

/// The name of the function the call received last names ("" for the default function), a
/// NUL-terminated string owned by the session, valid until the next `pp_session_recv`; NULL,
/// with the reason in `pp_last_error()`, when `session` is NULL or no call waits for its
/// answer.
///
/// # Safety
/// `session` is NULL or a live `pp_session` used by no other thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_session_function(session: *mut pp_session) -> *const c_char {
    guard_or(std::ptr::null(), || {
        // SAFETY: the caller guarantees NULL or a live pp_session used by no one else.
        let s = unsafe { session.as_mut() }.ok_or_else(|| invalid("session", "is NULL"))?;
        s.check_answering()?;
        Ok(s.function.as_ptr())
    })
}

/// The reply to the call received last, to fill with `pp_reply_f64`, `pp_reply_part` and the
/// other `pp_reply_*` functions (or to make an ERROR with `pp_reply_error`), then send with
/// `pp_session_send`. Empty when the call is received. NULL, with the reason in
/// `pp_last_error()`, when `session` is NULL or no call waits for its answer.
///
/// # Safety
/// `session` is NULL or a live `pp_session` used by no other thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_session_reply(session: *mut pp_session) -> *mut pp_reply {
    guard_or(std::ptr::null_mut(), || {
        // SAFETY: the caller guarantees NULL or a live pp_session used by no one else.
        let s = unsafe { session.as_mut() }.ok_or_else(|| invalid("session", "is NULL"))?;
        s.check_answering()?;
        Ok(&mut s.reply as *mut pp_reply)
    })
}

/// Sends the reply made through `pp_session_reply` (no parts if none were made) as the
/// answer to the call received last; the client computes from here on, and so may this
/// side. When the reply is an ERROR (`pp_reply_error`, a part that could not be made) or
/// cannot be sent as made (too large for the client), the client gets ERROR with its
/// message and this returns `PP_EREMOTE` with it; the conversation goes on either way.
///
/// Returns `PP_OK`; `PP_EINVAL` when `session` is NULL or no call waits for its answer;
/// `PP_EREMOTE` as said; otherwise the codes of a failure to send, which ends the
/// conversation.
///
/// # Safety
/// `session` is NULL or a live `pp_session` used by no other thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_session_send(session: *mut pp_session) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a live pp_session used by no one else.
        let s = unsafe { session.as_mut() }.ok_or_else(|| invalid("session", "is NULL"))?;
        s.check_answering()?;
        s.answering = false;
        let failure = s.call.unload();
        let reply = &mut s.reply;
        s.session.reply_with(|out| reply.finish(0, failure, out))?;
        Ok(())
    })
}

/// Answers the call received last with ERROR carrying `message` (copied; invalid UTF-8 is
/// replaced); the client gets `PP_EREMOTE` with it and the conversation goes on.
///
/// Returns `PP_OK`; `PP_EINVAL` when `session` or `message` is NULL or no call waits for its
/// answer; otherwise the codes of a failure to send, which ends the conversation.
///
/// # Safety
/// `session` is NULL or a live `pp_session` used by no other thread; `message` is NULL or a
/// NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_session_reject(
    session: *mut pp_session,
    message: *const c_char,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a live pp_session used by no one else.
        let s = unsafe { session.as_mut() }.ok_or_else(|| invalid("session", "is NULL"))?;
        // SAFETY: the caller guarantees NULL or a NUL-terminated string.
        let message = unsafe { ffi::c_bytes(message, "message") }?;
        s.check_answering()?;
        s.answering = false;
        s.call.unload();
        s.session.reject(&String::from_utf8_lossy(message))?;
        Ok(())
    })
}

/// Frees a session made by `pp_session_open`; the client sees the end of the stream. NULL is
/// a no-op.
///
/// # Safety
/// `session` is NULL or a `pp_session` from `pp_session_open` not freed before and used by
/// no other thread; it must not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_session_free(session: *mut pp_session) {
    if !session.is_null() {
        // SAFETY: made by Box::into_raw in pp_session_open and, per the caller, not freed.
        drop(unsafe { Box::from_raw(session) });
    }
}
