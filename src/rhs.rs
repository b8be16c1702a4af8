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
use std::time::Instant;

use hdrhistogram::Histogram;

use crate::baseline::RawEcho;
use crate::codec::{Values, ValuesMut};
use crate::error::{Error, Result};
use crate::pairing::{PairedRatio, paired_ratio};
use crate::parts::{Part, PartMut};
use crate::peer::{CallTiming, Options, Peer};
use crate::server::Call;

/// The function a right-hand side `fun(t, y, *args)` is served as: `rhs`.
pub const RHS_FUNCTION: &str = "rhs";
/// The function its Jacobian `jac(t, y, *args)` is served as: `jac`.
pub const JAC_FUNCTION: &str = "jac";

/// The parts of an ODE call, as [`RemoteRhs::eval_at`] sends them: `t` (one f64), `y` (f64
/// values, a vector or, for a vectorized call, an n × k matrix) and, when there are any, the
/// parameters (f64 values) — returned as `(t, y, params)`, `params` empty without them.
///
/// # Errors
/// A message for the ERROR reply naming what was found instead.
pub fn ode_parts<'a>(call: &Call<'a>) -> std::result::Result<(f64, &'a [f64], &'a [f64]), String> {
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
use crate::process::{pause, resume};

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
    /// With a paired floor ([`RemoteRhs::pair_with_floor`]): one entry per segment of
    /// calls, its overhead p50 beside the p50 of the floor burst that followed it.
    pub segments: Vec<FloorSegment>,
    /// Wall time spent in floor bursts, ns: not part of any call, but part of the caller's
    /// wall time.
    pub floor_wall_ns: u64,
}

/// One segment of calls and the floor burst measured right after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloorSegment {
    /// p50 of the segment's overheads (round trip − server time), ns.
    pub overhead_p50_ns: u64,
    /// p50 of the floor burst, ns.
    pub floor_p50_ns: u64,
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
            segments: Vec::new(),
            floor_wall_ns: 0,
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

    /// Forgets every call counted so far, as before the first: counts, sums, both
    /// histograms (their memory kept), the paired floor's segments and its wall time.
    fn clear(&mut self) {
        let RhsStats {
            calls,
            encode_ns,
            decode_ns,
            server_ns,
            transfer_ns,
            round_trip_ns,
            round_trips,
            overheads,
            segments,
            floor_wall_ns,
        } = self;
        for sum in [calls, encode_ns, decode_ns, server_ns, transfer_ns, round_trip_ns] {
            *sum = 0;
        }
        *floor_wall_ns = 0;
        round_trips.reset();
        overheads.reset();
        segments.clear();
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

    /// The paired overhead ratio: the median over segments of (the segment's overhead p50 ÷
    /// the p50 of the floor burst measured right after it), with its 95 % interval; `None`
    /// without a paired floor or before the first segment is complete.
    pub fn overhead_ratio(&self) -> Option<PairedRatio> {
        let overheads: Vec<u64> = self.segments.iter().map(|s| s.overhead_p50_ns).collect();
        let floors: Vec<u64> = self.segments.iter().map(|s| s.floor_p50_ns).collect();
        paired_ratio(&overheads, &floors)
    }

    /// The median of the floor bursts' p50s, ns; `None` without segments.
    pub fn floor_p50_ns(&self) -> Option<u64> {
        let mut floors: Vec<u64> = self.segments.iter().map(|s| s.floor_p50_ns).collect();
        floors.sort_unstable();
        (!floors.is_empty()).then(|| crate::stats::nearest_rank(&floors, 0.5))
    }
}

/// A raw floor measured in bursts between segments of calls (see
/// [`RemoteRhs::pair_with_floor`]).
#[derive(Debug)]
struct PairedFloor {
    echo: RawEcho,
    /// Calls per segment.
    every: usize,
    /// Timed round trips per floor burst.
    burst: usize,
    /// Overheads of the current segment (capacity `every`: no allocation per call).
    overheads: Vec<u64>,
    /// Round trips of the current floor burst (capacity `burst`).
    floor: Vec<u64>,
}

/// Untimed round trips at the start of each floor burst, after the floor server was resumed.
const FLOOR_SETTLE_ROUND_TRIPS: usize = 3;

/// The floor's process when stopping it stops its server: not behind a launcher
/// ([`RawEcho::behind_launcher`]).
fn stoppable(echo: &RawEcho) -> Option<u32> {
    (!echo.behind_launcher()).then(|| echo.server_pid())
}

impl PairedFloor {
    /// Records one call's overhead; after `every` calls, stops the derivative server, runs a
    /// floor burst and records the segment.
    fn record(
        &mut self,
        overhead_ns: u64,
        server_pid: Option<u32>,
        stats: &mut RhsStats,
    ) -> Result<()> {
        self.overheads.push(overhead_ns);
        if self.overheads.len() < self.every {
            return Ok(());
        }
        let started = Instant::now();
        if let Some(pid) = server_pid {
            pause(pid);
        }
        let floor_pid = stoppable(&self.echo);
        if let Some(pid) = floor_pid {
            resume(pid);
        }
        let burst = self.burst();
        if let Some(pid) = floor_pid {
            pause(pid);
        }
        if let Some(pid) = server_pid {
            resume(pid);
        }
        stats.floor_wall_ns += started.elapsed().as_nanos() as u64;
        let floor_p50_ns = burst?;
        self.overheads.sort_unstable();
        let overhead_p50_ns = crate::stats::nearest_rank(&self.overheads, 0.5);
        self.overheads.clear();
        stats.segments.push(FloorSegment { overhead_p50_ns, floor_p50_ns });
        Ok(())
    }

    /// One burst of the floor: its p50 in ns.
    fn burst(&mut self) -> Result<u64> {
        for _ in 0..FLOOR_SETTLE_ROUND_TRIPS {
            self.echo.round_trip()?;
        }
        self.floor.clear();
        for _ in 0..self.burst {
            self.floor.push(self.echo.round_trip()?);
        }
        self.echo.verify()?;
        self.floor.sort_unstable();
        Ok(crate::stats::nearest_rank(&self.floor, 0.5))
    }
}

/// A derivative evaluated by a server process, called like a local function.
#[derive(Debug)]
pub struct RemoteRhs {
    peer: Peer,
    exchange: Exchange,
    last: CallTiming,
    stats: RhsStats,
    floor: Option<PairedFloor>,
}

impl RemoteRhs {
    /// Uses an established peer whose server answers a state with its derivative.
    pub fn new(peer: Peer) -> RemoteRhs {
        RemoteRhs {
            peer,
            exchange: Exchange::F64,
            last: CallTiming::default(),
            stats: RhsStats::new(),
            floor: None,
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

    /// Measures the cost of going remote against a raw floor paired with it in time: after
    /// every `every_calls` calls, the derivative server is stopped (`SIGSTOP`) while `echo` —
    /// a raw echo of the exchange's bytes, see [`RawEcho::spawn`] — runs a burst of
    /// `burst_round_trips` round trips, and the segment's overhead p50 is recorded beside the
    /// burst's p50 ([`RhsStats::segments`], [`RhsStats::overhead_ratio`]). The floor server is
    /// stopped between bursts, so neither server takes a core from the other. The bursts add
    /// wall time to the calls that end a segment ([`RhsStats::floor_wall_ns`]), not to their
    /// timing. [`RemoteRhs::close`] closes the floor too.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `every_calls` or `burst_round_trips` is zero; `echo` is
    /// then closed and this `RemoteRhs` goes on as before.
    pub fn pair_with_floor(
        &mut self,
        echo: RawEcho,
        every_calls: usize,
        burst_round_trips: usize,
    ) -> Result<()> {
        if every_calls == 0 || burst_round_trips == 0 {
            return Err(Error::InvalidArgument {
                what: "paired floor",
                reason: format!(
                    "needs at least 1 call per segment and 1 round trip per burst, found \
                     {every_calls} and {burst_round_trips}"
                ),
            });
        }
        if let Some(pid) = stoppable(&echo) {
            pause(pid);
        }
        self.stats.segments.reserve(64);
        self.floor = Some(PairedFloor {
            echo,
            every: every_calls,
            burst: burst_round_trips,
            overheads: Vec::with_capacity(every_calls),
            floor: Vec::with_capacity(burst_round_trips),
        });
        Ok(())
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
        let timing = match self.exchange {
            Exchange::F64 => self.peer.call(Values::F64(state), ValuesMut::F64(derivative))?,
            Exchange::F64AsF32 => {
                self.peer.call(Values::F64AsF32(state), ValuesMut::F64FromF32(derivative))?
            }
        };
        self.record(timing)?;
        Ok(timing)
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
        let inputs = if args.is_empty() { &inputs[..2] } else { &inputs[..] };
        let timing = self.peer.call_parts(function, inputs, &mut [out])?;
        self.record(timing)?;
        Ok(timing)
    }

    fn record(&mut self, timing: CallTiming) -> Result<()> {
        self.last = timing;
        self.stats.add(&timing);
        if let Some(floor) = &mut self.floor {
            let overhead = timing.round_trip_ns.saturating_sub(timing.server_ns);
            floor.record(overhead, self.peer.server_pid(), &mut self.stats)?;
        }
        Ok(())
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
    /// counts only the calls made after it. With a paired floor, the segment under way is
    /// dropped too, so that no segment mixes calls from before and after. Allocates nothing.
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
        if let Some(floor) = &mut self.floor {
            floor.overheads.clear();
        }
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

    /// Says BYE and reaps the server, and closes the paired floor if there is one.
    ///
    /// # Errors
    /// As [`Peer::close`], then as [`RawEcho::close`].
    pub fn close(self) -> Result<()> {
        let closed = self.peer.close().map(drop);
        if let Some(floor) = self.floor {
            if let Some(pid) = stoppable(&floor.echo) {
                resume(pid);
            }
            closed?;
            return floor.echo.close();
        }
        closed
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parts::{Role, Table};

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
        let call = Call { seq: 1, function: RHS_FUNCTION, parts };
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
