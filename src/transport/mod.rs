//! Moving frames between two processes, and waiting for them.
//!
//! A [`Transport`] moves wire-format frames over a [`Link`], a byte stream in each direction
//! that can be read and written without waiting. Three links exist, chosen by
//! [`TransportKind`]:
//!
//! - `pipe` ([`pipe::PipeLink`]): two anonymous pipes, the default; works across `ssh`.
//! - `shm-sem` ([`shm::ShmLink`]): a memfd shared with the child, one slot per direction
//!   guarded by process-shared semaphores (empty / full).
//! - `shm-ring` ([`shm::ShmLink`]): a memfd shared with the child, a single-producer
//!   single-consumer ring per direction with futex wake-ups, so a writer fills while the
//!   reader drains.
//! - `tcp` ([`tcp::TcpLink`]): one TCP connection that the server listens for and announces,
//!   with a token, on its stdout (through `ssh`, say); its stdin and stdout stay open as the
//!   liveness channel. For `ssh` to start and authenticate, and the frames to go direct.
//!
//! Frames keep the same layout everywhere (the 32-byte header, payload and padding of wire
//! format v1 are what travels through the shared region too), so the frame logic here is
//! written once. Every wait is an explicit choice of [`Wait`] strategy bounded by a
//! [`Deadline`]:
//!
//! - [`Wait::Block`] sleeps in the kernel (`ppoll` on a pipe, a futex or semaphore wait on
//!   shared memory);
//! - [`Wait::Spin`] retries without sleeping, burning its core;
//! - [`Wait::Hybrid`] spins for a budget, then blocks;
//! - [`Wait::Auto`], the default, spins while spinning pays and blocks while it does not,
//!   learned per connection (docs/WAITING.md says how).
//!
//! A frame goes out as one vectored write of header, payload and padding; the payload can be
//! the caller's own memory. A frame comes in as the header, then the payload read straight
//! into the destination buffer. This module knows nothing of handlers, peers or reports.
//!
//! The files: `frames` holds [`Transport`] (frames and waits over a link); `kind` the
//! [`TransportKind`]s; `link` the [`Link`] trait the links implement; `deadline` the
//! [`Deadline`]s; `target` where a guessed frame is read to; `wait` the [`Wait`] strategies,
//! one wait's run and what [`Wait::Auto`] learns; `placement` where the two sides run, for
//! it; `backoff` its doubling ladders; `auto_counts` what its waits saw; `pipe`, `shm` and
//! `tcp` the links.

mod auto_counts;
mod backoff;
mod deadline;
mod frames;
mod kind;
mod link;
pub mod pipe;
pub(crate) mod placement;
pub mod shm;
mod target;
pub mod tcp;
pub(crate) mod wait;

pub use auto_counts::AutoCounts;
pub use deadline::{DEADLINE_SPIN, Deadline, INTERRUPT_CHECK, timespec_for};
pub use frames::{DEFAULT_PIPE_CAPACITY, LEND_MIN_BYTES, MAX_SEND_PIECES, Received, Transport};
pub use kind::TransportKind;
pub use link::{Direction, Drain, Fill, Link};
pub use pipe::PipeLink;
pub use shm::{DEFAULT_SHM_CAPACITY, ShmLink};
pub use target::MAX_SCATTER;
pub use tcp::TcpLink;
pub(crate) use wait::AutoWaiter;
pub use wait::{DEFAULT_SPIN_BUDGET, Wait};

#[cfg(test)]
mod tests;
