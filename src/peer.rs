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
//! This file holds what a [`Peer`] is made of — its transport, the server it spawned, the server's
//! HELLO, its requests in flight and whether it is still open — and hands on the items of the files
//! of each concern, which all reach these fields: `locate` finds the `peer` binary
//! ([`find_peer_binary`]); `options` holds the settings ([`Options`], [`DataPath`]); `command` is
//! the one spawn rule ([`argv_command`], [`shell_command`], [`checked_shell_command`]) and `spawn`
//! the `Peer::spawn*` constructors that follow it; `handshake` exchanges HELLOs; `message` is the
//! one message model of a call ([`Request`], [`ReplyInto`]), `calls` its one path
//! ([`Peer::call_request`]) and the short forms ([`Peer::call`], [`Peer::call_parts`]),
//! `data_frames` and `parts_frames` its two wire forms, DATA and PARTS; `reply` is what a
//! received reply tells ([`Reply`], [`CallTiming`], [`PartsReply`]); `lifecycle` holds the
//! peer's accessors and its ending (BYE, reaping); `stderr_tail` and `words` keep what the server
//! last wrote and said.
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

use std::collections::VecDeque;

use crate::clock::Stamp;
use crate::frame::Hello;
use crate::process::ChildGuard;
pub use crate::process::{OWN_HELLO_ECHOED, SPEAK_PEERPIPE, describe_status};
use crate::transport::{Deadline, Transport};
pub use crate::transport::{INTERRUPT_CHECK, LEND_MIN_BYTES};

mod calls;
mod command;
mod data_frames;
mod handshake;
mod lifecycle;
mod locate;
mod message;
mod options;
mod parts_frames;
mod reply;
mod spawn;
mod stderr_tail;
mod words;

pub use command::{argv_command, checked_shell_command, shell_command};
pub use locate::{PEER_ENV, find_peer_binary};
pub use message::{ReplyInto, Request};
pub use options::{CLOSE_GRACE, DEFAULT_TIMEOUT, DataPath, Options};
pub use reply::{CallTiming, PartsReply, Reply};
use stderr_tail::StderrTail;
use words::LastWords;

#[derive(Clone, Copy, Debug)]
struct Pending {
    seq: u64,
    started: Stamp,
    encode_ns: u64,
    /// The deadline of [`Peer::recv_for`]'s waits for this reply, from the first of them.
    reply_deadline: Option<Deadline>,
    /// A PARTS request (its reply is received into parts), not DATA.
    parts: bool,
}

/// A conversation with a server.
#[derive(Debug)]
pub struct Peer {
    transport: Transport,
    child: Option<ChildGuard>,
    /// The spawned server's stderr, when captured ([`Options::capture_stderr`]).
    stderr: Option<StderrTail>,
    options: Options,
    server_hello: Hello,
    next_seq: u64,
    pending: VecDeque<Pending>,
    scratch: Vec<u8>,
    state: State,
    /// The server's last ERROR reply, appended to the error that ends the conversation.
    said: LastWords,
    /// The part table of the PARTS request being sent (reused).
    table: crate::parts::Table,
    /// A PARTS reply as it arrived, before its parts are copied out (reused).
    parts_frame: crate::zerocopy::AlignedBuf,
}

#[derive(Debug, PartialEq, Eq)]
enum State {
    Open,
    /// Ended by an error, whose message every later call repeats.
    Failed(String),
    Closed,
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::codec::{Values, ValuesMut};
    use crate::error::Error;
    use crate::frame::{Header, Kind};
    use crate::transport::{TransportKind, Wait};

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
