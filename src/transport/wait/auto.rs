//! [`AutoWaiter`]: the rules of [`super::Wait::Auto`] (docs/WAITING.md), applied before and
//! after each wait, and what they watch of the peer.

use std::time::{Duration, Instant};

use super::DEFAULT_SPIN_BUDGET;
use crate::transport::auto_counts::AutoCounts;
use crate::transport::backoff::Backoff;
use crate::transport::placement::{Cpus, Os, Placement};

/// Longest spin: 500 µs, doubled up to from [`DEFAULT_SPIN_BUDGET`].
pub(crate) const AUTO_MAX_SPIN_BUDGET: Duration = Duration::from_micros(500);
/// How often a spin yields the CPU to see whether another task wants it: every 20 µs.
pub(crate) const AUTO_SPIN_YIELD_EVERY: Duration = Duration::from_micros(20);
/// Misses in a row after which waits stop spinning: 2.
pub(crate) const AUTO_MISSES_TO_BLOCK: u32 = 2;
/// Longest sleep or yield that counts as cheap, the core handed to a peer that shares it and
/// back: 20 µs.
pub(crate) const AUTO_CHEAP_SLEEP: Duration = Duration::from_micros(20);
/// A yield that took longer than this ran another task first: 3 µs.
pub(crate) const AUTO_YIELD_RAN_ANOTHER: Duration = Duration::from_micros(3);
/// Dear sleeps in a row after which a sleeping connection spins again: 2 at first, up to 16.
pub(crate) const AUTO_DEAR_SLEEPS_TO_SPIN: u32 = 2;
/// The most dear sleeps in a row that spinning waits for.
pub(crate) const AUTO_MAX_DEAR_SLEEPS_TO_SPIN: u32 = 16;
/// Shortest spin of a probe: 5 µs.
pub(crate) const AUTO_MIN_PROBE_BUDGET: Duration = Duration::from_micros(5);
/// Longest spin of a probe: 200 µs.
pub(crate) const AUTO_MAX_PROBE_BUDGET: Duration = Duration::from_micros(200);
/// Waits before the first probe, and the first distance between yield probes: 4.
pub(crate) const AUTO_FIRST_PROBE: u32 = 4;
/// Longest distance between two probes, in waits: 1024.
pub(crate) const AUTO_MAX_PROBE: u32 = 1024;
/// Longest distance between two yield probes, in waits: 16384.
pub(crate) const AUTO_MAX_YIELD_PROBE: u32 = 16384;
/// How often the two affinity masks are read while they do not confine the two to one CPU.
pub(crate) const CONFINEMENT_RECHECK: Duration = Duration::from_secs(1);
/// How often they are read while they do, and the first time, after a watch starts.
pub(crate) const CONFINED_RECHECK: Duration = Duration::from_millis(10);

/// How a wait goes on once its first poll found nothing ([`AutoWaiter::before_wait`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// How long it spins (zero: it does not).
    pub budget: Duration,
    /// Whether it yields the CPU: once after its spin (or before it sleeps), and every
    /// [`AUTO_SPIN_YIELD_EVERY`] of its spin.
    pub yields: bool,
}

/// What one wait saw, for [`AutoWaiter::after_wait`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct WaitSeen {
    /// Its [`Plan::budget`].
    pub budget: Duration,
    /// From its first empty poll to its data.
    pub waited: Duration,
    /// Whether it slept in the kernel.
    pub slept: bool,
    /// Whether a yield ran another task first: the core is wanted.
    pub contended: bool,
    /// Whether it yielded, and whether a yield took longer than [`AUTO_CHEAP_SLEEP`] (another
    /// task than the peer held the core).
    pub yielded: bool,
    pub dear_yield: bool,
}

impl WaitSeen {
    /// How long it slept: zero unless it did, and only the time past its spin budget.
    pub fn asleep(&self) -> Duration {
        if self.slept { self.waited.saturating_sub(self.budget) } else { Duration::ZERO }
    }

    /// Whether it slept longer than [`AUTO_CHEAP_SLEEP`]: the peer was elsewhere, slow or asleep.
    pub fn slept_dearly(&self) -> bool {
        self.slept && self.asleep() > AUTO_CHEAP_SLEEP
    }
}

/// Whether waits spin, with what each way needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Waits spin `budget`; `misses` in a row so far; whether a spin hit since spinning
    /// resumed; `unconfirmed`: resumed by dear sleeps, the peer not looked at yet.
    Spinning { budget: Backoff<Duration>, misses: u32, hit_since_resumed: bool, unconfirmed: bool },
    /// Waits sleep at once: `dear_sleeps` in a row so far, `until_probe` waits to the next probe.
    Sleeping { dear_sleeps: u32, until_probe: u32 },
}

/// What a waiter watches of a known peer: when it reads the two masks next, and where this
/// thread runs.
#[derive(Debug)]
struct Watch {
    next_masks: Instant,
    placement: Placement,
}

/// What [`super::Wait::Auto`] has learned of one connection, what its waits saw, and what it
/// reads of the system (`C`), applying the rules of docs/WAITING.md.
#[derive(Debug)]
pub struct AutoWaiter<C = Os> {
    mode: Mode,
    dear_sleeps_to_spin: Backoff<u32>,
    /// Waits from the switch to sleeping, or a failed probe, to the next probe.
    probe_interval: Backoff<u32>,
    /// Running average (1/8 to the newest) of the sleeps; zero until one.
    slept_average: Duration,
    /// Waits until a wait that does not spin yields first again (`None`: each one does), and
    /// how far apart such yield probes are.
    until_yield_probe: Option<u32>,
    yield_probe_interval: Backoff<u32>,
    /// Whether this side and its peer may run on one CPU only, the same one.
    confined: bool,
    counts: AutoCounts,
    cpus: C,
    peer: Option<Box<Watch>>,
}

impl<C> AutoWaiter<C> {
    /// Whether waits currently spin (before blocking) rather than block at once.
    pub fn is_spinning(&self) -> bool {
        matches!(self.mode, Mode::Spinning { .. })
    }

    /// What the waits saw so far.
    pub fn counts(&self) -> AutoCounts {
        self.counts
    }

    /// Moves to an idle CPU so far.
    pub(crate) fn moves(&self) -> u64 {
        self.peer.as_ref().map_or(0, |watch| watch.placement.moves())
    }
}

impl AutoWaiter {
    /// Watches process `peer` from now on, its `/proc/PID/stat` kept open when `keep_file`.
    pub(crate) fn watch_peer(&mut self, peer: u32, keep_file: bool) {
        self.cpus = Os::new(peer, keep_file);
        self.peer = Some(Box::new(Watch::from(Instant::now())));
    }
}

impl Watch {
    fn from(now: Instant) -> Watch {
        Watch { next_masks: now + CONFINED_RECHECK, placement: Placement::new() }
    }
}

impl<C: Cpus> AutoWaiter<C> {
    /// Knows nothing yet; reads the system through `cpus`; watches the peer from `watch_from`.
    pub(crate) fn new(cpus: C, watch_from: Option<Instant>) -> AutoWaiter<C> {
        AutoWaiter {
            mode: Mode::Spinning {
                budget: Backoff::new(DEFAULT_SPIN_BUDGET, AUTO_MAX_SPIN_BUDGET),
                misses: 0,
                hit_since_resumed: true,
                unconfirmed: false,
            },
            dear_sleeps_to_spin: Backoff::new(
                AUTO_DEAR_SLEEPS_TO_SPIN,
                AUTO_MAX_DEAR_SLEEPS_TO_SPIN,
            ),
            probe_interval: Backoff::new(AUTO_FIRST_PROBE, AUTO_MAX_PROBE),
            slept_average: Duration::ZERO,
            until_yield_probe: None,
            yield_probe_interval: Backoff::new(AUTO_FIRST_PROBE, AUTO_MAX_YIELD_PROBE),
            confined: false,
            counts: AutoCounts::default(),
            cpus,
            peer: watch_from.map(|now| Box::new(Watch::from(now))),
        }
    }

    /// Forgets what it learned and counted; keeps watching the peer.
    pub(crate) fn restart(&mut self)
    where
        C: Default,
    {
        let peer = self.peer.take();
        *self = AutoWaiter { peer, ..AutoWaiter::new(std::mem::take(&mut self.cpus), None) };
    }

    /// The plan of a wait whose first poll found nothing at `now`. With a watched peer, reads
    /// the two masks when due and, before spinning resumes on dear sleeps or a probe alone,
    /// where the peer last ran.
    pub(crate) fn before_wait(&mut self, now: Instant) -> Plan {
        if let Some(watch) = &mut self.peer {
            if now >= watch.next_masks {
                self.confined = self.cpus.confined_with_peer();
                let recheck = if self.confined { CONFINED_RECHECK } else { CONFINEMENT_RECHECK };
                watch.next_masks = now + recheck;
            }
            self.look_at_peer();
        }
        let budget = self.budget();
        Plan { budget, yields: !budget.is_zero() || self.yields_before_sleeping() }
    }

    /// Learns from a wait that ended at `now`. A wait that gave up the core tells a watched
    /// peer's placement, and spinning resumes when it moved this thread to an idle CPU.
    pub(crate) fn after_wait(&mut self, seen: &WaitSeen, now: Instant) {
        self.record(seen);
        let gave_up_the_core = seen.slept || (seen.yielded && seen.contended);
        let cheaply = if seen.slept { !seen.slept_dearly() } else { !seen.dear_yield };
        if gave_up_the_core
            && let Some(watch) = &mut self.peer
            && watch.placement.after_giving_up_the_core(&mut self.cpus, now, cheaply)
            && !self.is_spinning()
        {
            self.start_spinning(false);
        }
    }

    /// Where a spin would start on dear sleeps or a probe alone, whether the peer last ran on
    /// this thread's CPU, where a spin would only keep it from running: then spinning stops
    /// again, or the probe is put off twice as far.
    fn look_at_peer(&mut self) {
        let due = match self.mode {
            Mode::Spinning { unconfirmed, .. } => unconfirmed,
            Mode::Sleeping { until_probe, .. } => until_probe == 0,
        };
        if !due || self.confined {
            return;
        }
        let here = self.cpus.current();
        if here.is_some_and(|here| self.cpus.peer().is_some_and(|(peer, _)| peer == here)) {
            self.counts.kept_asleep += 1;
            match &mut self.mode {
                Mode::Spinning { .. } => self.stop_spinning(),
                Mode::Sleeping { until_probe, .. } => {
                    self.probe_interval.double();
                    *until_probe = self.probe_interval.get();
                }
            }
        } else if let Mode::Spinning { unconfirmed, .. } = &mut self.mode {
            *unconfirmed = false;
        }
    }

    /// The spin budget of a wait that starts now: the spinning budget, a probe's, or zero.
    fn budget(&mut self) -> Duration {
        match &mut self.mode {
            _ if self.confined => Duration::ZERO,
            Mode::Spinning { budget, .. } => budget.get(),
            Mode::Sleeping { until_probe: 0, .. } => self.probe_budget(),
            Mode::Sleeping { until_probe, .. } => {
                *until_probe -= 1;
                Duration::ZERO
            }
        }
    }

    /// A probe's budget: the running average of the sleeps, within its bounds.
    fn probe_budget(&self) -> Duration {
        self.slept_average.clamp(AUTO_MIN_PROBE_BUDGET, AUTO_MAX_PROBE_BUDGET)
    }

    /// Whether a wait that does not spin yields the CPU first: while yields pay, and as a yield
    /// probe now and then after one did not; never while confined.
    fn yields_before_sleeping(&mut self) -> bool {
        match &mut self.until_yield_probe {
            _ if self.confined => false,
            None | Some(0) => true,
            Some(until) => {
                *until -= 1;
                false
            }
        }
    }

    /// Learns from one wait (docs/WAITING.md).
    fn record(&mut self, seen: &WaitSeen) {
        let asleep = seen.asleep();
        if seen.slept {
            self.slept_average = match self.slept_average {
                Duration::ZERO => asleep,
                average => (average * 7 + asleep) / 8,
            };
        }
        let dear = seen.slept_dearly();
        self.counts.contended += u64::from(seen.contended);
        if seen.budget.is_zero() {
            self.counts.slept_at_once += 1;
            self.learn_from_yield(seen);
            if let (false, Mode::Sleeping { dear_sleeps, .. }) = (self.confined, &mut self.mode) {
                *dear_sleeps = if dear { *dear_sleeps + 1 } else { 0 };
                if *dear_sleeps >= self.dear_sleeps_to_spin.get() {
                    self.start_spinning(true);
                }
            }
            return;
        }
        let hit = !seen.slept && !seen.contended && seen.waited <= seen.budget;
        self.counts.spun += 1;
        self.counts.hits += u64::from(hit);
        if hit {
            self.dear_sleeps_to_spin.reset();
        }
        // Spinning was right: it paid, or it harmed no one and sleeping was dear.
        let right = hit || (dear && !seen.contended);
        let (budget, misses, hit_since_resumed) = match &mut self.mode {
            Mode::Spinning { budget, misses, hit_since_resumed, .. } => {
                (budget, misses, hit_since_resumed)
            }
            Mode::Sleeping { until_probe, .. } => {
                self.counts.probes += 1;
                if right {
                    self.start_spinning(false);
                } else {
                    self.probe_interval.double();
                    *until_probe = self.probe_interval.get();
                }
                return;
            }
        };
        if hit {
            *hit_since_resumed = true;
            if seen.waited * 4 < budget.get() {
                budget.halve();
            }
        }
        // A dear sleep after a harmless spin lengthens the spin unless other work holds the
        // CPUs; the machine is asked only where its answer changes what happens.
        let near = asleep <= 2 * AUTO_MAX_SPIN_BUDGET;
        let crowded = right && !hit && (near || !budget.at_floor()) && self.cpus.crowded();
        if crowded {
            budget.reset();
        }
        let longer = right && !hit && !crowded && near;
        if right && !(longer && budget.at_ceiling()) {
            if longer {
                budget.double();
            }
            *misses = 0;
        } else {
            *misses += 1;
            if *misses >= AUTO_MISSES_TO_BLOCK {
                self.counts.stopped_spinning += 1;
                self.stop_spinning();
            }
        }
    }

    /// Learns from a wait that did not spin whether yielding first pays: a dear yield stops
    /// it and puts the next yield probe twice as far off; a probe whose yield brought the data
    /// cheaply starts it again, the probes back half as far.
    fn learn_from_yield(&mut self, seen: &WaitSeen) {
        if !seen.yielded {
            return;
        }
        if seen.dear_yield {
            self.counts.dear_yields += 1;
            self.yield_probe_interval.double();
            self.until_yield_probe = Some(self.yield_probe_interval.get());
        } else if self.until_yield_probe.is_some() {
            if seen.slept {
                self.until_yield_probe = Some(self.yield_probe_interval.get());
            } else {
                self.until_yield_probe = None;
                self.yield_probe_interval.halve();
            }
        }
    }

    /// Spins from the next wait on, at the default budget; probes come half as far apart.
    fn start_spinning(&mut self, unconfirmed: bool) {
        self.mode = Mode::Spinning {
            budget: Backoff::new(DEFAULT_SPIN_BUDGET, AUTO_MAX_SPIN_BUDGET),
            misses: 0,
            hit_since_resumed: false,
            unconfirmed,
        };
        self.probe_interval.halve();
    }

    /// Sleeps from the next wait on, the first probe `probe_interval` waits off; without a hit
    /// since spinning resumed, the dear sleeps that resume it double.
    fn stop_spinning(&mut self) {
        if let Mode::Spinning { hit_since_resumed: false, .. } = self.mode {
            self.dear_sleeps_to_spin.double();
        }
        self.mode = Mode::Sleeping { dear_sleeps: 0, until_probe: self.probe_interval.get() };
    }
}

#[cfg(test)]
mod tests;
