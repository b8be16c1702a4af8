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
use crate::peer::{CallTiming, Options, Peer};

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
            round_trips: crate::report::new_histogram(),
            overheads: crate::report::new_histogram(),
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
    /// server.
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
        let timing = match self.exchange {
            Exchange::F64 => self.peer.call(Values::F64(state), ValuesMut::F64(derivative))?,
            Exchange::F64AsF32 => {
                self.peer.call(Values::F64AsF32(state), ValuesMut::F64FromF32(derivative))?
            }
        };
        self.last = timing;
        self.stats.add(&timing);
        Ok(timing)
    }

    /// Timing of the most recent successful call.
    pub fn last_timing(&self) -> CallTiming {
        self.last
    }

    /// Cumulative timing.
    pub fn stats(&self) -> &RhsStats {
        &self.stats
    }

    /// The underlying peer (its server HELLO, pipe capacity, pid).
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Says BYE and reaps the server.
    ///
    /// # Errors
    /// As [`Peer::close`].
    pub fn close(self) -> Result<()> {
        self.peer.close().map(drop)
    }
}
