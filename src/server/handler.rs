//! What a server's code sees and answers: a [`Request`] — a function's name and its parts, of
//! which a DATA request's one [`Array`] is the one-part, unnamed form — its [`Response`], and
//! the [`Handler`] that answers it.

use crate::codec;
use crate::frame::Dtype;
use crate::parts::{Parsed, PartDtype, PartsOut, describe_shapes};
use crate::zerocopy;

/// A request as a server's code sees it, whatever its wire form: the function it names (`""`
/// for the server's default function) and its parts, checked and 8-byte aligned (so
/// [`PartRef::f64_view`](crate::parts::PartRef::f64_view) views them in place). A DATA request (docs/PROTOCOL.md §4) is the
/// one-part, unnamed form: one vector of f64, f32 or bytes to the default function; a PARTS
/// request (§15) may be any.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The request's seq (the reply carries it back).
    pub seq: u64,
    /// The function named; `""` for the server's default function.
    pub function: &'a str,
    /// The request's parts.
    pub parts: Parsed<'a>,
}

impl<'a> Request<'a> {
    /// The one array of a request of one vector part of f64, f32 or bytes to the default
    /// function (a DATA request's form, and the same sent as PARTS), or a message for the
    /// ERROR reply naming what was found instead.
    ///
    /// # Errors
    /// The message, when the request names a function or has other parts.
    #[inline]
    pub fn array(&self) -> std::result::Result<Array<'a>, String> {
        let one = self.function.is_empty() && self.parts.len() == 1;
        let array = one.then(|| self.parts.get(0)).flatten().and_then(|part| {
            let shape = part.shape();
            let dtype = array_dtype(shape.dtype).filter(|_| shape.cols == 0)?;
            Some(Array { dtype, count: shape.count, payload: part.bytes() })
        });
        array.ok_or_else(|| self.not_one_array())
    }

    #[cold]
    fn not_one_array(&self) -> String {
        let found = describe_shapes(self.parts.shapes());
        format!("{}: expected one array of f64, f32 or bytes, found {found}", self.label())
    }

    /// Part `index` as f64 values in place, or a message for the ERROR reply naming the
    /// function and what was found instead.
    ///
    /// # Errors
    /// The message, when there is no part `index` or it is not an aligned f64 part.
    pub fn f64(&self, index: usize) -> std::result::Result<&'a [f64], String> {
        let part = self.parts.get(index).ok_or_else(|| {
            format!("{}: expected a part {index}, found {} parts", self.label(), self.parts.len())
        })?;
        part.f64_view().ok_or_else(|| {
            format!("{}: expected part {index} of f64 values, found {}", self.label(), part.shape())
        })
    }

    /// Checks that the request has exactly `expected` parts.
    ///
    /// # Errors
    /// A message for the ERROR reply naming both counts.
    pub fn expect_parts(&self, expected: usize) -> std::result::Result<(), String> {
        if self.parts.len() == expected {
            return Ok(());
        }
        let found = describe_shapes(self.parts.shapes());
        Err(format!("{}: expected {expected} parts, found {found}", self.label()))
    }

    fn label(&self) -> String {
        if self.function.is_empty() { "the default function".into() } else { self.function.into() }
    }
}

/// The one array of a request ([`Request::array`]): little-endian elements of one dtype,
/// 8-byte aligned.
#[derive(Clone, Copy, Debug)]
pub struct Array<'a> {
    /// Element type on the wire.
    pub dtype: Dtype,
    /// Number of elements.
    pub count: u64,
    /// The bytes, little-endian, without padding.
    pub payload: &'a [u8],
}

impl<'a> Array<'a> {
    /// Fails with a message naming both dtypes unless the array has `dtype`.
    ///
    /// # Errors
    /// The message for the ERROR reply.
    pub fn expect_dtype(&self, dtype: Dtype) -> std::result::Result<(), String> {
        if self.dtype == dtype {
            Ok(())
        } else {
            Err(format!("wrong dtype: expected {dtype}, found {}", self.dtype))
        }
    }

    /// The f64 values viewed in place, when the dtype is f64 and the target little-endian.
    pub fn f64_view(&self) -> Option<&'a [f64]> {
        (self.dtype == Dtype::F64).then(|| zerocopy::view_f64(self.payload)).flatten()
    }

    /// Decodes f64 values with the codec into `out` (resized to the count; no allocation once
    /// `out` has the capacity).
    ///
    /// # Errors
    /// The message for the ERROR reply when the dtype is not f64.
    pub fn decode_f64_into(&self, out: &mut Vec<f64>) -> std::result::Result<(), String> {
        self.expect_dtype(Dtype::F64)?;
        zerocopy::resize_exact(out, self.count as usize, 0.0);
        codec::decode_into(self.payload, codec::ValuesMut::F64(out)).map_err(|e| e.to_string())
    }
}

/// What a handler answers: one array of its own (or the request's) memory, sent zero-copy on
/// little-endian targets, or the parts it wrote into the [`PartsOut`] it was given. The reply
/// takes the request's wire form: to a DATA request, an array (or one vector part of f64, f32
/// or bytes) goes back as DATA; to a PARTS request, either goes back as PARTS.
#[derive(Clone, Copy, Debug)]
pub enum Response<'a> {
    /// f64 values.
    F64(&'a [f64]),
    /// f32 values.
    F32(&'a [f32]),
    /// Raw bytes (dtype 0).
    Bytes(&'a [u8]),
    /// A payload already in wire format: `count` little-endian elements of `dtype`.
    Wire {
        /// Element type.
        dtype: Dtype,
        /// Number of elements; `payload.len()` must be `count × width(dtype)`.
        count: u64,
        /// The bytes.
        payload: &'a [u8],
    },
    /// The parts written into the handler's [`PartsOut`].
    Parts,
}

/// Answers requests. The response may borrow from the handler or from the request.
pub trait Handler {
    /// Name announced in the server's HELLO (`handler=NAME`).
    fn name(&self) -> &str;

    /// The functions this handler serves by name, announced in the server's HELLO
    /// (`functions=`). A request naming another function gets an ERROR listing these,
    /// without reaching [`Handler::handle`]; the default function (`""`) always reaches it.
    /// Default: none.
    fn functions(&self) -> Vec<String> {
        Vec::new()
    }

    /// Answers one request — to one of [`Handler::functions`], or to the default function
    /// when `request.function` is empty — with an array, or with [`Response::Parts`] after
    /// writing the reply's parts into `out` (empty when called).
    ///
    /// # Errors
    /// A message; the client receives it in an ERROR reply and the conversation goes on.
    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        out: &mut PartsOut,
    ) -> std::result::Result<Response<'a>, String>;
}

impl<H: Handler + ?Sized> Handler for Box<H> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn functions(&self) -> Vec<String> {
        (**self).functions()
    }
    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        out: &mut PartsOut,
    ) -> std::result::Result<Response<'a>, String> {
        (**self).handle(request, out)
    }
}

/// The wire dtype of an array part, `None` for i64 (which only PARTS carries).
#[inline]
pub(crate) fn array_dtype(dtype: PartDtype) -> Option<Dtype> {
    match dtype {
        PartDtype::Bytes => Some(Dtype::Bytes),
        PartDtype::F32 => Some(Dtype::F32),
        PartDtype::F64 => Some(Dtype::F64),
        PartDtype::I64 => None,
    }
}

/// The part dtype of a wire dtype.
pub(crate) fn part_dtype(dtype: Dtype) -> PartDtype {
    match dtype {
        Dtype::Bytes => PartDtype::Bytes,
        Dtype::F32 => PartDtype::F32,
        Dtype::F64 => PartDtype::F64,
    }
}
