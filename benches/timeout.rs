//! How far past a 200 µs timeout a receive on a silent peer returns, per transport and wait
//! strategy.
//!
//! ```text
//! cargo bench --bench timeout
//! ```
//!
//! Each iteration calls `Transport::recv_exact` with `Deadline::after(Some(200 µs))` on an
//! end whose peer never writes, checks that it ends in `Error::Timeout`, and records the time
//! *beyond* the 200 µs (`iter_custom`), so the reported figures are the overshoot: how late the
//! deadline fires. The issue asks that a 200 µs timeout not become a 1 ms or 10 ms sleep; the
//! tests assert only that the timeout happens, this bench measures how precisely.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use peerpipe::Error;
use peerpipe::transport::{Deadline, Transport, TransportKind, Wait};

const TIMEOUT: Duration = Duration::from_micros(200);

fn overshoot(c: &mut Criterion) {
    let mut group = c.benchmark_group("recv_timeout_overshoot_past_200us");
    group.sample_size(100).measurement_time(Duration::from_secs(4));
    let cases = TransportKind::ALL
        .into_iter()
        .flat_map(|t| [Wait::Block, Wait::Spin, Wait::default()].map(move |w| (t, w)));
    for (transport, wait) in cases {
        // The other end is kept open and silent: no data, no end of stream.
        let (mut silent_peer_of, _silent) = Transport::pair(transport, wait).expect("pair");
        let mut buf = [0u8; 32];
        group.bench_function(format!("{transport}/{wait}"), |b| {
            b.iter_custom(|iters| {
                let mut late = Duration::ZERO;
                for _ in 0..iters {
                    let started = Instant::now();
                    let result =
                        silent_peer_of.recv_exact(&mut buf, Deadline::after(Some(TIMEOUT)));
                    let elapsed = started.elapsed();
                    assert!(matches!(result, Err(Error::Timeout { .. })), "{result:?}");
                    black_box(result.err());
                    late += elapsed.saturating_sub(TIMEOUT);
                }
                late
            })
        });
    }
    group.finish();
}

criterion_group!(benches, overshoot);
criterion_main!(benches);
