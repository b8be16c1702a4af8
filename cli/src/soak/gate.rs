//! A meeting point for the pairs' threads that can be called off.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;

/// A reusable meeting point of a fixed number of threads that can be called off, so that a
/// thread that fails to start or panics releases the others instead of hanging them (which a
/// `std::sync::Barrier` would).
#[derive(Debug)]
pub(super) struct Gate {
    parties: usize,
    state: Mutex<GateState>,
    turned: Condvar,
}

#[derive(Debug)]
struct GateState {
    generation: u64,
    arrived: usize,
    aborted: bool,
}

impl Gate {
    pub(super) fn new(parties: usize) -> Gate {
        Gate {
            parties,
            state: Mutex::new(GateState { generation: 0, arrived: 0, aborted: false }),
            turned: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until all parties have arrived: true; or until the gate is called off: false.
    pub(super) fn wait(&self) -> bool {
        let mut state = self.lock();
        if state.aborted {
            return false;
        }
        state.arrived += 1;
        if state.arrived == self.parties {
            state.arrived = 0;
            state.generation += 1;
            self.turned.notify_all();
            return true;
        }
        let generation = state.generation;
        while state.generation == generation && !state.aborted {
            state = self.turned.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        state.generation != generation
    }

    /// Calls the gate off: every wait, now and later, returns false.
    pub(super) fn abort(&self) {
        self.lock().aborted = true;
        self.turned.notify_all();
    }
}

/// Calls the gate off when the thread holding it unwinds.
pub(super) struct AbortOnPanic<'a>(pub(super) &'a Gate);

impl Drop for AbortOnPanic<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_releases_everyone_when_called_off() {
        let gate = Gate::new(3);
        thread::scope(|scope| {
            let waiter = scope.spawn(|| gate.wait());
            let both = scope.spawn(|| gate.wait());
            assert!(gate.wait(), "all three arrived");
            assert!(waiter.join().unwrap() && both.join().unwrap());
            let waiter = scope.spawn(|| gate.wait());
            gate.abort();
            assert!(!waiter.join().unwrap());
            assert!(!gate.wait());
        });
    }
}
