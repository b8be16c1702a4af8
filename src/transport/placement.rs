//! Moving a waiting thread off the core it shares with its peer, when another CPU is idle.
//!
//! Two processes that exchange messages over a pipe tend to end up on one core: a pipe write
//! wakes the reader as a *synchronous* wake-up ("I am about to sleep"), so the scheduler puts
//! the reader beside the writer whenever the reader last ran there, and once the two take
//! turns on one core nothing makes it move them apart, even with the other cores idle. There
//! they hand the core to each other on every round trip — two context switches, where two
//! cores with both sides spinning pay none.
//!
//! A side that shares its core so sees it for free: its sleeps, and its yields that run
//! another task, are *hand-overs*, shorter than [`AUTO_CHEAP_SLEEP`] (the core given to the
//! peer and given back). After
//! [`HAND_OVERS_TO_LOOK`] of them in a row it looks, and moves when all of this holds:
//!
//! - the peer last ran on this thread's CPU (`/proc/PID/stat`);
//! - this thread may run on another CPU (its affinity mask);
//! - nothing else on the machine is runnable at that instant (`/proc/loadavg`, less this
//!   thread and the peer), so another CPU is idle.
//!
//! It then moves its thread to the other allowed CPU that was idle longest since its last look
//! (`/proc/stat`) — its affinity is set to that CPU and at once restored, so the user's mask
//! stays as it was and only the thread's current CPU changes — and the caller spins again
//! ([`super::AutoWait::resume_spinning`]). A look that finds nothing to do puts the next one
//! off, from [`FIRST_CHECK`] doubling up to [`MAX_CHECK`], and until twice as many hand-overs
//! in a row as it took, up to [`MAX_HAND_OVERS_TO_LOOK`]: a look costs a few microseconds
//! inside a round trip, and counting round trips as well as time keeps looks off the tail when
//! the round trips come in bursts with idle gaps between them.
//!
//! Both sides look (the client at its server, a server at its parent), and neither chases the
//! other: once one has moved, the other finds its peer elsewhere. There is no trial and no
//! move back: as long as the CPU moved to stays idle, the scheduler wakes the thread there;
//! when other work takes it, the two meet again on one core and the look finds that work
//! runnable. Beside one busy thread nothing moves (measured: the pair shares a core in 95–100 %
//! of the report's rounds, as under `block`). An earlier version looked only before a wait that
//! sleeps, judged idleness over 50 ms of the kernel's per-CPU times and put every move on trial;
//! a pair taking turns without waiting never reached it, and in the report's unpinned rows the
//! two shared a core in 15–60 % of the rounds (docs/experiments/waiting.md).
//!
//! With one CPU allowed, or without the peer's `/proc` entry (it has exited, or belongs to
//! another user), nothing moves.
//!
//! [`AUTO_CHEAP_SLEEP`]: super::wait::AUTO_CHEAP_SLEEP

use std::time::{Duration, Instant};

mod os;
mod watch;
pub use os::{Confinement, Os, crowded};
pub use watch::PeerWatch;

/// Hand-overs in a row after which a side looks whether to move: 4. One cheap sleep may be a
/// wake-up on another CPU that happened to be quick; four in a row are worth a look (which
/// then finds the peer elsewhere if they were all quick wake-ups).
pub const HAND_OVERS_TO_LOOK: u32 = 4;

/// How long a look that found nothing to do puts off the next one, at first: 1 ms, doubled by
/// every such look up to [`MAX_CHECK`].
pub const FIRST_CHECK: Duration = Duration::from_millis(1);

/// Longest time between two looks: 16 ms. A look costs a few microseconds, so one that finds
/// nothing to do (beside busy work, say) costs well under 0.1 % of the time; and a pair left
/// on one core because the other CPU was busy for a moment is parted within 16 ms.
pub const MAX_CHECK: Duration = Duration::from_millis(16);

/// Most hand-overs in a row the next look waits for: 1024, doubled from
/// [`HAND_OVERS_TO_LOOK`] by every look that finds nothing to do. With time alone, round trips
/// that come in bursts more than [`MAX_CHECK`] apart (a solver's calls between two
/// factorisations; the report's interleaved bursts) carry a look in every burst; a look
/// (reading `/proc/PID/stat` and `/proc/loadavg`, ~12 µs measured) then lands in the slowest
/// percent of the round trips. So a side looks at most once in 1024 hand-overs once its looks
/// keep finding nothing to do: under 0.1 % of its round trips. In a steady stream of round
/// trips of a few microseconds, 1024 hand-overs take less than [`MAX_CHECK`], which still
/// sets the pace.
pub const MAX_HAND_OVERS_TO_LOOK: u32 = 1024;

/// What the placement logic needs of the operating system; [`Os`] is the real one.
pub trait Cpus {
    /// The CPU this thread runs on.
    fn current(&mut self) -> Option<usize>;
    /// The CPU the peer ran on last, and whether it is runnable now, when known.
    fn peer(&mut self) -> Option<(usize, bool)>;
    /// Replaces `cpus` with the CPUs this thread may run on.
    fn allowed(&mut self, cpus: &mut Vec<usize>);
    /// Replaces `times` with `(cpu, idle, total)` for every CPU: the time it spent idle and
    /// in all, in any unit, counted since some fixed point.
    fn times(&mut self, times: &mut Vec<(usize, u64, u64)>);
    /// Tasks runnable on the machine at this instant, this thread among them.
    fn runnable(&mut self) -> Option<usize>;
    /// Moves this thread to `cpu`, leaving its affinity mask as it was. Whether it moved.
    fn move_to(&mut self, cpu: usize) -> bool;
}

/// Where this side's thread runs, and when to look again (see the module documentation).
#[derive(Debug)]
pub struct Placement<C: Cpus> {
    cpus: C,
    /// Hand-overs in a row so far.
    hand_overs: u32,
    /// Hand-overs in a row the next look waits for.
    hand_overs_to_look: u32,
    /// When the next look may run (`None`: at the next hand-over that completes a row).
    next_check: Option<Instant>,
    /// How far the next look that finds nothing to do puts off the one after it.
    interval: Duration,
    /// The allowed CPUs, and the CPU times of the last look and of this one (kept, so that a
    /// look allocates nothing).
    allowed: Vec<usize>,
    looked: Vec<(usize, u64, u64)>,
    looking: Vec<(usize, u64, u64)>,
    moves: u64,
}

impl<C: Cpus> Placement<C> {
    /// Placement over `cpus`, nothing looked at yet.
    pub fn new(cpus: C) -> Placement<C> {
        Placement {
            cpus,
            hand_overs: 0,
            hand_overs_to_look: HAND_OVERS_TO_LOOK,
            next_check: None,
            interval: FIRST_CHECK,
            allowed: Vec::with_capacity(8),
            looked: Vec::with_capacity(8),
            looking: Vec::with_capacity(8),
            moves: 0,
        }
    }

    /// Moves made so far.
    pub fn moves(&self) -> u64 {
        self.moves
    }

    /// Whether the peer last ran on the CPU this thread runs on; `None` when either is unknown.
    /// Reads what a look reads of the two (for the peer, `/proc/PID/stat`: a few
    /// microseconds), and allocates nothing.
    pub fn peer_shares_core(&mut self) -> Option<bool> {
        Some(self.cpus.current()? == self.cpus.peer()?.0)
    }

    /// A wait that gave up the core — it slept, or it yielded and another task ran — ended at
    /// `now`; `hand_over` is whether the core came back within
    /// [`super::wait::AUTO_CHEAP_SLEEP`]. Whether this thread just moved to another CPU (the
    /// caller then spins again).
    pub fn after_giving_up_the_core(&mut self, now: Instant, hand_over: bool) -> bool {
        if !hand_over {
            self.hand_overs = 0;
            return false;
        }
        self.hand_overs = self.hand_overs.saturating_add(1);
        if self.hand_overs < self.hand_overs_to_look || self.next_check.is_some_and(|at| now < at) {
            return false;
        }
        self.hand_overs = 0;
        self.cpus.allowed(&mut self.allowed);
        if self.allowed.len() < 2 {
            return self.put_off(now);
        }
        let (Some(here), Some((peer, peer_runnable))) = (self.cpus.current(), self.cpus.peer())
        else {
            return self.put_off(now);
        };
        // This core runs the two; every other runnable task may hold another CPU.
        let others =
            self.cpus.runnable().and_then(|n| n.checked_sub(1 + usize::from(peer_runnable)));
        if peer != here || others.is_none_or(|others| others + 1 >= self.allowed.len()) {
            return self.put_off(now);
        }
        let Some(to) = self.idlest_other(here) else { return self.put_off(now) };
        if !self.cpus.move_to(to) {
            return self.put_off(now);
        }
        self.moves += 1;
        self.interval = FIRST_CHECK;
        self.hand_overs_to_look = HAND_OVERS_TO_LOOK;
        self.next_check = None;
        true
    }

    /// Of the allowed CPUs other than `here`, the one idle longest since the last look (any of
    /// them at the first look, when there is nothing to compare with).
    fn idlest_other(&mut self, here: usize) -> Option<usize> {
        self.cpus.times(&mut self.looking);
        let (before, after) = (&self.looked, &self.looking);
        let idle_since_last_look = |cpu: usize| {
            let (_, idle_now, _) = after.iter().find(|t| t.0 == cpu)?;
            let idle_then = before.iter().find(|t| t.0 == cpu).map_or(0, |t| t.1);
            idle_now.checked_sub(idle_then)
        };
        let to = (self.allowed.iter().copied())
            .filter(|&cpu| cpu != here)
            .max_by_key(|&cpu| idle_since_last_look(cpu).unwrap_or(0));
        std::mem::swap(&mut self.looked, &mut self.looking);
        to
    }

    /// Puts the next look off twice as far as the last (up to [`MAX_CHECK`]); returns
    /// `false`, for [`Placement::after_giving_up_the_core`].
    fn put_off(&mut self, now: Instant) -> bool {
        self.next_check = Some(now + self.interval);
        self.interval = (self.interval * 2).min(MAX_CHECK);
        self.hand_overs_to_look = (self.hand_overs_to_look * 2).min(MAX_HAND_OVERS_TO_LOOK);
        false
    }
}

#[cfg(test)]
mod tests;
