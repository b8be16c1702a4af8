//! What the shared-memory primitives of peerpipe's transports cost within one process: a
//! process-shared semaphore post + take, and a futex wake with nobody waiting. The `peer`
//! command's synchronisation table prints them next to the costs it measures itself.
//!
//! A crate of its own because it calls the C library and the kernel directly (`sem_post`,
//! `sem_trywait`, `futex`), which the CLI's crate does not (it forbids `unsafe`), and which the
//! library keeps to what its transports need. All of its `unsafe` code is in one private
//! module, `sys`, every block with a `// SAFETY:` comment; the crate root denies it elsewhere.
#![deny(unsafe_code)]
#![deny(missing_docs)]

use std::io;
use std::time::Instant;

mod sys;

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
/// The OS error when the shared page cannot be mapped or a semaphore or futex call fails
/// (the first failure).
///
/// ```
/// let costs = peerpipe_probe::measure_in_process(100).unwrap();
/// assert!(costs.semaphore_ns >= 0.0 && costs.futex_wake_ns >= 0.0);
/// ```
pub fn measure_in_process(operations: u64) -> io::Result<PrimitiveCosts> {
    let operations = operations.max(1);
    let page = sys::SharedPage::new()?;
    let mut failure = None;
    let semaphore_ns = per_op(operations, || {
        if let Err(e) = page.sem_post().and_then(|()| page.sem_try_wait().map(drop)) {
            failure.get_or_insert(e);
        }
    });
    let futex_wake_ns = per_op(operations, || {
        if let Err(e) = page.futex_wake(1) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_posted_semaphore_is_taken_once_and_a_wake_with_nobody_waiting_succeeds() {
        let page = sys::SharedPage::new().unwrap();
        assert!(!page.sem_try_wait().unwrap(), "a new semaphore is zero");
        page.sem_post().unwrap();
        assert!(page.sem_try_wait().unwrap());
        assert!(!page.sem_try_wait().unwrap(), "taken once");
        page.futex_wake(1).unwrap();
    }
}
