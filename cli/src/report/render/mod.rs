//! Rendering a report as text: the summary first, then an aligned table.
//!
//! The summary comes first: per size, what a call costs beyond the server's own time, on the row
//! [`summary`](crate::report::summary) picks, the budget judged on it, and where each size's p50
//! round trip goes ([`breakdown`](crate::report::summary::breakdown)). The table is grouped by
//! placement and wait strategy, then by dtype and element count; inside each group the raw-bytes
//! baseline comes first, then `echo-raw` (the server converts nothing) and `echo` (both sides
//! convert) on each path, so the cost of every extra conversion reads straight down a column.
//!
//! One concern per file: `summary.rs` writes the summary, with `crossover.rs`'s lines on where
//! another transport beats the pipe; `table.rs` the table (its columns are the report's
//! `columns.rs`), `notes.rs` the notes on the machine under it (with `states.rs`'s note on the
//! machine's states), `skipped.rs` the rows not measured; `order.rs` ranks sections and rows for
//! all of them. This file only names them.

mod crossover;
mod notes;
mod order;
mod skipped;
mod states;
mod summary;
mod table;

pub use crossover::{Crossover, crossovers};
pub use notes::{
    CONTENDED_NOTE_SHARE, SPEED_CHANGE_FACTOR, contention, machine_state, speed_change,
};
pub use skipped::skipped;
pub use states::{row_states_note, states_note};
pub use summary::summary;
pub use table::table;
