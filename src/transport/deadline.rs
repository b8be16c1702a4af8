//! Deadlines: when a wait gives up, and how close to it a wait stops sleeping.

use std::time::{Duration, Instant};

use nix::sys::time::TimeSpec;

use crate::error::Error;

/// How long before its deadline a sleeping wait wakes up to spin the rest of the way, in every
/// wait strategy: a timed sleep ends late by the timer slack plus the wake-up latency (on a
/// 2-core KVM guest, 15–40 µs with a 1 µs slack and more in the tail, see
/// docs/experiments/deadlines.md), so sleeping to the deadline itself would return that late.
/// 100 µs, not 60: alternating the two, every row's p99 stayed within 10 µs in 4 of 6 runs
/// against 1 of 6.
/// The spin is paid only by a wait that reaches its deadline's last 100 µs.
pub const DEADLINE_SPIN: Duration = Duration::from_micros(100);

/// How often an interruptible wait (`Peer::spawn_interruptible`) asks whether to give up.
pub const INTERRUPT_CHECK: Duration = Duration::from_millis(50);

/// A point in time after which a wait gives up, with the timeout it came from (for messages).
#[derive(Clone, Copy, Debug)]
pub struct Deadline {
    at: Option<Instant>,
    timeout: Option<Duration>,
    /// No deadline yet: it starts when data arrives ([`Deadline::once_data_arrives`]).
    arm_on_data: bool,
    /// Data has arrived: the deadline starts at the next wait, whose clock read it borrows
    /// (a read of the clock as each frame arrives would cost every request ~23 ns).
    arm_at_wait: bool,
    /// Gives up earlier, at this instant, while no byte has arrived (see
    /// [`Deadline::or_idle_until`]).
    idle_until: Option<Instant>,
}

impl Deadline {
    /// No deadline: wait as long as it takes.
    pub const NEVER: Deadline = Deadline {
        at: None,
        timeout: None,
        arm_on_data: false,
        arm_at_wait: false,
        idle_until: None,
    };

    /// A deadline `timeout` from now; `None` means never. A zero timeout makes every wait a
    /// single poll.
    pub fn after(timeout: Option<Duration>) -> Deadline {
        Deadline {
            at: timeout.map(|t| Instant::now() + t),
            timeout,
            arm_on_data: false,
            arm_at_wait: false,
            idle_until: None,
        }
    }

    /// A deadline `timeout` after `start` (saves reading the clock when the caller just did).
    pub fn after_from(start: Instant, timeout: Option<Duration>) -> Deadline {
        Deadline {
            at: timeout.map(|t| start + t),
            timeout,
            arm_on_data: false,
            arm_at_wait: false,
            idle_until: None,
        }
    }

    /// `timeout` from the first wait, whose read of the clock it borrows: a send or receive
    /// that never has to wait never reads the clock. How a call's request and a server's reply
    /// are sent: the deadline is there for a peer that stops reading, and the first few
    /// nanoseconds of a send that did not wait do not change it.
    pub fn from_first_wait(timeout: Option<Duration>) -> Deadline {
        Deadline { at: None, timeout, arm_on_data: false, arm_at_wait: true, idle_until: None }
    }

    /// No deadline until the first byte arrives, then `timeout` from the first wait after it
    /// (a frame that arrives whole never waits, so it never reads the clock): how a server
    /// waits for the next request (idle as long as the client likes, but a frame that has
    /// started must finish). Between the first byte and that wait lies only the copy of what
    /// had arrived.
    pub fn once_data_arrives(timeout: Option<Duration>) -> Deadline {
        Deadline { at: None, timeout, arm_on_data: true, arm_at_wait: false, idle_until: None }
    }

    /// This deadline, but giving up already at `until` if no byte has arrived by then: a
    /// wait that ends that way has consumed nothing, so the caller can wait again in slices
    /// (checking for an interrupt in between, say) without losing its place in the stream.
    /// Once a byte arrives only the deadline itself counts, so a frame that has started is
    /// read to its end.
    pub fn or_idle_until(self, until: Instant) -> Deadline {
        Deadline { idle_until: Some(until), ..self }
    }

    /// This deadline as it stands once data has arrived: armed if it was waiting for data,
    /// without the idle limit of [`Deadline::or_idle_until`].
    pub fn data_arrived(self) -> Deadline {
        let armed =
            if self.arm_on_data || self.arm_at_wait { Deadline::after(self.timeout) } else { self };
        Deadline { idle_until: None, ..armed }
    }

    /// This deadline once data has arrived, inside a wait loop: like
    /// [`Deadline::data_arrived`], but one that was waiting for data starts at the loop's next
    /// wait ([`Deadline::armed_at`]) instead of reading the clock now.
    pub(super) fn on_data(self) -> Deadline {
        if self.arm_on_data {
            Deadline { arm_on_data: false, arm_at_wait: true, idle_until: None, ..self }
        } else {
            Deadline { idle_until: None, ..self }
        }
    }

    /// This deadline at a wait at `now`: one that was to start at the next wait starts now.
    pub(super) fn armed_at(self, now: Instant) -> Deadline {
        if self.arm_at_wait { Deadline::after_from(now, self.timeout) } else { self }
    }

    /// Time left, `None` when there is no deadline; zero once passed.
    pub fn remaining(&self) -> Option<Duration> {
        self.instant().map(|at| at.saturating_duration_since(Instant::now()))
    }

    /// The instant at which it passes (the idle limit when that comes first), `None` for no
    /// deadline.
    pub fn instant(&self) -> Option<Instant> {
        match (self.at, self.idle_until) {
            (Some(at), Some(idle)) => Some(at.min(idle)),
            (at, idle) => at.or(idle),
        }
    }

    /// True once it has passed at `now`.
    pub fn passed(&self, now: Instant) -> bool {
        self.instant().is_some_and(|at| now >= at)
    }

    /// The timeout error for this deadline.
    pub fn error(&self, waiting_for: impl Into<String>) -> Error {
        Error::Timeout { waiting_for: waiting_for.into(), after: self.timeout.unwrap_or_default() }
    }
}

/// The `ppoll` timeout for `remaining`, nanoseconds intact (not rounded to milliseconds).
pub fn timespec_for(remaining: Duration) -> TimeSpec {
    TimeSpec::from_duration(remaining)
}
