//! # peerpipe
//!
//! Two cooperating processes exchange packed `f64`/`f32` arrays over OS pipes, and the crate
//! measures where every microsecond of a round trip goes.
//!
//! The organisation is a stack; data flows one way down and one way back:
//!
//! - [`frame`]: wire format v1 — the 32-byte header, padding, HELLO payloads. Pure.
//! - [`codec`]: the explicit little-endian codec, with f64↔f32 narrowing and widening and rayon
//!   for large arrays. Pure; the oracle for everything else.
//! - [`zerocopy`]: the caller's slice as the payload (bytemuck casts), with checked fallbacks.
//! - [`error`]: the one error enum, whose messages name expected and found values.
//!
//! The crate contains no `unsafe` code.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod codec;
pub mod error;
pub mod frame;
pub mod zerocopy;

pub use codec::{Values, ValuesMut};
pub use error::{Error, Result};
