//! The soak: client–server pairs exchange random arrays for a long time, every reply checked
//! bit for bit, and every process's memory and descriptors compared at start and end.
//!
//! [`run()`] spawns K servers (`peer --role server`, handlers `echo` and `echo-raw` alternating)
//! and drives each from its own thread with a [`Client`]. A client sends arrays of random size
//! (0 to `max_elements` elements, log-uniform so small ones dominate but the largest occur),
//! random dtype (f64, f32, f64 narrowed to f32 on the wire, bytes) and random bit patterns
//! (NaN payloads, signalling NaNs, -0.0, subnormals, ±inf, arbitrary bits), over both data
//! paths, one at a time or pipelined, and checks every reply with [`verify()`].
//!
//! Every request ends in exactly one bucket of [`Stats`]: verified, corrupted (bits, dtype or
//! count differ), reordered (the reply carried another seq: [`Error::SeqMismatch`](peerpipe::Error::SeqMismatch)) or lost
//! (no reply came back to check: the conversation failed with it in flight, or the server
//! answered ERROR). So `requests = verified + corrupted + reordered + lost`.
//!
//! Pipelined requests keep the bytes in flight each way under half the pipe capacity
//! ([`Peer::capacity`](peerpipe::Peer::capacity)): a server stops reading while its reply pipe is full, so more
//! would deadlock (see [`Peer::send`](peerpipe::Peer::send)).
//!
//! All randomness comes from one seed ([`Config::seed`]; pair `i` derives its own), so a run
//! that fails can be replayed: the same seed gives each pair the same sequence of arrays.
//!
//! ```
//! use std::thread;
//! use std::time::{Duration, Instant};
//! use peerpipe::handlers::EchoRaw;
//! use peerpipe::server::{serve, ServeOptions};
//! use peerpipe_cli::soak::Client;
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
//!
//! The pieces, one concern each: [`Config`] (what runs, and the seeds); `random` (the bit
//! patterns and sizes drawn); [`verify()`] and [`Mismatch`] (checking a reply bit for bit);
//! [`Stats`] (the buckets every request ends in); [`Client`] (one side of a pair); [`Usage`]
//! and [`ProcessUsage`] (memory and descriptors, and how much they may grow); [`run()`] (the
//! pairs on their threads, met at a `Gate`); [`SoakReport`] (the verdict and its rendering).

mod client;
mod config;
mod gate;
mod random;
mod render;
mod run;
mod stats;
mod usage;
mod verify;

pub use client::{Client, MAX_PIPELINE_DEPTH};
pub use config::{
    Config, DEFAULT_DURATION, DEFAULT_MAX_ELEMENTS, HANDLERS, pair_seed, seed_from_clock,
};
pub use render::{PairReport, SoakReport, render_plan};
pub use run::run;
pub use stats::{KindCount, Stats};
pub use usage::{ProcessUsage, RSS_TOLERANCE_FLOOR, RSS_TOLERANCE_PERCENT, Usage, rss_tolerance};
pub use verify::{Mismatch, ValueKind, verify};
