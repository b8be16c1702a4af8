//! Where the client and its servers run: the [`Placement`] a row is measured at, the default
//! one, and the [`Placer`] that pins the client and its servers where a placement says.

use std::fmt;
use std::str::FromStr;

use super::cpu::Pinned;
use peerpipe::error::{Error, Result};

/// Where the two processes run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Placement {
    /// Wherever the scheduler puts them.
    Free,
    /// Both pinned to one core (the server inherits the client's affinity at spawn).
    Same,
    /// Client and server pinned to two different cores: every wake-up crosses cores.
    Split,
}

impl Placement {
    /// `free` or `same`.
    pub fn name(&self) -> &'static str {
        match self {
            Placement::Free => "free",
            Placement::Same => "same",
            Placement::Split => "split",
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Placement {
    type Err = Error;
    fn from_str(text: &str) -> Result<Placement> {
        match text {
            "free" => Ok(Placement::Free),
            "same" => Ok(Placement::Same),
            "split" => Ok(Placement::Split),
            _ => Err(Error::InvalidArgument {
                what: "pin",
                reason: format!("expected free, same or split, found {text:?}"),
            }),
        }
    }
}

/// The placement `peer` uses when none is given: `split` when this process may run on two
/// CPUs or more, else `free`.
///
/// With `free`, the scheduler may keep client and server on one core for a whole process
/// lifetime, and whether it does changes from one server process to the next: a floor and a
/// row served by different processes can then be measured on one core and on two, and their
/// ratio is off by 2–3× however they are interleaved. Pinned to two different cores, every
/// process of a run sees the same placement.
pub fn default_placement() -> Placement {
    match Pinned::to_first_allowed_cpu() {
        Ok(pinned) if pinned.allowed_cpus() >= 2 => Placement::Split,
        _ => Placement::Free,
    }
}

/// Puts this thread and the servers it spawns where a [`Placement`] says. Servers inherit the
/// spawning thread's affinity, so for `split` the thread moves to the second CPU to spawn and
/// back to the first to measure.
#[derive(Debug)]
pub struct Placer {
    placement: Placement,
    pinned: Option<Pinned>,
}

impl Placer {
    /// Pins the calling thread to its first allowed CPU for `same` and `split` (until the
    /// placer is dropped), and checks that `split` has a second one.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `split` with one CPU; [`Error::Sys`] when the affinity
    /// cannot be read or set.
    pub fn new(placement: Placement) -> Result<Placer> {
        let pinned = match placement {
            Placement::Free => None,
            Placement::Same | Placement::Split => Some(Pinned::to_first_allowed_cpu()?),
        };
        if placement == Placement::Split && pinned.as_ref().is_some_and(|p| p.allowed_cpus() < 2) {
            return Err(Error::InvalidArgument {
                what: "pin",
                reason: "split needs two CPUs, and this process may use only one".into(),
            });
        }
        Ok(Placer { placement, pinned })
    }

    /// Runs `spawn` with the affinity the server must inherit.
    ///
    /// # Errors
    /// The error of `spawn`; [`Error::Sys`] when the affinity cannot be set.
    pub fn spawn<T>(&self, spawn: impl FnOnce() -> Result<T>) -> Result<T> {
        let split = self.pinned.as_ref().filter(|_| self.placement == Placement::Split);
        if let Some(pinned) = split {
            pinned.to_nth_allowed(1)?;
        }
        let spawned = spawn();
        if let Some(pinned) = split {
            pinned.to_nth_allowed(0)?;
        }
        spawned
    }

    /// Runs `spawn` with the calling thread moved to the second CPU this process may use —
    /// where `split` puts the server — whatever this placer's placement, then moves the thread
    /// back: a thread started by `spawn` inherits that CPU. This is where a probe of the
    /// machine puts its partner: it measures between the first two CPUs even when the group
    /// runs on one (`same`) or wherever the scheduler likes (`free`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when this process may use only one CPU; the error of
    /// `spawn`; [`Error::Sys`] when the affinity cannot be read or set.
    pub fn spawn_on_second_cpu<T>(&self, spawn: impl FnOnce() -> Result<T>) -> Result<T> {
        // `free` pins nothing: pinned for the spawn only, and restored when dropped.
        let temporary;
        let pinned = match &self.pinned {
            Some(pinned) => pinned,
            None => {
                temporary = Pinned::to_first_allowed_cpu()?;
                &temporary
            }
        };
        if pinned.allowed_cpus() < 2 {
            return Err(Error::InvalidArgument {
                what: "probe",
                reason: "needs two CPUs, and this process may use only one".into(),
            });
        }
        pinned.to_nth_allowed(1)?;
        let spawned = spawn();
        pinned.to_nth_allowed(0)?;
        spawned
    }

    /// The placement this placer realises.
    pub fn placement(&self) -> Placement {
        self.placement
    }
}
