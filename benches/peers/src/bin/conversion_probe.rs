//! Why converting 1 Mi f64 inside a round trip costs several times what `cargo bench --bench
//! codec` measures: the same encode and decode (peerpipe's codec, 8 MiB) under the conditions
//! of an exchange, one at a time, interleaved round by round (on a machine without hardware
//! performance counters, where `perf stat -e instructions` says "not supported").
//!
//! ```sh
//! cd benches/peers && cargo run --release --bin conversion_probe -- [ROUNDS]
//! ```
//!
//! Conditions, each for encode (f64 → LE bytes) and decode (LE bytes → f64):
//! - `hot`: the same source and destination every time (what criterion measures: both stay
//!   in the 32 MiB L3 after the first pass);
//! - `cold`: 64 MiB of other memory is walked between conversions, so source and destination
//!   come from DRAM, as after a round trip whose server touched its own 16–24 MiB;
//! - `fresh`: a new destination each time (page faults on first touch);
//! - `into ring`: encoded in 64 KiB pieces into one 1 MiB buffer (what encoding straight into
//!   a shared ring writes), source cold;
//! - `busy`: as `cold`, with the other CPU spinning (a `spin` server waiting for its request);
//!
//! each serially and on rayon (peerpipe's `Parallelism::Rayon`, the pool of 2 threads).
//! Prints p50 per condition over ROUNDS rounds (default 15).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use peerpipe::codec::{self, Parallelism, Values, ValuesMut};
use peerpipe_cli::report::cpu::Pinned;
use peerpipe_peers::{BoxResult, elapsed_ns};

const N: usize = 1 << 20;
const FLUSH_BYTES: usize = 64 << 20;

fn flush(junk: &mut [u8]) {
    for (i, byte) in junk.iter_mut().enumerate().step_by(64) {
        *byte = byte.wrapping_add(i as u8);
    }
    black_box(&junk[..]);
}

fn main() -> BoxResult<()> {
    let rounds: usize = std::env::args().nth(1).map_or(Ok(15), |r| r.parse())?;
    let pinned = Pinned::to_first_allowed_cpu()?;
    let values: Vec<f64> = (0..N).map(|k| (k as f64).sqrt()).collect();
    let mut wire = vec![0u8; N * 8];
    let mut out = vec![0.0f64; N];
    let mut ring = vec![0u8; 1 << 20];
    let mut junk = vec![1u8; FLUSH_BYTES];
    codec::encode_into(Values::F64(&values), &mut wire)?;
    let modes = [("serial", Parallelism::Serial), ("rayon", Parallelism::Rayon)];
    let conditions = ["hot", "cold", "fresh", "into ring", "busy"];
    let mut names = Vec::new();
    let mut samples: Vec<Vec<u64>> = Vec::new();
    for c in conditions {
        for (m, _) in modes {
            for what in ["encode", "decode"] {
                if c == "into ring" && (what == "decode" || m == "rayon") {
                    continue;
                }
                names.push(format!("{what} {c} {m}"));
                samples.push(Vec::new());
            }
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    for _ in 0..rounds {
        for (index, name) in names.iter().enumerate() {
            let par =
                if name.ends_with("rayon") { Parallelism::Rayon } else { Parallelism::Serial };
            let encode = name.starts_with("encode");
            let busy = name.contains(" busy ");
            // The spinner runs on the second CPU (spawned from it), like a spinning server.
            let spinner = busy.then(|| {
                stop.store(false, Ordering::SeqCst);
                let stop = Arc::clone(&stop);
                pinned.to_nth_allowed(1).expect("second CPU");
                let handle = std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                });
                pinned.to_nth_allowed(0).expect("first CPU");
                handle
            });
            if !name.contains(" hot ") {
                flush(&mut junk);
            } else {
                // Warm: one untimed pass first.
                if encode {
                    codec::encode_into_with(Values::F64(&values), &mut wire, par)?;
                } else {
                    codec::decode_into_with(&wire, ValuesMut::F64(&mut out), par)?;
                }
            }
            let ns = if name.contains(" fresh ") {
                if encode {
                    let mut fresh = vec![0u8; N * 8];
                    let t = Instant::now();
                    codec::encode_into_with(Values::F64(&values), &mut fresh, par)?;
                    let ns = elapsed_ns(t);
                    black_box(&fresh);
                    ns
                } else {
                    let mut fresh = vec![0.0f64; N];
                    let t = Instant::now();
                    codec::decode_into_with(&wire, ValuesMut::F64(&mut fresh), par)?;
                    let ns = elapsed_ns(t);
                    black_box(&fresh);
                    ns
                }
            } else if name.contains(" into ring ") {
                let t = Instant::now();
                for (k, piece) in (0..N * 8).step_by(64 << 10).enumerate() {
                    let at = (k * (64 << 10)) % ring.len();
                    codec::encode_at(Values::F64(&values), piece, &mut ring[at..at + (64 << 10)])?;
                }
                black_box(&ring);
                elapsed_ns(t)
            } else if encode {
                let t = Instant::now();
                codec::encode_into_with(Values::F64(&values), &mut wire, par)?;
                elapsed_ns(t)
            } else {
                let t = Instant::now();
                codec::decode_into_with(&wire, ValuesMut::F64(&mut out), par)?;
                elapsed_ns(t)
            };
            if let Some(handle) = spinner {
                stop.store(true, Ordering::SeqCst);
                handle.join().map_err(|_| "spinner panicked")?;
            }
            samples[index].push(ns);
        }
    }
    println!("1 Mi f64 (8 MiB), {rounds} rounds, p50 [min..max]");
    for (name, mut s) in names.into_iter().zip(samples) {
        s.sort_unstable();
        println!(
            "  {name:<24} {:>8.1} us  [{:.1} .. {:.1}]",
            s[s.len() / 2] as f64 / 1e3,
            s[0] as f64 / 1e3,
            s[s.len() - 1] as f64 / 1e3
        );
    }
    Ok(())
}
