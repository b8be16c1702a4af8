//! A peer's settings: [`Options`], and the [`DataPath`] of payloads.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::frame::DEFAULT_MAX_FRAME_BYTES;
use crate::transport::{DEFAULT_PIPE_CAPACITY, DEFAULT_SHM_CAPACITY, TransportKind, Wait};

/// How long [`Peer::close`](super::Peer::close) waits for the server to exit after BYE before
/// terminating it.
pub const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// Default timeout for the handshake and for each reply: 10 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How payloads get from the caller's slice onto the wire and back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DataPath {
    /// Send straight from the caller's slice and receive straight into the caller's buffer
    /// (on little-endian targets; conversions such as f64→f32 always use the codec).
    #[default]
    ZeroCopy,
    /// Encode into and decode from a scratch buffer with the explicit little-endian codec.
    Codec,
}

impl DataPath {
    /// `zero-copy` or `codec`.
    pub fn name(&self) -> &'static str {
        match self {
            DataPath::ZeroCopy => "zero-copy",
            DataPath::Codec => "codec",
        }
    }
}

impl fmt::Display for DataPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DataPath {
    type Err = Error;
    fn from_str(text: &str) -> Result<DataPath> {
        match text {
            "zero-copy" => Ok(DataPath::ZeroCopy),
            "codec" => Ok(DataPath::Codec),
            _ => Err(Error::InvalidArgument {
                what: "path",
                reason: format!("expected zero-copy or codec, found {text:?}"),
            }),
        }
    }
}

/// Settings of a [`Peer`](super::Peer).
#[derive(Clone, Debug)]
pub struct Options {
    /// How to wait for replies and for room in the pipe. Default: [`Wait::Auto`].
    pub wait: Wait,
    /// Deadline for the handshake and for each reply; `None` waits forever. Default: 10 s.
    pub timeout: Option<Duration>,
    /// Largest reply payload accepted, announced in HELLO. Default: 64 MiB.
    pub max_frame_bytes: u64,
    /// Pipe capacity to ask for when spawning; `None` keeps the system default. Default: 1 MiB.
    pub pipe_capacity: Option<usize>,
    /// Transport to spawn servers on. Default: pipe. A shared-memory transport hands the
    /// server the region as its stdin, so the server must be started with the same
    /// `--transport` (as [`Peer::spawn_server`](super::Peer::spawn_server) does); it cannot
    /// cross machines.
    pub transport: TransportKind,
    /// Bytes per direction of a shared-memory transport. Default: 1 MiB
    /// ([`DEFAULT_SHM_CAPACITY`]).
    pub shm_capacity: usize,
    /// Zero-copy or codec. Default: zero-copy.
    pub path: DataPath,
    /// Give a spawned server's stderr a pipe that this process drains — forwarding every byte
    /// to its own stderr and keeping the last 4 KiB — so that an error about a server that
    /// exited (during the handshake or later) ends with what the server said. Default: true.
    /// Its cost: a thread per server, and a server that outlives this process loses its
    /// stderr (`peer soak` turns it off for that reason).
    pub capture_stderr: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            wait: Wait::default(),
            timeout: Some(DEFAULT_TIMEOUT),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            pipe_capacity: Some(DEFAULT_PIPE_CAPACITY),
            transport: TransportKind::Pipe,
            shm_capacity: DEFAULT_SHM_CAPACITY,
            path: DataPath::default(),
            capture_stderr: true,
        }
    }
}
