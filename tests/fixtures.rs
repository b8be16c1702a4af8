//! Golden wire frames: the checked-in `fixtures/*.bin` files, written by
//! `python3 fixtures/make_fixtures.py` straight from the wire format v1 specification and
//! independently of this crate, are the oracle.
//!
//! For each valid fixture: the crate's encoder produces the file byte for byte, and its decoder
//! (codec and zero-copy) turns the file back into the listed values bit for bit. For each
//! malformed fixture: `decode_frame` fails with exactly the `Error` variant and fields that
//! `fixtures/README.md` names.

use peerpipe::Error;
use peerpipe::codec::{self, Values, ValuesMut};
use peerpipe::frame::{self, Dtype, FrameRef, Header, Hello, Kind};
use peerpipe::zerocopy;

/// The `max_frame_bytes` every fixture is decoded with, as documented in `fixtures/README.md`.
const MAX_FRAME_BYTES: u64 = 1024;

const DATA_F64_SPECIAL: &[u8] = include_bytes!("../fixtures/data_f64_special.bin");
const DATA_F32_ODD: &[u8] = include_bytes!("../fixtures/data_f32_odd.bin");
const DATA_F64_EMPTY: &[u8] = include_bytes!("../fixtures/data_f64_empty.bin");
const DATA_BYTES_5: &[u8] = include_bytes!("../fixtures/data_bytes_5.bin");
const DATA_F64_REPLY_AUX: &[u8] = include_bytes!("../fixtures/data_f64_reply_aux.bin");
const HELLO_CLIENT: &[u8] = include_bytes!("../fixtures/hello_client.bin");
const HELLO_SERVER: &[u8] = include_bytes!("../fixtures/hello_server.bin");
const ERROR_WRONG_DTYPE: &[u8] = include_bytes!("../fixtures/error_wrong_dtype.bin");
const BYE: &[u8] = include_bytes!("../fixtures/bye.bin");

const VALUES_F64_SPECIAL: &str = include_str!("../fixtures/values/data_f64_special.txt");
const VALUES_F32_ODD: &str = include_str!("../fixtures/values/data_f32_odd.txt");
const VALUES_F64_EMPTY: &str = include_str!("../fixtures/values/data_f64_empty.txt");
const VALUES_BYTES_5: &str = include_str!("../fixtures/values/data_bytes_5.txt");
const VALUES_F64_REPLY_AUX: &str = include_str!("../fixtures/values/data_f64_reply_aux.txt");

const ALL_VALID: [&[u8]; 9] = [
    DATA_F64_SPECIAL,
    DATA_F32_ODD,
    DATA_F64_EMPTY,
    DATA_BYTES_5,
    DATA_F64_REPLY_AUX,
    HELLO_CLIENT,
    HELLO_SERVER,
    ERROR_WRONG_DTYPE,
    BYE,
];

/// Parses a `fixtures/values/*.txt` file: one `0x…` bit pattern per line, `#` starts a comment.
fn bit_patterns(text: &str) -> Vec<u64> {
    text.lines()
        .map(|line| line.split('#').next().unwrap().trim())
        .filter(|line| !line.is_empty())
        .map(|hex| {
            let digits = hex.strip_prefix("0x").unwrap_or_else(|| panic!("not hex: {hex:?}"));
            u64::from_str_radix(digits, 16).unwrap_or_else(|e| panic!("{hex:?}: {e}"))
        })
        .collect()
}

fn f64_values(text: &str) -> Vec<f64> {
    bit_patterns(text).into_iter().map(f64::from_bits).collect()
}

fn f32_values(text: &str) -> Vec<f32> {
    bit_patterns(text).into_iter().map(|b| f32::from_bits(u32::try_from(b).unwrap())).collect()
}

fn byte_values(text: &str) -> Vec<u8> {
    bit_patterns(text).into_iter().map(|b| u8::try_from(b).unwrap()).collect()
}

/// Decodes a fixture that must be one complete, valid frame, using every byte.
fn decode_whole(fixture: &[u8]) -> FrameRef<'_> {
    let (frame, used) = frame::decode_frame(fixture, MAX_FRAME_BYTES)
        .unwrap_or_else(|e| panic!("valid fixture rejected: {e}"));
    assert_eq!(used, fixture.len(), "decode_frame must consume the whole fixture");
    frame
}

fn assert_f64_bits_eq(found: &[f64], expected: &[f64]) {
    let found: Vec<u64> = found.iter().map(|x| x.to_bits()).collect();
    let expected: Vec<u64> = expected.iter().map(|x| x.to_bits()).collect();
    assert_eq!(found, expected, "f64 bit patterns differ");
}

fn assert_f32_bits_eq(found: &[f32], expected: &[f32]) {
    let found: Vec<u32> = found.iter().map(|x| x.to_bits()).collect();
    let expected: Vec<u32> = expected.iter().map(|x| x.to_bits()).collect();
    assert_eq!(found, expected, "f32 bit patterns differ");
}

/// Every check an f64 DATA fixture gets: encode, decode (Vec and into), zero-copy send/receive.
fn check_f64_fixture(fixture: &[u8], header: Header, values: &[f64]) {
    // Encode: header + codec payload + padding == the Python-built bytes.
    assert_eq!(frame::encode_frame(&header, &codec::encode_f64(values)), fixture);

    // Decode: header and values, bit for bit.
    let frame = decode_whole(fixture);
    assert_eq!(frame.header, header);
    assert_f64_bits_eq(&codec::decode_f64(frame.payload).unwrap(), values);
    let mut into = vec![0.0f64; values.len()];
    codec::decode_into(frame.payload, ValuesMut::F64(&mut into)).unwrap();
    assert_f64_bits_eq(&into, values);

    // Zero-copy send: the slice's own memory is the payload.
    let sent = zerocopy::wire_bytes(Values::F64(values));
    assert_eq!(sent.is_some(), zerocopy::NATIVE_IS_WIRE, "zero-copy send on little-endian only");
    if let Some(bytes) = sent {
        assert_eq!(bytes, frame.payload);
    }

    // Zero-copy receive: bytes straight into the caller's slice, then finish_receive.
    let mut received = vec![0.0f64; values.len()];
    let mut dst = ValuesMut::F64(&mut received);
    zerocopy::wire_bytes_mut(&mut dst).unwrap().copy_from_slice(frame.payload);
    zerocopy::finish_receive(&mut dst);
    assert_f64_bits_eq(&received, values);
}

// ---- valid fixtures ----------------------------------------------------------------------------

#[test]
fn f64_special_values_fixture_holds_the_listed_bit_patterns() {
    let bits = bit_patterns(VALUES_F64_SPECIAL);
    assert_eq!(bits.len(), 17);
    // Spot-check the values file itself against Rust's own constants.
    assert!(bits.contains(&(-0.0f64).to_bits()));
    assert!(bits.contains(&f64::INFINITY.to_bits()));
    assert!(bits.contains(&f64::NEG_INFINITY.to_bits()));
    assert!(bits.contains(&f64::MAX.to_bits()));
    assert!(bits.contains(&f64::MIN.to_bits()));
    assert!(bits.contains(&f64::MIN_POSITIVE.to_bits()));
    assert!(bits.contains(&f64::from_bits(1).to_bits()));
    assert!(bits.iter().filter(|&&b| f64::from_bits(b).is_nan()).count() >= 5);
}

#[test]
fn f64_nan_payloads_signed_zeros_subnormals_and_infinities_match_the_fixture_bit_for_bit() {
    let values = f64_values(VALUES_F64_SPECIAL);
    check_f64_fixture(DATA_F64_SPECIAL, Header::data(1, Dtype::F64, values.len() as u64), &values);
}

#[test]
fn empty_f64_data_is_the_header_alone() {
    let values = f64_values(VALUES_F64_EMPTY);
    assert!(values.is_empty());
    assert_eq!(DATA_F64_EMPTY.len(), frame::HEADER_LEN);
    check_f64_fixture(DATA_F64_EMPTY, Header::data(3, Dtype::F64, 0), &values);
}

#[test]
fn data_reply_carries_seq_and_aux_little_endian() {
    let values = f64_values(VALUES_F64_REPLY_AUX);
    assert_f64_bits_eq(&values, &[1.5, -2.25]);
    let header = Header {
        kind: Kind::Data,
        dtype: Dtype::F64,
        seq: 0x0102_0304_0506_0708,
        count: 2,
        aux: 1_234_567_890_123,
    };
    check_f64_fixture(DATA_F64_REPLY_AUX, header, &values);
}

#[test]
fn f32_with_odd_count_matches_the_fixture_including_four_padding_bytes() {
    let values = f32_values(VALUES_F32_ODD);
    assert_eq!(values.len(), 5);
    let header = Header::data(2, Dtype::F32, 5);

    assert_eq!(frame::encode_frame(&header, &codec::encode_f32(&values)), DATA_F32_ODD);
    assert_eq!(DATA_F32_ODD.len(), 32 + 20 + 4);
    assert_eq!(&DATA_F32_ODD[52..], &[0, 0, 0, 0]);

    let frame = decode_whole(DATA_F32_ODD);
    assert_eq!(frame.header, header);
    assert_eq!(frame.payload.len(), 20);
    assert_f32_bits_eq(&codec::decode_f32(frame.payload).unwrap(), &values);
    let mut into = vec![0.0f32; 5];
    codec::decode_into(frame.payload, ValuesMut::F32(&mut into)).unwrap();
    assert_f32_bits_eq(&into, &values);

    let sent = zerocopy::wire_bytes(Values::F32(&values));
    assert_eq!(sent.is_some(), zerocopy::NATIVE_IS_WIRE, "zero-copy send on little-endian only");
    if let Some(bytes) = sent {
        assert_eq!(bytes, frame.payload);
    }
    let mut received = vec![0.0f32; 5];
    let mut dst = ValuesMut::F32(&mut received);
    zerocopy::wire_bytes_mut(&mut dst).unwrap().copy_from_slice(frame.payload);
    zerocopy::finish_receive(&mut dst);
    assert_f32_bits_eq(&received, &values);
}

#[test]
fn f32_fixture_widens_to_f64_exactly_as_rust_as_casts() {
    let values = f32_values(VALUES_F32_ODD);
    let frame = decode_whole(DATA_F32_ODD);
    let widened = codec::decode_f32_as_f64(frame.payload).unwrap();
    let expected: Vec<f64> = values.iter().map(|&x| x as f64).collect();
    assert_f64_bits_eq(&widened, &expected);
}

#[test]
fn bytes_data_needing_padding_matches_the_fixture() {
    let values = byte_values(VALUES_BYTES_5);
    assert_eq!(values, [0x00, 0x7f, 0x80, 0xfe, 0xff]);
    let header = Header::data(4, Dtype::Bytes, 5);
    let mut payload = vec![0u8; 5];
    codec::encode_into(Values::Bytes(&values), &mut payload).unwrap();
    assert_eq!(frame::encode_frame(&header, &payload), DATA_BYTES_5);

    let frame = decode_whole(DATA_BYTES_5);
    assert_eq!(frame.header, header);
    assert_eq!(frame.payload, &values[..]);
    let mut into = [0u8; 5];
    codec::decode_into(frame.payload, ValuesMut::Bytes(&mut into)).unwrap();
    assert_eq!(into[..], values[..]);
    assert_eq!(zerocopy::wire_bytes(Values::Bytes(&values)), Some(frame.payload));
}

fn check_hello_fixture(fixture: &[u8], expected: &Hello) {
    let frame = decode_whole(fixture);
    assert_eq!(frame.header, Header::control(Kind::Hello, 0, frame.payload.len() as u64));
    assert_eq!(&Hello::parse(frame.payload).unwrap(), expected);
    assert_eq!(expected.to_payload(), frame.payload);
    let header = Header::control(Kind::Hello, 0, expected.to_payload().len() as u64);
    assert_eq!(frame::encode_frame(&header, &expected.to_payload()), fixture);
}

#[test]
fn client_hello_parses_and_renders_back_to_the_fixture() {
    let hello = Hello {
        max_frame_bytes: 1_048_576,
        implementation: Some("peerpipe 0.1.0".into()),
        ..Hello::default()
    };
    check_hello_fixture(HELLO_CLIENT, &hello);
    assert_eq!(
        decode_whole(HELLO_CLIENT).payload,
        b"version=1\nmax_frame_bytes=1048576\nimpl=peerpipe 0.1.0\n"
    );
}

#[test]
fn server_hello_parses_with_its_handler_and_renders_back_to_the_fixture() {
    let hello = Hello {
        max_frame_bytes: 1_048_576,
        role: Some("server".into()),
        handler: Some("echo".into()),
        implementation: Some("peerpipe 0.1.0".into()),
        pid: None,
        // A v1 server's HELLO: no parts=, no functions=.
        ..Hello::default()
    };
    assert!(hello.is_server());
    check_hello_fixture(HELLO_SERVER, &hello);
}

#[test]
fn error_reply_carries_its_seq_aux_and_message() {
    let message = b"wrong dtype: expected f64, found f32";
    let header = Header { kind: Kind::Error, dtype: Dtype::Bytes, seq: 9, count: 36, aux: 4321 };
    assert_eq!(frame::encode_frame(&header, message), ERROR_WRONG_DTYPE);
    let frame = decode_whole(ERROR_WRONG_DTYPE);
    assert_eq!(frame.header, header);
    assert_eq!(frame.payload, message);
}

#[test]
fn bye_is_a_header_with_count_zero() {
    let header = Header::control(Kind::Bye, 10, 0);
    assert_eq!(frame::encode_frame(&header, &[]), BYE);
    let frame = decode_whole(BYE);
    assert_eq!(frame.header, header);
    assert!(frame.payload.is_empty());
}

#[test]
fn concatenated_fixtures_decode_one_after_another() {
    let stream: Vec<u8> = ALL_VALID.concat();
    let mut rest = &stream[..];
    for fixture in ALL_VALID {
        let (frame, used) = frame::decode_frame(rest, MAX_FRAME_BYTES).unwrap();
        assert_eq!(used, fixture.len());
        assert_eq!(frame, decode_whole(fixture));
        rest = &rest[used..];
    }
    assert!(rest.is_empty());
}

#[test]
fn every_valid_fixture_is_a_multiple_of_eight_bytes() {
    for fixture in ALL_VALID {
        assert_eq!(fixture.len() % frame::FRAME_ALIGN, 0, "{} bytes", fixture.len());
    }
}

// ---- malformed fixtures: one per validation rule -----------------------------------------------

fn reject(fixture: &[u8]) -> Error {
    match frame::decode_frame(fixture, MAX_FRAME_BYTES) {
        Ok((frame, used)) => panic!("malformed fixture accepted: {frame:?}, {used} bytes"),
        Err(e) => e,
    }
}

#[test]
fn bad_magic_is_rejected_naming_the_bytes_found() {
    let err = reject(include_bytes!("../fixtures/bad_magic.bin"));
    assert!(matches!(err, Error::BadMagic { found } if found == *b"PEEP"), "{err:?}");
}

#[test]
fn version_2_is_rejected_as_unsupported() {
    let err = reject(include_bytes!("../fixtures/bad_version_2.bin"));
    assert!(matches!(err, Error::UnsupportedVersion { expected: 1, found: 2 }), "{err:?}");
}

#[test]
fn kind_0_is_rejected_as_unknown() {
    let err = reject(include_bytes!("../fixtures/bad_kind_0.bin"));
    assert!(matches!(err, Error::UnknownKind { found: 0 }), "{err:?}");
}

#[test]
fn kind_6_is_rejected_as_unknown() {
    let err = reject(include_bytes!("../fixtures/bad_kind_6.bin"));
    assert!(matches!(err, Error::UnknownKind { found: 6 }), "{err:?}");
}

#[test]
fn dtype_3_is_rejected_as_unknown() {
    let err = reject(include_bytes!("../fixtures/bad_dtype_3.bin"));
    assert!(matches!(err, Error::UnknownDtype { found: 3 }), "{err:?}");
}

#[test]
fn flags_1_is_rejected_as_reserved() {
    let err = reject(include_bytes!("../fixtures/bad_flags_1.bin"));
    assert!(matches!(err, Error::ReservedFlags { found: 1 }), "{err:?}");
}

#[test]
fn nonzero_padding_is_rejected_naming_the_byte_and_its_index() {
    let err = reject(include_bytes!("../fixtures/bad_padding_nonzero.bin"));
    assert!(matches!(err, Error::NonzeroPadding { index: 2, found: 0xaa }), "{err:?}");
}

#[test]
fn hello_with_dtype_f64_is_rejected_as_malformed_control() {
    let err = reject(include_bytes!("../fixtures/bad_hello_dtype_f64.bin"));
    assert!(
        matches!(&err, Error::MalformedControl { kind: Kind::Hello, expected, found }
            if expected.contains("dtype 0") && found.contains("dtype 2")),
        "{err:?}"
    );
}

#[test]
fn error_with_dtype_f32_is_rejected_as_malformed_control() {
    let err = reject(include_bytes!("../fixtures/bad_error_dtype_f32.bin"));
    assert!(
        matches!(&err, Error::MalformedControl { kind: Kind::Error, expected, found }
            if expected.contains("dtype 0") && found.contains("dtype 1")),
        "{err:?}"
    );
}

#[test]
fn bye_with_count_1_is_rejected_as_malformed_control() {
    let err = reject(include_bytes!("../fixtures/bad_bye_count_1.bin"));
    assert!(
        matches!(&err, Error::MalformedControl { kind: Kind::Bye, expected, found }
            if expected.contains("count 0") && found.contains("count 1")),
        "{err:?}"
    );
}

#[test]
fn count_times_width_overflowing_u64_is_rejected_before_any_payload_is_read() {
    let fixture = include_bytes!("../fixtures/bad_length_overflow.bin");
    assert_eq!(fixture.len(), frame::HEADER_LEN, "the fixture has no payload at all");
    let err = reject(fixture);
    assert!(
        matches!(err, Error::LengthOverflow { count, width: 8 } if count == 1 << 62),
        "{err:?}"
    );
}

#[test]
fn payload_above_max_frame_bytes_is_rejected_naming_both_sizes() {
    let fixture = include_bytes!("../fixtures/bad_too_large.bin");
    let err = reject(fixture);
    assert!(
        matches!(err, Error::FrameTooLarge { payload_bytes: 1032, max_frame_bytes: 1024, .. }),
        "{err:?}"
    );
}

#[test]
fn too_large_fixture_decodes_once_the_limit_admits_it() {
    let fixture = include_bytes!("../fixtures/bad_too_large.bin");
    let (frame, used) = frame::decode_frame(fixture, 1032).unwrap();
    assert_eq!(used, fixture.len());
    assert_eq!(frame.header, Header::data(20, Dtype::F64, 129));
    let expected: Vec<f64> = (0..129).map(f64::from).collect();
    assert_f64_bits_eq(&codec::decode_f64(frame.payload).unwrap(), &expected);
}

#[test]
fn truncated_header_names_bytes_missing() {
    let err = reject(include_bytes!("../fixtures/truncated_header.bin"));
    assert!(matches!(err, Error::Truncated { what: "header", expected: 32, got: 20 }), "{err:?}");
}

#[test]
fn truncated_payload_names_bytes_missing() {
    let err = reject(include_bytes!("../fixtures/truncated_payload.bin"));
    assert!(matches!(err, Error::Truncated { what: "payload", expected: 24, got: 10 }), "{err:?}");
}

#[test]
fn truncated_padding_names_bytes_missing() {
    let err = reject(include_bytes!("../fixtures/truncated_padding.bin"));
    assert!(matches!(err, Error::Truncated { what: "padding", expected: 3, got: 2 }), "{err:?}");
}
