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
//!   sleeps. A long spin yields on the way too, every [`AUTO_SPIN_YIELD_EVERY`]: one that runs
//!   another task ends the spin there, contended, instead of holding the core from that task
//!   to the end of the budget (many servers of one client on few cores). Data caught within the spin, uncontended, is a *hit*; so is a wait whose spin
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
//! - **Sleeping.** Waits do not spin: each yields the CPU once and sleeps if its data has
//!   still not come. Where the two share a core the peer then runs at once and answers before
//!   the yield returns, so neither side sleeps and no wake-up is paid. A yield that takes
//!   longer than [`AUTO_CHEAP_SLEEP`] handed the core to another task than the peer (for its
//!   whole slice): waits then sleep at once, and one in a while yields again to see — twice as
//!   far off after each such yield, up to every [`AUTO_MAX_YIELD_PROBE`]th wait, and half as
//!   far after one that paid ([`AutoWait::yields_before_sleeping`]).
//!   [`AUTO_DEAR_SLEEPS_TO_SPIN`] dear sleeps in a row switch back to spinning: the peer has
//!   moved away, or is asleep elsewhere, and each side sleeping doubles the wake-ups. Beside
//!   other work a sleep can be dear because the waker's core was busy, and spinning then
//!   misses again; so each time spinning stops with no hit since it resumed, the dear sleeps
//!   it takes to resume double, up to [`AUTO_MAX_DEAR_SLEEPS_TO_SPIN`]; a hit brings them back
//!   to two. Every so often one wait is a *probe* that spins
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
//! started under `taskset -c 0`, say, or in a container of one CPU), never spins, nor yields
//! before it sleeps (a yield could hand the only core to other work for its slice): the peer
//! can run only when this side stops ([`super::placement::Confinement`] looks at both affinity
//! masks, again every second).
//!
//! A wait that found its data at the first poll sees nothing and teaches nothing. A side
//! whose sleeps keep handing the core to its peer may move its thread to an idle CPU, where
//! it spins again ([`super::placement`]).

use super::auto_counts::AutoCounts;
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

/// How often a spin of [`Wait::Auto`] yields the CPU to see whether another task wants it:
/// every 20 µs. One that does — the peer on this core, or one of many servers on few cores —
/// ends the spin, which would otherwise hold the core from it to the end of its budget. Where
/// nothing else wants the core, the yield returns at once (well under a microsecond), and a
/// spin that catches its data within 20 µs, as on two idle cores, never yields.
pub const AUTO_SPIN_YIELD_EVERY: Duration = Duration::from_micros(20);

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

/// Longest distance between two yield probes, in waits: 16384. A yield that hands the core to
/// another task than the peer costs that task's whole time slice (a millisecond or more), so
/// where it keeps doing so it is tried again at most once in 16384 waits (under 0.2 µs per
/// wait on average); after a passing spell of other work, yielding resumes within 16384 waits
/// (a fraction of a second of round trips).
pub const AUTO_MAX_YIELD_PROBE: u32 = 16384;

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
    /// Whether a wait that does not spin yields the CPU once before it sleeps; while not, the
    /// waits until the next one that does (a yield probe), and how far apart they are.
    yields: bool,
    until_yield_probe: u32,
    yield_probe_interval: u32,
    counts: AutoCounts,
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
    /// Whether it did not spin and yielded the CPU before sleeping
    /// ([`AutoWait::yields_before_sleeping`]).
    pub yielded: bool,
    /// Whether that yield took longer than [`AUTO_CHEAP_SLEEP`]: another task than the peer
    /// held the core (or the peer ran that long).
    pub dear_yield: bool,
}

impl WaitSeen {
    /// How long the wait slept: zero unless it slept, and only the time after its spin budget
    /// when it spun first.
    pub fn asleep(&self) -> Duration {
        if self.slept { self.waited.saturating_sub(self.budget) } else { Duration::ZERO }
    }

    /// Whether it slept, and longer than [`AUTO_CHEAP_SLEEP`]: the peer was elsewhere, slow or
    /// asleep. A shorter sleep was the core handed to a peer that shares it and handed back.
    pub fn slept_dearly(&self) -> bool {
        self.slept && self.asleep() > AUTO_CHEAP_SLEEP
    }
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
            yields: true,
            until_yield_probe: 0,
            yield_probe_interval: AUTO_FIRST_PROBE,
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
        self.spinning && seen.slept_dearly() && !seen.contended && !seen.budget.is_zero()
    }

    /// Whether a wait that does not spin (its [`AutoWait::budget`] was zero) yields the CPU
    /// once before it sleeps: while yields keep handing the core to the peer and getting the
    /// data back within [`AUTO_CHEAP_SLEEP`], and for one yield probe now and then after one
    /// did not. Called once per such wait, when its poll has found nothing.
    pub fn yields_before_sleeping(&mut self) -> bool {
        // Confined to one CPU with the peer, a yield may hand the core to any other task
        // allowed there, for its whole slice, and no CPU is left to take that task elsewhere:
        // measured, a busy loop on the same CPU put the p99 at 220 times `block`'s.
        if self.confined {
            return false;
        }
        if self.yields || self.until_yield_probe == 0 {
            return true;
        }
        self.until_yield_probe -= 1;
        false
    }

    /// Learns from a wait that did not spin whether yielding first pays: a dear yield stops
    /// it and puts the next yield probe off twice as far as the last; a probe whose yield
    /// brought the data cheaply starts it again, and brings the probes back half as far. So
    /// where other work comes and goes on this core, yields that hand it away grow rarer.
    fn learn_from_yield(&mut self, seen: &WaitSeen) {
        if !seen.yielded {
            return;
        }
        if seen.dear_yield {
            self.counts.dear_yields += 1;
            self.yield_probe_interval = (self.yield_probe_interval * 2).min(AUTO_MAX_YIELD_PROBE);
            self.yields = false;
            self.until_yield_probe = self.yield_probe_interval;
        } else if !self.yields {
            if seen.slept {
                self.until_yield_probe = self.yield_probe_interval;
            } else {
                self.yields = true;
                self.yield_probe_interval = (self.yield_probe_interval / 2).max(AUTO_FIRST_PROBE);
            }
        }
    }

    /// Learns from one wait (see the module documentation).
    pub fn record(&mut self, seen: WaitSeen) {
        let WaitSeen { budget, waited, slept, contended, crowded, .. } = seen;
        let asleep = seen.asleep();
        if slept {
            self.slept_average = match self.slept_average {
                Duration::ZERO => asleep,
                average => (average * 7 + asleep) / 8,
            };
        }
        let dear_sleep = seen.slept_dearly();
        self.counts.contended += u64::from(contended);
        if budget.is_zero() {
            self.counts.slept_at_once += 1;
            self.learn_from_yield(&seen);
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
    /// [`AutoWait::saw_peer_on_this_core`] or [`AutoWait::saw_peer_elsewhere`].
    pub fn wants_peer_check(&self) -> bool {
        !self.confined
            && ((self.spinning && self.unconfirmed) || (!self.spinning && self.until_probe == 0))
    }

    /// The peer last ran on this side's CPU: a spin would only keep it from running. Spinning
    /// resumed by dear sleeps stops again (and takes twice as many next time, as after a
    /// resumption that missed); a due probe is put off (twice as far).
    pub fn saw_peer_on_this_core(&mut self) {
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
    pub fn saw_peer_elsewhere(&mut self) {
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
mod tests;
