//! What the ping-pong binaries of this workspace share: their flags, the arrays they send, the
//! placement of the two processes and the one result line `run.sh` parses.
//!
//! Every binary is a client that re-executes itself (or spawns `peer --role server`) as the
//! echo server, times `--iterations` round trips of `--elements` f64 after `--warmup` untimed
//! ones, checks every echoed array bit for bit, and prints
//! `NAME: elements=N iterations=N p50_ns=.. p99_ns=.. min_ns=..` (the line of
//! `benches/c/shm_pingpong.c`). The client's timed span covers what a caller of that library
//! pays: its array copied or converted in, the round trip, and the reply copied or converted
//! out into the caller's buffer.

use std::error::Error;
use std::io::{IoSlice, IoSliceMut};
use std::process::Child;
use std::thread;
use std::time::{Duration, Instant};

use peerpipe::transport::{Link, ShmLink};
use peerpipe_cli::report::cpu::Pinned;

/// The error type of the binaries: anything, with its message.
pub type BoxResult<T> = Result<T, Box<dyn Error>>;

/// How long a client waits for its server to come up, and for it to exit at the end.
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(20);

/// The flags every ping-pong takes (`--elements`, `--iterations`, `--warmup`, `--wait`,
/// `--pin`), and the ones it does not know, for it to parse.
#[derive(Clone, Debug)]
pub struct Args {
    /// f64 per message.
    pub elements: usize,
    /// Timed round trips.
    pub iterations: usize,
    /// Untimed round trips first.
    pub warmup: usize,
    /// How to wait: each binary says which names it takes.
    pub wait: String,
    /// `split` (client on the first allowed CPU, server on the second) or `free`.
    pub split: bool,
    /// Flags left for the binary.
    pub rest: Vec<String>,
}

impl Args {
    /// Parses `args` (without the program name).
    ///
    /// # Errors
    /// A flag without its value, a value that is not a number, or zero elements or iterations.
    pub fn parse(args: &[String], default_wait: &str) -> BoxResult<Args> {
        let mut parsed = Args {
            elements: 500,
            iterations: 20_000,
            warmup: 2_000,
            wait: default_wait.to_string(),
            split: true,
            rest: Vec::new(),
        };
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let mut value = || args.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--elements" => parsed.elements = value()?.parse()?,
                "--iterations" => parsed.iterations = value()?.parse()?,
                "--warmup" => parsed.warmup = value()?.parse()?,
                "--wait" => parsed.wait = value()?,
                "--pin" => {
                    parsed.split = match value()?.as_str() {
                        "split" => true,
                        "free" => false,
                        other => return Err(format!("--pin {other:?}: not split|free").into()),
                    }
                }
                _ => parsed.rest.push(flag.clone()),
            }
        }
        if parsed.elements == 0 || parsed.iterations == 0 {
            return Err("--elements and --iterations must be at least 1".into());
        }
        Ok(parsed)
    }
}

/// The array a client starts from.
pub fn initial_values(elements: usize) -> Vec<f64> {
    (0..elements).map(|k| (k as f64).sin() * 1e3).collect()
}

/// Changes one element for round trip `i`, so a stale or reordered reply cannot pass.
pub fn update(values: &mut [f64], i: usize) {
    let n = values.len();
    values[i % n] = i as f64 * 0.5 + 0.25;
}

/// Whether two arrays hold the same bits.
pub fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Nanoseconds since `start`.
pub fn elapsed_ns(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Sorts `samples` and prints the result line.
pub fn print_result(name: &str, elements: usize, samples: &mut [u64]) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "{name}: elements={elements} iterations={} p50_ns={} p99_ns={} min_ns={}",
        samples.len(),
        at(0.5),
        at(0.99),
        samples[0]
    );
}

/// Runs `spawn` with the calling thread on the second allowed CPU when `split` (so that the
/// child inherits it), then pins the caller to the first one for the rest of its life.
///
/// # Errors
/// Those of `spawn`; a machine with one CPU when `split`.
pub fn spawn_placed<T>(split: bool, spawn: impl FnOnce() -> BoxResult<T>) -> BoxResult<T> {
    if !split {
        return spawn();
    }
    let pinned = Pinned::to_first_allowed_cpu()?;
    if pinned.allowed_cpus() < 2 {
        return Err("--pin split needs two CPUs".into());
    }
    pinned.to_nth_allowed(1)?;
    let spawned = spawn();
    pinned.to_nth_allowed(0)?;
    // Stay on the first CPU: dropping `pinned` would restore the old affinity.
    std::mem::forget(pinned);
    spawned
}

/// A child process, killed (if still running) and reaped when dropped.
pub struct ChildGuard(pub Option<Child>);

impl ChildGuard {
    /// Waits up to [`CHILD_TIMEOUT`] for a child that was told to stop, and checks that it
    /// exited cleanly.
    ///
    /// # Errors
    /// A child that exits unsuccessfully, or not in time (it is then killed).
    pub fn finish(self) -> BoxResult<()> {
        self.finish_within(CHILD_TIMEOUT)
    }

    /// [`ChildGuard::finish`] with a limit of its own.
    ///
    /// # Errors
    /// A child that exits unsuccessfully, or not within `limit` (it is then killed).
    pub fn finish_within(mut self, limit: Duration) -> BoxResult<()> {
        let Some(mut child) = self.0.take() else { return Ok(()) };
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait()? {
                return if status.success() {
                    Ok(())
                } else {
                    Err(format!("child exited with {status}").into())
                };
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err("child did not exit after the end of the run; killed".into());
            }
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// An error when the child has already exited.
    ///
    /// # Errors
    /// The child's exit, as an error.
    pub fn check_alive(&mut self) -> BoxResult<()> {
        if let Some(child) = self.0.as_mut()
            && let Some(status) = child.try_wait()?
        {
            return Err(format!("child exited early with {status}").into());
        }
        Ok(())
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Writes all of `bytes` to a bare ring, spinning while it is full.
///
/// # Errors
/// Those of [`Link::try_write`].
pub fn ring_send(link: &mut ShmLink, bytes: &[u8]) -> BoxResult<()> {
    let mut done = 0;
    while done < bytes.len() {
        match link.try_write(&[IoSlice::new(&bytes[done..])])? {
            Some(n) => done += n,
            None => std::hint::spin_loop(),
        }
    }
    Ok(())
}

/// Reads exactly `bytes.len()` bytes from a bare ring, spinning while none have arrived.
///
/// # Errors
/// Those of [`Link::try_read`]; the other side closing the ring first.
pub fn ring_recv(link: &mut ShmLink, bytes: &mut [u8]) -> BoxResult<()> {
    let mut done = 0;
    while done < bytes.len() {
        match link.try_read(&mut [IoSliceMut::new(&mut bytes[done..])])? {
            Some(0) => return Err("the other side closed the ring".into()),
            Some(n) => done += n,
            None => std::hint::spin_loop(),
        }
    }
    Ok(())
}

/// Pins the calling thread to the `n`th CPU it may run on, for the rest of its life.
///
/// # Errors
/// When the affinity cannot be set, or there are not `n + 1` CPUs.
pub fn pin_thread_to(n: usize) -> BoxResult<()> {
    let pinned = Pinned::to_first_allowed_cpu()?;
    if pinned.allowed_cpus() <= n {
        return Err(format!("needs {} CPUs, has {}", n + 1, pinned.allowed_cpus()).into());
    }
    pinned.to_nth_allowed(n)?;
    // Stay there: dropping `pinned` would restore the old affinity.
    std::mem::forget(pinned);
    Ok(())
}
