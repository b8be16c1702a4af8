//! The `peer` command's library: what the binary runs besides the server loop, on top of the
//! [`peerpipe`] core, which depends on nothing here.
//!
//! - [`report`]: the latency report — measures the matrix against a raw-bytes baseline
//!   ([`baseline`], paired by [`pairing`]), renders the table and verdict, exports
//!   JSON/CSV/SVG, compares runs.
//! - [`soak`]: `peer soak` — client–server pairs exchanging random arrays for a long time,
//!   every reply verified bit for bit, memory and descriptors compared at start and end.
//! - [`baseline`]: the raw-bytes floor — the same pair of processes moving the same bytes
//!   with plain `read`/`write` — and its server (`peer --role server --raw-echo`).
//! - [`pairing`]: paired, interleaved rounds of a floor and the calls measured against it,
//!   and the ratio with its confidence interval.
//! - [`paired_rhs`]: a `RemoteRhs` paired with a raw floor in time (the Lorenz-96 example's
//!   `overhead_ratio`).
//! - [`rng`]: the deterministic random numbers of the bootstrap in [`pairing`], of `peer
//!   soak` and of the report's order of measurement.
//! - [`interrupt`]: SIGINT, SIGTERM and SIGHUP as a flag that ends a report or a soak early,
//!   keeping what it measured.
//!
//! The library below ([`peerpipe`]) is the transport and knows nothing of these; what the
//! shared-memory primitives cost is measured by the `peerpipe-probe` crate (`cli/probe/`).
//!
//! `bin/peer.rs` parses the command line and dispatches to these and to
//! [`peerpipe::server`]. No `unsafe` code: what needs it lives in the core, or in the probe.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod baseline;
pub mod interrupt;
pub mod paired_rhs;
pub mod pairing;
pub mod report;
pub mod rng;
pub mod soak;
