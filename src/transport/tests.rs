use std::time::{Duration, Instant};

use super::*;
use crate::error::Error;
use crate::frame::{HEADER_LEN, Header};

#[test]
fn timeout_reaches_the_kernel_with_its_nanoseconds_intact() {
    let ts = timespec_for(Duration::from_nanos(200_123));
    assert_eq!((ts.tv_sec(), ts.tv_nsec()), (0, 200_123));
    let ts = timespec_for(Duration::new(3, 7));
    assert_eq!((ts.tv_sec(), ts.tv_nsec()), (3, 7));
}

fn frame(seq: u64, payload: &[u8]) -> Vec<u8> {
    crate::frame::encode_frame(
        &Header::data(seq, crate::frame::Dtype::Bytes, payload.len() as u64),
        payload,
    )
}

/// A reader of `kind` with `bytes` waiting in it, whose writer has closed.
fn pair_with(kind: TransportKind, bytes: &[u8]) -> Transport {
    let (mut writer, reader) = Transport::pair(kind, Wait::Block).unwrap();
    writer.send_bytes(bytes, Deadline::NEVER).unwrap();
    drop(writer);
    reader
}

fn seq_of(raw: &[u8; HEADER_LEN]) -> u64 {
    Header::raw_seq(raw)
}

#[test]
fn a_right_guess_reads_the_whole_frame_into_the_guess() {
    for kind in TransportKind::EVERY {
        let mut rx = pair_with(kind, &frame(7, b"hello"));
        let mut guess = [0u8; 5];
        match rx.recv_frame(&mut guess, Deadline::NEVER).unwrap() {
            Received::Whole(raw) => assert_eq!(seq_of(&raw), 7),
            other => panic!("expected Whole, got {other:?}"),
        }
        assert_eq!(&guess, b"hello");
        assert!(matches!(rx.recv_frame(&mut guess, Deadline::NEVER).unwrap(), Received::End));
    }
}

#[test]
fn a_wrong_guess_keeps_the_bytes_for_the_following_frames() {
    for kind in TransportKind::EVERY {
        // Three pipelined frames of other lengths than the guess: nothing may be lost.
        let mut stream = frame(1, b"abc");
        stream.extend(frame(2, &[9u8; 40]));
        stream.extend(frame(3, b""));
        let mut rx = pair_with(kind, &stream);
        let mut guess = [0u8; 100];
        for (seq, payload) in [(1, &b"abc"[..]), (2, &[9u8; 40][..]), (3, &b""[..])] {
            let raw = match rx.recv_frame(&mut guess, Deadline::NEVER).unwrap() {
                Received::Header(raw) => raw,
                other => panic!("seq {seq}: expected Header, got {other:?}"),
            };
            assert_eq!(seq_of(&raw), seq);
            let mut body = vec![0u8; payload.len()];
            rx.recv_payload(&mut body, Deadline::NEVER).unwrap();
            assert_eq!(body, payload, "seq {seq}");
        }
        assert!(matches!(rx.recv_frame(&mut guess, Deadline::NEVER).unwrap(), Received::End));
    }
}

#[test]
fn a_guessed_frame_with_bad_padding_is_broken_and_keeps_its_seq() {
    for kind in TransportKind::EVERY {
        let mut bytes = frame(5, b"abc");
        *bytes.last_mut().unwrap() = 1;
        let mut rx = pair_with(kind, &bytes);
        let mut guess = [0u8; 3];
        match rx.recv_frame(&mut guess, Deadline::NEVER).unwrap() {
            Received::Broken(raw, Error::NonzeroPadding { index: 4, found: 1 }) => {
                assert_eq!(seq_of(&raw), 5)
            }
            other => panic!("expected Broken, got {other:?}"),
        }
    }
}

#[test]
fn a_guessed_frame_cut_short_is_broken_and_says_how_much_arrived() {
    for kind in TransportKind::EVERY {
        let bytes = frame(6, &[1u8; 16]);
        let mut rx = pair_with(kind, &bytes[..HEADER_LEN + 10]);
        let mut guess = [0u8; 16];
        match rx.recv_frame(&mut guess, Deadline::NEVER).unwrap() {
            Received::Broken(raw, Error::Truncated { what: "payload", expected: 16, got: 10 }) => {
                assert_eq!(seq_of(&raw), 6)
            }
            other => panic!("expected Broken, got {other:?}"),
        }
    }
}

#[test]
fn an_invalid_header_is_not_followed_even_when_its_length_matches() {
    for kind in TransportKind::EVERY {
        let mut bytes = frame(1, b"abcd");
        bytes[0] = b'X';
        let mut rx = pair_with(kind, &bytes);
        let mut guess = [0u8; 4];
        assert!(matches!(rx.recv_frame(&mut guess, Deadline::NEVER).unwrap(), Received::Header(_)));
    }
}

#[test]
fn a_header_cut_short_is_truncated() {
    for kind in TransportKind::EVERY {
        let mut rx = pair_with(kind, &frame(1, b"ab")[..20]);
        let err = rx.recv_frame(&mut [0u8; 2], Deadline::NEVER).unwrap_err();
        assert!(matches!(err, Error::Truncated { what: "header", expected: 32, got: 20 }), "{err}");
    }
}

#[test]
fn shutdown_write_ends_one_direction_and_keeps_the_other() {
    for kind in TransportKind::EVERY {
        let (mut a, mut b) = Transport::pair(kind, Wait::Block).unwrap();
        a.send_bytes(b"last", Deadline::NEVER).unwrap();
        a.shutdown_write().unwrap();
        a.shutdown_write().unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(b.recv_exact(&mut buf, Deadline::NEVER).unwrap(), 4, "{kind}");
        assert_eq!(&buf[..4], b"last");
        b.send_bytes(b"answer", Deadline::NEVER).unwrap();
        let mut answer = [0u8; 6];
        assert_eq!(a.recv_exact(&mut answer, Deadline::NEVER).unwrap(), 6, "{kind}");
        assert_eq!(&answer, b"answer");
        let err = a.send_bytes(b"more", Deadline::NEVER).unwrap_err();
        assert!(matches!(err, Error::PeerClosed { .. }), "{kind}: {err}");
    }
}

#[test]
fn a_silent_peer_times_out_on_every_transport() {
    for kind in TransportKind::EVERY {
        for wait in [Wait::Block, Wait::Spin, Wait::default()] {
            let (mut a, _b) = Transport::pair(kind, wait).unwrap();
            let started = Instant::now();
            let deadline = Deadline::after(Some(Duration::from_millis(20)));
            let err = a.recv_exact(&mut [0u8; 4], deadline).unwrap_err();
            assert!(matches!(err, Error::Timeout { .. }), "{kind} {wait}: {err}");
            assert!(started.elapsed() >= Duration::from_millis(20), "{kind} {wait}");
        }
    }
}

#[test]
fn a_dropped_peer_is_the_end_of_the_stream_on_every_transport() {
    for kind in TransportKind::EVERY {
        let (mut a, b) = Transport::pair(kind, Wait::Block).unwrap();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4];
            a.recv_exact(&mut buf, Deadline::after(Some(Duration::from_secs(10))))
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(b);
        assert_eq!(reader.join().unwrap().unwrap(), 0, "{kind}");
    }
}

#[test]
fn a_deadline_waiting_for_data_starts_at_the_first_wait_after_it() {
    let timeout = Duration::from_millis(50);
    let idle = Deadline::once_data_arrives(Some(timeout));
    assert_eq!(idle.instant(), None, "no deadline while no byte has arrived");
    let arrived = idle.on_data();
    assert_eq!(arrived.instant(), None, "the clock is not read as the data arrives");
    let now = Instant::now();
    assert_eq!(arrived.armed_at(now).instant(), Some(now + timeout));
    assert_eq!(arrived.armed_at(now).armed_at(now + timeout).instant(), Some(now + timeout));
    // Outside a wait loop the deadline starts at once, as before.
    let started = Instant::now();
    let at = idle.data_arrived().instant().expect("armed");
    assert!(at >= started + timeout && at <= Instant::now() + timeout);
    // A deadline that was armed already is untouched by data.
    let fixed = Deadline::after_from(now, Some(timeout));
    assert_eq!(fixed.on_data().armed_at(now + timeout).instant(), Some(now + timeout));
}

#[test]
fn a_send_deadline_starts_at_its_first_wait_not_when_made() {
    let timeout = Duration::from_millis(50);
    let deadline = Deadline::from_first_wait(Some(timeout));
    assert_eq!(deadline.instant(), None, "no clock read until a wait");
    let now = Instant::now();
    assert_eq!(deadline.armed_at(now).instant(), Some(now + timeout));
    // A send into a full pipe, 100 ms after the deadline was made: it still waits its
    // 50 ms for room before giving up, counted from its first wait.
    let (mut writer, _silent_reader) = Transport::pipe_pair(Wait::Block).unwrap();
    let full = vec![0u8; 4 << 20];
    let filled = writer.send_bytes(&full, Deadline::after(Some(Duration::from_millis(20))));
    assert!(matches!(filled, Err(Error::Timeout { .. })), "{filled:?}");
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    let sent = writer.send_bytes(&[1; 64], deadline);
    assert!(matches!(sent, Err(Error::Timeout { .. })), "{sent:?}");
    assert!(started.elapsed() >= timeout, "gave up after {:?}", started.elapsed());
}

#[test]
fn wait_strategies_parse_and_print() {
    for text in ["auto", "block", "spin", "hybrid", "hybrid:20us"] {
        assert_eq!(text.parse::<Wait>().unwrap().to_string(), text);
    }
    assert!(matches!("hybrid:fast".parse::<Wait>(), Err(Error::InvalidArgument { .. })));
}
