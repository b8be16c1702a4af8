//! How a side waits for its peer, one type per role: the [`Wait`] strategy a user chooses
//! (`strategy`); a transport's [`Waiter`] — its strategy and what auto learned — which runs
//! every wait, and the one wait in progress, [`Waiting`] (`waiter`, for every strategy, block
//! included); the rules of [`Wait::Auto`] and what they learned of the connection
//! ([`AutoWaiter`], `auto`; docs/WAITING.md), and what one wait saw, the record a finished
//! wait hands them (`auto::WaitSeen`, defined beside the rules so that they import nothing
//! of the waiter).

mod ablation;
mod auto;
mod strategy;
mod waiter;
pub(crate) use auto::AutoWaiter;
pub use strategy::{DEFAULT_SPIN_BUDGET, Wait};
pub(crate) use waiter::{Waiter, Waiting};
