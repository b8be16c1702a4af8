//! Rendering a report as text: the answer, an aligned table and a verdict in plain words.
//!
//! The answer comes first: per size, what a call costs beyond the server's own time, on the row
//! [`answer`](crate::report::answer) picks. The table is grouped by placement and wait strategy,
//! then by dtype and element count; inside each group the raw-bytes baseline comes first, then
//! `echo-raw` (the server converts nothing) and `echo` (both sides convert) on each path, so the
//! cost of every extra conversion reads straight down a column. The verdict splits each size's p50
//! round trip into converting, moving bytes and waiting ([`breakdown`]), names the fastest
//! configuration and holds it against the budget.
//!
//! One concern per file: `answer.rs` writes the answer and the rows not measured,
//! `table.rs` the table (its columns are the report's `columns.rs`), `notes.rs` the notes on
//! the machine under it (with `states.rs`'s note on the machine's states), `verdict.rs` the
//! verdict and the crossovers; `order.rs` ranks sections and rows for all of them. This file
//! only names them.

mod answer;
mod notes;
mod order;
mod states;
mod table;
mod verdict;

pub use answer::{answer, skipped};
pub use notes::{
    CONTENDED_NOTE_SHARE, SPEED_CHANGE_FACTOR, contention, machine_state, speed_change,
};
pub use states::{row_states_note, states_note};
pub use table::table;
pub use verdict::{BELOW_FLOOR, Breakdown, Crossover, breakdown, crossovers, verdict};
