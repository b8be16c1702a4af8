//! Why a part table was refused: one [`TableFault`] per check of docs/PROTOCOL.md §15.

use std::fmt;

use super::part_layout::{MAX_NAME_LEN, MAX_PARTS, PREAMBLE_LEN};
use super::part_shape::PartDtype;

/// Why a part table was refused: one variant per check of docs/PROTOCOL.md §15 (T1–T10),
/// each naming what it found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TableFault {
    /// T1: the payload is shorter than the 8-byte preamble.
    ShortPreamble {
        /// The payload's length.
        payload: u64,
    },
    /// T2: more than [`MAX_PARTS`] parts.
    TooManyParts {
        /// The part count found.
        parts: u32,
    },
    /// T3: a name longer than [`MAX_NAME_LEN`].
    NameTooLong {
        /// The name length found.
        len: u16,
    },
    /// T4: the preamble's reserved bytes are not zero.
    Reserved {
        /// Bytes 6–7, as a little-endian u16.
        found: u16,
    },
    /// T5: preamble, name and descriptors do not fit in the payload.
    TableTooLong {
        /// The table's length.
        table: u64,
        /// The payload's length.
        payload: u64,
    },
    /// T6: the name has a byte outside the allowed set.
    BadName {
        /// Its index in the name.
        at: usize,
        /// The byte.
        byte: u8,
    },
    /// T6: the name's padding is not zero.
    NamePadding {
        /// Its index in the padding.
        at: usize,
        /// The byte.
        byte: u8,
    },
    /// T7: a descriptor names an unknown dtype.
    UnknownDtype {
        /// The part's index.
        part: usize,
        /// The dtype byte.
        found: u8,
    },
    /// T7: a descriptor's flags byte is not zero.
    DescriptorFlags {
        /// The part's index.
        part: usize,
        /// Byte 1 of the descriptor.
        found: u8,
    },
    /// T7: a descriptor's reserved bytes are not zero.
    DescriptorReserved {
        /// The part's index.
        part: usize,
        /// Bytes 2–3 of the descriptor, little-endian.
        found: u16,
    },
    /// T7: a matrix whose element count is not a multiple of its columns.
    Ragged {
        /// The part's index.
        part: usize,
        /// Its element count.
        count: u64,
        /// Its columns.
        cols: u32,
    },
    /// T7: `count × width` overflows a u64.
    CountOverflow {
        /// The part's index.
        part: usize,
        /// Its element count.
        count: u64,
        /// Its dtype.
        dtype: PartDtype,
    },
    /// T7: the part (with its padding) ends past the payload.
    PastEnd {
        /// The part's index.
        part: usize,
        /// Its length in bytes.
        bytes: u64,
        /// Where it starts in the payload.
        offset: u64,
        /// The payload's length.
        payload: u64,
    },
    /// T8: bytes after the last part.
    Trailing {
        /// How many.
        bytes: u64,
    },
    /// T9: a part's padding is not zero.
    PartPadding {
        /// The part's index.
        part: usize,
        /// Index of the byte within the padding.
        at: usize,
        /// The byte.
        byte: u8,
    },
    /// T10: a reply names a function.
    NamedReply {
        /// The name (lossily decoded).
        name: String,
    },
}

impl fmt::Display for TableFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableFault::ShortPreamble { payload } => write!(
                f,
                "payload of {payload} bytes is shorter than the {PREAMBLE_LEN}-byte preamble"
            ),
            TableFault::TooManyParts { parts } => write!(f, "{parts} parts, at most {MAX_PARTS}"),
            TableFault::NameTooLong { len } => {
                write!(f, "function name of {len} bytes, at most {MAX_NAME_LEN}")
            }
            TableFault::Reserved { found } => {
                write!(f, "reserved bytes 6-7 are {found:#06x}, expected 0")
            }
            TableFault::TableTooLong { table, payload } => {
                write!(f, "table of {table} bytes does not fit in a payload of {payload}")
            }
            TableFault::BadName { at, byte } => write!(
                f,
                "function name has byte {byte:#04x} at {at}: expected letters, digits, '_', '.', \
                 ':' or '-'"
            ),
            TableFault::NamePadding { at, byte } => {
                write!(f, "nonzero padding after the function name: byte {at} is {byte:#04x}")
            }
            TableFault::UnknownDtype { part, found } => write!(
                f,
                "part {part} has dtype {found}: expected 0 (bytes), 1 (f32), 2 (f64) or 3 (i64)"
            ),
            TableFault::DescriptorFlags { part, found } => {
                write!(f, "part {part} has flags {found:#04x}, expected 0")
            }
            TableFault::DescriptorReserved { part, found } => {
                write!(f, "part {part}: reserved bytes 2-3 are {found:#06x}, expected 0")
            }
            TableFault::Ragged { part, count, cols } => {
                write!(f, "part {part} has {count} elements, not a multiple of its {cols} columns")
            }
            TableFault::CountOverflow { part, count, dtype } => write!(
                f,
                "part {part} length overflows u64: count {count} × {} bytes",
                dtype.width()
            ),
            TableFault::PastEnd { part, bytes, offset, payload } => write!(
                f,
                "part {part} of {bytes} bytes at offset {offset} ends past the payload of \
                 {payload} bytes"
            ),
            TableFault::Trailing { bytes } => write!(f, "{bytes} bytes after the last part"),
            TableFault::PartPadding { part, at, byte } => {
                write!(f, "nonzero padding after part {part}: byte {at} is {byte:#04x}")
            }
            TableFault::NamedReply { name } => write!(f, "a reply names function {name:?}"),
        }
    }
}
