//! [`Os`]: what the running system says of where threads run.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::OnceLock;

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

use super::cpus::Cpus;

/// The running system, as [`Cpus`]: system calls, and `/proc` read into buffers on the stack.
/// `Os::default()` knows no peer: its reads of the peer find nothing.
// `pub` in a crate-private module: the type of `Transport::auto_wait` names it.
#[derive(Debug, Default)]
pub struct Os {
    peer: u32,
    peer_stat: PathBuf,
    /// The peer's `/proc/PID/stat`, when kept open.
    kept: Option<File>,
}

impl Os {
    /// The running system with process `peer` as the peer: opens `/proc/loadavg` and `/proc/stat`
    /// once per process, the peer's file at each read or, with `keep_file`, once (then reads
    /// cost half as much; once that process is gone it reads nothing, even if its pid is reused).
    pub(crate) fn new(peer: u32, keep_file: bool) -> Os {
        let _ = (shared(&LOADAVG, "/proc/loadavg"), shared(&STAT, "/proc/stat"));
        let peer_stat = PathBuf::from(format!("/proc/{peer}/stat"));
        let kept = if keep_file { File::open(&peer_stat).ok() } else { None };
        Os { peer, peer_stat, kept }
    }
}

/// `/proc/loadavg` and `/proc/stat`, once opened (`None` inside when they could not be).
static LOADAVG: OnceLock<Option<File>> = OnceLock::new();
static STAT: OnceLock<Option<File>> = OnceLock::new();

/// A machine-wide `/proc` file, opened at the first call.
fn shared(file: &'static OnceLock<Option<File>>, path: &str) -> Option<&'static File> {
    file.get_or_init(|| File::open(path).ok()).as_ref()
}

/// Reads an open `/proc` file from its start into `buf`: the text read, if any.
fn read_at_start<'b>(file: &File, buf: &'b mut [u8]) -> Option<&'b str> {
    let n = file.read_at(buf, 0).ok().filter(|&n| n > 0)?;
    std::str::from_utf8(&buf[..n]).ok()
}

/// The CPUs that process `pid` (0: this thread) may run on, in order.
fn allowed_cpus(pid: i32) -> Option<impl Iterator<Item = usize>> {
    let set = sched_getaffinity(Pid::from_raw(pid)).ok()?;
    Some((0..CpuSet::count()).filter(move |&cpu| set.is_set(cpu).unwrap_or(false)))
}

/// Whether this thread and process `peer` may each run on exactly one CPU, the same one;
/// `false` when a mask cannot be read (the peer has exited, or belongs to another user).
pub(crate) fn confined_together(peer: u32) -> bool {
    let only_cpu =
        |pid| allowed_cpus(pid).and_then(|mut cpus| cpus.next().filter(|_| cpus.next().is_none()));
    let Ok(peer) = i32::try_from(peer) else { return false };
    matches!((only_cpu(0), only_cpu(peer)), (Some(mine), Some(theirs)) if mine == theirs)
}

impl Cpus for Os {
    fn current(&mut self) -> Option<usize> {
        nix::sched::sched_getcpu().ok()
    }

    fn peer(&mut self) -> Option<(usize, bool)> {
        let mut buf = [0u8; 1024];
        let stat = match &self.kept {
            Some(file) => read_at_start(file, &mut buf)?,
            None => read_at_start(&File::open(&self.peer_stat).ok()?, &mut buf)?,
        };
        // The command name may hold spaces and parentheses: the last `)` ends it. Field 3, the
        // state, follows (`R`: running or runnable); field 39 is `processor`.
        let mut fields = stat[stat.rfind(')')? + 1..].split_ascii_whitespace();
        let runnable = fields.next()? == "R";
        let cpu = fields.nth(39 - 4)?.parse().ok()?;
        Some((cpu, runnable))
    }

    fn allowed(&mut self) -> Option<impl Iterator<Item = usize>> {
        allowed_cpus(0)
    }

    fn times(&mut self, times: &mut Vec<(usize, u64, u64)>) {
        times.clear();
        let mut buf = [0u8; 16 << 10];
        let Some(stat) = shared(&STAT, "/proc/stat").and_then(|f| read_at_start(f, &mut buf))
        else {
            return;
        };
        // After the total, "cpu3 user nice system idle iowait irq softirq steal guest
        // guest_nice" per CPU, in ticks; guest and guest_nice are in user and nice already.
        for line in stat.lines().skip(1).take_while(|line| line.starts_with("cpu")) {
            let mut fields = line.split_ascii_whitespace();
            let Some(cpu) = fields.next().and_then(|name| name[3..].parse().ok()) else { continue };
            let mut ticks = [0u64; 8];
            for (tick, field) in ticks.iter_mut().zip(fields) {
                *tick = field.parse().unwrap_or(0);
            }
            times.push((cpu, ticks[3] + ticks[4], ticks.iter().sum()));
        }
    }

    fn runnable(&mut self) -> Option<usize> {
        // "0.52 0.58 0.59 2/467 12345": the fourth field is runnable/existing tasks.
        let mut buf = [0u8; 128];
        let loadavg = read_at_start(shared(&LOADAVG, "/proc/loadavg")?, &mut buf)?;
        loadavg.split_ascii_whitespace().nth(3)?.split('/').next()?.parse().ok()
    }

    fn move_to(&mut self, cpu: usize) -> bool {
        let me = Pid::from_raw(0);
        let Ok(mask) = sched_getaffinity(me) else { return false };
        let mut only = CpuSet::new();
        if only.set(cpu).is_err() || !mask.is_set(cpu).unwrap_or(false) {
            return false;
        }
        // The kernel moves the calling thread before the first call returns; the second puts
        // the mask back, which leaves it where it now is.
        let moved = sched_setaffinity(me, &only).is_ok();
        let _ = sched_setaffinity(me, &mask);
        moved
    }

    fn confined_with_peer(&mut self) -> bool {
        self.peer != 0 && confined_together(self.peer)
    }
}
