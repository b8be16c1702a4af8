//! [`Session`]: a server whose loop is the user's own — receive a call, reply, then compute —
//! instead of a [`Handler`](super::Handler) that [`serve`](super::serve) calls.
//!
//! Its use is two models stepping together. The client (a [`Peer`](crate::Peer)) calls
//! `exchange` with its coupling values each step; the session replies at once with its own
//! and only then computes its step, while the client computes its own: both halves run at
//! the same time, and a step costs the slower half plus the exchange, not the sum of both.
//! See `examples/heat_rod.rs`.
//!
//! ```no_run
//! use peerpipe::parts::Part;
//! use peerpipe::server::{Session, StdioOptions};
//!
//! let mut session = Session::stdio("right-half", &["exchange", "state"], &StdioOptions::default())?;
//! let mut mine = vec![0.0; 100];
//! while let Some(call) = session.recv()? {
//!     if call.function == "state" {
//!         session.reply(&[Part::f64(&mine)])?;
//!         continue;
//!     }
//!     let theirs = match call.f64(1) {
//!         Ok(values) => values[0],
//!         Err(message) => {
//!             session.reject(&message)?; // the client gets ERROR; go on
//!             continue;
//!         }
//!     };
//!     session.reply(&[Part::f64(&mine[..1])])?; // the client computes from here on...
//!     mine[0] = 0.5 * (mine[0] + theirs); // ...and so does this side
//! }
//! # Ok::<(), peerpipe::Error>(())
//! ```

use std::time::Instant;

use super::conversation::{Conversation, Incoming};
use super::functions::no_function_named;
use super::handler::Request;
use super::options::{Ending, ServeOptions};
use super::stdio::{StdioOptions, stdio_transport_with};
use crate::clock::Stamp;
use crate::error::{Error, Result};
use crate::parts::{MAX_FUNCTIONS, Part, PartsOut, check_function_name};
use crate::transport::{Deadline, Transport};

/// The server side of one conversation, driven by the caller: [`Session::recv`] gives the
/// next call, and [`Session::reply`] (or [`Session::reject`]) answers it — one answer per
/// call, in order, before the next is received. Answers calls to functions it does not serve
/// — the default function included, which a DATA request calls — with ERROR itself, and BYE with BYE, as [`serve`](super::serve) does.
pub struct Session {
    conversation: Conversation<Transport, ServeOptions>,
    /// The call received and not answered yet.
    pending: Option<Pending>,
    /// How the conversation ended, once it has.
    ending: Option<Ending>,
    /// The error that ended the conversation, once one has.
    failed: Option<String>,
}

#[derive(Clone, Copy)]
struct Pending {
    seq: u64,
    started: Stamp,
    deadline: Deadline,
}

/// What [`Session::next`] found.
#[derive(Debug)]
pub enum Next<'a> {
    /// A call to answer (borrowed until the answer).
    Call(Request<'a>),
    /// Nothing arrived before the idle limit; call again.
    Idle,
    /// The conversation ended: the client said BYE, or closed its end between frames (it
    /// exited, or was killed).
    End(Ending),
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("functions", &self.conversation.functions)
            .field("answering", &self.pending.map(|p| p.seq))
            .field("ending", &self.ending)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Opens a session over `transport`: sends this server's HELLO (naming it `name`, and
    /// announcing `functions`) and reads the client's.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a function name that is not valid, repeated, or more
    /// than [`MAX_FUNCTIONS`] of them (nothing is sent); then the errors of the handshake, as
    /// [`serve`](super::serve) has them.
    pub fn new(
        transport: Transport,
        name: &str,
        functions: &[&str],
        options: ServeOptions,
    ) -> Result<Session> {
        let functions = checked_functions(functions)?;
        let mut conversation = Conversation::new(transport, options);
        conversation.functions = functions;
        conversation.handshake(name)?;
        Ok(Session { conversation, pending: None, ending: None, failed: None })
    }

    /// Opens a session over this process's stdin and stdout, as a server spawned by a
    /// peerpipe client ([`stdio_transport_with`], then [`Session::new`]).
    ///
    /// # Errors
    /// As [`stdio_transport_with`] and [`Session::new`]; the function names are checked
    /// before stdio is touched.
    pub fn stdio(name: &str, functions: &[&str], options: &StdioOptions) -> Result<Session> {
        checked_functions(functions)?;
        let (_, transport) = stdio_transport_with(options)?;
        Session::new(transport, name, functions, options.serve.clone())
    }

    /// The functions this session serves, as its HELLO announced them.
    pub fn functions(&self) -> &[String] {
        &self.conversation.functions
    }

    /// How the conversation ended, once [`Session::recv`] has seen it end.
    pub fn ending(&self) -> Option<Ending> {
        self.ending
    }

    /// The next call, waiting as long as it takes; `None` once the conversation has ended
    /// (see [`Session::ending`]).
    ///
    /// # Errors
    /// As [`Session::next`].
    pub fn recv(&mut self) -> Result<Option<Request<'_>>> {
        match self.next(None)? {
            Next::Call(call) => Ok(Some(call)),
            Next::End(_) => Ok(None),
            Next::Idle => unreachable!("no idle limit"),
        }
    }

    /// The next call, or [`Next::Idle`] when no byte of one has arrived by `idle_until` (the
    /// stream is untouched: call again), or [`Next::End`]. `None` waits as long as it takes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the last call has not been answered (nothing is read);
    /// a protocol violation by the client, a timeout inside a frame or an I/O failure, after
    /// which the conversation is over and every later call fails.
    pub fn next(&mut self, idle_until: Option<Instant>) -> Result<Next<'_>> {
        self.check_usable()?;
        if let Some(ending) = self.ending {
            return Ok(Next::End(ending));
        }
        if let Some(pending) = self.pending {
            return Err(Error::InvalidArgument {
                what: "recv",
                reason: format!(
                    "the call with seq {} is not answered yet: reply or reject it first",
                    pending.seq
                ),
            });
        }
        loop {
            let incoming = self.conversation.next_request(idle_until);
            let (seq, started, deadline, payload) = match self.note(incoming)? {
                Incoming::Ended(ending) => {
                    self.ending = Some(ending);
                    return Ok(Next::End(ending));
                }
                Incoming::Idle => return Ok(Next::Idle),
                Incoming::Data { header, started, deadline, .. } => {
                    // A call to the default function, which a session does not serve.
                    let message = no_function_named(&self.conversation.functions.join(", "));
                    self.answer_error(header.seq, started, &message, deadline)?;
                    continue;
                }
                Incoming::Parts { seq, started, deadline, payload } => {
                    (seq, started, deadline, payload)
                }
            };
            let checked = self.conversation.check_call(seq, payload.clone());
            let mut unknown = self.note(checked)?;
            if unknown.is_none()
                && self.conversation.parse_parts(seq, payload.clone())?.function().is_empty()
            {
                unknown = Some(no_function_named(&self.conversation.functions.join(", ")));
            }
            if let Some(message) = unknown {
                self.answer_error(seq, started, &message, deadline)?;
                continue;
            }
            self.pending = Some(Pending { seq, started, deadline });
            // Checked a moment ago: the memo of the last table answers at once.
            let parts = self.conversation.parse_parts(seq, payload)?;
            return Ok(Next::Call(Request { seq, function: parts.function(), parts }));
        }
    }

    /// Answers the call received last with `parts`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when no call is waiting for an answer; when the parts
    /// cannot make a reply (more than [`MAX_PARTS`](crate::parts::MAX_PARTS), too large for
    /// the client's `max_frame_bytes`) the client gets ERROR saying so and this returns
    /// [`Error::InvalidArgument`] with the same words, the conversation going on; a failure to
    /// send ends the conversation.
    pub fn reply(&mut self, parts: &[Part<'_>]) -> Result<()> {
        self.reply_with(|out| parts.iter().try_for_each(|part| out.push(*part))).map_err(
            |e| match e {
                Error::Remote { message, .. } => {
                    Error::InvalidArgument { what: "reply", reason: message }
                }
                e => e,
            },
        )
    }

    /// Answers the call received last with the parts `fill` writes (see [`PartsOut`]: a
    /// part to overwrite saves a copy). An `Err` from `fill` is sent to the client as ERROR
    /// and returned as [`Error::Remote`], the conversation going on.
    ///
    /// # Errors
    /// As [`Session::reply`], and `fill`'s error as said.
    pub fn reply_with(
        &mut self,
        fill: impl FnOnce(&mut PartsOut) -> std::result::Result<(), String>,
    ) -> Result<()> {
        let pending = self.take_pending("reply")?;
        self.conversation.reply.clear();
        let sent = match fill(&mut self.conversation.reply) {
            Ok(()) => {
                let sent =
                    self.conversation.send_parts(pending.seq, pending.started, pending.deadline);
                self.note(sent)?
            }
            Err(message) => Err(message),
        };
        match sent {
            Ok(()) => Ok(()),
            Err(message) => {
                self.answer_error(pending.seq, pending.started, &message, pending.deadline)?;
                Err(Error::Remote { seq: pending.seq, message })
            }
        }
    }

    /// Answers the call received last with ERROR carrying `message` (cut to what the client
    /// accepts); the conversation goes on.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when no call is waiting for an answer; a failure to send
    /// ends the conversation.
    pub fn reject(&mut self, message: &str) -> Result<()> {
        let pending = self.take_pending("reject")?;
        self.answer_error(pending.seq, pending.started, message, pending.deadline)
    }

    fn take_pending(&mut self, what: &'static str) -> Result<Pending> {
        self.check_usable()?;
        self.pending.take().ok_or_else(|| Error::InvalidArgument {
            what,
            reason: "no call is waiting for an answer: recv one first".into(),
        })
    }

    fn answer_error(
        &mut self,
        seq: u64,
        started: Stamp,
        message: &str,
        deadline: Deadline,
    ) -> Result<()> {
        let sent = self.conversation.reject(seq, started, message, deadline);
        self.note(sent)
    }

    /// `result`, remembering an error as the end of the conversation.
    fn note<T>(&mut self, result: Result<T>) -> Result<T> {
        if let Err(e) = &result {
            self.failed = Some(e.to_string());
            self.pending = None;
        }
        result
    }

    fn check_usable(&self) -> Result<()> {
        match &self.failed {
            None => Ok(()),
            Some(error) => Err(Error::InvalidArgument {
                what: "session",
                reason: format!("the conversation ended with an error: {error}"),
            }),
        }
    }
}

/// `functions` as a HELLO announces them, each name checked and none twice.
fn checked_functions(functions: &[&str]) -> Result<Vec<String>> {
    let invalid = |reason: String| Error::InvalidArgument { what: "function name", reason };
    if functions.len() > MAX_FUNCTIONS {
        return Err(invalid(format!("a server serves at most {MAX_FUNCTIONS} functions")));
    }
    for (i, name) in functions.iter().enumerate() {
        check_function_name(name).map_err(invalid)?;
        if functions[..i].contains(name) {
            return Err(invalid(format!("{name:?} is named twice")));
        }
    }
    Ok(functions.iter().map(|&name| name.to_owned()).collect())
}
