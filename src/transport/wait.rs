//! How a side waits for its peer: the [`Wait`] strategies (`strategy`), one wait run by
//! [`Waits`] (`spin`), and the rules by which [`Wait::Auto`] learns per connection whether
//! spinning pays ([`AutoWaiter`], `auto`; docs/WAITING.md states them, and what each was
//! measured to fix).

mod auto;
mod spin;
mod strategy;
pub(crate) use auto::AutoWaiter;
pub(crate) use spin::{Waiting, Waits};
pub use strategy::{DEFAULT_SPIN_BUDGET, Wait};
