//! The `peer` command's library: what the binary runs besides the server loop, on top of the
//! [`peerpipe`] core, which depends on nothing here.
//!
//! - [`report`]: the latency report — measures the matrix against a raw-bytes baseline
//!   ([`peerpipe::baseline`], paired by [`peerpipe::pairing`]), renders the table and
//!   verdict, exports JSON/CSV/SVG, compares runs.
//! - [`soak`]: `peer soak` — client–server pairs exchanging random arrays for a long time,
//!   every reply verified bit for bit, memory and descriptors compared at start and end.
//!
//! `bin/peer.rs` parses the command line and dispatches to these and to
//! [`peerpipe::server`]. No `unsafe` code: what needs it lives in the core.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod report;
pub mod soak;
