//! Where a waiting thread and its peer run: when their masks are read next, and a move to an
//! idle CPU after a row of *hand-overs* (docs/WAITING.md states the rule and its numbers).

use std::time::{Duration, Instant};

use super::backoff::Backoff;

mod cpus;
#[cfg(test)]
pub(crate) mod fake;
mod os;
pub use cpus::Cpus;
pub(crate) use os::Os;

/// Hand-overs in a row to a look, and time to the next: doubled by each look that finds nothing.
pub(crate) const HAND_OVERS_TO_LOOK: Backoff<u32> = Backoff::new(4, 1024);
pub(crate) const CHECK_INTERVAL: Backoff<Duration> =
    Backoff::new(Duration::from_millis(1), Duration::from_millis(16));

/// What a side watches of where it and its peer run, and when it looks again.
#[derive(Debug)]
pub(crate) struct PlacementWatch {
    /// When the two masks are read next.
    pub(crate) next_masks: Instant,
    /// Hand-overs in a row so far, and how many the next look waits for.
    hand_overs: u32,
    hand_overs_to_look: Backoff<u32>,
    /// When the next look may come (`None`: at the next row), how far a fruitless one puts it off.
    next_check: Option<Instant>,
    interval: Backoff<Duration>,
    /// The allowed CPUs, the CPU times of the last look and of this one: kept, not allocated.
    allowed: Vec<usize>,
    looked: Vec<(usize, u64, u64)>,
    looking: Vec<(usize, u64, u64)>,
    /// Moves made so far.
    pub(crate) moves: u64,
}

impl PlacementWatch {
    /// Nothing looked at yet; the masks first read at `next_masks`.
    pub(crate) fn new(next_masks: Instant) -> PlacementWatch {
        PlacementWatch {
            next_masks,
            hand_overs: 0,
            hand_overs_to_look: HAND_OVERS_TO_LOOK,
            next_check: None,
            interval: CHECK_INTERVAL,
            allowed: Vec::with_capacity(8),
            looked: Vec::with_capacity(8),
            looking: Vec::with_capacity(8),
            moves: 0,
        }
    }

    /// A wait that gave up the core ended at `now`, a `hand_over` if the core came back within a
    /// cheap sleep: whether this thread just moved to another CPU.
    pub(crate) fn after_giving_up_the_core(
        &mut self,
        cpus: &mut impl Cpus,
        now: Instant,
        hand_over: bool,
    ) -> bool {
        self.hand_overs = if hand_over { self.hand_overs.saturating_add(1) } else { 0 };
        if self.hand_overs < self.hand_overs_to_look.get()
            || self.next_check.is_some_and(|at| now < at)
        {
            return false;
        }
        self.hand_overs = 0;
        let moved = self.look(cpus);
        if moved {
            self.moves += 1;
            self.interval.reset();
            self.hand_overs_to_look.reset();
            self.next_check = None;
        } else {
            self.next_check = Some(now + self.interval.get());
            self.interval.double();
            self.hand_overs_to_look.double();
        }
        moved
    }

    /// One look: whether it moved this thread to the idlest other CPU, as it does when the peer
    /// last ran on this one and fewer other tasks are runnable than there are other CPUs.
    fn look(&mut self, cpus: &mut impl Cpus) -> bool {
        self.allowed.clear();
        self.allowed.extend(cpus.allowed().into_iter().flatten());
        if self.allowed.len() < 2 {
            return false;
        }
        let (Some(here), Some((peer, peer_runnable))) = (cpus.current(), cpus.peer()) else {
            return false;
        };
        // Other than the two on this core, each runnable task may hold another CPU.
        let others = |n: usize| n.checked_sub(1 + usize::from(peer_runnable));
        let spare = |others: usize| others + 1 < self.allowed.len();
        peer == here
            && cpus.runnable().and_then(others).is_some_and(spare)
            && self.idlest_other(cpus, here).is_some_and(|to| cpus.move_to(to))
    }

    /// Of the allowed CPUs other than `here`, the one idle longest since the last look (any of
    /// them at the first look, when there is nothing to compare with).
    fn idlest_other(&mut self, cpus: &mut impl Cpus, here: usize) -> Option<usize> {
        cpus.times(&mut self.looking);
        let idle =
            |times: &[(usize, u64, u64)], cpu| times.iter().find(|t| t.0 == cpu).map(|t| t.1);
        let idle_since_last_look =
            |cpu| idle(&self.looking, cpu)?.checked_sub(idle(&self.looked, cpu).unwrap_or(0));
        let to = (self.allowed.iter().copied())
            .filter(|&cpu| cpu != here)
            .max_by_key(|&cpu| idle_since_last_look(cpu).unwrap_or(0));
        std::mem::swap(&mut self.looked, &mut self.looking);
        to
    }
}

#[cfg(test)]
mod tests;
