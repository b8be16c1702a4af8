//! The zero-copy path: the caller's slice is the payload.
//!
//! On a little-endian target the wire bytes of an `f64`/`f32` array are exactly its memory, so a
//! frame can be written straight from the caller's slice and read straight into it. All casts
//! go through bytemuck, whose `Pod` bounds make them safe; nothing here uses `unsafe`.
//!
//! The checked fallbacks:
//! - sending on a big-endian target returns `None` from [`wire_bytes`]: encode with
//!   [`crate::codec`] instead;
//! - receiving works on every target: read into [`wire_bytes_mut`], then call
//!   [`finish_receive`], which swaps bytes in place on big-endian targets and does nothing on
//!   little-endian ones;
//! - viewing foreign bytes ([`view_f64`], [`view_f32`]) returns `None` when the bytes are
//!   misaligned or the target is big-endian: decode with the codec instead.
//!
//! ```
//! use peerpipe::codec::Values;
//! use peerpipe::zerocopy::wire_bytes;
//! let state = [1.0f64, 2.0];
//! if let Some(bytes) = wire_bytes(Values::F64(&state)) {
//!     assert_eq!(bytes, peerpipe::codec::encode_f64(&state)); // same bytes, no copy
//! }
//! ```

use crate::codec::{Values, ValuesMut};

/// True when the zero-copy send path is available (little-endian targets).
pub const NATIVE_IS_WIRE: bool = cfg!(target_endian = "little");

/// The wire bytes of `values`, borrowed from their memory without copying.
///
/// Returns `None` when the values need conversion: on big-endian targets, and always for
/// [`Values::F64AsF32`]. Use [`crate::codec::encode_into`] then.
pub fn wire_bytes(values: Values<'_>) -> Option<&[u8]> {
    match values {
        Values::Bytes(v) => Some(v),
        Values::F32(v) if NATIVE_IS_WIRE => Some(bytemuck::cast_slice(v)),
        Values::F64(v) if NATIVE_IS_WIRE => Some(bytemuck::cast_slice(v)),
        _ => None,
    }
}

/// The memory of the caller's buffer as bytes to receive the wire payload into.
///
/// Returns `None` for [`ValuesMut::F64FromF32`], which needs widening: receive into a byte
/// buffer and decode with [`crate::codec::decode_into`]. After filling the bytes, call
/// [`finish_receive`] on the same buffer.
pub fn wire_bytes_mut<'a>(values: &'a mut ValuesMut<'_>) -> Option<&'a mut [u8]> {
    match values {
        ValuesMut::Bytes(v) => Some(v),
        ValuesMut::F32(v) => Some(bytemuck::cast_slice_mut(v)),
        ValuesMut::F64(v) => Some(bytemuck::cast_slice_mut(v)),
        ValuesMut::F64FromF32(_) => None,
    }
}

/// Turns little-endian wire bytes received in place into native values: a no-op on
/// little-endian targets, an in-place byte swap on big-endian ones.
pub fn finish_receive(values: &mut ValuesMut<'_>) {
    if NATIVE_IS_WIRE {
        return;
    }
    match values {
        ValuesMut::Bytes(_) | ValuesMut::F64FromF32(_) => {}
        ValuesMut::F32(v) => {
            v.iter_mut().for_each(|x| *x = f32::from_bits(u32::from_le(x.to_bits())))
        }
        ValuesMut::F64(v) => {
            v.iter_mut().for_each(|x| *x = f64::from_bits(u64::from_le(x.to_bits())))
        }
    }
}

/// Views little-endian f64 wire bytes in place as `&[f64]`.
///
/// Returns `None` when `bytes` is not 8-byte aligned, its length is not a multiple of 8, or the
/// target is big-endian; decode with [`crate::codec::decode_f64`] then.
///
/// ```
/// let values = [3.0f64, -1.0];
/// let bytes: &[u8] = bytemuck::cast_slice(&values); // aligned, as a received Vec<f64> is
/// assert_eq!(peerpipe::zerocopy::view_f64(bytes), Some(&values[..]));
/// assert_eq!(peerpipe::zerocopy::view_f64(&bytes[1..9]), None); // misaligned
/// ```
pub fn view_f64(bytes: &[u8]) -> Option<&[f64]> {
    if NATIVE_IS_WIRE { bytemuck::try_cast_slice(bytes).ok() } else { None }
}

/// Views little-endian f32 wire bytes in place as `&[f32]`; `None` as for [`view_f64`].
pub fn view_f32(bytes: &[u8]) -> Option<&[f32]> {
    if NATIVE_IS_WIRE { bytemuck::try_cast_slice(bytes).ok() } else { None }
}

/// A growable byte buffer that starts on an 8-byte boundary, so a received f64 or f32 payload
/// in it can be viewed in place with [`view_f64`] / [`view_f32`].
///
/// It never shrinks: once warm, [`AlignedBuf::resize`] to a size seen before allocates nothing;
/// it grows to exactly the size asked for, never more.
#[derive(Clone, Debug, Default)]
pub struct AlignedBuf {
    words: Vec<u64>,
    len: usize,
}

impl AlignedBuf {
    /// An empty buffer.
    pub fn new() -> AlignedBuf {
        AlignedBuf::default()
    }

    /// Sets the length to `len` bytes, growing the allocation if needed. Bytes beyond the
    /// previous high-water mark are zero; others keep their old contents.
    ///
    /// The caller validates `len` (e.g. against `max_frame_bytes`) before calling.
    pub fn resize(&mut self, len: usize) {
        let words = len.div_ceil(8);
        if self.words.len() < words {
            // Exactly what is needed, not the doubling `resize` alone would give: the buffer
            // never holds more than the largest frame seen.
            self.words.reserve_exact(words - self.words.len());
            self.words.resize(words, 0);
        }
        self.len = len;
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    /// The bytes, mutably.
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.len]
    }
}

/// Resizes `buf` to `len` elements, allocating exactly what is missing rather than doubling:
/// buffers sized by frames then hold no more than the largest frame seen. Shrinking keeps the
/// allocation, so a warm buffer never reallocates.
pub(crate) fn resize_exact<T: Clone>(buf: &mut Vec<T>, len: usize, fill: T) {
    if len > buf.capacity() {
        buf.reserve_exact(len - buf.len());
    }
    buf.resize(len, fill);
}
