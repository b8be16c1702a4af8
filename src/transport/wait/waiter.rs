//! How a transport waits, whatever its strategy (block included): its [`Waiter`] runs one wait
//! ([`Waiting`]) poll by poll — [`Waiter::ready`] spins, yields and sleeps as the strategy
//! says, and [`Waiter::waited`] ends the wait, telling [`AutoWaiter`] what it saw.

use std::time::{Duration, Instant};

use super::ablation::{Mechanism, off};
use super::auto::{AUTO_CHEAP_SLEEP, AutoWaiter, Outcome, WaitSeen, Yielded};
use super::strategy::Wait;
use crate::error::Result;
use crate::transport::deadline::{DEADLINE_SPIN, Deadline};
use crate::transport::link::{Direction, Link};

/// How often a spin that yields does so, to see whether another task wants the CPU.
pub(crate) const AUTO_SPIN_YIELD_EVERY: Duration = Duration::from_micros(20);
/// A yield that took longer than this ran another task first.
pub(crate) const AUTO_YIELD_RAN_ANOTHER: Duration = Duration::from_micros(3);

/// How one transport waits: its strategy, and what [`Wait::Auto`] learned of the connection.
#[derive(Debug)]
pub(crate) struct Waiter {
    pub(crate) strategy: Wait,
    pub(crate) auto: AutoWaiter,
}

/// Where a wait stands: when its first poll found nothing and the clock was last read, whether
/// it yields, its spin budget (`Duration::MAX`: to its deadline), what its yield did (the one
/// that ended its spin or the one after it) and whether it slept, polls and yields in the spin.
#[derive(Debug, Default)]
pub(crate) struct Waiting {
    started: Option<Instant>,
    clock_read: Option<Instant>,
    yields: bool,
    budget: Duration,
    yielded: Option<Yielded>,
    slept: bool,
    polls: u32,
    spin_yields: u32,
}

impl Waiter {
    /// Called when `link` could not make progress in `direction`: returns when the caller
    /// should retry, or the timeout error (waiting for `waiting_for`).
    #[inline]
    pub(crate) fn ready(
        &mut self,
        link: &mut dyn Link,
        direction: Direction,
        deadline: &mut Deadline,
        spin: &mut Waiting,
        waiting_for: &'static str,
    ) -> Result<()> {
        // In a spin on a link whose polls are cheap, the clock (tens of ns) is read only every
        // few polls, so that reading it does not delay noticing the data.
        spin.polls += 1;
        if spin.started.is_some()
            && !spin.budget.is_zero()
            && spin.polls < link.spin_polls_per_clock_read()
        {
            std::hint::spin_loop();
            return Ok(());
        }
        spin.polls = 0;
        let now = Instant::now();
        spin.clock_read = Some(now);
        *deadline = deadline.armed_at(now);
        if deadline.passed(now) {
            return Err(deadline.error(waiting_for));
        }
        let started = match spin.started {
            Some(started) => started,
            None => {
                (spin.budget, spin.yields) = match self.strategy {
                    Wait::Block => (Duration::ZERO, false),
                    Wait::Spin => (Duration::MAX, false),
                    Wait::Hybrid { spin } => (spin, false),
                    Wait::Auto { .. } => self.auto.before_wait(now),
                };
                *spin.started.insert(now)
            }
        };
        let at = deadline.instant();
        // Every strategy spins the last stretch before a deadline, to keep it within a poll.
        let near_deadline = at.is_some_and(|at| at.duration_since(now) <= DEADLINE_SPIN);
        let spun = now.duration_since(started);
        // A spin ends at its budget, or at a yield that ran another task.
        let keep_spinning = near_deadline || (spin.yielded.is_none() && spun < spin.budget);
        if keep_spinning {
            if spin.yields
                && !near_deadline
                && !off(Mechanism::SpinYield)
                && spun >= AUTO_SPIN_YIELD_EVERY * (spin.spin_yields + 1)
            {
                // Now and then in a long spin: a yield that runs another task (the peer on this
                // core, other work) ends the spin, which would hold the core from it; one that
                // runs none leaves nothing seen.
                spin.spin_yields += 1;
                spin.yielded = Some(yield_cpu()).filter(|yielded| *yielded != Yielded::Idle);
            } else {
                std::hint::spin_loop();
            }
            return Ok(());
        }
        if spin.yields && spin.yielded.is_none() && !off(Mechanism::Yield) {
            // The spin ran out, or this wait does not spin: yield the CPU once (a peer on this
            // core then usually answers before the yield returns), then poll again.
            spin.yielded = Some(yield_cpu());
            return Ok(());
        }
        if at.is_some() {
            crate::sys::tighten_timer_slack();
        }
        spin.slept = true;
        link.sleep(direction, at.map(|at| at - DEADLINE_SPIN))
    }

    /// Called when a read or write made progress: ends the wait that preceded it, if any
    /// (what [`Wait::Auto`] learns from), and readies `spin` for the next one.
    #[inline]
    pub(crate) fn waited(&mut self, spin: &mut Waiting) {
        let Some(started) = spin.started else { return };
        if let Wait::Auto { move_thread } = self.strategy {
            // A wait that only spun ends at its last clock read but one (a poll before its data
            // at most, a clock read saved); one that yielded or slept, at its end.
            let now = match spin.clock_read {
                Some(read) if !spin.slept && spin.yielded.is_none() => read,
                _ => Instant::now(),
            };
            let outcome = match (spin.slept, spin.yielded) {
                (true, yielded) => Outcome::Slept(yielded),
                (false, Some(yielded)) => Outcome::Yielded(yielded),
                (false, None) => Outcome::Spun,
            };
            let seen = WaitSeen { budget: spin.budget, waited: now - started, outcome };
            self.auto.after_wait(&seen, now, move_thread);
        }
        *spin = Waiting::default();
    }
}

/// Yields the CPU once: what that did.
fn yield_cpu() -> Yielded {
    let before = Instant::now();
    std::thread::yield_now(); // sched_yield(2) on Linux
    yielded_in(before.elapsed())
}

/// What a yield that took `took` did: one longer than a few µs ran another task first, one
/// longer than a cheap sleep gave the core to another task than the peer.
pub(crate) fn yielded_in(took: Duration) -> Yielded {
    match took {
        took if took > AUTO_CHEAP_SLEEP => Yielded::Dear,
        took if took > AUTO_YIELD_RAN_ANOTHER => Yielded::Cheap,
        _ => Yielded::Idle,
    }
}
