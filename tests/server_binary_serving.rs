//! The real `peer --role server` binary serving well-formed conversations over every transport
//! (`pipe`, `shm-sem`, `shm-ring`): HELLO first, BYE, a stdout that carries only frames,
//! bit-exact echoes of every dtype and edge value, lorenz96 against the library (and its
//! case-A ERROR replies), pipelining, and 8 MiB frames. Malformed input, end of stream and a
//! client that stops reading are in `server_binary_errors.rs`.
//!
//! Each test is a function of the transport, run once per transport by `per_transport!` (in
//! `common`): `cargo test --test server_binary_serving shm_ring` runs one transport, and a failure
//! names its transport (`echo_returns_every_dtype_and_edge_value_bit_for_bit::shm_sem`).
//!
//! The client side here is hand-written from the specification, not the library's `Peer`, so a
//! mistake shared by the library's client and server cannot hide: frames are built and parsed
//! by the helpers of `common`, and the library only moves the bytes, through the `Transport`
//! that `peerpipe::process::spawn_connected` returns (for `pipe`, the server's stdin and
//! stdout; for shared memory, the region handed over as the server's stdin). [`Server`], the
//! child and its transport, is in `common::server`.

#[macro_use]
mod common;

use common::server::{Server, assert_error_frame, f32_bytes, f64_bytes};
use common::{
    Watchdog, bits32, bits64, bye, client_hello, data_frame, f32_edges, f64_edges,
    pseudo_random_f64, read_frame, secs,
};
use peerpipe::codec;
use peerpipe::frame::{
    DEFAULT_MAX_FRAME_BYTES, Dtype, HEADER_LEN, Header, Hello, Kind, padding_len,
};
use peerpipe::lorenz96;
use peerpipe::transport::TransportKind;

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
);
