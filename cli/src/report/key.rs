//! What identifies a row, typed: the workload, the placement and the handler as enums, the
//! combination a row records ([`RowId`]), and the keys by which rows and floors are matched
//! — with a floor ([`Report::baseline_for`](super::Report::baseline_for)), between two runs
//! ([`compare`](super::compare)) and into plot series
//! ([`export`](super::export)). Names become text only at the edges: JSON (through
//! `as_text`), CSV and the table.

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

use peerpipe::error::{Error, Result};
use peerpipe::peer::DataPath;
use peerpipe::transport::{TransportKind, Wait};
use serde::{Deserialize, Serialize};

pub use super::placement::Placement;

/// What is sent, and as what it travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Workload {
    /// f64 values as f64.
    F64,
    /// f32 values as f32.
    F32,
    /// f64 values narrowed to f32 on the wire and widened back.
    F64AsF32,
}

impl Workload {
    /// Every workload, in report order.
    pub const ALL: [Workload; 3] = [Workload::F64, Workload::F32, Workload::F64AsF32];

    /// `f64`, `f32` or `f64-as-f32`.
    pub fn name(&self) -> &'static str {
        match self {
            Workload::F64 => "f64",
            Workload::F32 => "f32",
            Workload::F64AsF32 => "f64-as-f32",
        }
    }

    /// Payload bytes on the wire for `elements` elements.
    pub fn wire_bytes(&self, elements: usize) -> usize {
        match self {
            Workload::F64 => elements * 8,
            Workload::F32 | Workload::F64AsF32 => elements * 4,
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Workload {
    type Err = Error;
    fn from_str(text: &str) -> Result<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == text).ok_or_else(|| Error::InvalidArgument {
            what: "dtype",
            reason: format!("expected f64, f32 or f64-as-f32, found {text:?}"),
        })
    }
}

/// The server handler a row was measured with: the built-in ones by name, any other (a
/// `--spawn` server's own) as it was given.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Handler {
    /// `echo`: decodes and re-encodes, as a real model's server does.
    Echo,
    /// `echo-raw`: sends the payload back as it came, converting nothing.
    EchoRaw,
    /// `lorenz96`: the Lorenz-96 right-hand side.
    Lorenz96,
    /// Any other name.
    Other(String),
}

impl Handler {
    /// The handler's name: `echo`, `echo-raw`, `lorenz96` or the other name.
    pub fn name(&self) -> &str {
        match self {
            Handler::Echo => "echo",
            Handler::EchoRaw => "echo-raw",
            Handler::Lorenz96 => "lorenz96",
            Handler::Other(name) => name,
        }
    }

    /// The handler called `name`; never fails (unknown names are [`Handler::Other`]).
    ///
    /// ```
    /// use peerpipe_cli::report::key::Handler;
    /// assert_eq!(Handler::named("echo-raw"), Handler::EchoRaw);
    /// assert_eq!(Handler::named("mine").name(), "mine");
    /// ```
    pub fn named(name: &str) -> Handler {
        match name {
            "echo" => Handler::Echo,
            "echo-raw" => Handler::EchoRaw,
            "lorenz96" => Handler::Lorenz96,
            other => Handler::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for Handler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Handler {
    type Err = Infallible;
    fn from_str(text: &str) -> Result<Handler, Infallible> {
        Ok(Handler::named(text))
    }
}

/// The combination a row measured (or a skipped one would have), as the report stores it:
/// the fields of its [`RowKey`] and the byte count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowId {
    /// `f64`, `f32` or `f64-as-f32`.
    #[serde(with = "as_text")]
    pub dtype: Workload,
    /// Elements per request.
    pub elements: u64,
    /// Payload bytes on the wire per request.
    pub bytes: u64,
    /// Transport: `pipe`, `shm-sem`, `shm-ring` or `tcp`.
    #[serde(with = "as_text")]
    pub transport: TransportKind,
    /// `zero-copy` or `codec`.
    #[serde(with = "as_text")]
    pub path: DataPath,
    /// Server handler.
    #[serde(with = "as_text")]
    pub handler: Handler,
    /// Wait strategy of both sides.
    #[serde(with = "as_text")]
    pub wait: Wait,
    /// Placement: `free`, `same` or `split`.
    #[serde(with = "as_text")]
    pub pin: Placement,
}

impl RowId {
    /// What identifies this combination (see [`RowKey`]).
    pub fn key(&self) -> RowKey<'_> {
        RowKey {
            dtype: self.dtype,
            elements: self.elements,
            path: self.path,
            handler: &self.handler,
            wait: self.wait,
            pin: self.pin,
            transport: self.transport,
        }
    }
}

/// What identifies a measured row (and a skipped one): two runs' rows with equal keys are
/// the same measurement. The byte count is not part of it: it follows from dtype and
/// elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowKey<'a> {
    /// What is sent, and as what it travels.
    pub dtype: Workload,
    /// Elements per request.
    pub elements: u64,
    /// Zero-copy or codec.
    pub path: DataPath,
    /// The server's handler.
    pub handler: &'a Handler,
    /// Wait strategy of both sides.
    pub wait: Wait,
    /// Where the two processes ran.
    pub pin: Placement,
    /// The link.
    pub transport: TransportKind,
}

/// What identifies a floor; a row is measured against the floor with its [`FloorKey`]
/// (with at least one byte: an empty row's floor moves one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloorKey {
    /// Payload bytes each way.
    pub bytes: u64,
    /// The link.
    pub transport: TransportKind,
    /// Wait strategy of both sides.
    pub wait: Wait,
    /// Where the two processes ran.
    pub pin: Placement,
}

/// Serde for a field kept as its name in JSON: written with `Display`, read with `FromStr`,
/// so the JSON holds exactly the text the report has always written (`"shm-ring"`,
/// `"hybrid:20us"`, `"split"`).
pub(crate) mod as_text {
    use std::fmt::Display;
    use std::str::FromStr;

    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<T: Display, S: Serializer>(
        value: &T,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(value)
    }

    pub fn deserialize<'de, T, D>(deserializer: D) -> Result<T, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        String::deserialize(deserializer)?.parse().map_err(D::Error::custom)
    }
}
