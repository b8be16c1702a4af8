//! The codec's encode and decode of N f64 with the destination D bytes past the source,
//! modulo 4 KiB, beside a plain `copy_from_slice` of the same bytes at the same distance: where
//! a forward copy meets 4 KiB aliasing, and what the codec's backward copy there costs
//! (docs/experiments/codec.md, "Copies 4 KiB apart").
//!
//! ```text
//! cargo run --release --example codec_distances [N]     # default 500; best of 100 × 20 calls
//! ```
//!
//! Prints one line per distance: `D: encode codec/copy  decode codec/copy` in ns.

use std::hint::black_box;
use std::time::Instant;

use peerpipe::codec::{Values, ValuesMut, decode_into, encode_into};

/// Distances (destination − source, modulo 4 KiB) swept: the window past the source where a
/// forward copy is slow, and the one before it, where it is not.
fn distances() -> impl Iterator<Item = usize> {
    (0..=136).step_by(8).chain((4096 - 64..4096).step_by(8))
}

/// The best time per call, in ns, of 100 rounds of 20 calls of `call`.
fn best_ns(mut call: impl FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..100 {
        let started = Instant::now();
        for _ in 0..20 {
            call();
        }
        best = best.min(started.elapsed().as_nanos() as f64 / 20.0);
    }
    best
}

/// The offset into `buffer` at which a slice starts `distance` bytes past `from`, modulo 4 KiB.
fn offset_past(buffer: &[u8], from: usize, distance: usize) -> usize {
    (from + distance).wrapping_sub(buffer.as_ptr() as usize) % 4096
}

fn main() {
    let n: usize = match std::env::args().nth(1).map(|arg| arg.parse()) {
        None => 500,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: codec_distances [N]   (N: elements, at least 1)");
            std::process::exit(2);
        }
    };
    let values: Vec<f64> = (0..n).map(|i| i as f64 * 1.5 - 7.0).collect();
    let mut back = vec![0.0f64; n];
    let mut bytes = vec![0u8; 8 * n + 8192];
    println!("f64 x {n} ({} bytes): distance: encode codec/copy  decode codec/copy (ns)", 8 * n);
    for d in distances() {
        let at = offset_past(&bytes, values.as_ptr() as usize, d);
        let wire = &mut bytes[at..at + 8 * n];
        let raw: &[u8] = bytemuck::cast_slice(&values);
        let encode = best_ns(|| encode_into(Values::F64(black_box(&values)), wire).unwrap());
        let encode_copy = best_ns(|| wire.copy_from_slice(black_box(raw)));
        let from = offset_past(&bytes, back.as_ptr() as usize, 4096 - d);
        let wire = &bytes[from..from + 8 * n];
        let decode = best_ns(|| decode_into(black_box(wire), ValuesMut::F64(&mut back)).unwrap());
        let into: &mut [u8] = bytemuck::cast_slice_mut(&mut back);
        let decode_copy = best_ns(|| into.copy_from_slice(black_box(wire)));
        println!("{d:>5}: {encode:>7.0}/{encode_copy:<7.0} {decode:>7.0}/{decode_copy:.0}");
    }
}
