//! Round trips driven in-process, for regressions: the `peer` binary as the server, the same
//! calls the report makes, and the raw read/write baseline beside them.
//!
//! ```text
//! cargo bench --bench roundtrip
//! ```
//!
//! Group `rtt/<bytes>`: `raw` (plain read/write echo over pipes, the floor; `raw-shm-ring`,
//! the same over a shared ring), then `Peer::call` with `echo-raw` and `echo` servers on the
//! zero-copy and codec paths, over each transport (`pipe`, `shm-sem`, `shm-ring`), all with
//! the hybrid wait. Throughput is the payload bytes moved in both directions.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use peerpipe::codec::{Values, ValuesMut};
use peerpipe::{DataPath, Options, Peer, TransportKind, Wait};
use peerpipe_cli::baseline::RawEcho;

const PEER: &str = env!("CARGO_BIN_EXE_peer");

fn options(path: DataPath, transport: TransportKind) -> Options {
    Options { wait: Wait::default(), path, transport, ..Options::default() }
}

fn round_trips(c: &mut Criterion) {
    for elements in [500usize, 1 << 20] {
        let bytes = elements * 8;
        let mut group = c.benchmark_group(format!("rtt/{bytes}"));
        group.throughput(Throughput::Bytes(2 * bytes as u64));
        if elements > 10_000 {
            group.sample_size(20).measurement_time(Duration::from_secs(4));
        }
        for (name, transport) in
            [("raw", TransportKind::Pipe), ("raw-shm-ring", TransportKind::ShmRing)]
        {
            let mut raw = RawEcho::spawn(
                PEER.as_ref(),
                bytes,
                Wait::default(),
                transport,
                Options::default().pipe_capacity,
                Some(Duration::from_secs(10)),
            )
            .expect("spawn raw echo");
            group.bench_function(name, |b| b.iter(|| black_box(raw.round_trip().expect("raw"))));
            raw.close().expect("close raw echo");
        }

        let state: Vec<f64> = (0..elements).map(|i| i as f64 * 0.5).collect();
        let mut reply = vec![0.0; elements];
        let servers = TransportKind::ALL.into_iter().flat_map(|t| {
            ["echo-raw", "echo"].into_iter().flat_map(move |h| {
                [DataPath::ZeroCopy, DataPath::Codec].into_iter().map(move |p| (t, h, p))
            })
        });
        for (transport, handler, path) in servers {
            let options = options(path, transport);
            let mut peer = Peer::spawn_server(PEER, handler, options).expect("spawn");
            group.bench_function(format!("{transport}/{handler}/{path}"), |b| {
                b.iter(|| peer.call(Values::F64(&state), ValuesMut::F64(&mut reply)).expect("call"))
            });
            assert_eq!(reply, state);
            peer.close().expect("close");
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    targets = round_trips
}
criterion_main!(benches);
