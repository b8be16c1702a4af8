//! `pp_functions`: a server of C functions by name (`rhs`, `jac`, `observe`), each called
//! with a PARTS request's parts (`pp_call`) and writing its reply's parts (`pp_reply`);
//! served through the crate's `Functions` and its one stdio server.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};

use peerpipe::parts::{MAX_PARTS, Part, PartDtype, PartsOut, Shape};
use peerpipe::server::{Functions, Handler, Request, Response};

use crate::error::{Failure, PP_EINVAL, invalid};
use crate::ffi::{self, guard, guard_or};
use crate::options::{handler_name, pp_options};
use crate::parts::{
    NativeParts, PP_DTYPE_BYTES, PP_DTYPE_F32, PP_DTYPE_F64, PP_DTYPE_I64, checked_shape, pp_part,
};
use crate::server::serve_stdio;

/// Functions a server serves by name, announced in its HELLO (`functions=rhs,jac`). Opaque:
/// a Rust `Box` holding the crate's `Functions`. Made by `pp_functions_new`, filled by
/// `pp_functions_add`, served by `pp_serve_stdio_functions`, freed by `pp_functions_free`.
///
/// Thread-safety: a `pp_functions` may be handed from one thread to another, but must not be
/// used by two threads at once.
pub struct pp_functions {
    functions: Functions,
}

/// The request a function is called with: its parts, read with `pp_call_count`,
/// `pp_call_part` and `pp_call_part_f64`. Opaque; valid only during the call, as are the
/// values it points to.
pub struct pp_call {
    /// The function's name, for messages.
    function: String,
    parts: NativeParts,
    /// The message of the last accessor that failed during the call: the ERROR's message
    /// when the function then returns nonzero without one of its own.
    failure: Cell<Option<String>>,
}

/// The reply a function writes: parts made with `pp_reply_part`, `pp_reply_f64`,
/// `pp_reply_f64_matrix`, `pp_reply_f32`, `pp_reply_i64` or `pp_reply_bytes`, in the order
/// they are made, or an ERROR (`pp_reply_error`). Opaque; valid only during the call.
///
/// Each part is a buffer of its own, kept from call to call (a warm server allocates
/// nothing): it stays where it is while later parts are made, until the function returns.
/// The library then copies the parts into the reply it sends.
pub struct pp_reply {
    /// The function's name, for messages.
    function: String,
    buffers: Vec<Vec<u64>>,
    shapes: Vec<Shape>,
    /// The ERROR to send instead of the parts: `pp_reply_error`'s message, or the first
    /// failure to make a part.
    error: Option<String>,
}

/// A function of a `pp_functions` server: reads the request's parts from `call`, writes the
/// reply's parts into `reply`, and returns 0. A nonzero return value makes the server answer
/// this request with an ERROR frame instead, whose message is the one given to
/// `pp_reply_error`, else that of the last `pp_call_*` accessor that failed during the call,
/// else "function NAME returned CODE"; the client gets `PP_EREMOTE` with it and the
/// conversation goes on. (`pp_reply_error`, or a failure to make a reply part, makes the
/// reply an ERROR whatever the function returns.)
///
/// `user` is the pointer given to `pp_functions_add`, passed through untouched. `call` and
/// `reply`, and every pointer read from them, are valid only until the function returns.
/// The function runs on the thread that called `pp_serve_stdio_functions`, one request at a
/// time; it may call `pp_*` functions — but not `pp_functions_*` or `pp_serve_stdio_*` on the
/// `pp_functions` being served — and must not unwind (C++ exceptions, longjmp) out of the
/// call.
pub type pp_function = Option<
    unsafe extern "C" fn(user: *mut c_void, call: *const pp_call, reply: *mut pp_reply) -> c_int,
>;

type FunctionPtr = unsafe extern "C" fn(*mut c_void, *const pp_call, *mut pp_reply) -> c_int;

/// A C function with its user pointer, and the call and reply it is handed, kept from
/// request to request.
struct Bound {
    function: FunctionPtr,
    user: *mut c_void,
    call: pp_call,
    reply: pp_reply,
}

// SAFETY: a `Bound` moves between threads only inside its `pp_functions`, which C may hand
// to another thread but never use from two at once (its documented contract). Its pointers
// are `user`, which this library never dereferences but passes to the C function, on the
// thread that serves (the `pp_function` contract), and the parts of the request being
// answered, which are set before and cleared after each call of the function.
unsafe impl Send for Bound {}

impl Bound {
    /// Answers one request: the C function reads `call`'s parts and makes the reply's, which
    /// are then copied into `out`; or the message of the ERROR to send.
    fn answer(&mut self, call: Request<'_>, out: &mut PartsOut) -> Result<(), String> {
        self.call.parts.load(&call.parts);
        self.call.failure.set(None);
        self.reply.clear();
        // SAFETY: `call` and `reply` are live and distinct for the whole call, and the parts
        // `call` points at (the request's payload) outlive it; whoever passed `function` to
        // pp_functions_add guaranteed that it honours the pp_function contract for `user`.
        let code = unsafe { (self.function)(self.user, &self.call, &mut self.reply) };
        self.call.parts.clear();
        let failure = self.call.failure.take();
        self.reply.finish(code, failure, out)
    }
}

impl pp_call {
    /// A call of `function`, pointing at no parts yet.
    pub(crate) fn named(function: &str) -> pp_call {
        pp_call {
            function: function.to_owned(),
            parts: NativeParts::default(),
            failure: Cell::new(None),
        }
    }

    /// Points at the parts of `call` (valid while its payload is), named as it is.
    pub(crate) fn load(&mut self, call: &Request<'_>) {
        self.function.clear();
        self.function.push_str(call.function);
        self.parts.load(&call.parts);
        self.failure.set(None);
    }

    /// Points at no parts; returns the last accessor's failure.
    pub(crate) fn unload(&mut self) -> Option<String> {
        self.parts.clear();
        self.failure.take()
    }
}

impl pp_reply {
    /// An empty reply of `function` (named in messages).
    pub(crate) fn named(function: &str) -> pp_reply {
        pp_reply {
            function: function.to_owned(),
            buffers: Vec::new(),
            shapes: Vec::new(),
            error: None,
        }
    }

    /// Renames the reply for the call it answers and empties it.
    pub(crate) fn start(&mut self, function: &str) {
        self.function.clear();
        self.function.push_str(function);
        self.clear();
    }

    fn clear(&mut self) {
        self.shapes.clear();
        self.error = None;
    }

    /// A new zeroed part of `shape`, in a buffer of its own; its address stays valid until
    /// the function returns.
    fn add(&mut self, shape: Shape) -> Result<*mut c_void, String> {
        if self.shapes.len() >= MAX_PARTS {
            return Err(format!("a reply has at most {MAX_PARTS} parts"));
        }
        let words = shape
            .byte_len()
            .and_then(|bytes| usize::try_from(bytes.div_ceil(8)).ok())
            .ok_or_else(|| format!("a part of {shape} is too large"))?;
        let index = self.shapes.len();
        if self.buffers.len() <= index {
            self.buffers.push(Vec::new());
        }
        let buffer = &mut self.buffers[index];
        buffer.clear();
        buffer
            .try_reserve_exact(words)
            .map_err(|e| format!("no memory for a part of {shape}: {e}"))?;
        buffer.resize(words, 0);
        self.shapes.push(shape);
        Ok(buffer.as_mut_ptr().cast())
    }

    /// The reply to send: the parts made, copied into `out`, or an ERROR's message.
    pub(crate) fn finish(
        &mut self,
        code: c_int,
        failure: Option<String>,
        out: &mut PartsOut,
    ) -> Result<(), String> {
        if let Some(message) = self.error.take() {
            return Err(message);
        }
        if code != 0 {
            return Err(
                failure.unwrap_or_else(|| format!("function {} returned {code}", self.function))
            );
        }
        for (&shape, words) in self.shapes.iter().zip(&self.buffers) {
            let n = shape.count as usize; // it was allocated
            let part = match shape.dtype {
                PartDtype::Bytes => Part::bytes(&bytemuck::cast_slice(words)[..n]),
                PartDtype::F32 => Part::f32(&bytemuck::cast_slice(words)[..n]),
                PartDtype::F64 => Part::f64(&bytemuck::cast_slice(words)[..n]),
                PartDtype::I64 => Part::i64(&bytemuck::cast_slice(words)[..n]),
            };
            let part = match shape.cols {
                0 => part,
                cols => part.matrix(cols as usize).map_err(|e| e.to_string())?,
            };
            out.push(part)?;
        }
        Ok(())
    }

    /// Records `failure` as the reason this reply is an ERROR (unless one is recorded
    /// already) and returns it.
    fn failed(&mut self, failure: Failure) -> Failure {
        if self.error.is_none() {
            self.error = Some(format!("function {}: {}", self.function, failure.message));
        }
        failure
    }
}

/// The crate's `Functions` announcing another handler name.
struct Renamed<'f> {
    name: &'f str,
    functions: &'f mut Functions,
}

impl Handler for Renamed<'_> {
    fn name(&self) -> &str {
        self.name
    }
    fn functions(&self) -> Vec<String> {
        self.functions.functions()
    }
    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        out: &mut PartsOut,
    ) -> Result<Response<'a>, String> {
        self.functions.handle(request, out)
    }
}

/// Makes a server of no functions yet, announcing `handler=NAME` in its HELLO, and stores it
/// in `*out`.
///
/// Ownership: the caller owns `*out` and frees it with `pp_functions_free`; `name` is copied.
///
/// Returns `PP_OK`, or `PP_EINVAL` when `name` or `out` is NULL, or `name` is empty, longer
/// than 256 bytes, not UTF-8 or has a line break (`*out` then unchanged).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `out` is NULL or points to writable storage for
/// one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_functions_new(
    name: *const c_char,
    out: *mut *mut pp_functions,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a NUL-terminated string.
        let name = handler_name(unsafe { ffi::c_str(name, "name") }?, "name")?;
        if out.is_null() {
            return Err(invalid("out", "is NULL"));
        }
        let functions = Box::new(pp_functions { functions: Functions::new(&name) });
        // SAFETY: `out` is non-NULL and the caller guarantees it is writable.
        unsafe { out.write(Box::into_raw(functions)) };
        Ok(())
    })
}

/// Adds `function` under `name`, called with `user` for every request that names it.
///
/// Returns `PP_OK`, or `PP_EINVAL` (`functions` unchanged) when `functions`, `name` or
/// `function` is NULL, `name` is not a function name (1 to 64 ASCII letters, digits and
/// `_ . : -`) or is taken already, or the server has 256 functions.
///
/// # Safety
/// `functions` is NULL or a live `pp_functions`, not in use by another thread nor being
/// served; `name` is NULL or a NUL-terminated string; `function` is NULL or honours the
/// `pp_function` contract for `user`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_functions_add(
    functions: *mut pp_functions,
    name: *const c_char,
    function: pp_function,
    user: *mut c_void,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a live pp_functions used by no one else.
        let functions =
            unsafe { functions.as_mut() }.ok_or_else(|| invalid("functions", "is NULL"))?;
        // SAFETY: the caller guarantees NULL or a NUL-terminated string.
        let name = unsafe { ffi::c_str(name, "name") }?;
        let function = function.ok_or_else(|| invalid("function", "is NULL"))?;
        let mut bound =
            Bound { function, user, call: pp_call::named(name), reply: pp_reply::named(name) };
        functions.functions.add(name, move |call, out| bound.answer(call, out))?;
        Ok(())
    })
}

/// Frees a server made by `pp_functions_new`, with its functions. NULL is a no-op.
///
/// # Safety
/// `functions` is NULL or a `pp_functions` from `pp_functions_new` not freed before, not in
/// use by another thread nor being served; it must not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_functions_free(functions: *mut pp_functions) {
    if !functions.is_null() {
        // SAFETY: made by Box::into_raw in pp_functions_new and, per the caller, not freed.
        drop(unsafe { Box::from_raw(functions) });
    }
}

/// Serves this process's stdin and stdout as a peerpipe server of `functions`, until the
/// client says BYE or closes the connection: each PARTS request naming one of them calls it;
/// a request naming another gets an ERROR listing them ("unknown function \"rhs2\": this
/// server has rhs, jac"), as does a DATA request or one naming no function, and the
/// conversation goes on. The HELLO announces the functions (`parts=1`,
/// `functions=rhs,jac`) and the name given to `pp_functions_new` (or the options' handler
/// name, when they set one).
///
/// `options` may be NULL (the defaults); otherwise as for `pp_serve_stdio_f64_with`: the
/// transport (unset: the one the client chose), the wait strategy, the frame timeout, the
/// largest request accepted. The process must have been started by a peerpipe client; call
/// this once per process (see `pp_serve_stdio_f64` for what it does to stdin, stdout and
/// SIGPIPE). Blocks until the conversation ends; between requests it waits without a
/// deadline.
///
/// Returns `PP_OK` after BYE or a clean end of stream; `PP_EINVAL` when `functions` is NULL
/// or serves no function yet; otherwise the codes of `pp_serve_stdio_f64`.
///
/// # Safety
/// `functions` is NULL or a live `pp_functions`, not in use by another thread; `options` is
/// NULL or a live `pp_options`, not changed during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_serve_stdio_functions(
    functions: *mut pp_functions,
    options: *const pp_options,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a live pp_functions used by no one else.
        let functions =
            unsafe { functions.as_mut() }.ok_or_else(|| invalid("functions", "is NULL"))?;
        let functions = &mut functions.functions;
        if functions.names().is_empty() {
            return Err(invalid("functions", "serves no function; add one with pp_functions_add"));
        }
        // SAFETY: the caller guarantees NULL or a live, unchanging pp_options.
        let options = unsafe { pp_options::or_default(options) };
        match options.handler_name.clone() {
            Some(name) => serve_stdio(&options, &mut Renamed { name: &name, functions }),
            None => serve_stdio(&options, functions),
        }
    })
}

/// The call behind `call`, refusing NULL.
///
/// # Safety
/// `call` is NULL or the `pp_call` a function was handed, during that call.
unsafe fn call_ref<'a>(call: *const pp_call) -> Result<&'a pp_call, Failure> {
    // SAFETY: the caller guarantees NULL or a live pp_call.
    unsafe { call.as_ref() }.ok_or_else(|| invalid("call", "is NULL"))
}

impl pp_call {
    /// Part `index`, or a failure naming the function and the parts there are, recorded as
    /// the call's last failure.
    fn part(&self, index: usize) -> Result<(Shape, pp_part), Failure> {
        self.parts.get(index).ok_or_else(|| {
            let n = self.parts.len();
            self.fail(format!("{}: expected a part {index}, found {n} parts", self.function))
        })
    }

    fn fail(&self, message: String) -> Failure {
        self.failure.set(Some(message.clone()));
        Failure { code: PP_EINVAL, message }
    }
}

/// The number of parts of the request. 0, with the reason in `pp_last_error()`, when `call`
/// is NULL.
///
/// # Safety
/// `call` is NULL or the `pp_call` a function was handed, during that call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_call_count(call: *const pp_call) -> usize {
    guard_or(0, || {
        // SAFETY: the caller's guarantee is passed on.
        Ok(unsafe { call_ref(call) }?.parts.len())
    })
}

/// Writes part `index` of the request to `*part`: its dtype (a `PP_DTYPE_*`), columns (0 for
/// a vector), count and a pointer to its values, in native byte order, aligned for the dtype
/// and non-NULL (not to be dereferenced when the count is 0). The values belong to the
/// request: read them, do not write or free them; they are valid until the function returns.
///
/// Returns `PP_OK`; `PP_EINVAL` when `call` or `part` is NULL, or when there is no part
/// `index` ("rhs: expected a part 2, found 2 parts", also the ERROR's message if the function
/// then returns nonzero), `*part` then unchanged.
///
/// # Safety
/// `call` is NULL or the `pp_call` a function was handed, during that call; `part` is NULL
/// or points to a writable `pp_part`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_call_part(
    call: *const pp_call,
    index: usize,
    part: *mut pp_part,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's guarantee is passed on.
        let call = unsafe { call_ref(call) }?;
        if part.is_null() {
            return Err(invalid("part", "is NULL"));
        }
        let (_, found) = call.part(index)?;
        // SAFETY: non-NULL, and the caller guarantees it writable.
        unsafe { part.write(found) };
        Ok(())
    })
}

/// Part `index` of the request as doubles: a pointer to its values (valid until the function
/// returns, not to be written), its element count written to `*count` when `count` is not
/// NULL. A matrix part is its rows one after another (`pp_call_part` gives its columns).
///
/// Returns NULL, with the reason in `pp_last_error()`, when `call` is NULL, there is no part
/// `index`, or it is not of `PP_DTYPE_F64` (`rhs: expected part 1 of f64 values, found
/// f32[3]`); that message is also the ERROR's if the function then returns nonzero. `*count`
/// is then unchanged.
///
/// # Safety
/// `call` is NULL or the `pp_call` a function was handed, during that call; `count` is NULL
/// or points to a writable `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_call_part_f64(
    call: *const pp_call,
    index: usize,
    count: *mut u64,
) -> *const f64 {
    guard_or(std::ptr::null(), || {
        // SAFETY: the caller's guarantee is passed on.
        let call = unsafe { call_ref(call) }?;
        let (shape, part) = call.part(index)?;
        if shape.dtype != PartDtype::F64 {
            let function = &call.function;
            let message = format!("{function}: expected part {index} of f64 values, found {shape}");
            return Err(call.fail(message));
        }
        if !count.is_null() {
            // SAFETY: non-NULL, and the caller guarantees it writable.
            unsafe { count.write(part.count) };
        }
        Ok(part.data.cast())
    })
}

/// Adds a part of `count` elements of `dtype` (a `PP_DTYPE_*`) to the reply — a vector when
/// `cols` is 0, else a row-major matrix of `cols` columns — and returns its values to fill:
/// zeroed, aligned for the dtype, non-NULL (not to be dereferenced when `count` is 0). The
/// buffer belongs to the reply and stays valid, where it is, until the function returns;
/// parts go out in the order they are made.
///
/// Returns NULL, with the reason in `pp_last_error()`, when `reply` is NULL, `dtype` is
/// unknown, `count` is not whole rows of `cols` or too large, the reply has 64 parts
/// already, or the memory cannot be had; the reply then becomes an ERROR with that message,
/// whatever the function returns.
///
/// # Safety
/// `reply` is NULL or the `pp_reply` a function was handed, during that call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_reply_part(
    reply: *mut pp_reply,
    dtype: c_int,
    cols: u32,
    count: u64,
) -> *mut c_void {
    guard_or(std::ptr::null_mut(), || {
        // SAFETY: the caller guarantees NULL or the live pp_reply of the current call.
        let reply = unsafe { reply.as_mut() }.ok_or_else(|| invalid("reply", "is NULL"))?;
        let shape = checked_shape(dtype, cols, count)
            .map_err(|(field, reason)| reply.failed(invalid(field, &reason)))?;
        reply.add(shape).map_err(|message| reply.failed(Failure { code: PP_EINVAL, message }))
    })
}

/// `pp_reply_part(reply, PP_DTYPE_F64, 0, count)`: a vector of `count` doubles to fill.
///
/// # Safety
/// As `pp_reply_part`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_reply_f64(reply: *mut pp_reply, count: u64) -> *mut f64 {
    // SAFETY: the caller's guarantee is passed on.
    unsafe { pp_reply_part(reply, PP_DTYPE_F64, 0, count) }.cast()
}

/// A row-major `rows` × `cols` matrix of doubles to fill (element (i, j) at `i * cols + j`):
/// `pp_reply_part(reply, PP_DTYPE_F64, cols, rows * cols)`; also NULL when `cols` is 0 or
/// above 2^32 - 1, or `rows * cols` overflows.
///
/// # Safety
/// As `pp_reply_part`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_reply_f64_matrix(
    reply: *mut pp_reply,
    rows: u64,
    cols: u64,
) -> *mut f64 {
    guard_or(std::ptr::null_mut(), || {
        // SAFETY: the caller guarantees NULL or the live pp_reply of the current call.
        let reply = unsafe { reply.as_mut() }.ok_or_else(|| invalid("reply", "is NULL"))?;
        let shape = Shape::matrix(PartDtype::F64, rows, cols).ok_or_else(|| {
            let reason = format!("no {rows} x {cols} matrix: 1 to 2^32-1 columns");
            reply.failed(invalid("cols", &reason))
        })?;
        let at = reply
            .add(shape)
            .map_err(|message| reply.failed(Failure { code: PP_EINVAL, message }))?;
        Ok(at.cast())
    })
}

/// `pp_reply_part(reply, PP_DTYPE_F32, 0, count)`: a vector of `count` floats to fill.
///
/// # Safety
/// As `pp_reply_part`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_reply_f32(reply: *mut pp_reply, count: u64) -> *mut f32 {
    // SAFETY: the caller's guarantee is passed on.
    unsafe { pp_reply_part(reply, PP_DTYPE_F32, 0, count) }.cast()
}

/// `pp_reply_part(reply, PP_DTYPE_I64, 0, count)`: a vector of `count` `int64_t` to fill.
///
/// # Safety
/// As `pp_reply_part`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_reply_i64(reply: *mut pp_reply, count: u64) -> *mut i64 {
    // SAFETY: the caller's guarantee is passed on.
    unsafe { pp_reply_part(reply, PP_DTYPE_I64, 0, count) }.cast()
}

/// `pp_reply_part(reply, PP_DTYPE_BYTES, 0, count)`: `count` raw bytes to fill.
///
/// # Safety
/// As `pp_reply_part`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_reply_bytes(reply: *mut pp_reply, count: u64) -> *mut u8 {
    // SAFETY: the caller's guarantee is passed on.
    unsafe { pp_reply_part(reply, PP_DTYPE_BYTES, 0, count) }.cast()
}

/// Makes this request's reply an ERROR frame with `message` (copied; invalid UTF-8 is
/// replaced), whatever the function returns and whatever parts it made: the client gets
/// `PP_EREMOTE` with "server error for seq N: MESSAGE", and the conversation goes on.
/// Typically `pp_reply_error(reply, "rhs: y has 3 values, expected 2"); return 1;`.
///
/// Returns `PP_OK`, or `PP_EINVAL` when `reply` or `message` is NULL.
///
/// # Safety
/// `reply` is NULL or the `pp_reply` a function was handed, during that call; `message` is
/// NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_reply_error(reply: *mut pp_reply, message: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or the live pp_reply of the current call.
        let reply = unsafe { reply.as_mut() }.ok_or_else(|| invalid("reply", "is NULL"))?;
        // SAFETY: the caller guarantees NULL or a NUL-terminated string.
        let message = unsafe { ffi::c_bytes(message, "message") }?;
        reply.error = Some(String::from_utf8_lossy(message).into_owned());
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply() -> pp_reply {
        pp_reply { function: "f".into(), buffers: Vec::new(), shapes: Vec::new(), error: None }
    }

    #[test]
    fn a_reply_part_stays_where_it_is_while_later_parts_are_made() {
        let mut reply = reply();
        let first: *mut f64 = reply.add(Shape::vector(PartDtype::F64, 3)).unwrap().cast();
        let values = [1.5, -0.0, f64::from_bits(0x7ff8_dead_0000_beef)];
        // SAFETY: `first` points to 3 zeroed f64 of the reply's own buffer.
        unsafe { first.copy_from_nonoverlapping(values.as_ptr(), 3) };
        for count in [1000, 100_000, 7] {
            reply.add(Shape::vector(PartDtype::Bytes, count)).unwrap();
        }
        let mut out = PartsOut::new();
        reply.finish(0, None, &mut out).unwrap();
        assert_eq!(out.shapes().len(), 4);
        // SAFETY: the buffer is still the reply's, 3 f64 long.
        let kept = unsafe { std::slice::from_raw_parts(first, 3) };
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(kept), bits(&values));
    }

    #[test]
    fn a_failed_part_or_a_nonzero_return_makes_the_reply_an_error_with_its_reason() {
        let mut out = PartsOut::new();
        let mut failed = reply();
        for _ in 0..MAX_PARTS {
            failed.add(Shape::vector(PartDtype::F64, 1)).unwrap();
        }
        let reason = failed.add(Shape::vector(PartDtype::F64, 1)).unwrap_err();
        failed.failed(Failure { code: PP_EINVAL, message: reason });
        assert_eq!(
            failed.finish(0, None, &mut out).unwrap_err(),
            "function f: a reply has at most 64 parts"
        );
        let mut plain = reply();
        assert_eq!(plain.finish(3, None, &mut out).unwrap_err(), "function f returned 3");
        let why = "f: expected part 0 of f64 values, found i64[2]".to_owned();
        assert_eq!(plain.finish(1, Some(why.clone()), &mut out).unwrap_err(), why);
    }
}
