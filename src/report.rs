//! Driving a peer through round trips, checking every reply and summarising the timings.
//!
//! This is what `peer --role client` runs: for each dtype and size it sends a test array
//! (with NaN payloads, -0.0, subnormals and infinities for the echo handlers), verifies each
//! reply bit for bit against what the handler must return, and records where the time went.

use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

use crate::codec::{Values, ValuesMut};
use crate::error::{Error, Result};
use crate::lorenz96;
use crate::peer::{CallTiming, Peer};
use crate::units::format_nanos;

/// What is sent, and as what it travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// f64 values as f64.
    F64,
    /// f32 values as f32.
    F32,
    /// f64 values narrowed to f32 on the wire and widened back.
    F64AsF32,
}

impl Workload {
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
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = Error;
    fn from_str(text: &str) -> Result<Workload> {
        match text {
            "f64" => Ok(Workload::F64),
            "f32" => Ok(Workload::F32),
            "f64-as-f32" => Ok(Workload::F64AsF32),
            _ => Err(Error::InvalidArgument {
                what: "dtype",
                reason: format!("expected f64, f32 or f64-as-f32, found {text:?}"),
            }),
        }
    }
}

/// What the server is expected to answer, by its HELLO's handler name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expectation {
    /// The reply equals the request (`echo`, `echo-raw`).
    Echo,
    /// The reply is the Lorenz-96 derivative of the request (`lorenz96`).
    Lorenz96,
    /// Unknown handler: replies are received but not checked.
    Unchecked,
}

impl Expectation {
    /// The expectation for a handler name.
    pub fn for_handler(name: Option<&str>) -> Expectation {
        match name {
            Some("echo" | "echo-raw") => Expectation::Echo,
            Some("lorenz96") => Expectation::Lorenz96,
            _ => Expectation::Unchecked,
        }
    }
}

/// One measured combination.
#[derive(Clone, Debug)]
pub struct Row {
    /// What was sent.
    pub workload: Workload,
    /// Elements per request.
    pub elements: usize,
    /// Payload bytes per request on the wire.
    pub bytes: usize,
    /// Timed round trips, in the order they ran.
    pub samples: Vec<CallTiming>,
    /// Whether replies were checked bit for bit (and all matched, or the run would have failed).
    pub verified: bool,
}

impl Row {
    /// The `q`-quantile (0–1, nearest rank) of one phase over the samples.
    pub fn quantile(&self, q: f64, phase: impl Fn(&CallTiming) -> u64) -> u64 {
        let mut values: Vec<u64> = self.samples.iter().map(phase).collect();
        values.sort_unstable();
        nearest_rank(&values, q)
    }
}

/// The nearest-rank `q`-quantile of sorted values; 0 for none.
///
/// ```
/// use peerpipe::report::nearest_rank;
/// let v = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
/// assert_eq!(nearest_rank(&v, 0.5), 5);
/// assert_eq!(nearest_rank(&v, 0.99), 10);
/// assert_eq!(nearest_rank(&v, 0.0), 1);
/// ```
pub fn nearest_rank(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Settings of [`run`].
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Element counts to measure.
    pub sizes: Vec<usize>,
    /// Dtypes to measure.
    pub workloads: Vec<Workload>,
    /// Timed round trips per combination (at least 1).
    pub iterations: u64,
    /// Untimed round trips before timing starts.
    pub warmup: u64,
}

/// Runs every workload × size through `peer`, verifying each reply against `expect`.
///
/// # Errors
/// Any call error, and [`Error::InvalidArgument`] naming seq, element and both bit patterns
/// when a reply differs from what the handler must return.
pub fn run(peer: &mut Peer, config: &RunConfig, expect: Expectation) -> Result<Vec<Row>> {
    if config.iterations == 0 {
        return Err(Error::InvalidArgument {
            what: "iterations",
            reason: "must be at least 1".into(),
        });
    }
    let mut rows = Vec::new();
    for &workload in &config.workloads {
        for &elements in &config.sizes {
            rows.push(run_one(peer, workload, elements, config, expect)?);
        }
    }
    Ok(rows)
}

fn run_one(
    peer: &mut Peer,
    workload: Workload,
    elements: usize,
    config: &RunConfig,
    expect: Expectation,
) -> Result<Row> {
    let edge_values = expect == Expectation::Echo;
    let input = test_values(elements, elements as u64 + 1, edge_values);
    let input32: Vec<f32> = input.iter().map(|&x| x as f32).collect();
    let expected: Vec<f64> = match (expect, workload) {
        (Expectation::Lorenz96, _) => {
            let mut d = vec![0.0; elements];
            lorenz96::rhs(&input, lorenz96::FORCING, &mut d)?;
            d
        }
        (_, Workload::F64) => input.clone(),
        (_, Workload::F32 | Workload::F64AsF32) => input32.iter().map(|&x| x as f64).collect(),
    };
    let mut out64 = vec![0.0f64; elements];
    let mut out32 = vec![0.0f32; elements];
    let mut samples = Vec::with_capacity(config.iterations as usize);
    for i in 0..config.warmup + config.iterations {
        let timing = match workload {
            Workload::F64 => peer.call(Values::F64(&input), ValuesMut::F64(&mut out64))?,
            Workload::F64AsF32 => {
                peer.call(Values::F64AsF32(&input), ValuesMut::F64FromF32(&mut out64))?
            }
            Workload::F32 => peer.call(Values::F32(&input32), ValuesMut::F32(&mut out32))?,
        };
        if workload == Workload::F32 {
            out64.iter_mut().zip(&out32).for_each(|(d, &s)| *d = s as f64);
        }
        if expect != Expectation::Unchecked {
            verify(&expected, &out64, i)?;
        }
        if i >= config.warmup {
            samples.push(timing);
        }
    }
    Ok(Row {
        workload,
        elements,
        bytes: workload.wire_bytes(elements),
        samples,
        verified: expect != Expectation::Unchecked,
    })
}

fn verify(expected: &[f64], got: &[f64], iteration: u64) -> Result<()> {
    match expected.iter().zip(got).position(|(e, g)| e.to_bits() != g.to_bits()) {
        None => Ok(()),
        Some(at) => Err(Error::InvalidArgument {
            what: "reply",
            reason: format!(
                "round trip {iteration}, element {at}: expected bits {:#018x}, found {:#018x}",
                expected[at].to_bits(),
                got[at].to_bits()
            ),
        }),
    }
}

/// Deterministic test values. With `edge_values`, the first elements are NaN payloads, -0.0,
/// subnormals and infinities; the rest are pseudo-random in [-10, 10).
pub fn test_values(len: usize, seed: u64, edge_values: bool) -> Vec<f64> {
    const EDGES: [u64; 8] = [
        0x7ff8_0000_0000_0001, // quiet NaN with payload
        0x7ff0_0000_0000_0001, // signalling NaN
        0x8000_0000_0000_0000, // -0.0
        0x0000_0000_0000_0001, // smallest subnormal
        0x000f_ffff_ffff_ffff, // largest subnormal
        0x7ff0_0000_0000_0000, // +inf
        0xfff0_0000_0000_0000, // -inf
        0x7fef_ffff_ffff_ffff, // f64::MAX
    ];
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|i| {
            if edge_values && i < EDGES.len() {
                return f64::from_bits(EDGES[i]);
            }
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 * 20.0 - 10.0
        })
        .collect()
}

/// Writes the summary table: one line per row with round-trip percentiles and the median of
/// each phase.
///
/// # Errors
/// Errors of `out`.
pub fn render_summary(rows: &[Row], mut out: impl Write) -> io::Result<()> {
    writeln!(
        out,
        "{:<11} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  verified",
        "dtype",
        "elements",
        "bytes",
        "iters",
        "rtt min",
        "rtt p50",
        "rtt p99",
        "rtt max",
        "encode",
        "decode",
        "server",
        "transfer"
    )?;
    for row in rows {
        let rtt = |q| format_nanos(row.quantile(q, |t| t.round_trip_ns) as f64);
        let median = |phase: fn(&CallTiming) -> u64| format_nanos(row.quantile(0.5, phase) as f64);
        writeln!(
            out,
            "{:<11} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  {}",
            row.workload.name(),
            row.elements,
            row.bytes,
            row.samples.len(),
            rtt(0.0),
            rtt(0.5),
            rtt(0.99),
            rtt(1.0),
            median(|t| t.encode_ns),
            median(|t| t.decode_ns),
            median(|t| t.server_ns),
            median(CallTiming::transfer_ns),
            if row.verified { "bit-exact" } else { "unchecked" },
        )?;
    }
    Ok(())
}
