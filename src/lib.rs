// The README's reference links point at relative paths, which work on a code host. Defined
// here first, the same labels point into this documentation instead (a label's first
// definition wins), so the README's links also work in rustdoc.
#![doc = "[docs/PROTOCOL.md]: crate::guide::protocol"]
#![doc = "[docs/PROTOCOL.md#13-shared-memory-transports-local-only]: crate::guide::protocol#13-shared-memory-transports-local-only"]
#![doc = "[docs/PERFORMANCE.md]: crate::guide::performance"]
#![doc = "[docs/GUARANTEES.md]: crate::guide::guarantees"]
#![doc = "[docs/REPORT.md]: crate::guide::report"]
#![doc = "[docs/USAGE.md]: crate::guide::usage"]
#![doc = "[docs/USAGE.md#python]: crate::guide::usage#python"]
#![doc = "[docs/USAGE.md#c-and-fortran]: crate::guide::usage#c-and-fortran"]
#![doc = "[docs/USAGE.md#where-things-are]: crate::guide::usage#where-things-are"]
#![doc = "[docs/WAITING.md]: crate::guide::waiting"]
#![doc = "[docs/experiments/]: crate::guide"]
#![doc = "[examples/custom_server.rs]: crate::server::Handler"]
#![doc = "[clients/]: crate::guide"]
#![doc = "[clients/python/]: crate::guide"]
#![doc = "[clients/python/python_client.py]: crate::guide"]
#![doc = "[clients/python/python_shm_client.py]: crate::guide"]
#![doc = "[python/examples/lorenz96_solve_ivp.py]: crate::guide"]
#![doc = "[capi/include/peerpipe.h]: crate::guide"]
#![doc = "[capi/examples/server.c]: crate::guide"]
#![doc = "[capi/examples/client.f90]: crate::guide"]
#![doc = ""]
#![doc = include_str!("../README.md")]
//!
//! ## Architecture
//!
//! The organisation is a stack; data flows one way down and one way back:
//!
//! - [`frame`]: wire format v1 — the 32-byte header, padding, HELLO payloads. Pure.
//! - [`codec`]: the explicit little-endian codec, with f64↔f32 narrowing and widening and rayon
//!   for large arrays. Pure; the oracle for everything else.
//! - [`zerocopy`]: the caller's slice as the payload (bytemuck casts), with checked fallbacks.
//! - [`parts`]: PARTS payloads — several typed parts per message and the function a request
//!   names; the part table checked whole before any value is read. Pure.
//! - [`transport`]: frames over a [`transport::Link`] — a pair of non-blocking pipes, a
//!   shared-memory region (`shm-sem`: slots and semaphores; `shm-ring`: lock-free rings and
//!   futexes), or a TCP connection set up through the server's stdio (`tcp`, for ssh) — one
//!   vectored write out, read straight into the destination in; the
//!   [`transport::Wait`] strategies (auto, the default, which learns per connection whether spinning pays; block,
//!   spin, hybrid) with nanosecond deadlines.
//! - [`peer`]: the client — spawns a server, HELLO, typed calls with per-call timing, BYE,
//!   reaping.
//! - [`launcher`]: launchers that relay stdio (`srun`), refused for anything but tcp on both
//!   sides.
//! - [`process`]: spawning a server on two pipes (or a pipe and a shared region); terminating
//!   and reaping it.
//! - [`server`]: the loop that answers requests with any [`server::Handler`];
//!   [`handlers`] holds `echo`, `echo-raw` and `lorenz96`.
//! - [`ode`]: the server side of an ODE call — the functions `rhs` and `jac` and the decoding
//!   of their parts (`t`, `y`, the parameters) — below both [`handlers`] and [`rhs`].
//! - [`fanout`]: many peers called together — every request sent before any reply is awaited,
//!   each reply into the caller's buffer, one server's failure an error naming it.
//! - [`rhs`]: a remote right-hand side for integrators — `eval(&state, &mut derivative)`.
//! - [`stats`]: the nanosecond histogram and the nearest-rank quantile every figure uses.
//! - [`lorenz96`]: the model's right-hand side in its one fixed evaluation order.
//! - [`clock`]: the timestamps of each call's split — the CPU's time-stamp counter where the
//!   kernel keeps time with it, `Instant` elsewhere.
//! - [`units`]: durations as people type them (`250ms`).
//! - [`guide`]: the protocol, performance and guarantees documents (`docs/*.md`).
//! - [`error`]: the one error enum, whose messages name expected and found values.
//! - `wire` (private): the header's one-byte enums `Kind` and `Dtype` (reached as
//!   [`frame::Kind`], [`frame::Dtype`]) and the part table's vocabulary (reached through
//!   [`parts`]: its limits, `PartDtype`, `Shape`, `TableFault`), below `error`, `frame` and
//!   `parts` so that none imports another back.
//!
//! The `peer` command — the server it runs, the latency report, `peer compare` and `peer
//! soak` — is the `peerpipe-cli` package in `cli/`, which depends on this crate; this crate
//! depends on none of its tools (argument parsing, progress bars, plots, JSON), and holds
//! none of its measuring: the raw-bytes floor and its server, the paired rounds and their
//! ratios, the random order of measurement, the cost of the primitives and the signals that
//! end a run early are the CLI's (`peerpipe_cli`, and its `peerpipe-probe` crate).
//!
//! `unsafe` code lives in one private module, `sys` (the shared mapping, atomics inside it,
//! process-shared semaphores, futexes, `rdtsc`), every block with a `// SAFETY:` comment; the crate
//! root denies `unsafe_code` everywhere else.
#![deny(unsafe_code)]
#![deny(missing_docs)]

// The transports use Linux-only calls: memfd_create, futex, pipe2, F_SETPIPE_SZ, vmsplice.
#[cfg(not(target_os = "linux"))]
compile_error!(
    "peerpipe supports Linux only: its transports use memfd_create, futex, pipe2, \
     F_SETPIPE_SZ and vmsplice, which this target does not have"
);

pub mod clock;
pub mod codec;
pub mod error;
pub mod fanout;
pub mod frame;
pub mod guide;
pub mod handlers;
pub mod launcher;
pub mod lorenz96;
pub mod ode;
pub mod parts;
pub mod peer;
pub mod process;
pub mod rhs;
pub mod server;
pub mod stats;
mod sys;
pub mod transport;
pub mod units;
mod wire;
pub mod zerocopy;

pub use codec::{Values, ValuesMut};
pub use error::{Error, ErrorKind, Result};
pub use peer::{CallTiming, DataPath, Options, Peer};
pub use transport::{TransportKind, Wait};
