//! The PARTS wire form of a call (docs/PROTOCOL.md §15): a [`Request::Call`](super::Request)
//! — the time, a state and parameters to a function by name — sent from the caller's slices
//! in one vectored write, and its reply, of its own shape, received into the caller's parts
//! or a [`PartsReply`].

use std::io::IoSlice;

use super::reply::{CallTiming, PartsReply, Reply};
use super::{Peer, Pending};
use crate::clock::Stamp;
use crate::error::{Error, Result};
use crate::frame::{self, HEADER_LEN, Header, Kind};
use crate::parts::{self, Part, PartDtype, PartMut, Role, Shape, describe_shapes};
use crate::transport::{Deadline, MAX_SCATTER, MAX_SEND_PIECES, Received};
use crate::zerocopy::{AlignedBuf, NATIVE_IS_WIRE};

/// Most parts a reply lands straight in the caller's buffers with: 8 (its table, each part and
/// each part's padding are [`MAX_SCATTER`] buffers).
const SCATTER_PARTS: usize = (MAX_SCATTER - 1) / 2;
/// The parts of a solver's call, `t`, `y` and the parameters: sent from the smallest array of
/// pieces (a table, and each part with its padding).
const SOLVER_PARTS: usize = 3;
/// The longest table of a reply of [`SCATTER_PARTS`] parts.
const SCATTER_TABLE: usize = parts::PREAMBLE_LEN + SCATTER_PARTS * parts::DESCRIPTOR_LEN;

const ZEROS: [u8; 8] = [0; 8];

impl Peer {
    /// True when the server reads PARTS requests (its HELLO says `parts=1`).
    pub fn speaks_parts(&self) -> bool {
        self.server_hello.parts
    }

    /// Refuses a PARTS request to a server whose HELLO does not announce `parts=1`.
    pub(super) fn check_speaks_parts(&self) -> Result<()> {
        if self.server_hello.parts {
            return Ok(());
        }
        let server = self.server_hello.implementation.as_deref().unwrap_or("unnamed");
        Err(Error::Unsupported {
            what: "PARTS requests",
            server: format!("{server}, whose HELLO does not announce parts=1"),
            hint: "it serves DATA requests only, one array per call",
        })
    }

    /// Writes the PARTS frame of request `seq` calling `function` with `inputs` (`started`
    /// before anything was checked); returns whether it went out and the time spent encoding.
    ///
    /// # Errors
    /// Refusals, nothing sent: a bad function name or too many parts
    /// ([`Error::InvalidArgument`]), [`Error::FrameTooLarge`] beyond the server's
    /// `max_frame_bytes`.
    pub(super) fn send_call(
        &mut self,
        seq: u64,
        started: Stamp,
        function: &str,
        inputs: &[Part<'_>],
    ) -> Result<(Result<()>, u64)> {
        self.table.write(function, inputs.iter().map(Part::shape))?;
        let len = self.table.payload_len();
        if len > self.server_hello.max_frame_bytes {
            return Err(Error::FrameTooLarge {
                payload_bytes: len,
                max_frame_bytes: self.server_hello.max_frame_bytes,
                refused_by: crate::error::RefusedBy::Client,
            });
        }
        let header = Header::parts(seq, len).to_bytes();
        let deadline = Deadline::from_first_wait(self.options.timeout);
        let mut encode_ns = 0;
        let zero_copy = inputs.iter().all(|part| part.wire_bytes().is_some());
        let sent = if zero_copy && inputs.len() <= SOLVER_PARTS {
            // A solver's t, y and parameters: the smallest array.
            self.send_pieces::<{ 2 + 2 * SOLVER_PARTS }>(&header, inputs, deadline)
        } else if zero_copy && inputs.len() <= SCATTER_PARTS {
            // A few parts (the common case) without initialising room for the most.
            self.send_pieces::<{ 2 + 2 * SCATTER_PARTS }>(&header, inputs, deadline)
        } else if zero_copy {
            self.send_pieces::<{ 1 + MAX_SEND_PIECES }>(&header, inputs, deadline)
        } else {
            // A big-endian target: the numbers are encoded, all parts into one buffer.
            self.scratch.clear();
            inputs.iter().for_each(|part| part.encode_into(&mut self.scratch));
            encode_ns = started.elapsed_nanos();
            let pieces = [self.table.as_bytes(), &self.scratch[..]];
            self.transport.send_frame_pieces(&header, &pieces, deadline)
        };
        Ok((sent, encode_ns))
    }

    /// Sends the header, the table and `inputs` from the caller's memory, each part followed
    /// by its padding, from an array of `N` `iovec`s (the header, the table, and two per part
    /// at most). A PARTS payload needs no padding of its own: the table and every part are
    /// whole words.
    fn send_pieces<const N: usize>(
        &mut self,
        header: &[u8; HEADER_LEN],
        inputs: &[Part<'_>],
        deadline: Deadline,
    ) -> Result<()> {
        let mut slices = [IoSlice::new(&[]); N];
        slices[0] = IoSlice::new(header);
        slices[1] = IoSlice::new(self.table.as_bytes());
        let mut used = 2;
        for part in inputs {
            let bytes = part.wire_bytes().expect("checked: a little-endian target");
            slices[used] = IoSlice::new(bytes);
            used += 1;
            // An empty slice still costs the kernel a segment: padding only where there is.
            let padding = parts::pad8(bytes.len() as u64) as usize;
            if padding > 0 {
                slices[used] = IoSlice::new(&ZEROS[..padding]);
                used += 1;
            }
        }
        self.transport.send_frame_slices(&mut slices[..used], deadline)
    }

    /// The PARTS reply to `pending` into `outputs`, whose shapes it must have, by
    /// `deadline`.
    pub(super) fn recv_parts_into(
        &mut self,
        pending: Pending,
        outputs: &mut [PartMut<'_>],
        deadline: Deadline,
    ) -> Result<Reply> {
        let (server_ns, decode_started) = match outputs.len() {
            // One part (a solver's derivative): the smallest arrays.
            1 if NATIVE_IS_WIRE => self
                .recv_parts_scattered::<1, { parts::PREAMBLE_LEN + parts::DESCRIPTOR_LEN }, 3>(
                    pending.seq,
                    outputs,
                    deadline,
                )?,
            n if NATIVE_IS_WIRE && n <= SCATTER_PARTS => self
                .recv_parts_scattered::<SCATTER_PARTS, SCATTER_TABLE, MAX_SCATTER>(
                    pending.seq,
                    outputs,
                    deadline,
                )?,
            _ => {
                // The reply's length as the caller expects it: the whole frame in one read.
                let guess = parts::payload_len(outputs.iter().map(PartMut::shape)).unwrap_or(0);
                let mut frame = std::mem::take(&mut self.parts_frame);
                let result = self
                    .recv_parts_frame(pending.seq, &mut frame, guess as usize, deadline)
                    .and_then(|(len, aux)| {
                        let decode_started = Stamp::now();
                        deliver(pending.seq, &frame.as_bytes()[HEADER_LEN..][..len], outputs)?;
                        Ok((aux, decode_started))
                    });
                self.parts_frame = frame;
                result?
            }
        };
        Ok(parts_reply(pending, server_ns, decode_started))
    }

    /// The PARTS reply to `pending`, whatever its shape, into `reply`, by `deadline`.
    pub(super) fn recv_parts_any(
        &mut self,
        pending: Pending,
        reply: &mut PartsReply,
        deadline: Deadline,
    ) -> Result<Reply> {
        // Guess the length the last reply had.
        let guess = reply.len;
        reply.len = 0;
        let (len, aux) = self.recv_parts_frame(pending.seq, &mut reply.frame, guess, deadline)?;
        parts::parse(&reply.frame.as_bytes()[HEADER_LEN..][..len], Role::Reply)?;
        reply.len = len;
        Ok(parts_reply(pending, aux, Stamp::now()))
    }

    /// The reply to `seq` read straight into `outputs` (a little-endian target, at most
    /// [`SCATTER_PARTS`] parts): one `readv` puts its table in a buffer on the stack and each
    /// part into its output, as a DATA reply lands in the caller's buffer; the table is then
    /// compared with the one the outputs' shapes make. A reply of another length, or of
    /// another table, takes the way of [`Peer::recv_parts_frame`].
    ///
    /// For at most `P` outputs, its arrays on the stack sized for them: `T` bytes of table
    /// and `B` buffers (the table, and each part with its padding).
    fn recv_parts_scattered<const P: usize, const T: usize, const B: usize>(
        &mut self,
        seq: u64,
        outputs: &mut [PartMut<'_>],
        deadline: Deadline,
    ) -> Result<(u64, Stamp)> {
        let table_len = parts::PREAMBLE_LEN + outputs.len() * parts::DESCRIPTOR_LEN;
        let mut shapes = [Shape::vector(PartDtype::Bytes, 0); P];
        for (shape, output) in shapes.iter_mut().zip(outputs.iter()) {
            *shape = output.shape();
        }
        let shapes = &shapes[..outputs.len()];
        let mut table = [0u8; T];
        let mut pads = [[0u8; 8]; P];
        let mut is_pad = [false; B];
        let mut bufs: [&mut [u8]; B] = std::array::from_fn(|_| <&mut [u8]>::default());
        let mut used = 1;
        bufs[0] = &mut table[..table_len];
        for (output, pad) in outputs.iter_mut().zip(pads.iter_mut()) {
            let bytes = output.wire_bytes_mut();
            let padding = parts::pad8(bytes.len() as u64) as usize;
            bufs[used] = bytes;
            used += 1;
            if padding > 0 {
                bufs[used] = &mut pad[..padding];
                is_pad[used] = true;
                used += 1;
            }
        }
        let received = self.transport.recv_frame_scattered(&mut bufs[..used], deadline)?;
        let Received::Whole(raw) = received else {
            let mut frame = std::mem::take(&mut self.parts_frame);
            let result = self.finish_parts_frame(seq, received, &mut frame, deadline).and_then(
                |(len, aux)| {
                    let decode_started = Stamp::now();
                    deliver(seq, &frame.as_bytes()[HEADER_LEN..][..len], outputs)?;
                    Ok((aux, decode_started))
                },
            );
            self.parts_frame = frame;
            return result;
        };
        let decode_started = Stamp::now();
        let header = Header::parse(&raw, self.options.max_frame_bytes)?;
        if header.seq != seq {
            return Err(Error::SeqMismatch { expected: seq, found: header.seq });
        }
        if header.kind != Kind::Parts {
            return Err(Error::UnexpectedKind {
                expected: "a PARTS or ERROR reply",
                found: header.kind,
            });
        }
        let padded = bufs[..used]
            .iter()
            .zip(is_pad)
            .all(|(buf, is_pad)| !is_pad || buf.iter().all(|&b| b == 0));
        if padded && parts::is_reply_table(bufs[0], shapes.iter().copied()) {
            return Ok((header.aux, decode_started));
        }
        // As long as expected, but another table or nonzero padding: put the payload back
        // together and judge it as any other reply.
        let mut frame = std::mem::take(&mut self.parts_frame);
        frame.resize(HEADER_LEN + header.payload_bytes()? as usize);
        let mut at = HEADER_LEN;
        for piece in &bufs[..used] {
            frame.as_bytes_mut()[at..at + piece.len()].copy_from_slice(piece);
            at += piece.len();
        }
        let result = deliver(seq, &frame.as_bytes()[HEADER_LEN..], outputs);
        self.parts_frame = frame;
        result.map(|()| (header.aux, decode_started))
    }

    /// Reads the reply to `seq` into `frame` as on the wire (its payload at offset 32, 8-byte
    /// aligned); returns the payload's length and the server's time. An ERROR reply is
    /// [`Error::Remote`]. The part table is the caller's to check.
    fn recv_parts_frame(
        &mut self,
        seq: u64,
        frame: &mut AlignedBuf,
        guess: usize,
        deadline: Deadline,
    ) -> Result<(usize, u64)> {
        frame.resize(HEADER_LEN + guess + frame::padding_len(guess));
        let received =
            self.transport.recv_frame_contiguous(frame.as_bytes_mut(), guess, deadline)?;
        self.finish_parts_frame(seq, received, frame, deadline)
    }

    /// What follows a guessed read of the reply to `seq`: the header's checks, an ERROR's
    /// message, and the payload into `frame` when the guess did not already put it there.
    fn finish_parts_frame(
        &mut self,
        seq: u64,
        received: Received,
        frame: &mut AlignedBuf,
        deadline: Deadline,
    ) -> Result<(usize, u64)> {
        let deadline = deadline.data_arrived();
        let max = self.options.max_frame_bytes;
        let (header, whole) = match received {
            Received::End => return Err(Error::PeerClosed { context: "before replying" }),
            Received::Header(raw) => (Header::parse(&raw, max)?, false),
            Received::Whole(raw) => (Header::parse(&raw, max)?, true),
            Received::Broken(_, error) => return Err(error),
        };
        if header.seq != seq {
            return Err(Error::SeqMismatch { expected: seq, found: header.seq });
        }
        match header.kind {
            Kind::Parts => {}
            Kind::Error => {
                let message = self.recv_control_payload(&header, deadline)?;
                let message = String::from_utf8_lossy(message).into_owned();
                return Err(Error::Remote { seq, message });
            }
            found => {
                return Err(Error::UnexpectedKind { expected: "a PARTS or ERROR reply", found });
            }
        }
        // Validated against max_frame_bytes by Header::parse.
        let len = header.payload_bytes()? as usize;
        if !whole {
            frame.resize(HEADER_LEN + len);
            self.transport.recv_payload(&mut frame.as_bytes_mut()[HEADER_LEN..], deadline)?;
        }
        Ok((len, header.aux))
    }
}

/// The reply to `pending`, its parts in place since `decode_started`, the server's time
/// `server_ns`.
#[inline]
fn parts_reply(pending: Pending, server_ns: u64, decode_started: Stamp) -> Reply {
    let done = Stamp::now();
    Reply {
        seq: pending.seq,
        timing: CallTiming {
            encode_ns: pending.encode_ns,
            decode_ns: done.nanos_since(decode_started),
            server_ns,
            round_trip_ns: done.nanos_since(pending.started),
        },
    }
}

/// Copies a checked reply payload's parts into `outputs`, which must have their shapes.
fn deliver(seq: u64, payload: &[u8], outputs: &mut [PartMut<'_>]) -> Result<()> {
    let parsed = parts::parse(payload, Role::Reply)?;
    let fits = parsed.len() == outputs.len()
        && parsed.shapes().zip(outputs.iter()).all(|(s, o)| s == o.shape());
    if !fits {
        return Err(Error::ShapeMismatch {
            seq,
            expected: describe_shapes(outputs.iter().map(PartMut::shape)),
            found: describe_shapes(parsed.shapes()),
        });
    }
    for (output, part) in outputs.iter_mut().zip(parsed.iter()) {
        output.fill_from(&part)?;
    }
    Ok(())
}
