//! CPU time of this thread and of a server process, and pinning to one core.

use std::time::Duration;

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::time::{ClockId, clock_getcpuclockid, clock_gettime};
use nix::unistd::Pid;

use peerpipe::error::Result;

/// CPU time (user + system) consumed so far by the calling thread.
///
/// # Errors
/// [`peerpipe::Error::Sys`] when the clock cannot be read.
pub fn thread_cpu_time() -> Result<Duration> {
    Ok(clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)?.into())
}

/// CPU time (user + system) consumed so far by process `pid`, with nanosecond resolution
/// (`clock_getcpuclockid`).
///
/// # Errors
/// [`peerpipe::Error::Sys`] when the process is gone or its clock is not readable.
pub fn process_cpu_time(pid: u32) -> Result<Duration> {
    let clock = clock_getcpuclockid(Pid::from_raw(pid as i32))?;
    Ok(clock_gettime(clock)?.into())
}

/// The CPU the calling thread is running on (`sched_getcpu`), when the kernel says.
pub fn current_cpu() -> Option<u32> {
    nix::sched::sched_getcpu().ok().and_then(|cpu| u32::try_from(cpu).ok())
}

/// The CPU process `pid` last ran on: field 39 (`processor`) of `/proc/PID/stat`; `None` when
/// the file cannot be read or parsed (another OS, a process that is gone).
pub fn last_cpu_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    last_cpu_in_stat(&stat)
}

/// Involuntary context switches of the calling thread so far (`getrusage(RUSAGE_THREAD)`): how
/// often another runnable task took its CPU.
pub fn thread_preemptions() -> Option<u64> {
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_THREAD).ok()?;
    u64::try_from(usage.involuntary_context_switches()).ok()
}

/// Involuntary context switches of process `pid`'s main thread so far
/// (`nonvoluntary_ctxt_switches` in `/proc/PID/status`); `None` when unreadable.
pub fn preemptions_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    preemptions_in_status(&status)
}

fn preemptions_in_status(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("nonvoluntary_ctxt_switches:"))?;
    line.split_once(':')?.1.trim().parse().ok()
}

/// Field 39 of a `/proc/PID/stat` line. The command name (field 2) is in parentheses and may
/// itself hold spaces and parentheses, so fields are counted from the last `)`.
fn last_cpu_in_stat(stat: &str) -> Option<u32> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first after the name; field 39 is 36 further on.
    after_name.split_ascii_whitespace().nth(36)?.parse().ok()
}

/// Pins the calling thread to one CPU until dropped, then restores its previous affinity.
/// Processes spawned meanwhile inherit the pinning.
#[derive(Debug)]
pub struct Pinned {
    previous: CpuSet,
    allowed: Vec<usize>,
}

impl Pinned {
    /// Pins the calling thread to the first CPU it may run on.
    ///
    /// # Errors
    /// [`peerpipe::Error::Sys`] when the affinity cannot be read or set.
    pub fn to_first_allowed_cpu() -> Result<Pinned> {
        let previous = sched_getaffinity(Pid::from_raw(0))?;
        let allowed: Vec<usize> =
            (0..CpuSet::count()).filter(|&cpu| previous.is_set(cpu).unwrap_or(false)).collect();
        let pinned = Pinned { previous, allowed };
        pinned.to_nth_allowed(0)?;
        Ok(pinned)
    }

    /// Number of CPUs the thread was allowed before pinning.
    pub fn allowed_cpus(&self) -> usize {
        self.allowed.len()
    }

    /// Moves the calling thread to the `n`-th CPU it was allowed (wrapping around).
    ///
    /// # Errors
    /// [`peerpipe::Error::Sys`] when the affinity cannot be set.
    pub fn to_nth_allowed(&self, n: usize) -> Result<()> {
        let cpu = match self.allowed.len() {
            0 => 0,
            len => self.allowed[n % len],
        };
        let mut only = CpuSet::new();
        only.set(cpu)?;
        sched_setaffinity(Pid::from_raw(0), &only)?;
        Ok(())
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let _ = sched_setaffinity(Pid::from_raw(0), &self.previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_cpu_time_is_readable_and_grows() {
        let pid = std::process::id();
        let before = process_cpu_time(pid).unwrap();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        assert!(process_cpu_time(pid).unwrap() > before);
        assert!(thread_cpu_time().unwrap() > Duration::ZERO);
    }

    #[test]
    fn the_last_cpu_is_read_past_a_command_name_with_spaces_and_parentheses() {
        let mut fields = vec!["S".to_owned()];
        fields.extend((4..=52).map(|field| field.to_string()));
        let line = format!("4242 (a (b) c) {}", fields.join(" "));
        assert_eq!(last_cpu_in_stat(&line), Some(39));
        assert_eq!(last_cpu_in_stat("4242 (short) S 1 2"), None);
        assert_eq!(last_cpu_in_stat("no parentheses"), None);
    }

    #[test]
    fn preemptions_are_read_from_getrusage_and_proc_status() {
        let status = "Name:\tpeer\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t7\n";
        assert_eq!(preemptions_in_status(status), Some(7));
        assert_eq!(preemptions_in_status("Name:\tpeer\n"), None);
        assert!(thread_preemptions().is_some());
        assert!(preemptions_of(std::process::id()).is_some());
        assert_eq!(preemptions_of(u32::MAX), None);
    }

    #[test]
    fn this_process_runs_on_a_cpu_it_may_use() {
        let pinned = Pinned::to_first_allowed_cpu().unwrap();
        let cpu = current_cpu().expect("sched_getcpu works on Linux");
        assert_eq!(cpu as usize, pinned.allowed[0]);
        assert!(last_cpu_of(std::process::id()).is_some());
        assert_eq!(last_cpu_of(u32::MAX), None);
    }

    #[test]
    fn pinning_restores_the_previous_affinity() {
        let before = sched_getaffinity(Pid::from_raw(0)).unwrap();
        {
            let _pin = Pinned::to_first_allowed_cpu().unwrap();
            let now = sched_getaffinity(Pid::from_raw(0)).unwrap();
            let allowed = (0..CpuSet::count()).filter(|&c| now.is_set(c).unwrap()).count();
            assert_eq!(allowed, 1);
        }
        assert_eq!(sched_getaffinity(Pid::from_raw(0)).unwrap(), before);
    }
}
