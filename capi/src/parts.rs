//! Messages of several typed parts (docs/PROTOCOL.md §15) as C sees them: the part
//! descriptors `pp_part` and `pp_part_out`, the `PP_DTYPE_*` codes, and the client's calls
//! `pp_call_parts` (the reply into the caller's buffers, of the shapes the caller fixes) and
//! `pp_call_parts_any` (a reply of any shape, into a `pp_parts_reply`).
//!
//! Every descriptor is checked here, before anything is sent: a refused call leaves the peer
//! as it was. The values then go to the crate's `Peer::call_parts` as borrowed slices,
//! without a copy.

use std::ffi::{c_char, c_int, c_void};
use std::fmt;

use peerpipe::parts::{MAX_PARTS, Parsed, Part, PartDtype, PartMut, Shape};
use peerpipe::peer::PartsReply;
use peerpipe::zerocopy::NATIVE_IS_WIRE;

use crate::client::{pp_peer, pp_timing, write_timing};
use crate::error::{Failure, invalid};
use crate::ffi::{self, guard, guard_or};

/// Part dtype: raw bytes (`uint8_t`), the wire's part dtype 0.
pub const PP_DTYPE_BYTES: c_int = 0;
/// Part dtype: `float` (IEEE-754 binary32), the wire's part dtype 1.
pub const PP_DTYPE_F32: c_int = 1;
/// Part dtype: `double` (IEEE-754 binary64), the wire's part dtype 2.
pub const PP_DTYPE_F64: c_int = 2;
/// Part dtype: `int64_t`, the wire's part dtype 3.
pub const PP_DTYPE_I64: c_int = 3;

/// One part of a message to send, or of one received, read-only: `count` elements of
/// `dtype` (a `PP_DTYPE_*`) at `data`, a vector when `cols` is 0, else a row-major matrix of
/// `cols` columns and `count / cols` rows (`count` must be a multiple of `cols`).
///
/// `data` must be aligned for its dtype (8 bytes for `double` and `int64_t`, 4 for `float`)
/// and may be NULL when `count` is 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pp_part {
    /// `PP_DTYPE_BYTES`, `PP_DTYPE_F32`, `PP_DTYPE_F64` or `PP_DTYPE_I64`.
    pub dtype: c_int,
    /// 0 for a vector; otherwise the columns of a row-major matrix.
    pub cols: u32,
    /// The number of elements (not bytes).
    pub count: u64,
    /// The first element.
    pub data: *const c_void,
}

/// A caller's buffer for one part of a reply: the reply's part must have exactly this dtype,
/// count and columns (`cols` 0: a vector), and its values are written to `data`, which must
/// be aligned as in `pp_part` and may be NULL when `count` is 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pp_part_out {
    /// `PP_DTYPE_BYTES`, `PP_DTYPE_F32`, `PP_DTYPE_F64` or `PP_DTYPE_I64`.
    pub dtype: c_int,
    /// 0 for a vector; otherwise the columns of a row-major matrix.
    pub cols: u32,
    /// The number of elements (not bytes).
    pub count: u64,
    /// Where the values go: room for `count` elements.
    pub data: *mut c_void,
}

/// Which argument a message names: `in[2]`, `out[0].data`.
#[derive(Clone, Copy)]
pub(crate) struct Arg {
    list: &'static str,
    index: usize,
    field: &'static str,
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]{}", self.list, self.index, self.field)
    }
}

fn arg(list: &'static str, index: usize) -> Arg {
    Arg { list, index, field: "" }
}

/// The shape a part of `dtype`, `cols` and `count` has, checked: a known dtype, a count
/// that is whole rows of its columns, bytes that can be addressed. A refusal names the field
/// at fault (`dtype` or `count`) and why.
pub(crate) fn checked_shape(
    dtype: c_int,
    cols: u32,
    count: u64,
) -> Result<Shape, (&'static str, String)> {
    let dtype = u8::try_from(dtype).ok().and_then(PartDtype::from_byte).ok_or_else(|| {
        let reason = format!(
            "is {dtype}: expected PP_DTYPE_BYTES (0), PP_DTYPE_F32 (1), PP_DTYPE_F64 (2) or \
             PP_DTYPE_I64 (3)"
        );
        ("dtype", reason)
    })?;
    if cols > 0 && !count.is_multiple_of(u64::from(cols)) {
        return Err(("count", format!("is {count}, not whole rows of {cols} columns")));
    }
    let shape = Shape { dtype, count, cols };
    match shape.byte_len() {
        Some(bytes) if bytes <= isize::MAX as u64 => Ok(shape),
        _ => Err(("count", format!("is {count}: too many elements of {dtype} to address"))),
    }
}

/// [`checked_shape`] of a descriptor, a refusal naming it (`in[1].count`).
fn descriptor_shape(dtype: c_int, cols: u32, count: u64, at: Arg) -> Result<Shape, Failure> {
    checked_shape(dtype, cols, count).map_err(|(field, reason)| {
        let field = if field == "dtype" { ".dtype" } else { ".count" };
        invalid(Arg { field, ..at }, &reason)
    })
}

/// The `n` descriptors at `ptr`, at most [`MAX_PARTS`] of them.
///
/// # Safety
/// `ptr` is NULL or points to `n` readable descriptors valid for `'a`.
pub(crate) unsafe fn descriptors<'a, T>(
    ptr: *const T,
    n: usize,
    list: &'static str,
    count: &'static str,
) -> Result<&'a [T], Failure> {
    if n > MAX_PARTS {
        return Err(invalid(count, &format!("is {n}: a message has at most {MAX_PARTS} parts")));
    }
    // SAFETY: the caller guarantees NULL or `n` readable descriptors.
    unsafe { ffi::slice(ptr, n, list) }
}

/// The part `d` describes, borrowing its values.
///
/// # Safety
/// `d.data` is NULL or points to `d.count` readable elements of its dtype, valid and not
/// written for `'a`.
unsafe fn part_in<'a>(d: &pp_part, at: Arg) -> Result<Part<'a>, Failure> {
    let shape = descriptor_shape(d.dtype, d.cols, d.count, at)?;
    let n = shape.count as usize; // addressable: checked above
    let data = Arg { field: ".data", ..at };
    // SAFETY: the caller guarantees the elements; `ffi::slice` refuses NULL and misaligned.
    let part = unsafe {
        match shape.dtype {
            PartDtype::Bytes => Part::bytes(ffi::slice(d.data.cast(), n, data)?),
            PartDtype::F32 => Part::f32(ffi::slice(d.data.cast(), n, data)?),
            PartDtype::F64 => Part::f64(ffi::slice(d.data.cast(), n, data)?),
            PartDtype::I64 => Part::i64(ffi::slice(d.data.cast(), n, data)?),
        }
    };
    Ok(if shape.cols > 0 { part.matrix(shape.cols as usize)? } else { part })
}

/// The buffer `d` describes, to receive a part of its shape into.
///
/// # Safety
/// `d.data` is NULL or points to `d.count` writable elements of its dtype that nothing else
/// reads or writes for `'a`.
unsafe fn part_out<'a>(d: &pp_part_out, at: Arg) -> Result<PartMut<'a>, Failure> {
    let shape = descriptor_shape(d.dtype, d.cols, d.count, at)?;
    let n = shape.count as usize;
    let data = Arg { field: ".data", ..at };
    // SAFETY: the caller guarantees the elements and their exclusive use; `ffi::slice_mut`
    // refuses NULL and misaligned pointers.
    let part = unsafe {
        match shape.dtype {
            PartDtype::Bytes => PartMut::bytes(ffi::slice_mut(d.data.cast(), n, data)?),
            PartDtype::F32 => PartMut::f32(ffi::slice_mut(d.data.cast(), n, data)?),
            PartDtype::F64 => PartMut::f64(ffi::slice_mut(d.data.cast(), n, data)?),
            PartDtype::I64 => PartMut::i64(ffi::slice_mut(d.data.cast(), n, data)?),
        }
    };
    Ok(if shape.cols > 0 { part.matrix(shape.cols as usize)? } else { part })
}

/// The bytes a descriptor's values cover, as an address range.
fn span(data: *const c_void, dtype: c_int, count: u64) -> (usize, usize) {
    let width = u8::try_from(dtype).ok().and_then(PartDtype::from_byte).map_or(0, PartDtype::width);
    let start = data as usize;
    (start, start.saturating_add(count.saturating_mul(width) as usize))
}

/// Refuses a reply buffer that overlaps a request part or another reply buffer: the reply
/// would be written over values being sent, or two parts over each other.
fn check_disjoint(inputs: &[pp_part], outputs: &[pp_part_out]) -> Result<(), Failure> {
    let overlap = |(a0, a1): (usize, usize), (b0, b1): (usize, usize)| {
        a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1
    };
    for (i, out) in outputs.iter().enumerate() {
        let here = span(out.data.cast_const(), out.dtype, out.count);
        if let Some(j) = inputs.iter().position(|p| overlap(here, span(p.data, p.dtype, p.count))) {
            let reason = format!("overlaps in[{j}]; a reply part needs a buffer of its own");
            return Err(invalid(arg("out", i), &reason));
        }
        let earlier = &outputs[..i];
        let clash =
            earlier.iter().position(|p| overlap(here, span(p.data.cast_const(), p.dtype, p.count)));
        if let Some(j) = clash {
            let reason = format!("overlaps out[{j}]; a reply part needs a buffer of its own");
            return Err(invalid(arg("out", i), &reason));
        }
    }
    Ok(())
}

/// The parts of a received message as C reads them: each part's shape and where its values
/// are in native byte order — in the message itself, or, on a big-endian target, in a copy
/// converted from the wire's little-endian. Kept from message to message, so loading one
/// allocates nothing once warm.
#[derive(Debug, Default)]
pub(crate) struct NativeParts {
    parts: Vec<(Shape, *const u8)>,
    /// Big-endian targets only: the converted values, one buffer per part.
    converted: Vec<Vec<u64>>,
}

impl NativeParts {
    /// Points at the parts of `parsed`; the pointers are valid while its payload is.
    pub(crate) fn load(&mut self, parsed: &Parsed<'_>) {
        self.parts.clear();
        for (i, part) in parsed.iter().enumerate() {
            let bytes = part.bytes();
            let at = if NATIVE_IS_WIRE {
                bytes.as_ptr()
            } else {
                if self.converted.len() <= i {
                    self.converted.push(Vec::new());
                }
                let words = &mut self.converted[i];
                words.clear();
                words.resize(bytes.len().div_ceil(8), 0);
                let native: &mut [u8] = bytemuck::cast_slice_mut(words);
                native[..bytes.len()].copy_from_slice(bytes);
                let width = part.shape().dtype.width() as usize;
                native[..bytes.len()].chunks_exact_mut(width).for_each(<[u8]>::reverse);
                words.as_ptr().cast()
            };
            self.parts.push((part.shape(), at));
        }
    }

    /// Forgets the parts (a failed call: none to read).
    pub(crate) fn clear(&mut self) {
        self.parts.clear();
    }

    /// How many parts there are.
    pub(crate) fn len(&self) -> usize {
        self.parts.len()
    }

    /// Part `index` with its shape, `None` past the last.
    pub(crate) fn get(&self, index: usize) -> Option<(Shape, pp_part)> {
        self.parts.get(index).map(|&(shape, at)| {
            let part = pp_part {
                dtype: c_int::from(shape.dtype as u8),
                cols: shape.cols,
                count: shape.count,
                data: at.cast(),
            };
            (shape, part)
        })
    }
}

/// Calls `function` on the server with the `n_in` parts at `in` — one PARTS request, sent
/// straight from the caller's memory — and receives the reply's parts into the `n_out`
/// buffers at `out`, whose shapes the reply must have: the same number of parts, and each of
/// the dtype, count and columns of its buffer. One round trip; once the peer is warm the
/// call allocates nothing.
///
/// `function` names one of the server's functions (a C server's `pp_functions_add`, a Rust
/// server's `Functions`); "" calls its default function (what `peer --role server` serves).
/// The values cross bit for bit. `timing`, when not NULL, receives where the time went; it
/// is written only on success. On any failure the contents of the `out` buffers are
/// unspecified. Blocks until the reply arrives, at most the peer's timeout.
///
/// Returns `PP_OK`. Refused before anything is sent, the peer staying usable:
/// `PP_EINVAL` when `peer` or `function` is NULL, `function` is not a function name (1 to 64
/// ASCII letters, digits, `_ . : -`), `n_in` or `n_out` is above 64, `in` or `out` is NULL
/// with a nonzero count, a part has an unknown dtype, a count that is not whole rows of its
/// `cols`, or data that is NULL (with a nonzero count), misaligned or too long, or a reply
/// buffer overlaps a request part or another reply buffer — `pp_last_error()` names the
/// argument, e.g. `invalid argument in[1].dtype: is 9: expected PP_DTYPE_BYTES (0), ...`;
/// `PP_EUNSUPPORTED` when the server does not speak PARTS (its HELLO lacks `parts=1`: an
/// older or other server; the message names it); `PP_ETOOLARGE` when the request exceeds
/// the server's max_frame_bytes. After the call, the peer staying usable: `PP_EREMOTE` when
/// the server answered with an ERROR (an unknown function — the message lists the server's
/// functions —, a function that refused the call); `PP_ESHAPE` when the reply's parts differ
/// from `out` (the message names the expected and the found shapes, e.g. `expected 1 part:
/// f64[500], found 1 part: f64[3]`). Leaving the peer good only for `pp_close`:
/// `PP_ETIMEDOUT`, `PP_EEXITED`, `PP_ECLOSED`, `PP_EPROTO`, `PP_EIO`, as for `pp_call_f64`.
///
/// # Safety
/// `peer` is NULL or a live peer, not in use by another thread; `function` is NULL or a
/// NUL-terminated string; `in` is NULL or points to `n_in` descriptors, each of whose `data`
/// points to `count` readable elements of its dtype (or is NULL with `count` 0); `out`
/// likewise to `n_out` descriptors of `count` writable elements each; `timing` is NULL or
/// points to a writable `pp_timing`. Everything is used only during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_call_parts(
    peer: *mut pp_peer,
    function: *const c_char,
    r#in: *const pp_part,
    n_in: usize,
    out: *const pp_part_out,
    n_out: usize,
    timing: *mut pp_timing,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a live peer used by no other thread.
        let peer = unsafe { peer.as_mut() }.ok_or_else(|| invalid("peer", "is NULL"))?;
        // SAFETY: the caller guarantees NULL or a NUL-terminated string.
        let function = unsafe { ffi::c_str(function, "function") }?;
        // SAFETY: the caller guarantees NULL or `n_in` (`n_out`) readable descriptors.
        let (inputs, outputs) = unsafe {
            (descriptors(r#in, n_in, "in", "n_in")?, descriptors(out, n_out, "out", "n_out")?)
        };
        check_disjoint(inputs, outputs)?;
        let mut parts = [Part::bytes(&[]); MAX_PARTS];
        for (i, (d, part)) in inputs.iter().zip(&mut parts).enumerate() {
            // SAFETY: the caller guarantees each descriptor's elements for the call.
            *part = unsafe { part_in(d, arg("in", i)) }?;
        }
        let mut buffers: [PartMut<'_>; MAX_PARTS] =
            std::array::from_fn(|_| PartMut::bytes(&mut []));
        for (i, (d, buffer)) in outputs.iter().zip(&mut buffers).enumerate() {
            // SAFETY: the caller guarantees each buffer's elements, writable, for the call;
            // no two buffers, nor a buffer and a request part, overlap (checked above).
            *buffer = unsafe { part_out(d, arg("out", i)) }?;
        }
        let t = peer.peer.call_parts(function, &parts[..n_in], &mut buffers[..n_out])?;
        // SAFETY: the caller guarantees NULL or a writable pp_timing.
        unsafe { write_timing(timing, t) };
        Ok(())
    })
}

/// A reply of any shape, as `pp_call_parts_any` receives it. Opaque: a Rust `Box` holding
/// the crate's `PartsReply` (one buffer, kept from call to call) and where each part is.
/// Made by `pp_parts_reply_new`, freed by `pp_parts_reply_free`; one reply may serve many
/// calls, each replacing the parts of the one before. Not to be used by two threads at once.
#[derive(Debug, Default)]
pub struct pp_parts_reply {
    reply: PartsReply,
    parts: NativeParts,
}

/// Makes an empty reply (no parts) and stores it in `*out`.
///
/// Ownership: the caller owns `*out` and frees it with `pp_parts_reply_free`.
///
/// Returns `PP_OK`, or `PP_EINVAL` when `out` is NULL.
///
/// # Safety
/// `out` is NULL or points to writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_parts_reply_new(out: *mut *mut pp_parts_reply) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(invalid("out", "is NULL"));
        }
        let reply = Box::into_raw(Box::<pp_parts_reply>::default());
        // SAFETY: `out` is non-NULL and the caller guarantees it is writable.
        unsafe { out.write(reply) };
        Ok(())
    })
}

/// Frees a reply made by `pp_parts_reply_new`; the `data` pointers read from it become
/// invalid. NULL is a no-op.
///
/// # Safety
/// `reply` is NULL or a reply from `pp_parts_reply_new` not freed before, not in use by
/// another thread; it must not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_parts_reply_free(reply: *mut pp_parts_reply) {
    if !reply.is_null() {
        // SAFETY: made by Box::into_raw in pp_parts_reply_new and, per the caller, not freed.
        drop(unsafe { Box::from_raw(reply) });
    }
}

/// `pp_call_parts` with a reply of any shape: its parts are received into `reply` (replacing
/// the parts it held), to be read with `pp_parts_reply_count` and `pp_parts_reply_part`. For
/// a reply whose shape the caller cannot fix in advance; once `reply` has held a reply as
/// large, the call allocates nothing.
///
/// On failure `reply` holds no parts. Returns and refuses as `pp_call_parts`, without
/// `PP_ESHAPE`; also `PP_EINVAL` when `reply` is NULL.
///
/// # Safety
/// As `pp_call_parts` for `peer`, `function`, `in` and `timing`; `reply` is NULL or a live
/// reply from `pp_parts_reply_new`, not in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_call_parts_any(
    peer: *mut pp_peer,
    function: *const c_char,
    r#in: *const pp_part,
    n_in: usize,
    reply: *mut pp_parts_reply,
    timing: *mut pp_timing,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a live reply used by no other thread.
        let reply = unsafe { reply.as_mut() }.ok_or_else(|| invalid("reply", "is NULL"))?;
        reply.parts.clear();
        // SAFETY: the caller guarantees NULL or a live peer used by no other thread.
        let peer = unsafe { peer.as_mut() }.ok_or_else(|| invalid("peer", "is NULL"))?;
        // SAFETY: the caller guarantees NULL or a NUL-terminated string.
        let function = unsafe { ffi::c_str(function, "function") }?;
        // SAFETY: the caller guarantees NULL or `n_in` readable descriptors.
        let inputs = unsafe { descriptors(r#in, n_in, "in", "n_in") }?;
        let mut parts = [Part::bytes(&[]); MAX_PARTS];
        for (i, (d, part)) in inputs.iter().zip(&mut parts).enumerate() {
            // SAFETY: the caller guarantees each descriptor's elements for the call.
            *part = unsafe { part_in(d, arg("in", i)) }?;
        }
        let t = peer.peer.call_parts_any(function, &parts[..n_in], &mut reply.reply)?;
        reply.parts.load(&reply.reply.parts());
        // SAFETY: the caller guarantees NULL or a writable pp_timing.
        unsafe { write_timing(timing, t) };
        Ok(())
    })
}

/// The number of parts `reply` holds: those of the last successful `pp_call_parts_any` into
/// it, 0 before one or after a failed one. 0, with the reason in `pp_last_error()`, when
/// `reply` is NULL.
///
/// # Safety
/// `reply` is NULL or a live reply from `pp_parts_reply_new`, not in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_parts_reply_count(reply: *const pp_parts_reply) -> usize {
    guard_or(0, || {
        // SAFETY: the caller guarantees NULL or a live reply.
        let reply = unsafe { reply.as_ref() }.ok_or_else(|| invalid("reply", "is NULL"))?;
        Ok(reply.parts.len())
    })
}

/// Writes part `index` of `reply` to `*part`: its dtype, columns, count and a pointer to its
/// values, in native byte order and aligned for the dtype. The values belong to `reply`:
/// read them, do not write or free them; they stay valid until the next call with `reply`
/// (`pp_call_parts_any`, `pp_parts_reply_free`).
///
/// Returns `PP_OK`; `PP_EINVAL` when `reply` or `part` is NULL or `index` is not below
/// `pp_parts_reply_count(reply)`, `*part` then unchanged.
///
/// # Safety
/// `reply` is NULL or a live reply from `pp_parts_reply_new`, not in use by another thread;
/// `part` is NULL or points to a writable `pp_part`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pp_parts_reply_part(
    reply: *const pp_parts_reply,
    index: usize,
    part: *mut pp_part,
) -> c_int {
    guard(|| {
        // SAFETY: the caller guarantees NULL or a live reply.
        let reply = unsafe { reply.as_ref() }.ok_or_else(|| invalid("reply", "is NULL"))?;
        if part.is_null() {
            return Err(invalid("part", "is NULL"));
        }
        let (_, found) = reply.parts.get(index).ok_or_else(|| {
            invalid("index", &format!("is {index}, and the reply has {} parts", reply.parts.len()))
        })?;
        // SAFETY: non-NULL, and the caller guarantees it writable.
        unsafe { part.write(found) };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Descriptors of `count` doubles from element `from` of one buffer at `base`: only
    /// addresses are compared, nothing is read or written.
    fn input(base: *mut f64, from: usize, count: u64) -> pp_part {
        let data = base.wrapping_add(from).cast_const().cast();
        pp_part { dtype: PP_DTYPE_F64, cols: 0, count, data }
    }

    fn output(base: *mut f64, from: usize, count: u64) -> pp_part_out {
        pp_part_out { dtype: PP_DTYPE_F64, cols: 0, count, data: base.wrapping_add(from).cast() }
    }

    #[test]
    fn reply_buffers_may_touch_but_not_overlap_the_request_or_each_other() {
        let mut buffer = [0.0f64; 8];
        let base = buffer.as_mut_ptr();
        let request = [input(base, 0, 4)];
        assert!(check_disjoint(&request, &[output(base, 4, 2), output(base, 6, 2)]).is_ok());
        assert!(check_disjoint(&request, &[output(base, 0, 0)]).is_ok(), "empty: no bytes");
        let failure = check_disjoint(&request, &[output(base, 3, 2)]).unwrap_err();
        assert_eq!(
            failure.message,
            "invalid argument out[0]: overlaps in[0]; a reply part needs a buffer of its own"
        );
        let failure =
            check_disjoint(&request, &[output(base, 4, 3), output(base, 6, 2)]).unwrap_err();
        assert!(failure.message.starts_with("invalid argument out[1]: overlaps out[0]"));
        let bytes = pp_part_out { dtype: PP_DTYPE_BYTES, ..output(base, 4, 1) };
        assert!(check_disjoint(&request, &[bytes, output(base, 5, 1)]).is_ok(), "1 byte of 8");
    }

    #[test]
    fn a_shape_is_refused_naming_the_field_at_fault() {
        assert_eq!(checked_shape(PP_DTYPE_F64, 3, 9).unwrap().to_string(), "f64[3x3]");
        assert!(checked_shape(PP_DTYPE_BYTES, 0, 0).is_ok());
        assert_eq!(checked_shape(-1, 0, 1).unwrap_err().0, "dtype");
        assert_eq!(checked_shape(4, 0, 1).unwrap_err().0, "dtype");
        let rows = checked_shape(PP_DTYPE_F32, 4, 6).unwrap_err();
        assert_eq!(rows, ("count", "is 6, not whole rows of 4 columns".to_owned()));
        assert_eq!(checked_shape(PP_DTYPE_I64, 0, u64::MAX / 4).unwrap_err().0, "count");
    }
}
