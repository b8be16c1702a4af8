//! The header's two one-byte enums, [`Kind`] and [`Dtype`], below both [`crate::error`] (whose
//! variants name them) and [`crate::frame`] (which parses them, returning those errors): types
//! both sides need live here, so neither imports the other back. Reached through
//! `peerpipe::frame::{Kind, Dtype}`; parsing a byte (`Kind::from_byte`, `Dtype::from_byte`) is
//! in `frame`, next to the rest of the header's validation.
//!
//! The part table's vocabulary (docs/PROTOCOL.md §15) sits here for the same reason, below
//! [`crate::error`] and [`crate::parts`]: `part_layout` (the limits, the padding, the rule of a
//! function's name), `part_shape` (`PartDtype`, `Shape`) and `table_fault` (`TableFault`, why
//! a table was refused, which an error carries). Reached through `peerpipe::parts`.

use std::fmt;

mod part_layout;
mod part_shape;
mod table_fault;

pub(crate) use part_layout::name_byte;
pub use part_layout::{
    DESCRIPTOR_LEN, MAX_FUNCTIONS, MAX_NAME_LEN, MAX_PARTS, PREAMBLE_LEN, check_function_name, pad8,
};
pub use part_shape::{PartDtype, Shape, describe_shapes};
pub use table_fault::TableFault;

/// What a frame is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// Opens a conversation; payload is `key=value` lines.
    Hello = 1,
    /// A request or reply carrying an array.
    Data = 2,
    /// A rejected request or a protocol violation; payload is a UTF-8 message.
    Error = 3,
    /// Ends a conversation.
    Bye = 4,
    /// A request or reply of several typed parts, a request naming its function
    /// (docs/PROTOCOL.md §15).
    Parts = 5,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Hello => "HELLO",
            Kind::Data => "DATA",
            Kind::Error => "ERROR",
            Kind::Bye => "BYE",
            Kind::Parts => "PARTS",
        })
    }
}

/// The element type of a payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Dtype {
    /// Raw bytes (`u8`).
    Bytes = 0,
    /// IEEE-754 binary32, little-endian.
    F32 = 1,
    /// IEEE-754 binary64, little-endian.
    F64 = 2,
}

impl Dtype {
    /// Width of one element in bytes: 1, 4 or 8.
    pub const fn width(self) -> u64 {
        match self {
            Dtype::Bytes => 1,
            Dtype::F32 => 4,
            Dtype::F64 => 8,
        }
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dtype::Bytes => "bytes",
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
        })
    }
}
