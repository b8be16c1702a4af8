//! A Rust server of ODE right-hand sides and their Jacobians, called as SciPy calls them:
//! `rhs(t, y, *args)` and `jac(t, y, *args)` (docs/PROTOCOL.md §15), spawned by a client.
//!
//! ```sh
//! cargo build --example ode_server
//! # from Python: peerpipe.RemoteRhs(["target/debug/examples/ode_server", "duffing"])
//! ```
//!
//! Models (the parameters are the `args` of `solve_ivp`, sent with every call):
//!
//! - `duffing`: the forced Duffing oscillator x'' + δx' + αx + βx³ = γ cos ωt, with
//!   `args = (δ, α, β, γ, ω)`, default (0.3, -1.0, 1.0, 0.5, 1.2):
//!   `rhs = [y1, -δ·y1 - α·y0 - β·y0·y0·y0 + γ·cos(ω·t)]`, evaluated left to right in f64, as
//!   `-d * y1 - a * y0 - b * y0 * y0 * y0 + g * cos(w * t)` reads in Python and Rust.
//!   `jac = [[0, 1], [-α - 3·β·y0·y0, -δ]]`, as `-a - 3.0 * b * y0 * y0`.
//! - `robertson`: Robertson's stiff kinetics, `args = (k1, k2, k3)`, default (0.04, 3e7, 1e4):
//!   `rhs = [-k1·y0 + k3·y1·y2, k1·y0 - k3·y1·y2 - k2·y1·y1, k2·y1·y1]`, and its Jacobian.
//!
//! A `y` of shape (n, k) (SciPy's `vectorized=True`) arrives as a matrix part of k columns;
//! the reply then has the same shape, column by column.

use peerpipe::ode::{JAC_FUNCTION, RHS_FUNCTION};
use peerpipe::parts::PartsOut;
use peerpipe::server::{Functions, Request, StdioOptions, serve_stdio};

type Model = fn(f64, &[f64], &[f64], &mut [f64]);

const DUFFING: [f64; 5] = [0.3, -1.0, 1.0, 0.5, 1.2];
const ROBERTSON: [f64; 3] = [0.04, 3e7, 1e4];

fn duffing(t: f64, y: &[f64], p: &[f64], out: &mut [f64]) {
    let (d, a, b, g, w) = (p[0], p[1], p[2], p[3], p[4]);
    out[0] = y[1];
    out[1] = -d * y[1] - a * y[0] - b * y[0] * y[0] * y[0] + g * (w * t).cos();
}

fn duffing_jac(_t: f64, y: &[f64], p: &[f64], out: &mut [f64]) {
    let (d, a, b) = (p[0], p[1], p[2]);
    out.copy_from_slice(&[0.0, 1.0, -a - 3.0 * b * y[0] * y[0], -d]);
}

fn robertson(_t: f64, y: &[f64], p: &[f64], out: &mut [f64]) {
    let (k1, k2, k3) = (p[0], p[1], p[2]);
    out[0] = -k1 * y[0] + k3 * y[1] * y[2];
    out[1] = k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] * y[1];
    out[2] = k2 * y[1] * y[1];
}

fn robertson_jac(_t: f64, y: &[f64], p: &[f64], out: &mut [f64]) {
    let (k1, k2, k3) = (p[0], p[1], p[2]);
    out.copy_from_slice(&[
        -k1,
        k3 * y[2],
        k3 * y[1],
        k1,
        -k3 * y[2] - 2.0 * k2 * y[1],
        -k3 * y[1],
        0.0,
        2.0 * k2 * y[1],
        0.0,
    ]);
}

/// Serves `model` as `rhs`, for a state of `n` values: one column at a time when `y` is an
/// n × k matrix.
fn rhs(
    model: Model,
    n: usize,
    defaults: &'static [f64],
) -> impl FnMut(Request<'_>, &mut PartsOut) -> Result<(), String> + Send + 'static {
    let (mut column, mut derivative) = (vec![0.0; n], vec![0.0; n]);
    move |call, reply| {
        let (t, y, p) = peerpipe::ode::ode_parts(&call)?;
        let p = parameters(p, defaults)?;
        let k = columns(&call, y.len(), n)?;
        let out = if call.parts.get(1).and_then(|y| y.shape().rows()).is_some() {
            reply.f64_matrix_to_overwrite(n, k)?
        } else {
            reply.f64_to_overwrite(n)?
        };
        for j in 0..k {
            (0..n).for_each(|i| column[i] = y[i * k + j]);
            model(t, &column, p, &mut derivative);
            (0..n).for_each(|i| out[i * k + j] = derivative[i]);
        }
        Ok(())
    }
}

/// Serves `jacobian` as `jac`: an n × n matrix, row-major.
fn jac(
    jacobian: Model,
    n: usize,
    defaults: &'static [f64],
) -> impl FnMut(Request<'_>, &mut PartsOut) -> Result<(), String> + Send + 'static {
    move |call, reply| {
        let (t, y, p) = peerpipe::ode::ode_parts(&call)?;
        let p = parameters(p, defaults)?;
        if y.len() != n {
            return Err(format!("jac: expected a state of {n} values, found {}", y.len()));
        }
        jacobian(t, y, p, reply.f64_matrix(n, n)?);
        Ok(())
    }
}

fn parameters<'a>(given: &'a [f64], defaults: &'a [f64]) -> Result<&'a [f64], String> {
    match given.len() {
        0 => Ok(defaults),
        n if n == defaults.len() => Ok(given),
        n => Err(format!("expected {} parameters (or none), found {n}", defaults.len())),
    }
}

/// The columns of `y` (1 for a vector), checking that it holds `n` rows.
fn columns(call: &Request<'_>, len: usize, n: usize) -> Result<usize, String> {
    let shape = call.parts.get(1).map(|y| y.shape()).ok_or("no y")?;
    let k = if shape.rows().is_some() { shape.cols as usize } else { 1 };
    if len != n * k {
        return Err(format!("expected a state of {n} values (or {n} rows), found {shape}"));
    }
    Ok(k)
}

fn main() {
    let model = std::env::args().nth(1).unwrap_or_default();
    let functions = match model.as_str() {
        "duffing" => Functions::new("duffing")
            .with(RHS_FUNCTION, rhs(duffing, 2, &DUFFING))
            .and_then(|f| f.with(JAC_FUNCTION, jac(duffing_jac, 2, &DUFFING))),
        "robertson" => Functions::new("robertson")
            .with(RHS_FUNCTION, rhs(robertson, 3, &ROBERTSON))
            .and_then(|f| f.with(JAC_FUNCTION, jac(robertson_jac, 3, &ROBERTSON))),
        other => {
            eprintln!("ode_server: expected a model, duffing or robertson, found {other:?}");
            std::process::exit(2);
        }
    };
    let mut functions = functions.unwrap_or_else(|e| {
        eprintln!("ode_server: {e}");
        std::process::exit(2)
    });
    if let Err(e) = serve_stdio(&mut functions, &StdioOptions::default()) {
        eprintln!("ode_server: {e}");
        std::process::exit(1);
    }
}
