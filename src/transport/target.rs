//! Where a guessed frame is read to: three buffers (header, the caller's payload, padding)
//! or one contiguous buffer laid out as on the wire.

use std::io::IoSliceMut;

use super::link::Link;
use crate::error::Result;
use crate::frame::HEADER_LEN;

/// Where a guessed frame is read to (see [`Transport::recv_frame`](super::Transport::recv_frame)).
pub(super) trait FrameTarget {
    /// The guessed payload length.
    fn guess(&self) -> usize;
    /// One read from `link` into the frame's bytes from offset `filled` on.
    fn read_from(&mut self, link: &mut dyn Link, filled: usize) -> Result<Option<usize>>;
    /// The header bytes (complete once 32 bytes have been read).
    fn header(&self) -> [u8; HEADER_LEN];
    /// Appends the first `extra` bytes read after the header to `out`.
    fn append_after_header(&self, extra: usize, out: &mut Vec<u8>);
    /// The padding bytes.
    fn padding(&self) -> &[u8];
}

/// Header, payload and padding in three buffers, filled with `readv`.
pub(super) struct Split<'a> {
    pub(super) header: [u8; HEADER_LEN],
    pub(super) payload: &'a mut [u8],
    pub(super) padding: [u8; 8],
    pub(super) pad: usize,
}

impl FrameTarget for Split<'_> {
    fn guess(&self) -> usize {
        self.payload.len()
    }

    fn read_from(&mut self, link: &mut dyn Link, filled: usize) -> Result<Option<usize>> {
        let mut slices = [
            IoSliceMut::new(&mut self.header),
            IoSliceMut::new(self.payload),
            IoSliceMut::new(&mut self.padding[..self.pad]),
        ];
        let mut rest: &mut [IoSliceMut<'_>] = &mut slices;
        IoSliceMut::advance_slices(&mut rest, filled);
        link.try_read(rest)
    }

    fn header(&self) -> [u8; HEADER_LEN] {
        self.header
    }

    fn append_after_header(&self, extra: usize, out: &mut Vec<u8>) {
        let from_payload = extra.min(self.payload.len());
        out.extend_from_slice(&self.payload[..from_payload]);
        out.extend_from_slice(&self.padding[..extra - from_payload]);
    }

    fn padding(&self) -> &[u8] {
        &self.padding[..self.pad]
    }
}

/// The whole frame in one buffer, filled with `read`.
pub(super) struct Contiguous<'a> {
    pub(super) frame: &'a mut [u8],
    pub(super) guess: usize,
}

impl FrameTarget for Contiguous<'_> {
    fn guess(&self) -> usize {
        self.guess
    }

    fn read_from(&mut self, link: &mut dyn Link, filled: usize) -> Result<Option<usize>> {
        link.try_read(&mut [IoSliceMut::new(&mut self.frame[filled..])])
    }

    fn header(&self) -> [u8; HEADER_LEN] {
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&self.frame[..HEADER_LEN]);
        header
    }

    fn append_after_header(&self, extra: usize, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.frame[HEADER_LEN..HEADER_LEN + extra]);
    }

    fn padding(&self) -> &[u8] {
        &self.frame[HEADER_LEN + self.guess..]
    }
}

/// Most buffers a payload is scattered over by `Scatter` (a PARTS reply of 8 parts: its
/// table, then each part and its padding).
pub const MAX_SCATTER: usize = 17;

/// The header in its own buffer, then the payload scattered over several buffers in order
/// (a PARTS reply straight into the caller's buffers), filled with `readv`.
pub(super) struct Scatter<'a, 'b> {
    pub(super) header: [u8; HEADER_LEN],
    pub(super) payload: &'b mut [&'a mut [u8]],
    pub(super) guess: usize,
    pub(super) padding: [u8; 8],
    pub(super) pad: usize,
}

impl FrameTarget for Scatter<'_, '_> {
    fn guess(&self) -> usize {
        self.guess
    }

    fn read_from(&mut self, link: &mut dyn Link, filled: usize) -> Result<Option<usize>> {
        if self.payload.len() <= FEW_BUFFERS {
            // A reply of a part or two (the common case) without room for the most.
            self.read_into::<{ FEW_BUFFERS + 2 }>(link, filled)
        } else {
            self.read_into::<{ MAX_SCATTER + 2 }>(link, filled)
        }
    }

    fn header(&self) -> [u8; HEADER_LEN] {
        self.header
    }

    fn append_after_header(&self, extra: usize, out: &mut Vec<u8>) {
        let mut left = extra;
        for piece in self.payload.iter().map(|b| &**b).chain([&self.padding[..self.pad]]) {
            let n = left.min(piece.len());
            out.extend_from_slice(&piece[..n]);
            left -= n;
        }
    }

    fn padding(&self) -> &[u8] {
        &self.padding[..self.pad]
    }
}

/// Payload buffers [`Scatter`] reads into from a small array of `iovec`s: a table and up to
/// two parts with their padding.
const FEW_BUFFERS: usize = 5;

impl Scatter<'_, '_> {
    /// [`FrameTarget::read_from`] with room for `N` slices: the header, at most `N - 2`
    /// payload buffers, the padding.
    fn read_into<const N: usize>(
        &mut self,
        link: &mut dyn Link,
        filled: usize,
    ) -> Result<Option<usize>> {
        let n = self.payload.len();
        let mut slices: [IoSliceMut<'_>; N] = std::array::from_fn(|_| IoSliceMut::new(&mut []));
        slices[0] = IoSliceMut::new(&mut self.header);
        for (slot, buf) in slices[1..].iter_mut().zip(self.payload.iter_mut()) {
            *slot = IoSliceMut::new(buf);
        }
        let mut used = n + 1;
        if self.pad > 0 {
            slices[used] = IoSliceMut::new(&mut self.padding[..self.pad]);
            used += 1;
        }
        let mut rest: &mut [IoSliceMut<'_>] = &mut slices[..used];
        if filled > 0 {
            IoSliceMut::advance_slices(&mut rest, filled);
        }
        link.try_read(rest)
    }
}
