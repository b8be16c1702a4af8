//! PARTS payloads (docs/PROTOCOL.md §15): several typed parts in one message — the time, a
//! state, parameters, a matrix — and, in a request, the name of the function it calls.
//!
//! Pure: bytes in, values out. [`parse`] validates a whole part table (checks T1–T10 of the
//! protocol) before anything reads a part's values, allocating nothing; [`Table`] writes
//! one. [`Part`] and [`PartMut`] are a caller's slices to send and to receive into;
//! [`PartsOut`] is the reusable buffer a server's function writes its reply into.
//!
//! One concern per file: `table` (the table checked and written) and `values` (the caller's
//! parts). The table's vocabulary — its limits, the padding and the rule of a function's name,
//! [`PartDtype`] and [`Shape`], and [`TableFault`] (why a table was refused) — lives below
//! both this module and [`crate::error`], whose variants name them (in the crate's private
//! `wire` module), so that neither imports the other back. This file only hands them all on.
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

mod table;
mod values;

pub use crate::wire::{
    DESCRIPTOR_LEN, MAX_FUNCTIONS, MAX_NAME_LEN, MAX_PARTS, PREAMBLE_LEN, PartDtype, Shape,
    TableFault, check_function_name, describe_shapes, pad8,
};
pub(crate) use table::{ParseMemo, Slot, is_reply_table};
pub use table::{Parsed, PartRef, Role, Table, parse, payload_len};
pub use values::{Part, PartMut, PartsOut};

#[cfg(test)]
mod tests;
