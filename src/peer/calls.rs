//! The one path of every call — a [`Request`] sent, its reply received [`ReplyInto`] the
//! caller's buffers, by a deadline or in slices — and its short forms: [`Peer::call`],
//! [`Peer::call_parts`] and the others. The wire forms are `data_frames` (DATA) and
//! `parts_frames` (PARTS).

use std::time::{Duration, Instant};

use super::message::{ReplyInto, Request};
use super::reply::{CallTiming, PartsReply, Reply};
use super::{Peer, Pending};
use crate::clock::Stamp;
use crate::codec::{Values, ValuesMut};
use crate::error::{Error, Result};
use crate::parts::{Part, PartMut};
use crate::transport::Deadline;

impl Peer {
    /// Sends `request` and receives its reply into `into`: one round trip, the one every
    /// call of a [`Peer`] takes. A [`Request::Array`] travels as DATA and takes a
    /// [`ReplyInto::Array`]; a [`Request::Call`] travels as PARTS and takes
    /// [`ReplyInto::Parts`] or [`ReplyInto::Any`]. A large zero-copy array may be lent to the
    /// transport rather than copied (`vmsplice` on a pipe): the call returns after the reply,
    /// and a server replies only after reading the whole request.
    ///
    /// # Errors
    /// Refused before anything is sent, the peer staying usable: [`Error::InvalidArgument`]
    /// when replies are still in flight, when `into` cannot take the reply of `request`, for
    /// a bad function name or too many parts; [`Error::Unsupported`] for a PARTS request to a
    /// server that does not speak PARTS; [`Error::FrameTooLarge`] beyond the server's
    /// `max_frame_bytes`. Otherwise those of [`Peer::send_request`] and
    /// [`Peer::recv_reply`]. On error the contents of `into` are unspecified.
    pub fn call_request(
        &mut self,
        request: Request<'_, '_>,
        into: ReplyInto<'_, '_>,
    ) -> Result<CallTiming> {
        self.round_trip("call_request", request, into)
    }

    #[inline]
    fn round_trip(
        &mut self,
        what: &'static str,
        request: Request<'_, '_>,
        mut into: ReplyInto<'_, '_>,
    ) -> Result<CallTiming> {
        self.check_open()?;
        if !self.pending.is_empty() {
            return Err(Error::InvalidArgument {
                what,
                reason: format!(
                    "{} pipelined replies are still in flight; recv them first",
                    self.pending.len()
                ),
            });
        }
        if request.is_parts() != into.is_parts() {
            return Err(mismatch(what, request.is_parts()));
        }
        self.send_lending(request, true)?;
        let deadline = Deadline::after(self.options.timeout);
        let reply = self.recv_until(&mut into, deadline, None)?;
        Ok(reply.expect("a wait without an idle limit returns a reply or an error").timing)
    }

    /// Sends `request` and returns its seq, without waiting for the reply. Several requests
    /// may be in flight; receive their replies in order with [`Peer::recv_reply`]. The
    /// replies of all requests in flight must fit in the pipe or ring (see
    /// [`Peer::capacity`]), because the server stops reading while its reply pipe is full;
    /// over `shm-sem` at most [`Peer::max_in_flight`] requests may be in flight.
    ///
    /// # Errors
    /// Refused, nothing sent and the peer usable: [`Error::InvalidArgument`] when the
    /// transport's limit of requests in flight is reached, for a bad function name or too
    /// many parts; [`Error::Unsupported`] for a PARTS request to a server that does not speak
    /// PARTS; [`Error::FrameTooLarge`] beyond the server's `max_frame_bytes`. [`Error::Timeout`]
    /// or [`Error::PeerClosed`] / [`Error::PeerExited`] when the frame cannot be written (the
    /// server is then terminated).
    pub fn send_request(&mut self, request: Request<'_, '_>) -> Result<u64> {
        self.send_lending(request, false)
    }

    fn send_lending(&mut self, request: Request<'_, '_>, lend: bool) -> Result<u64> {
        self.check_open()?;
        if request.is_parts() {
            self.check_speaks_parts()?;
        }
        self.check_room_in_flight()?;
        let seq = self.next_seq;
        let started = Stamp::now();
        let (sent, encode_ns) = match request {
            Request::Array(values) => self.send_array(seq, started, values, lend)?,
            Request::Call { function, parts } => self.send_call(seq, started, function, parts)?,
        };
        if let Err(e) = sent {
            let context = format!("while sending seq {seq}");
            return Err(self.fail(retarget(e, &format!("room to send seq {seq}")), &context));
        }
        let parts = request.is_parts();
        self.pending.push_back(Pending { seq, started, encode_ns, reply_deadline: None, parts });
        self.next_seq += 1;
        Ok(seq)
    }

    /// Refuses a request beyond the transport's limit of requests in flight.
    fn check_room_in_flight(&self) -> Result<()> {
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

    /// Receives the reply to the oldest request in flight into `into`, which fixes what the
    /// reply must be: the array's dtype and count, or the parts' shapes.
    ///
    /// # Errors
    /// [`Error::Remote`] when the server answered ERROR, [`Error::ShapeMismatch`] for a PARTS
    /// reply of other shapes than [`ReplyInto::Parts`] (read whole), and
    /// [`Error::InvalidArgument`] when nothing is in flight or `into` cannot take the oldest
    /// request's reply: the peer stays usable. Otherwise [`Error::Timeout`],
    /// [`Error::SeqMismatch`], [`Error::DtypeMismatch`], [`Error::CountMismatch`], a frame
    /// error, or [`Error::PeerExited`] / [`Error::PeerClosed`], after which the server is
    /// terminated. On error the contents of `into` are unspecified.
    pub fn recv_reply(&mut self, mut into: ReplyInto<'_, '_>) -> Result<Reply> {
        let deadline = Deadline::after(self.options.timeout);
        let reply = self.recv_until(&mut into, deadline, None)?;
        Ok(reply.expect("a wait without an idle limit returns a reply or an error"))
    }

    /// Like [`Peer::recv_reply`], but returns `Ok(None)` when no byte of the reply has
    /// arrived within `patience`: the request stays in flight and the peer untouched, so the
    /// caller can wait again with the same `into` — in slices, checking for an interrupt in between, as the Python
    /// binding does for Ctrl-C. A reply that has started arriving is read to its end. The
    /// timeout of [`Options::timeout`](super::Options::timeout) counts from the first of these
    /// waits for the reply, as a [`Peer::recv_reply`]'s counts from its start; once it has
    /// passed, the error (and the server's termination) are those of [`Peer::recv_reply`].
    ///
    /// # Errors
    /// As [`Peer::recv_reply`].
    pub fn recv_reply_for(
        &mut self,
        into: &mut ReplyInto<'_, '_>,
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
        self.recv_until(into, deadline, Some(overall))
    }

    /// The reply to the oldest request, by `deadline`; `Ok(None)` when `deadline` has an idle
    /// limit that passed with nothing read while `overall` has not passed.
    fn recv_until(
        &mut self,
        into: &mut ReplyInto<'_, '_>,
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
        let received = match into {
            ReplyInto::Array(dst) if !pending.parts => {
                self.recv_array_reply(pending, dst.reborrow(), deadline)
            }
            ReplyInto::Parts(outputs) if pending.parts => {
                self.recv_parts_into(pending, outputs, deadline)
            }
            ReplyInto::Any(reply) if pending.parts => self.recv_parts_any(pending, reply, deadline),
            _ => {
                return Err(Error::InvalidArgument {
                    what: "recv",
                    reason: format!("seq {} is {}", pending.seq, mismatch_reason(pending.parts)),
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
}

/// The short forms of the one path, for the calls users make most.
impl Peer {
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
        self.round_trip("call", Request::Array(values), ReplyInto::Array(dst))
    }

    /// Sends f64 values as f64 and receives an f64 reply of `reply.len()` elements.
    ///
    /// # Errors
    /// As [`Peer::call`].
    pub fn call_f64(&mut self, values: &[f64], reply: &mut [f64]) -> Result<CallTiming> {
        self.call(Values::F64(values), ValuesMut::F64(reply))
    }

    /// Calls `function` (`""`: the server's default function) with `inputs`, and receives the
    /// reply's parts into `outputs`, whose shapes (dtype, length, matrix columns) the reply
    /// must have: one round trip, sent from the caller's slices in one vectored write, no
    /// allocation once warm. [`Peer::call_request`] with a [`Request::Call`] and
    /// [`ReplyInto::Parts`].
    ///
    /// # Errors
    /// Refused before anything is sent, the peer staying usable: [`Error::Unsupported`] when
    /// the server does not speak PARTS; [`Error::InvalidArgument`] for a bad function name,
    /// more than [`crate::parts::MAX_PARTS`] parts or replies still in flight;
    /// [`Error::FrameTooLarge`] beyond the server's `max_frame_bytes`. After the call, the
    /// peer staying usable: [`Error::Remote`] (the server's ERROR: an unknown function, a
    /// refused call) and [`Error::ShapeMismatch`] (a reply of other shapes than `outputs`,
    /// read whole). Otherwise those of [`Peer::recv_reply`], after which the server is
    /// terminated. On error the contents of `outputs` are unspecified.
    pub fn call_parts(
        &mut self,
        function: &str,
        inputs: &[Part<'_>],
        outputs: &mut [PartMut<'_>],
    ) -> Result<CallTiming> {
        let request = Request::Call { function, parts: inputs };
        self.round_trip("call_parts", request, ReplyInto::Parts(outputs))
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
        let request = Request::Call { function, parts: inputs };
        self.round_trip("call_parts_any", request, ReplyInto::Any(reply))
    }

    /// Sends one DATA request ([`Peer::send_request`] with a [`Request::Array`]) and returns
    /// its seq, without waiting for the reply; receive it with [`Peer::recv`].
    ///
    /// # Errors
    /// As [`Peer::send_request`].
    pub fn send(&mut self, values: Values<'_>) -> Result<u64> {
        self.send_request(Request::Array(values))
    }

    /// Sends one PARTS request calling `function` with `inputs` ([`Peer::send_request`] with
    /// a [`Request::Call`]) and returns its seq; receive its reply with [`Peer::recv_reply`].
    ///
    /// # Errors
    /// As [`Peer::send_request`].
    pub fn send_parts(&mut self, function: &str, inputs: &[Part<'_>]) -> Result<u64> {
        self.send_request(Request::Call { function, parts: inputs })
    }

    /// Receives the reply to the oldest request in flight, a DATA request, into `dst`
    /// ([`Peer::recv_reply`] with a [`ReplyInto::Array`]).
    ///
    /// # Errors
    /// As [`Peer::recv_reply`].
    pub fn recv(&mut self, dst: ValuesMut<'_>) -> Result<Reply> {
        self.recv_reply(ReplyInto::Array(dst))
    }

    /// [`Peer::recv`] in slices: [`Peer::recv_reply_for`] with a [`ReplyInto::Array`].
    ///
    /// # Errors
    /// As [`Peer::recv_reply`].
    pub fn recv_for(&mut self, dst: ValuesMut<'_>, patience: Duration) -> Result<Option<Reply>> {
        self.recv_reply_for(&mut ReplyInto::Array(dst), patience)
    }
}

/// The reply buffer of a [`Peer::call`] must take the request's shape back: the same length
/// and the same dtype on the wire.
fn check_reply_buffer(values: &Values<'_>, dst: &ValuesMut<'_>) -> Result<()> {
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

/// A request whose reply the caller's buffers cannot take.
fn mismatch(what: &'static str, parts: bool) -> Error {
    Error::InvalidArgument { what, reason: format!("the request is {}", mismatch_reason(parts)) }
}

fn mismatch_reason(parts: bool) -> &'static str {
    if parts {
        "a PARTS request: its reply goes into parts (ReplyInto::Parts or ReplyInto::Any)"
    } else {
        "a DATA request: its reply goes into an array (ReplyInto::Array)"
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
