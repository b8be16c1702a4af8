//! Inputs found by fuzzing (`fuzz/`, `tests/stream_fuzz.rs`), each a test that states what
//! the specification requires. Each was a bug when found (hence the `bug_` names) and is fixed;
//! the matching `TOLERATE_*` constants (named in the tests' docs) are off, so the fuzz targets
//! and the proptests check the fixed behaviour too. A new finding goes here as a test marked
//! `#[ignore = "BUG: ..."]` until it is fixed.

mod common;
mod stream_model;

use common::{Watchdog, secs};
use peerpipe::Error;
use peerpipe::frame::{Hello, Kind};
use stream_model::{options, parse_output, run_server};

/// The server's limit in these cases: 1 MiB.
const MAX: u64 = 1 << 20;

/// Bytes from a hex string; whitespace is ignored.
fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

/// §6: an ERROR's payload is "at most 65536 bytes and at most the receiver's
/// `max_frame_bytes`", so a client that announced `max_frame_bytes=0` must get ERROR frames
/// with empty messages. The server sends the whole message (here 55 bytes) because
/// `Server::error_limit` (src/server.rs) reads `client_max == 0` as "no HELLO yet" and falls
/// back to 65536. A peerpipe client announcing 0 would reject that ERROR as too large.
///
/// Tolerated by `stream_model::TOLERATE_ZERO_CLIENT_MAX`.
#[test]
fn bug_an_announced_max_frame_bytes_of_0_caps_error_messages_at_0() {
    let _watchdog = Watchdog::new(secs(30));
    // HELLO "version=1\nmax_frame_bytes=0\n", then DATA seq 1, bytes, count 1: [0x2a].
    let input = hex("
        50454552 01010000 00000000 00000000 1c000000 00000000 00000000 00000000
        76657273 696f6e3d 310a6d61 785f6672 616d655f 62797465 733d300a 00000000
        50454552 01020000 01000000 00000000 01000000 00000000 00000000 00000000
        2a000000 00000000
    ");
    let run = run_server("echo", &input, &options(MAX));
    let frames = parse_output(&run.output).expect("valid frames");
    // The 1-byte reply exceeds the client's 0: the request is rejected, and the ERROR...
    let reply = &frames[1];
    assert_eq!((reply.header.kind, reply.header.seq), (Kind::Error, 1));
    // ...must be empty.
    assert_eq!(
        reply.payload.len(),
        0,
        "ERROR message {:?} exceeds the client's max_frame_bytes 0",
        String::from_utf8_lossy(&reply.payload)
    );
}

/// §10: a receiver checks the kind (step 10) before it reads payload and padding
/// (steps 11–12), and "never reads the payload of a frame that failed steps 2–10". After a
/// request of P payload bytes the server reads the next frame guessing it also has P bytes
/// (`Server::run` → `Transport::recv_frame_contiguous`, src/transport/mod.rs `recv_guessed`,
/// which follows any header valid under `u64::MAX` whose length matches the guess, unless
/// read-ahead bytes are pending). A HELLO or ERROR frame of exactly P bytes is then read
/// before its kind is checked, and when its payload is cut short or its padding is nonzero
/// the server reports that (`Received::Broken`) instead of the unexpected kind. The ERROR
/// carries the right seq; its message and `serve`'s error are the wrong ones.
///
/// Expected: ERROR seq 5 "unexpected HELLO frame: expected DATA or BYE", `Err(UnexpectedKind)`.
/// Actual: ERROR seq 5 "truncated payload: got 5 of 16 bytes", `Err(Truncated)`.
///
/// Tolerated by `stream_model::TOLERATE_GUESSED_KIND_ORDER`.
#[test]
fn bug_an_out_of_place_hello_is_reported_as_such_even_when_its_payload_is_cut_short() {
    let _watchdog = Watchdog::new(secs(30));
    // HELLO "version=1\nmax_frame_bytes=4096\n"; DATA seq 1, bytes, count 16: 07 × 16; then a
    // HELLO header seq 5, count 16, followed by only 5 of its 16 payload bytes ("aaaaa").
    let input = hex("
        50454552 01010000 00000000 00000000 1f000000 00000000 00000000 00000000
        76657273 696f6e3d 310a6d61 785f6672 616d655f 62797465 733d3430 39360a00
        50454552 01020000 01000000 00000000 10000000 00000000 00000000 00000000
        07070707 07070707 07070707 07070707
        50454552 01010000 05000000 00000000 10000000 00000000 00000000 00000000
        61616161 61
    ");
    let run = run_server("echo", &input, &options(MAX));
    let frames = parse_output(&run.output).expect("valid frames");
    assert_eq!(frames[1].header.kind, Kind::Data, "the request is answered");
    let error = frames.last().expect("frames");
    assert_eq!((error.header.kind, error.header.seq), (Kind::Error, 5));
    assert_eq!(
        String::from_utf8_lossy(&error.payload),
        "unexpected HELLO frame: expected DATA or BYE"
    );
    assert!(
        matches!(run.result, Err(Error::UnexpectedKind { found: Kind::Hello, .. })),
        "{:?}",
        run.result
    );
}

/// §4: "A key that appears more than once takes its last value (peerpipe's receivers)", and a
/// HELLO is invalid only when `max_frame_bytes` "is missing, or is not one or more ASCII
/// digits". `Hello::parse` (src/frame.rs) validates every `max_frame_bytes` line as it meets
/// it, so an invalid value followed by a valid one is rejected: `BadHello { reason:
/// "max_frame_bytes: expected decimal digits, found \"x\"" }` instead of `max_frame_bytes` 5.
/// (Either the parser or the sentence in §4 should change; senders must not repeat keys.)
///
/// Tolerated by `TOLERATE_EVERY_MAX_FRAME_BYTES_CHECKED` in `fuzz/fuzz_targets/frame_decoder.rs`.
#[test]
fn bug_a_repeated_max_frame_bytes_takes_its_last_value() {
    // "max_frame_bytes=x\nmax_frame_bytes=5\nversion=1\n"
    let payload = hex("
        6d61785f 6672616d 655f6279 7465733d 780a6d61 785f6672 616d655f 62797465
        733d350a 76657273 696f6e3d 310a
    ");
    let hello = Hello::parse(&payload).expect("the last max_frame_bytes is valid");
    assert_eq!(hello.max_frame_bytes, 5);
}
