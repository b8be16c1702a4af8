//! The handlers `peer --role server` offers: [`Echo`], [`EchoRaw`], [`Lorenz96`] and
//! [`Lorenz96F32`].

use std::time::Duration;

use crate::codec::{self, Values, ValuesMut};
use crate::frame::Dtype;
use crate::lorenz96;
use crate::parts::PartsOut;
use crate::server::{Call, Handler, Request, Response};
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

    fn handle<'a>(&'a mut self, request: Request<'a>) -> Result<Response<'a>, String> {
        let count = request.count as usize;
        resize_exact(&mut self.encoded, request.payload.len(), 0);
        let converted = match request.dtype {
            Dtype::Bytes => return Ok(Response::Bytes(request.payload)),
            Dtype::F64 => {
                resize_exact(&mut self.f64s, count, 0.0);
                codec::decode_into(request.payload, ValuesMut::F64(&mut self.f64s))
                    .and_then(|()| codec::encode_into(Values::F64(&self.f64s), &mut self.encoded))
            }
            Dtype::F32 => {
                resize_exact(&mut self.f32s, count, 0.0);
                codec::decode_into(request.payload, ValuesMut::F32(&mut self.f32s))
                    .and_then(|()| codec::encode_into(Values::F32(&self.f32s), &mut self.encoded))
            }
        };
        converted.map_err(|e| e.to_string())?;
        Ok(Response::Wire { dtype: request.dtype, count: request.count, payload: &self.encoded })
    }

    /// Its default function answers a PARTS request with the same parts.
    fn call(&mut self, call: Call<'_>, reply: &mut PartsOut) -> Result<(), String> {
        echo_parts(call, reply)
    }
}

/// A PARTS request's parts as the reply, bit for bit.
fn echo_parts(call: Call<'_>, reply: &mut PartsOut) -> Result<(), String> {
    call.parts.iter().try_for_each(|part| reply.push_received(&part))
}

/// Replies with the request's payload bytes untouched: the server converts nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct EchoRaw;

impl Handler for EchoRaw {
    fn name(&self) -> &str {
        "echo-raw"
    }

    fn handle<'a>(&'a mut self, request: Request<'a>) -> Result<Response<'a>, String> {
        Ok(Response::Wire { dtype: request.dtype, count: request.count, payload: request.payload })
    }

    /// Its default function answers a PARTS request with the same parts.
    fn call(&mut self, call: Call<'_>, reply: &mut PartsOut) -> Result<(), String> {
        echo_parts(call, reply)
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

    fn handle<'a>(&'a mut self, request: Request<'a>) -> Result<Response<'a>, String> {
        request.expect_dtype(Dtype::F64).map_err(|e| format!("lorenz96: {e}"))?;
        let state: &[f64] = match request.f64_view() {
            Some(view) => view,
            None => {
                request.decode_f64_into(&mut self.state)?;
                &self.state
            }
        };
        resize_exact(&mut self.derivative, state.len(), 0.0);
        lorenz96::rhs(state, self.forcing, &mut self.derivative)
            .map_err(|e| format!("lorenz96: {e}"))?;
        Ok(Response::F64(&self.derivative))
    }

    fn functions(&self) -> Vec<String> {
        vec![crate::ode::RHS_FUNCTION.to_owned()]
    }

    /// Its default function takes one f64 part, the state, as a DATA request does. `rhs(t,
    /// y)` or `rhs(t, y, forcing)` is called as [`crate::rhs::RemoteRhs::eval_at`] calls it:
    /// the model is autonomous, so `t` is read (it must be one f64) and does not change the
    /// answer; the forcing, when given (one f64), replaces 8.0.
    fn call(&mut self, call: Call<'_>, reply: &mut PartsOut) -> Result<(), String> {
        if call.function.is_empty() {
            call.expect_parts(1)?;
            let state = call.f64(0)?;
            let derivative = reply.f64_to_overwrite(state.len())?;
            return lorenz96::rhs(state, lorenz96::FORCING, derivative)
                .map_err(|e| format!("lorenz96: {e}"));
        }
        let (_t, state, params) = crate::ode::ode_parts(&call)?;
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
        let derivative = reply.f64_to_overwrite(state.len())?;
        lorenz96::rhs(state, forcing, derivative).map_err(|e| format!("lorenz96 rhs: {e}"))
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

    fn handle<'a>(&'a mut self, request: Request<'a>) -> Result<Response<'a>, String> {
        request.expect_dtype(Dtype::F32).map_err(|e| format!("lorenz96-f32: {e}"))?;
        let n = request.count as usize;
        resize_exact(&mut self.state, n, 0.0);
        resize_exact(&mut self.derivative, n, 0.0);
        resize_exact(&mut self.encoded, request.payload.len(), 0);
        codec::decode_into(request.payload, ValuesMut::F64FromF32(&mut self.state))
            .map_err(|e| e.to_string())?;
        lorenz96::rhs(&self.state, lorenz96::FORCING, &mut self.derivative)
            .map_err(|e| format!("lorenz96-f32: {e}"))?;
        codec::encode_into(Values::F64AsF32(&self.derivative), &mut self.encoded)
            .map_err(|e| e.to_string())?;
        Ok(Response::Wire { dtype: Dtype::F32, count: request.count, payload: &self.encoded })
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

    fn handle<'a>(&'a mut self, request: Request<'a>) -> Result<Response<'a>, String> {
        // A 1 µs timer slack, not Linux's default 50 µs: the sleep stands for work of about
        // this length, not a length plus up to 50 µs.
        crate::sys::tighten_timer_slack();
        std::thread::sleep(self.sleep);
        self.inner.handle(request)
    }
}
