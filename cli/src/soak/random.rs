//! The random bit patterns and sizes a soak sends.

use crate::rng::Rng;
use peerpipe::codec::{F32_EDGE_BITS, F64_EDGE_BITS};

// Random values

const F64_EXP: u64 = 0x7ff0_0000_0000_0000;
const F64_MANT: u64 = 0x000f_ffff_ffff_ffff;
pub(super) const F64_SIGN: u64 = 1 << 63;
const F32_EXP: u32 = 0x7f80_0000;
const F32_MANT: u32 = 0x007f_ffff;
pub(super) const F32_SIGN: u32 = 1 << 31;

/// One random f64 bit pattern: 1/8 from [`F64_EDGE_BITS`], 1/16 a random subnormal, 1/16 a
/// random NaN (quiet or signalling, any payload, either sign), 3/8 arbitrary bits, the rest
/// ordinary numbers in [-1000, 1000). Returns the bits and whether they were chosen as special.
pub(super) fn random_f64_bits(rng: &mut Rng) -> (u64, bool) {
    let r = rng.next_u64();
    let sign = r & F64_SIGN;
    match r & 15 {
        0 | 1 => (F64_EDGE_BITS[((r >> 8) % F64_EDGE_BITS.len() as u64) as usize], true),
        2 => (sign | ((r >> 4) & F64_MANT), true),
        3 => (sign | F64_EXP | ((r >> 4) & F64_MANT).max(1), true),
        4..=9 => (rng.next_u64(), false),
        _ => (((r >> 11) as f64 / (1u64 << 53) as f64 * 2000.0 - 1000.0).to_bits(), false),
    }
}

/// One random f32 bit pattern, in the proportions of [`random_f64_bits`].
pub(super) fn random_f32_bits(rng: &mut Rng) -> (u32, bool) {
    let r = rng.next_u64();
    let sign = (r >> 32) as u32 & F32_SIGN;
    match r & 15 {
        0 | 1 => (F32_EDGE_BITS[((r >> 8) % F32_EDGE_BITS.len() as u64) as usize], true),
        2 => (sign | ((r >> 4) as u32 & F32_MANT), true),
        3 => (sign | F32_EXP | ((r >> 4) as u32 & F32_MANT).max(1), true),
        4..=9 => ((r >> 32) as u32, false),
        _ => (((r >> 40) as f32 / (1u32 << 24) as f32 * 2000.0 - 1000.0).to_bits(), false),
    }
}

/// A size in `0..=max`: log-uniform (a bit length drawn uniformly, then a value of that bit
/// length), so small sizes dominate the count while the largest still occur; 1 in 32 is
/// exactly `max`.
pub(super) fn skewed_len(rng: &mut Rng, max: usize) -> usize {
    if max == 0 {
        return 0;
    }
    if rng.chance(32) {
        return max;
    }
    let bits = usize::BITS - max.leading_zeros();
    let b = rng.below(u64::from(bits) + 1) as u32;
    if b == 0 {
        return 0;
    }
    let lo = 1usize << (b - 1);
    let hi = ((1usize << b) - 1).min(max);
    lo + rng.below((hi - lo + 1) as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_cover_zero_small_and_the_maximum_and_never_exceed_it() {
        let mut rng = Rng::new(1);
        let max = 1 << 20;
        let sizes: Vec<usize> = (0..100_000).map(|_| skewed_len(&mut rng, max)).collect();
        assert!(sizes.iter().all(|&n| n <= max));
        assert!(sizes.contains(&0));
        assert!(sizes.contains(&max));
        let small = sizes.iter().filter(|&&n| n <= 1024).count();
        let large = sizes.iter().filter(|&&n| n >= max / 2).count();
        assert!(small > sizes.len() / 3, "small sizes dominate: {small}");
        assert!(large > sizes.len() / 40, "large sizes occur: {large}");
        for max in [0, 1, 2, 3, 7, 1000] {
            assert!((0..1000).all(|_| skewed_len(&mut rng, max) <= max));
        }
    }

    #[test]
    fn random_values_include_every_kind_of_special() {
        let mut rng = Rng::new(9);
        let values: Vec<f64> =
            (0..20_000).map(|_| f64::from_bits(random_f64_bits(&mut rng).0)).collect();
        let snan = |x: &f64| x.is_nan() && x.to_bits() & (1 << 51) == 0;
        assert!(values.iter().any(snan));
        assert!(values.iter().any(|x| x.is_nan() && !snan(x)));
        assert!(values.iter().any(|x| x.to_bits() == F64_SIGN));
        assert!(values.iter().any(|x| x.is_subnormal()));
        assert!(values.iter().any(|x| x.is_infinite() && x.is_sign_negative()));
        let floats: Vec<f32> =
            (0..20_000).map(|_| f32::from_bits(random_f32_bits(&mut rng).0)).collect();
        assert!(floats.iter().any(|x| x.is_nan() && x.to_bits() & (1 << 22) == 0));
        assert!(floats.iter().any(|x| x.is_subnormal()));
        assert!(floats.iter().any(|x| x.to_bits() == F32_SIGN));
    }
}
