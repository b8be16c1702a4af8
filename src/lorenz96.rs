//! The Lorenz-96 right-hand side, evaluated in one fixed order so every implementation that
//! follows `docs/PROTOCOL.md` matches it bit for bit.

use crate::error::{Error, Result};

/// The forcing constant of the `lorenz96` handler: 8.0.
pub const FORCING: f64 = 8.0;

/// Smallest state the model is defined for.
pub const MIN_LEN: usize = 4;

/// Writes the Lorenz-96 derivative of `x` into `d`:
/// `d[i] = (x[(i+1) mod n] - x[(i-2) mod n]) * x[(i-1) mod n] - x[i] + forcing`,
/// evaluated left to right in binary64 with no fused multiply-add.
///
/// # Errors
/// [`Error::LengthMismatch`] when `d.len() != x.len()`; [`Error::InvalidArgument`] when
/// `x.len() < 4`. `d` is untouched on error.
///
/// ```
/// let x = [1.0, 2.0, 3.0, 4.0];
/// let mut d = [0.0; 4];
/// peerpipe::lorenz96::rhs(&x, 8.0, &mut d).unwrap();
/// assert_eq!(d[0], (2.0 - 3.0) * 4.0 - 1.0 + 8.0);
/// ```
pub fn rhs(x: &[f64], forcing: f64, d: &mut [f64]) -> Result<()> {
    let n = x.len();
    if d.len() != n {
        return Err(Error::LengthMismatch {
            what: "lorenz96 derivative",
            expected: n as u64,
            found: d.len() as u64,
        });
    }
    if n < MIN_LEN {
        return Err(Error::InvalidArgument {
            what: "lorenz96 state",
            reason: format!("needs at least {MIN_LEN} elements, found {n}"),
        });
    }
    // The wrapped ends, then the interior without index arithmetic; the same operations in
    // the same order either way.
    for i in [0, 1, n - 1] {
        d[i] = term(x[(i + 1) % n], x[(i + n - 2) % n], x[(i + n - 1) % n], x[i], forcing);
    }
    for i in 2..n - 1 {
        d[i] = term(x[i + 1], x[i - 2], x[i - 1], x[i], forcing);
    }
    Ok(())
}

/// `(next - back2) * back1 - here + forcing`, left to right. Rust never contracts these into a
/// fused multiply-add.
#[inline(always)]
fn term(next: f64, back2: f64, back1: f64, here: f64, forcing: f64) -> f64 {
    (next - back2) * back1 - here + forcing
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The formula as written in the protocol, index arithmetic and all: the oracle.
    fn reference(x: &[f64], forcing: f64) -> Vec<f64> {
        let n = x.len();
        (0..n)
            .map(|i| (x[(i + 1) % n] - x[(i + n - 2) % n]) * x[(i + n - 1) % n] - x[i] + forcing)
            .collect()
    }

    #[test]
    fn matches_the_protocol_formula_bit_for_bit() {
        for n in [4, 5, 7, 500] {
            let x: Vec<f64> = (0..n).map(|i| ((i * 7919) % 101) as f64 / 7.0 - 6.3).collect();
            let mut d = vec![0.0; n];
            rhs(&x, FORCING, &mut d).unwrap();
            let expected = reference(&x, FORCING);
            assert_eq!(
                d.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                expected.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "n = {n}"
            );
        }
    }

    #[test]
    fn rejects_short_states_and_mismatched_buffers() {
        assert!(matches!(
            rhs(&[1.0; 3], FORCING, &mut [0.0; 3]),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            rhs(&[1.0; 4], FORCING, &mut [0.0; 5]),
            Err(Error::LengthMismatch { .. })
        ));
    }
}
