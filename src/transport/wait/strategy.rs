//! [`Wait`]: how a side waits for its peer, by name.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::units::{format_duration, parse_duration};

/// Spin budget of [`Wait::Hybrid`] when none is given, and of [`Wait::Auto`]'s spins:
/// 50 µs, about what waking a sleeper on another CPU costs (docs/WAITING.md says why).
pub const DEFAULT_SPIN_BUDGET: Duration = Duration::from_micros(50);

/// How a side waits for its peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Sleep in the kernel until the descriptor is ready.
    Block,
    /// Poll without sleeping until ready or the deadline passes.
    Spin,
    /// Spin for `spin`, then block.
    Hybrid {
        /// How long to spin before sleeping.
        spin: Duration,
    },
    /// Spin while spinning pays, block while it does not, learned per connection from what
    /// the waits see (docs/WAITING.md says how). The default, as [`Wait::auto`].
    Auto {
        /// Whether a side that keeps handing its core to the peer moves its own thread to an
        /// idle CPU (its affinity set to that CPU and at once restored). On by default (`auto`):
        /// unpinned on a quiet machine it holds p99 near spin's, where without it p99 was 2.7–3.1×
        /// spin's (docs/experiments/waiting.md). Off, `auto:stay`, leaves the thread where the
        /// scheduler puts it, for a program that places its own threads.
        move_thread: bool,
    },
}

impl Default for Wait {
    fn default() -> Wait {
        Wait::auto()
    }
}

impl Wait {
    /// Short name: `block`, `spin`, `hybrid` or `auto`.
    pub fn name(&self) -> &'static str {
        match self {
            Wait::Block => "block",
            Wait::Spin => "spin",
            Wait::Hybrid { .. } => "hybrid",
            Wait::Auto { .. } => "auto",
        }
    }

    /// `auto`, which may move the caller's thread off a core it keeps handing to the peer.
    pub const fn auto() -> Wait {
        Wait::Auto { move_thread: true }
    }

    /// `hybrid` with its default budget.
    pub const fn hybrid() -> Wait {
        Wait::Hybrid { spin: DEFAULT_SPIN_BUDGET }
    }
}

impl fmt::Display for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Wait::Hybrid { spin } if *spin != DEFAULT_SPIN_BUDGET => {
                write!(f, "hybrid:{}", format_duration(*spin))
            }
            Wait::Auto { move_thread: false } => f.write_str("auto:stay"),
            other => f.write_str(other.name()),
        }
    }
}

impl FromStr for Wait {
    type Err = Error;

    /// Parses `auto`, `auto:stay`, `block`, `spin`, `hybrid` or `hybrid:DUR` (e.g. `hybrid:20us`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use peerpipe::transport::Wait;
    /// assert_eq!("hybrid:20us".parse::<Wait>().unwrap(), Wait::Hybrid { spin: Duration::from_micros(20) });
    /// assert_eq!("auto".parse::<Wait>().unwrap(), Wait::default());
    /// assert_eq!("auto:stay".parse::<Wait>().unwrap(), Wait::Auto { move_thread: false });
    /// assert!("sleepy".parse::<Wait>().is_err());
    /// ```
    fn from_str(text: &str) -> Result<Wait> {
        if let Some(budget) = text.strip_prefix("hybrid:") {
            return Ok(Wait::Hybrid { spin: parse_duration(budget)? });
        }
        if text == "auto:stay" {
            return Ok(Wait::Auto { move_thread: false });
        }
        let named = [Wait::auto(), Wait::Block, Wait::Spin, Wait::hybrid()];
        named.into_iter().find(|wait| wait.name() == text).ok_or_else(|| Error::InvalidArgument {
            what: "wait strategy",
            reason: format!(
                "expected auto, auto:stay, block, spin, hybrid or hybrid:DUR, found {text:?}"
            ),
        })
    }
}

#[cfg(test)]
mod tests;
