//! Calls of several typed parts to functions by name (docs/PROTOCOL.md §15): the time, a
//! state and parameters out in one frame, a reply of its own shape back.

use std::io::IoSlice;
use std::time::Duration;

use super::reply::{CallTiming, PartsReply, PartsTarget, Reply, Target};
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

    /// Calls `function` (`""`: the server's default function) with `inputs`, and receives the
    /// reply's parts into `outputs`, whose shapes (dtype, length, matrix columns) the reply
    /// must have: one round trip, sent from the caller's slices in one vectored write, no
    /// allocation once warm.
    ///
    /// # Errors
    /// Refused before anything is sent, the peer staying usable: [`Error::Unsupported`] when
    /// the server does not speak PARTS; [`Error::InvalidArgument`] for a bad function name,
    /// more than [`parts::MAX_PARTS`] parts or replies still in flight;
    /// [`Error::FrameTooLarge`] beyond the server's `max_frame_bytes`. After the call, the
    /// peer staying usable: [`Error::Remote`] (the server's ERROR: an unknown function, a
    /// refused call) and [`Error::ShapeMismatch`] (a reply of other shapes than `outputs`,
    /// read whole). Otherwise those of [`Peer::recv`], after which the server is terminated.
    /// On error the contents of `outputs` are unspecified.
    pub fn call_parts(
        &mut self,
        function: &str,
        inputs: &[Part<'_>],
        outputs: &mut [PartMut<'_>],
    ) -> Result<CallTiming> {
        self.check_nothing_in_flight("call_parts")?;
        self.send_parts(function, inputs)?;
        Ok(self.recv_parts(PartsTarget::Into(outputs))?.timing)
    }

    /// [`Peer::call_parts`] with a reply of any shape, received into `reply`.
    ///
    /// # Errors
    /// As [`Peer::call_parts`], without [`Error::ShapeMismatch`].
    pub fn call_parts_any(
        &mut self,
        function: &str,
        inputs: &[Part<'_>],
        reply: &mut PartsReply,
    ) -> Result<CallTiming> {
        self.check_nothing_in_flight("call_parts_any")?;
        self.send_parts(function, inputs)?;
        Ok(self.recv_parts(PartsTarget::Any(reply))?.timing)
    }

    fn check_nothing_in_flight(&self, what: &'static str) -> Result<()> {
        self.check_open()?;
        if self.pending.is_empty() {
            return Ok(());
        }
        Err(Error::InvalidArgument {
            what,
            reason: format!(
                "{} pipelined replies are still in flight; recv them first",
                self.pending.len()
            ),
        })
    }

    /// Sends one PARTS request calling `function` with `inputs` and returns its seq, without
    /// waiting for the reply (receive it with [`Peer::recv_parts`]); pipelining as for
    /// [`Peer::send`].
    ///
    /// # Errors
    /// The refusals of [`Peer::call_parts`] (nothing sent, the peer usable); a timeout or the
    /// server's end while writing, after which the server is terminated.
    pub fn send_parts(&mut self, function: &str, inputs: &[Part<'_>]) -> Result<u64> {
        self.check_open()?;
        if !self.server_hello.parts {
            let server = self.server_hello.implementation.as_deref().unwrap_or("unnamed");
            return Err(Error::Unsupported {
                what: "PARTS requests",
                server: format!("{server}, whose HELLO does not announce parts=1"),
                hint: "it serves DATA requests only, one array per call",
            });
        }
        self.check_room_in_flight()?;
        let started = Stamp::now();
        self.table.write(function, inputs.iter().map(Part::shape))?;
        let len = self.table.payload_len();
        if len > self.server_hello.max_frame_bytes {
            return Err(Error::FrameTooLarge {
                payload_bytes: len,
                max_frame_bytes: self.server_hello.max_frame_bytes,
                refused_by: crate::error::RefusedBy::Client,
            });
        }
        let seq = self.next_seq;
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
        self.sent(sent, seq, started, encode_ns, true)
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

    /// Receives the PARTS reply to the oldest request in flight (one sent with
    /// [`Peer::send_parts`]) into `target`.
    ///
    /// # Errors
    /// As [`Peer::call_parts`] after sending; [`Error::InvalidArgument`] when nothing is in
    /// flight or the oldest request was DATA (receive it with [`Peer::recv`]).
    pub fn recv_parts(&mut self, target: PartsTarget<'_, '_>) -> Result<Reply> {
        let deadline = Deadline::after(self.options.timeout);
        let reply = self.recv_until(Target::Parts(target), deadline, None)?;
        Ok(reply.expect("a wait without an idle limit returns a reply or an error"))
    }

    /// [`Peer::recv_parts`] in slices, as [`Peer::recv_for`] receives DATA: `Ok(None)` when
    /// no byte of the reply has arrived within `patience`, the request staying in flight.
    ///
    /// # Errors
    /// As [`Peer::recv_parts`].
    pub fn recv_parts_for(
        &mut self,
        target: PartsTarget<'_, '_>,
        patience: Duration,
    ) -> Result<Option<Reply>> {
        self.recv_for_target(Target::Parts(target), patience)
    }

    /// The PARTS reply to `pending` into `target`, by `deadline`.
    pub(super) fn recv_parts_reply(
        &mut self,
        pending: Pending,
        target: PartsTarget<'_, '_>,
        deadline: Deadline,
    ) -> Result<Reply> {
        let (server_ns, decode_started) = match target {
            // One part (a solver's derivative): the smallest arrays.
            PartsTarget::Into(outputs) if NATIVE_IS_WIRE && outputs.len() == 1 => self
                .recv_parts_scattered::<1, { parts::PREAMBLE_LEN + parts::DESCRIPTOR_LEN }, 3>(
                    pending.seq,
                    outputs,
                    deadline,
                )?,
            PartsTarget::Into(outputs) if NATIVE_IS_WIRE && outputs.len() <= SCATTER_PARTS => self
                .recv_parts_scattered::<SCATTER_PARTS, SCATTER_TABLE, MAX_SCATTER>(
                    pending.seq,
                    outputs,
                    deadline,
                )?,
            PartsTarget::Into(outputs) => {
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
            PartsTarget::Any(reply) => {
                // Guess the length the last reply had.
                let guess = reply.len;
                reply.len = 0;
                let (len, aux) =
                    self.recv_parts_frame(pending.seq, &mut reply.frame, guess, deadline)?;
                parts::parse(&reply.frame.as_bytes()[HEADER_LEN..][..len], Role::Reply)?;
                reply.len = len;
                (aux, Stamp::now())
            }
        };
        let done = Stamp::now();
        Ok(Reply {
            seq: pending.seq,
            timing: CallTiming {
                encode_ns: pending.encode_ns,
                decode_ns: done.nanos_since(decode_started),
                server_ns,
                round_trip_ns: done.nanos_since(pending.started),
            },
        })
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
