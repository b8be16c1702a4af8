//! The one message model of a call: a [`Request`] — a function's name (`""` for the server's
//! default function) and its parts, of which a one-array call is the one-part, unnamed form —
//! and where its reply goes, [`ReplyInto`].
//!
//! A request travels in one of two wire forms (docs/PROTOCOL.md): [`Request::Array`] as DATA,
//! which every server reads, [`Request::Call`] as PARTS, for servers whose HELLO says
//! `parts=1`. Every call of [`Peer`](super::Peer) takes the one path of
//! [`Peer::call_request`](super::Peer::call_request); `call`, `call_parts` and the others are
//! its short forms.

use super::reply::PartsReply;
use crate::codec::{Values, ValuesMut};
use crate::parts::{Part, PartMut};

/// What a call sends.
#[derive(Clone, Copy, Debug)]
pub enum Request<'r, 'a> {
    /// One array to the server's default function: a request's one-part, unnamed form, sent
    /// as DATA (the form every server reads, and the one a v1 server knows).
    Array(Values<'a>),
    /// `function` (`""`: the default function) with `parts`, sent as PARTS.
    Call {
        /// The function's name, or `""`.
        function: &'r str,
        /// The parts, in order.
        parts: &'r [Part<'a>],
    },
}

impl Request<'_, '_> {
    /// True when it travels as PARTS (its reply is then PARTS too).
    pub fn is_parts(&self) -> bool {
        matches!(self, Request::Call { .. })
    }
}

/// Where a reply goes, and so what it must be: an array of one dtype and length (the reply to
/// a [`Request::Array`]), the caller's parts, whose shapes it must have, or any parts at all.
#[derive(Debug)]
pub enum ReplyInto<'r, 'a> {
    /// The array the reply must fill: its dtype and length.
    Array(ValuesMut<'a>),
    /// The caller's buffers, one per part, in order.
    Parts(&'r mut [PartMut<'a>]),
    /// Any shape, into a buffer kept from call to call.
    Any(&'r mut PartsReply),
}

impl ReplyInto<'_, '_> {
    /// True when it takes a PARTS reply.
    pub(super) fn is_parts(&self) -> bool {
        !matches!(self, ReplyInto::Array(_))
    }
}
