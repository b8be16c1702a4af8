//! peerpipe's `shm-ring` without the layers above it: two threads (client on the first CPU,
//! server on the second, as `--pin split`) echo the bytes of an f64 array through a
//! [`ShmLink`] ring pair with `try_write` / `try_read` and spin — no frame header, no
//! `Peer`, no serve loop, no timing of phases. Against `peer_pingpong --transport shm-ring
//! --wait spin --handler echo-raw` it says what the ring itself costs and what the framing,
//! the checks and the timing above it add; against `shm_pingpong.c` how close the ring is to
//! a plain C mailbox with the same copies.
//!
//! ```sh
//! cd benches/peers && cargo run --release --bin ring_pingpong -- --elements 500
//! ```
//!
//! Prints `peer shm-ring bare ring, threads: elements=N iterations=N p50_ns=.. p99_ns=.. min_ns=..`.

use std::thread;
use std::time::Instant;

use peerpipe::transport::{DEFAULT_SHM_CAPACITY, ShmLink, TransportKind};
use peerpipe_peers::{
    Args, BoxResult, elapsed_ns, initial_values, print_result, ring_recv, ring_send, same_bits,
    spawn_placed, update,
};

fn as_bytes(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

fn main() -> BoxResult<()> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = Args::parse(&argv, "spin")?;
    if args.wait != "spin" {
        return Err(format!("--wait {:?}: the bare ring only spins", args.wait).into());
    }
    if let Some(flag) = args.rest.first() {
        return Err(format!("unknown argument {flag:?}").into());
    }
    let (mut client, mut server) = ShmLink::pair(TransportKind::ShmRing, DEFAULT_SHM_CAPACITY)?;
    let bytes = args.elements * 8;
    let rounds = args.warmup + args.iterations;
    let echo = spawn_placed(args.split, || {
        Ok(thread::spawn(move || -> Result<(), String> {
            let mut buffer = vec![0u8; bytes];
            for _ in 0..rounds {
                ring_recv(&mut server, &mut buffer).map_err(|e| e.to_string())?;
                ring_send(&mut server, &buffer).map_err(|e| e.to_string())?;
            }
            Ok(())
        }))
    })?;
    let mut values = initial_values(args.elements);
    let mut reply = vec![0u8; bytes];
    let mut samples = Vec::with_capacity(args.iterations);
    for i in 0..rounds {
        update(&mut values, i);
        let request = as_bytes(&values);
        let start = Instant::now();
        ring_send(&mut client, &request)?;
        ring_recv(&mut client, &mut reply)?;
        let ns = elapsed_ns(start);
        let echoed: Vec<f64> =
            reply.chunks_exact(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect();
        if !same_bits(&echoed, &values) {
            return Err(format!("round trip {i}: the reply differs from the request").into());
        }
        if i >= args.warmup {
            samples.push(ns);
        }
    }
    echo.join().map_err(|_| "the echo thread panicked")??;
    print_result("peer shm-ring bare ring, threads", args.elements, &mut samples);
    Ok(())
}
