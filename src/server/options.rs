//! The settings of a conversation ([`ServeOptions`]) and what it did ([`ServeSummary`]).

use std::time::Duration;

use crate::frame::DEFAULT_MAX_FRAME_BYTES;

/// How long the server waits for the client's HELLO, and for the rest of a frame once its
/// header has arrived: 10 s. Between requests it waits without a deadline, ending at end of
/// stream.
pub const DEFAULT_FRAME_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings of [`serve`](super::serve).
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Largest request payload accepted, announced in HELLO. Default: 64 MiB.
    pub max_frame_bytes: u64,
    /// Deadline for the client's HELLO and for completing a frame whose header has arrived;
    /// `None` waits forever. Default: [`DEFAULT_FRAME_TIMEOUT`].
    pub frame_timeout: Option<Duration>,
    /// Busy-wait this long after each request has arrived, before the handler sees it; it is
    /// part of the server time the reply reports. A known difference for calibrating a
    /// measurement (`peer --server-delay`). Default: zero.
    pub delay: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            frame_timeout: Some(DEFAULT_FRAME_TIMEOUT),
            delay: Duration::ZERO,
        }
    }
}

/// How a conversation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The client said BYE and got BYE back.
    Bye,
    /// The client closed its end at a frame boundary.
    EndOfStream,
}

/// What [`serve`](super::serve) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeSummary {
    /// DATA requests answered with DATA.
    pub replies: u64,
    /// DATA requests answered with ERROR.
    pub rejected: u64,
    /// How the conversation ended.
    pub ending: Ending,
}
