//! The soak: client–server pairs exchange random arrays for a long time, every reply checked
//! bit for bit, and every process's memory and descriptors compared at start and end.
//!
//! [`run`] spawns K servers (`peer --role server`, handlers `echo` and `echo-raw` alternating)
//! and drives each from its own thread with a [`Client`]. A client sends arrays of random size
//! (0 to `max_elements` elements, log-uniform so small ones dominate but the largest occur),
//! random dtype (f64, f32, f64 narrowed to f32 on the wire, bytes) and random bit patterns
//! (NaN payloads, signalling NaNs, -0.0, subnormals, ±inf, arbitrary bits), over both data
//! paths, one at a time or pipelined, and checks every reply with [`verify`].
//!
//! Every request ends in exactly one bucket of [`Stats`]: verified, corrupted (bits, dtype or
//! count differ), reordered (the reply carried another seq: [`Error::SeqMismatch`]) or lost
//! (no reply came back to check: the conversation failed with it in flight, or the server
//! answered ERROR). So `requests = verified + corrupted + reordered + lost`.
//!
//! Pipelined requests keep the bytes in flight each way under half the pipe capacity
//! ([`Peer::capacity`]): a server stops reading while its reply pipe is full, so more
//! would deadlock (see [`Peer::send`]).
//!
//! All randomness comes from one seed ([`Config::seed`]; pair `i` derives its own), so a run
//! that fails can be replayed: the same seed gives each pair the same sequence of arrays.
//!
//! ```
//! use std::thread;
//! use std::time::{Duration, Instant};
//! use peerpipe::handlers::EchoRaw;
//! use peerpipe::server::{serve, ServeOptions};
//! use peerpipe::soak::Client;
//! use peerpipe::transport::{Transport, Wait};
//! use peerpipe::{Options, Peer};
//!
//! let (client_end, mut server_end) = Transport::pipe_pair(Wait::Block)?;
//! let server = thread::spawn(move || serve(&mut server_end, &mut EchoRaw, &ServeOptions::default()));
//! let mut client = Client::new(Peer::connect(client_end, Options::default())?, 7, 4096);
//! client.run_until(Instant::now() + Duration::from_millis(20))?;
//! let stats = client.stats();
//! assert!(stats.requests > 0);
//! assert_eq!((stats.lost, stats.reordered, stats.corrupted), (0, 0, 0));
//! assert_eq!(stats.verified, stats.requests);
//! client.close()?;
//! server.join().unwrap()?;
//! # Ok::<(), peerpipe::Error>(())
//! ```

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::codec::{F32_EDGE_BITS, F64_EDGE_BITS, Values, ValuesMut};
use crate::error::{Error, Result};
use crate::frame::HEADER_LEN;
use crate::peer::{DataPath, Options, Peer, describe_status};
use crate::report::{Percentiles, new_histogram};
use crate::rng::{Rng, splitmix64};
use crate::transport::TransportKind;
use crate::units::format_duration;

/// Default length of a soak: 60 s.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(60);

/// Default largest request: 1,048,576 elements (8 MiB of f64).
pub const DEFAULT_MAX_ELEMENTS: usize = 1 << 20;

/// The most requests a pipelined batch sends before receiving.
pub const MAX_PIPELINE_DEPTH: usize = 8;

/// Server handlers, by pair: pair `i` uses `HANDLERS[i % 2]`.
pub const HANDLERS: [&str; 2] = ["echo", "echo-raw"];

/// Absolute floor of the RSS tolerance: 8 MiB, one largest default frame (1,048,576 f64).
///
/// Every buffer a round trip needs is allocated and touched during warm-up (the largest
/// request of each dtype on each path, and a full pipelined batch), and a warm round trip
/// allocates nothing (`tests/zero_alloc.rs`). What can still move RSS without a leak is
/// allocator bookkeeping — glibc's per-thread arenas keeping or trimming freed chunks,
/// read-ahead buffers of the transport (bounded by the pipe capacity), thread stacks touched
/// deeper — which stays well under one largest frame. A leak worth finding grows past it: one
/// frame buffer kept per round trip does within a few round trips, and 100 bytes kept per
/// request does within a default 60 s run (~10^5 requests). The report prints the request
/// count, so the per-request detection limit (tolerance / requests) can be read off.
pub const RSS_TOLERANCE_FLOOR: u64 = 8 << 20;

/// Relative RSS tolerance: 10 % of the start value, for processes whose warm RSS is large.
pub const RSS_TOLERANCE_PERCENT: u64 = 10;

/// How many corrupted replies are described in full in the report.
const KEPT_MISMATCHES: usize = 8;

/// Header plus the most padding: what a frame adds to its payload.
const FRAME_OVERHEAD: usize = HEADER_LEN + 7;

/// Bit pattern reply buffers start as, before a reply is first received into them.
const UNTOUCHED: u64 = 0x5a5a_5a5a_5a5a_5a5a;

/// How far RSS may grow between start and end and still count as flat:
/// `max(RSS_TOLERANCE_FLOOR, RSS_TOLERANCE_PERCENT % of start)`.
///
/// ```
/// use peerpipe::soak::rss_tolerance;
/// assert_eq!(rss_tolerance(20 << 20), 8 << 20);
/// assert_eq!(rss_tolerance(200 << 20), 20 << 20);
/// ```
pub fn rss_tolerance(start_bytes: u64) -> u64 {
    RSS_TOLERANCE_FLOOR.max(start_bytes / 100 * RSS_TOLERANCE_PERCENT)
}

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/// What a soak runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// This crate's `peer` binary, spawned as `peer --role server --handler H`.
    pub peer_exe: PathBuf,
    /// How long the pairs exchange after warm-up.
    pub duration: Duration,
    /// Number of client–server pairs (each client on its own thread).
    pub peers: usize,
    /// Largest request in elements; sizes are drawn from `0..=max_elements`.
    pub max_elements: usize,
    /// Seed of all randomness; pair `i` derives its own stream from it.
    pub seed: u64,
    /// The transport every pair talks over.
    pub transport: TransportKind,
    /// Peer options: wait strategy, timeout per reply, frame limit, pipe capacity. The path
    /// is chosen at random per batch.
    pub options: Options,
}

impl Config {
    /// The defaults: 60 s, one pair, 1,048,576 elements, pipes, default peer options.
    pub fn new(peer_exe: impl Into<PathBuf>, seed: u64) -> Config {
        Config {
            peer_exe: peer_exe.into(),
            duration: DEFAULT_DURATION,
            peers: 1,
            max_elements: DEFAULT_MAX_ELEMENTS,
            seed,
            transport: TransportKind::Pipe,
            // A soak server that outlives a killed client must still be able to say why it
            // exits, on the stderr it inherited, so its stderr is not captured.
            options: Options { capture_stderr: false, ..Options::default() },
        }
    }

    /// Checks that the configuration can run.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when there are no pairs, or when the largest request (as
    /// f64) exceeds `options.max_frame_bytes`.
    pub fn validate(&self) -> Result<()> {
        if self.peers == 0 {
            return Err(Error::InvalidArgument {
                what: "peers",
                reason: "at least one pair is needed".into(),
            });
        }
        let largest = (self.max_elements as u64).checked_mul(8);
        if largest.is_none_or(|bytes| bytes > self.options.max_frame_bytes) {
            return Err(Error::InvalidArgument {
                what: "max elements",
                reason: format!(
                    "{} f64 elements need {} bytes per frame, above max_frame_bytes {}",
                    self.max_elements,
                    self.max_elements as u128 * 8,
                    self.options.max_frame_bytes
                ),
            });
        }
        Ok(())
    }

    /// The command line that replays this run.
    pub fn replay_command(&self) -> String {
        format!(
            "peer soak --seed {} --duration {} --peers {} --max-elements {} --wait {}{}{}",
            self.seed,
            format_duration(self.duration),
            self.peers,
            self.max_elements,
            self.options.wait,
            self.options
                .timeout
                .map_or(String::new(), |t| format!(" --timeout {}", format_duration(t))),
            match self.transport {
                TransportKind::Pipe => String::new(),
                other => format!(" --transport {other}"),
            },
        )
    }
}

/// A seed from the clock, for runs that were given none (print it so the run can be replayed).
pub fn seed_from_clock() -> u64 {
    crate::rng::seed_from_clock()
}

/// The seed of pair `index` derived from the run's seed.
pub fn pair_seed(seed: u64, index: usize) -> u64 {
    let mut state = seed ^ (index as u64).wrapping_mul(0xa076_1d64_78bd_642f);
    splitmix64(&mut state)
}

// ---------------------------------------------------------------------------------------------
// Random values
// ---------------------------------------------------------------------------------------------

const F64_EXP: u64 = 0x7ff0_0000_0000_0000;
const F64_MANT: u64 = 0x000f_ffff_ffff_ffff;
const F64_SIGN: u64 = 1 << 63;
const F32_EXP: u32 = 0x7f80_0000;
const F32_MANT: u32 = 0x007f_ffff;
const F32_SIGN: u32 = 1 << 31;

/// One random f64 bit pattern: 1/8 from [`F64_EDGE_BITS`], 1/16 a random subnormal, 1/16 a
/// random NaN (quiet or signalling, any payload, either sign), 3/8 arbitrary bits, the rest
/// ordinary numbers in [-1000, 1000). Returns the bits and whether they were chosen as special.
fn random_f64_bits(rng: &mut Rng) -> (u64, bool) {
    let r = rng.next_u64();
    let sign = r & F64_SIGN;
    match r & 15 {
        0 | 1 => (F64_EDGE_BITS[((r >> 8) % F64_EDGE_BITS.len() as u64) as usize], true),
        2 => (sign | ((r >> 4) & F64_MANT), true),
        3 => (sign | F64_EXP | ((r >> 4) & F64_MANT).max(1), true),
        4..=9 => (rng.next_u64(), false),
        _ => (((r >> 11) as f64 / (1u64 << 53) as f64 * 2000.0 - 1000.0).to_bits(), false),
    }
}

/// One random f32 bit pattern, in the proportions of [`random_f64_bits`].
fn random_f32_bits(rng: &mut Rng) -> (u32, bool) {
    let r = rng.next_u64();
    let sign = (r >> 32) as u32 & F32_SIGN;
    match r & 15 {
        0 | 1 => (F32_EDGE_BITS[((r >> 8) % F32_EDGE_BITS.len() as u64) as usize], true),
        2 => (sign | ((r >> 4) as u32 & F32_MANT), true),
        3 => (sign | F32_EXP | ((r >> 4) as u32 & F32_MANT).max(1), true),
        4..=9 => ((r >> 32) as u32, false),
        _ => (((r >> 40) as f32 / (1u32 << 24) as f32 * 2000.0 - 1000.0).to_bits(), false),
    }
}

/// A size in `0..=max`: log-uniform (a bit length drawn uniformly, then a value of that bit
/// length), so small sizes dominate the count while the largest still occur; 1 in 32 is
/// exactly `max`.
fn skewed_len(rng: &mut Rng, max: usize) -> usize {
    if max == 0 {
        return 0;
    }
    if rng.chance(32) {
        return max;
    }
    let bits = usize::BITS - max.leading_zeros();
    let b = rng.below(u64::from(bits) + 1) as u32;
    if b == 0 {
        return 0;
    }
    let lo = 1usize << (b - 1);
    let hi = ((1usize << b) - 1).min(max);
    lo + rng.below((hi - lo + 1) as u64) as usize
}

// ---------------------------------------------------------------------------------------------
// Verification
// ---------------------------------------------------------------------------------------------

/// What is sent, and as what it travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// f64 as f64.
    F64,
    /// f32 as f32.
    F32,
    /// f64 narrowed to f32 on the wire, widened back into f64.
    F64AsF32,
    /// Raw bytes.
    Bytes,
}

impl ValueKind {
    /// Every kind, in report order.
    pub const ALL: [ValueKind; 4] =
        [ValueKind::F64, ValueKind::F32, ValueKind::F64AsF32, ValueKind::Bytes];

    /// `f64`, `f32`, `f64-as-f32` or `bytes`.
    pub fn name(&self) -> &'static str {
        match self {
            ValueKind::F64 => "f64",
            ValueKind::F32 => "f32",
            ValueKind::F64AsF32 => "f64-as-f32",
            ValueKind::Bytes => "bytes",
        }
    }

    /// Bytes per element on the wire.
    pub fn wire_width(&self) -> usize {
        match self {
            ValueKind::F64 => 8,
            ValueKind::F32 | ValueKind::F64AsF32 => 4,
            ValueKind::Bytes => 1,
        }
    }

    /// Bytes per element in the caller's buffers.
    fn memory_width(&self) -> usize {
        match self {
            ValueKind::F64 | ValueKind::F64AsF32 => 8,
            ValueKind::F32 => 4,
            ValueKind::Bytes => 1,
        }
    }

    fn index(&self) -> usize {
        match self {
            ValueKind::F64 => 0,
            ValueKind::F32 => 1,
            ValueKind::F64AsF32 => 2,
            ValueKind::Bytes => 3,
        }
    }
}

impl fmt::Display for ValueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a reply differs from what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The reply has another number of elements.
    Length {
        /// Elements sent.
        expected: usize,
        /// Elements in the reply.
        found: usize,
    },
    /// The reply is of another type than the request can come back as.
    Shape {
        /// What was sent, e.g. `f64-as-f32`.
        sent: &'static str,
        /// What the reply is, e.g. `f32`.
        reply: &'static str,
    },
    /// The first element whose bits differ (bytes are compared one by one).
    Bits {
        /// Its index.
        element: usize,
        /// The expected bit pattern.
        expected: u64,
        /// The bit pattern in the reply.
        found: u64,
        /// How many elements differ in all.
        differing: usize,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Length { expected, found } => {
                write!(f, "expected {expected} elements, found {found}")
            }
            Mismatch::Shape { sent, reply } => write!(f, "sent {sent}, reply is {reply}"),
            Mismatch::Bits { element, expected, found, differing } => write!(
                f,
                "element {element}: expected bits {expected:#x}, found {found:#x} \
                 ({differing} elements differ)"
            ),
        }
    }
}

fn values_name(values: &Values<'_>) -> &'static str {
    match values {
        Values::Bytes(_) => "bytes",
        Values::F32(_) => "f32",
        Values::F64(_) => "f64",
        Values::F64AsF32(_) => "f64-as-f32",
    }
}

/// The first difference between `expected` and `found` bit patterns, if any.
fn compare_bits(expected: impl ExactSizeIterator<Item = u64>, found: &[u64]) -> Option<Mismatch> {
    if expected.len() != found.len() {
        return Some(Mismatch::Length { expected: expected.len(), found: found.len() });
    }
    let mut first = None;
    let mut differing = 0;
    for (element, (e, &g)) in expected.zip(found).enumerate() {
        if e != g {
            differing += 1;
            first.get_or_insert((element, e, g));
        }
    }
    first.map(|(element, expected, found)| Mismatch::Bits { element, expected, found, differing })
}

/// Checks an echo's reply bit for bit against what was sent: f64, f32 and bytes must come back
/// unchanged; f64 sent as [`Values::F64AsF32`] must come back (as [`Values::F64`]) as
/// `x as f32 as f64`. NaN payloads, signalling NaNs and the sign of zero count.
///
/// Returns `None` when the reply is exact, else the first difference.
///
/// ```
/// use peerpipe::codec::Values;
/// use peerpipe::soak::{verify, Mismatch};
/// let sent = [1.0, -0.0, f64::from_bits(0x7ff0_0000_0000_0001)];
/// assert_eq!(verify(Values::F64(&sent), Values::F64(&sent)), None);
/// let reply = [1.0, 0.0, sent[2]];
/// assert!(matches!(
///     verify(Values::F64(&sent), Values::F64(&reply)),
///     Some(Mismatch::Bits { element: 1, differing: 1, .. })
/// ));
/// let narrowed = [1.0, -0.0, f64::from_bits(0x7ff0_0000_0000_0001) as f32 as f64];
/// assert_eq!(verify(Values::F64AsF32(&sent), Values::F64(&narrowed)), None);
/// ```
pub fn verify(sent: Values<'_>, reply: Values<'_>) -> Option<Mismatch> {
    match (sent, reply) {
        (Values::F64(s), Values::F64(r)) => {
            compare_bits(s.iter().map(|x| x.to_bits()), bytemuck::cast_slice(r))
        }
        (Values::F64AsF32(s), Values::F64(r)) => {
            compare_bits(s.iter().map(|&x| (x as f32 as f64).to_bits()), bytemuck::cast_slice(r))
        }
        (Values::F32(s), Values::F32(r)) => {
            if s.len() != r.len() {
                return Some(Mismatch::Length { expected: s.len(), found: r.len() });
            }
            let found: Vec<u64> = r.iter().map(|x| u64::from(x.to_bits())).collect();
            compare_bits(s.iter().map(|x| u64::from(x.to_bits())), &found)
        }
        (Values::Bytes(s), Values::Bytes(r)) => {
            if s.len() != r.len() {
                return Some(Mismatch::Length { expected: s.len(), found: r.len() });
            }
            let found: Vec<u64> = r.iter().map(|&b| u64::from(b)).collect();
            compare_bits(s.iter().map(|&b| u64::from(b)), &found)
        }
        (sent, reply) => {
            Some(Mismatch::Shape { sent: values_name(&sent), reply: values_name(&reply) })
        }
    }
}

/// [`verify`] without allocating, for the hot loop: the slow, describing path runs only when
/// the fast comparison finds a difference.
fn replies_match(sent: Values<'_>, reply: Values<'_>) -> bool {
    match (sent, reply) {
        (Values::F64(s), Values::F64(r)) => {
            bytemuck::cast_slice::<f64, u64>(s) == bytemuck::cast_slice::<f64, u64>(r)
        }
        (Values::F64AsF32(s), Values::F64(r)) => {
            s.len() == r.len()
                && s.iter().zip(r).all(|(&x, y)| (x as f32 as f64).to_bits() == y.to_bits())
        }
        (Values::F32(s), Values::F32(r)) => {
            bytemuck::cast_slice::<f32, u32>(s) == bytemuck::cast_slice::<f32, u32>(r)
        }
        (Values::Bytes(s), Values::Bytes(r)) => s == r,
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------

/// Requests and elements of one [`ValueKind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindCount {
    /// Requests sent.
    pub requests: u64,
    /// Elements sent.
    pub elements: u64,
}

/// What a client did and found, warm-up included (latencies exclude warm-up).
#[derive(Clone, Debug)]
pub struct Stats {
    /// DATA requests sent in full.
    pub requests: u64,
    /// DATA replies received (well-formed frames with the expected seq, dtype and count).
    pub replies: u64,
    /// Replies identical to what was sent, bit for bit.
    pub verified: u64,
    /// Requests whose reply never came back to be checked.
    pub lost: u64,
    /// Replies that carried another seq than the oldest request in flight.
    pub reordered: u64,
    /// Replies whose bits, dtype or count differ from what was sent.
    pub corrupted: u64,
    /// Payload bytes sent in requests.
    pub bytes_sent: u64,
    /// Payload bytes received in replies.
    pub bytes_received: u64,
    /// Requests and elements by kind, in [`ValueKind::ALL`] order.
    pub by_kind: [KindCount; 4],
    /// Elements drawn from the special patterns (NaN payloads, signalling NaNs, ±0, subnormals,
    /// ±inf, extremes); arbitrary bit patterns add more NaNs and subnormals on top.
    pub special_elements: u64,
    /// Batches of one request, then its reply.
    pub single_batches: u64,
    /// Pipelined batches (2 to [`MAX_PIPELINE_DEPTH`] requests, or fewer when the transport
    /// bounds them, then their replies).
    pub pipelined_batches: u64,
    /// Requests sent on the zero-copy path.
    pub zero_copy_requests: u64,
    /// Requests sent through the codec.
    pub codec_requests: u64,
    /// The largest request, in elements.
    pub largest_elements: u64,
    /// Round trips of single batches, in nanoseconds.
    pub single_latency: Histogram<u64>,
    /// Send-to-reply times of pipelined requests (queueing behind earlier ones included).
    pub pipelined_latency: Histogram<u64>,
    /// The first few corrupted replies, described.
    pub mismatches: Vec<String>,
    /// Errors that ended a conversation (at most one per client).
    pub errors: Vec<String>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

impl Stats {
    /// Empty statistics.
    pub fn new() -> Stats {
        Stats {
            requests: 0,
            replies: 0,
            verified: 0,
            lost: 0,
            reordered: 0,
            corrupted: 0,
            bytes_sent: 0,
            bytes_received: 0,
            by_kind: [KindCount::default(); 4],
            special_elements: 0,
            single_batches: 0,
            pipelined_batches: 0,
            zero_copy_requests: 0,
            codec_requests: 0,
            largest_elements: 0,
            single_latency: new_histogram(),
            pipelined_latency: new_histogram(),
            mismatches: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &Stats) {
        self.requests += other.requests;
        self.replies += other.replies;
        self.verified += other.verified;
        self.lost += other.lost;
        self.reordered += other.reordered;
        self.corrupted += other.corrupted;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        for (mine, theirs) in self.by_kind.iter_mut().zip(&other.by_kind) {
            mine.requests += theirs.requests;
            mine.elements += theirs.elements;
        }
        self.special_elements += other.special_elements;
        self.single_batches += other.single_batches;
        self.pipelined_batches += other.pipelined_batches;
        self.zero_copy_requests += other.zero_copy_requests;
        self.codec_requests += other.codec_requests;
        self.largest_elements = self.largest_elements.max(other.largest_elements);
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.single_latency.add(&other.single_latency);
        let _ = self.pipelined_latency.add(&other.pipelined_latency);
        let room = KEPT_MISMATCHES.saturating_sub(self.mismatches.len());
        self.mismatches.extend(other.mismatches.iter().take(room).cloned());
        self.errors.extend(other.errors.iter().cloned());
    }

    /// True when every request sent came back verified and nothing went wrong.
    pub fn is_clean(&self) -> bool {
        self.lost == 0
            && self.reordered == 0
            && self.corrupted == 0
            && self.errors.is_empty()
            && self.verified == self.requests
    }

    /// Requests not yet accounted for: `requests − verified − corrupted − reordered − lost`.
    /// Zero whenever no batch is half done.
    pub fn unaccounted(&self) -> i128 {
        i128::from(self.requests)
            - i128::from(self.verified)
            - i128::from(self.corrupted)
            - i128::from(self.reordered)
            - i128::from(self.lost)
    }
}

// ---------------------------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------------------------

/// One request's values and the buffer its reply is received into, both kept between batches
/// so that a warm client allocates nothing.
#[derive(Debug)]
struct Slot {
    kind: ValueKind,
    len: usize,
    /// The request's values, viewed as f64, f32 or bytes by `kind`.
    send: Vec<f64>,
    /// The reply, same layout.
    reply: Vec<f64>,
}

impl Slot {
    /// A slot for requests of up to `bytes` bytes in memory, its pages touched now.
    fn new(bytes: usize) -> Slot {
        let words = bytes.div_ceil(8).max(1);
        let touched = f64::from_bits(UNTOUCHED);
        Slot {
            kind: ValueKind::F64,
            len: 0,
            send: vec![touched; words],
            reply: vec![touched; words],
        }
    }

    fn capacity_bytes(&self) -> usize {
        self.send.len() * 8
    }

    /// Fills the request with `len` random `kind` elements and sets every reply word to the
    /// complement of the request word, so an element the reply never wrote cannot pass.
    /// Returns the number of elements drawn from the special patterns.
    fn fill(&mut self, kind: ValueKind, len: usize, rng: &mut Rng) -> u64 {
        debug_assert!(len * kind.memory_width() <= self.capacity_bytes());
        self.kind = kind;
        self.len = len;
        let mut special = 0;
        match kind {
            ValueKind::F64 | ValueKind::F64AsF32 => {
                for x in &mut self.send[..len] {
                    let (bits, s) = random_f64_bits(rng);
                    *x = f64::from_bits(bits);
                    special += u64::from(s);
                }
            }
            ValueKind::F32 => {
                for x in &mut bytemuck::cast_slice_mut::<f64, f32>(&mut self.send)[..len] {
                    let (bits, s) = random_f32_bits(rng);
                    *x = f32::from_bits(bits);
                    special += u64::from(s);
                }
            }
            ValueKind::Bytes => {
                for word in &mut self.send[..len.div_ceil(8)] {
                    *word = f64::from_bits(rng.next_u64());
                }
            }
        }
        let words = (len * kind.memory_width()).div_ceil(8);
        for (reply, sent) in self.reply[..words].iter_mut().zip(&self.send[..words]) {
            *reply = f64::from_bits(!sent.to_bits());
        }
        special
    }

    fn values(&self) -> Values<'_> {
        let len = self.len;
        match self.kind {
            ValueKind::F64 => Values::F64(&self.send[..len]),
            ValueKind::F32 => Values::F32(&bytemuck::cast_slice::<f64, f32>(&self.send)[..len]),
            ValueKind::F64AsF32 => Values::F64AsF32(&self.send[..len]),
            ValueKind::Bytes => Values::Bytes(&bytemuck::cast_slice::<f64, u8>(&self.send)[..len]),
        }
    }

    fn reply_values(&self) -> Values<'_> {
        let len = self.len;
        match self.kind {
            ValueKind::F64 | ValueKind::F64AsF32 => Values::F64(&self.reply[..len]),
            ValueKind::F32 => Values::F32(&bytemuck::cast_slice::<f64, f32>(&self.reply)[..len]),
            ValueKind::Bytes => Values::Bytes(&bytemuck::cast_slice::<f64, u8>(&self.reply)[..len]),
        }
    }

    fn reply_mut(&mut self) -> ValuesMut<'_> {
        let len = self.len;
        match self.kind {
            ValueKind::F64 => ValuesMut::F64(&mut self.reply[..len]),
            ValueKind::F64AsF32 => ValuesMut::F64FromF32(&mut self.reply[..len]),
            ValueKind::F32 => {
                ValuesMut::F32(&mut bytemuck::cast_slice_mut::<f64, f32>(&mut self.reply)[..len])
            }
            ValueKind::Bytes => {
                ValuesMut::Bytes(&mut bytemuck::cast_slice_mut::<f64, u8>(&mut self.reply)[..len])
            }
        }
    }
}

/// One side of a soak pair: drives a [`Peer`] with random batches and checks every reply.
///
/// Its buffers are sized at construction for the largest request (two buffers of
/// `8 × max_elements` bytes, plus smaller ones for pipelined batches) and their pages touched,
/// so memory does not grow during the run.
#[derive(Debug)]
pub struct Client {
    peer: Peer,
    rng: Rng,
    max_elements: usize,
    /// Bytes allowed in flight each way in a pipelined batch; 0 disables pipelining.
    pipeline_budget: usize,
    /// Deepest pipelined batch the transport allows (2 to [`MAX_PIPELINE_DEPTH`]).
    max_depth: usize,
    slots: Vec<Slot>,
    stats: Stats,
    label: String,
    record_latency: bool,
}

impl Client {
    /// A client of `peer` drawing from `seed`, sending up to `max_elements` elements per
    /// request. Pipelining is enabled when the peer reports a capacity (and allows two or
    /// more requests in flight).
    pub fn new(peer: Peer, seed: u64, max_elements: usize) -> Client {
        let max_depth = peer.max_in_flight().unwrap_or(MAX_PIPELINE_DEPTH).min(MAX_PIPELINE_DEPTH);
        let pipeline_budget =
            if max_depth < 2 { 0 } else { peer.capacity().map_or(0, |capacity| capacity / 2) };
        // Slot k takes part in batches of depth k + 1 and more, whose requests are at most
        // budget / (k + 1) bytes on the wire each, and twice that in memory (f64 narrowed).
        let mut slots = vec![Slot::new((max_elements * 8).max(pipeline_budget))];
        if pipeline_budget > 0 {
            slots.extend((1..MAX_PIPELINE_DEPTH).map(|k| Slot::new(2 * pipeline_budget / (k + 1))));
        }
        Client {
            peer,
            rng: Rng::new(seed),
            max_elements,
            pipeline_budget,
            max_depth,
            slots,
            stats: Stats::new(),
            label: String::new(),
            record_latency: true,
        }
    }

    /// Names this client in mismatch descriptions (e.g. `pair 2`).
    pub fn set_label(&mut self, label: impl Into<String>) {
        self.label = label.into();
    }

    /// The statistics so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The peer.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// The server's process id, when the peer spawned one.
    pub fn server_pid(&self) -> Option<u32> {
        self.peer.server_pid()
    }

    /// Bytes kept in flight each way at most in a pipelined batch (half the pipe capacity);
    /// 0 when pipelining is off.
    pub fn pipeline_budget(&self) -> usize {
        self.pipeline_budget
    }

    /// Brings every buffer on both sides to its final size: one request of `max_elements`
    /// elements of each kind on each path, then one pipelined batch of the largest requests
    /// the budget allows. Counted in the statistics, but not in the latencies.
    ///
    /// # Errors
    /// As [`Client::exchange`].
    pub fn warm_up(&mut self) -> Result<()> {
        self.record_latency = false;
        let result = self.warm_up_batches();
        self.record_latency = true;
        result
    }

    fn warm_up_batches(&mut self) -> Result<()> {
        for path in [DataPath::ZeroCopy, DataPath::Codec] {
            for kind in ValueKind::ALL {
                self.batch(path, &[(kind, self.max_elements)])?;
            }
        }
        if self.pipeline_budget > 0 {
            let depth = self.max_depth;
            let cap = self.pipelined_frame_cap(depth);
            let plan: Vec<(ValueKind, usize)> = (0..depth)
                .map(|k| {
                    let kind = ValueKind::ALL[k % 4];
                    (kind, (cap / kind.wire_width()).min(self.max_elements))
                })
                .collect();
            self.batch(DataPath::Codec, &plan)?;
        }
        Ok(())
    }

    /// Largest payload, in wire bytes, of one request in a pipelined batch of `depth`.
    fn pipelined_frame_cap(&self, depth: usize) -> usize {
        (self.pipeline_budget / depth).saturating_sub(FRAME_OVERHEAD)
    }

    /// Runs one random batch: a path (zero-copy or codec), then either one request and its
    /// reply, or (when pipelining is on, half the time) 2 to [`MAX_PIPELINE_DEPTH`] requests
    /// and then their replies; each request of a random kind and size.
    ///
    /// A corrupted reply is counted and described in the statistics, and the client goes on.
    ///
    /// # Errors
    /// The error that ended the conversation (a timeout, the server's death, a reordered,
    /// mistyped or wrongly sized reply, an ERROR reply); the requests it left without a
    /// checked reply are counted, and the error is recorded in [`Stats::errors`]. The peer is
    /// unusable afterwards except to close it.
    pub fn exchange(&mut self) -> Result<()> {
        let path = if self.rng.chance(2) { DataPath::ZeroCopy } else { DataPath::Codec };
        let depth = if self.pipeline_budget > 0 && self.rng.chance(2) {
            2 + self.rng.below(self.max_depth as u64 - 1) as usize
        } else {
            1
        };
        let mut plan = [(ValueKind::F64, 0); MAX_PIPELINE_DEPTH];
        let wire_cap = if depth == 1 { usize::MAX } else { self.pipelined_frame_cap(depth) };
        for entry in &mut plan[..depth] {
            let kind = ValueKind::ALL[self.rng.below(4) as usize];
            let max = self.max_elements.min(wire_cap / kind.wire_width());
            *entry = (kind, skewed_len(&mut self.rng, max));
        }
        self.batch(path, &plan[..depth])
    }

    /// Calls [`Client::exchange`] until `deadline`.
    ///
    /// # Errors
    /// The first error of [`Client::exchange`].
    pub fn run_until(&mut self, deadline: Instant) -> Result<()> {
        while Instant::now() < deadline {
            self.exchange()?;
        }
        Ok(())
    }

    /// Sends the requests `plan` (kind, elements) on `path`, then receives and checks their
    /// replies in order.
    fn batch(&mut self, path: DataPath, plan: &[(ValueKind, usize)]) -> Result<()> {
        self.peer.set_path(path);
        for (slot, &(kind, len)) in self.slots.iter_mut().zip(plan) {
            self.stats.special_elements += slot.fill(kind, len, &mut self.rng);
        }
        let depth = plan.len();
        for (k, slot) in self.slots[..depth].iter().enumerate() {
            if let Err(error) = self.peer.send(slot.values()) {
                // The requests already sent will never be answered to us.
                self.stats.lost += k as u64;
                return Err(self.record_error(error, path));
            }
            let stats = &mut self.stats;
            let values = slot.values();
            stats.requests += 1;
            stats.bytes_sent += values.wire_len() as u64;
            let count = &mut stats.by_kind[slot.kind.index()];
            count.requests += 1;
            count.elements += slot.len as u64;
            stats.largest_elements = stats.largest_elements.max(slot.len as u64);
            match path {
                DataPath::ZeroCopy => stats.zero_copy_requests += 1,
                DataPath::Codec => stats.codec_requests += 1,
            }
        }
        if depth == 1 {
            self.stats.single_batches += 1;
        } else {
            self.stats.pipelined_batches += 1;
        }
        for k in 0..depth {
            let received = self.peer.recv(self.slots[k].reply_mut());
            let reply = match received {
                Ok(reply) => reply,
                Err(error) => {
                    match error {
                        Error::SeqMismatch { .. } => self.stats.reordered += 1,
                        Error::DtypeMismatch { .. } | Error::CountMismatch { .. } => {
                            self.stats.corrupted += 1;
                        }
                        _ => self.stats.lost += 1,
                    }
                    self.stats.lost += (depth - k - 1) as u64;
                    return Err(self.record_error(error, path));
                }
            };
            let slot = &self.slots[k];
            let stats = &mut self.stats;
            stats.replies += 1;
            // The reply travels as the request did (f64-as-f32: as f32).
            stats.bytes_received += (slot.len * slot.kind.wire_width()) as u64;
            if self.record_latency {
                let histogram = if depth == 1 {
                    &mut stats.single_latency
                } else {
                    &mut stats.pipelined_latency
                };
                histogram.saturating_record(reply.timing.round_trip_ns.max(1));
            }
            if replies_match(slot.values(), slot.reply_values()) {
                stats.verified += 1;
                continue;
            }
            stats.corrupted += 1;
            if stats.mismatches.len() < KEPT_MISMATCHES {
                let mismatch = verify(slot.values(), slot.reply_values()).map_or_else(
                    || "the fast and the describing comparison disagree".to_owned(),
                    |m| m.to_string(),
                );
                stats.mismatches.push(format!(
                    "{}seq {} ({} × {}, {path}, batch of {depth}): {mismatch}",
                    prefix(&self.label),
                    reply.seq,
                    slot.len,
                    slot.kind,
                ));
            }
        }
        Ok(())
    }

    fn record_error(&mut self, error: Error, path: DataPath) -> Error {
        let text = format!("{}{error} (on the {path} path)", prefix(&self.label));
        self.stats.errors.push(text);
        error
    }

    /// Ends the conversation ([`Peer::close`]): BYE, and the server's exit status.
    ///
    /// # Errors
    /// As [`Peer::close`].
    pub fn close(self) -> Result<Option<ExitStatus>> {
        self.peer.close()
    }

    /// The statistics, giving up the client (its peer is dropped, which closes it).
    pub fn into_stats(self) -> Stats {
        self.stats
    }
}

fn prefix(label: &str) -> String {
    if label.is_empty() { String::new() } else { format!("{label}: ") }
}

// ---------------------------------------------------------------------------------------------
// Process usage
// ---------------------------------------------------------------------------------------------

/// Resident memory and open descriptors of one process at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// Resident set size (`VmRSS` of `/proc/PID/status`), in bytes.
    pub rss_bytes: u64,
    /// Entries of `/proc/PID/fd`.
    pub fds: usize,
}

impl Usage {
    /// The usage of process `pid`; for this process, the descriptor that lists `/proc/PID/fd`
    /// is not counted.
    ///
    /// # Errors
    /// [`Error::Io`] when `/proc/PID` cannot be read (the process is gone, or belongs to
    /// another user); [`Error::InvalidArgument`] when `VmRSS` is missing.
    pub fn of(pid: u32) -> Result<Usage> {
        let status = fs::read_to_string(format!("/proc/{pid}/status"))?;
        let rss_kib = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .ok_or_else(|| Error::InvalidArgument {
                what: "process status",
                reason: format!("no VmRSS line in /proc/{pid}/status"),
            })?;
        let mut fds = fs::read_dir(format!("/proc/{pid}/fd"))?.count();
        if pid == std::process::id() {
            fds = fds.saturating_sub(1);
        }
        Ok(Usage { rss_bytes: rss_kib * 1024, fds })
    }
}

/// One process of a soak, measured after warm-up and at the end of the run.
#[derive(Clone, Debug)]
pub struct ProcessUsage {
    /// `peer soak (this process)` or `server N (handler)`.
    pub role: String,
    /// Its pid.
    pub pid: u32,
    /// After warm-up, or why it could not be read.
    pub start: std::result::Result<Usage, String>,
    /// At the end of the run, before closing, or why it could not be read.
    pub end: std::result::Result<Usage, String>,
}

impl ProcessUsage {
    /// Why this process's resources are not flat, if they are not.
    pub fn problem(&self) -> Option<String> {
        let (start, end) = match (&self.start, &self.end) {
            (Ok(start), Ok(end)) => (start, end),
            (Err(e), _) | (_, Err(e)) => {
                return Some(format!("{} (pid {}): usage unreadable: {e}", self.role, self.pid));
            }
        };
        let tolerance = rss_tolerance(start.rss_bytes);
        if end.rss_bytes > start.rss_bytes + tolerance {
            return Some(format!(
                "{} (pid {}): RSS grew from {} to {}, more than the tolerance of {}",
                self.role,
                self.pid,
                mib(start.rss_bytes),
                mib(end.rss_bytes),
                mib(tolerance)
            ));
        }
        if end.fds != start.fds {
            return Some(format!(
                "{} (pid {}): open descriptors changed from {} to {}",
                self.role, self.pid, start.fds, end.fds
            ));
        }
        None
    }
}

fn usage_of(pid: u32) -> std::result::Result<Usage, String> {
    Usage::of(pid).map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

/// One client–server pair's result.
#[derive(Clone, Debug)]
pub struct PairReport {
    /// The server's handler.
    pub handler: &'static str,
    /// The server's pid.
    pub server_pid: Option<u32>,
    /// What the client did and found.
    pub stats: Stats,
    /// How the server ended (`exited with status 0 after BYE`), or what went wrong closing.
    pub close: std::result::Result<String, String>,
}

/// The result of [`run`].
#[derive(Clone, Debug)]
pub struct SoakReport {
    /// What ran.
    pub config: Config,
    /// Time spent exchanging (after warm-up), measured.
    pub elapsed: Duration,
    /// Time spent warming up.
    pub warm_up: Duration,
    /// The smallest capacity per direction (pipe, ring or slot) of any pair, bytes.
    pub pipe_capacity: Option<usize>,
    /// Deepest pipelined batch the transport allows.
    pub max_depth: usize,
    /// Bytes allowed in flight each way in a pipelined batch.
    pub pipeline_budget: usize,
    /// Per pair.
    pub pairs: Vec<PairReport>,
    /// All pairs together.
    pub total: Stats,
    /// This process, then each server.
    pub processes: Vec<ProcessUsage>,
}

impl SoakReport {
    /// Everything that makes the soak fail, one line each; empty when it passed.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        let t = &self.total;
        if t.lost + t.reordered + t.corrupted > 0 {
            out.push(format!(
                "{} lost, {} reordered, {} corrupted of {} requests",
                t.lost, t.reordered, t.corrupted, t.requests
            ));
        }
        out.extend(t.errors.iter().cloned());
        if t.unaccounted() != 0 {
            out.push(format!("{} requests unaccounted for", t.unaccounted()));
        }
        if t.requests == 0 {
            out.push("no request was exchanged".to_owned());
        }
        for (i, pair) in self.pairs.iter().enumerate() {
            if let Err(e) = &pair.close {
                out.push(format!("pair {}: closing: {e}", i + 1));
            }
        }
        for (i, process) in self.processes.iter().enumerate() {
            // A server whose conversation failed is gone; its error is reported above.
            let pair_failed =
                i > 0 && self.pairs.get(i - 1).is_some_and(|p| !p.stats.errors.is_empty());
            if !pair_failed && let Some(problem) = process.problem() {
                out.push(problem);
            }
        }
        out
    }

    /// True when [`SoakReport::failures`] is empty.
    pub fn passed(&self) -> bool {
        self.failures().is_empty()
    }

    /// Writes the summary: per pair, traffic, mix, integrity counts, latencies, and the
    /// processes' memory and descriptors, then the verdict.
    ///
    /// # Errors
    /// Those of `out`.
    pub fn render(&self, out: &mut impl Write) -> io::Result<()> {
        let t = &self.total;
        let c = &self.config;
        writeln!(
            out,
            "ran {} after a {} warm-up; {} capacity {}; pipelined batches keep under {} \
             bytes in flight each way",
            format_duration(self.elapsed),
            format_duration(self.warm_up),
            c.transport,
            self.pipe_capacity.map_or("unknown".to_owned(), |b| format!("{b} bytes")),
            self.pipeline_budget
        )?;
        writeln!(out)?;
        writeln!(
            out,
            "{:<6} {:<9} {:>8} {:>10} {:>10} {:>10} {:>5} {:>9} {:>9} {:>10}",
            "pair",
            "handler",
            "server",
            "requests",
            "replies",
            "verified",
            "lost",
            "reordered",
            "corrupted",
            "MB moved"
        )?;
        let row = |out: &mut dyn Write, name: &str, handler: &str, pid: &str, s: &Stats| {
            writeln!(
                out,
                "{:<6} {:<9} {:>8} {:>10} {:>10} {:>10} {:>5} {:>9} {:>9} {:>10.1}",
                name,
                handler,
                pid,
                s.requests,
                s.replies,
                s.verified,
                s.lost,
                s.reordered,
                s.corrupted,
                (s.bytes_sent + s.bytes_received) as f64 / 1e6
            )
        };
        for (i, pair) in self.pairs.iter().enumerate() {
            let pid = pair.server_pid.map_or("-".to_owned(), |p| p.to_string());
            row(out, &(i + 1).to_string(), pair.handler, &pid, &pair.stats)?;
        }
        if self.pairs.len() > 1 {
            row(out, "all", "", "", t)?;
        }
        writeln!(out)?;
        let seconds = (self.elapsed + self.warm_up).as_secs_f64().max(1e-9);
        writeln!(
            out,
            "frames: {} requests + {} replies; {} payload bytes sent, {} received ({:.0} MB/s \
             both ways); largest request {} elements",
            t.requests,
            t.replies,
            t.bytes_sent,
            t.bytes_received,
            (t.bytes_sent + t.bytes_received) as f64 / 1e6 / seconds,
            t.largest_elements
        )?;
        let kinds: Vec<String> = ValueKind::ALL
            .iter()
            .zip(&t.by_kind)
            .map(|(kind, count)| format!("{kind} {} ({} elements)", count.requests, count.elements))
            .collect();
        writeln!(out, "mix: {}", kinds.join(", "))?;
        writeln!(
            out,
            "     {} single and {} pipelined batches (depth 2-{}); {} \
             requests zero-copy, {} codec; {} special values sent (NaN payloads, signalling \
             NaNs, ±0, subnormals, ±inf)",
            t.single_batches,
            t.pipelined_batches,
            self.max_depth,
            t.zero_copy_requests,
            t.codec_requests,
            t.special_elements
        )?;
        writeln!(
            out,
            "integrity: lost {}, reordered {}, corrupted {}, errors {}",
            t.lost,
            t.reordered,
            t.corrupted,
            t.errors.len()
        )?;
        for mismatch in &t.mismatches {
            writeln!(out, "  corrupted: {mismatch}")?;
        }
        for error in &t.errors {
            writeln!(out, "  error: {error}")?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "{:<28} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "latency (all sizes)", "n", "min", "p50", "p90", "p99", "p99.9", "max"
        )?;
        for (name, histogram) in [
            ("single round trip", &t.single_latency),
            ("pipelined send-to-reply", &t.pipelined_latency),
        ] {
            let p = Percentiles::of(histogram);
            let f = |ns: u64| format_duration(Duration::from_nanos(ns));
            writeln!(
                out,
                "{:<28} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
                name,
                histogram.len(),
                f(p.min),
                f(p.p50),
                f(p.p90),
                f(p.p99),
                f(p.p999),
                f(p.max)
            )?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "{:<26} {:>8} {:>10} {:>10} {:>10} {:>9} {:>7} {:>7}",
            "process", "pid", "RSS start", "RSS end", "change", "tolerance", "fds", "fds end"
        )?;
        for p in &self.processes {
            let cells = match (&p.start, &p.end) {
                (Ok(s), Ok(e)) => {
                    let change = e.rss_bytes as i128 - s.rss_bytes as i128;
                    [
                        mib(s.rss_bytes),
                        mib(e.rss_bytes),
                        format!("{:+.1} MiB", change as f64 / f64::from(1u32 << 20)),
                        mib(rss_tolerance(s.rss_bytes)),
                        s.fds.to_string(),
                        e.fds.to_string(),
                    ]
                }
                (start, end) => {
                    let show = |u: &std::result::Result<Usage, String>| match u {
                        Ok(u) => (mib(u.rss_bytes), u.fds.to_string()),
                        Err(_) => ("gone".to_owned(), "-".to_owned()),
                    };
                    let (rs, fs) = show(start);
                    let (re, fe) = show(end);
                    [rs, re, "-".into(), "-".into(), fs, fe]
                }
            };
            writeln!(
                out,
                "{:<26} {:>8} {:>10} {:>10} {:>10} {:>9} {:>7} {:>7}",
                p.role, p.pid, cells[0], cells[1], cells[2], cells[3], cells[4], cells[5]
            )?;
        }
        writeln!(
            out,
            "(flat: RSS end <= start + max({}, {RSS_TOLERANCE_PERCENT}% of start); descriptors \
             equal)",
            mib(RSS_TOLERANCE_FLOOR)
        )?;
        for (i, pair) in self.pairs.iter().enumerate() {
            if let Ok(status) = &pair.close {
                writeln!(out, "server {} {status}", i + 1)?;
            }
        }
        writeln!(out)?;
        let failures = self.failures();
        if failures.is_empty() {
            writeln!(
                out,
                "verdict: PASS: {} requests verified bit for bit; 0 lost, 0 reordered, 0 \
                 corrupted; RSS and descriptors flat",
                t.verified
            )?;
        } else {
            writeln!(out, "verdict: FAIL")?;
            for failure in &failures {
                writeln!(out, "  {failure}")?;
            }
            writeln!(out, "replay: {}", c.replay_command())?;
        }
        Ok(())
    }
}

/// Writes what is about to run and the seed, before the run (so a run that crashes or hangs
/// still shows how to replay it).
///
/// # Errors
/// Those of `out`.
pub fn render_plan(config: &Config, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "peer soak: {} pair{} over {} for {}, up to {} elements per request, wait {}, \
         timeout {}",
        config.peers,
        if config.peers == 1 { "" } else { "s" },
        config.transport,
        format_duration(config.duration),
        config.max_elements,
        config.options.wait,
        config.options.timeout.map_or("none".to_owned(), format_duration),
    )?;
    writeln!(out, "seed {} (replay: {})", config.seed, config.replay_command())
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

/// Runs a soak: spawns `config.peers` servers, warms each pair up on its own thread, measures
/// every process, lets the pairs exchange for `config.duration`, measures again, and closes
/// the pairs.
///
/// A failure during the exchange (lost, reordered or corrupted frames, a dead server, resources
/// not flat) is not an error of this function: it is in the report, see
/// [`SoakReport::failures`].
///
/// # Errors
/// [`Error::InvalidArgument`] for an invalid configuration; the errors of [`Peer::spawn_server`]
/// when a server cannot be started, and [`Error::Io`] when a thread cannot be (the servers
/// already started are closed).
///
/// # Panics
/// Re-raises the panic of a pair's thread (a bug), after the other pairs have been closed.
pub fn run(config: &Config) -> Result<SoakReport> {
    config.validate()?;
    let mut peers = Vec::with_capacity(config.peers);
    for i in 0..config.peers {
        let handler = HANDLERS[i % HANDLERS.len()];
        let options = Options { transport: config.transport, ..config.options.clone() };
        peers.push(Peer::spawn_server(&config.peer_exe, handler, options)?);
    }
    let pipe_capacity = peers.iter().filter_map(Peer::capacity).min();
    let max_depth = peers
        .iter()
        .filter_map(Peer::max_in_flight)
        .min()
        .unwrap_or(MAX_PIPELINE_DEPTH)
        .min(MAX_PIPELINE_DEPTH);
    let server_pids: Vec<Option<u32>> = peers.iter().map(Peer::server_pid).collect();
    // The workers and this thread meet four times: warm, go, done, measured.
    let gate = Gate::new(config.peers + 1);

    let outcome = thread::scope(|scope| -> Result<_> {
        let started = Instant::now();
        let mut workers = Vec::with_capacity(config.peers);
        for (i, peer) in peers.into_iter().enumerate() {
            let gate = &gate;
            let spawned = thread::Builder::new().name(format!("soak pair {}", i + 1)).spawn_scoped(
                scope,
                move || {
                    let _abort = AbortOnPanic(gate);
                    pair_worker(i, peer, config, gate)
                },
            );
            match spawned {
                Ok(worker) => workers.push(worker),
                Err(e) => {
                    // The peers not yet moved into a thread are dropped (closed) on return.
                    gate.abort();
                    for worker in workers {
                        let _ = worker.join();
                    }
                    return Err(Error::Io(e));
                }
            }
        }
        let me = std::process::id();
        let roles = std::iter::once(("peer soak (this process)".to_owned(), Some(me))).chain(
            server_pids.iter().enumerate().map(|(i, &pid)| {
                (format!("server {} ({})", i + 1, HANDLERS[i % HANDLERS.len()]), pid)
            }),
        );
        let mut processes: Vec<ProcessUsage> = roles
            .filter_map(|(role, pid)| {
                let pid = pid?;
                let unmeasured = Err("not measured".to_owned());
                Some(ProcessUsage { role, pid, start: unmeasured.clone(), end: unmeasured })
            })
            .collect();
        let mut warm_up = Duration::ZERO;
        let mut elapsed = Duration::ZERO;
        if gate.wait() {
            warm_up = started.elapsed();
            for process in &mut processes {
                process.start = usage_of(process.pid);
            }
            let go = Instant::now();
            if gate.wait() && gate.wait() {
                elapsed = go.elapsed();
                for process in &mut processes {
                    process.end = usage_of(process.pid);
                }
                gate.wait();
            }
        }
        let mut pairs = Vec::with_capacity(workers.len());
        let mut budget = usize::MAX;
        let mut panic = None;
        for worker in workers {
            match worker.join() {
                Ok((report, pair_budget)) => {
                    budget = budget.min(pair_budget);
                    pairs.push(report);
                }
                Err(payload) => panic = panic.or(Some(payload)),
            }
        }
        if let Some(payload) = panic {
            std::panic::resume_unwind(payload);
        }
        Ok((pairs, processes, warm_up, elapsed, budget))
    });
    let (pairs, processes, warm_up, elapsed, pipeline_budget) = outcome?;

    let mut total = Stats::new();
    for pair in &pairs {
        total.merge(&pair.stats);
    }
    Ok(SoakReport {
        config: config.clone(),
        elapsed,
        warm_up,
        pipe_capacity,
        max_depth,
        pipeline_budget,
        pairs,
        total,
        processes,
    })
}

/// One pair's thread: warm up, wait for the others, exchange until the deadline, wait while
/// the processes are measured, close. Meets the others at all four points unless the gate is
/// called off, in which case it closes at once.
fn pair_worker(index: usize, peer: Peer, config: &Config, gate: &Gate) -> (PairReport, usize) {
    let handler = HANDLERS[index % HANDLERS.len()];
    let server_pid = peer.server_pid();
    let mut client = Client::new(peer, pair_seed(config.seed, index), config.max_elements);
    client.set_label(format!("pair {}", index + 1));
    let budget = client.pipeline_budget();
    let mut failed = client.warm_up().is_err();
    let mut go = gate.wait() && gate.wait();
    if go && !failed {
        failed = client.run_until(Instant::now() + config.duration).is_err();
    }
    go = go && gate.wait() && gate.wait();
    let stats = client.stats().clone();
    let close = if failed {
        // The peer has already terminated and reaped its server; the error is in the stats.
        drop(client);
        Ok("was terminated and reaped by its client after the error".to_owned())
    } else if !go {
        drop(client);
        Err("the run was called off".to_owned())
    } else {
        match client.close() {
            Ok(Some(status)) if status.success() => {
                Ok(format!("{} after BYE", describe_status(status)))
            }
            Ok(Some(status)) => Err(format!("server {}", describe_status(status))),
            Ok(None) => Ok("(not a process)".to_owned()),
            Err(e) => Err(e.to_string()),
        }
    };
    (PairReport { handler, server_pid, stats, close }, budget)
}

/// A reusable meeting point of a fixed number of threads that can be called off, so that a
/// thread that fails to start or panics releases the others instead of hanging them (which a
/// `std::sync::Barrier` would).
#[derive(Debug)]
struct Gate {
    parties: usize,
    state: Mutex<GateState>,
    turned: Condvar,
}

#[derive(Debug)]
struct GateState {
    generation: u64,
    arrived: usize,
    aborted: bool,
}

impl Gate {
    fn new(parties: usize) -> Gate {
        Gate {
            parties,
            state: Mutex::new(GateState { generation: 0, arrived: 0, aborted: false }),
            turned: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until all parties have arrived: true; or until the gate is called off: false.
    fn wait(&self) -> bool {
        let mut state = self.lock();
        if state.aborted {
            return false;
        }
        state.arrived += 1;
        if state.arrived == self.parties {
            state.arrived = 0;
            state.generation += 1;
            self.turned.notify_all();
            return true;
        }
        let generation = state.generation;
        while state.generation == generation && !state.aborted {
            state = self.turned.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        state.generation != generation
    }

    /// Calls the gate off: every wait, now and later, returns false.
    fn abort(&self) {
        self.lock().aborted = true;
        self.turned.notify_all();
    }
}

/// Calls the gate off when the thread holding it unwinds.
struct AbortOnPanic<'a>(&'a Gate);

impl Drop for AbortOnPanic<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_get_different_seeds() {
        assert_ne!(pair_seed(1, 0), pair_seed(1, 1));
        assert_eq!(pair_seed(1, 0), pair_seed(1, 0));
    }

    #[test]
    fn sizes_cover_zero_small_and_the_maximum_and_never_exceed_it() {
        let mut rng = Rng::new(1);
        let max = 1 << 20;
        let sizes: Vec<usize> = (0..100_000).map(|_| skewed_len(&mut rng, max)).collect();
        assert!(sizes.iter().all(|&n| n <= max));
        assert!(sizes.contains(&0));
        assert!(sizes.contains(&max));
        let small = sizes.iter().filter(|&&n| n <= 1024).count();
        let large = sizes.iter().filter(|&&n| n >= max / 2).count();
        assert!(small > sizes.len() / 3, "small sizes dominate: {small}");
        assert!(large > sizes.len() / 40, "large sizes occur: {large}");
        for max in [0, 1, 2, 3, 7, 1000] {
            assert!((0..1000).all(|_| skewed_len(&mut rng, max) <= max));
        }
    }

    #[test]
    fn random_values_include_every_kind_of_special() {
        let mut rng = Rng::new(9);
        let values: Vec<f64> =
            (0..20_000).map(|_| f64::from_bits(random_f64_bits(&mut rng).0)).collect();
        let snan = |x: &f64| x.is_nan() && x.to_bits() & (1 << 51) == 0;
        assert!(values.iter().any(snan));
        assert!(values.iter().any(|x| x.is_nan() && !snan(x)));
        assert!(values.iter().any(|x| x.to_bits() == F64_SIGN));
        assert!(values.iter().any(|x| x.is_subnormal()));
        assert!(values.iter().any(|x| x.is_infinite() && x.is_sign_negative()));
        let floats: Vec<f32> =
            (0..20_000).map(|_| f32::from_bits(random_f32_bits(&mut rng).0)).collect();
        assert!(floats.iter().any(|x| x.is_nan() && x.to_bits() & (1 << 22) == 0));
        assert!(floats.iter().any(|x| x.is_subnormal()));
        assert!(floats.iter().any(|x| x.to_bits() == F32_SIGN));
    }

    #[test]
    fn a_slot_never_passes_a_reply_it_did_not_receive() {
        let mut rng = Rng::new(3);
        for kind in ValueKind::ALL {
            let mut slot = Slot::new(4096);
            slot.fill(kind, 100, &mut rng);
            assert!(!replies_match(slot.values(), slot.reply_values()), "{kind}");
            assert!(verify(slot.values(), slot.reply_values()).is_some(), "{kind}");
        }
    }

    #[test]
    fn a_gate_releases_everyone_when_called_off() {
        let gate = Gate::new(3);
        thread::scope(|scope| {
            let waiter = scope.spawn(|| gate.wait());
            let both = scope.spawn(|| gate.wait());
            assert!(gate.wait(), "all three arrived");
            assert!(waiter.join().unwrap() && both.join().unwrap());
            let waiter = scope.spawn(|| gate.wait());
            gate.abort();
            assert!(!waiter.join().unwrap());
            assert!(!gate.wait());
        });
    }
}
