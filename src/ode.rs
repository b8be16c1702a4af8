//! The server side of an ODE call: the functions a right-hand side and its Jacobian are
//! served as ([`RHS_FUNCTION`], [`JAC_FUNCTION`]) and the decoding of their parts
//! ([`ode_parts`]). Below both the built-in `lorenz96` handler ([`crate::handlers`]) and the
//! client that calls them ([`crate::rhs`], which hands these names on), so that a server
//! needs nothing of the client.

use crate::server::Request;

/// The function a right-hand side `fun(t, y, *args)` is served as: `rhs`.
pub const RHS_FUNCTION: &str = "rhs";
/// The function its Jacobian `jac(t, y, *args)` is served as: `jac`.
pub const JAC_FUNCTION: &str = "jac";

/// The parts of an ODE call, as [`crate::rhs::RemoteRhs::eval_at`] sends them: `t` (one f64), `y`
/// (f64 values, a vector or, for a vectorized call, an n × k matrix) and, when there are any, the
/// parameters (f64 values) — returned as `(t, y, params)`, `params` empty without them.
///
/// # Errors
/// A message for the ERROR reply naming what was found instead.
pub fn ode_parts<'a>(
    call: &Request<'a>,
) -> std::result::Result<(f64, &'a [f64], &'a [f64]), String> {
    let n = call.parts.len();
    if !(2..=3).contains(&n) {
        return Err(format!(
            "{}: expected the parts (t, y) or (t, y, args), found {n} parts",
            call.function
        ));
    }
    // One walk over the parts when they are what a solver sends; the checks below name
    // what was found otherwise.
    let mut views = call.parts.iter().map(|part| part.f64_view());
    if let (Some(Some(&[t])), Some(Some(y))) = (views.next(), views.next()) {
        match views.next() {
            None => return Ok((t, y, &[])),
            Some(Some(params)) => return Ok((t, y, params)),
            Some(None) => {}
        }
    }
    let t = call.f64(0)?;
    if t.len() != 1 {
        return Err(format!("{}: expected t as 1 f64, found {} values", call.function, t.len()));
    }
    let params = if n == 3 { call.f64(2)? } else { &[] };
    Ok((t[0], call.f64(1)?, params))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parts::{Part, Role, Table};

    /// `ode_parts` of a request calling `rhs` with `parts`.
    fn ode(parts: &[Part<'_>]) -> std::result::Result<(f64, Vec<f64>, Vec<f64>), String> {
        let mut table = Table::default();
        table.write(RHS_FUNCTION, parts.iter().map(Part::shape)).unwrap();
        let mut payload = table.as_bytes().to_vec();
        for part in parts {
            let mut bytes = Vec::new();
            part.encode_into(&mut bytes);
            payload.extend_from_slice(&bytes);
            payload.resize(payload.len().next_multiple_of(8), 0);
        }
        let parts = crate::parts::parse(&payload, Role::Request).unwrap();
        let call = Request { seq: 1, function: RHS_FUNCTION, parts };
        ode_parts(&call).map(|(t, y, p)| (t, y.to_vec(), p.to_vec()))
    }

    #[test]
    fn ode_parts_reads_t_y_and_args_and_names_what_else_it_found() {
        let (t, y, p) = ([0.5], [1.0, 2.0], [3.0]);
        assert_eq!(ode(&[Part::f64(&t), Part::f64(&y)]), Ok((0.5, y.to_vec(), vec![])));
        let all = [Part::f64(&t), Part::f64(&y), Part::f64(&p)];
        assert_eq!(ode(&all), Ok((0.5, y.to_vec(), p.to_vec())));
        let (two, ints, narrow) = ([0.5, 1.0], [1i64], [1.0f32, 2.0]);
        let refused = [
            (vec![Part::f64(&t)], "expected the parts (t, y) or (t, y, args), found 1 parts"),
            (vec![Part::f64(&two), Part::f64(&y)], "expected t as 1 f64, found 2 values"),
            (vec![Part::i64(&ints), Part::f64(&y)], "expected part 0 of f64 values, found i64[1]"),
            (
                vec![Part::f64(&t), Part::f32(&narrow)],
                "expected part 1 of f64 values, found f32[2]",
            ),
            (vec![Part::f64(&t), Part::f64(&y), Part::i64(&ints)], "expected part 2 of f64"),
        ];
        for (parts, message) in refused {
            let error = ode(&parts).unwrap_err();
            assert!(error.contains(message), "{error:?} should say {message:?}");
        }
        let four = [Part::f64(&t), Part::f64(&y), Part::f64(&p), Part::f64(&p)];
        assert!(ode(&four).unwrap_err().contains("found 4 parts"));
    }
}
