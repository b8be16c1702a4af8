//! What a received [`Reply`] tells — its seq and where the time went ([`CallTiming`]) — and
//! [`PartsReply`], a PARTS reply of any shape kept from call to call.

use crate::frame::HEADER_LEN;
use crate::parts::{self, Parsed, Role};
use crate::zerocopy::AlignedBuf;

/// Where the time of one round trip went, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallTiming {
    /// Client: converting the request into wire bytes; 0 on the zero-copy path, which converts
    /// nothing (and is not timed, so that no clock read sits on its critical path).
    pub encode_ns: u64,
    /// Client: converting the reply from wire bytes; 0 on the zero-copy path of a
    /// little-endian machine (a big-endian one swaps the bytes in place, and that is timed).
    pub decode_ns: u64,
    /// Server: from reading the request header to writing the reply (the reply's `aux`).
    pub server_ns: u64,
    /// The whole call, from before encoding to after decoding.
    pub round_trip_ns: u64,
}

impl CallTiming {
    /// Moving bytes and waiting: round trip − encode − decode − server time (never negative).
    pub fn transfer_ns(&self) -> u64 {
        self.round_trip_ns.saturating_sub(self.encode_ns + self.decode_ns + self.server_ns)
    }
}

/// A received reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The seq of the request it answers.
    pub seq: u64,
    /// Where the time went.
    pub timing: CallTiming,
}

/// A PARTS reply whatever its shape, received into a buffer kept from call to call (no
/// allocation once it has held a reply as large). See
/// [`Peer::call_parts_any`](super::Peer::call_parts_any).
#[derive(Clone, Debug, Default)]
pub struct PartsReply {
    pub(super) frame: AlignedBuf,
    pub(super) len: usize,
}

impl PartsReply {
    /// An empty reply.
    pub fn new() -> PartsReply {
        PartsReply::default()
    }

    /// The reply's parts (none before the first reply), each 8-byte aligned, so
    /// [`crate::parts::PartRef::f64_view`] views it in place.
    pub fn parts(&self) -> Parsed<'_> {
        // Checked when it was received; before any reply (len 0), a reply of no parts.
        const NO_PARTS: &[u8] = &[0; parts::PREAMBLE_LEN];
        let payload = match self.len {
            0 => NO_PARTS,
            len => &self.frame.as_bytes()[HEADER_LEN..][..len],
        };
        parts::parse(payload, Role::Reply).expect("a received reply's table was checked")
    }
}
