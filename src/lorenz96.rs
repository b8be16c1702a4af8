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
    for (i, di) in d.iter_mut().enumerate() {
        let next = x[(i + 1) % n];
        let back2 = x[(i + n - 2) % n];
        let back1 = x[(i + n - 1) % n];
        // Written as separate operations: Rust never contracts these into an FMA.
        let product = (next - back2) * back1;
        *di = product - x[i] + forcing;
    }
    Ok(())
}
