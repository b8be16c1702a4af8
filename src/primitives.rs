//! What the shared-memory primitives the transports are built from cost within one process:
//! a process-shared semaphore post + take, and a futex wake with nobody waiting. The report's
//! synchronisation table prints them next to the costs it measures itself; they live here
//! because the mapping and the futex are the crate's private `sys` wrappers.

use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::error::Result;
use crate::sys::{Mapping, futex_wake};

/// Mean nanoseconds per operation of each primitive, from [`measure_in_process`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrimitiveCosts {
    /// `sem_post` + `sem_trywait` on a process-shared semaphore, within one process.
    pub semaphore_ns: f64,
    /// `FUTEX_WAKE` with nobody waiting: what a writer pays per message when the reader
    /// sleeps.
    pub futex_wake_ns: f64,
}

/// Times `operations` (at least 1) back-to-back operations of each primitive, semaphore
/// first, and divides.
///
/// # Errors
/// [`crate::Error::Sys`] when the private mapping cannot be made or a semaphore or futex call
/// fails (the first failure).
///
/// ```
/// let costs = peerpipe::primitives::measure_in_process(100).unwrap();
/// assert!(costs.semaphore_ns >= 0.0 && costs.futex_wake_ns >= 0.0);
/// ```
pub fn measure_in_process(operations: u64) -> Result<PrimitiveCosts> {
    let operations = operations.max(1);
    let map = Mapping::private(4096)?;
    map.sem_init(0, 0)?;
    let mut failure = None;
    let semaphore_ns = per_op(operations, || {
        if let Err(e) = map.sem_post(0).and_then(|()| map.sem_try_wait(0).map(drop)) {
            failure.get_or_insert(e);
        }
    });
    let word = map.atomic_u32(64);
    word.store(0, Ordering::SeqCst);
    let futex_wake_ns = per_op(operations, || {
        if let Err(e) = futex_wake(word, 1) {
            failure.get_or_insert(e);
        }
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(PrimitiveCosts { semaphore_ns, futex_wake_ns }),
    }
}

/// Times `operations` runs of `op` and returns the mean ns per run.
fn per_op(operations: u64, mut op: impl FnMut()) -> f64 {
    let started = Instant::now();
    for _ in 0..operations {
        op();
    }
    started.elapsed().as_nanos() as f64 / operations as f64
}
