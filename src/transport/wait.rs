//! How a side waits for its peer: the [`Wait`] strategies, and how [`Wait::Auto`] learns,
//! per connection, whether spinning pays.
//!
//! Spinning wins only while the peer runs on another CPU: then a reply lands within a few
//! microseconds of polling and no wake-up is paid. When the peer needs *this* CPU — both
//! processes on one core, or the scheduler putting a woken peer beside its waker while other
//! work holds the remaining cores — every microsecond spent spinning is a microsecond the peer
//! cannot run, and a spin budget of 50 µs on each side costs ~100 µs per round trip where
//! blocking costs a few. No fixed strategy is right everywhere, and which one is right is
//! known only at run time, so the default, `auto`, watches what its own waits see:
//!
//! - **Spinning.** A wait spins up to [`DEFAULT_SPIN_BUDGET`], then blocks. Data caught within
//!   the budget is a *hit*. A wait that had to block is a *miss*; so is one that caught its
//!   data only after overrunning the budget, which happens when the spinner was taken off its
//!   CPU mid-spin. [`AUTO_MISSES_TO_BLOCK`] misses in a row switch the connection to
//!   blocking: a peer that shares this core makes every spin miss, while a spinner that other
//!   work preempts now and then, with its peer on another CPU, still hits between misses.
//! - **Blocking.** Waits go straight to the kernel. Every so often one wait is a *probe* that
//!   spins again: a hit switches back to spinning; a miss doubles the distance to the next
//!   probe, from [`AUTO_FIRST_PROBE`] waits up to [`AUTO_MAX_PROBE`], so that on a machine
//!   where spinning never pays the probes cost under 0.1 % of waits. A probe may spin longer
//!   than a spinning wait, because while this side blocks its peer may be blocking too: its
//!   answer then comes only after the peer's own wake-up, which a probe must outlast to see
//!   that the peer runs elsewhere. So a probe spins as long as this side's recent sleeps took
//!   (a running average), within [`AUTO_MIN_PROBE_BUDGET`] and [`AUTO_MAX_PROBE_BUDGET`]:
//!   where the peer shares the core those sleeps are short, and a probe that cannot pay costs
//!   about one more of them; where every wake-up crosses CPUs they are long, and a probe
//!   outlasts the peer's.
//!
//! A wait that found its data at the first poll sees nothing and teaches nothing.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::units::{format_duration, parse_duration};

/// Spin budget of [`Wait::Hybrid`] when none is given, and of every spinning wait of
/// [`Wait::Auto`]: 50 µs, about what a wake-up of a sleeper on another CPU costs on a small
/// virtual machine (see docs/PERFORMANCE.md), so a spin that runs out has cost at most what
/// blocking at once would have.
pub const DEFAULT_SPIN_BUDGET: Duration = Duration::from_micros(50);

/// Misses in a row after which [`Wait::Auto`] stops spinning: 2, so that one unlucky wait (an
/// interrupt, a page fault on the peer's side) does not give up spinning, but a peer that
/// shares this core costs two spins at most.
pub const AUTO_MISSES_TO_BLOCK: u32 = 2;

/// Shortest spin of a probe: 5 µs, about what a sleep costs when the peer shares the core.
pub const AUTO_MIN_PROBE_BUDGET: Duration = Duration::from_micros(5);

/// Longest spin of a probe: 200 µs, four times [`DEFAULT_SPIN_BUDGET`] — a wake-up on another
/// CPU of a small virtual machine in its slow state, with room to spare. A peer that takes
/// longer than that is waited for by sleeping.
pub const AUTO_MAX_PROBE_BUDGET: Duration = Duration::from_micros(200);

/// Waits between the switch to blocking and the first probe: 4, so that a connection that
/// stopped spinning over a passing hiccup spins again within a few round trips.
pub const AUTO_FIRST_PROBE: u32 = 4;

/// Longest distance between two probes, in waits: 1024 (a failed probe costs at most
/// [`AUTO_MAX_PROBE_BUDGET`], so under 200 ns per wait on average).
pub const AUTO_MAX_PROBE: u32 = 1024;

/// How a side waits for its peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Wait {
    /// Sleep in the kernel until the descriptor is ready.
    Block,
    /// Poll without sleeping until ready or the deadline passes.
    Spin,
    /// Spin for `spin`, then block.
    Hybrid {
        /// How long to spin before sleeping.
        spin: Duration,
    },
    /// Spin while spinning pays, block while it does not, learned per connection from what
    /// the waits see (the module documentation says how). The default.
    #[default]
    Auto,
}

impl Wait {
    /// Short name: `block`, `spin`, `hybrid` or `auto`.
    pub fn name(&self) -> &'static str {
        match self {
            Wait::Block => "block",
            Wait::Spin => "spin",
            Wait::Hybrid { .. } => "hybrid",
            Wait::Auto => "auto",
        }
    }

    /// `hybrid` with its default budget.
    pub const fn hybrid() -> Wait {
        Wait::Hybrid { spin: DEFAULT_SPIN_BUDGET }
    }
}

impl fmt::Display for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Wait::Hybrid { spin } if *spin != DEFAULT_SPIN_BUDGET => {
                write!(f, "hybrid:{}", format_duration(*spin))
            }
            other => f.write_str(other.name()),
        }
    }
}

impl FromStr for Wait {
    type Err = Error;

    /// Parses `auto`, `block`, `spin`, `hybrid` or `hybrid:DUR` (e.g. `hybrid:20us`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use peerpipe::transport::Wait;
    /// assert_eq!("hybrid:20us".parse::<Wait>().unwrap(), Wait::Hybrid { spin: Duration::from_micros(20) });
    /// assert_eq!("auto".parse::<Wait>().unwrap(), Wait::default());
    /// assert!("sleepy".parse::<Wait>().is_err());
    /// ```
    fn from_str(text: &str) -> Result<Wait> {
        match text {
            "auto" => Ok(Wait::Auto),
            "block" => Ok(Wait::Block),
            "spin" => Ok(Wait::Spin),
            "hybrid" => Ok(Wait::hybrid()),
            _ => match text.strip_prefix("hybrid:") {
                Some(budget) => Ok(Wait::Hybrid { spin: parse_duration(budget)? }),
                None => Err(Error::InvalidArgument {
                    what: "wait strategy",
                    reason: format!(
                        "expected auto, block, spin, hybrid or hybrid:DUR, found {text:?}"
                    ),
                }),
            },
        }
    }
}

/// What [`Wait::Auto`] has learned of one connection: whether its waits spin, and when the
/// next probe is due while they do not; with counts of what its waits saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoWait {
    spinning: bool,
    misses: u32,
    probe_interval: u32,
    until_probe: u32,
    /// Running average (1/8 weight to the newest) of how long the waits that slept spent
    /// asleep; zero until one has.
    slept_average: Duration,
    counts: AutoCounts,
}

/// What the waits of one connection under [`Wait::Auto`] saw, counted since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AutoCounts {
    /// Waits that spun (probes included).
    pub spun: u64,
    /// Waits that spun and saw their data within the spin.
    pub hits: u64,
    /// Waits that slept at once, without spinning.
    pub slept_at_once: u64,
    /// Probes: spins while the connection was sleeping.
    pub probes: u64,
    /// Switches from spinning to sleeping.
    pub stopped_spinning: u64,
}

impl Default for AutoWait {
    fn default() -> Self {
        AutoWait {
            spinning: true,
            misses: 0,
            probe_interval: AUTO_FIRST_PROBE,
            until_probe: AUTO_FIRST_PROBE,
            slept_average: Duration::ZERO,
            counts: AutoCounts::default(),
        }
    }
}

impl AutoWait {
    /// Whether waits currently spin (before blocking) rather than block at once.
    pub fn is_spinning(&self) -> bool {
        self.spinning
    }

    /// What the waits saw so far.
    pub fn counts(&self) -> AutoCounts {
        self.counts
    }

    /// The spin budget of a wait that starts now: [`DEFAULT_SPIN_BUDGET`] while spinning
    /// pays, [`AutoWait::probe_budget`] for a probe, zero (block at once) otherwise. Called
    /// once per wait, when its first poll found nothing.
    pub fn budget(&mut self) -> Duration {
        if self.spinning {
            return DEFAULT_SPIN_BUDGET;
        }
        if self.until_probe == 0 {
            return self.probe_budget();
        }
        self.until_probe -= 1;
        Duration::ZERO
    }

    /// How long the next probe may spin: the running average of this side's sleeps, within
    /// [`AUTO_MIN_PROBE_BUDGET`] and [`AUTO_MAX_PROBE_BUDGET`].
    pub fn probe_budget(&self) -> Duration {
        self.slept_average.clamp(AUTO_MIN_PROBE_BUDGET, AUTO_MAX_PROBE_BUDGET)
    }

    /// Learns from a wait that was given `budget` by [`AutoWait::budget`] and ended `waited`
    /// after its first poll, having `slept` in the kernel or not.
    pub fn record(&mut self, budget: Duration, waited: Duration, slept: bool) {
        if slept {
            // The time asleep: a wait that spun first slept only after its budget.
            let asleep = waited.saturating_sub(budget);
            self.slept_average = match self.slept_average {
                Duration::ZERO => asleep,
                average => (average * 7 + asleep) / 8,
            };
        }
        if budget.is_zero() {
            self.counts.slept_at_once += 1;
            return; // blocked at once: nothing learned about spinning
        }
        let hit = !slept && waited <= budget;
        self.counts.spun += 1;
        self.counts.hits += u64::from(hit);
        self.counts.probes += u64::from(!self.spinning);
        if self.spinning {
            if hit {
                self.misses = 0;
                return;
            }
            self.misses += 1;
            if self.misses >= AUTO_MISSES_TO_BLOCK {
                self.counts.stopped_spinning += 1;
                self.spinning = false;
                self.misses = 0;
                self.until_probe = self.probe_interval;
            }
        } else if hit {
            // The probe paid: spin again, and probe a little sooner if it stops paying.
            self.spinning = true;
            self.probe_interval = (self.probe_interval / 2).max(AUTO_FIRST_PROBE);
        } else {
            self.probe_interval = (self.probe_interval * 2).min(AUTO_MAX_PROBE);
            self.until_probe = self.probe_interval;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    /// Where the peer runs, as a scripted partner: how long a wait lasts, given how long it
    /// may spin before it blocks.
    #[derive(Clone, Copy)]
    enum Partner {
        /// On another CPU, answering `after` the wait starts whatever the waiter does.
        Elsewhere { after: Duration },
        /// On this CPU: it runs only once the waiter blocks, then answers `service` later.
        SameCore { service: Duration },
        /// On another CPU but asleep itself: it answers `wake` after the wait starts (its own
        /// wake-up), and a waiter that sleeps too pays a wake-up of its own on top.
        Asleep { wake: Duration },
    }

    impl Partner {
        /// (waited, slept) of one wait with spin budget `budget`.
        fn wait(self, budget: Duration) -> (Duration, bool) {
            match self {
                Partner::Elsewhere { after } if after <= budget => (after, false),
                Partner::Elsewhere { after } => (after, true),
                Partner::SameCore { service } => (budget + service, true),
                Partner::Asleep { wake } if wake <= budget => (wake, false),
                Partner::Asleep { wake } => (budget.max(wake) + wake, true),
            }
        }
    }

    /// Runs `waits` waits against `partner`; returns the total time spent waiting and how many
    /// waits spun.
    fn run(auto: &mut AutoWait, partner: Partner, waits: u32) -> (Duration, u32) {
        let (mut total, mut spun) = (Duration::ZERO, 0);
        for _ in 0..waits {
            let budget = auto.budget();
            let (waited, slept) = partner.wait(budget);
            auto.record(budget, waited, slept);
            total += waited;
            spun += u32::from(!budget.is_zero());
        }
        (total, spun)
    }

    #[test]
    fn the_default_wait_is_auto_and_every_name_parses_back() {
        assert_eq!(Wait::default(), Wait::Auto);
        for wait in
            [Wait::Auto, Wait::Block, Wait::Spin, Wait::hybrid(), Wait::Hybrid { spin: 7 * US }]
        {
            assert_eq!(wait.to_string().parse::<Wait>().unwrap(), wait, "{wait}");
        }
        let error = "sleepy".parse::<Wait>().unwrap_err().to_string();
        assert!(error.contains("auto, block, spin, hybrid"), "{error}");
    }

    #[test]
    fn a_peer_on_another_cpu_that_answers_within_the_spin_keeps_it_spinning() {
        let mut auto = AutoWait::default();
        let (total, spun) = run(&mut auto, Partner::Elsewhere { after: 2 * US }, 10_000);
        assert!(auto.is_spinning());
        assert_eq!(spun, 10_000);
        assert_eq!(total, 20_000 * US);
    }

    #[test]
    fn a_peer_on_this_core_stops_the_spinning_after_two_waits() {
        let mut auto = AutoWait::default();
        let partner = Partner::SameCore { service: 3 * US };
        run(&mut auto, partner, AUTO_MISSES_TO_BLOCK);
        assert!(!auto.is_spinning());
        // From then on only the probes spin, fewer and fewer of them.
        let (total, spun) = run(&mut auto, partner, 100_000);
        assert!(!auto.is_spinning());
        assert!(spun <= 100_000 / AUTO_MAX_PROBE + 16, "{spun} probes in 100000 waits");
        let blocking_only = 100_000 * 3 * US;
        assert!(total < blocking_only + blocking_only / 10, "{total:?} against {blocking_only:?}");
    }

    #[test]
    fn waits_that_overran_their_spin_are_misses() {
        // Caught without sleeping, but 4 ms into a 50 µs spin: the spinner was descheduled.
        let mut auto = AutoWait::default();
        for _ in 0..AUTO_MISSES_TO_BLOCK {
            assert!(auto.is_spinning());
            let budget = auto.budget();
            auto.record(budget, Duration::from_millis(4), false);
        }
        assert!(!auto.is_spinning());
    }

    #[test]
    fn one_miss_between_hits_does_not_stop_the_spinning() {
        let mut auto = AutoWait::default();
        for _ in 0..100 {
            let budget = auto.budget();
            auto.record(budget, 2 * US, false);
            let budget = auto.budget();
            auto.record(budget, 80 * US, true);
        }
        assert!(auto.is_spinning());
    }

    #[test]
    fn a_peer_that_moves_to_another_cpu_is_found_by_a_probe() {
        let mut auto = AutoWait::default();
        run(&mut auto, Partner::SameCore { service: 3 * US }, 5_000);
        assert!(!auto.is_spinning());
        // The peer moves away: within one probe interval the waits spin again.
        let (_, _) = run(&mut auto, Partner::Elsewhere { after: 2 * US }, AUTO_MAX_PROBE + 1);
        assert!(auto.is_spinning());
        let (total, spun) = run(&mut auto, Partner::Elsewhere { after: 2 * US }, 1_000);
        assert_eq!((total, spun), (2_000 * US, 1_000));
    }

    #[test]
    fn a_probe_outlasts_the_wake_up_of_a_peer_that_was_blocking_too() {
        // Both sides blocking on two CPUs: the peer answers only after its own wake-up (70 µs
        // here), longer than a spinning wait's budget but within a probe's, which outlasts
        // the sleeping waits (140 µs: two wake-ups).
        let mut auto = AutoWait::default();
        run(&mut auto, Partner::SameCore { service: 3 * US }, 100);
        assert!(!auto.is_spinning());
        let partner = Partner::Asleep { wake: 70 * US };
        let switched = (0..=AUTO_MAX_PROBE).any(|_| {
            run(&mut auto, partner, 1);
            auto.is_spinning()
        });
        assert!(switched, "no probe saw the peer answer within {AUTO_MAX_PROBE_BUDGET:?}");
    }

    #[test]
    fn a_probe_spins_as_long_as_the_sleeps_took_within_its_bounds() {
        let mut auto = AutoWait::default();
        assert_eq!(auto.probe_budget(), AUTO_MIN_PROBE_BUDGET);
        // Sleeps of 8 µs (the peer on this core): probes as long.
        run(&mut auto, Partner::SameCore { service: 8 * US }, 200);
        assert_eq!(auto.probe_budget(), 8 * US);
        // Sleeps of 3 µs: the shortest probe.
        run(&mut auto, Partner::SameCore { service: 3 * US }, 200);
        assert_eq!(auto.probe_budget(), AUTO_MIN_PROBE_BUDGET);
        // Sleeping waits of 150 µs (wake-ups across CPUs): probes outlast them.
        for _ in 0..100 {
            auto.record(Duration::ZERO, 150 * US, true);
        }
        assert!(auto.probe_budget() > 140 * US && auto.probe_budget() <= 150 * US);
        // Sleeping waits of 5 ms (a slow peer): probes stop at the longest probe.
        for _ in 0..100 {
            auto.record(Duration::ZERO, 5000 * US, true);
        }
        assert_eq!(auto.probe_budget(), AUTO_MAX_PROBE_BUDGET);
    }

    #[test]
    fn a_peer_slower_than_the_spin_is_waited_for_by_blocking() {
        // A handler that takes 1 ms: spinning never catches it, so the waits block.
        let mut auto = AutoWait::default();
        let (_, spun) = run(&mut auto, Partner::Elsewhere { after: 1000 * US }, 10_000);
        assert!(!auto.is_spinning());
        assert!(spun < 40, "{spun} of 10000 waits spun");
    }

    #[test]
    fn probes_grow_rarer_while_they_fail_and_sooner_after_one_pays() {
        let mut auto = AutoWait::default();
        run(&mut auto, Partner::SameCore { service: 3 * US }, 50_000);
        assert_eq!(auto.probe_interval, AUTO_MAX_PROBE);
        run(&mut auto, Partner::Elsewhere { after: 2 * US }, AUTO_MAX_PROBE + 1);
        assert!(auto.is_spinning());
        assert_eq!(auto.probe_interval, AUTO_MAX_PROBE / 2);
    }

    #[test]
    fn a_wait_that_slept_at_once_teaches_nothing_about_spinning() {
        let mut auto = AutoWait::default();
        run(&mut auto, Partner::SameCore { service: 3 * US }, 2);
        let before = auto.clone();
        auto.record(Duration::ZERO, 3 * US, true);
        assert_eq!(auto.counts.slept_at_once, before.counts.slept_at_once + 1);
        // Only the counts and the average of sleeping waits moved.
        auto.counts = before.counts;
        auto.slept_average = before.slept_average;
        assert_eq!(auto, before);
    }
}
