//! `--transport tcp`, locally: frames over one TCP connection on loopback that the server
//! announces, with a one-time token, on its stdout (docs/PROTOCOL.md §14).
//!
//! The round trips are those of every other transport (bit-exact on both paths, errors
//! typed, a dead or stopped server noticed); the set-up faces hostile connections: a wrong
//! token, garbage, a connection that closes or stalls before its token, and a second client
//! are refused without a frame being processed, each reported on stderr, while the right
//! client is still served; nothing listens once the client is in or the deadline passed.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use common::{Watchdog, child_processes, f64_edges, is_our_child, peer_exe, read_on_thread};
use common::{secs, serialize, wait_or_kill};
use peerpipe::codec::{Values, ValuesMut};
use peerpipe::transport::tcp::{TOKEN_LEN, parse_announcement};
use peerpipe::transport::{TcpLink, Transport, Wait};
use peerpipe::{DataPath, Error, Options, Peer, TransportKind};

static FORK_LOCK: Mutex<()> = Mutex::new(());

fn tcp_options() -> Options {
    Options { transport: TransportKind::Tcp, timeout: Some(secs(10)), ..Options::default() }
}

#[test]
fn every_dtype_round_trips_bit_for_bit_over_tcp_on_both_paths() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(30));
    for path in [DataPath::ZeroCopy, DataPath::Codec] {
        let options = Options { path, ..tcp_options() };
        let mut peer = Peer::spawn_server(peer_exe(), "echo", options).expect("spawn over tcp");
        assert_eq!(peer.transport_kind(), TransportKind::Tcp);
        let edges = f64_edges();
        let mut out = vec![0.0; edges.len()];
        peer.call_f64(&edges, &mut out).expect("f64");
        assert_eq!(common::bits64(&out), common::bits64(&edges), "{path}");
        let big: Vec<f64> = common::pseudo_random_f64(1 << 20, 7); // 8 MiB each way
        let mut back = vec![0.0; big.len()];
        peer.call_f64(&big, &mut back).expect("8 MiB");
        assert_eq!(common::bits64(&back), common::bits64(&big), "{path}");
        let f32s: Vec<f32> = edges.iter().map(|&x| x as f32).collect();
        let mut out32 = vec![0.0f32; f32s.len()];
        peer.call(Values::F32(&f32s), ValuesMut::F32(&mut out32)).expect("f32");
        assert_eq!(common::bits32(&out32), common::bits32(&f32s), "{path}");
        let mut widened = vec![0.0; edges.len()];
        peer.call(Values::F64AsF32(&edges), ValuesMut::F64FromF32(&mut widened)).expect("as f32");
        let expected: Vec<f64> = edges.iter().map(|&x| x as f32 as f64).collect();
        assert_eq!(common::bits64(&widened), common::bits64(&expected), "{path}");
        let status = peer.close().expect("close").expect("spawned");
        assert!(status.success(), "{path}: {status}");
    }
    assert_eq!(child_processes(), []);
}

#[test]
fn a_killed_tcp_server_is_peer_exited_and_a_stopped_one_a_timeout_both_reaped() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(30));
    let mut peer = Peer::spawn_server(peer_exe(), "echo", tcp_options()).expect("spawn");
    let pid = peer.server_pid().expect("pid");
    peer.call_f64(&[1.0; 500], &mut [0.0; 500]).expect("a first call");
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).expect("kill");
    match peer.call_f64(&[1.0; 500], &mut [0.0; 500]) {
        Err(Error::PeerExited { status, .. }) => {
            assert_eq!(status, "was killed by signal 9 (SIGKILL)")
        }
        other => panic!("expected PeerExited, got {other:?}"),
    }
    assert!(!is_our_child(pid));
    drop(peer);

    let mut peer = Peer::spawn_server(peer_exe(), "echo", tcp_options()).expect("spawn");
    let pid = peer.server_pid().expect("pid");
    peer.call_f64(&[1.0; 8], &mut [0.0; 8]).expect("a first call");
    kill(Pid::from_raw(pid as i32), Signal::SIGSTOP).expect("stop");
    peer.set_timeout(Some(Duration::from_millis(200)));
    match peer.call_f64(&[1.0; 8], &mut [0.0; 8]) {
        Err(Error::Timeout { waiting_for, .. }) => {
            assert_eq!(waiting_for, "waiting for the reply to seq 2")
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
    assert!(!is_our_child(pid), "the stopped server was terminated and reaped");
    drop(peer);
    assert_eq!(child_processes(), []);
}

/// A `peer --role server --transport tcp` started by hand: its control channel, the address
/// and token it announced, and its stderr.
struct Announced {
    child: Child,
    control: Option<ChildStdin>,
    addr: SocketAddr,
    token: [u8; TOKEN_LEN],
    stderr: Option<std::thread::JoinHandle<String>>,
    _stdout: BufReader<std::process::ChildStdout>,
}

fn start_server(extra: &[&str]) -> Announced {
    let mut child = Command::new(peer_exe())
        .args(["--role", "server", "--handler", "echo", "--transport", "tcp"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the tcp server");
    let stderr = read_on_thread(child.stderr.take().expect("stderr"));
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("the announcement");
    let (addr, token) = parse_announcement(line.trim_end()).expect("a valid announcement");
    Announced {
        control: child.stdin.take(),
        child,
        addr,
        token,
        stderr: Some(stderr),
        _stdout: stdout,
    }
}

impl Announced {
    /// Exit status and stderr, waiting up to 10 s.
    fn finish(mut self) -> (std::process::ExitStatus, String) {
        self.control = None;
        let status = wait_or_kill(&mut self.child, secs(10), "the tcp server");
        let stderr = self.stderr.take().expect("stderr").join().unwrap_or_default();
        (status, stderr)
    }
}

/// Reads from `stream` until it ends or `limit` passes; returns the bytes and whether it
/// ended.
fn drain(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    let until = Instant::now() + limit;
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while Instant::now() < until {
        stream.set_read_timeout(Some(Duration::from_millis(50))).expect("timeout");
        match stream.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (got, true),
            Err(_) => {}
        }
    }
    (got, false)
}

#[test]
fn wrong_tokens_garbage_and_stalls_are_refused_and_the_right_client_is_still_served() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    let server = start_server(&["--timeout", "20s"]);

    // A stalling connection: 5 bytes of a token, then nothing. It must not block the others.
    let mut stall = TcpStream::connect(server.addr).expect("connect (stall)");
    stall.write_all(&[0u8; 5]).expect("5 bytes");

    // A wrong token of the right length.
    let mut wrong = TcpStream::connect(server.addr).expect("connect (wrong)");
    let mut bad = server.token;
    bad[0] ^= 1;
    wrong.write_all(&bad).expect("write");
    let (bytes, ended) = drain(&mut wrong, secs(10));
    assert!(ended && bytes.is_empty(), "wrong token: closed, nothing sent back: {bytes:?}");

    // Garbage: a frame straight away, no token. The server reads 16 bytes and closes.
    let mut garbage = TcpStream::connect(server.addr).expect("connect (garbage)");
    garbage.write_all(&common::client_hello(1 << 20)).expect("write");
    let (bytes, ended) = drain(&mut garbage, secs(10));
    assert!(ended && bytes.is_empty(), "garbage: closed, no HELLO sent back: {bytes:?}");

    // A connection that closes before its token.
    drop(TcpStream::connect(server.addr).expect("connect (missing)"));

    // The right client, while the stalled one still waits.
    let mut right = TcpStream::connect(server.addr).expect("connect (right)");
    right.write_all(&server.token).expect("token");
    let link = TcpLink::new(right, None, None).expect("link");
    let mut peer = Peer::connect(Transport::new(link, Wait::default()), tcp_options())
        .expect("the right client is served");
    let mut out = [0.0; 3];
    peer.call_f64(&[1.0, -0.0, f64::NAN], &mut out).expect("a call");
    assert_eq!(out[..2], [1.0, -0.0]);

    // Nothing listens once the client is in: a second client is refused by the kernel.
    let refused = TcpStream::connect_timeout(&server.addr, secs(2));
    assert!(refused.is_err(), "the listening socket was closed: {refused:?}");

    // The stalled connection is closed without an answer.
    let (bytes, ended) = drain(&mut stall, secs(10));
    assert!(ended && bytes.is_empty(), "stall: closed, nothing sent back: {bytes:?}");

    peer.close().expect("close");
    let (status, stderr) = server.finish();
    assert!(status.success(), "{status}: {stderr}");
    for why in ["wrong token", "closed after 0 of 16 token bytes", "another client presented"] {
        assert!(stderr.contains(why), "stderr names {why:?}: {stderr}");
    }
    assert!(stderr.matches("peer: tcp: refused the connection from 127.0.0.1:").count() >= 4);
    assert_eq!(child_processes(), []);
}

#[test]
fn a_connection_that_stalls_inside_its_token_is_closed_and_the_server_keeps_waiting() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(30));
    let server = start_server(&["--timeout", "20s"]);
    let mut stall = TcpStream::connect(server.addr).expect("connect (stall)");
    stall.write_all(&server.token[..5]).expect("5 bytes of the right token");
    let (bytes, ended) = drain(&mut stall, secs(10));
    assert!(ended && bytes.is_empty(), "stall: closed, nothing sent back: {bytes:?}");
    // Still listening for the right client after the stalled one was dropped.
    let mut right = TcpStream::connect(server.addr).expect("connect (right)");
    right.write_all(&server.token).expect("token");
    let link = TcpLink::new(right, None, None).expect("link");
    let mut peer =
        Peer::connect(Transport::new(link, Wait::default()), tcp_options()).expect("served");
    peer.call_f64(&[3.0], &mut [0.0]).expect("a call");
    peer.close().expect("close");
    let (status, stderr) = server.finish();
    assert!(status.success(), "{status}: {stderr}");
    assert!(stderr.contains("no whole token within 2s (5 of 16 bytes)"), "{stderr}");
}

#[test]
fn nothing_listens_past_the_deadline_and_the_server_says_so() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(30));
    let server = start_server(&["--timeout", "300ms"]);
    let addr = server.addr;
    // The control channel stays open while waiting: only the deadline may end the wait.
    let mut server = server;
    let status = wait_or_kill(&mut server.child, secs(10), "the tcp server");
    let stderr = server.stderr.take().expect("stderr").join().unwrap_or_default();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("timed out after 300ms waiting for a client with the token on"),
        "{stderr}"
    );
    assert!(TcpStream::connect_timeout(&addr, secs(2)).is_err(), "still listening on {addr}");
}

#[test]
fn the_server_exits_when_its_control_channel_closes() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(30));
    // Before any client: the server stops waiting at once.
    let server = start_server(&["--timeout", "20s"]);
    let (status, stderr) = server.finish();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("control channel closed"), "{stderr}");

    // With a client in: the server ends as at the end of the stream.
    let mut server = start_server(&["--timeout", "20s"]);
    let mut right = TcpStream::connect(server.addr).expect("connect");
    right.write_all(&server.token).expect("token");
    let link = TcpLink::new(right, None, None).expect("link");
    let mut peer =
        Peer::connect(Transport::new(link, Wait::Block), tcp_options()).expect("connect");
    peer.call_f64(&[2.0], &mut [0.0]).expect("a call");
    server.control = None; // what ssh does when the client side goes away
    let status = wait_or_kill(&mut server.child, secs(10), "the tcp server");
    assert!(status.success(), "{status}");
    assert!(peer.call_f64(&[2.0], &mut [0.0]).is_err(), "the server is gone");
    let (_, stderr) = server.finish();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(child_processes(), []);
}

#[test]
fn misbehaving_server_entry() {
    common::misbehaving_server_entry();
}
