//! How a side waits for its peer: the [`Wait`] strategies (`strategy`), one wait ([`Waits`],
//! `spin`), and the rules of [`Wait::Auto`] ([`AutoWaiter`], `auto`; docs/WAITING.md).

mod auto;
mod spin;
mod strategy;
pub(crate) use auto::AutoWaiter;
pub(crate) use spin::{Waiting, Waits};
pub use strategy::{DEFAULT_SPIN_BUDGET, Wait};
