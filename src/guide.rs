//! The project's documents, readable in the crate documentation; in a checkout (or on a code
//! host) they are the files `docs/PROTOCOL.md`, `docs/PERFORMANCE.md`, `docs/GUARANTEES.md`,
//! `docs/REPORT.md`, `docs/USAGE.md` and `docs/WAITING.md`, which the README links to.
//!
//! - [`protocol`]: wire format v1, the whole contract for a peer in another language;
//! - [`performance`]: what a round trip costs, which wait and transport, how to measure it on
//!   your machine (the experiments behind the figures are in `docs/experiments/`);
//! - [`guarantees`]: every promise, with the test behind it;
//! - [`report`]: the report's flags, its JSON and how its paired ratios are taken;
//! - [`usage`]: the library from Rust, Python and C;
//! - [`waiting`]: how the default wait, `auto`, decides to spin, yield, sleep or move.
//!
//! Other files the README links to are source files of the repository, not part of this
//! documentation: `examples/custom_server.rs` (a server of your own), `clients/python/`
//! (pure-Python clients written from the protocol alone), `python/` (the Python package and
//! `python/examples/lorenz96_solve_ivp.py`), and `capi/` (the C ABI: `capi/include/peerpipe.h`,
//! `capi/examples/client.c`, `server.c`, `client.f90`).

#[doc = include_str!("../docs/PROTOCOL.md")]
pub mod protocol {}

#[doc = include_str!("../docs/PERFORMANCE.md")]
pub mod performance {}

#[doc = include_str!("../docs/GUARANTEES.md")]
pub mod guarantees {}

#[doc = include_str!("../docs/REPORT.md")]
pub mod report {}

#[doc = include_str!("../docs/USAGE.md")]
pub mod usage {}

#[doc = include_str!("../docs/WAITING.md")]
pub mod waiting {}
