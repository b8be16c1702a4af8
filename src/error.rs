//! The crate's one error type.
//!
//! Every variant names what was expected and what was found, so that a message printed as
//! `peer: error: {err}` is enough to tell what went wrong without reading the code.

use std::io;
use std::time::Duration;

use crate::wire::{Dtype, Kind, TableFault};

mod too_large;
pub(crate) use too_large::RAISE_THE_CLIENTS_LIMIT;
pub use too_large::RefusedBy;

/// A specialised `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while encoding, framing, moving or serving arrays.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O error from the standard library.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),

    /// A system call failed.
    #[error("system call failed: {0}")]
    Sys(#[from] nix::errno::Errno),

    /// The other side closed its end: end of stream where a frame was required, or `EPIPE`.
    #[error("peer closed the connection {context}")]
    PeerClosed {
        /// What this side was doing when it noticed.
        context: &'static str,
    },

    /// The first four bytes of a header were not `PEER`.
    #[error("bad magic: expected \"PEER\" (50 45 45 52), found {found:02x?}")]
    BadMagic {
        /// The four bytes found.
        found: [u8; 4],
    },

    /// The header's version byte is not one this crate speaks.
    #[error("unsupported version: expected {expected}, found {found}")]
    UnsupportedVersion {
        /// The version this crate speaks.
        expected: u8,
        /// The version in the header.
        found: u8,
    },

    /// The header's kind byte is not HELLO, DATA, ERROR or BYE.
    #[error(
        "unknown frame kind {found}: expected 1 (HELLO), 2 (DATA), 3 (ERROR), 4 (BYE) or 5 (PARTS)"
    )]
    UnknownKind {
        /// The kind byte found.
        found: u8,
    },

    /// The header's dtype byte is not bytes, f32 or f64.
    #[error("unknown dtype {found}: expected 0 (bytes), 1 (f32) or 2 (f64)")]
    UnknownDtype {
        /// The dtype byte found.
        found: u8,
    },

    /// The header's flags byte is not zero; every other value is reserved.
    #[error("reserved flags set: expected 0, found {found:#04x}")]
    ReservedFlags {
        /// The flags byte found.
        found: u8,
    },

    /// A control frame (HELLO, ERROR, BYE) carried a numeric dtype, or BYE carried a payload.
    #[error("malformed {kind} frame: expected {expected}, found {found}")]
    MalformedControl {
        /// The frame's kind.
        kind: Kind,
        /// What the specification requires.
        expected: &'static str,
        /// What the header said.
        found: String,
    },

    /// `count × width(dtype)` does not fit in a `u64`.
    #[error("payload length overflows u64: count {count} × {width} bytes")]
    LengthOverflow {
        /// The header's element count.
        count: u64,
        /// The width in bytes of one element.
        width: u64,
    },

    /// The payload is larger than the receiver accepts. The message goes on to name the way
    /// out on the side that refused it ([`RefusedBy::remedy`]).
    #[error(
        "frame too large: payload of {payload_bytes} bytes exceeds max_frame_bytes \
         {max_frame_bytes}{}",
        refused_by.remedy()
    )]
    FrameTooLarge {
        /// The payload length the header announced.
        payload_bytes: u64,
        /// The receiver's limit.
        max_frame_bytes: u64,
        /// Which side refused it, and so whose limit to raise.
        refused_by: RefusedBy,
    },

    /// A padding byte after the payload was not zero.
    #[error("nonzero padding: byte {index} of the padding is {found:#04x}, expected 0")]
    NonzeroPadding {
        /// Index of the offending byte within the padding (0..=6).
        index: usize,
        /// The byte found.
        found: u8,
    },

    /// The input ended inside a frame.
    #[error("truncated {what}: got {got} of {expected} bytes")]
    Truncated {
        /// Which part of the frame was cut short: `"header"`, `"payload"` or `"padding"`.
        what: &'static str,
        /// Bytes that part needs.
        expected: u64,
        /// Bytes that were there.
        got: u64,
    },

    /// A frame of one kind arrived where another was required (for example DATA before HELLO).
    #[error("unexpected {found} frame: expected {expected}")]
    UnexpectedKind {
        /// What the protocol required at this point.
        expected: &'static str,
        /// The kind that arrived.
        found: Kind,
    },

    /// A HELLO payload was not valid.
    #[error("bad HELLO: {reason}")]
    BadHello {
        /// What was wrong with it.
        reason: String,
    },

    /// A slice had the wrong length for the operation.
    #[error("length mismatch for {what}: expected {expected}, found {found}")]
    LengthMismatch {
        /// Which buffer had the wrong length.
        what: &'static str,
        /// The length required.
        expected: u64,
        /// The length given.
        found: u64,
    },

    /// A reply carried another sequence number than the request it should answer.
    #[error("seq mismatch: expected reply to seq {expected}, found seq {found}")]
    SeqMismatch {
        /// The seq of the oldest unanswered request.
        expected: u64,
        /// The seq in the reply.
        found: u64,
    },

    /// A PARTS payload's part table broke a rule of docs/PROTOCOL.md §15 (checks T1–T10).
    #[error("bad part table: {0}")]
    BadPartTable(TableFault),

    /// A PARTS reply's parts differ from what the caller expects; the reply was read whole,
    /// so the connection stays usable.
    #[error(
        "reply to seq {seq} has another shape than expected: expected {expected}, found {found}"
    )]
    ShapeMismatch {
        /// The request's seq.
        seq: u64,
        /// The parts the caller expects, e.g. `1 part: f64[500]`.
        expected: String,
        /// The parts that came, e.g. `1 part: f64[3]`.
        found: String,
    },

    /// The server does not speak what the call needs (PARTS requests): nothing was sent, and
    /// the connection stays usable.
    #[error("{what} are not supported by the server ({server}); {hint}")]
    Unsupported {
        /// What the call needs, e.g. `PARTS requests`.
        what: &'static str,
        /// The server's `impl=` and what its HELLO announced.
        server: String,
        /// What the caller can do instead.
        hint: &'static str,
    },

    /// A reply carried another dtype than the caller's buffer expects. The reply was read
    /// whole, so the connection stays usable.
    #[error("dtype mismatch in reply to seq {seq}: expected {expected}, found {found}")]
    DtypeMismatch {
        /// The request's seq.
        seq: u64,
        /// The dtype the caller's buffer needs.
        expected: Dtype,
        /// The dtype of the reply.
        found: Dtype,
    },

    /// A reply carried another element count than the caller's buffer holds. The reply was
    /// read whole, so the connection stays usable.
    #[error("count mismatch in reply to seq {seq}: expected {expected} elements, found {found}")]
    CountMismatch {
        /// The request's seq.
        seq: u64,
        /// The length of the caller's buffer.
        expected: u64,
        /// The count in the reply.
        found: u64,
    },

    /// The server answered a request with an ERROR frame.
    #[error("server error for seq {seq}: {message}")]
    Remote {
        /// The seq of the request the server rejected (0 when it could not read one).
        seq: u64,
        /// The server's message.
        message: String,
    },

    /// A deadline passed before the awaited frame arrived or could be sent.
    #[error("timed out after {after:?} {waiting_for}")]
    Timeout {
        /// What this side was waiting for, for example `"waiting for reply to seq 7"`.
        waiting_for: String,
        /// The timeout that expired.
        after: Duration,
    },

    /// The `peer` binary was not found in any of the places [`crate::peer::find_peer_binary`]
    /// looks.
    #[error(
        "the peer binary was not found; looked for {looked}. Install it with `cargo install \
         --path cli` in a peerpipe clone (puts `peer` on PATH), or set {env} to its path"
    )]
    PeerNotFound {
        /// Every place looked at, in order, with what was there.
        looked: String,
        /// The environment variable that names it: `PEERPIPE_PEER`.
        env: &'static str,
    },

    /// A call on a connection that an earlier error left unusable; `cause` is that error, so
    /// every later call still says why.
    #[error("peer connection closed after: {cause}")]
    ClosedAfter {
        /// The message of the error that ended the connection.
        cause: String,
    },

    /// The peer process ended; `status` says how (`exited with status 3`, `killed by signal 9`),
    /// and `code` or `signal` say it as a number.
    #[error("peer {status} {context}")]
    PeerExited {
        /// How the process ended.
        status: String,
        /// What this side was doing when it noticed.
        context: String,
        /// Its exit status, when it exited.
        code: Option<i32>,
        /// The signal that killed it, when one did.
        signal: Option<i32>,
    },

    /// Data came back different from what it must be (a verified reply, an echoed message).
    #[error("{what} corrupted: {detail}")]
    Corrupted {
        /// What was checked.
        what: &'static str,
        /// Where it differs and how.
        detail: String,
    },

    /// A shared-memory region is not what the protocol allows: wrong magic, version, kind or
    /// layout, or a peer that announced positions or lengths outside the region.
    #[error("shared-memory region invalid: {detail}")]
    BadRegion {
        /// What was expected and what was found.
        detail: String,
    },

    /// The caller asked to stop waiting (see [`crate::Peer::spawn_interruptible`]); the
    /// server was terminated and reaped.
    #[error("interrupted {during}; the server was terminated")]
    Interrupted {
        /// What was being waited for.
        during: &'static str,
    },

    /// A program could not be started: `program` as the command names it, and why (the
    /// operating system's error: not found, not executable, ...).
    #[error("cannot start {program:?}: {source}")]
    CannotStart {
        /// The program, as given to the command (`argv[0]`).
        program: String,
        /// Why `exec` (or `fork`) failed.
        source: io::Error,
    },

    /// A command-line or configuration value could not be used.
    #[error("invalid {what}: {reason}")]
    InvalidArgument {
        /// The option or parameter.
        what: &'static str,
        /// Why it was rejected.
        reason: String,
    },
}

/// What kind of failure an [`Error`] is: the categories a caller (and each language binding)
/// branches on, where [`Error`] carries the detail for the message.
///
/// Each binding maps a kind — never a variant — to one exception class (Python) or one return
/// code (C), by one table each; [`ErrorKind::ALL`] lists every kind so that their tests can
/// check that none is forgotten.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A value the caller passed was rejected before anything was sent: an option that does
    /// not parse, a buffer of the wrong length. The connection stays usable.
    InvalidArgument,
    /// A deadline passed (the handshake, a reply, a frame half-way). The server is terminated.
    Timeout,
    /// The server process ended (it exited or was killed).
    PeerExited,
    /// The other side closed the connection without (yet) being seen to exit, or the
    /// connection was closed by an earlier error.
    Closed,
    /// The other side broke the wire format, sent back data that is not what it must be, or
    /// handed over a shared region that is not valid.
    Protocol,
    /// A frame is larger than its receiver accepts (`max_frame_bytes`). A request refused
    /// before sending leaves the connection usable.
    TooLarge,
    /// The server answered the request with an ERROR frame; the connection stays usable.
    Remote,
    /// The program to start was not found: the `peer` binary in none of the places looked
    /// at, or a command whose program does not exist.
    NotFound,
    /// The caller asked to stop waiting; the server was terminated and reaped.
    Interrupted,
    /// A reply had another shape (dtype, length, parts) than the caller expects. It was read
    /// whole: the connection stays usable.
    Shape,
    /// The server does not speak what the call needs (PARTS requests); nothing was sent and
    /// the connection stays usable.
    Unsupported,
    /// An operating-system call failed: a pipe, region or socket could not be made, read or
    /// written, or a program could not be started for another reason than not being found.
    Io,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 12] = [
        ErrorKind::InvalidArgument,
        ErrorKind::Timeout,
        ErrorKind::PeerExited,
        ErrorKind::Closed,
        ErrorKind::Protocol,
        ErrorKind::TooLarge,
        ErrorKind::Remote,
        ErrorKind::NotFound,
        ErrorKind::Interrupted,
        ErrorKind::Io,
        ErrorKind::Shape,
        ErrorKind::Unsupported,
    ];

    /// The kind's name in snake case (`"invalid_argument"`, `"timeout"`), as the bindings
    /// show it.
    ///
    /// ```
    /// use peerpipe::ErrorKind;
    /// assert_eq!(ErrorKind::TooLarge.name(), "too_large");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::Timeout => "timeout",
            ErrorKind::PeerExited => "peer_exited",
            ErrorKind::Closed => "closed",
            ErrorKind::Protocol => "protocol",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::Remote => "remote",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::Io => "io",
            ErrorKind::Shape => "shape",
            ErrorKind::Unsupported => "unsupported",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Error {
    /// The kind of this error: what a caller branches on.
    ///
    /// ```
    /// use peerpipe::error::RefusedBy;
    /// use peerpipe::{Error, ErrorKind};
    /// let err =
    ///     Error::FrameTooLarge { payload_bytes: 9, max_frame_bytes: 8, refused_by: RefusedBy::Client };
    /// assert_eq!(err.kind(), ErrorKind::TooLarge);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidArgument { .. } | Error::LengthMismatch { .. } => {
                ErrorKind::InvalidArgument
            }
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::PeerExited { .. } => ErrorKind::PeerExited,
            Error::PeerClosed { .. } | Error::ClosedAfter { .. } => ErrorKind::Closed,
            Error::BadMagic { .. }
            | Error::UnsupportedVersion { .. }
            | Error::UnknownKind { .. }
            | Error::UnknownDtype { .. }
            | Error::ReservedFlags { .. }
            | Error::MalformedControl { .. }
            | Error::LengthOverflow { .. }
            | Error::NonzeroPadding { .. }
            | Error::Truncated { .. }
            | Error::UnexpectedKind { .. }
            | Error::BadHello { .. }
            | Error::SeqMismatch { .. }
            | Error::BadPartTable(_)
            | Error::Corrupted { .. }
            | Error::BadRegion { .. } => ErrorKind::Protocol,
            Error::DtypeMismatch { .. }
            | Error::CountMismatch { .. }
            | Error::ShapeMismatch { .. } => ErrorKind::Shape,
            Error::Unsupported { .. } => ErrorKind::Unsupported,
            Error::FrameTooLarge { .. } => ErrorKind::TooLarge,
            Error::Remote { .. } => ErrorKind::Remote,
            Error::PeerNotFound { .. } => ErrorKind::NotFound,
            Error::CannotStart { source, .. } if source.kind() == io::ErrorKind::NotFound => {
                ErrorKind::NotFound
            }
            Error::Interrupted { .. } => ErrorKind::Interrupted,
            Error::Io(_) | Error::Sys(_) | Error::CannotStart { .. } => ErrorKind::Io,
        }
    }

    /// The operating system's error number behind this error, when there is one
    /// ([`Error::Io`], [`Error::Sys`], [`Error::CannotStart`]).
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::Io(io) | Error::CannotStart { source: io, .. } => io.raw_os_error(),
            Error::Sys(errno) => Some(*errno as i32),
            _ => None,
        }
    }

    /// True when the error of a call leaves the connection usable: an ERROR reply from the
    /// server ([`Error::Remote`]), because the protocol lets the conversation go on after it,
    /// and a reply of another shape than expected ([`ErrorKind::Shape`]), which the client
    /// read to its end.
    pub fn is_recoverable(&self) -> bool {
        matches!(
            self,
            Error::Remote { .. }
                | Error::DtypeMismatch { .. }
                | Error::CountMismatch { .. }
                | Error::ShapeMismatch { .. }
        )
    }

    /// This error as a server reports it: a frame too large for this side's own limit is one
    /// too large for the server's ([`RefusedBy::Server`]); any other error is unchanged.
    pub(crate) fn refused_by_server(self) -> Error {
        match self {
            Error::FrameTooLarge {
                payload_bytes,
                max_frame_bytes,
                refused_by: RefusedBy::Receiver,
            } => Error::FrameTooLarge {
                payload_bytes,
                max_frame_bytes,
                refused_by: RefusedBy::Server,
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once_with_its_own_name() {
        for (i, kind) in ErrorKind::ALL.iter().enumerate() {
            assert!(!ErrorKind::ALL[..i].contains(kind), "{kind} twice");
            let names = ErrorKind::ALL[..i].iter().map(|k| k.name());
            assert!(!names.clone().any(|n| n == kind.name()), "{kind}: name taken");
        }
    }

    #[test]
    fn a_program_is_not_found_only_when_the_os_says_so() {
        let start = |errno| Error::CannotStart {
            program: "pear".into(),
            source: io::Error::from_raw_os_error(errno),
        };
        assert_eq!(start(libc::ENOENT).kind(), ErrorKind::NotFound);
        assert_eq!(start(libc::EACCES).kind(), ErrorKind::Io);
        assert_eq!(start(libc::ENOENT).raw_os_error(), Some(libc::ENOENT));
        assert_eq!(
            start(libc::ENOENT).to_string(),
            "cannot start \"pear\": No such file or directory (os error 2)"
        );
    }

    #[test]
    fn a_server_reports_its_own_limit_and_leaves_the_fixed_cap_alone() {
        let too_large =
            |refused_by| Error::FrameTooLarge { payload_bytes: 9, max_frame_bytes: 8, refused_by };
        for (before, after) in [
            (RefusedBy::Receiver, RefusedBy::Server),
            (RefusedBy::ControlCap, RefusedBy::ControlCap),
            (RefusedBy::Client, RefusedBy::Client),
        ] {
            match too_large(before).refused_by_server() {
                Error::FrameTooLarge { refused_by, .. } => assert_eq!(refused_by, after),
                other => panic!("{other:?}"),
            }
        }
        let other = Error::BadMagic { found: *b"XEER" }.refused_by_server();
        assert!(matches!(other, Error::BadMagic { .. }), "{other:?}");
    }
}
