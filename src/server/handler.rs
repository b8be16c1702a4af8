//! What a server's code sees and answers: a DATA [`Request`] and its [`Response`], a PARTS
//! [`Call`], and the [`Handler`] that answers both.

use crate::codec;
use crate::frame::Dtype;
use crate::parts::{Parsed, PartsOut, describe_shapes};
use crate::zerocopy;

/// A DATA request as the handler sees it. The payload is 8-byte aligned.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The request's seq (the reply carries it back).
    pub seq: u64,
    /// Element type on the wire.
    pub dtype: Dtype,
    /// Number of elements.
    pub count: u64,
    /// The payload bytes, little-endian, without padding.
    pub payload: &'a [u8],
}

impl<'a> Request<'a> {
    /// Fails with a message naming both dtypes unless the request has `dtype`.
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

    /// The f64 payload viewed in place, when the dtype is f64 and the target little-endian.
    pub fn f64_view(&self) -> Option<&'a [f64]> {
        (self.dtype == Dtype::F64).then(|| zerocopy::view_f64(self.payload)).flatten()
    }

    /// Decodes an f64 payload with the codec into `out` (resized to the count; no allocation
    /// once `out` has the capacity).
    ///
    /// # Errors
    /// The message for the ERROR reply when the dtype is not f64.
    pub fn decode_f64_into(&self, out: &mut Vec<f64>) -> std::result::Result<(), String> {
        self.expect_dtype(Dtype::F64)?;
        zerocopy::resize_exact(out, self.count as usize, 0.0);
        codec::decode_into(self.payload, codec::ValuesMut::F64(out)).map_err(|e| e.to_string())
    }
}

/// What a handler answers.
#[derive(Clone, Copy, Debug)]
pub enum Response<'a> {
    /// f64 values, sent zero-copy on little-endian targets.
    F64(&'a [f64]),
    /// f32 values, sent zero-copy on little-endian targets.
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
}

/// A PARTS request as a function sees it (docs/PROTOCOL.md §15): the function it names and
/// its parts, checked and 8-byte aligned (so [`PartRef::f64_view`](crate::parts::PartRef::f64_view) views them in place).
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// The request's seq (the reply carries it back).
    pub seq: u64,
    /// The function named; `""` for the server's default function.
    pub function: &'a str,
    /// The request's parts.
    pub parts: Parsed<'a>,
}

impl<'a> Call<'a> {
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

/// Answers requests. The response may borrow from the handler or from the request.
pub trait Handler {
    /// Name announced in the server's HELLO (`handler=NAME`).
    fn name(&self) -> &str;

    /// Answers one DATA request.
    ///
    /// # Errors
    /// A message; the client receives it in an ERROR reply and the conversation goes on.
    fn handle<'a>(&'a mut self, request: Request<'a>) -> std::result::Result<Response<'a>, String>;

    /// The functions this handler serves by name through PARTS requests, announced in the
    /// server's HELLO (`functions=`). A request naming another function gets an ERROR listing
    /// these, without reaching [`Handler::call`]. Default: none.
    fn functions(&self) -> Vec<String> {
        Vec::new()
    }

    /// Answers one PARTS request — to one of [`Handler::functions`], or to the default
    /// function when `call.function` is empty — by writing the reply's parts into `reply`
    /// (empty when called).
    ///
    /// # Errors
    /// A message; the client receives it in an ERROR reply and the conversation goes on.
    /// The default refuses every call, naming the handler.
    fn call(&mut self, call: Call<'_>, reply: &mut PartsOut) -> std::result::Result<(), String> {
        let _ = (call, reply);
        Err(format!("the {} handler takes DATA requests only, not PARTS", self.name()))
    }
}

impl<H: Handler + ?Sized> Handler for Box<H> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn handle<'a>(&'a mut self, request: Request<'a>) -> std::result::Result<Response<'a>, String> {
        (**self).handle(request)
    }
    fn functions(&self) -> Vec<String> {
        (**self).functions()
    }
    fn call(&mut self, call: Call<'_>, reply: &mut PartsOut) -> std::result::Result<(), String> {
        (**self).call(call, reply)
    }
}
