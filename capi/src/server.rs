//! `pp_serve_stdio_*`: a C function as the handler of a server process.

use std::ffi::{c_int, c_void};

use peerpipe::frame::Dtype;
use peerpipe::parts::PartsOut;
use peerpipe::server::{self, Array, Handler, Request, Response, ServeOptions, StdioOptions};
use peerpipe::zerocopy;

use crate::error::invalid;
use crate::ffi::{self, guard};
use crate::options::pp_options;

/// A C function answering one f64 request: read the `n` doubles at `in`, write exactly `n`
/// doubles to `out`, return 0. Any other return value makes the server answer this request
/// with an ERROR frame ("handler NAME returned CODE"); the client gets `PP_EREMOTE` and the
/// conversation goes on.
///
/// `user` is the pointer given to `pp_serve_stdio_f64*`, passed through untouched. `in` is
/// 8-byte aligned and valid only during the call; `out` holds `n` doubles whose contents are
/// unspecified on entry (the previous reply's, or zeros); both are non-NULL but need not be
/// dereferenceable when `n` is 0. `in` and `out` do not overlap. The handler runs on the
/// thread that called `pp_serve_stdio_*`, one request at a time; it may call `pp_*`
/// functions, but must not unwind (C++ exceptions, longjmp) out of the call.
pub type pp_handler_f64 = Option<
    unsafe extern "C" fn(user: *mut c_void, r#in: *const f64, n: usize, out: *mut f64) -> c_int,
>;

/// `pp_handler_f64` for f32 requests: `n` floats in, exactly `n` floats out; `in` is 4-byte
/// aligned.
pub type pp_handler_f32 = Option<
    unsafe extern "C" fn(user: *mut c_void, r#in: *const f32, n: usize, out: *mut f32) -> c_int,
>;

/// Serves this process's stdin and stdout as a peerpipe server, answering each f64 request
/// with `handler`, until the client says BYE or closes the connection; with default options
/// (the transport the client chose: a shared region handed over as stdin, else a pipe; auto
/// wait, 10 s frame timeout, 64 MiB frames, handler name "c-f64" in the HELLO). Requests of
/// another dtype are answered with an ERROR frame.
///
/// The process must have been started by a peerpipe client (`pp_spawn*`, `peer --spawn
/// CMD`, `Peer::spawn`). Call it once per process: it moves the protocol onto private
/// descriptors and then points fd 1 at stderr and fd 0 at /dev/null, so a stray `printf`
/// lands in the log instead of corrupting the stream. SIGPIPE is set to ignored when it has
/// its default action, as in `pp_spawn`.
///
/// Blocks until the conversation ends; between requests it waits without a deadline.
///
/// Returns `PP_OK` after BYE or a clean end of stream; `PP_EINVAL` when `handler` is NULL;
/// `PP_EPROTO` when the client breaks the protocol (it was sent an ERROR frame first) or the
/// stdin is not what the transport needs; `PP_ETIMEDOUT` when a frame stops half-way for
/// longer than the timeout; `PP_ECLOSED` when the client goes away while a reply is written;
/// `PP_EIO` when a descriptor cannot be duplicated, read or written.
///
/// # Safety
/// `handler` is NULL or a function honouring the `pp_handler_f64` contract for this `user`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_serve_stdio_f64(handler: pp_handler_f64, user: *mut c_void) -> c_int {
    // SAFETY: the caller's guarantees are those of the _with variant with NULL options.
    unsafe { pp_serve_stdio_f64_with(std::ptr::null(), handler, user) }
}

/// `pp_serve_stdio_f64` with options (NULL: the defaults): the transport (unset: the one the
/// client chose; "tcp" must be set, as a tcp client's stdin is a pipe), the wait strategy, the frame timeout, the
/// largest request accepted, and the handler name announced in HELLO.
///
/// Errors as `pp_serve_stdio_f64`; with a shared-memory transport `PP_EPROTO` when stdin is
/// not a region of that kind (its message says who must start the server, and how).
///
/// # Safety
/// As `pp_serve_stdio_f64`; `options` is NULL or a live `pp_options`, not changed during the
/// call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_serve_stdio_f64_with(
    options: *const pp_options,
    handler: pp_handler_f64,
    user: *mut c_void,
) -> c_int {
    guard(|| {
        let function = handler.ok_or_else(|| invalid("handler", "is NULL"))?;
        // SAFETY: the caller guarantees NULL or a live, unchanging pp_options.
        let options = unsafe { pp_options::or_default(options) };
        let name = options.handler_name.clone().unwrap_or_else(|| "c-f64".into());
        let mut handler = CHandler { name, function, user, input: Vec::new(), output: Vec::new() };
        serve_stdio(&options, &mut handler)
    })
}

/// `pp_serve_stdio_f64` for f32 requests (handler name "c-f32"); see there.
///
/// # Safety
/// `handler` is NULL or a function honouring the `pp_handler_f32` contract for this `user`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_serve_stdio_f32(handler: pp_handler_f32, user: *mut c_void) -> c_int {
    // SAFETY: the caller's guarantees are those of the _with variant with NULL options.
    unsafe { pp_serve_stdio_f32_with(std::ptr::null(), handler, user) }
}

/// `pp_serve_stdio_f32` with options; see `pp_serve_stdio_f64_with`.
///
/// # Safety
/// As `pp_serve_stdio_f32`; `options` is NULL or a live `pp_options`, not changed during the
/// call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_serve_stdio_f32_with(
    options: *const pp_options,
    handler: pp_handler_f32,
    user: *mut c_void,
) -> c_int {
    guard(|| {
        let function = handler.ok_or_else(|| invalid("handler", "is NULL"))?;
        // SAFETY: the caller guarantees NULL or a live, unchanging pp_options.
        let options = unsafe { pp_options::or_default(options) };
        let name = options.handler_name.clone().unwrap_or_else(|| "c-f32".into());
        let mut handler = CHandler { name, function, user, input: Vec::new(), output: Vec::new() };
        serve_stdio(&options, &mut handler)
    })
}

/// Serves stdio with `handler` through the crate's one stdio server
/// ([`server::serve_stdio`]): the options' transport when one was set, else the client's.
pub(crate) fn serve_stdio(
    options: &pp_options,
    handler: &mut dyn Handler,
) -> Result<(), crate::error::Failure> {
    ffi::ignore_sigpipe_if_default();
    server::serve_stdio(handler, &stdio_options(options))?;
    Ok(())
}

/// The crate's options of a stdio server from C's `options`.
pub(crate) fn stdio_options(options: &pp_options) -> StdioOptions {
    let settings = &options.options;
    StdioOptions {
        transport: options.transport_chosen.then_some(settings.transport),
        wait: settings.wait,
        serve: ServeOptions {
            max_frame_bytes: settings.max_frame_bytes,
            frame_timeout: settings.timeout,
            ..ServeOptions::default()
        },
        ..StdioOptions::default()
    }
}

/// An element type a C handler can take: f64 or f32.
trait Element: Copy + Default {
    const DTYPE: Dtype;
    fn view(payload: &[u8]) -> Option<&[Self]>;
    fn decode(array: &Array<'_>, into: &mut Vec<Self>) -> Result<(), String>;
    fn response(values: &[Self]) -> Response<'_>;
}

impl Element for f64 {
    const DTYPE: Dtype = Dtype::F64;
    fn view(payload: &[u8]) -> Option<&[f64]> {
        zerocopy::view_f64(payload)
    }
    fn decode(array: &Array<'_>, into: &mut Vec<f64>) -> Result<(), String> {
        array.decode_f64_into(into)
    }
    fn response(values: &[f64]) -> Response<'_> {
        Response::F64(values)
    }
}

impl Element for f32 {
    const DTYPE: Dtype = Dtype::F32;
    fn view(payload: &[u8]) -> Option<&[f32]> {
        zerocopy::view_f32(payload)
    }
    fn decode(array: &Array<'_>, into: &mut Vec<f32>) -> Result<(), String> {
        into.resize(array.count as usize, 0.0);
        peerpipe::codec::decode_into(array.payload, peerpipe::ValuesMut::F32(into))
            .map_err(|e| e.to_string())
    }
    fn response(values: &[f32]) -> Response<'_> {
        Response::F32(values)
    }
}

type HandlerFn<T> = unsafe extern "C" fn(*mut c_void, *const T, usize, *mut T) -> c_int;

/// A C function and its user pointer as a [`Handler`].
struct CHandler<T: Element> {
    name: String,
    function: HandlerFn<T>,
    user: *mut c_void,
    /// The request decoded, when it cannot be viewed in place (big-endian targets).
    input: Vec<T>,
    output: Vec<T>,
}

impl<T: Element> Handler for CHandler<T> {
    fn name(&self) -> &str {
        &self.name
    }

    /// One array of the handler's dtype (a DATA request, or the same as one part); other
    /// requests get ERROR.
    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        _: &mut PartsOut,
    ) -> Result<Response<'a>, String> {
        let array = request.array()?;
        array.expect_dtype(T::DTYPE)?;
        let n = array.count as usize;
        let input: &[T] = match T::view(array.payload) {
            Some(view) => view,
            None => {
                T::decode(&array, &mut self.input)?;
                &self.input
            }
        };
        self.output.resize(n, T::default());
        // SAFETY: `input` holds `n` aligned elements and `output` `n` writable ones, in two
        // different allocations, both valid for the whole call; the caller of
        // pp_serve_stdio_* guaranteed that `function` honours the handler contract for
        // `user`.
        let code =
            unsafe { (self.function)(self.user, input.as_ptr(), n, self.output.as_mut_ptr()) };
        if code != 0 {
            return Err(format!("handler {} returned {code}", self.name));
        }
        Ok(T::response(&self.output))
    }
}
