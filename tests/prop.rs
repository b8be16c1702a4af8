//! Property tests against oracles: the codec round trip is bit-exact for every bit pattern, the
//! zero-copy path equals the codec, narrowing/widening equals Rust's `as` casts, and the frame
//! decoder never panics and never claims bytes its input does not have.
//!
//! Case counts stay at proptest's default (256) or below so the file runs in a few seconds.

use peerpipe::codec::{self, Values, ValuesMut};
use peerpipe::frame::{self, Dtype, HEADER_LEN, Header, Hello, Kind, MAX_CONTROL_PAYLOAD};
use peerpipe::zerocopy;
use peerpipe::{Error, ErrorKind};
use proptest::collection::vec;
use proptest::prelude::*;

/// Every f64 bit pattern, NaNs with any payload and sign included.
fn any_f64() -> impl Strategy<Value = f64> {
    any::<u64>().prop_map(f64::from_bits)
}

/// Every f32 bit pattern, NaNs with any payload and sign included.
fn any_f32() -> impl Strategy<Value = f32> {
    any::<u32>().prop_map(f32::from_bits)
}

fn bits64(values: &[f64]) -> Vec<u64> {
    values.iter().map(|x| x.to_bits()).collect()
}

fn bits32(values: &[f32]) -> Vec<u32> {
    values.iter().map(|x| x.to_bits()).collect()
}

/// Checks what `decode_frame` promises about any input, whatever the outcome.
fn check_decode_contract(input: &[u8], max_frame_bytes: u64) -> Result<(), TestCaseError> {
    let decoded = frame::decode_frame(input, max_frame_bytes);
    // A frame too large for the receiver is of its own kind; every other failure is a
    // protocol error — by the same kind() the Python and C bindings map.
    if let Err(e) = &decoded {
        let expected = match e {
            Error::FrameTooLarge { .. } => ErrorKind::TooLarge,
            _ => ErrorKind::Protocol,
        };
        prop_assert_eq!(e.kind(), expected, "{:?}", e);
    }
    match decoded {
        Ok((frame, used)) => {
            prop_assert!(used <= input.len(), "used {used} of {} bytes", input.len());
            prop_assert_eq!(used % frame::FRAME_ALIGN, 0);
            let pad = frame::padding_len(frame.payload.len());
            prop_assert_eq!(used, HEADER_LEN + frame.payload.len() + pad);
            // The payload is the slice of the input right after the header.
            let inside = input.as_ptr_range();
            let payload = frame.payload.as_ptr_range();
            prop_assert!(inside.start <= payload.start && payload.end <= inside.end);
            prop_assert_eq!(frame.payload, &input[HEADER_LEN..HEADER_LEN + frame.payload.len()]);
            prop_assert!(input[HEADER_LEN + frame.payload.len()..used].iter().all(|&b| b == 0));
            prop_assert_eq!(frame.header.payload_bytes().unwrap(), frame.payload.len() as u64);
            prop_assert!(frame.payload.len() as u64 <= max_frame_bytes);
            prop_assert_eq!(&frame.header.to_bytes()[..], &input[..HEADER_LEN]);
        }
        Err(Error::Truncated { what, expected, got }) => {
            prop_assert!(got < expected, "{what}: got {got} of {expected}");
            prop_assert!(got <= input.len() as u64);
            if what == "header" {
                prop_assert_eq!((expected, got), (HEADER_LEN as u64, input.len() as u64));
            }
        }
        Err(Error::FrameTooLarge { payload_bytes, max_frame_bytes: limit, .. }) => {
            prop_assert!(payload_bytes > limit);
            prop_assert!(limit <= max_frame_bytes);
        }
        Err(Error::NonzeroPadding { index, found }) => {
            prop_assert!(index < frame::FRAME_ALIGN - 1);
            prop_assert_ne!(found, 0);
        }
        Err(
            Error::BadMagic { .. }
            | Error::UnsupportedVersion { .. }
            | Error::UnknownKind { .. }
            | Error::UnknownDtype { .. }
            | Error::ReservedFlags { .. }
            | Error::MalformedControl { .. }
            | Error::LengthOverflow { .. },
        ) => {}
        Err(other) => prop_assert!(false, "decode_frame returned an unexpected variant: {other:?}"),
    }
    Ok(())
}

/// Header bytes that get past the magic and version checks often, with fields near the edges.
fn plausible_header() -> impl Strategy<Value = Vec<u8>> {
    (
        prop_oneof![4 => Just(*b"PEER"), 1 => any::<[u8; 4]>()],
        prop_oneof![4 => Just(1u8), 1 => any::<u8>()],
        0u8..=6,
        0u8..=4,
        prop_oneof![4 => Just(0u8), 1 => any::<u8>()],
        any::<u64>(),
        prop_oneof![3 => 0u64..64, 1 => any::<u64>(), 1 => Just(1u64 << 62), 1 => Just(u64::MAX)],
        any::<u64>(),
    )
        .prop_map(|(magic, version, kind, dtype, flags, seq, count, aux)| {
            let mut out = Vec::with_capacity(HEADER_LEN);
            out.extend_from_slice(&magic);
            out.extend_from_slice(&[version, kind, dtype, flags]);
            out.extend_from_slice(&seq.to_le_bytes());
            out.extend_from_slice(&count.to_le_bytes());
            out.extend_from_slice(&aux.to_le_bytes());
            out
        })
}

/// A valid header and a payload that matches it, within `MAX_CONTROL_PAYLOAD`.
fn valid_frame_parts() -> impl Strategy<Value = (Header, Vec<u8>)> {
    let data = (any::<u64>(), any::<u64>(), 0u8..3, vec(any::<u8>(), 0..200)).prop_map(
        |(seq, aux, dtype, mut payload)| {
            let dtype = Dtype::from_byte(dtype).unwrap();
            let width = dtype.width() as usize;
            payload.truncate(payload.len() / width * width);
            let count = (payload.len() / width) as u64;
            (Header { kind: Kind::Data, dtype, seq, count, aux }, payload)
        },
    );
    let control = (
        prop_oneof![Just(Kind::Hello), Just(Kind::Error)],
        any::<u64>(),
        any::<u64>(),
        vec(any::<u8>(), 0..100),
    )
        .prop_map(|(kind, seq, aux, payload)| {
            (Header { kind, dtype: Dtype::Bytes, seq, count: payload.len() as u64, aux }, payload)
        });
    let bye = (any::<u64>(), any::<u64>()).prop_map(|(seq, aux)| {
        (Header { kind: Kind::Bye, dtype: Dtype::Bytes, seq, count: 0, aux }, Vec::new())
    });
    prop_oneof![3 => data, 2 => control, 1 => bye]
}

proptest! {
    // ---- (a) codec round trip ----------------------------------------------------------------

    #[test]
    fn f64_codec_round_trip_is_bit_exact_for_every_bit_pattern(values in vec(any_f64(), 0..256)) {
        let bytes = codec::encode_f64(&values);
        prop_assert_eq!(bytes.len(), 8 * values.len());
        prop_assert_eq!(bits64(&codec::decode_f64(&bytes).unwrap()), bits64(&values));
        let mut into = vec![0.0f64; values.len()];
        codec::decode_into(&bytes, ValuesMut::F64(&mut into)).unwrap();
        prop_assert_eq!(bits64(&into), bits64(&values));
    }

    #[test]
    fn f32_codec_round_trip_is_bit_exact_for_every_bit_pattern(values in vec(any_f32(), 0..256)) {
        let bytes = codec::encode_f32(&values);
        prop_assert_eq!(bytes.len(), 4 * values.len());
        prop_assert_eq!(bits32(&codec::decode_f32(&bytes).unwrap()), bits32(&values));
        let mut into = vec![0.0f32; values.len()];
        codec::decode_into(&bytes, ValuesMut::F32(&mut into)).unwrap();
        prop_assert_eq!(bits32(&into), bits32(&values));
    }

    #[test]
    fn codec_bytes_are_the_little_endian_bytes_of_each_element(
        f64s in vec(any_f64(), 0..64),
        f32s in vec(any_f32(), 0..64),
    ) {
        let expected: Vec<u8> = f64s.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect();
        prop_assert_eq!(codec::encode_f64(&f64s), expected);
        let expected: Vec<u8> = f32s.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect();
        prop_assert_eq!(codec::encode_f32(&f32s), expected);
    }

    // ---- (b) zero-copy == codec --------------------------------------------------------------

    #[test]
    fn zero_copy_send_equals_codec_encode(
        f64s in vec(any_f64(), 0..256),
        f32s in vec(any_f32(), 0..256),
    ) {
        match zerocopy::wire_bytes(Values::F64(&f64s)) {
            Some(bytes) => prop_assert_eq!(bytes, &codec::encode_f64(&f64s)[..]),
            None => prop_assert!(!zerocopy::NATIVE_IS_WIRE),
        }
        match zerocopy::wire_bytes(Values::F32(&f32s)) {
            Some(bytes) => prop_assert_eq!(bytes, &codec::encode_f32(&f32s)[..]),
            None => prop_assert!(!zerocopy::NATIVE_IS_WIRE),
        }
    }

    #[test]
    fn zero_copy_receive_equals_codec_decode_into(
        wire64 in vec(any::<u64>(), 0..256),
        wire32 in vec(any::<u32>(), 0..256),
    ) {
        let wire: Vec<u8> = wire64.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut by_codec = vec![0.0f64; wire64.len()];
        codec::decode_into(&wire, ValuesMut::F64(&mut by_codec)).unwrap();
        let mut by_zero_copy = vec![0.0f64; wire64.len()];
        let mut dst = ValuesMut::F64(&mut by_zero_copy);
        zerocopy::wire_bytes_mut(&mut dst).unwrap().copy_from_slice(&wire);
        zerocopy::finish_receive(&mut dst);
        prop_assert_eq!(bits64(&by_zero_copy), bits64(&by_codec));
        prop_assert_eq!(bits64(&by_codec), wire64);

        let wire: Vec<u8> = wire32.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut by_codec = vec![0.0f32; wire32.len()];
        codec::decode_into(&wire, ValuesMut::F32(&mut by_codec)).unwrap();
        let mut by_zero_copy = vec![0.0f32; wire32.len()];
        let mut dst = ValuesMut::F32(&mut by_zero_copy);
        zerocopy::wire_bytes_mut(&mut dst).unwrap().copy_from_slice(&wire);
        zerocopy::finish_receive(&mut dst);
        prop_assert_eq!(bits32(&by_zero_copy), bits32(&by_codec));
        prop_assert_eq!(bits32(&by_codec), wire32);
    }

    #[test]
    fn zero_copy_view_of_aligned_bytes_equals_codec_decode(wire64 in vec(any::<u64>(), 0..64)) {
        // A Vec<u64> is 8-byte aligned, as a receive buffer allocated as Vec<f64> is.
        let aligned: &[u8] = bytemuck::cast_slice(&wire64);
        let by_codec = codec::decode_f64(aligned).unwrap();
        match zerocopy::view_f64(aligned) {
            Some(view) => prop_assert_eq!(bits64(view), bits64(&by_codec)),
            None => prop_assert!(!zerocopy::NATIVE_IS_WIRE),
        }
    }

    // ---- (b2) encoding and decoding in pieces (in place, in a ring) equal the whole ----------

    #[test]
    fn pieces_of_any_length_encode_and_decode_like_the_whole_payload(
        values in vec(any_f64(), 0..200),
        cuts in vec(1usize..40, 1..64),
        narrow in any::<bool>(),
    ) {
        let src = if narrow { Values::F64AsF32(&values) } else { Values::F64(&values) };
        let mut whole = vec![0u8; src.wire_len()];
        codec::encode_into(src, &mut whole).unwrap();
        // The encoding, piece by piece at the cut lengths (cycled), equals the whole.
        let mut pieces = vec![0u8; whole.len()];
        let (mut at, mut k) = (0, 0);
        while at < whole.len() {
            let n = cuts[k % cuts.len()].min(whole.len() - at);
            codec::encode_at(src, at, &mut pieces[at..at + n]).unwrap();
            at += n;
            k += 1;
        }
        prop_assert_eq!(&pieces, &whole);
        prop_assert!(codec::encode_at(src, whole.len(), &mut [0u8; 1]).is_err());
        // Decoding the pieces in order equals decoding the whole.
        let mut expected = vec![0.0f64; values.len()];
        let mut got = vec![0.0f64; values.len()];
        let (oracle, mut decoder) = if narrow {
            (ValuesMut::F64FromF32(&mut expected), codec::PieceDecoder::new(ValuesMut::F64FromF32(&mut got)))
        } else {
            (ValuesMut::F64(&mut expected), codec::PieceDecoder::new(ValuesMut::F64(&mut got)))
        };
        codec::decode_into(&whole, oracle).unwrap();
        let (mut at, mut k) = (0, 0);
        while at < whole.len() {
            let n = cuts[(k + 3) % cuts.len()].min(whole.len() - at);
            decoder.push(&whole[at..at + n]).unwrap();
            at += n;
            k += 1;
        }
        prop_assert!(decoder.is_complete());
        prop_assert!(decoder.push(&[0]).is_err());
        prop_assert_eq!(bits64(&got), bits64(&expected));
    }

    // ---- (c) narrowing and widening equal Rust's `as` ----------------------------------------

    #[test]
    fn f64_to_f32_to_f64_through_the_wire_equals_as_casts(values in vec(any_f64(), 0..256)) {
        let mut wire = vec![0u8; Values::F64AsF32(&values).wire_len()];
        codec::encode_into(Values::F64AsF32(&values), &mut wire).unwrap();
        let narrowed: Vec<u8> = values.iter().flat_map(|&x| (x as f32).to_bits().to_le_bytes()).collect();
        prop_assert_eq!(&wire, &narrowed);

        let mut back = vec![0.0f64; values.len()];
        codec::decode_into(&wire, ValuesMut::F64FromF32(&mut back)).unwrap();
        let expected: Vec<u64> = values.iter().map(|&x| ((x as f32) as f64).to_bits()).collect();
        prop_assert_eq!(bits64(&back), expected);
    }

    #[test]
    fn f32_widened_then_narrowed_equals_as_casts(values in vec(any_f32(), 0..256)) {
        let wire = codec::encode_f32(&values);
        let widened = codec::decode_f32_as_f64(&wire).unwrap();
        let expected: Vec<u64> = values.iter().map(|&x| (x as f64).to_bits()).collect();
        prop_assert_eq!(bits64(&widened), expected);
        let narrowed_again = codec::encode_f64_as_f32(&widened);
        // Widening is exact, so every non-NaN comes back with its original bits. A NaN comes
        // back a NaN of the same sign: whether a cast quiets a signaling NaN is not fixed by
        // Rust (an optimised `as` folded at compile time may keep it, the CPU quiets it), so
        // neither the codec nor an `as` cast is an oracle for those bits.
        for (x, chunk) in values.iter().zip(narrowed_again.chunks_exact(4)) {
            let back = f32::from_bits(u32::from_le_bytes(chunk.try_into().unwrap()));
            if x.is_nan() {
                prop_assert!(back.is_nan() && back.is_sign_negative() == x.is_sign_negative());
            } else {
                prop_assert_eq!(back.to_bits(), x.to_bits());
            }
        }
    }

    // ---- (d) the decoder never panics and never over-claims ----------------------------------

    #[test]
    fn decode_frame_never_panics_on_arbitrary_bytes(
        input in vec(any::<u8>(), 0..160),
        max_frame_bytes in prop_oneof![Just(1024u64), any::<u64>(), 0u64..64],
    ) {
        check_decode_contract(&input, max_frame_bytes)?;
    }

    #[test]
    fn decode_frame_never_panics_on_plausible_headers_with_arbitrary_tails(
        header in plausible_header(),
        tail in vec(any::<u8>(), 0..160),
        zero_tail in any::<bool>(),
        max_frame_bytes in prop_oneof![Just(1024u64), Just(u64::MAX), 0u64..256],
    ) {
        let mut input = header;
        if zero_tail {
            input.extend(std::iter::repeat_n(0, tail.len()));
        } else {
            input.extend_from_slice(&tail);
        }
        check_decode_contract(&input, max_frame_bytes)?;
    }

    #[test]
    fn decode_frame_never_panics_on_mutated_or_truncated_valid_frames(
        (header, payload) in valid_frame_parts(),
        flips in vec((any::<prop::sample::Index>(), 1u8..=255), 0..4),
        keep in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut input = frame::encode_frame(&header, &payload);
        for (at, xor) in flips {
            let i = at.index(input.len());
            input[i] ^= xor;
        }
        if truncate {
            input.truncate(keep.index(input.len() + 1));
        }
        check_decode_contract(&input, 1024)?;
    }

    #[test]
    fn every_proper_prefix_of_a_valid_frame_is_truncated_and_never_over_claimed(
        (header, payload) in valid_frame_parts(),
    ) {
        let bytes = frame::encode_frame(&header, &payload);
        for cut in 0..bytes.len() {
            let prefix = &bytes[..cut];
            check_decode_contract(prefix, 1024)?;
            let truncated =
                matches!(frame::decode_frame(prefix, 1024), Err(Error::Truncated { .. }));
            prop_assert!(truncated, "prefix of {cut} of {} bytes", bytes.len());
        }
        check_decode_contract(&bytes, 1024)?;
    }

    // ---- (e) encode_frame then decode_frame is the identity ----------------------------------

    #[test]
    fn encode_then_decode_frame_is_the_identity(
        (header, payload) in valid_frame_parts(),
        trailing in vec(any::<u8>(), 0..16),
    ) {
        let encoded = frame::encode_frame(&header, &payload);
        prop_assert_eq!(encoded.len() % frame::FRAME_ALIGN, 0);
        let limit = (payload.len() as u64).clamp(1, MAX_CONTROL_PAYLOAD);
        let (decoded, used) = frame::decode_frame(&encoded, limit).unwrap();
        prop_assert_eq!(decoded.header, header);
        prop_assert_eq!(decoded.payload, &payload[..]);
        prop_assert_eq!(used, encoded.len());

        // Whatever follows the frame is left alone.
        let mut stream = encoded.clone();
        stream.extend_from_slice(&trailing);
        let (again, used_again) = frame::decode_frame(&stream, limit).unwrap();
        prop_assert_eq!(again, decoded);
        prop_assert_eq!(used_again, encoded.len());
    }

    #[test]
    fn header_bytes_round_trip_through_parse(
        (header, _payload) in valid_frame_parts(),
    ) {
        prop_assert_eq!(Header::parse(&header.to_bytes(), u64::MAX).unwrap(), header);
        prop_assert_eq!(Header::raw_seq(&header.to_bytes()), header.seq);
    }

    #[test]
    fn hello_renders_and_parses_back_to_itself(
        max_frame_bytes in any::<u64>(),
        handler in proptest::option::of("[a-zA-Z0-9 ._=+-]{0,24}"),
        implementation in proptest::option::of("[a-zA-Z0-9 ._=+-]{0,24}"),
        role in proptest::option::of("[a-zA-Z0-9 ._=+-]{0,24}"),
        pid in proptest::option::of(1..=u32::MAX),
        parts in any::<bool>(),
        functions in proptest::collection::vec("[a-zA-Z0-9_.:-]{1,64}", 0..8),
    ) {
        let hello = Hello { max_frame_bytes, role, handler, implementation, pid, parts, functions };
        prop_assert_eq!(Hello::parse(&hello.to_payload()).unwrap(), hello);
    }
}
