//! A small deterministic random number generator: xoshiro256** seeded through splitmix64.
//!
//! Fast, the same sequence on every target, and no dependency: `peer soak` draws its arrays
//! from it, the report its order of measurement and [`crate::pairing`] its bootstrap, and
//! each prints or fixes its seed so that a run can be replayed. Not for cryptography.

use std::time::{SystemTime, UNIX_EPOCH};

/// One step of splitmix64: advances `state` and returns the next output.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A seed from the clock and the process id, for runs that were given none.
pub fn seed_from_clock() -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    splitmix64(&mut (nanos as u64 ^ u64::from(std::process::id()).rotate_left(32)))
}

/// xoshiro256**, seeded through splitmix64.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// The generator for `seed`; equal seeds give equal sequences.
    pub fn new(seed: u64) -> Rng {
        let mut state = seed;
        Rng { s: [(); 4].map(|()| splitmix64(&mut state)) }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (`n > 0`), by multiply-shift; the bias is below 2^-32 for the `n`
    /// used here.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `1 / one_in`.
    pub fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_seeds_give_equal_sequences() {
        let (mut a, mut b) = (Rng::new(42), Rng::new(42));
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        assert!(xs.iter().all(|&x| x == b.next_u64()));
        assert_ne!(Rng::new(43).next_u64(), xs[0]);
    }

    #[test]
    fn shuffles_are_permutations_and_every_order_occurs() {
        let mut rng = Rng::new(7);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let mut v = [0, 1, 2];
            rng.shuffle(&mut v);
            let mut sorted = v;
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2]);
            seen.insert(v);
        }
        assert_eq!(seen.len(), 6, "all 3! orders appear in 200 shuffles");
    }
}
