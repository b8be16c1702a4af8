//! The handlers `peer --role server` offers: [`Echo`], [`EchoRaw`], [`Lorenz96`] and
//! [`Lorenz96F32`].

use std::time::Duration;

use crate::codec::{self, Values, ValuesMut};
use crate::frame::Dtype;
use crate::lorenz96;
use crate::parts::PartsOut;
use crate::server::{Array, Handler, Request, Response};
use crate::zerocopy::resize_exact;

/// Names accepted by [`by_name`].
pub const NAMES: [&str; 4] = ["echo", "echo-raw", "lorenz96", "lorenz96-f32"];

/// The handler called `name`, or `None`.
pub fn by_name(name: &str) -> Option<Box<dyn Handler + Send>> {
    match name {
        "echo" => Some(Box::new(Echo::default())),
        "echo-raw" => Some(Box::new(EchoRaw)),
        "lorenz96" => Some(Box::new(Lorenz96::default())),
        "lorenz96-f32" => Some(Box::new(Lorenz96F32::default())),
        _ => None,
    }
}

/// Decodes the payload into native numbers with the codec and encodes them again, so the
/// server pays for conversion on both sides. Replies with the same dtype and count; bytes are
/// returned as they came.
#[derive(Debug, Default)]
pub struct Echo {
    f64s: Vec<f64>,
    f32s: Vec<f32>,
    encoded: Vec<u8>,
}

impl Handler for Echo {
    fn name(&self) -> &str {
        "echo"
    }

    /// One array is decoded and encoded again; any other request (several parts, i64) is
    /// answered with the same parts.
    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        out: &mut PartsOut,
    ) -> Result<Response<'a>, String> {
        let Ok(array) = request.array() else {
            return echo_parts(request, out);
        };
        let count = array.count as usize;
        resize_exact(&mut self.encoded, array.payload.len(), 0);
        let converted = match array.dtype {
            Dtype::Bytes => return Ok(Response::Bytes(array.payload)),
            Dtype::F64 => {
                resize_exact(&mut self.f64s, count, 0.0);
                codec::decode_into(array.payload, ValuesMut::F64(&mut self.f64s))
                    .and_then(|()| codec::encode_into(Values::F64(&self.f64s), &mut self.encoded))
            }
            Dtype::F32 => {
                resize_exact(&mut self.f32s, count, 0.0);
                codec::decode_into(array.payload, ValuesMut::F32(&mut self.f32s))
                    .and_then(|()| codec::encode_into(Values::F32(&self.f32s), &mut self.encoded))
            }
        };
        converted.map_err(|e| e.to_string())?;
        Ok(Response::Wire { dtype: array.dtype, count: array.count, payload: &self.encoded })
    }
}

/// A request's parts as the reply, bit for bit.
fn echo_parts<'a>(request: Request<'_>, out: &mut PartsOut) -> Result<Response<'a>, String> {
    request.parts.iter().try_for_each(|part| out.push_received(&part))?;
    Ok(Response::Parts)
}

/// Replies with the request's payload bytes untouched: the server converts nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct EchoRaw;

impl Handler for EchoRaw {
    fn name(&self) -> &str {
        "echo-raw"
    }

    /// One array is answered with its bytes as they came, any other request with the same
    /// parts.
    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        out: &mut PartsOut,
    ) -> Result<Response<'a>, String> {
        match request.array() {
            Ok(Array { dtype, count, payload }) => Ok(Response::Wire { dtype, count, payload }),
            Err(_) => echo_parts(request, out),
        }
    }
}

/// Replies with the Lorenz-96 derivative ([`lorenz96::rhs`], forcing 8.0 unless
/// [`Lorenz96::with_forcing`] says otherwise) of an f64 state of at least 4 elements; anything
/// else gets ERROR.
#[derive(Debug)]
pub struct Lorenz96 {
    state: Vec<f64>,
    derivative: Vec<f64>,
    forcing: f64,
}

impl Default for Lorenz96 {
    fn default() -> Lorenz96 {
        Lorenz96::with_forcing(lorenz96::FORCING)
    }
}

impl Lorenz96 {
    /// The handler with its own forcing constant (`peer --role server --handler lorenz96
    /// --forcing F`): one member of an ensemble.
    pub fn with_forcing(forcing: f64) -> Lorenz96 {
        Lorenz96 { state: Vec::new(), derivative: Vec::new(), forcing }
    }
}

impl Handler for Lorenz96 {
    fn name(&self) -> &str {
        "lorenz96"
    }

    fn functions(&self) -> Vec<String> {
        vec![crate::ode::RHS_FUNCTION.to_owned()]
    }

    /// Its default function takes one f64 array, the state. `rhs(t, y)` or `rhs(t, y,
    /// forcing)` is called as [`crate::rhs::RemoteRhs::eval_at`] calls it: the model is
    /// autonomous, so `t` is read (it must be one f64) and does not change the answer; the
    /// forcing, when given (one f64), replaces 8.0.
    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        out: &mut PartsOut,
    ) -> Result<Response<'a>, String> {
        if request.function.is_empty() {
            let array = request.array().map_err(|e| format!("lorenz96: {e}"))?;
            array.expect_dtype(Dtype::F64).map_err(|e| format!("lorenz96: {e}"))?;
            let state: &[f64] = match array.f64_view() {
                Some(view) => view,
                None => {
                    array.decode_f64_into(&mut self.state)?;
                    &self.state
                }
            };
            resize_exact(&mut self.derivative, state.len(), 0.0);
            lorenz96::rhs(state, self.forcing, &mut self.derivative)
                .map_err(|e| format!("lorenz96: {e}"))?;
            return Ok(Response::F64(&self.derivative));
        }
        let (_t, state, params) = crate::ode::ode_parts(&request)?;
        let forcing = match params {
            [] => lorenz96::FORCING,
            [forcing] => *forcing,
            more => {
                return Err(format!(
                    "lorenz96 rhs: expected no parameter or one (the forcing), found {}",
                    more.len()
                ));
            }
        };
        let derivative = out.f64_to_overwrite(state.len())?;
        lorenz96::rhs(state, forcing, derivative).map_err(|e| format!("lorenz96 rhs: {e}"))?;
        Ok(Response::Parts)
    }
}

/// The narrowed exchange of [`Lorenz96`]: an f32 state of at least 4 elements is widened to f64
/// (`x as f64`), its derivative computed with [`lorenz96::rhs`] in f64, and narrowed back
/// (`d as f32`) for the reply. Anything else gets ERROR.
#[derive(Debug, Default)]
pub struct Lorenz96F32 {
    state: Vec<f64>,
    derivative: Vec<f64>,
    encoded: Vec<u8>,
}

impl Handler for Lorenz96F32 {
    fn name(&self) -> &str {
        "lorenz96-f32"
    }

    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        _: &mut PartsOut,
    ) -> Result<Response<'a>, String> {
        let array = request.array().map_err(|e| format!("lorenz96-f32: {e}"))?;
        array.expect_dtype(Dtype::F32).map_err(|e| format!("lorenz96-f32: {e}"))?;
        let n = array.count as usize;
        resize_exact(&mut self.state, n, 0.0);
        resize_exact(&mut self.derivative, n, 0.0);
        resize_exact(&mut self.encoded, array.payload.len(), 0);
        codec::decode_into(array.payload, ValuesMut::F64FromF32(&mut self.state))
            .map_err(|e| e.to_string())?;
        lorenz96::rhs(&self.state, lorenz96::FORCING, &mut self.derivative)
            .map_err(|e| format!("lorenz96-f32: {e}"))?;
        codec::encode_into(Values::F64AsF32(&self.derivative), &mut self.encoded)
            .map_err(|e| e.to_string())?;
        Ok(Response::Wire { dtype: Dtype::F32, count: array.count, payload: &self.encoded })
    }
}

/// Another handler, each reply delayed by a sleep of `sleep`: a server whose work runs
/// elsewhere (another core, an accelerator, a solver it waits for) and holds no CPU of this
/// machine meanwhile — where `peer --server-delay` busy-waits on one. `peer --role server
/// --server-sleep DUR`. The sleep comes before the inner handler; the reply's server time
/// includes it.
#[derive(Debug)]
pub struct Sleeping<H> {
    inner: H,
    sleep: Duration,
}

impl<H> Sleeping<H> {
    /// `inner`, sleeping `sleep` before each request.
    pub fn new(inner: H, sleep: Duration) -> Sleeping<H> {
        Sleeping { inner, sleep }
    }
}

impl<H: Handler> Handler for Sleeping<H> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn functions(&self) -> Vec<String> {
        self.inner.functions()
    }

    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        out: &mut PartsOut,
    ) -> Result<Response<'a>, String> {
        // A 1 µs timer slack, not Linux's default 50 µs: the sleep stands for work of about
        // this length, not a length plus up to 50 µs.
        crate::sys::tighten_timer_slack();
        std::thread::sleep(self.sleep);
        self.inner.handle(request, out)
    }
}
