//! [`Backoff`]: a count or a time that doubles and halves between a floor and a ceiling.

use std::ops::{Div, Mul};

/// A value between `floor` and `ceiling`, starting at `floor`, that doubles and halves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Backoff<T> {
    value: T,
    floor: T,
    ceiling: T,
}

impl<T: Copy + Ord + Mul<u32, Output = T> + Div<u32, Output = T>> Backoff<T> {
    /// From `floor` (its value now) up to `ceiling`.
    pub(crate) const fn new(floor: T, ceiling: T) -> Backoff<T> {
        Backoff { value: floor, floor, ceiling }
    }

    /// The value now.
    pub(crate) fn get(&self) -> T {
        self.value
    }

    /// Twice the value, at most the ceiling.
    pub(crate) fn double(&mut self) {
        self.value = (self.value * 2).min(self.ceiling);
    }

    /// Half the value, at least the floor.
    pub(crate) fn halve(&mut self) {
        self.value = (self.value / 2).max(self.floor);
    }

    /// Back to the floor.
    pub(crate) fn reset(&mut self) {
        self.value = self.floor;
    }

    /// Whether the value is the ceiling: doubling changes nothing.
    pub(crate) fn at_ceiling(&self) -> bool {
        self.value >= self.ceiling
    }

    /// Whether the value is the floor.
    pub(crate) fn at_floor(&self) -> bool {
        self.value <= self.floor
    }
}
