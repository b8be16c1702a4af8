//! One wait, poll by poll: [`Waits::ready`] spins, yields and sleeps as the strategy says, and
//! [`Waits::waited`] ends the wait, telling [`AutoWaiter`] what it saw.

use std::time::{Duration, Instant};

use super::auto::{AUTO_CHEAP_SLEEP, AutoWaiter, WaitSeen};
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
pub(crate) struct Waits {
    pub(crate) strategy: Wait,
    pub(crate) auto: AutoWaiter,
}

/// Where a wait stands: when its first poll found nothing, how long it may spin before it
/// sleeps (`None`: until its deadline), whether it yields, what it saw so far, how many polls
/// since the clock was read and when it was last read, how many yields in its spin so far.
#[derive(Debug, Default)]
pub(crate) struct Waiting {
    started: Option<Instant>,
    clock_read: Option<Instant>,
    budget: Option<Duration>,
    yields: bool,
    seen: WaitSeen,
    polls: u32,
    spin_yields: u32,
}

impl Waits {
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
        // While spinning on a link whose polls are cheap, the clock (tens of ns) is read only
        // every few polls, so it does not delay noticing the data.
        spin.polls += 1;
        if spin.started.is_some()
            && spin.budget != Some(Duration::ZERO)
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
                spin.budget = match self.strategy {
                    Wait::Block => Some(Duration::ZERO),
                    Wait::Spin => None,
                    Wait::Hybrid { spin } => Some(spin),
                    Wait::Auto => {
                        let plan = self.auto.before_wait(now);
                        spin.yields = plan.yields;
                        Some(plan.budget)
                    }
                };
                *spin.started.insert(now)
            }
        };
        let at = deadline.instant();
        // The last stretch before a deadline is spun in every strategy, so that the deadline
        // is kept to within a poll rather than a timer's slack and a wake-up.
        let near_deadline = at.is_some_and(|at| at.duration_since(now) <= DEADLINE_SPIN);
        let spun = now.duration_since(started);
        // A spin ends at its budget, or at a yield that ran another task.
        let keep_spinning =
            near_deadline || (!spin.seen.yielded && spin.budget.is_none_or(|budget| spun < budget));
        if keep_spinning {
            if spin.yields
                && !near_deadline
                && spun >= AUTO_SPIN_YIELD_EVERY * (spin.spin_yields + 1)
            {
                // Every so often in a long spin, a look whether another task wants this core:
                // one that does (the peer on this core, another process) ends the spin, which
                // would hold the core from it, as a spin whose final yield ran another task.
                spin.spin_yields += 1;
                let (ran_another, dear) = yield_cpu();
                if ran_another {
                    (spin.seen.yielded, spin.seen.contended, spin.seen.dear_yield) =
                        (true, true, dear);
                }
            } else {
                std::hint::spin_loop();
            }
            return Ok(());
        }
        if spin.yields && !spin.seen.yielded {
            // The spin ran out, or this wait does not spin: hand the CPU to whoever wants it,
            // once, and see whether someone did (the peer, when the two share this core: it
            // then usually answers before the yield returns), then poll again.
            spin.seen.yielded = true;
            (spin.seen.contended, spin.seen.dear_yield) = yield_cpu();
            return Ok(());
        }
        if at.is_some() {
            crate::sys::tighten_timer_slack();
        }
        spin.seen.slept = true;
        link.sleep(direction, at.map(|at| at - DEADLINE_SPIN))
    }

    /// Called when a read or write made progress: ends the wait that preceded it, if any
    /// (what [`Wait::Auto`] learns from), and readies `spin` for the next one.
    #[inline]
    pub(crate) fn waited(&mut self, spin: &mut Waiting) {
        if let Some(started) = spin.started {
            if self.strategy == Wait::Auto {
                // A wait that only spun ends at the clock read of its last poll but one, at
                // most a poll before its data: close enough for what the learner asks of it,
                // and one clock read fewer per wait where both sides spin. A wait that yielded
                // or slept is timed to its end: its length past the spin decides what it was.
                let now = match spin.clock_read {
                    Some(read) if !spin.seen.slept && !spin.seen.yielded => read,
                    _ => Instant::now(),
                };
                let (budget, waited) = (spin.budget.unwrap_or_default(), now - started);
                self.auto.after_wait(&WaitSeen { budget, waited, ..spin.seen }, now);
            }
            *spin = Waiting::default();
        }
    }
}

/// Yields the CPU once (`sched_yield`): whether that ran another task first (it took longer
/// than [`AUTO_YIELD_RAN_ANOTHER`]), and whether it took longer than a cheap sleep
/// ([`AUTO_CHEAP_SLEEP`]: the core went to another task than the peer).
fn yield_cpu() -> (bool, bool) {
    let before = Instant::now();
    std::thread::yield_now(); // sched_yield(2) on Linux
    let took = before.elapsed();
    (took > AUTO_YIELD_RAN_ANOTHER, took > AUTO_CHEAP_SLEEP)
}
