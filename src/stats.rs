//! Order statistics of nanosecond samples: one histogram shape and one quantile rule, so that
//! every figure is computed the same way wherever it is printed. In the library because a
//! public API needs it: [`crate::rhs::RhsStats`] keeps a [`crate::rhs::RemoteRhs`]'s round
//! trips and overheads in this histogram shape, read at its quantiles; the `peer` command's
//! report, pairing and soak use the same two functions, so that their figures and a library
//! user's agree.

use hdrhistogram::Histogram;

/// A histogram for nanosecond samples from 1 ns to 1 hour with 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("constant bounds are valid")
}

/// The nearest-rank `q`-quantile of sorted values; 0 for none. `q` is clamped to `0..=1`.
///
/// ```
/// use peerpipe::stats::nearest_rank;
/// let v = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
/// assert_eq!(nearest_rank(&v, 0.5), 5);
/// assert_eq!(nearest_rank(&v, 0.99), 10);
/// assert_eq!(nearest_rank(&v, 0.0), 1);
/// ```
pub fn nearest_rank(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
