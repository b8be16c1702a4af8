//! What a conversation with a server is made of: the [`Peer`] — its transport, the server it
//! spawned, the server's HELLO, its requests in flight ([`Pending`]) — and whether it is still
//! open ([`State`]). What a peer does lives in the files of each concern, which all reach
//! these fields.

use std::collections::VecDeque;

use super::options::Options;
use super::stderr_tail::StderrTail;
use super::words::LastWords;
use crate::clock::Stamp;
use crate::frame::Hello;
use crate::process::ChildGuard;
use crate::transport::{Deadline, Transport};

#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    pub(super) seq: u64,
    pub(super) started: Stamp,
    pub(super) encode_ns: u64,
    /// The deadline of [`Peer::recv_for`]'s waits for this reply, from the first of them.
    pub(super) reply_deadline: Option<Deadline>,
    /// A PARTS request (its reply is received with [`Peer::recv_parts`]), not DATA.
    pub(super) parts: bool,
}

/// A conversation with a server.
#[derive(Debug)]
pub struct Peer {
    pub(super) transport: Transport,
    pub(super) child: Option<ChildGuard>,
    /// The spawned server's stderr, when captured ([`Options::capture_stderr`]).
    pub(super) stderr: Option<StderrTail>,
    pub(super) options: Options,
    pub(super) server_hello: Hello,
    pub(super) next_seq: u64,
    pub(super) pending: VecDeque<Pending>,
    pub(super) scratch: Vec<u8>,
    pub(super) state: State,
    /// The server's last ERROR reply, appended to the error that ends the conversation.
    pub(super) said: LastWords,
    /// The part table of the PARTS request being sent (reused).
    pub(super) table: crate::parts::Table,
    /// A PARTS reply as it arrived, before its parts are copied out (reused).
    pub(super) parts_frame: crate::zerocopy::AlignedBuf,
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum State {
    Open,
    /// Ended by an error, whose message every later call repeats.
    Failed(String),
    Closed,
}
