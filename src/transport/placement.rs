//! Moving a waiting thread off the core it shares with its peer, when another core is idle.
//!
//! Two processes that exchange messages over a pipe tend to end up on one core: a pipe write
//! wakes the reader as a *synchronous* wake-up ("I am about to sleep"), so the scheduler puts
//! the reader beside the writer, and once the two take turns on one core nothing makes it
//! move them apart, even with the other cores idle. There they must sleep — [`Wait::Auto`]
//! sees the shared core and stops spinning — and every round trip pays two context switches,
//! where two cores with both sides spinning pay none.
//!
//! So a side allowed to move (the client: `Peer` allows its own side, never the server's, so
//! that the two never chase each other) that waits by sleeping checks, now and then, whether
//! it shares its core with the peer (the peer's last CPU, when its pid is known) and whether
//! another CPU it may run on was idle: at least [`IDLE_ENOUGH`] of its time between two looks
//! at the kernel's per-CPU times (`/proc/stat`) at least [`WINDOW`] apart. If so it moves its
//! thread to the idlest of them — its affinity is set to that CPU and at once restored, so the user's mask
//! stays as it was and only the thread's current CPU changes — and spins again. A *trial*
//! follows, of at least [`TRIAL_WAITS`] waits and [`TRIAL_TIME`]: if spinning stops paying
//! within it, or the thread was preempted there ([`TRIAL_PREEMPTIONS`] involuntary context
//! switches: another task wanted that CPU), the thread moves back to where it was and the
//! next check waits twice as long, from [`FIRST_CHECK`] up to [`MAX_CHECK`].
//!
//! With one CPU allowed, or without `/proc`, nothing moves. Counting the runnable tasks at
//! one instant (`/proc/loadavg`) instead was tried, and moved threads onto CPUs that a busy
//! task held: the tail of the round trip beside one busy thread grew by half.
//!
//! [`Wait::Auto`]: super::Wait::Auto

use std::time::{Duration, Instant};

mod os;
pub use os::{
    CONFINED_RECHECK, CONFINEMENT_RECHECK, Confinement, Os, PeerWatch, confined_together, crowded,
};

/// Shortest time between the two looks at the machine before a move: 50 ms, five ticks of
/// the kernel's per-CPU times (counted in hundredths of a second).
pub const WINDOW: Duration = Duration::from_millis(50);

/// Share of the time between the two looks that a CPU must have been idle to be moved to:
/// 80 % (four ticks of five).
pub const IDLE_ENOUGH: f64 = 0.8;

/// Fewest ticks of a CPU's times between the two looks for its idleness to be judged: 4.
const MIN_TICKS: u64 = 4;

/// Fewest waits after a move in which spinning must keep paying for the move to stay: 8.
pub const TRIAL_WAITS: u32 = 8;

/// Shortest trial: 10 ms, a few scheduler ticks, so that a task that wants the CPU moved to
/// has had its turn to preempt this one.
pub const TRIAL_TIME: Duration = Duration::from_millis(10);

/// Involuntary context switches during a trial that fail it: 2 (one may be a kernel thread
/// passing by).
pub const TRIAL_PREEMPTIONS: u64 = 2;

/// Time from the first sleeping wait to the first check: 1 ms (a co-located pair costs a few
/// microseconds per round trip more than a separated one, so a check that finds nothing to
/// do — a few system calls — should not run much more often than this).
pub const FIRST_CHECK: Duration = Duration::from_millis(1);

/// Longest time between two checks: 1 s.
pub const MAX_CHECK: Duration = Duration::from_secs(1);

/// What the placement logic needs of the operating system; [`Os`] is the real one.
pub trait Cpus {
    /// The CPU this thread runs on.
    fn current(&mut self) -> Option<usize>;
    /// The CPU the peer ran on last, when known.
    fn peer(&mut self) -> Option<usize>;
    /// Replaces `cpus` with the CPUs this thread may run on.
    fn allowed(&mut self, cpus: &mut Vec<usize>);
    /// Replaces `times` with `(cpu, idle, total)` for every CPU: the time it spent idle and
    /// in all, in any unit, counted since some fixed point.
    fn times(&mut self, times: &mut Vec<(usize, u64, u64)>);
    /// Involuntary context switches of this thread so far.
    fn preemptions(&mut self) -> Option<u64>;
    /// Moves this thread to `cpu`, leaving its affinity mask as it was. Whether it moved.
    fn move_to(&mut self, cpu: usize) -> bool;
}

#[derive(Clone, Debug)]
enum State {
    /// Waiting for the next check; `first_look` is when the CPU times in `Placement::looked`
    /// were read.
    Settled { first_look: Option<Instant> },
    /// Moved from `from` at `at`; `waits` of the trial have passed.
    Trial { from: usize, at: Instant, waits: u32, preemptions: Option<u64> },
}

/// Where this side's thread runs, and when to look again (see the module documentation).
#[derive(Debug)]
pub struct Placement<C: Cpus> {
    cpus: C,
    state: State,
    /// When the next check may run (`None`: at the first sleeping wait, plus [`FIRST_CHECK`]).
    next_check: Option<Instant>,
    interval: Duration,
    /// The allowed CPUs of the last check, the CPU times of the first look and of the second
    /// (kept, so that a check allocates nothing).
    allowed: Vec<usize>,
    looked: Vec<(usize, u64, u64)>,
    looking: Vec<(usize, u64, u64)>,
    moves: u64,
    moves_back: u64,
}

impl<C: Cpus> Placement<C> {
    /// Placement over `cpus`, nothing checked yet.
    pub fn new(cpus: C) -> Placement<C> {
        Placement {
            cpus,
            state: State::Settled { first_look: None },
            next_check: None,
            interval: FIRST_CHECK,
            allowed: Vec::with_capacity(8),
            looked: Vec::with_capacity(8),
            looking: Vec::with_capacity(8),
            moves: 0,
            moves_back: 0,
        }
    }

    /// Moves made, and moves back after a trial that failed.
    pub fn moves(&self) -> (u64, u64) {
        (self.moves, self.moves_back)
    }

    /// Whether a move is on trial (the waits that end now decide whether it stays).
    pub fn on_trial(&self) -> bool {
        matches!(self.state, State::Trial { .. })
    }

    /// A wait that is about to sleep at once, at `now`: whether this thread just moved to
    /// another CPU (the caller then spins again).
    pub fn before_sleeping(&mut self, now: Instant) -> bool {
        let State::Settled { first_look } = self.state else { return false };
        let due = *self.next_check.get_or_insert(now + FIRST_CHECK);
        if now < due {
            return false;
        }
        let Some(here) = self.cpus.current() else { return self.back_off(now) };
        if self.cpus.peer().is_some_and(|peer| peer != here) {
            // Not sharing a core with the peer: moving cannot help.
            return self.back_off(now);
        }
        self.cpus.allowed(&mut self.allowed);
        if self.allowed.len() < 2 {
            return self.back_off(now);
        }
        if first_look.is_none() {
            self.cpus.times(&mut self.looked);
            self.state = State::Settled { first_look: Some(now) };
            self.next_check = Some(now + WINDOW);
            return false;
        }
        self.cpus.times(&mut self.looking);
        let (before, after) = (&self.looked, &self.looking);
        let idlest = (self.allowed.iter().copied())
            .filter(|&cpu| cpu != here)
            .filter_map(|cpu| {
                let (_, idle0, total0) = before.iter().find(|t| t.0 == cpu)?;
                let (_, idle1, total1) = after.iter().find(|t| t.0 == cpu)?;
                let ticks = total1.checked_sub(*total0)?;
                let idle = idle1.checked_sub(*idle0)?;
                (ticks >= MIN_TICKS).then(|| (cpu, idle as f64 / ticks as f64))
            })
            .filter(|&(_, share)| share >= IDLE_ENOUGH)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((to, _)) = idlest else { return self.back_off(now) };
        let preemptions = self.cpus.preemptions();
        if !self.cpus.move_to(to) {
            return self.back_off(now);
        }
        self.moves += 1;
        self.state = State::Trial { from: here, at: now, waits: 0, preemptions };
        true
    }

    /// A wait ended at `now`; `spinning` is whether [`super::AutoWait`] still spins after it.
    pub fn after_wait(&mut self, now: Instant, spinning: bool) {
        let State::Trial { from, at, waits, preemptions } = &mut self.state else { return };
        *waits += 1;
        let over = *waits >= TRIAL_WAITS && now.duration_since(*at) >= TRIAL_TIME;
        if spinning && !over {
            return;
        }
        let (from, before) = (*from, *preemptions);
        let preempted = match (before, self.cpus.preemptions()) {
            (Some(before), Some(after)) => after.saturating_sub(before) >= TRIAL_PREEMPTIONS,
            _ => false,
        };
        self.state = State::Settled { first_look: None };
        if spinning && !preempted {
            self.interval = FIRST_CHECK;
            self.next_check = None;
            return;
        }
        // Spinning stopped paying where this thread moved to, or another task wanted that
        // CPU: go back to where it was.
        if self.cpus.move_to(from) {
            self.moves_back += 1;
        }
        self.back_off(now);
    }

    /// Schedules the next check twice as far off (up to [`MAX_CHECK`]); returns `false`, for
    /// [`Placement::before_sleeping`].
    fn back_off(&mut self, now: Instant) -> bool {
        self.interval = (self.interval * 2).min(MAX_CHECK);
        self.next_check = Some(now + self.interval);
        self.state = State::Settled { first_look: None };
        false
    }
}

#[cfg(test)]
mod tests;
