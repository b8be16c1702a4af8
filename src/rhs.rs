//! A remote right-hand side: an integrator's derivative evaluated by another process.
//!
//! The motivating user integrates an ODE whose derivative is computed elsewhere — another
//! language, another runtime, another machine — once per integrator stage, thousands of times a
//! second. [`RemoteRhs::eval`] is that one call: it sends the state, receives the derivative into
//! the caller's buffer, allocates nothing once warm, and keeps per-call and cumulative timing so
//! the cost of going remote is visible.
//!
//! ```
//! use std::thread;
//! use peerpipe::handlers::Lorenz96;
//! use peerpipe::rhs::RemoteRhs;
//! use peerpipe::server::{serve, ServeOptions};
//! use peerpipe::transport::Transport;
//! use peerpipe::{Options, Peer, Wait};
//!
//! // The derivative server; across processes use RemoteRhs::spawn_server(peer_exe, "lorenz96", ..).
//! let (client_end, mut server_end) = Transport::pipe_pair(Wait::default())?;
//! let server = thread::spawn(move || serve(&mut server_end, &mut Lorenz96::default(), &ServeOptions::default()));
//! let mut rhs = RemoteRhs::new(Peer::connect(client_end, Options::default())?);
//!
//! let mut x = vec![8.0; 40];
//! x[0] += 0.01;
//! let mut dxdt = vec![0.0; 40];
//! for _ in 0..100 {
//!     rhs.eval(&x, &mut dxdt)?; // one round trip, no allocation
//!     for (xi, di) in x.iter_mut().zip(&dxdt) {
//!         *xi += 0.001 * di; // forward Euler, to keep the example short
//!     }
//! }
//! assert_eq!(rhs.stats().calls, 100);
//! println!("mean overhead per call: {} ns", rhs.stats().mean_round_trip_ns());
//! rhs.close()?;
//! server.join().unwrap()?;
//! # Ok::<(), peerpipe::Error>(())
//! ```

use std::path::Path;

use hdrhistogram::Histogram;

use crate::codec::{Values, ValuesMut};
use crate::error::{Error, Result};
pub use crate::ode::{JAC_FUNCTION, RHS_FUNCTION, ode_parts};
use crate::parts::{Part, PartMut};
use crate::peer::{CallTiming, Options, Peer, ReplyInto, Request};

/// How the state and derivative travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Exchange {
    /// As f64: bit-exact.
    #[default]
    F64,
    /// Narrowed to f32 on the wire and widened back: half the bytes, about 7 significant digits.
    F64AsF32,
}

/// Cumulative timing of a [`RemoteRhs`].
#[derive(Clone, Debug)]
pub struct RhsStats {
    /// Completed evaluations.
    pub calls: u64,
    /// Sum of client encode time, ns.
    pub encode_ns: u64,
    /// Sum of client decode time, ns.
    pub decode_ns: u64,
    /// Sum of server time, ns.
    pub server_ns: u64,
    /// Sum of transfer time (round trip − encode − decode − server), ns.
    pub transfer_ns: u64,
    /// Sum of whole round trips, ns.
    pub round_trip_ns: u64,
    /// Distribution of round trips (1 ns to 1 hour, 3 significant digits).
    pub round_trips: Histogram<u64>,
    /// Distribution of the cost of going remote per call: round trip − server time.
    pub overheads: Histogram<u64>,
}

impl RhsStats {
    fn new() -> RhsStats {
        RhsStats {
            calls: 0,
            encode_ns: 0,
            decode_ns: 0,
            server_ns: 0,
            transfer_ns: 0,
            round_trip_ns: 0,
            round_trips: crate::stats::new_histogram(),
            overheads: crate::stats::new_histogram(),
        }
    }

    fn add(&mut self, t: &CallTiming) {
        self.calls += 1;
        self.encode_ns += t.encode_ns;
        self.decode_ns += t.decode_ns;
        self.server_ns += t.server_ns;
        self.transfer_ns += t.transfer_ns();
        self.round_trip_ns += t.round_trip_ns;
        // Within the histogram's fixed bounds recording never allocates.
        self.round_trips.saturating_record(t.round_trip_ns);
        self.overheads.saturating_record(t.round_trip_ns.saturating_sub(t.server_ns));
    }

    /// Forgets every call counted so far, as before the first: counts, sums and both
    /// histograms (their memory kept).
    pub(crate) fn clear(&mut self) {
        let RhsStats {
            calls,
            encode_ns,
            decode_ns,
            server_ns,
            transfer_ns,
            round_trip_ns,
            round_trips,
            overheads,
        } = self;
        for sum in [calls, encode_ns, decode_ns, server_ns, transfer_ns, round_trip_ns] {
            *sum = 0;
        }
        round_trips.reset();
        overheads.reset();
    }

    /// Mean round trip in nanoseconds (0 before the first call).
    pub fn mean_round_trip_ns(&self) -> u64 {
        self.round_trip_ns.checked_div(self.calls).unwrap_or(0)
    }

    /// The `q`-quantile (0–1) of the round trips in nanoseconds.
    pub fn round_trip_quantile_ns(&self, q: f64) -> u64 {
        self.round_trips.value_at_quantile(q)
    }

    /// The `q`-quantile (0–1) of the per-call overhead (round trip − server time) in
    /// nanoseconds.
    pub fn overhead_quantile_ns(&self, q: f64) -> u64 {
        self.overheads.value_at_quantile(q)
    }
}

/// A derivative evaluated by a server process, called like a local function.
#[derive(Debug)]
pub struct RemoteRhs {
    peer: Peer,
    exchange: Exchange,
    last: CallTiming,
    stats: RhsStats,
}

impl RemoteRhs {
    /// Uses an established peer whose server answers a state with its derivative.
    pub fn new(peer: Peer) -> RemoteRhs {
        RemoteRhs {
            peer,
            exchange: Exchange::F64,
            last: CallTiming::default(),
            stats: RhsStats::new(),
        }
    }

    /// Spawns `peer_exe --role server --handler HANDLER` (e.g. `lorenz96`) as the derivative
    /// server; `peer_exe` is found as [`crate::peer::find_peer_binary`] says (the path, then
    /// `$PEERPIPE_PEER`, then `PATH`).
    ///
    /// # Errors
    /// As [`Peer::spawn_server`].
    pub fn spawn_server(
        peer_exe: impl AsRef<Path>,
        handler: &str,
        options: Options,
    ) -> Result<RemoteRhs> {
        Ok(RemoteRhs::new(Peer::spawn_server(peer_exe, handler, options)?))
    }

    /// [`RemoteRhs::spawn_server`] with the `peer` binary from `$PEERPIPE_PEER` or `PATH`
    /// ([`Peer::spawn_handler`]).
    ///
    /// # Errors
    /// As [`Peer::spawn_server`].
    pub fn spawn_handler(handler: &str, options: Options) -> Result<RemoteRhs> {
        Ok(RemoteRhs::new(Peer::spawn_handler(handler, options)?))
    }

    /// Chooses how values travel (default: f64, bit-exact).
    pub fn with_exchange(mut self, exchange: Exchange) -> RemoteRhs {
        self.exchange = exchange;
        self
    }

    /// Evaluates the derivative of `state` into `derivative`: one round trip, no allocation
    /// once warm. Returns this call's timing (also in [`RemoteRhs::last_timing`]).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when the slices differ in length (nothing is sent); otherwise
    /// the errors of [`Peer::call`]: the server's ERROR text ([`Error::Remote`], after which
    /// the peer stays usable), a timeout, or the server's death with its exit status. On error
    /// the contents of `derivative` are unspecified.
    pub fn eval(&mut self, state: &[f64], derivative: &mut [f64]) -> Result<CallTiming> {
        if state.len() != derivative.len() {
            return Err(Error::LengthMismatch {
                what: "derivative buffer",
                expected: state.len() as u64,
                found: derivative.len() as u64,
            });
        }
        let (request, into) = match self.exchange {
            Exchange::F64 => (Values::F64(state), ValuesMut::F64(derivative)),
            Exchange::F64AsF32 => (Values::F64AsF32(state), ValuesMut::F64FromF32(derivative)),
        };
        self.call(Request::Array(request), ReplyInto::Array(into))
    }

    /// `fun(t, y, *args)` exactly as SciPy's `solve_ivp` calls it: sends `t`, the state `y`
    /// and the parameters `args` (omitted when empty) to the server's [`RHS_FUNCTION`] in one
    /// PARTS request, and receives the derivative into `dydt`. One round trip, no allocation
    /// once warm.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when `dydt` is not as long as `y` (nothing is sent);
    /// [`Error::Unsupported`] when the server does not speak PARTS; otherwise those of
    /// [`Peer::call_parts`]. On error the contents of `dydt` are unspecified.
    pub fn eval_at(
        &mut self,
        t: f64,
        y: &[f64],
        args: &[f64],
        dydt: &mut [f64],
    ) -> Result<CallTiming> {
        check_derivative_buffer(y, dydt)?;
        self.call_function(RHS_FUNCTION, t, Part::f64(y), args, PartMut::f64(dydt))
    }

    /// `fun(t, y, *args)` as SciPy calls it with `vectorized=True`: `y` holds `columns`
    /// states side by side, a row-major n × k matrix (`y[i * k + j]` = component i of state
    /// j, as a C-ordered numpy array of shape (n, k) lies in memory), sent as one matrix part
    /// to the server's [`RHS_FUNCTION`]; the derivatives come back into `dydt` in the same
    /// layout, a matrix of as many columns. One round trip, counted in [`RemoteRhs::stats`].
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when `dydt` is not as long as `y`, [`Error::InvalidArgument`]
    /// when `columns` is 0 or `y` is not whole rows of it (nothing is sent); a reply of
    /// another shape is [`Error::ShapeMismatch`]; otherwise as [`RemoteRhs::eval_at`].
    pub fn eval_columns_at(
        &mut self,
        t: f64,
        y: &[f64],
        columns: usize,
        args: &[f64],
        dydt: &mut [f64],
    ) -> Result<CallTiming> {
        check_derivative_buffer(y, dydt)?;
        let states = Part::f64(y).matrix(columns)?;
        let out = PartMut::f64(dydt).matrix(columns)?;
        self.call_function(RHS_FUNCTION, t, states, args, out)
    }

    /// `jac(t, y, *args)`: the Jacobian of the server's [`JAC_FUNCTION`] at `(t, y)` into
    /// `jac`, an n × n matrix in row-major order (`jac[i * n + j]` = ∂f_i/∂y_j).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when `jac` does not hold n × n values; otherwise as
    /// [`RemoteRhs::eval_at`].
    pub fn jac_at(
        &mut self,
        t: f64,
        y: &[f64],
        args: &[f64],
        jac: &mut [f64],
    ) -> Result<CallTiming> {
        let n = y.len();
        if jac.len() != n * n {
            return Err(Error::LengthMismatch {
                what: "Jacobian buffer (n x n)",
                expected: (n * n) as u64,
                found: jac.len() as u64,
            });
        }
        let out = if n == 0 { PartMut::f64(jac) } else { PartMut::f64(jac).matrix(n)? };
        self.call_function(JAC_FUNCTION, t, Part::f64(y), args, out)
    }

    fn call_function(
        &mut self,
        function: &str,
        t: f64,
        y: Part<'_>,
        args: &[f64],
        out: PartMut<'_>,
    ) -> Result<CallTiming> {
        let t = [t];
        let inputs = [Part::f64(&t), y, Part::f64(args)];
        let parts = if args.is_empty() { &inputs[..2] } else { &inputs[..] };
        self.call(Request::Call { function, parts }, ReplyInto::Parts(&mut [out]))
    }

    /// The one round trip of every evaluation, counted in the statistics.
    fn call(&mut self, request: Request<'_, '_>, into: ReplyInto<'_, '_>) -> Result<CallTiming> {
        let timing = self.peer.call_request(request, into)?;
        self.record(timing);
        Ok(timing)
    }

    fn record(&mut self, timing: CallTiming) {
        self.last = timing;
        self.stats.add(&timing);
    }

    /// Timing of the most recent successful call.
    pub fn last_timing(&self) -> CallTiming {
        self.last
    }

    /// Cumulative timing: every call since the `RemoteRhs` was made, or since
    /// [`RemoteRhs::reset_stats`].
    pub fn stats(&self) -> &RhsStats {
        &self.stats
    }

    /// Starts the statistics afresh, e.g. between two solves: [`RemoteRhs::stats`] then
    /// counts only the calls made after it. Allocates nothing.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use peerpipe::{Options, rhs::RemoteRhs};
    /// let mut rhs = RemoteRhs::spawn_server("peer", "lorenz96", Options::default())?;
    /// let (x, mut dx) = (vec![8.0; 40], vec![0.0; 40]);
    /// rhs.eval(&x, &mut dx)?; // a first solve
    /// rhs.reset_stats();
    /// rhs.eval(&x, &mut dx)?; // the second
    /// assert_eq!(rhs.stats().calls, 1);
    /// # Ok::<(), peerpipe::Error>(())
    /// ```
    pub fn reset_stats(&mut self) {
        self.stats.clear();
    }

    /// The underlying peer (its server HELLO, pipe capacity, pid).
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// The underlying peer, for calls of its own (another function of the same server);
    /// they are not counted in [`RemoteRhs::stats`].
    pub fn peer_mut(&mut self) -> &mut Peer {
        &mut self.peer
    }

    /// Says BYE and reaps the server.
    ///
    /// # Errors
    /// As [`Peer::close`].
    pub fn close(self) -> Result<()> {
        self.peer.close().map(drop)
    }
}

/// A derivative buffer must be as long as the state.
fn check_derivative_buffer(y: &[f64], dydt: &[f64]) -> Result<()> {
    if y.len() == dydt.len() {
        return Ok(());
    }
    Err(Error::LengthMismatch {
        what: "derivative buffer",
        expected: y.len() as u64,
        found: dydt.len() as u64,
    })
}
