//! The real `peer --role server` binary, driven byte by byte over every transport (`pipe`,
//! `shm-sem`, `shm-ring`): HELLO first, bit-exact echoes of every dtype and edge value,
//! lorenz96 against the library, pipelining, every validation rule of `docs/PROTOCOL.md` §10
//! with its ERROR frame and exit status, end of stream at and inside a frame, BYE, a client
//! that stops reading, and 8 MiB frames.
//!
//! Each test is a function of the transport, run once per transport by `per_transport!` (in `common`):
//! `cargo test --test server_binary shm_ring` runs one transport, and a failure names its
//! transport (`bad_magic_gets_error_with_the_headers_seq_and_exit_2::shm_sem`).
//!
//! The client side here is hand-written from the specification, not the library's `Peer`, so a
//! mistake shared by the library's client and server cannot hide: frames are built and parsed
//! by the helpers of `common`, and the library only moves the bytes, through the
//! [`Transport`] that `peerpipe::process::spawn_connected` returns (for `pipe`, the server's
//! stdin and stdout; for shared memory, the region handed over as the server's stdin).

#[macro_use]
mod common;

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use common::{
    RawFrame, TransportReader, Watchdog, bits32, bits64, bye, client_hello, control_frame,
    data_frame, f32_edges, f64_edges, peer_exe, pseudo_random_f64, raw_header, read_frame, secs,
};
use peerpipe::codec;
use peerpipe::error::Error;
use peerpipe::frame::{
    DEFAULT_MAX_FRAME_BYTES, Dtype, HEADER_LEN, Header, Hello, Kind, padding_len,
};
use peerpipe::lorenz96;
use peerpipe::process::{Spawn, spawn_connected};
use peerpipe::transport::{Deadline, Transport, TransportKind};

/// How long one read or write through the transport may wait for the server before the test
/// fails with a timeout (the server's own frame timeout is 10 s).
const IO_TIMEOUT: Duration = secs(20);

fn io_deadline() -> Deadline {
    Deadline::after(Some(IO_TIMEOUT))
}

/// A `peer --role server --transport KIND` child, connected by a transport of that kind, with
/// its stderr on a pipe.
struct Server {
    kind: TransportKind,
    child: Child,
    /// `None` once this side has closed both directions.
    transport: Option<Transport>,
    stderr: Option<JoinHandle<String>>,
}

impl Server {
    fn spawn(kind: TransportKind, handler: &str, extra: &[&str]) -> Server {
        let mut command = Command::new(peer_exe());
        command
            .args(["--role", "server", "--handler", handler, "--transport", kind.name()])
            .args(extra)
            .env("RUST_BACKTRACE", "1")
            .stderr(Stdio::piped());
        // spawn_connected sets stdin and stdout only: the stderr pipe asked for here stays.
        let (transport, mut child) =
            spawn_connected(command, &Spawn { transport: kind, ..Spawn::default() })
                .unwrap_or_else(|e| panic!("spawn peer --role server --transport {kind}: {e}"));
        assert_eq!(transport.kind(), kind);
        let stderr = child.stderr.take().expect("the server's stderr on a pipe");
        let stderr = common::read_on_thread(stderr);
        Server { kind, child, transport: Some(transport), stderr: Some(stderr) }
    }

    /// Spawns the server, reads its HELLO and sends a client HELLO.
    fn handshake(kind: TransportKind, handler: &str, extra: &[&str]) -> Server {
        let mut server = Server::spawn(kind, handler, extra);
        let hello = server.frame();
        assert_eq!(hello.header.kind, Kind::Hello);
        server.write(&client_hello(DEFAULT_MAX_FRAME_BYTES));
        server
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn transport(&mut self) -> &mut Transport {
        self.transport.as_mut().expect("the transport is still open")
    }

    /// Writes all of `bytes`; the server must be reading.
    fn write(&mut self, bytes: &[u8]) {
        let kind = self.kind;
        if let Err(e) = self.transport().send_bytes(bytes, io_deadline()) {
            panic!("write {} bytes to the server over {kind}: {e}", bytes.len());
        }
    }

    /// Writes `bytes`, tolerating a server that has already stopped reading (it may reject a
    /// header and exit before the rest arrives).
    fn write_lossy(&mut self, bytes: &[u8]) {
        let kind = self.kind;
        match self.transport().send_bytes(bytes, io_deadline()) {
            Ok(()) | Err(Error::PeerClosed { .. }) => {}
            Err(e) => panic!("write to the server over {kind}: {e}"),
        }
    }

    /// Ends the client → server stream (half-close: the replies can still be read).
    fn shutdown_write(&mut self) {
        let kind = self.kind;
        if let Err(e) = self.transport().shutdown_write() {
            panic!("shut down the client → server direction of {kind}: {e}");
        }
    }

    /// Reads exactly `buf.len()` bytes, failing on end of stream.
    fn read_exact(&mut self, buf: &mut [u8]) {
        let kind = self.kind;
        match self.transport().recv_exact(buf, io_deadline()) {
            Ok(got) if got == buf.len() => {}
            Ok(got) => panic!("end of stream over {kind} after {got} of {} bytes", buf.len()),
            Err(e) => panic!("read from the server over {kind}: {e}"),
        }
    }

    /// Reads the next frame, failing on end of stream or a malformed frame.
    fn frame(&mut self) -> RawFrame {
        self.maybe_frame().expect("a frame from the server, found end of stream")
    }

    /// Reads the next frame, `None` at end of stream.
    fn maybe_frame(&mut self) -> Option<RawFrame> {
        let kind = self.kind;
        read_frame(&mut TransportReader(self.transport(), IO_TIMEOUT))
            .unwrap_or_else(|e| panic!("a well-formed frame from the server over {kind}: {e}"))
    }

    /// Everything the server writes until end of stream, as raw bytes.
    fn rest(&mut self) -> Vec<u8> {
        let mut rest = Vec::new();
        TransportReader(self.transport(), IO_TIMEOUT)
            .read_to_end(&mut rest)
            .expect("read to end of stream");
        rest
    }

    /// Closes our side, waits for the server and returns its status and its stderr.
    fn finish(mut self) -> (ExitStatus, String) {
        self.transport = None;
        let status = self.child.wait().expect("wait for the server");
        let stderr = self.stderr.take().expect("stderr reader").join().expect("stderr reader");
        (status, stderr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Only reached with a live child when a test failed: do not leave it behind.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Asserts that the server exited non-zero (not by a signal) with exactly one stderr line
/// `peer: error: ...` containing `fragment`, and no panic or backtrace.
fn assert_failed_with(status: ExitStatus, stderr: &str, fragment: &str) {
    assert_eq!(status.code(), Some(2), "exit status {status:?}; stderr: {stderr:?}");
    assert_one_error_line(stderr, fragment);
}

fn assert_one_error_line(stderr: &str, fragment: &str) {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one stderr line, found {stderr:?}");
    assert!(lines[0].starts_with("peer: error: "), "stderr line {:?}", lines[0]);
    assert!(lines[0].contains(fragment), "stderr line {:?} lacks {fragment:?}", lines[0]);
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr:?}");
}

/// Asserts the frame is an ERROR for `seq` whose message contains `fragment`.
fn assert_error_frame(frame: &RawFrame, seq: u64, fragment: &str) {
    assert_eq!(frame.header.kind, Kind::Error, "expected ERROR, got {:?}", frame.header);
    assert_eq!(frame.header.dtype, Dtype::Bytes);
    assert_eq!(frame.header.count, frame.payload.len() as u64);
    assert_eq!(frame.header.seq, seq, "ERROR seq; message {:?}", frame.text());
    assert!(frame.text().contains(fragment), "ERROR {:?} lacks {fragment:?}", frame.text());
}

/// Sends `bytes` after the handshake (or before it, with `handshake = false`) and checks the
/// case-B reaction: one ERROR with `seq`, end of stream, exit status 2, one stderr line.
fn assert_violation(
    kind: TransportKind,
    extra: &[&str],
    handshake: bool,
    bytes: &[u8],
    seq: u64,
    fragment: &str,
) {
    let mut server = if handshake {
        Server::handshake(kind, "echo", extra)
    } else {
        let mut server = Server::spawn(kind, "echo", extra);
        assert_eq!(server.frame().header.kind, Kind::Hello);
        server
    };
    server.write_lossy(bytes);
    let error = server.frame();
    assert_error_frame(&error, seq, fragment);
    assert!(server.maybe_frame().is_none(), "end of stream expected after a case-B ERROR");
    let (status, stderr) = server.finish();
    assert_failed_with(status, &stderr, fragment);
}

fn f64_bytes(values: &[f64]) -> Vec<u8> {
    codec::encode_f64(values)
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    codec::encode_f32(values)
}

// ---------------------------------------------------------------------------------------------
// HELLO and BYE
// ---------------------------------------------------------------------------------------------

fn server_says_hello_first_naming_its_handler_and_implementation(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    for handler in ["echo", "echo-raw", "lorenz96"] {
        // Nothing is written before reading: the server must not wait for the client's HELLO.
        let mut server = Server::spawn(kind, handler, &[]);
        let hello = server.frame();
        let header = hello.header;
        assert_eq!(&hello.raw[..4], b"PEER");
        assert_eq!(
            (header.kind, header.dtype, header.seq, header.aux),
            (Kind::Hello, Dtype::Bytes, 0, 0)
        );
        assert_eq!(header.count, hello.payload.len() as u64);
        let parsed = Hello::parse(&hello.payload).expect("a valid HELLO payload");
        assert_eq!(parsed.handler.as_deref(), Some(handler));
        assert_eq!(parsed.max_frame_bytes, DEFAULT_MAX_FRAME_BYTES);
        let implementation = parsed.implementation.expect("impl= present");
        assert!(implementation.starts_with("peerpipe "), "impl={implementation}");
        let text = hello.text();
        assert!(text.starts_with("version=1\n"), "{text:?}");
        assert!(text.contains(&format!("\nhandler={handler}\n")), "{text:?}");
        assert!(text.contains("\nimpl="), "{text:?}");
        server.write(&client_hello(DEFAULT_MAX_FRAME_BYTES));
        server.write(&bye(1));
        assert_eq!(server.frame().header.kind, Kind::Bye);
        let (status, stderr) = server.finish();
        assert!(status.success(), "{status:?} {stderr:?}");
    }
}

fn server_announces_its_max_frame_bytes(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::spawn(kind, "echo", &["--max-frame-bytes", "1024"]);
    let hello = Hello::parse(&server.frame().payload).expect("valid HELLO");
    assert_eq!(hello.max_frame_bytes, 1024);
}

fn bye_gets_bye_with_the_same_seq_then_end_of_stream_and_exit_0(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::handshake(kind, "echo", &[]);
    server.write(&data_frame(1, Dtype::F64, 1, &f64_bytes(&[2.0])));
    assert_eq!(server.frame().header.kind, Kind::Data);
    server.write(&bye(42));
    let reply = server.frame();
    assert_eq!(
        (
            reply.header.kind,
            reply.header.dtype,
            reply.header.seq,
            reply.header.count,
            reply.header.aux
        ),
        (Kind::Bye, Dtype::Bytes, 42, 0, 0)
    );
    // Nothing after the BYE, even with our side of the stream still open.
    assert!(server.rest().is_empty());
    let (status, stderr) = server.finish();
    assert_eq!(status.code(), Some(0), "{stderr:?}");
    assert!(stderr.is_empty(), "stderr after a clean BYE: {stderr:?}");
}

fn stdout_of_the_server_carries_only_frames_and_fd_1_points_at_stderr(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::handshake(kind, "echo", &[]);
    // After start-up fd 1 of the server is its stderr, so a stray print cannot reach us: not
    // on a pipe, where fd 1 was the stream, and not over shared memory either, where fd 1 was
    // the pipe that only tells the client's death (kept privately), which nobody reads, so
    // prints would fill it and block the server. Its stdin (the stream, or the region's
    // memfd) is /dev/null.
    server.write(&data_frame(1, Dtype::Bytes, 3, b"abc"));
    assert_eq!(server.frame().payload, b"abc");
    let fd = |n: u32| {
        std::fs::read_link(format!("/proc/{}/fd/{n}", server.pid()))
            .unwrap_or_else(|e| panic!("server fd {n}: {e}"))
    };
    assert_eq!(fd(1), fd(2), "the server's fd 1 should be its stderr");
    assert_eq!(fd(0), std::path::Path::new("/dev/null"), "the server's fd 0");
    // And the stream is frames and nothing else, up to end of stream.
    server.write(&bye(2));
    assert_eq!(server.frame().header.kind, Kind::Bye);
    assert_eq!(server.rest(), b"");
    let (status, _) = server.finish();
    assert!(status.success());
}

// ---------------------------------------------------------------------------------------------
// Bit-exact echoes
// ---------------------------------------------------------------------------------------------

/// Requests covering every dtype, every edge value, empty arrays, odd f32 counts and byte
/// counts of every padding length.
fn edge_requests() -> Vec<(Dtype, u64, Vec<u8>)> {
    let mut out = Vec::new();
    let f64s = f64_edges();
    let f32s = f32_edges();
    out.push((Dtype::F64, f64s.len() as u64, f64_bytes(&f64s)));
    out.push((Dtype::F32, f32s.len() as u64, f32_bytes(&f32s)));
    for value in &f64s {
        out.push((Dtype::F64, 1, f64_bytes(&[*value])));
    }
    for n in [0usize, 1, 3, 5, 7, 9] {
        // Odd f32 counts need 4 bytes of padding.
        let values: Vec<f32> = f32s.iter().copied().cycle().take(n).collect();
        out.push((Dtype::F32, n as u64, f32_bytes(&values)));
    }
    out.push((Dtype::F64, 0, Vec::new()));
    for n in 0..=17usize {
        let bytes: Vec<u8> = (0..n).map(|i| (i * 37 + 255) as u8).collect();
        out.push((Dtype::Bytes, n as u64, bytes));
    }
    out.push((Dtype::Bytes, 256, (0..=255u8).collect()));
    let random = pseudo_random_f64(1000, 7);
    out.push((Dtype::F64, 1000, f64_bytes(&random)));
    out
}

fn assert_echoes_every_edge_value(kind: TransportKind, handler: &str) {
    let _watchdog = Watchdog::new(secs(30));
    let mut server = Server::handshake(kind, handler, &[]);
    for (i, (dtype, count, payload)) in edge_requests().into_iter().enumerate() {
        let seq = 1000 + i as u64;
        server.write(&data_frame(seq, dtype, count, &payload));
        let reply = server.frame();
        let h = reply.header;
        assert_eq!(
            (h.kind, h.seq, h.dtype, h.count),
            (Kind::Data, seq, dtype, count),
            "request {i}"
        );
        assert_eq!(reply.payload, payload, "{handler}: request {i} ({dtype} × {count}) changed");
    }
    server.write(&bye(1));
    assert_eq!(server.frame().header.kind, Kind::Bye);
    let (status, stderr) = server.finish();
    assert!(status.success(), "{stderr:?}");
}

fn echo_returns_every_dtype_and_edge_value_bit_for_bit(kind: TransportKind) {
    assert_echoes_every_edge_value(kind, "echo");
}

fn echo_raw_returns_every_dtype_and_edge_value_bit_for_bit(kind: TransportKind) {
    assert_echoes_every_edge_value(kind, "echo-raw");
}

fn echo_keeps_nan_payloads_and_signalling_nans_when_decoded_as_numbers(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::handshake(kind, "echo", &[]);
    let f64s = f64_edges();
    server.write(&data_frame(1, Dtype::F64, f64s.len() as u64, &f64_bytes(&f64s)));
    let back = codec::decode_f64(&server.frame().payload).expect("f64 payload");
    assert_eq!(bits64(&back), bits64(&f64s));
    let f32s = f32_edges();
    server.write(&data_frame(2, Dtype::F32, f32s.len() as u64, &f32_bytes(&f32s)));
    let back = codec::decode_f32(&server.frame().payload).expect("f32 payload");
    assert_eq!(bits32(&back), bits32(&f32s));
}

fn every_wait_strategy_serves_the_same_bytes(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    for wait in ["block", "spin", "hybrid", "hybrid:20us"] {
        let mut server = Server::handshake(kind, "echo", &["--wait", wait]);
        let values = pseudo_random_f64(500, 3);
        server.write(&data_frame(5, Dtype::F64, 500, &f64_bytes(&values)));
        assert_eq!(server.frame().payload, f64_bytes(&values), "--wait {wait}");
        server.write(&bye(6));
        assert_eq!(server.frame().header.kind, Kind::Bye);
        let (status, stderr) = server.finish();
        assert!(status.success(), "--wait {wait}: {stderr:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// lorenz96
// ---------------------------------------------------------------------------------------------

fn lorenz96_matches_the_library_rhs_bit_for_bit(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::handshake(kind, "lorenz96", &[]);
    let mut states = vec![
        vec![1.0, 2.0, 3.0, 4.0],
        [0xc01d333333333333u64, 0xbff0000000000000, 0xbffe666666666666, 0xc019333333333333]
            .map(f64::from_bits)
            .to_vec(),
    ];
    for (n, seed) in [(4, 1), (5, 2), (40, 3), (1000, 4), (65_536, 5)] {
        states.push(pseudo_random_f64(n, seed));
    }
    for (i, x) in states.iter().enumerate() {
        let seq = 10 + i as u64;
        server.write(&data_frame(seq, Dtype::F64, x.len() as u64, &f64_bytes(x)));
        let reply = server.frame();
        assert_eq!((reply.header.kind, reply.header.seq), (Kind::Data, seq));
        assert_eq!((reply.header.dtype, reply.header.count), (Dtype::F64, x.len() as u64));
        let mut expected = vec![0.0; x.len()];
        lorenz96::rhs(x, lorenz96::FORCING, &mut expected).expect("n >= 4");
        let got = codec::decode_f64(&reply.payload).expect("f64");
        assert_eq!(bits64(&got), bits64(&expected), "state {i} (n = {})", x.len());
        if i == 0 {
            assert_eq!(got, [3.0, 5.0, 11.0, 1.0], "PROTOCOL.md §9 first test vector");
        }
        if i == 1 {
            let want =
                [0x4023428f5c28f5c3u64, 0xc0371eb851eb8520, 0x4021cccccccccccd, 0x403a451eb851eb85];
            assert_eq!(bits64(&got), want, "PROTOCOL.md §9 second test vector");
        }
    }
}

fn lorenz96_rejects_f32_bytes_and_short_states_with_error_and_goes_on(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::handshake(kind, "lorenz96", &[]);
    let rejected: [(u64, Dtype, u64, Vec<u8>, &str); 5] = [
        (1, Dtype::F32, 4, f32_bytes(&[1.0, 2.0, 3.0, 4.0]), "f32"),
        (2, Dtype::F64, 3, f64_bytes(&[1.0, 2.0, 3.0]), "3"),
        (3, Dtype::F64, 0, Vec::new(), "0"),
        (4, Dtype::Bytes, 32, vec![0; 32], "bytes"),
        (5, Dtype::F64, 1, f64_bytes(&[1.0]), "1"),
    ];
    for (seq, dtype, count, payload, fragment) in rejected {
        server.write(&data_frame(seq, dtype, count, &payload));
        let reply = server.frame();
        assert_error_frame(&reply, seq, "lorenz96");
        assert!(reply.text().contains(fragment), "{:?} lacks {fragment:?}", reply.text());
        // Case A: the conversation goes on.
        let x = [1.0, 2.0, 3.0, 4.0];
        server.write(&data_frame(100 + seq, Dtype::F64, 4, &f64_bytes(&x)));
        let ok = server.frame();
        assert_eq!((ok.header.kind, ok.header.seq), (Kind::Data, 100 + seq));
        assert_eq!(codec::decode_f64(&ok.payload).unwrap(), [3.0, 5.0, 11.0, 1.0]);
    }
    server.write(&bye(9));
    assert_eq!(server.frame().header.kind, Kind::Bye);
    let (status, stderr) = server.finish();
    assert!(status.success(), "rejected requests must not affect the exit status: {stderr:?}");
}

// ---------------------------------------------------------------------------------------------
// Pipelining and large frames
// ---------------------------------------------------------------------------------------------

fn pipelined_requests_are_answered_in_order_with_their_seqs(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    for handler in ["echo", "echo-raw"] {
        let mut server = Server::handshake(kind, handler, &[]);
        let mut sent = Vec::new();
        let mut burst = Vec::new();
        for i in 0..10u64 {
            // Non-monotonic seqs: the server echoes whatever the request holds.
            let seq = 7919 * (i + 1) % 1000;
            let (dtype, count, payload) = match i % 3 {
                0 => (Dtype::F64, i, f64_bytes(&pseudo_random_f64(i as usize, i))),
                1 => (Dtype::F32, i, f32_bytes(&f32_edges()[..i as usize])),
                _ => (Dtype::Bytes, i, vec![i as u8; i as usize]),
            };
            burst.extend(data_frame(seq, dtype, count, &payload));
            sent.push((seq, dtype, count, payload));
        }
        server.write(&burst);
        for (seq, dtype, count, payload) in sent {
            let reply = server.frame();
            let h = reply.header;
            assert_eq!((h.kind, h.seq, h.dtype, h.count), (Kind::Data, seq, dtype, count));
            assert_eq!(reply.payload, payload);
        }
        let (status, stderr) = server.finish();
        assert!(status.success(), "{stderr:?}");
    }
}

const LARGE: usize = 1 << 20; // 1,048,576 f64 = 8 MiB

fn an_8_mib_request_and_its_8_mib_reply_pass_without_deadlock(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(40));
    for handler in ["echo", "echo-raw"] {
        let values = pseudo_random_f64(LARGE, 11);
        let payload = f64_bytes(&values);
        assert_eq!(payload.len(), 8 << 20);
        let mut server = Server::handshake(kind, handler, &[]);
        // The whole request is written before anything is read: the server must read all of
        // it before writing its reply.
        server.write(&data_frame(1, Dtype::F64, LARGE as u64, &payload));
        let reply = server.frame();
        assert_eq!((reply.header.seq, reply.header.count), (1, LARGE as u64));
        assert!(reply.payload == payload, "{handler}: 8 MiB reply differs");
        let (status, stderr) = server.finish();
        assert!(status.success(), "{stderr:?}");
    }
}

fn pipelined_8_mib_frames_flow_in_both_directions_at_once(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(40));
    let mut server = Server::handshake(kind, "echo", &[]);
    let payloads: Vec<Vec<u8>> =
        (0..3).map(|seed| f64_bytes(&pseudo_random_f64(LARGE, 100 + seed))).collect();
    let frames: Vec<Vec<u8>> = payloads
        .iter()
        .enumerate()
        .map(|(i, p)| data_frame(i as u64 + 1, Dtype::F64, LARGE as u64, p))
        .collect();
    // The server writes a reply while the next request is still arriving. One transport cannot
    // be written on one thread while another reads it, so this thread interleaves both, and
    // the overlap is certain rather than likely: once the first bytes of reply i are here, the
    // server has read all of request i, so the request channel is empty; while the server
    // writes reply i (stalling whenever the reply channel is full), half a channel of request
    // i + 1 goes out in pieces between reads of reply i, and waits there. Then the rest of reply
    // i is read, and the rest of request i + 1 written while the server reads it.
    let capacity = server.transport().capacity().expect("the transport's capacity");
    // shm-sem holds one write per slot until the server reads again: one early piece fits.
    let pieces = if kind == TransportKind::ShmSem { 1 } else { 4 };
    let piece = capacity / 2 / pieces;
    assert!(piece > 0 && piece * pieces < frames[1].len(), "capacity {capacity}");
    server.write(&frames[0]);
    for (i, payload) in payloads.iter().enumerate() {
        let mut header = [0u8; HEADER_LEN];
        server.read_exact(&mut header);
        let len = Header::parse(&header, u64::MAX)
            .and_then(|h| h.payload_bytes())
            .unwrap_or_else(|e| panic!("reply {i}: {e}")) as usize;
        let mut reply = vec![0u8; HEADER_LEN + len + padding_len(len)];
        reply[..HEADER_LEN].copy_from_slice(&header);
        let mut got = HEADER_LEN;
        let mut sent = 0;
        let next = frames.get(i + 1);
        if let Some(next) = next {
            let step = (reply.len() - got) / (pieces + 1);
            for _ in 0..pieces {
                server.write(&next[sent..sent + piece]);
                sent += piece;
                server.read_exact(&mut reply[got..got + step]);
                got += step;
            }
        }
        server.read_exact(&mut reply[got..]);
        if let Some(next) = next {
            server.write(&next[sent..]);
        }
        let reply = read_frame(&mut &reply[..])
            .unwrap_or_else(|e| panic!("reply {i}: {e}"))
            .expect("a whole reply");
        let h = reply.header;
        assert_eq!(
            (h.kind, h.seq, h.dtype, h.count),
            (Kind::Data, i as u64 + 1, Dtype::F64, LARGE as u64)
        );
        assert!(&reply.payload == payload, "reply {i} differs");
    }
    // The stream ends at a frame boundary.
    server.shutdown_write();
    assert!(server.maybe_frame().is_none());
    let (status, stderr) = server.finish();
    assert!(status.success(), "{stderr:?}");
}

// ---------------------------------------------------------------------------------------------
// Validation rules (PROTOCOL.md §10): ERROR with the header's seq, exit 2, one stderr line
// ---------------------------------------------------------------------------------------------

fn bad_magic_gets_error_with_the_headers_seq_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let header = raw_header(b"XEER", 1, 2, 2, 0, 7, 1, 0);
    assert_violation(kind, &[], true, &header, 7, "bad magic");
}

fn bad_magic_as_the_first_frame_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let header = raw_header(b"peer", 1, 1, 0, 0, 3, 0, 0);
    assert_violation(kind, &[], false, &header, 3, "bad magic");
}

fn unsupported_version_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let header = raw_header(b"PEER", 2, 2, 2, 0, 8, 1, 0);
    assert_violation(kind, &[], true, &header, 8, "unsupported version: expected 1, found 2");
}

fn unknown_kind_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    for (frame_kind, seq) in [(9u8, 9u64), (0, 90)] {
        let header = raw_header(b"PEER", 1, frame_kind, 0, 0, seq, 0, 0);
        let fragment = format!("unknown frame kind {frame_kind}");
        assert_violation(kind, &[], true, &header, seq, &fragment);
    }
}

fn unknown_dtype_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let header = raw_header(b"PEER", 1, 2, 3, 0, 10, 1, 0);
    assert_violation(kind, &[], true, &header, 10, "unknown dtype 3");
}

fn reserved_flags_get_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let header = raw_header(b"PEER", 1, 2, 2, 1, 11, 1, 0);
    assert_violation(kind, &[], true, &header, 11, "reserved flags set: expected 0, found 0x01");
}

fn nonzero_padding_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    // f32 × 3 = 12 bytes, then 4 bytes of padding with byte 2 set.
    let mut frame = raw_header(b"PEER", 1, 2, 1, 0, 12, 3, 0).to_vec();
    frame.extend(f32_bytes(&[1.0, 2.0, 3.0]));
    frame.extend([0, 0, 7, 0]);
    assert_violation(kind, &[], true, &frame, 12, "nonzero padding: byte 2 of the padding is 0x07");
}

fn hello_with_a_numeric_dtype_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let header = raw_header(b"PEER", 1, 1, 2, 0, 13, 1, 0);
    assert_violation(kind, &[], false, &header, 13, "malformed HELLO frame");
}

fn bye_with_a_count_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let header = raw_header(b"PEER", 1, 4, 0, 0, 14, 3, 0);
    assert_violation(
        kind,
        &[],
        true,
        &header,
        14,
        "malformed BYE frame: expected count 0, found count 3",
    );
}

fn length_overflow_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let header = raw_header(b"PEER", 1, 2, 2, 0, 15, u64::MAX, 0);
    assert_violation(kind, &[], true, &header, 15, "payload length overflows u64");
}

fn frame_larger_than_max_frame_bytes_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    // 129 f64 = 1032 bytes > 1024; only the header is sent: the server must not wait for it.
    let header = raw_header(b"PEER", 1, 2, 2, 0, 16, 129, 0);
    assert_violation(
        kind,
        &["--max-frame-bytes", "1024"],
        true,
        &header,
        16,
        "frame too large: payload of 1032 bytes exceeds max_frame_bytes 1024",
    );
}

fn a_payload_of_exactly_max_frame_bytes_is_accepted(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::handshake(kind, "echo", &["--max-frame-bytes", "1024"]);
    let values = pseudo_random_f64(128, 5);
    server.write(&data_frame(1, Dtype::F64, 128, &f64_bytes(&values)));
    assert_eq!(server.frame().payload, f64_bytes(&values));
}

fn oversized_hello_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    // HELLO payloads are capped at 64 KiB whatever max_frame_bytes says.
    let header = raw_header(b"PEER", 1, 1, 0, 0, 0, 70_000, 0);
    assert_violation(kind, &[], false, &header, 0, "frame too large");
}

fn data_before_hello_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let frame = data_frame(17, Dtype::F64, 1, &f64_bytes(&[1.0]));
    assert_violation(kind, &[], false, &frame, 17, "unexpected DATA frame: expected HELLO");
}

fn bye_before_hello_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    assert_violation(kind, &[], false, &bye(170), 170, "unexpected BYE frame: expected HELLO");
}

fn second_hello_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let hello = Hello { max_frame_bytes: 4096, ..Hello::default() };
    let frame = control_frame(Kind::Hello, 18, &hello.to_payload());
    assert_violation(kind, &[], true, &frame, 18, "unexpected HELLO frame: expected DATA or BYE");
}

fn error_from_the_client_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let frame = control_frame(Kind::Error, 19, b"client says no");
    assert_violation(kind, &[], true, &frame, 19, "unexpected ERROR frame");
}

fn invalid_hello_payloads_get_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(30));
    let cases: [(&[u8], &str); 5] = [
        (b"version=1\n", "missing required key max_frame_bytes"),
        (b"version=2\nmax_frame_bytes=10\n", "version: expected 1, found \"2\""),
        (b"version=1\nmax_frame_bytes=lots\n", "max_frame_bytes"),
        (b"version=1\nmax_frame_bytes=10", "does not end"),
        (b"version=1\n\xff\xfe=1\nmax_frame_bytes=10\n", "UTF-8"),
    ];
    for (i, (payload, fragment)) in cases.into_iter().enumerate() {
        let seq = 20 + i as u64;
        let frame = control_frame(Kind::Hello, seq, payload);
        assert_violation(kind, &[], false, &frame, seq, fragment);
    }
}

// ---------------------------------------------------------------------------------------------
// End of stream (PROTOCOL.md §8)
// ---------------------------------------------------------------------------------------------

fn end_of_stream_at_a_frame_boundary_after_hello_exits_0(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    for requests in [0u64, 2] {
        let mut server = Server::handshake(kind, "echo", &[]);
        for seq in 1..=requests {
            server.write(&data_frame(seq, Dtype::F32, 1, &f32_bytes(&[1.5])));
            assert_eq!(server.frame().header.seq, seq);
        }
        server.shutdown_write();
        assert!(server.maybe_frame().is_none());
        let (status, stderr) = server.finish();
        assert_eq!(status.code(), Some(0), "after {requests} requests: {stderr:?}");
        assert!(stderr.is_empty(), "{stderr:?}");
    }
}

fn end_of_stream_inside_a_header_gets_error_seq_0_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::handshake(kind, "echo", &[]);
    server.write(&data_frame(31, Dtype::F64, 1, &f64_bytes(&[1.0]))[..10]);
    server.shutdown_write();
    let error = server.frame();
    assert_error_frame(&error, 0, "truncated header: got 10 of 32 bytes");
    assert!(server.maybe_frame().is_none());
    let (status, stderr) = server.finish();
    assert_failed_with(status, &stderr, "truncated header: got 10 of 32 bytes");
}

fn end_of_stream_inside_a_payload_gets_error_with_its_seq_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::handshake(kind, "echo", &[]);
    let frame = data_frame(21, Dtype::F64, 2, &f64_bytes(&[1.0, 2.0]));
    server.write(&frame[..HEADER_LEN + 4]);
    server.shutdown_write();
    let error = server.frame();
    assert_error_frame(&error, 21, "truncated payload: got 4 of 16 bytes");
    let (status, stderr) = server.finish();
    assert_failed_with(status, &stderr, "truncated payload: got 4 of 16 bytes");
}

fn end_of_stream_inside_the_padding_gets_error_with_its_seq_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::handshake(kind, "echo", &[]);
    // f32 × 1 = 4 bytes of payload and 4 of padding; send 1 padding byte.
    let frame = data_frame(22, Dtype::F32, 1, &f32_bytes(&[1.0]));
    server.write(&frame[..HEADER_LEN + 5]);
    server.shutdown_write();
    let error = server.frame();
    assert_error_frame(&error, 22, "truncated padding: got 1 of 4 bytes");
    let (status, stderr) = server.finish();
    assert_failed_with(status, &stderr, "truncated padding: got 1 of 4 bytes");
}

fn end_of_stream_inside_the_clients_hello_gets_error_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::spawn(kind, "echo", &[]);
    assert_eq!(server.frame().header.kind, Kind::Hello);
    let hello = client_hello(DEFAULT_MAX_FRAME_BYTES);
    server.write(&hello[..HEADER_LEN + 5]);
    server.shutdown_write();
    let error = server.frame();
    assert_error_frame(&error, 0, "truncated payload: got 5 of");
    let (status, stderr) = server.finish();
    assert_failed_with(status, &stderr, "truncated payload: got 5 of");
}

fn end_of_stream_before_the_clients_hello_gets_error_seq_0_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::spawn(kind, "echo", &[]);
    assert_eq!(server.frame().header.kind, Kind::Hello);
    server.shutdown_write();
    let error = server.maybe_frame().expect("an ERROR frame before end of stream (§8, §6 case B)");
    assert_error_frame(&error, 0, "truncated stream before HELLO: got 0 of 32 bytes");
    let (status, stderr) = server.finish();
    assert_failed_with(status, &stderr, "truncated stream before HELLO: got 0 of 32 bytes");
}

fn end_of_stream_inside_the_first_header_gets_error_seq_0_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::spawn(kind, "echo", &[]);
    assert_eq!(server.frame().header.kind, Kind::Hello);
    server.write(&client_hello(DEFAULT_MAX_FRAME_BYTES)[..10]);
    server.shutdown_write();
    let error = server.maybe_frame().expect("an ERROR frame before end of stream (§8, §6 case B)");
    assert_error_frame(&error, 0, "truncated header: got 10 of 32 bytes");
    let (status, stderr) = server.finish();
    assert_failed_with(status, &stderr, "truncated header: got 10 of 32 bytes");
}

fn end_of_stream_before_the_clients_hello_exits_2_naming_the_truncation(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    // The part of §8 the server does meet today: non-zero exit and a one-line message.
    let mut server = Server::spawn(kind, "echo", &[]);
    assert_eq!(server.frame().header.kind, Kind::Hello);
    server.shutdown_write();
    let _ = server.rest();
    let (status, stderr) = server.finish();
    assert_failed_with(status, &stderr, "truncated stream before HELLO: got 0 of 32 bytes");
}

// ---------------------------------------------------------------------------------------------
// A client that stops reading
// ---------------------------------------------------------------------------------------------

fn a_client_that_closes_its_reading_end_makes_the_server_exit_2_not_die_of_sigpipe(
    kind: TransportKind,
) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::handshake(kind, "echo", &[]);
    server.write(&data_frame(1, Dtype::F64, 1, &f64_bytes(&[1.0])));
    assert_eq!(server.frame().header.seq, 1);
    // Ask for a reply twice as large as the reply channel, so that the server cannot finish it
    // without this side reading; then stop reading for good. A transport closes its reading
    // side only with its writing side, so both are closed, after the whole request is written:
    // the server reads the request, and its reply meets EPIPE (a closed ring or slot over
    // shared memory) before it could read the end of the stream.
    let capacity = server.transport().capacity().expect("the transport's capacity");
    let count = 2 * capacity / 8 + 1000;
    let request = f64_bytes(&pseudo_random_f64(count, 2));
    server.write(&data_frame(2, Dtype::F64, count as u64, &request));
    server.transport = None;
    let (status, stderr) = server.finish();
    assert_eq!(status.signal(), None, "the server died of a signal: {status:?} {stderr:?}");
    assert_failed_with(status, &stderr, "closed");
}

// ---------------------------------------------------------------------------------------------
// Every test above, once per transport
// ---------------------------------------------------------------------------------------------

per_transport!(
    server_says_hello_first_naming_its_handler_and_implementation,
    server_announces_its_max_frame_bytes,
    bye_gets_bye_with_the_same_seq_then_end_of_stream_and_exit_0,
    stdout_of_the_server_carries_only_frames_and_fd_1_points_at_stderr,
    echo_returns_every_dtype_and_edge_value_bit_for_bit,
    echo_raw_returns_every_dtype_and_edge_value_bit_for_bit,
    echo_keeps_nan_payloads_and_signalling_nans_when_decoded_as_numbers,
    every_wait_strategy_serves_the_same_bytes,
    lorenz96_matches_the_library_rhs_bit_for_bit,
    lorenz96_rejects_f32_bytes_and_short_states_with_error_and_goes_on,
    pipelined_requests_are_answered_in_order_with_their_seqs,
    an_8_mib_request_and_its_8_mib_reply_pass_without_deadlock,
    pipelined_8_mib_frames_flow_in_both_directions_at_once,
    bad_magic_gets_error_with_the_headers_seq_and_exit_2,
    bad_magic_as_the_first_frame_gets_error_and_exit_2,
    unsupported_version_gets_error_and_exit_2,
    unknown_kind_gets_error_and_exit_2,
    unknown_dtype_gets_error_and_exit_2,
    reserved_flags_get_error_and_exit_2,
    nonzero_padding_gets_error_and_exit_2,
    hello_with_a_numeric_dtype_gets_error_and_exit_2,
    bye_with_a_count_gets_error_and_exit_2,
    length_overflow_gets_error_and_exit_2,
    frame_larger_than_max_frame_bytes_gets_error_and_exit_2,
    a_payload_of_exactly_max_frame_bytes_is_accepted,
    oversized_hello_gets_error_and_exit_2,
    data_before_hello_gets_error_and_exit_2,
    bye_before_hello_gets_error_and_exit_2,
    second_hello_gets_error_and_exit_2,
    error_from_the_client_gets_error_and_exit_2,
    invalid_hello_payloads_get_error_and_exit_2,
    end_of_stream_at_a_frame_boundary_after_hello_exits_0,
    end_of_stream_inside_a_header_gets_error_seq_0_and_exit_2,
    end_of_stream_inside_a_payload_gets_error_with_its_seq_and_exit_2,
    end_of_stream_inside_the_padding_gets_error_with_its_seq_and_exit_2,
    end_of_stream_inside_the_clients_hello_gets_error_and_exit_2,
    end_of_stream_before_the_clients_hello_gets_error_seq_0_and_exit_2,
    end_of_stream_inside_the_first_header_gets_error_seq_0_and_exit_2,
    end_of_stream_before_the_clients_hello_exits_2_naming_the_truncation,
    a_client_that_closes_its_reading_end_makes_the_server_exit_2_not_die_of_sigpipe,
);
