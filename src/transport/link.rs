//! The [`Link`] trait: a non-blocking byte stream in each direction, which pipes, shared
//! memory and TCP implement and [`Transport`](super::Transport) builds frames on.

use std::fmt;
use std::io::{IoSlice, IoSliceMut};
use std::time::Instant;

use super::kind::TransportKind;
use crate::error::Result;

/// Bytes a link without in-place access encodes into (or reads out of) a stack buffer at a
/// time for [`Link::try_write_filled`] and [`Link::try_read_drained`]: 16 KiB stays in L1/L2.
const FILL_CHUNK: usize = 16 << 10;

/// Produces bytes `at..at + dst.len()` of a payload into `dst` (an encoder writing straight
/// into the link's memory); see [`Transport::send_frame_filled`](super::Transport::send_frame_filled).
pub type Fill<'a> = dyn FnMut(usize, &mut [u8]) -> Result<()> + 'a;

/// Consumes the next bytes of a payload, in order (a decoder reading straight out of the
/// link's memory); see [`Transport::recv_payload_drained`](super::Transport::recv_payload_drained).
pub type Drain<'a> = dyn FnMut(&[u8]) -> Result<()> + 'a;

/// Which way a [`Link`] waits: for bytes to read or for room to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Waiting for bytes from the peer.
    Read,
    /// Waiting for room to write.
    Write,
}

/// A byte stream in each direction between two processes, that never waits unless asked to.
///
/// This is the transport abstraction: [`PipeLink`](super::PipeLink) and [`ShmLink`](super::ShmLink) implement it, and
/// [`Transport`](super::Transport) builds frames, deadlines and wait strategies on top of it once. A link
/// behaves like a pair of non-blocking pipes: bytes arrive in order, and the end of the
/// stream (the peer closed its side or died) is seen only after every byte sent before it.
pub trait Link: fmt::Debug + Send {
    /// Which kind of link this is.
    fn kind(&self) -> TransportKind;

    /// Reads what is available now into `bufs`, in order, without waiting. Returns
    /// `Some(0)` at the end of the stream, `None` when nothing is available yet.
    ///
    /// # Errors
    /// [`Error::Sys`](crate::error::Error::Sys) for system failures; [`Error::Corrupted`](crate::error::Error::Corrupted) when shared state announces
    /// something impossible.
    fn try_read(&mut self, bufs: &mut [IoSliceMut<'_>]) -> Result<Option<usize>>;

    /// Writes what fits now from `bufs`, in order, without waiting. Returns `None` when
    /// there is no room at all.
    ///
    /// # Errors
    /// [`Error::PeerClosed`](crate::error::Error::PeerClosed) when the reader is gone; [`Error::Sys`](crate::error::Error::Sys) for system failures.
    fn try_write(&mut self, bufs: &[IoSlice<'_>]) -> Result<Option<usize>>;

    /// Like [`Link::try_write`], but the link may keep referring to the bytes instead of
    /// copying them (a pipe lends the pages with `vmsplice`): the caller must leave them
    /// unchanged until the peer has read them. The default copies.
    ///
    /// # Errors
    /// As [`Link::try_write`].
    fn try_write_lent(&mut self, bufs: &[IoSlice<'_>]) -> Result<Option<usize>> {
        self.try_write(bufs)
    }

    /// Writes what fits now of bytes `at..at + len` of a payload that `fill` produces in
    /// place, without waiting; returns how many were written, `None` when there is no room.
    /// `fill` may be asked for bytes again after a short write (it is positional). The default
    /// fills a stack buffer of 16 KiB and writes it; a shared ring lends its own memory.
    ///
    /// # Errors
    /// As [`Link::try_write`], and those of `fill`.
    fn try_write_filled(
        &mut self,
        at: usize,
        len: usize,
        fill: &mut Fill<'_>,
    ) -> Result<Option<usize>> {
        write_filled_via_chunk(self, at, len, fill)
    }

    /// Reads what is available now, up to `max` bytes, handing the bytes to `drain` in order,
    /// without waiting; returns as [`Link::try_read`]. The default reads into a stack buffer
    /// of 16 KiB; a shared ring lends its own memory.
    ///
    /// # Errors
    /// As [`Link::try_read`], and those of `drain`.
    fn try_read_drained(&mut self, max: usize, drain: &mut Drain<'_>) -> Result<Option<usize>> {
        read_drained_via_chunk(self, max, drain)
    }

    /// Sleeps until reading (or writing) may make progress or `until` passes. May return
    /// early (the caller retries and checks its deadline), but must not sleep past `until`
    /// by more than the system's timer slack.
    ///
    /// # Errors
    /// [`Error::Sys`](crate::error::Error::Sys) for system failures.
    fn sleep(&mut self, direction: Direction, until: Option<Instant>) -> Result<()>;

    /// Ends this side's outgoing stream, as closing a pipe's write end does: the peer reads
    /// the bytes already written, then the end of the stream. Reading goes on. Writing after
    /// it fails with [`Error::PeerClosed`](crate::error::Error::PeerClosed); a second call does nothing.
    ///
    /// # Errors
    /// [`Error::Sys`](crate::error::Error::Sys) when waking the peer fails.
    fn shutdown_write(&mut self) -> Result<()>;

    /// Bytes that can be in flight in each direction without a reader (pipe or ring
    /// capacity), when known.
    fn capacity(&self) -> Option<usize>;

    /// How many empty polls a spinning wait makes between two reads of the clock (for its
    /// deadline and spin budget). 1 (the default) suits links whose poll is a system call;
    /// a poll of shared memory costs nanoseconds, less than reading the clock.
    fn spin_polls_per_clock_read(&self) -> u32 {
        1
    }

    /// Most frames that may be in flight towards a peer that answers each one, when the
    /// link bounds it by count rather than by bytes: a slot holds one frame whatever its
    /// size. `None` (the default) when only [`Link::capacity`] bounds it.
    fn max_frames_in_flight(&self) -> Option<usize> {
        None
    }

    /// Asks for `bytes` of capacity in each direction and returns what was granted. Links
    /// whose capacity is fixed when they are created return it unchanged.
    ///
    /// # Errors
    /// [`Error::Sys`](crate::error::Error::Sys) when the capacity cannot even be read back.
    fn set_capacity(&mut self, bytes: usize) -> Result<usize>;
}

/// [`Link::try_write_filled`] through a stack buffer: `fill` encodes up to 16 KiB into it,
/// and `try_write` copies what fits.
pub(super) fn write_filled_via_chunk<L: Link + ?Sized>(
    link: &mut L,
    at: usize,
    len: usize,
    fill: &mut Fill<'_>,
) -> Result<Option<usize>> {
    let mut chunk = [0u8; FILL_CHUNK];
    let n = len.min(FILL_CHUNK);
    fill(at, &mut chunk[..n])?;
    link.try_write(&[IoSlice::new(&chunk[..n])])
}

/// [`Link::try_read_drained`] through a stack buffer of up to 16 KiB.
pub(super) fn read_drained_via_chunk<L: Link + ?Sized>(
    link: &mut L,
    max: usize,
    drain: &mut Drain<'_>,
) -> Result<Option<usize>> {
    let mut chunk = [0u8; FILL_CHUNK];
    let n = max.min(FILL_CHUNK);
    let got = link.try_read(&mut [IoSliceMut::new(&mut chunk[..n])])?;
    if let Some(k) = got.filter(|&k| k > 0) {
        drain(&chunk[..k])?;
    }
    Ok(got)
}
