//! What a [`Peer`] tells of itself (its server, its transport, its settings) and how it ends:
//! BYE, or terminating the server, and reaping it; and how a failure ends it.

use std::process::ExitStatus;
use std::time::Duration;

use super::calls::retarget;
use super::command::is_descendant;
use super::data_frames::grow;
use super::options::{CLOSE_GRACE, DataPath};
use super::{Options, Peer, State};
use crate::error::{Error, Result};
use crate::frame::{Header, Hello, Kind};
use crate::transport::{Deadline, TransportKind};

impl Peer {
    /// The server's HELLO: its frame limit, handler and implementation.
    pub fn server_hello(&self) -> &Hello {
        &self.server_hello
    }

    /// Bytes that can be in flight in each direction: the smaller pipe's capacity, or the
    /// shared ring or slot size; `None` when unknown.
    pub fn capacity(&self) -> Option<usize> {
        self.transport.capacity()
    }

    /// Most requests that may be in flight at once, when the transport bounds it by count
    /// (`shm-sem`: 3, each at most [`Peer::capacity`] bytes); `None` when only bytes bound it.
    pub fn max_in_flight(&self) -> Option<usize> {
        self.transport.max_frames_in_flight()
    }

    /// Moves of this side's thread to an idle CPU, off a core shared with the server (see
    /// docs/WAITING.md; the server moves off the client's core the same way).
    pub fn moves(&self) -> u64 {
        self.transport.moves()
    }

    /// What this side's [`Wait::Auto`](crate::Wait::Auto) has learned of the connection, and
    /// what its waits saw (unused with another wait strategy).
    pub fn auto_wait(&self) -> &crate::transport::AutoWaiter {
        self.transport.auto_wait()
    }

    /// Which transport this peer talks over.
    pub fn transport_kind(&self) -> TransportKind {
        self.transport.kind()
    }

    /// The id of the process this peer spawned — the server itself, or what stands between
    /// (`sh -c`, an ssh client) — until it is reaped; `None` for a peer that connected to an
    /// existing transport.
    pub fn spawned_pid(&self) -> Option<u32> {
        self.child.as_ref().map(|child| child.id())
    }

    /// The id of the local process that serves, when this peer spawned the server and it can
    /// be known: the spawned process when its HELLO's `pid=` names it (or names none), a
    /// descendant of it when the HELLO names that (a server behind `sh -c "cd dir && peer
    /// …"`), and `None` when the HELLO names a process that is not ours — a server on another
    /// machine (`ssh host peer …`), whose CPU time cannot be read here.
    pub fn server_pid(&self) -> Option<u32> {
        let spawned = self.child.as_ref()?.id();
        match self.server_hello.pid {
            None => Some(spawned),
            Some(pid) if pid == spawned || is_descendant(pid, spawned) => Some(pid),
            Some(_) => None,
        }
    }

    /// Switches between the zero-copy and codec paths for the following calls.
    pub fn set_path(&mut self, path: DataPath) {
        self.options.path = path;
    }

    /// Changes the deadline of each following reply (and of `close`); `None` waits forever.
    /// A call already under way keeps the deadline it started with.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.options.timeout = timeout;
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Number of requests sent whose replies have not been received yet.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// True while calls can go on; false once an error ended the conversation (the server
    /// was terminated and reaped, and every later call fails with [`Error::ClosedAfter`]).
    /// An error after which it is still true — a refusal before anything was sent, an ERROR
    /// reply, a reply of another shape — left the conversation in step: a binding asks this
    /// rather than guessing from the error.
    pub fn is_open(&self) -> bool {
        self.state == State::Open
    }

    /// Ends the conversation: receives and discards replies still in flight, sends BYE, waits
    /// for the server's BYE and for the server process to exit (terminating it after
    /// [`CLOSE_GRACE`]), and returns its exit status when this peer spawned it.
    ///
    /// # Errors
    /// Any error of the exchange; the server is terminated and reaped all the same.
    pub fn close(mut self) -> Result<Option<ExitStatus>> {
        self.shutdown()
    }

    /// Ends the conversation without BYE: drops any request in flight, terminates the server
    /// (SIGTERM, then SIGKILL after [`crate::process::TERM_GRACE`]) and reaps it, returning
    /// its exit status when this peer spawned it. For abandoning a call in progress — on
    /// Ctrl-C, say — where [`Peer::close`] would first wait for the reply.
    ///
    /// # Errors
    /// [`Error::Io`] when the server cannot be reaped.
    pub fn terminate(mut self) -> Result<Option<ExitStatus>> {
        self.state = State::Closed;
        self.pending.clear();
        match self.child.as_mut() {
            Some(child) => Ok(Some(child.terminate()?)),
            None => Ok(None),
        }
    }

    fn shutdown(&mut self) -> Result<Option<ExitStatus>> {
        if self.state == State::Open {
            self.state = State::Closed;
            if let Err(e) = self.say_bye() {
                return Err(self.fail(e, "while closing"));
            }
        }
        self.state = State::Closed;
        let Some(child) = self.child.as_mut() else { return Ok(None) };
        if let Some(status) = child.wait_timeout(CLOSE_GRACE)? {
            return Ok(Some(status));
        }
        let status = child.terminate()?;
        Err(crate::process::exited(
            status,
            format!("after not exiting within {CLOSE_GRACE:?} of BYE"),
        ))
    }

    fn say_bye(&mut self) -> Result<()> {
        let deadline = Deadline::after(self.options.timeout);
        while let Some(pending) = self.pending.pop_front() {
            self.discard_reply(pending.seq, deadline)?;
        }
        let seq = self.next_seq;
        let header = Header::control(Kind::Bye, seq, 0).to_bytes();
        self.transport.send_frame(&header, &[], deadline)?;
        let raw = self
            .transport
            .recv_header(deadline)
            .map_err(|e| retarget(e, "the server's BYE"))?
            .ok_or(Error::PeerClosed { context: "before answering BYE" })?;
        let header = Header::parse(&raw, self.options.max_frame_bytes)?;
        if header.kind != Kind::Bye {
            return Err(Error::UnexpectedKind { expected: "BYE", found: header.kind });
        }
        if header.seq != seq {
            return Err(Error::SeqMismatch { expected: seq, found: header.seq });
        }
        Ok(())
    }

    fn discard_reply(&mut self, seq: u64, deadline: Deadline) -> Result<()> {
        let raw = self
            .transport
            .recv_header(deadline)?
            .ok_or(Error::PeerClosed { context: "before replying" })?;
        let header = Header::parse(&raw, self.options.max_frame_bytes)?;
        if header.seq != seq {
            return Err(Error::SeqMismatch { expected: seq, found: header.seq });
        }
        let len = header.payload_bytes()? as usize;
        grow(&mut self.scratch, len);
        self.transport.recv_payload(&mut self.scratch[..len], deadline)
    }

    pub(super) fn check_open(&self) -> Result<()> {
        match &self.state {
            State::Open => Ok(()),
            State::Failed(cause) => Err(Error::ClosedAfter { cause: cause.clone() }),
            State::Closed => Err(Error::PeerClosed { context: "already (closed by this side)" }),
        }
    }

    /// Marks the peer failed (every later call repeats why), terminates and reaps the server,
    /// and names its exit in the error when it had died by itself.
    pub(super) fn fail(&mut self, error: Error, context: &str) -> Error {
        let error = self.end_after(error, context);
        let error = self.said.attach(error);
        self.state = State::Failed(error.to_string());
        error
    }

    /// Terminates and reaps the server after `error`, and names its exit in the error when it
    /// had died by itself.
    pub(super) fn end_after(&mut self, error: Error, context: &str) -> Error {
        self.pending.clear();
        let Some(child) = self.child.as_mut() else { return error };
        // A dead server shows up as end of stream slightly before its exit status is
        // available, and a program that is no server (a bad HELLO) often ends right after
        // what it printed; give it a moment so the error can say how it ended.
        let died_on_its_own = match error {
            Error::PeerClosed { .. } | Error::Truncated { .. } | Error::BadHello { .. } => {
                child.wait_timeout(Duration::from_millis(100)).ok().flatten()
            }
            _ => child.try_wait().ok().flatten(),
        };
        match died_on_its_own {
            Some(status) => {
                let said = self
                    .stderr
                    .as_ref()
                    .map(|tail| tail.text(Duration::from_millis(200)))
                    .filter(|text| !text.is_empty())
                    .map_or_else(String::new, |text| format!("; its stderr ended with: {text}"));
                crate::process::exited(status, format!("{context} ({error}){said}"))
            }
            None => {
                let _ = child.terminate();
                error
            }
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if self.state == State::Open {
            let _ = self.shutdown();
        } else if let Some(child) = self.child.as_mut() {
            let _ = child.terminate();
        }
        // The server is reaped: its stderr ends now (unless a process it started holds it),
        // and the draining thread closes its end, so no descriptor outlives the peer.
        if let Some(tail) = &self.stderr {
            tail.wait_ended(STDERR_GRACE);
        }
    }
}

/// How long dropping a peer waits for its server's stderr to end after reaping the server.
const STDERR_GRACE: Duration = Duration::from_millis(100);
