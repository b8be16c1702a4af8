//! Unit and negative tests of `peerpipe::frame`: exact header bytes, every validation rule and
//! the error variant it produces, padding, truncation, and HELLO payloads.
//!
//! Headers under test are built by hand with `common::raw_header`, not with `Header::to_bytes`,
//! so a mistake in the encoder cannot hide the same mistake in the decoder.

mod common;

use common::raw_header;
use peerpipe::Error;
use peerpipe::frame::{
    self, DEFAULT_MAX_FRAME_BYTES, Dtype, FRAME_ALIGN, HEADER_LEN, Header, Hello, Kind,
    MAX_CONTROL_PAYLOAD,
};

const LIMIT: u64 = 1024;

/// A valid header with the given kind, dtype and count.
fn good(kind: u8, dtype: u8, count: u64) -> [u8; HEADER_LEN] {
    raw_header(b"PEER", 1, kind, dtype, 0, 5, count, 0)
}

fn parse_err(bytes: &[u8; HEADER_LEN], limit: u64) -> Error {
    Header::parse(bytes, limit).expect_err("header must be rejected")
}

fn hello_err(payload: &[u8]) -> String {
    match Hello::parse(payload) {
        Err(Error::BadHello { reason }) => reason,
        other => panic!("expected BadHello for {payload:?}, got {other:?}"),
    }
}

// ---- exact bytes ---------------------------------------------------------------------------

#[test]
fn data_header_serialises_to_the_documented_bytes() {
    let header = Header {
        kind: Kind::Data,
        dtype: Dtype::F64,
        seq: 0x0102_0304_0506_0708,
        count: 0x1112_1314_1516_1718,
        aux: 0x2122_2324_2526_2728,
    };
    assert_eq!(
        header.to_bytes(),
        [
            b'P', b'E', b'E', b'R', 1, 2, 2,
            0, // magic, version 1, kind DATA, dtype f64, flags 0
            0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // seq, little-endian
            0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11, // count
            0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21, // aux
        ]
    );
}

#[test]
fn each_kind_and_dtype_serialises_to_its_byte() {
    for (kind, byte) in [(Kind::Hello, 1), (Kind::Data, 2), (Kind::Error, 3), (Kind::Bye, 4)] {
        assert_eq!(Header::control(kind, 0, 0).to_bytes()[5], byte, "{kind}");
    }
    for (dtype, byte) in [(Dtype::Bytes, 0), (Dtype::F32, 1), (Dtype::F64, 2)] {
        assert_eq!(Header::data(0, dtype, 0).to_bytes()[6], byte, "{dtype}");
    }
}

#[test]
fn control_header_has_dtype_bytes_and_the_length_as_count() {
    let header = Header::control(Kind::Error, 9, 36);
    assert_eq!(
        header,
        Header { kind: Kind::Error, dtype: Dtype::Bytes, seq: 9, count: 36, aux: 0 }
    );
    assert_eq!(header.to_bytes(), raw_header(b"PEER", 1, 3, 0, 0, 9, 36, 0));
}

#[test]
fn header_bytes_parse_back_to_the_same_header() {
    let header = Header { kind: Kind::Data, dtype: Dtype::F32, seq: u64::MAX, count: 7, aux: 99 };
    assert_eq!(Header::parse(&header.to_bytes(), LIMIT).unwrap(), header);
}

#[test]
fn encoded_frame_is_header_payload_and_zero_padding() {
    let frame = frame::encode_frame(&Header::data(1, Dtype::Bytes, 3), b"abc");
    let mut expected = raw_header(b"PEER", 1, 2, 0, 0, 1, 3, 0).to_vec();
    expected.extend_from_slice(b"abc\0\0\0\0\0");
    assert_eq!(frame, expected);
}

#[test]
fn encoded_frames_are_always_a_multiple_of_eight_bytes() {
    for len in 0..=24 {
        let payload = vec![0xffu8; len];
        let frame = frame::encode_frame(&Header::data(0, Dtype::Bytes, len as u64), &payload);
        assert_eq!(frame.len() % FRAME_ALIGN, 0, "payload {len}");
        assert_eq!(frame.len(), HEADER_LEN + len + frame::padding_len(len));
        assert!(frame[HEADER_LEN + len..].iter().all(|&b| b == 0));
    }
}

#[test]
fn padding_len_follows_the_table() {
    let table = [
        (0, 0),
        (1, 7),
        (2, 6),
        (3, 5),
        (4, 4),
        (5, 3),
        (6, 2),
        (7, 1),
        (8, 0),
        (9, 7),
        (12, 4),
        (15, 1),
        (16, 0),
        (4000, 0),
        (4001, 7),
        (usize::MAX, 1), // usize::MAX ≡ 7 (mod 8): no overflow in the computation
    ];
    for (payload_len, pad) in table {
        assert_eq!(frame::padding_len(payload_len), pad, "payload_len {payload_len}");
    }
}

#[test]
fn layout_constants_match_the_specification() {
    assert_eq!(frame::MAGIC, *b"PEER");
    assert_eq!(frame::VERSION, 1);
    assert_eq!(HEADER_LEN, 32);
    assert_eq!(FRAME_ALIGN, 8);
    const { assert!(MAX_CONTROL_PAYLOAD <= DEFAULT_MAX_FRAME_BYTES) };
}

#[test]
fn dtype_widths_are_one_four_and_eight() {
    assert_eq!(Dtype::Bytes.width(), 1);
    assert_eq!(Dtype::F32.width(), 4);
    assert_eq!(Dtype::F64.width(), 8);
}

// ---- kind and dtype bytes ------------------------------------------------------------------

#[test]
fn only_kind_bytes_one_to_four_are_known() {
    for byte in 0..=u8::MAX {
        match Kind::from_byte(byte) {
            Ok(kind) => assert_eq!(kind as u8, byte),
            Err(Error::UnknownKind { found }) => {
                assert_eq!(found, byte);
                assert!(!(1..=4).contains(&byte));
            }
            Err(e) => panic!("kind {byte}: unexpected {e:?}"),
        }
    }
}

#[test]
fn only_dtype_bytes_zero_to_two_are_known() {
    for byte in 0..=u8::MAX {
        match Dtype::from_byte(byte) {
            Ok(dtype) => assert_eq!(dtype as u8, byte),
            Err(Error::UnknownDtype { found }) => {
                assert_eq!(found, byte);
                assert!(byte > 2);
            }
            Err(e) => panic!("dtype {byte}: unexpected {e:?}"),
        }
    }
}

// ---- header validation: one negative test per rule -----------------------------------------

#[test]
fn any_magic_but_peer_is_rejected_naming_the_bytes() {
    for magic in [b"PEEP", b"peer", b"\0\0\0\0", b"REEP"] {
        let err = parse_err(&raw_header(magic, 1, 2, 2, 0, 0, 0, 0), LIMIT);
        assert!(matches!(err, Error::BadMagic { found } if found == *magic), "{err:?}");
    }
}

#[test]
fn versions_other_than_1_are_rejected() {
    for version in [0, 2, 255] {
        let err = parse_err(&raw_header(b"PEER", version, 2, 2, 0, 0, 0, 0), LIMIT);
        assert!(
            matches!(err, Error::UnsupportedVersion { expected: 1, found } if found == version),
            "{err:?}"
        );
    }
}

#[test]
fn unknown_kind_in_a_header_is_rejected() {
    let err = parse_err(&good(0xff, 0, 0), LIMIT);
    assert!(matches!(err, Error::UnknownKind { found: 0xff }), "{err:?}");
}

#[test]
fn unknown_dtype_in_a_header_is_rejected() {
    let err = parse_err(&good(2, 0x80, 0), LIMIT);
    assert!(matches!(err, Error::UnknownDtype { found: 0x80 }), "{err:?}");
}

#[test]
fn every_nonzero_flags_byte_is_rejected() {
    for flags in [1u8, 2, 0x80, 0xff] {
        let err = parse_err(&raw_header(b"PEER", 1, 2, 2, flags, 0, 0, 0), LIMIT);
        assert!(matches!(err, Error::ReservedFlags { found } if found == flags), "{err:?}");
    }
}

#[test]
fn control_frames_with_a_numeric_dtype_are_rejected() {
    for (kind_byte, kind) in [(1, Kind::Hello), (3, Kind::Error), (4, Kind::Bye)] {
        for dtype in [1u8, 2] {
            let err = parse_err(&good(kind_byte, dtype, 0), LIMIT);
            assert!(
                matches!(&err, Error::MalformedControl { kind: k, expected, .. }
                    if *k == kind && expected.contains("dtype 0")),
                "{kind} dtype {dtype}: {err:?}"
            );
        }
    }
}

#[test]
fn bye_with_a_payload_is_rejected() {
    let err = parse_err(&good(4, 0, u64::MAX), u64::MAX);
    assert!(
        matches!(&err, Error::MalformedControl { kind: Kind::Bye, expected, found }
            if expected.contains("count 0") && found.contains(&u64::MAX.to_string())),
        "{err:?}"
    );
}

#[test]
fn data_may_carry_any_dtype() {
    for dtype in [Dtype::Bytes, Dtype::F32, Dtype::F64] {
        let parsed = Header::parse(&good(2, dtype as u8, 3), LIMIT).unwrap();
        assert_eq!(parsed.dtype, dtype);
    }
}

#[test]
fn f32_count_overflowing_u64_is_rejected_with_count_and_width() {
    let count = (1u64 << 62) + 1; // × 4 overflows
    let err = parse_err(&good(2, 1, count), u64::MAX);
    assert!(matches!(err, Error::LengthOverflow { count: c, width: 4 } if c == count), "{err:?}");
}

#[test]
fn largest_f64_count_that_fits_is_only_too_large() {
    let count = u64::MAX / 8;
    let err = parse_err(&good(2, 2, count), LIMIT);
    assert!(
        matches!(err, Error::FrameTooLarge { payload_bytes, max_frame_bytes: LIMIT, .. }
            if payload_bytes == count * 8),
        "{err:?}"
    );
}

#[test]
fn byte_payload_of_u64_max_does_not_overflow_but_is_too_large() {
    let err = parse_err(&good(2, 0, u64::MAX), LIMIT);
    assert!(
        matches!(err, Error::FrameTooLarge { payload_bytes: u64::MAX, max_frame_bytes: LIMIT, .. }),
        "{err:?}"
    );
}

#[test]
fn payload_exactly_at_max_frame_bytes_is_accepted_and_one_more_is_not() {
    assert!(Header::parse(&good(2, 2, LIMIT / 8), LIMIT).is_ok());
    assert!(Header::parse(&good(2, 0, LIMIT), LIMIT).is_ok());
    let err = parse_err(&good(2, 0, LIMIT + 1), LIMIT);
    assert!(
        matches!(err, Error::FrameTooLarge { payload_bytes, max_frame_bytes: LIMIT, .. }
            if payload_bytes == LIMIT + 1),
        "{err:?}"
    );
}

#[test]
fn max_frame_bytes_zero_accepts_only_empty_payloads() {
    assert!(Header::parse(&good(2, 2, 0), 0).is_ok());
    assert!(Header::parse(&good(4, 0, 0), 0).is_ok());
    let err = parse_err(&good(2, 1, 1), 0);
    assert!(matches!(err, Error::FrameTooLarge { payload_bytes: 4, max_frame_bytes: 0, .. }));
}

#[test]
fn hello_and_error_payloads_are_capped_at_max_control_payload() {
    for kind in [1u8, 3] {
        assert!(Header::parse(&good(kind, 0, MAX_CONTROL_PAYLOAD), u64::MAX).is_ok());
        let err = parse_err(&good(kind, 0, MAX_CONTROL_PAYLOAD + 1), u64::MAX);
        assert!(
            matches!(err, Error::FrameTooLarge { payload_bytes, max_frame_bytes, .. }
                if payload_bytes == MAX_CONTROL_PAYLOAD + 1
                    && max_frame_bytes == MAX_CONTROL_PAYLOAD),
            "kind {kind}: {err:?}"
        );
    }
}

#[test]
fn hello_is_also_held_to_a_smaller_max_frame_bytes() {
    let err = parse_err(&good(1, 0, 101), 100);
    assert!(
        matches!(err, Error::FrameTooLarge { payload_bytes: 101, max_frame_bytes: 100, .. }),
        "{err:?}"
    );
}

#[test]
fn the_first_rule_broken_is_the_one_reported() {
    // Everything wrong at once: magic wins.
    let all_wrong = raw_header(b"XXXX", 9, 9, 9, 9, 0, u64::MAX, 0);
    assert!(matches!(parse_err(&all_wrong, 0), Error::BadMagic { .. }));
    // Then version, kind, dtype, flags, control shape, overflow, size, in that order.
    let h = raw_header(b"PEER", 9, 9, 9, 9, 0, u64::MAX, 0);
    assert!(matches!(parse_err(&h, 0), Error::UnsupportedVersion { found: 9, .. }));
    let h = raw_header(b"PEER", 1, 9, 9, 9, 0, u64::MAX, 0);
    assert!(matches!(parse_err(&h, 0), Error::UnknownKind { found: 9 }));
    let h = raw_header(b"PEER", 1, 4, 9, 9, 0, u64::MAX, 0);
    assert!(matches!(parse_err(&h, 0), Error::UnknownDtype { found: 9 }));
    let h = raw_header(b"PEER", 1, 4, 2, 9, 0, u64::MAX, 0);
    assert!(matches!(parse_err(&h, 0), Error::ReservedFlags { found: 9 }));
    let h = raw_header(b"PEER", 1, 4, 2, 0, 0, u64::MAX, 0);
    assert!(matches!(parse_err(&h, 0), Error::MalformedControl { kind: Kind::Bye, .. }));
    let h = raw_header(b"PEER", 1, 2, 2, 0, 0, u64::MAX, 0);
    assert!(matches!(parse_err(&h, 0), Error::LengthOverflow { count: u64::MAX, width: 8 }));
    let h = raw_header(b"PEER", 1, 2, 2, 0, 0, 1, 0);
    assert!(matches!(parse_err(&h, 0), Error::FrameTooLarge { payload_bytes: 8, .. }));
}

#[test]
fn raw_seq_is_readable_from_an_invalid_header() {
    let bytes = raw_header(b"XXXX", 7, 0, 9, 1, 0xdead_beef, 0, 0);
    assert!(Header::parse(&bytes, LIMIT).is_err());
    assert_eq!(Header::raw_seq(&bytes), 0xdead_beef);
}

#[test]
fn payload_bytes_is_count_times_width() {
    assert_eq!(Header::data(0, Dtype::F32, 3).payload_bytes().unwrap(), 12);
    assert_eq!(Header::data(0, Dtype::F64, 3).payload_bytes().unwrap(), 24);
    assert_eq!(Header::data(0, Dtype::Bytes, u64::MAX).payload_bytes().unwrap(), u64::MAX);
    let err = Header::data(0, Dtype::F64, u64::MAX / 8 + 1).payload_bytes().unwrap_err();
    assert!(matches!(err, Error::LengthOverflow { width: 8, .. }), "{err:?}");
}

// ---- whole frames: truncation and padding --------------------------------------------------

#[test]
fn empty_input_is_a_truncated_header_with_nothing_got() {
    let err = frame::decode_frame(&[], LIMIT).unwrap_err();
    assert!(matches!(err, Error::Truncated { what: "header", expected: 32, got: 0 }), "{err:?}");
}

#[test]
fn every_cut_inside_a_frame_names_the_part_and_the_bytes_present() {
    // 32 header + 12 payload (3 × f32) + 4 padding.
    let bytes = frame::encode_frame(&Header::data(1, Dtype::F32, 3), &[0x11; 12]);
    assert_eq!(bytes.len(), 48);
    for cut in 0..bytes.len() {
        let err = frame::decode_frame(&bytes[..cut], LIMIT).unwrap_err();
        let (what, expected, got) = match cut {
            0..32 => ("header", 32, cut),
            32..44 => ("payload", 12, cut - 32),
            _ => ("padding", 4, cut - 44),
        };
        assert!(
            matches!(err, Error::Truncated { what: w, expected: e, got: g }
                if w == what && e == expected && g == got as u64),
            "cut at {cut}: {err:?}"
        );
    }
    assert!(frame::decode_frame(&bytes, LIMIT).is_ok());
}

#[test]
fn header_errors_come_before_truncation_of_the_payload() {
    let bytes = good(2, 2, 1 << 62);
    let err = frame::decode_frame(&bytes, LIMIT).unwrap_err();
    assert!(matches!(err, Error::LengthOverflow { .. }), "{err:?}");
    let err = frame::decode_frame(&good(2, 0, LIMIT + 1), LIMIT).unwrap_err();
    assert!(matches!(err, Error::FrameTooLarge { .. }), "{err:?}");
}

#[test]
fn each_nonzero_padding_byte_is_named_by_its_index() {
    let clean = frame::encode_frame(&Header::data(1, Dtype::Bytes, 1), &[0x42]);
    assert_eq!(clean.len(), 40);
    for index in 0..7 {
        let mut bytes = clean.clone();
        bytes[HEADER_LEN + 1 + index] = 0x01;
        bytes[39] |= 0x80; // a later nonzero byte must not hide the first
        let err = frame::decode_frame(&bytes, LIMIT).unwrap_err();
        let found = if index == 6 { 0x81 } else { 0x01 };
        assert!(
            matches!(err, Error::NonzeroPadding { index: i, found: f } if i == index && f == found),
            "{err:?}"
        );
    }
}

#[test]
fn check_padding_accepts_zeros_and_names_the_first_nonzero_byte() {
    assert!(frame::check_padding(&[]).is_ok());
    assert!(frame::check_padding(&[0; 7]).is_ok());
    let err = frame::check_padding(&[0, 0, 3, 4]).unwrap_err();
    assert!(matches!(err, Error::NonzeroPadding { index: 2, found: 3 }), "{err:?}");
}

#[test]
fn bytes_after_a_frame_are_left_for_the_next_call() {
    let mut bytes = frame::encode_frame(&Header::data(1, Dtype::F64, 1), &1.0f64.to_le_bytes());
    let first_len = bytes.len();
    bytes.extend_from_slice(b"trailing garbage");
    let (frame, used) = frame::decode_frame(&bytes, LIMIT).unwrap();
    assert_eq!(used, first_len);
    assert_eq!(frame.payload, 1.0f64.to_le_bytes());
}

#[test]
fn decoded_payload_excludes_padding_and_borrows_from_the_input() {
    let bytes = frame::encode_frame(&Header::data(1, Dtype::Bytes, 3), b"xyz");
    let (frame, used) = frame::decode_frame(&bytes, LIMIT).unwrap();
    assert_eq!(used, 40);
    assert_eq!(frame.payload, b"xyz");
    assert_eq!(frame.payload.as_ptr(), bytes[HEADER_LEN..].as_ptr());
}

// ---- HELLO payloads ------------------------------------------------------------------------

#[test]
fn hello_renders_keys_in_order_each_ending_in_newline() {
    let hello = Hello {
        max_frame_bytes: 4096,
        role: Some("server".into()),
        handler: Some("echo".into()),
        implementation: Some("peerpipe 0.1.0".into()),
        pid: Some(42),
        parts: true,
        functions: vec!["rhs".into(), "jac".into()],
    };
    assert_eq!(
        hello.to_payload(),
        b"version=1\nmax_frame_bytes=4096\nrole=server\nhandler=echo\nimpl=peerpipe 0.1.0\npid=42\n\
          parts=1\nfunctions=rhs,jac\n"
    );
    assert_eq!(Hello::parse(&hello.to_payload()).unwrap(), hello);
}

#[test]
fn only_parts_1_says_a_server_reads_parts_and_empty_functions_are_none() {
    let parse =
        |text: &str| Hello::parse(format!("version=1\nmax_frame_bytes=8\n{text}").as_bytes());
    assert!(parse("parts=1\n").unwrap().parts);
    for other in ["parts=0\n", "parts=yes\n", "parts=\n", ""] {
        assert!(!parse(other).unwrap().parts, "{other:?}");
    }
    assert_eq!(parse("functions=a,,b,\n").unwrap().functions, ["a", "b"]);
    assert!(parse("functions=\n").unwrap().functions.is_empty());
}

#[test]
fn minimal_hello_has_only_the_required_keys() {
    let hello = Hello::parse(b"version=1\nmax_frame_bytes=0\n").unwrap();
    assert_eq!(hello, Hello { max_frame_bytes: 0, ..Hello::default() });
}

#[test]
fn hello_keys_may_come_in_any_order() {
    let hello = Hello::parse(b"impl=x 1\nmax_frame_bytes=8\nhandler=h\nversion=1\n").unwrap();
    assert_eq!(
        hello,
        Hello {
            max_frame_bytes: 8,
            handler: Some("h".into()),
            implementation: Some("x 1".into()),
            ..Hello::default()
        }
    );
}

#[test]
fn unknown_hello_keys_are_ignored() {
    let hello =
        Hello::parse(b"colour=blue\nversion=1\nfuture.key=a=b\nmax_frame_bytes=1048576\n=\n")
            .unwrap();
    assert_eq!(hello, Hello { max_frame_bytes: 1_048_576, ..Hello::default() });
}

#[test]
fn hello_max_frame_bytes_accepts_u64_max() {
    let hello = Hello::parse(b"version=1\nmax_frame_bytes=18446744073709551615\n").unwrap();
    assert_eq!(hello.max_frame_bytes, u64::MAX);
}

#[test]
fn hello_that_is_not_utf8_is_rejected() {
    let reason = hello_err(b"version=1\nmax_frame_bytes=8\nimpl=\xff\xfe\n");
    assert!(reason.contains("UTF-8"), "{reason}");
}

#[test]
fn hello_without_version_is_rejected() {
    let reason = hello_err(b"max_frame_bytes=8\n");
    assert!(reason.contains("version"), "{reason}");
}

#[test]
fn empty_hello_is_rejected_for_its_missing_version() {
    let reason = hello_err(b"");
    assert!(reason.contains("version"), "{reason}");
}

#[test]
fn hello_with_version_2_is_rejected_naming_both_versions() {
    let reason = hello_err(b"version=2\nmax_frame_bytes=8\n");
    assert!(reason.contains('1') && reason.contains('2'), "{reason}");
}

#[test]
fn hello_with_an_empty_version_is_rejected() {
    hello_err(b"version=\nmax_frame_bytes=8\n");
}

#[test]
fn hello_without_max_frame_bytes_is_rejected() {
    let reason = hello_err(b"version=1\nimpl=x 1\n");
    assert!(reason.contains("max_frame_bytes"), "{reason}");
}

#[test]
fn hello_with_non_numeric_max_frame_bytes_is_rejected_quoting_the_value() {
    for value in ["lots", "-1", "1e6", "", " 8", "18446744073709551616"] {
        let payload = format!("version=1\nmax_frame_bytes={value}\n");
        let reason = hello_err(payload.as_bytes());
        assert!(reason.contains("max_frame_bytes"), "{value:?}: {reason}");
        assert!(reason.contains(&format!("{value:?}")), "{value:?}: {reason}");
    }
}

#[test]
fn hello_line_without_equals_is_rejected_quoting_the_line() {
    let reason = hello_err(b"version=1\nmax_frame_bytes=8\njunk\n");
    assert!(reason.contains("junk"), "{reason}");
}

#[test]
fn hello_with_an_empty_line_is_rejected() {
    hello_err(b"version=1\n\nmax_frame_bytes=8\n");
}

#[test]
fn hello_whose_last_line_lacks_its_newline_is_rejected() {
    let reason = hello_err(b"version=1\nmax_frame_bytes=8");
    assert!(reason.contains("\\n"), "{reason}");
}

#[test]
fn implementation_name_is_peerpipe_and_the_crate_version() {
    assert_eq!(frame::implementation_name(), format!("peerpipe {}", env!("CARGO_PKG_VERSION")));
}

// ---- messages ------------------------------------------------------------------------------

#[test]
fn error_messages_name_expected_and_found_values() {
    let err = frame::decode_frame(&[0u8; 20], LIMIT).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("header") && text.contains("20") && text.contains("32"), "{text}");

    let text = parse_err(&good(2, 0, 2000), LIMIT).to_string();
    assert!(text.contains("2000") && text.contains("1024"), "{text}");

    let text = parse_err(&raw_header(b"PEER", 2, 2, 2, 0, 0, 0, 0), LIMIT).to_string();
    assert!(text.contains('1') && text.contains('2'), "{text}");
}

#[test]
fn only_remote_errors_are_recoverable() {
    assert!(Error::Remote { seq: 1, message: "no".into() }.is_recoverable());
    assert!(!parse_err(&good(9, 0, 0), LIMIT).is_recoverable());
    assert!(!frame::decode_frame(&[], LIMIT).unwrap_err().is_recoverable());
}

#[test]
fn hello_values_keep_a_trailing_carriage_return() {
    let hello = Hello { max_frame_bytes: 8, handler: Some("echo\r".into()), ..Hello::default() };
    assert_eq!(Hello::parse(&hello.to_payload()).unwrap(), hello);
    hello_err(b"version=1\r\nmax_frame_bytes=8\n");
}

#[test]
fn hello_max_frame_bytes_must_be_plain_digits() {
    hello_err(b"version=1\nmax_frame_bytes=+8\n");
    hello_err(b"version=1\nmax_frame_bytes= 8\n");
}
