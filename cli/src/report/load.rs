//! Busy work beside a run (`peer --load N`): N threads that keep a CPU busy each for as long as
//! the run lasts, so that anyone can see on their own machine what a wait strategy costs when
//! the cores are not idle — the way a simulation that uses its cores, a laptop or a shared node
//! runs.
//!
//! The threads may run on every CPU the process may use (whatever the measuring thread is
//! pinned to), have normal priority, and end when the [`Load`] is dropped, with the process
//! whatever ends it: a load cannot outlive its run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

use peerpipe::error::Result;

/// Most busy threads `--load` accepts: 1024.
pub const MAX_LOAD: u32 = 1024;

/// N busy threads, stopped and joined on drop.
#[derive(Debug)]
pub struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Load {
    /// Starts `threads` busy threads, each allowed on `cpus` (see [`Load::process_cpus`]).
    ///
    /// # Errors
    /// [`peerpipe::Error::Io`] when a thread cannot be spawned (the ones already started are
    /// stopped).
    pub fn start(threads: u32, cpus: CpuSet) -> Result<Load> {
        let mut load = Load { stop: Arc::new(AtomicBool::new(false)), threads: Vec::new() };
        for index in 0..threads {
            let stop = Arc::clone(&load.stop);
            let handle = thread::Builder::new()
                .name(format!("peer-load-{index}"))
                .spawn(move || busy(&stop, cpus))?;
            load.threads.push(handle);
        }
        Ok(load)
    }

    /// The CPUs the calling thread may run on, read before anything pins it: where a load's
    /// threads run.
    ///
    /// # Errors
    /// [`peerpipe::Error::Sys`] when the affinity cannot be read.
    pub fn process_cpus() -> Result<CpuSet> {
        Ok(sched_getaffinity(Pid::from_raw(0))?)
    }

    /// Number of busy threads.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for handle in self.threads.drain(..) {
            let _ = handle.join();
        }
    }
}

/// Keeps a CPU busy until `stop`: arithmetic a compiler cannot drop, and the flag read every
/// few microseconds.
fn busy(stop: &AtomicBool, cpus: CpuSet) {
    // A thread inherits its creator's affinity; a load belongs wherever the process may run.
    let _ = sched_setaffinity(Pid::from_raw(0), &cpus);
    let mut x = 1u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    std::hint::black_box(x);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_load_burns_cpu_while_it_runs_and_its_threads_end_on_drop() {
        let cpus = Load::process_cpus().unwrap();
        // Other tests of this process may run loads of their own meanwhile: only the threads
        // that appear with this load count.
        let others = threads_named("peer-load-");
        let before = process_cpu();
        let load = Load::start(1, cpus).unwrap();
        assert_eq!(load.threads(), 1);
        // The busy thread uses CPU while this one sleeps (a deadline, not a speed limit).
        let deadline = Instant::now() + Duration::from_secs(20);
        while process_cpu() - before < Duration::from_millis(20) {
            assert!(Instant::now() < deadline, "the load used no CPU in 20 s");
            thread::sleep(Duration::from_millis(5));
        }
        let ours: Vec<String> =
            threads_named("peer-load-").into_iter().filter(|t| !others.contains(t)).collect();
        assert_eq!(ours.len(), 1, "{ours:?}");
        drop(load);
        // Joined; the kernel then removes the thread's entry a moment later.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = threads_named("peer-load-");
            if ours.iter().all(|t| !left.contains(t)) {
                break;
            }
            assert!(Instant::now() < deadline, "{ours:?} still in {left:?} after 5 s");
            thread::sleep(Duration::from_millis(5));
        }
    }

    fn process_cpu() -> Duration {
        let time = nix::time::clock_gettime(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID).unwrap();
        Duration::from(time)
    }

    /// The thread ids of this process whose name starts with `prefix`.
    fn threads_named(prefix: &str) -> Vec<String> {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|task| {
                let task = task.ok()?;
                let name = std::fs::read_to_string(task.path().join("comm")).ok()?;
                name.starts_with(prefix).then(|| task.file_name().to_string_lossy().into_owned())
            })
            .collect()
    }
}
