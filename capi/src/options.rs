//! `pp_options`: the settings of spawning a server (`pp_spawn_with`, `pp_spawn_shell_with`)
//! and of serving (`pp_serve_stdio_f64_with`, `pp_serve_stdio_f32_with`,
//! `pp_serve_stdio_functions`).

use std::ffi::{c_char, c_int};
use std::time::Duration;

use peerpipe::{Options, TransportKind, Wait};

use crate::error::{Failure, invalid};
use crate::ffi::{self, guard};

/// Settings for spawning a server and for serving. Opaque: a Rust `Box` holding the
/// library's `Options`, made by `pp_options_new` and freed by `pp_options_free`; change it
/// only through the `pp_options_set_*` functions.
///
/// Defaults: transport "pipe" for spawning, and for serving the transport the client chose,
/// wait "auto" (see `pp_options_set_wait`), timeout 10 s,
/// max_frame_bytes 64 MiB, 1 MiB per direction of shared memory, handler name "c-f64",
/// "c-f32" or the one given to `pp_functions_new` (servers only).
///
/// Spawning and serving read the options and keep no pointer to them: free them whenever
/// convenient. Not thread-safe: do not change one `pp_options` from two threads at once, nor
/// while another thread passes it to a `pp_*` call.
pub struct pp_options {
    pub(crate) options: Options,
    pub(crate) handler_name: Option<String>,
    /// Whether `pp_options_set_transport` chose the transport: a server told none serves the
    /// one its client chose.
    pub(crate) transport_chosen: bool,
}

impl pp_options {
    /// The defaults above.
    fn new() -> pp_options {
        pp_options { options: Options::default(), handler_name: None, transport_chosen: false }
    }

    /// The options behind `ptr`, or the defaults when `ptr` is NULL.
    ///
    /// # Safety
    /// `ptr` is NULL or a live `pp_options` from `pp_options_new`, not being changed.
    pub(crate) unsafe fn or_default(ptr: *const pp_options) -> pp_options {
        // SAFETY: the caller guarantees NULL or a live, unchanging pp_options.
        match unsafe { ptr.as_ref() } {
            Some(given) => pp_options {
                options: given.options.clone(),
                handler_name: given.handler_name.clone(),
                transport_chosen: given.transport_chosen,
            },
            None => pp_options::new(),
        }
    }
}

/// The options behind `options`, refusing NULL.
///
/// # Safety
/// `options` is NULL or a live `pp_options` that nothing else uses during `'a`.
unsafe fn options_mut<'a>(options: *mut pp_options) -> Result<&'a mut pp_options, Failure> {
    // SAFETY: the caller guarantees NULL or a live pp_options used by no one else meanwhile.
    unsafe { options.as_mut() }.ok_or_else(|| invalid("options", "is NULL"))
}

/// Makes a set of options with the defaults and stores it in `*out`.
///
/// Ownership: the caller owns `*out` and frees it with `pp_options_free`.
///
/// Returns `PP_OK`, or `PP_EINVAL` when `out` is NULL.
///
/// # Safety
/// `out` is NULL or points to writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_options_new(out: *mut *mut pp_options) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(invalid("out", "is NULL"));
        }
        let options = Box::into_raw(Box::new(pp_options::new()));
        // SAFETY: `out` is non-NULL and the caller guarantees it is writable.
        unsafe { out.write(options) };
        Ok(())
    })
}

/// Frees options made by `pp_options_new`. NULL is a no-op.
///
/// # Safety
/// `options` is NULL or a `pp_options` from `pp_options_new` not freed before; it must not
/// be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_options_free(options: *mut pp_options) {
    if !options.is_null() {
        // SAFETY: made by Box::into_raw in pp_options_new and, per the caller, not freed yet.
        drop(unsafe { Box::from_raw(options) });
    }
}

/// Chooses the transport: "pipe" (default; works across machines, e.g. through ssh),
/// "shm-sem" or "shm-ring" (shared memory, same machine only), or "tcp" (the server listens
/// on a free port, announces it with a one-time token on its stdout, and the frames go over
/// a TCP connection while its stdin and stdout stay open as the liveness channel; with
/// `ssh host ...` as the command, ssh only starts the server: docs/PROTOCOL.md section 14).
///
/// The transport is fixed when the server is spawned, and the server must be started for
/// the same one: with shared memory its stdin is the region's memfd instead of a pipe, over
/// tcp it must listen and announce. So: `peer --role server --transport shm-ring` (or
/// `tcp`), or a C server that passes options with this transport to
/// `pp_serve_stdio_*_with` or `pp_serve_stdio_functions`.
///
/// Returns `PP_OK`, or `PP_EINVAL` when `options` or `name` is NULL or `name` is not a
/// transport (options unchanged).
///
/// # Safety
/// `options` is NULL or a live `pp_options`; `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_options_set_transport(
    options: *mut pp_options,
    name: *const c_char,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a NUL-terminated string.
        let name = unsafe { ffi::c_str(name, "name") }?;
        let kind: TransportKind = name.parse()?;
        // SAFETY: the caller guarantees NULL or a live pp_options.
        let options = unsafe { options_mut(options) }?;
        options.options.transport = kind;
        options.transport_chosen = true;
        Ok(())
    })
}

/// Chooses how this side waits for the other: "auto" (the default: spin while the other side
/// answers within the spin (50 µs) —
/// yield the CPU once and sleep while spinning does not pay — both sides on one core, or other work holding
/// the cores — spin again now and then to see whether it pays again, and move this side's
/// thread to an idle CPU when it keeps handing its core to the other), "auto:stay" (auto, leaving
/// the thread where the scheduler puts it), "block" (sleep in the kernel: least CPU), "spin" (poll without sleeping;
/// burns a core), "hybrid" (spin 50 µs, then block) or "hybrid:DURATION" (e.g.
/// "hybrid:20us", "hybrid:1ms").
///
/// Returns `PP_OK`, or `PP_EINVAL` when `options` or `spec` is NULL or `spec` does not
/// parse (options unchanged).
///
/// # Safety
/// `options` is NULL or a live `pp_options`; `spec` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_options_set_wait(
    options: *mut pp_options,
    spec: *const c_char,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a NUL-terminated string.
        let spec = unsafe { ffi::c_str(spec, "spec") }?;
        let wait: Wait = spec.parse()?;
        // SAFETY: the caller guarantees NULL or a live pp_options.
        unsafe { options_mut(options) }?.options.wait = wait;
        Ok(())
    })
}

/// Sets the deadline, in nanoseconds, for the handshake and for each reply (client), or for
/// the client's HELLO and for the rest of a frame once it has begun (server). 0 means no
/// deadline: wait for ever. Default: 10 s.
///
/// Returns `PP_OK`, or `PP_EINVAL` when `options` is NULL.
///
/// # Safety
/// `options` is NULL or a live `pp_options`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_options_set_timeout_ns(options: *mut pp_options, ns: u64) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a live pp_options.
        unsafe { options_mut(options) }?.options.timeout = timeout_of(ns);
        Ok(())
    })
}

/// Sets the largest payload, in bytes, this side accepts (announced in its HELLO). Default:
/// 64 MiB.
///
/// Returns `PP_OK`, or `PP_EINVAL` when `options` is NULL or `bytes` is 0.
///
/// # Safety
/// `options` is NULL or a live `pp_options`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_options_set_max_frame_bytes(
    options: *mut pp_options,
    bytes: u64,
) -> c_int {
    guard(|| {
        if bytes == 0 {
            return Err(invalid("bytes", "must be at least 1"));
        }
        // SAFETY: the caller guarantees NULL or a live pp_options.
        unsafe { options_mut(options) }?.options.max_frame_bytes = bytes;
        Ok(())
    })
}

/// Sets the bytes per direction of a shared-memory transport (client only; the server maps
/// the region it is given). Default: 1 MiB. A size the transport cannot use is refused when
/// spawning, with `PP_EPROTO` and a message naming the limits.
///
/// Returns `PP_OK`, or `PP_EINVAL` when `options` is NULL or `bytes` is 0.
///
/// # Safety
/// `options` is NULL or a live `pp_options`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_options_set_shm_bytes(options: *mut pp_options, bytes: usize) -> c_int {
    guard(|| {
        if bytes == 0 {
            return Err(invalid("bytes", "must be at least 1"));
        }
        // SAFETY: the caller guarantees NULL or a live pp_options.
        unsafe { options_mut(options) }?.options.shm_capacity = bytes;
        Ok(())
    })
}

/// Sets the handler name a server announces in its HELLO (`handler=NAME`, shown by `peer`'s
/// report). Servers only; spawning ignores it. Default: "c-f64" or "c-f32", and for
/// `pp_serve_stdio_functions` the name given to `pp_functions_new`, which this replaces. The
/// string is copied.
///
/// Returns `PP_OK`, or `PP_EINVAL` when `options` or `name` is NULL, or `name` is empty,
/// longer than 256 bytes, not UTF-8, or contains a line break (HELLO's separator).
///
/// # Safety
/// `options` is NULL or a live `pp_options`; `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_options_set_handler_name(
    options: *mut pp_options,
    name: *const c_char,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a NUL-terminated string.
        let name = handler_name(unsafe { ffi::c_str(name, "name") }?, "name")?;
        // SAFETY: the caller guarantees NULL or a live pp_options.
        unsafe { options_mut(options) }?.handler_name = Some(name);
        Ok(())
    })
}

/// `name` as a handler name a HELLO can carry: 1 to 256 bytes without a line break.
pub(crate) fn handler_name(name: &str, argument: &str) -> Result<String, Failure> {
    if name.is_empty() || name.len() > 256 || name.contains(['\n', '\r']) {
        let reason = format!("{name:?} is empty, longer than 256 bytes or has a line break");
        return Err(invalid(argument, &reason));
    }
    Ok(name.to_owned())
}

/// 0 ns: no deadline.
pub(crate) fn timeout_of(ns: u64) -> Option<Duration> {
    (ns != 0).then(|| Duration::from_nanos(ns))
}
