//! The layout of a PARTS payload (docs/PROTOCOL.md §15): its limits, the lengths of its
//! preamble and descriptors, the padding to 8 bytes and the rule of a function's name.

/// Most parts in one PARTS frame: 64.
pub const MAX_PARTS: usize = 64;
/// Longest function name, in bytes: 64.
pub const MAX_NAME_LEN: usize = 64;
/// Bytes before the name: part count (u32), name length (u16), reserved (u16).
pub const PREAMBLE_LEN: usize = 8;
/// Bytes of one part descriptor.
pub const DESCRIPTOR_LEN: usize = 16;
/// Most functions one server announces (the HELLO's `functions=` line stays far below its
/// 64 KiB cap: 256 × 65 bytes).
pub const MAX_FUNCTIONS: usize = 256;

/// Whether `name` may name a function: 1 to [`MAX_NAME_LEN`] bytes of ASCII letters, digits
/// and `_ . : -`.
///
/// # Errors
/// The reason, for an [`crate::Error::InvalidArgument`].
pub fn check_function_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a function name has at least 1 character".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!("{name:?} has {} bytes, at most {MAX_NAME_LEN}", name.len()));
    }
    match name.bytes().position(|b| !name_byte(b)) {
        None => Ok(()),
        Some(at) => Err(format!(
            "{name:?} has {:?} at byte {at}: a function name has only ASCII letters, digits and \
             '_', '.', ':', '-'",
            name[at..].chars().next().unwrap_or('?')
        )),
    }
}

/// A byte allowed in a function name.
pub(crate) const fn name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-')
}

/// Zero bytes after `len` bytes up to the next multiple of 8: the padding after a name or a
/// part.
pub const fn pad8(len: u64) -> u64 {
    (8 - len % 8) % 8
}
