//! [`Backoff`], a count or time that doubles and halves; [`Countdown`], waits to the next probe.

use std::ops::{Div, Mul};

/// A value between `floor` and `ceiling`, starting at `floor`, that doubles and halves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Backoff<T> {
    value: T,
    floor: T,
    ceiling: T,
}

impl<T: Copy + Ord + Mul<u32, Output = T> + Div<u32, Output = T>> Backoff<T> {
    pub(crate) const fn new(floor: T, ceiling: T) -> Backoff<T> {
        Backoff { value: floor, floor, ceiling }
    }

    pub(crate) const fn get(&self) -> T {
        self.value
    }

    /// The most it doubles up to.
    #[cfg(test)]
    pub(crate) const fn ceiling(&self) -> T {
        self.ceiling
    }

    pub(crate) fn double(&mut self) {
        self.value = (self.value * 2).min(self.ceiling);
    }

    pub(crate) fn halve(&mut self) {
        self.value = (self.value / 2).max(self.floor);
    }

    pub(crate) fn reset(&mut self) {
        self.value = self.floor;
    }
}

/// Waits left to the next probe, and how far apart probes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Countdown {
    pub(crate) left: u32,
    pub(crate) every: Backoff<u32>,
}

impl Countdown {
    /// The first probe `first` waits off; probes `first` apart, up to `most`.
    pub(crate) const fn new(first: u32, most: u32) -> Countdown {
        Countdown { left: first, every: Backoff::new(first, most) }
    }

    /// Whether a probe is due (and stays due until rearmed); when not, it comes a wait closer.
    pub(crate) fn due(&mut self) -> bool {
        let due = self.left == 0;
        self.left = self.left.saturating_sub(1);
        due
    }

    /// The next probe `every` waits off.
    pub(crate) fn rearm(&mut self) {
        self.left = self.every.get();
    }

    /// The next probe twice as far off as the last.
    pub(crate) fn put_off(&mut self) {
        self.every.double();
        self.rearm();
    }
}
