//! The C ABI of peerpipe: `libpeerpipe.so`, `libpeerpipe.a` and `include/peerpipe.h`.
//!
//! A thin layer: each function converts its arguments, calls the `peerpipe` crate, and
//! converts the result into a return code (and this thread's last error message). Nothing here
//! speaks the protocol itself.
//!
//! - [`error`]: the `PP_E*` codes, `pp_strerror`, `pp_last_error`, and the mapping from
//!   [`peerpipe::Error`] to a code (its message is kept verbatim).
//! - `ffi`: the one function every export runs its body through (`guard`, or `guard_or` for
//!   one that returns a pointer or a count: no panic crosses into C, the code and message are
//!   recorded), and the checked conversions of C pointers, lengths and strings into Rust
//!   values.
//! - [`options`]: `pp_options`, the settings of spawning and serving.
//! - [`client`]: `pp_peer` — spawn, call, timeout, close.
//! - [`parts`]: messages of several typed parts — `pp_part`, `pp_call_parts` (the reply into
//!   the caller's buffers), `pp_call_parts_any` (a reply of any shape).
//! - [`server`]: `pp_serve_stdio_f64`/`_f32` — a C function as the handler of a server
//!   process.
//! - [`functions`]: `pp_functions` — C functions served by name (`pp_serve_stdio_functions`),
//!   each reading a request's parts (`pp_call`) and writing its reply's (`pp_reply`).
//!
//! The header is generated from these files by cbindgen (`cargo run -p peerpipe-capi
//! --example gen_header`); `tests/header.rs` fails when it is out of date.
//!
//! Every `unsafe` block is at the FFI boundary and carries a `// SAFETY:` comment; each
//! exported function's `# Safety` section is what the caller must guarantee.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![allow(non_camel_case_types)]

// The library wraps peerpipe's Linux-only transports (memfd, futex, pipe2, F_SETPIPE_SZ,
// vmsplice).
#[cfg(not(target_os = "linux"))]
compile_error!(
    "libpeerpipe (the C ABI of peerpipe) supports Linux only: peerpipe's transports use \
     memfd_create, futex, pipe2, F_SETPIPE_SZ and vmsplice, which this target does not have"
);

pub mod client;
pub mod error;
pub mod fanout;
mod ffi;
pub mod functions;
pub mod options;
pub mod parts;
pub mod server;
pub mod session;
