//! The real `peer --role server` binary given what it must refuse, over every transport
//! (`pipe`, `shm-sem`, `shm-ring`): every validation rule of `docs/PROTOCOL.md` §10 with its
//! ERROR frame and exit status (and the largest frame it must still accept), end of stream at
//! and inside a frame (§8), and a client that stops reading. Well-formed conversations are in
//! `server_binary_serving.rs`.
//!
//! Each test is a function of the transport, run once per transport by `per_transport!` (in
//! `common`): `cargo test --test server_binary_errors shm_ring` runs one transport, and a failure
//! names its transport (`bad_magic_gets_error_with_the_headers_seq_and_exit_2::shm_sem`).
//!
//! The client side here is hand-written from the specification, not the library's `Peer`, so a
//! mistake shared by the library's client and server cannot hide: frames are built and parsed
//! by the helpers of `common`, and the library only moves the bytes, through the `Transport`
//! that `peerpipe::process::spawn_connected` returns (for `pipe`, the server's stdin and
//! stdout; for shared memory, the region handed over as the server's stdin). [`Server`], the
//! child and its transport, is in `common::server`.

#[macro_use]
mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use common::server::{Server, assert_error_frame, f32_bytes, f64_bytes};
use common::{
    Watchdog, bye, client_hello, control_frame, data_frame, pseudo_random_f64, raw_header, secs,
};
use peerpipe::frame::{DEFAULT_MAX_FRAME_BYTES, Dtype, HEADER_LEN, Hello, Kind};
use peerpipe::transport::TransportKind;

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
        "frame too large: payload of 1032 bytes exceeds max_frame_bytes 1024, this server's \
         limit: start the server with a larger one (`peer --role server --max-frame-bytes N`",
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
    assert_violation(
        kind,
        &[],
        false,
        &header,
        0,
        "frame too large: payload of 70000 bytes exceeds max_frame_bytes 65536, the cap on HELLO \
         and ERROR payloads whatever max_frame_bytes is",
    );
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

// ---------------------------------------------------------------------------------------------
// PARTS (PROTOCOL.md §15): a broken part table is a violation, an unknown function is not
// ---------------------------------------------------------------------------------------------

fn every_malformed_part_table_gets_error_with_the_headers_seq_and_exit_2(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(120));
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("list fixtures/")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("bad_parts_"))
        // Valid as a request (only a reply must not name a function).
        .filter(|name| name != "bad_parts_reply_names_function.bin")
        .collect();
    names.sort();
    assert!(names.len() >= 28, "{names:?}");
    for name in names {
        let bytes = std::fs::read(dir.join(&name)).expect("read fixture");
        let seq = u64::from_le_bytes(bytes[8..16].try_into().unwrap());
        let fragment = if name == "bad_parts_header_dtype_f64.bin" {
            "malformed PARTS"
        } else {
            "bad part table"
        };
        assert_violation(kind, &[], true, &bytes, seq, fragment);
    }
}

fn an_unknown_function_gets_error_and_the_next_request_is_answered(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut server = Server::handshake(kind, "echo", &[]);
    let request = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/parts_rhs_request.bin"),
    )
    .expect("read fixture");
    server.write(&request);
    assert_error_frame(
        &server.frame(),
        7,
        "unknown function \"rhs\": this server serves no functions",
    );
    let empty = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/parts_empty_request.bin"),
    )
    .expect("read fixture");
    server.write(&empty);
    let reply = server.frame();
    assert_eq!((reply.header.kind, reply.header.seq, reply.payload.len()), (Kind::Parts, 31, 8));
    server.write(&bye(32));
    assert_eq!(server.frame().header.kind, Kind::Bye);
    let (status, stderr) = server.finish();
    assert!(status.success(), "{status:?} {stderr}");
}

per_transport!(
    every_malformed_part_table_gets_error_with_the_headers_seq_and_exit_2,
    an_unknown_function_gets_error_and_the_next_request_is_answered,
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
