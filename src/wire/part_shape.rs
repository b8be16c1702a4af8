//! What one part is: its element type ([`PartDtype`]) and its [`Shape`], and how a message
//! names a list of shapes.

use std::fmt;

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
