//! The client side: a [`Peer`] is a conversation with a server process (or thread) that
//! answers arrays with arrays.
//!
//! A peer is spawned from any command with its stdin and stdout on two anonymous pipes (or,
//! with [`Options::transport`] set to a shared-memory kind, with a shared region as its stdin),
//! greets it with HELLO, and then offers typed calls that send from the caller's slice and
//! receive into the caller's buffer. Once buffers are warm a call allocates nothing.
//!
//! Lifecycle: [`Peer::close`] (or dropping the peer) sends BYE, waits briefly for the server to
//! answer and exit, and reaps it. On any error other than an ERROR reply the server is
//! terminated (SIGTERM, then SIGKILL after a grace period) and reaped, so no orphan or zombie
//! is left behind; if it had already died, the error says how.
//!
//! One concern per file: `conversation` is what a [`Peer`] is made of; `locate` finds the
//! `peer` binary ([`find_peer_binary`]); `options` holds the settings ([`Options`],
//! [`DataPath`]); `spawn` starts servers by the one spawn rule ([`argv_command`],
//! [`checked_shell_command`], the `Peer::spawn*` constructors); `handshake` exchanges HELLOs;
//! `calls` sends and receives DATA ([`Peer::call`]), `parts_calls` PARTS
//! ([`Peer::call_parts`]); `reply` is what a reply is received into and what it tells
//! ([`Reply`], [`CallTiming`]); `stderr_tail` and `words` keep what the server last wrote
//! and said. This file holds the peer's accessors and its ending (BYE, reaping).
//!
//! ```
//! use std::thread;
//! use peerpipe::handlers::Echo;
//! use peerpipe::peer::{Options, Peer};
//! use peerpipe::server::{serve, ServeOptions};
//! use peerpipe::transport::{Transport, Wait};
//!
//! // A server on a thread; across processes use Peer::spawn or Peer::spawn_server.
//! let (client_end, mut server_end) = Transport::pipe_pair(Wait::Block)?;
//! let server = thread::spawn(move || serve(&mut server_end, &mut Echo::default(), &ServeOptions::default()));
//!
//! let mut peer = Peer::connect(client_end, Options::default())?;
//! let state = [1.0, 2.0, f64::NAN];
//! let mut reply = [0.0; 3];
//! let timing = peer.call_f64(&state, &mut reply)?;
//! assert_eq!(reply.map(f64::to_bits), state.map(f64::to_bits));
//! assert!(timing.round_trip_ns >= timing.server_ns);
//! peer.close()?;
//! server.join().unwrap()?;
//! # Ok::<(), peerpipe::Error>(())
//! ```

use std::process::ExitStatus;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::frame::{Header, Hello, Kind};
pub use crate::process::{SPEAK_PEERPIPE, describe_status};
use crate::transport::{Deadline, TransportKind};
pub use crate::transport::{INTERRUPT_CHECK, LEND_MIN_BYTES};

mod calls;
mod conversation;
mod handshake;
mod locate;
mod options;
mod parts_calls;
mod reply;
mod spawn;
mod stderr_tail;
mod words;

use calls::{grow, retarget};
pub use conversation::Peer;
use conversation::State;
pub use handshake::OWN_HELLO_ECHOED;
pub use locate::{PEER_ENV, find_peer_binary};
pub use options::{DEFAULT_TIMEOUT, DataPath, Options};
pub use reply::{CallTiming, PartsReply, PartsTarget, Reply};
use spawn::is_descendant;
pub use spawn::{argv_command, checked_shell_command, shell_command};

/// How long [`Peer::close`] waits for the server to exit after BYE before terminating it.
pub const CLOSE_GRACE: Duration = Duration::from_millis(500);

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

    fn check_open(&self) -> Result<()> {
        match &self.state {
            State::Open => Ok(()),
            State::Failed(cause) => Err(Error::ClosedAfter { cause: cause.clone() }),
            State::Closed => Err(Error::PeerClosed { context: "already (closed by this side)" }),
        }
    }

    /// Marks the peer failed (every later call repeats why), terminates and reaps the server,
    /// and names its exit in the error when it had died by itself.
    fn fail(&mut self, error: Error, context: &str) -> Error {
        let error = self.end_after(error, context);
        let error = self.said.attach(error);
        self.state = State::Failed(error.to_string());
        error
    }

    /// Terminates and reaps the server after `error`, and names its exit in the error when it
    /// had died by itself.
    fn end_after(&mut self, error: Error, context: &str) -> Error {
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

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::codec::{Values, ValuesMut};
    use crate::transport::{Transport, Wait};

    #[test]
    fn a_fourth_request_in_flight_over_shm_sem_is_refused_and_the_peer_stays_usable() {
        use crate::handlers::Echo;
        use crate::server::{ServeOptions, serve};
        let (client, mut server) = Transport::pair(TransportKind::ShmSem, Wait::Block).unwrap();
        let thread = std::thread::spawn(move || {
            serve(&mut server, &mut Echo::default(), &ServeOptions::default())
        });
        let mut peer = Peer::connect(client, Options::default()).unwrap();
        assert_eq!(peer.max_in_flight(), Some(3));
        for i in 0..3 {
            peer.send(Values::F64(&[f64::from(i)])).unwrap();
        }
        let err = peer.send(Values::F64(&[3.0])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid pipelining: shm-sem allows at most 3 requests in flight and 3 are; receive \
             a reply first"
        );
        let mut reply = [0.0];
        for i in 0..3 {
            peer.recv(ValuesMut::F64(&mut reply)).unwrap();
            assert_eq!(reply[0], f64::from(i));
        }
        peer.send(Values::F64(&[4.0])).unwrap();
        peer.recv(ValuesMut::F64(&mut reply)).unwrap();
        assert_eq!(reply[0], 4.0);
        peer.close().unwrap();
        thread.join().unwrap().unwrap();
    }

    #[test]
    fn transfer_is_what_remains_of_the_round_trip() {
        let t = CallTiming { encode_ns: 10, decode_ns: 20, server_ns: 30, round_trip_ns: 100 };
        assert_eq!(t.transfer_ns(), 40);
        let skewed =
            CallTiming { encode_ns: 10, decode_ns: 20, server_ns: 300, round_trip_ns: 100 };
        assert_eq!(skewed.transfer_ns(), 0);
    }

    /// A fake server on a thread: answers HELLO, then answers the first request with an ERROR
    /// whose message is exactly as long as the expected reply (so the speculative read puts it
    /// in the caller's buffer), then echoes the second request.
    fn fake_server(mut end: Transport, message: &'static [u8]) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let hello = Hello::server(1 << 20, "fake");
            let payload = hello.to_payload();
            let header = Header::control(Kind::Hello, 0, payload.len() as u64).to_bytes();
            end.send_frame(&header, &payload, Deadline::NEVER).unwrap();
            let mut buf = vec![0u8; 4096];
            let mut replies = 0;
            while replies < 2 {
                let raw = end.recv_header(Deadline::NEVER).unwrap().unwrap();
                let header = Header::parse(&raw, 1 << 20).unwrap();
                let len = header.payload_bytes().unwrap() as usize;
                end.recv_payload(&mut buf[..len], Deadline::NEVER).unwrap();
                if header.kind != Kind::Data {
                    continue; // the client's HELLO
                }
                replies += 1;
                if replies == 1 {
                    let error = Header::control(Kind::Error, header.seq, message.len() as u64);
                    end.send_frame(&error.to_bytes(), message, Deadline::NEVER).unwrap();
                } else {
                    end.send_frame(&raw, &buf[..len], Deadline::NEVER).unwrap();
                }
            }
        })
    }

    #[test]
    fn an_error_reply_as_long_as_the_expected_reply_keeps_its_message_and_the_peer() {
        for path in [DataPath::ZeroCopy, DataPath::Codec] {
            let (client, server) = Transport::pipe_pair(Wait::Block).unwrap();
            let server = fake_server(server, b"no, sir!");
            let options = Options { path, ..Options::default() };
            let mut peer = Peer::connect(client, options).unwrap();
            let mut out = [0.0f64; 1];
            match peer.call_f64(&[1.5], &mut out) {
                Err(Error::Remote { seq: 1, message }) => assert_eq!(message, "no, sir!"),
                other => panic!("{path}: expected Remote, got {other:?}"),
            }
            peer.call_f64(&[2.5], &mut out).unwrap();
            assert_eq!(out, [2.5], "{path}");
            drop(peer);
            server.join().unwrap();
        }
    }

    /// A fake server on a thread that answers HELLO, then echoes one request after
    /// `before_header`, sending the reply's header and, `before_payload` later, its payload;
    /// then waits for `release` (so the client sees no end of stream meanwhile).
    fn slow_echo_server(
        mut end: Transport,
        before_header: Duration,
        before_payload: Duration,
        release: std::sync::mpsc::Receiver<()>,
    ) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let hello = Hello::server(1 << 20, "slow");
            let payload = hello.to_payload();
            let header = Header::control(Kind::Hello, 0, payload.len() as u64).to_bytes();
            end.send_frame(&header, &payload, Deadline::NEVER).unwrap();
            let mut buf = vec![0u8; 4096];
            loop {
                let raw = end.recv_header(Deadline::NEVER).unwrap().unwrap();
                let header = Header::parse(&raw, 1 << 20).unwrap();
                let len = header.payload_bytes().unwrap() as usize;
                end.recv_payload(&mut buf[..len], Deadline::NEVER).unwrap();
                if header.kind == Kind::Data {
                    // Released early: the client gave up, stop without replying.
                    if release.recv_timeout(before_header).is_ok() {
                        return;
                    }
                    end.send_bytes(&raw, Deadline::NEVER).unwrap();
                    std::thread::sleep(before_payload);
                    end.send_bytes(&buf[..len], Deadline::NEVER).unwrap(); // 8-byte multiple
                    break;
                }
            }
            let _ = release.recv();
        })
    }

    #[test]
    fn recv_for_gives_up_untouched_while_nothing_arrives_and_finishes_a_started_reply() {
        let (client, server) = Transport::pipe_pair(Wait::Block).unwrap();
        let (release, released) = std::sync::mpsc::channel();
        let server = slow_echo_server(
            server,
            Duration::from_millis(150),
            Duration::from_millis(100),
            released,
        );
        let mut peer = Peer::connect(client, Options::default()).unwrap();
        let state = [1.5, -0.0, f64::NAN, 4.0];
        peer.send(Values::F64(&state)).unwrap();
        let mut reply = [0.0; 4];
        let mut idle_slices = 0;
        let started = Instant::now();
        let got = loop {
            match peer.recv_for(ValuesMut::F64(&mut reply), Duration::from_millis(20)).unwrap() {
                Some(got) => break got,
                None => idle_slices += 1,
            }
        };
        // ~150 ms of silence in 20 ms slices; the 100 ms between header and payload is waited
        // out inside one call, not returned as an idle slice in the middle of the frame.
        assert!((4..=8).contains(&idle_slices), "{idle_slices} idle slices");
        assert!(started.elapsed() >= Duration::from_millis(250));
        assert_eq!(got.seq, 1);
        assert_eq!(reply.map(f64::to_bits), state.map(f64::to_bits));
        release.send(()).unwrap();
        drop(peer);
        server.join().unwrap();
    }

    #[test]
    fn recv_for_past_the_timeout_since_its_first_wait_is_the_timeout_of_recv() {
        let (client, server) = Transport::pipe_pair(Wait::Block).unwrap();
        let (release, released) = std::sync::mpsc::channel();
        let server = slow_echo_server(server, Duration::from_secs(5), Duration::ZERO, released);
        let options = Options { timeout: Some(Duration::from_millis(100)), ..Options::default() };
        let mut peer = Peer::connect(client, options).unwrap();
        // The timeout counts from the first wait for the reply (as `recv`'s from its start),
        // not from the send: a caller busy for 60 ms before waiting still gets its 100 ms.
        peer.send(Values::F64(&[1.0])).unwrap();
        std::thread::sleep(Duration::from_millis(60));
        let mut reply = [0.0];
        let waited = Instant::now();
        let err = loop {
            match peer.recv_for(ValuesMut::F64(&mut reply), Duration::from_millis(30)) {
                Ok(None) => continue,
                Ok(Some(reply)) => panic!("unexpected reply {reply:?}"),
                Err(e) => break e,
            }
        };
        assert!(waited.elapsed() >= Duration::from_millis(100), "{:?}", waited.elapsed());
        assert!(waited.elapsed() < Duration::from_secs(2));
        match err {
            Error::Timeout { waiting_for, .. } => {
                assert_eq!(waiting_for, "waiting for the reply to seq 1")
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
        let after = peer.recv_for(ValuesMut::F64(&mut reply), Duration::from_millis(1));
        assert!(matches!(after, Err(Error::ClosedAfter { .. })), "{after:?}");
        release.send(()).unwrap();
        drop(peer);
        server.join().unwrap();
    }

    #[test]
    fn a_timeout_set_after_the_handshake_bounds_the_next_reply() {
        let (client, mut server) = Transport::pipe_pair(Wait::Block).unwrap();
        // A server that greets and then never answers.
        let silent = std::thread::spawn(move || {
            let hello = Hello::server(1 << 20, "silent");
            let payload = hello.to_payload();
            let header = Header::control(Kind::Hello, 0, payload.len() as u64).to_bytes();
            server.send_frame(&header, &payload, Deadline::NEVER).unwrap();
            let _ = server.recv_header(Deadline::NEVER);
            server
        });
        let mut peer = Peer::connect(client, Options::default()).unwrap();
        peer.set_timeout(Some(Duration::from_millis(20)));
        assert_eq!(peer.options().timeout, Some(Duration::from_millis(20)));
        let started = Instant::now();
        let err = peer.call_f64(&[1.0], &mut [0.0]).unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err}");
        assert!(started.elapsed() < DEFAULT_TIMEOUT / 2, "took {:?}", started.elapsed());
        drop(peer);
        drop(silent.join().unwrap());
    }

    #[test]
    fn data_paths_parse() {
        assert_eq!("codec".parse::<DataPath>().unwrap(), DataPath::Codec);
        assert!("copy".parse::<DataPath>().is_err());
    }
}
