//! Which link a [`Transport`](super::Transport) runs over: [`TransportKind`], its names
//! and what each kind needs of the process that starts the server.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Which link a [`Transport`](super::Transport) runs over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TransportKind {
    /// Two anonymous pipes ([`PipeLink`](super::PipeLink)).
    #[default]
    Pipe,
    /// A shared memfd, one slot per direction, process-shared semaphores ([`ShmLink`](super::ShmLink)).
    ShmSem,
    /// A shared memfd, a lock-free ring per direction, futex wake-ups ([`ShmLink`](super::ShmLink)).
    ShmRing,
    /// One TCP connection ([`TcpLink`](super::TcpLink)), set up through the server's stdin and stdout: the
    /// server announces a port and a token there (through `ssh`, say), the client connects;
    /// the pipes stay open as the liveness channel ([`tcp`](super::tcp), docs/PROTOCOL.md §14).
    Tcp,
}

impl TransportKind {
    /// The kinds whose link is made by the spawning client and handed to the server as its
    /// stdin and stdout (pipes, shared memory), in the order reports list them: every test
    /// generated per transport (`per_transport!`) runs on each. [`TransportKind::Tcp`],
    /// whose link the server makes, is in [`TransportKind::EVERY`].
    pub const ALL: [TransportKind; 3] =
        [TransportKind::Pipe, TransportKind::ShmSem, TransportKind::ShmRing];

    /// Every kind, in the order reports list them: [`TransportKind::ALL`], then `tcp`.
    pub const EVERY: [TransportKind; 4] =
        [TransportKind::Pipe, TransportKind::ShmSem, TransportKind::ShmRing, TransportKind::Tcp];

    /// `pipe`, `shm-sem`, `shm-ring` or `tcp`.
    pub fn name(&self) -> &'static str {
        match self {
            TransportKind::Pipe => "pipe",
            TransportKind::ShmSem => "shm-sem",
            TransportKind::ShmRing => "shm-ring",
            TransportKind::Tcp => "tcp",
        }
    }

    /// Whether the link lives in shared memory (and so cannot cross machines).
    pub fn is_shared_memory(&self) -> bool {
        matches!(self, TransportKind::ShmSem | TransportKind::ShmRing)
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TransportKind {
    type Err = Error;

    /// Parses `pipe`, `shm-sem`, `shm-ring` or `tcp`.
    ///
    /// ```
    /// use peerpipe::transport::TransportKind;
    /// assert_eq!("shm-ring".parse::<TransportKind>().unwrap(), TransportKind::ShmRing);
    /// assert_eq!("tcp".parse::<TransportKind>().unwrap(), TransportKind::Tcp);
    /// assert!("shm".parse::<TransportKind>().unwrap_err().to_string().contains("shm-sem"));
    /// ```
    fn from_str(text: &str) -> Result<TransportKind> {
        TransportKind::EVERY.into_iter().find(|kind| kind.name() == text).ok_or_else(|| {
            Error::InvalidArgument {
                what: "transport",
                reason: format!("expected pipe, shm-sem, shm-ring or tcp, found {text:?}"),
            }
        })
    }
}
