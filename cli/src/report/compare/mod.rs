//! Comparing two reports.
//!
//! Rows of A and B are matched by (dtype, elements, path, handler, wait, pin, transport),
//! baselines by (bytes, transport, wait, pin). How a matched pair is judged depends on the
//! [`Mode`]:
//!
//! - [`Mode::Paired`] (the default of `peer compare`): a row is judged against its own floor
//!   from the same run ([`crate::pairing`]), so two runs taken while the machine ran at
//!   different speeds compare correctly. Floors measure the machine and are shown, not judged.
//!
//!   When both reports found the machine's states ([`states`](super::states)), like is compared
//!   with like: a row is judged on its figures in a state both reports ran in
//!   ([`across_runs::shared_states`](super::across_runs::shared_states)) — of those, the one
//!   where the change is known most surely (the narrowest interval), then where the row has
//!   most rounds in both — and on the time it adds to its floor there
//!   ([`StateFigures::added_ns`](super::states::StateFigures::added_ns)). It differs when the
//!   change of that added time (B − A) exceeds the absolute threshold, exceeds the relative
//!   threshold of A's round trip in that state (A's floor p50 there plus A's added time), and the
//!   change's 95 % interval leaves out 0 ([`difference_interval`]). A cost added to every call (a server 500
//!   ns slower) reads as its own size in any state, where a ratio to a noisy floor can hide it; the
//!   ratios are shown as context. A row that ran in no shared state is not judged
//!   ([`Outcome::OtherState`]), and reports that share no state at all have nothing to compare
//!   ([`Comparison::no_state_in_common`]).
//!
//!   When a report has no states (no round was probed: the process could use one CPU, or the
//!   probe got no answer), rows are judged on their overall ratios: a row differs when the
//!   change of its ratio, converted to time at the mean p50 of the two floors, exceeds the
//!   absolute threshold, the ratio moved by more than the relative threshold, and the change's
//!   95 % interval leaves out 0. A row without a paired ratio in either file (no floor
//!   of its bytes was measured) is judged absolutely.
//! - [`Mode::Absolute`]: p50 round trips are compared, rows and floors alike; a pair differs
//!   when its p50 moved by more than both thresholds and more than the noise, the larger
//!   spread (max − min) of the per-round p50s in either file.
//!
//! `judge.rs` matches and judges the pairs, `text.rs` writes the result ([`render`]); this
//! file only names them.

mod judge;
mod text;

pub use judge::{
    Comparison, Mode, Outcome, Pair, PairedChange, StatesCompared, Thresholds, clearance, compare,
    difference_interval, usual_probe_ns,
};
pub use text::render;
