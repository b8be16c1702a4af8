//! [`AutoWaiter`]: the rules of [`super::Wait::Auto`]; docs/WAITING.md states them and why.

use std::time::{Duration, Instant};

use super::ablation::{Mechanism, off};
use super::strategy::DEFAULT_SPIN_BUDGET;
use crate::transport::auto_counts::AutoCounts;
use crate::transport::backoff::{Backoff, Countdown};
use crate::transport::placement::{Cpus, Os, PlacementWatch};

/// Misses in a row after which waits stop spinning.
pub(crate) const AUTO_MISSES_TO_BLOCK: u32 = 2;
/// Longest sleep or yield that is cheap: the core handed to the peer and back.
pub(crate) const AUTO_CHEAP_SLEEP: Duration = Duration::from_micros(20);
/// Dear sleeps in a row after which waits spin again: at first, and at most.
pub(crate) const AUTO_DEAR_SLEEPS_TO_SPIN: Backoff<u32> = Backoff::new(2, 16);
/// Bounds of a probe's spin.
pub(crate) const AUTO_MIN_PROBE_BUDGET: Duration = Duration::from_micros(5);
pub(crate) const AUTO_MAX_PROBE_BUDGET: Duration = Duration::from_micros(200);
/// Waits to the first probe and to the first yield probe; most waits between two of each.
pub(crate) const AUTO_PROBE: Countdown = Countdown::new(4, 1024);
pub(crate) const AUTO_YIELD_PROBE: Countdown = Countdown::new(4, 16384);
/// How often the two masks are read: every second, every 10 ms while they confine the two.
pub(crate) const CONFINEMENT_RECHECK: Duration = Duration::from_secs(1);
pub(crate) const CONFINED_RECHECK: Duration = Duration::from_millis(10);

/// What one wait saw: its spin budget, how long from its first empty poll to its data, and how
/// it ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct WaitSeen {
    pub budget: Duration,
    pub waited: Duration,
    pub outcome: Outcome,
}

/// How a wait ended. Its yield is the one that ended its spin (a yield in the spin that ran
/// another task) or the one it made when the spin ran out or instead of spinning.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The data came in the spin: no yield ran another task, no sleep.
    #[default]
    Spun,
    /// The data was there after its yield, which did this.
    Yielded(Yielded),
    /// It slept, after its yield did this (`None`: it did not yield).
    Slept(Option<Yielded>),
}

/// What one yield of the CPU did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Yielded {
    /// It ran no other task.
    Idle,
    /// It ran another task and the core came back within a cheap sleep: the core was wanted,
    /// usually by the peer on it, handed over and back.
    Cheap,
    /// It ran another task for longer than a cheap sleep: the core went to other work.
    Dear,
}

impl WaitSeen {
    fn slept(&self) -> bool {
        matches!(self.outcome, Outcome::Slept(_))
    }

    /// What its yield did, if it yielded.
    fn yielded(&self) -> Option<Yielded> {
        match self.outcome {
            Outcome::Spun => None,
            Outcome::Yielded(yielded) => Some(yielded),
            Outcome::Slept(yielded) => yielded,
        }
    }

    /// Whether its yield ran another task: the core was wanted.
    fn contended(&self) -> bool {
        matches!(self.yielded(), Some(Yielded::Cheap | Yielded::Dear))
    }

    /// How long it slept past its spin budget; zero unless it slept.
    fn asleep(&self) -> Duration {
        if self.slept() { self.waited.saturating_sub(self.budget) } else { Duration::ZERO }
    }
}

/// Whether waits spin, and what each way counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Waits spin [`DEFAULT_SPIN_BUDGET`], after `misses` in a row.
    Spinning { misses: u32 },
    /// Waits sleep at once, after `dear_sleeps` in a row.
    Sleeping { dear_sleeps: u32 },
}

/// What `auto` learned of one connection and counted of its waits; `C` reads the system.
#[derive(Debug)]
pub struct AutoWaiter<C = Os> {
    mode: Mode,
    /// Dear sleeps in a row that resume spinning: doubled as it resumes, reset by a hit.
    dear_sleeps_to_spin: Backoff<u32>,
    /// Waits to the next probe while sleeping.
    probe: Countdown,
    /// Whether a wait that does not spin yields first; while not, waits to the next that does.
    yields: bool,
    yield_probe: Countdown,
    /// Running average (1/8 to the newest) of the sleeps; zero until one.
    slept_average: Duration,
    /// Whether this side and its peer may run on one CPU only, the same one.
    confined: bool,
    counts: AutoCounts,
    cpus: C,
    /// Where a watched peer and this side run.
    peer: Option<Box<PlacementWatch>>,
}

impl AutoWaiter {
    /// Watches process `peer` from now on, its `/proc/PID/stat` kept open when `keep_file`.
    pub(crate) fn watch_peer(&mut self, peer: u32, keep_file: bool) {
        self.cpus = Os::new(peer, keep_file);
        self.peer = Some(Box::new(PlacementWatch::new(Instant::now() + CONFINED_RECHECK)));
    }
}

impl<C: Cpus + Default> AutoWaiter<C> {
    /// Knows nothing yet; reads the system through `cpus`; watches the peer from `watch_from`.
    pub(crate) fn new(cpus: C, watch_from: Option<Instant>) -> AutoWaiter<C> {
        AutoWaiter {
            mode: Mode::Spinning { misses: 0 },
            dear_sleeps_to_spin: AUTO_DEAR_SLEEPS_TO_SPIN,
            probe: AUTO_PROBE,
            yields: true,
            yield_probe: AUTO_YIELD_PROBE,
            slept_average: Duration::ZERO,
            confined: false,
            counts: AutoCounts::default(),
            cpus,
            peer: watch_from.map(|from| Box::new(PlacementWatch::new(from + CONFINED_RECHECK))),
        }
    }

    /// Forgets what it learned and counted; goes on watching the peer.
    pub(crate) fn restart(&mut self) {
        let peer = self.peer.take();
        *self = AutoWaiter { peer, ..AutoWaiter::new(std::mem::take(&mut self.cpus), None) };
    }

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
        self.peer.as_ref().map_or(0, |placement| placement.moves)
    }

    /// How a wait whose first poll found nothing at `now` goes on: its spin budget (zero: none),
    /// whether it yields (in its spin, and once before it sleeps); a watched peer's masks read
    /// when due.
    pub(crate) fn before_wait(&mut self, now: Instant) -> (Duration, bool) {
        if let Some(placement) = &mut self.peer
            && now >= placement.next_masks
            && !off(Mechanism::Confine)
        {
            self.confined = self.cpus.confined_with_peer();
            let recheck = if self.confined { CONFINED_RECHECK } else { CONFINEMENT_RECHECK };
            placement.next_masks = now + recheck;
        }
        let budget = self.budget();
        (budget, !budget.is_zero() || self.yields_before_sleeping())
    }

    /// Learns from a wait that ended at `now`; with `move_thread`, one that gave up the core may
    /// move this thread to an idle CPU (with a watched peer), where it spins again.
    pub(crate) fn after_wait(&mut self, seen: &WaitSeen, now: Instant, move_thread: bool) {
        self.record(seen);
        let gave_up_the_core = seen.slept() || seen.contended();
        let cheaply = if seen.slept() {
            seen.asleep() <= AUTO_CHEAP_SLEEP
        } else {
            seen.yielded() != Some(Yielded::Dear)
        };
        if gave_up_the_core
            && move_thread
            && !off(Mechanism::Move)
            && let Some(placement) = &mut self.peer
            && placement.after_giving_up_the_core(&mut self.cpus, now, cheaply)
            && !self.is_spinning()
        {
            self.start_spinning();
        }
    }

    /// The spin budget of a wait that starts now: the spinning budget, a due probe's, or zero.
    fn budget(&mut self) -> Duration {
        match self.mode {
            _ if self.confined => Duration::ZERO,
            Mode::Spinning { .. } => DEFAULT_SPIN_BUDGET,
            Mode::Sleeping { .. } if !off(Mechanism::Probe) && self.probe.due() => {
                self.probe_budget()
            }
            Mode::Sleeping { .. } => Duration::ZERO,
        }
    }

    fn probe_budget(&self) -> Duration {
        self.slept_average.clamp(AUTO_MIN_PROBE_BUDGET, AUTO_MAX_PROBE_BUDGET)
    }

    /// Whether a wait that does not spin yields the CPU first: never while confined.
    fn yields_before_sleeping(&mut self) -> bool {
        !self.confined && !off(Mechanism::Yield) && (self.yields || self.yield_probe.due())
    }

    /// Learns from one wait.
    fn record(&mut self, seen: &WaitSeen) {
        let asleep = seen.asleep();
        if seen.slept() {
            self.slept_average = match self.slept_average {
                Duration::ZERO => asleep,
                average => (average * 7 + asleep) / 8,
            };
        }
        let dear = asleep > AUTO_CHEAP_SLEEP;
        let contended = seen.contended();
        self.counts.contended += u64::from(contended);
        if seen.budget.is_zero() {
            self.counts.slept_at_once += 1;
            if let Some(yielded) = seen.yielded().filter(|_| !off(Mechanism::DearYield)) {
                self.learn_from_yield(yielded, seen.slept());
            }
            if let (false, Mode::Sleeping { dear_sleeps }) = (self.confined, &mut self.mode) {
                *dear_sleeps = if dear { *dear_sleeps + 1 } else { 0 };
                if *dear_sleeps >= self.dear_sleeps_to_spin.get() && !off(Mechanism::Resume) {
                    self.start_spinning();
                }
            }
            return;
        }
        let hit = !seen.slept() && !contended && seen.waited <= seen.budget;
        // Spinning was right: it paid, or it harmed no one and sleeping was dear.
        let right = hit || (dear && !contended);
        self.counts.spun += 1;
        self.counts.hits += u64::from(hit);
        if hit {
            self.dear_sleeps_to_spin.reset();
        }
        let Mode::Spinning { misses } = &mut self.mode else {
            self.counts.probes += 1;
            return if right { self.start_spinning() } else { self.probe.put_off() };
        };
        *misses = if right { 0 } else { *misses + 1 };
        if *misses >= AUTO_MISSES_TO_BLOCK && !off(Mechanism::Stop) {
            self.counts.stopped_spinning += 1;
            self.stop_spinning();
        }
    }

    /// Learns from a wait that yielded before it would sleep: a dear yield stops such yields,
    /// a cheap one that brought the data starts them again.
    fn learn_from_yield(&mut self, yielded: Yielded, slept: bool) {
        if yielded == Yielded::Dear {
            self.counts.dear_yields += 1;
            self.yields = false;
            self.yield_probe.put_off();
        } else if !self.yields && slept {
            self.yield_probe.rearm();
        } else if !self.yields {
            self.yields = true;
            self.yield_probe.every.halve();
        }
    }

    /// Spins from the next wait on; probes half as far apart, twice the dear sleeps to resume.
    fn start_spinning(&mut self) {
        self.mode = Mode::Spinning { misses: 0 };
        self.probe.every.halve();
        self.dear_sleeps_to_spin.double();
    }

    /// Sleeps from the next wait on, the next probe `probe.every` waits off.
    fn stop_spinning(&mut self) {
        self.mode = Mode::Sleeping { dear_sleeps: 0 };
        self.probe.rearm();
    }
}

#[cfg(test)]
mod tests;
