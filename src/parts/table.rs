//! The part table: checked whole on the way in ([`parse`]), written on the way out
//! ([`Table`]).

use crate::error::{Error, Result};
use crate::wire::{
    DESCRIPTOR_LEN, MAX_NAME_LEN, MAX_PARTS, PREAMBLE_LEN, PartDtype, Shape, TableFault,
    check_function_name, name_byte, pad8,
};

/// Which way a PARTS payload travels: only a request names a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A client's request: may name a function.
    Request,
    /// A server's reply: names none (check T10).
    Reply,
}

/// A PARTS payload whose table passed every check: the function named and the parts, each
/// an 8-byte-aligned slice of the payload. Borrowed; nothing is copied.
#[derive(Clone, Copy)]
pub struct Parsed<'a> {
    payload: &'a [u8],
    function: &'a str,
    parts: usize,
    /// Offset of the first descriptor.
    descriptors: usize,
    /// Every part's shape and offset, when a [`ParseMemo`] has them; else empty, and a part
    /// is found from the descriptors.
    slots: &'a [Slot],
    /// True when a [`ParseMemo`] recognised the table as the one it accepted last.
    repeated: bool,
}

impl std::fmt::Debug for Parsed<'_> {
    /// The function and each part (shape and bytes), however they were found.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<_> = (0..self.parts).filter_map(|i| self.get(i)).collect();
        f.debug_struct("Parsed").field("function", &self.function).field("parts", &parts).finish()
    }
}

/// Where a part of a checked payload is: its shape, and the offset of its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    shape: Shape,
    offset: usize,
}

impl Slot {
    /// A part of `shape` that is the whole of its payload, from its first byte.
    pub(crate) fn whole(shape: Shape) -> Slot {
        Slot { shape, offset: 0 }
    }

    /// The part's length in bytes, without padding (its shape was checked: no overflow).
    fn len(&self) -> usize {
        self.shape.count as usize * self.shape.dtype.width() as usize
    }
}

/// One part of a [`Parsed`] payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartRef<'a> {
    shape: Shape,
    bytes: &'a [u8],
}

impl<'a> PartRef<'a> {
    /// Its dtype, count and columns.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Its wire bytes (little-endian elements), without padding.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The f64 values in place, when the part is f64, its bytes 8-byte aligned (as in a
    /// payload received by this crate) and the target little-endian.
    pub fn f64_view(&self) -> Option<&'a [f64]> {
        (self.shape.dtype == PartDtype::F64).then(|| bytemuck_view(self.bytes)).flatten()
    }

    /// The f32 values in place; `None` as for [`PartRef::f64_view`].
    pub fn f32_view(&self) -> Option<&'a [f32]> {
        (self.shape.dtype == PartDtype::F32).then(|| bytemuck_view(self.bytes)).flatten()
    }

    /// The i64 values in place; `None` as for [`PartRef::f64_view`].
    pub fn i64_view(&self) -> Option<&'a [i64]> {
        (self.shape.dtype == PartDtype::I64).then(|| bytemuck_view(self.bytes)).flatten()
    }

    /// The f64 values copied into `out` (resized to the count; no allocation once `out` has
    /// the capacity), on every target.
    ///
    /// # Errors
    /// A message naming the part's shape when it is not f64.
    pub fn f64_into(&self, out: &mut Vec<f64>) -> std::result::Result<(), String> {
        if self.shape.dtype != PartDtype::F64 {
            return Err(format!("expected f64 values, found {}", self.shape));
        }
        crate::zerocopy::resize_exact(out, self.shape.count as usize, 0.0);
        for (x, chunk) in out.iter_mut().zip(self.bytes.chunks_exact(8)) {
            *x = f64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
        }
        Ok(())
    }
}

fn bytemuck_view<T: bytemuck::Pod>(bytes: &[u8]) -> Option<&[T]> {
    if crate::zerocopy::NATIVE_IS_WIRE { bytemuck::try_cast_slice(bytes).ok() } else { None }
}

impl<'a> Parsed<'a> {
    /// The parts of a payload that has no table: one part, `slot` (from
    /// [`Slot::whole`]), to the default function — a DATA request's one array.
    pub(crate) fn one(payload: &'a [u8], slot: &'a [Slot; 1]) -> Parsed<'a> {
        Parsed { payload, function: "", parts: 1, descriptors: 0, slots: slot, repeated: false }
    }

    /// The function a request names; `""` for the default function and in every reply.
    pub fn function(&self) -> &'a str {
        self.function
    }

    /// The number of parts.
    pub fn len(&self) -> usize {
        self.parts
    }

    /// True when there are no parts.
    pub fn is_empty(&self) -> bool {
        self.parts == 0
    }

    /// Part `index`, `None` past the last.
    #[inline]
    pub fn get(&self, index: usize) -> Option<PartRef<'a>> {
        // Where a memo (or a DATA request's one part) has the slots, at once; else walking the
        // descriptors.
        match self.slots.get(index) {
            Some(&slot) if index < self.parts => Some(self.part(slot)),
            _ => self.walk_to(index),
        }
    }

    /// Part `index`, found walking the descriptors.
    fn walk_to(&self, index: usize) -> Option<PartRef<'a>> {
        self.located().nth(index).map(|slot| self.part(slot))
    }

    /// True when the table is the one the [`ParseMemo`] that parsed it accepted last: the
    /// same function and shapes as the payload before (whatever was concluded from those
    /// still holds).
    pub(crate) fn repeated(&self) -> bool {
        self.repeated
    }

    /// The parts in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = PartRef<'a>> + 'a {
        let parsed = *self;
        self.located().map(move |slot| parsed.part(slot))
    }

    /// Where each part is: from the memo that parsed the payload, when it has them; else
    /// walking the descriptors.
    fn located(&self) -> Located<'a> {
        Located { parsed: *self, next: 0, offset: self.values_start() }
    }

    /// The part at `slot`.
    #[inline]
    fn part(&self, slot: Slot) -> PartRef<'a> {
        let bytes = &self.payload[slot.offset..slot.offset + slot.len()];
        PartRef { shape: slot.shape, bytes }
    }

    /// Where the first part's values start: after the table.
    fn values_start(&self) -> usize {
        self.descriptors + self.parts * DESCRIPTOR_LEN
    }

    /// The shape of part `index`, from a descriptor [`parse`] checked.
    fn shape_of(&self, index: usize) -> Shape {
        checked_shape(self.payload, self.descriptors + index * DESCRIPTOR_LEN)
    }

    /// The shapes of the parts in order.
    pub fn shapes(&self) -> impl ExactSizeIterator<Item = Shape> + Clone + 'a {
        let parsed = *self;
        (0..self.parts).map(move |i| match parsed.slots.get(i) {
            Some(slot) => slot.shape,
            None => parsed.shape_of(i),
        })
    }
}

/// Where each part of a [`Parsed`] payload is, in order (see [`Parsed::located`]).
struct Located<'a> {
    parsed: Parsed<'a>,
    /// The next part's index.
    next: usize,
    /// The next part's offset, walking the descriptors: each part's values start after the
    /// one before and its padding.
    offset: usize,
}

impl Iterator for Located<'_> {
    type Item = Slot;

    fn next(&mut self) -> Option<Slot> {
        let index = self.next;
        if index == self.parsed.parts {
            return None;
        }
        self.next += 1;
        if let Some(&slot) = self.parsed.slots.get(index) {
            return Some(slot);
        }
        let slot = Slot { shape: self.parsed.shape_of(index), offset: self.offset };
        self.offset += slot.len() + pad8(slot.len() as u64) as usize;
        Some(slot)
    }

    fn nth(&mut self, n: usize) -> Option<Slot> {
        // From a memo, at once; else the parts before it only for their lengths: a function
        // reading part 2 of 3 does not build parts 0 and 1.
        let index = self.next.saturating_add(n);
        if let Some(&slot) = self.parsed.slots.get(index) {
            self.next = index + 1;
            return Some(slot);
        }
        for _ in 0..n {
            self.next()?;
        }
        self.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.parsed.parts - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Located<'_> {}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// Bytes 0–3 of a descriptor (dtype, flags, reserved) as the low half of its first word: a
/// known dtype with zero flags and reserved bytes leaves no bit outside the dtype's two.
const DTYPE_BITS: u64 = 0b11;
const HEAD_BITS: u64 = 0xFFFF_FFFF;

/// The shape in a descriptor whose fields [`descriptor`] accepted.
fn checked_shape(payload: &[u8], at: usize) -> Shape {
    let head = u64_at(payload, at);
    let dtype = match head & DTYPE_BITS {
        0 => PartDtype::Bytes,
        1 => PartDtype::F32,
        2 => PartDtype::F64,
        _ => PartDtype::I64,
    };
    Shape { dtype, count: u64_at(payload, at + 8), cols: (head >> 32) as u32 }
}

/// The descriptor of part `part` at `at`, or the fault of its own fields (not of where the
/// part ends).
fn descriptor(payload: &[u8], at: usize, part: usize) -> std::result::Result<Shape, TableFault> {
    if u64_at(payload, at) & HEAD_BITS & !DTYPE_BITS == 0 {
        return Ok(checked_shape(payload, at));
    }
    let found = payload[at];
    let dtype = PartDtype::from_byte(found).ok_or(TableFault::UnknownDtype { part, found })?;
    if payload[at + 1] != 0 {
        return Err(TableFault::DescriptorFlags { part, found: payload[at + 1] });
    }
    let reserved = u16_at(payload, at + 2);
    if reserved != 0 {
        return Err(TableFault::DescriptorReserved { part, found: reserved });
    }
    Ok(Shape { dtype, count: u64_at(payload, at + 8), cols: u32_at(payload, at + 4) })
}

/// Checks a PARTS payload's table against T1–T10 of docs/PROTOCOL.md §15, in that order, and
/// returns the view of its parts. Allocates nothing and reads no part's values beyond their
/// padding.
///
/// # Errors
/// [`Error::BadPartTable`] naming the first check that failed.
pub fn parse(payload: &[u8], role: Role) -> Result<Parsed<'_>> {
    parse_table(payload, role).map_err(Error::BadPartTable)
}

fn parse_table(payload: &[u8], role: Role) -> std::result::Result<Parsed<'_>, TableFault> {
    let total = payload.len() as u64;
    if payload.len() < PREAMBLE_LEN {
        return Err(TableFault::ShortPreamble { payload: total });
    }
    let preamble = u64_at(payload, 0);
    let parts = preamble as u32;
    if parts as usize > MAX_PARTS {
        return Err(TableFault::TooManyParts { parts });
    }
    let name_len = (preamble >> 32) as u16;
    if name_len as usize > MAX_NAME_LEN {
        return Err(TableFault::NameTooLong { len: name_len });
    }
    let reserved = (preamble >> 48) as u16;
    if reserved != 0 {
        return Err(TableFault::Reserved { found: reserved });
    }
    // Bounded by T2 and T3: no overflow.
    let name_end = PREAMBLE_LEN + name_len as usize;
    let descriptors = name_end + pad8(name_len.into()) as usize;
    let table = descriptors + parts as usize * DESCRIPTOR_LEN;
    if table > payload.len() {
        return Err(TableFault::TableTooLong { table: table as u64, payload: total });
    }
    let name = &payload[PREAMBLE_LEN..name_end];
    if let Some(at) = name.iter().position(|&b| !name_byte(b)) {
        return Err(TableFault::BadName { at, byte: name[at] });
    }
    if let Some(at) = payload[name_end..descriptors].iter().position(|&b| b != 0) {
        return Err(TableFault::NamePadding { at, byte: payload[name_end + at] });
    }
    let mut offset = table as u64;
    for part in 0..parts as usize {
        let shape = descriptor(payload, descriptors + part * DESCRIPTOR_LEN, part)?;
        if shape.cols > 0 && !shape.count.is_multiple_of(u64::from(shape.cols)) {
            return Err(TableFault::Ragged { part, count: shape.count, cols: shape.cols });
        }
        let bytes = shape.byte_len().ok_or(TableFault::CountOverflow {
            part,
            count: shape.count,
            dtype: shape.dtype,
        })?;
        let padded = offset.checked_add(bytes).and_then(|end| end.checked_add(pad8(bytes)));
        let Some(padded) = padded.filter(|&padded| padded <= total) else {
            return Err(TableFault::PastEnd { part, bytes, offset, payload: total });
        };
        let end = padded - pad8(bytes);
        let padding = &payload[end as usize..padded as usize];
        if let Some(at) = padding.iter().position(|&b| b != 0) {
            return Err(TableFault::PartPadding { part, at, byte: padding[at] });
        }
        offset = padded;
    }
    if offset < total {
        return Err(TableFault::Trailing { bytes: total - offset });
    }
    // Checked by T6: ASCII only.
    let function = std::str::from_utf8(name).expect("checked ASCII");
    if role == Role::Reply && !function.is_empty() {
        return Err(TableFault::NamedReply { name: function.to_owned() });
    }
    Ok(Parsed {
        payload,
        function,
        parts: parts as usize,
        descriptors,
        slots: &[],
        repeated: false,
    })
}

/// The last table [`parse`] accepted, so that a request repeating it — a solver's every call
/// — is recognised by comparing bytes instead of checked again. Only tables whose parts
/// have no padding are kept: then the table's bytes and the payload's length decide
/// everything [`parse`] checks. Its buffer grows to the largest table seen (at most
/// 1,096 bytes) and is reused.
#[derive(Clone, Debug, Default)]
pub(crate) struct ParseMemo {
    /// The table's bytes (preamble, name, descriptors); empty when nothing is kept.
    table: Vec<u8>,
    /// The function the table names, checked when it was kept: a repeat borrows it.
    function: String,
    /// The parts of the payload checked last (kept or not), in order.
    slots: Vec<Slot>,
    payload_len: usize,
    role: Option<Role>,
    parts: usize,
    descriptors: usize,
}

impl ParseMemo {
    /// As [`parse`], comparing with the table accepted last before checking anew. The view
    /// borrows the memo too: a repeated table's function name is the one kept.
    pub(crate) fn parse<'a>(&'a mut self, payload: &'a [u8], role: Role) -> Result<Parsed<'a>> {
        let known = !self.table.is_empty()
            && self.role == Some(role)
            && payload.len() == self.payload_len
            && payload.get(..self.table.len()) == Some(&self.table[..]);
        if known {
            let (function, parts, descriptors) = (&self.function[..], self.parts, self.descriptors);
            let slots = &self.slots[..];
            return Ok(Parsed { payload, function, parts, descriptors, slots, repeated: true });
        }
        self.table.clear();
        let mut parsed = parse(payload, role)?;
        self.slots.clear();
        self.slots.extend(parsed.located());
        if parsed.shapes().all(|shape| shape.byte_len().is_some_and(|b| b % 8 == 0)) {
            self.table.extend_from_slice(&payload[..parsed.values_start()]);
            self.function.clear();
            self.function.push_str(parsed.function);
            self.payload_len = payload.len();
            self.role = Some(role);
            (self.parts, self.descriptors) = (parsed.parts, parsed.descriptors);
        }
        parsed.slots = &self.slots;
        Ok(parsed)
    }
}

/// A part table being written: preamble, name and descriptors, in a buffer reused from call
/// to call (at most 1,096 bytes: no allocation once warm).
#[derive(Clone, Debug, Default)]
pub struct Table {
    bytes: Vec<u8>,
    /// The payload length the parts add after the table, with their padding.
    parts_len: u64,
    /// Whether `bytes` and `parts_len` are a whole table [`Table::write`] checked: a call
    /// that repeats the last one's name and shapes (a solver's every call) then only
    /// compares.
    written: bool,
}

impl Table {
    /// Writes the table of a payload calling `function` (`""`: the default function, and in
    /// every reply) with parts of `shapes`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the name is not a valid function name, there are more
    /// than [`MAX_PARTS`] parts, or a part's length overflows; the table is then unspecified.
    pub fn write(
        &mut self,
        function: &str,
        shapes: impl ExactSizeIterator<Item = Shape> + Clone,
    ) -> Result<()> {
        if self.is(function, shapes.clone()) {
            return Ok(());
        }
        self.written = false;
        self.write_anew(function, shapes)?;
        self.written = true;
        Ok(())
    }

    /// Whether the table written last is the one of `function` with parts of `shapes`.
    fn is(&self, function: &str, shapes: impl ExactSizeIterator<Item = Shape>) -> bool {
        if !self.written {
            return false;
        }
        let name = function.as_bytes();
        let descriptors = PREAMBLE_LEN + name.len().next_multiple_of(8);
        // The name's length is in the preamble and the descriptors' count in the table's
        // length: comparing the name's bytes where they stand and the length checks both.
        let (Some(head), Some(described)) =
            (self.bytes.get(..descriptors), self.bytes.get(descriptors..))
        else {
            return false;
        };
        described.len() == shapes.len() * DESCRIPTOR_LEN
            && u16::from_le_bytes([head[4], head[5]]) as usize == name.len()
            && head[PREAMBLE_LEN..PREAMBLE_LEN + name.len()] == *name
            && described
                .chunks_exact(DESCRIPTOR_LEN)
                .zip(shapes)
                .all(|(d, shape)| describes(d, shape))
    }

    fn write_anew(&mut self, function: &str, shapes: impl Iterator<Item = Shape>) -> Result<()> {
        if !function.is_empty() {
            check_function_name(function)
                .map_err(|reason| Error::InvalidArgument { what: "function name", reason })?;
        }
        self.bytes.clear();
        let mut preamble = [0u8; PREAMBLE_LEN];
        preamble[4..6].copy_from_slice(&(function.len() as u16).to_le_bytes());
        self.bytes.extend_from_slice(&preamble);
        self.bytes.extend_from_slice(function.as_bytes());
        self.bytes.resize(self.bytes.len() + pad8(function.len() as u64) as usize, 0);
        let mut parts = 0usize;
        self.parts_len = 0;
        for shape in shapes {
            parts += 1;
            if parts > MAX_PARTS {
                return Err(Error::InvalidArgument {
                    what: "parts",
                    reason: format!("more than {MAX_PARTS} parts in one call"),
                });
            }
            let too_long = || Error::InvalidArgument {
                what: "part",
                reason: format!("part {} ({shape}) is longer than a u64 can count", parts - 1),
            };
            let bytes = shape.byte_len().ok_or_else(too_long)?;
            self.parts_len = bytes
                .checked_add(pad8(bytes))
                .and_then(|b| b.checked_add(self.parts_len))
                .ok_or_else(too_long)?;
            self.bytes.extend_from_slice(&descriptor_bytes(shape));
        }
        self.bytes[0..4].copy_from_slice(&(parts as u32).to_le_bytes());
        Ok(())
    }

    /// The table's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The whole payload's length: the table and the parts with their padding.
    pub fn payload_len(&self) -> u64 {
        self.bytes.len() as u64 + self.parts_len
    }
}

/// Whether the 16 bytes `descriptor` are those of a part of `shape`, compared as two
/// little-endian words: dtype, flags and reserved bytes (zero), columns; then the count.
fn describes(descriptor: &[u8], shape: Shape) -> bool {
    u64_at(descriptor, 0) == shape.dtype as u64 | u64::from(shape.cols) << 32
        && u64_at(descriptor, 8) == shape.count
}

/// The 16 bytes of the descriptor of a part of `shape`.
pub(crate) fn descriptor_bytes(shape: Shape) -> [u8; DESCRIPTOR_LEN] {
    let mut bytes = [0u8; DESCRIPTOR_LEN];
    bytes[0] = shape.dtype as u8;
    bytes[4..8].copy_from_slice(&shape.cols.to_le_bytes());
    bytes[8..16].copy_from_slice(&shape.count.to_le_bytes());
    bytes
}

/// Whether `table` is the table of a reply (no name) with parts of exactly `shapes`.
pub(crate) fn is_reply_table(
    table: &[u8],
    mut shapes: impl ExactSizeIterator<Item = Shape>,
) -> bool {
    let n = shapes.len();
    table.len() == PREAMBLE_LEN + n * DESCRIPTOR_LEN
        && table[..PREAMBLE_LEN] == [n as u8, (n >> 8) as u8, 0, 0, 0, 0, 0, 0]
        && table[PREAMBLE_LEN..]
            .chunks_exact(DESCRIPTOR_LEN)
            .all(|d| shapes.next().is_some_and(|shape| describes(d, shape)))
}

/// The length of a PARTS payload with parts of `shapes` and no name: preamble, descriptors
/// and the parts with their padding; `None` past [`MAX_PARTS`] parts or when it overflows.
pub fn payload_len(shapes: impl Iterator<Item = Shape>) -> Option<u64> {
    let mut len = PREAMBLE_LEN as u64;
    for (i, shape) in shapes.enumerate() {
        if i >= MAX_PARTS {
            return None;
        }
        let bytes = shape.byte_len()?;
        len =
            len.checked_add(DESCRIPTOR_LEN as u64)?.checked_add(bytes)?.checked_add(pad8(bytes))?;
    }
    Some(len)
}
