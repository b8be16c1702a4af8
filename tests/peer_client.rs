//! The library's client, `Peer`, against the real `peer --role server` binary: typed calls for
//! every `Values`/`ValuesMut` combination on both data paths, timing, pipelining, ERROR
//! replies, closing and dropping, a client that stops reading, and timeouts.
//!
//! Every test is a function of the transport, run as `NAME::pipe`, `NAME::shm_sem`,
//! `NAME::shm_ring` and, but for one, `NAME::tcp` (see `per_transport_and_tcp!`): the server
//! is spawned with `--transport KIND`.

#[macro_use]
mod common;

use std::thread;
use std::time::Duration;

use common::{
    Watchdog, bits32, bits64, f32_edges, f64_edges, misbehaving_shell_line_on, peer_exe,
    pseudo_random_f64, secs,
};
use peerpipe::codec::{self, Values, ValuesMut};
use peerpipe::frame::{Dtype, HEADER_LEN, Header, Hello, Kind};
use peerpipe::transport::{Deadline, Transport, TransportKind};
use peerpipe::{DataPath, Error, Options, Peer, Wait};

/// The re-executed test binary plays a misbehaving server; see `common::misbehave`.
#[test]
fn misbehaving_server_entry() {
    common::misbehaving_server_entry();
}

fn options(kind: TransportKind, path: DataPath) -> Options {
    Options { path, transport: kind, timeout: Some(secs(10)), ..Options::default() }
}

/// The default options, on `kind`.
fn on(kind: TransportKind) -> Options {
    Options { transport: kind, ..Options::default() }
}

fn spawn(handler: &str, options: Options) -> Peer {
    let kind = options.transport;
    let peer = Peer::spawn_server(peer_exe(), handler, options)
        .unwrap_or_else(|e| panic!("spawn peer --role server --transport {kind}: {e}"));
    assert_eq!(peer.transport_kind(), kind);
    peer
}

/// Closes the peer and asserts the server exited with status 0.
fn close_cleanly(peer: Peer) {
    let status = peer.close().expect("close").expect("a spawned server has an exit status");
    assert!(status.success(), "server exit status {status:?}");
}

per_transport_and_tcp!(
    every_values_combination_round_trips_bit_exact_on_both_paths,
    call_f64_returns_nan_payloads_and_signed_zeros_bit_for_bit,
    mismatched_buffer_dtype_is_a_dtype_mismatch_naming_both_and_the_server_is_reaped,
    a_call_after_a_failed_call_reports_the_earlier_failure,
    send_after_a_failed_call_reports_the_earlier_failure,
    mismatched_buffer_length_is_refused_before_sending_and_the_peer_stays_usable,
    eight_mib_calls_round_trip_on_both_paths,
    every_wait_strategy_completes_calls,
    server_hello_and_capacity_are_reported,
    a_request_above_the_servers_limit_is_refused_before_sending_and_the_peer_stays_usable,
    call_timing_fields_are_consistent,
    recv_reports_the_seq_it_answers_and_its_timing,
    pipelined_sends_then_recvs_come_back_in_order,
    close_with_replies_in_flight_discards_them_and_exits_cleanly,
    an_error_reply_becomes_remote_with_the_servers_message_and_the_peer_stays_usable,
    an_error_reply_in_a_pipeline_is_matched_to_its_request,
    close_returns_the_servers_successful_exit_status_and_reaps_it,
    dropping_a_peer_without_close_reaps_the_server,
    a_peer_over_a_transport_has_no_server_process,
    a_client_that_stops_reading_gets_a_timeout_not_a_hang_and_the_server_is_reaped,
    a_200us_timeout_on_a_silent_peer_ends_in_timeout_waiting_for_seq_1,
);

per_transport!(a_server_told_no_transport_serves_the_one_its_client_chose);

fn a_server_told_no_transport_serves_the_one_its_client_chose(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(60));
    // Only the client names the transport: the server sees what its stdin is.
    let mut command = std::process::Command::new(peer_exe());
    command.args(["--role", "server", "--handler", "echo"]);
    let mut peer = Peer::spawn(command, on(kind)).expect("a server without --transport");
    assert_eq!(peer.transport_kind(), kind);
    let x = f64_values();
    let mut y = vec![0.0; x.len()];
    peer.call_f64(&x, &mut y).expect("call");
    assert_eq!(bits64(&y), bits64(&x));
    close_cleanly(peer);
}

// The misbehaving server (the re-executed test binary) speaks over its stdin and stdout only;
// a TCP server that never answers is tests/tcp.rs's.
per_transport!(a_200us_timeout_on_a_spawned_server_that_never_answers_ends_in_timeout);

// ---------------------------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------------------------

/// f64 test values: edge values (NaN payloads, signed zeros, subnormals, infinities), values
/// that round when narrowed to f32, and values out of f32 range.
fn f64_values() -> Vec<f64> {
    let mut v = f64_edges();
    v.extend(pseudo_random_f64(61, 9));
    v.extend([1e300, -1e-300, 3.4028235677973366e38, f64::from(f32::MAX) * 2.0]);
    v
}

fn f32_values() -> Vec<f32> {
    let mut v = f32_edges();
    v.extend(pseudo_random_f64(40, 10).iter().map(|&x| x as f32));
    v
}

/// What `src` must come back as in a buffer of kind `dst_kind`, computed with the codec (the
/// crate's oracle): the wire bytes of the request, decoded the way the buffer expects.
fn expected_reply(src: Values<'_>, dst_kind: &str) -> Vec<u64> {
    let mut wire = vec![0u8; src.wire_len()];
    codec::encode_into(src, &mut wire).expect("encode");
    match dst_kind {
        "bytes" => wire.iter().map(|&b| u64::from(b)).collect(),
        "f32" => codec::decode_f32(&wire).unwrap().iter().map(|v| u64::from(v.to_bits())).collect(),
        "f64" => bits64(&codec::decode_f64(&wire).unwrap()),
        "f64-from-f32" => bits64(&codec::decode_f32_as_f64(&wire).unwrap()),
        other => unreachable!("{other}"),
    }
}

/// Sends `src` and receives into a fresh buffer of kind `dst_kind`; returns the buffer's bits.
fn call_into(peer: &mut Peer, src: Values<'_>, dst_kind: &str) -> peerpipe::Result<Vec<u64>> {
    exchange_into(peer, src, dst_kind, false)
}

/// [`call_into`] as `send` then `recv`, which check the reply on the wire instead of the
/// buffer before sending (as `call` does).
fn send_recv_into(peer: &mut Peer, src: Values<'_>, dst_kind: &str) -> peerpipe::Result<Vec<u64>> {
    exchange_into(peer, src, dst_kind, true)
}

fn exchange(
    peer: &mut Peer,
    src: Values<'_>,
    dst: ValuesMut<'_>,
    split: bool,
) -> peerpipe::Result<()> {
    if split {
        peer.send(src)?;
        peer.recv(dst)?;
    } else {
        peer.call(src, dst)?;
    }
    Ok(())
}

fn exchange_into(
    peer: &mut Peer,
    src: Values<'_>,
    dst_kind: &str,
    split: bool,
) -> peerpipe::Result<Vec<u64>> {
    let n = src.len();
    Ok(match dst_kind {
        "bytes" => {
            let mut dst = vec![0xaau8; n];
            exchange(peer, src, ValuesMut::Bytes(&mut dst), split)?;
            dst.iter().map(|&b| u64::from(b)).collect()
        }
        "f32" => {
            let mut dst = vec![f32::from_bits(0xdead_beef); n];
            exchange(peer, src, ValuesMut::F32(&mut dst), split)?;
            bits32(&dst).into_iter().map(u64::from).collect()
        }
        "f64" => {
            let mut dst = vec![f64::from_bits(0xdead_beef); n];
            exchange(peer, src, ValuesMut::F64(&mut dst), split)?;
            bits64(&dst)
        }
        "f64-from-f32" => {
            let mut dst = vec![f64::from_bits(0xdead_beef); n];
            exchange(peer, src, ValuesMut::F64FromF32(&mut dst), split)?;
            bits64(&dst)
        }
        other => unreachable!("{other}"),
    })
}

const DST_KINDS: [&str; 4] = ["bytes", "f32", "f64", "f64-from-f32"];

fn dst_wire_dtype(kind: &str) -> Dtype {
    match kind {
        "bytes" => Dtype::Bytes,
        "f32" | "f64-from-f32" => Dtype::F32,
        _ => Dtype::F64,
    }
}

fn every_values_combination_round_trips_bit_exact_on_both_paths(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(30));
    let f64s = f64_values();
    let f32s = f32_values();
    let bytes: Vec<u8> = (0..=255u8).rev().collect();
    for handler in ["echo", "echo-raw"] {
        for path in [DataPath::ZeroCopy, DataPath::Codec] {
            let mut peer = spawn(handler, options(kind, path));
            for src in [
                Values::Bytes(&bytes),
                Values::F32(&f32s),
                Values::F64(&f64s),
                Values::F64AsF32(&f64s),
            ] {
                for dst_kind in DST_KINDS {
                    if dst_wire_dtype(dst_kind) != src.wire_dtype() {
                        continue; // covered by mismatched_buffer_dtype_is_a_dtype_mismatch
                    }
                    let got = call_into(&mut peer, src, dst_kind).unwrap_or_else(|e| {
                        panic!("{handler} {path}: {src:?} into {dst_kind}: {e}")
                    });
                    assert_eq!(
                        got,
                        expected_reply(src, dst_kind),
                        "{handler} {path}: {} into {dst_kind}",
                        src.wire_dtype()
                    );
                }
            }
            // Empty arrays of every kind.
            for src in
                [Values::Bytes(&[]), Values::F32(&[]), Values::F64(&[]), Values::F64AsF32(&[])]
            {
                for dst_kind in
                    DST_KINDS.into_iter().filter(|k| dst_wire_dtype(k) == src.wire_dtype())
                {
                    assert_eq!(
                        call_into(&mut peer, src, dst_kind).expect("empty call"),
                        Vec::<u64>::new()
                    );
                }
            }
            close_cleanly(peer);
        }
    }
}

fn call_f64_returns_nan_payloads_and_signed_zeros_bit_for_bit(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    for path in [DataPath::ZeroCopy, DataPath::Codec] {
        let mut peer = spawn("echo", options(kind, path));
        let values = f64_values();
        let mut reply = vec![0.0; values.len()];
        peer.call_f64(&values, &mut reply).expect("call_f64");
        assert_eq!(bits64(&reply), bits64(&values), "{path}");
        close_cleanly(peer);
    }
}

fn mismatched_buffer_dtype_is_a_dtype_mismatch_naming_both_and_the_server_is_reaped(
    kind: TransportKind,
) {
    let _watchdog = Watchdog::new(secs(40));
    let f64s = [1.0, 2.0];
    let f32s = [1.0f32, 2.0];
    let bytes = [1u8, 2];
    for path in [DataPath::ZeroCopy, DataPath::Codec] {
        for src in
            [Values::Bytes(&bytes), Values::F32(&f32s), Values::F64(&f64s), Values::F64AsF32(&f64s)]
        {
            for dst_kind in DST_KINDS.into_iter().filter(|k| dst_wire_dtype(k) != src.wire_dtype())
            {
                let mut peer = spawn("echo", options(kind, path));
                let pid = peer.server_pid().expect("spawned");
                // call refuses the buffer before sending, and the peer stays usable.
                match call_into(&mut peer, src, dst_kind) {
                    Err(e @ Error::InvalidArgument { what: "reply buffer", .. }) => {
                        let text = e.to_string();
                        assert!(text.contains(&src.wire_dtype().to_string()), "{text}");
                    }
                    other => panic!("{path}: {src:?} into {dst_kind} by call: {other:?}"),
                }
                assert!(common::is_our_child(pid), "server {pid} gone after a refused call");
                // send + recv find the mismatch in the reply, read it to its end, and go on.
                match send_recv_into(&mut peer, src, dst_kind) {
                    Err(e @ Error::DtypeMismatch { seq: 1, expected, found }) => {
                        assert_eq!((expected, found), (dst_wire_dtype(dst_kind), src.wire_dtype()));
                        assert_eq!(e.kind(), peerpipe::ErrorKind::Shape);
                    }
                    other => panic!("{path}: {src:?} into {dst_kind}: {other:?}"),
                }
                assert!(common::is_our_child(pid), "server {pid} gone after a reply's shape");
                let mut reply = [0.0; 2];
                peer.call_f64(&f64s, &mut reply).expect("the next call, after a reply's shape");
                assert_eq!(reply, f64s);
            }
        }
    }
}

/// A failure that ends the connection: the server killed before it answers.
fn fail_by_recv(peer: &mut Peer) -> Error {
    let pid = peer.server_pid().expect("spawned");
    let pid = nix::unistd::Pid::from_raw(pid as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("kill the server");
    // Whichever notices first, the send or the wait for the reply, ends the connection.
    let failed = match peer.send(Values::F64(&[1.0])) {
        Err(e) => e,
        Ok(_) => peer.recv(ValuesMut::F64(&mut [0.0])).expect_err("no reply from a dead server"),
    };
    assert!(matches!(failed, Error::PeerExited { .. }), "{failed:?}");
    failed
}

fn a_call_after_a_failed_call_reports_the_earlier_failure(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut peer = spawn("echo", options(kind, DataPath::ZeroCopy));
    assert!(peer.is_open());
    let failed = fail_by_recv(&mut peer);
    assert!(!peer.is_open(), "a failed call ends the conversation");
    for _ in 0..2 {
        match peer.call_f64(&[1.0], &mut [0.0]) {
            Err(Error::ClosedAfter { cause }) => assert_eq!(cause, failed.to_string()),
            other => panic!("{other:?}"),
        }
    }
}

fn send_after_a_failed_call_reports_the_earlier_failure(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut peer = spawn("echo", options(kind, DataPath::ZeroCopy));
    let failed = fail_by_recv(&mut peer);
    let again = peer.send(Values::F64(&[1.0]));
    match again {
        Err(e @ Error::ClosedAfter { .. }) => {
            let text = e.to_string();
            assert!(text.starts_with("peer connection closed after: "), "{text}");
            assert!(text.contains(&failed.to_string()), "{text}");
        }
        other => panic!("{other:?}"),
    }
    // Closing a failed peer reports nothing new and reaps nothing twice.
    assert!(peer.close().is_ok());
}

fn mismatched_buffer_length_is_refused_before_sending_and_the_peer_stays_usable(
    kind: TransportKind,
) {
    let _watchdog = Watchdog::new(secs(20));
    let mut peer = spawn("echo", options(kind, DataPath::ZeroCopy));
    let mut reply = [0.0; 3];
    match peer.call_f64(&[1.0, 2.0, 3.0, 4.0], &mut reply) {
        Err(e @ Error::LengthMismatch { expected: 4, found: 3, .. }) => {
            assert!(e.to_string().contains("expected 4, found 3"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(peer.in_flight(), 0, "nothing was sent");
    let mut reply = [0.0; 4];
    peer.call_f64(&[1.0, 2.0, 3.0, 4.0], &mut reply).expect("the next good call");
    assert_eq!(reply, [1.0, 2.0, 3.0, 4.0]);
    // send + recv: the count is found in the reply, which is read whole: the peer goes on.
    peer.send(Values::F64(&[1.0, 2.0, 3.0, 4.0])).expect("send");
    match peer.recv(ValuesMut::F64(&mut [0.0; 3])) {
        Err(e @ Error::CountMismatch { expected: 3, found: 4, .. }) => {
            assert!(e.to_string().contains("expected 3 elements, found 4"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(peer.in_flight(), 0, "the mismatched reply was consumed");
    peer.call_f64(&[5.0, 6.0, 7.0, 8.0], &mut reply).expect("the next call");
    assert_eq!(reply, [5.0, 6.0, 7.0, 8.0]);
    assert!(peer.close().is_ok());
}

fn eight_mib_calls_round_trip_on_both_paths(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(40));
    let values = pseudo_random_f64(1 << 20, 21);
    for path in [DataPath::ZeroCopy, DataPath::Codec] {
        let mut peer = spawn("echo", options(kind, path));
        let mut reply = vec![0.0; values.len()];
        for _ in 0..2 {
            reply.fill(0.0);
            peer.call_f64(&values, &mut reply).expect("8 MiB call");
            assert!(bits64(&reply) == bits64(&values), "{path}: 8 MiB reply differs");
        }
        close_cleanly(peer);
    }
}

fn every_wait_strategy_completes_calls(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    for wait in [Wait::Block, Wait::Spin, Wait::default(), Wait::Hybrid { spin: Duration::ZERO }] {
        let mut peer = spawn("echo-raw", Options { wait, ..options(kind, DataPath::ZeroCopy) });
        let values = pseudo_random_f64(500, 1);
        let mut reply = vec![0.0; 500];
        for _ in 0..20 {
            peer.call_f64(&values, &mut reply).expect("call");
        }
        assert_eq!(bits64(&reply), bits64(&values), "{wait}");
        close_cleanly(peer);
    }
}

/// The server's HELLO, and the capacity of the transport: what the kernel granted for a
/// pipe; for shared memory the ring or slot size asked for, rounded up to a multiple of 64
/// (and a count limit on `shm-sem`); none for TCP, whose buffers the kernel sizes as it goes.
fn server_hello_and_capacity_are_reported(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let shm_capacity = 5000;
    let peer = spawn("lorenz96", Options { max_frame_bytes: 1 << 20, shm_capacity, ..on(kind) });
    let hello = peer.server_hello();
    assert_eq!(hello.handler.as_deref(), Some("lorenz96"));
    assert_eq!(hello.max_frame_bytes, 1 << 20, "spawn_server passes --max-frame-bytes");
    assert!(hello.implementation.as_deref().is_some_and(|i| i.starts_with("peerpipe ")));
    match (kind, peer.capacity()) {
        (TransportKind::Tcp, capacity) => assert_eq!(capacity, None, "tcp"),
        (TransportKind::Pipe, Some(capacity)) => {
            assert!(capacity >= 4096, "granted pipe capacity {capacity}")
        }
        (_, capacity) => assert_eq!(capacity, Some(shm_capacity.next_multiple_of(64)), "{kind}"),
    }
    let expected_in_flight = (kind == TransportKind::ShmSem).then_some(3);
    assert_eq!(peer.max_in_flight(), expected_in_flight, "{kind}");
    // A request and reply larger than a small region stream through it.
    let mut peer = peer;
    let state = pseudo_random_f64(1000, 3);
    let mut d = vec![0.0; state.len()];
    peer.call_f64(&state, &mut d).expect("a call of 8000 bytes");
    close_cleanly(peer);
}

fn a_request_above_the_servers_limit_is_refused_before_sending_and_the_peer_stays_usable(
    kind: TransportKind,
) {
    let _watchdog = Watchdog::new(secs(20));
    let mut peer = spawn("echo", Options { max_frame_bytes: 1024, ..on(kind) });
    let big = vec![1.0; 129];
    match peer.call_f64(&big, &mut vec![0.0; 129]) {
        Err(Error::FrameTooLarge {
            payload_bytes: 1032,
            max_frame_bytes: 1024,
            refused_by: peerpipe::error::RefusedBy::Client,
        }) => {}
        other => panic!("{other:?}"),
    }
    let mut reply = [0.0; 128];
    peer.call_f64(&[2.5; 128], &mut reply).expect("a request at the limit");
    assert_eq!(reply, [2.5; 128]);
    close_cleanly(peer);
}

// ---------------------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------------------

fn call_timing_fields_are_consistent(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    for path in [DataPath::ZeroCopy, DataPath::Codec] {
        let mut peer = spawn("echo", options(kind, path));
        let values = pseudo_random_f64(4096, 2);
        let mut reply = vec![0.0; values.len()];
        let mut narrowed = vec![0.0; values.len()];
        for _ in 0..10 {
            for timing in [
                peer.call_f64(&values, &mut reply).expect("call"),
                peer.call(Values::F64AsF32(&values), ValuesMut::F64FromF32(&mut narrowed))
                    .expect("narrowing call"),
            ] {
                assert!(timing.server_ns > 0, "{timing:?}: the server reports its time in aux");
                assert!(timing.round_trip_ns > 0, "{timing:?}");
                assert!(timing.round_trip_ns >= timing.server_ns, "{timing:?}");
                assert!(timing.round_trip_ns >= timing.encode_ns + timing.decode_ns, "{timing:?}");
                assert_eq!(
                    timing.transfer_ns(),
                    timing
                        .round_trip_ns
                        .saturating_sub(timing.encode_ns + timing.decode_ns + timing.server_ns)
                );
            }
        }
        close_cleanly(peer);
    }
}

fn recv_reports_the_seq_it_answers_and_its_timing(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut peer = spawn("echo", options(kind, DataPath::ZeroCopy));
    let seq = peer.send(Values::F64(&[1.0, 2.0])).expect("send");
    let mut reply = [0.0; 2];
    let received = peer.recv(ValuesMut::F64(&mut reply)).expect("recv");
    assert_eq!(received.seq, seq);
    assert!(received.timing.round_trip_ns >= received.timing.server_ns);
    assert_eq!(reply, [1.0, 2.0]);
    close_cleanly(peer);
}

// ---------------------------------------------------------------------------------------------
// Pipelining
// ---------------------------------------------------------------------------------------------

fn pipelined_sends_then_recvs_come_back_in_order(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    for path in [DataPath::ZeroCopy, DataPath::Codec] {
        let mut peer = spawn("echo", options(kind, path));
        let requests: Vec<Vec<f64>> =
            (0..32).map(|i| pseudo_random_f64(1 + 97 * i, i as u64)).collect();
        // All 32 in flight at once (about 400 KB, within a pipe or ring of 1 MiB); over
        // shm-sem, whose slots bound the count, as many as it allows, window after window.
        let window = peer.max_in_flight().unwrap_or(requests.len());
        assert!(window >= 2, "{kind}: a window of {window} pipelines nothing");
        for batch in requests.chunks(window) {
            let mut seqs = Vec::new();
            for (i, request) in batch.iter().enumerate() {
                seqs.push(peer.send(Values::F64(request)).expect("send"));
                assert_eq!(peer.in_flight(), i + 1);
            }
            let pending = peer.call_f64(&[1.0], &mut [0.0]);
            assert!(
                matches!(pending, Err(Error::InvalidArgument { what: "call", .. })),
                "{pending:?}"
            );
            for (request, seq) in batch.iter().zip(&seqs) {
                let mut reply = vec![0.0; request.len()];
                let received = peer.recv(ValuesMut::F64(&mut reply)).expect("recv");
                assert_eq!(received.seq, *seq);
                assert_eq!(bits64(&reply), bits64(request), "{kind} {path}: seq {seq}");
            }
            assert_eq!(peer.in_flight(), 0);
        }
        let nothing = peer.recv(ValuesMut::F64(&mut []));
        assert!(matches!(nothing, Err(Error::InvalidArgument { what: "recv", .. })), "{nothing:?}");
        close_cleanly(peer);
    }
}

fn close_with_replies_in_flight_discards_them_and_exits_cleanly(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut peer = spawn("echo", options(kind, DataPath::ZeroCopy));
    // Five, or as many as shm-sem's slots allow.
    let in_flight = peer.max_in_flight().unwrap_or(5).min(5);
    for i in 0..in_flight {
        peer.send(Values::F64(&pseudo_random_f64(100, i as u64))).expect("send");
    }
    assert_eq!(peer.in_flight(), in_flight);
    close_cleanly(peer);
}

// ---------------------------------------------------------------------------------------------
// ERROR replies
// ---------------------------------------------------------------------------------------------

fn an_error_reply_becomes_remote_with_the_servers_message_and_the_peer_stays_usable(
    kind: TransportKind,
) {
    let _watchdog = Watchdog::new(secs(20));
    let mut peer = spawn("lorenz96", options(kind, DataPath::ZeroCopy));
    let pid = peer.server_pid().expect("spawned");
    match peer.call_f64(&[1.0, 2.0, 3.0], &mut [0.0; 3]) {
        Err(Error::Remote { seq: 1, message }) => {
            assert!(message.contains("lorenz96"), "{message:?}");
            assert!(message.contains('4') && message.contains('3'), "{message:?}");
        }
        other => panic!("{other:?}"),
    }
    match peer.call(Values::F32(&[1.0; 8]), ValuesMut::F32(&mut [0.0; 8])) {
        Err(Error::Remote { seq: 2, message }) => assert!(message.contains("f32"), "{message:?}"),
        other => panic!("{other:?}"),
    }
    assert!(common::is_our_child(pid), "an ERROR reply must not end the server");
    let mut d = [0.0; 4];
    peer.call_f64(&[1.0, 2.0, 3.0, 4.0], &mut d).expect("a valid request after ERROR");
    assert_eq!(d, [3.0, 5.0, 11.0, 1.0]);
    close_cleanly(peer);
}

fn an_error_reply_in_a_pipeline_is_matched_to_its_request(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut peer = spawn("lorenz96", options(kind, DataPath::Codec));
    assert!(peer.max_in_flight().is_none_or(|n| n >= 3), "{kind}: three requests in flight");
    let good = [1.0, 2.0, 3.0, 4.0];
    peer.send(Values::F64(&good)).unwrap();
    peer.send(Values::F64(&good[..2])).unwrap();
    peer.send(Values::F64(&good)).unwrap();
    let mut d = [0.0; 4];
    assert_eq!(peer.recv(ValuesMut::F64(&mut d)).unwrap().seq, 1);
    let rejected = peer.recv(ValuesMut::F64(&mut [0.0; 2]));
    assert!(matches!(rejected, Err(Error::Remote { seq: 2, .. })), "{rejected:?}");
    assert_eq!(peer.recv(ValuesMut::F64(&mut d)).unwrap().seq, 3);
    assert_eq!(d, [3.0, 5.0, 11.0, 1.0]);
    close_cleanly(peer);
}

// ---------------------------------------------------------------------------------------------
// Lifecycle
// ---------------------------------------------------------------------------------------------

fn close_returns_the_servers_successful_exit_status_and_reaps_it(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut peer = spawn("echo", options(kind, DataPath::ZeroCopy));
    let pid = peer.server_pid().expect("spawned");
    assert!(common::is_our_child(pid));
    peer.call_f64(&[1.0], &mut [0.0]).expect("call");
    let status = peer.close().expect("close").expect("status of a spawned server");
    assert_eq!(status.code(), Some(0));
    assert!(!common::is_our_child(pid), "server {pid} not reaped by close");
}

fn dropping_a_peer_without_close_reaps_the_server(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let mut peer = spawn("echo", options(kind, DataPath::ZeroCopy));
    let pid = peer.server_pid().expect("spawned");
    peer.call_f64(&[1.0], &mut [0.0]).expect("call");
    drop(peer);
    assert!(!common::is_our_child(pid), "server {pid} still our child after drop");
    // Dropped before any call, too.
    let peer = spawn("echo-raw", options(kind, DataPath::Codec));
    let pid = peer.server_pid().expect("spawned");
    drop(peer);
    assert!(!common::is_our_child(pid), "server {pid} still our child after drop");
}

fn a_peer_over_a_transport_has_no_server_process(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    use peerpipe::handlers::Echo;
    use peerpipe::server::{Ending, ServeOptions, serve};
    let (client, mut server_end) = Transport::pair(kind, Wait::Block).expect("pair");
    let server = thread::spawn(move || {
        serve(&mut server_end, &mut Echo::default(), &ServeOptions::default())
    });
    let mut peer = Peer::connect(client, on(kind)).expect("connect");
    assert_eq!(peer.server_pid(), None);
    assert_eq!(peer.transport_kind(), kind);
    let mut reply = [0.0; 2];
    peer.call_f64(&[f64::NAN, -0.0], &mut reply).expect("call");
    assert_eq!(bits64(&reply), bits64(&[f64::NAN, -0.0]));
    assert_eq!(peer.close().expect("close"), None);
    let summary = server.join().expect("server thread").expect("serve");
    assert_eq!((summary.replies, summary.ending), (1, Ending::Bye));
}

// ---------------------------------------------------------------------------------------------
// Timeouts: a client that stops reading, a server that never answers
// ---------------------------------------------------------------------------------------------

fn a_client_that_stops_reading_gets_a_timeout_not_a_hang_and_the_server_is_reaped(
    kind: TransportKind,
) {
    let _watchdog = Watchdog::new(secs(30));
    let timeout = secs(2);
    let mut peer = spawn("echo", Options { timeout: Some(timeout), ..on(kind) });
    let pid = peer.server_pid().expect("spawned");
    // Requests as large as a pipe (ring, slot; 8 MiB over TCP, whose socket buffers grow to a
    // few MiB): after a few, the reply direction and the request direction are both full and
    // the next send cannot complete.
    let capacity = peer.capacity().unwrap_or(8 << 20);
    let request = vec![0.5; capacity / 8];
    let mut result = Ok(0);
    for _ in 0..16 {
        result = peer.send(Values::F64(&request));
        if result.is_err() {
            break;
        }
    }
    match result {
        Err(Error::Timeout { after, waiting_for }) => {
            assert_eq!(after, timeout);
            assert!(waiting_for.contains("room to send seq"), "{waiting_for:?}");
        }
        other => panic!("expected a timeout with nobody reading, got {other:?}"),
    }
    assert!(!common::is_our_child(pid), "server {pid} not reaped after the timeout");
    let after = peer.send(Values::F64(&[1.0]));
    match after {
        Err(Error::ClosedAfter { cause }) => assert!(cause.contains("timed out"), "{cause}"),
        other => panic!("{other:?}"),
    }
}

fn a_200us_timeout_on_a_spawned_server_that_never_answers_ends_in_timeout(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let line = misbehaving_shell_line_on(kind, "hang-after-hello", None);
    let options = Options { timeout: Some(Duration::from_micros(200)), ..on(kind) };
    // The server prints a valid HELLO and never answers; whether the 200 µs pass during the
    // handshake or while waiting for the reply, the outcome is a timeout. How long it took is
    // measured in cli/benches/timeout.rs, not asserted here.
    let result = Peer::spawn_shell(&line, options).and_then(|mut peer| {
        let pid = peer.server_pid();
        let result = peer.call_f64(&[1.0, 2.0], &mut [0.0; 2]);
        if let Some(pid) = pid {
            assert!(!common::is_our_child(pid), "server {pid} not reaped after the timeout");
        }
        result
    });
    assert!(matches!(result, Err(Error::Timeout { .. })), "{result:?}");
}

fn a_200us_timeout_on_a_silent_peer_ends_in_timeout_waiting_for_seq_1(kind: TransportKind) {
    let _watchdog = Watchdog::new(secs(20));
    let hello = common::server_hello("silent");
    let header: &[u8; HEADER_LEN] = hello[..HEADER_LEN].try_into().expect("32 bytes");
    let payload_len = Header::parse(header, u64::MAX).expect("valid HELLO").count as usize;
    let payload = &hello[HEADER_LEN..HEADER_LEN + payload_len];
    for wait in [Wait::Block, Wait::Spin, Wait::default()] {
        let (client, mut server_end) = Transport::pair(kind, wait).expect("pair");
        // The server's HELLO is in the pipe before the client starts, so the handshake needs
        // no waiting and the 200 µs all go to the reply that never comes (over shm-sem, to
        // room for the request: the client's unread HELLO holds the request slot).
        server_end.send_frame(header, payload, Deadline::NEVER).expect("pre-write HELLO");
        let options = Options { wait, timeout: Some(Duration::from_micros(200)), ..on(kind) };
        let mut peer = Peer::connect(client, options).expect("handshake from a pre-written HELLO");
        match peer.call_f64(&[1.0], &mut [0.0]) {
            Err(Error::Timeout { waiting_for, after }) => {
                assert_eq!(after, Duration::from_micros(200), "{wait}");
                assert!(waiting_for.contains("seq 1"), "{wait}: {waiting_for:?}");
            }
            other => panic!("{wait}: {other:?}"),
        }
        // The client's HELLO and request did arrive; nobody answered them.
        let mut raw = [0u8; HEADER_LEN];
        assert_eq!(server_end.recv_exact(&mut raw, Deadline::NEVER).expect("read"), HEADER_LEN);
        let client_hello = Header::parse(&raw, u64::MAX).expect("client HELLO header");
        assert_eq!(client_hello.kind, Kind::Hello);
        let mut text = vec![0u8; client_hello.count as usize];
        server_end.recv_payload(&mut text, Deadline::NEVER).expect("client HELLO payload");
        assert!(Hello::parse(&text).expect("valid client HELLO").handler.is_none());
    }
}
