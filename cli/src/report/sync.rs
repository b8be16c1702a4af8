//! The synchronisation-cost table: nanoseconds per operation of each primitive the transports
//! are built from, measured in the same run as the round trips they explain.
//!
//! In-process entries time `operations` back-to-back operations and divide. Cross-process
//! entries are one-way wake-ups: a raw 8-byte ping-pong with a server process (`peer --role
//! server --raw-echo 8`), each round trip being two wake-ups, so `operations / 2` round trips
//! are timed and the total divided by `operations`.

use std::hint::black_box;
use std::io::{self, Write};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::baseline::RawEcho;
use peerpipe::error::Result;
use peerpipe::transport::{TransportKind, Wait};

/// Operations per entry by default: 100,000.
pub const DEFAULT_OPERATIONS: u64 = 100_000;
/// Untimed round trips before each cross-process entry.
const WARMUP_ROUND_TRIPS: u64 = 1_000;
/// Bytes each way in the cross-process ping-pong: one f64.
const WAKE_MESSAGE_BYTES: usize = 8;

/// One line of the table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SyncCost {
    /// The primitive, e.g. `std::sync::Mutex`.
    pub primitive: String,
    /// What one operation is.
    pub operation: String,
    /// Operations timed.
    pub operations: u64,
    /// Mean nanoseconds per operation.
    pub ns_per_op: f64,
}

/// Times `operations` runs of `op` and returns the mean ns per run.
fn per_op(operations: u64, mut op: impl FnMut()) -> f64 {
    let started = Instant::now();
    for _ in 0..operations {
        op();
    }
    started.elapsed().as_nanos() as f64 / operations as f64
}

/// The in-process entries: no lock, an uncontended `std::sync::Mutex`, a re-entrant mutex
/// (`parking_lot::ReentrantMutex`, locked twice by one thread), a process-shared semaphore
/// post + take within one process, and a futex wake with nobody waiting (what a writer pays
/// per message when the reader sleeps; both from [`peerpipe_probe`]).
///
/// # Errors
/// [`peerpipe::Error::Io`] when the shared page for the semaphore cannot be mapped or a
/// semaphore or futex call fails.
pub fn measure_in_process(operations: u64) -> Result<Vec<SyncCost>> {
    let operations = operations.max(1);
    let entry = |primitive: &str, operation: &str, ns_per_op: f64| SyncCost {
        primitive: primitive.to_owned(),
        operation: operation.to_owned(),
        operations,
        ns_per_op,
    };
    let mut counter = 0u64;
    let no_lock = per_op(operations, || counter = black_box(counter) + 1);

    let mutex = Mutex::new(0u64);
    let std_mutex = per_op(operations, || {
        *black_box(&mutex).lock().unwrap_or_else(|e| e.into_inner()) += 1;
    });

    let reentrant = parking_lot::ReentrantMutex::new(std::cell::Cell::new(0u64));
    let reentrant_ns = per_op(operations, || {
        let outer = black_box(&reentrant).lock();
        let inner = reentrant.lock();
        inner.set(outer.get() + 1);
    });

    let shared = peerpipe_probe::measure_in_process(operations)?;
    Ok(vec![
        entry("no lock", "increment a counter", no_lock),
        entry("std::sync::Mutex", "lock + increment + unlock, uncontended", std_mutex),
        entry("re-entrant mutex", "lock twice + increment + unlock twice", reentrant_ns),
        entry(
            "process-shared semaphore",
            "sem_post + sem_trywait, one process",
            shared.semaphore_ns,
        ),
        entry("futex", "FUTEX_WAKE with nobody waiting", shared.futex_wake_ns),
    ])
}

/// The cross-process entries: one-way wake-ups of a server process over `shm-ring` with
/// spinning and with blocking (a futex), and over a pipe with blocking, for comparison.
/// `spawn` starts the raw echo server (the caller decides its placement).
///
/// # Errors
/// The errors of spawning the servers and of the round trips.
pub fn measure_cross_process(
    operations: u64,
    spawn: impl Fn(usize, Wait, TransportKind) -> Result<RawEcho>,
) -> Result<Vec<SyncCost>> {
    let round_trips = operations.div_ceil(2).max(1);
    let cases = [
        (TransportKind::ShmRing, Wait::Spin, "spin on shared memory"),
        (TransportKind::ShmRing, Wait::Block, "futex wait / wake"),
        (TransportKind::Pipe, Wait::Block, "pipe read / write (ppoll)"),
    ];
    let mut costs = Vec::new();
    for (transport, wait, operation) in cases {
        let mut echo = spawn(WAKE_MESSAGE_BYTES, wait, transport)?;
        for _ in 0..WARMUP_ROUND_TRIPS {
            echo.round_trip()?;
        }
        echo.verify()?;
        let mut total_ns = 0u64;
        for _ in 0..round_trips {
            total_ns += echo.round_trip()?;
        }
        echo.verify()?;
        echo.close()?;
        costs.push(SyncCost {
            primitive: format!("cross-process wake-up ({transport}, {wait})"),
            operation: format!("{operation}: half a round trip of {WAKE_MESSAGE_BYTES} bytes"),
            operations: 2 * round_trips,
            ns_per_op: total_ns as f64 / (2 * round_trips) as f64,
        });
    }
    Ok(costs)
}

/// Writes the table.
///
/// # Errors
/// Errors of `out`.
///
/// ```
/// use peerpipe_cli::report::sync::{SyncCost, render};
/// let costs = [SyncCost {
///     primitive: "std::sync::Mutex".into(),
///     operation: "lock + unlock".into(),
///     operations: 100_000,
///     ns_per_op: 12.34,
/// }];
/// let mut out = Vec::new();
/// render(&costs, &mut out).unwrap();
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.contains("std::sync::Mutex"));
/// assert!(text.contains("12.3 ns"));
/// ```
pub fn render(costs: &[SyncCost], out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "Synchronisation costs (mean per operation):")?;
    let width = costs.iter().map(|c| c.primitive.len()).max().unwrap_or(0);
    for cost in costs {
        writeln!(
            out,
            "  {:<width$}  {:>10}  {} ({} operations)",
            cost.primitive,
            format_ns(cost.ns_per_op),
            cost.operation,
            cost.operations,
        )?;
    }
    Ok(())
}

fn format_ns(ns: f64) -> String {
    if ns < 1_000.0 { format!("{ns:.1} ns") } else { format!("{:.2} us", ns / 1_000.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_process_entries_are_positive_and_count_their_operations() {
        let costs = measure_in_process(1_000).unwrap();
        assert_eq!(costs.len(), 5);
        for cost in &costs {
            assert_eq!(cost.operations, 1_000);
            assert!(cost.ns_per_op.is_finite() && cost.ns_per_op >= 0.0, "{cost:?}");
        }
    }
}
