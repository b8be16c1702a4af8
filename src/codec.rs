//! The explicit little-endian codec: native numbers to wire bytes and back.
//!
//! Every function here gives the same little-endian bytes on every target: a copy where the
//! target's own bytes are little-endian (checked bit for bit in `tests/codec.rs` against
//! `to_le_bytes` and against shifts), byteorder's `LittleEndian` element by element where they
//! are not. A copy of a few KiB whose destination lies just past its source modulo 4 KiB is
//! made backwards (see `ALIASED_DISTANCE`). The codec is the oracle the zero-copy path
//! ([`crate::zerocopy`]) is tested against.
//!
//! Arrays of at least [`PARALLEL_MIN_ELEMENTS`] elements are converted in parallel chunks on the
//! rayon pool when the process has at least [`PARALLEL_MIN_CPUS`] CPUs (a peer holds one);
//! smaller ones never touch rayon.
//!
//! ```
//! use peerpipe::codec;
//! let bytes = codec::encode_f64(&[1.0, -0.0]);
//! assert_eq!(bytes, [0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0x80]);
//! assert_eq!(codec::decode_f64(&bytes).unwrap(), [1.0, -0.0]);
//! ```

#[cfg(target_endian = "big")]
#[cfg(target_endian = "big")]
use byteorder::{ByteOrder, LittleEndian};
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::frame::Dtype;

/// Arrays with at least this many elements are converted on the rayon pool.
///
/// 1 Mi elements (8 MiB of f64), from `cargo bench --bench codec -- threshold` on a 2-core KVM
/// guest (AMD EPYC). Called back to back, rayon wins from 256–512 Ki elements on (f64 encode
/// 1.47×, narrowing 1.20× at 512 Ki; 1.99×/1.66× at 1 Mi). But a conversion comes once per
/// request, after the pool has gone idle, and waking it then costs ~60–100 µs on that machine:
/// from idle, f64 encode on rayon is slower at 512 Ki (median 0.88× of 5 runs), breaks even at
/// 1 Mi (median 1.01×, runs 0.86–1.80×) and wins from 2 Mi (1.68–1.81×). The figures are in
/// `docs/experiments/codec.md`, "Rayon threshold".
pub const PARALLEL_MIN_ELEMENTS: usize = 1_048_576;

/// Elements per parallel chunk: big enough that scheduling costs vanish, small enough to split.
const PARALLEL_CHUNK_ELEMENTS: usize = 65_536;

/// Fewest CPUs this process may run on for [`Parallelism::Auto`] to use rayon: 3.
///
/// A conversion runs inside an exchange whose peer holds a core of its own (spinning, or
/// about to be woken); on 2 CPUs rayon's second worker can only take that core. Measured on
/// a 2-core KVM guest (`benches/peers`, `conversion_probe`, docs/experiments/conversion.md):
/// with the other CPU busy spinning, 8 MiB encode on rayon took 0.83 ms
/// against 0.79 ms serial, decode 1.04 against 0.88 ms. (On an idle machine, back to back,
/// rayon halves 8 MiB: that is the codec bench, not an exchange.)
pub const PARALLEL_MIN_CPUS: usize = 3;

/// Whether this process may run on at least [`PARALLEL_MIN_CPUS`] CPUs (read once).
fn spare_cpus() -> bool {
    static SPARE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SPARE.get_or_init(|| {
        std::thread::available_parallelism().is_ok_and(|n| n.get() >= PARALLEL_MIN_CPUS)
    })
}

/// Whether a conversion may use the rayon pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Parallelism {
    /// Parallel from [`PARALLEL_MIN_ELEMENTS`] elements on when the process may run on at
    /// least [`PARALLEL_MIN_CPUS`] CPUs, serial otherwise.
    #[default]
    Auto,
    /// Always on the calling thread.
    Serial,
    /// Always in parallel chunks on the rayon pool (for benchmarks).
    Rayon,
}

impl Parallelism {
    fn use_rayon(self, elements: usize) -> bool {
        match self {
            Parallelism::Auto => elements >= PARALLEL_MIN_ELEMENTS && spare_cpus(),
            Parallelism::Serial => false,
            Parallelism::Rayon => true,
        }
    }
}

/// Numbers to send, and how they go on the wire.
#[derive(Clone, Copy, Debug)]
pub enum Values<'a> {
    /// Raw bytes, dtype 0.
    Bytes(&'a [u8]),
    /// f32 values as f32 on the wire.
    F32(&'a [f32]),
    /// f64 values as f64 on the wire.
    F64(&'a [f64]),
    /// f64 values narrowed to f32 on the wire (`x as f32`).
    F64AsF32(&'a [f64]),
}

impl Values<'_> {
    /// The dtype written in the header.
    pub fn wire_dtype(&self) -> Dtype {
        match self {
            Values::Bytes(_) => Dtype::Bytes,
            Values::F32(_) | Values::F64AsF32(_) => Dtype::F32,
            Values::F64(_) => Dtype::F64,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Values::Bytes(v) => v.len(),
            Values::F32(v) => v.len(),
            Values::F64(v) | Values::F64AsF32(v) => v.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Payload length on the wire in bytes.
    pub fn wire_len(&self) -> usize {
        self.len() * self.wire_dtype().width() as usize
    }
}

/// A caller's buffer to receive numbers into, and what it expects on the wire.
#[derive(Debug)]
pub enum ValuesMut<'a> {
    /// Raw bytes, dtype 0.
    Bytes(&'a mut [u8]),
    /// f32 on the wire into f32.
    F32(&'a mut [f32]),
    /// f64 on the wire into f64.
    F64(&'a mut [f64]),
    /// f32 on the wire widened into f64 (`x as f64`).
    F64FromF32(&'a mut [f64]),
}

impl ValuesMut<'_> {
    /// The dtype the buffer expects in the header.
    pub fn wire_dtype(&self) -> Dtype {
        match self {
            ValuesMut::Bytes(_) => Dtype::Bytes,
            ValuesMut::F32(_) | ValuesMut::F64FromF32(_) => Dtype::F32,
            ValuesMut::F64(_) => Dtype::F64,
        }
    }

    /// Number of elements the buffer holds.
    pub fn len(&self) -> usize {
        match self {
            ValuesMut::Bytes(v) => v.len(),
            ValuesMut::F32(v) => v.len(),
            ValuesMut::F64(v) | ValuesMut::F64FromF32(v) => v.len(),
        }
    }

    /// True when the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Payload length on the wire in bytes.
    pub fn wire_len(&self) -> usize {
        self.len() * self.wire_dtype().width() as usize
    }

    /// Reborrows the buffer for a shorter lifetime.
    pub fn reborrow(&mut self) -> ValuesMut<'_> {
        match self {
            ValuesMut::Bytes(v) => ValuesMut::Bytes(v),
            ValuesMut::F32(v) => ValuesMut::F32(v),
            ValuesMut::F64(v) => ValuesMut::F64(v),
            ValuesMut::F64FromF32(v) => ValuesMut::F64FromF32(v),
        }
    }
}

fn check_len(what: &'static str, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::LengthMismatch { what, expected: expected as u64, found: found as u64 })
    }
}

/// Applies `kernel` to matching chunks of `src` (elements) and `dst` (bytes), in parallel when
/// `par` says so. `src_width`/`dst_width` are bytes per element on each side of the kernel.
fn run_chunked<S: Sync, D: Send>(
    src: &[S],
    dst: &mut [D],
    dst_per_src: usize,
    par: Parallelism,
    kernel: impl Fn(&[S], &mut [D]) + Sync,
) {
    if par.use_rayon(src.len()) {
        src.par_chunks(PARALLEL_CHUNK_ELEMENTS)
            .zip(dst.par_chunks_mut(PARALLEL_CHUNK_ELEMENTS * dst_per_src))
            .for_each(|(s, d)| kernel(s, d));
    } else {
        kernel(src, dst);
    }
}

// On a little-endian target a number's wire bytes are its bytes in memory: each kernel is a
// copy ([`copy_bytes`]), which `tests/codec.rs` checks bit for bit against `to_le_bytes` and
// against shifts; a big-endian target converts element by element with byteorder.

#[cfg(target_endian = "little")]
fn encode_f64_kernel(src: &[f64], dst: &mut [u8]) {
    copy_bytes(dst, bytemuck::cast_slice(src));
}

#[cfg(target_endian = "little")]
fn encode_f32_kernel(src: &[f32], dst: &mut [u8]) {
    copy_bytes(dst, bytemuck::cast_slice(src));
}

#[cfg(target_endian = "little")]
fn decode_f64_kernel(src: &[u8], dst: &mut [f64]) {
    copy_bytes(bytemuck::cast_slice_mut(dst), src);
}

#[cfg(target_endian = "little")]
fn decode_f32_kernel(src: &[u8], dst: &mut [f32]) {
    copy_bytes(bytemuck::cast_slice_mut(dst), src);
}

#[cfg(target_endian = "big")]
fn encode_f64_kernel(src: &[f64], dst: &mut [u8]) {
    LittleEndian::write_f64_into(src, dst);
}

#[cfg(target_endian = "big")]
fn encode_f32_kernel(src: &[f32], dst: &mut [u8]) {
    LittleEndian::write_f32_into(src, dst);
}

#[cfg(target_endian = "big")]
fn decode_f64_kernel(src: &[u8], dst: &mut [f64]) {
    LittleEndian::read_f64_into(src, dst);
}

#[cfg(target_endian = "big")]
fn decode_f32_kernel(src: &[u8], dst: &mut [f32]) {
    LittleEndian::read_f32_into(src, dst);
}

/// Copies of at least this many bytes are checked for 4 KiB aliasing ([`aliased`]).
const ALIAS_MIN_BYTES: usize = 2048;

/// A forward copy (glibc's `memcpy`, or any loop that loads ahead of its stores) whose
/// destination lies less than this many bytes past its source, modulo 4 KiB, can be several
/// times slower than at any other distance: its loads look as if they may read stores just
/// made (4 KiB aliasing). Measured on an AMD EPYC for 4000 bytes
/// (`cargo run --release --example codec_distances`, docs/experiments/codec.md, "Copies 4 KiB
/// apart"): 41–48 ns at most distances; 8 bytes past, 1.1 µs; 16–24 past, 95–116 ns; and in
/// one of two placements of the buffers also 40–56 past (342 ns) and 72–80 past (206–211 ns).
/// Where a buffer lands is the allocator's choice, so without the check one process converts
/// fast and the next slowly. Backwards, the same copy takes 69–100 ns at every distance.
const ALIASED_DISTANCE: usize = 128;

/// Whether a forward copy of `len` bytes to `dst` from `src` may meet 4 KiB aliasing.
fn aliased(dst: *const u8, src: *const u8, len: usize) -> bool {
    let distance = (dst as usize).wrapping_sub(src as usize) % 4096;
    len >= ALIAS_MIN_BYTES && (1..ALIASED_DISTANCE).contains(&distance)
}

/// `dst.copy_from_slice(src)`, copied from the end backwards where a forward copy may meet
/// 4 KiB aliasing ([`ALIASED_DISTANCE`]): a backward copy's loads never follow a store to the
/// same address bits.
fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    if !aliased(dst.as_ptr(), src.as_ptr(), src.len()) {
        dst.copy_from_slice(src);
        return;
    }
    let mut dst_blocks = dst.rchunks_exact_mut(64);
    let mut src_blocks = src.rchunks_exact(64);
    for (d, s) in (&mut dst_blocks).zip(&mut src_blocks) {
        // Four 16-byte loads, then four stores: no loop a compiler would turn into memcpy.
        let lanes: [u128; 4] = std::array::from_fn(|i| {
            u128::from_ne_bytes(s[16 * i..16 * i + 16].try_into().expect("16 bytes"))
        });
        for (i, lane) in lanes.iter().enumerate() {
            d[16 * i..16 * i + 16].copy_from_slice(&lane.to_ne_bytes());
        }
    }
    dst_blocks.into_remainder().copy_from_slice(src_blocks.remainder());
}

fn narrow_kernel(src: &[f64], dst: &mut [u8]) {
    for (out, &x) in dst.chunks_exact_mut(4).zip(src) {
        out.copy_from_slice(&(x as f32).to_le_bytes());
    }
}

fn widen_kernel(src: &[u8], dst: &mut [f64]) {
    for (x, bytes) in dst.iter_mut().zip(src.chunks_exact(4)) {
        *x = f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as f64;
    }
}

/// Encodes `src` into `dst` as little-endian wire bytes, choosing parallelism with `par`.
///
/// # Errors
/// [`Error::LengthMismatch`] when `dst.len() != src.wire_len()`; `dst` is then untouched.
pub fn encode_into_with(src: Values<'_>, dst: &mut [u8], par: Parallelism) -> Result<()> {
    check_len("encode destination bytes", src.wire_len(), dst.len())?;
    match src {
        Values::Bytes(v) => copy_bytes(dst, v),
        Values::F32(v) => run_chunked(v, dst, 4, par, encode_f32_kernel),
        Values::F64(v) => run_chunked(v, dst, 8, par, encode_f64_kernel),
        Values::F64AsF32(v) => run_chunked(v, dst, 4, par, narrow_kernel),
    }
    Ok(())
}

/// Encodes `src` into `dst` as little-endian wire bytes.
///
/// # Errors
/// [`Error::LengthMismatch`] when `dst.len() != src.wire_len()`; `dst` is then untouched.
///
/// ```
/// use peerpipe::codec::{encode_into, Values};
/// let mut out = [0u8; 4];
/// encode_into(Values::F64AsF32(&[1.5]), &mut out).unwrap();
/// assert_eq!(out, 1.5f32.to_le_bytes());
/// ```
pub fn encode_into(src: Values<'_>, dst: &mut [u8]) -> Result<()> {
    encode_into_with(src, dst, Parallelism::Auto)
}

/// Decodes little-endian wire bytes `src` into the caller's buffer, choosing parallelism with
/// `par`.
///
/// # Errors
/// [`Error::LengthMismatch`] when `src.len() != dst.wire_len()`; `dst` is then untouched.
pub fn decode_into_with(src: &[u8], dst: ValuesMut<'_>, par: Parallelism) -> Result<()> {
    check_len("decode source bytes", dst.wire_len(), src.len())?;
    match dst {
        ValuesMut::Bytes(v) => copy_bytes(v, src),
        ValuesMut::F32(v) => run_chunked_rev(src, v, 4, par, decode_f32_kernel),
        ValuesMut::F64(v) => run_chunked_rev(src, v, 8, par, decode_f64_kernel),
        ValuesMut::F64FromF32(v) => run_chunked_rev(src, v, 4, par, widen_kernel),
    }
    Ok(())
}

/// Like [`run_chunked`], for kernels that go from bytes to elements.
fn run_chunked_rev<D: Send>(
    src: &[u8],
    dst: &mut [D],
    src_per_dst: usize,
    par: Parallelism,
    kernel: impl Fn(&[u8], &mut [D]) + Sync,
) {
    if par.use_rayon(dst.len()) {
        src.par_chunks(PARALLEL_CHUNK_ELEMENTS * src_per_dst)
            .zip(dst.par_chunks_mut(PARALLEL_CHUNK_ELEMENTS))
            .for_each(|(s, d)| kernel(s, d));
    } else {
        kernel(src, dst);
    }
}

/// Decodes little-endian wire bytes `src` into the caller's buffer.
///
/// # Errors
/// [`Error::LengthMismatch`] when `src.len() != dst.wire_len()`; `dst` is then untouched.
///
/// ```
/// use peerpipe::codec::{decode_into, ValuesMut};
/// let mut out = [0.0f64; 1];
/// decode_into(&0.25f32.to_le_bytes(), ValuesMut::F64FromF32(&mut out)).unwrap();
/// assert_eq!(out, [0.25]);
/// ```
pub fn decode_into(src: &[u8], dst: ValuesMut<'_>) -> Result<()> {
    decode_into_with(src, dst, Parallelism::Auto)
}

impl<'a> Values<'a> {
    /// Elements `range` of these values, as the same kind of values.
    ///
    /// # Panics
    /// When `range` is out of bounds.
    pub fn slice(&self, range: std::ops::Range<usize>) -> Values<'a> {
        match *self {
            Values::Bytes(v) => Values::Bytes(&v[range]),
            Values::F32(v) => Values::F32(&v[range]),
            Values::F64(v) => Values::F64(&v[range]),
            Values::F64AsF32(v) => Values::F64AsF32(&v[range]),
        }
    }
}

impl ValuesMut<'_> {
    /// Elements `range` of this buffer, as the same kind of buffer.
    ///
    /// # Panics
    /// When `range` is out of bounds.
    pub fn slice_mut(&mut self, range: std::ops::Range<usize>) -> ValuesMut<'_> {
        match self {
            ValuesMut::Bytes(v) => ValuesMut::Bytes(&mut v[range]),
            ValuesMut::F32(v) => ValuesMut::F32(&mut v[range]),
            ValuesMut::F64(v) => ValuesMut::F64(&mut v[range]),
            ValuesMut::F64FromF32(v) => ValuesMut::F64FromF32(&mut v[range]),
        }
    }
}

/// Writes bytes `at..at + dst.len()` of the little-endian encoding of `src` into `dst`, on the
/// calling thread: the piece of a payload that fits where it is going (a stretch of a shared
/// ring, say), so that a payload can be encoded straight into its destination piece by piece.
/// Pieces may start and end inside an element.
///
/// # Errors
/// [`Error::LengthMismatch`] when the piece reaches past the end of the encoding; `dst` is
/// then untouched.
///
/// ```
/// use peerpipe::codec::{encode_at, encode_f64, Values};
/// let values = [1.5, -2.0, 1e300];
/// let whole = encode_f64(&values);
/// let mut piece = [0u8; 11];
/// encode_at(Values::F64(&values), 5, &mut piece).unwrap();
/// assert_eq!(piece, whole[5..16]);
/// ```
pub fn encode_at(src: Values<'_>, at: usize, dst: &mut [u8]) -> Result<()> {
    let total = src.wire_len();
    let end = at.checked_add(dst.len()).filter(|&end| end <= total).ok_or({
        Error::LengthMismatch {
            what: "encoded piece (end within the payload)",
            expected: total as u64,
            found: at as u64 + dst.len() as u64,
        }
    })?;
    let width = src.wire_dtype().width() as usize;
    let (mut pos, mut out) = (at, dst);
    // A piece that starts inside an element: that element's tail.
    if !pos.is_multiple_of(width) && !out.is_empty() {
        let mut one = [0u8; 8];
        let element = pos / width;
        encode_into_with(src.slice(element..element + 1), &mut one[..width], Parallelism::Serial)?;
        let skip = pos % width;
        let n = (width - skip).min(out.len());
        out[..n].copy_from_slice(&one[skip..skip + n]);
        pos += n;
        out = &mut out[n..];
    }
    let whole = out.len() / width;
    let first = pos / width;
    let (body, tail) = out.split_at_mut(whole * width);
    encode_into_with(src.slice(first..first + whole), body, Parallelism::Serial)?;
    pos += whole * width;
    // A piece that ends inside an element: that element's head.
    if !tail.is_empty() {
        let mut one = [0u8; 8];
        let element = pos / width;
        encode_into_with(src.slice(element..element + 1), &mut one[..width], Parallelism::Serial)?;
        let n = tail.len();
        tail.copy_from_slice(&one[..n]);
    }
    debug_assert_eq!(pos + tail.len(), end);
    Ok(())
}

/// Decodes a payload that arrives in pieces of any length (stretches of a shared ring, say)
/// straight into the caller's buffer, on the calling thread; an element split between two
/// pieces is carried over in 8 bytes of its own.
///
/// ```
/// use peerpipe::codec::{encode_f64, Values, ValuesMut, PieceDecoder};
/// let values = [1.5, -2.0, 1e300];
/// let bytes = encode_f64(&values);
/// let mut out = [0.0; 3];
/// let mut decoder = PieceDecoder::new(ValuesMut::F64(&mut out));
/// for piece in bytes.chunks(5) {
///     decoder.push(piece).unwrap();
/// }
/// assert!(decoder.is_complete());
/// assert_eq!(out, values);
/// ```
#[derive(Debug)]
pub struct PieceDecoder<'a> {
    dst: ValuesMut<'a>,
    width: usize,
    /// Bytes taken so far.
    taken: usize,
    carry: [u8; 8],
    carried: usize,
}

impl<'a> PieceDecoder<'a> {
    /// A decoder that fills `dst` from the payload's pieces, in order.
    pub fn new(dst: ValuesMut<'a>) -> PieceDecoder<'a> {
        let width = dst.wire_dtype().width() as usize;
        PieceDecoder { dst, width, taken: 0, carry: [0; 8], carried: 0 }
    }

    /// Bytes of the payload still expected.
    pub fn remaining(&self) -> usize {
        self.dst.wire_len() - self.taken
    }

    /// True once every byte of the payload has been decoded.
    pub fn is_complete(&self) -> bool {
        self.remaining() == 0
    }

    /// Decodes the next piece of the payload.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when the piece goes past the end of the payload; nothing of
    /// it is then decoded.
    pub fn push(&mut self, mut src: &[u8]) -> Result<()> {
        if src.len() > self.remaining() {
            return Err(Error::LengthMismatch {
                what: "decoded piece (end within the payload)",
                expected: self.dst.wire_len() as u64,
                found: (self.taken + src.len()) as u64,
            });
        }
        let width = self.width;
        if self.carried > 0 {
            let n = (width - self.carried).min(src.len());
            self.carry[self.carried..self.carried + n].copy_from_slice(&src[..n]);
            self.carried += n;
            self.taken += n;
            src = &src[n..];
            if self.carried == width {
                let element = self.taken / width - 1;
                let carry = self.carry;
                decode_into_with(
                    &carry[..width],
                    self.dst.slice_mut(element..element + 1),
                    Parallelism::Serial,
                )?;
                self.carried = 0;
            } else {
                return Ok(()); // the piece ended inside the carried element
            }
        }
        let whole = src.len() / width * width;
        if whole > 0 {
            let first = self.taken / width;
            decode_into_with(
                &src[..whole],
                self.dst.slice_mut(first..first + whole / width),
                Parallelism::Serial,
            )?;
            self.taken += whole;
        }
        let rest = &src[whole..];
        self.carry[..rest.len()].copy_from_slice(rest);
        self.carried = rest.len();
        self.taken += rest.len();
        Ok(())
    }
}

/// Encodes f64 values into a new `Vec` of little-endian bytes.
pub fn encode_f64(src: &[f64]) -> Vec<u8> {
    encode_vec(Values::F64(src))
}

/// Encodes f32 values into a new `Vec` of little-endian bytes.
pub fn encode_f32(src: &[f32]) -> Vec<u8> {
    encode_vec(Values::F32(src))
}

/// Narrows f64 values to f32 (`x as f32`) and encodes them into a new `Vec`.
pub fn encode_f64_as_f32(src: &[f64]) -> Vec<u8> {
    encode_vec(Values::F64AsF32(src))
}

fn encode_vec(src: Values<'_>) -> Vec<u8> {
    let mut out = vec![0u8; src.wire_len()];
    encode_into(src, &mut out).expect("buffer sized by wire_len");
    out
}

fn elements_for(src: &[u8], width: usize) -> Result<usize> {
    if src.len().is_multiple_of(width) {
        Ok(src.len() / width)
    } else {
        Err(Error::LengthMismatch {
            what: "decode source bytes (not a whole number of elements)",
            expected: (src.len() / width * width) as u64,
            found: src.len() as u64,
        })
    }
}

/// Decodes little-endian f64 bytes into a new `Vec`.
///
/// # Errors
/// [`Error::LengthMismatch`] when `src.len()` is not a multiple of 8.
pub fn decode_f64(src: &[u8]) -> Result<Vec<f64>> {
    let mut out = vec![0.0; elements_for(src, 8)?];
    decode_into(src, ValuesMut::F64(&mut out))?;
    Ok(out)
}

/// Decodes little-endian f32 bytes into a new `Vec`.
///
/// # Errors
/// [`Error::LengthMismatch`] when `src.len()` is not a multiple of 4.
pub fn decode_f32(src: &[u8]) -> Result<Vec<f32>> {
    let mut out = vec![0.0; elements_for(src, 4)?];
    decode_into(src, ValuesMut::F32(&mut out))?;
    Ok(out)
}

/// Decodes little-endian f32 bytes and widens them (`x as f64`) into a new `Vec`.
///
/// # Errors
/// [`Error::LengthMismatch`] when `src.len()` is not a multiple of 4.
pub fn decode_f32_as_f64(src: &[u8]) -> Result<Vec<f64>> {
    let mut out = vec![0.0; elements_for(src, 4)?];
    decode_into(src, ValuesMut::F64FromF32(&mut out))?;
    Ok(out)
}

/// f64 edge values as bit patterns, which the tests and `peer soak` send on purpose: signed
/// zeros, subnormals, extremes, infinities and NaNs with payloads, quiet and signalling, of
/// both signs, and a value below f32's subnormals (it narrows to 0).
pub const F64_EDGE_BITS: [u64; 20] = [
    0x0000_0000_0000_0000, // +0.0
    0x8000_0000_0000_0000, // -0.0
    0x3ff0_0000_0000_0000, // 1.0
    0xbff0_0000_0000_0000, // -1.0
    0x0000_0000_0000_0001, // smallest subnormal
    0x800f_ffff_ffff_ffff, // largest negative subnormal
    0x0010_0000_0000_0000, // MIN_POSITIVE
    0x7fef_ffff_ffff_ffff, // MAX
    0xffef_ffff_ffff_ffff, // MIN
    0x7ff0_0000_0000_0000, // +inf
    0xfff0_0000_0000_0000, // -inf
    0x7ff8_0000_0000_0000, // quiet NaN
    0x7ff8_0000_0000_0001, // quiet NaN with payload
    0xfff8_0000_0000_0000, // negative quiet NaN
    0x7ff0_0000_0000_0001, // signalling NaN
    0x7ff4_0000_0000_0000, // signalling NaN, high payload bit
    0xfff0_0000_dead_beef, // negative signalling NaN with payload
    0xffff_ffff_ffff_ffff, // all ones (a NaN)
    0x000f_ffff_ffff_ffff, // largest subnormal
    0x3690_0000_0000_0000, // 2^-150: below f32's subnormals, narrows to 0
];

/// f32 edge values as bit patterns, likewise.
pub const F32_EDGE_BITS: [u32; 18] = [
    0x0000_0000, // +0.0
    0x8000_0000, // -0.0
    0x3f80_0000, // 1.0
    0xc020_0000, // -2.5
    0x0000_0001, // smallest subnormal
    0x807f_ffff, // largest negative subnormal
    0x0080_0000, // MIN_POSITIVE
    0x7f7f_ffff, // MAX
    0x7f80_0000, // +inf
    0xff80_0000, // -inf
    0x7fc0_0000, // quiet NaN
    0x7fc0_0001, // quiet NaN with payload
    0xffc0_0000, // negative quiet NaN
    0x7f80_0001, // signalling NaN
    0x7fa0_0000, // signalling NaN, high payload bit
    0xff80_beef, // negative signalling NaN with payload
    0xffff_ffff, // all ones (a NaN)
    0x007f_ffff, // largest subnormal
];
