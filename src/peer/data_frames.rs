//! The DATA wire form of a call (docs/PROTOCOL.md §4): a [`Request::Array`](super::Request)
//! sent from the caller's slice (zero-copy) or through the codec, and its reply received into
//! the caller's array.

use super::options::DataPath;
use super::reply::{CallTiming, Reply};
use super::{Peer, Pending};
use crate::clock::Stamp;
use crate::codec::{self, Values, ValuesMut};
use crate::error::{Error, Result};
use crate::frame::{self, HEADER_LEN, Header, Kind};
use crate::transport::{Deadline, LEND_MIN_BYTES, Received, TransportKind};
use crate::zerocopy;

impl Peer {
    /// Writes the DATA frame of request `seq` (`started` before anything was checked);
    /// returns whether it went out and the time spent encoding. With `lend`, a large
    /// zero-copy payload may be lent to the transport instead of copied (`vmsplice` on a
    /// pipe): only a whole call lends, which returns after the reply — and a server replies
    /// only after reading the whole request, so the pipe refers to the caller's slice no more.
    ///
    /// # Errors
    /// Refusals, nothing sent: [`Error::FrameTooLarge`] beyond the server's `max_frame_bytes`,
    /// an encoding error.
    pub(super) fn send_array(
        &mut self,
        seq: u64,
        started: Stamp,
        values: Values<'_>,
        lend: bool,
    ) -> Result<(Result<()>, u64)> {
        let wire_len = values.wire_len();
        if wire_len as u64 > self.server_hello.max_frame_bytes {
            return Err(Error::FrameTooLarge {
                payload_bytes: wire_len as u64,
                max_frame_bytes: self.server_hello.max_frame_bytes,
                refused_by: crate::error::RefusedBy::Client,
            });
        }
        let header = Header::data(seq, values.wire_dtype(), values.len() as u64).to_bytes();
        // The payload goes out from the caller's memory (one writev of header + slice), or the
        // codec writes the whole frame, laid out as on the wire, into the scratch buffer, which
        // goes out with one plain write.
        let zero_copy = match self.options.path {
            DataPath::ZeroCopy => zerocopy::wire_bytes(values),
            DataPath::Codec => None,
        };
        if zero_copy.is_none() && self.codec_in_place() {
            // Over shm-ring the codec encodes straight into the ring, piece by piece as room
            // appears; encode_ns is the time spent inside the encoder (see
            // docs/experiments/conversion.md).
            let deadline = Deadline::from_first_wait(self.options.timeout);
            let mut encode_ns = 0;
            let mut fill = |at: usize, dst: &mut [u8]| {
                let t = Stamp::now();
                let result = codec::encode_at(values, at, dst);
                encode_ns += t.elapsed_nanos();
                result
            };
            let sent = self.transport.send_frame_filled(&header, wire_len, &mut fill, deadline);
            return Ok((sent, encode_ns));
        }
        let frame_len = HEADER_LEN + wire_len + frame::padding_len(wire_len);
        if zero_copy.is_none() {
            grow(&mut self.scratch, frame_len);
            let frame = &mut self.scratch[..frame_len];
            frame[..HEADER_LEN].copy_from_slice(&header);
            codec::encode_into(values, &mut frame[HEADER_LEN..HEADER_LEN + wire_len])?;
            frame[HEADER_LEN + wire_len..].fill(0);
        }
        // Zero-copy converts nothing: no clock read (on the critical path) for an encode that
        // does not happen; its encode_ns is 0 and the header's few ns count as transfer.
        let encode_ns = if zero_copy.is_some() { 0 } else { started.elapsed_nanos() };
        let deadline = Deadline::from_first_wait(self.options.timeout);
        let sent = match zero_copy {
            Some(payload) if lend && payload.len() >= LEND_MIN_BYTES => {
                self.transport.send_frame_lent(&header, payload, deadline)
            }
            Some(payload) => self.transport.send_frame(&header, payload, deadline),
            None => self.transport.send_bytes(&self.scratch[..frame_len], deadline),
        };
        Ok((sent, encode_ns))
    }

    /// The DATA reply to `pending` into `dst`, which fixes the dtype and count it must have;
    /// a reply of another shape is read whole (the stream stays in step) and refused.
    pub(super) fn recv_array_reply(
        &mut self,
        pending: Pending,
        mut dst: ValuesMut<'_>,
        deadline: Deadline,
    ) -> Result<Reply> {
        // Header and payload in one read when the reply has the expected length: the payload
        // lands in the caller's buffer (zero-copy, readv) or, for the codec, the whole frame in
        // the scratch buffer (one plain read), payload at `payload`.
        let len = dst.wire_len();
        let payload = HEADER_LEN..HEADER_LEN + len;
        let shm_codec = self.codec_in_place();
        let (received, in_dst) = match (self.options.path, zerocopy::wire_bytes_mut(&mut dst)) {
            (DataPath::ZeroCopy, Some(bytes)) => {
                (self.transport.recv_frame(bytes, deadline)?, true)
            }
            // Over shm-ring the codec decodes straight out of the ring: the header first, the
            // payload once the header says it is the expected reply.
            _ if shm_codec => match self.transport.recv_header(deadline)? {
                Some(raw) => (Received::Header(raw), false),
                None => (Received::End, false),
            },
            _ => {
                grow(&mut self.scratch, payload.end + frame::padding_len(len));
                (self.transport.recv_frame_contiguous(&mut self.scratch, len, deadline)?, false)
            }
        };
        // From here on the reply has started: it must be read to its end.
        let deadline = deadline.data_arrived();
        let (header, payload_read) = match received {
            Received::End => return Err(Error::PeerClosed { context: "before replying" }),
            Received::Header(raw) => (Header::parse(&raw, self.options.max_frame_bytes)?, false),
            Received::Whole(raw) => (Header::parse(&raw, self.options.max_frame_bytes)?, true),
            Received::Broken(_, error) => return Err(error),
        };
        let seq = header.seq;
        if seq != pending.seq {
            return Err(Error::SeqMismatch { expected: pending.seq, found: seq });
        }
        match header.kind {
            Kind::Data => {}
            Kind::Error => {
                let message = match (payload_read, in_dst) {
                    (true, true) => zerocopy::wire_bytes_mut(&mut dst).map(|b| &*b).unwrap_or(&[]),
                    (true, false) => &self.scratch[payload.clone()],
                    (false, _) => self.recv_control_payload(&header, deadline)?,
                };
                let message = String::from_utf8_lossy(message).into_owned();
                return Err(Error::Remote { seq, message });
            }
            found => {
                return Err(Error::UnexpectedKind { expected: "a DATA or ERROR reply", found });
            }
        }
        if header.dtype != dst.wire_dtype() || header.count != dst.len() as u64 {
            // Another shape than expected: read the reply to its end (unless it was read
            // already), so that the stream stays in step and the peer usable.
            if !payload_read {
                let len = header.payload_bytes()? as usize;
                grow(&mut self.scratch, len);
                self.transport.recv_payload(&mut self.scratch[..len], deadline)?;
            }
            if header.dtype != dst.wire_dtype() {
                return Err(Error::DtypeMismatch {
                    seq,
                    expected: dst.wire_dtype(),
                    found: header.dtype,
                });
            }
            return Err(Error::CountMismatch {
                seq,
                expected: dst.len() as u64,
                found: header.count,
            });
        }
        if shm_codec && !in_dst {
            // decode_ns is the time spent inside the decoder, as the pieces arrive.
            let mut decode_ns = 0;
            let mut decoder = codec::PieceDecoder::new(dst);
            let mut drain = |src: &[u8]| {
                let t = Stamp::now();
                let result = decoder.push(src);
                decode_ns += t.elapsed_nanos();
                result
            };
            self.transport.recv_payload_drained(len, &mut drain, deadline)?;
            return Ok(Reply {
                seq,
                timing: CallTiming {
                    encode_ns: pending.encode_ns,
                    decode_ns,
                    server_ns: header.aux,
                    round_trip_ns: pending.started.elapsed_nanos(),
                },
            });
        }
        if !payload_read {
            // Only when bytes were read ahead earlier: the payload is still in the pipe.
            match zerocopy::wire_bytes_mut(&mut dst).filter(|_| in_dst) {
                Some(bytes) => self.transport.recv_payload(bytes, deadline)?,
                None => {
                    self.transport.recv_payload(&mut self.scratch[payload.clone()], deadline)?
                }
            }
        }
        let (decode_ns, done) = if in_dst && zerocopy::NATIVE_IS_WIRE {
            // Received in place, already in native order: nothing to decode, nothing to time.
            (0, Stamp::now())
        } else {
            let decode_started = Stamp::now();
            if in_dst {
                zerocopy::finish_receive(&mut dst);
            } else {
                codec::decode_into(&self.scratch[payload], dst)?;
            }
            let done = Stamp::now();
            (done.nanos_since(decode_started), done)
        };
        Ok(Reply {
            seq,
            timing: CallTiming {
                encode_ns: pending.encode_ns,
                decode_ns,
                server_ns: header.aux,
                round_trip_ns: done.nanos_since(pending.started),
            },
        })
    }

    /// Whether the codec path encodes into and decodes out of the transport in place
    /// (`shm-ring`, whose ring lends its memory) rather than through the scratch buffer. Not
    /// pipes (one `write` of the whole frame beats many small ones), nor `shm-sem`, where a
    /// frame must travel as one chunk of the slot for three to be in flight (see
    /// `Link::max_frames_in_flight`).
    fn codec_in_place(&self) -> bool {
        self.transport.kind() == TransportKind::ShmRing
    }
}

pub(super) fn grow(buf: &mut Vec<u8>, len: usize) {
    if buf.len() < len {
        zerocopy::resize_exact(buf, len, 0);
    }
}
