//! Codec throughput: explicit little-endian codec vs zero-copy vs a plain memcpy of the same
//! bytes, f64↔f32 narrowing/widening, serial vs rayon; plus the sweep that chooses
//! `codec::PARALLEL_MIN_ELEMENTS`.
//!
//! ```text
//! cargo bench --bench codec                 # everything (about 5 minutes)
//! cargo bench --bench codec -- threshold    # only the rayon threshold sweep
//! ```
//!
//! Group names are `<what>/<elements>`; every group reports `Throughput::Bytes` and contains a
//! `memcpy` member that copies the group's byte count with `copy_from_slice`, so each figure has
//! its baseline from the same run:
//!
//! - `f64/N`: 8·N bytes. Codec encode/decode (serial, rayon, auto) and zero-copy
//!   (`zc_send`: `wire_bytes` + copying those bytes out, what a write from the slice costs in a
//!   copy; `zc_recv`: copying wire bytes into `wire_bytes_mut` + `finish_receive`).
//! - `f32/N`: 4·N bytes. Codec encode/decode.
//! - `f64_f32/N`: 8·N bytes, i.e. counted on the f64 side. Narrowing (`Values::F64AsF32`, reads
//!   8·N, writes 4·N) and widening (`ValuesMut::F64FromF32`, reads 4·N, writes 8·N).
//! - `threshold/encode_f64`, `threshold/narrow`: serial vs rayon over a sweep of element counts,
//!   throughput counted on the f64 side, calls back to back (rayon's workers stay awake).
//! - `threshold/encode_f64_idle`: the same f64 encode sweep with the pool idle for 1 ms before
//!   each timed call, as between requests, so rayon pays for waking its workers.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use peerpipe::codec::{self, Parallelism, Values, ValuesMut};
use peerpipe::zerocopy;

/// The payload sizes of the issue: a state vector of a few hundred doubles, and 1 Mi elements.
const SMALL: usize = 500;
const LARGE: usize = 1 << 20;

/// Element counts for the rayon threshold sweep: 16 Ki … 4 Mi (128 KiB … 32 MiB of f64).
const SWEEP: [usize; 9] =
    [1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 22];

/// Pause before each call in `threshold/encode_f64_idle`: long enough for rayon's idle workers
/// to go to sleep (they yield ~32 times, microseconds, before sleeping).
const IDLE: Duration = Duration::from_millis(1);

const MODES: [(&str, Parallelism); 3] =
    [("serial", Parallelism::Serial), ("rayon", Parallelism::Rayon), ("auto", Parallelism::Auto)];

/// Finite, normal values that round when narrowed (so the conversion does real work) and stay
/// in f32 range (no overflow to infinity, no subnormal results).
fn sample_f64(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i as f64) * 0.618_033_988_749_894_8).sin() * 1.0e3 + 1.0e-3).collect()
}

fn sample_f32(n: usize) -> Vec<f32> {
    sample_f64(n).iter().map(|&x| x as f32).collect()
}

/// The baseline: `copy_from_slice` of `bytes` bytes.
fn bench_memcpy<M: criterion::measurement::Measurement>(
    group: &mut criterion::BenchmarkGroup<'_, M>,
    bytes: usize,
) {
    let src = vec![0x5au8; bytes];
    let mut dst = vec![0u8; bytes];
    group.bench_function("memcpy", |b| {
        b.iter(|| black_box(&mut dst[..]).copy_from_slice(black_box(&src[..])))
    });
}

fn f64_group<const N: usize>(c: &mut Criterion) {
    let values = sample_f64(N);
    let wire = codec::encode_f64(&values);
    let mut out_bytes = vec![0u8; wire.len()];
    let mut out_values = vec![0.0f64; N];

    let mut group = c.benchmark_group(format!("f64/{N}"));
    group.throughput(Throughput::Bytes(wire.len() as u64));
    bench_memcpy(&mut group, wire.len());
    for (name, par) in MODES {
        group.bench_function(format!("encode_{name}"), |b| {
            b.iter(|| {
                codec::encode_into_with(
                    Values::F64(black_box(&values)),
                    black_box(&mut out_bytes),
                    par,
                )
            })
        });
        group.bench_function(format!("decode_{name}"), |b| {
            b.iter(|| {
                codec::decode_into_with(
                    black_box(&wire),
                    ValuesMut::F64(black_box(&mut out_values)),
                    par,
                )
            })
        });
    }
    group.bench_function("zc_send", |b| {
        b.iter(|| {
            let bytes = zerocopy::wire_bytes(Values::F64(black_box(&values)))
                .expect("little-endian target");
            black_box(&mut out_bytes[..]).copy_from_slice(bytes);
        })
    });
    group.bench_function("zc_recv", |b| {
        b.iter(|| {
            let mut dst = ValuesMut::F64(black_box(&mut out_values));
            zerocopy::wire_bytes_mut(&mut dst).expect("f64 buffer").copy_from_slice(&wire);
            zerocopy::finish_receive(&mut dst);
        })
    });
    group.finish();
}

fn f32_group<const N: usize>(c: &mut Criterion) {
    let values = sample_f32(N);
    let wire = codec::encode_f32(&values);
    let mut out_bytes = vec![0u8; wire.len()];
    let mut out_values = vec![0.0f32; N];

    let mut group = c.benchmark_group(format!("f32/{N}"));
    group.throughput(Throughput::Bytes(wire.len() as u64));
    bench_memcpy(&mut group, wire.len());
    for (name, par) in MODES {
        group.bench_function(format!("encode_{name}"), |b| {
            b.iter(|| {
                codec::encode_into_with(
                    Values::F32(black_box(&values)),
                    black_box(&mut out_bytes),
                    par,
                )
            })
        });
        group.bench_function(format!("decode_{name}"), |b| {
            b.iter(|| {
                codec::decode_into_with(
                    black_box(&wire),
                    ValuesMut::F32(black_box(&mut out_values)),
                    par,
                )
            })
        });
    }
    group.finish();
}

fn f64_f32_group<const N: usize>(c: &mut Criterion) {
    let values = sample_f64(N);
    let wire = codec::encode_f64_as_f32(&values);
    let mut out_bytes = vec![0u8; wire.len()];
    let mut out_values = vec![0.0f64; N];

    let mut group = c.benchmark_group(format!("f64_f32/{N}"));
    // Counted on the f64 side, as the target "GB/s-equivalent of f64 input" is.
    group.throughput(Throughput::Bytes((N * 8) as u64));
    bench_memcpy(&mut group, N * 8);
    for (name, par) in MODES {
        group.bench_function(format!("narrow_{name}"), |b| {
            b.iter(|| {
                codec::encode_into_with(
                    Values::F64AsF32(black_box(&values)),
                    black_box(&mut out_bytes),
                    par,
                )
            })
        });
        group.bench_function(format!("widen_{name}"), |b| {
            b.iter(|| {
                codec::decode_into_with(
                    black_box(&wire),
                    ValuesMut::F64FromF32(black_box(&mut out_values)),
                    par,
                )
            })
        });
    }
    group.finish();
}

fn sizes(c: &mut Criterion) {
    f64_group::<SMALL>(c);
    f64_group::<LARGE>(c);
    f32_group::<SMALL>(c);
    f32_group::<LARGE>(c);
    f64_f32_group::<SMALL>(c);
    f64_f32_group::<LARGE>(c);
}

/// Serial vs rayon over [`SWEEP`]: the evidence for `codec::PARALLEL_MIN_ELEMENTS`.
fn threshold(c: &mut Criterion) {
    let largest = *SWEEP.last().expect("non-empty sweep");
    let values = sample_f64(largest);
    let mut out = vec![0u8; largest * 8];

    let mut group = c.benchmark_group("threshold/encode_f64");
    for n in SWEEP {
        group.throughput(Throughput::Bytes((n * 8) as u64));
        for (name, par) in &MODES[..2] {
            group.bench_with_input(BenchmarkId::new(*name, n), &n, |b, &n| {
                b.iter(|| {
                    codec::encode_into_with(
                        Values::F64(black_box(&values[..n])),
                        black_box(&mut out[..n * 8]),
                        *par,
                    )
                })
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("threshold/narrow");
    for n in SWEEP {
        group.throughput(Throughput::Bytes((n * 8) as u64));
        for (name, par) in &MODES[..2] {
            group.bench_with_input(BenchmarkId::new(*name, n), &n, |b, &n| {
                b.iter(|| {
                    codec::encode_into_with(
                        Values::F64AsF32(black_box(&values[..n])),
                        black_box(&mut out[..n * 4]),
                        *par,
                    )
                })
            });
        }
    }
    group.finish();

    // The same f64 encode after the pool has gone idle: in use, a conversion comes once per
    // request, so rayon's workers are asleep and must be woken. Only the call is timed.
    let mut group = c.benchmark_group("threshold/encode_f64_idle");
    group.sample_size(20).measurement_time(Duration::from_secs(1));
    for n in SWEEP {
        group.throughput(Throughput::Bytes((n * 8) as u64));
        for (name, par) in &MODES[..2] {
            group.bench_with_input(BenchmarkId::new(*name, n), &n, |b, &n| {
                b.iter_custom(|iters| {
                    let mut timed = Duration::ZERO;
                    for _ in 0..iters {
                        std::thread::sleep(IDLE);
                        let start = Instant::now();
                        let done = codec::encode_into_with(
                            Values::F64(black_box(&values[..n])),
                            black_box(&mut out[..n * 8]),
                            *par,
                        );
                        timed += start.elapsed();
                        black_box(done).expect("sized buffer");
                    }
                    timed
                })
            });
        }
    }
    group.finish();
}

fn config() -> Criterion {
    // ~2.5 s per benchmark (0.5 s warm-up, 2 s measurement) and no plots: the whole run takes a
    // few minutes. Command-line flags (`--measurement-time`, `--sample-size`, …) still override.
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50)
        .without_plots()
}

criterion_group! {
    name = benches;
    config = config();
    targets = sizes, threshold
}
criterion_main!(benches);
