//! How a side waits for its peer: the [`Wait`] strategies, and how [`Wait::Auto`] learns,
//! per connection, whether spinning pays.
//!
//! Spinning wins only while the peer runs on another CPU: then a reply lands within a few
//! microseconds of polling and no wake-up is paid. When the peer needs *this* CPU — both
//! processes on one core, or the scheduler putting a woken peer beside its waker while other
//! work holds the remaining cores — every microsecond spent spinning is a microsecond the peer
//! cannot run, and a spin budget of 50 µs on each side costs ~100 µs per round trip where
//! blocking costs a few. And when the peer runs on another CPU but sleeps, a side that sleeps
//! too pays a wake-up of its own on top of the peer's — on a virtual machine, tens to hundreds
//! of microseconds each. No fixed strategy is right everywhere, and which one is right is known
//! only at run time, so the default, `auto`, watches what its own waits see:
//!
//! - **Spinning.** A wait spins up to its spin budget, [`DEFAULT_SPIN_BUDGET`] at first. When
//!   the spin runs out, it
//!   yields the CPU once (`sched_yield`): if that runs another task first, the core is
//!   *contended* — wanted by the peer itself when the two share it, or by other work. Then it
//!   sleeps. Data caught within the spin, uncontended, is a *hit*; so is a wait whose spin
//!   harmed no one and whose sleep turned out *dear* (longer than [`AUTO_CHEAP_SLEEP`]): the
//!   peer runs elsewhere and was merely slow or asleep, and sleeping only added a wake-up.
//!   Anything else — the yield ran another task, the sleep was cheap, or the spin overran its
//!   budget because the spinner was taken off its CPU — is a *miss*. [`AUTO_MISSES_TO_BLOCK`]
//!   misses in a row switch the connection to sleeping. A dear sleep after a spin that
//!   harmed no one, no longer than twice [`AUTO_MAX_SPIN_BUDGET`], doubles the spin budget up
//!   to that: when each side spins less than a wake-up of the other costs, both pay a wake-up
//!   on every round trip, and one side that spins through it removes both. Not when more
//!   tasks are runnable than this side has CPUs (*crowded*: the peer waited for a CPU, and a
//!   longer spin would take one from the work holding it), which resets the budget. A hit
//!   that came within a quarter of the budget halves it again, down to the default.
//! - **Sleeping.** Waits go straight to the kernel. [`AUTO_DEAR_SLEEPS_TO_SPIN`] dear sleeps
//!   in a row switch back to spinning: the peer has moved away, or is asleep elsewhere, and
//!   each side sleeping doubles the wake-ups. Beside other work a sleep can be dear because
//!   the waker's core was busy, and spinning then misses again; so each time spinning stops
//!   with no hit since it resumed, the dear sleeps it takes to resume double, up to
//!   [`AUTO_MAX_DEAR_SLEEPS_TO_SPIN`]; a hit brings them back to two. Every so often one wait is a *probe* that spins
//!   again, as long as this side's recent sleeps took (their running average, within
//!   [`AUTO_MIN_PROBE_BUDGET`] and [`AUTO_MAX_PROBE_BUDGET`]): a hit switches back to
//!   spinning; a miss doubles the distance to the next probe, from [`AUTO_FIRST_PROBE`] waits
//!   up to [`AUTO_MAX_PROBE`], so that where spinning never pays the probes cost little.
//!
//! Before spinning again on the strength of dear sleeps or a probe alone, a side that knows its
//! peer's pid looks where the peer last ran (`/proc/PID/stat`): on this side's own CPU, a
//! spin would only keep the peer from running — the pair shares a core while other work holds
//! the rest — and the side keeps sleeping.
//!
//! A side that may run on one CPU only, whose peer may run only on that same CPU too (both
//! started under `taskset -c 0`, say, or in a container of one CPU), never spins: the peer can
//! run only when this side stops ([`super::placement::Confinement`] looks at both affinity
//! masks, again every second).
//!
//! A wait that found its data at the first poll sees nothing and teaches nothing. While the
//! waits sleep at once, a side allowed to (the client) may move its thread off a core it
//! shares with its peer to an idle CPU, where it spins again ([`super::placement`]).

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

/// Longest spin of a spinning wait under [`Wait::Auto`]: 500 µs. A spin that runs out and is
/// followed by a dear sleep no longer than twice this, with no one else wanting the core,
/// doubles the next spin, from
/// [`DEFAULT_SPIN_BUDGET`] up to this: when both sides spin for less than a wake-up of the
/// other costs, each pays the other's wake-up on every round trip, and a side that spins
/// through one makes both wake-ups go away. A wake-up on another CPU of a small virtual
/// machine took 300–400 µs in its slow state.
pub const AUTO_MAX_SPIN_BUDGET: Duration = Duration::from_micros(500);

/// Misses in a row after which [`Wait::Auto`] stops spinning: 2, so that one unlucky wait (an
/// interrupt, a page fault on the peer's side) does not give up spinning, but a peer that
/// shares this core costs two spins at most.
pub const AUTO_MISSES_TO_BLOCK: u32 = 2;

/// Longest sleep that counts as cheap: 20 µs. Handing the core to a peer that shares it and
/// getting it back took 5–10 µs on a 2-core KVM guest, where a wake-up across CPUs took 30 µs
/// to several hundred; on hardware where that wake-up is cheap too, sleeping is then right.
pub const AUTO_CHEAP_SLEEP: Duration = Duration::from_micros(20);

/// A yield that took longer than this ran another task first: 3 µs (the system call alone
/// takes well under one).
pub const AUTO_YIELD_RAN_ANOTHER: Duration = Duration::from_micros(3);

/// Dear sleeps in a row after which a sleeping connection spins again: 2.
pub const AUTO_DEAR_SLEEPS_TO_SPIN: u32 = 2;

/// Most dear sleeps in a row that a sleeping connection waits for before it spins again: 16,
/// so that two sides asleep on two CPUs, each waking the other, pay at most 16 such round
/// trips before one of them spins.
pub const AUTO_MAX_DEAR_SLEEPS_TO_SPIN: u32 = 16;

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
    /// How long a spinning wait spins: [`DEFAULT_SPIN_BUDGET`], doubled by dear sleeps up to
    /// [`AUTO_MAX_SPIN_BUDGET`] and halved back by quick hits.
    spin_budget: Duration,
    misses: u32,
    dear_sleeps: u32,
    /// Dear sleeps in a row that switch back to spinning (see the module documentation).
    dear_sleeps_to_spin: u32,
    /// Whether a spin has hit since spinning last resumed.
    hit_since_resumed: bool,
    probe_interval: u32,
    until_probe: u32,
    /// Running average (1/8 weight to the newest) of how long the waits that slept spent
    /// asleep; zero until one has.
    slept_average: Duration,
    /// Whether this side and its peer may run on one CPU only, the same one: no wait spins.
    confined: bool,
    /// Whether spinning was resumed by dear sleeps and the caller has not yet looked where
    /// the peer runs ([`AutoWait::wants_peer_check`]).
    unconfirmed: bool,
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
    /// Waits whose spin ran out and whose yield ran another task first.
    pub contended: u64,
    /// Spins not started — a resumption by dear sleeps, or a probe — because the peer last
    /// ran on this side's CPU.
    pub kept_asleep: u64,
}

/// What one wait saw, for [`AutoWait::record`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitSeen {
    /// The spin budget [`AutoWait::budget`] gave it (zero: it slept at once).
    pub budget: Duration,
    /// From its first empty poll to its data.
    pub waited: Duration,
    /// Whether it slept in the kernel.
    pub slept: bool,
    /// Whether its spin ran out and yielding the CPU then ran another task first (the core is
    /// wanted: by the peer itself when the two share it, or by other work).
    pub contended: bool,
    /// Whether, after a dear sleep, more tasks were runnable than this side has CPUs: the
    /// peer was slow because other work held the CPUs, not because its wake-up was dear, and
    /// a longer spin would take a CPU from that work.
    pub crowded: bool,
}

impl Default for AutoWait {
    fn default() -> Self {
        AutoWait {
            spinning: true,
            spin_budget: DEFAULT_SPIN_BUDGET,
            misses: 0,
            dear_sleeps: 0,
            dear_sleeps_to_spin: AUTO_DEAR_SLEEPS_TO_SPIN,
            hit_since_resumed: true,
            probe_interval: AUTO_FIRST_PROBE,
            until_probe: AUTO_FIRST_PROBE,
            slept_average: Duration::ZERO,
            confined: false,
            unconfirmed: false,
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
        if self.confined {
            return Duration::ZERO;
        }
        if self.spinning {
            return self.spin_budget;
        }
        if self.until_probe == 0 {
            return self.probe_budget();
        }
        self.until_probe -= 1;
        Duration::ZERO
    }

    /// Tells the learner whether this side and its peer may each run on one CPU only, and the
    /// same one ([`super::placement::Confinement`]). While they are, no wait spins — no probe,
    /// and no dear sleep brings spinning back — since the peer can run only once this side
    /// stops; what was learned before is kept for when they are not.
    pub fn set_confined(&mut self, confined: bool) {
        self.confined = confined;
    }

    /// How long the next probe may spin: the running average of this side's sleeps, within
    /// [`AUTO_MIN_PROBE_BUDGET`] and [`AUTO_MAX_PROBE_BUDGET`].
    pub fn probe_budget(&self) -> Duration {
        self.slept_average.clamp(AUTO_MIN_PROBE_BUDGET, AUTO_MAX_PROBE_BUDGET)
    }

    /// Whether [`AutoWait::record`] would use `seen.crowded`: a spinning wait whose spin
    /// harmed no one and was followed by a dear sleep, which lengthens the spin unless the
    /// machine is crowded. The caller asks the machine only then.
    pub fn asks_whether_crowded(&self, seen: &WaitSeen) -> bool {
        let asleep = seen.waited.saturating_sub(seen.budget);
        self.spinning
            && seen.slept
            && !seen.contended
            && !seen.budget.is_zero()
            && asleep > AUTO_CHEAP_SLEEP
    }

    /// Learns from one wait (see the module documentation).
    pub fn record(&mut self, seen: WaitSeen) {
        let WaitSeen { budget, waited, slept, contended, crowded } = seen;
        // The time asleep: a wait that spun first slept only after its budget.
        let asleep = if slept { waited.saturating_sub(budget) } else { Duration::ZERO };
        if slept {
            self.slept_average = match self.slept_average {
                Duration::ZERO => asleep,
                average => (average * 7 + asleep) / 8,
            };
        }
        let dear_sleep = slept && asleep > AUTO_CHEAP_SLEEP;
        self.counts.contended += u64::from(contended);
        if budget.is_zero() {
            self.counts.slept_at_once += 1;
            if self.confined {
                return;
            }
            if !dear_sleep {
                self.dear_sleeps = 0;
                return;
            }
            self.dear_sleeps += 1;
            if self.dear_sleeps >= self.dear_sleeps_to_spin {
                self.start_spinning();
                self.unconfirmed = true;
            }
            return;
        }
        let hit = !slept && !contended && waited <= budget;
        self.counts.spun += 1;
        self.counts.hits += u64::from(hit);
        if hit {
            self.hit_since_resumed = true;
            self.dear_sleeps_to_spin = AUTO_DEAR_SLEEPS_TO_SPIN;
        }
        self.counts.probes += u64::from(!self.spinning);
        // Spinning was right: it paid, or it harmed no one and sleeping was dear.
        let spinning_was_right = hit || (dear_sleep && !contended);
        if self.spinning {
            if hit && waited * 4 < self.spin_budget {
                self.spin_budget = (self.spin_budget / 2).max(DEFAULT_SPIN_BUDGET);
            }
            // A dear sleep after a spin that harmed no one, no longer than twice the longest
            // spin (the peer's wake-up, then this side's own): a longer spin would have
            // caught the peer, so spin longer next time. A peer that takes longer than that
            // is merely slow, and sleeping for it is right.
            let spin_longer =
                spinning_was_right && !hit && !crowded && asleep <= 2 * AUTO_MAX_SPIN_BUDGET;
            if crowded {
                self.spin_budget = DEFAULT_SPIN_BUDGET;
            }
            if spin_longer && self.spin_budget < AUTO_MAX_SPIN_BUDGET {
                self.spin_budget = (self.spin_budget * 2).min(AUTO_MAX_SPIN_BUDGET);
                self.misses = 0;
                return;
            }
            if spinning_was_right && !spin_longer {
                self.misses = 0;
                return;
            }
            self.misses += 1;
            if self.misses >= AUTO_MISSES_TO_BLOCK {
                if !self.hit_since_resumed {
                    self.dear_sleeps_to_spin =
                        (self.dear_sleeps_to_spin * 2).min(AUTO_MAX_DEAR_SLEEPS_TO_SPIN);
                }
                self.counts.stopped_spinning += 1;
                self.spinning = false;
                self.misses = 0;
                self.dear_sleeps = 0;
                self.until_probe = self.probe_interval;
            }
        } else if spinning_was_right {
            // The probe paid: spin again, and probe a little sooner if it stops paying.
            self.start_spinning();
        } else {
            self.probe_interval = (self.probe_interval * 2).min(AUTO_MAX_PROBE);
            self.until_probe = self.probe_interval;
        }
    }

    /// Spins again from the next wait on, as after two dear sleeps (for a caller that has
    /// just moved this side to an idle CPU).
    pub fn resume_spinning(&mut self) {
        if !self.spinning {
            self.start_spinning();
        }
    }

    /// Whether the next wait would spin on the strength of dear sleeps or a due probe alone,
    /// so that the caller should first look where the peer last ran, and say what it saw:
    /// [`AutoWait::peer_shares_core`] or [`AutoWait::peer_elsewhere`].
    pub fn wants_peer_check(&self) -> bool {
        !self.confined
            && ((self.spinning && self.unconfirmed) || (!self.spinning && self.until_probe == 0))
    }

    /// The peer last ran on this side's CPU: a spin would only keep it from running. Spinning
    /// resumed by dear sleeps stops again (and takes twice as many next time, as after a
    /// resumption that missed); a due probe is put off (twice as far).
    pub fn peer_shares_core(&mut self) {
        self.counts.kept_asleep += 1;
        if self.spinning {
            self.spinning = false;
            self.unconfirmed = false;
            self.dear_sleeps_to_spin =
                (self.dear_sleeps_to_spin * 2).min(AUTO_MAX_DEAR_SLEEPS_TO_SPIN);
            self.dear_sleeps = 0;
            self.misses = 0;
            self.until_probe = self.probe_interval;
        } else {
            self.probe_interval = (self.probe_interval * 2).min(AUTO_MAX_PROBE);
            self.until_probe = self.probe_interval;
        }
    }

    /// The peer last ran on another CPU, or where it ran is unknown: spin as planned.
    pub fn peer_elsewhere(&mut self) {
        self.unconfirmed = false;
    }

    fn start_spinning(&mut self) {
        self.spinning = true;
        self.unconfirmed = false;
        self.spin_budget = DEFAULT_SPIN_BUDGET;
        self.hit_since_resumed = false;
        self.misses = 0;
        self.dear_sleeps = 0;
        self.probe_interval = (self.probe_interval / 2).max(AUTO_FIRST_PROBE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    /// Where the peer runs, as a scripted partner: what one wait sees, given how long it may
    /// spin before it yields and sleeps.
    #[derive(Clone, Copy)]
    enum Partner {
        /// On another CPU, answering `after` the wait starts whatever the waiter does.
        Elsewhere { after: Duration },
        /// On this CPU: it runs only once the waiter yields or sleeps, then answers `service`
        /// later.
        SameCore { service: Duration },
        /// On another CPU but asleep itself: it answers `wake` after the wait starts (its own
        /// wake-up), and a waiter that sleeps too pays a wake-up of its own on top.
        Asleep { wake: Duration },
    }

    impl Partner {
        fn wait(self, budget: Duration) -> WaitSeen {
            let seen = |waited, slept, contended| WaitSeen {
                budget,
                waited,
                slept,
                contended,
                crowded: false,
            };
            match self {
                Partner::Elsewhere { after } if after <= budget => seen(after, false, false),
                Partner::Elsewhere { after } => seen(after, true, false),
                Partner::SameCore { service } if budget.is_zero() => seen(service, true, false),
                // The yield at the end of the spin runs the peer, whose answer is then there.
                Partner::SameCore { service } => seen(budget + service, false, true),
                Partner::Asleep { wake } if wake <= budget => seen(wake, false, false),
                Partner::Asleep { wake } => seen(budget.max(wake) + wake, true, false),
            }
        }
    }

    /// Runs `waits` waits against `partner`; returns the total time spent waiting and how many
    /// waits spun.
    fn run(auto: &mut AutoWait, partner: Partner, waits: u32) -> (Duration, u32) {
        let (mut total, mut spun) = (Duration::ZERO, 0);
        for _ in 0..waits {
            let seen = partner.wait(auto.budget());
            auto.record(seen);
            total += seen.waited;
            spun += u32::from(!seen.budget.is_zero());
        }
        (total, spun)
    }

    fn slept_at_once(waited: Duration) -> WaitSeen {
        WaitSeen { budget: Duration::ZERO, waited, slept: true, ..WaitSeen::default() }
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
        assert_eq!(auto.counts().contended, u64::from(AUTO_MISSES_TO_BLOCK));
        // From then on only the probes spin, fewer and fewer of them, each as short as a sleep.
        let (total, spun) = run(&mut auto, partner, 100_000);
        assert!(!auto.is_spinning());
        assert!(spun <= 100_000 / AUTO_MAX_PROBE + 16, "{spun} probes in 100000 waits");
        let sleeping_only = 100_000 * 3 * US;
        assert!(total < sleeping_only + sleeping_only / 10, "{total:?} against {sleeping_only:?}");
    }

    #[test]
    fn a_yield_that_ran_another_task_is_a_miss_even_when_the_data_then_came() {
        let mut auto = AutoWait::default();
        let seen = WaitSeen {
            budget: DEFAULT_SPIN_BUDGET,
            waited: 53 * US,
            slept: false,
            contended: true,
            crowded: false,
        };
        auto.record(seen);
        auto.record(seen);
        assert!(!auto.is_spinning());
        assert_eq!(auto.counts().hits, 0);
    }

    #[test]
    fn waits_that_overran_their_spin_are_misses() {
        // Caught without sleeping, but 4 ms into a 50 µs spin: the spinner was descheduled.
        let mut auto = AutoWait::default();
        for _ in 0..AUTO_MISSES_TO_BLOCK {
            assert!(auto.is_spinning());
            let budget = auto.budget();
            auto.record(WaitSeen { budget, waited: 4000 * US, ..WaitSeen::default() });
        }
        assert!(!auto.is_spinning());
    }

    #[test]
    fn one_miss_between_hits_does_not_stop_the_spinning() {
        let mut auto = AutoWait::default();
        for _ in 0..100 {
            run(&mut auto, Partner::Elsewhere { after: 2 * US }, 1);
            run(&mut auto, Partner::SameCore { service: 3 * US }, 1);
        }
        assert!(auto.is_spinning());
    }

    #[test]
    fn a_peer_asleep_on_another_cpu_keeps_this_side_spinning() {
        // Its answers come after its own wake-up, later than the spin: sleeping too would only
        // add this side's wake-up, so the spin, which harms no one, stays.
        let mut auto = AutoWait::default();
        let (_, spun) = run(&mut auto, Partner::Asleep { wake: 120 * US }, 1_000);
        assert!(auto.is_spinning());
        assert_eq!(spun, 1_000);
    }

    #[test]
    fn a_side_whose_spin_is_shorter_than_the_peers_wake_up_spins_longer_until_it_catches_it() {
        // Both sides spin 50 µs and each wakes the other, asleep on another CPU, for 300 µs:
        // doubling the spin after each dear sleep catches the peer within three waits.
        let mut auto = AutoWait::default();
        let partner = Partner::Asleep { wake: 300 * US };
        let (_, spun) = run(&mut auto, partner, 1_000);
        assert!(auto.is_spinning());
        assert_eq!(spun, 1_000);
        assert!(auto.budget() >= 300 * US, "{:?}", auto.budget());
        assert!(auto.counts().hits >= 996, "{:?}", auto.counts());
    }

    #[test]
    fn only_a_spinning_wait_followed_by_a_dear_sleep_asks_whether_the_machine_is_crowded() {
        let mut auto = AutoWait::default();
        let budget = auto.budget();
        let dear = Partner::Asleep { wake: 300 * US }.wait(budget);
        assert!(auto.asks_whether_crowded(&dear));
        let hit = Partner::Elsewhere { after: 2 * US }.wait(budget);
        assert!(!auto.asks_whether_crowded(&hit));
        let contended = Partner::SameCore { service: 3 * US }.wait(budget);
        assert!(!auto.asks_whether_crowded(&contended));
        // A sleeping connection's waits (probes included) never lengthen the spin.
        run(&mut auto, Partner::SameCore { service: 3 * US }, 10);
        assert!(!auto.is_spinning());
        assert!(!auto.asks_whether_crowded(&dear));
    }

    #[test]
    fn a_peer_slowed_by_other_work_does_not_lengthen_the_spin() {
        // The same dear sleeps, but with more tasks runnable than CPUs: the peer waited for
        // a CPU, and a longer spin would only take one from the work that holds it.
        let mut auto = AutoWait::default();
        for _ in 0..10 {
            let budget = auto.budget();
            let seen = Partner::Asleep { wake: 300 * US }.wait(budget);
            auto.record(WaitSeen { crowded: seen.slept, ..seen });
        }
        assert_eq!(auto.budget(), DEFAULT_SPIN_BUDGET);
    }

    #[test]
    fn quick_answers_bring_a_long_spin_back_to_the_default() {
        let mut auto = AutoWait::default();
        run(&mut auto, Partner::Asleep { wake: 300 * US }, 10);
        assert!(auto.budget() > DEFAULT_SPIN_BUDGET);
        run(&mut auto, Partner::Elsewhere { after: 2 * US }, 4);
        assert_eq!(auto.budget(), DEFAULT_SPIN_BUDGET);
    }

    #[test]
    fn a_peer_slower_than_the_longest_spin_does_not_lengthen_it() {
        // A handler that takes 2 ms: no spin can catch it, and spinning 500 µs a call would
        // burn a quarter of a core for nothing: the spin stays at its default.
        let mut auto = AutoWait::default();
        let partner = Partner::Asleep { wake: 2_000 * US };
        let mut spinning_time = Duration::ZERO;
        for _ in 0..1_000 {
            let budget = auto.budget();
            spinning_time += budget;
            auto.record(partner.wait(budget));
        }
        assert_eq!(auto.budget(), DEFAULT_SPIN_BUDGET);
        assert!(spinning_time <= 1_000 * DEFAULT_SPIN_BUDGET, "spun {spinning_time:?}");
    }

    #[test]
    fn two_dear_sleeps_in_a_row_bring_the_spinning_back() {
        let mut auto = AutoWait::default();
        run(&mut auto, Partner::SameCore { service: 3 * US }, 100);
        assert!(!auto.is_spinning());
        // The peer moved to another CPU and sleeps there: each sleep now costs two wake-ups.
        auto.record(slept_at_once(300 * US));
        assert!(!auto.is_spinning());
        auto.record(slept_at_once(300 * US));
        assert!(auto.is_spinning());
        // A cheap sleep between two dear ones restarts the count.
        run(&mut auto, Partner::SameCore { service: 3 * US }, 100);
        let budget = auto.budget();
        assert!(budget.is_zero());
        for waited in [300 * US, 3 * US, 300 * US] {
            auto.record(slept_at_once(waited));
        }
        assert!(!auto.is_spinning());
    }

    #[test]
    fn spinning_resumed_by_dear_sleeps_that_misses_again_takes_twice_as_many_next_time() {
        // Beside other work: sleeps are dear (the waker's core busy), and when a spin runs
        // out, its yield runs another task and the data still does not come.
        let mut auto = AutoWait::default();
        let crowded = |auto: &mut AutoWait| {
            let budget = auto.budget();
            auto.record(WaitSeen {
                budget,
                waited: budget + 30 * US,
                slept: true,
                contended: true,
                crowded: false,
            });
        };
        let contended = |auto: &mut AutoWait| {
            for _ in 0..AUTO_MISSES_TO_BLOCK {
                crowded(auto);
            }
        };
        contended(&mut auto);
        for round in 1..=4u32 {
            assert!(!auto.is_spinning());
            let needed = AUTO_DEAR_SLEEPS_TO_SPIN << (round - 1);
            for _ in 0..needed {
                assert!(!auto.is_spinning());
                auto.record(slept_at_once(300 * US));
            }
            assert!(auto.is_spinning(), "round {round}: {needed} dear sleeps");
            contended(&mut auto);
        }
        // A hit brings it back to two.
        run(&mut auto, Partner::Elsewhere { after: 2 * US }, AUTO_MAX_PROBE + 1);
        assert!(auto.is_spinning());
        contended(&mut auto);
        for _ in 0..AUTO_DEAR_SLEEPS_TO_SPIN {
            auto.record(slept_at_once(300 * US));
        }
        assert!(auto.is_spinning());
        // However often it misses, the dear sleeps it waits for stop at the most.
        for _ in 0..10 {
            contended(&mut auto);
            for _ in 0..AUTO_MAX_DEAR_SLEEPS_TO_SPIN {
                auto.record(slept_at_once(300 * US));
            }
            assert!(auto.is_spinning());
        }
    }

    #[test]
    fn a_peer_that_moves_to_another_cpu_and_spins_is_found_by_a_probe() {
        let mut auto = AutoWait::default();
        run(&mut auto, Partner::SameCore { service: 3 * US }, 5_000);
        assert!(!auto.is_spinning());
        // The peer moves away and answers at once; this side's sleeps stay cheap (a fast
        // wake-up), so only a probe can see that spinning pays again.
        let partner = Partner::Elsewhere { after: 2 * US };
        let switched = (0..=AUTO_MAX_PROBE).any(|_| {
            run(&mut auto, partner, 1);
            auto.is_spinning()
        });
        assert!(switched);
        let (total, spun) = run(&mut auto, partner, 1_000);
        assert_eq!((total, spun), (2_000 * US, 1_000));
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
        // Sleeps of 15 µs (cheap, so the connection keeps sleeping): probes as long.
        for _ in 0..100 {
            auto.record(slept_at_once(15 * US));
        }
        assert!(auto.probe_budget() > 14 * US && auto.probe_budget() <= 15 * US);
        assert!(!auto.is_spinning());
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
    fn a_cheap_sleep_at_once_teaches_nothing_about_spinning() {
        let mut auto = AutoWait::default();
        run(&mut auto, Partner::SameCore { service: 3 * US }, 2);
        let before = auto.clone();
        auto.record(slept_at_once(3 * US));
        assert_eq!(auto.counts.slept_at_once, before.counts.slept_at_once + 1);
        // Only the counts and the average of sleeps moved.
        auto.counts = before.counts;
        auto.slept_average = before.slept_average;
        assert_eq!(auto, before);
    }

    /// Like `run`, for a side that looks where the peer runs whenever it asks to:
    /// `shares_core` is what it sees.
    fn run_looking(auto: &mut AutoWait, partner: Partner, shares_core: bool, waits: u32) -> u32 {
        let mut spun = 0;
        for _ in 0..waits {
            if auto.wants_peer_check() {
                if shares_core { auto.peer_shares_core() } else { auto.peer_elsewhere() }
            }
            let seen = partner.wait(auto.budget());
            auto.record(seen);
            spun += u32::from(!seen.budget.is_zero());
        }
        spun
    }

    #[test]
    fn dear_sleeps_beside_a_peer_on_this_core_do_not_bring_the_spinning_back() {
        // The peer shares this core and does 200 us of work between calls (other work holds
        // the other cores): every sleep is dear, which alone would resume spinning again
        // and again; a look at where the peer ran keeps this side asleep.
        let busy_peer = Partner::SameCore { service: 200 * US };
        let mut blind = AutoWait::default();
        let (_, spun_blind) = run(&mut blind, busy_peer, 2000);
        let mut looking = AutoWait::default();
        let spun = run_looking(&mut looking, busy_peer, true, 2000);
        assert_eq!(spun, 2, "only the first two waits spin: {:?}", looking.counts);
        assert!(spun_blind > 20, "without looking it resumes: {spun_blind}");
        assert!(looking.counts.kept_asleep > 0);
        // A peer asleep on another CPU is still spun for, as without looking.
        let asleep = Partner::Asleep { wake: 30 * US };
        let mut elsewhere = AutoWait::default();
        run_looking(&mut elsewhere, busy_peer, true, 50);
        let spun = run_looking(&mut elsewhere, asleep, false, 200);
        assert!(spun > 150, "{spun} of 200 waits spun: {:?}", elsewhere.counts);
    }

    #[test]
    fn a_side_confined_with_its_peer_to_one_cpu_never_spins() {
        let mut auto = AutoWait::default();
        auto.set_confined(true);
        // From the first wait on: no spin, and no probe however many waits pass.
        let (_, spun) = run(&mut auto, Partner::SameCore { service: 3 * US }, 5000);
        assert_eq!(spun, 0);
        // A peer whose work makes every sleep dear does not bring spinning back either.
        let (_, spun) = run(&mut auto, Partner::SameCore { service: 200 * US }, 100);
        assert_eq!(spun, 0);
        assert_eq!(auto.counts.slept_at_once, 5100);
        assert_eq!(auto.counts.spun, 0);
        // Freed (a mask changed), the side learns again from where it was: it still spins.
        auto.set_confined(false);
        let (_, spun) = run(&mut auto, Partner::Elsewhere { after: 2 * US }, 10);
        assert_eq!(spun, 10);
    }
}
