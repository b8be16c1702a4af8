//! Checking a reply bit for bit against what was sent.

use std::fmt;

use peerpipe::codec::Values;

// Verification

/// What is sent, and as what it travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// f64 as f64.
    F64,
    /// f32 as f32.
    F32,
    /// f64 narrowed to f32 on the wire, widened back into f64.
    F64AsF32,
    /// Raw bytes.
    Bytes,
}

impl ValueKind {
    /// Every kind, in report order.
    pub const ALL: [ValueKind; 4] =
        [ValueKind::F64, ValueKind::F32, ValueKind::F64AsF32, ValueKind::Bytes];

    /// `f64`, `f32`, `f64-as-f32` or `bytes`.
    pub fn name(&self) -> &'static str {
        match self {
            ValueKind::F64 => "f64",
            ValueKind::F32 => "f32",
            ValueKind::F64AsF32 => "f64-as-f32",
            ValueKind::Bytes => "bytes",
        }
    }

    /// Bytes per element on the wire.
    pub fn wire_width(&self) -> usize {
        match self {
            ValueKind::F64 => 8,
            ValueKind::F32 | ValueKind::F64AsF32 => 4,
            ValueKind::Bytes => 1,
        }
    }

    /// Bytes per element in the caller's buffers.
    pub(super) fn memory_width(&self) -> usize {
        match self {
            ValueKind::F64 | ValueKind::F64AsF32 => 8,
            ValueKind::F32 => 4,
            ValueKind::Bytes => 1,
        }
    }

    pub(super) fn index(&self) -> usize {
        match self {
            ValueKind::F64 => 0,
            ValueKind::F32 => 1,
            ValueKind::F64AsF32 => 2,
            ValueKind::Bytes => 3,
        }
    }
}

impl fmt::Display for ValueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a reply differs from what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The reply has another number of elements.
    Length {
        /// Elements sent.
        expected: usize,
        /// Elements in the reply.
        found: usize,
    },
    /// The reply is of another type than the request can come back as.
    Shape {
        /// What was sent, e.g. `f64-as-f32`.
        sent: &'static str,
        /// What the reply is, e.g. `f32`.
        reply: &'static str,
    },
    /// The first element whose bits differ (bytes are compared one by one).
    Bits {
        /// Its index.
        element: usize,
        /// The expected bit pattern.
        expected: u64,
        /// The bit pattern in the reply.
        found: u64,
        /// How many elements differ in all.
        differing: usize,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Length { expected, found } => {
                write!(f, "expected {expected} elements, found {found}")
            }
            Mismatch::Shape { sent, reply } => write!(f, "sent {sent}, reply is {reply}"),
            Mismatch::Bits { element, expected, found, differing } => write!(
                f,
                "element {element}: expected bits {expected:#x}, found {found:#x} \
                 ({differing} elements differ)"
            ),
        }
    }
}

fn values_name(values: &Values<'_>) -> &'static str {
    match values {
        Values::Bytes(_) => "bytes",
        Values::F32(_) => "f32",
        Values::F64(_) => "f64",
        Values::F64AsF32(_) => "f64-as-f32",
    }
}

/// The first difference between `expected` and `found` bit patterns, if any.
fn compare_bits(expected: impl ExactSizeIterator<Item = u64>, found: &[u64]) -> Option<Mismatch> {
    if expected.len() != found.len() {
        return Some(Mismatch::Length { expected: expected.len(), found: found.len() });
    }
    let mut first = None;
    let mut differing = 0;
    for (element, (e, &g)) in expected.zip(found).enumerate() {
        if e != g {
            differing += 1;
            first.get_or_insert((element, e, g));
        }
    }
    first.map(|(element, expected, found)| Mismatch::Bits { element, expected, found, differing })
}

/// Checks an echo's reply bit for bit against what was sent: f64, f32 and bytes must come back
/// unchanged; f64 sent as [`Values::F64AsF32`] must come back (as [`Values::F64`]) as
/// `x as f32 as f64`. NaN payloads, signalling NaNs and the sign of zero count.
///
/// Returns `None` when the reply is exact, else the first difference.
///
/// ```
/// use peerpipe::codec::Values;
/// use peerpipe_cli::soak::{verify, Mismatch};
/// let sent = [1.0, -0.0, f64::from_bits(0x7ff0_0000_0000_0001)];
/// assert_eq!(verify(Values::F64(&sent), Values::F64(&sent)), None);
/// let reply = [1.0, 0.0, sent[2]];
/// assert!(matches!(
///     verify(Values::F64(&sent), Values::F64(&reply)),
///     Some(Mismatch::Bits { element: 1, differing: 1, .. })
/// ));
/// let narrowed = [1.0, -0.0, f64::from_bits(0x7ff0_0000_0000_0001) as f32 as f64];
/// assert_eq!(verify(Values::F64AsF32(&sent), Values::F64(&narrowed)), None);
/// ```
pub fn verify(sent: Values<'_>, reply: Values<'_>) -> Option<Mismatch> {
    match (sent, reply) {
        (Values::F64(s), Values::F64(r)) => {
            compare_bits(s.iter().map(|x| x.to_bits()), bytemuck::cast_slice(r))
        }
        (Values::F64AsF32(s), Values::F64(r)) => {
            compare_bits(s.iter().map(|&x| (x as f32 as f64).to_bits()), bytemuck::cast_slice(r))
        }
        (Values::F32(s), Values::F32(r)) => {
            if s.len() != r.len() {
                return Some(Mismatch::Length { expected: s.len(), found: r.len() });
            }
            let found: Vec<u64> = r.iter().map(|x| u64::from(x.to_bits())).collect();
            compare_bits(s.iter().map(|x| u64::from(x.to_bits())), &found)
        }
        (Values::Bytes(s), Values::Bytes(r)) => {
            if s.len() != r.len() {
                return Some(Mismatch::Length { expected: s.len(), found: r.len() });
            }
            let found: Vec<u64> = r.iter().map(|&b| u64::from(b)).collect();
            compare_bits(s.iter().map(|&b| u64::from(b)), &found)
        }
        (sent, reply) => {
            Some(Mismatch::Shape { sent: values_name(&sent), reply: values_name(&reply) })
        }
    }
}

/// [`verify()`] without allocating, for the hot loop: the slow, describing path runs only when
/// the fast comparison finds a difference.
pub(super) fn replies_match(sent: Values<'_>, reply: Values<'_>) -> bool {
    match (sent, reply) {
        (Values::F64(s), Values::F64(r)) => {
            bytemuck::cast_slice::<f64, u64>(s) == bytemuck::cast_slice::<f64, u64>(r)
        }
        (Values::F64AsF32(s), Values::F64(r)) => {
            s.len() == r.len()
                && s.iter().zip(r).all(|(&x, y)| (x as f32 as f64).to_bits() == y.to_bits())
        }
        (Values::F32(s), Values::F32(r)) => {
            bytemuck::cast_slice::<f32, u32>(s) == bytemuck::cast_slice::<f32, u32>(r)
        }
        (Values::Bytes(s), Values::Bytes(r)) => s == r,
        _ => false,
    }
}
