//! `pp_peer`: a conversation with a server process — spawn, call, timeout, close.

use std::ffi::{c_char, c_int};

use peerpipe::{CallTiming, Peer, Values, ValuesMut};

use crate::error::{Failure, invalid};
use crate::ffi::{self, guard};
use crate::options::{pp_options, timeout_of};

/// A conversation with one server process. Opaque: a Rust `Box` holding a `peerpipe::Peer`
/// (the child process, its pipes or shared region, and reusable buffers).
///
/// Made by `pp_spawn*`, which start the server and exchange HELLOs; ended and freed by
/// `pp_close`, which says BYE and reaps the server. Every server a peer spawned is reaped, on
/// `pp_close` as on any error: none is left running or as a zombie.
///
/// Thread-safety: a `pp_peer` may be handed from one thread to another, but must not be used
/// by two threads at once; different peers are independent.
pub struct pp_peer {
    pub(crate) peer: Peer,
}

/// Where the time of one round trip went, in nanoseconds.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pp_timing {
    /// The whole call, from before sending to after the reply is in `out`.
    pub round_trip_ns: u64,
    /// The server's time, from reading the request's header to writing the reply (as the
    /// server reported it).
    pub server_ns: u64,
    /// Client: converting the request into wire bytes (0 on little-endian machines, where the
    /// request is sent straight from `in` and there is nothing to convert or time).
    pub encode_ns: u64,
    /// Client: converting the reply from wire bytes (0 on little-endian machines, where the
    /// reply is read straight into `out`).
    pub decode_ns: u64,
}

impl From<CallTiming> for pp_timing {
    fn from(t: CallTiming) -> pp_timing {
        pp_timing {
            round_trip_ns: t.round_trip_ns,
            server_ns: t.server_ns,
            encode_ns: t.encode_ns,
            decode_ns: t.decode_ns,
        }
    }
}

/// Starts the program `argv[0]` (looked up in `PATH` when it has no '/') with the arguments
/// `argv[1..argc]` as a server on two new pipes — its stdin and stdout; its stderr is
/// inherited — and exchanges HELLOs, with default options (pipe, auto wait, 10 s timeout,
/// 64 MiB frames). E.g. `{"peer", "--role", "server", "--handler", "echo"}`.
///
/// Ownership: on success `*out` is a new peer the caller owns and must pass to `pp_close`; on
/// failure `*out` is set to NULL (when `out` is not NULL) and no process is left behind.
/// The strings are copied; `argv` need not outlive the call.
///
/// If SIGPIPE has its default action (terminate the process), it is set to ignored, so that
/// a server that dies makes a call fail with an error code instead of killing the caller. A
/// handler or disposition you set is left alone; set one before if you need SIGPIPE.
///
/// Returns `PP_OK`; `PP_EINVAL` when `argv` or `out` is NULL, `argc` is 0 or an `argv[i]`
/// is NULL; `PP_ENOTFOUND` when the program is not found and `PP_EIO` when it cannot be
/// started for another reason (not executable), both naming it in `pp_last_error()`;
/// `PP_EEXITED` when it exits before answering HELLO; `PP_ETIMEDOUT` when it does not answer
/// within the timeout; `PP_EPROTO` when its first frame is not a valid HELLO; `PP_ECLOSED`
/// when it closes its stdout without exiting; `PP_EREMOTE` when it refuses the handshake
/// with an ERROR frame.
///
/// # Safety
/// `argv` is NULL or points to `argc` pointers, each NULL or a NUL-terminated string; `out`
/// is NULL or points to writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_spawn(
    argv: *const *const c_char,
    argc: usize,
    out: *mut *mut pp_peer,
) -> c_int {
    // SAFETY: the caller's guarantees are those of pp_spawn_with with NULL options.
    unsafe { pp_spawn_with(argv, argc, std::ptr::null(), out) }
}

/// `pp_spawn` with options (NULL: the defaults). With a shared-memory transport the server's
/// stdin is the region's memfd and `argv` must start a server for that transport (e.g. add
/// `--transport shm-ring` to `peer --role server`).
///
/// Ownership and errors as `pp_spawn`; also `PP_EIO` when the pipes or the shared region
/// cannot be made, and `PP_EPROTO` when the shared-memory size is outside the transport's
/// limits.
///
/// # Safety
/// As `pp_spawn`; `options` is NULL or a live `pp_options`, not changed during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_spawn_with(
    argv: *const *const c_char,
    argc: usize,
    options: *const pp_options,
    out: *mut *mut pp_peer,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees `out` NULL or writable.
        let out = unsafe { ffi::clear_out(out) }?;
        if argv.is_null() {
            return Err(invalid("argv", "is NULL"));
        }
        if argc == 0 {
            return Err(invalid("argc", "is 0; argv[0] must name the program"));
        }
        // SAFETY: non-NULL, and the caller guarantees `argc` readable pointers.
        let args = unsafe { ffi::slice(argv, argc, "argv") }?;
        let mut strings = Vec::with_capacity(argc);
        for (i, &arg) in args.iter().enumerate() {
            // SAFETY: the caller guarantees each argv[i] is NULL or NUL-terminated.
            strings.push(unsafe { ffi::c_os_str(arg, &format!("argv[{i}]")) }?);
        }
        let command = peerpipe::peer::argv_command(&strings)?;
        // SAFETY: the caller guarantees NULL or a live, unchanging pp_options.
        let options = unsafe { pp_options::or_default(options) }.options;
        ffi::ignore_sigpipe_if_default();
        let peer = Peer::spawn(command, options)?;
        // SAFETY: `out` was checked non-NULL by clear_out; the caller guarantees it writable.
        unsafe { out.write(Box::into_raw(Box::new(pp_peer { peer }))) };
        Ok(())
    })
}

/// Starts `sh -c COMMAND_LINE` as the server (e.g. "ssh host peer --role server"), with
/// default options. A simple command (words only: no operators, redirections, substitutions
/// or assignments) runs as `exec COMMAND_LINE`, so the spawned process is the server itself,
/// and its program is checked first: one that is not there is `PP_ENOTFOUND`, naming it.
/// Ownership, SIGPIPE and errors as `pp_spawn` (a command the shell cannot find in a line
/// that is not simple makes the shell exit with status 127: `PP_EEXITED`); also
/// `PP_EINVAL` when `command_line` is not UTF-8.
///
/// # Safety
/// `command_line` is NULL or a NUL-terminated string; `out` as in `pp_spawn`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_spawn_shell(
    command_line: *const c_char,
    out: *mut *mut pp_peer,
) -> c_int {
    // SAFETY: the caller's guarantees are those of pp_spawn_shell_with with NULL options.
    unsafe { pp_spawn_shell_with(command_line, std::ptr::null(), out) }
}

/// `pp_spawn_shell` with options (NULL: the defaults); see `pp_spawn_with`.
///
/// # Safety
/// As `pp_spawn_shell`; `options` is NULL or a live `pp_options`, not changed during the
/// call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_spawn_shell_with(
    command_line: *const c_char,
    options: *const pp_options,
    out: *mut *mut pp_peer,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees `out` NULL or writable.
        let out = unsafe { ffi::clear_out(out) }?;
        // SAFETY: the caller guarantees NULL or a NUL-terminated string.
        let line = unsafe { ffi::c_os_str(command_line, "command_line") }?;
        let line = line.to_str().ok_or_else(|| invalid("command_line", "is not UTF-8"))?;
        let command = peerpipe::peer::checked_shell_command(line)?;
        // SAFETY: the caller guarantees NULL or a live, unchanging pp_options.
        let options = unsafe { pp_options::or_default(options) }.options;
        ffi::ignore_sigpipe_if_default();
        let peer = Peer::spawn(command, options)?;
        // SAFETY: `out` was checked non-NULL by clear_out; the caller guarantees it writable.
        unsafe { out.write(Box::into_raw(Box::new(pp_peer { peer }))) };
        Ok(())
    })
}

/// Starts this library's `peer` binary as `peer --role server --handler HANDLER` (e.g.
/// "echo", "lorenz96"), with the options' wait strategy, frame limit and transport (NULL: the
/// defaults), and exchanges HELLOs. `peer` is found as the Rust and Python libraries find
/// it: the path in the environment variable `PEERPIPE_PEER`, else `peer` on `PATH` (where
/// `cargo install --path cli` in a peerpipe clone puts it) — so the program runs from any
/// directory, wherever cargo built the library.
///
/// Ownership and SIGPIPE as `pp_spawn`.
///
/// Returns `PP_OK`; `PP_EINVAL` when `handler` or `out` is NULL or `handler` is not UTF-8;
/// `PP_ENOTFOUND` when `peer` is in neither place (a `PEERPIPE_PEER` naming no executable
/// file counts as not there), `pp_last_error()` naming every place looked at and what was
/// wrong there; and the errors of `pp_spawn_with` (`PP_EEXITED` when `peer` has no such
/// handler, its message quoting what `peer` said).
///
/// # Safety
/// `handler` is NULL or a NUL-terminated string; `options` is NULL or a live `pp_options`,
/// not changed during the call; `out` is NULL or points to writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_spawn_handler(
    handler: *const c_char,
    options: *const pp_options,
    out: *mut *mut pp_peer,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees `out` NULL or writable.
        let out = unsafe { ffi::clear_out(out) }?;
        // SAFETY: the caller guarantees NULL or a NUL-terminated string.
        let handler = unsafe { ffi::c_str(handler, "handler") }?;
        // SAFETY: the caller guarantees NULL or a live, unchanging pp_options.
        let options = unsafe { pp_options::or_default(options) }.options;
        ffi::ignore_sigpipe_if_default();
        let peer = Peer::spawn_handler(handler, options)?;
        // SAFETY: `out` was checked non-NULL by clear_out; the caller guarantees it writable.
        unsafe { out.write(Box::into_raw(Box::new(pp_peer { peer }))) };
        Ok(())
    })
}

/// Writes to `*pid` the process id of the peer's server: the process `pp_spawn*` started,
/// or, when that is a shell or wrapper, the server process below it that said HELLO (as the
/// server reported it).
///
/// Returns `PP_OK`; `PP_EINVAL` when `peer` or `pid` is NULL, or when the server's process
/// is not known (it reported a pid that is not the spawned process or one below it, e.g. a
/// server on another machine), `*pid` then unchanged.
///
/// # Safety
/// `peer` is NULL or a live peer from `pp_spawn*`, not in use by another thread; `pid` is
/// NULL or points to a writable `uint32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_server_pid(peer: *const pp_peer, pid: *mut u32) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a live peer used by no other thread.
        let peer = unsafe { peer.as_ref() }.ok_or_else(|| invalid("peer", "is NULL"))?;
        if pid.is_null() {
            return Err(invalid("pid", "is NULL"));
        }
        let server = peer
            .peer
            .server_pid()
            .ok_or_else(|| invalid("peer", "its server's process is not known here"))?;
        // SAFETY: non-NULL, and the caller guarantees it writable.
        unsafe { pid.write(server) };
        Ok(())
    })
}

/// Sets the deadline, in nanoseconds, of each following reply and of `pp_close`'s BYE; 0
/// waits for ever. The default is the options' timeout (10 s).
///
/// Returns `PP_OK`, or `PP_EINVAL` when `peer` is NULL.
///
/// # Safety
/// `peer` is NULL or a live peer from `pp_spawn*`, not in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_set_timeout_ns(peer: *mut pp_peer, ns: u64) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a live peer used by no other thread.
        let peer = unsafe { peer.as_mut() }.ok_or_else(|| invalid("peer", "is NULL"))?;
        peer.peer.set_timeout(timeout_of(ns));
        Ok(())
    })
}

/// Sends the `n` doubles at `in` as one f64 request and receives the reply, which must hold
/// exactly `n` doubles (so `out_len` must equal `n`), into `out`: one round trip. The values
/// cross bit for bit (NaN payloads, -0.0, subnormals, infinities). Once the peer is warm the
/// call allocates nothing.
///
/// `timing`, when not NULL, receives where the time went; it is written only on success.
/// On any failure the contents of `out` are unspecified.
///
/// Blocks until the reply arrives, at most the peer's timeout.
///
/// Returns `PP_OK`; `PP_EINVAL` (nothing sent, peer usable) when `peer` is NULL, `in` or
/// `out` is NULL with a non-zero length, misaligned, or too long, `in` and `out` overlap, or
/// `out_len` is not `n`; `PP_ETOOLARGE` (nothing sent, peer usable) when the request exceeds
/// the server's max_frame_bytes; `PP_EREMOTE` (peer usable) when the server answered with an
/// ERROR frame; `PP_ESHAPE` (peer usable: the reply was read to its end) when the reply has
/// another dtype or element count than `out` (a server that does not answer in kind; the
/// message names both); and, leaving the peer good only for `pp_close` (its server
/// terminated and reaped): `PP_ETIMEDOUT`, `PP_EEXITED`, `PP_ECLOSED` (whose message repeats
/// the error that closed it), `PP_EPROTO`, `PP_EIO`.
///
/// # Safety
/// `peer` is NULL or a live peer, not in use by another thread; `in` is NULL or points to
/// `n` readable doubles; `out` is NULL or points to `out_len` writable doubles; `timing` is
/// NULL or points to a writable `pp_timing`. The buffers are used only during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_call_f64(
    peer: *mut pp_peer,
    r#in: *const f64,
    n: usize,
    out: *mut f64,
    out_len: usize,
    timing: *mut pp_timing,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees the pointers as documented above.
        unsafe { call(peer, r#in, n, out, out_len, timing, Values::F64, ValuesMut::F64) }
    })
}

/// `pp_call_f64` for floats: sends the `n` floats at `in` as one f32 request and receives
/// `out_len` floats into `out`. Contract, blocking and return codes as `pp_call_f64`.
///
/// # Safety
/// As `pp_call_f64`, with floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_call_f32(
    peer: *mut pp_peer,
    r#in: *const f32,
    n: usize,
    out: *mut f32,
    out_len: usize,
    timing: *mut pp_timing,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees the pointers as documented for pp_call_f64.
        unsafe { call(peer, r#in, n, out, out_len, timing, Values::F32, ValuesMut::F32) }
    })
}

/// The body of `pp_call_f64` and `pp_call_f32`: checks the buffers, makes the call with the
/// request and reply built by `values` and `reply`, and writes the timing.
///
/// # Safety
/// As `pp_call_f64`: `peer` is NULL or a live peer used by no other thread; `input` is NULL or
/// points to `n` readable `T`s, `out` NULL or to `out_len` writable `T`s, both valid for
/// `'a`; `timing` is NULL or points to a writable `pp_timing`.
#[allow(clippy::too_many_arguments)]
unsafe fn call<'a, T>(
    peer: *mut pp_peer,
    input: *const T,
    n: usize,
    out: *mut T,
    out_len: usize,
    timing: *mut pp_timing,
    values: fn(&'a [T]) -> Values<'a>,
    reply: fn(&'a mut [T]) -> ValuesMut<'a>,
) -> Result<(), Failure> {
    ffi::check_disjoint(input, n, out.cast_const(), out_len)?;
    // SAFETY: the caller guarantees these pointers; `input` and `out` do not overlap
    // (checked), so the shared and the mutable slice never alias.
    let (peer, request, answer) = unsafe {
        (
            peer.as_mut().ok_or_else(|| invalid("peer", "is NULL"))?,
            ffi::slice(input, n, "in")?,
            ffi::slice_mut(out, out_len, "out")?,
        )
    };
    let t = peer.peer.call(values(request), reply(answer))?;
    // SAFETY: the caller guarantees NULL or a writable pp_timing.
    unsafe { write_timing(timing, t) };
    Ok(())
}

/// # Safety
/// `timing` is NULL or points to a writable `pp_timing`.
pub(crate) unsafe fn write_timing(timing: *mut pp_timing, t: CallTiming) {
    if !timing.is_null() {
        // SAFETY: non-NULL and, per the caller, writable.
        unsafe { timing.write(t.into()) };
    }
}

/// Ends the conversation and frees the peer: says BYE, waits for the server's BYE (at most
/// the peer's timeout) and for the server to exit (at most 500 ms more, then SIGTERM and
/// SIGKILL), and reaps it. After an earlier error the server is already gone and this only
/// frees. NULL is a no-op returning `PP_OK`.
///
/// Ownership: `peer` is freed whatever the return code; do not use it again.
///
/// Returns `PP_OK`, or the code of what went wrong while closing (`PP_ETIMEDOUT`,
/// `PP_EEXITED` when the server had to be terminated or died, `PP_ECLOSED`, `PP_EPROTO`,
/// `PP_EIO`); a peer that had already failed closes with `PP_OK`.
///
/// # Safety
/// `peer` is NULL or a live peer from `pp_spawn*` that is not used by another thread and
/// has not been closed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_close(peer: *mut pp_peer) -> c_int {
    guard(|| {
        if peer.is_null() {
            return Ok(());
        }
        // SAFETY: made by Box::into_raw in pp_spawn*, and per the caller not closed before.
        let peer = unsafe { Box::from_raw(peer) };
        peer.peer.close()?;
        Ok(())
    })
}
