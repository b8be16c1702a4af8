//! The binary of a proxy FMU made by `peer fmu wrap`: the FMI 2.0 co-simulation functions
//! (`exports.rs`) and FMI 3.0's (`exports3.rs`, `unsupported3.rs`), each forwarded to the
//! instance's `peer fmu serve` server (`instance.rs`).
//!
//! Every exported function catches panics (a panic becomes `fmi2Fatal`) and checks its
//! pointers; sets are kept until the next call, and a step's reply brings the outputs back.

#![warn(clippy::undocumented_unsafe_blocks)]

mod exports;
mod exports3;
mod ffi;
mod importer;
mod instance;
mod launch;
mod unsupported3;
