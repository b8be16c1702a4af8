//! A [`RemoteRhs`] measured against a raw floor paired with it in time: after every segment of
//! calls, the derivative server is stopped (`SIGSTOP`) while a burst of the raw floor
//! ([`RawEcho`]) runs, and the segment's overhead p50 is kept beside the burst's p50; their
//! ratio, with its interval, is [`FloorStats::overhead_ratio`]. The Lorenz-96 example
//! (`cli/examples/lorenz96.rs`) prints it; the library's `RemoteRhs` knows nothing of it.

use std::time::Instant;

use peerpipe::error::{Error, Result};
use peerpipe::process::{pause, resume};
use peerpipe::rhs::{RemoteRhs, RhsStats};
use peerpipe::{CallTiming, stats};

use crate::baseline::RawEcho;
use crate::pairing::{PairedRatio, paired_ratio};

/// One segment of calls and the floor burst measured right after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloorSegment {
    /// p50 of the segment's overheads (round trip − server time), ns.
    pub overhead_p50_ns: u64,
    /// p50 of the floor burst, ns.
    pub floor_p50_ns: u64,
}

/// What the paired floor measured.
#[derive(Clone, Debug, Default)]
pub struct FloorStats {
    /// One entry per segment of calls, its overhead p50 beside the p50 of the floor burst
    /// that followed it.
    pub segments: Vec<FloorSegment>,
    /// Wall time spent in floor bursts, ns: not part of any call, but part of the caller's
    /// wall time.
    pub floor_wall_ns: u64,
}

impl FloorStats {
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
        (!floors.is_empty()).then(|| stats::nearest_rank(&floors, 0.5))
    }
}

/// A raw floor measured in bursts between segments of calls (see
/// [`PairedRhs::pair_with_floor`]).
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
        stats: &mut FloorStats,
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
        let overhead_p50_ns = stats::nearest_rank(&self.overheads, 0.5);
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
        Ok(stats::nearest_rank(&self.floor, 0.5))
    }
}

/// A [`RemoteRhs`] whose calls are paired with a raw floor, once one is given
/// ([`PairedRhs::pair_with_floor`]).
#[derive(Debug)]
pub struct PairedRhs {
    rhs: RemoteRhs,
    floor: Option<PairedFloor>,
    stats: FloorStats,
}

impl PairedRhs {
    /// `rhs`, with no floor yet: its calls go on as they would without.
    pub fn new(rhs: RemoteRhs) -> PairedRhs {
        PairedRhs { rhs, floor: None, stats: FloorStats::default() }
    }

    /// Measures the cost of going remote against a raw floor paired with it in time: after
    /// every `every_calls` calls, the derivative server is stopped (`SIGSTOP`) while `echo` —
    /// a raw echo of the exchange's bytes, see [`RawEcho::spawn`] — runs a burst of
    /// `burst_round_trips` round trips, and the segment's overhead p50 is recorded beside the
    /// burst's p50 ([`FloorStats::segments`], [`FloorStats::overhead_ratio`]). The floor
    /// server is stopped between bursts, so neither server takes a core from the other. The
    /// bursts add wall time to the calls that end a segment ([`FloorStats::floor_wall_ns`]),
    /// not to their timing. [`PairedRhs::close`] closes the floor too.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `every_calls` or `burst_round_trips` is zero; `echo` is
    /// then closed and this `PairedRhs` goes on as before.
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

    /// [`RemoteRhs::eval`], its overhead recorded for the paired floor (and a floor burst run
    /// after the last call of a segment).
    ///
    /// # Errors
    /// As [`RemoteRhs::eval`]; those of the floor burst ([`RawEcho::round_trip`],
    /// [`RawEcho::verify`]) after the call that ends a segment.
    pub fn eval(&mut self, state: &[f64], derivative: &mut [f64]) -> Result<CallTiming> {
        let timing = self.rhs.eval(state, derivative)?;
        if let Some(floor) = &mut self.floor {
            let overhead = timing.round_trip_ns.saturating_sub(timing.server_ns);
            floor.record(overhead, self.rhs.peer().server_pid(), &mut self.stats)?;
        }
        Ok(timing)
    }

    /// Starts afresh, e.g. between two solves: [`RemoteRhs::reset_stats`], the floor's
    /// segments and wall time, and the segment under way, so that no segment mixes calls from
    /// before and after. Allocates nothing.
    pub fn reset_stats(&mut self) {
        self.rhs.reset_stats();
        self.stats.segments.clear();
        self.stats.floor_wall_ns = 0;
        if let Some(floor) = &mut self.floor {
            floor.overheads.clear();
        }
    }

    /// The calls' cumulative timing ([`RemoteRhs::stats`]).
    pub fn stats(&self) -> &RhsStats {
        self.rhs.stats()
    }

    /// What the paired floor measured.
    pub fn floor(&self) -> &FloorStats {
        &self.stats
    }

    /// Says BYE and reaps the derivative server, and closes the paired floor if there is one.
    ///
    /// # Errors
    /// As [`RemoteRhs::close`], then as [`RawEcho::close`].
    pub fn close(self) -> Result<()> {
        let closed = self.rhs.close();
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
