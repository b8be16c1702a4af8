//! The round-trip latency report: where the time of a round trip goes, against a raw-bytes
//! floor measured in the same run.
//!
//! [`measure::run`] spawns servers and measures every combination of dtype, size, path, handler,
//! wait strategy and placement, splitting each round trip into client encode, client decode, server
//! time and transfer; [`baseline`](crate::baseline) measures the same pair of processes moving the
//! same bytes with plain `read`/`write`. The result is a [`Report`], which [`render`] turns into
//! the summary and a table, [`export`] into JSON, CSV and SVG, and [`compare`] holds
//! against another run. [`pairing`](crate::pairing) measures a floor and its rows in interleaved
//! rounds, [`placement`] and [`cpu`] put the processes on their CPUs and watch them there,
//! [`crosscore`] probes the machine's state at the start of every round and [`states`] finds the
//! run's states in those probes.
//!
//! One concern per file: [`model`] holds what a run measured (the JSON document's types),
//! [`key`] what identifies a row, [`states`] the machine's states and each row's figures in
//! them, `columns.rs` how every field of a row is written in the JSON, the CSV and the table;
//! [`summary`], [`budget`], [`ratio`] and [`waits`] work out what the report says, [`render`]
//! writes it as text and [`export`] as files; [`plan`] and [`measure`] run the processes.
//! This file only names the modules and hands the model's types on.

pub mod across_runs;
pub mod budget;
mod columns;
pub mod compare;
pub mod cpu;
pub mod crosscore;
pub mod export;
pub mod format;
mod group;
pub mod key;
pub mod load;
pub mod machine;
pub mod measure;
pub mod model;
pub mod placement;
pub mod plan;
pub mod ratio;
pub mod render;
pub mod repeat;
pub mod reply;
pub mod states;
pub mod summary;
pub mod sync;
pub mod waits;

pub use key::{Placement, Workload};
pub use model::{
    BaselineRow, CONTENDED_PREEMPTIONS, ClientWaits, ConfigRecord, Machine, MachineState,
    Percentiles, Report, Round, Row, Skipped, contended_share, shared_core_share,
};
pub use reply::{Expectation, test_values, verify};
