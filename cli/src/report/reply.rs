//! What the report's rows send and what their servers must answer: the test values of a
//! request, the reply each handler is expected to give ([`Expectation`]), and the check of a
//! reply bit for bit ([`verify`]).

use peerpipe::error::{Error, Result};

/// What the server is expected to answer, by its HELLO's handler name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expectation {
    /// The reply equals the request (`echo`, `echo-raw`).
    Echo,
    /// The reply is the Lorenz-96 derivative of the request (`lorenz96`).
    Lorenz96,
    /// Unknown handler: replies are received but not checked.
    Unchecked,
}

impl Expectation {
    /// The expectation for a handler name.
    pub fn for_handler(name: Option<&str>) -> Expectation {
        match name {
            Some("echo" | "echo-raw") => Expectation::Echo,
            Some("lorenz96") => Expectation::Lorenz96,
            _ => Expectation::Unchecked,
        }
    }
}

/// Deterministic test values. With `edge_values`, the first elements are NaN payloads, -0.0,
/// subnormals and infinities; the rest are pseudo-random in [-10, 10).
pub fn test_values(len: usize, seed: u64, edge_values: bool) -> Vec<f64> {
    const EDGES: [u64; 8] = [
        0x7ff8_0000_0000_0001, // quiet NaN with payload
        0x7ff0_0000_0000_0001, // signalling NaN
        0x8000_0000_0000_0000, // -0.0
        0x0000_0000_0000_0001, // smallest subnormal
        0x000f_ffff_ffff_ffff, // largest subnormal
        0x7ff0_0000_0000_0000, // +inf
        0xfff0_0000_0000_0000, // -inf
        0x7fef_ffff_ffff_ffff, // f64::MAX
    ];
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|i| {
            if edge_values && i < EDGES.len() {
                return f64::from_bits(EDGES[i]);
            }
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 * 20.0 - 10.0
        })
        .collect()
}

/// Checks a reply bit for bit.
///
/// # Errors
/// [`Error::Corrupted`] naming the round trip, element and both bit patterns;
/// [`Error::LengthMismatch`] when the lengths differ.
pub fn verify(expected: &[f64], got: &[f64], round_trip: u64) -> Result<()> {
    match expected.iter().zip(got).position(|(e, g)| e.to_bits() != g.to_bits()) {
        None if expected.len() == got.len() => Ok(()),
        None => Err(Error::LengthMismatch {
            what: "reply",
            expected: expected.len() as u64,
            found: got.len() as u64,
        }),
        Some(at) => Err(Error::Corrupted {
            what: "reply",
            detail: format!(
                "round trip {round_trip}, element {at}: expected bits {:#018x}, found {:#018x}",
                expected[at].to_bits(),
                got[at].to_bits()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_names_the_first_differing_element() {
        let err = verify(&[1.0, 2.0], &[1.0, 3.0], 7).unwrap_err().to_string();
        assert!(err.contains("round trip 7, element 1"), "{err}");
        assert!(verify(&[f64::NAN], &[f64::NAN], 0).is_ok());
        assert!(verify(&[0.0], &[-0.0], 0).is_err());
    }
}
