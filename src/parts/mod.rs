//! PARTS payloads (docs/PROTOCOL.md §15): several typed parts in one message — the time, a
//! state, parameters, a matrix — and, in a request, the name of the function it calls.
//!
//! Pure: bytes in, values out. [`parse`] validates a whole part table (checks T1–T10 of the
//! protocol) before anything reads a part's values, allocating nothing; [`Table`] writes
//! one. [`Part`] and [`PartMut`] are a caller's slices to send and to receive into;
//! [`PartsOut`] is the reusable buffer a server's function writes its reply into.
//!
//! ```
//! use peerpipe::parts::{self, Part, Role, Shape, PartDtype, Table};
//! let (t, y) = (0.5, [1.0, 2.0]);
//! let inputs = [Part::f64(std::slice::from_ref(&t)), Part::f64(&y)];
//! let mut table = Table::default();
//! table.write("rhs", inputs.iter().map(Part::shape))?;
//! let mut payload = table.as_bytes().to_vec();
//! for part in &inputs {
//!     payload.extend_from_slice(part.wire_bytes().unwrap()); // f64 parts need no padding
//! }
//! let view = parts::parse(&payload, Role::Request)?;
//! assert_eq!(view.function(), "rhs");
//! assert_eq!(view.get(1).unwrap().shape(), Shape::vector(PartDtype::F64, 2));
//! assert_eq!(view.get(1).unwrap().f64_view(), Some(&y[..]));
//! # Ok::<(), peerpipe::Error>(())
//! ```

use std::fmt;

mod table;
mod values;

pub(crate) use table::{ParseMemo, is_reply_table};
pub use table::{Parsed, PartRef, Role, Table, TableFault, parse, payload_len};
pub use values::{Part, PartMut, PartsOut};

/// Most parts in one PARTS frame: 64.
pub const MAX_PARTS: usize = 64;
/// Longest function name, in bytes: 64.
pub const MAX_NAME_LEN: usize = 64;
/// Bytes before the name: part count (u32), name length (u16), reserved (u16).
pub const PREAMBLE_LEN: usize = 8;
/// Bytes of one part descriptor.
pub const DESCRIPTOR_LEN: usize = 16;
/// Most functions one server announces (the HELLO's `functions=` line stays far below its
/// 64 KiB cap: 256 × 65 bytes).
pub const MAX_FUNCTIONS: usize = 256;

/// The element type of one part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PartDtype {
    /// Raw bytes (`u8`).
    Bytes = 0,
    /// IEEE-754 binary32, little-endian.
    F32 = 1,
    /// IEEE-754 binary64, little-endian.
    F64 = 2,
    /// Two's-complement 64-bit integers, little-endian: indices and counts.
    I64 = 3,
}

impl PartDtype {
    /// Width of one element in bytes.
    pub const fn width(self) -> u64 {
        match self {
            PartDtype::Bytes => 1,
            PartDtype::F32 => 4,
            PartDtype::F64 | PartDtype::I64 => 8,
        }
    }

    /// The dtype of a descriptor byte, `None` for an unknown one.
    pub const fn from_byte(byte: u8) -> Option<PartDtype> {
        match byte {
            0 => Some(PartDtype::Bytes),
            1 => Some(PartDtype::F32),
            2 => Some(PartDtype::F64),
            3 => Some(PartDtype::I64),
            _ => None,
        }
    }
}

impl fmt::Display for PartDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PartDtype::Bytes => "bytes",
            PartDtype::F32 => "f32",
            PartDtype::F64 => "f64",
            PartDtype::I64 => "i64",
        })
    }
}

/// What one part is: its dtype, its element count and, for a row-major matrix, its columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    /// The element type.
    pub dtype: PartDtype,
    /// The number of elements.
    pub count: u64,
    /// 0 for a vector; otherwise the columns of a row-major matrix of `count / cols` rows.
    pub cols: u32,
}

impl Shape {
    /// A vector of `count` elements.
    pub const fn vector(dtype: PartDtype, count: u64) -> Shape {
        Shape { dtype, count, cols: 0 }
    }

    /// A row-major `rows × cols` matrix; `None` when `cols` is 0, does not fit in a u32, or
    /// `rows × cols` overflows.
    pub fn matrix(dtype: PartDtype, rows: u64, cols: u64) -> Option<Shape> {
        let cols32 = u32::try_from(cols).ok().filter(|&c| c > 0)?;
        Some(Shape { dtype, count: rows.checked_mul(cols)?, cols: cols32 })
    }

    /// The number of rows of a matrix (`count / cols`), `None` for a vector.
    pub fn rows(&self) -> Option<u64> {
        (self.cols > 0).then(|| self.count / u64::from(self.cols))
    }

    /// The part's length on the wire without padding, `None` when it overflows a u64.
    pub fn byte_len(&self) -> Option<u64> {
        self.count.checked_mul(self.dtype.width())
    }
}

/// `f64[500]` for a vector, `f64[3x3]` for a matrix.
impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rows() {
            Some(rows) => write!(f, "{}[{rows}x{}]", self.dtype, self.cols),
            None => write!(f, "{}[{}]", self.dtype, self.count),
        }
    }
}

/// A list of shapes as messages name it: `1 part: f64[500]`, `3 parts: f64[1], f64[500], …`.
pub fn describe_shapes(shapes: impl ExactSizeIterator<Item = Shape>) -> String {
    let n = shapes.len();
    let list: Vec<String> = shapes.map(|s| s.to_string()).collect();
    match n {
        0 => "0 parts".to_owned(),
        1 => format!("1 part: {}", list[0]),
        _ => format!("{n} parts: {}", list.join(", ")),
    }
}

/// Whether `name` may name a function: 1 to [`MAX_NAME_LEN`] bytes of ASCII letters, digits
/// and `_ . : -`.
///
/// # Errors
/// The reason, for an [`crate::Error::InvalidArgument`].
pub fn check_function_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a function name has at least 1 character".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!("{name:?} has {} bytes, at most {MAX_NAME_LEN}", name.len()));
    }
    match name.bytes().position(|b| !name_byte(b)) {
        None => Ok(()),
        Some(at) => Err(format!(
            "{name:?} has {:?} at byte {at}: a function name has only ASCII letters, digits and \
             '_', '.', ':', '-'",
            name[at..].chars().next().unwrap_or('?')
        )),
    }
}

/// A byte allowed in a function name.
pub(crate) const fn name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-')
}

/// Zero bytes after `len` bytes up to the next multiple of 8: the padding after a name or a
/// part.
pub const fn pad8(len: u64) -> u64 {
    (8 - len % 8) % 8
}

#[cfg(test)]
mod tests;
