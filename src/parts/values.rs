//! A caller's values as parts: [`Part`] to send, [`PartMut`] to receive into, and
//! [`PartsOut`], the reusable buffer a server's function writes its reply into.

use super::table::{PartRef, descriptor_bytes};
use crate::error::{Error, Result};
use crate::wire::{DESCRIPTOR_LEN, MAX_PARTS, PREAMBLE_LEN, PartDtype, Shape, pad8};
use crate::zerocopy::NATIVE_IS_WIRE;

#[derive(Clone, Copy, Debug)]
enum Data<'a> {
    Bytes(&'a [u8]),
    F32(&'a [f32]),
    F64(&'a [f64]),
    I64(&'a [i64]),
}

/// One part to send: a slice of the caller's, as a vector or a row-major matrix.
///
/// ```
/// use peerpipe::parts::{Part, PartDtype, Shape};
/// let jac = [1.0, 0.0, 0.0, 1.0];
/// let part = Part::f64(&jac).matrix(2)?;
/// assert_eq!(part.shape(), Shape::matrix(PartDtype::F64, 2, 2).unwrap());
/// assert!(Part::f64(&jac).matrix(3).is_err()); // 4 elements are not rows of 3
/// # Ok::<(), peerpipe::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Part<'a> {
    data: Data<'a>,
    cols: u32,
}

impl<'a> Part<'a> {
    /// Raw bytes.
    pub fn bytes(values: &'a [u8]) -> Part<'a> {
        Part { data: Data::Bytes(values), cols: 0 }
    }
    /// f32 values.
    pub fn f32(values: &'a [f32]) -> Part<'a> {
        Part { data: Data::F32(values), cols: 0 }
    }
    /// f64 values.
    pub fn f64(values: &'a [f64]) -> Part<'a> {
        Part { data: Data::F64(values), cols: 0 }
    }
    /// i64 values.
    pub fn i64(values: &'a [i64]) -> Part<'a> {
        Part { data: Data::I64(values), cols: 0 }
    }

    /// The same values as a row-major matrix of `cols` columns.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `cols` is 0 or above `u32::MAX`, or the length is not
    /// a multiple of it.
    pub fn matrix(self, cols: usize) -> Result<Part<'a>> {
        Ok(Part { cols: matrix_cols(self.len(), cols)?, ..self })
    }

    fn len(&self) -> usize {
        match self.data {
            Data::Bytes(v) => v.len(),
            Data::F32(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::I64(v) => v.len(),
        }
    }

    /// Its dtype, count and columns.
    pub fn shape(&self) -> Shape {
        let dtype = match self.data {
            Data::Bytes(_) => PartDtype::Bytes,
            Data::F32(_) => PartDtype::F32,
            Data::F64(_) => PartDtype::F64,
            Data::I64(_) => PartDtype::I64,
        };
        Shape { dtype, count: self.len() as u64, cols: self.cols }
    }

    /// Its wire bytes, borrowed from the caller's memory without copying; `None` on a
    /// big-endian target for numbers, which then go through [`Part::encode_into`].
    pub fn wire_bytes(&self) -> Option<&'a [u8]> {
        match self.data {
            Data::Bytes(v) => Some(v),
            _ if !NATIVE_IS_WIRE => None,
            Data::F32(v) => Some(bytemuck::cast_slice(v)),
            Data::F64(v) => Some(bytemuck::cast_slice(v)),
            Data::I64(v) => Some(bytemuck::cast_slice(v)),
        }
    }

    /// Appends its wire bytes (little-endian) and their padding to `out`, on every target.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        match self.data {
            Data::Bytes(v) => out.extend_from_slice(v),
            Data::F32(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            Data::F64(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            Data::I64(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        }
        out.resize(out.len() + pad8(out.len() as u64) as usize, 0);
    }
}

fn matrix_cols(len: usize, cols: usize) -> Result<u32> {
    let cols32 =
        u32::try_from(cols).ok().filter(|&c| c > 0).ok_or_else(|| Error::InvalidArgument {
            what: "matrix columns",
            reason: format!("expected 1 to {}, found {cols}", u32::MAX),
        })?;
    if !len.is_multiple_of(cols) {
        return Err(Error::InvalidArgument {
            what: "matrix",
            reason: format!("{len} elements are not whole rows of {cols} columns"),
        });
    }
    Ok(cols32)
}

#[derive(Debug)]
enum DataMut<'a> {
    Bytes(&'a mut [u8]),
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
    I64(&'a mut [i64]),
}

/// A caller's buffer to receive one part of a reply into; its shape is the shape the reply's
/// part must have.
#[derive(Debug)]
pub struct PartMut<'a> {
    data: DataMut<'a>,
    cols: u32,
}

impl<'a> PartMut<'a> {
    /// Raw bytes.
    pub fn bytes(values: &'a mut [u8]) -> PartMut<'a> {
        PartMut { data: DataMut::Bytes(values), cols: 0 }
    }
    /// f32 values.
    pub fn f32(values: &'a mut [f32]) -> PartMut<'a> {
        PartMut { data: DataMut::F32(values), cols: 0 }
    }
    /// f64 values.
    pub fn f64(values: &'a mut [f64]) -> PartMut<'a> {
        PartMut { data: DataMut::F64(values), cols: 0 }
    }
    /// i64 values.
    pub fn i64(values: &'a mut [i64]) -> PartMut<'a> {
        PartMut { data: DataMut::I64(values), cols: 0 }
    }

    /// The same buffer expecting a row-major matrix of `cols` columns.
    ///
    /// # Errors
    /// As [`Part::matrix`].
    pub fn matrix(self, cols: usize) -> Result<PartMut<'a>> {
        let cols = matrix_cols(self.len(), cols)?;
        Ok(PartMut { cols, ..self })
    }

    fn len(&self) -> usize {
        match &self.data {
            DataMut::Bytes(v) => v.len(),
            DataMut::F32(v) => v.len(),
            DataMut::F64(v) => v.len(),
            DataMut::I64(v) => v.len(),
        }
    }

    /// The shape a reply's part must have to land here.
    pub fn shape(&self) -> Shape {
        let dtype = match self.data {
            DataMut::Bytes(_) => PartDtype::Bytes,
            DataMut::F32(_) => PartDtype::F32,
            DataMut::F64(_) => PartDtype::F64,
            DataMut::I64(_) => PartDtype::I64,
        };
        Shape { dtype, count: self.len() as u64, cols: self.cols }
    }

    /// The buffer's memory as bytes, to receive wire bytes straight into (what they mean on a
    /// little-endian target only: elsewhere use [`PartMut::fill_from`]).
    pub(crate) fn wire_bytes_mut(&mut self) -> &mut [u8] {
        match &mut self.data {
            DataMut::Bytes(v) => v,
            DataMut::F32(v) => bytemuck::cast_slice_mut(v),
            DataMut::F64(v) => bytemuck::cast_slice_mut(v),
            DataMut::I64(v) => bytemuck::cast_slice_mut(v),
        }
    }

    /// Copies `part`'s values in, converting from little-endian on a big-endian target.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the shapes differ (nothing is copied).
    pub fn fill_from(&mut self, part: &PartRef<'_>) -> Result<()> {
        if part.shape() != self.shape() {
            return Err(Error::InvalidArgument {
                what: "part buffer",
                reason: format!("expected {}, found {}", self.shape(), part.shape()),
            });
        }
        let src = part.bytes();
        match &mut self.data {
            DataMut::Bytes(v) => v.copy_from_slice(src),
            DataMut::F32(v) => fill_le(v, src, f32::from_le_bytes),
            DataMut::F64(v) => fill_le(v, src, f64::from_le_bytes),
            DataMut::I64(v) => fill_le(v, src, i64::from_le_bytes),
        }
        Ok(())
    }
}

/// Copies little-endian elements of `src` into `dst`: one `memcpy` where native is wire.
fn fill_le<T: bytemuck::Pod, const W: usize>(dst: &mut [T], src: &[u8], from: fn([u8; W]) -> T) {
    if NATIVE_IS_WIRE {
        bytemuck::cast_slice_mut::<T, u8>(dst).copy_from_slice(src);
    } else {
        for (x, chunk) in dst.iter_mut().zip(src.chunks_exact(W)) {
            *x = from(chunk.try_into().expect("W-byte chunk"));
        }
    }
}

/// The parts of a reply as a server's function writes them: each part a region of one
/// 8-byte-aligned buffer, kept from call to call, so a warm server allocates nothing.
///
/// A function asks for a part of a shape ([`PartsOut::f64`], [`PartsOut::f64_matrix`], …)
/// and fills the zeroed slice it gets, or copies one in ([`PartsOut::push`]).
///
/// ```
/// use peerpipe::parts::PartsOut;
/// let mut out = PartsOut::default();
/// out.f64(2)?.copy_from_slice(&[1.0, -1.0]);
/// let jac = out.f64_matrix(2, 2)?;
/// jac[1] = 0.5; // row 0, column 1
/// assert_eq!(out.shapes().len(), 2);
/// assert_eq!(out.shapes()[1].to_string(), "f64[2x2]");
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct PartsOut {
    words: Vec<u64>,
    /// Words in use.
    used: usize,
    shapes: Vec<Shape>,
    /// The reply's part table (no name): preamble and descriptors, those of the parts so far
    /// first. Kept from reply to reply, so that a reply of the last one's shapes rewrites it
    /// in place.
    table: Vec<u8>,
}

impl PartsOut {
    /// An empty reply.
    pub fn new() -> PartsOut {
        PartsOut::default()
    }

    /// Drops every part, keeping the memory.
    pub fn clear(&mut self) {
        self.used = 0;
        self.shapes.clear();
    }

    /// The shapes of the parts so far.
    pub fn shapes(&self) -> &[Shape] {
        &self.shapes
    }

    /// A new zeroed part of `shape`, as bytes.
    fn add(&mut self, shape: Shape) -> std::result::Result<&mut [u8], String> {
        let bytes = self.add_unfilled(shape)?;
        bytes.fill(0);
        Ok(bytes)
    }

    /// A new part of `shape`, as bytes, for the caller to overwrite whole; the padding after
    /// it is zero already.
    fn add_unfilled(&mut self, shape: Shape) -> std::result::Result<&mut [u8], String> {
        if self.shapes.len() >= MAX_PARTS {
            return Err(format!("a reply has at most {MAX_PARTS} parts"));
        }
        let bytes = shape
            .byte_len()
            .and_then(|b| usize::try_from(b).ok())
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| format!("a part of {shape} is too large"))?;
        let at = PREAMBLE_LEN + self.shapes.len() * DESCRIPTOR_LEN;
        if self.table.len() < at + DESCRIPTOR_LEN {
            self.table.resize(at + DESCRIPTOR_LEN, 0);
        }
        let descriptor = descriptor_bytes(shape);
        self.table[at..at + DESCRIPTOR_LEN].copy_from_slice(&descriptor);
        let parts = self.shapes.len() as u32 + 1;
        self.table[..4].copy_from_slice(&parts.to_le_bytes());
        let start = self.used;
        self.used += bytes.div_ceil(8);
        if self.words.len() < self.used {
            self.words.resize(self.used, 0);
        }
        let words = &mut self.words[start..self.used];
        if let Some(last) = words.last_mut() {
            *last = 0; // the padding, when the part does not fill its last word
        }
        self.shapes.push(shape);
        Ok(&mut bytemuck::cast_slice_mut(words)[..bytes])
    }

    /// A new part of `count` f64 values, zeroed, to fill.
    ///
    /// # Errors
    /// A message when the reply has [`MAX_PARTS`] parts already or the part is too large.
    pub fn f64(&mut self, count: usize) -> std::result::Result<&mut [f64], String> {
        let bytes = self.add(Shape::vector(PartDtype::F64, count as u64))?;
        Ok(bytemuck::cast_slice_mut(bytes))
    }

    /// A new row-major `rows × cols` f64 matrix, zeroed, to fill.
    ///
    /// # Errors
    /// As [`PartsOut::f64`]; also when `cols` is 0 or `rows × cols` overflows.
    pub fn f64_matrix(
        &mut self,
        rows: usize,
        cols: usize,
    ) -> std::result::Result<&mut [f64], String> {
        let bytes = self.add(f64_matrix(rows, cols)?)?;
        Ok(bytemuck::cast_slice_mut(bytes))
    }

    /// As [`PartsOut::f64`], but not zeroed: its values are unspecified (what earlier replies
    /// left in this memory) — for a function that writes every element, such as a model's
    /// derivative, it saves a pass over the part.
    ///
    /// # Errors
    /// As [`PartsOut::f64`].
    pub fn f64_to_overwrite(&mut self, count: usize) -> std::result::Result<&mut [f64], String> {
        let bytes = self.add_unfilled(Shape::vector(PartDtype::F64, count as u64))?;
        Ok(bytemuck::cast_slice_mut(bytes))
    }

    /// As [`PartsOut::f64_matrix`], but not zeroed (see [`PartsOut::f64_to_overwrite`]).
    ///
    /// # Errors
    /// As [`PartsOut::f64_matrix`].
    pub fn f64_matrix_to_overwrite(
        &mut self,
        rows: usize,
        cols: usize,
    ) -> std::result::Result<&mut [f64], String> {
        let bytes = self.add_unfilled(f64_matrix(rows, cols)?)?;
        Ok(bytemuck::cast_slice_mut(bytes))
    }

    /// A new part of `count` f32 values, zeroed, to fill.
    ///
    /// # Errors
    /// As [`PartsOut::f64`].
    pub fn f32(&mut self, count: usize) -> std::result::Result<&mut [f32], String> {
        let bytes = self.add(Shape::vector(PartDtype::F32, count as u64))?;
        Ok(bytemuck::cast_slice_mut(bytes))
    }

    /// A new part of `count` i64 values, zeroed, to fill.
    ///
    /// # Errors
    /// As [`PartsOut::f64`].
    pub fn i64(&mut self, count: usize) -> std::result::Result<&mut [i64], String> {
        let bytes = self.add(Shape::vector(PartDtype::I64, count as u64))?;
        Ok(bytemuck::cast_slice_mut(bytes))
    }

    /// A new part of `count` raw bytes, zeroed, to fill.
    ///
    /// # Errors
    /// As [`PartsOut::f64`].
    pub fn bytes(&mut self, count: usize) -> std::result::Result<&mut [u8], String> {
        self.add(Shape::vector(PartDtype::Bytes, count as u64))
    }

    /// Appends a copy of `part`.
    ///
    /// # Errors
    /// As [`PartsOut::f64`].
    pub fn push(&mut self, part: Part<'_>) -> std::result::Result<(), String> {
        let shape = part.shape();
        let bytes = self.add_unfilled(shape)?;
        match part.data {
            Data::Bytes(v) => bytes.copy_from_slice(v),
            Data::F32(v) => bytes.copy_from_slice(bytemuck::cast_slice(v)),
            Data::F64(v) => bytes.copy_from_slice(bytemuck::cast_slice(v)),
            Data::I64(v) => bytes.copy_from_slice(bytemuck::cast_slice(v)),
        }
        Ok(())
    }

    /// Appends a copy of a received part (an echo), converting from wire order.
    ///
    /// # Errors
    /// As [`PartsOut::f64`].
    pub fn push_received(&mut self, part: &PartRef<'_>) -> std::result::Result<(), String> {
        self.push_wire(part.shape(), part.bytes())
    }

    /// Appends a part of `shape` from its wire bytes (`bytes`, little-endian, as long as the
    /// shape says), converting from wire order.
    pub(crate) fn push_wire(
        &mut self,
        shape: Shape,
        wire: &[u8],
    ) -> std::result::Result<(), String> {
        let bytes = self.add_unfilled(shape)?;
        bytes.copy_from_slice(wire);
        if !NATIVE_IS_WIRE {
            swap_words(bytes, shape.dtype);
        }
        Ok(())
    }

    /// The reply's part table: no name, a descriptor per part.
    fn table(&self) -> &[u8] {
        const NO_PARTS: &[u8] = &[0; PREAMBLE_LEN];
        match self.shapes.len() {
            0 => NO_PARTS,
            n => &self.table[..PREAMBLE_LEN + n * DESCRIPTOR_LEN],
        }
    }

    /// The reply payload's length: the table and the parts with their padding.
    pub(crate) fn payload_len(&self) -> u64 {
        (self.table().len() + self.used * 8) as u64
    }

    /// The reply payload as two runs of bytes: its part table, then the parts in wire order
    /// with their padding. Converts the values to little-endian in place on a big-endian
    /// target, so call it once, right before sending.
    pub(crate) fn wire_payload(&mut self) -> [&[u8]; 2] {
        if !NATIVE_IS_WIRE {
            let mut at = 0;
            for shape in &self.shapes {
                let len = shape.count as usize * shape.dtype.width() as usize;
                let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut self.words[at..]);
                swap_words(&mut bytes[..len], shape.dtype);
                at += len.div_ceil(8);
            }
        }
        let table = self.table();
        [table, bytemuck::cast_slice(&self.words[..self.used])]
    }
}

/// The shape of a row-major `rows × cols` f64 matrix, or why there is none.
fn f64_matrix(rows: usize, cols: usize) -> std::result::Result<Shape, String> {
    Shape::matrix(PartDtype::F64, rows as u64, cols as u64)
        .ok_or_else(|| format!("no {rows} x {cols} matrix: 1 to 2^32-1 columns"))
}

/// Reverses the bytes of every element of `dtype` in `bytes` (native ↔ little-endian on a
/// big-endian target).
fn swap_words(bytes: &mut [u8], dtype: PartDtype) {
    let width = dtype.width() as usize;
    if width > 1 {
        bytes.chunks_exact_mut(width).for_each(<[u8]>::reverse);
    }
}
