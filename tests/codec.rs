//! Unit and negative tests of `peerpipe::codec` and `peerpipe::zerocopy`: length errors leave
//! the destination untouched, exact little-endian bytes against target-independent oracles,
//! narrowing/widening against Rust's `as` casts, serial vs rayon, and the zero-copy fallbacks.

use peerpipe::Error;
use peerpipe::codec::{self, PARALLEL_MIN_ELEMENTS, Parallelism, Values, ValuesMut};
use peerpipe::frame::Dtype;
use peerpipe::zerocopy;

/// SplitMix64: a tiny deterministic generator, so the tests need no `rand` and never vary.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Arbitrary f64 bit patterns (NaNs, subnormals and all) mixed with ordinary numbers.
fn random_f64(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64(seed);
    (0..n)
        .map(|i| {
            let r = rng.next();
            if i % 2 == 0 {
                f64::from_bits(r)
            } else {
                (r >> 11) as f64 / (1u64 << 40) as f64 - 1e3
            }
        })
        .collect()
}

fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64(seed);
    (0..n).map(|_| f32::from_bits(rng.next() as u32)).collect()
}

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = SplitMix64(seed);
    (0..n).map(|_| rng.next() as u8).collect()
}

/// Little-endian bytes of a `u64` by shifts: the same on every target, whatever its byte order.
fn le_bytes_by_shifts(bits: u64, width: usize) -> impl Iterator<Item = u8> {
    (0..width).map(move |i| (bits >> (8 * i)) as u8)
}

fn bits64(values: &[f64]) -> Vec<u64> {
    values.iter().map(|x| x.to_bits()).collect()
}

fn bits32(values: &[f32]) -> Vec<u32> {
    values.iter().map(|x| x.to_bits()).collect()
}

/// A `u64`-aligned byte buffer holding `bytes` at offset `offset`, for alignment tests.
fn bytes_at_offset(bytes: &[u8], offset: usize) -> (Vec<u64>, std::ops::Range<usize>) {
    let mut storage = vec![0u64; (bytes.len() + offset).div_ceil(8) + 1];
    let raw: &mut [u8] = bytemuck::cast_slice_mut(&mut storage);
    raw[offset..offset + bytes.len()].copy_from_slice(bytes);
    (storage, offset..offset + bytes.len())
}

// ---- exact bytes ---------------------------------------------------------------------------

#[test]
fn f64_encodes_to_documented_little_endian_bytes() {
    assert_eq!(codec::encode_f64(&[1.0]), [0, 0, 0, 0, 0, 0, 0xf0, 0x3f]);
    assert_eq!(codec::encode_f64(&[-0.0]), [0, 0, 0, 0, 0, 0, 0, 0x80]);
    assert_eq!(
        codec::encode_f64(&[f64::from_bits(0x0102_0304_0506_0708)]),
        [8, 7, 6, 5, 4, 3, 2, 1]
    );
}

#[test]
fn f32_encodes_to_documented_little_endian_bytes() {
    assert_eq!(codec::encode_f32(&[1.0]), [0, 0, 0x80, 0x3f]);
    assert_eq!(codec::encode_f32(&[-0.0]), [0, 0, 0, 0x80]);
    assert_eq!(codec::encode_f32(&[f32::from_bits(0x0102_0304)]), [4, 3, 2, 1]);
}

#[test]
fn empty_arrays_encode_to_no_bytes_and_decode_from_none() {
    assert!(codec::encode_f64(&[]).is_empty());
    assert!(codec::encode_f32(&[]).is_empty());
    assert!(codec::encode_f64_as_f32(&[]).is_empty());
    assert!(codec::decode_f64(&[]).unwrap().is_empty());
    assert!(codec::decode_f32(&[]).unwrap().is_empty());
    assert!(codec::decode_f32_as_f64(&[]).unwrap().is_empty());
    codec::encode_into(Values::F64(&[]), &mut []).unwrap();
    codec::decode_into(&[], ValuesMut::F64(&mut [])).unwrap();
}

// ---- the endian-independent oracle ---------------------------------------------------------

#[test]
fn f64_codec_bytes_equal_to_le_bytes_and_shifted_bytes_of_each_value() {
    let values = random_f64(1000, 1);
    let bytes = codec::encode_f64(&values);
    let by_to_le: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
    let by_shifts: Vec<u8> =
        values.iter().flat_map(|x| le_bytes_by_shifts(x.to_bits(), 8)).collect();
    assert_eq!(bytes, by_to_le);
    assert_eq!(bytes, by_shifts);
    // On a big-endian target the native bytes are the swapped ones; the wire must not be.
    let swapped: Vec<u8> =
        values.iter().flat_map(|x| x.to_bits().swap_bytes().to_be_bytes()).collect();
    assert_eq!(bytes, swapped);
}

#[test]
fn f64_codec_decodes_as_from_le_bytes() {
    let bytes = random_bytes(8 * 1000, 2);
    let decoded = codec::decode_f64(&bytes).unwrap();
    let expected: Vec<u64> =
        bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(bits64(&decoded), expected);
    let by_shifts: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| c.iter().enumerate().fold(0u64, |acc, (i, &b)| acc | (b as u64) << (8 * i)))
        .collect();
    assert_eq!(bits64(&decoded), by_shifts);
}

#[test]
fn f32_codec_bytes_equal_to_le_bytes_of_each_value() {
    let values = random_f32(1001, 3);
    let bytes = codec::encode_f32(&values);
    let by_to_le: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
    let by_shifts: Vec<u8> =
        values.iter().flat_map(|x| le_bytes_by_shifts(u64::from(x.to_bits()), 4)).collect();
    assert_eq!(bytes, by_to_le);
    assert_eq!(bytes, by_shifts);
}

#[test]
fn f32_codec_decodes_as_from_le_bytes() {
    let bytes = random_bytes(4 * 1001, 4);
    let decoded = codec::decode_f32(&bytes).unwrap();
    let expected: Vec<u32> =
        bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(bits32(&decoded), expected);
}

#[test]
fn encode_then_decode_preserves_every_bit_pattern() {
    let f64s = random_f64(4096, 5);
    assert_eq!(bits64(&codec::decode_f64(&codec::encode_f64(&f64s)).unwrap()), bits64(&f64s));
    let f32s = random_f32(4096, 6);
    assert_eq!(bits32(&codec::decode_f32(&codec::encode_f32(&f32s)).unwrap()), bits32(&f32s));
}

// ---- narrowing and widening ----------------------------------------------------------------

#[test]
fn narrowing_equals_rust_as_cast_bit_for_bit() {
    let mut values = random_f64(2000, 7);
    values.extend([
        f64::from_bits(0x7ff0_0000_0000_0001), // signalling NaN
        f64::from_bits(0xfff8_dead_beef_0000), // negative NaN with payload
        f64::MAX,
        f64::MIN_POSITIVE,
        -0.0,
    ]);
    let bytes = codec::encode_f64_as_f32(&values);
    let expected: Vec<u8> = values.iter().flat_map(|&x| (x as f32).to_le_bytes()).collect();
    assert_eq!(bytes, expected);
}

#[test]
fn narrowing_rounds_to_nearest_even_and_saturates_to_infinity() {
    let cases: [(f64, u32); 9] = [
        (1.0 + f64::powi(2.0, -24), 0x3f80_0000), // tie: rounds to even (down)
        (1.0 + 3.0 * f64::powi(2.0, -24), 0x3f80_0002), // tie: rounds to even (up)
        (0.1, 0x3dcc_cccd),
        (1e300, 0x7f80_0000),
        (-1e300, 0xff80_0000),
        (1e-300, 0x0000_0000),
        (-1e-300, 0x8000_0000),
        (f64::from_bits(1), 0x0000_0000), // f64 subnormal underflows to +0
        (f64::powi(2.0, -149), 0x0000_0001), // smallest f32 subnormal is exact
    ];
    for (x, expected) in cases {
        let bytes = codec::encode_f64_as_f32(&[x]);
        assert_eq!(bytes, expected.to_le_bytes(), "{x:e}");
    }
}

#[test]
fn widening_equals_rust_as_cast_and_is_exact() {
    let bytes = random_bytes(4 * 3000, 8);
    let widened = codec::decode_f32_as_f64(&bytes).unwrap();
    for (w, c) in widened.iter().zip(bytes.chunks_exact(4)) {
        let x = f32::from_le_bytes(c.try_into().unwrap());
        assert_eq!(w.to_bits(), (x as f64).to_bits());
        if !x.is_nan() {
            assert_eq!((*w as f32).to_bits(), x.to_bits(), "widening must be exact");
        }
    }
}

#[test]
fn a_thousand_f64_go_on_the_wire_as_four_thousand_bytes() {
    let values: Vec<f64> = (0..1000).map(f64::from).collect();
    assert_eq!(Values::F64AsF32(&values).wire_len(), 4000);
    let bytes = codec::encode_f64_as_f32(&values);
    assert_eq!(bytes.len(), 4000);
    assert_eq!(bits64(&codec::decode_f32_as_f64(&bytes).unwrap()), bits64(&values));
}

// ---- length errors -------------------------------------------------------------------------

#[test]
fn encode_into_a_wrong_size_buffer_fails_and_leaves_it_untouched() {
    let f64s = [1.0f64, 2.0, 3.0];
    let f32s = [1.0f32, 2.0, 3.0];
    let cases: [(Values<'_>, usize); 4] = [
        (Values::F64(&f64s), 24),
        (Values::F32(&f32s), 12),
        (Values::F64AsF32(&f64s), 12),
        (Values::Bytes(b"abc"), 3),
    ];
    for (values, right) in cases {
        for wrong in [0, right - 1, right + 1, right * 2] {
            let mut dst = vec![0xaa_u8; wrong];
            let err = codec::encode_into(values, &mut dst).unwrap_err();
            assert!(
                matches!(err, Error::LengthMismatch { expected, found, .. }
                    if expected == right as u64 && found == wrong as u64),
                "{values:?} into {wrong}: {err:?}"
            );
            assert!(dst.iter().all(|&b| b == 0xaa), "dst was written");
        }
    }
}

#[test]
fn decode_into_a_wrong_size_buffer_fails_and_leaves_it_untouched() {
    let src = [0x11u8; 24];
    for wrong_len in [0usize, 2, 4, 100] {
        let mut f64s = vec![-7.0f64; wrong_len];
        let err = codec::decode_into(&src, ValuesMut::F64(&mut f64s)).unwrap_err();
        assert!(
            matches!(err, Error::LengthMismatch { expected, found: 24, .. }
                if expected == 8 * wrong_len as u64),
            "{err:?}"
        );
        assert!(f64s.iter().all(|&x| x == -7.0));

        let mut f32s = vec![-7.0f32; wrong_len];
        let wrong_src = &src[..20]; // 5 f32s, never equal to wrong_len
        let err = codec::decode_into(wrong_src, ValuesMut::F32(&mut f32s)).unwrap_err();
        assert!(matches!(err, Error::LengthMismatch { found: 20, .. }), "{err:?}");
        assert!(f32s.iter().all(|&x| x == -7.0));

        let mut widened = vec![-7.0f64; wrong_len];
        let err = codec::decode_into(wrong_src, ValuesMut::F64FromF32(&mut widened)).unwrap_err();
        assert!(matches!(err, Error::LengthMismatch { found: 20, .. }), "{err:?}");
        assert!(widened.iter().all(|&x| x == -7.0));

        let mut bytes = vec![0xaau8; wrong_len];
        let err = codec::decode_into(&src[..3], ValuesMut::Bytes(&mut bytes)).unwrap_err();
        assert!(matches!(err, Error::LengthMismatch { found: 3, .. }), "{err:?}");
        assert!(bytes.iter().all(|&b| b == 0xaa));
    }
}

#[test]
fn decode_f64_of_seven_bytes_is_a_length_mismatch() {
    let err = codec::decode_f64(&[0; 7]).unwrap_err();
    assert!(matches!(err, Error::LengthMismatch { expected: 0, found: 7, .. }), "{err:?}");
    let err = codec::decode_f64(&[0; 15]).unwrap_err();
    assert!(matches!(err, Error::LengthMismatch { expected: 8, found: 15, .. }), "{err:?}");
}

#[test]
fn decode_f32_of_a_partial_element_is_a_length_mismatch() {
    let err = codec::decode_f32(&[0; 6]).unwrap_err();
    assert!(matches!(err, Error::LengthMismatch { expected: 4, found: 6, .. }), "{err:?}");
    let err = codec::decode_f32_as_f64(&[0; 3]).unwrap_err();
    assert!(matches!(err, Error::LengthMismatch { expected: 0, found: 3, .. }), "{err:?}");
}

#[test]
fn length_mismatch_message_names_both_lengths() {
    let text = codec::decode_f64(&[0; 7]).unwrap_err().to_string();
    assert!(text.contains('7') && text.contains('0'), "{text}");
}

// ---- metadata ------------------------------------------------------------------------------

#[test]
fn values_report_wire_dtype_count_and_byte_length() {
    let f64s = [0.0f64; 3];
    let f32s = [0.0f32; 3];
    let cases: [(Values<'_>, Dtype, usize); 4] = [
        (Values::Bytes(b"abc"), Dtype::Bytes, 3),
        (Values::F32(&f32s), Dtype::F32, 12),
        (Values::F64(&f64s), Dtype::F64, 24),
        (Values::F64AsF32(&f64s), Dtype::F32, 12),
    ];
    for (values, dtype, wire_len) in cases {
        assert_eq!(values.wire_dtype(), dtype);
        assert_eq!(values.len(), 3);
        assert!(!values.is_empty());
        assert_eq!(values.wire_len(), wire_len);
    }
    assert!(Values::F64(&[]).is_empty());
}

#[test]
fn buffers_report_wire_dtype_count_and_byte_length() {
    let (mut b, mut s, mut d, mut w) = ([0u8; 3], [0f32; 3], [0f64; 3], [0f64; 3]);
    let cases: [(ValuesMut<'_>, Dtype, usize); 4] = [
        (ValuesMut::Bytes(&mut b), Dtype::Bytes, 3),
        (ValuesMut::F32(&mut s), Dtype::F32, 12),
        (ValuesMut::F64(&mut d), Dtype::F64, 24),
        (ValuesMut::F64FromF32(&mut w), Dtype::F32, 12),
    ];
    for (mut values, dtype, wire_len) in cases {
        assert_eq!(values.wire_dtype(), dtype);
        assert_eq!(values.len(), 3);
        assert!(!values.is_empty());
        assert_eq!(values.wire_len(), wire_len);
        assert_eq!(values.reborrow().wire_len(), wire_len);
    }
    assert!(ValuesMut::F32(&mut []).is_empty());
}

// ---- serial vs rayon -----------------------------------------------------------------------

/// Longer than the threshold and not a multiple of any chunk size, so the last chunk is short.
const BIG: usize = PARALLEL_MIN_ELEMENTS + 12_345;

const MODES: [Parallelism; 3] = [Parallelism::Serial, Parallelism::Rayon, Parallelism::Auto];

fn encode_with(values: Values<'_>, par: Parallelism) -> Vec<u8> {
    let mut out = vec![0u8; values.wire_len()];
    codec::encode_into_with(values, &mut out, par).unwrap();
    out
}

#[test]
fn parallel_and_serial_encoding_give_identical_bytes_above_the_threshold() {
    let f64s = random_f64(BIG, 9);
    let f32s = random_f32(BIG, 10);
    let bytes = random_bytes(BIG, 11);
    for values in
        [Values::F64(&f64s), Values::F32(&f32s), Values::F64AsF32(&f64s), Values::Bytes(&bytes)]
    {
        let serial = encode_with(values, Parallelism::Serial);
        for par in MODES {
            let dtype = values.wire_dtype();
            assert!(encode_with(values, par) == serial, "{par:?} differs for {dtype}");
        }
    }
    assert_eq!(encode_with(Values::F64(&f64s), Parallelism::Rayon), codec::encode_f64(&f64s));
}

#[test]
fn parallel_and_serial_decoding_give_identical_values_above_the_threshold() {
    let src8 = random_bytes(8 * BIG, 12);
    let src4 = &src8[..4 * BIG];
    let serial_f64 = {
        let mut v = vec![0.0f64; BIG];
        codec::decode_into_with(&src8, ValuesMut::F64(&mut v), Parallelism::Serial).unwrap();
        bits64(&v)
    };
    let serial_f32 = {
        let mut v = vec![0.0f32; BIG];
        codec::decode_into_with(src4, ValuesMut::F32(&mut v), Parallelism::Serial).unwrap();
        bits32(&v)
    };
    let serial_widened = {
        let mut v = vec![0.0f64; BIG];
        codec::decode_into_with(src4, ValuesMut::F64FromF32(&mut v), Parallelism::Serial).unwrap();
        bits64(&v)
    };
    for par in MODES {
        let mut v = vec![0.0f64; BIG];
        codec::decode_into_with(&src8, ValuesMut::F64(&mut v), par).unwrap();
        assert!(bits64(&v) == serial_f64, "f64 {par:?}");

        let mut v = vec![0.0f32; BIG];
        codec::decode_into_with(src4, ValuesMut::F32(&mut v), par).unwrap();
        assert!(bits32(&v) == serial_f32, "f32 {par:?}");

        let mut v = vec![0.0f64; BIG];
        codec::decode_into_with(src4, ValuesMut::F64FromF32(&mut v), par).unwrap();
        assert!(bits64(&v) == serial_widened, "widened {par:?}");

        let mut v = vec![0u8; BIG];
        codec::decode_into_with(&src8[..BIG], ValuesMut::Bytes(&mut v), par).unwrap();
        assert!(v[..] == src8[..BIG], "bytes {par:?}");
    }
}

#[test]
fn forced_rayon_on_small_and_empty_arrays_matches_serial() {
    for n in [0usize, 1, 7, 1000] {
        let values = random_f64(n, 13);
        for values in [Values::F64(&values), Values::F64AsF32(&values)] {
            assert_eq!(
                encode_with(values, Parallelism::Rayon),
                encode_with(values, Parallelism::Serial)
            );
        }
        let bytes = codec::encode_f64(&values);
        let mut v = vec![0.0f64; n];
        codec::decode_into_with(&bytes, ValuesMut::F64(&mut v), Parallelism::Rayon).unwrap();
        assert_eq!(bits64(&v), bits64(&values));
    }
}

#[test]
fn length_checks_apply_in_every_parallelism_mode() {
    let values = [1.0f64; 4];
    for par in MODES {
        let mut dst = [0xaau8; 31];
        let err = codec::encode_into_with(Values::F64(&values), &mut dst, par).unwrap_err();
        assert!(matches!(err, Error::LengthMismatch { expected: 32, found: 31, .. }));
        assert!(dst.iter().all(|&b| b == 0xaa));
        let mut out = [5.0f64; 4];
        let err = codec::decode_into_with(&[0; 31], ValuesMut::F64(&mut out), par).unwrap_err();
        assert!(matches!(err, Error::LengthMismatch { expected: 32, found: 31, .. }));
        assert_eq!(out, [5.0; 4]);
    }
}

#[test]
fn default_parallelism_is_auto() {
    assert_eq!(Parallelism::default(), Parallelism::Auto);
}

// ---- zero-copy -----------------------------------------------------------------------------

#[test]
fn zero_copy_send_borrows_the_slice_memory_and_equals_the_codec() {
    let values = random_f64(100, 14);
    let sent = zerocopy::wire_bytes(Values::F64(&values));
    assert_eq!(sent.is_some(), zerocopy::NATIVE_IS_WIRE, "zero-copy send on little-endian only");
    if let Some(bytes) = sent {
        assert_eq!(bytes.as_ptr(), values.as_ptr().cast::<u8>(), "must not copy");
        assert_eq!(bytes, codec::encode_f64(&values));
    }
    let f32s = random_f32(101, 15);
    if let Some(bytes) = zerocopy::wire_bytes(Values::F32(&f32s)) {
        assert_eq!(bytes, codec::encode_f32(&f32s));
    }
    assert_eq!(zerocopy::wire_bytes(Values::Bytes(b"raw")), Some(&b"raw"[..]));
}

#[test]
fn zero_copy_send_refuses_narrowing() {
    assert_eq!(zerocopy::wire_bytes(Values::F64AsF32(&[1.0, 2.0])), None);
}

#[test]
fn zero_copy_receive_refuses_widening() {
    let mut buf = [0.0f64; 2];
    assert!(zerocopy::wire_bytes_mut(&mut ValuesMut::F64FromF32(&mut buf)).is_none());
}

#[test]
fn zero_copy_receive_equals_codec_decode() {
    let values = random_f64(257, 16);
    let wire = codec::encode_f64(&values);
    let mut received = vec![0.0f64; values.len()];
    let mut dst = ValuesMut::F64(&mut received);
    let bytes = zerocopy::wire_bytes_mut(&mut dst).unwrap();
    assert_eq!(bytes.len(), wire.len());
    bytes.copy_from_slice(&wire);
    zerocopy::finish_receive(&mut dst);
    assert_eq!(bits64(&received), bits64(&values));

    let f32s = random_f32(257, 17);
    let wire = codec::encode_f32(&f32s);
    let mut received = vec![0.0f32; f32s.len()];
    let mut dst = ValuesMut::F32(&mut received);
    zerocopy::wire_bytes_mut(&mut dst).unwrap().copy_from_slice(&wire);
    zerocopy::finish_receive(&mut dst);
    assert_eq!(bits32(&received), bits32(&f32s));
}

#[test]
fn aligned_f64_bytes_are_viewed_in_place() {
    let values = random_f64(10, 18);
    let wire = codec::encode_f64(&values);
    let (storage, range) = bytes_at_offset(&wire, 0);
    let raw: &[u8] = bytemuck::cast_slice(&storage);
    let view = zerocopy::view_f64(&raw[range.clone()]);
    assert_eq!(view.is_some(), zerocopy::NATIVE_IS_WIRE, "in-place view on little-endian only");
    if let Some(view) = view {
        assert_eq!(bits64(view), bits64(&values));
        assert_eq!(view.as_ptr().cast::<u8>(), raw[range].as_ptr());
    }
}

#[test]
fn misaligned_f64_bytes_are_not_viewed() {
    let wire = codec::encode_f64(&[1.0, 2.0, 3.0]);
    for offset in 1..8 {
        let (storage, range) = bytes_at_offset(&wire, offset);
        let raw: &[u8] = bytemuck::cast_slice(&storage);
        assert_eq!(zerocopy::view_f64(&raw[range.clone()]), None, "offset {offset}");
        // The codec is the fallback and still decodes them.
        assert_eq!(codec::decode_f64(&raw[range]).unwrap(), [1.0, 2.0, 3.0]);
    }
}

#[test]
fn f64_view_of_a_partial_element_is_refused() {
    let storage = [0u64; 2];
    let raw: &[u8] = bytemuck::cast_slice(&storage);
    assert_eq!(zerocopy::view_f64(&raw[..7]), None);
    assert_eq!(zerocopy::view_f64(&raw[..12]), None);
    assert_eq!(zerocopy::view_f32(&raw[..6]), None);
}

#[test]
fn f32_view_needs_four_byte_alignment_only() {
    let wire = codec::encode_f32(&[1.5, -2.5]);
    let (storage, range) = bytes_at_offset(&wire, 4);
    let raw: &[u8] = bytemuck::cast_slice(&storage);
    if zerocopy::NATIVE_IS_WIRE {
        assert_eq!(zerocopy::view_f32(&raw[range.clone()]), Some(&[1.5f32, -2.5][..]));
    }
    for offset in [1, 2, 3, 5] {
        let (storage, range) = bytes_at_offset(&wire, offset);
        let raw: &[u8] = bytemuck::cast_slice(&storage);
        assert_eq!(zerocopy::view_f32(&raw[range]), None, "offset {offset}");
    }
}

#[test]
fn empty_aligned_views_are_empty_slices() {
    let storage = [0u64; 1];
    let empty = &bytemuck::cast_slice::<u64, u8>(&storage)[..0];
    if zerocopy::NATIVE_IS_WIRE {
        assert_eq!(zerocopy::view_f64(empty), Some(&[][..]));
        assert_eq!(zerocopy::view_f32(empty), Some(&[][..]));
    }
}

#[test]
fn native_is_wire_exactly_on_little_endian_targets() {
    assert_eq!(zerocopy::NATIVE_IS_WIRE, cfg!(target_endian = "little"));
}

/// `offset` into `buffer` at which a slice starts `distance` bytes past `from`, modulo 4 KiB.
fn offset_past(buffer: &[u8], from: usize, distance: usize) -> usize {
    (from + distance).wrapping_sub(buffer.as_ptr() as usize) % 4096
}

#[test]
fn conversions_give_the_same_bytes_at_every_distance_between_the_buffers() {
    // A copy whose destination lies a few bytes past its source modulo 4 KiB is made another
    // way (backwards, against 4 KiB aliasing): around the sizes and distances where the way
    // changes, every byte must still be the oracle's.
    let distances: Vec<usize> = (0..=160).chain(4096 - 64..4096).collect();
    for n in [255, 256, 257, 301, 2047, 2048, 2049] {
        let values = random_f64(n, n as u64);
        let oracle: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        let mut bytes = vec![0u8; 8 * n + 8192];
        let mut back = vec![0.0f64; n];
        for &d in &distances {
            let at = offset_past(&bytes, values.as_ptr() as usize, d);
            let dst = &mut bytes[at..at + 8 * n];
            codec::encode_into(Values::F64(&values), dst).unwrap();
            assert!(dst == oracle.as_slice(), "encode of {n} f64, {d} bytes past");
            let from = offset_past(&bytes, back.as_ptr() as usize, 4096 - d);
            bytes[from..from + 8 * n].copy_from_slice(&oracle);
            codec::decode_into(&bytes[from..from + 8 * n], ValuesMut::F64(&mut back)).unwrap();
            assert_eq!(bits64(&back), bits64(&values), "decode of {n} f64, {d} bytes past");
            back.fill(0.0);
        }
        let narrow: Vec<f32> = values.iter().map(|&x| x as f32).collect();
        let oracle32: Vec<u8> = narrow.iter().flat_map(|x| x.to_le_bytes()).collect();
        for &d in &distances {
            let at = offset_past(&bytes, narrow.as_ptr() as usize, d);
            let dst = &mut bytes[at..at + 4 * n];
            codec::encode_into(Values::F32(&narrow), dst).unwrap();
            assert!(dst == oracle32.as_slice(), "encode of {n} f32, {d} bytes past");
            let mut raw = vec![0u8; 4 * n];
            codec::decode_into(&oracle32, ValuesMut::Bytes(&mut raw)).unwrap();
            assert_eq!(raw, oracle32, "raw bytes of {n} f32");
        }
    }
}
