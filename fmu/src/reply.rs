//! What both servers' replies are made of, and the checks of what a request names: parts owned
//! until the reply is written, the four parts of a get, value references and C strings.

use std::ffi::CString;

use peerpipe::parts::{Part, PartsOut};

/// A part of a reply, owned until the reply is written.
pub(crate) enum Owned {
    F64(Vec<f64>),
    I64(Vec<i64>),
    Bytes(Vec<u8>),
}

/// Appends `parts` to `reply`, in order.
pub(crate) fn push_owned(reply: &mut PartsOut, parts: &[Owned]) -> Result<(), String> {
    for part in parts {
        reply.push(match part {
            Owned::F64(v) => Part::f64(v),
            Owned::I64(v) => Part::i64(v),
            Owned::Bytes(v) => Part::bytes(v),
        })?;
    }
    Ok(())
}

/// The values of a get as the wire carries them, one part per type ([`crate::wire`]): kept
/// from call to call, so that a warm server allocates nothing.
#[derive(Default)]
pub(crate) struct Gotten {
    pub(crate) reals: Vec<f64>,
    pub(crate) ints: Vec<i64>,
    pub(crate) bools: Vec<i64>,
    pub(crate) strings: Vec<u8>,
}

impl Gotten {
    /// Appends the four parts to `reply`: reals, integers, booleans, strings.
    pub(crate) fn push_into(&self, reply: &mut PartsOut) -> Result<(), String> {
        reply.push(Part::f64(&self.reals))?;
        reply.push(Part::i64(&self.ints))?;
        reply.push(Part::i64(&self.bools))?;
        reply.push(Part::bytes(&self.strings))
    }
}

/// `values` as value references, into `out`; an error names a value that is not one.
pub(crate) fn to_vrs(values: &[i64], out: &mut Vec<u32>) -> Result<(), String> {
    out.clear();
    for &v in values {
        out.push(u32::try_from(v).map_err(|_| format!("{v} is not a value reference"))?);
    }
    Ok(())
}

/// `values` as value references ([`to_vrs`]).
pub(crate) fn vrs(values: &[i64]) -> Result<Vec<u32>, String> {
    let mut out = Vec::with_capacity(values.len());
    to_vrs(values, &mut out)?;
    Ok(out)
}

/// `bytes` as a C string; an error when they hold a NUL byte.
pub(crate) fn cstring(bytes: &[u8]) -> Result<CString, String> {
    CString::new(bytes).map_err(|_| "a string holds a NUL byte".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_references_and_strings_are_checked() {
        assert_eq!(vrs(&[0, 7, 4_294_967_295]), Ok(vec![0, 7, u32::MAX]));
        assert_eq!(vrs(&[1, -1]), Err("-1 is not a value reference".to_owned()));
        assert_eq!(vrs(&[1 << 32]), Err("4294967296 is not a value reference".to_owned()));
        assert_eq!(cstring(b"ab").unwrap().as_bytes(), b"ab");
        assert_eq!(cstring(b"a\0b"), Err("a string holds a NUL byte".to_owned()));
    }
}
