//! The typed calls — send, receive (by a deadline or in slices), call — and their timing.

use std::time::{Duration, Instant};

use super::options::DataPath;
use super::reply::{CallTiming, Reply, Target};
use super::{Peer, Pending};
use crate::clock::Stamp;
use crate::codec::{self, Values, ValuesMut};
use crate::error::{Error, Result};
use crate::frame::{self, HEADER_LEN, Header, Kind};
use crate::transport::{Deadline, LEND_MIN_BYTES, Received, TransportKind};
use crate::zerocopy;

impl Peer {
    /// After a request went out (`sent`): records it as in flight and returns its seq; after
    /// a failure to send, ends the conversation naming the seq.
    pub(super) fn sent(
        &mut self,
        sent: Result<()>,
        seq: u64,
        started: Stamp,
        encode_ns: u64,
        parts: bool,
    ) -> Result<u64> {
        if let Err(e) = sent {
            let context = format!("while sending seq {seq}");
            return Err(self.fail(retarget(e, &format!("room to send seq {seq}")), &context));
        }
        let pending = Pending { seq, started, encode_ns, reply_deadline: None, parts };
        self.pending.push_back(pending);
        self.next_seq += 1;
        Ok(seq)
    }

    /// Refuses a request beyond the transport's limit of requests in flight.
    pub(super) fn check_room_in_flight(&self) -> Result<()> {
        match self.transport.max_frames_in_flight() {
            Some(max) if self.pending.len() >= max => Err(Error::InvalidArgument {
                what: "pipelining",
                reason: format!(
                    "{} allows at most {max} requests in flight and {} are; receive a reply \
                     first",
                    self.transport.kind(),
                    self.pending.len()
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Sends one DATA request and returns its seq, without waiting for the reply. Several
    /// requests may be in flight; receive their replies in order with [`Peer::recv`]. The
    /// replies of all requests in flight must fit in the pipe or ring (see
    /// [`Peer::capacity`]), because the server stops reading while its reply pipe is full;
    /// over `shm-sem` at most [`Peer::max_in_flight`] requests may be in flight.
    ///
    /// # Errors
    /// [`Error::FrameTooLarge`] when the payload exceeds the server's `max_frame_bytes`, and
    /// [`Error::InvalidArgument`] when the transport's limit of requests in flight is reached
    /// (nothing is sent, the peer stays usable); [`Error::Timeout`] or [`Error::PeerClosed`] /
    /// [`Error::PeerExited`] when the frame cannot be written (the server is then terminated).
    pub fn send(&mut self, values: Values<'_>) -> Result<u64> {
        self.send_with(values, false)
    }

    /// [`Peer::send`]; with `lend`, a large zero-copy payload may be lent to the transport
    /// instead of copied (`vmsplice` on a pipe). Only [`Peer::call`] lends: it returns after
    /// the reply, and a server replies only after reading the whole request, so the caller's
    /// slice is not referred to by the pipe any more when the caller gets it back.
    pub(super) fn send_with(&mut self, values: Values<'_>, lend: bool) -> Result<u64> {
        self.check_open()?;
        self.check_room_in_flight()?;
        let started = Stamp::now();
        let wire_len = values.wire_len();
        if wire_len as u64 > self.server_hello.max_frame_bytes {
            return Err(Error::FrameTooLarge {
                payload_bytes: wire_len as u64,
                max_frame_bytes: self.server_hello.max_frame_bytes,
                refused_by: crate::error::RefusedBy::Client,
            });
        }
        let seq = self.next_seq;
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
            return self.sent(sent, seq, started, encode_ns, false);
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
        self.sent(sent, seq, started, encode_ns, false)
    }

    /// Receives the reply to the oldest request in flight into `dst`, which fixes the dtype
    /// and count the reply must have.
    ///
    /// # Errors
    /// [`Error::Remote`] when the server answered ERROR (the peer stays usable); otherwise
    /// [`Error::Timeout`], [`Error::SeqMismatch`], [`Error::DtypeMismatch`],
    /// [`Error::CountMismatch`], a frame error, or [`Error::PeerExited`] /
    /// [`Error::PeerClosed`], after which the server is terminated. On error the contents of
    /// `dst` are unspecified.
    pub fn recv(&mut self, dst: ValuesMut<'_>) -> Result<Reply> {
        let deadline = Deadline::after(self.options.timeout);
        let reply = self.recv_until(Target::Data(dst), deadline, None)?;
        Ok(reply.expect("a wait without an idle limit returns a reply or an error"))
    }

    /// Like [`Peer::recv`], but returns `Ok(None)` when no byte of the reply has arrived
    /// within `patience`: the request stays in flight and the peer untouched, so the caller
    /// can wait again — in slices, checking for an interrupt in between, as the Python binding
    /// does for Ctrl-C. A reply that has started arriving is read to its end. The timeout of
    /// [`Options::timeout`](super::Options::timeout) counts from the first of these waits for
    /// the reply, as a [`Peer::recv`]'s counts from its start; once it has passed, the error
    /// (and the server's termination) are those of [`Peer::recv`].
    ///
    /// # Errors
    /// As [`Peer::recv`].
    pub fn recv_for(&mut self, dst: ValuesMut<'_>, patience: Duration) -> Result<Option<Reply>> {
        self.recv_for_target(Target::Data(dst), patience)
    }

    pub(super) fn recv_for_target(
        &mut self,
        target: Target<'_, '_>,
        patience: Duration,
    ) -> Result<Option<Reply>> {
        let timeout = self.options.timeout;
        let overall = match self.pending.front_mut() {
            Some(pending) => {
                *pending.reply_deadline.get_or_insert_with(|| Deadline::after(timeout))
            }
            // recv_until gives the error for nothing in flight.
            None => Deadline::after(timeout),
        };
        let deadline = overall.or_idle_until(Instant::now() + patience);
        self.recv_until(target, deadline, Some(overall))
    }

    /// The reply to the oldest request, by `deadline`; `Ok(None)` when `deadline` has an idle
    /// limit that passed with nothing read while `overall` has not passed.
    pub(super) fn recv_until(
        &mut self,
        target: Target<'_, '_>,
        deadline: Deadline,
        overall: Option<Deadline>,
    ) -> Result<Option<Reply>> {
        self.check_open()?;
        let Some(pending) = self.pending.front().copied() else {
            return Err(Error::InvalidArgument {
                what: "recv",
                reason: "no request is in flight".into(),
            });
        };
        let received = match target {
            Target::Data(dst) if !pending.parts => self.recv_reply(pending, dst, deadline),
            Target::Parts(target) if pending.parts => {
                self.recv_parts_reply(pending, target, deadline)
            }
            Target::Data(_) => {
                return Err(Error::InvalidArgument {
                    what: "recv",
                    reason: format!(
                        "seq {} is a PARTS request: receive its reply with recv_parts",
                        pending.seq
                    ),
                });
            }
            Target::Parts(_) => {
                return Err(Error::InvalidArgument {
                    what: "recv_parts",
                    reason: format!(
                        "seq {} is a DATA request: receive its reply with recv",
                        pending.seq
                    ),
                });
            }
        };
        match received {
            Ok(reply) => {
                self.pending.pop_front();
                Ok(Some(reply))
            }
            // Once a byte has arrived the idle limit is gone, so a timeout before the overall
            // deadline can only be the idle limit, with nothing consumed.
            Err(Error::Timeout { .. })
                if overall.is_some_and(|overall| !overall.passed(Instant::now())) =>
            {
                Ok(None)
            }
            Err(e) if e.is_recoverable() => {
                self.pending.pop_front();
                self.said.heard(&e);
                Err(e)
            }
            Err(e) => {
                let context = format!("while waiting for the reply to seq {}", pending.seq);
                Err(self.fail(retarget(e, &format!("the reply to seq {}", pending.seq)), &context))
            }
        }
    }

    pub(super) fn recv_reply(
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

    /// Sends `values` and receives the reply into `dst`: one round trip. The reply must have
    /// the request's length and wire dtype, as every built-in handler's does; `dst` is checked
    /// before anything is sent. A server whose replies differ in shape from its requests is
    /// called with [`Peer::send`] and [`Peer::recv`].
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when `dst` is not as long as `values`, and
    /// [`Error::InvalidArgument`] when it would take another dtype off the wire than `values`
    /// put on it: nothing is sent and the peer stays usable. Otherwise those of
    /// [`Peer::send`] and [`Peer::recv`].
    ///
    /// # Examples
    /// ```
    /// # use std::thread;
    /// # use peerpipe::handlers::Echo;
    /// # use peerpipe::server::{serve, ServeOptions};
    /// # use peerpipe::transport::{Transport, Wait};
    /// # use peerpipe::{Error, Options, Peer};
    /// # let (client_end, mut server_end) = Transport::pipe_pair(Wait::Block)?;
    /// # let server = thread::spawn(move || serve(&mut server_end, &mut Echo::default(), &ServeOptions::default()));
    /// let mut peer = Peer::connect(client_end, Options::default())?;
    /// let state = vec![1.0; 500];
    /// let mut short = vec![0.0; 499];
    /// let err = peer.call_f64(&state, &mut short).unwrap_err(); // refused: nothing was sent
    /// assert!(matches!(err, Error::LengthMismatch { expected: 500, found: 499, .. }));
    /// let mut reply = vec![0.0; 500];
    /// peer.call_f64(&state, &mut reply)?; // the peer is still usable
    /// # peer.close()?;
    /// # server.join().unwrap()?;
    /// # Ok::<(), peerpipe::Error>(())
    /// ```
    pub fn call(&mut self, values: Values<'_>, dst: ValuesMut<'_>) -> Result<CallTiming> {
        self.check_open()?;
        check_reply_buffer(&values, &dst)?;
        if !self.pending.is_empty() {
            return Err(Error::InvalidArgument {
                what: "call",
                reason: format!(
                    "{} pipelined replies are still in flight; recv them first",
                    self.pending.len()
                ),
            });
        }
        self.send_with(values, true)?;
        Ok(self.recv(dst)?.timing)
    }

    /// Sends f64 values as f64 and receives an f64 reply of `reply.len()` elements.
    ///
    /// # Errors
    /// As [`Peer::call`].
    pub fn call_f64(&mut self, values: &[f64], reply: &mut [f64]) -> Result<CallTiming> {
        self.call(Values::F64(values), ValuesMut::F64(reply))
    }
}

/// The reply buffer of a [`Peer::call`] must take the request's shape back: the same length
/// and the same dtype on the wire.
pub(super) fn check_reply_buffer(values: &Values<'_>, dst: &ValuesMut<'_>) -> Result<()> {
    if dst.len() != values.len() {
        return Err(Error::LengthMismatch {
            what: "the reply buffer (a call's reply has the request's length)",
            expected: values.len() as u64,
            found: dst.len() as u64,
        });
    }
    if dst.wire_dtype() != values.wire_dtype() {
        return Err(Error::InvalidArgument {
            what: "reply buffer",
            reason: format!(
                "expected one that takes {} off the wire, as the request puts on it, found one \
                 that takes {}",
                values.wire_dtype(),
                dst.wire_dtype()
            ),
        });
    }
    Ok(())
}

impl Peer {
    /// Whether the codec path encodes into and decodes out of the transport in place
    /// (`shm-ring`, whose ring lends its memory) rather than through the scratch buffer. Not
    /// pipes (one `write` of the whole frame beats many small ones), nor `shm-sem`, where a
    /// frame must travel as one chunk of the slot for three to be in flight (see
    /// `Link::max_frames_in_flight`).
    pub(super) fn codec_in_place(&self) -> bool {
        self.transport.kind() == TransportKind::ShmRing
    }
}

/// Replaces the "what were we waiting for" of a timeout with something the caller recognises.
pub(super) fn retarget(error: Error, waiting_for: &str) -> Error {
    match error {
        Error::Timeout { after, .. } => {
            Error::Timeout { waiting_for: format!("waiting for {waiting_for}"), after }
        }
        other => other,
    }
}

pub(super) fn grow(buf: &mut Vec<u8>, len: usize) {
    if buf.len() < len {
        zerocopy::resize_exact(buf, len, 0);
    }
}
