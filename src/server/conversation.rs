//! One conversation on the server side: the HELLOs, reading each request whole and checked,
//! and sending its reply or ERROR. [`serve`](super::serve) drives it with a handler, a
//! [`Session`](super::Session) with the user's own loop; both answer every request the same.

use std::borrow::{Borrow, BorrowMut};
use std::io::IoSlice;
use std::ops::Range;
use std::time::{Duration, Instant};

use super::functions::unknown_function;
use super::handler::{Handler, Request, Response, array_dtype, part_dtype};
use super::options::{Ending, ServeOptions, ServeSummary};
use crate::clock::{self, Stamp};
use crate::codec::{self, Values};
use crate::error::{Error, Result};
use crate::frame::{self, Dtype, HEADER_LEN, Header, Hello, Kind, MAX_CONTROL_PAYLOAD};
use crate::parts::{ParseMemo, Parsed, PartsOut, Role, Shape, Slot, describe_shapes};
use crate::transport::{Deadline, Received, Transport};
use crate::zerocopy::{self, AlignedBuf};

/// How long the server tries to deliver an ERROR before closing after a protocol violation.
const ERROR_SEND_TIMEOUT: Duration = Duration::from_secs(1);

/// The server side of one conversation over a transport it owns or borrows (`T`), with
/// options it owns or borrows (`O`).
pub(super) struct Conversation<T, O> {
    pub(super) transport: T,
    pub(super) options: O,
    /// The client's `max_frame_bytes`, once its HELLO has been read.
    client_max: Option<u64>,
    /// The request being answered, laid out as on the wire (payload at offset 32).
    request: AlignedBuf,
    /// Requests usually repeat their size: the last one's, so that the next frame of that
    /// size arrives in one read.
    guess: usize,
    /// The functions served by name, as the HELLO announced them.
    pub(super) functions: Vec<String>,
    /// The parts of a PARTS reply, and its table (reused from request to request).
    pub(super) reply: PartsOut,
    /// The last request table accepted, for the next request that repeats it.
    tables: ParseMemo,
    /// Whether the function of the last request was served: a request repeating its table
    /// calls the same function, and is not looked up again.
    served: bool,
}

/// A request read whole, its header checked: where its payload lies in the request buffer.
pub(super) enum Incoming {
    /// A PARTS request; its part table not yet checked.
    Parts { seq: u64, started: Stamp, deadline: Deadline, payload: Range<usize> },
    /// A DATA request.
    Data { header: Header, started: Stamp, deadline: Deadline, payload: Range<usize> },
    /// The conversation ended: BYE (answered) or end of stream at a frame boundary.
    Ended(Ending),
    /// Nothing arrived before the idle limit; nothing was consumed.
    Idle,
}

impl<T: BorrowMut<Transport>, O: Borrow<ServeOptions>> Conversation<T, O> {
    pub(super) fn new(transport: T, options: O) -> Self {
        Conversation {
            transport,
            options,
            client_max: None,
            request: AlignedBuf::new(),
            guess: 0,
            functions: Vec::new(),
            reply: PartsOut::new(),
            tables: ParseMemo::default(),
            served: false,
        }
    }

    /// Answers every request with `handler` until BYE or end of stream.
    pub(super) fn run<H: Handler + ?Sized>(&mut self, handler: &mut H) -> Result<ServeSummary> {
        self.functions = handler.functions();
        self.handshake(handler.name())?;
        let mut summary = ServeSummary { replies: 0, rejected: 0, ending: Ending::EndOfStream };
        let mut encoded = Vec::new();
        loop {
            let (seq, started, deadline, payload, data) = match self.next_request(None)? {
                Incoming::Ended(ending) => {
                    summary.ending = ending;
                    return Ok(summary);
                }
                Incoming::Idle => unreachable!("no idle limit"),
                Incoming::Parts { seq, started, deadline, payload } => {
                    (seq, started, deadline, payload, None)
                }
                Incoming::Data { header, started, deadline, payload } => {
                    let shape = Shape::vector(part_dtype(header.dtype), header.count);
                    (header.seq, started, deadline, payload, Some([Slot::whole(shape)]))
                }
            };
            self.reply.clear();
            let answered = match &data {
                // A DATA request: the one-part, unnamed form of a request.
                Some(slot) => {
                    let parts = Parsed::one(&self.request.as_bytes()[payload], slot);
                    let request = Request { seq, function: "", parts };
                    handler.handle(request, &mut self.reply)
                }
                None => {
                    let transport = self.transport.borrow_mut();
                    let (request, tables, client_max) =
                        (&self.request, &mut self.tables, self.client_max);
                    let parts =
                        parse_request(request, tables, transport, client_max, seq, payload)?;
                    match refusal(&parts, &self.functions, &mut self.served) {
                        None => {
                            let request = Request { seq, function: parts.function(), parts };
                            handler.handle(request, &mut self.reply)
                        }
                        Some(message) => Err(message),
                    }
                }
            };
            // The reply takes the request's wire form.
            let sent = match (answered, data.is_some()) {
                (Ok(response), true) => {
                    let transport = self.transport.borrow_mut();
                    let to = Answering { seq, started, deadline };
                    send_array(
                        transport,
                        self.client_max,
                        &mut self.reply,
                        to,
                        response,
                        &mut encoded,
                    )?
                }
                (Ok(Response::Parts), false) => self.send_parts(seq, started, deadline)?,
                (Ok(array), false) => {
                    let pushed =
                        wire_form(array, &mut encoded).and_then(|(dtype, count, bytes)| {
                            let shape = Shape::vector(part_dtype(dtype), count);
                            self.reply.push_wire(shape, bytes)
                        });
                    match pushed {
                        Ok(()) => self.send_parts(seq, started, deadline)?,
                        Err(message) => Err(message),
                    }
                }
                (Err(message), _) => Err(message),
            };
            match sent {
                Ok(()) => summary.replies += 1,
                Err(message) => {
                    self.reject(seq, started, &message, deadline)?;
                    summary.rejected += 1;
                }
            }
        }
    }

    /// Reads the next request whole, its header checked (a violation is answered with ERROR
    /// and returned). With `idle_until`, gives up at that instant if no byte of a frame has
    /// arrived by then ([`Incoming::Idle`]); waits as long as it takes otherwise. Applies the
    /// options' delay.
    pub(super) fn next_request(&mut self, idle_until: Option<Instant>) -> Result<Incoming> {
        let frame_timeout = self.options.borrow().frame_timeout;
        let mut next = Deadline::once_data_arrives(frame_timeout);
        let waited_from = idle_until.map(|until| {
            next = next.or_idle_until(until);
            Instant::now()
        });
        let guess = self.guess;
        self.request.resize(HEADER_LEN + guess + frame::padding_len(guess));
        let received = self.transport.borrow_mut().recv_frame_contiguous(
            self.request.as_bytes_mut(),
            guess,
            next,
        );
        let (raw, payload_read) = match received {
            Ok(Received::Whole(raw)) => (raw, true),
            Ok(Received::Header(raw)) => (raw, false),
            Ok(Received::End) => return Ok(Incoming::Ended(Ending::EndOfStream)),
            Ok(Received::Broken(raw, e)) => {
                return Err(self.violation(Header::raw_seq(&raw), e));
            }
            // Once a byte has arrived only the frame timeout counts, and it ends no sooner
            // than that long after the wait began: a timeout before then is the idle limit.
            Err(Error::Timeout { .. })
                if waited_from.is_some_and(|from| {
                    frame_timeout.is_none_or(|timeout| from.elapsed() < timeout)
                }) =>
            {
                return Ok(Incoming::Idle);
            }
            Err(e) => return Err(self.violation(0, e)),
        };
        let started = Stamp::now();
        let header = self.parse(&raw)?;
        let deadline = Deadline::from_first_wait(frame_timeout);
        match header.kind {
            Kind::Data | Kind::Parts => {}
            Kind::Bye => {
                let bye = Header::control(Kind::Bye, header.seq, 0).to_bytes();
                self.transport.borrow_mut().send_frame(&bye, &[], deadline)?;
                return Ok(Incoming::Ended(Ending::Bye));
            }
            found => {
                let error = Error::UnexpectedKind { expected: "DATA or BYE", found };
                return Err(self.violation(header.seq, error));
            }
        }
        let len = header.payload_bytes()? as usize;
        let payload = HEADER_LEN..HEADER_LEN + len;
        if !payload_read {
            self.request.resize(payload.end);
            let buffer = &mut self.request.as_bytes_mut()[payload.clone()];
            if let Err(e) = self.transport.borrow_mut().recv_payload(buffer, deadline) {
                return Err(self.violation(header.seq, e));
            }
        }
        self.guess = len;
        let delay = self.options.borrow().delay;
        if !delay.is_zero() {
            // Not even a look at the clock without a delay: it would cost every request.
            spin_until(started, delay);
        }
        Ok(match header.kind {
            Kind::Parts => Incoming::Parts { seq: header.seq, started, deadline, payload },
            _ => Incoming::Data { header, started, deadline, payload },
        })
    }

    /// Checks the part table of the PARTS request `seq` at `payload` (a violation is answered
    /// with ERROR and returned) and the function it names: `Some` message for the ERROR that
    /// answers a call to a function not served, `None` when it may be called.
    pub(super) fn check_call(&mut self, seq: u64, payload: Range<usize>) -> Result<Option<String>> {
        let transport = self.transport.borrow_mut();
        let (request, tables, client_max) = (&self.request, &mut self.tables, self.client_max);
        let parsed = parse_request(request, tables, transport, client_max, seq, payload)?;
        Ok(refusal(&parsed, &self.functions, &mut self.served))
    }

    /// The part table of the PARTS request `seq` at `payload`, checked (a violation is
    /// answered with ERROR and returned).
    pub(super) fn parse_parts(&mut self, seq: u64, payload: Range<usize>) -> Result<Parsed<'_>> {
        let transport = self.transport.borrow_mut();
        parse_request(&self.request, &mut self.tables, transport, self.client_max, seq, payload)
    }

    /// Answers request `seq` with ERROR (case A): `message`, cut to what the client accepts.
    pub(super) fn reject(
        &mut self,
        seq: u64,
        started: Stamp,
        message: &str,
        deadline: Deadline,
    ) -> Result<()> {
        let message = truncate_message(message, error_limit(self.client_max));
        let mut out = Header::control(Kind::Error, seq, message.len() as u64);
        out.aux = started.elapsed_nanos();
        self.transport.borrow_mut().send_frame(&out.to_bytes(), message, deadline)
    }

    /// Sends the parts in `self.reply` as the PARTS reply to `seq`. The inner `Err` is the
    /// message of an ERROR to send in its place, when the reply breaks what the client
    /// accepts; the outer one a failure to send, which ends the conversation.
    pub(super) fn send_parts(
        &mut self,
        seq: u64,
        started: Stamp,
        deadline: Deadline,
    ) -> Result<std::result::Result<(), String>> {
        let len = self.reply.payload_len();
        let client_max = self.client_max.unwrap_or(0);
        if len > client_max {
            return Ok(Err(format!(
                "reply of {len} bytes exceeds the client's max_frame_bytes {client_max}{}",
                crate::error::RAISE_THE_CLIENTS_LIMIT
            )));
        }
        let mut out = Header::parts(seq, len);
        out.aux = started.elapsed_nanos();
        let header = out.to_bytes();
        let [table, parts] = self.reply.wire_payload();
        // A PARTS payload is whole words: no padding after it.
        let mut slices = [IoSlice::new(&header), IoSlice::new(table), IoSlice::new(parts)];
        self.transport.borrow_mut().send_frame_slices(&mut slices, deadline)?;
        Ok(Ok(()))
    }

    pub(super) fn handshake(&mut self, handler_name: &str) -> Result<()> {
        let deadline = Deadline::after(self.options.borrow().frame_timeout);
        let hello = Hello {
            functions: self.functions.clone(),
            ..Hello::server(self.options.borrow().max_frame_bytes, handler_name)
        };
        let payload = hello.to_payload();
        let header = Header::control(Kind::Hello, 0, payload.len() as u64).to_bytes();
        // The clock of the replies' server time is chosen (and calibrated, 2 ms of spinning)
        // before the HELLO goes out: a client answers the HELLO and sends its first request
        // at once, which would otherwise wait for the calibration.
        clock::init();
        self.transport.borrow_mut().send_frame(&header, &payload, deadline)?;
        let raw = match self.transport.borrow_mut().recv_header(deadline) {
            Ok(Some(raw)) => raw,
            Ok(None) => {
                let error = Error::Truncated {
                    what: "stream before HELLO",
                    expected: HEADER_LEN as u64,
                    got: 0,
                };
                return Err(self.violation(0, error));
            }
            Err(e) => return Err(self.violation(0, e)),
        };
        let header = self.parse(&raw)?;
        if header.kind != Kind::Hello {
            let error = Error::UnexpectedKind { expected: "HELLO", found: header.kind };
            return Err(self.violation(header.seq, error));
        }
        let len = header.payload_bytes()? as usize;
        self.request.resize(len);
        let client_hello = self
            .transport
            .borrow_mut()
            .recv_payload(self.request.as_bytes_mut(), deadline)
            .and_then(|()| Hello::parse(self.request.as_bytes()));
        match client_hello {
            Ok(hello) => {
                self.client_max = Some(hello.max_frame_bytes);
                Ok(())
            }
            Err(e) => Err(self.violation(header.seq, e)),
        }
    }

    /// Validates a header; on a violation sends ERROR (seq from the raw bytes) and fails.
    fn parse(&mut self, raw: &[u8; HEADER_LEN]) -> Result<Header> {
        Header::parse(raw, self.options.borrow().max_frame_bytes)
            .map_err(|e| self.violation(Header::raw_seq(raw), e.refused_by_server()))
    }

    /// Sends ERROR for a protocol violation (best effort) and returns the error to end with.
    pub(super) fn violation(&mut self, seq: u64, error: Error) -> Error {
        let text = error.to_string();
        send_violation(self.transport.borrow_mut(), self.client_max, seq, &text);
        error
    }
}

/// The message of the ERROR answering a call of `parsed`'s function when it is not among
/// `functions` (the default function, `""`, always is), `None` when it may be called. `served` keeps the answer for the next request:
/// one repeating the table (a solver's every call) names the same function.
fn refusal(parsed: &Parsed<'_>, functions: &[String], served: &mut bool) -> Option<String> {
    let function = parsed.function();
    *served = (parsed.repeated() && *served)
        || function.is_empty()
        || functions.iter().any(|f| f == function);
    (!*served).then(|| unknown_function(function, functions))
}

/// The part table of the PARTS request `seq` at `payload` in `request`, checked through
/// `tables`; a violation is answered with ERROR on `transport` and returned.
fn parse_request<'a>(
    request: &'a AlignedBuf,
    tables: &'a mut ParseMemo,
    transport: &mut Transport,
    client_max: Option<u64>,
    seq: u64,
    payload: Range<usize>,
) -> Result<Parsed<'a>> {
    tables.parse(&request.as_bytes()[payload], Role::Request).inspect_err(|e| {
        send_violation(transport, client_max, seq, &e.to_string());
    })
}

/// Sends ERROR with `text` for the request `seq` (best effort), cut to what a client whose
/// `max_frame_bytes` is `client_max` accepts.
fn send_violation(transport: &mut Transport, client_max: Option<u64>, seq: u64, text: &str) {
    let message = truncate_message(text, error_limit(client_max));
    let header = Header::control(Kind::Error, seq, message.len() as u64).to_bytes();
    let _ = transport.send_frame(&header, message, Deadline::after(Some(ERROR_SEND_TIMEOUT)));
}

/// The longest ERROR payload a client accepts: its `max_frame_bytes` once its HELLO is known
/// (`client_max`), and never more than [`MAX_CONTROL_PAYLOAD`].
fn error_limit(client_max: Option<u64>) -> usize {
    client_max.unwrap_or(MAX_CONTROL_PAYLOAD).min(MAX_CONTROL_PAYLOAD) as usize
}

/// The request being answered: its seq, when it was read, the deadline of its reply.
#[derive(Clone, Copy)]
struct Answering {
    seq: u64,
    started: Stamp,
    deadline: Deadline,
}

/// Sends `response` as the DATA reply `to` a request: an array, or the one vector part of
/// f64, f32 or bytes in `reply`. The inner `Err` is the message of an ERROR to send in its
/// place (a reply DATA cannot carry, or one larger than the client's `client_max` accepts);
/// the outer one a failure to send, which ends the conversation.
#[inline(always)]
fn send_array(
    transport: &mut Transport,
    client_max: Option<u64>,
    reply: &mut PartsOut,
    to: Answering,
    response: Response<'_>,
    encoded: &mut Vec<u8>,
) -> Result<std::result::Result<(), String>> {
    let array = match response {
        Response::Parts => one_array(reply),
        array => wire_form(array, encoded),
    };
    let client_max = client_max.unwrap_or(0);
    let (dtype, count, payload) = match array {
        Ok((_, _, payload)) if payload.len() as u64 > client_max => {
            return Ok(Err(format!(
                "reply of {} bytes exceeds the client's max_frame_bytes {}{}",
                payload.len(),
                client_max,
                crate::error::RAISE_THE_CLIENTS_LIMIT
            )));
        }
        Ok(array) => array,
        Err(message) => return Ok(Err(message)),
    };
    let mut out = Header::data(to.seq, dtype, count);
    out.aux = to.started.elapsed_nanos();
    transport.send_frame(&out.to_bytes(), payload, to.deadline)?;
    Ok(Ok(()))
}

/// The (dtype, count, bytes) an array response goes out as; encodes into `encoded` when the
/// zero-copy path is unavailable.
fn wire_form<'a>(
    response: Response<'a>,
    encoded: &'a mut Vec<u8>,
) -> std::result::Result<(Dtype, u64, &'a [u8]), String> {
    let values = match response {
        Response::Bytes(bytes) => return Ok((Dtype::Bytes, bytes.len() as u64, bytes)),
        Response::Wire { dtype, count, payload } => {
            let expected = count.checked_mul(dtype.width());
            if expected != Some(payload.len() as u64) {
                return Err(format!(
                    "handler bug: {count} × {dtype} needs {expected:?} bytes, got {}",
                    payload.len()
                ));
            }
            return Ok((dtype, count, payload));
        }
        Response::F64(v) => Values::F64(v),
        Response::F32(v) => Values::F32(v),
        Response::Parts => return Err("handler bug: parts where an array was expected".into()),
    };
    let (dtype, count) = (values.wire_dtype(), values.len() as u64);
    if let Some(bytes) = zerocopy::wire_bytes(values) {
        return Ok((dtype, count, bytes));
    }
    zerocopy::resize_exact(encoded, values.wire_len(), 0);
    codec::encode_into(values, encoded).map_err(|e| e.to_string())?;
    Ok((dtype, count, encoded))
}

/// The (dtype, count, bytes) of the one vector part of f64, f32 or bytes in `reply`: a
/// DATA request's reply written as parts. Any other reply is the message of an ERROR.
fn one_array(reply: &mut PartsOut) -> std::result::Result<(Dtype, u64, &[u8]), String> {
    let one = match reply.shapes() {
        [shape] if shape.cols == 0 => array_dtype(shape.dtype).map(|dtype| (dtype, shape.count)),
        _ => None,
    };
    let Some((dtype, count)) = one else {
        return Err(format!(
            "a DATA request's reply is one array of f64, f32 or bytes; the handler answered {}",
            describe_shapes(reply.shapes().iter().copied())
        ));
    };
    let [_table, values] = reply.wire_payload();
    Ok((dtype, count, &values[..(count * dtype.width()) as usize]))
}

/// An ERROR payload cut to at most `max` bytes, at a character boundary.
fn truncate_message(message: &str, max: usize) -> &[u8] {
    if message.len() <= max {
        return message.as_bytes();
    }
    let mut end = max;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    &message.as_bytes()[..end]
}

/// Busy-waits until `delay` after `start`, on the clock of the reply's server time: a sleep
/// would add the timer slack and a wake-up to the delay.
fn spin_until(start: Stamp, delay: Duration) {
    let delay = delay.as_nanos().min(u128::from(u64::MAX)) as u64;
    while start.elapsed_nanos() < delay {
        std::hint::spin_loop();
    }
}
