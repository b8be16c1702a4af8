//! peerpipe's own ping-pong in the same shape as the other binaries here, so that `run.sh`
//! measures every library with one method: `Peer::call_f64` against `peer --role server`.
//!
//! ```sh
//! cd benches/peers
//! cargo run --release --bin peer_pingpong -- --peer-exe ../../target/release/peer \
//!     --transport shm-ring --wait spin --path zero-copy --handler echo-raw --elements 500
//! ```
//!
//! One round trip, timed on the client, is one `call_f64(&values, &mut reply)`: the request
//! from the caller's array (zero-copy: straight into the ring or pipe; codec: encoded), the
//! server's answer, the reply into the caller's buffer. Prints
//! `peer <transport> <path> <handler> <wait>: elements=N iterations=N p50_ns=.. p99_ns=.. min_ns=..`,
//! then a second line with the medians of the client's encode and decode time per call
//! (`CallTiming`, as the report splits a round trip): `encode_med_ns=.. decode_med_ns=..`,
//! the median of the call's own `round_trip_ns` (`call_round_trip_med_ns=..`, on the clock
//! `clock=..` of `peerpipe::clock`, against the p50 above, timed outside the call with
//! `Instant`).

use std::time::Instant;

use peerpipe::transport::TransportKind;
use peerpipe::{DataPath, Options, Peer, Wait};
use peerpipe_peers::{
    Args, BoxResult, elapsed_ns, initial_values, print_result, same_bits, spawn_placed, update,
};

fn main() -> BoxResult<()> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = Args::parse(&argv, "spin")?;
    let mut peer_exe = String::from("../../target/release/peer");
    let mut transport = TransportKind::ShmRing;
    let mut path = DataPath::ZeroCopy;
    let mut handler = String::from("echo-raw");
    let mut rest = args.rest.iter();
    while let Some(flag) = rest.next() {
        let mut value = || rest.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--peer-exe" => peer_exe = value()?,
            "--transport" => transport = value()?.parse()?,
            "--path" => path = value()?.parse()?,
            "--handler" => handler = value()?,
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    let wait: Wait = args.wait.parse()?;
    // Default ring (1 MiB per direction) and frame limit (64 MiB), as `peer` uses them.
    let options = Options { transport, wait, path, ..Options::default() };
    let mut peer =
        spawn_placed(args.split, || Ok(Peer::spawn_server(&peer_exe, &handler, options)?))?;

    let mut values = initial_values(args.elements);
    let mut reply = vec![0.0f64; args.elements];
    let mut samples = Vec::with_capacity(args.iterations);
    let (mut encode, mut decode, mut timed) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..args.warmup + args.iterations {
        update(&mut values, i);
        let start = Instant::now();
        let timing = peer.call_f64(&values, &mut reply)?;
        let ns = elapsed_ns(start);
        if !same_bits(&reply, &values) {
            return Err(format!("round trip {i}: the reply differs from the request").into());
        }
        if i >= args.warmup {
            samples.push(ns);
            encode.push(timing.encode_ns);
            decode.push(timing.decode_ns);
            timed.push(timing.round_trip_ns);
        }
    }
    peer.close()?;
    let name = format!("peer {transport} {path} {handler} {}", wait.name());
    print_result(&name, args.elements, &mut samples);
    // The client's conversion inside those round trips (peer's own split, as in the report).
    encode.sort_unstable();
    decode.sort_unstable();
    timed.sort_unstable();
    println!(
        "{name}: encode_med_ns={} decode_med_ns={} call_round_trip_med_ns={} clock={}",
        encode[encode.len() / 2],
        decode[decode.len() / 2],
        timed[timed.len() / 2],
        peerpipe::clock::source()
    );
    Ok(())
}
